//! Test harness: a fresh database per test (a temp SQLite file, or a new
//! PostgreSQL database dropped afterwards) and the real router driven in process.

use std::sync::{
    Arc, Mutex,
    atomic::{AtomicU64, Ordering},
};

use chrono::{DateTime, Utc};

use api::{ApiConfig, AppState};
use axum::{
    Router,
    body::Body,
    http::{HeaderMap, Method, Request, StatusCode},
};
use serde_json::Value;
use store::Db;
use tower::ServiceExt;

/// Which engine a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// Generates `mod $name { sqlite(), postgres() }` running the same body on both engines.
#[macro_export]
macro_rules! db_test {
    ($name:ident, aeat, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use $crate::support::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let $app = TestApp::with_aeat(Engine::Sqlite, api::aeat::Mode::Test).await;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let $app = TestApp::with_aeat(Engine::Postgres, api::aeat::Mode::Test).await;
                $body
            }
        }
    };
    ($name:ident, |$app:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use $crate::support::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let $app = TestApp::new(Engine::Sqlite).await;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let $app = TestApp::new(Engine::Postgres).await;
                $body
            }
        }
    };
}

/// The secrets of one bootstrapped company owner.
#[derive(Debug, Clone)]
pub struct Tenant {
    pub company_id: store::CompanyId,
    pub user_id: String,
    pub token: String,
    pub proof: String,
    pub mcp_token: String,
}

/// How a request authenticates.
#[derive(Debug, Clone, Copy)]
pub enum As<'a> {
    /// Standard token with its human proof.
    Human(&'a Tenant),
    /// Standard token without proof: an AI caller.
    Ai(&'a Tenant),
    /// MCP token: an AI caller.
    Mcp(&'a Tenant),
    /// No Authorization header.
    Anonymous,
    /// A raw Authorization header value.
    Header(&'a str),
}

/// A response, fully read.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.text()))
    }

    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(self, status: u16) -> Self {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text()
        );
        self
    }

    pub fn content_type(&self) -> String {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    }
}

enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

/// One isolated service: database, router and two unrelated companies A and B.
pub struct TestApp {
    pub engine: Engine,
    /// Set to move the service's clock; `None` is real time.
    pub clock: Arc<Mutex<Option<DateTime<Utc>>>>,
    pub db: Db,
    /// The database URL, for a second pool (as a second process would have).
    pub url: String,
    pub router: Router,
    /// The service's state (its clock is `clock`), for the worker's invoicing hooks.
    pub state: AppState,
    pub a: Tenant,
    pub b: Tenant,
    cleanup: Option<Cleanup>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Admin URL of the test PostgreSQL server (`INVOICING_TEST_POSTGRES_URL`).
pub fn postgres_admin_url() -> String {
    std::env::var("INVOICING_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!(
            "PostgreSQL tests need INVOICING_TEST_POSTGRES_URL (e.g. \
             postgres://postgres@127.0.0.1:5432/postgres); scripts/test sets it, or skips \
             these tests with --skip postgres when no server is reachable"
        )
    })
}

/// Creates a fresh database on `engine` and returns its URL and cleanup.
async fn fresh_database(engine: Engine) -> (String, Cleanup) {
    match engine {
        Engine::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("test.db").display());
            (url, Cleanup::Sqlite(dir))
        }
        Engine::Postgres => {
            use sqlx::{Connection, Executor};
            let admin_url = postgres_admin_url();
            let name = format!(
                "inv_test_{}_{}_{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed),
                uuid::Uuid::new_v4()
                    .simple()
                    .to_string()
                    .get(..8)
                    .unwrap_or("x")
            );
            let mut conn = sqlx::PgConnection::connect(&admin_url)
                .await
                .expect("connect to the PostgreSQL admin database");
            conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .await
                .expect("create test database");
            let base = admin_url
                .rsplit_once('/')
                .map_or(admin_url.as_str(), |(b, _)| b)
                .to_owned();
            (
                format!("{base}/{name}"),
                Cleanup::Postgres { admin_url, name },
            )
        }
    }
}

impl TestApp {
    /// A migrated database with companies A and B bootstrapped.
    pub async fn new(engine: Engine) -> Self {
        Self::with_fx(engine, String::new()).await
    }

    /// The same, fetching exchange rates from `fx_url`.
    pub async fn with_fx(engine: Engine, fx_url: String) -> Self {
        Self::with_config(engine, fx_url, api::aeat::Mode::Disabled, None).await
    }

