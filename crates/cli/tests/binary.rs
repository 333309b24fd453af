//! Black-box tests of the real `invoicing` binary: started on port 0, driven over HTTP.

use std::{
    io::{BufRead, BufReader, Read},
    process::{Child, Command, Stdio},
    time::Duration,
};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_invoicing");

/// A database for one test: a temp SQLite file or a fresh PostgreSQL database.
struct TestDb {
    url: String,
    dir: tempfile::TempDir,
    pg_name: Option<String>,
}

fn pg_admin() -> String {
    std::env::var("INVOICING_TEST_POSTGRES_URL")
        .expect("PostgreSQL tests need INVOICING_TEST_POSTGRES_URL (scripts/test sets it)")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

impl TestDb {
    fn sqlite() -> Self {
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

    fn postgres() -> Self {
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

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env("INVOICING_DATABASE_URL", &self.url)
            .env("INVOICING_DATA_DIR", self.dir.path().join("data"))
            .env("INVOICING_HTTP_ADDR", "127.0.0.1:0")
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

/// A running `invoicing serve`, stopped with SIGTERM on drop.
struct Server {
    child: Child,
    base: String,
    bootstrap: Option<Value>,
}

impl Server {
    fn start(db: &TestDb, args: &[&str]) -> Self {
        let mut child = db
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn invoicing");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let base = loop {
            let line = lines
                .next()
                .expect("server exited before listening")
                .expect("read stderr");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().expect("address").to_owned();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
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
        }
    }

    fn stop(mut self) -> std::process::ExitStatus {
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

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .into()
}

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

fn run(db: &TestDb, args: &[&str]) -> (bool, Value, String) {
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
}

#[test]
fn admin_on_sqlite() {
    admin_commands(TestDb::sqlite());
}

#[test]
fn admin_on_postgres() {
    admin_commands(TestDb::postgres());
}
