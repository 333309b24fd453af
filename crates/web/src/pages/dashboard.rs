//! The dashboard: figures per currency and the monthly revenue chart.

use axum::{extract::State, http::HeaderMap, response::Response};
use maud::{Markup, html};
use serde_json::Value;

use super::{Ctx, layout, s};
use crate::{WebState, client, json_view::money, session::SignedIn};

fn amounts(list: &Value) -> Markup {
    let items = list.as_array().cloned().unwrap_or_default();
    html! {
        @if items.is_empty() { span.muted { "none" } }
        @for (i, a) in items.iter().enumerate() {
            @if i > 0 { br; }
            (money(a["amount_minor"].as_i64().unwrap_or(0), s(a, "currency")))
        }
    }
}

/// Twelve bars, drawn as SVG on the server (no script, no external library).
fn chart(months: &[Value], currency: &str) -> Markup {
    let values: Vec<i64> = months
        .iter()
        .map(|m| m["amount_minor"].as_i64().unwrap_or(0))
        .collect();
    let max_pos = values.iter().copied().filter(|v| *v > 0).max().unwrap_or(0);
    let max_neg = values
        .iter()
        .copied()
        .filter(|v| *v < 0)
        .map(i64::unsigned_abs)
        .max()
        .unwrap_or(0);
    let span = (max_pos as f64 + max_neg as f64).max(1.0);
    let (width, height, top, bottom) = (640.0_f64, 240.0_f64, 10.0_f64, 30.0_f64);
    let plot = height - top - bottom;
    let baseline = top + plot * (max_pos as f64 / span);
    let slot = width / months.len().max(1) as f64;
    html! {
        figure.chart {
            svg viewBox=(format!("0 0 {width} {height}")) role="img" aria-labelledby="chart-title" {
                title id="chart-title" { "Revenue per month in " (currency) ", the last 12 months" }
                line x1="0" x2=(width) y1=(baseline) y2=(baseline) stroke="#8a8f98" stroke-width="1" {}
                @for (i, m) in months.iter().enumerate() {
                    @let v = values[i];
                    @let h = plot * (v.unsigned_abs() as f64 / span);
                    @let y = if v >= 0 { baseline - h } else { baseline };
                    @let x = i as f64 * slot + slot * 0.15;
                    rect x=(format!("{x:.1}")) y=(format!("{y:.1}")) width=(format!("{:.1}", slot * 0.7)) height=(format!("{h:.1}"))
                        fill=(if v >= 0 { "#2f6fde" } else { "#c2410c" }) {
                        title { (s(m, "month")) ": " (money(v, currency)) }
                    }
                    text x=(format!("{:.1}", x + slot * 0.35)) y=(format!("{:.1}", height - 10.0)) text-anchor="middle" font-size="12" fill="#333" {
                        (month_label(s(m, "month")))
                    }
                }
            }
            figcaption { "Revenue per month in " (currency) " (corrective invoices subtract)." }
        }
        details {
            summary { "The figures as a table" }
            table {
                thead { tr { th scope="col" { "Month" } th.num scope="col" { "Revenue" } } }
                tbody { @for (i, m) in months.iter().enumerate() { tr { td { (s(m, "month")) } td.num { (money(values[i], currency)) } } } }
            }
        }
    }
}

fn month_label(ym: &str) -> &'static str {
    const NAMES: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    ym.get(5..7)
        .and_then(|m| m.parse::<usize>().ok())
        .and_then(|m| NAMES.get(m.wrapping_sub(1)).copied())
        .unwrap_or("")
}

/// `GET /dashboard`.
pub async fn page(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "dashboard").await;
    let d = match client::get_json(&state, &signed.0, "/v1/dashboard").await {
        Ok(d) => d,
        Err(resp) => return resp,
    };
    let primary = s(&d, "primary_currency").to_owned();
    let months = d["monthly_revenue"].as_array().cloned().unwrap_or_default();
    let counts = &d["invoice_counts"];
    let count = |k: &str| counts[k].as_i64().unwrap_or(0);
    let top = d["top_customers"].as_array().cloned().unwrap_or_default();
    layout(
        &ctx,
        "Dashboard",
        html! {
            div.tiles {
                section.tile { h2 { "Revenue this month" } p.figure { (amounts(&d["revenue_this_month"])) } }
                section.tile { h2 { "Revenue, all time" } p.figure { (amounts(&d["revenue_total"])) } }
                section.tile { h2 { "Expenses this month" } p.figure { (amounts(&d["expenses_this_month"])) } }
                section.tile { h2 { "Customers" } p.figure { (d["customer_stats"]["total"].as_i64().unwrap_or(0)) } p.muted { (d["customer_stats"]["new_this_month"].as_i64().unwrap_or(0)) " new this month" } }
            }
            h2 { "Monthly revenue" }
            (chart(&months, &primary))
            div.columns {
                section {
                    h2 { "Invoices" }
                    dl.fields {
                        dt { "Drafts" } dd { (count("draft")) }
                        dt { "Issued" } dd { (count("issued")) }
                        dt { "Paid" } dd { (count("paid")) }
                        dt { "Partially paid" } dd { (count("partially_paid")) }
                        dt { "Overdue" } dd { (count("overdue")) }
                        dt { "Corrected" } dd { (count("corrected")) }
                    }
                }
                section {
                    h2 { "Top customers (" (primary) ")" }
                    @if top.is_empty() { p.empty { "No invoice issued yet." } }
                    @else {
                        ol { @for c in &top { li { (s(c, "name")) ": " (money(c["revenue_minor"].as_i64().unwrap_or(0), &primary)) " (" (c["invoice_count"].as_i64().unwrap_or(0)) " invoices)" } } }
                    }
                }
                section {
                    h2 { "Account" }
                    dl.fields {
                        dt { "Points" } dd { (d["points_balance_minor"].as_i64().unwrap_or(0)) " (" (s(&d, "points_currency")) ")" }
                        dt { "Plan" } dd { (d["subscription_tier"].as_str().unwrap_or("—")) }
                    }
                }
            }
        },
    )
}
