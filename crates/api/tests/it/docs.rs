//! OpenAPI document, offline reference page, health checks, unknown routes.

use std::collections::BTreeSet;

use crate::support::*;

/// Every route the router serves, as `METHOD path`.
const ROUTES: &[&str] = &[
    "GET /healthz",
    "GET /readyz",
    "GET /avatars/{id}",
    "GET /v1/session",
    "GET /v1/company",
    "PATCH /v1/company",
    "POST /v1/company/registration",
    "GET /v1/agreements",
    "POST /v1/agreements/{id}/accept",
    "GET /v1/tokens",
    "POST /v1/tokens",
    "DELETE /v1/tokens/{id}",
    "GET /v1/ai-audit",
    "GET /v1/ai-audit/{id}",
    "GET /v1/ai-audit/{id}/body",
    "POST /v1/ai-audit/{id}/approve",
    "POST /v1/ai-audit/{id}/reject",
    "GET /v1/members",
    "POST /v1/members",
    "PATCH /v1/members/{email}",
    "POST /v1/members/{email}/deactivate",
    "POST /v1/members/{email}/reactivate",
    "GET /v1/entities",
    "POST /v1/entities",
    "GET /v1/entities/{id}",
    "PATCH /v1/entities/{id}",
    "DELETE /v1/entities/{id}",
    "POST /v1/taxes/prefill",
    "GET /v1/invoices",
    "POST /v1/invoices",
    "GET /v1/invoices/{id}",
    "PATCH /v1/invoices/{id}",
    "DELETE /v1/invoices/{id}",
    "POST /v1/invoices/{id}/issue",
    "POST /v1/invoices/bulk/issue",
    "POST /v1/invoices/bulk/delete",
    "GET /v1/invoices/{id}/corrections",
    "POST /v1/invoices/{id}/corrections",
    "POST /v1/invoices/{id}/correct",
    "GET /v1/proformas",
    "POST /v1/proformas",
    "GET /v1/proformas/{id}",
    "PATCH /v1/proformas/{id}",
    "DELETE /v1/proformas/{id}",
    "POST /v1/proformas/{id}/invoice",
    "POST /v1/proformas/bulk/delete",
    "GET /v1/invoices/{id}/payments",
    "POST /v1/invoices/{id}/payments",
    "DELETE /v1/invoices/{id}/payments/{pid}",
    "GET /v1/bank-accounts",
    "POST /v1/bank-accounts",
    "GET /v1/bank-accounts/{id}",
    "PATCH /v1/bank-accounts/{id}",
    "DELETE /v1/bank-accounts/{id}",
    "POST /v1/bank-accounts/{id}/snapshots",
    "DELETE /v1/bank-accounts/{id}/snapshots/{sid}",
    "GET /v1/expenses",
    "POST /v1/expenses",
    "GET /v1/expenses/{id}",
    "PATCH /v1/expenses/{id}",
    "DELETE /v1/expenses/{id}",
    "POST /v1/expenses/bulk/delete",
    "POST /v1/expenses/import",
    "PUT /v1/expenses/{id}/receipt",
    "GET /v1/expenses/{id}/receipt",
    "GET /v1/dashboard",
    "GET /v1/reports",
    "POST /v1/reports",
    "GET /v1/reports/{id}",
    "DELETE /v1/reports/{id}",
    "GET /v1/reports/{id}/pdf",
    "GET /v1/invoices/{id}/verifactu",
    "POST /v1/invoices/{id}/verifactu/annul",
    "GET /v1/invoices/{id}/pdf",
    "GET /v1/invoices/{id}/einvoice",
    "GET /v1/proformas/{id}/pdf",
    "GET /v1/verifactu/authorization",
    "POST /v1/verifactu/authorization/document",
    "POST /v1/verifactu/authorization/power-of-attorney",
    "GET /v1/webhooks",
    "POST /v1/webhooks",
    "GET /v1/webhooks/{id}",
    "PATCH /v1/webhooks/{id}",
    "DELETE /v1/webhooks/{id}",
    "GET /v1/webhooks/{id}/deliveries",
    "POST /v1/webhooks/{id}/deliveries/{delivery_id}/retry",
    "POST /v1/invoices/{id}/send",
    "GET /v1/invoices/{id}/deliveries",
    "GET /v1/recurring-invoices",
    "POST /v1/recurring-invoices",
    "GET /v1/recurring-invoices/{id}",
    "PATCH /v1/recurring-invoices/{id}",
    "DELETE /v1/recurring-invoices/{id}",
];

