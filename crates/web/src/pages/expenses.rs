//! Expenses (`/expenses`): the list, recording and editing a supplier's bill.
//! Every read and write is a `/v1/expenses` call; receipts and e-invoice
//! imports are in `expense_files`.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::html;
use serde_json::{Map, Value, json};

use super::{Ctx, invoice_form::minor_units, invoice_form::plain_amount, layout, redirect_with, s};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::money,
    session::{Session, SignedIn},
};

/// Text inputs of the form: (form field, label, input type, required).
const TEXT_FIELDS: &[(&str, &str, &str, bool)] = &[
    (
        "invoice_reference",
        "Supplier's invoice number",
        "text",
        true,
    ),
    ("expense_date", "Date", "date", false),
    (
        "category",
        "Category (e.g. travel, software)",
        "text",
        false,
    ),
    ("description", "Description", "text", false),
    (
        "currency_code",
        "Currency (ISO 4217; empty: the supplier's)",
        "text",
        false,
    ),
];

/// The page of the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    cursor: String,
}

/// Names of the company's customers and suppliers by id (the first 500).
async fn suppliers(state: &WebState, session: &Session) -> Vec<(String, String)> {
    client::get_json(state, session, "/v1/entities?limit=500")
        .await
        .ok()
        .and_then(|p| p["data"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .map(|e| (s(e, "id").to_owned(), s(e, "name").to_owned()))
        .collect()
}

/// `GET /expenses`: newest first.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(lq): Query<ListQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "expenses").await;
    let page = match client::list_page(&state, &signed.0, "/v1/expenses?limit=50", &lq.cursor).await
    {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let names: HashMap<String, String> = suppliers(&state, &signed.0).await.into_iter().collect();
    let rows = page.rows;
    let next = page.next.as_deref();
    layout(
        &ctx,
        "Expenses",
        html! {
            div.actions {
                a.button.primary href="/expenses/new" { "New expense" }
            }
            (super::expense_files::import_form(&ctx))
            @if rows.is_empty() {
                p.empty { "No expense yet." }
            } @else {
                div.scroll { table.expenses {
                    thead { tr { th scope="col" { "Date" } th scope="col" { "Supplier" } th scope="col" { "Number" } th scope="col" { "Total" } th scope="col" { "Source" } } }
                    tbody {
                        @for e in &rows {
                            tr {
                                td { (s(e, "expense_date").get(..10).unwrap_or("")) }
                                td { (names.get(s(e, "supplier_id")).map_or("—", String::as_str)) }
                                td { a href=(format!("/expenses/{}", enc(s(e, "id")))) { (s(e, "invoice_reference")) } }
                                td.num { (money(e["total"].as_i64().unwrap_or(0), s(e, "currency_code"))) }
                                td { @if s(e, "source") == "einvoice" { "e-invoice" } @else { "manual" } }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("/expenses?cursor={}", enc(c))) { "Next page" } }
            }
        },
    )
}

/// `GET /expenses/new`.
pub async fn new_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "expenses").await;
    form_page(&ctx, "New expense", "/expenses", &HashMap::new(), None).await
}

/// `GET /expenses/{id}`: the expense in an edit form, with its receipt.
pub async fn edit_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "expenses").await;
    let e = match client::get_json(&state, &signed.0, &format!("/v1/expenses/{}", enc(&id))).await {
        Ok(e) => e,
        Err(resp) => return resp,
    };
    let title = format!("Expense {}", s(&e, "invoice_reference"));
    form_page(
        &ctx,
        &title,
        &format!("/expenses/{}", enc(&id)),
        &values_of(&e),
        Some(&e),
    )
    .await
}

/// `POST /expenses`: records the expense, or shows the form again with the API's answer.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    submit(&state, &headers, post, None).await
}

/// `POST /expenses/{id}`: saves the form as one `PATCH`.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    submit(&state, &headers, post, Some(id)).await
}

