//! The web app for people, served by `invoicing serve` at `/`.
//!
//! Server-rendered HTML (maud, escaped by construction) over the same core as
//! the API: every read and every change goes through the `/v1` router in
//! process ([`api::call_as`]) as the signed-in person, a human caller, so the
//! rules, validation and tenant scoping are the API's own. What the API does
//! not expose (sessions, passwords, who asked for a queued AI request) is read
//! from the store here. See docs/WEB.md.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
// Handlers fail with the HTTP response to send (a redirect or an error page),
// returned straight to axum; boxing it would buy nothing.
#![allow(clippy::result_large_err)]

pub mod client;
pub mod client_ip;
pub mod forms;
pub mod json_view;
pub mod locale;
pub mod oauth;
pub mod oidc;
pub mod pages;
pub mod password_policy;
pub mod session;
pub mod throttle;

use std::sync::Arc;

use axum::{
    Router,
    extract::DefaultBodyLimit,
    http::{HeaderValue, header},
    middleware,
    response::Response,
    routing::{get, post},
};

/// Largest form body (the signed authorization PDF is the biggest: 10 MiB).
pub const MAX_FORM_BODY: usize = 11 * 1024 * 1024;

/// Shared state of the web handlers.
#[derive(Clone)]
pub struct WebState {
    /// The API state: database, configuration and the in-process router.
    pub api: api::AppState,
    /// Cookies carry `Secure` (the public URL is HTTPS).
    pub secure_cookies: bool,
    /// A hash verified when an e-mail has no account, so both cases cost the same.
    pub dummy_hash: Arc<String>,
    /// Sign-in through an OpenID Connect provider, when configured.
    pub oidc: Option<Arc<oidc::Oidc>>,
    /// Bounds the argon2 computations of sign-ins and password changes
    /// (the process-wide gate unless a test gives its own).
    pub hash_gate: Arc<store::password::HashGate>,
    /// Reverse proxies whose `Forwarded`/`X-Forwarded-For` name the client.
    pub trusted_proxies: Arc<client_ip::TrustedProxies>,
    /// The OAuth authorization server for MCP clients.
    pub oauth: Arc<oauth::Settings>,
}

impl WebState {
    /// State over the API's; cookies are `Secure` when the public URL is HTTPS.
    pub fn new(api: api::AppState, oidc: Option<oidc::OidcConfig>) -> anyhow::Result<Self> {
        let secure_cookies = api.config.public_url.starts_with("https://");
        let dummy_hash = store::password::hash(&session::random_token())?;
        let oidc = oidc.map(oidc::Oidc::new).transpose()?.map(Arc::new);
        Ok(Self {
            api,
            secure_cookies,
            dummy_hash: Arc::new(dummy_hash),
            oidc,
            hash_gate: store::password::HashGate::shared(),
            trusted_proxies: Arc::default(),
            oauth: Arc::default(),
        })
    }

    /// The same, with the OAuth authorization server's settings.
    pub fn with_oauth(mut self, settings: oauth::Settings) -> Self {
        self.oauth = Arc::new(settings);
        self
    }

    /// The same, reading the client address of requests from these proxies
    /// from their forwarding headers (`INVOICING_TRUSTED_PROXIES`).
    pub fn with_trusted_proxies(mut self, proxies: client_ip::TrustedProxies) -> Self {
        self.trusted_proxies = Arc::new(proxies);
        self
    }

    /// The same, running password hashes through `gate` instead of the process-wide one.
    pub fn with_hash_gate(mut self, gate: Arc<store::password::HashGate>) -> Self {
        self.hash_gate = gate;
        self
    }

    /// Where the identity provider sends people back.
    pub fn oidc_redirect_uri(&self) -> String {
        format!(
            "{}/login/oidc/callback",
            self.api.config.public_url.trim_end_matches('/')
        )
    }
}

