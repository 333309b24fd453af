//! The invoice table's `CHECK` constraints on PostgreSQL: one constraint, written as
//! comparisons joined by `OR`, in place of the four the migrations create (issue #34).
//!
//! PostgreSQL keeps a table's checks as text and, for every statement that writes a row of
//! it, parses each check again and folds its constants before testing the row (`ExecRelCheck`
//! prepares them per execution, not per prepared statement). The migrations' four checks of
//! `invoices`, three of them `IN (...)` lists that become arrays to fold, were 4% of
//! PostgreSQL's CPU under create+issue (`perf`), for a draft's insert and an issue's update
//! each. Measured on one seeded database with the forms swapped by SQL between rounds of
//! 10 s, alternated three times: without the three lists PostgreSQL's CPU a pair was 4-8%
//! lower than with them, and one constraint of `OR`ed comparisons that says the same came
//! within 1-2% of that.
//!
//! SQLite is left as the migrations made it: it cannot change a check without copying the
//! table, and it compiles a table's checks into each prepared statement once.
//!
//! The migrations are shared by both engines, so this step runs after them, on PostgreSQL
//! only ([`crate::Db::migrate`]), and is idempotent: from several processes at once, the
//! table's lock orders them and each one after the first finds the work done.

use sqlx::{AnyConnection, Executor as _};

/// The one constraint's name.
pub const NAME: &str = "invoices_valid";

/// What the migrations' four checks of `invoices` say, as one expression: the series, the
/// status and the kind of supply are each one of their values, and a row has a number exactly
/// when it is not a draft. The columns are `NOT NULL`, so no comparison is unknown.
const EXPRESSION: &str = "(series = 'invoice' OR series = 'corrective') \
     AND (status = 'draft' OR status = 'issued') \
     AND (supply_type = 'services' OR supply_type = 'goods') \
     AND ((status = 'draft') = (invoice_number IS NULL))";

/// The checks the migrations create (PostgreSQL's names for them), replaced by [`NAME`].
const REPLACED: [&str; 4] = [
    "invoices_series_check",
    "invoices_status_check",
    "invoices_supply_type_check",
    "invoices_check",
];

/// The state of [`NAME`]: absent, added but not yet checked against the existing rows, or
/// in force for every row.
const STATE: &str = "SELECT CAST(COUNT(*) AS BIGINT), CAST(COALESCE(MAX(CASE WHEN convalidated \
     THEN 1 ELSE 0 END), 0) AS BIGINT) FROM pg_constraint \
     WHERE conrelid = CAST('invoices' AS regclass) AND conname = $1";

async fn state(conn: &mut AnyConnection) -> sqlx::Result<(bool, bool)> {
    let (present, valid): (i64, i64) = sqlx::query_as(STATE)
        .bind(NAME)
        .fetch_one(&mut *conn)
        .await?;
    Ok((present > 0, valid > 0))
}

/// Replaces the migrations' checks of `invoices` with [`NAME`], unless done already.
///
/// The swap is one transaction holding the table's lock for as long as it takes to change
/// the catalogue: the new constraint is added `NOT VALID` (no scan of the table while every
/// writer waits), and checked against the existing rows after, by `VALIDATE CONSTRAINT`,
/// which lets writes go on. Rows written meanwhile are checked as they are written, and the
/// rows before were held to the same conditions by the checks it replaces.
pub async fn install(conn: &mut AnyConnection) -> sqlx::Result<()> {
    if state(conn).await? == (true, true) {
        return Ok(());
    }
    conn.execute("BEGIN").await?;
    let swapped = async {
        conn.execute("LOCK TABLE invoices IN ACCESS EXCLUSIVE MODE")
            .await?;
        if !state(conn).await?.0 {
            let drops: Vec<String> = REPLACED
                .iter()
                .map(|name| format!("DROP CONSTRAINT IF EXISTS {name}"))
                .collect();
            conn.execute(sqlx::AssertSqlSafe(format!(
                "ALTER TABLE invoices {}, ADD CONSTRAINT {NAME} CHECK ({EXPRESSION}) NOT VALID",
                drops.join(", ")
            )))
            .await?;
        }
        sqlx::Result::Ok(())
    }
    .await;
    match swapped {
        Ok(()) => conn.execute("COMMIT").await.map(drop)?,
        Err(e) => {
            let _ = conn.execute("ROLLBACK").await;
            return Err(e);
        }
    }
    conn.execute(sqlx::AssertSqlSafe(format!(
        "ALTER TABLE invoices VALIDATE CONSTRAINT {NAME}"
    )))
    .await
    .map(drop)
}
