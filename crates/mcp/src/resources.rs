//! MCP resources: read-only JSON views of the company's data under `invoicing://`.
//!
//! Each URI maps to one or a few `GET`s on the API with the caller's token, so
//! the company is always the token's; another company's id is a 404 from the
//! API and a resource-not-found error here. Collections follow the API's
//! cursors up to [`MAX_LIST_ITEMS`] items and say when they stop early.

use axum::http::StatusCode;
use rmcp::{
    ErrorData as McpError,
    model::{Resource, ResourceContents, ResourceTemplate},
};
use serde_json::{Value, json};

use crate::api::{ApiClient, ApiError, ApiResponse};

/// The URI scheme of every resource.
pub const SCHEME: &str = "invoicing://";

/// Most items a collection resource returns (newest first); the rest is cut.
pub const MAX_LIST_ITEMS: usize = 5_000;

/// Page size asked of the API while walking a collection (its maximum).
const PAGE_SIZE: usize = 500;

const JSON: &str = "application/json";
const XML: &str = "application/xml";

/// The plain resources: `(path, name, description)`.
const PLAIN: &[(&str, &str, &str)] = &[
    (
        "company",
        "Company",
        "The company configuration of the calling token: name, fiscal id, address, reference \
         formats, default currency, custom placeholders.",
    ),
    (
        "entities",
        "Entities",
        "All customers and suppliers (entities) of the company, newest first. Their `id` is what \
         `create_invoice` takes as `recipient_id` and `create_expense` as `supplier_id`.",
    ),
    (
        "invoices",
        "Invoices",
        "All invoices (drafts and issued), newest first, each with `lineCount` and totals in \
         integer cents; read invoicing://invoices/{id} for the lines.",
    ),
    (
        "proformas",
        "Proformas",
        "All proformas, newest first, each with `lineCount`; read invoicing://proformas/{id} for \
         the lines.",
    ),
    (
        "expenses",
        "Expenses",
        "All expenses (supplier bills), newest first, each with `lineCount`; read \
         invoicing://expenses/{id} for the lines.",
    ),
    (
        "reports",
        "Reports",
        "All generated PDF business reports with their `status` (queued, rendering, ready, \
         failed), type, locale and period.",
    ),
    (
        "recurring-invoices",
        "Recurring invoices",
        "All recurring invoices, newest first: the draft each period gets, `frequency`, \
         `interval`, `start_date`, `end_date`, `auto_issue`, `auto_send`, `status` (active, \
         paused, ended), `next_run_date` and `last_error`.",
    ),
];

/// The resource templates: `(uri template path, name, description)`.
const TEMPLATES: &[(&str, &str, &str)] = &[
    (
        "entities/{id}",
        "Entity",
        "One customer or supplier entity by id.",
    ),
    (
        "entities/{id}/invoices",
        "Invoices of an entity",
        "Invoices billed to the entity (as recipient), newest first, each with `lineCount`.",
    ),
    (
        "entities/{id}/expenses",
        "Expenses of an entity",
        "Expenses received from the entity (as supplier), newest first, each with `lineCount`.",
    ),
    (
        "invoices/{id}",
        "Invoice",
        "One invoice with its lines, taxes and totals (integer cents), `payment_status`, and \
         `deliveries`: what was mailed to the customer (sends and reminders, newest first, \
         with `status` queued, sent or failed and `error`).",
    ),
    (
        "recurring-invoices/{id}",
        "Recurring invoice",
        "One recurring invoice: its schedule, `status`, `next_run_date` and `last_error`.",
    ),
    (
        "invoices/{id}/einvoice",
        "E-invoice",
        "An issued invoice as a structured e-invoice (XML as text) in the recipient's \
         e-invoice format, else UBL 2.1 (EN 16931): what the customer's accounting system \
         receives.",
    ),
    (
        "proformas/{id}",
        "Proforma",
        "One proforma with its lines, taxes and totals (integer cents).",
    ),
    (
        "expenses/{id}",
        "Expense",
        "One expense with its lines and totals (integer cents).",
    ),
    (
        "reports/{id}",
        "Report",
        "One report: type, locale, period, `status` and `error` if it failed.",
    ),
];

/// The plain resources, as listed by `resources/list`.
pub fn list() -> Vec<Resource> {
    PLAIN
        .iter()
        .map(|(path, name, description)| {
            Resource::new(format!("{SCHEME}{path}"), *name)
                .with_title(*name)
                .with_description(*description)
                .with_mime_type(JSON)
        })
        .collect()
}

