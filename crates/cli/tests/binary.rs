//! Black-box tests of the real `invoicing` binary: started on port 0, driven over HTTP.

mod common;

use common::*;
use serde_json::Value;

fn serve_bootstrap_and_drive(db: TestDb) {
    let server = Server::start(
        &db,
        &["serve", "--bootstrap", "--company-name", "Binary Test Ltd"],
    );
    let boot = server.bootstrap.clone().expect("bootstrap JSON on stdout");
    for key in ["company_id", "user_id", "token", "human_proof", "mcp_token"] {
        assert!(boot[key].is_string(), "{key} in {boot}");
    }
    let token = boot["token"].as_str().unwrap().to_owned();
    let proof = boot["human_proof"].as_str().unwrap().to_owned();
    let http = agent();

    let mut resp = http
        .get(format!("{}/v1/session", server.base))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .expect("session");
    assert_eq!(resp.status(), 200);
    let session: Value = resp.body_mut().read_json().expect("json");
    assert_eq!(session["company"]["name"], "Binary Test Ltd");
    assert!(resp.headers().get("x-request-id").is_some());

    let resp = http
        .get(format!("{}/v1/session", server.base))
        .call()
        .expect("401");
    assert_eq!(resp.status(), 401);

    // AI caller: held. Person: applied.
    let resp = http
        .patch(format!("{}/v1/company", server.base))
        .header("Authorization", format!("Bearer {token}"))
        .send_json(serde_json::json!({"friendlyName": "Held"}))
        .expect("patch");
    assert_eq!(resp.status(), 202);
    let mut resp = http
        .patch(format!("{}/v1/company", server.base))
        .header("Authorization", format!("Bearer {token}"))
        .header("X-Human-Proof", &proof)
        .send_json(serde_json::json!({"friendlyName": "Applied"}))
        .expect("patch");
    assert_eq!(resp.status(), 200);
    let company: Value = resp.body_mut().read_json().expect("json");
    assert_eq!(company["friendlyName"], "Applied");

    let mut resp = http
        .get(format!("{}/openapi.json", server.base))
        .call()
        .expect("openapi");
    assert_eq!(resp.status(), 200);
    let doc: Value = resp.body_mut().read_json().expect("json");
    assert!(doc["paths"]["/v1/session"].is_object());
    assert_eq!(
        http.get(format!("{}/api/", server.base))
            .call()
            .expect("docs")
            .status(),
        200
    );
    assert_eq!(
        http.get(format!("{}/readyz", server.base))
            .call()
            .expect("ready")
            .status(),
        200
    );

    assert!(server.stop().success(), "graceful exit on SIGTERM");

    // Restart: data persisted, and --bootstrap does not create a second company.
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    assert!(
        server.bootstrap.is_none(),
        "bootstrap prints only on an empty database"
    );
    let mut resp = http
        .get(format!("{}/v1/company", server.base))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .expect("company");
    assert_eq!(resp.status(), 200);
    let company: Value = resp.body_mut().read_json().expect("json");
    assert_eq!(company["friendlyName"], "Applied");
    assert!(server.stop().success());
}

#[test]
fn serve_on_sqlite() {
    serve_bootstrap_and_drive(TestDb::sqlite());
}

#[test]
fn serve_on_postgres() {
    serve_bootstrap_and_drive(TestDb::postgres());
}

