//! Recurring invoices (`/recurring`): a draft invoice made every week, month,
//! quarter or year, optionally issued and mailed at once. Written with the
//! invoice's line editor and tax preview ([`super::document_form`]) plus the
//! schedule; paused, resumed and deleted on its page, which says in words
//! when the next invoice comes and what it will be. Every read and write is a
//! `/v1/recurring-invoices` call; the worker makes the invoices.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, Method},
    response::Response,
};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::{
    Ctx, after,
    document_form::{self, Detail, Draft, Kind},
    invoices::names,
    layout, redirect_with, s, when,
};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::money,
    session::{Session, SignedIn},
};

/// Invoices a recurring invoice's page lists of those it made.
const MADE_SHOWN: usize = 20;

/// Optional fields each period's draft gets (no due date: each takes it from
/// the payment terms when issued; no delivery day or period: they would be
/// the same on every invoice).
const DETAILS: &[Detail] = &[
    ("buyer_reference", "Buyer reference (BT-10)", "text"),
    ("order_reference", "Purchase order reference", "text"),
];

/// The frequencies: (API value, label in the form, period, periods).
const FREQUENCIES: &[(&str, &str, &str, &str)] = &[
    ("weekly", "Weekly", "week", "weeks"),
    ("monthly", "Monthly", "month", "months"),
    ("quarterly", "Quarterly", "quarter", "quarters"),
    ("yearly", "Yearly", "year", "years"),
];

/// A recurring invoice.
pub const RECURRING: Kind = Kind {
    nav: "recurring",
    web: "/recurring",
    api: "/v1/recurring-invoices",
    new_title: "New recurring invoice",
    edit_title: "Edit recurring invoice",
    details: DETAILS,
    notes: Some("Notes printed on each invoice"),
    save: "Save recurring invoice",
    created: "Recurring invoice created.",
    saved: "Recurring invoice saved.",
    own_fields: Some(schedule_fields),
    own_body: Some(schedule_body),
};

fn page_of(id: &str) -> String {
    format!("/recurring/{}", enc(id))
}

/// The schedule part of the form.
fn schedule_fields(v: &HashMap<String, String>) -> Markup {
    let get = |k: &str| v.get(k).map_or("", |s| s.trim());
    let frequency = match get("frequency") {
        "" => "monthly",
        f => f,
    };
    let interval = match get("interval") {
        "" => "1",
        i => i,
    };
    html! {
        fieldset.schedule {
            legend { "Schedule" }
            label for="frequency" { "How often" }
            select id="frequency" name="frequency" {
                @for (value, label, ..) in FREQUENCIES {
                    option value=(value) selected[*value == frequency] { (label) }
                }
            }
            label for="interval" { "Every how many weeks, months, quarters or years (1: every one)" }
            input id="interval" name="interval" type="text" inputmode="numeric" value=(interval) required;
            label for="start_date" { "First invoice on" }
            input id="start_date" name="start_date" type="date" value=(get("start_date")) required;
            label for="end_date" { "No invoice after (empty: until you delete it)" }
            input id="end_date" name="end_date" type="date" value=(get("end_date"));
            div.choice {
                input id="auto_issue" name="auto_issue" type="checkbox" value="1" checked[get("auto_issue") == "1"];
                label for="auto_issue" { "Issue each invoice at once (else it waits as a draft for you to check)" }
            }
            div.choice {
                input id="auto_send" name="auto_send" type="checkbox" value="1" checked[get("auto_send") == "1"];
                label for="auto_send" { "Mail each issued invoice to the customer (needs issuing at once)" }
            }
        }
    }
}

/// A day typed in the form, or what is wrong with it.
fn day(v: &str, what: &str) -> Result<String, String> {
    chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
        .map(|d| d.to_string())
        .map_err(|_| format!("The {what} must be a day like 2026-12-01, not “{v}”."))
}

