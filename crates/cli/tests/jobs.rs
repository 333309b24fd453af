//! Background jobs through the real binary: `invoicing worker` processes
//! sharing one queue send each password mail once over SMTP with nothing of
//! the password in any log, and `serve` runs a worker of its own that writes
//! mail to the outbox by default.

mod common;

use std::{
    io::{BufRead, BufReader},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::*;
use jobs::testing::SmtpSink;
use serde_json::{Value, json};

/// A running `invoicing worker` whose stderr is kept.
struct WorkerProc {
    child: Child,
    logs: Arc<Mutex<String>>,
}

impl WorkerProc {
    fn start(db: &TestDb, env: &[(&str, &str)]) -> Self {
        let mut cmd = db.command(&["worker"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn worker");
        let stderr = child.stderr.take().expect("stderr");
        let logs = keep_lines(BufReader::new(stderr).lines());
        let started = Instant::now();
        while !logs.lock().expect("lock").contains("worker started") {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "worker did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, logs }
    }

    /// SIGTERM, then the exit status and everything it logged.
    fn stop(mut self) -> (ExitStatus, String) {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill");
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                std::thread::sleep(Duration::from_millis(100));
                return (status, self.logs.lock().expect("lock").clone());
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "worker ignored SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn add_member(base: &str, boot: &Value, body: Value) -> Value {
    let mut resp = agent()
        .post(format!("{base}/v1/members"))
        .header(
            "Authorization",
            format!("Bearer {}", boot["token"].as_str().unwrap()),
        )
        .header("X-Human-Proof", boot["human_proof"].as_str().unwrap())
        .send_json(body)
        .expect("request");
    assert_eq!(resp.status(), 201);
    resp.body_mut().read_json().expect("json")
}

fn two_workers_send_each_password_mail_once(db: TestDb) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let sink = rt.block_on(SmtpSink::start()).expect("smtp sink");
    let (ok, boot, stderr) = run(
        &db,
        &[
            "admin",
            "bootstrap",
            "--company-name",
            "Mail Test Ltd",
            "--email",
            "owner@mail.test",
        ],
    );
    assert!(ok, "{stderr}");
    let server = Server::start(&db, &["serve", "--no-worker"]);
    let mut answers = String::new();
    const N: usize = 12;
    for i in 0..N {
        let m = add_member(
            &server.base,
            &boot,
            json!({"email": format!("m{i}@mail.test"), "kind": "password"}),
        );
        assert_eq!(m["status"], "active");
        answers.push_str(&m.to_string());
    }
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        sink.messages().is_empty(),
        "serve --no-worker sends nothing"
    );

    let env = [
        ("INVOICING_SMTP_URL", sink.url()),
        ("INVOICING_LOG", "debug".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let workers = [WorkerProc::start(&db, &env), WorkerProc::start(&db, &env)];
    let mails = rt.block_on(sink.wait_for(N, Duration::from_secs(90)));
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(sink.messages().len(), N, "each mail sent once");
    let mut recipients: Vec<String> = mails.iter().map(|m| m.to.join(",")).collect();
    recipients.sort();
    recipients.dedup();
    assert_eq!(recipients.len(), N, "one mail per member");

    let hashes: Vec<(String, String)> = rt.block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&db.url).await.expect("db");
        let rows = sqlx::query_as(
            "SELECT email, password_hash FROM users WHERE password_hash IS NOT NULL",
        )
        .fetch_all(&pool)
        .await
        .expect("users");
        pool.close().await;
        rows
    });
    let mut logs = String::new();
    let mut sent = 0;
    for w in workers {
        let (status, log) = w.stop();
        assert!(status.success(), "worker exit: {status}\n{log}");
        assert!(log.contains("worker stopped"), "{log}");
        sent += log.matches("mail sent").count();
        logs.push_str(&log);
    }
    assert_eq!(sent, N, "the two workers together ran each job once");
    logs.push_str(&server.logs());
    server.stop();
    for mail in &mails {
        let (_, hash) = hashes
            .iter()
            .find(|(e, _)| mail.to == [e.clone()])
            .expect("the recipient has a password hash");
        let text = mail.text();
        let password = text
            .split_whitespace()
            .find(|w| w.len() >= 16 && jobs::password::verify(w, hash))
            .unwrap_or_else(|| panic!("no working password in:\n{text}"));
        assert!(!logs.contains(password), "the password is in the logs");
        assert!(!answers.contains(password));
    }
}

#[test]
fn two_worker_processes_send_each_password_mail_once_postgres() {
    two_workers_send_each_password_mail_once(TestDb::postgres());
}

#[test]
fn two_worker_processes_send_each_password_mail_once_sqlite() {
    two_workers_send_each_password_mail_once(TestDb::sqlite());
}

fn serve_writes_mail_to_the_outbox_by_default(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap"]);
    let boot = server.bootstrap.clone().expect("bootstrap JSON");
    add_member(
        &server.base,
        &boot,
        json!({"email": "olga@example.com", "kind": "oauth"}),
    );
    let outbox = db.dir.path().join("data/outbox");
    let started = Instant::now();
    let eml = loop {
        let found = std::fs::read_dir(&outbox)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|e| e == "eml"));
        if let Some(path) = found {
            break std::fs::read_to_string(path).expect("eml");
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no .eml in {}",
            outbox.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(eml.contains("To: olga@example.com"), "{eml}");
    assert!(eml.contains("no-reply@localhost"), "{eml}");
    let status = server.stop();
    assert!(status.success());
}

#[test]
fn serve_writes_mail_to_the_outbox_by_default_sqlite() {
    serve_writes_mail_to_the_outbox_by_default(TestDb::sqlite());
}

#[test]
fn serve_writes_mail_to_the_outbox_by_default_postgres() {
    serve_writes_mail_to_the_outbox_by_default(TestDb::postgres());
}

fn dead_jobs_are_listed_with_their_error_and_retried(db: TestDb) {
    let (ok, _, stderr) = run(&db, &["migrate"]);
    assert!(ok, "{stderr}");
    let id = "01900000-0000-7000-8000-00000000dead";
    tokio::runtime::Runtime::new().expect("rt").block_on(async {
        sqlx::any::install_default_drivers();
        let pool = sqlx::AnyPool::connect(&db.url).await.expect("db");
        sqlx::query(
            "INSERT INTO jobs (id, kind, payload, status, attempts, max_attempts, run_at, \
             last_error, created_at, updated_at, finished_at) \
             VALUES ($1, 'email.send', '{\"to\":\"x@example.com\"}', 'dead', 10, 10, 1, \
             'connection refused', 1, 1, 1)",
        )
        .bind(id)
        .execute(&pool)
        .await
        .expect("insert");
        pool.close().await;
    });
    let (ok, out, stderr) = run(&db, &["admin", "jobs", "list", "--status", "dead"]);
    assert!(ok, "{stderr}");
    let jobs = out["data"].as_array().expect("data");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["id"], id);
    assert_eq!(jobs[0]["last_error"], "connection refused");
    assert_eq!(jobs[0]["attempts"], 10);
    assert!(jobs[0].get("payload").is_none(), "payloads are not shown");

    let (ok, out, stderr) = run(&db, &["admin", "jobs", "retry", id]);
    assert!(ok, "{stderr}");
    assert_eq!(out["status"], "queued");
    assert_eq!(out["attempts"], 0);
    let (ok, _, stderr) = run(&db, &["admin", "jobs", "retry", id]);
    assert!(!ok);
    assert!(stderr.contains("not dead"), "{stderr}");
    let (ok, _, stderr) = run(&db, &["admin", "jobs", "retry", "nope"]);
    assert!(!ok && stderr.contains("no job"), "{stderr}");
    let (_, out, _) = run(&db, &["admin", "jobs", "list", "--status", "dead"]);
    assert_eq!(out["data"].as_array().map(Vec::len), Some(0));
}

#[test]
fn dead_jobs_are_listed_with_their_error_and_retried_sqlite() {
    dead_jobs_are_listed_with_their_error_and_retried(TestDb::sqlite());
}

#[test]
fn dead_jobs_are_listed_with_their_error_and_retried_postgres() {
    dead_jobs_are_listed_with_their_error_and_retried(TestDb::postgres());
}