    /// The same, keeping file bytes in the object store `storage_url` names.
    pub async fn with_storage(engine: Engine, storage_url: &str) -> Self {
        Self::with_config(
            engine,
            String::new(),
            api::aeat::Mode::Disabled,
            Some(storage_url),
        )
        .await
    }

    /// The same, with records of Spanish issuers sent to the AEAT in `aeat_mode`.
    pub async fn with_aeat(engine: Engine, aeat_mode: api::aeat::Mode) -> Self {
        Self::with_config(engine, String::new(), aeat_mode, None).await
    }

    async fn with_config(
        engine: Engine,
        fx_url: String,
        aeat_mode: api::aeat::Mode,
        storage_url: Option<&str>,
    ) -> Self {
        let (url, cleanup) = fresh_database(engine).await;
        let db = Db::connect(&url).await.expect("connect");
        db.migrate().await.expect("migrate");
        let db = db.with_files(store::files::Files::open(storage_url).expect("file store"));
        let clock: Arc<Mutex<Option<DateTime<Utc>>>> = Arc::new(Mutex::new(None));
        let read = clock.clone();
        let state = AppState::new(
            db.clone(),
            ApiConfig {
                public_url: "http://invoicing.test".into(),
                fx_url,
                aeat_mode,
                secret_key: test_secret(),
                rate_limit_per_minute: None,
                snippet_runner: None,
                limits: api::Limits::default(),
                signature_trust: crate::verifactu::test_trust(),
                ai_queue: api::gate::QueueLimits::default(),
                // Test receivers listen on 127.0.0.1 (tests/it/webhooks.rs also checks it off).
                webhooks_allow_private: true,
                facturae_signer: None,
            },
        )
        .with_clock(Arc::new(move || {
            read.lock().unwrap().unwrap_or_else(Utc::now)
        }));
        let router = api::app(state.clone());
        let a = bootstrap(&db, "Alpha Ltd", "owner@alpha.test").await;
        let b = bootstrap(&db, "Beta Ltd", "owner@beta.test").await;
        Self {
            engine,
            clock,
            db,
            url,
            router,
            state,
            a,
            b,
            cleanup: Some(cleanup),
        }
    }

    /// Sends a request through the real router.
    pub async fn call(&self, method: &str, path: &str, who: As<'_>, body: Option<Value>) -> Resp {
        let bytes = body.map(|b| serde_json::to_vec(&b).expect("json"));
        self.call_raw(method, path, who, bytes, "application/json")
            .await
    }

    /// Sends a request with a raw body and content type.
    pub async fn call_raw(
        &self,
        method: &str,
        path: &str,
        who: As<'_>,
        body: Option<Vec<u8>>,
        content_type: &str,
    ) -> Resp {
        let mut headers: Vec<(&str, String)> = match who {
            As::Human(t) => vec![
                ("authorization", format!("Bearer {}", t.token)),
                ("x-human-proof", t.proof.clone()),
            ],
            As::Ai(t) => vec![("authorization", format!("Bearer {}", t.token))],
            As::Mcp(t) => vec![("authorization", format!("Bearer {}", t.mcp_token))],
            As::Anonymous => vec![],
            As::Header(h) => vec![("authorization", h.to_owned())],
        };
        if body.is_some() {
            headers.push(("content-type", content_type.to_owned()));
        }
        self.call_with(method, path, &headers, body).await
    }

