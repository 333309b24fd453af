//! Rules every invoice workflow shares: reading an invoice or the company of the caller,
//! and what may change a draft.

use super::{AppError, AppResult};

/// The invoice `id` of the company `company_id` (404 otherwise, also for another company's).
pub async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> AppResult<store::invoices::InvoiceRow> {
    store::invoices::get(conn, company_id, &invoice_id(id)?)
        .await?
        .ok_or_else(|| AppError::not_found("invoice"))
}

/// The invoice id written as `text` (a path's): one that cannot be an id names no
/// invoice of the company (404), like an unknown one.
pub fn invoice_id(text: &str) -> AppResult<store::InvoiceId> {
    store::InvoiceId::parse(text).map_err(|_| AppError::not_found("invoice"))
}

/// The company `company_id`.
pub async fn company(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
) -> AppResult<store::companies::CompanyRow> {
    store::companies::get(conn, company_id)
        .await?
        .ok_or_else(|| AppError::not_found("company"))
}

/// Only drafts change: an issued invoice is corrected by a corrective one (409 otherwise).
pub fn ensure_draft(row: &store::invoices::InvoiceRow) -> AppResult<()> {
    if row.status == store::invoices::InvoiceStatus::Draft {
        Ok(())
    } else {
        Err(AppError::Conflict(format!(
            "Invoice {} is issued and cannot change; issue a corrective invoice instead \
             (POST /v1/invoices/{}/corrections).",
            row.reference.as_deref().unwrap_or(&row.id),
            row.id
        )))
    }
}