db_test!(openapi_documents_every_route_and_nothing_else, |app| {
    let resp = app.get("/openapi.json", As::Anonymous).await.expect(200);
    let doc = resp.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            documented.insert(format!("{} {path}", method.to_uppercase()));
            let responses = op["responses"].as_object().unwrap();
            if path.starts_with("/v1") {
                assert!(
                    responses.contains_key("401"),
                    "{method} {path} documents 401"
                );
            }
            if ["post", "put", "patch", "delete"].contains(&method.as_str()) {
                assert!(
                    responses.contains_key("202"),
                    "{method} {path} documents the AI 202"
                );
            }
        }
    }
    let expected: BTreeSet<String> = ROUTES.iter().map(|s| s.to_string()).collect();
    assert_eq!(documented, expected);
    // Each documented route is served (not the fallback, not 405).
    for route in ROUTES {
        let (method, path) = route.split_once(' ').unwrap();
        let concrete = path
            .replace("{id}", &uuid::Uuid::new_v4().to_string())
            .replace("{pid}", &uuid::Uuid::new_v4().to_string())
            .replace("{sid}", &uuid::Uuid::new_v4().to_string())
            .replace("{delivery_id}", &uuid::Uuid::new_v4().to_string())
            .replace("{email}", "nobody@example.com");
        let resp = app.call(method, &concrete, As::Human(&app.a), None).await;
        assert_ne!(resp.status.as_u16(), 405, "{route}");
        assert!(
            !resp.text().starts_with("No such route"),
            "{route} is not served"
        );
    }
    // Schemas referenced by the document exist.
    let text = doc.to_string();
    for schema in [
        "CurrentSession",
        "CompanyConfiguration",
        "AiAuditEntry",
        "PendingApproval",
        "ActionRequired",
    ] {
        assert!(
            doc["components"]["schemas"].get(schema).is_some(),
            "{schema}"
        );
    }
    assert!(text.contains("bearer"));
});

db_test!(reference_page_works_offline, |app| {
    let page = app.get("/api/", As::Anonymous).await.expect(200);
    let html = page.text();
    assert!(html.contains("swagger"), "Swagger UI page");
    // Every script and stylesheet is served by us, not a CDN.
    for attr in ["src=\"http", "href=\"http"] {
        assert!(!html.contains(attr), "external asset in /api/: {attr}");
    }
    let init = app
        .get("/api/swagger-initializer.js", As::Anonymous)
        .await
        .expect(200);
    assert!(init.text().contains("/openapi.json"));
    app.get("/api/swagger-ui-bundle.js", As::Anonymous)
        .await
        .expect(200);
});

db_test!(health_and_unknown_routes, |app| {
    assert_eq!(
        app.get("/healthz", As::Anonymous).await.expect(200).text(),
        "ok"
    );
    assert_eq!(
        app.get("/readyz", As::Anonymous).await.expect(200).text(),
        "ready"
    );
    let resp = app.get("/v2/things", As::Anonymous).await.expect(404);
    assert!(resp.content_type().starts_with("text/plain"));
});

/// The Python with the test tools (`INVOICING_TEST_PYTHON`, set by scripts/test), else the
/// repository's `.venv`.
fn python() -> String {
    std::env::var("INVOICING_TEST_PYTHON").unwrap_or_else(|_| {
        let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python");
        assert!(
            std::path::Path::new(venv).exists(),
            "the OpenAPI check needs openapi-spec-validator: run scripts/test, or create .venv \
             with `python3 -m venv .venv && .venv/bin/pip install -r tests/requirements.txt`, \
             or set INVOICING_TEST_PYTHON"
        );
        venv.to_owned()
    })
}

