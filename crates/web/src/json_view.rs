//! What an AI agent asked for, in words and tables rather than raw JSON.

use std::collections::HashMap;

use maud::{Markup, html};
use serde_json::Value;

/// A sentence for an audit action such as `invoices.bulk_issue`: "Bulk issue invoices".
pub fn describe_action(action: &str) -> String {
    let (resource, verb) = action.split_once('.').unwrap_or((action, ""));
    let resource = resource.replace('_', " ");
    let noun = if verb.starts_with("bulk") {
        resource
    } else {
        singular(&resource)
    };
    let words: Vec<&str> = verb.split('_').filter(|w| !w.is_empty()).collect();
    let sentence = match words.as_slice() {
        [] => noun,
        // POST /v1/bank-accounts/{id}/snapshots: a sub-resource added to a resource.
        [sub] if sub.ends_with('s') => format!("add {} to {noun}", singular(sub)),
        // PUT /v1/expenses/{id}/receipt, DELETE .../payments/{pid}: a verb on a part.
        [part @ .., last]
            if !part.is_empty() && ["create", "update", "replace", "delete"].contains(last) =>
        {
            format!("{last} {} of {noun}", singular(&part.join(" ")))
        }
        _ => format!("{} {noun}", words.join(" ")),
    };
    capitalize(&sentence)
}

fn singular(word: &str) -> String {
    if let Some(stem) = word.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = word.strip_suffix('s') {
        stem.to_owned()
    } else {
        word.to_owned()
    }
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `recipient_id` -> "Recipient", `unitPrice` -> "Unit price".
pub fn humanize(key: &str) -> String {
    let key = key.strip_suffix("_id").unwrap_or(key);
    let key = key.strip_suffix("Id").unwrap_or(key);
    let mut words = String::new();
    for (i, c) in key.chars().enumerate() {
        if c == '_' || c == '-' {
            words.push(' ');
        } else if c.is_uppercase() && i > 0 {
            words.push(' ');
            words.extend(c.to_lowercase());
        } else {
            words.push(c);
        }
    }
    capitalize(words.trim())
}

/// Keys whose integer values are amounts in minor units.
fn is_money(key: &str) -> bool {
    matches!(
        key,
        "unit_price"
            | "subtotal"
            | "tax_amount"
            | "amount"
            | "amount_minor"
            | "balance_minor"
            | "total"
            | "unit_price_minor"
            | "subtotal_minor"
            | "total_minor"
    )
}

/// Formats minor units in a currency: `123456` EUR -> `1,234.56 EUR`.
pub fn money(minor: i64, currency: &str) -> String {
    let digits = domain::currency::CurrencyCode::parse(currency)
        .map(|c| c.minor_units())
        .unwrap_or(2);
    let negative = minor < 0;
    let abs = minor.unsigned_abs();
    let scale = 10u64.pow(digits);
    let (whole, frac) = (abs / scale, abs % scale);
    let whole = whole.to_string();
    let mut grouped = String::new();
    for (i, c) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if negative { "-" } else { "" };
    if digits == 0 {
        format!("{sign}{grouped} {currency}")
    } else {
        format!(
            "{sign}{grouped}.{frac:0width$} {currency}",
            width = digits as usize
        )
    }
}

/// What the view knows besides the payload: names of the company's entities
/// (id -> name) and the currency amounts are in, when known.
#[derive(Default)]
pub struct Known {
    pub names: HashMap<String, String>,
    pub currency: Option<String>,
}

/// The payload as nested definition lists; arrays of objects become tables.
pub fn render(value: &Value, known: &Known) -> Markup {
    render_value(None, value, known)
}

/// The same, with the top-level fields in the order the request sent them
/// (`raw` is the body as sent; a parsed `Value` keeps its keys sorted).
pub fn render_in_order(value: &Value, raw: &str, known: &Known) -> Markup {
    let Value::Object(map) = value else {
        return render(value, known);
    };
    let mut keys: Vec<String> = serde_json::from_str::<KeysInOrder>(raw)
        .map(|k| k.0)
        .unwrap_or_default();
    keys.retain(|k| map.contains_key(k));
    for k in map.keys() {
        if !keys.contains(k) {
            keys.push(k.clone());
        }
    }
    if keys.is_empty() {
        return render(value, known);
    }
    html! {
        dl.fields {
            @for k in &keys {
                dt { (humanize(k)) }
                dd { (render_value(Some(k.as_str()), &map[k.as_str()], known)) }
            }
        }
    }
}

/// The keys of a JSON object in the order they are written.
struct KeysInOrder(Vec<String>);

impl<'de> serde::Deserialize<'de> for KeysInOrder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = KeysInOrder;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<KeysInOrder, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    m.next_value::<serde::de::IgnoredAny>()?;
                    if keys.len() < 200 {
                        keys.push(k);
                    }
                }
                Ok(KeysInOrder(keys))
            }
        }
        d.deserialize_map(Visitor)
    }
}

