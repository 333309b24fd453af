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
pub async fn lock_head(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<ChainHead> {
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
    company_id: &crate::CompanyId,
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
    pub company_id: crate::CompanyId,
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
    /// The batch that carried (or is carrying) the record to the AEAT.
    pub batch_id: Option<String>,
    /// When the AEAT's answer for the record was stored.
    pub answered_at: Option<i64>,
    /// Why an invoice was cancelled (`anulacion` records).
    pub reason: Option<String>,
}

const COLUMNS: &str = "id, company_id, invoice_id, seq, kind, tipo_factura, huella, previous_huella, hash_input, \
    generated_at, xml, qr_url, status, aeat_code, aeat_description, csv, attempts, submitted_at, created_at, \
    batch_id, answered_at, reason";

/// Stores a record.
pub async fn insert(conn: &mut AnyConnection, r: &RecordRow) -> sqlx::Result<()> {
    let params: Vec<String> = (1..=22).map(|i| format!("${i}")).collect();
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
    .bind(&r.batch_id)
    .bind(r.answered_at)
    .bind(&r.reason)
    .execute(conn)
    .await?;
    Ok(())
}

/// The records of an invoice, oldest first.
pub async fn for_invoice(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
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
pub async fn chain(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<Vec<RecordRow>> {
    sqlx::query_as::<_, RecordRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM verifactu_records WHERE company_id = $1 ORDER BY seq"
    )))
    .bind(company_id)
    .fetch_all(conn)
    .await
}

/// Record states (`verifactu_records.status`).
pub mod status {
    /// Mode disabled: built and chained, never sent.
    pub const NOT_SENT: &str = "not_sent";
    /// Waiting for the submission job.
    pub const PENDING: &str = "pending";
    /// In a batch whose request may have gone out.
    pub const SENDING: &str = "sending";
    /// `EstadoRegistro` `Correcto`.
    pub const ACCEPTED: &str = "accepted";
    /// `EstadoRegistro` `AceptadoConErrores`: registered, to be corrected.
    pub const ACCEPTED_WITH_ERRORS: &str = "accepted_with_errors";
    /// `EstadoRegistro` `Incorrecto`: not registered.
    pub const REJECTED: &str = "rejected";
}

/// A batch of records sent (or being sent) in one request.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct BatchRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    /// `sending` or `answered`.
    pub status: String,
    pub records: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub attempts: i64,
    pub estado_envio: Option<String>,
    pub csv: Option<String>,
    pub wait_seconds: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub sent_at: Option<i64>,
    pub answered_at: Option<i64>,
}

const BATCH_COLUMNS: &str = "id, company_id, status, records, first_seq, last_seq, attempts, estado_envio, csv, \
    wait_seconds, last_error, created_at, sent_at, answered_at";

/// How many of the issuer's records wait for the submission job.
pub async fn pending_count(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM verifactu_records WHERE company_id = $1 AND status = 'pending'",
    )
    .bind(company_id)
    .fetch_one(conn)
    .await
}

/// The issuer's first `limit` pending records, in chain order.
pub async fn next_pending(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    limit: i64,
) -> sqlx::Result<Vec<RecordRow>> {
    sqlx::query_as::<_, RecordRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM verifactu_records WHERE company_id = $1 AND status = 'pending' \
         ORDER BY seq LIMIT CAST($2 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The issuer's batch still `sending` (its request may have gone out), if any.
pub async fn batch_in_flight(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<Option<BatchRow>> {
    sqlx::query_as::<_, BatchRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {BATCH_COLUMNS} FROM verifactu_batches WHERE company_id = $1 AND status = 'sending' \
         ORDER BY first_seq LIMIT 1"
    )))
    .bind(company_id)
    .fetch_optional(conn)
    .await
}

/// The issuer's last answered batch (its `TiempoEsperaEnvio` paces the next one).
pub async fn last_answered_batch(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<Option<BatchRow>> {
    sqlx::query_as::<_, BatchRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {BATCH_COLUMNS} FROM verifactu_batches WHERE company_id = $1 AND status = 'answered' \
         ORDER BY answered_at DESC, id DESC LIMIT 1"
    )))
    .bind(company_id)
    .fetch_optional(conn)
    .await
}

