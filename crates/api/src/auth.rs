//! Who is calling: the one place a request's company, user and kind come from.
//!
//! The tenant is taken from the bearer token and nothing else. The
//! [`authenticate`] middleware resolves it once per request and every handler
//! reads it through the [`Caller`] extractor.

use axum::{
    extract::{FromRequestParts, Request, State},
    http::request::Parts,
    middleware::Next,
    response::{IntoResponse, Response},
};
use subtle::ConstantTimeEq;

use crate::{AppState, error::ApiError};

/// Header that turns a standard token's request into a person's.
pub const HUMAN_PROOF_HEADER: &str = "x-human-proof";
/// Header the MCP server sets on the requests it forwards (audit `source` = `mcp`).
/// Honoured only with a valid [`SOURCE_PROOF_HEADER`]; otherwise ignored (source `api`).
pub const SOURCE_HEADER: &str = "x-invoicing-source";
/// Header with which the MCP server proves it set [`SOURCE_HEADER`]: [`mcp_source_proof`].
pub const SOURCE_PROOF_HEADER: &str = "x-invoicing-source-proof";

/// What the MCP server sends as [`SOURCE_PROOF_HEADER`]: derived from the service's
/// secret key (`INVOICING_SECRET_KEY`), so only a process that has the key can mark a
/// request as coming through MCP. `serve` gives it to its MCP child; `invoicing mcp`
/// alone computes it from the same key.
pub fn mcp_source_proof(key: &reports::links::SecretKey) -> String {
    reports::links::derive(key, "x-invoicing-source: mcp")
}

/// Whether a person or an AI agent is behind a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallerKind {
    /// A standard token with its valid human proof, or an approved replay.
    Human,
    /// Any MCP token, or a standard token without a human proof.
    Ai,
}

impl CallerKind {
    /// `human` or `ai` (whose idempotency keys these are).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Human => "human",
            Self::Ai => "ai",
        }
    }
}

/// Where a request came from, as recorded on AI audit entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Api,
    Mcp,
}

impl Source {
    /// The audit label, `api` or `mcp`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Mcp => "mcp",
        }
    }
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub company_id: store::CompanyId,
    pub user_id: String,
    pub token_id: String,
    pub kind: CallerKind,
    pub source: Source,
    /// Language of legal mentions and labels for the company: `es` for Spanish
    /// companies, else `en` (read with the token, so handlers need no query for it).
    pub language: &'static str,
}

impl Caller {
    /// Fails with 403 `human_required` unless a person is calling.
    pub fn require_human(&self) -> Result<(), ApiError> {
        match self.kind {
            CallerKind::Human => Ok(()),
            CallerKind::Ai => Err(ApiError::human_required()),
        }
    }

    /// Whether a person is calling.
    pub fn is_human(&self) -> bool {
        self.kind == CallerKind::Human
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Caller>()
            .cloned()
            .ok_or(ApiError::Unauthorized("Missing bearer token."))
    }
}

/// A caller fixed by the service itself (the replay of an approved AI request);
/// it can only be set in process, never by a client.
#[derive(Debug, Clone)]
pub(crate) struct TrustedCaller(pub Caller);

