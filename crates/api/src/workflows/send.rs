//! Sending an issued invoice to its customer: a delivery and its `invoice.deliver` job
//! written in the caller's transaction (`store::deliveries::insert_queued`), so the
//! worker mails it once the transaction has committed, and a failed request or an AI
//! caller's dry run never mails anything.

use chrono::{DateTime, Utc};

use super::{AppError, AppResult, Services, Writer, drafts::to_json, invoices::load};
use crate::routes::invoices::send::SendInvoiceRequest;

/// Most addresses one delivery goes to (`to` and `cc` together).
const MAX_RECIPIENTS: usize = 10;
/// Longest personal message, in characters.
const MAX_MESSAGE: usize = 2000;
/// Most deliveries one company may have waiting to be mailed.
pub const MAX_QUEUED_PER_COMPANY: i64 = 1000;

/// Queues the mailing of the issued invoice `id` of the company (see [`queue`]).
pub async fn send(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    req: SendInvoiceRequest,
) -> AppResult<store::deliveries::DeliveryRow> {
    let mut conn = tx.conn().await?;
    let invoice = load(&mut conn, company_id, id).await?;
    queue(&mut conn, &invoice, req, svc.now()).await
}

/// Queues the mailing of an issued invoice on `conn` (a write transaction): the delivery
/// row and its job. `to` omitted: the recipient's `email` (none: invalid). The mail is
/// written in the language of the invoice (the recipient's, as decided at issue).
pub async fn queue(
    conn: &mut sqlx::AnyConnection,
    invoice: &store::invoices::InvoiceRow,
    req: SendInvoiceRequest,
    now: DateTime<Utc>,
) -> AppResult<store::deliveries::DeliveryRow> {
    ensure_issued(invoice)?;
    // The attached e-invoice must be one the recipient's format accepts: refused now, with
    // the rule and the field to set, rather than failing in the worker.
    crate::routes::einvoice::recipient_xml(conn, invoice).await?;
    if store::deliveries::queued_count(conn, &invoice.company_id).await? >= MAX_QUEUED_PER_COMPANY {
        return Err(AppError::Busy {
            message: format!(
                "The company has {MAX_QUEUED_PER_COMPANY} mails waiting to be sent; send this \
                 one once some have gone out."
            ),
            retry_after_secs: 60,
        });
    }
    let entity = store::entities::get(conn, &invoice.company_id, &invoice.recipient_id)
        .await?
        .ok_or_else(|| AppError::invalid("The invoice's recipient no longer exists."))?;
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
                return Err(AppError::invalid(format!(
                    "The recipient {} has no `email`: give `to`, or set the entity's email \
                     (PATCH /v1/entities/{}).",
                    entity.name, entity.id
                )));
            }
        },
    };
    let cc = req.cc.unwrap_or_default();
    if to.len() + cc.len() > MAX_RECIPIENTS {
        return Err(AppError::invalid(format!(
            "A delivery goes to at most {MAX_RECIPIENTS} addresses (`to` and `cc` together)."
        )));
    }
    let to = to
        .iter()
        .map(|a| checked_address("to", a))
        .collect::<AppResult<Vec<_>>>()?;
    let cc = cc
        .iter()
        .map(|a| checked_address("cc", a))
        .collect::<AppResult<Vec<_>>>()?;
    let message = crate::views::optional_text("message", req.message, MAX_MESSAGE)?;
    let language = crate::documents::of_row(invoice)?.presentation.language;
    let row = store::deliveries::DeliveryRow {
        id: store::new_id(),
        company_id: invoice.company_id.clone(),
        invoice_id: invoice.id.clone(),
        kind: "send".into(),
        step: None,
        status: "queued".into(),
        to_json: to_json(&to)?,
        cc_json: to_json(&cc)?,
        message,
        attachments_json: to_json(&attachments(invoice))?,
        language,
        error: None,
        created_at: now.timestamp_micros(),
        sent_at: None,
    };
    store::deliveries::insert_queued(conn, &row).await?;
    Ok(row)
}

/// A mail address as a delivery takes it: one `local@domain`, no spaces or control
/// characters, at most 254 characters.
fn checked_address(field: &str, a: &str) -> AppResult<String> {
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
        Err(AppError::invalid(format!(
            "`{field}` has `{a}`, which is not a mail address (name@example.com)."
        )))
    }
}

/// The file names a delivery of `invoice` attaches. The one place to add an attachment:
/// name it here and make its bytes in `routes::invoices::send::attachment`.
pub fn attachments(invoice: &store::invoices::InvoiceRow) -> Vec<String> {
    let stem = file_stem(invoice);
    vec![format!("{stem}.pdf"), format!("{stem}.xml")]
}

/// The invoice's reference as a file name: anything but letters, digits, `.`, `-` and `_`
/// becomes `-`.
pub fn file_stem(invoice: &store::invoices::InvoiceRow) -> String {
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

/// Only issued invoices are sent (a draft is a conflict).
pub fn ensure_issued(invoice: &store::invoices::InvoiceRow) -> AppResult<()> {
    if invoice.status == store::invoices::InvoiceStatus::Issued {
        return Ok(());
    }
    Err(AppError::Conflict(format!(
        "Invoice {} is a draft: issue it first (POST /v1/invoices/{}/issue), then send it.",
        invoice.id, invoice.id
    )))
}
