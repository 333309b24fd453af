//! Proformas: quotes that can become a draft invoice.

use sqlx::AnyConnection;

/// A proforma as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProformaRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub recipient_id: String,
    pub supply_type: String,
    pub currency_code: String,
    pub treatment: Option<String>,
    pub number: i64,
    pub year: i64,
    pub reference: String,
    pub net_total: i64,
    pub tax_total: i64,
    pub withholding_total: i64,
    pub total: i64,
    pub line_count: i64,
    pub lines_json: String,
    pub custom_placeholder_values_json: String,
    pub exchange_rates_json: String,
    pub invoice_id: Option<String>,
    pub created_at: i64,
    pub updated_at: Option<i64>,
}

const COLUMNS: &str = "id, company_id, recipient_id, supply_type, currency_code, treatment, number, year, \
    reference, net_total, tax_total, withholding_total, total, line_count, lines_json, \
    custom_placeholder_values_json, exchange_rates_json, invoice_id, created_at, updated_at";

/// Stores a new proforma.
pub async fn insert(conn: &mut AnyConnection, r: &ProformaRow) -> sqlx::Result<()> {
    let params: Vec<String> = (1..=20).map(|i| format!("${i}")).collect();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO proformas ({COLUMNS}) VALUES ({})",
        params.join(", ")
    )))
    .bind(&r.id)
    .bind(&r.company_id)
    .bind(&r.recipient_id)
    .bind(&r.supply_type)
    .bind(&r.currency_code)
    .bind(&r.treatment)
    .bind(r.number)
    .bind(r.year)
    .bind(&r.reference)
    .bind(r.net_total)
    .bind(r.tax_total)
    .bind(r.withholding_total)
    .bind(r.total)
    .bind(r.line_count)
    .bind(&r.lines_json)
    .bind(&r.custom_placeholder_values_json)
    .bind(&r.exchange_rates_json)
    .bind(&r.invoice_id)
    .bind(r.created_at)
    .bind(r.updated_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes the editable columns back.
pub async fn update(conn: &mut AnyConnection, r: &ProformaRow) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE proformas SET recipient_id = $3, supply_type = $4, currency_code = $5, treatment = $6, \
         net_total = $7, tax_total = $8, withholding_total = $9, total = $10, line_count = $11, \
         lines_json = $12, custom_placeholder_values_json = $13, exchange_rates_json = $14, \
         invoice_id = $15, updated_at = $16 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&r.company_id)
    .bind(&r.id)
    .bind(&r.recipient_id)
    .bind(&r.supply_type)
    .bind(&r.currency_code)
    .bind(&r.treatment)
    .bind(r.net_total)
    .bind(r.tax_total)
    .bind(r.withholding_total)
    .bind(r.total)
    .bind(r.line_count)
    .bind(&r.lines_json)
    .bind(&r.custom_placeholder_values_json)
    .bind(&r.exchange_rates_json)
    .bind(&r.invoice_id)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}

/// One proforma of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<ProformaRow>> {
    sqlx::query_as::<_, ProformaRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM proformas WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Proformas of the company, newest first, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    recipient_id: Option<&str>,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<ProformaRow>> {
    sqlx::query_as::<_, ProformaRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM proformas WHERE company_id = $1 AND ($2 IS NULL OR recipient_id = $2) \
         AND ($3 IS NULL OR id < $3) ORDER BY id DESC LIMIT CAST($4 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(recipient_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Deletes a proforma of the company; false when there is none.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    sqlx::query(
        "UPDATE invoices SET proforma_id = NULL WHERE company_id = $1 AND proforma_id = $2",
    )
    .bind(company_id)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    let done = sqlx::query("DELETE FROM proformas WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
