//! The MCP server, black-box: the real `invoicing serve` starts it as a child
//! process, and the official Python MCP client (`tests/mcp/check_mcp.py`)
//! drives it against SQLite and PostgreSQL.
//!
//! The `*_reports_*` tests need the reports API (`/v1/reports`).

mod common;

use std::{
    io::{BufRead, BufReader},
    process::{Command, Stdio},
    time::Duration,
};

use common::*;
use serde_json::{Value, json};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/mcp/check_mcp.py");

/// A second company in the same database, for the cross-tenant checks.
fn other_company(db: &TestDb) -> Value {
    let (ok, boot, stderr) = run(
        db,
        &[
            "admin",
            "bootstrap",
            "--company-name",
            "Other Company Ltd",
            "--email",
            "other@example.com",
        ],
    );
    assert!(ok, "{stderr}");
    boot
}

fn run_python_client(db: TestDb, mode: &str) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--company-name", "MCP Ltd"]);
    let mcp = server.mcp_url();
    let config = json!({
        "mode": mode,
        "api": server.base,
        "mcp": mcp,
        "company": server.bootstrap.clone().expect("bootstrap JSON"),
        "other": other_company(&db),
    });
    let out = Command::new(python())
        .arg(SCRIPT)
        .arg(config.to_string())
        .output()
        .expect("run the Python MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "the MCP client check failed:\n{stdout}\n{}\n--- server logs ---\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.logs()
    );
    assert!(server.stop().success(), "graceful exit with the MCP child");
}

#[test]
fn mcp_with_the_python_client_on_sqlite() {
    run_python_client(TestDb::sqlite(), "core");
}

#[test]
fn mcp_with_the_python_client_on_postgres() {
    run_python_client(TestDb::postgres(), "core");
}

#[test]
fn mcp_reports_with_the_python_client_on_sqlite() {
    run_python_client(TestDb::sqlite(), "reports");
}

#[test]
fn mcp_reports_with_the_python_client_on_postgres() {
    run_python_client(TestDb::postgres(), "reports");
}

fn status_of(url: &str, token: Option<&str>) -> Result<(u16, String), String> {
    let mut req = agent()
        .post(url)
        .header("Accept", "application/json, text/event-stream");
    if let Some(t) = token {
        req = req.header("Authorization", format!("Bearer {t}"));
    }
    match req.send_json(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})) {
        Ok(mut r) => {
            let www = r
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let _ = r.body_mut().read_to_string();
            Ok((r.status().as_u16(), www))
        }
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn serve_starts_the_mcp_child_and_stops_it() {
    let db = TestDb::sqlite();
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    let url = server.mcp_url();
    let (status, www) = status_of(&url, None).expect("MCP answers");
    assert_eq!(status, 401);
    assert!(www.starts_with("Bearer"), "{www}");
    // `ps` names the child, though it runs from `/proc/<serve>/exe`.
    #[cfg(target_os = "linux")]
    {
        let pid = mcp_child_pid(&server.logs(), 1);
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).expect("comm");
        assert_eq!(comm.trim(), "invoicing-mcp");
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).expect("cmdline");
        assert!(
            cmdline.starts_with(b"invoicing\0mcp\0"),
            "{}",
            String::from_utf8_lossy(&cmdline)
        );
    }
    let logs = server.logs();
    let line = logs
        .lines()
        .find(|l| l.contains("MCP server listening at"))
        .expect("MCP line");
    assert!(
        line.contains(&server.base),
        "the child calls the API at its bound address {}: {line}",
        server.base
    );
    assert!(server.stop().success());
    // The child went with its parent.
    let gone = (0..50).any(|_| {
        std::thread::sleep(Duration::from_millis(100));
        status_of(&url, None).is_err()
    });
    assert!(gone, "the MCP child outlived serve");

    let server = Server::start(&db, &["serve", "--no-mcp"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!server.logs().contains("MCP server"), "{}", server.logs());
    assert!(server.stop().success());
}

/// The pid `serve` logged for the `n`-th MCP child it started (from 1).
fn mcp_child_pid(logs: &str, n: usize) -> u32 {
    let line = logs
        .lines()
        .filter(|l| l.contains("MCP server started as a child process"))
        .nth(n - 1)
        .expect("the start line of the MCP child");
    // Without the colours of the log (`\x1b[...m`), whose codes are digits too.
    let mut plain = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(char::is_ascii_alphabetic);
        } else {
            plain.push(c);
        }
    }
    let after = plain.split(" pid=").nth(1).expect("pid field");
    let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
    let pid: u32 = digits.parse().expect("pid");
    assert!(pid > 1, "{line}");
    pid
}