/// The resource templates, as listed by `resources/templates/list`.
pub fn templates() -> Vec<ResourceTemplate> {
    TEMPLATES
        .iter()
        .map(|(path, name, description)| {
            ResourceTemplate::new(format!("{SCHEME}{path}"), *name)
                .with_title(*name)
                .with_description(*description)
                .with_mime_type(if path.ends_with("/einvoice") {
                    XML
                } else {
                    JSON
                })
        })
        .collect()
}

/// What a URI asks for.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// One object at an API path.
    One(String),
    /// An XML document at an API path, passed through as text.
    Xml(String),
    /// An invoice with its deliveries.
    Invoice(String),
    /// A collection at an API path; `strip_lines` drops each item's `lines`.
    List { path: String, strip_lines: bool },
    /// A collection filtered by an entity, which must exist in the company first.
    OfEntity {
        entity_id: String,
        path: String,
        filter: &'static str,
    },
}

/// Ids are UUIDs; anything else could smuggle a path or a query into the API call.
pub(crate) fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 100
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn parse(uri: &str) -> Option<Target> {
    let rest = uri.strip_prefix(SCHEME)?;
    let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    let list = |path: &str, strip_lines| Target::List {
        path: format!("/v1/{path}"),
        strip_lines,
    };
    Some(match parts.as_slice() {
        ["company"] => Target::One("/v1/company".into()),
        ["entities"] => list("entities", false),
        ["reports"] => list("reports", false),
        ["recurring-invoices"] => list("recurring-invoices", false),
        ["invoices", id] if is_valid_id(id) => Target::Invoice((*id).to_owned()),
        [c @ ("invoices" | "proformas" | "expenses")] => list(c, true),
        [
            c @ ("entities" | "proformas" | "expenses" | "reports" | "recurring-invoices"),
            id,
        ] if is_valid_id(id) => Target::One(format!("/v1/{c}/{id}")),
        ["invoices", id, "einvoice"] if is_valid_id(id) => {
            Target::Xml(format!("/v1/invoices/{id}/einvoice"))
        }
        ["entities", id, "invoices"] if is_valid_id(id) => Target::OfEntity {
            entity_id: (*id).to_owned(),
            path: "/v1/invoices".into(),
            filter: "recipient_id",
        },
        ["entities", id, "expenses"] if is_valid_id(id) => Target::OfEntity {
            entity_id: (*id).to_owned(),
            path: "/v1/expenses".into(),
            filter: "supplier_id",
        },
        _ => return None,
    })
}

/// Reads one resource with the caller's token.
pub async fn read(api: &ApiClient, token: &str, uri: &str) -> Result<ResourceContents, McpError> {
    let target = parse(uri).ok_or_else(|| {
        McpError::resource_not_found(
            format!(
                "Resource `{uri}` not found: resources are invoicing://company, entities, \
                 invoices, proformas, expenses, reports, recurring-invoices, and the templates \
                 invoicing://entities/{{id}}, entities/{{id}}/invoices, \
                 entities/{{id}}/expenses, invoices/{{id}}, invoices/{{id}}/einvoice, \
                 proformas/{{id}}, expenses/{{id}}, reports/{{id}}, recurring-invoices/{{id}}."
            ),
            None,
        )
    })?;
    let value = match target {
        Target::Xml(path) => {
            let answer = api.get(token, &path).await.map_err(unavailable)?;
            if !answer.status.is_success() {
                return Err(refused(uri, &answer));
            }
            return Ok(ResourceContents::text(answer.text(), uri).with_mime_type(XML));
        }
        Target::One(path) => fetch(api, token, uri, &path).await?,
        Target::Invoice(id) => {
            let mut invoice = fetch(api, token, uri, &format!("/v1/invoices/{id}")).await?;
            let deliveries = collect(
                api,
                token,
                uri,
                &format!("/v1/invoices/{id}/deliveries"),
                false,
            )
            .await?;
            if let Some(obj) = invoice.as_object_mut() {
                obj.insert(
                    "deliveries".into(),
                    deliveries.get("data").cloned().unwrap_or_else(|| json!([])),
                );
            }
            invoice
        }
        Target::List { path, strip_lines } => collect(api, token, uri, &path, strip_lines).await?,
        Target::OfEntity {
            entity_id,
            path,
            filter,
        } => {
            // The list filter alone would answer an empty list for another
            // company's entity; asking for the entity first makes it a 404.
            fetch(api, token, uri, &format!("/v1/entities/{entity_id}")).await?;
            let path = format!("{path}?{filter}={entity_id}");
            collect(api, token, uri, &path, true).await?
        }
    };
    let text = serde_json::to_string_pretty(&value)
        .map_err(|e| McpError::internal_error(format!("cannot encode {uri}: {e}"), None))?;
    Ok(ResourceContents::text(text, uri).with_mime_type(JSON))
}

