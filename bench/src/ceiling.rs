//! The reference ceiling: the least an HTTP handler on this stack can do per
//! request on the same database and pool settings as the service: one indexed read
//! (`GET /read`), one write transaction (`POST /write`), or, as the issue defines the
//! ceiling of a write request, one indexed read and then one write transaction
//! (`POST /read-write`). Service figures are reported as ratios of it.
//!
//! Usage: `ceiling <database-url> <listen-addr>`; prints `listening on http://ADDR`.
#![forbid(unsafe_code)]
// Like the service's crates: no unwrap outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use axum::{
    Router,
    extract::State,
    routing::{get, post},
};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .ok_or_else(|| anyhow::anyhow!("usage: ceiling <database-url> <listen-addr>"))?;
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let db = store::Db::connect(&url).await?;
    db.migrate().await?;
    sqlx_exec(
        &db,
        "CREATE TABLE IF NOT EXISTS bench_ceiling (id TEXT PRIMARY KEY, v BIGINT NOT NULL)",
    )
    .await?;
    let app = Router::new()
        .route("/read", get(read))
        .route("/write", post(write))
        .route("/read-write", post(read_write))
        .with_state(db);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

async fn sqlx_exec(db: &store::Db, sql: &'static str) -> anyhow::Result<()> {
    let mut tx = db.begin_write().await?;
    store::bench_support::execute(tx.conn(), sql).await?;
    tx.commit().await?;
    Ok(())
}

/// One indexed read (a company by primary key).
async fn read(State(db): State<store::Db>) -> Result<String, String> {
    let mut conn = db.pool().acquire().await.map_err(|e| e.to_string())?;
    let n = store::bench_support::count_company(&mut conn, "00000000-0000-0000-0000-000000000000")
        .await
        .map_err(|e| e.to_string())?;
    Ok(n.to_string())
}

/// One write transaction (an insert), committed.
async fn write(State(db): State<store::Db>) -> Result<&'static str, String> {
    let mut tx = db.begin_write().await.map_err(|e| e.to_string())?;
    store::bench_support::insert_ceiling_row(tx.conn(), &store::new_id())
        .await
        .map_err(|e| e.to_string())?;
    tx.commit().await.map_err(|e| e.to_string())?;
    Ok("ok")
}

/// One indexed read, then one write transaction (an insert), committed: what a write
/// request that checks something first does at the least.
async fn read_write(State(db): State<store::Db>) -> Result<&'static str, String> {
    read(State(db.clone())).await?;
    write(State(db)).await
}