    /// Sends a request with exactly the given headers.
    pub async fn call_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: Option<Vec<u8>>,
    ) -> Resp {
        let mut req = Request::builder()
            .method(Method::from_bytes(method.as_bytes()).expect("method"))
            .uri(path);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let req = req
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .expect("request");
        let resp = self.router.clone().oneshot(req).await.expect("infallible");
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .expect("body")
            .to_vec();
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, who: As<'_>) -> Resp {
        self.call("GET", path, who, None).await
    }

    /// Every row of every table except the AI audit queue, as text: a cheap
    /// "nothing changed" fingerprint.
    pub async fn fingerprint(&self) -> String {
        let tables = [
            "companies",
            "users",
            "memberships",
            "api_tokens",
            "legal_documents",
            "agreement_acceptances",
            "entities",
            "invoices",
            "proformas",
            "document_counters",
            "verifactu_authorizations",
            "bank_accounts",
            "balance_snapshots",
            "expenses",
            "invoice_payments",
            "points_ledger",
            "verifactu_chain_heads",
            "verifactu_records",
            "verifactu_batches",
            "jobs",
            "reports",
            "files",
            "idempotency_keys",
            "web_sessions",
            "web_sign_in_attempts",
            "dashboard_daily_revenue",
            "dashboard_customer_revenue",
            "dashboard_unpaid_due",
            "webhook_endpoints",
            "webhook_deliveries",
            "recurring_invoices",
            "recurring_runs",
            "deliveries",
        ];
        let mut out = String::new();
        for t in tables {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM {t} ORDER BY 1")))
                .fetch_all(self.db.pool())
                .await
                .expect("dump");
            for row in rows {
                out.push_str(t);
                out.push('|');
                out.push_str(&row_text(&row));
                out.push('\n');
            }
        }
        out
    }

    /// Accepts every current legal document as the tenant's owner.
    pub async fn accept_all_agreements(&self, t: &Tenant) {
        let list = self
            .get("/v1/agreements", As::Human(t))
            .await
            .expect(200)
            .json();
        for doc in list["data"].as_array().expect("data") {
            let id = doc["id"].as_str().expect("id");
            self.call(
                "POST",
                &format!("/v1/agreements/{id}/accept"),
                As::Human(t),
                None,
            )
            .await
            .expect(200);
        }
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(Cleanup::Postgres { admin_url, name }) = self.cleanup.take() {
            let db = self.db.clone();
            // Drop runs inside the test's runtime: do the async cleanup on its own thread.
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime");
                rt.block_on(async move {
                    use sqlx::{Connection, Executor};
                    db.close().await;
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&admin_url).await {
                        let _ = conn
                            .execute(sqlx::AssertSqlSafe(format!(
                                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                            )))
                            .await;
                    }
                });
            })
            .join();
        }
    }
}

impl TestApp {
    /// Moves the service's clock to an RFC 3339 instant.
    pub fn set_time(&self, rfc3339: &str) {
        *self.clock.lock().unwrap() = Some(rfc3339.parse().expect("RFC 3339 time"));
    }

    /// Completes registration and accepts every legal document: the tenant may issue.
    pub async fn settle(&self, t: &Tenant) {
        self.call(
            "POST",
            "/v1/company/registration",
            As::Human(t),
            Some(registration_body()),
        )
        .await
        .expect(200);
        self.accept_all_agreements(t).await;
    }

    /// Approves or rejects (`action`) the held AI request `id` as company A's person.
    pub async fn review(&self, id: &str, action: &str) -> Resp {
        self.call(
            "POST",
            &format!("/v1/ai-audit/{id}/{action}"),
            As::Human(&self.a),
            None,
        )
        .await
    }

    /// Creates an entity as a person and returns its id.
    pub async fn entity(&self, t: &Tenant, body: Value) -> String {
        let e = self
            .call("POST", "/v1/entities", As::Human(t), Some(body))
            .await
            .expect(201)
            .json();
        e["id"].as_str().unwrap().to_owned()
    }

    /// Creates a draft invoice as a person and returns it.
    pub async fn draft(&self, t: &Tenant, body: Value) -> Value {
        self.call("POST", "/v1/invoices", As::Human(t), Some(body))
            .await
            .expect(201)
            .json()
    }

    /// Issues a draft as a person and returns it.
    pub async fn issue(&self, t: &Tenant, id: &str) -> Value {
        self.call(
            "POST",
            &format!("/v1/invoices/{id}/issue"),
            As::Human(t),
            None,
        )
        .await
        .expect(200)
        .json()
    }
}

/// An Irish business customer.
pub fn irish_customer() -> Value {
    serde_json::json!({
        "name": "Dublin Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V",
        "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01", "country": "IE"}
    })
}

/// One simple services line of `price` cents.
pub fn one_line(price: i64) -> Value {
    serde_json::json!([{"concept": "Consulting", "quantity": 1, "unit_price": price}])
}

/// Bootstraps a company with a valid Irish fiscal id.
pub async fn bootstrap(db: &Db, name: &str, email: &str) -> Tenant {
    let mut tx = db.begin_write().await.expect("tx");
    let out = store::bootstrap::bootstrap(
        tx.conn(),
        &store::bootstrap::BootstrapRequest {
            company_name: name,
            fiscal_id: "IE6388047V",
            company_type: "IE:LTD",
            country: "IE",
            email,
            currency_code: "EUR",
        },
    )
    .await
    .expect("bootstrap");
    tx.commit().await.expect("commit");
    Tenant {
        company_id: out.company_id,
        user_id: out.user_id,
        token: out.token,
        proof: out.human_proof,
        mcp_token: out.mcp_token,
    }
}

/// A valid registration body for an Irish company.
pub fn registration_body() -> Value {
    serde_json::json!({
        "name": "Alpha Trading Ltd",
        "fiscal_id": "IE6388047V",
        "email": "billing@alpha.test",
        "phone": "+353 1 555 0100",
        "address": {"lines": ["1 Main Street"], "zipcode": "D02 X285", "city": "Dublin", "country": "ie"}
    })
}

