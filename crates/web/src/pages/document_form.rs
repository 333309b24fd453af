//! The form of a document written line by line: an invoice draft, a proforma,
//! a recurring invoice. One line editor and one tax preview for all three;
//! a [`Kind`] says what differs (the paths, the optional fields, a recurring
//! invoice's schedule).
//!
//! The form works without JavaScript: "Add a line" and "Preview taxes" are
//! submit buttons that show the form again, and a line is removed by ticking
//! its box. With the script, lines are added in place and the preview follows
//! every change (`POST /invoices/preview`, an HTML fragment). Saving is one
//! `POST` or `PATCH` of the kind's API path; the preview is
//! `POST /v1/taxes/prefill`: nothing here computes a tax.

use std::collections::HashMap;

use axum::{
    http::{HeaderMap, Method, StatusCode},
    response::Response,
};
use maud::{Markup, html};
use serde_json::{Map, Value, json};

use super::{Ctx, Flash, layout, redirect_with, s};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    json_view::money,
    session::{Session, SignedIn},
};

/// Most lines one form takes.
const MAX_LINES: usize = 200;

/// Most customers the form's picker lists at once (more are found with its search).
const MAX_PICKED: usize = 500;

/// An optional text or date field: (API field, label, input type).
pub type Detail = (&'static str, &'static str, &'static str);

/// What differs between the documents written with this form.
pub struct Kind {
    /// The nav entry to mark current.
    pub nav: &'static str,
    /// Where its pages are: `{web}/new`, `{web}/{id}`, `{web}/{id}/edit`.
    pub web: &'static str,
    /// Its API collection: `POST {api}`, `PATCH {api}/{id}`.
    pub api: &'static str,
    pub new_title: &'static str,
    pub edit_title: &'static str,
    /// Optional fields the API keeps for this kind.
    pub details: &'static [Detail],
    /// The label of its notes, when it has notes.
    pub notes: Option<&'static str>,
    /// The save button.
    pub save: &'static str,
    /// The message after a create, and after an update.
    pub created: &'static str,
    pub saved: &'static str,
    /// Fields of its own, shown before the lines (a recurring invoice's schedule).
    pub own_fields: Option<OwnFields>,
    /// Its own fields into the API body (`true`: an update), or what is wrong with them.
    pub own_body: Option<OwnBody>,
}

/// Shows a kind's own fields with the values typed.
pub type OwnFields = fn(&HashMap<String, String>) -> Markup;

/// Puts a kind's own fields into the API body.
pub type OwnBody =
    fn(&HashMap<String, String>, bool, &mut Map<String, Value>) -> Result<(), String>;

/// One line as typed.
#[derive(Debug, Default, Clone)]
struct LineIn {
    concept: String,
    quantity: String,
    unit: String,
    price: String,
}

/// A document as the form holds it: every value as typed.
#[derive(Debug, Default)]
pub struct Draft {
    pub values: HashMap<String, String>,
    lines: Vec<LineIn>,
}

impl Draft {
    /// A field as typed, trimmed; empty when absent.
    pub fn get(&self, key: &str) -> &str {
        self.values.get(key).map_or("", |v| v.trim())
    }

    /// From a posted form: lines `concept_N`… in order, those ticked `remove_N` left out.
    pub fn from_post(post: &Post) -> Self {
        let mut lines = Vec::new();
        for i in 0..MAX_LINES {
            let key = |k: &str| format!("{k}_{i}");
            if !["concept", "quantity", "unit", "price"]
                .iter()
                .any(|k| post.fields.contains_key(&key(k)))
            {
                continue;
            }
            if !post.field(&key("remove")).is_empty() {
                continue;
            }
            lines.push(LineIn {
                concept: post.field(&key("concept")).to_owned(),
                quantity: post.field(&key("quantity")).to_owned(),
                unit: post.field(&key("unit")).to_owned(),
                price: post.field(&key("price")).to_owned(),
            });
        }
        Self {
            values: post.fields.clone(),
            lines,
        }
    }

    /// From a document of the API (an invoice, a proforma, a recurring invoice's
    /// fields), its prices in `currency`.
    pub fn from_json(doc: &Value, kind: &Kind, currency: &str) -> Self {
        let mut values = HashMap::new();
        for key in ["recipient_id", "currency_code", "supply_type", "notes"] {
            values.insert(key.to_owned(), s(doc, key).to_owned());
        }
        for (key, ..) in kind.details {
            let v = s(doc, key);
            // A due date is an instant; the form shows its day.
            values.insert((*key).to_owned(), v.get(..10).unwrap_or(v).to_owned());
        }
        for v in doc["custom_placeholder_values"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            values.insert(placeholder_field(s(v, "key")), s(v, "value").to_owned());
        }
        let lines = doc["lines"]
            .as_array()
            .map(|ls| {
                ls.iter()
                    .map(|l| LineIn {
                        concept: s(l, "concept").to_owned(),
                        quantity: match &l["quantity"] {
                            Value::String(q) => q.clone(),
                            Value::Null => String::new(),
                            other => other.to_string(),
                        },
                        unit: s(l, "quantity_unit").to_owned(),
                        price: plain_amount(l["unit_price"].as_i64().unwrap_or(0), currency),
                    })
                    .collect()
            })
            .unwrap_or_default();
        Self { values, lines }
    }

    /// The lines for the API, in minor units of `currency`.
    fn api_lines(&self, currency: &str) -> Result<Vec<Value>, String> {
        let mut out = Vec::new();
        for (n, l) in self.lines.iter().enumerate() {
            let blank = l.quantity.is_empty() && l.unit.is_empty() && l.price.is_empty();
            if l.concept.is_empty() {
                if blank {
                    continue;
                }
                return Err(format!(
                    "Line {} has no description; write what it is for, or tick Remove.",
                    n + 1
                ));
            }
            let mut line = Map::new();
            line.insert("concept".to_owned(), json!(l.concept));
            if !l.quantity.is_empty() {
                line.insert("quantity".to_owned(), json!(l.quantity.replace(',', ".")));
            }
            if !l.unit.is_empty() {
                line.insert("quantity_unit".to_owned(), json!(l.unit));
            }
            let price = if l.price.is_empty() {
                0
            } else {
                minor_units(&l.price, currency).ok_or_else(|| {
                    format!(
                        "The unit price of line {} (“{}”) is not an amount in {currency}; write it like 1234.50.",
                        n + 1,
                        l.price
                    )
                })?
            };
            line.insert("unit_price".to_owned(), json!(price));
            out.push(Value::Object(line));
        }
        Ok(out)
    }

    /// The API body: on a create empty fields are left out, on an update they
    /// are cleared (`null`).
    fn api_body(&self, kind: &Kind, currency: &str, update: bool) -> Result<Value, String> {
        let mut body = Map::new();
        body.insert("recipient_id".to_owned(), json!(self.get("recipient_id")));
        body.insert("lines".to_owned(), json!(self.api_lines(currency)?));
        let supply = self.get("supply_type");
        if !supply.is_empty() {
            body.insert("supply_type".to_owned(), json!(supply));
        }
        let given = self.get("currency_code");
        if !given.is_empty() {
            body.insert(
                "currency_code".to_owned(),
                json!(given.to_ascii_uppercase()),
            );
        } else if update {
            // Back to the customer's (a draft or proforma keeps its own).
            body.insert("currency_code".to_owned(), Value::Null);
        }
        let notes = kind.notes.map(|_| "notes");
        for key in kind.details.iter().map(|d| d.0).chain(notes) {
            let v = self.get(key).replace("\r\n", "\n");
            if !v.is_empty() {
                body.insert(key.to_owned(), json!(v));
            } else if update {
                body.insert(key.to_owned(), Value::Null);
            }
        }
        // The placeholder values typed (the form shows one field per placeholder of the
        // company): on an update they replace the document's, on a create empty ones are
        // left to the customer's template and the company's defaults.
        let mut given: Vec<(&str, &str)> = self
            .values
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix(PLACEHOLDER_FIELD)?, v.trim())))
            .collect();
        given.sort_unstable();
        if update || given.iter().any(|(_, v)| !v.is_empty()) {
            let values: Vec<Value> = given
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| json!({"key": k, "value": v}))
                .collect();
            if !given.is_empty() {
                body.insert("custom_placeholder_values".to_owned(), json!(values));
            }
        }
        if let Some(own) = kind.own_body {
            own(&self.values, update, &mut body)?;
        }
        Ok(Value::Object(body))
    }
}

