//! The company fields of `/settings` that are not plain text: the ids, the
//! address, numbers, reminder days, the electronic address and the custom
//! placeholders. Each reads
//! from `GET /v1/company` and adds to the one `PATCH` only what changed.

use std::collections::HashMap;

use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::s;

/// Optional text fields: (API field, label). Empty clears them.
pub const IDS: &[(&str, &str)] = &[
    ("fiscalId", "Fiscal id (tax number)"),
    ("viesVatId", "EU VAT id (VIES)"),
    ("type", "Country and legal form (e.g. ES:SL, DE:GmbH)"),
    ("contactName", "Contact person"),
];

/// Whole-number fields: (API field, label).
const NUMBERS: &[(&str, &str)] = &[
    (
        "paymentTermsDays",
        "Payment terms (days from issue to due date)",
    ),
    (
        "firstInvoiceYearlyNumber",
        "First invoice number of the year",
    ),
    (
        "firstCorrectiveInvoiceYearlyNumber",
        "First corrective invoice number of the year",
    ),
];

/// Address fields: (form field, API field, label).
const ADDRESS: &[(&str, &str, &str)] = &[
    ("addr_zipcode", "zipcode", "Postcode"),
    ("addr_city", "city", "City"),
    ("addr_state", "state", "State or province"),
    ("addr_country", "country", "Country (ISO 3166 code)"),
];

/// Blank placeholder rows the form offers for new ones, after the company's.
const NEW_PLACEHOLDER_ROWS: usize = 2;
/// Most placeholder rows read from a form (the API keeps at most 50 placeholders).
const MAX_PLACEHOLDER_ROWS: usize = 50 + NEW_PLACEHOLDER_ROWS;

