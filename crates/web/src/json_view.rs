//! What an AI agent asked for, in words and tables rather than raw JSON.

use std::collections::HashMap;

use maud::{Markup, html};
use serde_json::{Map, Value};

use crate::locale::Local;

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
/// (id -> name), the currency amounts are in, when known, and how the person
/// reading writes amounts and dates.
#[derive(Default)]
pub struct Known {
    pub names: HashMap<String, String>,
    pub currency: Option<String>,
    pub local: Local,
}

/// The payload as nested definition lists; arrays of objects become tables.
pub fn render(value: &Value, known: &Known) -> Markup {
    render_value(None, value, known, None)
}

/// The same, with the fields at every depth in the order the request sent them
/// (`raw` is the body as sent; a parsed `Value` keeps its keys sorted).
pub fn render_in_order(value: &Value, raw: &str, known: &Known) -> Markup {
    let order = serde_json::from_str::<Order>(raw).ok();
    render_value(None, value, known, order.as_ref())
}

/// The order a JSON body's keys were written in, at every depth. The body is a
/// small inline one (the review page reads no other) and serde_json limits its
/// depth; each object keeps at most [`MAX_KEYS`] keys in order (any others follow sorted).
enum Order {
    Object(Vec<(String, Order)>),
    Array(Vec<Order>),
    Leaf,
}

const MAX_KEYS: usize = 200;

impl Order {
    fn child(&self, key: &str) -> Option<&Order> {
        match self {
            Order::Object(keys) => keys.iter().find(|(k, _)| k == key).map(|(_, o)| o),
            _ => None,
        }
    }

    fn item(&self, i: usize) -> Option<&Order> {
        match self {
            Order::Array(items) => items.get(i),
            _ => None,
        }
    }
}

/// The keys of `map`: first as `order` wrote them, then any others.
fn keys_in_order<'m>(map: &'m Map<String, Value>, order: Option<&Order>) -> Vec<&'m str> {
    let mut keys: Vec<&str> = Vec::with_capacity(map.len());
    if let Some(Order::Object(sent)) = order {
        for (k, _) in sent {
            if let Some((key, _)) = map.get_key_value(k.as_str())
                && !keys.contains(&key.as_str())
            {
                keys.push(key.as_str());
            }
        }
    }
    for k in map.keys() {
        if !keys.contains(&k.as_str()) {
            keys.push(k.as_str());
        }
    }
    keys
}

impl<'de> serde::Deserialize<'de> for Order {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Order;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Order, A::Error> {
                let mut keys = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let inner = m.next_value::<Order>()?;
                    if keys.len() < MAX_KEYS {
                        keys.push((k, inner));
                    }
                }
                Ok(Order::Object(keys))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Order, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = s.next_element::<Order>()? {
                    items.push(item);
                }
                Ok(Order::Array(items))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_str<E>(self, _: &str) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
            fn visit_unit<E>(self) -> Result<Order, E> {
                Ok(Order::Leaf)
            }
        }
        d.deserialize_any(Visitor)
    }
}

fn render_value(key: Option<&str>, value: &Value, known: &Known, order: Option<&Order>) -> Markup {
    let child = |k: &str| order.and_then(|o| o.child(k));
    match value {
        Value::Object(map) if map.is_empty() => html! { span.muted { "(nothing)" } },
        Value::Object(map) => html! {
            dl.fields {
                @for k in keys_in_order(map, order) {
                    dt { (humanize(k)) }
                    dd { (render_value(Some(k), &map[k], known, child(k))) }
                }
            }
        },
        Value::Array(items) if items.is_empty() => html! { span.muted { "(none)" } },
        Value::Array(items) if items.iter().all(Value::is_object) => {
            let item_order = |i: usize| order.and_then(|o| o.item(i));
            let mut columns: Vec<&str> = Vec::new();
            for (i, item) in items.iter().enumerate() {
                if let Value::Object(m) = item {
                    for k in keys_in_order(m, item_order(i)) {
                        if !columns.contains(&k) {
                            columns.push(k);
                        }
                    }
                }
            }
            html! {
                div.scroll {
                    table {
                        thead { tr { @for c in &columns { th scope="col" { (humanize(c)) } } } }
                        tbody {
                            @for (i, item) in items.iter().enumerate() {
                                tr {
                                    @for c in &columns {
                                        td { (render_value(Some(*c), item.get(*c).unwrap_or(&Value::Null), known, item_order(i).and_then(|o| o.child(c)))) }
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
                @for (i, item) in items.iter().enumerate() {
                    li { (render_value(key, item, known, order.and_then(|o| o.item(i)))) }
                }
            }
        },
        Value::String(s) => match (known.names.get(s), known.local.date_text(s)) {
            (Some(name), _) => html! { (name) " " span.muted { "(" (s) ")" } },
            (None, Some(when)) => html! { time datetime=(s) { (when) } },
            (None, None) => html! { (s) },
        },
        Value::Number(n) => match (key, n.as_i64(), &known.currency) {
            (Some(k), Some(minor), Some(cur)) if is_money(k) => {
                html! { (known.local.money(minor, cur)) }
            }
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
    fn nested_fields_keep_the_order_they_were_sent_in() {
        let raw = r#"{"recipient_id": "c1", "lines": [{"unit_price": 1500, "concept": "A", "quantity": 2}],
                      "address": {"zipcode": "10115", "city": "Berlin"}}"#;
        let body: Value = serde_json::from_str(raw).unwrap();
        let out = render_in_order(&body, raw, &Known::default()).into_string();
        let at = |k: &str| out.find(k).unwrap_or_else(|| panic!("{k} in {out}"));
        assert!(
            at("Recipient") < at("Lines") && at("Lines") < at("Address"),
            "{out}"
        );
        assert!(at(">Unit price<") < at(">Concept<"), "{out}");
        assert!(at(">Concept<") < at(">Quantity<"), "{out}");
        assert!(at(">Zipcode<") < at(">City<"), "{out}");
        // A body that is not JSON still renders its parsed value, sorted.
        let sorted = render_in_order(&body, "not json", &Known::default()).into_string();
        assert!(
            sorted.find("Address") < sorted.find("Recipient"),
            "{sorted}"
        );
    }

    #[test]
    fn amounts_and_days_read_as_the_person_writes_them() {
        let body = serde_json::json!({"issue_date": "2026-01-31", "lines": [{"concept": "Consulting", "unit_price": 1_234_567}]});
        let spanish = Known {
            currency: Some("EUR".into()),
            local: Local::of("es_ES"),
            ..Known::default()
        };
        let out = render(&body, &spanish).into_string();
        assert!(out.contains("12.345,67 EUR"), "{out}");
        assert!(
            out.contains(r#"<time datetime="2026-01-31">31 ene 2026</time>"#),
            "{out}"
        );
        let english = Known {
            currency: Some("EUR".into()),
            ..Known::default()
        };
        let out = render(&body, &english).into_string();
        assert!(out.contains("12,345.67 EUR"), "{out}");
        assert!(out.contains(">Jan 31, 2026<"), "{out}");
        assert!(out.contains(">Consulting<"), "{out}");
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
