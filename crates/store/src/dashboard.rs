//! Aggregates for the dashboard, never summing across currencies.
//!
//! The figures over all issued invoices come from rollup tables (migrations
//! `0010_dashboard_rollups.sql` and `0027_fewer_rollup_rows.sql`) kept in step in the
//! transaction that changes them: [`record_issue`] when an invoice (ordinary or
//! corrective) is issued, and [`record_payment`] when a payment is recorded or deleted. So
//! a dashboard reads a few hundred rows per company however many invoices it has: per
//! currency and UTC day of issue the revenue and the counts by kind and payment state, per
//! customer and currency the revenue, the number of invoices and the first ordinary one,
//! and unpaid invoices per due day (overdue is the days before today plus a live count of
//! today's). Drafts stay a live count over an index. [`rebuild`] recomputes a company's
//! rollups from its invoices.
//!
//! An issue writes three rollup rows (its day, its customer and, when unpaid with a due
//! date, its due day), each a row it would write anyway: the counts live in the day's row
//! and the first invoice in the customer's, rather than in rows of their own, so issuing
//! writes two rows, two index entries and two statements fewer.
//!
//! `SUM` of a `BIGINT` is `NUMERIC` on PostgreSQL, which the `Any` driver
//! cannot carry: every sum is cast back to `BIGINT`.

use sqlx::AnyConnection;

use crate::{batch::Batch, db::Writing};

/// Microseconds in a day: the rollups bucket `issued_at` by `issued_at / DAY` (UTC days).
pub const DAY: i64 = 86_400_000_000;

/// The UTC day of a boundary, when the boundary is a whole day (month starts are).
fn whole_day(micros: i64) -> Option<i64> {
    (micros % DAY == 0).then_some(micros / DAY)
}

/// Net revenue (tax lines excluded) of issued invoices, corrective ones
/// included (negative), per currency, issued in `[from, to)` when given.
///
/// Whole-day bounds (or none) read the daily rollup; other bounds scan the invoices.
pub async fn revenue_by_currency(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    from: Option<i64>,
    to: Option<i64>,
) -> sqlx::Result<Vec<(String, i64)>> {
    let days = (from.map(whole_day), to.map(whole_day));
    if let (None | Some(Some(_)), None | Some(Some(_))) = days {
        return sqlx::query_as(
            "SELECT currency_code, CAST(SUM(net_total) AS BIGINT) FROM dashboard_daily_revenue \
             WHERE company_id = $1 AND ($2 IS NULL OR day >= $2) AND ($3 IS NULL OR day < $3) \
             GROUP BY currency_code ORDER BY currency_code",
        )
        .bind(company_id)
        .bind(days.0.flatten())
        .bind(days.1.flatten())
        .fetch_all(conn)
        .await;
    }
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
    company_id: &crate::CompanyId,
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
/// (`bounds[i]..bounds[i+1]`), in one scan of the window: of the daily rollup when every
/// boundary is a whole UTC day (month starts are), else of the invoices.
pub async fn monthly_revenue(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    currency: &str,
    bounds: &[i64],
) -> sqlx::Result<Vec<i64>> {
    use sqlx::Row;
    let months = bounds.len().saturating_sub(1);
    if months == 0 {
        return Ok(Vec::new());
    }
    let days: Option<Vec<i64>> = bounds.iter().map(|b| whole_day(*b)).collect();
    let (table, column, filter, bounds) = match days {
        Some(days) => ("dashboard_daily_revenue", "day", "", days),
        None => (
            "invoices",
            "issued_at",
            " AND status = 'issued'",
            bounds.to_vec(),
        ),
    };
    let columns: Vec<String> = (0..months)
        .map(|i| {
            format!(
                "CAST(COALESCE(SUM(CASE WHEN {column} >= ${} AND {column} < ${} THEN net_total ELSE 0 END), 0) AS BIGINT)",
                i + 3,
                i + 4
            )
        })
        .collect();
    let sql = format!(
        "SELECT {} FROM {table} WHERE company_id = $1{filter} AND currency_code = $2 \
         AND {column} >= ${} AND {column} < ${}",
        columns.join(", "),
        3,
        months + 3
    );
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(company_id)
        .bind(currency);
    for b in bounds {
        q = q.bind(b);
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

/// The best `limit` customers by net revenue in `currency` (invoice counts include
/// corrective invoices), with their current names.
pub async fn top_customers(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    currency: &str,
    limit: i64,
) -> sqlx::Result<Vec<TopCustomerRow>> {
    sqlx::query_as::<_, TopCustomerRow>(
        "SELECT r.recipient_id AS entity_id, e.name AS name, r.net_total AS revenue, \
         r.invoice_count AS invoice_count FROM dashboard_customer_revenue r \
         JOIN entities e ON e.id = r.recipient_id \
         WHERE r.company_id = $1 AND r.currency_code = $2 \
         ORDER BY revenue DESC, entity_id LIMIT CAST($3 AS BIGINT)",
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
    company_id: &crate::CompanyId,
    from: i64,
    to: i64,
) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN first_issued >= $2 AND first_issued < $3 THEN 1 ELSE 0 END), 0) AS BIGINT) \
         FROM (SELECT MIN(first_issued) AS first_issued FROM dashboard_customer_revenue \
         WHERE company_id = $1 AND first_issued IS NOT NULL GROUP BY recipient_id) AS firsts",
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
    /// Issued ordinary invoices by payment status (these four add up to `issued`).
    pub unpaid: i64,
    pub paid: i64,
    pub partially_paid: i64,
    pub overdue: i64,
    pub corrected: i64,
    pub corrective: i64,
}

