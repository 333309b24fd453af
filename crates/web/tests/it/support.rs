//! Test harness: a fresh database per test (a temp SQLite file, or a new
//! PostgreSQL database dropped afterwards), two bootstrapped companies whose
//! owners have passwords, and browser-like clients with their own address.

use std::{
    collections::HashMap,
    net::{IpAddr, SocketAddr},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::ConnectInfo,
    http::{Method, Request, StatusCode},
};
use chrono::{DateTime, Utc};
use store::{Db, password::HashGate};
use tower::ServiceExt;
use web::client_ip::TrustedProxies;

/// Which engine a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// Generates `mod $name { sqlite(), postgres() }` running the same body on both engines.
#[macro_export]
macro_rules! web_test {
    ($name:ident, |$engine:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use $crate::support::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                let $engine = Engine::Sqlite;
                $body
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                let $engine = Engine::Postgres;
                $body
            }
        }
    };
}

/// A company owner who signs in with a password.
#[derive(Debug, Clone)]
pub struct Owner {
    pub email: String,
    pub password: String,
}

enum Cleanup {
    Sqlite(#[allow(dead_code)] tempfile::TempDir),
    Postgres { admin_url: String, name: String },
}

/// What a test service is built with.
pub struct Options {
    /// The hash gate; by default one whose callers wait as long as it takes,
    /// so no test sees it busy.
    pub gate: Arc<HashGate>,
    pub proxies: TrustedProxies,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gate: Arc::new(HashGate::new(4, 1024, Duration::from_secs(600))),
            proxies: TrustedProxies::default(),
        }
    }
}

