//! Stored answers of POST requests sent with an `Idempotency-Key` (migrations 0008, 0012).
//!
//! A key belongs to its caller: the company, the token and whether the token called as a
//! person or as an AI caller ([`Scope`]). An answer that carried a secret shown once is
//! stored as a bare "used" record ([`Stored::replayable`] false, no body).

use sqlx::AnyConnection;

/// How long a key is remembered.
pub const KEEP_MICROS: i64 = 24 * 3600 * 1_000_000;

/// Whose key it is.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    pub company_id: &'a str,
    pub token_id: &'a str,
    /// `human` or `ai`.
    pub caller_kind: &'a str,
}

/// A stored answer.
#[derive(Debug, Clone)]
pub struct Stored {
    pub request_hash: String,
    pub status_code: i64,
    pub content_type: Option<String>,
    /// False when the answer carried a secret shown once: only the use of the key is kept.
    pub replayable: bool,
    /// The answer's body (empty when not replayable).
    pub response_body: Vec<u8>,
}

#[derive(sqlx::FromRow)]
struct Row {
    request_hash: String,
    status_code: i64,
    content_type: Option<String>,
    replayable: i64,
    response_body: Vec<u8>,
}

/// The answer stored under the caller's key, unless older than [`KEEP_MICROS`].
pub async fn find(
    conn: &mut AnyConnection,
    scope: Scope<'_>,
    key: &str,
    now: i64,
) -> sqlx::Result<Option<Stored>> {
    let row = sqlx::query_as::<_, Row>(
        "SELECT request_hash, status_code, content_type, replayable, response_body \
         FROM idempotency_keys WHERE company_id = $1 AND token_id = $2 AND caller_kind = $3 \
         AND idem_key = $4 AND created_at > $5",
    )
    .bind(scope.company_id)
    .bind(scope.token_id)
    .bind(scope.caller_kind)
    .bind(key)
    .bind(now - KEEP_MICROS)
    .fetch_optional(conn)
    .await?;
    row.map(|r| {
        let replayable = match r.replayable {
            0 => false,
            1 => true,
            other => {
                return Err(sqlx::Error::Decode(
                    format!("idempotency_keys.replayable is {other}, expected 0 or 1").into(),
                ));
            }
        };
        Ok(Stored {
            request_hash: r.request_hash,
            status_code: r.status_code,
            content_type: r.content_type,
            replayable,
            response_body: r.response_body,
        })
    })
    .transpose()
}

/// Stores an answer (replacing an expired one); a unique violation means a concurrent
/// request with the same key got there first. The body of an answer that is not
/// replayable is never written.
pub async fn insert(
    conn: &mut AnyConnection,
    scope: Scope<'_>,
    key: &str,
    stored: &Stored,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "DELETE FROM idempotency_keys WHERE company_id = $1 AND token_id = $2 \
         AND caller_kind = $3 AND idem_key = $4 AND created_at <= $5",
    )
    .bind(scope.company_id)
    .bind(scope.token_id)
    .bind(scope.caller_kind)
    .bind(key)
    .bind(now - KEEP_MICROS)
    .execute(&mut *conn)
    .await?;
    let body = if stored.replayable {
        stored.response_body.clone()
    } else {
        Vec::new()
    };
    sqlx::query(
        "INSERT INTO idempotency_keys (company_id, token_id, caller_kind, idem_key, \
         request_hash, status_code, content_type, replayable, response_body, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(scope.company_id)
    .bind(scope.token_id)
    .bind(scope.caller_kind)
    .bind(key)
    .bind(&stored.request_hash)
    .bind(stored.status_code)
    .bind(&stored.content_type)
    .bind(i64::from(stored.replayable))
    .bind(body)
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
