//! `GET /v1/dashboard`: aggregated statistics, never summed across currencies.

use axum::{Json, extract::State};
use chrono::{DateTime, Datelike, TimeZone, Utc};
use serde::Serialize;

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::ApiResult,
};

/// An amount in one currency.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CurrencyAmount {
    pub currency: String,
    pub amount_minor: i64,
}

/// Customer counts.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CustomerStats {
    /// Distinct entities ever issued an invoice.
    pub total: i64,
    /// Customers whose first issued invoice is in the current UTC month.
    pub new_this_month: i64,
}

/// Invoice counts by status.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct InvoiceCounts {
    pub draft: i64,
    /// Issued ordinary invoices (corrective ones are counted in `corrective`).
    pub issued: i64,
    /// Issued ordinary invoices by `payment_status`; `unpaid`, `partially_paid`, `paid`
    /// and `overdue` add up to `issued`. No payment yet, not past the due date.
    pub unpaid: i64,
    pub paid: i64,
    /// Partly paid, not past the due date.
    pub partially_paid: i64,
    /// Not fully paid and past the due date (UTC, as of the request).
    pub overdue: i64,
    /// Issued invoices with at least one issued corrective invoice.
    pub corrected: i64,
    /// Issued corrective invoices.
    pub corrective: i64,
}

/// Revenue of one month in the primary currency.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct MonthlyRevenue {
    /// `YYYY-MM`.
    pub month: String,
    pub amount_minor: i64,
}

/// A top customer by issued revenue in the primary currency.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TopCustomer {
    pub entity_id: String,
    pub name: String,
    pub revenue_minor: i64,
    pub invoice_count: i64,
}

/// The dashboard.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Dashboard {
    /// Company default currency; the currency of single-series views.
    pub primary_currency: String,
    pub customer_stats: CustomerStats,
    pub invoice_counts: InvoiceCounts,
    /// Net billed amount (tax lines excluded) of issued invoices, corrective ones
    /// included, all time, by currency.
    pub revenue_total: Vec<CurrencyAmount>,
    /// The same for the current UTC calendar month.
    pub revenue_this_month: Vec<CurrencyAmount>,
    /// Net amount of recorded expenses, all time, by currency.
    pub expenses_total: Vec<CurrencyAmount>,
    pub expenses_this_month: Vec<CurrencyAmount>,
    /// Trailing 12 months including the current one, oldest first, empty months present.
    pub monthly_revenue: Vec<MonthlyRevenue>,
    /// Top 5 customers by issued revenue in the primary currency.
    pub top_customers: Vec<TopCustomer>,
    /// Prepaid points; the unit is points, not a currency.
    pub points_balance_minor: i64,
    /// Currency the points were bought with (one point per minor unit).
    pub points_currency: String,
    pub subscription_tier: Option<String>,
}

/// Start of the UTC month `offset` months after the month of `t`.
fn month_start(t: DateTime<Utc>, offset: i32) -> DateTime<Utc> {
    let index = t.year() * 12 + t.month0() as i32 + offset;
    let (year, month0) = (index.div_euclid(12), index.rem_euclid(12) as u32);
    Utc.with_ymd_and_hms(year, month0 + 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(t)
}

fn amounts(rows: Vec<(String, i64)>) -> Vec<CurrencyAmount> {
    rows.into_iter()
        .map(|(currency, amount_minor)| CurrencyAmount {
            currency,
            amount_minor,
        })
        .collect()
}

/// The company's dashboard.
#[utoipa::path(get, path = "/v1/dashboard", tag = "dashboard",
    responses((status = 200, body = Dashboard), crate::openapi::ReadErrors))]
pub async fn get_dashboard(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
) -> ApiResult<Json<Dashboard>> {
    let company = super::invoices::company(&mut db, &caller.company_id).await?;
    let primary = company
        .currency_code
        .clone()
        .unwrap_or_else(|| "EUR".into());
    let now = state.now();
    let this_month = month_start(now, 0).timestamp_micros();
    let next_month = month_start(now, 1).timestamp_micros();
    let bounds: Vec<i64> = (-11..=1)
        .map(|o| month_start(now, o).timestamp_micros())
        .collect();
    let c = &caller.company_id;

    let revenue_total = store::dashboard::revenue_by_currency(&mut db, c, None, None).await?;
    let revenue_month =
        store::dashboard::revenue_by_currency(&mut db, c, Some(this_month), Some(next_month))
            .await?;
    let expenses_total = store::dashboard::expenses_by_currency(&mut db, c, None, None).await?;
    let expenses_month =
        store::dashboard::expenses_by_currency(&mut db, c, Some(this_month), Some(next_month))
            .await?;
    let monthly = store::dashboard::monthly_revenue(&mut db, c, &primary, &bounds).await?;
    let top = store::dashboard::top_customers(&mut db, c, &primary, 5).await?;
    let (customers, new_customers) =
        store::dashboard::customer_stats(&mut db, c, this_month, next_month).await?;
    let counts = store::dashboard::invoice_counts(&mut db, c, now.timestamp_micros()).await?;
    let (points, points_currency) = store::dashboard::points(&mut db, c).await?;
    let tier = store::dashboard::subscription_tier(&mut db, c).await?;

    Ok(Json(Dashboard {
        customer_stats: CustomerStats {
            total: customers,
            new_this_month: new_customers,
        },
        invoice_counts: InvoiceCounts {
            draft: counts.draft,
            issued: counts.issued,
            unpaid: counts.unpaid,
            paid: counts.paid,
            partially_paid: counts.partially_paid,
            overdue: counts.overdue,
            corrected: counts.corrected,
            corrective: counts.corrective,
        },
        revenue_total: amounts(revenue_total),
        revenue_this_month: amounts(revenue_month),
        expenses_total: amounts(expenses_total),
        expenses_this_month: amounts(expenses_month),
        monthly_revenue: monthly
            .into_iter()
            .enumerate()
            .map(|(i, amount_minor)| MonthlyRevenue {
                month: month_start(now, i as i32 - 11).format("%Y-%m").to_string(),
                amount_minor,
            })
            .collect(),
        top_customers: top
            .into_iter()
            .map(|t| TopCustomer {
                entity_id: t.entity_id,
                name: t.name,
                revenue_minor: t.revenue,
                invoice_count: t.invoice_count,
            })
            .collect(),
        points_balance_minor: points,
        points_currency: points_currency.unwrap_or_else(|| primary.clone()),
        subscription_tier: tier,
        primary_currency: primary,
    }))
}