/// The form field of a placeholder's value: `phv_` and its key (keys are `a-z0-9_`).
const PLACEHOLDER_FIELD: &str = "phv_";

fn placeholder_field(key: &str) -> String {
    format!("{PLACEHOLDER_FIELD}{key}")
}

/// The company's placeholders, one field each for this document's value.
fn placeholder_fields(placeholders: &[Value], draft: &Draft) -> Markup {
    html! {
        @if !placeholders.is_empty() {
            fieldset {
                legend { "Placeholders" }
                @for p in placeholders {
                    @let field = placeholder_field(s(p, "key"));
                    @let required = p["required"].as_bool().unwrap_or(false);
                    label for=(field) {
                        (s(p, "label"))
                        @if required { " (required)" }
                    }
                    input id=(field) name=(field) type="text" maxlength="1000"
                        value=(draft.get(&field)) placeholder=(s(p, "default"));
                    @if !s(p, "default").is_empty() {
                        p.muted { "Empty: the customer's value, else " (s(p, "default")) "." }
                    }
                }
            }
        }
    }
}

/// `12550` in EUR -> `125.50` (no grouping: the form reads it back).
pub fn plain_amount(minor: i64, currency: &str) -> String {
    money(minor, currency)
        .split(' ')
        .next()
        .unwrap_or("0")
        .replace(',', "")
}