async fn submit(state: &WebState, headers: &HeaderMap, post: Post, id: Option<String>) -> Response {
    let (method, path, back) = match &id {
        Some(id) => (
            Method::PATCH,
            format!("/v1/expenses/{}", enc(id)),
            format!("/expenses/{}", enc(id)),
        ),
        None => (
            Method::POST,
            "/v1/expenses".to_owned(),
            "/expenses".to_owned(),
        ),
    };
    let currency = currency_of(state, &post).await;
    let body = match body_of(&post, &currency, id.is_some()) {
        Ok(b) => b,
        Err(e) => return again(state, headers, &post, &back, id.as_deref(), &e).await,
    };
    match client::call(state, &post.session, method, &path, Some(&body)).await {
        Ok(a) if a.status == StatusCode::ACCEPTED => redirect_with(
            state,
            "/expenses",
            "ok",
            "The request waits in the review queue.",
        ),
        Ok(a) if a.ok() => {
            let e = a.json();
            let text = if id.is_some() {
                "Changes saved."
            } else {
                "The expense is recorded."
            };
            redirect_with(
                state,
                &format!("/expenses/{}", enc(s(&e, "id"))),
                "ok",
                text,
            )
        }
        Ok(a) => again(state, headers, &post, &back, id.as_deref(), &a.message()).await,
        Err(resp) => resp,
    }
}

/// `POST /expenses/{id}/delete`: deletes the expense and its receipt.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    match client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/expenses/{}", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(&state, "/expenses", "ok", "The expense is deleted."),
        Ok(a) => redirect_with(
            &state,
            &format!("/expenses/{}", enc(&id)),
            "error",
            &a.message(),
        ),
        Err(resp) => resp,
    }
}

/// The form again, with what was entered and what is wrong.
async fn again(
    state: &WebState,
    headers: &HeaderMap,
    post: &Post,
    action: &str,
    id: Option<&str>,
    error: &str,
) -> Response {
    let signed = SignedIn(post.session.clone());
    let mut ctx = Ctx::new(state, &signed, headers, "expenses").await;
    ctx.flash = Some(super::Flash::error(error));
    let current = match id {
        Some(id) => client::get_json(state, &post.session, &format!("/v1/expenses/{}", enc(id)))
            .await
            .ok(),
        None => None,
    };
    let title = if id.is_some() {
        "Expense"
    } else {
        "New expense"
    };
    let mut resp = form_page(&ctx, title, action, &post.fields, current.as_ref()).await;
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp
}

/// The one net line and the one tax line the form edits, when the expense has no more.
fn simple_lines(e: &Value) -> Option<(Value, Option<Value>)> {
    let lines = e["lines"].as_array()?;
    let (tax, net): (Vec<&Value>, Vec<&Value>) = lines
        .iter()
        .partition(|l| l["is_tax"].as_bool() == Some(true));
    match (net.as_slice(), tax.as_slice()) {
        ([n], []) => Some(((*n).clone(), None)),
        ([n], [t]) => Some(((*n).clone(), Some((*t).clone()))),
        ([], []) => Some((Value::Null, None)),
        _ => None,
    }
}

/// The form's fields from an expense of the API.
fn values_of(e: &Value) -> HashMap<String, String> {
    let mut v = HashMap::new();
    let currency = s(e, "currency_code");
    for (key, ..) in TEXT_FIELDS {
        v.insert((*key).to_owned(), s(e, key).to_owned());
    }
    v.insert(
        "expense_date".to_owned(),
        s(e, "expense_date").get(..10).unwrap_or("").to_owned(),
    );
    v.insert("supplier_id".to_owned(), s(e, "supplier_id").to_owned());
    if let Some((net, tax)) = simple_lines(e) {
        v.insert("concept".to_owned(), s(&net, "concept").to_owned());
        if let Some(n) = net["subtotal"].as_i64() {
            v.insert("net".to_owned(), plain_amount(n, currency));
        }
        if let Some(t) = tax.and_then(|t| t["subtotal"].as_i64()) {
            v.insert("tax".to_owned(), plain_amount(t, currency));
        }
    } else {
        v.insert("lines_kept".to_owned(), "1".to_owned());
    }
    v
}

/// The currency the amounts are typed in: the form's, else the supplier's.
async fn currency_of(state: &WebState, post: &Post) -> String {
    let given = post.field("currency_code");
    if !given.is_empty() {
        return given.to_ascii_uppercase();
    }
    let id = post.field("supplier_id");
    if id.is_empty() {
        return String::new();
    }
    client::get_json(state, &post.session, &format!("/v1/entities/{}", enc(id)))
        .await
        .map(|e| s(&e, "currency_code").to_owned())
        .unwrap_or_default()
}