/// Counts of invoices by status; `now` decides what is overdue.
///
/// Drafts are counted over `invoices_company_status`; overdue invoices are those of
/// `dashboard_unpaid_due` due before today plus today's counted over the partial index
/// `invoices_unpaid_due` (its condition is repeated word for word so both engines use
/// it); the rest is summed over the company's days in `dashboard_daily_revenue`.
pub async fn invoice_counts(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    now: i64,
) -> sqlx::Result<CountsRow> {
    let draft: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM invoices WHERE company_id = $1 AND status = 'draft'",
    )
    .bind(company_id)
    .fetch_one(&mut *conn)
    .await?;
    let today = now.div_euclid(DAY);
    let before_today: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(invoices), 0) AS BIGINT) FROM dashboard_unpaid_due \
         WHERE company_id = $1 AND day < $2",
    )
    .bind(company_id)
    .bind(today)
    .fetch_one(&mut *conn)
    .await?;
    let due_today: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM invoices WHERE company_id = $1 AND status = 'issued' AND series = 'invoice' \
         AND paid_minor < total AND due_date IS NOT NULL AND due_date >= $2 AND due_date < $3",
    )
    .bind(company_id)
    .bind(today * DAY)
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    let overdue = before_today + due_today;
    // Partly paid invoices past their due date are `overdue`, not `partially_paid`: counted
    // live over the partial index `invoices_partly_paid_due` (its condition repeated word
    // for word), as partly paid invoices are few.
    let partly_paid_overdue: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM invoices WHERE company_id = $1 AND status = 'issued' AND series = 'invoice' \
         AND paid_minor > 0 AND paid_minor < total AND due_date IS NOT NULL AND due_date < $2",
    )
    .bind(company_id)
    .bind(now)
    .fetch_one(&mut *conn)
    .await?;
    let (issued, paid, partly_paid, corrected, corrective): (i64, i64, i64, i64, i64) =
        sqlx::query_as(
            "SELECT CAST(COALESCE(SUM(issued), 0) AS BIGINT), CAST(COALESCE(SUM(paid), 0) AS BIGINT), \
             CAST(COALESCE(SUM(partially_paid), 0) AS BIGINT), CAST(COALESCE(SUM(corrected), 0) AS BIGINT), \
             CAST(COALESCE(SUM(corrective), 0) AS BIGINT) FROM dashboard_daily_revenue WHERE company_id = $1",
        )
        .bind(company_id)
        .fetch_one(conn)
        .await?;
    let partially_paid = partly_paid - partly_paid_overdue;
    let unpaid = (issued - paid - partially_paid - overdue).max(0);
    Ok(CountsRow {
        draft,
        issued,
        unpaid,
        paid,
        partially_paid,
        overdue,
        corrected,
        corrective,
    })
}

/// Payment state of an ordinary invoice as the counts see it: (paid, partially paid).
fn payment_state(total: i64, paid_minor: i64) -> (i64, i64) {
    (
        i64::from(paid_minor >= total),
        i64::from(paid_minor > 0 && paid_minor < total),
    )
}

/// Adds `invoices` (1 or -1) to the unpaid invoices due on the UTC day of `due_date`.
async fn add_unpaid_due(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    due_date: i64,
    invoices: i64,
) -> sqlx::Result<()> {
    let mut batch = Batch::new();
    push_unpaid_due(&mut batch, company_id, due_date, invoices);
    batch.execute(conn).await
}

