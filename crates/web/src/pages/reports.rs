//! Reports (`/reports`): asking for a business report over a period, the
//! list with where each stands (queued, rendering, ready, failed), the PDF of
//! a ready one, deleting one. Every read and write is a `/v1/reports` call;
//! the worker renders them in the background.

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, HeaderValue, Method, header},
    response::{IntoResponse, Response},
};
use maud::html;
use serde_json::{Map, Value, json};

use super::{Ctx, after, error_page, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

/// The kinds of report: (API value, label).
pub const KINDS: &[(&str, &str)] = &[
    ("business_overview", "Business overview"),
    ("vat_summary", "VAT summary"),
    ("profit_loss", "Profit and loss"),
    ("client_revenue", "Revenue per customer"),
    ("expense_supplier", "Expenses per supplier"),
];

/// What a status means to a person.
fn status_label(status: &str) -> &str {
    match status {
        "queued" => "Waiting",
        "rendering" => "Being made",
        "ready" => "Ready",
        "failed" => "Failed",
        other => other,
    }
}

fn kind_label(kind: &str) -> &str {
    KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(kind, |(_, label)| label)
}

/// The period as a person reads it: first day to last day (the API's end is exclusive).
fn period(r: &Value) -> String {
    let day = |key: &str| {
        s(r, key)
            .get(..10)
            .and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
    };
    match (day("period_start"), day("period_end")) {
        (Some(from), Some(end)) => {
            let last = end.pred_opt().unwrap_or(end);
            format!("{from} – {last}")
        }
        _ => format!("{} – {}", s(r, "period_start"), s(r, "period_end")),
    }
}

/// The page of the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    cursor: String,
}

/// `GET /reports`: the form to ask for one, then the reports, newest first.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(lq): Query<ListQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "reports").await;
    let page = match client::list_page(&state, &signed.0, "/v1/reports?limit=50", &lq.cursor).await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let rows = page.rows;
    let next = page.next.as_deref();
    let waiting = rows
        .iter()
        .any(|r| ["queued", "rendering"].contains(&s(r, "status")));
    // This very page: while a report waits, the script fetches it again every few
    // seconds and swaps in its list (`data-refresh`); without the script, "Refresh".
    let here = if lq.cursor.is_empty() {
        "/reports".to_owned()
    } else {
        format!("/reports?cursor={}", enc(&lq.cursor))
    };
    layout(
        &ctx,
        "Reports",
        html! {
            form.card method="post" action="/reports" {
                (ctx.csrf())
                h2 { "Ask for a report" }
                label for="report_type" { "Report" }
                select id="report_type" name="report_type" required {
                    @for (value, label) in KINDS { option value=(value) { (label) } }
                }
                div.inline-form {
                    div { label for="period_start" { "From (first day)" } input id="period_start" name="period_start" type="date" required; }
                    div { label for="period_end" { "To (last day, included)" } input id="period_end" name="period_end" type="date" required; }
                }
                label for="locales" { "Languages (e.g. en, es-ES; empty: yours; one report each)" }
                input id="locales" name="locales" type="text" autocomplete="off";
                div.actions { button.primary type="submit" { "Ask for the report" } }
            }
            div id="report-list" data-refresh=[waiting.then_some(&here)] {
                @if rows.is_empty() {
                    p.empty { "No report yet." }
                } @else {
                    @if waiting {
                        p.muted role="status" { "Reports are made in the background, usually within a minute; "
                            "this list looks again every few seconds. "
                            a href=(here) { "Refresh" } }
                    }
                    div.scroll { table.reports {
                        thead { tr { th scope="col" { "Report" } th scope="col" { "Period" } th.wide-only scope="col" { "Language" } th scope="col" { "Status" } th.wide-only scope="col" { "Asked for" } th scope="col" { span.visually-hidden { "Actions" } } } }
                        tbody {
                            @for r in &rows {
                                tr {
                                    td { (kind_label(s(r, "report_type"))) }
                                    td { (period(r)) }
                                    td.wide-only { (s(r, "locale")) }
                                    td { span class=(format!("status {}", s(r, "status"))) { (status_label(s(r, "status"))) }
                                        @if !s(r, "error").is_empty() { " " span.error-text { (s(r, "error")) } } }
                                    td.wide-only { (when(&r["created_at"])) }
                                    td { div.actions {
                                        @if s(r, "status") == "ready" {
                                            a.button href=(format!("/reports/{}/pdf", enc(s(r, "id")))) download { "Download PDF" }
                                        }
                                        form method="post" action=(format!("/reports/{}/delete", enc(s(r, "id")))) {
                                            (ctx.csrf())
                                            button.danger type="submit" { "Delete report" }
                                        }
                                    } }
                                }
                            }
                        }
                    } }
                }
                @if let Some(c) = next {
                    p { a.button href=(format!("/reports?cursor={}", enc(c))) { "Next page" } }
                }
            }
        },
    )
}

