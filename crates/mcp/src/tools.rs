//! MCP tools: the four write operations, each held for a person's approval.
//!
//! The tools and their JSON Schemas are written out by hand rather than
//! derived, so that what an agent sees is exactly the spec's table (field
//! names, required fields, enums, `date-time` formats) with a description on
//! every field; the list is built once at start-up and kept in the server.
//! Each call is checked against a typed shape, then forwarded to the API with
//! the caller's token. The API's AI gate validates it by a dry run: a request
//! that could never succeed comes back as a tool error with the API's
//! message and nothing recorded; otherwise an AI audit entry is recorded and
//! its id returned, and the action runs only once a person approves it.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::{Value, json};

use crate::api::ApiClient;

/// Names of the tools, in the order they are listed.
pub const NAMES: [&str; 4] = [
    "create_invoice",
    "create_expense",
    "generate_report",
    "delete_report",
];

const APPROVAL: &str = "Nothing happens at once: the request is validated, then held in the \
    company's AI review queue and the result gives the AI audit entry id (`auditEntryId`). It \
    runs only after a person approves that entry; tell the user so. Errors (unknown ids, \
    invalid values) come back at once as a tool error with the message to act on, and then \
    nothing is recorded.";

const MONEY: &str = "integer in minor units of the currency (cents): 1,234.50 EUR is 123450";

fn line_schema(subtotal_required: bool) -> Value {
    let required: Vec<&str> = if subtotal_required {
        vec!["concept", "subtotal"]
    } else {
        vec!["concept"]
    };
    json!({
        "type": "object",
        "properties": {
            "concept": {"type": "string", "description": "What the line is for, as printed on the document."},
            "quantity": {"type": "number", "description": "Quantity, decimals allowed; default 1."},
            "quantity_unit": {"type": "string", "description": "Unit label of the quantity, e.g. `hours`, `units`, `kg`."},
            "unit_price": {"type": "integer", "description": format!("Price of one unit, {MONEY}.")},
            "unit_unit": {"type": "string", "description": "Label of the price's unit, e.g. `EUR/hour`."},
            "is_tax": {"type": "boolean", "description": "True for an explicit tax line (give `tax_amount`); when any line is one, no taxes are computed for the document."},
            "tax_amount": {"type": "integer", "description": format!("Amount of an explicit tax line, {MONEY}.")},
            "subtotal": {"type": "integer", "description": if subtotal_required {
                format!("Line amount before taxes, {MONEY}.")
            } else {
                format!("Line amount before taxes, {MONEY}; default quantity × unit_price rounded half to even.")
            }},
        },
        "required": required,
        "additionalProperties": false,
    })
}

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

fn annotations(title: &str, destructive: bool) -> ToolAnnotations {
    ToolAnnotations::with_title(title)
        .read_only(false)
        .destructive(destructive)
        .idempotent(false)
        .open_world(false)
}

/// What every tool returns as `structuredContent` (the text block carries the same
/// object serialised, as the MCP specification asks for clients without structured output).
fn output_schema() -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["pending_approval", "done"], "description": "`pending_approval`: held in the AI review queue until a person approves it; `done`: it ran at once."},
            "auditEntryId": {"type": "string", "description": "Id of the AI audit entry a person approves or rejects (with `pending_approval`)."},
            "message": {"type": "string", "description": "What happens next, in words to relay to the user."},
            "result": {"description": "The API's answer (with `done`)."},
        },
        "required": ["status", "message"],
    }))
}