/// The MCP child runs the server's own executable: when it dies after an upgrade replaced
/// the binary on disk, `serve` starts it again from the running server's file, not from
/// whatever program now sits at its path.
#[test]
fn serve_restarts_its_mcp_child_from_its_own_executable_after_an_upgrade() {
    use std::os::unix::fs::PermissionsExt;
    let db = TestDb::sqlite();
    let dir = tempfile::tempdir().expect("tmp");
    let exe = dir.path().join("invoicing");
    if std::fs::hard_link(BIN, &exe).is_err() {
        std::fs::copy(BIN, &exe).expect("copy the executable");
    }
    let server = Server::start_command(db.command_of(&exe, &["serve", "--bootstrap"]));
    let url = server.mcp_url();
    assert_eq!(status_of(&url, None).expect("MCP answers").0, 401);
    // The "upgrade": the file at the server's path is now another program.
    std::fs::remove_file(&exe).expect("remove");
    std::fs::write(&exe, "#!/bin/sh\nexit 7\n").expect("write");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    let pid = mcp_child_pid(&server.logs(), 1);
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    server.wait_for_log("the MCP server exited", 30);
    // Started again after its back-off (a second), on a port of its own (the tests ask
    // for any free one), and answering.
    let needle = "MCP server listening at ";
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let second = loop {
        let logs = server.logs();
        if let Some(rest) = logs.split(needle).nth(2) {
            break rest.split_whitespace().next().expect("address").to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the MCP child did not come back:\n{logs}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status_of(&second, None).expect("MCP answers again").0, 401);
    assert_ne!(mcp_child_pid(&server.logs(), 2), pid);
    assert!(server.stop().success());
}

#[test]
fn serve_keeps_running_when_the_mcp_port_is_taken() {
    let db = TestDb::sqlite();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = taken.local_addr().expect("addr").to_string();
    let mut cmd = db.command(&["serve", "--bootstrap"]);
    cmd.env("INVOICING_MCP_ADDR", &addr);
    let server = Server::start_command(cmd);
    let logs = server.wait_for_log("the MCP server exited", 30);
    assert!(logs.contains(&addr), "the error names the address: {logs}");
    let token = server.bootstrap.as_ref().expect("bootstrap")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let resp = agent()
        .get(format!("{}/v1/session", server.base))
        .header("Authorization", format!("Bearer {token}"))
        .call()
        .expect("API");
    assert_eq!(
        resp.status(),
        200,
        "the API serves although MCP could not start"
    );
    assert!(server.stop().success());
}

/// `invoicing mcp` alone, against an API that does not answer: 503, never 401.
#[test]
fn mcp_alone_answers_503_when_the_api_is_down() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let api = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let mut child = Command::new(BIN)
        .arg("mcp")
        .env("INVOICING_MCP_ADDR", "127.0.0.1:0")
        .env("INVOICING_API_URL", &api)
        .env("INVOICING_LOG", "info")
        .env_remove("INVOICING_DATABASE_URL")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn invoicing mcp");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let needle = "MCP server listening at ";
    let url = loop {
        let line = lines
            .next()
            .expect("invoicing mcp exited before listening")
            .expect("read stderr");
        if let Some(rest) = line.split(needle).nth(1) {
            break rest.split_whitespace().next().expect("url").to_owned();
        }
    };
    let _logs = keep_lines(lines);
    let token = uuid::Uuid::new_v4().to_string();
    let (status, _) = status_of(&url, Some(&token)).expect("MCP answers");
    assert_eq!(status, 503, "API unreachable is not the caller's fault");
    let (status, _) = status_of(&url, Some("not-a-uuid")).expect("MCP answers");
    assert_eq!(
        status, 401,
        "a malformed token is refused without asking the API"
    );
    let health = agent()
        .get(url.replace("/mcp", "/healthz"))
        .call()
        .expect("healthz");
    assert_eq!(health.status(), 200);
    let _ = child.kill();
    let _ = child.wait();
}