/// The schedule fields into the API body.
fn schedule_body(
    v: &HashMap<String, String>,
    update: bool,
    body: &mut Map<String, Value>,
) -> Result<(), String> {
    let get = |k: &str| v.get(k).map_or("", |s| s.trim());
    let frequency = get("frequency");
    if !FREQUENCIES.iter().any(|f| f.0 == frequency) {
        return Err(format!(
            "Choose how often: weekly, monthly, quarterly or yearly, not “{frequency}”."
        ));
    }
    body.insert("frequency".to_owned(), json!(frequency));
    let interval = match get("interval") {
        "" => 1,
        text => text.parse::<i64>().map_err(|_| {
            format!("“Every how many” must be a whole number like 1 or 3, not “{text}”.")
        })?,
    };
    body.insert("interval".to_owned(), json!(interval));
    body.insert(
        "start_date".to_owned(),
        json!(day(get("start_date"), "first invoice's day")?),
    );
    match get("end_date") {
        "" if update => {
            body.insert("end_date".to_owned(), Value::Null);
        }
        "" => {}
        end => {
            body.insert("end_date".to_owned(), json!(day(end, "last day")?));
        }
    }
    body.insert("auto_issue".to_owned(), json!(get("auto_issue") == "1"));
    body.insert("auto_send".to_owned(), json!(get("auto_send") == "1"));
    Ok(())
}

/// The form's values of a stored recurring invoice.
async fn draft_of(state: &WebState, session: &Session, r: &Value) -> Draft {
    let currency =
        document_form::currency_of(state, session, s(r, "currency_code"), s(r, "recipient_id"))
            .await;
    let mut draft = Draft::from_json(r, &RECURRING, &currency);
    let flag = |k: &str| {
        if r[k].as_bool() == Some(true) {
            "1"
        } else {
            ""
        }
    };
    for (key, value) in [
        ("frequency", s(r, "frequency").to_owned()),
        ("interval", r["interval"].as_i64().unwrap_or(1).to_string()),
        ("start_date", s(r, "start_date").to_owned()),
        ("end_date", s(r, "end_date").to_owned()),
        ("auto_issue", flag("auto_issue").to_owned()),
        ("auto_send", flag("auto_send").to_owned()),
    ] {
        draft.values.insert(key.to_owned(), value);
    }
    draft
}

/// "every month", "every 2 weeks".
fn every(r: &Value) -> String {
    let frequency = s(r, "frequency");
    let n = r["interval"].as_i64().unwrap_or(1);
    let (one, many) = FREQUENCIES
        .iter()
        .find(|f| f.0 == frequency)
        .map_or((frequency, frequency), |f| (f.2, f.3));
    if n == 1 {
        format!("every {one}")
    } else {
        format!("every {n} {many}")
    }
}

/// What each run makes: "a draft invoice", "an invoice, issued", "an invoice, issued and mailed".
fn makes(r: &Value) -> &'static str {
    match (
        r["auto_issue"].as_bool() == Some(true),
        r["auto_send"].as_bool() == Some(true),
    ) {
        (true, true) => "issues an invoice and mails it to",
        (true, false) => "issues an invoice to",
        _ => "makes a draft invoice for",
    }
}

fn lines_in_words(r: &Value) -> String {
    match r["lines"].as_array().map_or(0, Vec::len) {
        1 => "1 line".to_owned(),
        n => format!("{n} lines"),
    }
}

/// The recurring invoice in words: when the next invoice comes and what it will be.
fn in_words(r: &Value, customer: &str, total: Option<&str>) -> String {
    let status = s(r, "status");
    let what = match total {
        Some(t) => format!("{}, {t}", lines_in_words(r)),
        None => lines_in_words(r),
    };
    let until = match r["end_date"].as_str() {
        Some(end) => format!(" until {end}"),
        None => String::new(),
    };
    match status {
        "paused" => format!(
            "Paused: it makes nothing until you resume it. Resumed, it {} {customer} ({what}) {}{until}, \
             starting with the first period that begins on the day you resume it or later.",
            makes(r),
            every(r)
        ),
        "ended" => match r["end_date"].as_str() {
            Some(end) => {
                format!(
                    "Ended: no period starts after {end}, its last day. The invoices it made stay."
                )
            }
            None => "Ended: no period starts any more. The invoices it made stay.".to_owned(),
        },
        _ => format!(
            "On {} it {} {customer} ({what}), then again {}{until}.",
            s(r, "next_run_date"),
            makes(r),
            every(r)
        ),
    }
}