/// The tools with their schemas, descriptions and annotations.
pub fn all() -> Vec<Tool> {
    let create_invoice = json!({
        "type": "object",
        "properties": {
            "recipient_id": {"type": "string", "description": "Id of the customer entity billed; find it in the resource invoicing://entities."},
            "supply_type": {"type": "string", "enum": ["services", "goods"], "description": "Whether the invoice supplies services or goods (decides the VAT treatment of cross-border sales)."},
            "lines": {"type": "array", "items": line_schema(false), "description": "Invoice lines, in the order they appear on the invoice. Taxes are computed from the company and the recipient unless a line has `is_tax`."},
        },
        "required": ["recipient_id", "supply_type", "lines"],
        "additionalProperties": false,
    });
    let create_expense = json!({
        "type": "object",
        "properties": {
            "supplier_id": {"type": "string", "description": "Id of the supplier entity that sent the bill; find it in invoicing://entities."},
            "invoice_reference": {"type": "string", "minLength": 1, "description": "The supplier's invoice number; must be unique for this supplier (a duplicate is refused)."},
            "lines": {"type": "array", "items": line_schema(true), "description": "Lines of the bill; VAT charged by the supplier goes in a line with `is_tax` and `tax_amount`."},
            "expense_date": {"type": "string", "format": "date-time", "description": "Date of the bill, RFC 3339 (e.g. 2026-03-31T00:00:00Z); default now."},
            "currency_code": {"type": "string", "description": "ISO 4217 code, e.g. EUR; default the supplier's currency."},
            "category": {"type": "string", "description": "Free category label, e.g. `software`, `travel`."},
            "description": {"type": "string", "description": "Free description."},
        },
        "required": ["supplier_id", "invoice_reference", "lines"],
        "additionalProperties": false,
    });
    let generate_report = json!({
        "type": "object",
        "properties": {
            "report_type": {"type": "string", "enum": ["business_overview", "vat_summary", "profit_loss", "client_revenue", "expense_supplier"], "description": "Which PDF report to generate."},
            "period_start": {"type": "string", "format": "date-time", "description": "Start of the period, inclusive, RFC 3339 (e.g. 2026-01-01T00:00:00Z)."},
            "period_end": {"type": "string", "format": "date-time", "description": "End of the period, exclusive, RFC 3339 (e.g. 2026-04-01T00:00:00Z); must be after period_start."},
            "locales": {"type": "array", "items": {"type": "string"}, "description": "One report per locale, numbers formatted per region (e.g. `en`, `es`, `es_ES`, `es_MX`); default one report in the requesting user's language."},
        },
        "required": ["report_type", "period_start", "period_end"],
        "additionalProperties": false,
    });
    let delete_report = json!({
        "type": "object",
        "properties": {
            "report_id": {"type": "string", "description": "Id of the report to delete; find it in invoicing://reports."},
        },
        "required": ["report_id"],
        "additionalProperties": false,
    });
    vec![
        Tool::new(
            "create_invoice",
            format!(
                "Create a draft invoice for a customer (mirrors POST /v1/invoices). Amounts are \
                 {MONEY}. {APPROVAL} After approval the draft exists (read it at \
                 invoicing://invoices/{{id}}); issuing it is done by a person over HTTP."
            ),
            schema(create_invoice),
        )
        .with_title("Create a draft invoice")
        .with_annotations(annotations("Create a draft invoice", false))
        .with_raw_output_schema(output_schema()),
        Tool::new(
            "create_expense",
            format!(
                "Record an expense: a bill received from a supplier (mirrors POST /v1/expenses). \
                 Amounts are {MONEY}. {APPROVAL} After approval it is listed at \
                 invoicing://expenses. Receipt files cannot be attached over MCP."
            ),
            schema(create_expense),
        )
        .with_title("Record an expense")
        .with_annotations(annotations("Record an expense", false))
        .with_raw_output_schema(output_schema()),
        Tool::new(
            "generate_report",
            format!(
                "Generate PDF business reports for a period (mirrors POST /v1/reports). {APPROVAL} \
                 After approval one report per locale is rendered in the background (see its \
                 `status` at invoicing://reports) and the requester is e-mailed a download link."
            ),
            schema(generate_report),
        )
        .with_title("Generate a business report")
        .with_annotations(annotations("Generate a business report", false))
        .with_raw_output_schema(output_schema()),
        Tool::new(
            "delete_report",
            format!(
                "Delete a generated report and its stored PDF (mirrors DELETE /v1/reports/{{id}}). \
                 {APPROVAL} After approval the report is gone for good."
            ),
            schema(delete_report),
        )
        .with_title("Delete a report")
        .with_annotations(annotations("Delete a report", true))
        .with_raw_output_schema(output_schema()),
    ]
}

