//! Bank accounts (`/bank-accounts`): the list with each account's latest
//! balance, creating, editing and deleting an account (after a confirmation),
//! and per account its balance snapshots (recorded, listed, deleted). Every
//! read and write is a `/v1/bank-accounts` call.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::{Ctx, after, invoice_form::minor_units, layout, redirect_with, s};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::money,
    session::SignedIn,
};

/// Text inputs of the account form: (form field, label, required).
const TEXT_FIELDS: &[(&str, &str, bool)] = &[
    ("name", "Name (e.g. Main account)", true),
    ("bank_name", "Bank", false),
    ("iban", "IBAN", false),
    ("bic", "BIC", false),
    ("currency_code", "Currency (ISO 4217; empty: EUR)", false),
];

/// The page of the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    cursor: String,
}

fn page_of(id: &str) -> String {
    format!("/bank-accounts/{}", enc(id))
}

/// An IBAN as the API gives it, in groups of four for reading.
fn iban_shown(iban: &str) -> String {
    domain::bank::Iban::parse(iban).map_or_else(|_| iban.to_owned(), |i| i.display_grouped())
}

/// The day part of an API date-time (`2026-11-28`), `—` when absent.
fn day(v: &Value) -> &str {
    v.as_str().and_then(|d| d.get(..10)).unwrap_or("—")
}

/// An account's latest balance with its day, or that none is recorded.
fn balance(a: &Value) -> String {
    match a["current_balance_minor"].as_i64() {
        Some(b) => format!(
            "{} on {}",
            money(b, s(a, "currency_code")),
            day(&a["balance_as_of"])
        ),
        None => "No balance recorded".to_owned(),
    }
}

/// `GET /bank-accounts`.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(lq): Query<ListQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "bank-accounts").await;
    let page = match client::list_page(&state, &signed.0, "/v1/bank-accounts?limit=50", &lq.cursor)
        .await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let rows = page.rows;
    let next = page.next.as_deref();
    layout(
        &ctx,
        "Bank accounts",
        html! {
            div.actions { a.button.primary href="/bank-accounts/new" { "New bank account" } }
            @if rows.is_empty() {
                p.empty { "No bank account yet. Invoices show the default account's IBAN for payment." }
            } @else {
                div.scroll { table.bank-accounts {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "IBAN" } th.wide-only scope="col" { "Currency" } th.num scope="col" { "Latest balance" } } }
                    tbody {
                        @for a in &rows {
                            tr {
                                td { a href=(page_of(s(a, "id"))) { (s(a, "name")) }
                                    @if a["is_main"].as_bool() == Some(true) { " " span.status { "default" } } }
                                td.iban { (iban_shown(s(a, "iban"))) }
                                td.wide-only { (s(a, "currency_code")) }
                                td.num {
                                    @if let Some(b) = a["current_balance_minor"].as_i64() {
                                        (money(b, s(a, "currency_code"))) br; span.muted { "on " (day(&a["balance_as_of"])) }
                                    } @else { span.muted { "none yet" } }
                                }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("/bank-accounts?cursor={}", enc(c))) { "Next page" } }
            }
        },
    )
}

/// `GET /bank-accounts/new`.
pub async fn new_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "bank-accounts").await;
    layout(
        &ctx,
        "New bank account",
        account_form(&ctx, "/bank-accounts", &HashMap::new(), None),
    )
}

/// `POST /bank-accounts`: creates the account, or shows the form again with the API's answer.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    let body = body_of(&post, false);
    match client::call(
        &state,
        &post.session,
        Method::POST,
        "/v1/bank-accounts",
        Some(&body),
    )
    .await
    {
        Ok(a) if a.ok() => {
            let created = a.json();
            redirect_with(
                &state,
                &page_of(s(&created, "id")),
                "ok",
                &format!("{} is saved.", s(&created, "name")),
            )
        }
        Ok(a) => again(&state, &headers, &post, None, &a.message()).await,
        Err(resp) => resp,
    }
}

/// `GET /bank-accounts/{id}`: the account in an edit form, with its balances.
pub async fn detail(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "bank-accounts").await;
    let detail = match client::get_json(
        &state,
        &signed.0,
        &format!("/v1/bank-accounts/{}", enc(&id)),
    )
    .await
    {
        Ok(d) => d,
        Err(resp) => return resp,
    };
    let account = &detail["account"];
    let values = values_of(account);
    let title = format!("Bank account: {}", s(account, "name"));
    layout(&ctx, &title, detail_body(&ctx, &id, &detail, &values))
}

