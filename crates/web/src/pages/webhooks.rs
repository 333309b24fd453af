//! Webhooks in the settings (`/settings/webhooks`): the endpoints that receive
//! the company's signed events, each with its recent deliveries. Creating one
//! shows its signing secret on that answer only (the API never shows it
//! again); an endpoint is enabled, disabled, changed or deleted, and a
//! delivery sent again, each with one `/v1/webhooks` call. See docs/WEBHOOKS.md.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::{Ctx, Flash, after, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

/// What each event means to a person (the API's list of events is `store::webhooks::EVENTS`).
fn event_label(event: &str) -> &str {
    match event {
        "invoice.created" => "A draft invoice is created",
        "invoice.issued" => "An invoice is issued",
        "invoice.sent" => "An invoice is mailed to the customer",
        "invoice.paid" => "An invoice is paid in full",
        "invoice.overdue" => "An invoice becomes overdue",
        "expense.created" => "An expense is recorded",
        "report.ready" => "A report is ready",
        "ai_audit.pending" => "An AI agent's request waits for review",
        "ai_audit.approved" => "An AI agent's request is approved",
        "ai_audit.rejected" => "An AI agent's request is rejected",
        "ai_audit.failed" => "An approved AI request could not run",
        "verifactu.accepted" => "The AEAT accepted a VERI*FACTU record",
        "verifactu.rejected" => "The AEAT rejected a VERI*FACTU record",
        other => other,
    }
}

/// The form field of an event's box.
fn event_field(event: &str) -> String {
    format!("ev_{event}")
}

const LIST: &str = "/settings/webhooks";

fn page_of(id: &str) -> String {
    format!("{LIST}/{}", enc(id))
}

/// The form's values of a stored endpoint.
fn values_of(e: &Value) -> HashMap<String, String> {
    let mut v = HashMap::new();
    v.insert("url".to_owned(), s(e, "url").to_owned());
    v.insert("description".to_owned(), s(e, "description").to_owned());
    for ev in e["events"].as_array().into_iter().flatten() {
        if let Some(ev) = ev.as_str() {
            v.insert(event_field(ev), "1".to_owned());
        }
    }
    v
}

/// The endpoint form (create, or change with `id`), showing `values` as typed.
fn endpoint_form(ctx: &Ctx<'_>, id: Option<&str>, values: &HashMap<String, String>) -> Markup {
    let v = |k: &str| values.get(k).map_or("", |s| s.trim());
    let action = id.map_or_else(|| LIST.to_owned(), page_of);
    html! {
        form.card method="post" action=(action) {
            (ctx.csrf())
            label for="url" { "URL the events are POSTed to (https://…, on a public address)" }
            input id="url" name="url" type="url" required maxlength="2000" value=(v("url")) autocomplete="off" spellcheck="false";
            label for="description" { "What it is for" }
            input id="description" name="description" type="text" maxlength="500" value=(v("description"));
            fieldset.events {
                legend { "Events it receives" }
                @for event in store::webhooks::EVENTS {
                    div.choice {
                        input id=(event_field(event)) name=(event_field(event)) type="checkbox" value="1" checked[v(&event_field(event)) == "1"];
                        label for=(event_field(event)) { (event_label(event)) " " code.small { (event) } }
                    }
                }
            }
            div.actions {
                button.primary type="submit" { @if id.is_some() { "Save changes" } @else { "Create endpoint" } }
            }
        }
    }
}

/// The API body of the form.
fn body_of(post: &Post) -> Value {
    let events: Vec<&str> = store::webhooks::EVENTS
        .iter()
        .copied()
        .filter(|e| post.field(&event_field(e)) == "1")
        .collect();
    let mut body = Map::new();
    body.insert("url".to_owned(), json!(post.field("url")));
    body.insert("events".to_owned(), json!(events));
    body.insert("description".to_owned(), json!(post.field("description")));
    Value::Object(body)
}

