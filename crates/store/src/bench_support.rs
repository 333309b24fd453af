//! Queries used only by the benchmark ceiling (`bench/src/ceiling.rs`), kept
//! here so the ceiling runs the same driver, pool and SQL dialect as the service.

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
