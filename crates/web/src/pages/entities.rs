//! Customers and suppliers (`/entities`): the list with a search, creating,
//! editing (with the e-invoice settings a customer receives) and deleting
//! after a confirmation. Every read and write is a `/v1/entities` call.

use std::collections::HashMap;

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::{Ctx, layout, redirect_with, s};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

/// The e-invoice formats a customer may receive: (API value, label).
pub const EINVOICE_FORMATS: &[(&str, &str)] = &[
    ("", "Default (UBL)"),
    ("ubl", "UBL 2.1 (EN 16931)"),
    ("cii", "UN/CEFACT CII (EN 16931)"),
    ("xrechnung-ubl", "XRechnung (UBL)"),
    ("xrechnung-cii", "XRechnung (CII)"),
    ("peppol", "Peppol BIS Billing 3.0"),
    ("facturx", "Factur-X / ZUGFeRD (PDF)"),
    ("facturae", "Facturae 3.2.2 (Spain)"),
];

/// Text inputs of the form: (form field, label, input type, required).
const TEXT_FIELDS: &[(&str, &str, &str, bool)] = &[
    ("name", "Name", "text", true),
    (
        "type",
        "Country and legal form (e.g. DE:GmbH, ES:SL, IE:Individual)",
        "text",
        true,
    ),
    ("fiscal_id", "Fiscal id (tax number)", "text", false),
    ("vies_vat_id", "EU VAT id (VIES)", "text", false),
    ("email", "E-mail for invoices", "email", false),
    ("currency_code", "Currency (ISO 4217)", "text", false),
    (
        "payment_terms_days",
        "Payment terms in days (empty: the company's)",
        "number",
        false,
    ),
];

/// Address inputs (after the lines): (form field, label, required).
const ADDRESS_FIELDS: &[(&str, &str, bool)] = &[
    ("zipcode", "Postcode", false),
    ("city", "City", false),
    ("state", "State or province", false),
    ("country", "Country (ISO 3166 code, e.g. DE)", true),
];

/// The search and page of the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    cursor: String,
}

/// `GET /entities`.
pub async fn list(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Query(lq): Query<ListQuery>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "entities").await;
    let mut path = format!("/v1/entities?limit=50&q={}", enc(lq.q.trim()));
    if !lq.cursor.is_empty() {
        path.push_str(&format!("&cursor={}", enc(&lq.cursor)));
    }
    let answer = match client::call(&state, &signed.0, Method::GET, &path, None).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return redirect_with(&state, "/entities", "error", &answer.message());
    }
    let page = answer.json();
    let rows = page["data"].as_array().cloned().unwrap_or_default();
    let next = page["next_cursor"].as_str();
    layout(
        &ctx,
        "Customers and suppliers",
        html! {
            div.actions { a.button.primary href="/entities/new" { "New customer or supplier" } }
            form.card.filters method="get" action="/entities" role="search" {
                div { label for="q" { "Search by name or fiscal id" } input id="q" name="q" type="search" value=(lq.q) maxlength="200"; }
                button type="submit" { "Search" }
            }
            @if rows.is_empty() {
                p.empty { @if lq.q.trim().is_empty() { "No customer or supplier yet." } @else { "Nothing matches “" (lq.q.trim()) "”." } }
            } @else {
                div.scroll { table.entities {
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "Fiscal id" } th scope="col" { "E-mail" } } }
                    tbody {
                        @for e in &rows {
                            tr {
                                td { a href=(format!("/entities/{}", enc(s(e, "id")))) { (s(e, "name")) } }
                                td { (s(e, "type")) }
                                td { (s(e, "fiscal_id")) }
                                td { (s(e, "email")) }
                            }
                        }
                    }
                } }
            }
            @if let Some(c) = next {
                p { a.button href=(format!("/entities?q={}&cursor={}", enc(&lq.q), enc(c))) { "Next page" } }
            }
        },
    )
}

/// `GET /entities/new`.
pub async fn new_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "entities").await;
    let values = HashMap::new();
    form_page(&ctx, "New customer or supplier", "/entities", &values, None)
}

/// `GET /entities/{id}`: the entity in an edit form.
pub async fn edit_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "entities").await;
    let e = match client::get_json(&state, &signed.0, &format!("/v1/entities/{}", enc(&id))).await {
        Ok(e) => e,
        Err(resp) => return resp,
    };
    let values = values_of(&e);
    let title = format!("Customer or supplier: {}", s(&e, "name"));
    form_page(
        &ctx,
        &title,
        &format!("/entities/{}", enc(&id)),
        &values,
        Some(&id),
    )
}

