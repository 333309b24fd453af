//! A queued AI request said as one sentence: "Create an invoice for Kunde AG,
//! 2 lines, 1,190.00 EUR". Amounts with taxes come from the API's own
//! preview (`POST /v1/taxes/prefill`, which writes nothing); names from the
//! entities the request refers to. Requests without a sentence of their own
//! keep the action's name.

use maud::{Markup, html};
use serde_json::{Value, json};

use super::s;
use crate::{
    WebState,
    client::{self, enc},
    json_view::Known,
    session::Session,
};

fn name_of<'k>(known: &'k Known, body: &Value, key: &str) -> Option<&'k str> {
    body.get(key)
        .and_then(Value::as_str)
        .and_then(|id| known.names.get(id))
        .map(String::as_str)
}

fn lines_count(body: &Value) -> usize {
    body["lines"].as_array().map_or(0, Vec::len)
}

fn lines_word(n: usize) -> String {
    if n == 1 {
        "1 line".to_owned()
    } else {
        format!("{n} lines")
    }
}

/// The sentence for a pending request, when its action has one.
pub async fn sentence(
    state: &WebState,
    session: &Session,
    action: &str,
    path: &str,
    body: Option<&Value>,
    known: &Known,
) -> Option<Markup> {
    let empty = json!({});
    let b = body.unwrap_or(&empty);
    match action {
        "invoices.create" | "proformas.create" => {
            let what = if action == "invoices.create" {
                "an invoice"
            } else {
                "a proforma"
            };
            let customer = name_of(known, b, "recipient_id").unwrap_or("an unknown customer");
            let total = total_of(state, session, b, known).await;
            Some(html! {
                "Create " (what) " for " strong { (customer) } ", " (lines_word(lines_count(b)))
                @if let Some(t) = total { ", " strong { (t) } }
            })
        }
        "expenses.create" => {
            let supplier = name_of(known, b, "supplier_id").unwrap_or("an unknown supplier");
            Some(html! {
                "Record an expense from " strong { (supplier) } ", " (lines_word(lines_count(b)))
                @if !s(b, "invoice_reference").is_empty() { ", their reference " (s(b, "invoice_reference")) }
            })
        }
        "entities.create" => Some(html! {
            "Add " strong { (s(b, "name")) }
            @if !s(b, "type").is_empty() { " (" (s(b, "type")) ")" }
            " to your customers and suppliers"
        }),
        "entities.update" => Some(html! { "Change a customer or supplier (now as below)" }),
        "entities.delete" => Some(html! { "Delete a customer or supplier (now as below)" }),
        "invoices.update" => Some(html! { "Change a draft invoice (now as below)" }),
        "invoices.delete" => Some(html! { "Delete a draft invoice (now as below)" }),
        "invoices.issue" => {
            Some(html! { "Issue an invoice: it gets its number and cannot be undone" })
        }
        "invoices.send" => Some(html! {
            "Send an invoice by e-mail"
            @if let Some(to) = b["to"].as_array() {
                " to " (to.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
            }
        }),
        "invoices.payments" => {
            let amount = b["amount_minor"].as_i64();
            Some(html! {
                "Record a payment"
                @if let (Some(a), Some(c)) = (amount, &known.currency) { " of " strong { (known.local.money(a, c)) } }
                " on an invoice"
            })
        }
        _ => {
            let _ = path;
            None
        }
    }
}

/// The total with taxes of an invoice request, as the API would compute it.
async fn total_of(state: &WebState, session: &Session, b: &Value, known: &Known) -> Option<String> {
    let recipient = b.get("recipient_id").and_then(Value::as_str)?;
    let mut ask =
        json!({"recipient_id": recipient, "lines": b.get("lines").cloned().unwrap_or(json!([]))});
    if let Some(st) = b.get("supply_type") {
        ask["supply_type"] = st.clone();
    }
    let answer = client::call(
        state,
        session,
        axum::http::Method::POST,
        "/v1/taxes/prefill",
        Some(&ask),
    )
    .await
    .ok()?;
    if !answer.ok() {
        return None;
    }
    let currency = match b.get("currency_code").and_then(Value::as_str) {
        Some(c) if !c.is_empty() => c.to_owned(),
        _ => match &known.currency {
            Some(c) => c.clone(),
            None => {
                let e =
                    client::get_json(state, session, &format!("/v1/entities/{}", enc(recipient)))
                        .await
                        .ok()?;
                s(&e, "currency_code").to_owned()
            }
        },
    };
    Some(
        known
            .local
            .money(answer.json()["total"].as_i64()?, &currency),
    )
}

/// Where the result of an approved request is seen, by the path it was sent to.
pub fn result_link(path: &str, id: &str) -> Option<(String, &'static str)> {
    let segments: Vec<&str> = path.trim_start_matches("/v1/").split('/').collect();
    match segments.first().copied() {
        Some("invoices") => Some((format!("/invoices/{}", enc(id)), "Open invoice")),
        Some("entities") => Some((
            format!("/entities/{}", enc(id)),
            "Open customer or supplier",
        )),
        _ => None,
    }
}
