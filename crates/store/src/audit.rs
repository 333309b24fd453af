//! The AI review queue: mutating requests of AI callers held for a person.
//!
//! A held request's body is kept once: a small JSON body inline (`request_body`), any
//! other as a `files` row (`body_file_id`, see [`crate::files`]) that is removed when the
//! entry is decided or expires. Lists and counts never read a body (`body_size` says how
//! large it is). A pending entry past `expires_at` reads as `expired` everywhere, and can
//! no longer be reviewed, whether or not the daily sweep ([`expire_due`]) has written
//! that status yet.

use sqlx::AnyConnection;

/// Every status an entry can have (`expired` included).
pub const STATUSES: [&str; 5] = ["pending", "approved", "rejected", "failed", "expired"];

/// One captured request and what became of it, without its body.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuditRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub user_id: String,
    pub token_id: String,
    pub source: String,
    pub action: String,
    pub http_method: String,
    pub http_path: String,
    /// Where the body is: `none`, `inline` (JSON in the row), `legacy` (a `base64:` body
    /// inline, from before migration 0012) or `file` (in [`AuditRow::body_file_id`]).
    pub body_kind: String,
    pub body_file_id: Option<String>,
    /// The body's size in bytes (kept after the body itself is gone).
    pub body_size: i64,
    pub content_type: Option<String>,
    /// As shown: `pending` past `expires_at` reads `expired`.
    pub status: String,
    pub error_message: Option<String>,
    pub resource_id: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub reviewed_at: Option<i64>,
    pub reviewed_by: Option<String>,
}

/// The columns of [`AuditRow`]; `$1` must be the current time (microseconds).
const COLUMNS: &str = "id, company_id, user_id, token_id, source, action, http_method, http_path, \
    CASE WHEN body_file_id IS NOT NULL THEN 'file' WHEN request_body IS NULL THEN 'none' \
         WHEN request_body LIKE 'base64:%' THEN 'legacy' ELSE 'inline' END AS body_kind, \
    body_file_id, body_size, content_type, \
    CASE WHEN status = 'pending' AND expires_at <= $1 THEN 'expired' ELSE status END AS status, \
    error_message, resource_id, created_at, expires_at, reviewed_at, reviewed_by";

/// Where a new entry's body goes.
#[derive(Debug, Clone, Copy)]
pub enum NewBody<'a> {
    /// No body.
    None,
    /// A small JSON body, kept in the row.
    Inline(&'a str),
    /// A `files` row of the company, already written in this transaction.
    File(&'a str),
}

/// What is captured of a held request.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub user_id: &'a str,
    pub token_id: &'a str,
    pub source: &'a str,
    pub action: &'a str,
    pub http_method: &'a str,
    pub http_path: &'a str,
    pub body: NewBody<'a>,
    /// The body's size in bytes.
    pub body_size: i64,
    pub content_type: Option<&'a str>,
    pub created_at: i64,
    pub expires_at: i64,
}

/// Records a pending entry and returns its id.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    e: &NewEntry<'_>,
) -> sqlx::Result<String> {
    let id = crate::new_id();
    let (inline, file) = match e.body {
        NewBody::None => (None, None),
        NewBody::Inline(text) => (Some(text), None),
        NewBody::File(file_id) => (None, Some(file_id)),
    };
    sqlx::query(
        "INSERT INTO ai_audit_entries (id, company_id, user_id, token_id, source, action, \
         http_method, http_path, request_body, body_file_id, body_size, content_type, status, \
         created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13, $14)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(e.user_id)
    .bind(e.token_id)
    .bind(e.source)
    .bind(e.action)
    .bind(e.http_method)
    .bind(e.http_path)
    .bind(inline)
    .bind(file)
    .bind(e.body_size)
    .bind(e.content_type)
    .bind(e.created_at)
    .bind(e.expires_at)
    .execute(conn)
    .await?;
    Ok(id)
}

/// One entry of the company, as of `now`.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    now: i64,
) -> sqlx::Result<Option<AuditRow>> {
    sqlx::query_as::<_, AuditRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM ai_audit_entries WHERE {}",
        crate::by_id("$2", "$3")
    )))
    .bind(now)
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The inline body of one entry (JSON, or a legacy `base64:` body); `None` when the body
/// is in a file or there is none. Read one entry at a time, never for a list.
pub async fn inline_body(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<String>> {
    let row: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT request_body FROM ai_audit_entries WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row.and_then(|(body,)| body))
}