/// One batch.
pub async fn batch(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<BatchRow>> {
    sqlx::query_as::<_, BatchRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {BATCH_COLUMNS} FROM verifactu_batches WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The records of a batch, in chain order.
pub async fn batch_records(
    conn: &mut AnyConnection,
    batch_id: &str,
) -> sqlx::Result<Vec<RecordRow>> {
    sqlx::query_as::<_, RecordRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM verifactu_records WHERE batch_id = $1 ORDER BY seq"
    )))
    .bind(batch_id)
    .fetch_all(conn)
    .await
}

/// Puts `records` (pending, in chain order) in a new `sending` batch; returns its id.
pub async fn create_batch(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    records: &[RecordRow],
) -> sqlx::Result<String> {
    let id = crate::new_id();
    let first = records.first().map_or(0, |r| r.seq);
    let last = records.last().map_or(0, |r| r.seq);
    sqlx::query(
        "INSERT INTO verifactu_batches (id, company_id, status, records, first_seq, last_seq, attempts, created_at) \
         VALUES ($1, $2, 'sending', $3, $4, $5, 0, $6)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(i64::try_from(records.len()).unwrap_or(i64::MAX))
    .bind(first)
    .bind(last)
    .bind(crate::now_micros())
    .execute(&mut *conn)
    .await?;
    for r in records {
        sqlx::query(
            "UPDATE verifactu_records SET status = 'sending', batch_id = $2 WHERE id = $1 AND status = 'pending'",
        )
        .bind(&r.id)
        .bind(&id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(id)
}

/// Notes that a request for the batch is about to go out: counts the attempt
/// on the batch and its records. Commit it before sending.
pub async fn batch_sending(conn: &mut AnyConnection, batch_id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query("UPDATE verifactu_batches SET attempts = attempts + 1, sent_at = $2 WHERE id = $1")
        .bind(batch_id)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE verifactu_records SET attempts = attempts + 1, submitted_at = $2 WHERE batch_id = $1",
    )
    .bind(batch_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Keeps the last failure of a batch that stays `sending` (to be re-sent).
pub async fn batch_failed(
    conn: &mut AnyConnection,
    batch_id: &str,
    error: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE verifactu_batches SET last_error = $2 WHERE id = $1")
        .bind(batch_id)
        .bind(error)
        .execute(conn)
        .await?;
    Ok(())
}

/// Stores the AEAT's answer for the whole batch.
pub async fn batch_answered(
    conn: &mut AnyConnection,
    batch_id: &str,
    estado_envio: &str,
    csv: Option<&str>,
    wait_seconds: i64,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE verifactu_batches SET status = 'answered', estado_envio = $2, csv = $3, wait_seconds = $4, \
         answered_at = $5 WHERE id = $1",
    )
    .bind(batch_id)
    .bind(estado_envio)
    .bind(csv)
    .bind(wait_seconds)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Stores the AEAT's answer for one record.
pub async fn record_answered(
    conn: &mut AnyConnection,
    record_id: &str,
    status: &str,
    code: Option<&str>,
    description: Option<&str>,
    csv: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE verifactu_records SET status = $2, aeat_code = $3, aeat_description = $4, csv = $5, \
         answered_at = $6 WHERE id = $1",
    )
    .bind(record_id)
    .bind(status)
    .bind(code)
    .bind(description)
    .bind(csv)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Companies whose power of attorney waits for the AEAT's confirmation, with their fiscal ids.
pub async fn pending_powers_of_attorney(
    conn: &mut AnyConnection,
) -> sqlx::Result<Vec<(crate::CompanyId, String)>> {
    sqlx::query_as::<_, (crate::CompanyId, String)>(
        "SELECT a.company_id, c.fiscal_id FROM verifactu_authorizations a \
         JOIN companies c ON c.id = a.company_id \
         WHERE a.status = 'pending_confirmation' AND a.in_effect = 0 ORDER BY a.company_id",
    )
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
    company_id: &crate::CompanyId,
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
    company_id: &crate::CompanyId,
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
