//! Payments received on issued invoices.

use sqlx::AnyConnection;

/// A recorded payment.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PaymentRow {
    pub id: String,
    pub invoice_id: String,
    pub amount_minor: i64,
    pub paid_at: i64,
    pub bank_account_id: Option<String>,
    pub note: Option<String>,
    pub created_at: i64,
}

/// Records a payment and adds it to the invoice's paid amount (and the dashboard's
/// counts), in one transaction.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    p: &PaymentRow,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO invoice_payments (id, company_id, invoice_id, amount_minor, paid_at, bank_account_id, note, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&p.id)
    .bind(company_id)
    .bind(&p.invoice_id)
    .bind(p.amount_minor)
    .bind(p.paid_at)
    .bind(&p.bank_account_id)
    .bind(&p.note)
    .bind(p.created_at)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        // By the primary key alone (see `crate::by_id`).
        "UPDATE invoices SET paid_minor = paid_minor + $3 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(&p.invoice_id)
    .bind(p.amount_minor)
    .execute(&mut *conn)
    .await?;
    crate::dashboard::record_payment(conn, company_id, &p.invoice_id, p.amount_minor).await
}

/// Payments of an invoice, newest first.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    invoice_id: &str,
) -> sqlx::Result<Vec<PaymentRow>> {
    sqlx::query_as::<_, PaymentRow>(
        "SELECT id, invoice_id, amount_minor, paid_at, bank_account_id, note, created_at FROM invoice_payments \
         WHERE company_id = $1 AND invoice_id = $2 ORDER BY id DESC LIMIT 1000",
    )
    .bind(company_id)
    .bind(invoice_id)
    .fetch_all(conn)
    .await
}

/// Deletes a payment and subtracts it from the invoice (and the dashboard's counts);
/// false when there is none.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    invoice_id: &str,
    id: &str,
) -> sqlx::Result<bool> {
    let amount: Option<i64> = sqlx::query_scalar(
        "SELECT amount_minor FROM invoice_payments WHERE company_id = $1 AND invoice_id = $2 AND id = $3",
    )
    .bind(company_id)
    .bind(invoice_id)
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(amount) = amount else {
        return Ok(false);
    };
    sqlx::query("DELETE FROM invoice_payments WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        // By the primary key alone (see `crate::by_id`).
        "UPDATE invoices SET paid_minor = paid_minor - $3 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(invoice_id)
    .bind(amount)
    .execute(&mut *conn)
    .await?;
    crate::dashboard::record_payment(conn, company_id, invoice_id, -amount).await?;
    Ok(true)
}

/// Credits prepaid points (negative `delta` spends them).
pub async fn add_points(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    delta: i64,
    currency_code: &str,
    note: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO points_ledger (id, company_id, delta, currency_code, note, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(crate::new_id())
    .bind(company_id)
    .bind(delta)
    .bind(currency_code)
    .bind(note)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}
