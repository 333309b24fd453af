//! Stored answers of POST requests sent with an `Idempotency-Key` (see migration 0008).

use sqlx::AnyConnection;

/// How long a key is remembered.
pub const KEEP_MICROS: i64 = 24 * 3600 * 1_000_000;

/// A stored answer.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Stored {
    pub request_hash: String,
    pub status_code: i64,
    pub content_type: Option<String>,
    pub response_body: Vec<u8>,
}

/// The answer stored for the company's key, unless older than [`KEEP_MICROS`].
pub async fn find(
    conn: &mut AnyConnection,
    company_id: &str,
    key: &str,
    now: i64,
) -> sqlx::Result<Option<Stored>> {
    sqlx::query_as::<_, Stored>(
        "SELECT request_hash, status_code, content_type, response_body FROM idempotency_keys \
         WHERE company_id = $1 AND idem_key = $2 AND created_at > $3",
    )
    .bind(company_id)
    .bind(key)
    .bind(now - KEEP_MICROS)
    .fetch_optional(conn)
    .await
}

/// Stores an answer (replacing an expired one); a unique violation means a concurrent
/// request with the same key got there first.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &str,
    key: &str,
    stored: &Stored,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE company_id = $1 AND idem_key = $2 AND created_at <= $3",
    )
    .bind(company_id)
    .bind(key)
    .bind(now - KEEP_MICROS)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO idempotency_keys (company_id, idem_key, request_hash, status_code, \
         content_type, response_body, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(company_id)
    .bind(key)
    .bind(&stored.request_hash)
    .bind(stored.status_code)
    .bind(&stored.content_type)
    .bind(stored.response_body.clone())
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Deletes keys past their 24 hours (daily maintenance).
pub async fn prune(conn: &mut AnyConnection, now: i64) -> sqlx::Result<u64> {
    Ok(
        sqlx::query("DELETE FROM idempotency_keys WHERE created_at <= $1")
            .bind(now - KEEP_MICROS)
            .execute(conn)
            .await?
            .rows_affected(),
    )
}