fn push_unpaid_due(batch: &mut Batch, company_id: &crate::CompanyId, due_date: i64, invoices: i64) {
    batch
        .push(
            "INSERT INTO dashboard_unpaid_due (company_id, day, invoices) VALUES ($1, $2, $3) \
             ON CONFLICT (company_id, day) DO UPDATE SET invoices = dashboard_unpaid_due.invoices + excluded.invoices",
        )
        .bind(company_id)
        .bind(due_date / DAY)
        .bind(invoices);
}

/// Changes to a company's counts; each field is added to the stored one.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct CountsDelta {
    issued: i64,
    corrective: i64,
    paid: i64,
    partially_paid: i64,
    corrected: i64,
}

/// Adds `net_total` and the counts `d` to the row of a currency and UTC day of issue,
/// creating it on first use.
fn push_day(
    batch: &mut Batch,
    company_id: &crate::CompanyId,
    currency_code: &str,
    day: i64,
    net_total: i64,
    d: CountsDelta,
) {
    batch
        .push(
            "INSERT INTO dashboard_daily_revenue (company_id, currency_code, day, net_total, \
             issued, corrective, paid, partially_paid, corrected) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (company_id, currency_code, day) \
             DO UPDATE SET net_total = dashboard_daily_revenue.net_total + excluded.net_total, \
             issued = dashboard_daily_revenue.issued + excluded.issued, \
             corrective = dashboard_daily_revenue.corrective + excluded.corrective, \
             paid = dashboard_daily_revenue.paid + excluded.paid, \
             partially_paid = dashboard_daily_revenue.partially_paid + excluded.partially_paid, \
             corrected = dashboard_daily_revenue.corrected + excluded.corrected",
        )
        .bind(company_id)
        .bind(currency_code)
        .bind(day)
        .bind(net_total)
        .bind(d.issued)
        .bind(d.corrective)
        .bind(d.paid)
        .bind(d.partially_paid)
        .bind(d.corrected);
}

/// Adds a just-issued invoice (ordinary or corrective) to the rollups. Call it in the
/// issuing transaction, after the row is stored as issued.
pub async fn record_issue(
    conn: &mut AnyConnection,
    row: &crate::invoices::InvoiceRow,
) -> sqlx::Result<()> {
    let mut batch = Batch::new();
    push_issue(conn, &mut batch, row).await?;
    batch.execute(conn).await
}

/// Adds the rollup writes of a just-issued invoice to `batch` (what [`record_issue`]
/// runs). The reads it makes on `tx` (a corrective invoice's only) do not depend on the
/// invoice row itself, so the batch may carry the row's own update too
/// ([`crate::invoices::store_issued`]).
pub async fn push_issue(
    tx: &mut impl Writing,
    batch: &mut Batch,
    row: &crate::invoices::InvoiceRow,
) -> sqlx::Result<()> {
    let Some(issued_at) = row
        .issued_at
        .filter(|_| row.status == crate::kinds::InvoiceStatus::Issued)
    else {
        return Ok(());
    };
    if row.series == crate::kinds::Series::Invoice {
        push_issued(batch, &[row]);
        return Ok(());
    }
    // An ordinary invoice counts as corrected from its first issued corrective invoice.
    let mut corrected = 0;
    if let Some(original) = &row.corrected_invoice_id {
        let conn = tx.conn().await?;
        let issued_original: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM invoices WHERE id = $1 AND status = 'issued' AND series = 'invoice'",
        )
        .bind(original)
        .fetch_one(&mut *conn)
        .await?;
        let earlier: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM invoices WHERE corrected_invoice_id = $1 AND status = 'issued' AND id <> $2",
        )
        .bind(original)
        .bind(&row.id)
        .fetch_one(&mut *conn)
        .await?;
        corrected = i64::from(issued_original > 0 && earlier == 0);
    }
    let counts = CountsDelta {
        corrective: 1,
        corrected,
        ..CountsDelta::default()
    };
    let currency = row.currency_code.as_str();
    push_day(
        batch,
        &row.company_id,
        currency,
        issued_at / DAY,
        row.net_total,
        counts,
    );
    // A corrective invoice's NULL `first_issued` keeps the customer's stored one.
    push_customer(
        batch,
        &row.company_id,
        currency,
        row.recipient_id.as_str(),
        row.net_total,
        1,
        None,
    );
    Ok(())
}

