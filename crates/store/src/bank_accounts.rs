//! Company bank accounts and their balance snapshots.

use sqlx::AnyConnection;

/// A bank account with its current balance (from the latest snapshot).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccountRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub name: String,
    pub bank_name: Option<String>,
    pub iban: Option<String>,
    pub bic: Option<String>,
    pub currency_code: String,
    pub is_main: i64,
    pub created_at: i64,
    pub updated_at: Option<i64>,
    pub current_balance_minor: Option<i64>,
    pub balance_as_of: Option<i64>,
}

const SELECT: &str = "SELECT a.id, a.company_id, a.name, a.bank_name, a.iban, a.bic, a.currency_code, a.is_main, \
    a.created_at, a.updated_at, \
    (SELECT s.balance_minor FROM balance_snapshots s WHERE s.bank_account_id = a.id \
     ORDER BY s.as_of_date DESC, s.id DESC LIMIT 1) AS current_balance_minor, \
    (SELECT s.as_of_date FROM balance_snapshots s WHERE s.bank_account_id = a.id \
     ORDER BY s.as_of_date DESC, s.id DESC LIMIT 1) AS balance_as_of \
    FROM bank_accounts a";

/// Serialises changes to a company's default account across processes: takes the company
/// row's lock on PostgreSQL until commit (SQLite already has one writer), as
/// [`crate::members::lock_company`] does.
pub async fn lock_company(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<()> {
    crate::members::lock_company(conn, company_id).await?;
    Ok(())
}

/// Stores a new account (the caller has settled `is_main`).
pub async fn insert(conn: &mut AnyConnection, a: &AccountRow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO bank_accounts (id, company_id, name, bank_name, iban, bic, currency_code, is_main, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&a.id)
    .bind(&a.company_id)
    .bind(&a.name)
    .bind(&a.bank_name)
    .bind(&a.iban)
    .bind(&a.bic)
    .bind(&a.currency_code)
    .bind(a.is_main)
    .bind(a.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes the editable columns back.
pub async fn update(conn: &mut AnyConnection, a: &AccountRow) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE bank_accounts SET name = $3, bank_name = $4, iban = $5, bic = $6, currency_code = $7, \
         is_main = $8, updated_at = $9 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&a.company_id)
    .bind(&a.id)
    .bind(&a.name)
    .bind(&a.bank_name)
    .bind(&a.iban)
    .bind(&a.bic)
    .bind(&a.currency_code)
    .bind(a.is_main)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}

/// Clears the default flag of every account of the company.
pub async fn clear_main(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE bank_accounts SET is_main = 0 WHERE company_id = $1 AND is_main = 1")
        .bind(company_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Number of accounts of the company.
pub async fn count(conn: &mut AnyConnection, company_id: &crate::CompanyId) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM bank_accounts WHERE company_id = $1")
        .bind(company_id)
        .fetch_one(conn)
        .await
}

/// One account of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<AccountRow>> {
    sqlx::query_as::<_, AccountRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE a.company_id = $1 AND a.id = $2"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Accounts of the company, newest first, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<AccountRow>> {
    sqlx::query_as::<_, AccountRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE a.company_id = $1 AND ($2 IS NULL OR a.id < $2) ORDER BY a.id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Deletes an account (its snapshots go with it) and, if it was the default,
/// makes the oldest remaining account the default.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    sqlx::query("DELETE FROM balance_snapshots WHERE company_id = $1 AND bank_account_id = $2")
        .bind(company_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let done = sqlx::query("DELETE FROM bank_accounts WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let has_main: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM bank_accounts WHERE company_id = $1 AND is_main = 1",
    )
    .bind(company_id)
    .fetch_one(&mut *conn)
    .await?;
    if has_main == 0 {
        sqlx::query(
            "UPDATE bank_accounts SET is_main = 1 WHERE id = \
             (SELECT id FROM bank_accounts WHERE company_id = $1 ORDER BY id LIMIT 1)",
        )
        .bind(company_id)
        .execute(conn)
        .await?;
    }
    Ok(done.rows_affected() == 1)
}

/// A recorded balance.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SnapshotRow {
    pub id: String,
    pub bank_account_id: String,
    pub as_of_date: i64,
    pub balance_minor: i64,
    pub note: Option<String>,
    pub created_at: i64,
}

/// Records a balance of an account of the company.
pub async fn insert_snapshot(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    s: &SnapshotRow,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO balance_snapshots (id, company_id, bank_account_id, as_of_date, balance_minor, note, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&s.id)
    .bind(company_id)
    .bind(&s.bank_account_id)
    .bind(s.as_of_date)
    .bind(s.balance_minor)
    .bind(&s.note)
    .bind(s.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Snapshots of an account, newest first (by `as_of_date`).
pub async fn snapshots(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    account_id: &str,
) -> sqlx::Result<Vec<SnapshotRow>> {
    sqlx::query_as::<_, SnapshotRow>(
        "SELECT id, bank_account_id, as_of_date, balance_minor, note, created_at FROM balance_snapshots \
         WHERE company_id = $1 AND bank_account_id = $2 ORDER BY as_of_date DESC, id DESC LIMIT 1000",
    )
    .bind(company_id)
    .bind(account_id)
    .fetch_all(conn)
    .await
}

/// Deletes one snapshot of an account; false when there is none.
pub async fn delete_snapshot(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    account_id: &str,
    id: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "DELETE FROM balance_snapshots WHERE company_id = $1 AND bank_account_id = $2 AND id = $3",
    )
    .bind(company_id)
    .bind(account_id)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
