//! Recurring invoices: schedules, and the one run of each of their periods.
//!
//! A period gets its draft in the transaction that inserts its `recurring_runs` row; the
//! row's primary key `(recurring_invoice_id, period_start)` is what makes each period run
//! once, whatever the number of workers or restarts: a second insert of the same period
//! conflicts (on PostgreSQL it waits for the first transaction, then finds the row).

use sqlx::AnyConnection;

/// A recurring invoice as stored. Dates are `YYYY-MM-DD` (UTC days).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RecurringRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    /// The user whose acceptance of the legal documents an automatic issue relies on.
    pub created_by: String,
    /// The fields of the draft each period gets (a CreateInvoiceRequest as JSON).
    pub invoice_json: String,
    /// `weekly`, `monthly`, `quarterly` or `yearly`.
    pub frequency: String,
    pub interval_count: i64,
    pub start_date: String,
    pub end_date: Option<String>,
    pub auto_issue: i64,
    pub auto_send: i64,
    pub paused: i64,
    /// Start of the next period to run; `None` once the schedule has ended.
    pub next_run_date: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: Option<i64>,
}

const COLUMNS: &str = "id, company_id, created_by, invoice_json, frequency, interval_count, \
    start_date, end_date, auto_issue, auto_send, paused, next_run_date, last_error, created_at, updated_at";

/// Stores a new schedule.
pub async fn insert(conn: &mut AnyConnection, r: &RecurringRow) -> sqlx::Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO recurring_invoices ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    )))
    .bind(&r.id)
    .bind(&r.company_id)
    .bind(&r.created_by)
    .bind(&r.invoice_json)
    .bind(&r.frequency)
    .bind(r.interval_count)
    .bind(&r.start_date)
    .bind(&r.end_date)
    .bind(r.auto_issue)
    .bind(r.auto_send)
    .bind(r.paused)
    .bind(&r.next_run_date)
    .bind(&r.last_error)
    .bind(r.created_at)
    .bind(r.updated_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes back what a PATCH may change (everything but the id, company and creator).
pub async fn update(conn: &mut AnyConnection, r: &RecurringRow) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE recurring_invoices SET invoice_json = $3, frequency = $4, interval_count = $5, \
         start_date = $6, end_date = $7, auto_issue = $8, auto_send = $9, paused = $10, \
         next_run_date = $11, last_error = $12, updated_at = $13 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&r.company_id)
    .bind(&r.id)
    .bind(&r.invoice_json)
    .bind(&r.frequency)
    .bind(r.interval_count)
    .bind(&r.start_date)
    .bind(&r.end_date)
    .bind(r.auto_issue)
    .bind(r.auto_send)
    .bind(r.paused)
    .bind(&r.next_run_date)
    .bind(&r.last_error)
    .bind(r.updated_at)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// One schedule of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<RecurringRow>> {
    sqlx::query_as::<_, RecurringRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM recurring_invoices WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Schedules of the company, newest first, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<RecurringRow>> {
    sqlx::query_as::<_, RecurringRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM recurring_invoices WHERE company_id = $1 \
         AND ($2 IS NULL OR id < $2) ORDER BY id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// How many schedules the company has.
pub async fn count(conn: &mut AnyConnection, company_id: &crate::CompanyId) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM recurring_invoices WHERE company_id = $1")
        .bind(company_id)
        .fetch_one(conn)
        .await
}

/// Deletes a schedule and its record of runs (its drafts and invoices stay); false when
/// there is none.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    let done =
        sqlx::query("DELETE FROM recurring_invoices WHERE id = $2 AND (company_id = $1) IS TRUE")
            .bind(company_id)
            .bind(id)
            .execute(&mut *conn)
            .await?;
    if done.rows_affected() == 1 {
        sqlx::query(
            "DELETE FROM recurring_runs WHERE company_id = $1 AND recurring_invoice_id = $2",
        )
        .bind(company_id)
        .bind(id)
        .execute(conn)
        .await?;
        return Ok(true);
    }
    Ok(false)
}

/// Active schedules with a period that has started by `today` (`YYYY-MM-DD`), in id
/// order after `after_id`, at most `limit`: a pass walks them all once, so schedules that
/// cannot run (and stay due) never keep the others waiting.
pub async fn due(
    conn: &mut AnyConnection,
    today: &str,
    after_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<RecurringRow>> {
    sqlx::query_as::<_, RecurringRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM recurring_invoices WHERE next_run_date IS NOT NULL \
         AND next_run_date <= $1 AND paused = 0 AND ($2 IS NULL OR id > $2) ORDER BY id LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(today)
    .bind(after_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The start of the latest period that ran, if any.
pub async fn last_period(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT MAX(period_start) FROM recurring_runs WHERE company_id = $1 AND recurring_invoice_id = $2",
    )
    .bind(company_id)
    .bind(id)
    .fetch_one(conn)
    .await
}

/// Claims one period for its draft: `true` if this transaction is the one that runs it,
/// `false` if it has run already (or another transaction is running it and commits).
pub async fn claim_period(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    period_start: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "INSERT INTO recurring_runs (recurring_invoice_id, period_start, company_id, invoice_id, created_at) \
         VALUES ($1, $2, $3, NULL, $4) ON CONFLICT (recurring_invoice_id, period_start) DO NOTHING",
    )
    .bind(id)
    .bind(period_start)
    .bind(company_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the draft a claimed period made.
pub async fn set_run_invoice(
    conn: &mut AnyConnection,
    id: &str,
    period_start: &str,
    invoice_id: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE recurring_runs SET invoice_id = $3 WHERE recurring_invoice_id = $1 AND period_start = $2",
    )
    .bind(id)
    .bind(period_start)
    .bind(invoice_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves the schedule past a period: its next run date (`None`: ended) and the outcome of
/// the run (`last_error`, `None` on success). Only if the schedule still expects the period
/// `expected` (a PATCH meanwhile changed it: `false`, nothing written).
pub async fn advance(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    expected: &str,
    next_run_date: Option<&str>,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE recurring_invoices SET next_run_date = $4 \
         WHERE id = $2 AND (company_id = $1) IS TRUE AND next_run_date = $3 AND paused = 0",
    )
    .bind(company_id)
    .bind(id)
    .bind(expected)
    .bind(next_run_date)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the outcome of the latest run: the error, or `None` once a run went through.
pub async fn set_last_error(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    error: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE recurring_invoices SET last_error = $3 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .bind(error)
    .execute(conn)
    .await?;
    Ok(())
}
