//! VERI*FACTU records and chain heads (the chain logic lives in the `verifactu` crate).

use sqlx::AnyConnection;

/// The last record of an issuer's chain.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChainHead {
    pub seq: i64,
    pub nif: Option<String>,
    pub num_serie: Option<String>,
    pub fecha: Option<String>,
    pub huella: Option<String>,
}

/// Locks and returns the issuer's chain head, creating an empty one first.
///
/// The no-op update holds the head row's lock until the transaction ends, so
/// records of one issuer are chained strictly one after another, across
/// processes (SQLite has a single writer anyway).
pub async fn lock_head(conn: &mut AnyConnection, company_id: &str) -> sqlx::Result<ChainHead> {
    sqlx::query(
        "INSERT INTO verifactu_chain_heads (company_id, seq) VALUES ($1, 0) ON CONFLICT (company_id) DO NOTHING",
    )
    .bind(company_id)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE verifactu_chain_heads SET seq = seq WHERE company_id = $1")
        .bind(company_id)
        .execute(&mut *conn)
        .await?;
    sqlx::query_as::<_, ChainHead>(
        "SELECT seq, nif, num_serie, fecha, huella FROM verifactu_chain_heads WHERE company_id = $1",
    )
    .bind(company_id)
    .fetch_one(conn)
    .await
}

/// Moves the head to a new record.
pub async fn set_head(
    conn: &mut AnyConnection,
    company_id: &str,
    head: &ChainHead,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE verifactu_chain_heads SET seq = $2, nif = $3, num_serie = $4, fecha = $5, huella = $6 \
         WHERE company_id = $1",
    )
    .bind(company_id)
    .bind(head.seq)
    .bind(&head.nif)
    .bind(&head.num_serie)
    .bind(&head.fecha)
    .bind(&head.huella)
    .execute(conn)
    .await?;
    Ok(())
}

/// A stored record.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RecordRow {
    pub id: String,
    pub company_id: String,
    pub invoice_id: String,
    pub seq: i64,
    pub kind: String,
    pub tipo_factura: Option<String>,
    pub huella: String,
    pub previous_huella: Option<String>,
    pub hash_input: String,
    pub generated_at: String,
    pub xml: String,
    pub qr_url: Option<String>,
    pub status: String,
    pub aeat_code: Option<String>,
    pub aeat_description: Option<String>,
    pub csv: Option<String>,
    pub attempts: i64,
    pub submitted_at: Option<i64>,
    pub created_at: i64,
}

const COLUMNS: &str = "id, company_id, invoice_id, seq, kind, tipo_factura, huella, previous_huella, hash_input, \
    generated_at, xml, qr_url, status, aeat_code, aeat_description, csv, attempts, submitted_at, created_at";

/// Stores a record.
pub async fn insert(conn: &mut AnyConnection, r: &RecordRow) -> sqlx::Result<()> {
    let params: Vec<String> = (1..=19).map(|i| format!("${i}")).collect();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO verifactu_records ({COLUMNS}) VALUES ({})",
        params.join(", ")
    )))
    .bind(&r.id)
    .bind(&r.company_id)
    .bind(&r.invoice_id)
    .bind(r.seq)
    .bind(&r.kind)
    .bind(&r.tipo_factura)
    .bind(&r.huella)
    .bind(&r.previous_huella)
    .bind(&r.hash_input)
    .bind(&r.generated_at)
    .bind(&r.xml)
    .bind(&r.qr_url)
    .bind(&r.status)
    .bind(&r.aeat_code)
    .bind(&r.aeat_description)
    .bind(&r.csv)
    .bind(r.attempts)
    .bind(r.submitted_at)
    .bind(r.created_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The records of an invoice, oldest first.
pub async fn for_invoice(
    conn: &mut AnyConnection,
    company_id: &str,
    invoice_id: &str,
) -> sqlx::Result<Vec<RecordRow>> {
    sqlx::query_as::<_, RecordRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM verifactu_records WHERE company_id = $1 AND invoice_id = $2 ORDER BY seq"
    )))
    .bind(company_id)
    .bind(invoice_id)
    .fetch_all(conn)
    .await
}

/// An issuer's whole chain, in order (for checks and submission).
pub async fn chain(conn: &mut AnyConnection, company_id: &str) -> sqlx::Result<Vec<RecordRow>> {
    sqlx::query_as::<_, RecordRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM verifactu_records WHERE company_id = $1 ORDER BY seq"
    )))
    .bind(company_id)
    .fetch_all(conn)
    .await
}

/// The authorization status of a company.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AuthorizationRow {
    pub status: String,
    pub in_effect: i64,
    pub method: Option<String>,
    pub note: Option<String>,
    pub recorded_by: Option<String>,
    pub updated_at: i64,
}

/// The company's authorization, if any was ever recorded.
pub async fn authorization(
    conn: &mut AnyConnection,
    company_id: &str,
) -> sqlx::Result<Option<AuthorizationRow>> {
    sqlx::query_as::<_, AuthorizationRow>(
        "SELECT status, in_effect, method, note, recorded_by, updated_at FROM verifactu_authorizations WHERE company_id = $1",
    )
    .bind(company_id)
    .fetch_optional(conn)
    .await
}

/// Records the company's authorization (replacing the previous state).
pub async fn set_authorization(
    conn: &mut AnyConnection,
    company_id: &str,
    status: &str,
    in_effect: bool,
    method: &str,
    note: Option<&str>,
    recorded_by: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO verifactu_authorizations (company_id, status, in_effect, updated_at, method, note, recorded_by) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (company_id) DO UPDATE SET status = $2, in_effect = $3, \
         updated_at = $4, method = $5, note = $6, recorded_by = $7",
    )
    .bind(company_id)
    .bind(status)
    .bind(i64::from(in_effect))
    .bind(crate::now_micros())
    .bind(method)
    .bind(note)
    .bind(recorded_by)
    .execute(conn)
    .await?;
    Ok(())
}
