//! Deliveries: invoices mailed to their customers (sends and reminders).
//!
//! A delivery is written with its `invoice.deliver` job in one transaction (a
//! transactional outbox): a request that rolls back, or an AI caller's dry run, leaves
//! neither, so nothing is mailed. The job moves the delivery to `sent` or `failed`.

use sqlx::AnyConnection;

/// A delivery as stored; `to_json`, `cc_json` and `attachments_json` are arrays of strings.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub invoice_id: String,
    /// `send` or `reminder`.
    pub kind: String,
    /// For reminders: the `reminderDays` step (days after the due date).
    pub step: Option<i64>,
    /// `queued`, `sent` or `failed`.
    pub status: String,
    pub to_json: String,
    pub cc_json: String,
    pub message: Option<String>,
    pub attachments_json: String,
    /// The language the mail is written in.
    pub language: String,
    pub error: Option<String>,
    pub created_at: i64,
    pub sent_at: Option<i64>,
}

const COLUMNS: &str = "id, company_id, invoice_id, kind, step, status, to_json, cc_json, message, \
    attachments_json, language, error, created_at, sent_at";

/// The job kind that mails a delivery.
pub const JOB_KIND: &str = crate::jobs::kind::INVOICE_DELIVER;

/// What the `invoice.deliver` job carries: ids only.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeliverJob {
    pub company_id: crate::CompanyId,
    pub delivery_id: String,
}

/// Stores a delivery and enqueues the job that mails it, in the caller's transaction.
/// `false` when it is a reminder step the invoice already had (nothing written).
pub async fn insert_queued(conn: &mut AnyConnection, d: &DeliveryRow) -> sqlx::Result<bool> {
    let done = sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO deliveries ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) \
         ON CONFLICT (invoice_id, step) DO NOTHING"
    )))
    .bind(&d.id)
    .bind(&d.company_id)
    .bind(&d.invoice_id)
    .bind(&d.kind)
    .bind(d.step)
    .bind(&d.status)
    .bind(&d.to_json)
    .bind(&d.cc_json)
    .bind(&d.message)
    .bind(&d.attachments_json)
    .bind(&d.language)
    .bind(&d.error)
    .bind(d.created_at)
    .bind(d.sent_at)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    let payload = serde_json::to_value(DeliverJob {
        company_id: d.company_id.clone(),
        delivery_id: d.id.clone(),
    })
    .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    let job = crate::jobs::NewJob {
        company_id: Some(d.company_id.clone()),
        ..crate::jobs::NewJob::new(JOB_KIND, &payload)
    };
    crate::jobs::enqueue(conn, &job).await?;
    Ok(true)
}

/// How many deliveries of the company wait to be mailed.
pub async fn queued_count(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM deliveries WHERE company_id = $1 AND status = 'queued'",
    )
    .bind(company_id)
    .fetch_one(conn)
    .await
}

/// One delivery of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<DeliveryRow>> {
    sqlx::query_as::<_, DeliveryRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM deliveries WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Deliveries of an invoice, newest first, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    invoice_id: &str,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as::<_, DeliveryRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM deliveries WHERE company_id = $1 AND invoice_id = $2 \
         AND ($3 IS NULL OR id < $3) ORDER BY id DESC LIMIT CAST($4 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(invoice_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Records the outcome of a mailing: `sent` (with its time) or `failed`, or still
/// `queued` with the error of a try that will be retried.
pub async fn set_outcome(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    status: &str,
    error: Option<&str>,
    sent_at: Option<i64>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE deliveries SET status = $3, error = $4, sent_at = $5 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .bind(status)
    .bind(error)
    .bind(sent_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// An issued invoice that may be due a reminder: its due date and the recipient's address.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ReminderCandidate {
    pub company_id: crate::CompanyId,
    pub invoice_id: String,
    pub due_date: i64,
    pub email: Option<String>,
}

/// Companies that remind, with their `reminderDays` as stored.
pub async fn reminding_companies(
    conn: &mut AnyConnection,
    after_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<(crate::CompanyId, String)>> {
    sqlx::query_as(
        "SELECT id, reminder_days_json FROM companies WHERE reminder_days_json <> '[]' \
         AND ($1 IS NULL OR id > $1) ORDER BY id LIMIT CAST($2 AS BIGINT)",
    )
    .bind(after_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Ordinary issued invoices of a company not fully paid, due at or before `due_by` and
/// after `due_after` (microseconds), without a reminder for `step` yet; at most `limit`.
/// Found over the partial index `invoices_unpaid_due` (its condition repeated).
pub async fn reminder_candidates(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    step: i64,
    due_after: Option<i64>,
    due_by: i64,
    limit: i64,
) -> sqlx::Result<Vec<ReminderCandidate>> {
    sqlx::query_as(
        "SELECT i.company_id, i.id AS invoice_id, i.due_date, e.email \
         FROM invoices i JOIN entities e ON e.company_id = i.company_id AND e.id = i.recipient_id \
         WHERE i.company_id = $1 AND i.status = 'issued' AND i.series = 'invoice' \
         AND i.paid_minor < i.total AND i.due_date IS NOT NULL \
         AND i.due_date <= $3 AND ($4 IS NULL OR i.due_date > $4) \
         AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.invoice_id = i.id AND d.step = $2) \
         ORDER BY i.due_date LIMIT CAST($5 AS BIGINT)",
    )
    .bind(company_id)
    .bind(step)
    .bind(due_by)
    .bind(due_after)
    .bind(limit)
    .fetch_all(conn)
    .await
}