/// Every page, form action and asset of the web app.
pub fn router(state: WebState) -> Router {
    use pages::*;
    Router::new()
        .route("/", get(home))
        // Forms read before anyone is signed in, or that run argon2, are small.
        .route(
            "/login",
            get(login::form)
                .post(login::submit)
                .layer(DefaultBodyLimit::max(login::MAX_SIGN_IN_BODY)),
        )
        .route("/login/oidc", get(sso::oidc_start))
        .route("/login/oidc/callback", get(sso::oidc_callback))
        .route("/logout", post(login::logout))
        .route(
            "/password",
            get(password::password_form)
                .post(password::password_submit)
                .layer(DefaultBodyLimit::max(login::MAX_SIGN_IN_BODY)),
        )
        .route(
            "/companies",
            get(login::companies_form).post(login::companies_submit),
        )
        .route("/review", get(review::page))
        .route("/review/{id}/body", get(review::body))
        .route("/review/{id}/approve", post(review::approve))
        .route("/review/{id}/reject", post(review::reject))
        .route("/tokens", get(tokens::page).post(tokens::create))
        .route("/tokens/{id}/revoke", post(tokens::revoke))
        .route("/members", get(members::page).post(members::add))
        .route("/members/{email}/deactivate", post(members::deactivate))
        .route("/members/{email}/reactivate", post(members::reactivate))
        .route("/members/{email}/expiry", post(members::expiry_post))
        .route("/invoices", get(invoices::list))
        .route("/invoices/{id}", get(invoices::detail))
        .route("/invoices/{id}/pdf", get(invoices::pdf))
        .route("/dashboard", get(dashboard::page))
        .route("/agreements", get(agreements::page))
        .route("/agreements/{id}/accept", post(agreements::accept))
        .route("/settings", get(settings::page).post(settings::save))
        .route("/settings/verifactu", get(settings::verifactu))
        .route(
            "/settings/verifactu/power-of-attorney",
            post(settings::power_of_attorney),
        )
        .route("/settings/verifactu/document", post(settings::document))
        // Daily work: customers and suppliers, and the pages' shared pieces (#33).
        .route("/entities", get(entities::list).post(entities::create))
        .route("/entities/new", get(entities::new_form))
        .route(
            "/entities/{id}",
            get(entities::edit_form).post(entities::update),
        )
        .route(
            "/entities/{id}/delete",
            get(entities::delete_form).post(entities::delete),
        )
        .route("/expenses", get(expenses::list).post(expenses::create))
        .route("/expenses/new", get(expenses::new_form))
        .route("/expenses/import", post(expense_files::import))
        .route(
            "/expenses/{id}",
            get(expenses::edit_form).post(expenses::update),
        )
        .route(
            "/expenses/{id}/receipt",
            get(expense_files::get_receipt).post(expense_files::put_receipt),
        )
        .route(
            "/invoices/new",
            get(invoice_form::new_form).post(invoice_form::create),
        )
        .route("/invoices/preview", post(invoice_form::preview_fragment))
        .route(
            "/invoices/{id}/edit",
            get(invoice_form::edit_form).post(invoice_form::update),
        )
        .route(
            "/invoices/{id}/issue",
            get(invoice_actions::confirm_issue).post(invoice_actions::issue),
        )
        .route(
            "/invoices/{id}/payments",
            post(invoice_actions::record_payment),
        )
        .route("/invoices/{id}/send", post(invoice_actions::send))
        .route("/invoices/{id}/einvoice", get(invoice_actions::einvoice))
        .route("/invoices/{id}/correct", post(invoice_actions::correct))
        .route("/invoices/{id}/delete", post(invoice_actions::delete_draft))
        .route("/expenses/{id}/delete", post(expenses::delete))
        // Money: bank accounts with their balances, and reports (#33).
        .route(
            "/bank-accounts",
            get(bank_accounts::list).post(bank_accounts::create),
        )
        .route("/bank-accounts/new", get(bank_accounts::new_form))
        .route(
            "/bank-accounts/{id}",
            get(bank_accounts::detail).post(bank_accounts::update),
        )
        .route(
            "/bank-accounts/{id}/delete",
            get(bank_accounts::delete_form).post(bank_accounts::delete),
        )
        .route(
            "/bank-accounts/{id}/snapshots",
            post(bank_accounts::add_snapshot),
        )
        .route(
            "/bank-accounts/{id}/snapshots/{sid}/delete",
            post(bank_accounts::delete_snapshot),
        )
        .route("/reports", get(reports::list).post(reports::create))
        .route("/reports/{id}/pdf", get(reports::pdf))
        .route("/reports/{id}/delete", post(reports::delete))
        // Documents: proformas and recurring invoices, and webhooks in the settings (#33).
        .route("/proformas", get(proformas::list))
        .route(
            "/proformas/new",
            get(proformas::new_form).post(proformas::create),
        )
        .route("/proformas/{id}", get(proformas::detail))
        .route(
            "/proformas/{id}/edit",
            get(proformas::edit_form).post(proformas::update),
        )
        .route("/proformas/{id}/pdf", get(proformas::pdf))
        .route("/proformas/{id}/invoice", post(proformas::to_invoice))
        .route("/proformas/{id}/delete", post(proformas::delete))
        .route("/recurring", get(recurring::list))
        .route(
            "/recurring/new",
            get(recurring::new_form).post(recurring::create),
        )
        .route("/recurring/{id}", get(recurring::detail))
        .route(
            "/recurring/{id}/edit",
            get(recurring::edit_form).post(recurring::update),
        )
        .route("/recurring/{id}/pause", post(recurring::pause))
        .route("/recurring/{id}/resume", post(recurring::resume))
        .route("/recurring/{id}/delete", post(recurring::delete))
        .route(
            "/settings/webhooks",
            get(webhooks::list).post(webhooks::create),
        )
        .route(
            "/settings/webhooks/{id}",
            get(webhooks::detail).post(webhooks::update),
        )
        .route("/settings/webhooks/{id}/enable", post(webhooks::enable))
        .route("/settings/webhooks/{id}/disable", post(webhooks::disable))
        .route("/settings/webhooks/{id}/delete", post(webhooks::delete))
        .route(
            "/settings/webhooks/{id}/deliveries/{delivery}/retry",
            post(webhooks::retry),
        )
        .route("/favicon.ico", get(assets::favicon))
        .route("/assets/favicon.svg", get(assets::favicon))
        // Any other path: an HTML page for people, the API's answer under the API's paths.
        .route("/{*rest}", axum::routing::any(not_found))
        .route("/assets/app.css", get(assets::css))
        .route("/assets/app.js", get(assets::js))
        // OAuth sign-in of MCP clients (its own body limits).
        .merge(oauth::routes())
        .layer(DefaultBodyLimit::max(MAX_FORM_BODY))
        .layer(middleware::map_response(security_headers))
        .with_state(state)
}

/// Headers on every web response: a strict CSP (only our own scripts and
/// styles), no framing, no sniffing, no caching of pages with account data.
async fn security_headers(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    // A page may set its own (the OAuth consent page names where its form may lead).
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(
                "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                 object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
            ),
        );
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}
