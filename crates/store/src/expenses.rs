//! Expenses: bills received from suppliers.

use sqlx::AnyConnection;

/// An expense as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ExpenseRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub supplier_id: String,
    pub invoice_reference: String,
    pub category: Option<String>,
    pub description: Option<String>,
    pub currency_code: String,
    pub exchange_rate: Option<i64>,
    pub expense_date: i64,
    pub net_total: i64,
    pub tax_total: i64,
    pub total: i64,
    pub line_count: i64,
    pub lines_json: String,
    pub receipt_file_id: Option<String>,
    pub created_at: i64,
    pub updated_at: Option<i64>,
    /// Receipt metadata (joined from `files`).
    pub receipt_content_type: Option<String>,
    pub receipt_size: Option<i64>,
    /// `manual` or `einvoice`.
    pub source: String,
    /// For an imported credit note: the expense of the invoice it corrects.
    pub corrected_expense_id: Option<String>,
}

const SELECT: &str = "SELECT e.id, e.company_id, e.supplier_id, e.invoice_reference, e.category, e.description, \
    e.currency_code, e.exchange_rate, e.expense_date, e.net_total, e.tax_total, e.total, e.line_count, \
    e.lines_json, e.receipt_file_id, e.created_at, e.updated_at, f.content_type AS receipt_content_type, \
    f.size AS receipt_size, e.source, e.corrected_expense_id \
    FROM expenses e LEFT JOIN files f ON f.id = e.receipt_file_id";

/// Stores a new expense; a duplicate (supplier, reference) fails with a unique violation.
pub async fn insert(conn: &mut AnyConnection, e: &ExpenseRow) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO expenses (id, company_id, supplier_id, invoice_reference, category, description, \
         currency_code, exchange_rate, expense_date, net_total, tax_total, total, line_count, lines_json, \
         receipt_file_id, created_at, source, corrected_expense_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)",
    )
    .bind(&e.id)
    .bind(&e.company_id)
    .bind(&e.supplier_id)
    .bind(&e.invoice_reference)
    .bind(&e.category)
    .bind(&e.description)
    .bind(&e.currency_code)
    .bind(e.exchange_rate)
    .bind(e.expense_date)
    .bind(e.net_total)
    .bind(e.tax_total)
    .bind(e.total)
    .bind(e.line_count)
    .bind(&e.lines_json)
    .bind(&e.receipt_file_id)
    .bind(e.created_at)
    .bind(&e.source)
    .bind(&e.corrected_expense_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Writes the editable columns back.
pub async fn update(conn: &mut AnyConnection, e: &ExpenseRow) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE expenses SET supplier_id = $3, invoice_reference = $4, category = $5, description = $6, \
         currency_code = $7, exchange_rate = $8, expense_date = $9, net_total = $10, tax_total = $11, \
         total = $12, line_count = $13, lines_json = $14, receipt_file_id = $15, updated_at = $16 \
         WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&e.company_id)
    .bind(&e.id)
    .bind(&e.supplier_id)
    .bind(&e.invoice_reference)
    .bind(&e.category)
    .bind(&e.description)
    .bind(&e.currency_code)
    .bind(e.exchange_rate)
    .bind(e.expense_date)
    .bind(e.net_total)
    .bind(e.tax_total)
    .bind(e.total)
    .bind(e.line_count)
    .bind(&e.lines_json)
    .bind(&e.receipt_file_id)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}

/// One expense of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<ExpenseRow>> {
    sqlx::query_as::<_, ExpenseRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE e.company_id = $1 AND e.id = $2"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// The id of the company's expense with this supplier and reference, if there is one.
pub async fn find_by_reference(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    supplier_id: &str,
    reference: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT id FROM expenses WHERE company_id = $1 AND supplier_id = $2 AND invoice_reference = $3",
    )
    .bind(company_id)
    .bind(supplier_id)
    .bind(reference)
    .fetch_optional(conn)
    .await
}

/// Expenses of the company (optionally of one supplier), newest first, after the cursor.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    supplier_id: Option<&str>,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<ExpenseRow>> {
    sqlx::query_as::<_, ExpenseRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} WHERE e.company_id = $1 AND ($2 IS NULL OR e.supplier_id = $2) \
         AND ($3 IS NULL OR e.id < $3) ORDER BY e.id DESC LIMIT CAST($4 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(supplier_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Deletes an expense of the company and its receipt; false when there is none.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    let receipt: Option<Option<String>> = sqlx::query_scalar(
        "SELECT receipt_file_id FROM expenses WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(receipt) = receipt else {
        return Ok(false);
    };
    sqlx::query("DELETE FROM expenses WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    if let Some(file) = receipt {
        sqlx::query("DELETE FROM files WHERE id = $2 AND (company_id = $1) IS TRUE")
            .bind(company_id)
            .bind(file)
            .execute(conn)
            .await?;
    }
    Ok(true)
}