/// The API body of the form; empty optional fields are left out (on an edit
/// an empty category or description clears it). Amounts are
/// read in `currency` (its minor units).
fn body_of(post: &Post, currency: &str, update: bool) -> Result<Value, String> {
    let mut body = Map::new();
    body.insert("supplier_id".to_owned(), json!(post.field("supplier_id")));
    for (key, ..) in TEXT_FIELDS {
        let v = post.field(key);
        match *key {
            "invoice_reference" => {
                body.insert((*key).to_owned(), json!(v));
            }
            "expense_date" if !v.is_empty() => {
                let day = chrono::NaiveDate::parse_from_str(v, "%Y-%m-%d")
                    .map_err(|_| format!("The date must be a day like 2026-11-28, not “{v}”."))?;
                body.insert(key.to_string(), json!(format!("{day}T00:00:00Z")));
            }
            // On an edit an emptied category or description is cleared.
            "category" | "description" if v.is_empty() && update => {
                body.insert((*key).to_owned(), json!(""));
            }
            _ if v.is_empty() => {}
            _ => {
                body.insert((*key).to_owned(), json!(v));
            }
        }
    }
    if post.field("lines_kept") != "1" {
        let amount = |field: &str, what: &str| -> Result<Option<i64>, String> {
            let text = post.field(field);
            if text.is_empty() {
                return Ok(None);
            }
            minor_units(text, currency)
                .map(Some)
                .ok_or_else(|| format!("The {what} must be an amount like 120.50, not “{text}”."))
        };
        let net = amount("net", "net amount")?
            .ok_or_else(|| "Enter the net amount of the bill (before tax).".to_owned())?;
        let concept = match post.field("concept") {
            "" => "Expense",
            c => c,
        };
        let mut lines = vec![json!({"concept": concept, "subtotal": net})];
        if let Some(tax) = amount("tax", "tax amount")? {
            lines.push(json!({"concept": "VAT", "subtotal": tax, "is_tax": true}));
        }
        body.insert("lines".to_owned(), Value::Array(lines));
    }
    Ok(Value::Object(body))
}

/// The create or edit page; `current` is the stored expense when editing.
async fn form_page(
    ctx: &Ctx<'_>,
    title: &str,
    action: &str,
    values: &HashMap<String, String>,
    current: Option<&Value>,
) -> Response {
    let v = |k: &str| values.get(k).map_or("", |s| s.trim());
    let suppliers = suppliers(ctx.state, ctx.session).await;
    let chosen = v("supplier_id");
    let kept = v("lines_kept") == "1";
    let body = html! {
        form.card method="post" action=(action) {
            (ctx.csrf())
            label for="supplier_id" { "Supplier" }
            select id="supplier_id" name="supplier_id" required {
                option value="" { "Choose a supplier" }
                @for (id, name) in &suppliers {
                    option value=(id) selected[id == chosen] { (name) }
                }
            }
            @for (key, label, kind, required) in TEXT_FIELDS {
                label for=(key) { (label) }
                input id=(key) name=(key) type=(kind) value=(v(key)) required[*required];
            }
            @if kept {
                input type="hidden" name="lines_kept" value="1";
                p { "This expense has several lines (it was imported); they are kept as they are." }
            } @else {
                fieldset {
                    legend { "Amounts" }
                    label for="concept" { "What was bought" }
                    input id="concept" name="concept" type="text" value=(v("concept"));
                    label for="net" { "Net amount (before tax)" }
                    input id="net" name="net" type="text" inputmode="decimal" value=(v("net")) required;
                    label for="tax" { "Tax charged (VAT), if any" }
                    input id="tax" name="tax" type="text" inputmode="decimal" value=(v("tax"));
                }
            }
            button.primary type="submit" { @if current.is_some() { "Save changes" } @else { "Record expense" } }
        }
        @if let Some(e) = current {
            (super::expense_files::receipt_section(ctx, e))
            details.confirm {
                summary { "Delete expense…" }
                p { "This deletes the expense " strong { (s(e, "invoice_reference")) } " with its receipt. It cannot be undone." }
                form method="post" action=(format!("/expenses/{}/delete", enc(s(e, "id")))) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete expense" }
                }
            }
        }
    };
    layout(ctx, title, body)
}
