//! Aggregates for the dashboard: set-based SQL over indexed columns, never
//! summing across currencies.
//!
//! `SUM` of a `BIGINT` is `NUMERIC` on PostgreSQL, which the `Any` driver
//! cannot carry: every sum is cast back to `BIGINT`.

use sqlx::AnyConnection;

/// Net revenue (tax lines excluded) of issued invoices, corrective ones
/// included (negative), per currency, issued in `[from, to)` when given.
pub async fn revenue_by_currency(
    conn: &mut AnyConnection,
    company_id: &str,
    from: Option<i64>,
    to: Option<i64>,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT currency_code, CAST(SUM(net_total) AS BIGINT) FROM invoices \
         WHERE company_id = $1 AND status = 'issued' AND ($2 IS NULL OR issued_at >= $2) \
         AND ($3 IS NULL OR issued_at < $3) GROUP BY currency_code ORDER BY currency_code",
    )
    .bind(company_id)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await
}

/// Net amount of expenses per currency, dated in `[from, to)` when given.
pub async fn expenses_by_currency(
    conn: &mut AnyConnection,
    company_id: &str,
    from: Option<i64>,
    to: Option<i64>,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT currency_code, CAST(SUM(net_total) AS BIGINT) FROM expenses \
         WHERE company_id = $1 AND ($2 IS NULL OR expense_date >= $2) \
         AND ($3 IS NULL OR expense_date < $3) GROUP BY currency_code ORDER BY currency_code",
    )
    .bind(company_id)
    .bind(from)
    .bind(to)
    .fetch_all(conn)
    .await
}

/// Net revenue in `currency` per month, given the month boundaries
/// (`bounds[i]..bounds[i+1]`), in one scan of the window.
pub async fn monthly_revenue(
    conn: &mut AnyConnection,
    company_id: &str,
    currency: &str,
    bounds: &[i64],
) -> sqlx::Result<Vec<i64>> {
    use sqlx::Row;
    let months = bounds.len().saturating_sub(1);
    if months == 0 {
        return Ok(Vec::new());
    }
    let columns: Vec<String> = (0..months)
        .map(|i| {
            format!(
                "CAST(COALESCE(SUM(CASE WHEN issued_at >= ${} AND issued_at < ${} THEN net_total ELSE 0 END), 0) AS BIGINT)",
                i + 3,
                i + 4
            )
        })
        .collect();
    let sql = format!(
        "SELECT {} FROM invoices WHERE company_id = $1 AND status = 'issued' AND currency_code = $2 \
         AND issued_at >= ${} AND issued_at < ${}",
        columns.join(", "),
        3,
        months + 3
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(company_id)
        .bind(currency);
    for b in bounds {
        q = q.bind(*b);
    }
    let row = q.fetch_one(conn).await?;
    (0..months).map(|i| row.try_get::<i64, _>(i)).collect()
}

/// A customer ranked by issued revenue.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TopCustomerRow {
    pub entity_id: String,
    pub name: String,
    pub revenue: i64,
    pub invoice_count: i64,
}

/// The best `limit` customers by net revenue in `currency`.
pub async fn top_customers(
    conn: &mut AnyConnection,
    company_id: &str,
    currency: &str,
    limit: i64,
) -> sqlx::Result<Vec<TopCustomerRow>> {
    sqlx::query_as::<_, TopCustomerRow>(
        "SELECT i.recipient_id AS entity_id, e.name AS name, CAST(SUM(i.net_total) AS BIGINT) AS revenue, \
         COUNT(*) AS invoice_count FROM invoices i JOIN entities e ON e.id = i.recipient_id \
         WHERE i.company_id = $1 AND i.status = 'issued' AND i.currency_code = $2 \
         GROUP BY i.recipient_id, e.name ORDER BY revenue DESC, entity_id LIMIT $3",
    )
    .bind(company_id)
    .bind(currency)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Customers ever issued an invoice, and those whose first issued invoice is in `[from, to)`.
pub async fn customer_stats(
    conn: &mut AnyConnection,
    company_id: &str,
    from: i64,
    to: i64,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN first_issued >= $2 AND first_issued < $3 THEN 1 ELSE 0 END), 0) AS BIGINT) \
         FROM (SELECT recipient_id, MIN(issued_at) AS first_issued FROM invoices \
               WHERE company_id = $1 AND status = 'issued' AND series = 'invoice' GROUP BY recipient_id) firsts",
    )
    .bind(company_id)
    .bind(from)
    .bind(to)
    .fetch_one(conn)
    .await
}

/// Invoice counts by status.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct CountsRow {
    pub draft: i64,
    pub issued: i64,
    pub paid: i64,
    pub partially_paid: i64,
    pub overdue: i64,
    pub corrected: i64,
    pub corrective: i64,
}

/// Counts of invoices by status; `now` decides what is overdue.
pub async fn invoice_counts(
    conn: &mut AnyConnection,
    company_id: &str,
    now: i64,
) -> sqlx::Result<CountsRow> {
    let count = |cond: &str, alias: &str| {
        format!("CAST(COALESCE(SUM(CASE WHEN {cond} THEN 1 ELSE 0 END), 0) AS BIGINT) AS {alias}")
    };
    let ordinary = "status = 'issued' AND series = 'invoice'";
    let sql = format!(
        "SELECT {}, {}, {}, {}, {}, {}, {} FROM invoices i WHERE company_id = $1",
        count("status = 'draft'", "draft"),
        count(ordinary, "issued"),
        count(
            &format!("{ordinary} AND total > 0 AND paid_minor >= total"),
            "paid"
        ),
        count(
            &format!("{ordinary} AND paid_minor > 0 AND paid_minor < total"),
            "partially_paid"
        ),
        count(
            &format!(
                "{ordinary} AND paid_minor < total AND due_date IS NOT NULL AND due_date < $2"
            ),
            "overdue"
        ),
        count(
            &format!(
                "{ordinary} AND EXISTS (SELECT 1 FROM invoices c WHERE c.corrected_invoice_id = i.id AND c.status = 'issued')"
            ),
            "corrected"
        ),
        count("status = 'issued' AND series = 'corrective'", "corrective"),
    );
    sqlx::query_as::<_, CountsRow>(sqlx::AssertSqlSafe(sql))
        .bind(company_id)
        .bind(now)
        .fetch_one(conn)
        .await
}

/// The prepaid points balance and the currency of the latest top-up.
pub async fn points(
    conn: &mut AnyConnection,
    company_id: &str,
) -> sqlx::Result<(i64, Option<String>)> {
    let balance: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(delta), 0) AS BIGINT) FROM points_ledger WHERE company_id = $1",
    )
    .bind(company_id)
    .fetch_one(&mut *conn)
    .await?;
    let currency: Option<String> = sqlx::query_scalar(
        "SELECT currency_code FROM points_ledger WHERE company_id = $1 AND delta > 0 ORDER BY id DESC LIMIT 1",
    )
    .bind(company_id)
    .fetch_optional(conn)
    .await?;
    Ok((balance, currency))
}

/// The company's subscription tier, if any.
pub async fn subscription_tier(
    conn: &mut AnyConnection,
    company_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT subscription_tier FROM companies WHERE id = $1")
        .bind(company_id)
        .fetch_one(conn)
        .await
}