/// `POST /entities`: creates the entity, or shows the form again with the API's answer.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    let body = match body_of(&post, false) {
        Ok(b) => b,
        Err(e) => return again(&state, &headers, &post, "/entities", None, &e).await,
    };
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        "/v1/entities",
        Some(&body),
    )
    .await;
    match answer {
        Ok(a) if a.ok() => {
            let e = a.json();
            redirect_with(
                &state,
                &format!("/entities/{}", enc(s(&e, "id"))),
                "ok",
                &format!("{} is saved.", s(&e, "name")),
            )
        }
        Ok(a) if a.status == StatusCode::ACCEPTED => redirect_with(
            &state,
            "/entities",
            "ok",
            "The request waits in the review queue.",
        ),
        Ok(a) => again(&state, &headers, &post, "/entities", None, &a.message()).await,
        Err(resp) => resp,
    }
}

/// `POST /entities/{id}`: saves the form as one `PATCH`.
pub async fn update(
    State(state): State<WebState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let back = format!("/entities/{}", enc(&id));
    let body = match body_of(&post, true) {
        Ok(b) => b,
        Err(e) => return again(&state, &headers, &post, &back, Some(&id), &e).await,
    };
    let answer = client::call(
        &state,
        &post.session,
        Method::PATCH,
        &format!("/v1/entities/{}", enc(&id)),
        Some(&body),
    )
    .await;
    match answer {
        Ok(a) if a.ok() => redirect_with(&state, &back, "ok", "Changes saved."),
        Ok(a) => again(&state, &headers, &post, &back, Some(&id), &a.message()).await,
        Err(resp) => resp,
    }
}

/// `GET /entities/{id}/delete`: asks before deleting.
pub async fn delete_form(
    State(state): State<WebState>,
    signed: SignedIn,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "entities").await;
    let e = match client::get_json(&state, &signed.0, &format!("/v1/entities/{}", enc(&id))).await {
        Ok(e) => e,
        Err(resp) => return resp,
    };
    let name = s(&e, "name");
    layout(
        &ctx,
        &format!("Delete {name}?"),
        html! {
            p { "This removes " strong { (name) } " from your customers and suppliers. It cannot be undone. "
                "A customer named by an invoice or proforma cannot be deleted." }
            div.actions {
                form method="post" action=(format!("/entities/{}/delete", enc(&id))) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete " (name) }
                }
                a.button href=(format!("/entities/{}", enc(&id))) { "Keep it" }
            }
        },
    )
}

