//! Entities: the customers and suppliers of a company.

use sqlx::AnyConnection;

/// An entity as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EntityRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub name: String,
    /// Canonical `CC:LegalForm`.
    pub entity_type: String,
    pub country: String,
    pub fiscal_id: Option<String>,
    pub vies_vat_id: Option<String>,
    pub currency_code: String,
    pub email: Option<String>,
    pub language: Option<String>,
    pub address_json: String,
    pub template_json: Option<String>,
    pub verifactu_json: Option<String>,
    pub created_at: i64,
    pub updated_at: Option<i64>,
    /// Days from issue to due date for invoices to this entity (overrides the company's).
    pub payment_terms_days: Option<i64>,
    /// E-invoice settings (`{"format","endpoint","buyer_reference"}`) as JSON.
    pub einvoice_json: Option<String>,
}

const COLUMNS: &str = "id, company_id, name, entity_type, country, fiscal_id, vies_vat_id, \
    currency_code, email, language, address_json, template_json, verifactu_json, created_at, updated_at, \
    payment_terms_days, einvoice_json";

/// Stores a new entity.
pub async fn insert(conn: &mut AnyConnection, e: &EntityRow) -> sqlx::Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "INSERT INTO entities ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)"
    )))
    .bind(&e.id)
    .bind(&e.company_id)
    .bind(&e.name)
    .bind(&e.entity_type)
    .bind(&e.country)
    .bind(&e.fiscal_id)
    .bind(&e.vies_vat_id)
    .bind(&e.currency_code)
    .bind(&e.email)
    .bind(&e.language)
    .bind(&e.address_json)
    .bind(&e.template_json)
    .bind(&e.verifactu_json)
    .bind(e.created_at)
    .bind(e.updated_at)
    .bind(e.payment_terms_days)
    .bind(&e.einvoice_json)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes every editable column back.
pub async fn update(conn: &mut AnyConnection, e: &EntityRow) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE entities SET name = $3, entity_type = $4, country = $5, fiscal_id = $6, vies_vat_id = $7, \
         currency_code = $8, email = $9, language = $10, address_json = $11, template_json = $12, \
         verifactu_json = $13, updated_at = $14, payment_terms_days = $15, einvoice_json = $16 \
         WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&e.company_id)
    .bind(&e.id)
    .bind(&e.name)
    .bind(&e.entity_type)
    .bind(&e.country)
    .bind(&e.fiscal_id)
    .bind(&e.vies_vat_id)
    .bind(&e.currency_code)
    .bind(&e.email)
    .bind(&e.language)
    .bind(&e.address_json)
    .bind(&e.template_json)
    .bind(&e.verifactu_json)
    .bind(crate::now_micros())
    .bind(e.payment_terms_days)
    .bind(&e.einvoice_json)
    .execute(conn)
    .await?;
    Ok(())
}

/// One entity of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<EntityRow>> {
    sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM entities WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The read of the recipient of the company's invoice, the company and the invoice given as
/// parameters (`$1`, `$3`...), for [`crate::batch::read_each`].
pub(crate) fn recipient_of_invoice_sql(company: &str, invoice: &str) -> String {
    format!(
        "SELECT {COLUMNS} FROM entities WHERE {}",
        crate::by_id(
            company,
            &format!(
                "(SELECT recipient_id FROM invoices WHERE {})",
                crate::by_id(company, invoice)
            )
        )
    )
}

/// The company's entity `id` and the company, together (one hand-off on SQLite, see
/// [`crate::batch::read_each`]); each `None` when there is none.
pub async fn with_company(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<(Option<crate::companies::CompanyRow>, Option<EntityRow>)> {
    use sqlx::FromRow;
    let company = crate::companies::get_sql();
    let entity =
        format!("SELECT {COLUMNS} FROM entities WHERE id = $2 AND (company_id = $1) IS TRUE");
    let answers =
        crate::batch::read_each(conn, &[&company, &entity], &[company_id.as_str(), id]).await?;
    let first = |i: usize| answers.get(i).and_then(Option::as_ref);
    Ok((
        first(0)
            .map(crate::companies::CompanyRow::from_row)
            .transpose()?,
        first(1).map(EntityRow::from_row).transpose()?,
    ))
}

/// The company's oldest entity whose VAT id or tax id is `vat_id` (compared with either),
/// or whose tax id is `tax_id`; ids are compared without spaces, dots and dashes, in
/// upper case. Give them normalised the same way ([`normalize_id`]).
pub async fn find_by_tax_ids(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    vat_id: Option<&str>,
    tax_id: Option<&str>,
) -> sqlx::Result<Option<EntityRow>> {
    const NORMAL: fn(&str) -> String =
        |column| format!("UPPER(REPLACE(REPLACE(REPLACE({column}, ' ', ''), '.', ''), '-', ''))");
    let (vies, fiscal) = (NORMAL("vies_vat_id"), NORMAL("fiscal_id"));
    sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM entities WHERE company_id = $1 AND \
         (($2 IS NOT NULL AND ({vies} = $2 OR {fiscal} = $2 OR country || {fiscal} = $2)) \
          OR ($3 IS NOT NULL AND {fiscal} = $3)) \
         ORDER BY created_at, id LIMIT 1"
    )))
    .bind(company_id)
    .bind(vat_id)
    .bind(tax_id)
    .fetch_optional(conn)
    .await
}

/// A tax identifier as [`find_by_tax_ids`] compares it.
pub fn normalize_id(id: &str) -> String {
    id.chars()
        .filter(|c| !matches!(c, ' ' | '.' | '-'))
        .flat_map(char::to_uppercase)
        .collect()
}

/// Entities of the company, newest first, after the keyset cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<EntityRow>> {
    sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM entities WHERE company_id = $1 AND ($2 IS NULL OR id < $2) \
         ORDER BY id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The company's entities whose name or fiscal id contains `needle`
/// (case-insensitive for ASCII letters on both engines), newest first.
pub async fn search(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    needle: &str,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<EntityRow>> {
    // `%`, `_` and the escape character itself match only themselves.
    let mut pattern = String::from("%");
    for c in needle.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '!') {
            pattern.push('!');
        }
        pattern.push(c);
    }
    pattern.push('%');
    sqlx::query_as::<_, EntityRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM entities WHERE company_id = $1 AND ($2 IS NULL OR id < $2) \
         AND (LOWER(name) LIKE $3 ESCAPE '!' OR LOWER(COALESCE(fiscal_id, '')) LIKE $3 ESCAPE '!') \
         ORDER BY id DESC LIMIT CAST($4 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(pattern)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// How many draft and issued invoices (and proformas) name the entity.
pub async fn usage(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<(i64, i64, i64)> {
    let (drafts, issued): (i64, i64) = sqlx::query_as(
        "SELECT COALESCE(SUM(CASE WHEN status = 'draft' THEN 1 ELSE 0 END), 0), \
         COALESCE(SUM(CASE WHEN status = 'issued' THEN 1 ELSE 0 END), 0) \
         FROM invoices WHERE company_id = $1 AND recipient_id = $2",
    )
    .bind(company_id)
    .bind(id)
    .fetch_one(&mut *conn)
    .await?;
    let proformas: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM proformas WHERE company_id = $1 AND recipient_id = $2",
    )
    .bind(company_id)
    .bind(id)
    .fetch_one(conn)
    .await?;
    Ok((drafts, issued, proformas))
}

/// Deletes an entity of the company; false when there is none.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM entities WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