/// `1,234.5` (or `1234,5`) in EUR -> `123450`; `None` when it is not an amount.
pub fn minor_units(text: &str, currency: &str) -> Option<i64> {
    let digits = domain::currency::CurrencyCode::parse(currency)
        .map(|c| c.minor_units())
        .unwrap_or(2) as usize;
    let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let text = if text.contains('.') {
        text.replace(',', "")
    } else {
        text.replace(',', ".")
    };
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
        || frac.len() > digits
        || whole.len() > 15
    {
        return None;
    }
    let frac = format!("{frac:0<digits$}");
    let value: i64 = format!("{whole}{frac}").parse().ok()?;
    Some(if negative { -value } else { value })
}

/// The currency amounts are in: `given`, else the customer's.
pub async fn currency_of(
    state: &WebState,
    session: &Session,
    given: &str,
    recipient_id: &str,
) -> String {
    if !given.is_empty() {
        return given.to_ascii_uppercase();
    }
    if recipient_id.is_empty() {
        return String::new();
    }
    client::get_json(
        state,
        session,
        &format!("/v1/entities/{}", enc(recipient_id)),
    )
    .await
    .map(|e| s(&e, "currency_code").to_owned())
    .unwrap_or_default()
}

async fn draft_currency(state: &WebState, session: &Session, draft: &Draft) -> String {
    currency_of(
        state,
        session,
        draft.get("currency_code"),
        draft.get("recipient_id"),
    )
    .await
}

/// The form for a new document of `kind`.
pub async fn new_page(ctx: &Ctx<'_>, kind: &Kind, draft: &Draft) -> Response {
    let action = format!("{}/new", kind.web);
    page(ctx, kind, kind.new_title, &action, draft, 1, None).await
}

/// The form of the stored document `id`.
pub async fn edit_page(ctx: &Ctx<'_>, kind: &Kind, id: &str, draft: &Draft) -> Response {
    let action = format!("{}/{}/edit", kind.web, enc(id));
    page(ctx, kind, kind.edit_title, &action, draft, 1, None).await
}

