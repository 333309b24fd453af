//! Invoices: the list with filters, one invoice, its PDF, issuing a draft.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, HeaderValue, Method, header},
    response::{IntoResponse, Response},
};
use maud::{Markup, html};
use serde_json::Value;

use super::{Ctx, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    json_view::money,
    session::{Session, SignedIn},
};

/// The filters of the list, as the form sends them.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Filters {
    #[serde(default)]
    status: String,
    #[serde(default)]
    series: String,
    /// `YYYY-MM-DD`, inclusive.
    #[serde(default)]
    from: String,
    /// `YYYY-MM-DD`, inclusive.
    #[serde(default)]
    to: String,
    #[serde(default)]
    cursor: String,
}

impl Filters {
    /// The API query for these filters, or what is wrong with them.
    fn api_query(&self) -> Result<String, String> {
        let mut q = vec!["limit=50".to_owned()];
        if ["draft", "issued"].contains(&self.status.as_str()) {
            q.push(format!("status={}", self.status));
        }
        if ["invoice", "corrective"].contains(&self.series.as_str()) {
            q.push(format!("series={}", self.series));
        }
        for (field, param, shift) in [(&self.from, "issued_from", 0), (&self.to, "issued_to", 1)] {
            if field.is_empty() {
                continue;
            }
            let day = chrono::NaiveDate::parse_from_str(field, "%Y-%m-%d")
                .map_err(|_| format!("`{field}` is not a date (YYYY-MM-DD)."))?;
            // `to` is inclusive here and exclusive in the API: the next midnight.
            let day = day + chrono::Days::new(shift);
            q.push(format!("{param}={}", enc(&format!("{day}T00:00:00Z"))));
        }
        if !self.cursor.is_empty() {
            q.push(format!("cursor={}", enc(&self.cursor)));
        }
        Ok(q.join("&"))
    }

    /// This page's query string with another cursor.
    fn with_cursor(&self, cursor: &str) -> String {
        format!(
            "status={}&series={}&from={}&to={}&cursor={}",
            enc(&self.status),
            enc(&self.series),
            enc(&self.from),
            enc(&self.to),
            enc(cursor)
        )
    }
}

/// Names of the entities `ids`, read once each.
pub(super) async fn names(
    state: &WebState,
    session: &Session,
    ids: &[&str],
) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for id in ids {
        if out.contains_key(*id) {
            continue;
        }
        if let Ok(e) = client::get_json(state, session, &format!("/v1/entities/{}", enc(id))).await
        {
            out.insert((*id).to_owned(), s(&e, "name").to_owned());
        }
    }
    out
}

fn label(inv: &Value) -> String {
    match inv.get("reference").and_then(Value::as_str) {
        Some(r) => r.to_owned(),
        None => match inv.get("order_number").and_then(Value::as_i64) {
            Some(n) => format!("Draft #{n}"),
            None => "Draft".to_owned(),
        },
    }
}

fn status_badge(inv: &Value) -> Markup {
    let status = s(inv, "status");
    let payment = s(inv, "payment_status");
    html! {
        span class=(format!("status {status}")) { (status) }
        @if !payment.is_empty() { " " span class=(format!("status {payment}")) { (payment.replace('_', " ")) } }
    }
}

