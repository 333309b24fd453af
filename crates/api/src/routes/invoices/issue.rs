//! Issuing: guards, exchange rates, the gapless number, frozen snapshots; and bulk actions.

use axum::{
    Json,
    extract::{Path, State},
};
use chrono::Datelike;
use domain::reference::ReferenceFormat;
use serde::{Deserialize, Serialize};

use super::{
    ensure_draft, load,
    model::{ExchangeRateEntry, Invoice},
    to_json, view,
};
use crate::{
    AppState,
    auth::Caller,
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    routes::entities::{Entity, EntityTemplate},
};

/// Where a Spanish issuer obtains the VERI*FACTU authorization.
pub const AUTHORIZATION_URL: &str = "/settings/verifactu";

/// Issues a draft: assigns the next number of its series and year, freezes the reference,
/// recipient, company data, placeholder values and exchange rates.
#[utoipa::path(post, path = "/v1/invoices/{id}/issue", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, body = Invoice),
        (status = 409, description = "Already issued", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn issue_invoice(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<Invoice>> {
    // Everything is read first, on a pooled connection, so a refusal (unknown id, already
    // issued, terms not accepted, no exchange rate) never takes the writer, and the write
    // transaction below holds SQLite's single writer for as short as it can: it takes the
    // number and stores the invoice only if the draft is still as read here.
    let (draft, company, recipient) = {
        let mut db = state.db.pool().acquire().await?;
        let draft = load(&mut db, &caller.company_id, &id).await?;
        ensure_draft(&draft)?;
        let company = issuing_company(&mut db, &caller).await?;
        let recipient =
            store::entities::get(&mut db, &caller.company_id, &draft.recipient_id).await?;
        drop(db);
        // Rates missing from the draft come from the daily feed: fetched here, not while
        // holding the writer (issuing below finds them in the feed's cache), and a rate that
        // cannot be had is refused now.
        let template = recipient.as_ref().and_then(|r| {
            r.template_json
                .as_deref()
                .and_then(|t| serde_json::from_str::<EntityTemplate>(t).ok())
        });
        freeze_rates(&state, &company, &draft, template.as_ref(), state.now()).await?;
        (draft, company, recipient)
    };
    let mut conn = tx.conn().await?;
    let issued = issue_draft(&mut conn, &state, &company, recipient, draft).await?;
    Ok(Json(view(issued, caller.language)))
}

/// Why a draft read before the write transaction could not be issued inside it: it is gone
/// (404), was issued by a concurrent request (409), or was changed meanwhile (409, retry).
async fn lost_draft(conn: &mut sqlx::AnyConnection, company_id: &str, id: &str) -> ApiError {
    let row = match load(conn, company_id, id).await {
        Ok(row) => row,
        Err(e) => return e,
    };
    match ensure_draft(&row) {
        Err(e) => e,
        Ok(()) => ApiError::Conflict(format!(
            "Invoice {id} was changed while it was being issued; nothing was issued. Issue it \
             again to issue the draft as it is now."
        )),
    }
}

/// The caller's company, once it is checked to be allowed to issue: settled, the current
/// legal documents accepted by the caller, and for Spanish issuers the VERI*FACTU
/// authorization in effect (refused in that order). One query.
///
/// Read before the write transaction (on any connection): like every read of a
/// PostgreSQL transaction at READ COMMITTED, it sees the company as it was when read.
pub async fn issuing_company(
    conn: &mut sqlx::AnyConnection,
    caller: &Caller,
) -> ApiResult<store::companies::CompanyRow> {
    let found = store::companies::for_issuing(conn, &caller.company_id, &caller.user_id)
        .await?
        .ok_or_else(|| ApiError::not_found("company"))?;
    let company = found.company;
    if company.is_settled == 0 {
        return Err(ApiError::company_not_settled());
    }
    if found.unaccepted_documents > 0 {
        return Err(ApiError::agreement_required());
    }
    if company
        .company_type
        .as_deref()
        .is_some_and(|t| t.starts_with("ES:"))
        && found.verifactu_in_effect != 1
    {
        return Err(ApiError::Forbidden {
            code: "verifactu_authorization_required",
            message: "Spanish issuers must report every invoice to the AEAT (VERI*FACTU): authorize this \
                      service to submit on the company's behalf first. The invoice stays a draft."
                .into(),
            authorization_url: Some(AUTHORIZATION_URL.into()),
        });
    }
    Ok(company)
}

/// Issues one draft inside the caller's transaction and returns the stored row.
///
/// `row` is the draft as read (before the transaction, or locked with
/// [`store::invoices::claim_draft`]); if it is no longer that draft when stored, nothing is
/// issued and the error says why (the caller's transaction must roll back). `company` comes
/// from [`issuing_company`]; `recipient`, when given, is the draft's recipient read earlier
/// (it is read here when missing or not the draft's).
pub async fn issue_draft(
    conn: &mut sqlx::AnyConnection,
    state: &AppState,
    company: &store::companies::CompanyRow,
    recipient: Option<store::entities::EntityRow>,
    mut row: store::invoices::InvoiceRow,
) -> ApiResult<store::invoices::InvoiceRow> {
    let recipient = match recipient.filter(|r| r.id == row.recipient_id) {
        Some(r) => r,
        None => store::entities::get(conn, &company.id, &row.recipient_id)
            .await?
            .ok_or_else(|| ApiError::bad_request("The invoice's recipient no longer exists."))?,
    };
    let now = state.now();

    // Placeholders: a required one added to the company after the draft was made must be filled.
    let given: Vec<crate::routes::entities::PlaceholderValue> =
        serde_json::from_str(&row.custom_placeholder_values_json).unwrap_or_default();
    let template: Option<EntityTemplate> = recipient
        .template_json
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok());
    let placeholders = super::build::placeholders(company, template.as_ref(), given)?;

    let rates = freeze_rates(state, company, &row, template.as_ref(), now).await?;

    let (series_format, first) = match row.series.as_str() {
        "corrective" => (
            &company.corrective_invoice_reference_format,
            company.first_corrective_invoice_yearly_number,
        ),
        _ => (
            &company.invoice_reference_format,
            company.first_invoice_yearly_number,
        ),
    };
    let format = ReferenceFormat::parse(series_format).map_err(|e| {
        ApiError::bad_request(format!(
            "The company's reference format {e}; fix it with PATCH /v1/company."
        ))
    })?;
    let year = i64::from(now.year());

    // The number and reference are taken when the invoice is stored.
    row.status = "issued".into();
    row.invoice_year = Some(year);
    row.issued_at = Some(now.timestamp_micros());
    row.order_number = None;
    row.order_year = None;
    row.custom_placeholder_values_json = to_json(&placeholders)?;
    row.exchange_rates_json = to_json(&rates)?;
    row.issuer_snapshot_json = Some(to_json(&issuer_snapshot(company))?);
    row.recipient_snapshot_json = Some(to_json(&Entity::from(recipient.clone()))?);
    if !store::invoices::store_issued(conn, &mut row, first, &format.parts(year)).await? {
        return Err(lost_draft(conn, &company.id, &row.id).await);
    }
    if crate::aeat::is_spanish(company) {
        let corrected = match &row.corrected_invoice_id {
            Some(id) => store::invoices::get(conn, &company.id, id).await?,
            None => None,
        };
        crate::aeat::register_issue(
            conn,
            state.config.aeat_mode,
            company,
            &row,
            &recipient,
            corrected.as_ref(),
            now,
        )
        .await?;
    }
    Ok(row)
}

/// Every pair the invoice needs (to the company currency and to the template's display
/// currencies): supplied ones as given, missing ones from the daily feed, else a 400.
async fn freeze_rates(
    state: &AppState,
    company: &store::companies::CompanyRow,
    row: &store::invoices::InvoiceRow,
    template: Option<&EntityTemplate>,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<Vec<ExchangeRateEntry>> {
    let mut rates: Vec<ExchangeRateEntry> =
        serde_json::from_str(&row.exchange_rates_json).unwrap_or_default();
    let from = row.currency_code.clone();
    let mut targets: Vec<String> = company.currency_code.iter().cloned().collect();
    if let Some(t) = template {
        targets.extend(t.display_currencies.iter().cloned());
    }
    for to in targets {
        if to == from || rates.iter().any(|r| r.from == from && r.to == to) {
            continue;
        }
        match state.fx.quote(&from, &to, now.date_naive()).await {
            Some(q) => rates.push(ExchangeRateEntry {
                from: from.clone(),
                to: to.clone(),
                rate: q.rate,
                date: Some(q.date.to_string()),
                source: Some("ecb".into()),
            }),
            None => {
                return Err(ApiError::bad_request(format!(
                    "No exchange rate {from}->{to} could be obtained; supply it in the draft's \
                     `exchange_rates`, e.g. {{\"from\":\"{from}\",\"to\":\"{to}\",\"rate\":\"1.2345\"}} \
                     (PATCH /v1/invoices/{}), then issue again.",
                    row.id
                )));
            }
        }
    }
    Ok(rates)
}

/// The company data printed on an issued invoice, frozen.
fn issuer_snapshot(c: &store::companies::CompanyRow) -> serde_json::Value {
    serde_json::json!({
        "id": c.id,
        "name": c.name,
        "fiscal_id": c.fiscal_id,
        "vies_vat_id": c.vies_vat_id,
        "type": c.company_type,
        "email": c.email,
        "phone": c.phone,
        "address": c.address_json.as_deref().and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok()),
        "footer_invoice_typst": c.footer_invoice_typst,
        "post_invoice_typst": c.post_invoice_typst,
    })
}

/// Ids for a bulk action; ids that are not the caller's are ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkIdsRequest {
    pub ids: Vec<String>,
}