/// The link-signing key of test servers and workers.
pub fn test_secret() -> reports::links::SecretKey {
    reports::links::SecretKey::new(b"a test key that is long enough, 32+".to_vec())
}

impl TestApp {
    /// A second server over the same database, with its own pool and token cache (as
    /// another process would have), keeping token lookups `ttl` at most.
    pub async fn second_server(&self, ttl: std::time::Duration) -> (Db, Router) {
        let db = Db::connect(&self.url)
            .await
            .expect("connect")
            .with_token_cache_ttl(ttl);
        let router = api::app(AppState::new(
            db.clone(),
            ApiConfig {
                public_url: "http://invoicing.test".into(),
                secret_key: test_secret(),
                ..ApiConfig::default()
            },
        ));
        (db, router)
    }

    /// The same service with `per_minute` requests per token (a second router over the same database).
    pub fn with_rate_limit(&self, per_minute: u32) -> Router {
        api::app(AppState::new(
            self.db.clone(),
            ApiConfig {
                public_url: "http://invoicing.test".into(),
                secret_key: test_secret(),
                rate_limit_per_minute: Some(per_minute),
                ..ApiConfig::default()
            },
        ))
    }
}

impl TestApp {
    /// The same service (database, clock) with a certificate to sign Facturae with: a
    /// second router, to put in `self.router`.
    pub fn with_facturae_signer(&self, signer: Arc<einvoice::xades::Signer>) -> Router {
        let read = self.clock.clone();
        api::app(
            AppState::new(
                self.db.clone(),
                ApiConfig {
                    public_url: "http://invoicing.test".into(),
                    secret_key: test_secret(),
                    facturae_signer: Some(signer),
                    ..ApiConfig::default()
                },
            )
            .with_clock(Arc::new(move || {
                read.lock().unwrap().unwrap_or_else(Utc::now)
            })),
        )
    }
}

impl TestApp {
    /// The same service (database, clock) with other limits on the AI review queue: a
    /// second router, to put in `self.router`.
    pub fn with_queue_limits(&self, limits: api::gate::QueueLimits) -> Router {
        let read = self.clock.clone();
        api::app(
            AppState::new(
                self.db.clone(),
                ApiConfig {
                    public_url: "http://invoicing.test".into(),
                    secret_key: test_secret(),
                    ai_queue: limits,
                    ..ApiConfig::default()
                },
            )
            .with_clock(Arc::new(move || {
                read.lock().unwrap().unwrap_or_else(Utc::now)
            })),
        )
    }
}

/// The text of a PDF, through `pdftotext -raw` (scripts/test installs poppler-utils).
pub fn pdf_text_of(pdf: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("doc.pdf");
    std::fs::write(&file, pdf).unwrap();
    let out = std::process::Command::new("pdftotext")
        .args(["-raw"])
        .arg(&file)
        .arg("-")
        .output()
        .expect("pdftotext is required (scripts/test installs poppler-utils)");
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A settled company A with an Irish customer; the customer's id.
pub async fn settled_with_customer(app: &TestApp) -> String {
    app.settle(&app.a).await;
    app.entity(&app.a, irish_customer()).await
}

/// A Spanish supplier of company A; its id.
pub async fn supplier(app: &TestApp) -> String {
    app.entity(&app.a, serde_json::json!({"name": "Supplies SL", "type": "ES:SL", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}, "currency_code": "EUR"})).await
}

/// A 100.00 + 21% VAT office expense from `supplier`, with its reference.
pub fn expense(supplier: &str, reference: &str) -> Value {
    serde_json::json!({"supplier_id": supplier, "invoice_reference": reference, "category": "office",
        "expense_date": "2026-02-10T00:00:00Z",
        "lines": [{"concept": "Paper", "subtotal": 10000}, {"concept": "VAT 21%", "subtotal": 2100, "is_tax": true}]})
}

/// A row's columns as text, `|`-separated (texts and integers as they are, NULL as
/// `NULL`, any other type as `?`): for comparing rows of any table on both engines.
pub fn row_text(row: &sqlx::any::AnyRow) -> String {
    use sqlx::Row;
    (0..row.len())
        .map(|i| {
            row.try_get::<Option<String>, _>(i)
                .or_else(|_| {
                    row.try_get::<Option<i64>, _>(i)
                        .map(|v| v.map(|n| n.to_string()))
                })
                .unwrap_or_else(|_| Some("?".into()))
                .unwrap_or_else(|| "NULL".into())
        })
        .collect::<Vec<_>>()
        .join("|")
}