fn render_value(key: Option<&str>, value: &Value, known: &Known) -> Markup {
    match value {
        Value::Object(map) if map.is_empty() => html! { span.muted { "(nothing)" } },
        Value::Object(map) => html! {
            dl.fields {
                @for (k, v) in map {
                    dt { (humanize(k)) }
                    dd { (render_value(Some(k.as_str()), v, known)) }
                }
            }
        },
        Value::Array(items) if items.is_empty() => html! { span.muted { "(none)" } },
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let mut columns: Vec<&str> = Vec::new();
            for item in items {
                if let Value::Object(m) = item {
                    for k in m.keys() {
                        if !columns.contains(&k.as_str()) {
                            columns.push(k.as_str());
                        }
                    }
                }
            }
            html! {
                div.scroll {
                    table {
                        thead { tr { @for c in &columns { th scope="col" { (humanize(c)) } } } }
                        tbody {
                            @for item in items {
                                tr {
                                    @for c in &columns {
                                        td { (render_value(Some(*c), item.get(*c).unwrap_or(&Value::Null), known)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        Value::Array(items) => html! {
            ul.inline {
                @for item in items { li { (render_value(key, item, known)) } }
            }
        },
        Value::String(s) => match known.names.get(s) {
            Some(name) => html! { (name) " " span.muted { "(" (s) ")" } },
            None => html! { (s) },
        },
        Value::Number(n) => match (key, n.as_i64(), &known.currency) {
            (Some(k), Some(minor), Some(cur)) if is_money(k) => html! { (money(minor, cur)) },
            (Some(k), Some(_), None) if is_money(k) => {
                html! { (n) " " span.muted { "(minor units)" } }
            }
            _ => html! { (n) },
        },
        Value::Bool(b) => html! { (if *b { "Yes" } else { "No" }) },
        Value::Null => html! { span.muted { "—" } },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_read_as_sentences() {
        assert_eq!(describe_action("invoices.create"), "Create invoice");
        assert_eq!(describe_action("entities.update"), "Update entity");
        assert_eq!(
            describe_action("invoices.bulk_issue"),
            "Bulk issue invoices"
        );
        assert_eq!(
            describe_action("bank_accounts.snapshots"),
            "Add snapshot to bank account"
        );
        assert_eq!(
            describe_action("expenses.receipt_replace"),
            "Replace receipt of expense"
        );
        assert_eq!(
            describe_action("invoices.payments_delete"),
            "Delete payment of invoice"
        );
    }

    #[test]
    fn keys_and_money_read_naturally() {
        assert_eq!(humanize("recipient_id"), "Recipient");
        assert_eq!(humanize("unitPrice"), "Unit price");
        assert_eq!(money(123_456, "EUR"), "1,234.56 EUR");
        assert_eq!(money(-5, "EUR"), "-0.05 EUR");
        assert_eq!(money(1_000, "JPY"), "1,000 JPY");
        assert_eq!(money(1_234, "KWD"), "1.234 KWD");
    }

    #[test]
    fn fields_keep_the_order_they_were_sent_in() {
        let raw = r#"{"period_start": "2026-01-01", "period_end": "2026-01-31", "notes": "x"}"#;
        let body: Value = serde_json::from_str(raw).unwrap();
        let out = render_in_order(&body, raw, &Known::default()).into_string();
        let at = |k: &str| out.find(k).unwrap();
        assert!(at("Period start") < at("Period end"), "{out}");
        assert!(at("Period end") < at("Notes"), "{out}");
    }

    #[test]
    fn user_text_in_a_payload_is_escaped() {
        let body = serde_json::json!({"lines": [{"concept": "<script>alert(1)</script>", "unit_price": 1500}]});
        let known = Known {
            currency: Some("EUR".into()),
            ..Known::default()
        };
        let out = render(&body, &known).into_string();
        assert!(out.contains("&lt;script&gt;"), "{out}");
        assert!(!out.contains("<script>"), "{out}");
        assert!(out.contains("15.00 EUR"), "{out}");
        assert!(out.contains("<th scope=\"col\">Concept</th>"), "{out}");
    }
}
