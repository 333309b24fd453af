//! Payments received on issued invoices: recording one (never more than is outstanding)
//! and deleting one.

use super::{AppError, AppResult, Services, Writer, invoices::load};
use crate::{routes::invoices::payments::CreatePaymentRequest, views::optional_text};

/// Records a payment on the issued invoice `id`; more than the outstanding amount, a
/// draft or a corrective invoice is invalid. Emits `invoice.paid` when it settles it.
pub async fn record(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    req: CreatePaymentRequest,
) -> AppResult<store::payments::PaymentRow> {
    let mut conn = tx.conn().await?;
    let invoice = load(&mut conn, company_id, id).await?;
    if invoice.status != store::invoices::InvoiceStatus::Issued
        || invoice.series != store::invoices::Series::Invoice
    {
        return Err(AppError::invalid(
            "Payments are recorded on issued invoices only (not on drafts or corrective invoices).",
        ));
    }
    if req.amount_minor <= 0 {
        return Err(AppError::invalid("`amount_minor` must be positive."));
    }
    let outstanding = invoice.total - invoice.paid_minor;
    if req.amount_minor > outstanding {
        return Err(AppError::invalid(format!(
            "`amount_minor` {} is more than the {} still outstanding on this invoice.",
            req.amount_minor, outstanding
        )));
    }
    if let Some(account) = &req.bank_account_id
        && store::bank_accounts::get(&mut conn, company_id, account)
            .await?
            .is_none()
    {
        return Err(AppError::invalid(format!(
            "`bank_account_id` {account} is not a bank account of this company."
        )));
    }
    let now = svc.now();
    let row = store::payments::PaymentRow {
        id: store::new_id(),
        invoice_id: id.to_owned(),
        amount_minor: req.amount_minor,
        paid_at: req.paid_at.unwrap_or(now).timestamp_micros(),
        bank_account_id: req.bank_account_id,
        note: optional_text("note", req.note, 500)?,
        created_at: now.timestamp_micros(),
    };
    store::payments::insert(&mut conn, company_id, &row).await?;
    crate::routes::webhooks::emit_paid(
        &mut conn,
        company_id,
        &row.invoice_id,
        outstanding == req.amount_minor,
    )
    .await?;
    Ok(row)
}

/// Deletes the payment `pid` of the invoice `id` (e.g. recorded by mistake).
pub async fn delete(
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    pid: &str,
) -> AppResult<()> {
    let mut conn = tx.conn().await?;
    if store::payments::delete(&mut conn, company_id, id, pid).await? {
        Ok(())
    } else {
        Err(AppError::not_found("payment"))
    }
}