/// Adds the rollup writes of just-issued ordinary invoices of one company (`rows`, others
/// are skipped) to `batch`: one write per rollup row, their sums, since PostgreSQL refuses
/// a statement that upserts one row twice (a company's issues made together,
/// [`crate::invoices::store_issued`]).
pub fn push_issued(batch: &mut Batch, rows: &[&crate::invoices::InvoiceRow]) {
    // (currency, day) -> net total and counts; (currency, customer) -> net total, count and
    // the earliest issue; due day -> unpaid invoices. A handful of invoices: searched in turn.
    let mut days: Vec<((&str, i64), i64, CountsDelta)> = Vec::new();
    let mut customers: Vec<((&str, &str), i64, i64, i64)> = Vec::new();
    let mut due: Vec<(i64, i64)> = Vec::new();
    let mut company = None;
    for row in rows {
        let Some(issued_at) = row.issued_at.filter(|_| {
            row.status == crate::kinds::InvoiceStatus::Issued
                && row.series == crate::kinds::Series::Invoice
        }) else {
            continue;
        };
        company.get_or_insert(&row.company_id);
        let currency = row.currency_code.as_str();
        let (paid, partially_paid) = payment_state(row.total, row.paid_minor);
        let key = (currency, issued_at / DAY);
        match days.iter_mut().find(|d| d.0 == key) {
            Some(d) => {
                d.1 += row.net_total;
                d.2.issued += 1;
                d.2.paid += paid;
                d.2.partially_paid += partially_paid;
            }
            None => days.push((
                key,
                row.net_total,
                CountsDelta {
                    issued: 1,
                    paid,
                    partially_paid,
                    ..CountsDelta::default()
                },
            )),
        }
        let key = (currency, row.recipient_id.as_str());
        match customers.iter_mut().find(|c| c.0 == key) {
            Some(c) => {
                c.1 += row.net_total;
                c.2 += 1;
                c.3 = c.3.min(issued_at);
            }
            None => customers.push((key, row.net_total, 1, issued_at)),
        }
        if let Some(due_date) = row.due_date
            && row.paid_minor < row.total
        {
            let day = due_date / DAY;
            match due.iter_mut().find(|d| d.0 == day) {
                Some(d) => d.1 += 1,
                None => due.push((day, 1)),
            }
        }
    }
    let Some(company_id) = company else {
        return;
    };
    for ((currency, day), net_total, counts) in days {
        push_day(batch, company_id, currency, day, net_total, counts);
    }
    // The customer's revenue and count, and when they were first issued an ordinary
    // invoice: the earliest of the stored and these.
    for ((currency, recipient), net_total, count, first) in customers {
        push_customer(
            batch,
            company_id,
            currency,
            recipient,
            net_total,
            count,
            Some(first),
        );
    }
    for (day, invoices) in due {
        push_unpaid_due(batch, company_id, day * DAY, invoices);
    }
}

/// Adds `net_total` and `count` invoices to a customer's revenue in a currency, and
/// `first_issued` (an ordinary invoice's issue) if it is earlier than the stored one.
fn push_customer(
    batch: &mut Batch,
    company_id: &crate::CompanyId,
    currency_code: &str,
    recipient_id: &str,
    net_total: i64,
    count: i64,
    first_issued: Option<i64>,
) {
    batch
        .push(
            "INSERT INTO dashboard_customer_revenue (company_id, currency_code, recipient_id, net_total, \
             invoice_count, first_issued) VALUES ($1, $2, $3, $4, $5, $6) \
             ON CONFLICT (company_id, currency_code, recipient_id) \
             DO UPDATE SET net_total = dashboard_customer_revenue.net_total + excluded.net_total, \
             invoice_count = dashboard_customer_revenue.invoice_count + excluded.invoice_count, \
             first_issued = CASE WHEN dashboard_customer_revenue.first_issued IS NULL \
             OR excluded.first_issued < dashboard_customer_revenue.first_issued \
             THEN COALESCE(excluded.first_issued, dashboard_customer_revenue.first_issued) \
             ELSE dashboard_customer_revenue.first_issued END",
        )
        .bind(company_id)
        .bind(currency_code)
        .bind(recipient_id)
        .bind(net_total)
        .bind(count)
        .bind(first_issued);
}