/// Resolves the bearer token (and human proof) into a [`Caller`], or answers 401.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    if let Some(TrustedCaller(caller)) = req.extensions().get::<TrustedCaller>().cloned() {
        req.extensions_mut().insert(caller);
        return next.run(req).await;
    }
    if is_signed_download(&req) {
        // The report handler checks the link's signature itself; no caller is set.
        return next.run(req).await;
    }
    match resolve(&state, req.headers()).await {
        Ok(caller) => {
            tracing::Span::current().record("company_id", caller.company_id.as_str());
            if let Some(limiter) = &state.limiter
                && let Err(wait) = limiter.check(&caller.token_id, std::time::Instant::now())
            {
                let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                let mut resp = crate::error::plain(
                    axum::http::StatusCode::TOO_MANY_REQUESTS,
                    format!("Too many requests with this token; retry in {secs} s (Retry-After)."),
                );
                if let Ok(v) = axum::http::HeaderValue::from_str(&secs.to_string()) {
                    resp.headers_mut()
                        .insert(axum::http::header::RETRY_AFTER, v);
                }
                return resp;
            }
            if crate::gate::is_mutating(req.method()) {
                // Its body is still to come from the client, however slowly: the token
                // lookup's connection is given back, for other requests, rather than wait
                // for it.
                store::db::give_back();
            }
            req.extensions_mut().insert(caller);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// A token-less `GET /v1/reports/{id}/pdf?...&signature=...` from a mailed download link.
fn is_signed_download(req: &Request) -> bool {
    if req.method() != axum::http::Method::GET
        || req
            .headers()
            .contains_key(axum::http::header::AUTHORIZATION)
    {
        return false;
    }
    let signed = req
        .uri()
        .query()
        .is_some_and(|q| q.split('&').any(|kv| kv.starts_with("signature=")));
    let segments: Vec<&str> = req.uri().path().split('/').collect();
    signed && matches!(segments.as_slice(), ["", "v1", "reports", id, "pdf"] if !id.is_empty())
}

async fn resolve(state: &AppState, headers: &axum::http::HeaderMap) -> Result<Caller, ApiError> {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .ok_or(ApiError::Unauthorized(
            "Missing bearer token: send `Authorization: Bearer <token>`.",
        ))?;
    let value = header
        .to_str()
        .map_err(|_| ApiError::Unauthorized("Malformed Authorization header."))?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .ok_or(ApiError::Unauthorized(
            "Malformed Authorization header: expected `Bearer <token>`.",
        ))?;
    let token = uuid::Uuid::parse_str(token)
        .map_err(|_| ApiError::Unauthorized("Malformed bearer token: expected a UUID."))?;
    let hash = store::hash_secret(&token.to_string());
    let found = state.db.authenticate(&hash).await;
    let auth = found?.ok_or(ApiError::Unauthorized("Unknown or revoked token."))?;
    let kind = match headers.get(HUMAN_PROOF_HEADER) {
        None => CallerKind::Ai,
        Some(proof) => {
            let proof = proof
                .to_str()
                .map_err(|_| ApiError::Unauthorized("Invalid X-Human-Proof."))?;
            let presented = store::hash_secret(proof.trim());
            let matches = match (&auth.kind[..], &auth.proof_hash) {
                ("standard", Some(stored)) => {
                    bool::from(presented.as_bytes().ct_eq(stored.as_bytes()))
                }
                _ => false,
            };
            if !matches {
                return Err(ApiError::Unauthorized(if auth.kind == "mcp" {
                    "An MCP token has no human proof: send it without X-Human-Proof."
                } else {
                    "Invalid X-Human-Proof for this token: send the human proof shown with it \
                     when it was created, or none to act as an AI caller."
                }));
            }
            CallerKind::Human
        }
    };
    let source = if auth.kind == "mcp" || from_mcp_server(state, headers) {
        Source::Mcp
    } else {
        Source::Api
    };
    Ok(Caller {
        company_id: auth.company_id,
        user_id: auth.user_id,
        token_id: auth.token_id,
        kind,
        source,
        language: language_of(auth.company_type.as_deref()),
    })
}

/// Whether the request carries `X-Invoicing-Source: mcp` with the MCP server's proof
/// (compared in constant time). The header alone, which any caller can send, is ignored.
fn from_mcp_server(state: &AppState, headers: &axum::http::HeaderMap) -> bool {
    let says_mcp = headers
        .get(SOURCE_HEADER)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() == "mcp");
    let Some(proof) = headers.get(SOURCE_PROOF_HEADER) else {
        return false;
    };
    let expected = mcp_source_proof(&state.config.secret_key);
    says_mcp && bool::from(proof.as_bytes().ct_eq(expected.as_bytes()))
}

/// `es` for a Spanish company type (`ES:...`), else `en`.
pub fn language_of(company_type: Option<&str>) -> &'static str {
    if company_type.is_some_and(domain::entity_type::is_spanish) {
        "es"
    } else {
        "en"
    }
}

/// A pooled connection for reads outside a write transaction: the request's own, kept since
/// its token lookup (`store::db::request_scope`).
pub struct DbConn(pub store::Pooled);

impl DbConn {
    /// Gives the connection back, for other requests, before a long wait (a render slot, a
    /// render).
    pub fn release(self) {
        self.0.release();
    }
}

impl FromRequestParts<AppState> for DbConn {
    type Rejection = ApiError;

    async fn from_request_parts(_: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        Ok(Self(state.db.acquire().await?))
    }
}

impl std::ops::Deref for DbConn {
    type Target = sqlx::AnyConnection;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for DbConn {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}