/// `POST /entities/{id}/delete`.
pub async fn delete(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    let answer = client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/entities/{}", enc(&id)),
        None,
    )
    .await;
    match answer {
        Ok(a) if a.status == StatusCode::NO_CONTENT => {
            redirect_with(&state, "/entities", "ok", "Deleted.")
        }
        Ok(a) if a.ok() => redirect_with(
            &state,
            "/entities",
            "ok",
            "The request waits in the review queue.",
        ),
        Ok(a) => redirect_with(
            &state,
            &format!("/entities/{}", enc(&id)),
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
    let mut ctx = Ctx::new(state, &signed, headers, "entities").await;
    ctx.flash = Some(super::Flash::error(error));
    let title = if id.is_some() {
        "Customer or supplier"
    } else {
        "New customer or supplier"
    };
    let mut resp = form_page(&ctx, title, action, &post.fields, id);
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp
}

/// The form's fields from an entity of the API.
fn values_of(e: &Value) -> HashMap<String, String> {
    let mut v = HashMap::new();
    for (key, ..) in TEXT_FIELDS {
        let text = match &e[*key] {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            _ => String::new(),
        };
        v.insert((*key).to_owned(), text);
    }
    let a = &e["address"];
    let lines: Vec<&str> = a["lines"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    v.insert("lines".to_owned(), lines.join("\n"));
    for (key, ..) in ADDRESS_FIELDS {
        v.insert((*key).to_owned(), s(a, key).to_owned());
    }
    let ei = &e["einvoice"];
    v.insert("einvoice_format".to_owned(), s(ei, "format").to_owned());
    v.insert(
        "endpoint_scheme".to_owned(),
        s(&ei["endpoint"], "scheme").to_owned(),
    );
    v.insert(
        "endpoint_id".to_owned(),
        s(&ei["endpoint"], "id").to_owned(),
    );
    v.insert(
        "buyer_reference".to_owned(),
        s(ei, "buyer_reference").to_owned(),
    );
    v
}

/// The API body of a form. On an update every field is sent, an empty
/// optional one as `null` (cleared); on a create empty ones are left out.
fn body_of(post: &Post, update: bool) -> Result<Value, String> {
    let mut body = Map::new();
    let empty = |body: &mut Map<String, Value>, key: &str| {
        if update {
            body.insert(key.to_owned(), Value::Null);
        }
    };
    for (key, ..) in TEXT_FIELDS {
        let v = post.field(key);
        match *key {
            "payment_terms_days" if !v.is_empty() => {
                let days: i64 = v.parse().map_err(|_| {
                    format!("Payment terms must be a whole number of days, not “{v}”.")
                })?;
                body.insert((*key).to_owned(), json!(days));
            }
            // Required fields go as sent: the API says what is missing.
            "name" | "type" => {
                body.insert((*key).to_owned(), json!(v));
            }
            // The currency cannot be cleared, only left as it is.
            "currency_code" if v.is_empty() => {}
            _ if v.is_empty() => empty(&mut body, key),
            _ => {
                body.insert((*key).to_owned(), json!(v));
            }
        }
    }
    let lines: Vec<&str> = post
        .field("lines")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut address = Map::new();
    address.insert("lines".to_owned(), json!(lines));
    for (key, ..) in ADDRESS_FIELDS {
        let v = post.field(key);
        if !v.is_empty() || *key == "country" {
            address.insert((*key).to_owned(), json!(v));
        }
    }
    body.insert("address".to_owned(), Value::Object(address));
    let (format, scheme, id, buyer) = (
        post.field("einvoice_format"),
        post.field("endpoint_scheme"),
        post.field("endpoint_id"),
        post.field("buyer_reference"),
    );
    if scheme.is_empty() != id.is_empty() {
        return Err(
            "An electronic address needs both its scheme (e.g. 0204) and its id; fill in both or neither."
                .to_owned(),
        );
    }
    if format.is_empty() && scheme.is_empty() && buyer.is_empty() {
        empty(&mut body, "einvoice");
    } else {
        let mut ei = Map::new();
        if !format.is_empty() {
            ei.insert("format".to_owned(), json!(format));
        }
        if !scheme.is_empty() {
            ei.insert("endpoint".to_owned(), json!({"scheme": scheme, "id": id}));
        }
        if !buyer.is_empty() {
            ei.insert("buyer_reference".to_owned(), json!(buyer));
        }
        body.insert("einvoice".to_owned(), Value::Object(ei));
    }
    Ok(Value::Object(body))
}

/// The create or edit page.
fn form_page(
    ctx: &Ctx<'_>,
    title: &str,
    action: &str,
    values: &HashMap<String, String>,
    id: Option<&str>,
) -> Response {
    let v = |k: &str| values.get(k).map_or("", |s| s.trim());
    layout(
        ctx,
        title,
        html! {
            form.card method="post" action=(action) {
                (ctx.csrf())
                fieldset {
                    legend { "Who they are" }
                    @for (key, label, kind, required) in TEXT_FIELDS {
                        label for=(key) { (label) }
                        input id=(key) name=(key) type=(kind) value=(v(key)) required[*required];
                    }
                }
                fieldset {
                    legend { "Address" }
                    label for="lines" { "Street address (one line each)" }
                    textarea id="lines" name="lines" rows="3" { (v("lines")) }
                    @for (key, label, required) in ADDRESS_FIELDS {
                        label for=(key) { (label) }
                        input id=(key) name=(key) type="text" value=(v(key)) required[*required];
                    }
                }
                (einvoice_fields(values))
                button.primary type="submit" { @if id.is_some() { "Save changes" } @else { "Create" } }
            }
            @if let Some(id) = id {
                p { a.button.danger href=(format!("/entities/{}/delete", enc(id))) { "Delete…" } }
            }
        },
    )
}

fn einvoice_fields(values: &HashMap<String, String>) -> Markup {
    let v = |k: &str| values.get(k).map_or("", |s| s.trim());
    let current = v("einvoice_format");
    html! {
        fieldset {
            legend { "E-invoices to this customer" }
            label for="einvoice_format" { "E-invoice format" }
            select id="einvoice_format" name="einvoice_format" {
                @for (value, label) in EINVOICE_FORMATS {
                    option value=(value) selected[*value == current] { (label) }
                }
            }
            label for="endpoint_scheme" { "Electronic address scheme (EAS code, e.g. 0204, 9930, EM)" }
            input id="endpoint_scheme" name="endpoint_scheme" type="text" value=(v("endpoint_scheme"));
            label for="endpoint_id" { "Electronic address id (e.g. a Leitweg-ID or Peppol id)" }
            input id="endpoint_id" name="endpoint_id" type="text" value=(v("endpoint_id"));
            label for="buyer_reference" { "Buyer reference copied into new invoices (BT-10)" }
            input id="buyer_reference" name="buyer_reference" type="text" value=(v("buyer_reference"));
        }
    }
}