fn enabled_badge(e: &Value) -> Markup {
    html! {
        @if e["enabled"].as_bool() == Some(true) {
            span.status.enabled { "enabled" }
        } @else {
            span.status.disabled { "disabled" }
        }
    }
}

/// The enable or disable button of an endpoint (`in_list`: it leads back to the list).
fn toggle(ctx: &Ctx<'_>, e: &Value, in_list: bool) -> Markup {
    let page = page_of(s(e, "id"));
    let back = html! { @if in_list { input type="hidden" name="back" value="list"; } };
    html! {
        @if e["enabled"].as_bool() == Some(true) {
            form method="post" action=(format!("{page}/disable")) {
                (ctx.csrf())
                (back)
                button type="submit" aria-label=(format!("Disable {}", s(e, "url"))) { "Disable" }
            }
        } @else {
            form method="post" action=(format!("{page}/enable")) {
                (ctx.csrf())
                (back)
                button.primary type="submit" aria-label=(format!("Enable {}", s(e, "url"))) { "Enable" }
            }
        }
    }
}

/// The list page: the endpoints, the create form, and a just-created endpoint's secret.
fn list_body(
    ctx: &Ctx<'_>,
    endpoints: &[Value],
    values: &HashMap<String, String>,
    created: Option<&Value>,
) -> Markup {
    html! {
        p.lead { "Other systems learn what happens here from signed POSTs to their URLs: an accounting system that an invoice was paid, a phone that an AI request waits for review. Deliveries follow the Standard Webhooks signature scheme." }
        @if let Some(c) = created {
            section.card.secret aria-labelledby="new-h" {
                h2 id="new-h" { "Endpoint created: copy its signing secret now" }
                p { "This is the only time the signing secret is shown. Store it where the receiving system verifies each delivery's " code { "webhook-signature" } " with it." }
                label for="new-secret" { "Signing secret" }
                div.copy {
                    input id="new-secret" readonly value=(s(c, "secret"));
                    button type="button" data-copy="new-secret" { "Copy secret" }
                }
                p { a href=(page_of(s(c, "id"))) { "See the endpoint and its deliveries" } }
            }
        }
        section aria-labelledby="list-h" {
            h2 id="list-h" { "Endpoints (" (endpoints.len()) ")" }
            @if endpoints.is_empty() {
                p.empty { "No webhook endpoint yet." }
            } @else {
                div.scroll { table.webhooks {
                    thead { tr { th scope="col" { "URL" } th.wide-only scope="col" { "Events" } th scope="col" { "Status" } th scope="col" { span.visually-hidden { "Actions" } } } }
                    tbody {
                        @for e in endpoints {
                            tr {
                                td.url { a href=(page_of(s(e, "id"))) { (s(e, "url")) }
                                    @if !s(e, "description").is_empty() { br; span.muted { (s(e, "description")) } } }
                                td.wide-only { (e["events"].as_array().map(|v| v.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                                td { (enabled_badge(e)) }
                                td { (toggle(ctx, e, true)) }
                            }
                        }
                    }
                } }
            }
        }
        section aria-labelledby="create-h" {
            h2 id="create-h" { "Add an endpoint" }
            (endpoint_form(ctx, None, values))
        }
    }
}

async fn endpoints(state: &WebState, signed: &SignedIn) -> Result<Vec<Value>, Response> {
    // A company has at most 20 endpoints: one page holds them all.
    let page = client::get_json(state, &signed.0, "/v1/webhooks?limit=100").await?;
    Ok(page["data"].as_array().cloned().unwrap_or_default())
}

/// `GET /settings/webhooks`.
pub async fn list(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "settings").await;
    match endpoints(&state, &signed).await {
        Ok(rows) => layout(
            &ctx,
            "Webhooks",
            list_body(&ctx, &rows, &HashMap::new(), None),
        ),
        Err(resp) => resp,
    }
}

/// `POST /settings/webhooks`: creates the endpoint and shows its secret on
/// this answer only; refused, the form comes back as typed with the API's words.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    let answer = match client::call(
        &state,
        &post.session,
        Method::POST,
        "/v1/webhooks",
        Some(&body_of(&post)),
    )
    .await
    {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    let signed = SignedIn(post.session.clone());
    let mut ctx = Ctx::new(&state, &signed, &headers, "settings").await;
    let rows = match endpoints(&state, &signed).await {
        Ok(rows) => rows,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        ctx.flash = Some(Flash::error(&answer.message()));
        let mut resp = layout(&ctx, "Webhooks", list_body(&ctx, &rows, &post.fields, None));
        *resp.status_mut() = StatusCode::BAD_REQUEST;
        return resp;
    }
    let created = answer.json();
    let mut resp = layout(
        &ctx,
        "Webhooks",
        list_body(&ctx, &rows, &HashMap::new(), Some(&created)),
    );
    *resp.status_mut() = StatusCode::CREATED;
    resp
}

/// The page of the delivery log.
#[derive(Debug, Default, serde::Deserialize)]
pub struct DeliveriesQuery {
    #[serde(default)]
    cursor: String,
}

/// An endpoint's page: what it is, its form, its recent deliveries.
async fn endpoint_page(
    ctx: &Ctx<'_>,
    id: &str,
    values: Option<&HashMap<String, String>>,
    cursor: &str,
) -> Response {
    let e = match client::get_json(ctx.state, ctx.session, &format!("/v1/webhooks/{}", enc(id)))
        .await
    {
        Ok(e) => e,
        Err(resp) => return resp,
    };
    let log = match client::list_page(
        ctx.state,
        ctx.session,
        &format!("/v1/webhooks/{}/deliveries?limit=20", enc(id)),
        cursor,
    )
    .await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let deliveries = log.rows;
    let next = log.next.as_deref();
    let page = page_of(id);
    let stored = values_of(&e);
    let values = values.unwrap_or(&stored);
    layout(
        ctx,
        "Webhook endpoint",
        html! {
            dl.fields.summary {
                dt { "URL" } dd.url { (s(&e, "url")) }
                @if !s(&e, "description").is_empty() { dt { "For" } dd { (s(&e, "description")) } }
                dt { "Status" } dd { (enabled_badge(&e))
                    @if let Some(r) = e["disabled_reason"].as_str() { " " span.error-text { "Disabled by the service: " (r) } } }
                dt { "Failed in a row" } dd { (e["consecutive_failures"].as_i64().unwrap_or(0)) }
                dt { "Events" } dd { ul.inline { @for ev in e["events"].as_array().into_iter().flatten() {
                    li { (event_label(ev.as_str().unwrap_or(""))) " " code.small { (ev.as_str().unwrap_or("")) } }
                } } }
                dt { "Created" } dd { (when(&e["created_at"])) }
            }
            div.actions {
                (toggle(ctx, &e, false))
                a.button href=(LIST) { "All endpoints" }
            }
            h2 { "Recent deliveries" }
            @if deliveries.is_empty() {
                p.empty { "Nothing sent yet: a delivery is made when one of its events happens." }
            } @else {
                div.scroll { table.deliveries {
                    thead { tr {
                        th scope="col" { "Event" } th.wide-only scope="col" { "Made" } th scope="col" { "Status" }
                        th scope="col" { "Last answer" } th scope="col" { span.visually-hidden { "Actions" } }
                    } }
                    tbody {
                        @for d in &deliveries {
                            tr {
                                td { code.small { (s(d, "event_type")) } }
                                td.wide-only { (when(&d["created_at"])) }
                                td { span class=(format!("status {}", s(d, "status"))) { (s(d, "status")) }
                                    br; span.muted { (d["attempts"].as_i64().unwrap_or(0)) @if d["attempts"].as_i64() == Some(1) { " attempt" } @else { " attempts" } } }
                                td {
                                    @if let Some(code) = d["response_status"].as_i64() { "HTTP " (code) }
                                    @if let Some(err) = d["last_error"].as_str() { " " span.error-text { (err) } }
                                    @if d["response_status"].is_null() && d["last_error"].is_null() { span.muted { "—" } }
                                }
                                td {
                                    @if s(d, "status") != "pending" {
                                        form method="post" action=(format!("{page}/deliveries/{}/retry", enc(s(d, "id")))) {
                                            (ctx.csrf())
                                            button type="submit" aria-label=(format!("Send {} again", s(d, "event_type"))) { "Retry" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("{page}?cursor={}", enc(c))) { "Older deliveries" } }
            }
            h2 { "Change the endpoint" }
            (endpoint_form(ctx, Some(id), values))
            details.confirm {
                summary { "Delete endpoint…" }
                p { "This deletes the endpoint and its delivery log; nothing more is sent to "
                    strong { (s(&e, "url")) } ". It cannot be undone (a new endpoint gets a new secret)." }
                form method="post" action=(format!("{page}/delete")) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete endpoint" }
                }
            }
        },
    )
}

/// `GET /settings/webhooks/{id}`.
pub async fn detail(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<DeliveriesQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "settings").await;
    endpoint_page(&ctx, &id, None, &q.cursor).await
}

/// `POST /settings/webhooks/{id}`: saves the form as one `PATCH`.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let answer = match client::call(
        &state,
        &post.session,
        Method::PATCH,
        &format!("/v1/webhooks/{}", enc(&id)),
        Some(&body_of(&post)),
    )
    .await
    {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if answer.ok() {
        return redirect_with(&state, &page_of(&id), "ok", "Changes saved.");
    }
    let signed = SignedIn(post.session.clone());
    let mut ctx = Ctx::new(&state, &signed, &headers, "settings").await;
    ctx.flash = Some(Flash::error(&answer.message()));
    let mut resp = endpoint_page(&ctx, &id, Some(&post.fields), "").await;
    if resp.status().is_success() {
        *resp.status_mut() = StatusCode::BAD_REQUEST;
    }
    resp
}

async fn set_enabled(state: &WebState, id: &str, post: &Post, enabled: bool) -> Response {
    let answer = client::call(
        state,
        &post.session,
        Method::PATCH,
        &format!("/v1/webhooks/{}", enc(id)),
        Some(&json!({ "enabled": enabled })),
    )
    .await;
    let done = if enabled {
        "Enabled: the endpoint receives its events again."
    } else {
        "Disabled: nothing is sent to the endpoint until you enable it."
    };
    // Back where the button was: the list or the endpoint's page.
    let back = if post.field("back") == "list" {
        LIST.to_owned()
    } else {
        page_of(id)
    };
    after(state, &back, answer, done)
}

/// `POST /settings/webhooks/{id}/enable`.
pub async fn enable(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    set_enabled(&state, &id, &post, true).await
}

/// `POST /settings/webhooks/{id}/disable`.
pub async fn disable(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    set_enabled(&state, &id, &post, false).await
}

/// `POST /settings/webhooks/{id}/delete`.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    match client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/webhooks/{}", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(
            &state,
            LIST,
            "ok",
            "The endpoint is deleted with its delivery log.",
        ),
        Ok(a) => redirect_with(&state, LIST, "error", &a.message()),
        Err(resp) => resp,
    }
}

/// `POST /settings/webhooks/{id}/deliveries/{delivery}/retry`: sends it again now.
pub async fn retry(
    State(state): State<WebState>,
    Path((id, delivery)): Path<(String, String)>,
    post: Post,
) -> Response {
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        &format!(
            "/v1/webhooks/{}/deliveries/{}/retry",
            enc(&id),
            enc(&delivery)
        ),
        None,
    )
    .await;
    after(
        &state,
        &page_of(&id),
        answer,
        "Queued again: it is sent within moments, with the same webhook-id.",
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_event_of_the_api_has_words() {
        for event in store::webhooks::EVENTS {
            assert_ne!(
                super::event_label(event),
                *event,
                "{event} has a label for people"
            );
        }
    }
}
