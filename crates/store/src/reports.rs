//! Business reports: the request rows, and the issued invoices and expenses a report reads.
//!
//! A report row moves `queued` → `rendering` → `ready` (with its PDF in `files`) or
//! `failed` (with the error). The figures themselves are computed in Rust from the rows
//! returned by [`invoices_in`] and [`expenses_in`], so SQLite and PostgreSQL agree.

use sqlx::AnyConnection;

/// A report as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReportRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub requested_by: String,
    pub report_type: String,
    pub locale: String,
    pub period_start: i64,
    pub period_end: i64,
    pub status: String,
    pub error: Option<String>,
    pub file_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub ready_at: Option<i64>,
}

const SELECT: &str = "SELECT id, company_id, requested_by, report_type, locale, period_start, \
    period_end, status, error, file_id, created_at, updated_at, ready_at FROM reports";

/// Stores a new report request (status `queued`).
pub async fn insert(conn: &mut AnyConnection, r: &ReportRow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO reports (id, company_id, requested_by, report_type, locale, period_start, \
         period_end, status, error, file_id, created_at, updated_at, ready_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(&r.id)
    .bind(&r.company_id)
    .bind(&r.requested_by)
    .bind(&r.report_type)
    .bind(&r.locale)
    .bind(r.period_start)
    .bind(r.period_end)
    .bind(&r.status)
    .bind(&r.error)
    .bind(&r.file_id)
    .bind(r.created_at)
    .bind(r.updated_at)
    .bind(r.ready_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// One report of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<ReportRow>> {
    sqlx::query_as::<_, ReportRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// A report by id alone, for the worker and for signed download links.
pub async fn get_any(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<ReportRow>> {
    sqlx::query_as::<_, ReportRow>(sqlx::AssertSqlSafe(format!("{SELECT} WHERE id = $1")))
        .bind(id)
        .fetch_optional(conn)
        .await
}

/// Reports of the company, newest first, after the cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<ReportRow>> {
    sqlx::query_as::<_, ReportRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE company_id = $1 AND ($2 IS NULL OR id < $2) ORDER BY id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Marks a queued (or re-run) report as rendering; false when it is gone or already ready.
pub async fn start(conn: &mut AnyConnection, id: &str, now: i64) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE reports SET status = 'rendering', error = NULL, updated_at = $2 \
         WHERE id = $1 AND status IN ('queued', 'rendering', 'failed')",
    )
    .bind(id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the rendered PDF; false when the report was deleted (or finished) meanwhile.
pub async fn finish(
    conn: &mut AnyConnection,
    id: &str,
    file_id: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE reports SET status = 'ready', file_id = $2, error = NULL, updated_at = $3, \
         ready_at = $3 WHERE id = $1 AND status = 'rendering'",
    )
    .bind(id)
    .bind(file_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Marks a report failed with its error (unless it is already ready or gone).
pub async fn fail(conn: &mut AnyConnection, id: &str, error: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE reports SET status = 'failed', error = $2, updated_at = $3 \
         WHERE id = $1 AND status <> 'ready'",
    )
    .bind(id)
    .bind(error)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes a report of the company and its PDF; false when there is none.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    let Some(report) = get(&mut *conn, company_id, id).await? else {
        return Ok(false);
    };
    sqlx::query("DELETE FROM reports WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    if let Some(file) = report.file_id {
        sqlx::query("DELETE FROM files WHERE id = $2 AND (company_id = $1) IS TRUE")
            .bind(company_id)
            .bind(file)
            .execute(conn)
            .await?;
    }
    Ok(true)
}

/// An issued invoice as a report reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReportInvoice {
    pub id: String,
    pub recipient_id: String,
    pub recipient_name: String,
    pub series: String,
    pub currency_code: String,
    pub issued_at: i64,
    pub net_total: i64,
    pub tax_total: i64,
    pub withholding_total: i64,
    pub total: i64,
    /// The invoice's number (in the row, outside its document).
    pub reference: Option<String>,
    /// The invoice's yearly number.
    pub invoice_number: Option<i64>,
    /// The invoice's fiscal year.
    pub invoice_year: Option<i64>,
    /// The issued invoice's document (`document::stored`), for the tax breakdown.
    pub document_json: Option<String>,
}

impl ReportInvoice {
    /// Its issue data, checked as [`crate::invoices::InvoiceRow::issued`] checks it.
    pub fn issued(&self) -> Result<crate::invoices::Issued<'_>, crate::invoices::NotIssued> {
        crate::invoices::Issued::of(
            &self.id,
            self.reference.as_deref(),
            self.invoice_number,
            self.invoice_year,
            Some(self.issued_at),
        )
    }
}

/// Invoices of the company issued in `[start, end)`, corrective ones included, oldest first.
pub async fn invoices_in(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    start: i64,
    end: i64,
) -> sqlx::Result<Vec<ReportInvoice>> {
    sqlx::query_as::<_, ReportInvoice>(
        "SELECT i.id, i.recipient_id, e.name AS recipient_name, i.series, i.currency_code, \
         i.issued_at, i.net_total, i.tax_total, i.withholding_total, i.total, i.reference, \
         i.invoice_number, i.invoice_year, i.document_json \
         FROM invoices i JOIN entities e ON e.id = i.recipient_id \
         WHERE i.company_id = $1 AND i.status = 'issued' AND i.issued_at >= $2 AND i.issued_at < $3 \
         ORDER BY i.issued_at, i.id",
    )
    .bind(company_id)
    .bind(start)
    .bind(end)
    .fetch_all(conn)
    .await
}

/// An expense as a report reads it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReportExpense {
    pub id: String,
    pub supplier_id: String,
    pub supplier_name: String,
    pub category: Option<String>,
    pub currency_code: String,
    pub expense_date: i64,
    pub net_total: i64,
    pub tax_total: i64,
    pub total: i64,
}

/// Expenses of the company dated in `[start, end)`, oldest first.
pub async fn expenses_in(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    start: i64,
    end: i64,
) -> sqlx::Result<Vec<ReportExpense>> {
    sqlx::query_as::<_, ReportExpense>(
        "SELECT x.id, x.supplier_id, e.name AS supplier_name, x.category, x.currency_code, \
         x.expense_date, x.net_total, x.tax_total, x.total \
         FROM expenses x JOIN entities e ON e.id = x.supplier_id \
         WHERE x.company_id = $1 AND x.expense_date >= $2 AND x.expense_date < $3 \
         ORDER BY x.expense_date, x.id",
    )
    .bind(company_id)
    .bind(start)
    .bind(end)
    .fetch_all(conn)
    .await
}

/// Attempts of a `report.render` job before the report is marked failed.
pub const RENDER_ATTEMPTS: i64 = 3;

/// The job that renders a report, to enqueue in the transaction that creates it.
pub fn render_job(report_id: &str, company_id: &crate::CompanyId) -> crate::jobs::NewJob {
    let mut job = crate::jobs::NewJob::new(
        crate::jobs::kind::REPORT_RENDER,
        crate::jobs::ReportRender {
            report_id: report_id.to_owned(),
        },
    )
    .for_company(company_id);
    job.max_attempts = RENDER_ATTEMPTS;
    job
}
