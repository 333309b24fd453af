//! The AI review queue: what agents asked for, approved or rejected by a person.

use std::collections::HashMap;

use axum::{
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, Method, header},
    response::{IntoResponse, Response},
};
use maud::{Markup, html};
use serde_json::Value;

use super::{Ctx, layout, redirect_with, s};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::{self, Known, describe_action},
    locale::Local,
    session::{Session, SignedIn, internal},
};

/// How many pending entries and history entries the page shows.
const SHOWN: i64 = 100;

/// `GET /review`: pending requests, newest first, then the history.
pub async fn page(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "review").await;
    let session = &signed.0;
    let Some(company) = session.company.as_ref() else {
        return internal("no company");
    };
    let now = state.api.now().timestamp_micros();
    // Lists carry no bodies; a pending card reads its own body only when it is small
    // JSON kept inline (at most `api::gate::MAX_INLINE_BODY` each).
    let loaded = async {
        let mut conn = state.api.db.pool().acquire().await?;
        let pending =
            store::audit::list(&mut conn, &company.id, Some("pending"), None, SHOWN, now).await?;
        let all = store::audit::list(&mut conn, &company.id, None, None, SHOWN, now).await?;
        let people = store::web::requesters(&mut conn, &company.id).await?;
        let mut bodies = HashMap::new();
        for e in pending.iter().filter(|e| e.body_kind == "inline") {
            if let Some(body) = store::audit::inline_body(&mut conn, &company.id, &e.id).await? {
                bodies.insert(e.id.clone(), body);
            }
        }
        Ok::<_, sqlx::Error>((pending, all, people, bodies))
    }
    .await;
    let (pending, all, people, bodies) = match loaded {
        Ok(x) => x,
        Err(e) => return internal(e),
    };
    let people: HashMap<String, store::web::Requester> =
        people.into_iter().map(|p| (p.user_id.clone(), p)).collect();
    let who = |id: &str| match people.get(id) {
        Some(p) if !p.name.is_empty() => format!("{} <{}>", p.name, p.email),
        Some(p) => p.email.clone(),
        None => "a former member".to_owned(),
    };
    // Amounts, days and times as the person's language writes them.
    let local = Local::of(&session.row.language);
    let mut cards = Vec::with_capacity(pending.len());
    for entry in &pending {
        let body = bodies.get(&entry.id).map(String::as_str);
        cards.push(pending_card(&state, session, &ctx, entry, body, &who(&entry.user_id)).await);
    }
    let history: Vec<_> = all.iter().filter(|e| e.status != "pending").collect();
    layout(
        &ctx,
        "Review queue",
        html! {
            p.lead {
                "Changes asked for by AI agents wait here until a person approves them. "
                "Approving runs the request now, as the agent's user; rejecting discards it."
            }
            section aria-labelledby="pending-h" {
                h2 id="pending-h" { "Waiting for review (" (pending.len()) ")" }
                @if pending.is_empty() {
                    p.empty { "Nothing is waiting. New requests from agents appear here." }
                }
                @for card in &cards { (card) }
            }
            section aria-labelledby="history-h" {
                h2 id="history-h" { "History" }
                @if history.is_empty() {
                    p.empty { "No request has been reviewed yet." }
                } @else {
                    div.scroll {
                        table.history {
                            thead { tr {
                                th scope="col" { "Asked" } th scope="col" { "What" } th scope="col" { "Asked by" }
                                th scope="col" { "Through" } th scope="col" { "Outcome" } th scope="col" { "Reviewed by" }
                                th scope="col" { "Result" }
                            } }
                            tbody {
                                @for e in &history {
                                    tr {
                                        td { (local.stamp(e.created_at)) }
                                        td { (describe_action(&e.action)) br; code.small { (e.http_method) " " (e.http_path) } }
                                        td { (who(&e.user_id)) }
                                        td { (source_label(&e.source)) }
                                        td { span class=(format!("status {}", e.status)) { (e.status) } }
                                        td {
                                            @if let Some(r) = &e.reviewed_by { (who(r)) }
                                            @if let Some(t) = e.reviewed_at { br; span.muted { (local.stamp(t)) } }
                                        }
                                        td {
                                            @if let Some(err) = &e.error_message { span.error-text { (err) } }
                                            @else if let Some(id) = &e.resource_id {
                                                @if let Some((href, text)) = super::review_sentence::result_link(&e.http_path, id) {
                                                    a href=(href) { (text) }
                                                } @else { code.small { (id) } }
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

fn source_label(source: &str) -> &'static str {
    match source {
        "mcp" => "MCP",
        _ => "API",
    }
}

async fn pending_card(
    state: &WebState,
    session: &Session,
    ctx: &Ctx<'_>,
    e: &store::audit::AuditRow,
    raw: Option<&str>,
    who: &str,
) -> Markup {
    let body: Option<Value> = raw.and_then(|b| serde_json::from_str(b).ok());
    let mut known = Known {
        local: Local::of(&session.row.language),
        ..Known::default()
    };
    let mut target = None;
    // Names for the ids the request mentions, and the currency its amounts are in.
    if let Some(b) = &body {
        let mut ids = Vec::new();
        collect_ids(b, &mut ids);
        for id in ids.into_iter().take(20) {
            if let Ok(v) =
                client::get_json(state, session, &format!("/v1/entities/{}", enc(&id))).await
            {
                if known.currency.is_none() {
                    known.currency = currency_of(&v);
                }
                known.names.insert(id, s(&v, "name").to_owned());
            }
        }
        if let Some(c) = b
            .get("currency_code")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
        {
            known.currency = Some(c.to_owned());
        }
    }
    let segments: Vec<&str> = e.http_path.trim_start_matches("/v1/").split('/').collect();
    if let ["invoices", id, ..] = segments.as_slice()
        && *id != "bulk"
        && let Ok(inv) =
            client::get_json(state, session, &format!("/v1/invoices/{}", enc(id))).await
    {
        known.currency = known.currency.or_else(|| currency_of(&inv));
        target = Some(invoice_line(state, session, &inv).await);
    }
    if let ["entities", id, ..] = segments.as_slice()
        && let Ok(ent) =
            client::get_json(state, session, &format!("/v1/entities/{}", enc(id))).await
    {
        target = Some(html! {
            "Customer or supplier " a href=(format!("/entities/{}", enc(id))) { strong { (s(&ent, "name")) } }
            dl.fields.current {
                @for (k, label) in [("type", "Type"), ("fiscal_id", "Fiscal id"), ("email", "E-mail"), ("currency_code", "Currency")] {
                    @if !s(&ent, k).is_empty() { dt { (label) } dd { (s(&ent, k)) } }
                }
                @if !s(&ent["address"], "city").is_empty() { dt { "City" } dd { (s(&ent["address"], "city")) ", " (s(&ent["address"], "country")) } }
            }
        });
    }
    let sentence = super::review_sentence::sentence(
        state,
        session,
        &e.action,
        &e.http_path,
        body.as_ref(),
        &known,
    )
    .await;
    html! {
        article.card.pending id=(format!("entry-{}", e.id)) {
            h3 { (describe_action(&e.action)) }
            p.meta {
                "Asked by " strong { (who) } " · " (known.local.stamp(e.created_at)) " · through " (source_label(&e.source))
            }
            @if let Some(t) = sentence { p.sentence { (t) "." } }
            @if let Some(t) = target { div.target { h4 { "Now" } (t) } }
            @match &body {
                Some(b) => { (json_view::render_in_order(b, raw.unwrap_or(""), &known)) }
                None => {
                    @if e.body_kind != "none" {
                        p.muted {
                            "A " (e.content_type.as_deref().unwrap_or("binary")) " body of "
                            (size_label(e.body_size)) ". "
                            a href=(format!("/review/{}/body", enc(&e.id))) download { "Download it" }
                            " to see what would be sent."
                        }
                    } @else {
                        p.muted { "No data is sent with this request." }
                    }
                }
            }
            details {
                summary { "Technical details" }
                p { code { (e.http_method) " " (e.http_path) } }
                @if let Some(raw) = raw { pre { (pretty(raw)) } }
            }
            div.actions {
                form method="post" action=(format!("/review/{}/approve", enc(&e.id))) {
                    (ctx.csrf())
                    button.primary type="submit" { "Approve" }
                }
                form method="post" action=(format!("/review/{}/reject", enc(&e.id))) {
                    (ctx.csrf())
                    button.danger type="submit" { "Reject" }
                }
            }
        }
    }
}

async fn invoice_line(state: &WebState, session: &Session, inv: &Value) -> Markup {
    let recipient = match inv.get("recipient_id").and_then(Value::as_str) {
        Some(id) => client::get_json(state, session, &format!("/v1/entities/{}", enc(id)))
            .await
            .map(|e| s(&e, "name").to_owned())
            .unwrap_or_default(),
        None => String::new(),
    };
    let reference = inv
        .get("reference")
        .and_then(Value::as_str)
        .map_or_else(|| "draft".to_owned(), str::to_owned);
    html! {
        "Invoice " strong { (reference) }
        @if !recipient.is_empty() { " to " strong { (recipient) } }
    }
}

fn currency_of(v: &Value) -> Option<String> {
    ["currency_code", "currencyCode", "currency"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
}

/// Values of `*_id` keys (entity references) anywhere in the payload.
fn collect_ids(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, val) in m {
                if (k.ends_with("_id") || k.ends_with("Id"))
                    && let Some(id) = val.as_str()
                    && !out.iter().any(|x| x == id)
                {
                    out.push(id.to_owned());
                }
                collect_ids(val, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_ids(i, out)),
        _ => {}
    }
}

/// A body size in words: bytes, KiB or MiB.
fn size_label(bytes: i64) -> String {
    match bytes {
        b if b < 1024 => format!("{b} bytes"),
        b if b < 1024 * 1024 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)),
    }
}

/// `GET /review/{id}/body`: a held request's body, as a download (never rendered here:
/// an agent chose its content and type).
pub async fn body(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let path = format!("/v1/ai-audit/{}/body", enc(&id));
    let answer = match client::call(&state, &signed.0, Method::GET, &path, None).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return super::error_page(answer.status, "No body", &answer.message());
    }
    let content_type = answer
        .headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut resp = answer.bytes.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, content_type);
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"ai-request-body\""),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    resp
}

fn pretty(raw: &str) -> String {
    serde_json::from_str::<Value>(raw)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| raw.to_owned())
}

/// `POST /review/{id}/approve`: runs the request now, as the agent's user.
pub async fn approve(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    decide(&state, &post.session, &id, "approve").await
}

/// `POST /review/{id}/reject`.
pub async fn reject(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    decide(&state, &post.session, &id, "reject").await
}

async fn decide(state: &WebState, session: &Session, id: &str, verb: &str) -> Response {
    let path = format!("/v1/ai-audit/{}/{verb}", enc(id));
    let answer = match client::call(state, session, Method::POST, &path, None).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return redirect_with(state, "/review", "error", &answer.message());
    }
    let entry = answer.json();
    let what = describe_action(s(&entry, "action"));
    match s(&entry, "status") {
        "approved" => redirect_with(
            state,
            "/review",
            "ok",
            &format!("Approved and done: {what}."),
        ),
        "rejected" => redirect_with(state, "/review", "ok", &format!("Rejected: {what}.")),
        _ => redirect_with(
            state,
            "/review",
            "error",
            &format!(
                "Approved, but it failed and nothing was changed: {}",
                s(&entry, "errorMessage")
            ),
        ),
    }
}