/// Moves an invoice between the paid / partially paid counts after its `paid_minor`
/// changed by `delta` (positive for a recorded payment, negative for a deleted one). Call
/// it in the same transaction, after the invoice is updated.
pub async fn record_payment(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    invoice_id: &str,
    delta: i64,
) -> sqlx::Result<()> {
    let invoice: Option<(i64, i64, Option<i64>, String, i64)> = sqlx::query_as(
        // By the primary key alone (see `crate::by_id`).
        "SELECT total, paid_minor, due_date, currency_code, issued_at FROM invoices WHERE id = $2 \
         AND (company_id = $1 AND status = 'issued' AND series = 'invoice') IS TRUE",
    )
    .bind(company_id)
    .bind(invoice_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((total, paid_minor, due_date, currency_code, issued_at)) = invoice else {
        return Ok(());
    };
    if let Some(due_date) = due_date {
        let unpaid = |paid: i64| i64::from(paid < total);
        let change = unpaid(paid_minor) - unpaid(paid_minor - delta);
        if change != 0 {
            add_unpaid_due(conn, company_id, due_date, change).await?;
        }
    }
    let before = payment_state(total, paid_minor - delta);
    let after = payment_state(total, paid_minor);
    let counts = CountsDelta {
        paid: after.0 - before.0,
        partially_paid: after.1 - before.1,
        ..CountsDelta::default()
    };
    if counts == CountsDelta::default() {
        return Ok(());
    }
    // On the row of the invoice's day of issue, which its issue wrote.
    let mut batch = Batch::new();
    push_day(
        &mut batch,
        company_id,
        &currency_code,
        issued_at / DAY,
        0,
        counts,
    );
    batch.execute(conn).await
}

/// A company's (`$1`) rows of `dashboard_daily_revenue` from its invoices. The counts are
/// only ever read summed over all of a company's days, so a corrected invoice counts on
/// its own day here and on its first corrective invoice's day when issued.
const ROLLUP_DAYS: &str = "INSERT INTO dashboard_daily_revenue (company_id, currency_code, day, net_total, \
     issued, corrective, paid, partially_paid, corrected) \
     SELECT company_id, currency_code, issued_at / 86400000000, SUM(net_total), \
     SUM(CASE WHEN series = 'invoice' THEN 1 ELSE 0 END), \
     SUM(CASE WHEN series = 'corrective' THEN 1 ELSE 0 END), \
     SUM(CASE WHEN series = 'invoice' AND paid_minor >= total THEN 1 ELSE 0 END), \
     SUM(CASE WHEN series = 'invoice' AND paid_minor > 0 AND paid_minor < total THEN 1 ELSE 0 END), \
     SUM(CASE WHEN series = 'invoice' AND EXISTS (SELECT 1 FROM invoices c \
         WHERE c.corrected_invoice_id = i.id AND c.status = 'issued') THEN 1 ELSE 0 END) \
     FROM invoices i WHERE company_id = $1 AND status = 'issued' \
     GROUP BY company_id, currency_code, issued_at / 86400000000";

/// A company's rows of `dashboard_customer_revenue` from its invoices.
const ROLLUP_CUSTOMERS: &str = "INSERT INTO dashboard_customer_revenue (company_id, currency_code, recipient_id, \
     net_total, invoice_count, first_issued) \
     SELECT company_id, currency_code, recipient_id, SUM(net_total), COUNT(*), \
     MIN(CASE WHEN series = 'invoice' THEN issued_at END) \
     FROM invoices WHERE company_id = $1 AND status = 'issued' \
     GROUP BY company_id, currency_code, recipient_id";

/// A company's rows of `dashboard_unpaid_due` from its invoices.
const ROLLUP_UNPAID_DUE: &str = "INSERT INTO dashboard_unpaid_due (company_id, day, invoices) \
     SELECT company_id, due_date / 86400000000, COUNT(*) \
     FROM invoices WHERE company_id = $1 AND status = 'issued' AND series = 'invoice' \
     AND paid_minor < total AND due_date IS NOT NULL \
     GROUP BY company_id, due_date / 86400000000";

/// Recomputes a company's rollups from its invoices (what the migration does for every
/// company): for data written without going through [`record_issue`], such as the
/// benchmark's bulk seeding, or to repair them.
pub async fn rebuild(conn: &mut AnyConnection, company_id: &crate::CompanyId) -> sqlx::Result<()> {
    for table in [
        "dashboard_daily_revenue",
        "dashboard_customer_revenue",
        "dashboard_unpaid_due",
    ] {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DELETE FROM {table} WHERE company_id = $1"
        )))
        .bind(company_id)
        .execute(&mut *conn)
        .await?;
    }
    let statements = [ROLLUP_DAYS, ROLLUP_CUSTOMERS, ROLLUP_UNPAID_DUE];
    for sql in statements {
        sqlx::query(sql)
            .bind(company_id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The prepaid points balance and the currency of the latest top-up.
pub async fn points(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
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
    company_id: &crate::CompanyId,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT subscription_tier FROM companies WHERE id = $1")
        .bind(company_id)
        .fetch_one(conn)
        .await
}