/// A line of `create_invoice` (only `concept` required) or `create_expense`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct Line {
    concept: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    quantity: Option<serde_json::Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quantity_unit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit_price: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unit_unit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_tax: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tax_amount: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subtotal: Option<i64>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CreateInvoice {
    recipient_id: String,
    supply_type: SupplyType,
    lines: Vec<Line>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
enum SupplyType {
    Services,
    Goods,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct CreateExpense {
    supplier_id: String,
    invoice_reference: String,
    lines: Vec<Line>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expense_date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    currency_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
enum ReportType {
    BusinessOverview,
    VatSummary,
    ProfitLoss,
    ClientRevenue,
    ExpenseSupplier,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct GenerateReport {
    report_type: ReportType,
    period_start: String,
    period_end: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    locales: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteReport {
    report_id: String,
}

/// A tool call checked and turned into an API request.
#[derive(Debug)]
struct Forward {
    method: Method,
    path: String,
    body: Option<Value>,
    /// What happens once approved, for the result message.
    after_approval: &'static str,
}

fn args<T: DeserializeOwned>(tool: &str, arguments: Option<JsonObject>) -> Result<T, String> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| {
        format!("Invalid arguments for {tool}: {e}. The tool's input schema lists every field.")
    })
}

fn body<T: Serialize>(v: &T) -> Result<Option<Value>, String> {
    serde_json::to_value(v)
        .map(Some)
        .map_err(|e| format!("cannot encode the request: {e}"))
}

fn forward(name: &str, arguments: Option<JsonObject>) -> Result<Forward, String> {
    match name {
        "create_invoice" => {
            let a: CreateInvoice = args(name, arguments)?;
            Ok(Forward {
                method: Method::POST,
                path: "/v1/invoices".into(),
                body: body(&a)?,
                after_approval: "the draft invoice is created (the audit entry's resourceId is \
                                 its id; it then appears in invoicing://invoices)",
            })
        }
        "create_expense" => {
            let a: CreateExpense = args(name, arguments)?;
            if a.lines.iter().any(|l| l.subtotal.is_none()) {
                return Err("Every expense line needs `subtotal` (integer cents).".into());
            }
            Ok(Forward {
                method: Method::POST,
                path: "/v1/expenses".into(),
                body: body(&a)?,
                after_approval: "the expense is recorded (it then appears in \
                                 invoicing://expenses)",
            })
        }
        "generate_report" => {
            let a: GenerateReport = args(name, arguments)?;
            Ok(Forward {
                method: Method::POST,
                path: "/v1/reports".into(),
                body: body(&a)?,
                after_approval: "the reports are generated in the background (follow their \
                                 status in invoicing://reports) and the requester is e-mailed \
                                 a download link",
            })
        }
        "delete_report" => {
            let a: DeleteReport = args(name, arguments)?;
            if !crate::resources::is_valid_id(&a.report_id) {
                return Err(format!(
                    "`report_id` `{}` is not a report id; find ids in invoicing://reports.",
                    a.report_id
                ));
            }
            Ok(Forward {
                method: Method::DELETE,
                path: format!("/v1/reports/{}", a.report_id),
                body: None,
                after_approval: "the report and its PDF are deleted",
            })
        }
        other => Err(format!(
            "Unknown tool `{other}`: the tools are {}.",
            NAMES.join(", ")
        )),
    }
}

/// A successful result: the object as `structuredContent` and, serialised, as its text.
fn structured(value: Value) -> CallToolResult {
    let text = value.to_string();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

fn error_result(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// Runs a tool call with the caller's token; every failure is a tool error the agent can read.
pub async fn call(
    api: &ApiClient,
    token: &str,
    name: &str,
    arguments: Option<JsonObject>,
) -> CallToolResult {
    let f = match forward(name, arguments) {
        Ok(f) => f,
        Err(message) => return error_result(message),
    };
    let answer = match api
        .send(f.method.clone(), token, &f.path, f.body.as_ref())
        .await
    {
        Ok(a) => a,
        Err(e) => return error_result(format!("{e}. Nothing was recorded; try again shortly.")),
    };
    match answer.status {
        StatusCode::ACCEPTED => {
            let held = answer.json().unwrap_or(Value::Null);
            let Some(entry) = held["auditEntryId"].as_str() else {
                return error_result(format!(
                    "The API answered 202 without an audit entry id: {}",
                    answer.text()
                ));
            };
            let text = format!(
                "Held for approval as AI audit entry {entry}. A person must approve it in the \
                 review queue (in the web app, or POST /v1/ai-audit/{entry}/approve with their \
                 human proof) before anything happens; once approved, {}. If they reject it, \
                 nothing happens.",
                f.after_approval
            );
            structured(json!({
                "status": "pending_approval",
                "auditEntryId": entry,
                "message": text,
            }))
        }
        s if s.is_success() => {
            // Only a person's request runs at once; the MCP server never is one,
            // but report faithfully if the API ever says it was done.
            let done = answer.json().unwrap_or(Value::Null);
            structured(json!({
                "status": "done",
                "message": format!("Done at once (HTTP {s})."),
                "result": done,
            }))
        }
        s if s.is_client_error() => error_result(format!(
            "Refused (HTTP {}): {} Nothing was recorded.",
            s.as_u16(),
            answer.error_message()
        )),
        s => error_result(format!(
            "The invoicing API failed (HTTP {}): {} Nothing was recorded; try again later.",
            s.as_u16(),
            answer.error_message()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Option<JsonObject> {
        match v {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    #[test]
    fn tools_match_the_spec_table() {
        let tools = all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, NAMES);
        let required = |i: usize| tools[i].input_schema["required"].clone();
        assert_eq!(required(0), json!(["recipient_id", "supply_type", "lines"]));
        assert_eq!(
            required(1),
            json!(["supplier_id", "invoice_reference", "lines"])
        );
        assert_eq!(
            required(2),
            json!(["report_type", "period_start", "period_end"])
        );
        assert_eq!(required(3), json!(["report_id"]));
        assert_eq!(
            tools[0].input_schema["properties"]["lines"]["items"]["required"],
            json!(["concept"])
        );
        assert_eq!(
            tools[1].input_schema["properties"]["lines"]["items"]["required"],
            json!(["concept", "subtotal"])
        );
        for t in &tools {
            let a = t.annotations.as_ref().expect("annotations");
            assert_eq!(a.read_only_hint, Some(false));
            assert_eq!(a.idempotent_hint, Some(false));
            assert_eq!(a.destructive_hint, Some(t.name == "delete_report"));
        }
    }

    #[test]
    fn invoice_arguments_become_the_api_body() {
        let f = forward(
            "create_invoice",
            obj(json!({"recipient_id": "r", "supply_type": "goods",
                "lines": [{"concept": "Box", "quantity": 1.5, "unit_price": 1000}]})),
        )
        .unwrap();
        assert_eq!(f.path, "/v1/invoices");
        assert_eq!(
            f.body.unwrap(),
            json!({"recipient_id": "r", "supply_type": "goods",
                "lines": [{"concept": "Box", "quantity": 1.5, "unit_price": 1000}]})
        );
    }

    #[test]
    fn bad_arguments_are_explained() {
        let e = forward(
            "create_invoice",
            obj(json!({"recipient_id": "r", "supply_type": "food", "lines": []})),
        )
        .unwrap_err();
        assert!(e.contains("food"), "{e}");
        let e = forward(
            "create_expense",
            obj(json!({"supplier_id": "s", "invoice_reference": "F-1",
                "lines": [{"concept": "x"}]})),
        )
        .unwrap_err();
        assert!(e.contains("subtotal"), "{e}");
        let e = forward("delete_report", obj(json!({"report_id": "../x"}))).unwrap_err();
        assert!(e.contains("report_id"), "{e}");
        let e = forward("nope", None).unwrap_err();
        assert!(e.contains("create_invoice"), "{e}");
    }
}
