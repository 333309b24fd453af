//! VERI*FACTU: an invoice's registration record, and the authorization that
//! lets a Spanish issuer issue.

use axum::{
    Json,
    body::Bytes,
    extract::{Path, State},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    views::{ts, ts_opt},
    workflows,
};

/// An invoice's registration record and its AEAT submission state.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VerifactuRecord {
    pub id: String,
    pub invoice_id: String,
    /// Position in the issuer's chain (1 is the first record).
    pub seq: i64,
    /// `alta` (registration) or `anulacion` (cancellation).
    pub kind: String,
    /// `F1`, `R1`-`R5`.
    pub tipo_factura: Option<String>,
    /// The exact string hashed, per the AEAT hash specification.
    pub hash_input: String,
    /// SHA-256 of `hash_input`, upper-case hex.
    pub huella: String,
    /// The previous record's huella; null for the first record.
    pub previous_huella: Option<String>,
    /// `FechaHoraHusoGenRegistro` (Europe/Madrid offset).
    pub generated_at: String,
    /// The AEAT verification URL printed as the QR code.
    pub qr_url: Option<String>,
    /// The record as submitted (`RegFactuSistemaFacturacion`, validates against SuministroLR.xsd).
    pub xml: String,
    /// `not_sent` (mode disabled), `pending` (waiting for the submission job), `sending` (in a
    /// request whose answer is not stored yet), `accepted`, `accepted_with_errors` (registered;
    /// correct it), `rejected` (not registered: see `aeat_description` and docs/VERIFACTU.md).
    pub status: String,
    /// The AEAT's error code (`CodigoErrorRegistro`) for this record.
    pub aeat_code: Option<String>,
    /// The AEAT's words (`DescripcionErrorRegistro`), or what this service concluded.
    pub aeat_description: Option<String>,
    /// The AEAT's secure verification code (CSV) of the submission that registered the record.
    pub csv: Option<String>,
    /// Requests that carried the record (more than 1 after a failure or a crash).
    pub attempts: i64,
    /// When the last request carrying it went out.
    pub submitted_at: Option<DateTime<Utc>>,
    /// When the AEAT's answer was stored.
    pub answered_at: Option<DateTime<Utc>>,
    /// While `sending`: why the last request got no usable answer (network error, SOAP fault);
    /// it is retried with backoff.
    pub last_error: Option<String>,
    /// The reason given for a cancellation (`anulacion`).
    pub reason: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// The records of an invoice, oldest first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct VerifactuRecords {
    pub data: Vec<VerifactuRecord>,
    /// When the invoice was cancelled in the chain (`RegistroAnulacion`); null if it was not.
    pub annulled_at: Option<DateTime<Utc>>,
}

async fn record_view(
    conn: &mut sqlx::AnyConnection,
    r: store::verifactu::RecordRow,
) -> ApiResult<VerifactuRecord> {
    let last_error = match (&r.batch_id, r.status.as_str()) {
        (Some(b), store::verifactu::status::SENDING) => store::verifactu::batch(conn, b)
            .await?
            .and_then(|b| b.last_error),
        _ => None,
    };
    Ok(VerifactuRecord {
        id: r.id,
        invoice_id: r.invoice_id,
        seq: r.seq,
        kind: r.kind,
        tipo_factura: r.tipo_factura,
        hash_input: r.hash_input,
        huella: r.huella,
        previous_huella: r.previous_huella,
        generated_at: r.generated_at,
        qr_url: r.qr_url,
        xml: r.xml,
        status: r.status,
        aeat_code: r.aeat_code,
        aeat_description: r.aeat_description,
        csv: r.csv,
        attempts: r.attempts,
        submitted_at: ts_opt(r.submitted_at)?,
        answered_at: ts_opt(r.answered_at)?,
        last_error,
        reason: r.reason,
        created_at: ts(r.created_at)?,
    })
}

async fn records_view(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    invoice_id: &str,
) -> ApiResult<VerifactuRecords> {
    let rows = store::verifactu::for_invoice(conn, company_id, invoice_id).await?;
    let annulled_at = rows
        .iter()
        .find(|r| r.kind == "anulacion")
        .map(|r| ts(r.created_at))
        .transpose()?;
    let mut data = Vec::with_capacity(rows.len());
    for r in rows {
        data.push(record_view(conn, r).await?);
    }
    Ok(VerifactuRecords { data, annulled_at })
}