/// The company's placeholders as the form and the comparison see them:
/// `{"key","label","required","default"}` with `default` null when unset.
fn placeholders_now(c: &Value) -> Vec<Value> {
    c["customPlaceholders"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| {
                    json!({
                        "key": s(p, "key"),
                        "label": s(p, "label"),
                        "required": p["required"].as_bool().unwrap_or(false),
                        "default": p["default"].as_str().filter(|d| !d.is_empty()),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The placeholder rows: the company's, then blank ones for new placeholders.
fn placeholder_rows(c: &Value) -> Markup {
    let now = placeholders_now(c);
    let rows = (now.len() + NEW_PLACEHOLDER_ROWS).min(MAX_PLACEHOLDER_ROWS);
    let blank = json!({});
    html! {
        fieldset {
            legend { "Placeholders" }
            p.muted { "Each key becomes " code { "{{key}}" } " in the invoice footer and templates; every invoice gives it a value, or takes the default. Clear a key to remove its placeholder." }
            input type="hidden" name="ph_rows" value=(rows);
            @for i in 0..rows {
                @let p = now.get(i).unwrap_or(&blank);
                @let n = i + 1;
                div {
                    label for=(format!("ph_key_{i}")) { "Placeholder " (n) ": key (a-z, 0-9, _)" }
                    input id=(format!("ph_key_{i}")) name=(format!("ph_key_{i}")) type="text" value=(s(p, "key"));
                    label for=(format!("ph_label_{i}")) { "Placeholder " (n) ": label" }
                    input id=(format!("ph_label_{i}")) name=(format!("ph_label_{i}")) type="text" value=(s(p, "label"));
                    label for=(format!("ph_default_{i}")) { "Placeholder " (n) ": default value" }
                    input id=(format!("ph_default_{i}")) name=(format!("ph_default_{i}")) type="text" value=(s(p, "default"));
                    div.choice {
                        input id=(format!("ph_required_{i}")) name=(format!("ph_required_{i}")) type="checkbox" value="1" checked[p["required"].as_bool().unwrap_or(false)];
                        label for=(format!("ph_required_{i}")) { "Placeholder " (n) ": required on every invoice" }
                    }
                }
            }
        }
    }
}

/// The placeholders the form sends, in its order, or what to fix; `None` when the
/// form has no placeholder rows. The first `existing` rows were the company's: one whose
/// key was cleared is removed. A new row with a label or default but no key is refused.
fn placeholders_sent(
    fields: &HashMap<String, String>,
    existing: usize,
) -> Result<Option<Vec<Value>>, String> {
    let Some(rows) = fields.get("ph_rows") else {
        return Ok(None);
    };
    let rows: usize = rows
        .trim()
        .parse()
        .map_err(|_| "The placeholder rows could not be read; reload the page.".to_owned())?;
    let field = |name: String| fields.get(&name).map_or("", |v| v.trim());
    let mut list = Vec::new();
    for i in 0..rows.min(MAX_PLACEHOLDER_ROWS) {
        let key = field(format!("ph_key_{i}"));
        let label = field(format!("ph_label_{i}"));
        let default = field(format!("ph_default_{i}"));
        if key.is_empty() {
            if i >= existing && (!label.is_empty() || !default.is_empty()) {
                return Err(format!(
                    "Placeholder {}: give it a key, or clear its label and default to remove it.",
                    i + 1
                ));
            }
            continue;
        }
        list.push(json!({
            "key": key,
            "label": if label.is_empty() { key } else { label },
            "required": field(format!("ph_required_{i}")) == "1",
            "default": (!default.is_empty()).then_some(default),
        }));
    }
    Ok(Some(list))
}

/// The form's fieldsets for these fields, filled from the company `c`.
pub fn fields(c: &Value) -> Markup {
    let a = &c["address"];
    let lines: Vec<&str> = a["lines"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let reminders: Vec<String> = c["reminderDays"]
        .as_array()
        .map(|d| d.iter().map(Value::to_string).collect())
        .unwrap_or_default();
    let ea = &c["electronicAddress"];
    html! {
        fieldset {
            legend { "Ids and contact" }
            @for (key, label) in IDS {
                label for=(key) { (label) }
                input id=(key) name=(key) type="text" value=(s(c, key));
            }
        }
        fieldset {
            legend { "Address" }
            label for="addr_lines" { "Street address (one line each)" }
            textarea id="addr_lines" name="addr_lines" rows="2" { (lines.join("\n")) }
            @for (field, key, label) in ADDRESS {
                label for=(field) { (label) }
                input id=(field) name=(field) type="text" value=(s(a, key));
            }
        }
        fieldset {
            legend { "Payment, reminders and numbering" }
            @for (key, label) in NUMBERS {
                label for=(key) { (label) }
                input id=(key) name=(key) type="number" value=(c[*key].as_i64().map(|n| n.to_string()).unwrap_or_default());
            }
            label for="reminderDays" { "Reminders, in days after the due date (e.g. 7, 14, 30)" }
            input id="reminderDays" name="reminderDays" type="text" value=(reminders.join(", "));
        }
        fieldset {
            legend { "Electronic address (BT-34, for e-invoices)" }
            label for="ea_scheme" { "Scheme (EAS code, e.g. 0088, 9930, EM)" }
            input id="ea_scheme" name="ea_scheme" type="text" value=(s(ea, "scheme"));
            label for="ea_id" { "Id within the scheme" }
            input id="ea_id" name="ea_id" type="text" value=(s(ea, "id"));
        }
        (placeholder_rows(c))
    }
}

/// Adds to `patch` what the form changed of these fields, or says what is wrong.
pub fn changes(
    fields: &HashMap<String, String>,
    current: &Value,
    patch: &mut Map<String, Value>,
) -> Result<(), String> {
    let field = |k: &str| fields.get(k).map(|v| v.trim());
    for (key, _) in IDS {
        let Some(sent) = field(key) else { continue };
        if sent != s(current, key) {
            patch.insert(
                (*key).to_owned(),
                if sent.is_empty() && *key != "fiscalId" {
                    Value::Null
                } else {
                    json!(sent)
                },
            );
        }
    }
    for (key, label) in NUMBERS {
        let Some(sent) = field(key) else { continue };
        let n: i64 = sent
            .parse()
            .map_err(|_| format!("{label}: “{sent}” is not a whole number."))?;
        if current[*key].as_i64() != Some(n) {
            patch.insert((*key).to_owned(), json!(n));
        }
    }
    if let Some(sent) = field("reminderDays") {
        let days = sent
            .split([',', ';', ' '])
            .filter(|d| !d.is_empty())
            .map(|d| {
                d.parse::<i64>()
                    .map_err(|_| format!("Reminders: “{d}” is not a number of days."))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if current["reminderDays"] != json!(days) {
            patch.insert("reminderDays".to_owned(), json!(days));
        }
    }
    if let Some(lines) = field("addr_lines") {
        let lines: Vec<&str> = lines
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let mut address = Map::new();
        address.insert("lines".to_owned(), json!(lines));
        for (f, key, _) in ADDRESS {
            let v = field(f).unwrap_or("");
            if *key == "state" {
                address.insert(
                    (*key).to_owned(),
                    if v.is_empty() { Value::Null } else { json!(v) },
                );
            } else {
                address.insert((*key).to_owned(), json!(v));
            }
        }
        let mut now = current["address"].clone();
        if now.get("state").is_none()
            && let Some(o) = now.as_object_mut()
        {
            o.insert("state".to_owned(), Value::Null);
        }
        let address = Value::Object(address);
        if address != now {
            patch.insert("address".to_owned(), address);
        }
    }
    if let (Some(scheme), Some(id)) = (field("ea_scheme"), field("ea_id")) {
        let sent = match (scheme.is_empty(), id.is_empty()) {
            (true, true) => Value::Null,
            (false, false) => json!({"scheme": scheme, "id": id}),
            _ => {
                return Err(
                    "The electronic address needs both its scheme and its id; fill in both or neither."
                        .to_owned(),
                );
            }
        };
        if sent != current["electronicAddress"] {
            patch.insert("electronicAddress".to_owned(), sent);
        }
    }
    let now = placeholders_now(current);
    if let Some(sent) = placeholders_sent(fields, now.len())?
        && sent != now
    {
        patch.insert("customPlaceholders".to_owned(), Value::Array(sent));
    }
    Ok(())
}
