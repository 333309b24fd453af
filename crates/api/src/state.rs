//! The service's shared state: its settings, the clock, the exchange-rate source, the
//! limiters and the finished router (for replays). Handlers get it with `State`; the
//! application layer ([`crate::workflows`]) gets what it needs of it as [`crate::workflows::Services`].

use std::sync::{Arc, OnceLock};

use axum::Router;

use crate::{aeat, error, fx, gate, ratelimit, render_gate, signature_trust};

/// Settings the API needs at run time.
#[derive(Debug, Clone, Default)]
pub struct ApiConfig {
    /// Public base URL, for links in e-mails and documents.
    pub public_url: String,
    /// Where daily reference exchange rates are fetched (ECB XML format); empty disables fetching.
    pub fx_url: String,
    /// VERI*FACTU mode: records are always built and chained; sent only in test or production.
    pub aeat_mode: aeat::Mode,
    /// Signs and checks report download links (random per process unless configured).
    pub secret_key: reports::links::SecretKey,
    /// Requests per minute per API token (`None`: unlimited).
    pub rate_limit_per_minute: Option<u32>,
    /// The `invoicing` executable, to run company Typst snippets (their check when saved, and
    /// every PDF that carries one) in child processes with a memory limit (`invoicing
    /// render-job`): Typst cannot bound one thread's memory, and a snippet such as
    /// `#range(1000000000)` would take the whole server down. `None` runs them in this
    /// process (tests of this crate, which have no such executable).
    pub snippet_runner: Option<std::path::PathBuf>,
    /// What one company may hold of what all share (renders, queued reports).
    pub limits: Limits,
    /// Roots a signed authorization document must chain to
    /// ([`signature_trust::trust_store`]); the default trusts nothing, so every document is
    /// refused until roots are configured.
    pub signature_trust: signature_trust::TrustStore,
    /// Caps on the AI review queue and how long its entries wait.
    pub ai_queue: gate::QueueLimits,
    /// Webhook URLs may point to loopback, private and link-local addresses
    /// (`INVOICING_WEBHOOKS_ALLOW_PRIVATE=1`; tests and closed networks).
    pub webhooks_allow_private: bool,
    /// The certificate Facturae documents are signed with (XAdES-EPES): the PKCS#12 of
    /// `INVOICING_AEAT_CERT`. A company's Facturae is signed when this certificate names its
    /// fiscal id; otherwise, or without one, it is served unsigned.
    pub facturae_signer: Option<Arc<einvoice::xades::Signer>>,
}

/// Bounds that keep one company from starving the others (docs/RELIABILITY.md, "Attacks
/// closed").
#[derive(Debug, Clone)]
pub struct Limits {
    /// Report renders a company may have queued or running; `POST /v1/reports` past it is a
    /// `429` (default 50, `INVOICING_MAX_QUEUED_REPORTS`).
    pub max_queued_reports: i64,
    /// Render slots, snippet slots, a company's share of them and the longest wait.
    pub render: render_gate::RenderLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_queued_reports: 50,
            render: render_gate::RenderLimits::default(),
        }
    }
}

/// The clock handlers read "now" from (tests move it across a year boundary); the worker
/// reads the same type (`jobs::Context::clock`).
pub use store::Clock;

/// Shared state of every handler.
#[derive(Clone)]
pub struct AppState {
    pub db: store::Db,
    pub config: Arc<ApiConfig>,
    /// Source of the current time.
    pub clock: Clock,
    /// Exchange rates for currencies an invoice needs at issue.
    pub fx: Arc<fx::RateProvider>,
    /// Requests per token, when limited.
    pub limiter: Option<Arc<ratelimit::RateLimiter>>,
    /// Admission to rendering, fair across companies.
    pub(crate) renders: Arc<render_gate::RenderGate>,
    /// The finished router, so an approval can replay a request through it.
    router: Arc<OnceLock<Router>>,
}

impl AppState {
    /// State over a database with the given settings.
    pub fn new(db: store::Db, config: ApiConfig) -> Self {
        Self {
            db,
            fx: Arc::new(fx::RateProvider::new(config.fx_url.clone())),
            limiter: config
                .rate_limit_per_minute
                .map(|n| Arc::new(ratelimit::RateLimiter::new(n))),
            renders: Arc::new(render_gate::RenderGate::new(&config.limits.render)),
            config: Arc::new(config),
            clock: store::system_clock(),
            router: Arc::new(OnceLock::new()),
        }
    }

    /// The same state reading time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The current time.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        (self.clock)()
    }

    /// Keeps the finished router, so approvals can replay requests through it (first call wins).
    pub(crate) fn set_router(&self, router: Router) {
        let _ = self.router.set(router);
    }

    /// The whole application router (set once by [`crate::app`](fn@crate::app)).
    pub(crate) fn router(&self) -> Result<Router, error::ApiError> {
        self.router
            .get()
            .cloned()
            .ok_or_else(|| error::ApiError::Internal(anyhow::anyhow!("router not initialised")))
    }
}
