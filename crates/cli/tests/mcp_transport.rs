//! The MCP server's Streamable HTTP transport, black-box over raw HTTP: what the
//! transport specification requires beyond what the official client exercises
//! (`mcp.rs`). Origins are checked against DNS rebinding from web pages, a body that
//! is not JSON-RPC gets a JSON-RPC error with `400`, undeclared capabilities answer
//! "method not found", and tools declare the shape of what they return. Then the official
//! conformance suite (`@modelcontextprotocol/conformance`, installed by scripts/test into
//! tests/web) runs the scenarios that apply to this server.

mod common;

use common::*;
use serde_json::{Value, json};

const ACCEPT: &str = "application/json, text/event-stream";

fn init() -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "transport-check", "version": "1"}}
    })
}

/// A raw POST to the MCP endpoint: status and body text.
fn post(url: &str, token: &str, origin: Option<&str>, body: &str) -> (u16, String) {
    let mut req = agent()
        .post(url)
        .header("Authorization", &format!("Bearer {token}"))
        .header("Accept", ACCEPT)
        .header("Content-Type", "application/json");
    if let Some(o) = origin {
        req = req.header("Origin", o);
    }
    let mut resp = req.send(body.as_bytes()).expect("request");
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap_or_default())
}

/// A JSON-RPC call after initialize; the JSON answer.
fn rpc(url: &str, token: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, text) = post(url, token, None, &body.to_string());
    assert_eq!(status, 200, "{method}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{method}: {e}: {text}"))
}

fn check(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--company-name", "Wire Ltd"]);
    let url = server.mcp_url();
    let boot = server.bootstrap.clone().expect("bootstrap JSON");
    let token = boot["token"].as_str().expect("token").to_owned();
    let init = init().to_string();

    // A page on another site cannot drive the server through the user's browser...
    let (status, text) = post(&url, &token, Some("https://evil.example"), &init);
    assert_eq!(status, 403, "foreign origin: {text}");
    let (status, text) = post(
        &url,
        &token,
        Some("http://localhost.evil.example:6274"),
        &init,
    );
    assert_eq!(status, 403, "look-alike origin: {text}");
    // ...while local pages (the MCP Inspector) and clients without Origin can.
    let (status, text) = post(&url, &token, Some("http://localhost:6274"), &init);
    assert_eq!(status, 200, "local origin: {text}");
    let (status, text) = post(&url, &token, None, &init);
    assert_eq!(status, 200, "no origin: {text}");
    let answer: Value = serde_json::from_str(&text).expect("initialize JSON");
    let caps = &answer["result"]["capabilities"];
    assert!(
        caps["tools"].is_object() && caps["resources"].is_object(),
        "{answer}"
    );
    assert!(caps.get("prompts").is_none(), "{answer}");

    // A body that is not JSON, or JSON that is not JSON-RPC: 400 with the JSON-RPC error.
    for (body, code) in [
        (r#"{"jsonrpc": "2.0", "id": 1, "#, -32700),
        (r#"{"hello": 1}"#, -32600),
    ] {
        let (status, text) = post(&url, &token, None, body);
        assert_eq!(status, 400, "{body}: {text}");
        let err: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert_eq!(err["jsonrpc"], "2.0", "{text}");
        assert_eq!(err["id"], Value::Null, "{text}");
        assert_eq!(err["error"]["code"], code, "{text}");
    }

    // Capabilities the server does not declare are not answered.
    for method in ["prompts/list", "completion/complete"] {
        let params = if method == "prompts/list" {
            json!({})
        } else {
            json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}})
        };
        let answer = rpc(&url, &token, method, params);
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }

    // Every tool declares what it returns, and a call returns that object, serialised
    // in its text block too.
    let tools = rpc(&url, &token, "tools/list", json!({}));
    let tools = tools["result"]["tools"].as_array().expect("tools").clone();
    assert_eq!(tools.len(), 4, "{tools:?}");
    for tool in &tools {
        let schema = &tool["outputSchema"];
        assert_eq!(schema["type"], "object", "{tool}");
        assert_eq!(schema["required"], json!(["status", "message"]), "{tool}");
    }
    let c = Company::from_bootstrap(&boot);
    let (status, entity) = call(
        &server.base,
        &c,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Customer Ltd", "type": "IE:LTD", "address": {
            "lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(status, 201, "{entity}");
    let answer = rpc(
        &url,
        &token,
        "tools/call",
        json!({"name": "create_invoice", "arguments": {
            "recipient_id": entity["id"], "supply_type": "services",
            "lines": [{"concept": "Work", "quantity": 1, "unit_price": 10000}]}}),
    );
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["status"], "pending_approval", "{answer}");
    assert!(structured["auditEntryId"].as_str().is_some(), "{answer}");
    let text = result["content"][0]["text"].as_str().expect("text block");
    let from_text: Value = serde_json::from_str(text).expect("the text block is the JSON");
    assert_eq!(&from_text, structured, "{answer}");

    // An issued invoice's e-invoice is a resource: the XML as text, in the recipient's
    // format (here none set: UBL).
    let (s, _) = call(
        &server.base,
        &c,
        "POST",
        "/v1/company/registration",
        Some(
            json!({"name": "Wire Ltd", "fiscal_id": "IE6388047V", "email": "b@example.test",
            "phone": "1", "address": {"lines": ["1 St"], "zipcode": "D01 X2Y3", "city": "Dublin", "country": "IE"}}),
        ),
    );
    assert_eq!(s, 200);
    accept_agreements(&server.base, &c);
    let (s, draft) = call(
        &server.base,
        &c,
        "POST",
        "/v1/invoices",
        Some(
            json!({"recipient_id": entity["id"], "lines": [{"concept": "Work", "unit_price": 10000}]}),
        ),
    );
    assert_eq!(s, 201, "{draft}");
    let id = draft["id"].as_str().expect("id");
    let uri = format!("invoicing://invoices/{id}/einvoice");
    let answer = rpc(&url, &token, "resources/read", json!({"uri": uri}));
    assert!(
        answer["error"].is_object(),
        "a draft has no e-invoice: {answer}"
    );
    let (s, issued) = call(
        &server.base,
        &c,
        "POST",
        &format!("/v1/invoices/{id}/issue"),
        None,
    );
    assert_eq!(s, 200, "{issued}");
    let answer = rpc(&url, &token, "resources/read", json!({"uri": uri}));
    let contents = &answer["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "application/xml", "{answer}");
    let xml = contents["text"].as_str().expect("XML text");
    assert!(
        xml.contains("urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"),
        "{xml}"
    );
    assert!(
        xml.contains(issued["reference"].as_str().unwrap_or("?")),
        "{xml}"
    );
    let templates = rpc(&url, &token, "resources/templates/list", json!({}));
    assert!(
        templates
            .to_string()
            .contains("invoicing://invoices/{id}/einvoice"),
        "{templates}"
    );

    assert!(server.stop().success(), "graceful exit with the MCP child");
}

