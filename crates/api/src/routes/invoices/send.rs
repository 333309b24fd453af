//! Sending invoices to customers: `POST /v1/invoices/{id}/send` and
//! `GET /v1/invoices/{id}/deliveries`.
//!
//! The send itself is [`crate::workflows::send`]: a delivery and its job written in the
//! request's transaction, mailed by the worker once the request has committed.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::load;
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    workflows,
};

pub use crate::workflows::send::{MAX_QUEUED_PER_COMPANY, attachments};

/// Mailing an issued invoice to its customer.
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendInvoiceRequest {
    /// Recipients; omitted: the recipient entity's `email`.
    #[serde(default)]
    pub to: Option<Vec<String>>,
    /// Copies.
    #[serde(default)]
    pub cc: Option<Vec<String>>,
    /// A personal message added to the mail (at most 2,000 characters).
    #[serde(default)]
    pub message: Option<String>,
}

/// An invoice mailed to its customer: a send or a reminder.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Delivery {
    pub id: String,
    /// `send` or `reminder`.
    pub kind: String,
    /// `queued` (waiting, or retrying after `error`), `sent` or `failed` (for good, see `error`).
    pub status: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// File names of the attachments.
    pub attachments: Vec<String>,
    /// For reminders: the `reminderDays` step (days after the due date).
    pub step: Option<i64>,
    /// The language the mail is written in.
    pub language: String,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
    /// Why the last try failed.
    pub error: Option<String>,
}

/// The API view of a stored delivery; a column that does not decode is an error.
pub(crate) fn delivery_view(d: store::deliveries::DeliveryRow) -> ApiResult<Delivery> {
    let list = |what: &str, text: &str| -> ApiResult<Vec<String>> {
        Ok(crate::documents::parse(
            &format!("delivery {} {what}", d.id),
            text,
        )?)
    };
    Ok(Delivery {
        to: list("recipients", &d.to_json)?,
        cc: list("copies", &d.cc_json)?,
        attachments: list("attachments", &d.attachments_json)?,
        id: d.id,
        kind: d.kind,
        status: d.status,
        step: d.step,
        language: d.language,
        created_at: crate::views::ts(d.created_at)?,
        sent_at: crate::views::ts_opt(d.sent_at)?,
        error: d.error,
    })
}

/// The bytes of the attachment `name` of an issued invoice, with its MIME type: what the
/// worker attaches to a delivery (`jobs::invoicing::Invoicing::attachment`).
pub async fn attachment(
    state: &AppState,
    company_id: &store::CompanyId,
    invoice_id: &str,
    name: &str,
) -> ApiResult<(String, Vec<u8>)> {
    let mut db = state.db.acquire().await?;
    let invoice = load(&mut db, company_id, invoice_id).await?;
    workflows::send::ensure_issued(&invoice)?;
    if name == format!("{}.pdf", workflows::send::file_stem(&invoice)) {
        let doc = crate::routes::pdf::invoice_render_input(&mut db, company_id, &invoice).await?;
        db.release();
        let pdf = crate::routes::pdf::render_pdf(state, company_id, doc).await?;
        return Ok(("application/pdf".into(), pdf));
    }
    if name == format!("{}.xml", workflows::send::file_stem(&invoice)) {
        // The e-invoice in the recipient's format (else UBL), as GET .../einvoice serves it.
        let (format, xml) = crate::routes::einvoice::recipient_xml(&mut db, &invoice).await?;
        let xml = if format == einvoice::Format::Facturae {
            let doc = crate::documents::of_row(&invoice)?;
            crate::routes::einvoice::facturae_signature(state, &doc, xml)?.0
        } else {
            xml
        };
        return Ok(("application/xml".into(), xml.into_bytes()));
    }
    Err(ApiError::Internal(anyhow::anyhow!(
        "invoice {invoice_id} has no attachment named {name}"
    )))
}

/// Mails an issued invoice to its customer with its PDF (and its e-invoice) attached, in
/// the recipient's language. Queued now and sent by the worker: follow it in
/// `GET /v1/invoices/{id}/deliveries`. Drafts: 409.
#[utoipa::path(post, path = "/v1/invoices/{id}/send", tag = "invoices",
    request_body = SendInvoiceRequest,
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 201, body = Delivery),
        (status = 409, description = "The invoice is a draft", body = String, content_type = "text/plain"),
        (status = 429, description = "The company has too many mails waiting to be sent (`Retry-After` says when to ask again)", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn send_invoice(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<SendInvoiceRequest>,
) -> ApiResult<(StatusCode, Json<Delivery>)> {
    let row = workflows::send::send(state.services(), &tx, &caller.company_id, &id, req).await?;
    Ok((StatusCode::CREATED, Json(delivery_view(row)?)))
}

/// The sends and reminders of an invoice, newest first.
#[utoipa::path(get, path = "/v1/invoices/{id}/deliveries", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ListParams),
    responses((status = 200, body = Page<Delivery>), crate::openapi::ReadErrors))]
pub async fn list_deliveries(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<Delivery>>> {
    load(&mut db, &caller.company_id, &id).await?;
    let limit = params.limit()?;
    let rows = store::deliveries::list(
        &mut db,
        &caller.company_id,
        &id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        delivery_view,
    )?))
}