/// `POST /bank-accounts/{id}`: saves the form as one `PATCH`.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let body = body_of(&post, true);
    match client::call(
        &state,
        &post.session,
        Method::PATCH,
        &format!("/v1/bank-accounts/{}", enc(&id)),
        Some(&body),
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(&state, &page_of(&id), "ok", "Changes saved."),
        Ok(a) => again(&state, &headers, &post, Some(&id), &a.message()).await,
        Err(resp) => resp,
    }
}

/// `GET /bank-accounts/{id}/delete`: asks before deleting.
pub async fn delete_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "bank-accounts").await;
    let detail = match client::get_json(
        &state,
        &signed.0,
        &format!("/v1/bank-accounts/{}", enc(&id)),
    )
    .await
    {
        Ok(d) => d,
        Err(resp) => return resp,
    };
    let account = &detail["account"];
    let name = s(account, "name");
    let snapshots = detail["snapshots"].as_array().map_or(0, Vec::len);
    layout(
        &ctx,
        &format!("Delete {name}?"),
        html! {
            p { "This removes the bank account " strong { (name) } " and its "
                (snapshots) @if snapshots == 1 { " recorded balance" } @else { " recorded balances" }
                ". It cannot be undone. Invoices already issued keep the account as they show it." }
            @if account["is_main"].as_bool() == Some(true) {
                p.notice role="note" { "This is the default account: the oldest remaining account becomes the default." }
            }
            div.actions {
                form method="post" action=(format!("{}/delete", page_of(&id))) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete " (name) }
                }
                a.button href=(page_of(&id)) { "Keep it" }
            }
        },
    )
}

/// `POST /bank-accounts/{id}/delete`.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    match client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/bank-accounts/{}", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(
            &state,
            "/bank-accounts",
            "ok",
            "The bank account is deleted.",
        ),
        Ok(a) => redirect_with(&state, "/bank-accounts", "error", &a.message()),
        Err(resp) => resp,
    }
}

/// `POST /bank-accounts/{id}/snapshots`: records a balance, typed in the account's currency.
pub async fn add_snapshot(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let back = page_of(&id);
    let detail = match client::get_json(
        &state,
        &post.session,
        &format!("/v1/bank-accounts/{}", enc(&id)),
    )
    .await
    {
        Ok(d) => d,
        Err(resp) => return resp,
    };
    let currency = s(&detail["account"], "currency_code");
    let text = post.field("balance");
    let Some(minor) = minor_units(text, currency) else {
        return redirect_with(
            &state,
            &back,
            "error",
            &format!("The balance must be an amount like 1250.00 or -80.50, not “{text}”."),
        );
    };
    let mut body = Map::new();
    body.insert("balance_minor".to_owned(), json!(minor));
    let on = post.field("as_of_date");
    if !on.is_empty() {
        let Ok(d) = chrono::NaiveDate::parse_from_str(on, "%Y-%m-%d") else {
            return redirect_with(
                &state,
                &back,
                "error",
                &format!("The day must be like 2026-11-28, not “{on}”."),
            );
        };
        body.insert("as_of_date".to_owned(), json!(format!("{d}T00:00:00Z")));
    }
    let note = post.field("note");
    if !note.is_empty() {
        body.insert("note".to_owned(), json!(note));
    }
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        &format!("/v1/bank-accounts/{}/snapshots", enc(&id)),
        Some(&Value::Object(body)),
    )
    .await;
    after(&state, &back, answer, "The balance is recorded.")
}

/// `POST /bank-accounts/{id}/snapshots/{sid}/delete`.
pub async fn delete_snapshot(
    State(state): State<WebState>,
    Path((id, sid)): Path<(String, String)>,
    post: Post,
) -> Response {
    let answer = client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/bank-accounts/{}/snapshots/{}", enc(&id), enc(&sid)),
        None,
    )
    .await;
    after(&state, &page_of(&id), answer, "The balance is deleted.")
}

/// The form again, with what was entered and what is wrong.
async fn again(
    state: &WebState,
    headers: &HeaderMap,
    post: &Post,
    id: Option<&str>,
    error: &str,
) -> Response {
    let signed = SignedIn(post.session.clone());
    let mut ctx = Ctx::new(state, &signed, headers, "bank-accounts").await;
    ctx.flash = Some(super::Flash::error(error));
    let mut resp = match id {
        Some(id) => {
            match client::get_json(
                state,
                &post.session,
                &format!("/v1/bank-accounts/{}", enc(id)),
            )
            .await
            {
                Ok(detail) => layout(
                    &ctx,
                    "Bank account",
                    detail_body(&ctx, id, &detail, &post.fields),
                ),
                Err(resp) => return resp,
            }
        }
        None => layout(
            &ctx,
            "New bank account",
            account_form(&ctx, "/bank-accounts", &post.fields, None),
        ),
    };
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp
}

