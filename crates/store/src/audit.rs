//! The AI review queue: mutating requests of AI callers held for a person.

use sqlx::AnyConnection;

/// One captured request and what became of it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuditRow {
    pub id: String,
    pub company_id: String,
    pub user_id: String,
    pub token_id: String,
    pub source: String,
    pub action: String,
    pub http_method: String,
    pub http_path: String,
    pub request_body: Option<String>,
    pub content_type: Option<String>,
    pub status: String,
    pub error_message: Option<String>,
    pub resource_id: Option<String>,
    pub created_at: i64,
    pub reviewed_at: Option<i64>,
    pub reviewed_by: Option<String>,
}

const COLUMNS: &str = "id, company_id, user_id, token_id, source, action, http_method, http_path, \
    request_body, content_type, status, error_message, resource_id, created_at, reviewed_at, reviewed_by";

/// What is captured of a held request.
#[derive(Debug, Clone)]
pub struct NewEntry<'a> {
    pub user_id: &'a str,
    pub token_id: &'a str,
    pub source: &'a str,
    pub action: &'a str,
    pub http_method: &'a str,
    pub http_path: &'a str,
    pub request_body: Option<&'a str>,
    pub content_type: Option<&'a str>,
}

/// Records a pending entry and returns its id.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &str,
    e: &NewEntry<'_>,
) -> sqlx::Result<String> {
    let id = crate::new_id();
    sqlx::query(
        "INSERT INTO ai_audit_entries (id, company_id, user_id, token_id, source, action, http_method, \
         http_path, request_body, content_type, status, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending', $11)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(e.user_id)
    .bind(e.token_id)
    .bind(e.source)
    .bind(e.action)
    .bind(e.http_method)
    .bind(e.http_path)
    .bind(e.request_body)
    .bind(e.content_type)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(id)
}

/// One entry of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &str,
    id: &str,
) -> sqlx::Result<Option<AuditRow>> {
    sqlx::query_as::<_, AuditRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM ai_audit_entries WHERE company_id = $1 AND id = $2"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Entries of the company, newest first, optionally of one status, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &str,
    status: Option<&str>,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<AuditRow>> {
    sqlx::query_as::<_, AuditRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM ai_audit_entries WHERE company_id = $1 \
         AND ($2 IS NULL OR status = $2) AND ($3 IS NULL OR id < $3) ORDER BY id DESC LIMIT $4"
    )))
    .bind(company_id)
    .bind(status)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Moves a pending entry to `status`, recording the reviewer; false when it was
/// not pending (already reviewed, possibly by a concurrent request).
///
/// The conditional update takes the row lock, so of two concurrent reviews
/// exactly one sees `pending`.
pub async fn review(
    conn: &mut AnyConnection,
    company_id: &str,
    id: &str,
    status: &str,
    reviewer: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE ai_audit_entries SET status = $3, reviewed_at = $4, reviewed_by = $5 \
         WHERE company_id = $1 AND id = $2 AND status = 'pending'",
    )
    .bind(company_id)
    .bind(id)
    .bind(status)
    .bind(crate::now_micros())
    .bind(reviewer)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Records the outcome of an approved entry's replay.
pub async fn record_outcome(
    conn: &mut AnyConnection,
    company_id: &str,
    id: &str,
    status: &str,
    resource_id: Option<&str>,
    error_message: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE ai_audit_entries SET status = $3, resource_id = $4, error_message = $5 \
         WHERE company_id = $1 AND id = $2",
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
