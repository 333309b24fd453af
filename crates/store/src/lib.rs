//! Database access for the invoicing service.
//!
//! One code path serves SQLite (the embedded default) and PostgreSQL (for
//! several servers on one database): every query is written once in portable
//! SQL with `$N` parameters and runs on `sqlx::AnyPool`. Columns are chosen so
//! the `Any` driver carries them unchanged on both engines: ids are UUIDv7 text,
//! money is `BIGINT` minor units, decimals are text and timestamps are `BIGINT`
//! microseconds since the Unix epoch in UTC. See `docs/DATABASE.md`.
//!
//! Every function that touches tenant data takes the company id as its first
//! data argument, so a query cannot forget the tenant.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod audit;
pub mod bank_accounts;
pub mod batch;
pub mod bench_support;
pub mod bootstrap;
pub mod companies;
pub mod counters;
pub mod dashboard;
pub mod db;
pub mod deliveries;
pub mod entities;
pub mod expenses;
pub mod files;
pub mod idempotency;
pub mod ids;
pub mod invoice_events;
pub mod invoices;
pub mod jobs;
pub mod kinds;
pub mod legal;
pub mod members;
pub mod oauth;
pub mod password;
pub mod payments;
pub mod postgres_checks;
pub mod private;
pub mod proformas;
pub mod recurring;
pub mod reports;
mod together;
pub mod token_cache;
pub mod tokens;
pub mod users;
pub mod verifactu;
pub mod web;
pub mod webhooks;

pub use db::{Backend, Closing, Db, Pooled, WriteTx, Writing};
pub use ids::{CompanyId, InvoiceId};
pub use sqlx::AnyConnection as Conn;

/// Errors from the store: database failures, or a conflict the caller can explain.
pub type Result<T, E = sqlx::Error> = std::result::Result<T, E>;

/// The current time as microseconds since the Unix epoch (UTC).
pub fn now_micros() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// The service's source of the current time, one for the API and the worker: what an
/// invoice, a report, a reminder or a webhook says "now" is comes from it, so tests can
/// set the time (`api::AppState::with_clock`, `jobs::Context::with_clock`). The jobs
/// table's own timing (leases, retry delays, the daily runs, the AEAT's waits between
/// batches, which the queue's claim compares with the system time), retention prunes and the store's own
/// stamps (`updated_at`) stay on the system time, [`now_micros`].
pub type Clock = std::sync::Arc<dyn Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync>;

/// The system's clock.
pub fn system_clock() -> Clock {
    std::sync::Arc::new(chrono::Utc::now)
}

/// Converts stored microseconds into a UTC timestamp. A value outside chrono's range
/// (beyond year 262,000 either way: only a damaged row holds one) is a decode error,
/// never silently the epoch.
pub fn from_micros(micros: i64) -> Result<chrono::DateTime<chrono::Utc>, sqlx::Error> {
    chrono::DateTime::from_timestamp_micros(micros).ok_or_else(|| {
        sqlx::Error::Decode(format!("stored time {micros} µs is out of range").into())
    })
}

/// The condition that finds one row of a company by its id, `company` and `id` given as
/// parameters (`$1`, `$3`...), through the table's primary key alone: the company is
/// checked on the row found, not used to find it. Every statement that finds a company's
/// row by id says it this way (`store::sql no_row_is_found_by_company_and_id` keeps the
/// plain form out).
///
/// Written plainly (`company_id = $1 AND id = $2`), PostgreSQL may take any index that
/// begins with `company_id` for it (`invoices_recurring (company_id, recurring_invoice_id,
/// id)` was the one, before it held only recurring drafts; `invoices_company_recipient` and
/// others remain) and read every entry of the company in it to find the one row: when its
/// statistics were taken on a small table (a new database, a company that grew since),
/// those indexes all cost the same as the primary key to it. Seen with `auto_explain` on a
/// fresh database under create+issue: the invoice read of each issue touched 369 buffers on
/// average, the recipient read 324, instead of 2 to 4, and more with every invoice added.
pub fn by_id(company: &str, id: &str) -> String {
    format!("id = {id} AND (company_id = {company}) IS TRUE")
}

/// A new time-ordered id (UUIDv7), so keyset pagination by id is creation order.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// SHA-256 of a secret, hex encoded: tokens and proofs are stored only this way.
pub fn hash_secret(secret: &str) -> String {
    hash_bytes(secret.as_bytes())
}

/// SHA-256 of bytes, hex encoded.
pub fn hash_bytes(data: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex_lower(&Sha256::digest(data))
}

/// Bytes in lower-case hexadecimal, two digits each.
///
/// Every API request hashes its token and every write its idempotency fingerprint: with a
/// `format!` a byte, the hex took 8% of the server's instructions under create+issue.
pub fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Whether an error is a unique-constraint violation (on either engine).
pub fn is_unique_violation(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.is_unique_violation()
                || db.code().as_deref() == Some("23505")
                || db.message().contains("UNIQUE constraint failed")
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_two_lower_case_digits_a_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let expected: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(super::hex_lower(&all), expected);
        assert_eq!(super::hex_lower(&[]), "");
        // The SHA-256 of "abc" (FIPS 180-2, appendix B.1).
        assert_eq!(
            super::hash_secret("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