/// A post of the form: add a line, preview, or save (`id`: the stored document).
/// Saved, it leads to the document's page; refused, the form comes back with
/// what was typed and what is wrong.
pub async fn submit(
    state: &WebState,
    headers: &HeaderMap,
    post: Post,
    id: Option<String>,
    kind: &Kind,
) -> Response {
    let draft = Draft::from_post(&post);
    let signed = SignedIn(post.session.clone());
    let mut ctx = Ctx::new(state, &signed, headers, kind.nav).await;
    let (title, action) = match &id {
        Some(id) => (kind.edit_title, format!("{}/{}/edit", kind.web, enc(id))),
        None => (kind.new_title, format!("{}/new", kind.web)),
    };
    match post.field("action") {
        "add_line" => return page(&ctx, kind, title, &action, &draft, 2, None).await,
        "find" => return page(&ctx, kind, title, &action, &draft, 0, None).await,
        "preview" => {
            let preview = preview(state, &post.session, &draft).await;
            return page(&ctx, kind, title, &action, &draft, 1, Some(preview)).await;
        }
        _ => {}
    }
    let currency = draft_currency(state, &post.session, &draft).await;
    let answer = match draft.api_body(kind, &currency, id.is_some()) {
        Ok(body) => {
            let (method, path) = match &id {
                Some(id) => (Method::PATCH, format!("{}/{}", kind.api, enc(id))),
                None => (Method::POST, kind.api.to_owned()),
            };
            client::call(state, &post.session, method, &path, Some(&body)).await
        }
        Err(e) => {
            ctx.flash = Some(Flash::error(&e));
            let mut resp = page(&ctx, kind, title, &action, &draft, 1, None).await;
            *resp.status_mut() = StatusCode::BAD_REQUEST;
            return resp;
        }
    };
    match answer {
        Ok(a) if a.status == StatusCode::ACCEPTED => redirect_with(
            state,
            kind.web,
            "ok",
            "The request waits in the review queue.",
        ),
        Ok(a) if a.ok() => {
            let doc = a.json();
            redirect_with(
                state,
                &format!("{}/{}", kind.web, enc(s(&doc, "id"))),
                "ok",
                if id.is_some() {
                    kind.saved
                } else {
                    kind.created
                },
            )
        }
        Ok(a) => {
            ctx.flash = Some(Flash::error(&a.message()));
            let mut resp = page(&ctx, kind, title, &action, &draft, 1, None).await;
            *resp.status_mut() = StatusCode::BAD_REQUEST;
            resp
        }
        Err(resp) => resp,
    }
}

/// The taxes of the form's lines, as the API computes them, or why it cannot.
pub async fn preview(state: &WebState, session: &Session, draft: &Draft) -> Markup {
    if draft.get("recipient_id").is_empty() {
        return html! { p.muted { "Choose the customer to see the taxes." } };
    }
    let currency = draft_currency(state, session, draft).await;
    let lines = match draft.api_lines(&currency) {
        Ok(l) if l.is_empty() => return html! { p.muted { "Add a line to see the taxes." } },
        Ok(l) => l,
        Err(e) => return html! { p.error-text { (e) } },
    };
    let mut body = json!({"recipient_id": draft.get("recipient_id"), "lines": lines});
    if !draft.get("supply_type").is_empty() {
        body["supply_type"] = json!(draft.get("supply_type"));
    }
    let answer = match client::call(
        state,
        session,
        Method::POST,
        "/v1/taxes/prefill",
        Some(&body),
    )
    .await
    {
        Ok(a) => a,
        Err(_) => return html! { p.error-text { "The preview is not available right now." } },
    };
    if !answer.ok() {
        return html! { p.error-text { (answer.message()) } };
    }
    let p = answer.json();
    let m = |k: &str| money(p[k].as_i64().unwrap_or(0), &currency);
    html! {
        table.preview {
            caption { "Tax preview" @if let Some(t) = p["treatment"].as_str() { " (" (t.replace('_', " ")) ")" } }
            thead { tr { th scope="col" { "Line" } th.num scope="col" { "Amount" } th scope="col" { "Taxes" } } }
            tbody {
                @for l in p["lines"].as_array().into_iter().flatten() {
                    tr {
                        td { (s(l, "concept")) }
                        td.num { (money(l["subtotal"].as_i64().unwrap_or(0), &currency)) }
                        td { @for t in l["tax_lines"].as_array().into_iter().flatten() {
                            (s(t, "kind").to_uppercase()) " " (s(t, "rate")) "%: " (money(t["amount"].as_i64().unwrap_or(0), &currency)) " "
                        } }
                    }
                }
            }
        }
        dl.fields.totals {
            dt { "Net" } dd.num { (m("net_total")) }
            dt { "Taxes" } dd.num { (m("tax_total")) }
            @if p["withholding_total"].as_i64().unwrap_or(0) != 0 { dt { "Withholding" } dd.num { (m("withholding_total")) } }
            dt { strong { "Total" } } dd.num.preview-total { strong { (m("total")) } }
        }
        @if let Some(lm) = p["legal_mention"].as_str() { p.muted { (lm) } }
    }
}