/// The total each invoice would have today, as the API computes it (`None` when it cannot).
async fn total_of(state: &WebState, session: &Session, r: &Value) -> Option<String> {
    let mut body = json!({"recipient_id": s(r, "recipient_id"), "lines": r["lines"]});
    if let Some(st) = r["supply_type"].as_str() {
        body["supply_type"] = json!(st);
    }
    let answer = client::call(
        state,
        session,
        Method::POST,
        "/v1/taxes/prefill",
        Some(&body),
    )
    .await
    .ok()
    .filter(|a| a.ok())?;
    let currency =
        document_form::currency_of(state, session, s(r, "currency_code"), s(r, "recipient_id"))
            .await;
    let p = answer.json();
    Some(format!(
        "{} with taxes",
        money(p["total"].as_i64()?, &currency)
    ))
}

/// The page of the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    cursor: String,
}

/// `GET /recurring`: newest first, 50 a page.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(lq): Query<ListQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, RECURRING.nav).await;
    let page = match client::list_page(
        &state,
        &signed.0,
        "/v1/recurring-invoices?limit=50",
        &lq.cursor,
    )
    .await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let rows = page.rows;
    let next = page.next.as_deref();
    let ids: Vec<&str> = rows.iter().map(|r| s(r, "recipient_id")).collect();
    let names = names(&state, &signed.0, &ids).await;
    layout(
        &ctx,
        "Recurring invoices",
        html! {
            div.actions { a.button.primary href="/recurring/new" { "New recurring invoice" } }
            @if rows.is_empty() {
                p.empty { "No recurring invoice yet. One makes the same invoice every week, month, quarter or year." }
            } @else {
                div.scroll { table.recurring {
                    thead { tr {
                        th scope="col" { "Customer" } th scope="col" { "How often" } th scope="col" { "Next invoice" }
                        th scope="col" { "Status" } th.wide-only scope="col" { "Makes" }
                    } }
                    tbody {
                        @for r in &rows {
                            tr {
                                td { a href=(page_of(s(r, "id"))) { (names.get(s(r, "recipient_id")).map_or("(unknown customer)", String::as_str)) } }
                                td { (capitalized(&every(r))) }
                                td { @if let Some(d) = r["next_run_date"].as_str() { (d) } @else { span.muted { "—" } } }
                                td { span class=(format!("status {}", s(r, "status"))) { (s(r, "status")) }
                                    @if !s(r, "last_error").is_empty() { " " span.error-text { "Last run failed" } } }
                                td.wide-only { (lines_in_words(r)) @if r["auto_issue"].as_bool() == Some(true) { ", issued" } @if r["auto_send"].as_bool() == Some(true) { " and mailed" } }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("/recurring?cursor={}", enc(c))) { "Next page" } }
            }
        },
    )
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `GET /recurring/new`.
pub async fn new_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, RECURRING.nav).await;
    document_form::new_page(&ctx, &RECURRING, &Draft::default()).await
}

/// `POST /recurring/new`: add a line, preview, or create the recurring invoice.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    document_form::submit(&state, &headers, post, None, &RECURRING).await
}

/// `GET /recurring/{id}/edit`.
pub async fn edit_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, RECURRING.nav).await;
    let r = match get(&state, &signed.0, &id).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let draft = draft_of(&state, &signed.0, &r).await;
    document_form::edit_page(&ctx, &RECURRING, &id, &draft).await
}

/// `POST /recurring/{id}/edit`: add a line, preview, or save.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    document_form::submit(&state, &headers, post, Some(id), &RECURRING).await
}

async fn get(state: &WebState, session: &Session, id: &str) -> Result<Value, Response> {
    client::get_json(
        state,
        session,
        &format!("/v1/recurring-invoices/{}", enc(id)),
    )
    .await
}

