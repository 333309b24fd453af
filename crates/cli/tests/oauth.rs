//! MCP sign-in with OAuth, black-box: the real `invoicing serve` and its MCP child,
//! driven by `tests/mcp/check_oauth.py` through the web sign-in forms (a cookie-keeping
//! HTTP client), then the official Python MCP client with its own OAuth support, on
//! SQLite and PostgreSQL.

mod common;

use std::process::Command;

use common::*;
use serde_json::json;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/mcp/check_oauth.py"
);

/// A port free right now, so the HTTP server knows the MCP endpoint's URL in advance
/// (and so checks the `resource` of authorization requests).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

fn oauth_flow(db: TestDb) {
    let owner = "owner@example.com";
    let mut cmd = db.command(&["serve", "--bootstrap", "--email", owner]);
    cmd.env("INVOICING_MCP_ADDR", format!("127.0.0.1:{}", free_port()));
    let server = Server::start_command(cmd);
    let password = admin_password(&db, owner);
    let (ok, other, stderr) = run(
        &db,
        &[
            "admin",
            "bootstrap",
            "--company-name",
            "Second Company Ltd",
            "--email",
            "second@example.com",
        ],
    );
    assert!(ok, "{stderr}");
    let mcp = server.mcp_url();
    let config = json!({
        "api": server.base,
        "mcp": mcp,
        "company": server.bootstrap.clone().expect("bootstrap JSON"),
        "other": other,
        "email": owner,
        "password": password,
        "newPassword": "my own long passphrase",
    });
    let out = Command::new(python())
        .arg(SCRIPT)
        .arg(config.to_string())
        .output()
        .expect("run the Python OAuth check");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "the OAuth check failed:\n{stdout}\n{}\n--- server logs ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.logs()
    );
    let logs = server.logs();
    assert!(
        !logs.contains("rt_") && !logs.contains("code="),
        "no refresh token or code in the logs:\n{logs}"
    );
    assert!(server.stop().success());
}

#[test]
fn oauth_sign_in_then_the_python_mcp_client_on_sqlite() {
    oauth_flow(TestDb::sqlite());
}

#[test]
fn oauth_sign_in_then_the_python_mcp_client_on_postgres() {
    oauth_flow(TestDb::postgres());
}

/// The same sign-in in Chromium: the consent page's form must be allowed to lead to the
/// client's redirect URI (browsers apply `form-action` to the redirect after a post).
fn oauth_in_a_browser(db: TestDb, name: &str) {
    let fx = WebFixture::start(&db);
    fx.run_script("oauth.mjs", name, json!({}));
}

#[test]
fn oauth_consent_in_a_browser_on_sqlite() {
    oauth_in_a_browser(TestDb::sqlite(), "oauth-sqlite");
}

#[test]
fn oauth_consent_in_a_browser_on_postgres() {
    oauth_in_a_browser(TestDb::postgres(), "oauth-postgres");
}
