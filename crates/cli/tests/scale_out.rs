//! Scale-out: two `serve` processes and a separate `worker` on one database, with files
//! in an S3-compatible object store (moto's server mode, from tests/requirements.txt).
//! What one process writes, the others serve: receipts, report PDFs rendered by the
//! worker, and gapless invoice numbers.

mod common;

use std::{
    net::TcpListener,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use common::*;
use serde_json::json;

/// A moto S3 server on a free port, killed on drop.
struct S3 {
    child: Child,
    endpoint: String,
}

impl S3 {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let child = Command::new(python())
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto (tests/requirements.txt installs it)");
        let endpoint = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(60);
        while agent().get(&endpoint).call().is_err() {
            assert!(Instant::now() < deadline, "moto did not start within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        Self { child, endpoint }
    }

    fn create_bucket(&self, bucket: &str) {
        let r = agent()
            .put(&format!("{}/{bucket}", self.endpoint))
            .send_empty()
            .expect("create bucket");
        assert_eq!(r.status().as_u16(), 200);
    }

    /// The keys of the bucket under `prefix`.
    fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let mut r = agent()
            .get(&format!(
                "{}/{bucket}?list-type=2&prefix={prefix}",
                self.endpoint
            ))
            .call()
            .expect("list bucket");
        let xml = r.body_mut().read_to_string().expect("listing");
        xml.split("<Key>")
            .skip(1)
            .filter_map(|k| k.split("</Key>").next())
            .map(str::to_owned)
            .collect()
    }

    /// Sets what a service process needs to reach this server.
    fn configure(&self, cmd: &mut Command, storage_url: &str) {
        cmd.env("INVOICING_STORAGE_URL", storage_url)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "test-key")
            .env("AWS_SECRET_ACCESS_KEY", "test-secret")
            .env("AWS_DEFAULT_REGION", "us-east-1");
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn two_servers_and_a_worker_share_an_object_store(db: TestDb) {
    let s3 = S3::start();
    let bucket = format!("invoicing-{}", uuid::Uuid::new_v4().simple());
    s3.create_bucket(&bucket);
    let storage = format!("s3://{bucket}/tenant-files");

    let boot = migrate_and_bootstrap(
        &db,
        &["--company-name", "Scale Ltd", "--email", "owner@scale.test"],
    );
    let company = boot["company_id"].as_str().unwrap().to_owned();
    let me = Company::from_bootstrap(&boot);

    // A store the service cannot use stops it at start, saying which and why.
    let mut cmd = db.command(&["serve", "--no-worker", "--no-mcp"]);
    s3.configure(&mut cmd, "s3://no-such-bucket/files");
    let out = cmd.output().expect("run serve");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("object store s3://no-such-bucket/files is not usable"),
        "{stderr}"
    );

    let start = |args: &[&str]| {
        let mut cmd = db.command(args);
        s3.configure(&mut cmd, &storage);
        cmd
    };
    let server_a = Server::start_command(start(&["serve", "--no-worker", "--no-mcp"]));
    let server_b = Server::start_command(start(&["serve", "--no-worker", "--no-mcp"]));
    let mut worker = start(&["worker"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start worker");
    let (a, b) = (server_a.base.clone(), server_b.base.clone());

    // Settle the company through A; B sees it at once.
    let (s, r) = call(
        &a,
        &me,
        "POST",
        "/v1/company/registration",
        Some(
            json!({"name": "Scale Ltd", "fiscal_id": "IE6388047V", "email": "b@scale.test",
            "phone": "1", "address": {"lines": ["1 St"], "zipcode": "D1", "city": "Dublin", "country": "IE"}}),
        ),
    );
    assert_eq!(s, 200, "{r}");
    let (_, docs) = call(&b, &me, "GET", "/v1/agreements", None);
    for d in docs["data"].as_array().unwrap() {
        let path = format!("/v1/agreements/{}/accept", d["id"].as_str().unwrap());
        let (s, r) = call(&b, &me, "POST", &path, None);
        assert_eq!(s, 200, "{r}");
    }

    // A receipt uploaded to A is served by B, byte for byte, from the bucket.
    let (s, supplier) = call(
        &a,
        &me,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Paper Ltd", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(s, 201, "{supplier}");
    let (s, expense) = call(
        &a,
        &me,
        "POST",
        "/v1/expenses",
        Some(
            json!({"supplier_id": supplier["id"], "invoice_reference": "P-1",
            "lines": [{"concept": "Paper", "subtotal": 4200}]}),
        ),
    );
    assert_eq!(s, 201, "{expense}");
    let receipt = format!("/v1/expenses/{}/receipt", expense["id"].as_str().unwrap());
    let png = b"\x89PNG\r\n\x1a\n-till receipt".to_vec();
    let (s, _, body) = bytes(&a, &me, "PUT", &receipt, Some(&png));
    assert_eq!(s, 200, "{}", String::from_utf8_lossy(&body));
    let (s, content_type, got) = bytes(&b, &me, "GET", &receipt, None);
    assert_eq!(s, 200);
    assert_eq!(content_type, "image/png");
    assert_eq!(got, png);
    let keys = s3.keys(&bucket, &format!("tenant-files/{company}/"));
    assert_eq!(keys.len(), 1, "{keys:?}");

    // Invoices issued through both servers share one gapless sequence.
    let (s, customer) = call(
        &b,
        &me,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Customer Ltd", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(s, 201, "{customer}");
    let mut numbers = Vec::new();
    for n in 0..10 {
        let (base, other) = if n % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let (s, d) = call(
            base,
            &me,
            "POST",
            "/v1/invoices",
            Some(
                json!({"recipient_id": customer["id"], "lines": [{"concept": "Work", "unit_price": 1000 + n}]}),
            ),
        );
        assert_eq!(s, 201, "{d}");
        let path = format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap());
        let (s, inv) = call(other, &me, "POST", &path, None);
        assert_eq!(s, 200, "{inv}");
        numbers.push(inv["invoice_number"].as_i64().unwrap());
    }
    assert_eq!(numbers, (1..=10).collect::<Vec<_>>());

    // A report asked of B is rendered by the worker into the bucket and downloaded from A.
    let (s, created) = call(
        &b,
        &me,
        "POST",
        "/v1/reports",
        Some(
            json!({"report_type": "business_overview", "period_start": "2026-01-01T00:00:00Z",
            "period_end": "2027-01-01T00:00:00Z"}),
        ),
    );
    assert_eq!(s, 201, "{created}");
    let report = created["data"][0]["id"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, r) = call(&a, &me, "GET", &format!("/v1/reports/{report}"), None);
        if r["status"] == "ready" {
            break;
        }
        assert_ne!(r["status"], "failed", "{r}");
        assert!(Instant::now() < deadline, "the report is not ready: {r}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (s, content_type, pdf) = bytes(&a, &me, "GET", &format!("/v1/reports/{report}/pdf"), None);
    assert_eq!(s, 200);
    assert_eq!(content_type, "application/pdf");
    assert!(pdf.starts_with(b"%PDF"));
    let keys = s3.keys(&bucket, &format!("tenant-files/{company}/"));
    assert_eq!(keys.len(), 2, "the receipt and the report: {keys:?}");

    let _ = worker.kill();
    let _ = worker.wait();
    assert!(server_a.stop().success());
    assert!(server_b.stop().success());
}

#[test]
fn two_servers_and_a_worker_share_an_object_store_on_postgres() {
    two_servers_and_a_worker_share_an_object_store(TestDb::postgres());
}

#[test]
fn two_servers_and_a_worker_share_an_object_store_on_sqlite() {
    two_servers_and_a_worker_share_an_object_store(TestDb::sqlite());
}

/// `GET /v1/session` with `token` on `base`: the status.
fn session(base: &str, token: &str) -> u16 {
    match agent()
        .get(&format!("{base}/v1/session"))
        .header("Authorization", &format!("Bearer {token}"))
        .call()
    {
        Ok(r) => r.status().as_u16(),
        Err(ureq::Error::StatusCode(code)) => code,
        Err(e) => panic!("GET /v1/session: {e}"),
    }
}

/// Waits (ten seconds at most) until `token` is refused on `base`.
fn refused_soon(base: &str, token: &str, what: &str) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        match session(base, token) {
            401 => return,
            200 if Instant::now() < give_up => std::thread::sleep(Duration::from_millis(20)),
            other => panic!("{what}: the revoked token still answers {other}"),
        }
    }
}

/// A token revoked by another process (the other server, or `invoicing admin token revoke`)
/// stops working on a running server. On PostgreSQL the servers keep what tokens resolved
/// to in memory, here for a minute (`INVOICING_TOKEN_CACHE_MS`), so only PostgreSQL's
/// notification of the change can end it early.
fn tokens_revoked_elsewhere_stop_working(db: TestDb, postgres: bool) {
    // The setting is bounded, and says why.
    let out = db
        .command(&["migrate"])
        .env("INVOICING_TOKEN_CACHE_MS", "600000")
        .output()
        .expect("run migrate");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("INVOICING_TOKEN_CACHE_MS must be at most 60000"),
        "{stderr}"
    );

    let boot = migrate_and_bootstrap(
        &db,
        &["--company-name", "Kept Ltd", "--email", "owner@kept.test"],
    );
    let me = Company::from_bootstrap(&boot);
    let start = || {
        let mut cmd = db.command(&["serve", "--no-worker", "--no-mcp"]);
        cmd.env("INVOICING_TOKEN_CACHE_MS", "60000");
        Server::start_command(cmd)
    };
    let server_a = start();
    let server_b = start();
    let token = |description: &str| {
        let (status, made) = call(
            &server_a.base,
            &me,
            "POST",
            "/v1/tokens",
            Some(json!({ "description": description })),
        );
        assert_eq!(status, 201, "{made}");
        (
            made["id"].as_str().unwrap().to_owned(),
            made["token"].as_str().unwrap().to_owned(),
        )
    };
    let (id1, t1) = token("revoked through the API");
    let (id2, t2) = token("revoked by an operator");
    if postgres {
        // Both servers listen for PostgreSQL's notifications (from their first lookup on).
        assert_eq!(session(&server_a.base, &me.token), 200);
        assert_eq!(session(&server_b.base, &me.token), 200);
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            let (listening,): (i64,) = block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&db.url).await.unwrap();
                sqlx::query_as(
                    "SELECT COUNT(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND application_name = $1",
                )
                .bind(store::token_cache::APPLICATION_NAME)
                .fetch_one(&mut conn)
                .await
                .unwrap()
            });
            if listening == 2 {
                break;
            }
            assert!(Instant::now() < give_up, "{listening} servers listen");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    for t in [&t1, &t2] {
        // The second lookup is answered from memory where there is a cache.
        assert_eq!(session(&server_b.base, t), 200);
        assert_eq!(session(&server_b.base, t), 200);
    }

    // Revoked through server A: server B refuses it.
    let resp = agent()
        .delete(&format!("{}/v1/tokens/{id1}", server_a.base))
        .header("Authorization", &format!("Bearer {}", me.token))
        .header("X-Human-Proof", &me.proof)
        .call()
        .expect("revoke");
    assert_eq!(resp.status().as_u16(), 204);
    assert_eq!(session(&server_a.base, &t1), 401, "at once where revoked");
    refused_soon(&server_b.base, &t1, "revoked through the other server");
    assert_eq!(
        session(&server_b.base, &t2),
        200,
        "the other token still works"
    );

    // Revoked by an operator with the CLI, a third process.
    let (ok, out, stderr) = run(&db, &["admin", "token", "revoke", &id2]);
    assert!(ok, "{stderr}");
    assert_eq!(out["revoked"], id2.as_str());
    refused_soon(&server_b.base, &t2, "revoked by the CLI");
    refused_soon(&server_a.base, &t2, "revoked by the CLI");
    let (ok, _, stderr) = run(&db, &["admin", "token", "revoke", &id2]);
    assert!(!ok && stderr.contains("already revoked"), "{stderr}");
    let (ok, _, stderr) = run(&db, &["admin", "token", "revoke", "no-such-token"]);
    assert!(
        !ok && stderr.contains("no token has id no-such-token"),
        "{stderr}"
    );
    assert_eq!(session(&server_b.base, &me.token), 200);

    assert!(server_a.stop().success());
    assert!(server_b.stop().success());
}

#[test]
fn tokens_revoked_elsewhere_stop_working_on_postgres() {
    tokens_revoked_elsewhere_stop_working(TestDb::postgres(), true);
}

#[test]
fn tokens_revoked_elsewhere_stop_working_on_sqlite() {
    tokens_revoked_elsewhere_stop_working(TestDb::sqlite(), false);
}