/// Entries of the company, newest first, optionally of one status (as shown at `now`),
/// after the keyset cursor. Bodies are not read.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    status: Option<&str>,
    before_id: Option<&str>,
    limit: i64,
    now: i64,
) -> sqlx::Result<Vec<AuditRow>> {
    // The status filter on the status as shown: `pending` excludes entries past their
    // time, `expired` includes them.
    sqlx::query_as::<_, AuditRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM ai_audit_entries WHERE company_id = $2 \
         AND ($3 IS NULL \
              OR ($3 = 'pending' AND status = 'pending' AND expires_at > $1) \
              OR ($3 = 'expired' AND (status = 'expired' \
                                      OR (status = 'pending' AND expires_at <= $1))) \
              OR ($3 NOT IN ('pending', 'expired') AND status = $3)) \
         AND ($4 IS NULL OR id < $4) ORDER BY id DESC LIMIT CAST($5 AS BIGINT)"
    )))
    .bind(now)
    .bind(company_id)
    .bind(status)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// What is waiting for review, for the caps on the queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingLoad {
    pub company_entries: i64,
    pub company_bytes: i64,
    pub token_entries: i64,
    pub token_bytes: i64,
}

/// Pending (not yet expired) entries and their body bytes, of the company and of one token.
pub async fn pending_load(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    token_id: &str,
    now: i64,
) -> sqlx::Result<PendingLoad> {
    let (company_entries, company_bytes, token_entries, token_bytes): (i64, i64, i64, i64) =
        sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(body_size), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN token_id = $2 THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(CASE WHEN token_id = $2 THEN body_size ELSE 0 END), 0) AS BIGINT) \
             FROM ai_audit_entries WHERE company_id = $1 AND status = 'pending' AND expires_at > $3",
        )
        .bind(company_id)
        .bind(token_id)
        .bind(now)
        .fetch_one(conn)
        .await?;
    Ok(PendingLoad {
        company_entries,
        company_bytes,
        token_entries,
        token_bytes,
    })
}

/// How many entries of the company wait for review at `now`.
pub async fn count_pending(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    now: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM ai_audit_entries \
         WHERE company_id = $1 AND status = 'pending' AND expires_at > $2",
    )
    .bind(company_id)
    .bind(now)
    .fetch_one(conn)
    .await
}

/// Moves a pending entry that has not expired at `now` to `status`, recording the
/// reviewer; false when it was not pending (already reviewed, possibly by a concurrent
/// request) or has expired.
///
/// The conditional update takes the row lock, so of two concurrent reviews
/// exactly one sees `pending`.
pub async fn review(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    status: &str,
    reviewer: &str,
    now: i64,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE ai_audit_entries SET status = $3, reviewed_at = $4, reviewed_by = $5 \
         WHERE id = $2 AND (company_id = $1) IS TRUE AND status = 'pending' AND expires_at > $4",
    )
    .bind(company_id)
    .bind(id)
    .bind(status)
    .bind(now)
    .bind(reviewer)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the outcome of an approved entry's replay.
pub async fn record_outcome(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    status: &str,
    resource_id: Option<&str>,
    error_message: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE ai_audit_entries SET status = $3, resource_id = $4, error_message = $5 \
         WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .bind(status)
    .bind(resource_id)
    .bind(error_message)
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets a decided entry's large body: its file reference (the caller deletes the file
/// in the same transaction) and a legacy `base64:` inline body. A small JSON body stays,
/// as the record of what was asked.
pub async fn forget_body(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE ai_audit_entries SET body_file_id = NULL, \
         request_body = CASE WHEN request_body LIKE 'base64:%' THEN NULL ELSE request_body END \
         WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// A body file to delete: `(company_id, file_id)`.
pub type BodyFile = (crate::CompanyId, String);

/// Writes `expired` on the pending entries past their time at `now` (of one company, or of
/// all) and forgets their large bodies; returns the body files the caller must delete
/// in the same transaction.
pub async fn expire_due(
    conn: &mut AnyConnection,
    company_id: Option<&crate::CompanyId>,
    now: i64,
) -> sqlx::Result<Vec<BodyFile>> {
    // RETURNING shows the row after the update, so the file reference is cleared by a
    // second statement, once its value has been returned.
    let files: Vec<(crate::CompanyId, Option<String>)> = sqlx::query_as(
        "UPDATE ai_audit_entries SET status = 'expired', \
         request_body = CASE WHEN request_body LIKE 'base64:%' THEN NULL ELSE request_body END \
         WHERE status = 'pending' AND expires_at <= $1 AND ($2 IS NULL OR company_id = $2) \
         RETURNING company_id, body_file_id",
    )
    .bind(now)
    .bind(company_id)
    .fetch_all(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE ai_audit_entries SET body_file_id = NULL \
         WHERE status = 'expired' AND body_file_id IS NOT NULL AND ($1 IS NULL OR company_id = $1)",
    )
    .bind(company_id)
    .execute(conn)
    .await?;
    Ok(files
        .into_iter()
        .filter_map(|(company, file)| file.map(|f| (company, f)))
        .collect())
}
