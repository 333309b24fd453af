//! HTTP API of the invoicing service.
//!
//! [`app`] builds the whole router: `/v1` behind authentication and the AI
//! review gate, `/openapi.json` generated from the same route table, the
//! offline reference at `/api/`, and `/healthz`, `/readyz`.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod aeat;
pub mod auth;
pub mod documents;
pub mod error;
pub mod fx;
pub mod gate;
mod isolation;
pub mod json;
pub mod openapi;
pub mod pagination;
pub mod ratelimit;
pub mod render_gate;
pub mod routes;
pub mod signature_trust;
pub mod views;

use std::sync::{Arc, OnceLock};

use axum::{
    Router,
    extract::DefaultBodyLimit,
    http::{HeaderName, Request, StatusCode},
    middleware::from_fn_with_state,
};
use tower_http::{
    request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer},
    trace::TraceLayer,
};
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;

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

/// The clock handlers read "now" from (tests move it across a year boundary).
pub type Clock = Arc<dyn Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync>;

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
            clock: Arc::new(chrono::Utc::now),
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

    /// The whole application router (set once by [`app`]).
    pub(crate) fn router(&self) -> Result<Router, error::ApiError> {
        self.router
            .get()
            .cloned()
            .ok_or_else(|| error::ApiError::Internal(anyhow::anyhow!("router not initialised")))
    }
}

/// Runs `req` through the whole application as `caller`, a person the caller of
/// this function authenticated by other means (the web app's signed-in session).
/// Only the bearer-token check is skipped: the gate, validation and every rule
/// apply exactly as for an API request.
pub async fn call_as(
    state: &AppState,
    caller: auth::Caller,
    mut req: Request<axum::body::Body>,
) -> Result<axum::response::Response, error::ApiError> {
    use tower::ServiceExt as _;
    req.extensions_mut().insert(auth::TrustedCaller(caller));
    let router = state.router()?;
    match router.oneshot(req).await {
        Ok(resp) => Ok(resp),
        Err(never) => match never {},
    }
}

/// The `/v1` routes with their OpenAPI description, behind auth and the gate.
pub fn v1_routes(state: &AppState) -> OpenApiRouter<AppState> {
    routes::v1()
        // Inner layer: the gate needs the caller that `authenticate` resolved.
        .route_layer(from_fn_with_state(state.clone(), gate::gate))
        .route_layer(from_fn_with_state(state.clone(), auth::authenticate))
}

/// The route table and the OpenAPI document, before state and global layers.
pub fn route_table(state: &AppState) -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let (router, mut doc) = OpenApiRouter::with_openapi(openapi::ApiDoc::openapi())
        .merge(v1_routes(state))
        .merge(routes::health::routes())
        .merge(routes::avatar::routes())
        .split_for_parts();
    openapi::document_idempotency(&mut doc);
    openapi::complete(&mut doc);
    (router, doc)
}

/// Refuses a request whose path or query carries an encoded NUL (`%00`): ids and
/// filters are text, and PostgreSQL can neither store nor compare text with NUL
/// (SQLite could), so both engines answer the same 400.
async fn reject_nul_in_uri(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let has_nul = |s: &str| s.as_bytes().windows(3).any(|w| w == b"%00");
    if has_nul(req.uri().path()) || req.uri().query().is_some_and(has_nul) {
        return error::plain(
            StatusCode::BAD_REQUEST,
            "The request path or query contains the NUL character (%00), which no id or filter \
             may contain."
                .into(),
        );
    }
    next.run(req).await
}

/// Largest JSON answer [`newline_after_json`] ends with a newline (lists are bounded far
/// below this); a larger one is left as it is.
const NEWLINE_JSON_MAX: usize = 16 * 1024 * 1024;

/// Ends every JSON answer with a newline, so answers printed in a terminal (`curl -s`) do
/// not run into the next line or the prompt. JSON parsers ignore it.
async fn newline_after_json(
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::body::HttpBody as _;
    let response = next.run(req).await;
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    let whole = response
        .body()
        .size_hint()
        .exact()
        .and_then(|n| usize::try_from(n).ok())
        .is_some_and(|n| n > 0 && n <= NEWLINE_JSON_MAX);
    if !is_json || !whole {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    match axum::body::to_bytes(body, NEWLINE_JSON_MAX).await {
        Ok(bytes) if bytes.ends_with(b"\n") => {
            axum::response::Response::from_parts(parts, axum::body::Body::from(bytes))
        }
        Ok(bytes) => {
            let mut with_newline = Vec::with_capacity(bytes.len() + 1);
            with_newline.extend_from_slice(&bytes);
            with_newline.push(b'\n');
            parts.headers.remove(axum::http::header::CONTENT_LENGTH);
            axum::response::Response::from_parts(parts, axum::body::Body::from(with_newline))
        }
        Err(e) => {
            tracing::error!(error = %e, "a JSON answer could not be read to end it with a newline");
            error::plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "The answer could not be completed; try again.".into(),
            )
        }
    }
}

/// The answer to a path no route serves (plain text, like every API error).
pub async fn no_such_route() -> axum::response::Response {
    error::plain(
        StatusCode::NOT_FOUND,
        "No such route. The API lives under /v1; see /api/ for the reference.".into(),
    )
}

/// The complete application: API, OpenAPI document, docs page, health checks.
pub fn app(state: AppState) -> Router {
    let (routes, openapi) = route_table(&state);
    let request_id = HeaderName::from_static("x-request-id");
    let app = routes
        .merge(openapi::docs(openapi))
        .fallback(no_such_route)
        .layer(axum::middleware::from_fn(newline_after_json))
        .layer(DefaultBodyLimit::max(json::MAX_JSON_BODY))
        .layer(axum::middleware::from_fn(reject_nul_in_uri))
        .layer(
            TraceLayer::new_for_http().make_span_with(|req: &Request<_>| {
                let id = req
                    .headers()
                    .get("x-request-id")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("-");
                tracing::info_span!(
                    "request",
                    request_id = %id,
                    method = %req.method(),
                    path = %req.uri().path(),
                    company_id = tracing::field::Empty,
                )
            }),
        )
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .with_state(state.clone());
    let _ = state.router.set(app.clone());
    app
}