/// How many requested documents the action applied to.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BulkActionResult {
    #[schema(minimum = 0)]
    pub affected: i64,
}

/// Deduplicated, bounded ids.
pub fn bulk_ids(req: BulkIdsRequest) -> ApiResult<Vec<String>> {
    if req.ids.len() > 500 {
        return Err(ApiError::bad_request("`ids` takes at most 500 ids."));
    }
    let mut ids = req.ids;
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Issues every listed draft, in the order of their draft numbers; all or nothing.
#[utoipa::path(post, path = "/v1/invoices/bulk/issue", tag = "invoices", request_body = BulkIdsRequest,
    responses((status = 200, body = BulkActionResult), crate::openapi::WriteErrors))]
pub async fn bulk_issue(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<BulkIdsRequest>,
) -> ApiResult<Json<BulkActionResult>> {
    let ids = bulk_ids(req)?;
    let company = {
        let mut db = state.db.pool().acquire().await?;
        issuing_company(&mut db, &caller).await?
    };
    let mut conn = tx.conn().await?;
    let mut drafts = Vec::new();
    for id in ids {
        // Locked for issuing; ids that are not (or no longer) drafts are skipped.
        if let Some(row) = store::invoices::claim_draft(&mut conn, &caller.company_id, &id).await? {
            drafts.push(row);
        }
    }
    drafts.sort_by_key(|r| (r.order_year, r.order_number, r.id.clone()));
    let mut affected = 0;
    for row in drafts {
        let id = row.id.clone();
        issue_draft(&mut conn, &state, &company, None, row)
            .await
            .map_err(|e| match e {
                ApiError::BadRequest(m) => {
                    ApiError::BadRequest(format!("Invoice {id}: {m} Nothing was issued."))
                }
                other => other,
            })?;
        affected += 1;
    }
    Ok(Json(BulkActionResult { affected }))
}

/// Deletes every listed draft; issued invoices and other companies' ids are ignored.
#[utoipa::path(post, path = "/v1/invoices/bulk/delete", tag = "invoices", request_body = BulkIdsRequest,
    responses((status = 200, body = BulkActionResult), crate::openapi::WriteErrors))]
pub async fn bulk_delete(
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<BulkIdsRequest>,
) -> ApiResult<Json<BulkActionResult>> {
    let mut conn = tx.conn().await?;
    let mut affected = 0;
    for id in bulk_ids(req)? {
        if store::invoices::delete_draft(&mut conn, &caller.company_id, &id).await? {
            affected += 1;
        }
    }
    Ok(Json(BulkActionResult { affected }))
}