/// The VERI*FACTU records of an invoice (empty for non-Spanish issuers).
#[utoipa::path(get, path = "/v1/invoices/{id}/verifactu", tag = "verifactu",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, body = VerifactuRecords), crate::openapi::ReadErrors))]
pub async fn invoice_records(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<VerifactuRecords>> {
    super::invoices::load(&mut db, &caller.company_id, &id).await?;
    Ok(Json(records_view(&mut db, &caller.company_id, &id).await?))
}

/// Why an invoice is cancelled.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnnulRequest {
    /// Free text kept with the cancellation record (not sent to the AEAT), at most 500 characters.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Cancels an issued invoice of a Spanish issuer in the VERI*FACTU chain (it was issued in
/// error): appends a `RegistroAnulacion` to the issuer's chain, sent to the AEAT by the
/// submission job. The invoice keeps its number; once per invoice. A wrong invoice that was
/// really issued is corrected with a corrective invoice instead (POST /v1/invoices/{id}/correct).
#[utoipa::path(post, path = "/v1/invoices/{id}/verifactu/annul", tag = "verifactu",
    params(("id" = String, Path, description = "Invoice id")),
    request_body(content = AnnulRequest, description = "Optional reason", content_type = "application/json"),
    responses((status = 200, body = VerifactuRecords),
        (status = 409, description = "Already cancelled", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn annul_invoice(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<AnnulRequest>,
) -> ApiResult<Json<VerifactuRecords>> {
    workflows::annul::annul(state.services(), &tx, &caller.company_id, &id, body).await?;
    let mut conn = tx.conn().await?;
    Ok(Json(
        records_view(&mut conn, &caller.company_id, &id).await?,
    ))
}

/// Whether the company may issue under VERI*FACTU, and how it got there.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Authorization {
    /// Whether the company issues under Spanish rules (type `ES:...`).
    pub required: bool,
    /// Issuing is allowed.
    pub in_effect: bool,
    /// `none`, `in_effect`, `pending_confirmation` (power of attorney declared) or `rejected`.
    pub status: String,
    /// `document`, `power_of_attorney` or null.
    pub method: Option<String>,
    pub note: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
}

async fn view(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
) -> ApiResult<Authorization> {
    let company = super::invoices::company(conn, company_id).await?;
    let row = store::verifactu::authorization(conn, company_id).await?;
    Ok(Authorization {
        required: company.is_spanish(),
        in_effect: row.as_ref().is_some_and(|r| r.in_effect == 1),
        status: row
            .as_ref()
            .map_or_else(|| "none".to_owned(), |r| r.status.clone()),
        method: row.as_ref().and_then(|r| r.method.clone()),
        note: row.as_ref().and_then(|r| r.note.clone()),
        updated_at: row.map(|r| ts(r.updated_at)).transpose()?,
    })
}

/// The company's VERI*FACTU authorization.
#[utoipa::path(get, path = "/v1/verifactu/authorization", tag = "verifactu",
    responses((status = 200, body = Authorization), crate::openapi::ReadErrors))]
pub async fn get_authorization(caller: Caller, mut db: DbConn) -> ApiResult<Json<Authorization>> {
    Ok(Json(view(&mut db, &caller.company_id).await?))
}

/// Uploads the signed authorization document (PDF). Its signature must cover the whole
/// file, verify, chain to a trusted Spanish certification authority (or a root the operator
/// configured), and be made with a certificate that names the company's fiscal id; then the
/// authorization is in effect. Human only.
#[utoipa::path(post, path = "/v1/verifactu/authorization/document", tag = "verifactu",
    request_body(content = Vec<u8>, content_type = "application/pdf", description = "The signed PDF (PAdES), exactly as signed"),
    responses((status = 200, body = Authorization), crate::openapi::WriteErrors))]
pub async fn upload_document(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> ApiResult<Json<Authorization>> {
    caller.require_human()?;
    let bytes =
        body.map_err(|_| ApiError::PayloadTooLarge("The document may be at most 10 MiB.".into()))?;
    // Hashing up to 10 MiB and checking signatures is CPU work: off the async threads, and
    // before the write transaction begins.
    let now = state.now();
    let config = state.config.clone();
    let verified =
        tokio::task::spawn_blocking(move || pdfsig::verify(&bytes, &config.signature_trust, now))
            .await
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("signature check failed: {e}")))?
            .map_err(refused)?;
    let mut conn = tx.conn().await?;
    let company = super::invoices::company(&mut conn, &caller.company_id).await?;
    verified.require_nif(&company.fiscal_id).map_err(refused)?;
    store::verifactu::set_authorization(
        &mut conn,
        &caller.company_id,
        "in_effect",
        true,
        "document",
        Some(&document_note(&verified)),
        Some(&caller.user_id),
    )
    .await?;
    Ok(Json(view(&mut conn, &caller.company_id).await?))
}

fn refused(r: pdfsig::Refusal) -> ApiError {
    ApiError::bad_request(r.to_string())
}

/// What the stored authorization says about the signature that put it in effect.
fn document_note(v: &pdfsig::Verified) -> String {
    let when = v.signing_time.map_or_else(
        || "no signing time".to_owned(),
        |t| {
            format!(
                "signed {}",
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )
        },
    );
    let note = format!(
        "signed authorization document verified: {} ({}), {when}, certificate issued by {}",
        v.signer,
        v.identifiers.join(", "),
        v.issuer
    );
    note.chars().take(500).collect()
}

/// Declares that a power of attorney was granted at the AEAT; it takes effect once the
/// daily check confirms it. Human only.
#[utoipa::path(post, path = "/v1/verifactu/authorization/power-of-attorney", tag = "verifactu",
    responses((status = 200, body = Authorization), crate::openapi::WriteErrors))]
pub async fn declare_power_of_attorney(caller: Caller, tx: Tx) -> ApiResult<Json<Authorization>> {
    caller.require_human()?;
    let mut conn = tx.conn().await?;
    let current = store::verifactu::authorization(&mut conn, &caller.company_id).await?;
    if current.as_ref().is_some_and(|r| r.in_effect == 1) {
        return Err(ApiError::Conflict(
            "The authorization is already in effect.".into(),
        ));
    }
    store::verifactu::set_authorization(
        &mut conn,
        &caller.company_id,
        "pending_confirmation",
        false,
        "power_of_attorney",
        Some("declared granted; waiting for the AEAT's confirmation (checked daily)"),
        Some(&caller.user_id),
    )
    .await?;
    Ok(Json(view(&mut conn, &caller.company_id).await?))
}
