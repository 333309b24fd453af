//! Companies and their configuration.

use sqlx::AnyConnection;

/// A company as stored, with its whole configuration.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CompanyRow {
    pub id: crate::CompanyId,
    pub name: String,
    pub fiscal_id: String,
    pub email: String,
    pub phone: String,
    pub company_type: Option<String>,
    pub address_json: Option<String>,
    /// 1 once registration is complete (flags are 0/1 on both engines).
    pub is_settled: i64,
    pub currency_code: Option<String>,
    pub friendly_name: Option<String>,
    pub vies_vat_id: Option<String>,
    pub footer_invoice_typst: Option<String>,
    pub post_invoice_typst: Option<String>,
    pub custom_placeholders_json: String,
    pub first_invoice_yearly_number: i64,
    pub first_corrective_invoice_yearly_number: i64,
    pub invoice_reference_format: String,
    pub corrective_invoice_reference_format: String,
    pub proforma_reference_format: String,
    pub created_at: i64,
    pub updated_at: Option<i64>,
    /// Days from issue to due date (BT-9), unless the recipient has its own.
    pub payment_terms_days: i64,
    /// Days after the due date on which unpaid invoices are reminded (JSON array).
    pub reminder_days_json: String,
    /// BT-34, `{"scheme","id"}` as JSON.
    pub electronic_address_json: Option<String>,
    /// BG-6: the contact person's name.
    pub contact_name: Option<String>,
}

impl CompanyRow {
    /// Whether the company issues under Spanish rules (VERI*FACTU, Spanish labels): its
    /// type's country is `ES`.
    pub fn is_spanish(&self) -> bool {
        self.company_type
            .as_deref()
            .is_some_and(domain::entity_type::is_spanish)
    }
}

const COLUMNS: &str = "id, name, fiscal_id, email, phone, company_type, address_json, is_settled, \
    currency_code, friendly_name, vies_vat_id, footer_invoice_typst, post_invoice_typst, \
    custom_placeholders_json, first_invoice_yearly_number, first_corrective_invoice_yearly_number, \
    invoice_reference_format, corrective_invoice_reference_format, proforma_reference_format, \
    created_at, updated_at, payment_terms_days, reminder_days_json, electronic_address_json, \
    contact_name";

/// Loads one company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<Option<CompanyRow>> {
    sqlx::query_as::<_, CompanyRow>(sqlx::AssertSqlSafe(get_sql()))
        .bind(company_id)
        .fetch_optional(conn)
        .await
}

/// The read of [`get`]: the company `$1`.
pub(crate) fn get_sql() -> String {
    format!("SELECT {COLUMNS} FROM companies WHERE id = $1")
}

/// A company with what decides whether `user_id` may issue for it, read in one query.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct IssuingCompany {
    #[sqlx(flatten)]
    pub company: CompanyRow,
    /// Current legal documents the user has not accepted (issuing needs none).
    pub unaccepted_documents: i64,
    /// 1 when the company's VERI*FACTU authorization is in effect.
    pub verifactu_in_effect: i64,
}

/// Loads one company for issuing by `user_id`: its row, how many current legal documents
/// the user has not accepted and whether its VERI*FACTU authorization is in effect, in
/// one round trip.
pub async fn for_issuing(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
) -> sqlx::Result<Option<IssuingCompany>> {
    sqlx::query_as::<_, IssuingCompany>(sqlx::AssertSqlSafe(issuing_sql()))
        .bind(company_id)
        .bind(user_id)
        .fetch_optional(conn)
        .await
}

/// The read of [`for_issuing`]: the company `$1` for the user `$2`.
pub(crate) fn issuing_sql() -> String {
    format!(
        "SELECT {COLUMNS}, \
         (SELECT COUNT(*) FROM legal_documents d WHERE d.is_current = 1 AND NOT EXISTS \
          (SELECT 1 FROM agreement_acceptances a WHERE a.document_id = d.id AND a.user_id = $2)) \
          AS unaccepted_documents, \
         COALESCE((SELECT v.in_effect FROM verifactu_authorizations v WHERE v.company_id = $1), 0) \
          AS verifactu_in_effect \
         FROM companies WHERE id = $1"
    )
}

/// The company's legal form (`ES:SL`, `IE:LTD`...), `None` inside when it has none
/// yet; `None` outside when there is no such company.
pub async fn company_type(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<Option<Option<String>>> {
    let row: Option<(Option<String>,)> =
        sqlx::query_as("SELECT company_type FROM companies WHERE id = $1")
            .bind(company_id)
            .fetch_optional(conn)
            .await?;
    Ok(row.map(|(t,)| t))
}

/// Data for a new company; everything else takes the schema defaults.
#[derive(Debug, Clone)]
pub struct NewCompany<'a> {
    pub name: &'a str,
    pub fiscal_id: &'a str,
    pub email: &'a str,
    pub company_type: Option<&'a str>,
    pub currency_code: Option<&'a str>,
}