db_test!(openapi_passes_the_openapi_3_1_validator, |app| {
    let resp = app.get("/openapi.json", As::Anonymous).await.expect(200);
    let doc = resp.json();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openapi.json");
    std::fs::write(&file, doc.to_string()).unwrap();
    let out = std::process::Command::new(python())
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .expect("run openapi-spec-validator (tests/requirements.txt)");
    assert!(
        out.status.success(),
        "openapi-spec-validator rejects /openapi.json:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A person can use the interactive reference: the human proof is a scheme of its own,
    // and a request may carry the bearer token alone (AI) or with the proof (person).
    let scheme = &doc["components"]["securitySchemes"]["human_proof"];
    assert_eq!(scheme["type"], "apiKey", "{scheme}");
    assert_eq!(scheme["in"], "header", "{scheme}");
    assert_eq!(scheme["name"], "X-Human-Proof", "{scheme}");
    assert_eq!(
        doc["security"],
        serde_json::json!([{"bearer": []}, {"bearer": [], "human_proof": []}])
    );
    // Binary bodies are binary strings, not arrays of integers.
    for (path, method, ct) in [
        ("/v1/invoices/{id}/pdf", "get", "application/pdf"),
        ("/v1/reports/{id}/pdf", "get", "application/pdf"),
        (
            "/v1/expenses/{id}/receipt",
            "get",
            "application/octet-stream",
        ),
    ] {
        let schema = &doc["paths"][path][method]["responses"]["200"]["content"][ct]["schema"];
        assert_eq!(schema["type"], "string", "{method} {path}: {schema}");
        assert_eq!(schema["format"], "binary", "{method} {path}: {schema}");
    }
    let receipt = &doc["paths"]["/v1/expenses/{id}/receipt"]["put"]["requestBody"]["content"]["application/octet-stream"]
        ["schema"];
    assert_eq!(receipt["type"], "string", "{receipt}");
    // The corrective endpoints answer a CorrectiveInvoice, whose corrected invoice is required,
    // and the legal reason is one of R1-R5.
    for path in ["/v1/invoices/{id}/corrections", "/v1/invoices/{id}/correct"] {
        let schema = &doc["paths"][path]["post"]["responses"]["201"]["content"]["application/json"]
            ["schema"];
        assert_eq!(
            schema["$ref"], "#/components/schemas/CorrectiveInvoice",
            "{path}: {schema}"
        );
    }
    let schemas = &doc["components"]["schemas"];
    let required = schemas["CorrectiveInvoice"]["required"].as_array().unwrap();
    assert!(
        required.iter().any(|r| r == "corrected_invoice_id"),
        "{required:?}"
    );
    assert_eq!(
        schemas["InvoiceVerifactu"]["properties"]["reason"]["$ref"],
        "#/components/schemas/CorrectionReason"
    );
    assert_eq!(
        schemas["CorrectionReason"]["enum"],
        serde_json::json!(["R1", "R2", "R3", "R4", "R5"])
    );
});

db_test!(json_answers_end_with_a_newline, |app| {
    // Shown in a terminal, one answer does not run into the next line or the prompt.
    let session = app.get("/v1/session", As::Human(&app.a)).await.expect(200);
    assert!(session.text().ends_with("}\n"), "{:?}", session.text());
    let list = app.get("/v1/invoices", As::Human(&app.a)).await.expect(200);
    assert!(list.text().ends_with("}\n"), "{:?}", list.text());
    let held = app
        .call(
            "PATCH",
            "/v1/company",
            As::Ai(&app.a),
            Some(serde_json::json!({"invoiceReferenceFormat": "INV-{year}-{number:5}"})),
        )
        .await
        .expect(202);
    assert!(held.text().ends_with("}\n"), "{:?}", held.text());
    // Plain-text answers already end with one; PDFs and other bytes are left alone.
    let health = app.get("/healthz", As::Anonymous).await.expect(200);
    assert_eq!(health.text(), "ok");
});