/// The form's fields from an account of the API.
fn values_of(a: &Value) -> HashMap<String, String> {
    let mut v: HashMap<String, String> = TEXT_FIELDS
        .iter()
        .map(|(key, ..)| ((*key).to_owned(), s(a, key).to_owned()))
        .collect();
    if let Some(i) = v.get_mut("iban") {
        *i = iban_shown(i);
    }
    v
}

/// The API body of the form. On an update an emptied bank, IBAN or BIC is
/// cleared (`null`); the currency is only ever set, never cleared.
fn body_of(post: &Post, update: bool) -> Value {
    let mut body = Map::new();
    for (key, ..) in TEXT_FIELDS {
        let v = post.field(key);
        match *key {
            // Required: the API says when it is missing.
            "name" => {
                body.insert((*key).to_owned(), json!(v));
            }
            "currency_code" if v.is_empty() => {}
            "currency_code" => {
                body.insert((*key).to_owned(), json!(v.to_ascii_uppercase()));
            }
            _ if v.is_empty() => {
                if update {
                    body.insert((*key).to_owned(), Value::Null);
                }
            }
            _ => {
                body.insert((*key).to_owned(), json!(v));
            }
        }
    }
    if post.field("is_main") == "1" {
        body.insert("is_main".to_owned(), json!(true));
    }
    Value::Object(body)
}

/// The account's form; `main` is whether the stored account is the default.
fn account_form(
    ctx: &Ctx<'_>,
    action: &str,
    values: &HashMap<String, String>,
    main: Option<bool>,
) -> Markup {
    let v = |k: &str| values.get(k).map_or("", |s| s.trim());
    html! {
        form.card method="post" action=(action) {
            (ctx.csrf())
            @for (key, label, required) in TEXT_FIELDS {
                label for=(key) { (label) }
                input id=(key) name=(key) type="text" value=(v(key)) required[*required]
                    autocomplete="off" spellcheck=(if *key == "name" || *key == "bank_name" { "true" } else { "false" });
            }
            @if main == Some(true) {
                p { "This is the default account: new invoices show it for payment." }
            } @else {
                div.choice {
                    input id="is_main" name="is_main" type="checkbox" value="1" checked[v("is_main") == "1"];
                    label for="is_main" { "The default account (new invoices show it for payment)" }
                }
            }
            button.primary type="submit" { @if main.is_some() { "Save changes" } @else { "Create" } }
        }
    }
}

/// An account's page: its form, its balances and the form to record one.
fn detail_body(
    ctx: &Ctx<'_>,
    id: &str,
    detail: &Value,
    values: &HashMap<String, String>,
) -> Markup {
    let account = &detail["account"];
    let currency = s(account, "currency_code");
    let snapshots = detail["snapshots"].as_array().cloned().unwrap_or_default();
    let main = account["is_main"].as_bool() == Some(true);
    html! {
        p { "Latest balance: " strong { (balance(account)) } }
        (account_form(ctx, &page_of(id), values, Some(main)))
        p { a.button.danger href=(format!("{}/delete", page_of(id))) { "Delete this account…" } }
        h2 { "Balances" }
        form.card.inline-form method="post" action=(format!("{}/snapshots", page_of(id))) {
            (ctx.csrf())
            div { label for="balance" { "Balance (" (currency) ")" }
                input id="balance" name="balance" type="text" inputmode="decimal" required; }
            div { label for="as_of_date" { "On (empty: today)" }
                input id="as_of_date" name="as_of_date" type="date"; }
            div { label for="note" { "Note" }
                input id="note" name="note" type="text" maxlength="500"; }
            button.primary type="submit" { "Record balance" }
        }
        @if snapshots.is_empty() {
            p.empty { "No balance recorded yet." }
        } @else {
            div.scroll { table.snapshots {
                thead { tr { th scope="col" { "On" } th.num scope="col" { "Balance" } th scope="col" { "Note" } th scope="col" { span.visually-hidden { "Actions" } } } }
                tbody {
                    @for snap in &snapshots {
                        tr {
                            td { (day(&snap["as_of_date"])) }
                            td.num { (money(snap["balance_minor"].as_i64().unwrap_or(0), currency)) }
                            td { (s(snap, "note")) }
                            td {
                                form method="post" action=(format!("{}/snapshots/{}/delete", page_of(id), enc(s(snap, "id")))) {
                                    (ctx.csrf())
                                    button.danger type="submit" { "Delete balance of " (day(&snap["as_of_date"])) }
                                }
                            }
                        }
                    }
                }
            } }
        }
    }
}