/// `GET /invoices`.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(f): Query<Filters>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "invoices").await;
    let query = match f.api_query() {
        Ok(q) => q,
        Err(e) => return redirect_with(&state, "/invoices", "error", &e),
    };
    let page = match client::get_json(&state, &signed.0, &format!("/v1/invoices?{query}")).await {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let invoices = page
        .get("data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let ids: Vec<&str> = invoices.iter().map(|i| s(i, "recipient_id")).collect();
    let names = names(&state, &signed.0, &ids).await;
    let next = page.get("next_cursor").and_then(Value::as_str);
    let option = |value: &str, current: &str, text: &str| {
        html! {
            option value=(value) selected[value == current] { (text) }
        }
    };
    layout(
        &ctx,
        "Invoices",
        html! {
            div.actions { a.button.primary href="/invoices/new" { "New invoice" } }
            form.card.filters method="get" action="/invoices" {
                div { label for="status" { "Status" }
                    select id="status" name="status" {
                        (option("", &f.status, "Any")) (option("draft", &f.status, "Draft")) (option("issued", &f.status, "Issued"))
                    }
                }
                div { label for="series" { "Series" }
                    select id="series" name="series" {
                        (option("", &f.series, "Any")) (option("invoice", &f.series, "Invoices")) (option("corrective", &f.series, "Corrective invoices"))
                    }
                }
                div { label for="from" { "Issued from" } input id="from" name="from" type="date" value=(f.from); }
                div { label for="to" { "Issued until" } input id="to" name="to" type="date" value=(f.to); }
                button type="submit" { "Filter" }
            }
            @if invoices.is_empty() {
                p.empty { "No invoice matches." }
            } @else {
                div.scroll { table.invoices {
                    thead { tr {
                        th scope="col" { "Invoice" } th scope="col" { "Customer" } th scope="col" { "Status" }
                        th.wide-only scope="col" { "Issued" } th.num scope="col" { "Total" }
                    } }
                    tbody {
                        @for inv in &invoices {
                            tr {
                                td { a href=(format!("/invoices/{}", enc(s(inv, "id")))) { (label(inv)) } }
                                td { (names.get(s(inv, "recipient_id")).map_or("", String::as_str)) }
                                td { (status_badge(inv)) }
                                td.wide-only { @if inv["issued_at"].is_null() { span.muted { "—" } } @else { (when(&inv["issued_at"])) } }
                                td.num { (money(inv["total"].as_i64().unwrap_or(0), s(inv, "currency_code"))) }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("/invoices?{}", f.with_cursor(c))) { "Next page" } }
            }
        },
    )
}

/// `GET /invoices/{id}`.
pub async fn detail(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "invoices").await;
    let inv = match client::get_json(&state, &signed.0, &format!("/v1/invoices/{}", enc(&id))).await
    {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let recipient_id = s(&inv, "recipient_id");
    let names = names(&state, &signed.0, &[recipient_id]).await;
    let currency = s(&inv, "currency_code");
    let m = |key: &str| money(inv[key].as_i64().unwrap_or(0), currency);
    let lines = inv["lines"].as_array().map_or(0, Vec::len) as i64;
    let title = format!("Invoice {}", label(&inv));
    let actions = super::invoice_actions::sections(&ctx, &signed.0, &inv).await;
    layout(
        &ctx,
        &title,
        html! {
            p { (status_badge(&inv)) }
            dl.fields.summary {
                dt { "Customer" } dd { a href=(format!("/entities/{}", enc(recipient_id))) { (names.get(recipient_id).map_or(recipient_id, String::as_str)) } }
                dt { "Currency" } dd { (currency) }
                dt { "Issued" } dd { @if inv["issued_at"].is_null() { "Not yet (draft)" } @else { (when(&inv["issued_at"])) } }
                @if !inv["due_date"].is_null() { dt { "Due" } dd { (when(&inv["due_date"])) } }
                @for (key, label) in [("buyer_reference", "Buyer reference"), ("order_reference", "Purchase order"), ("delivery_date", "Delivered"), ("period_start", "Period from"), ("period_end", "Period until"), ("notes", "Notes")] {
                    @if !s(&inv, key).is_empty() { dt { (label) } dd { (s(&inv, key)) } }
                }
                @if let Some(c) = inv.get("corrected_invoice_id").and_then(Value::as_str) {
                    dt { "Corrects" } dd { a href=(format!("/invoices/{}", enc(c))) { "the corrected invoice" } }
                }
            }
            h2 { "Lines (" (inv["lineCount"].as_i64().unwrap_or(lines)) ")" }
            (super::document_form::lines_table(&inv, currency))
            dl.fields.totals {
                dt { "Net" } dd.num { (m("net_total")) }
                dt { "Taxes" } dd.num { (m("tax_total")) }
                @if inv["withholding_total"].as_i64().unwrap_or(0) != 0 { dt { "Withholding" } dd.num { (m("withholding_total")) } }
                dt { strong { "Total" } } dd.num { strong { (m("total")) } }
                @if inv["paid_minor"].as_i64().unwrap_or(0) != 0 { dt { "Paid" } dd.num { (m("paid_minor")) } }
            }
            (actions)
        },
    )
}

/// `GET /invoices/{id}/pdf`: the API's PDF, as a download.
pub async fn pdf(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let path = format!("/v1/invoices/{}/pdf", enc(&id));
    download_pdf(&state, &signed.0, &path, &format!("invoice-{id}.pdf")).await
}

/// The PDF the API answers at `path`, as a download named `name`; an error page
/// with the API's words when it has none.
pub(super) async fn download_pdf(
    state: &WebState,
    session: &Session,
    path: &str,
    name: &str,
) -> Response {
    let answer = match client::call(state, session, Method::GET, path, None).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return super::error_page(answer.status, "No PDF", &answer.message());
    }
    let mut resp = answer.bytes.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/pdf"),
    );
    h.insert(
        header::CONTENT_DISPOSITION,
        api::views::content_disposition(api::views::Disposition::Attachment, name),
    );
    resp
}