/// The form, with `extra` blank lines after the document's and the preview if asked.
async fn page(
    ctx: &Ctx<'_>,
    kind: &Kind,
    title: &str,
    action: &str,
    draft: &Draft,
    extra: usize,
    preview: Option<Markup>,
) -> Response {
    // The first 500 customers, or those matching what the person searched for; a company
    // with more is offered the search. The chosen customer is always an option.
    let q = draft.get("customer_q");
    let listed = client::get_json(
        ctx.state,
        ctx.session,
        &format!("/v1/entities?limit={MAX_PICKED}&q={}", enc(q)),
    )
    .await
    .ok();
    let more = listed
        .as_ref()
        .is_some_and(|p| p["next_cursor"].as_str().is_some());
    let mut customers = listed
        .map(|p| p["data"].as_array().cloned().unwrap_or_default())
        .unwrap_or_default();
    let chosen = draft.get("recipient_id");
    if !chosen.is_empty()
        && !customers.iter().any(|c| s(c, "id") == chosen)
        && let Ok(c) = client::get_json(
            ctx.state,
            ctx.session,
            &format!("/v1/entities/{}", enc(chosen)),
        )
        .await
    {
        customers.insert(0, c);
    }
    let placeholders = client::get_json(ctx.state, ctx.session, "/v1/company")
        .await
        .map(|c| {
            c["customPlaceholders"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .unwrap_or_default();
    let mut lines = draft.lines.clone();
    lines.extend(std::iter::repeat_n(LineIn::default(), extra));
    lines.truncate(MAX_LINES);
    let supply = draft.get("supply_type");
    layout(
        ctx,
        title,
        html! {
            @if customers.is_empty() && q.is_empty() {
                p.notice { "You have no customer yet. " a href="/entities/new" { "Add your first customer" } " first." }
            }
            form.card.invoice-form method="post" action=(action) data-preview="/invoices/preview" {
                (ctx.csrf())
                @if more || !q.is_empty() {
                    label for="customer_q" { "Find a customer (name or tax id)" }
                    div.choice {
                        input id="customer_q" name="customer_q" type="search" value=(q);
                        button type="submit" name="action" value="find" formnovalidate { "Find" }
                    }
                    @if customers.is_empty() { p.muted { "No customer matches “" (q) "”." } }
                    @if more { p.muted { "The list shows the first " (MAX_PICKED) (if q.is_empty() { "" } else { " that match" }) "; search to find others." } }
                }
                label for="recipient_id" { "Customer" }
                select id="recipient_id" name="recipient_id" required {
                    option value="" { "Choose…" }
                    @for c in &customers {
                        option value=(s(c, "id")) selected[s(c, "id") == chosen] { (s(c, "name")) }
                    }
                }
                label for="supply_type" { "What you supply" }
                select id="supply_type" name="supply_type" {
                    option value="services" selected[supply != "goods"] { "Services" }
                    option value="goods" selected[supply == "goods"] { "Goods" }
                }
                label for="currency_code" { "Currency (empty: the customer's)" }
                input id="currency_code" name="currency_code" type="text" maxlength="3" value=(draft.get("currency_code"));
                @if let Some(own) = kind.own_fields { (own(&draft.values)) }
                fieldset.lines {
                    legend { "Lines" }
                    div.scroll { table.lines-editor {
                        thead { tr { th scope="col" { "Description" } th scope="col" { "Quantity" } th scope="col" { "Unit" } th scope="col" { "Unit price" } th scope="col" { "Remove" } } }
                        tbody {
                            @for (i, l) in lines.iter().enumerate() {
                                (line_row(i, l))
                            }
                        }
                    } }
                }
                (placeholder_fields(&placeholders, draft))
                @if !kind.details.is_empty() || kind.notes.is_some() {
                    fieldset {
                        legend { "Details" }
                        @for (key, label, input_type) in kind.details {
                            label for=(key) { (label) }
                            input id=(key) name=(key) type=(input_type) value=(draft.get(key));
                        }
                        @if let Some(label) = kind.notes {
                            label for="notes" { (label) }
                            textarea id="notes" name="notes" rows="3" { (draft.get("notes")) }
                        }
                    }
                }
                section #preview aria-live="polite" {
                    @if let Some(p) = preview { (p) }
                }
                div.actions {
                    // The first button is the one Enter presses: saving.
                    button.primary type="submit" name="action" value="save" { (kind.save) }
                    button type="submit" name="action" value="add_line" formnovalidate { "Add a line" }
                    button type="submit" name="action" value="preview" formnovalidate { "Preview taxes" }
                }
            }
        },
    )
}

fn line_row(i: usize, l: &LineIn) -> Markup {
    let n = i + 1;
    html! {
        tr.line {
            td { input name=(format!("concept_{i}")) type="text" value=(l.concept) aria-label=(format!("Description of line {n}")); }
            td { input name=(format!("quantity_{i}")) type="text" inputmode="decimal" value=(l.quantity) placeholder="1" aria-label=(format!("Quantity of line {n}")); }
            td { input name=(format!("unit_{i}")) type="text" value=(l.unit) aria-label=(format!("Unit of line {n}")); }
            td { input name=(format!("price_{i}")) type="text" inputmode="decimal" value=(l.price) aria-label=(format!("Unit price of line {n}")); }
            td { input name=(format!("remove_{i}")) type="checkbox" aria-label=(format!("Remove line {n}")); }
        }
    }
}

/// The lines of a stored document as a table (concept, quantity, unit price, and
/// the subtotal when the API gives one).
pub fn lines_table(doc: &Value, currency: &str) -> Markup {
    let lines = doc["lines"].as_array().cloned().unwrap_or_default();
    let subtotals = lines.iter().any(|l| l["subtotal"].is_i64());
    html! {
        div.scroll { table {
            thead { tr {
                th scope="col" { "Concept" } th.num scope="col" { "Quantity" } th.num scope="col" { "Unit price" }
                @if subtotals { th.num scope="col" { "Subtotal" } }
            } }
            tbody {
                @for l in &lines {
                    tr {
                        td { (s(l, "concept")) }
                        td.num {
                            @match &l["quantity"] { Value::String(q) => { (q) } Value::Null => { "1" } other => { (other.to_string()) } }
                            " " (s(l, "quantity_unit"))
                        }
                        td.num { (money(l["unit_price"].as_i64().unwrap_or(0), currency)) }
                        @if subtotals { td.num { (money(l["subtotal"].as_i64().unwrap_or(0), currency)) } }
                    }
                }
            }
        } }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::{Draft, Kind, minor_units};

    const KIND: Kind = Kind {
        nav: "proformas",
        web: "/proformas",
        api: "/v1/proformas",
        new_title: "New",
        edit_title: "Edit",
        details: &[("buyer_reference", "Buyer reference", "text")],
        notes: None,
        save: "Save",
        created: "Created.",
        saved: "Saved.",
        own_fields: None,
        own_body: None,
    };

    #[test]
    fn amounts_in_minor_units() {
        assert_eq!(minor_units("125", "EUR"), Some(12500));
        assert_eq!(minor_units("1,234.5", "EUR"), Some(123450));
        assert_eq!(minor_units("12,5", "EUR"), Some(1250));
        assert_eq!(minor_units("-3.10", "EUR"), Some(-310));
        assert_eq!(minor_units("100", "JPY"), Some(100));
        assert_eq!(minor_units("1.5", "JPY"), None);
        assert_eq!(minor_units("1.234", "EUR"), None);
        assert_eq!(minor_units("abc", "EUR"), None);
        assert_eq!(minor_units("", "EUR"), None);
        assert_eq!(minor_units(".", "EUR"), None);
    }

    #[test]
    fn a_stored_document_comes_back_as_it_was_sent() {
        let doc = json!({"recipient_id": "c1", "currency_code": "EUR", "buyer_reference": "PO-7",
            "lines": [{"concept": "Hosting", "quantity": "2.5", "quantity_unit": "h", "unit_price": 12050},
                      {"concept": "Setup", "unit_price": 9900}]});
        let draft = Draft::from_json(&doc, &KIND, "EUR");
        let body = draft.api_body(&KIND, "EUR", false).expect("body");
        assert_eq!(
            body,
            json!({"recipient_id": "c1", "currency_code": "EUR", "buyer_reference": "PO-7",
                "lines": [{"concept": "Hosting", "quantity": "2.5", "quantity_unit": "h", "unit_price": 12050},
                          {"concept": "Setup", "unit_price": 9900}]})
        );
        // On an update, emptied fields are cleared; fields this kind does not have are never sent.
        let mut values = HashMap::new();
        values.insert("recipient_id".to_owned(), "c1".to_owned());
        values.insert("notes".to_owned(), "not a proforma field".to_owned());
        let emptied = Draft {
            values,
            lines: Vec::new(),
        };
        assert_eq!(
            emptied.api_body(&KIND, "EUR", true).expect("body"),
            json!({"recipient_id": "c1", "lines": [], "currency_code": null, "buyer_reference": null})
        );
    }
}