/// Creates a company (not yet settled) and returns its id.
pub async fn insert(
    conn: &mut AnyConnection,
    new: &NewCompany<'_>,
) -> sqlx::Result<crate::CompanyId> {
    let id = crate::CompanyId::generate();
    sqlx::query(
        "INSERT INTO companies (id, name, fiscal_id, email, company_type, currency_code, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&id)
    .bind(new.name)
    .bind(new.fiscal_id)
    .bind(new.email)
    .bind(new.company_type)
    .bind(new.currency_code)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(id)
}

/// Takes the company row's lock (until the transaction ends, on PostgreSQL) and reads its
/// type. It writes a column no foreign key refers to: on SQLite, assigning `id` (even to
/// itself) makes every table that refers to companies be searched for the company's rows,
/// twice, while the one writer is held (58 ms for a million rows of one table, measured).
const LOCK_RETURNING_TYPE: &str =
    "UPDATE companies SET updated_at = updated_at WHERE id = $1 RETURNING company_type";

/// Writes every configurable column of `row` back and stamps `updated_at`.
///
/// A company's type sets its callers' language, which token lookups carry: when the type
/// changes, the token caches of this process stop before it is written
/// ([`crate::token_cache::changed`]; the trigger tells other processes). Any other change
/// leaves them alone: a pause stops the caches for every company of the process for a few
/// seconds, and companies edit their settings (a footer, payment terms) far more often than
/// their type. The stored type is read with the row locked (on PostgreSQL; SQLite has one
/// writer), so a change committed meanwhile by another request is the one compared with.
pub async fn update(conn: &mut AnyConnection, row: &CompanyRow) -> sqlx::Result<()> {
    let stored: Option<(Option<String>,)> = sqlx::query_as(LOCK_RETURNING_TYPE)
        .bind(&row.id)
        .fetch_optional(&mut *conn)
        .await?;
    if stored.is_none_or(|(company_type,)| company_type != row.company_type) {
        crate::token_cache::changed();
    }
    sqlx::query(
        "UPDATE companies SET name = $2, fiscal_id = $3, email = $4, phone = $5, company_type = $6, \
         address_json = $7, is_settled = $8, currency_code = $9, friendly_name = $10, vies_vat_id = $11, \
         footer_invoice_typst = $12, post_invoice_typst = $13, custom_placeholders_json = $14, \
         first_invoice_yearly_number = $15, first_corrective_invoice_yearly_number = $16, \
         invoice_reference_format = $17, corrective_invoice_reference_format = $18, \
         proforma_reference_format = $19, updated_at = $20, payment_terms_days = $21, \
         reminder_days_json = $22, electronic_address_json = $23, contact_name = $24 WHERE id = $1",
    )
    .bind(&row.id)
    .bind(&row.name)
    .bind(&row.fiscal_id)
    .bind(&row.email)
    .bind(&row.phone)
    .bind(&row.company_type)
    .bind(&row.address_json)
    .bind(row.is_settled)
    .bind(&row.currency_code)
    .bind(&row.friendly_name)
    .bind(&row.vies_vat_id)
    .bind(&row.footer_invoice_typst)
    .bind(&row.post_invoice_typst)
    .bind(&row.custom_placeholders_json)
    .bind(row.first_invoice_yearly_number)
    .bind(row.first_corrective_invoice_yearly_number)
    .bind(&row.invoice_reference_format)
    .bind(&row.corrective_invoice_reference_format)
    .bind(&row.proforma_reference_format)
    .bind(crate::now_micros())
    .bind(row.payment_terms_days)
    .bind(&row.reminder_days_json)
    .bind(&row.electronic_address_json)
    .bind(&row.contact_name)
    .execute(conn)
    .await?;
    Ok(())
}

/// Companies in the order they were created, after the company `after` (an id), at most
/// `limit`: for operators (`invoicing admin company list`).
pub async fn list(
    conn: &mut AnyConnection,
    after: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<CompanyRow>> {
    sqlx::query_as::<_, CompanyRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM companies WHERE $1 IS NULL OR id > $1 ORDER BY id LIMIT CAST($2 AS BIGINT)"
    )))
    .bind(after)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Whether any company exists (the service was bootstrapped).
pub async fn any_exists(conn: &mut AnyConnection) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM companies")
        .fetch_one(conn)
        .await?;
    Ok(n > 0)
}

/// Records the company's VERI*FACTU authorization status.
pub async fn set_verifactu_authorization(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    status: &str,
    in_effect: bool,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO verifactu_authorizations (company_id, status, in_effect, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (company_id) DO UPDATE SET status = $2, in_effect = $3, updated_at = $4",
    )
    .bind(company_id)
    .bind(status)
    .bind(i64::from(in_effect))
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}
