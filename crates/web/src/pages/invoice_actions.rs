//! What a person does with one invoice after writing it: issue it (after a
//! confirmation, since it cannot be undone), record payments, send it to the
//! customer, download its e-invoice, follow its deliveries and VERI*FACTU
//! records, correct it. Each is one `/v1` call.

use axum::{
    extract::{Path, Query, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, Response},
};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::{Ctx, after, entities::EINVOICE_FORMATS, error_page, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::money,
    session::{Session, SignedIn},
};

fn back(id: &str) -> String {
    format!("/invoices/{}", enc(id))
}

/// `GET /invoices/{id}/issue`: says what issuing means before doing it.
pub async fn confirm_issue(
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
    if s(&inv, "status") != "draft" {
        return redirect_with(
            &state,
            &back(&id),
            "error",
            "This invoice is already issued.",
        );
    }
    let customer = client::get_json(
        &state,
        &signed.0,
        &format!("/v1/entities/{}", enc(s(&inv, "recipient_id"))),
    )
    .await
    .map(|e| s(&e, "name").to_owned())
    .unwrap_or_default();
    let total = money(inv["total"].as_i64().unwrap_or(0), s(&inv, "currency_code"));
    layout(
        &ctx,
        "Issue this invoice?",
        html! {
            p { "You are about to issue the invoice to " strong { (customer) } " for " strong { (total) } "." }
            div.notice role="note" {
                p { strong { "Issuing cannot be undone." } " The invoice gets the next number of its series and can no longer be edited or deleted; "
                    "the law requires it to be kept as it is. A mistake is then fixed with a corrective invoice." }
            }
            div.actions {
                form method="post" action=(format!("/invoices/{}/issue", enc(&id))) {
                    (ctx.csrf())
                    button.primary type="submit" { "Yes, issue it" }
                }
                a.button href=(back(&id)) { "Not now" }
            }
        },
    )
}

/// `POST /invoices/{id}/issue`.
pub async fn issue(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    let back = back(&id);
    match client::call(
        &state,
        &post.session,
        Method::POST,
        &format!("/v1/invoices/{}/issue", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => {
            let inv = a.json();
            redirect_with(
                &state,
                &back,
                "ok",
                &format!("Issued as {}.", s(&inv, "reference")),
            )
        }
        Ok(a) if a.json()["error"] == "agreement_required" => redirect_with(
            &state,
            "/agreements",
            "error",
            "Accept the current legal documents first; then issue the invoice again.",
        ),
        Ok(a) => {
            let mut text = a.message();
            if a.json().get("requiresAuthorizationUrl").is_some() {
                text.push_str(" Settings → VERI*FACTU explains how to authorize.");
            }
            redirect_with(&state, &back, "error", &text)
        }
        Err(resp) => resp,
    }
}

/// `POST /invoices/{id}/delete`: deletes a draft (the API refuses an issued invoice).
pub async fn delete_draft(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    match client::call(
        &state,
        &post.session,
        Method::DELETE,
        &format!("/v1/invoices/{}", enc(&id)),
        None,
    )
    .await
    {
        Ok(a) if a.ok() => redirect_with(&state, "/invoices", "ok", "The draft is deleted."),
        Ok(a) => redirect_with(&state, &back(&id), "error", &a.message()),
        Err(resp) => resp,
    }
}

/// `POST /invoices/{id}/payments`: records a payment received.
pub async fn record_payment(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let back = back(&id);
    let currency = match client::get_json(
        &state,
        &post.session,
        &format!("/v1/invoices/{}", enc(&id)),
    )
    .await
    {
        Ok(inv) => s(&inv, "currency_code").to_owned(),
        Err(resp) => return resp,
    };
    let Some(amount) = super::invoice_form::minor_units(post.field("amount"), &currency) else {
        return redirect_with(
            &state,
            &back,
            "error",
            &format!(
                "The amount “{}” is not an amount in {currency}; write it like 1234.50.",
                post.field("amount")
            ),
        );
    };
    let mut body = Map::new();
    body.insert("amount_minor".to_owned(), json!(amount));
    let day = post.field("paid_on");
    if !day.is_empty() {
        match chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d") {
            Ok(d) => {
                body.insert("paid_at".to_owned(), json!(format!("{d}T12:00:00Z")));
            }
            Err(_) => {
                return redirect_with(
                    &state,
                    &back,
                    "error",
                    &format!("“{day}” is not a date (YYYY-MM-DD)."),
                );
            }
        }
    }
    if !post.field("note").is_empty() {
        body.insert("note".to_owned(), json!(post.field("note")));
    }
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        &format!("/v1/invoices/{}/payments", enc(&id)),
        Some(&Value::Object(body)),
    )
    .await;
    let done = format!("Payment of {} recorded.", money(amount, &currency));
    after(&state, &back, answer, &done)
}

