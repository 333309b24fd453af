//! Gapless document numbers per (company, series, year).

use sqlx::AnyConnection;

/// The upsert that takes a number: `$1` company, `$2` series, `$3` year, `$4` the first
/// number of a new year. The number taken is `next_number - 1` of the row it leaves.
pub(crate) const TAKE: &str = "INSERT INTO document_counters (company_id, series, year, next_number) \
     VALUES ($1, $2, $3, $4 + 1) \
     ON CONFLICT (company_id, series, year) \
     DO UPDATE SET next_number = document_counters.next_number + 1";

/// [`TAKE`] for `$5` numbers at once: the first taken is `next_number - $5` of the row it
/// leaves (a company's issues made together, [`crate::together`]).
pub(crate) const TAKE_SOME: &str = "INSERT INTO document_counters (company_id, series, year, next_number) \
     VALUES ($1, $2, $3, $4 + $5) \
     ON CONFLICT (company_id, series, year) \
     DO UPDATE SET next_number = document_counters.next_number + $5";

/// Takes the next number of a series in a year, starting at `first` for a new year.
///
/// Must run inside the transaction that uses the number: if that transaction
/// rolls back, so does the counter, so numbers have no gaps. The upsert
/// holds the counter row's lock until commit, so concurrent issuers (even in
/// other processes) queue and never share a number.
pub async fn next(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    series: &str,
    year: i64,
    first: i64,
) -> sqlx::Result<i64> {
    // One statement: create the year's counter at `first`, or take the next number. The
    // upsert holds the counter row's lock until commit.
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "{TAKE} RETURNING next_number - 1"
    )))
    .bind(company_id)
    .bind(series)
    .bind(year)
    .bind(first)
    .fetch_one(conn)
    .await
}

/// PostgreSQL: takes the company's next draft number of `year` in a transaction of its
/// own, committed before the draft's ([`crate::Writing::ahead`]), so that the counter's row
/// is locked for this one statement rather than to the end of the draft's transaction,
/// whose commit waits for the disk: a company's new drafts then no longer wait for each
/// other's commits.
///
/// Draft numbers are an ordering sequence, not the law's gapless numbering (an issued
/// invoice's number is taken inside its transaction, [`next`]): a draft whose insert then
/// fails leaves its number unused. This statement's commit does not wait for the disk
/// (`synchronous_commit` off for it alone): a number lost in a crash was used by no draft,
/// because a draft's own commit waits for the log up to its record, which comes after this.
pub async fn next_ahead(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    year: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "WITH local_commit AS (SELECT set_config('synchronous_commit', 'off', true)) \
         INSERT INTO document_counters (company_id, series, year, next_number) \
         SELECT $1, 'draft', $2, 2 FROM local_commit \
         ON CONFLICT (company_id, series, year) \
         DO UPDATE SET next_number = document_counters.next_number + 1 \
         RETURNING next_number - 1",
    )
    .bind(company_id)
    .bind(year)
    .fetch_one(conn)
    .await
}