fn admin_commands(db: TestDb) {
    let (ok, _, stderr) = run(&db, &["migrate"]);
    assert!(ok, "{stderr}");
    let (ok, _, stderr) = run(&db, &["admin", "bootstrap", "--country", "XX"]);
    assert!(!ok);
    assert!(stderr.contains("--country"), "{stderr}");
    let (ok, _, stderr) = run(
        &db,
        &[
            "admin",
            "bootstrap",
            "--country",
            "ES",
            "--fiscal-id",
            "B00000001",
        ],
    );
    assert!(!ok);
    assert!(stderr.contains("--fiscal-id"), "{stderr}");
    let (ok, boot, stderr) = run(
        &db,
        &[
            "admin",
            "bootstrap",
            "--company-name",
            "Ejemplo SL",
            "--fiscal-id",
            "B12345674",
            "--country",
            "ES",
            "--legal-form",
            "SL",
            "--email",
            "admin@ejemplo.test",
        ],
    );
    assert!(ok, "{stderr}");
    let company = boot["company_id"].as_str().unwrap();
    let (ok, tok, stderr) = run(
        &db,
        &[
            "admin",
            "token",
            "create",
            "--company",
            company,
            "--user",
            "admin@ejemplo.test",
            "--kind",
            "mcp",
        ],
    );
    assert!(ok, "{stderr}");
    assert!(uuid::Uuid::parse_str(tok["token"].as_str().unwrap()).is_ok());
    assert!(tok["human_proof"].is_null());
    let (ok, tok, _) = run(
        &db,
        &[
            "admin",
            "token",
            "create",
            "--company",
            company,
            "--user",
            "admin@ejemplo.test",
        ],
    );
    assert!(ok);
    assert!(tok["human_proof"].as_str().unwrap().starts_with("hp_"));
    let (ok, _, stderr) = run(
        &db,
        &[
            "admin",
            "token",
            "create",
            "--company",
            company,
            "--user",
            "nobody@ejemplo.test",
        ],
    );
    assert!(!ok);
    assert!(stderr.contains("nobody@ejemplo.test"), "{stderr}");
    let terms = db.dir.path().join("terms.md");
    std::fs::write(&terms, "New terms.").unwrap();
    let (ok, doc, stderr) = run(
        &db,
        &[
            "admin",
            "legal",
            "publish",
            "--kind",
            "terms_of_service",
            "--title",
            "Terms v2",
            "--file",
            terms.to_str().unwrap(),
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(doc["version"], 2);
    let (ok, points, stderr) = run(
        &db,
        &[
            "admin",
            "points",
            "top-up",
            "--company",
            company,
            "--amount",
            "250",
            "--currency",
            "usd",
        ],
    );
    assert!(ok, "{stderr}");
    assert_eq!(points["points_balance"], 250);
    assert_eq!(points["currency"], "USD");
    let (ok, _, stderr) = run(
        &db,
        &[
            "admin",
            "points",
            "top-up",
            "--company",
            company,
            "--amount",
            "-5",
        ],
    );
    assert!(!ok && stderr.contains("--amount"), "{stderr}");
    // A --company that cannot be a company id is refused before anything runs, saying why.
    let (ok, _, stderr) = run(
        &db,
        &[
            "admin",
            "points",
            "top-up",
            "--company",
            "",
            "--amount",
            "5",
            "--currency",
            "usd",
        ],
    );
    assert!(
        !ok && stderr.contains("--company") && stderr.contains("not a valid CompanyId"),
        "{stderr}"
    );
}

#[test]
fn admin_on_sqlite() {
    admin_commands(TestDb::sqlite());
}

#[test]
fn admin_on_postgres() {
    admin_commands(TestDb::postgres());
}

/// Sends raw request `head` and returns the status line of the answer.
fn raw_status(base: &str, head: &str) -> String {
    use std::io::{Read, Write};
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    // The server may answer and close before reading everything: ignore write errors.
    let _ = stream.write_all(head.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap_or("")
        .to_owned()
}

/// Oversized headers and too many of them are refused by the HTTP layer with
/// `431` before any handler or database work; the server goes on serving.
#[test]
fn oversized_headers_get_431() {
    let db = TestDb::sqlite();
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp"]);
    let big = "x".repeat(600 * 1024);
    let status = raw_status(
        &server.base,
        &format!("GET /v1/session HTTP/1.1\r\nHost: localhost\r\nX-Padding: {big}\r\n\r\n"),
    );
    assert!(status.contains(" 431 "), "{status}");
    let many: String = (0..200).map(|i| format!("X-Extra-{i}: 1\r\n")).collect();
    let status = raw_status(
        &server.base,
        &format!("GET /v1/session HTTP/1.1\r\nHost: localhost\r\n{many}\r\n"),
    );
    assert!(status.contains(" 431 "), "{status}");
    let ok = agent()
        .get(format!("{}/healthz", server.base))
        .call()
        .expect("healthz");
    assert_eq!(ok.status().as_u16(), 200);
}

/// A company snippet that exhausts memory is refused with a 400, checked in a child process
/// under a memory limit, and the server goes on serving (in process it aborted the server).
fn exploding_snippet_is_refused_and_the_server_lives(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp"]);
    let boot = server.bootstrap.clone().expect("bootstrap JSON on stdout");
    let c = Company::from_bootstrap(&boot);
    let patch = |footer: &str| {
        call(
            &server.base,
            &c,
            "PATCH",
            "/v1/company",
            Some(serde_json::json!({ "footerInvoiceTypst": footer })),
        )
    };

    let (status, body) = patch("#range(1000000000)");
    assert_eq!(status, 400, "{body}");
    let message = body.to_string();
    assert!(message.contains("footerInvoiceTypst"), "{message}");
    assert!(message.contains("MiB"), "{message}");
    let (status, body) = call(&server.base, &c, "GET", "/v1/company", None);
    assert_eq!(status, 200, "{body}");
    assert!(
        body["footerInvoiceTypst"].is_null(),
        "nothing saved: {body}"
    );

    // Still serving, and still checking: a good snippet is kept, a wrong one names its line.
    let (status, body) = patch("Thank you for your business.");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["footerInvoiceTypst"], "Thank you for your business.");
    let (status, body) = patch("ok\n#let x = (\n");
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("line 2"), "{body}");
    let (status, body) = call(&server.base, &c, "GET", "/v1/company", None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["footerInvoiceTypst"], "Thank you for your business.");
}

#[test]
fn exploding_snippet_on_sqlite() {
    exploding_snippet_is_refused_and_the_server_lives(TestDb::sqlite());
}

#[test]
fn exploding_snippet_on_postgres() {
    exploding_snippet_is_refused_and_the_server_lives(TestDb::postgres());
}

/// Company snippets run in a child process with a memory limit when a PDF is rendered, not
/// only when they are saved. A footer that explodes (or never ends) only for one invoice's
/// placeholder value passes the check; that invoice's PDF then gets a 400 saying why, while
/// the server and every other PDF go on (in process, the server aborted, for every company).
fn snippet_exploding_at_render_time(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp"]);
    let boot = server.bootstrap.clone().expect("bootstrap JSON on stdout");
    let c = Company::from_bootstrap(&boot);
    let base = &server.base;
    let (s, body) = call(
        base,
        &c,
        "POST",
        "/v1/company/registration",
        Some(serde_json::json!({
        "name": "Snippet Test Ltd", "fiscal_id": "IE6388047V", "email": "b@example.test",
        "phone": "1", "address": {"lines": ["1 St"], "zipcode": "D1", "city": "Dublin", "country": "IE"}})),
    );
    assert_eq!(s, 200, "{body}");
    accept_agreements(base, &c);
    let footer = "Order {{po}}#let po = json(\"/data.json\").placeholders.at(\"po\", default: \"\")\n\
                  #if po == \"boom\" { range(1000000000).len() }\n\
                  #if po == \"slow\" { for i in range(100000) { for j in range(100000) {} } }";
    let (s, body) = call(
        base,
        &c,
        "PATCH",
        "/v1/company",
        Some(serde_json::json!({
            "customPlaceholders": [{"key": "po", "label": "PO"}],
            "footerInvoiceTypst": footer,
        })),
    );
    assert_eq!(s, 200, "the check renders a sample without `po`: {body}");
    let (s, customer) = call(
        base,
        &c,
        "POST",
        "/v1/entities",
        Some(
            serde_json::json!({"name": "Customer Ltd", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(s, 201, "{customer}");
    let draft = |po: &str| {
        let (s, d) = call(
            base,
            &c,
            "POST",
            "/v1/invoices",
            Some(serde_json::json!({
                "recipient_id": customer["id"],
                "custom_placeholder_values": [{"key": "po", "value": po}],
                "lines": [{"concept": "Work", "unit_price": 1000}],
            })),
        );
        assert_eq!(s, 201, "{d}");
        format!("/v1/invoices/{}/pdf", d["id"].as_str().unwrap())
    };
    let fine = draft("PO-7");
    let boom = draft("boom");

    for _ in 0..2 {
        let (s, _, body) = bytes(base, &c, "GET", &boom, None);
        let message = String::from_utf8_lossy(&body);
        assert_eq!(s, 400, "{message}");
        assert!(
            message.contains("MiB") && message.contains("PATCH /v1/company"),
            "{message}"
        );
        let (s, content_type, pdf) = bytes(base, &c, "GET", &fine, None);
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&pdf));
        assert_eq!(content_type, "application/pdf");
        let text = pdf_text(&pdf);
        assert!(text.contains("Order PO-7"), "{text}");
    }
    // A snippet that never finishes for one invoice: a 400 at the render deadline (retrying
    // would not help), and the child is gone.
    let slow = draft("slow");
    let (s, _, body) = bytes(base, &c, "GET", &slow, None);
    let message = String::from_utf8_lossy(&body);
    assert_eq!(s, 400, "{message}");
    assert!(message.contains("did not finish"), "{message}");
    let (s, _, _) = bytes(base, &c, "GET", &fine, None);
    assert_eq!(s, 200);
    let (s, body) = call(base, &c, "GET", "/v1/company", None);
    assert_eq!(s, 200, "{body}");
}

#[test]
fn snippet_exploding_at_render_time_on_sqlite() {
    snippet_exploding_at_render_time(TestDb::sqlite());
}

#[test]
fn snippet_exploding_at_render_time_on_postgres() {
    snippet_exploding_at_render_time(TestDb::postgres());
}

/// Snippet children run the server's own executable: an upgrade that replaces the binary on
/// disk while the server runs does not leave it starting a different program for them.
fn snippet_children_run_the_servers_own_executable(db: TestDb) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tmp");
    let exe = dir.path().join("invoicing");
    if std::fs::hard_link(BIN, &exe).is_err() {
        std::fs::copy(BIN, &exe).expect("copy the executable");
    }
    let server = Server::start_command(db.command_of(&exe, &["serve", "--bootstrap", "--no-mcp"]));
    let boot = server.bootstrap.clone().expect("bootstrap JSON on stdout");
    let c = Company::from_bootstrap(&boot);
    // The "upgrade": the file at the server's path is now another program.
    std::fs::remove_file(&exe).expect("remove");
    std::fs::write(&exe, "#!/bin/sh\nexit 7\n").expect("write");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    for _ in 0..2 {
        let (status, body) = call(
            &server.base,
            &c,
            "PATCH",
            "/v1/company",
            Some(serde_json::json!({ "footerInvoiceTypst": "Thank you." })),
        );
        assert_eq!(status, 200, "{body}");
        let (status, body) = call(
            &server.base,
            &c,
            "PATCH",
            "/v1/company",
            Some(serde_json::json!({ "footerInvoiceTypst": "ok\n#let x = (\n" })),
        );
        assert_eq!(status, 400, "{body}");
        assert!(body.to_string().contains("line 2"), "{body}");
    }
}

#[test]
fn snippet_children_run_the_servers_own_executable_on_sqlite() {
    snippet_children_run_the_servers_own_executable(TestDb::sqlite());
}

#[test]
fn snippet_children_run_the_servers_own_executable_on_postgres() {
    snippet_children_run_the_servers_own_executable(TestDb::postgres());
}