/// `POST /invoices/{id}/send`: mails the invoice to the customer.
pub async fn send(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    let list = |k: &str| -> Vec<String> {
        post.field(k)
            .split([',', ';', ' ', '\n'])
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let mut body = Map::new();
    if !list("to").is_empty() {
        body.insert("to".to_owned(), json!(list("to")));
    }
    if !list("cc").is_empty() {
        body.insert("cc".to_owned(), json!(list("cc")));
    }
    if !post.field("message").is_empty() {
        body.insert("message".to_owned(), json!(post.field("message")));
    }
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        &format!("/v1/invoices/{}/send", enc(&id)),
        Some(&Value::Object(body)),
    )
    .await;
    let done = match &answer {
        Ok(a) if a.ok() => {
            let to: Vec<String> = a.json()["to"]
                .as_array()
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            format!("On its way to {}.", to.join(", "))
        }
        _ => String::new(),
    };
    after(&state, &back(&id), answer, &done)
}

/// The e-invoice format asked for.
#[derive(Debug, Default, serde::Deserialize)]
pub struct FormatQuery {
    #[serde(default)]
    format: String,
}

/// `GET /invoices/{id}/einvoice?format=`: the API's XML, as a download.
pub async fn einvoice(
    State(state): State<WebState>,
    signed: SignedIn,
    Path(id): Path<String>,
    Query(q): Query<FormatQuery>,
) -> Response {
    let mut path = format!("/v1/invoices/{}/einvoice", enc(&id));
    if !q.format.is_empty() {
        path.push_str(&format!("?format={}", enc(&q.format)));
    }
    let answer = match client::call(&state, &signed.0, Method::GET, &path, None).await {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return error_page(answer.status, "No e-invoice", &answer.message());
    }
    let content_type = answer
        .headers
        .get(header::CONTENT_TYPE)
        .cloned()
        .unwrap_or(HeaderValue::from_static("application/xml"));
    let name = if q.format.is_empty() {
        "einvoice".to_owned()
    } else {
        q.format.clone()
    };
    let mut resp = answer.bytes.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, content_type);
    h.insert(
        header::CONTENT_DISPOSITION,
        api::views::content_disposition(
            api::views::Disposition::Attachment,
            &format!("invoice-{id}-{name}.xml"),
        ),
    );
    resp
}

/// `POST /invoices/{id}/correct`: a corrective draft of an issued invoice, then its editor.
pub async fn correct(
    State(state): State<WebState>,
    Path(id): Path<String>,
    post: Post,
) -> Response {
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        &format!("/v1/invoices/{}/corrections", enc(&id)),
        Some(&json!({})),
    )
    .await;
    match answer {
        Ok(a) if a.status == StatusCode::CREATED => {
            let draft = a.json();
            redirect_with(
                &state,
                &format!("/invoices/{}/edit", enc(s(&draft, "id"))),
                "ok",
                "A corrective draft is ready; it reverses the invoice in full. Adjust its lines if only part is corrected, save, then issue it.",
            )
        }
        other => after(
            &state,
            &back(&id),
            other,
            "The request waits in the review queue.",
        ),
    }
}

