//! Webhook events about invoices that the worker emits: `invoice.sent` (when a send is
//! mailed) and `invoice.overdue` (once per invoice, when its due date passes unpaid).
//! The API emits the others with the same [`invoice_data`].

use sqlx::AnyConnection;

use crate::invoices::InvoiceRow;

/// How long after its due date an invoice is still announced as overdue: an endpoint
/// created today is not sent every invoice that has been overdue for years.
pub const OVERDUE_WINDOW_MICROS: i64 = 7 * 24 * 3600 * 1_000_000;

/// The data of invoice events: what identifies the invoice and its amounts (minor units);
/// `GET /v1/invoices/{id}` has the rest. A stored time out of range is an error.
pub fn invoice_data(r: &InvoiceRow) -> sqlx::Result<serde_json::Value> {
    Ok(serde_json::json!({
        "id": r.id,
        "series": r.series,
        "status": r.status,
        "origin": r.origin,
        "reference": r.reference,
        "recipient_id": r.recipient_id,
        "currency_code": r.currency_code,
        "net_total": r.net_total,
        "tax_total": r.tax_total,
        "total": r.total,
        "paid_minor": r.paid_minor,
        "issued_at": r.issued_at.map(crate::from_micros).transpose()?,
        "due_date": r.due_date.map(crate::from_micros).transpose()?,
        "corrected_invoice_id": r.corrected_invoice_id,
    }))
}

/// Invoices that became overdue at `$1` (issued, not paid, due before `$1` and at most
/// [`OVERDUE_WINDOW_MICROS`] before it, `$2`; the condition of the `overdue` payment
/// status) and were not announced yet, of companies with an enabled endpoint for the
/// event: `(company_id, id, due_date)`, oldest due first, at most `$3`.
///
/// Read per company with such an endpoint over the partial index `invoices_unpaid_due`
/// (its condition, `paid_minor < total`, repeated word for word), never by reading every
/// invoice.
#[doc(hidden)]
pub const NEWLY_OVERDUE: &str = "\
    SELECT i.company_id, i.id, i.due_date FROM invoices i \
    WHERE i.company_id IN (SELECT w.company_id FROM webhook_endpoints w \
        WHERE w.enabled = 1 AND w.events LIKE '%\"invoice.overdue\"%') \
    AND i.status = 'issued' AND i.series = 'invoice' AND i.paid_minor < i.total \
    AND i.due_date IS NOT NULL AND i.due_date < $1 AND i.due_date >= $2 \
    AND NOT EXISTS (SELECT 1 FROM invoice_overdue_events o WHERE o.invoice_id = i.id) \
    ORDER BY i.due_date, i.id LIMIT CAST($3 AS BIGINT)";

/// [`NEWLY_OVERDUE`] at `now`: `(company_id, invoice_id)`, oldest due first.
pub async fn newly_overdue(
    conn: &mut AnyConnection,
    now: i64,
    limit: i64,
) -> sqlx::Result<Vec<(crate::CompanyId, String)>> {
    let rows: Vec<(crate::CompanyId, String, i64)> = sqlx::query_as(NEWLY_OVERDUE)
        .bind(now)
        .bind(now - OVERDUE_WINDOW_MICROS)
        .bind(limit)
        .fetch_all(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(company, id, _)| (company, id))
        .collect())
}

/// Records that `invoice.overdue` is emitted for the invoice; false when it was already
/// (by another worker meanwhile): the caller emits only on true, in the same transaction.
pub async fn mark_overdue(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    invoice_id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO invoice_overdue_events (invoice_id, company_id, emitted_at) \
         VALUES ($1, $2, $3) ON CONFLICT (invoice_id) DO NOTHING",
    )
    .bind(invoice_id)
    .bind(company_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
