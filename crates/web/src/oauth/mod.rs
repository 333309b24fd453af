//! OAuth 2.1 authorization server for MCP clients (docs/MCP.md "Sign in with OAuth").
//!
//! The MCP server names this service as its authorization server (RFC 9728); a client
//! reads [`metadata`] (RFC 8414), registers itself ([`register`], RFC 7591: public
//! clients only), sends the person to [`authorize`] (the web sign-in, then a consent page
//! naming the client and the company; PKCE S256 required) and exchanges the code at
//! [`token`] (authorization-code and refresh-token grants). What it gets is an `mcp`
//! token of the person's company: an AI caller, whose every change waits for a person's
//! approval, listed and revocable on the tokens page. None of this is under `/v1`: these
//! endpoints are for clients that hold no token yet.

pub mod authorize;
pub mod register;
pub mod token;

use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;

use crate::WebState;

/// Largest body of a registration or token request (form fields or client metadata).
pub const MAX_BODY: usize = 16 * 1024;

/// What the authorization server needs to know besides the API's configuration.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// The MCP endpoint's public URL (`INVOICING_MCP_PUBLIC_URL`): an authorization request
    /// naming another `resource` is refused. `None` when it is not known in advance (the MCP
    /// server listens on a port chosen at start), then any resource is accepted.
    pub mcp_resource: Option<String>,
}

/// The routes of the authorization server, merged into the web router.
pub fn routes() -> Router<WebState> {
    Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            get(metadata).options(preflight),
        )
        .route(
            "/oauth/register",
            axum::routing::post(register::register)
                .options(preflight)
                .layer(DefaultBodyLimit::max(MAX_BODY)),
        )
        .route(
            "/oauth/authorize",
            get(authorize::start)
                .post(authorize::decide)
                .layer(DefaultBodyLimit::max(MAX_BODY)),
        )
        .route(
            "/oauth/token",
            axum::routing::post(token::token)
                .options(preflight)
                .layer(DefaultBodyLimit::max(MAX_BODY)),
        )
}

/// The issuer: the service's public URL, without a trailing slash.
pub fn issuer(state: &WebState) -> String {
    state.api.config.public_url.trim_end_matches('/').to_owned()
}

/// `GET /.well-known/oauth-authorization-server` (RFC 8414).
pub async fn metadata(State(state): State<WebState>) -> Response {
    let issuer = issuer(&state);
    cors(
        Json(json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/oauth/authorize"),
            "token_endpoint": format!("{issuer}/oauth/token"),
            "registration_endpoint": format!("{issuer}/oauth/register"),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none"],
            "service_documentation": format!("{issuer}/api/"),
        }))
        .into_response(),
    )
}

/// Lets browser-based MCP clients (the Inspector) read the metadata and call the
/// registration and token endpoints: none of them uses cookies, so any origin may.
pub fn cors(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, Authorization, MCP-Protocol-Version"),
    );
    h.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    resp
}

/// The answer to a CORS preflight.
pub async fn preflight() -> Response {
    cors(StatusCode::NO_CONTENT.into_response())
}

/// An OAuth error as JSON (RFC 6749 section 5.2, RFC 7591 section 3.2.2), with CORS.
pub fn json_error(status: StatusCode, error: &str, description: &str) -> Response {
    let mut resp = cors(
        (
            status,
            Json(json!({"error": error, "error_description": description})),
        )
            .into_response(),
    );
    resp.headers_mut()
        .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    resp
}

/// A `500` as OAuth JSON for an unexpected failure (logged, never shown in detail).
pub fn server_error(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "OAuth request failed");
    json_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "The service could not complete this request; try again.",
    )
}

/// Whether `uri` may be a redirect URI: an absolute `https` URL, or `http` to a loopback
/// address (a client on the person's own machine, RFC 8252), without a fragment or
/// credentials. Compared exactly (as text) at authorization and exchange.
pub fn redirect_uri_allowed(uri: &str) -> Result<(), String> {
    let url = reqwest::Url::parse(uri)
        .map_err(|e| format!("The redirect URI {uri:?} is not an absolute URL ({e})."))?;
    if url.fragment().is_some() {
        return Err(format!(
            "The redirect URI {uri:?} must not have a fragment."
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "The redirect URI {uri:?} must not carry a user name or password."
        ));
    }
    let host = url.host_str().unwrap_or("");
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match url.scheme() {
        "https" if !host.is_empty() => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(format!(
            "The redirect URI {uri:?} must use https, or http to a loopback address \
             (127.0.0.1, [::1] or localhost)."
        )),
    }
}

/// The `scheme://host:port` of a redirect URI (for the consent page's CSP `form-action`).
pub fn origin_of(uri: &str) -> Option<String> {
    let url = reqwest::Url::parse(uri).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// `uri` with `params` added to its query (redirects back to the client).
pub fn with_query(uri: &str, params: &[(&str, &str)]) -> Option<String> {
    let mut url = reqwest::Url::parse(uri).ok()?;
    {
        let mut q = url.query_pairs_mut();
        for (k, v) in params {
            q.append_pair(k, v);
        }
    }
    Some(url.to_string())
}

/// Whether `verifier` (RFC 7636: 43 to 128 unreserved characters) hashes to `challenge`
/// with S256.
pub fn pkce_ok(verifier: &str, challenge: &str) -> bool {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    if !pkce_text_ok(verifier) {
        return false;
    }
    let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    crate::session::same_secret(&computed, challenge)
}

/// Whether `s` has the form of a PKCE verifier or S256 challenge: 43 to 128 characters
/// of `A-Z a-z 0-9 - . _ ~`.
pub fn pkce_text_ok(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether a `resource` parameter names this service's MCP endpoint (RFC 8707),
/// ignoring a trailing slash.
pub fn resource_ok(state: &WebState, resource: Option<&str>) -> bool {
    match (resource, &state.oauth.mcp_resource) {
        (None, _) | (Some(_), None) => true,
        (Some(given), Some(ours)) => given.trim_end_matches('/') == ours.trim_end_matches('/'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_or_loopback_http() {
        for ok in [
            "https://claude.ai/api/mcp/auth_callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost:6274/oauth/callback",
            "http://[::1]:9000/cb?x=1",
        ] {
            assert!(redirect_uri_allowed(ok).is_ok(), "{ok}");
        }
        for bad in [
            "http://example.com/cb",
            "https://example.com/cb#frag",
            "https://user:pw@example.com/cb",
            "javascript:alert(1)",
            "cursor://callback",
            "/relative",
            "http://127.0.0.1.evil.example/cb",
        ] {
            assert!(redirect_uri_allowed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pkce_s256_matches_the_rfc_example() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_ok(verifier, challenge));
        assert!(!pkce_ok(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX",
            challenge
        ));
        assert!(!pkce_ok("short", challenge));
    }

    #[test]
    fn query_parameters_are_appended_and_encoded() {
        assert_eq!(
            with_query(
                "https://c.example/cb?a=1",
                &[("code", "x y"), ("state", "&s")]
            )
            .unwrap(),
            "https://c.example/cb?a=1&code=x+y&state=%26s"
        );
        assert_eq!(
            origin_of("http://127.0.0.1:9/cb").unwrap(),
            "http://127.0.0.1:9"
        );
    }
}