/// `GET /recurring/{id}`: the schedule in words, its lines, and pause, resume, edit, delete.
pub async fn detail(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, RECURRING.nav).await;
    let r = match get(&state, &signed.0, &id).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let recipient_id = s(&r, "recipient_id");
    let names = names(&state, &signed.0, &[recipient_id]).await;
    let customer = names
        .get(recipient_id)
        .map_or("(unknown customer)", String::as_str);
    let total = total_of(&state, &signed.0, &r).await;
    let currency =
        document_form::currency_of(&state, &signed.0, s(&r, "currency_code"), recipient_id).await;
    let status = s(&r, "status");
    let page = page_of(&id);
    // The invoices it made, newest first (the API keeps the link on each draft).
    let made = client::get_json(
        &state,
        &signed.0,
        &format!(
            "/v1/invoices?recurring_invoice_id={}&limit={MADE_SHOWN}",
            enc(&id)
        ),
    )
    .await
    .ok();
    let more_made = made
        .as_ref()
        .is_some_and(|p| p["next_cursor"].as_str().is_some());
    let made = made
        .map(|p| p["data"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default();
    let yes_no = |k: &str| {
        if r[k].as_bool() == Some(true) {
            "Yes"
        } else {
            "No"
        }
    };
    layout(
        &ctx,
        &format!("Recurring invoice for {customer}"),
        html! {
            p.sentence { (in_words(&r, customer, total.as_deref())) }
            @if let Some(e) = r["last_error"].as_str() {
                p.flash.error role="alert" { "The last run did not go through: " (e) }
            }
            dl.fields.summary {
                dt { "Customer" } dd { a href=(format!("/entities/{}", enc(recipient_id))) { (customer) } }
                dt { "Status" } dd { span class=(format!("status {status}")) { (status) } }
                dt { "How often" } dd { (capitalized(&every(&r))) ", from " (s(&r, "start_date")) }
                dt { "Next invoice" } dd { @if let Some(d) = r["next_run_date"].as_str() { (d) } @else { "None" } }
                dt { "Last day" } dd { @if let Some(d) = r["end_date"].as_str() { (d) } @else { "None: until you delete it" } }
                dt { "Issued at once" } dd { (yes_no("auto_issue")) }
                dt { "Mailed to the customer" } dd { (yes_no("auto_send")) }
                @for (key, label) in [("buyer_reference", "Buyer reference"), ("order_reference", "Purchase order"), ("notes", "Notes")] {
                    @if !s(&r, key).is_empty() { dt { (label) } dd { (s(&r, key)) } }
                }
                dt { "Created" } dd { (when(&r["created_at"])) }
            }
            h2 { "Lines of each invoice" }
            (document_form::lines_table(&r, &currency))
            h2 { "Invoices it made" }
            @if made.is_empty() {
                p.empty { "None yet." }
            } @else {
                div.scroll { table.made {
                    thead { tr { th scope="col" { "Invoice" } th scope="col" { "Status" } th.wide-only scope="col" { "Made" } th.num scope="col" { "Total" } } }
                    tbody {
                        @for i in &made {
                            tr {
                                td { a href=(format!("/invoices/{}", enc(s(i, "id")))) {
                                    @if s(i, "reference").is_empty() { "Draft" } @else { (s(i, "reference")) }
                                } }
                                td { span class=(format!("status {}", s(i, "status"))) { (s(i, "status")) } }
                                td.wide-only { (when(&i["created_at"])) }
                                td.num { (money(i["total"].as_i64().unwrap_or(0), s(i, "currency_code"))) }
                            }
                        }
                    }
                } }
                @if more_made {
                    p.muted { "The latest " (MADE_SHOWN) " are shown; the others are in " a href="/invoices" { "Invoices" } "." }
                }
            }
            div.actions {
                a.button href=(format!("{page}/edit")) { "Edit recurring invoice" }
                @if status == "active" {
                    form method="post" action=(format!("{page}/pause")) {
                        (ctx.csrf())
                        button type="submit" { "Pause" }
                    }
                } @else if status == "paused" {
                    form method="post" action=(format!("{page}/resume")) {
                        (ctx.csrf())
                        button.primary type="submit" { "Resume" }
                    }
                }
            }
            details.confirm {
                summary { "Delete recurring invoice…" }
                p { "This stops it for good: no further invoice is made. The invoices it already made stay. It cannot be undone." }
                form method="post" action=(format!("{page}/delete")) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete recurring invoice" }
                }
            }
        },
    )
}