/// One isolated service: database, the merged router, companies A and B.
pub struct TestWeb {
    pub db: Db,
    pub router: Router,
    /// Set to move the service's clock; `None` is real time.
    pub clock: Arc<Mutex<Option<DateTime<Utc>>>>,
    pub a: Owner,
    pub b: Owner,
    cleanup: Option<Cleanup>,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

async fn fresh_database(engine: Engine) -> (String, Cleanup) {
    match engine {
        Engine::Sqlite => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("test.db").display());
            (url, Cleanup::Sqlite(dir))
        }
        Engine::Postgres => {
            use sqlx::{Connection, Executor};
            let admin_url = std::env::var("INVOICING_TEST_POSTGRES_URL").expect(
                "PostgreSQL tests need INVOICING_TEST_POSTGRES_URL \
                 (e.g. postgres://postgres@127.0.0.1:5432/postgres)",
            );
            let name = format!(
                "inv_web_{}_{}_{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
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

impl TestWeb {
    /// A migrated database with companies A and B, over the default options.
    pub async fn new(engine: Engine) -> Self {
        Self::with(engine, Options::default()).await
    }

    /// The same with a given hash gate and trusted proxies.
    pub async fn with(engine: Engine, options: Options) -> Self {
        let (url, cleanup) = fresh_database(engine).await;
        let db = Db::connect(&url).await.expect("connect");
        db.migrate().await.expect("migrate");
        let clock: Arc<Mutex<Option<DateTime<Utc>>>> = Arc::new(Mutex::new(None));
        let read = clock.clone();
        let state = api::AppState::new(
            db.clone(),
            api::ApiConfig {
                public_url: "http://invoicing.test".into(),
                // A random signing key for this service (ApiConfig's default).
                ..api::ApiConfig::default()
            },
        )
        .with_clock(Arc::new(move || {
            read.lock().unwrap().unwrap_or_else(Utc::now)
        }));
        let web_state = web::WebState::new(state.clone(), None)
            .expect("web state")
            .with_hash_gate(options.gate)
            .with_trusted_proxies(options.proxies);
        let router = api::app(state).merge(web::router(web_state));
        let a = owner(&db, "Alpha Ltd", "owner@alpha.test").await;
        let b = owner(&db, "Beta Ltd", "owner@beta.test").await;
        Self {
            db,
            router,
            clock,
            a,
            b,
            cleanup: Some(cleanup),
        }
    }

    /// A browser without cookies, connecting from `addr`.
    pub fn browser(&self, addr: &str) -> Browser {
        Browser {
            router: self.router.clone(),
            peer: addr.parse().expect("IP address"),
            headers: Vec::new(),
            cookies: HashMap::new(),
        }
    }

    /// Moves the service's clock by `secs` from now.
    pub fn advance(&self, secs: i64) {
        *self.clock.lock().unwrap() = Some(Utc::now() + chrono::Duration::seconds(secs));
    }

    /// How many rows a table has.
    pub async fn count(&self, table: &str) -> i64 {
        sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
            .fetch_one(self.db.pool())
            .await
            .expect("count")
    }
}

impl Drop for TestWeb {
    fn drop(&mut self) {
        if let Some(Cleanup::Postgres { admin_url, name }) = self.cleanup.take() {
            let db = self.db.clone();
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

/// Bootstraps a company whose owner has a password of their own.
async fn owner(db: &Db, company: &str, email: &str) -> Owner {
    let password = format!("{} owns a long passphrase", company.to_lowercase());
    let hash = store::password::hash(&password).expect("hash");
    let mut tx = db.begin_write().await.expect("tx");
    let out = store::bootstrap::bootstrap(
        tx.conn(),
        &store::bootstrap::BootstrapRequest {
            company_name: company,
            fiscal_id: "IE6388047V",
            company_type: "IE:LTD",
            country: "IE",
            email,
            currency_code: "EUR",
        },
    )
    .await
    .expect("bootstrap");
    store::web::set_own_password(tx.conn(), &out.user_id, &hash)
        .await
        .expect("password");
    tx.commit().await.expect("commit");
    Owner {
        email: email.to_owned(),
        password,
    }
}

/// An answer, fully read.
#[derive(Debug)]
pub struct Page {
    pub status: StatusCode,
    pub location: String,
    pub retry_after: Option<String>,
    pub body: String,
}

impl Page {
    /// The CSRF token in the page's first form.
    pub fn csrf(&self) -> String {
        let marker = "name=\"csrf\" value=\"";
        let at = self
            .body
            .find(marker)
            .unwrap_or_else(|| panic!("no CSRF field in:\n{}", self.body));
        let rest = &self.body[at + marker.len()..];
        rest[..rest.find('"').expect("end of value")].to_owned()
    }
}

/// A browser: keeps cookies, never follows redirects, connects from one address.
#[derive(Clone)]
pub struct Browser {
    router: Router,
    pub peer: IpAddr,
    /// Extra headers on every request (say, `X-Forwarded-For`).
    pub headers: Vec<(String, String)>,
    pub cookies: HashMap<String, String>,
}

impl Browser {
    /// Sends a request with the browser's cookies and headers.
    pub async fn send(&mut self, method: Method, path: &str, body: Option<String>) -> Page {
        let mut req = Request::builder().method(method).uri(path);
        let cookies: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !cookies.is_empty() {
            req = req.header("cookie", cookies.join("; "));
        }
        for (k, v) in &self.headers {
            req = req.header(k.as_str(), v.as_str());
        }
        if body.is_some() {
            req = req.header("content-type", "application/x-www-form-urlencoded");
        }
        let mut req = req
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .expect("request");
        req.extensions_mut()
            .insert(ConnectInfo(SocketAddr::new(self.peer, 40_000)));
        let resp = self.router.clone().oneshot(req).await.expect("infallible");
        for v in resp.headers().get_all("set-cookie") {
            let v = v.to_str().expect("cookie");
            let Some((k, value)) = v.split(';').next().and_then(|p| p.split_once('=')) else {
                continue;
            };
            if value.is_empty() || v.contains("Max-Age=0") {
                self.cookies.remove(k);
            } else {
                self.cookies.insert(k.to_owned(), value.to_owned());
            }
        }
        let (parts, body) = resp.into_parts();
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (status, location, retry_after) = (
            parts.status,
            header("location").unwrap_or_default(),
            header("retry-after"),
        );
        let body = axum::body::to_bytes(body, usize::MAX).await.expect("body");
        Page {
            status,
            location,
            retry_after,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.send(Method::GET, path, None).await
    }

    /// Posts a urlencoded form.
    pub async fn post(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        self.send(Method::POST, path, Some(form(fields))).await
    }

    /// Opens the sign-in page and returns the form's token.
    pub async fn sign_in_form(&mut self) -> String {
        let page = self.get("/login").await;
        assert_eq!(page.status, 200, "{}", page.body);
        page.csrf()
    }

    /// Opens the sign-in page and signs in; returns the answer to the post.
    pub async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let csrf = self.sign_in_form().await;
        self.post(
            "/login",
            &[("csrf", &csrf), ("email", email), ("password", password)],
        )
        .await
    }
}

/// A urlencoded form body.
pub fn form(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes every byte but unreserved ones.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
