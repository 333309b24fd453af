//! Queries used only by the benchmarks: the ceiling (`bench/src/ceiling.rs`) and the bulk
//! seeder (`loadgen seed-bulk`), kept here so they run the same driver, pool, SQL dialect
//! and column lists as the service.

use sqlx::AnyConnection;

/// Runs a statement.
pub async fn execute(conn: &mut AnyConnection, sql: &'static str) -> sqlx::Result<()> {
    sqlx::query(sql).execute(conn).await?;
    Ok(())
}

/// One indexed read: whether a company exists.
pub async fn count_company(conn: &mut AnyConnection, id: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM companies WHERE id = $1")
        .bind(id)
        .fetch_one(conn)
        .await
}

/// One row into the ceiling's own table.
pub async fn insert_ceiling_row(conn: &mut AnyConnection, id: &str) -> sqlx::Result<()> {
    sqlx::query("INSERT INTO bench_ceiling (id, v) VALUES ($1, 1)")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Stores many invoices in one multi-row `INSERT` (the bulk seeder of `loadgen seed-bulk`).
///
/// The rows are written column for column as [`crate::invoices::insert_numbered_draft`] writes one; at
/// 33 parameters a row, keep a batch under 900 rows (SQLite allows 32,766 parameters).
pub async fn insert_invoices(
    conn: &mut AnyConnection,
    rows: &[crate::invoices::InvoiceRow],
) -> sqlx::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let columns = crate::invoices::COLUMNS.split(',').count();
    let values: Vec<String> = (0..rows.len())
        .map(|r| {
            let params: Vec<String> = (1..=columns)
                .map(|c| format!("${}", r * columns + c))
                .collect();
            format!("({})", params.join(", "))
        })
        .collect();
    let sql = format!(
        "INSERT INTO invoices ({}) VALUES {}",
        crate::invoices::COLUMNS,
        values.join(", ")
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for r in rows {
        q = crate::invoices::bind_row(q, r);
    }
    q.execute(conn).await?;
    Ok(())
}

/// Stores many payments in one multi-row `INSERT`, without touching the invoices: the
/// seeder writes each invoice with its final `paid_minor` already (what
/// [`crate::payments::insert`] leaves behind).
pub async fn insert_payments(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    rows: &[crate::payments::PaymentRow],
) -> sqlx::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let values: Vec<String> = (0..rows.len())
        .map(|r| {
            let params: Vec<String> = (1..=8).map(|c| format!("${}", r * 8 + c)).collect();
            format!("({})", params.join(", "))
        })
        .collect();
    let sql = format!(
        "INSERT INTO invoice_payments (id, company_id, invoice_id, amount_minor, paid_at, bank_account_id, note, created_at) VALUES {}",
        values.join(", ")
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
    for p in rows {
        q = q
            .bind(&p.id)
            .bind(company_id)
            .bind(&p.invoice_id)
            .bind(p.amount_minor)
            .bind(p.paid_at)
            .bind(&p.bank_account_id)
            .bind(&p.note)
            .bind(p.created_at);
    }
    q.execute(conn).await?;
    Ok(())
}

/// Sets the next number of a series in a year, as [`crate::counters::next`] leaves it after
/// handing out every number below `next_number`.
pub async fn set_counter(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    series: &str,
    year: i64,
    next_number: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO document_counters (company_id, series, year, next_number) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (company_id, series, year) DO UPDATE SET next_number = excluded.next_number",
    )
    .bind(company_id)
    .bind(series)
    .bind(year)
    .bind(next_number)
    .execute(conn)
    .await?;
    Ok(())
}
