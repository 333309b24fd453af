//! Helpers shared by the black-box tests: a database per test and a running server.
#![allow(dead_code)]

pub mod browser;
pub mod web;

use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_invoicing");

/// A database for one test: a temp SQLite file or a fresh PostgreSQL database.
pub struct TestDb {
    pub url: String,
    pub dir: tempfile::TempDir,
    pg_name: Option<String>,
}

pub fn pg_admin() -> String {
    std::env::var("INVOICING_TEST_POSTGRES_URL")
        .expect("PostgreSQL tests need INVOICING_TEST_POSTGRES_URL (scripts/test sets it)")
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

impl TestDb {
    pub fn sqlite() -> Self {
        let dir = tempfile::tempdir().expect("tmp");
        let url = format!(
            "sqlite://{}",
            dir.path().join("data/invoicing.db").display()
        );
        Self {
            url,
            dir,
            pg_name: None,
        }
    }

    pub fn postgres() -> Self {
        use sqlx::{Connection, Executor};
        let admin = pg_admin();
        let name = format!("inv_bin_{}", uuid::Uuid::new_v4().simple());
        block_on(async {
            let mut c = sqlx::PgConnection::connect(&admin).await.expect("pg");
            c.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .await
                .expect("create db");
        });
        let base = admin.rsplit_once('/').map_or(admin.as_str(), |(b, _)| b);
        Self {
            url: format!("{base}/{name}"),
            dir: tempfile::tempdir().expect("tmp"),
            pg_name: Some(name),
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        self.command_of(std::path::Path::new(BIN), args)
    }

    /// [`TestDb::command`] running the `invoicing` executable at `program`.
    pub fn command_of(&self, program: &std::path::Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("INVOICING_DATABASE_URL", &self.url)
            .env("INVOICING_DATA_DIR", self.dir.path().join("data"))
            .env("INVOICING_HTTP_ADDR", "127.0.0.1:0")
            // `serve` starts an MCP child: on a free port, so tests never collide.
            .env("INVOICING_MCP_ADDR", "127.0.0.1:0")
            .env("INVOICING_LOG", "info");
        cmd
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Some(name) = &self.pg_name {
            use sqlx::{Connection, Executor};
            let admin = pg_admin();
            let name = name.clone();
            block_on(async move {
                if let Ok(mut c) = sqlx::PgConnection::connect(&admin).await {
                    let _ = c
                        .execute(sqlx::AssertSqlSafe(format!(
                            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                        )))
                        .await;
                }
            });
        }
    }
}

/// Collects lines on a thread of its own (a child's stderr, so it never blocks on a full pipe).
pub fn keep_lines(
    lines: impl Iterator<Item = std::io::Result<String>> + Send + 'static,
) -> std::sync::Arc<std::sync::Mutex<String>> {
    keep_lines_after(String::new(), lines)
}

/// [`keep_lines`] after the lines already read.
pub fn keep_lines_after(
    read: String,
    lines: impl Iterator<Item = std::io::Result<String>> + Send + 'static,
) -> std::sync::Arc<std::sync::Mutex<String>> {
    let logs = std::sync::Arc::new(std::sync::Mutex::new(read));
    let sink = logs.clone();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let mut all = sink.lock().expect("lock");
            all.push_str(&line);
            all.push('\n');
        }
    });
    logs
}

/// A running `invoicing serve`, stopped with SIGTERM on drop.
pub struct Server {
    child: Child,
    pub base: String,
    pub bootstrap: Option<Value>,
    logs: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    pub fn start(db: &TestDb, args: &[&str]) -> Self {
        Self::start_command(db.command(args))
    }

