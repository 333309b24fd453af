//! Sending invoices to customers: `POST /v1/invoices/{id}/send` and
//! `GET /v1/invoices/{id}/deliveries`.
//!
//! A send writes a delivery and its `invoice.deliver` job in the request's transaction
//! (`store::deliveries::insert_queued`): the worker mails it once the request has
//! committed, so a request that fails, or an AI caller's dry run, never mails anything.

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
};

/// Most addresses one delivery goes to (`to` and `cc` together).
const MAX_RECIPIENTS: usize = 10;
/// Longest personal message, in characters.
const MAX_MESSAGE: usize = 2000;
/// Most deliveries one company may have waiting to be mailed.
pub const MAX_QUEUED_PER_COMPANY: i64 = 1000;

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
        crate::documents::parse(&format!("delivery {} {what}", d.id), text)
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
        created_at: store::from_micros(d.created_at),
        sent_at: d.sent_at.map(store::from_micros),
        error: d.error,
    })
}

/// A mail address as a delivery takes it: one `local@domain`, no spaces or control
/// characters, at most 254 characters.
fn checked_address(field: &str, a: &str) -> ApiResult<String> {
    let a = a.trim();
    let ok = a.len() <= 254
        && !a.chars().any(|c| c.is_whitespace() || c.is_control())
        && !a.contains(['<', '>', ',', ';', '"'])
        && a.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.contains('@')
        });
    if ok {
        Ok(a.to_owned())
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` has `{a}`, which is not a mail address (name@example.com)."
        )))
    }
}

/// Queues the mailing of an issued invoice in the caller's transaction: the delivery row
/// and its job. `to` omitted: the recipient's `email` (none: 400). The mail is written in
/// the language of the invoice (the recipient's).
pub(crate) async fn queue_send(
    conn: &mut sqlx::AnyConnection,
    invoice: &store::invoices::InvoiceRow,
    req: SendInvoiceRequest,
    now: DateTime<Utc>,
) -> ApiResult<store::deliveries::DeliveryRow> {
    ensure_issued(invoice)?;
    // The attached e-invoice must be one the recipient's format accepts: refused now, with
    // the rule and the field to set, rather than failing in the worker.
    crate::routes::einvoice::recipient_xml(conn, invoice).await?;
    if store::deliveries::queued_count(conn, &invoice.company_id).await? >= MAX_QUEUED_PER_COMPANY {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "The company has {MAX_QUEUED_PER_COMPANY} mails waiting to be sent; send this \
                 one once some have gone out."
            ),
            retry_after_secs: 60,
        });
    }
    let entity = store::entities::get(conn, &invoice.company_id, &invoice.recipient_id)
        .await?
        .ok_or_else(|| ApiError::bad_request("The invoice's recipient no longer exists."))?;
    let to = match req.to {
        Some(to) if !to.is_empty() => to,
        _ => match entity
            .email
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            Some(e) => vec![e.to_owned()],
            None => {
                return Err(ApiError::bad_request(format!(
                    "The recipient {} has no `email`: give `to`, or set the entity's email \
                     (PATCH /v1/entities/{}).",
                    entity.name, entity.id
                )));
            }
        },
    };
    let cc = req.cc.unwrap_or_default();
    if to.len() + cc.len() > MAX_RECIPIENTS {
        return Err(ApiError::bad_request(format!(
            "A delivery goes to at most {MAX_RECIPIENTS} addresses (`to` and `cc` together)."
        )));
    }
    let to = to
        .iter()
        .map(|a| checked_address("to", a))
        .collect::<ApiResult<Vec<_>>>()?;
    let cc = cc
        .iter()
        .map(|a| checked_address("cc", a))
        .collect::<ApiResult<Vec<_>>>()?;
    let message = crate::views::optional_text("message", req.message, MAX_MESSAGE)?;
    // The language the invoice itself is written in: the recipient's (their template's),
    // else the company's, as decided at issue.
    let language = crate::documents::of_row(invoice)?.presentation.language;
    let json = |v: &Vec<String>| super::to_json(v);
    let row = store::deliveries::DeliveryRow {
        id: store::new_id(),
        company_id: invoice.company_id.clone(),
        invoice_id: invoice.id.clone(),
        kind: "send".into(),
        step: None,
        status: "queued".into(),
        to_json: json(&to)?,
        cc_json: json(&cc)?,
        message,
        attachments_json: json(&attachments(invoice))?,
        language,
        error: None,
        created_at: now.timestamp_micros(),
        sent_at: None,
    };
    store::deliveries::insert_queued(conn, &row).await?;
    Ok(row)
}

/// The file names a delivery of `invoice` attaches. The one place to add an attachment:
/// name it here and make its bytes in [`attachment`].
pub fn attachments(invoice: &store::invoices::InvoiceRow) -> Vec<String> {
    let stem = file_stem(invoice);
    vec![format!("{stem}.pdf"), format!("{stem}.xml")]
}

/// The invoice's reference as a file name: anything but letters, digits, `.`, `-` and `_`
/// becomes `-`.
fn file_stem(invoice: &store::invoices::InvoiceRow) -> String {
    invoice
        .reference
        .as_deref()
        .unwrap_or(&invoice.id)
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// The bytes of the attachment `name` of an issued invoice, with its MIME type: what the
/// worker attaches to a delivery (`jobs::invoicing::Invoicing::attachment`).
pub async fn attachment(
    state: &AppState,
    company_id: &str,
    invoice_id: &str,
    name: &str,
) -> ApiResult<(String, Vec<u8>)> {
    let mut db = state.db.pool().acquire().await?;
    let invoice = load(&mut db, company_id, invoice_id).await?;
    ensure_issued(&invoice)?;
    if name == format!("{}.pdf", file_stem(&invoice)) {
        let doc = crate::routes::pdf::invoice_render_input(&mut db, company_id, &invoice).await?;
        drop(db);
        let pdf = crate::routes::pdf::render_pdf(state, company_id, doc).await?;
        return Ok(("application/pdf".into(), pdf));
    }
    if name == format!("{}.xml", file_stem(&invoice)) {
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

fn ensure_issued(invoice: &store::invoices::InvoiceRow) -> ApiResult<()> {
    if invoice.status == store::invoices::InvoiceStatus::Issued {
        return Ok(());
    }
    Err(ApiError::Conflict(format!(
        "Invoice {} is a draft: issue it first (POST /v1/invoices/{}/issue), then send it.",
        invoice.id, invoice.id
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
    let mut conn = tx.conn().await?;
    let invoice = load(&mut conn, &caller.company_id, &id).await?;
    let row = queue_send(&mut conn, &invoice, req, state.now()).await?;
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