async fn set_status(state: &WebState, id: &str, post: &Post, status: &str) -> Response {
    let answer = client::call(
        state,
        &post.session,
        Method::PATCH,
        &format!("/v1/recurring-invoices/{}", enc(id)),
        Some(&json!({ "status": status })),
    )
    .await;
    let done = match &answer {
        Ok(_) if status == "paused" => "Paused: no invoice is made until you resume it.".to_owned(),
        Ok(a) => match a.json()["next_run_date"].as_str() {
            Some(d) => format!("Resumed: the next invoice is made on {d}."),
            None => "Resumed.".to_owned(),
        },
        Err(_) => String::new(),
    };
    after(state, &page_of(id), answer, &done)
}

/// `POST /recurring/{id}/pause`.
pub async fn pause(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    set_status(&state, &id, &post, "paused").await
}

/// `POST /recurring/{id}/resume`: goes on from the first period that starts today or later.
pub async fn resume(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    set_status(&state, &id, &post, "active").await
}

/// `POST /recurring/{id}/delete`.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    match client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/recurring-invoices/{}", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(
            &state,
            "/recurring",
            "ok",
            "The recurring invoice is deleted; the invoices it made stay.",
        ),
        Ok(a) => redirect_with(&state, "/recurring", "error", &a.message()),
        Err(resp) => resp,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::{Map, json};

    use super::{in_words, schedule_body};

    #[test]
    fn the_schedule_in_words() {
        let monthly = json!({"status": "active", "frequency": "monthly", "interval": 1,
            "next_run_date": "2026-12-01", "auto_issue": true, "auto_send": true,
            "lines": [{"concept": "Hosting"}, {"concept": "Support"}]});
        assert_eq!(
            in_words(&monthly, "Kunde AG", Some("119.00 EUR with taxes")),
            "On 2026-12-01 it issues an invoice and mails it to Kunde AG (2 lines, 119.00 EUR with taxes), then again every month."
        );
        let weekly = json!({"status": "active", "frequency": "weekly", "interval": 2,
            "next_run_date": "2026-12-07", "end_date": "2027-01-31", "lines": [{"concept": "Cleaning"}]});
        assert_eq!(
            in_words(&weekly, "Kunde AG", None),
            "On 2026-12-07 it makes a draft invoice for Kunde AG (1 line), then again every 2 weeks until 2027-01-31."
        );
        let paused = json!({"status": "paused", "frequency": "quarterly", "interval": 1, "auto_issue": true, "lines": []});
        assert!(
            in_words(&paused, "X", None).starts_with("Paused: it makes nothing until you resume it. Resumed, it issues an invoice to X (0 lines) every quarter")
        );
    }

    #[test]
    fn the_schedule_as_the_api_takes_it() {
        let form = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let mut body = Map::new();
        schedule_body(
            &form(&[
                ("frequency", "quarterly"),
                ("interval", " 2 "),
                ("start_date", "2026-12-01"),
                ("auto_issue", "1"),
            ]),
            true,
            &mut body,
        )
        .expect("valid");
        assert_eq!(
            serde_json::Value::Object(body),
            json!({"frequency": "quarterly", "interval": 2, "start_date": "2026-12-01",
                "end_date": null, "auto_issue": true, "auto_send": false})
        );
        let mut body = Map::new();
        let refused = schedule_body(
            &form(&[
                ("frequency", "monthly"),
                ("interval", "two"),
                ("start_date", "2026-12-01"),
            ]),
            false,
            &mut body,
        );
        assert_eq!(
            refused,
            Err("“Every how many” must be a whole number like 1 or 3, not “two”.".to_owned())
        );
        let mut body = Map::new();
        let refused = schedule_body(
            &form(&[("frequency", "monthly"), ("start_date", "1 December")]),
            false,
            &mut body,
        );
        assert!(
            refused.is_err_and(|e| e.contains("not “1 December”")),
            "a day the API could not read"
        );
    }
}