    /// Starts a prepared `invoicing serve` command (see [`TestDb::command`]).
    pub fn start_command(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn invoicing");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let mut read = String::new();
        let base = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("server exited before listening:\n{read}"))
                .expect("read stderr");
            read.push_str(&line);
            read.push('\n');
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().expect("address").to_owned();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        let logs = keep_lines_after(read, lines);
        // stdout carries only the bootstrap JSON, printed before the listener
        // starts; a thread collects it (the pipe stays open while the server runs).
        let mut stdout = child.stdout.take().expect("stdout");
        let collected = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = collected.clone();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock().expect("lock").extend_from_slice(&chunk[..n]);
            }
        });
        std::thread::sleep(Duration::from_millis(300));
        let out = collected.lock().expect("lock").clone();
        let bootstrap =
            (!out.is_empty()).then(|| serde_json::from_slice(&out).expect("bootstrap JSON"));
        Self {
            child,
            base,
            bootstrap,
            logs,
        }
    }

    /// What the server wrote to stderr.
    pub fn logs(&self) -> String {
        self.logs.lock().expect("lock").clone()
    }

    /// Waits until the logs contain `needle` (panics with the logs after `secs`).
    pub fn wait_for_log(&self, needle: &str, secs: u64) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let logs = self.logs();
            if logs.contains(needle) {
                return logs;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no `{needle}` in the logs within {secs} s:\n{logs}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The endpoint of the MCP child `serve` started (`http://host:port/mcp`).
    pub fn mcp_url(&self) -> String {
        let needle = "MCP server listening at ";
        let logs = self.wait_for_log(needle, 30);
        let rest = logs.split(needle).nth(1).expect("MCP line");
        rest.split_whitespace()
            .next()
            .expect("MCP address")
            .to_owned()
    }

    pub fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        for _ in 0..100 {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("server did not stop within 10 s of SIGTERM");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

/// Runs the binary to completion; returns success, stdout parsed as JSON (or null) and stderr.
pub fn run(db: &TestDb, args: &[&str]) -> (bool, Value, String) {
    let out = db.command(args).output().expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = if out.status.success() && !stdout.trim().is_empty() {
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {stdout}"))
    } else {
        assert!(
            stdout.trim().is_empty(),
            "nothing but JSON on stdout: {stdout}"
        );
        Value::Null
    };
    (out.status.success(), json, stderr)
}

/// `invoicing migrate`, then `invoicing admin bootstrap` with `args` (company name, e-mail
/// and the rest): its JSON (the company's id, its owner's tokens).
pub fn migrate_and_bootstrap(db: &TestDb, args: &[&str]) -> Value {
    let (ok, _, stderr) = run(db, &["migrate"]);
    assert!(ok, "{stderr}");
    let mut all = vec!["admin", "bootstrap"];
    all.extend_from_slice(args);
    let (ok, boot, stderr) = run(db, &all);
    assert!(ok, "{stderr}");
    boot
}

/// The Python with the test clients: `INVOICING_TEST_PYTHON` (set by scripts/test),
/// else the repository's `.venv`.
pub fn python() -> String {
    if let Ok(p) = std::env::var("INVOICING_TEST_PYTHON") {
        return p;
    }
    let venv = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv/bin/python");
    assert!(
        std::path::Path::new(venv).exists(),
        "the MCP tests need the Python clients: run scripts/test, or create .venv with \
         `python3 -m venv .venv && .venv/bin/pip install -r tests/requirements.txt`, or set \
         INVOICING_TEST_PYTHON"
    );
    venv.to_owned()
}

/// A member's API token and human proof.
pub struct Company {
    pub token: String,
    pub proof: String,
}

impl Company {
    /// The member a bootstrap made (`serve --bootstrap` or `admin bootstrap` JSON).
    pub fn from_bootstrap(boot: &Value) -> Self {
        let text = |key: &str| {
            boot[key]
                .as_str()
                .unwrap_or_else(|| panic!("{key} in the bootstrap JSON: {boot}"))
                .to_owned()
        };
        Self {
            token: text("token"),
            proof: text("human_proof"),
        }
    }
}

/// A JSON request as that member, a person; the status and the body (JSON, else a string).
pub fn call(
    base: &str,
    c: &Company,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let http = agent();
    let url = format!("{base}{path}");
    let auth = format!("Bearer {}", c.token);
    let mut resp = match (method, body) {
        ("GET", _) => http
            .get(&url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .call(),
        ("POST", Some(b)) => http
            .post(&url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .send_json(b),
        ("POST", None) => http
            .post(&url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .send_empty(),
        ("PATCH", Some(b)) => http
            .patch(&url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &c.proof)
            .send_json(b),
        _ => unreachable!(),
    }
    .expect("request");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A PUT of raw bytes, or a GET: status, content type and body.
pub fn bytes(
    base: &str,
    who: &Company,
    method: &str,
    path: &str,
    body: Option<&[u8]>,
) -> (u16, String, Vec<u8>) {
    let url = format!("{base}{path}");
    let auth = format!("Bearer {}", who.token);
    let http = agent();
    let mut resp = match (method, body) {
        ("PUT", Some(b)) => http
            .put(&url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &who.proof)
            .header("Content-Type", "application/octet-stream")
            .send(b),
        ("GET", None) => http
            .get(&url)
            .header("Authorization", &auth)
            .header("X-Human-Proof", &who.proof)
            .call(),
        (method, body) => panic!(
            "bytes() sends a PUT with a body or a GET without one, not {method} with {} body",
            if body.is_some() { "a" } else { "no" }
        ),
    }
    .expect("request");
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = resp.body_mut().read_to_vec().expect("body");
    (status, content_type, body)
}

/// Accepts every legal document the member has not accepted yet (writes need it).
pub fn accept_agreements(base: &str, c: &Company) {
    let (s, docs) = call(base, c, "GET", "/v1/agreements", None);
    assert_eq!(s, 200, "{docs}");
    for d in docs["data"].as_array().expect("agreements") {
        let path = format!("/v1/agreements/{}/accept", d["id"].as_str().expect("id"));
        let (s, body) = call(base, c, "POST", &path, None);
        assert_eq!(s, 200, "{body}");
    }
}

/// The text of a PDF, through `pdftotext` (scripts/test installs poppler-utils).
pub fn pdf_text(pdf: &[u8]) -> String {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "binary-{}-{}.pdf",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::write(&path, pdf).expect("write the PDF");
    let out = Command::new("pdftotext")
        .args(["-raw", "-enc", "UTF-8"])
        .arg(&path)
        .arg("-")
        .output();
    let _ = std::fs::remove_file(&path);
    let out = out.expect("pdftotext is required (scripts/test installs poppler-utils)");
    assert!(out.status.success(), "pdftotext failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The one-time password `admin password` sets for `email` (to be replaced at sign-in).
pub fn admin_password(db: &TestDb, email: &str) -> String {
    let (ok, out, stderr) = run(db, &["admin", "password", "--email", email]);
    assert!(ok, "{stderr}");
    assert_eq!(out["change_required"], true);
    out["password"].as_str().expect("password").to_owned()
}

/// Calls the API as the bootstrap person (token and human proof); JSON in and out.
pub fn human_api(server: &Server, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let boot = server.bootstrap.as_ref().expect("bootstrap");
    let url = format!("{}{path}", server.base);
    let token = format!("Bearer {}", boot["token"].as_str().expect("token"));
    let proof = boot["human_proof"].as_str().expect("proof");
    let req = ureq::http::Request::builder()
        .method(method)
        .uri(&url)
        .header("Authorization", &token)
        .header("X-Human-Proof", proof);
    let resp = match body {
        Some(b) => agent().run(
            req.header("Content-Type", "application/json")
                .body(b.to_string())
                .expect("request"),
        ),
        None => agent().run(req.body(()).expect("request")),
    };
    let mut resp = resp.expect("API call");
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// A server with a settled company (Irish, so no VERI*FACTU) and its owner, ready
/// for a browser script: `serve --bootstrap`, the company's registration, the
/// owner's one-time password.
pub struct WebFixture {
    pub server: Server,
    pub owner: &'static str,
    pub password: String,
}

impl WebFixture {
    pub fn start(db: &TestDb) -> Self {
        Self::start_with_env(db, &[])
    }

    /// The same, the server started with these environment variables too.
    pub fn start_with_env(db: &TestDb, env: &[(&str, &str)]) -> Self {
        Self::start_with(db, &[], env)
    }

    /// The same, `serve` given these arguments too (`--no-worker`) and these
    /// environment variables.
    pub fn start_with(db: &TestDb, args: &[&str], env: &[(&str, &str)]) -> Self {
        let owner = "owner@example.com";
        let mut serve = vec!["serve", "--bootstrap", "--email", owner];
        serve.extend_from_slice(args);
        let mut cmd = db.command(&serve);
        cmd.envs(env.iter().copied());
        let server = Server::start_command(cmd);
        let password = admin_password(db, owner);
        let (status, settled) = human_api(
            &server,
            "POST",
            "/v1/company/registration",
            Some(
                serde_json::json!({"name": "Example Company Ltd", "fiscal_id": "IE6388047V",
                "email": "billing@example.com", "phone": "+353 1 555 0100",
                "address": {"lines": ["1 Main Street"], "zipcode": "D02 X285", "city": "Dublin", "country": "IE"}}),
            ),
        );
        assert_eq!(status, 200, "{settled}");
        Self {
            server,
            owner,
            password,
        }
    }

    /// Runs `tests/web/<script>` in Node against this server. Its argument is a
    /// JSON object with `base`, `email`, `password`, `newPassword`, `apiToken`,
    /// `apiProof`, `mcpToken` (an AI caller's), `artifacts` (screenshots of this run) and `extra`'s fields;
    /// the script must print `ok` last. Panics with its output and the server's logs.
    pub fn run_script(&self, script: &str, name: &str, extra: Value) {
        let boot = self.server.bootstrap.clone().expect("bootstrap");
        let artifacts = std::env::var("INVOICING_TEST_ARTIFACTS").map_or_else(
            |_| std::env::temp_dir().join("invoicing-web-e2e"),
            std::path::PathBuf::from,
        );
        let mut config = serde_json::json!({
            "base": self.server.base,
            "email": self.owner,
            "password": self.password,
            "newPassword": "my own long passphrase",
            "apiToken": boot["token"],
            "apiProof": boot["human_proof"],
            "mcpToken": boot["mcp_token"],
            "artifacts": artifacts.join(name),
        });
        if let (Some(c), Value::Object(more)) = (config.as_object_mut(), extra) {
            c.extend(more);
        }
        let path = format!("{}/../../tests/web/{script}", env!("CARGO_MANIFEST_DIR"));
        let node = Command::new("node")
            .arg(&path)
            .arg(config.to_string())
            .output()
            .expect("run node (scripts/test installs Node packages and Chromium)");
        let stdout = String::from_utf8_lossy(&node.stdout);
        assert!(
            node.status.success() && stdout.trim_end().ends_with("ok"),
            "the browser test {script} failed (screenshots in {}):\n{stdout}\n{}\n--- server logs ---\n{}",
            artifacts.join(name).display(),
            String::from_utf8_lossy(&node.stderr),
            self.server.logs()
        );
    }
}
