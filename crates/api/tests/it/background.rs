//! Test support for background jobs: workers over a test app's database that
//! retry quickly, and readers of the jobs table.

use std::time::Duration;

use jobs::{Context, JobsConfig, MailConfig, Mailer, Registry, Worker, WorkerConfig};
use tokio::{sync::oneshot, task::JoinHandle};

use crate::support::TestApp;

/// Short waits and retries, so tests see several attempts in a second or two.
pub fn fast_config() -> WorkerConfig {
    WorkerConfig {
        poll_interval: Duration::from_millis(50),
        lease: Duration::from_secs(10),
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_millis(400),
        shutdown_grace: Duration::from_secs(5),
        concurrency: 1,
        schedule_interval: Duration::from_secs(3600),
        getting_paid_interval: Duration::from_secs(3600),
    }
}

/// A job context over `db` mailing to `smtp_url`, or to `.eml` files in `outbox`.
pub fn context(db: &store::Db, smtp_url: Option<String>, outbox: &std::path::Path) -> Context {
    let mailer = Mailer::new(&MailConfig {
        smtp_url,
        outbox_dir: outbox.to_owned(),
        from: "Invoicing Test <no-reply@invoicing.test>".into(),
    })
    .expect("mailer");
    Context::new(
        db.clone(),
        std::sync::Arc::new(mailer),
        std::sync::Arc::new(JobsConfig {
            public_url: "http://invoicing.test".into(),
            secret_key: crate::support::test_secret(),
            report_timeout: std::time::Duration::from_secs(30),
        }),
    )
}

/// A worker.
pub struct Running {
    stop: Option<oneshot::Sender<()>>,
    handle: JoinHandle<()>,
}

impl Running {
    /// Starts `worker` in the background.
    pub fn spawn(worker: Worker) -> Self {
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(worker.run(async {
            let _ = rx.await;
        }));
        Self {
            stop: Some(tx),
            handle,
        }
    }

    /// Asks the worker to stop and waits until it has (its running job finished or released).
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let _ = tokio::time::timeout(Duration::from_secs(30), &mut self.handle).await;
    }
}

impl TestApp {
    /// A worker running the standard kinds, mailing to `smtp_url` (or an outbox in a temp dir).
    pub fn worker(&self, smtp_url: Option<String>, outbox: &std::path::Path) -> Worker {
        Worker::new(
            context(&self.db, smtp_url, outbox).with_clock(self.state.clock.clone()),
            Registry::standard(),
            fast_config(),
        )
    }

    /// A worker that sends VERI*FACTU records to `endpoint` (plain HTTP), waiting at most
    /// `timeout` for each answer.
    pub fn aeat_worker(&self, endpoint: &str, timeout: Duration) -> Worker {
        let dir = std::env::temp_dir();
        let mut ctx = context(&self.db, None, &dir).with_clock(self.state.clock.clone());
        ctx.aeat = Some(std::sync::Arc::new(
            jobs::aeat::AeatClient::new(&jobs::aeat::AeatSettings {
                endpoint: endpoint.to_owned(),
                cert: None,
                cert_password: None,
                ca: None,
                timeout,
            })
            .expect("AEAT client"),
        ));
        Worker::new(ctx, Registry::standard(), fast_config())
    }

    /// Every job, oldest first, optionally of one kind.
    pub async fn jobs(&self, kind: Option<&str>) -> Vec<store::jobs::JobRow> {
        let mut conn = self.db.pool().acquire().await.expect("conn");
        store::jobs::list(&mut conn, kind, None)
            .await
            .expect("jobs")
    }

    /// Waits until `check` holds for the jobs of `kind` (or fails after 30 s).
    pub async fn wait_for_jobs(
        &self,
        kind: &str,
        what: &str,
        check: impl Fn(&[store::jobs::JobRow]) -> bool,
    ) -> Vec<store::jobs::JobRow> {
        for _ in 0..600 {
            let jobs = self.jobs(Some(kind)).await;
            if check(&jobs) {
                return jobs;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "timed out waiting for {what}: {:?}",
            self.jobs(Some(kind)).await
        );
    }

    /// Every row of every table, the AI audit queue included, as text.
    pub async fn everything(&self) -> String {
        use sqlx::Row;
        let mut out = self.fingerprint().await;
        for t in ["ai_audit_entries"] {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM {t}")))
                .fetch_all(self.db.pool())
                .await
                .expect("dump");
            for row in rows {
                for i in 0..row.len() {
                    if let Ok(Some(v)) = row.try_get::<Option<String>, _>(i) {
                        out.push_str(&v);
                        out.push('|');
                    }
                }
                out.push('\n');
            }
        }
        out
    }

    /// The stored password hash of a user.
    pub async fn password_hash(&self, email: &str) -> Option<String> {
        sqlx::query_scalar("SELECT password_hash FROM users WHERE email = $1")
            .bind(email)
            .fetch_one(self.db.pool())
            .await
            .expect("user")
    }
}

/// The word of `text` that is the password stored as `hash` (panics if none).
pub fn mailed_password(text: &str, hash: &str) -> String {
    text.split_whitespace()
        .find(|w| w.len() >= 16 && jobs::password::verify(w, hash))
        .unwrap_or_else(|| panic!("no word of the mail matches the stored hash:\n{text}"))
        .to_owned()
}