async fn fetch(api: &ApiClient, token: &str, uri: &str, path: &str) -> Result<Value, McpError> {
    let answer = api.get(token, path).await.map_err(unavailable)?;
    if !answer.status.is_success() {
        return Err(refused(uri, &answer));
    }
    answer
        .json()
        .map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// Walks the API's pages (newest first) until the end or [`MAX_LIST_ITEMS`].
async fn collect(
    api: &ApiClient,
    token: &str,
    uri: &str,
    path: &str,
    strip_lines: bool,
) -> Result<Value, McpError> {
    let separator = if path.contains('?') { '&' } else { '?' };
    let mut items: Vec<Value> = Vec::new();
    let mut cursor: Option<String> = None;
    let truncated = loop {
        let mut page_path = format!("{path}{separator}limit={PAGE_SIZE}");
        if let Some(c) = &cursor {
            page_path.push_str("&cursor=");
            page_path.push_str(&encode_query_value(c));
        }
        let mut page = fetch(api, token, uri, &page_path).await?;
        let Some(data) = page.get_mut("data").and_then(Value::as_array_mut) else {
            return Err(McpError::internal_error(
                format!("the API list at {path} has no `data` array"),
                None,
            ));
        };
        let mut cut = false;
        for mut item in data.drain(..) {
            if items.len() == MAX_LIST_ITEMS {
                cut = true;
                break;
            }
            if strip_lines && let Some(obj) = item.as_object_mut() {
                obj.remove("lines");
            }
            items.push(item);
        }
        cursor = page
            .get("next_cursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        match cursor {
            _ if cut => break true,
            None => break false,
            Some(_) if items.len() >= MAX_LIST_ITEMS => break true,
            Some(_) => {}
        }
    };
    let count = items.len();
    let mut out = json!({ "data": items, "count": count, "truncated": truncated });
    if truncated {
        out["note"] = json!(format!(
            "Only the newest {MAX_LIST_ITEMS} items are included; older ones exist. Use the \
             HTTP API's paginated list for the rest."
        ));
    }
    Ok(out)
}

/// Percent-encodes a query value (cursors are URL-safe base64, but never trust that).
fn encode_query_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn unavailable(e: ApiError) -> McpError {
    McpError::internal_error(format!("{e}; try again shortly"), None)
}

/// The MCP error for a non-2xx API answer to a read.
fn refused(uri: &str, answer: &ApiResponse) -> McpError {
    let message = answer.error_message();
    match answer.status {
        StatusCode::NOT_FOUND => McpError::resource_not_found(
            format!("{uri} not found (no such id in this company): {message}"),
            None,
        ),
        StatusCode::BAD_REQUEST => McpError::invalid_params(message, None),
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            McpError::invalid_request(format!("The API refused to read {uri}: {message}"), None)
        }
        s => McpError::internal_error(
            format!("The API answered {s} when reading {uri}: {message}"),
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0190c0de-0000-7000-8000-000000000001";

    #[test]
    fn uris_map_to_api_paths() {
        assert_eq!(
            parse("invoicing://company"),
            Some(Target::One("/v1/company".into()))
        );
        assert_eq!(
            parse("invoicing://invoices"),
            Some(Target::List {
                path: "/v1/invoices".into(),
                strip_lines: true
            })
        );
        assert_eq!(
            parse("invoicing://entities"),
            Some(Target::List {
                path: "/v1/entities".into(),
                strip_lines: false
            })
        );
        assert_eq!(
            parse(&format!("invoicing://reports/{ID}")),
            Some(Target::One(format!("/v1/reports/{ID}")))
        );
        assert_eq!(
            parse(&format!("invoicing://entities/{ID}/expenses")),
            Some(Target::OfEntity {
                entity_id: ID.into(),
                path: "/v1/expenses".into(),
                filter: "supplier_id"
            })
        );
    }

    #[test]
    fn every_listed_uri_and_template_parses() {
        for r in list() {
            assert!(parse(&r.uri).is_some(), "{}", r.uri);
        }
        for t in templates() {
            let uri = t.uri_template.replace("{id}", ID);
            assert!(parse(&uri).is_some(), "{uri}");
        }
    }

    #[test]
    fn odd_uris_are_refused() {
        for uri in [
            "service://company",
            "invoicing://nothing",
            "invoicing://invoices/../company",
            "invoicing://invoices/a?b=c",
            "invoicing://invoices/a%2Fb",
            "invoicing://entities/x/reports",
            "invoicing://",
        ] {
            assert_eq!(parse(uri), None, "{uri}");
        }
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode_query_value("aZ0-_"), "aZ0-_");
        assert_eq!(encode_query_value("a+b/=&"), "a%2Bb%2F%3D%26");
    }
}