/// The API body of the request form, or what is wrong with it.
fn body_of(post: &Post) -> Result<Value, String> {
    let mut body = Map::new();
    body.insert("report_type".to_owned(), json!(post.field("report_type")));
    let day = |field: &str, what: &str| {
        let v = post.field(field);
        chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
            .map_err(|_| format!("The {what} must be a day like 2026-01-31, not “{v}”."))
    };
    let from = day("period_start", "first day")?;
    let last = day("period_end", "last day")?;
    // The last day is included here; the API's end is exclusive: the next midnight.
    let end = last
        .succ_opt()
        .ok_or_else(|| "The last day is out of range.".to_owned())?;
    body.insert(
        "period_start".to_owned(),
        json!(format!("{from}T00:00:00Z")),
    );
    body.insert("period_end".to_owned(), json!(format!("{end}T00:00:00Z")));
    let locales: Vec<&str> = post
        .field("locales")
        .split([',', ' '])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if !locales.is_empty() {
        body.insert("locales".to_owned(), json!(locales));
    }
    Ok(Value::Object(body))
}

/// `POST /reports`: asks for the report (one per language).
pub async fn create(State(state): State<WebState>, post: Post) -> Response {
    let body = match body_of(&post) {
        Ok(b) => b,
        Err(e) => return redirect_with(&state, "/reports", "error", &e),
    };
    match client::call(
        &state,
        &post.session,
        Method::POST,
        "/v1/reports",
        Some(&body),
    )
    .await
    {
        Ok(a) if a.ok() => {
            let n = a.json()["data"].as_array().map_or(0, Vec::len);
            let text = if n == 1 {
                "The report is asked for; it is made in the background.".to_owned()
            } else {
                format!(
                    "{n} reports are asked for (one per language); they are made in the background."
                )
            };
            redirect_with(&state, "/reports", "ok", &text)
        }
        Ok(a) => redirect_with(&state, "/reports", "error", &a.message()),
        Err(resp) => resp,
    }
}

/// `GET /reports/{id}/pdf`: the ready report's PDF, as a download.
pub async fn pdf(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let answer = match client::call(
        &state,
        &signed.0,
        Method::GET,
        &format!("/v1/reports/{}/pdf", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return error_page(answer.status, "No PDF", &answer.message());
    }
    let name = answer
        .headers
        .get(header::CONTENT_DISPOSITION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split("filename=\"").nth(1))
        .and_then(|v| v.split('"').next())
        .map_or_else(|| format!("report-{id}.pdf"), str::to_owned);
    let mut resp = answer.bytes.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/pdf"),
    );
    h.insert(
        header::CONTENT_DISPOSITION,
        api::views::content_disposition(api::views::Disposition::Attachment, &name),
    );
    resp
}

/// `POST /reports/{id}/delete`.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    let answer = client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/reports/{}", enc(&id)),
        None,
    )
    .await;
    after(&state, "/reports", answer, "The report is deleted.")
}