#[test]
fn mcp_transport_conformance_on_sqlite() {
    check(TestDb::sqlite());
}

#[test]
fn mcp_transport_conformance_on_postgres() {
    check(TestDb::postgres());
}

/// The official conformance suite's scenarios that apply to this server. The others need
/// the suite's own test tools, resources and prompts (`test_simple_text`, `test://...`)
/// or capabilities the server does not declare (logging, completions, subscriptions,
/// sampling, elicitation), and fail for that reason only (docs/MCP.md).
const OFFICIAL_SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "dns-rebinding-protection",
];

fn official_suite(db: TestDb) {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let suite = format!("{root}/tests/web/node_modules/.bin/conformance");
    assert!(
        std::path::Path::new(&suite).exists(),
        "{suite} is missing: scripts/test installs it (npm ci in tests/web)"
    );
    let server = Server::start(
        &db,
        &["serve", "--bootstrap", "--company-name", "Suite Ltd"],
    );
    let boot = server.bootstrap.clone().expect("bootstrap JSON");
    let token = boot["mcp_token"].as_str().expect("mcp token").to_owned();
    let mcp = server.mcp_url();
    let origin = mcp.trim_end_matches("/mcp").to_owned();
    // The suite sends no Authorization header: a proxy adds the token and nothing else.
    let dir = tempfile::tempdir().expect("temp dir");
    let port_file = dir.path().join("port");
    let mut proxy = std::process::Command::new("node")
        .arg(format!("{root}/tests/mcp/conformance_proxy.mjs"))
        .arg(&port_file)
        .arg(&origin)
        .arg(&token)
        .spawn()
        .expect("node runs the proxy");
    let mut port = String::new();
    for _ in 0..100 {
        port = std::fs::read_to_string(&port_file).unwrap_or_default();
        if !port.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(!port.is_empty(), "the proxy did not start");
    let url = format!("http://127.0.0.1:{port}/mcp");
    for scenario in OFFICIAL_SCENARIOS {
        let out = std::process::Command::new(&suite)
            .args(["server", "--url", &url, "--scenario", scenario])
            .output()
            .expect("the conformance suite runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.contains(" 0 failed"),
            "{scenario}: {text}"
        );
        assert!(!text.contains("FAILURE"), "{scenario}: {text}");
    }
    let _ = proxy.kill();
    let _ = proxy.wait();
    assert!(server.stop().success(), "graceful exit with the MCP child");
}

#[test]
fn official_conformance_suite_passes_its_scenarios_on_sqlite() {
    official_suite(TestDb::sqlite());
}

#[test]
fn official_conformance_suite_passes_its_scenarios_on_postgres() {
    official_suite(TestDb::postgres());
}