/// The parts of an invoice's page that depend on its state: the actions of a
/// draft, or the payments, sending, e-invoice, deliveries and VERI*FACTU of an
/// issued invoice.
pub async fn sections(ctx: &Ctx<'_>, session: &Session, inv: &Value) -> Markup {
    let id = s(inv, "id");
    let currency = s(inv, "currency_code");
    if s(inv, "status") == "draft" {
        return html! {
            div.actions {
                a.button href=(format!("/invoices/{}/pdf", enc(id))) download { "Download PDF" }
                a.button href=(format!("/invoices/{}/edit", enc(id))) { "Edit draft" }
                a.button.primary href=(format!("/invoices/{}/issue", enc(id))) { "Issue this invoice…" }
            }
            details.confirm {
                summary { "Delete draft…" }
                p { "This deletes the draft with its lines. It has no number yet, so nothing is kept; it cannot be undone." }
                form method="post" action=(format!("/invoices/{}/delete", enc(id))) {
                    (ctx.csrf())
                    button.danger type="submit" { "Delete draft" }
                }
            }
        };
    }
    let list = |path: String| async move {
        client::get_json(ctx.state, session, &path)
            .await
            .map(|p| p["data"].as_array().cloned().unwrap_or_default())
            .unwrap_or_default()
    };
    let payments = list(format!("/v1/invoices/{}/payments", enc(id))).await;
    let deliveries = list(format!("/v1/invoices/{}/deliveries?limit=20", enc(id))).await;
    let records = list(format!("/v1/invoices/{}/verifactu", enc(id))).await;
    let outstanding = inv["total"].as_i64().unwrap_or(0) - inv["paid_minor"].as_i64().unwrap_or(0);
    let plain = super::invoice_form::plain_amount(outstanding.max(0), currency);
    html! {
        div.actions {
            a.button href=(format!("/invoices/{}/pdf", enc(id))) download { "Download PDF" }
            form.inline-form method="get" action=(format!("/invoices/{}/einvoice", enc(id))) {
                div { label for="format" { "E-invoice format" }
                    select id="format" name="format" {
                        @for (value, label) in EINVOICE_FORMATS {
                            option value=(value) { @if value.is_empty() { "The customer's (else UBL)" } @else { (label) } }
                        }
                    }
                }
                button type="submit" { "Download e-invoice" }
            }
            form method="post" action=(format!("/invoices/{}/correct", enc(id))) {
                (ctx.csrf())
                button type="submit" { "Correct this invoice" }
            }
        }
        h2 { "Payments" }
        @if payments.is_empty() { p.empty { "No payment recorded." } } @else {
            div.scroll { table.payments {
                thead { tr { th scope="col" { "Received" } th.num scope="col" { "Amount" } th scope="col" { "Note" } } }
                tbody { @for p in &payments { tr {
                    td { (when(&p["paid_at"])) }
                    td.num { (money(p["amount_minor"].as_i64().unwrap_or(0), currency)) }
                    td { (s(p, "note")) }
                } } }
            } }
        }
        @if outstanding > 0 && s(inv, "series") != "corrective" {
            form.card.inline-form method="post" action=(format!("/invoices/{}/payments", enc(id))) {
                (ctx.csrf())
                div { label for="amount" { "Amount received (" (currency) ")" } input id="amount" name="amount" type="text" inputmode="decimal" required value=(plain); }
                div { label for="paid_on" { "Received on" } input id="paid_on" name="paid_on" type="date"; }
                div { label for="note" { "Note" } input id="note" name="note" type="text"; }
                button.primary type="submit" { "Record payment" }
            }
        }
        h2 { "Send to the customer" }
        form.card method="post" action=(format!("/invoices/{}/send", enc(id))) {
            (ctx.csrf())
            label for="to" { "To (empty: the customer's e-mail)" }
            input id="to" name="to" type="text";
            label for="cc" { "Copy to" }
            input id="cc" name="cc" type="text";
            label for="message" { "A personal message (optional)" }
            textarea id="message" name="message" rows="3" {}
            div.actions { button.primary type="submit" { "Send invoice" } }
        }
        @if !deliveries.is_empty() {
            div.scroll { table.deliveries {
                caption { "Deliveries" }
                thead { tr { th scope="col" { "Queued" } th scope="col" { "What" } th scope="col" { "To" } th scope="col" { "Status" } } }
                tbody { @for d in &deliveries { tr {
                    td { (when(&d["created_at"])) }
                    td { (s(d, "kind")) }
                    td { (d["to"].as_array().map(|t| t.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                    td { span class=(format!("status {}", s(d, "status"))) { (s(d, "status")) }
                        @if !s(d, "error").is_empty() { " " span.error-text { (s(d, "error")) } } }
                } } }
            } }
        }
        @if !records.is_empty() {
            h2 { "VERI*FACTU" }
            div.scroll { table.verifactu {
                thead { tr { th scope="col" { "Record" } th scope="col" { "Status" } th scope="col" { "Answer" } } }
                tbody { @for r in &records { tr {
                    td { (s(r, "kind")) }
                    td { span class=(format!("status {}", s(r, "status"))) { (s(r, "status")) } }
                    td { (s(r, "aeat_description")) " " (s(r, "csv")) }
                } } }
            } }
        }
    }
}
