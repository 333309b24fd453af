//! MCP server of the invoicing service: streamable HTTP at `/mcp`, a client of the HTTP API.
//!
//! The server owns no data and no database connection. Each MCP request is
//! checked by [`auth::require_token`] (the bearer token is asked of the API on
//! every HTTP request), then served by [`server::InvoicingMcp`], which reads
//! resources and forwards tool calls to the API with the caller's token and
//! `x-invoicing-source: mcp` (proved with [`McpConfig::source_proof`]). Because the API's AI gate holds every write for
//! a person's approval, so does every MCP tool.
//!
//! The transport runs stateless (no `Mcp-Session-Id`, JSON answers, no
//! server-held streams): any request can go to any MCP process, so several
//! can run behind one address without session affinity.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod api;
pub mod auth;
pub mod metadata;
pub mod resources;
pub mod server;
pub mod tools;
pub mod transport;

use std::{future::Future, sync::Arc};

use axum::{Router, routing::get};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
};
use tower::Layer as _;

/// Host names accepted in the `Host` header by default (loopback only).
pub const DEFAULT_ALLOWED_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Browser origins accepted in the `Origin` header by default (pages served from this
/// machine, any port, such as the MCP Inspector's). A request without `Origin` (every
/// non-browser client) is not affected.
pub const DEFAULT_ALLOWED_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// What the MCP server needs to run.
#[derive(Debug, Clone)]
pub struct McpConfig {
    /// Base URL of the HTTP API, e.g. `http://127.0.0.1:8080`.
    pub api_url: String,
    /// Host names (or `host:port`) accepted in the `Host` header, against DNS
    /// rebinding; `None` accepts any host (behind a proxy that checks it).
    pub allowed_hosts: Option<Vec<String>>,
    /// Browser origins (`scheme://host:port`, `:*` for any port) accepted in the `Origin`
    /// header, against DNS rebinding from a web page: a request whose `Origin` is not one
    /// of them gets `403`; `None` accepts any origin.
    pub allowed_origins: Option<Vec<String>>,
    /// Proves to the API that requests marked `x-invoicing-source: mcp` come from this
    /// server (derived from the service's secret key); `None`: the mark is not believed
    /// and entries of standard tokens are recorded as source `api`.
    pub source_proof: Option<api::SourceProof>,
    /// The MCP endpoint's public URL (`INVOICING_MCP_PUBLIC_URL`, by default
    /// `http://<bound address>/mcp`): the `resource` of the protected-resource metadata.
    pub resource_url: Option<String>,
    /// The service's public URL (`INVOICING_PUBLIC_URL`): the authorization server MCP
    /// clients sign in with. `None`: no OAuth metadata, clients must be given a token.
    pub authorization_server: Option<String>,
}

impl McpConfig {
    /// Parses a comma-separated allowed-hosts setting; `*` means any host.
    pub fn parse_allowed_hosts(setting: Option<&str>) -> Option<Vec<String>> {
        parse_list(setting, &DEFAULT_ALLOWED_HOSTS)
    }

    /// Parses a comma-separated allowed-origins setting; `*` means any origin.
    pub fn parse_allowed_origins(setting: Option<&str>) -> Option<Vec<String>> {
        parse_list(setting, &DEFAULT_ALLOWED_ORIGINS)
    }
}

/// A comma-separated list setting: unset or empty gives the defaults, `*` means any.
fn parse_list(setting: Option<&str>, defaults: &[&str]) -> Option<Vec<String>> {
    match setting.map(str::trim) {
        None | Some("") => Some(defaults.iter().map(|d| (*d).to_owned()).collect()),
        Some("*") => None,
        Some(list) => Some(
            list.split(',')
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
                .collect(),
        ),
    }
}

/// The MCP router: `/mcp` behind the token check, and `/healthz` for load balancers.
pub fn router(config: &McpConfig) -> anyhow::Result<Router> {
    let api = api::ApiClient::new(&config.api_url)?.with_source_proof(config.source_proof.clone());
    let handler = server::InvoicingMcp::new(api.clone());
    let mut transport = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    transport = match &config.allowed_hosts {
        Some(hosts) => transport.with_allowed_hosts(hosts.clone()),
        None => transport.disable_allowed_hosts(),
    };
    transport = match &config.allowed_origins {
        Some(origins) => transport
            .with_allowed_origins(origins.clone())
            .enforce_origin_validation(),
        None => transport.disable_allowed_origins(),
    };
    transport = transport.with_max_request_body_bytes(transport::MAX_BODY);
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(NeverSessionManager::default()),
        transport,
    );
    let checked = axum::middleware::from_fn(transport::check_body).layer(service);
    let oauth = config
        .resource_url
        .as_deref()
        .zip(config.authorization_server.as_deref());
    let guard = auth::Guard {
        api,
        resource_metadata: oauth.map(|(resource, _)| metadata::metadata_url(resource).into()),
    };
    let guarded = axum::middleware::from_fn_with_state(guard, auth::require_token).layer(checked);
    let mut router = Router::new()
        .nest_service("/mcp", guarded)
        .route("/healthz", get(|| async { "ok" }));
    if let Some((resource, server)) = oauth {
        router = router.merge(metadata::routes(resource, server.trim_end_matches('/')));
    }
    Ok(router)
}

/// Serves MCP on `listener` until `shutdown` resolves, then lets in-flight requests finish.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: McpConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = router(&config)?;
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| anyhow::anyhow!("the MCP server failed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_hosts_default_to_loopback_and_star_means_any() {
        assert_eq!(
            McpConfig::parse_allowed_hosts(None).unwrap(),
            ["localhost", "127.0.0.1", "::1"]
        );
        assert_eq!(McpConfig::parse_allowed_hosts(Some("*")), None);
        assert_eq!(
            McpConfig::parse_allowed_hosts(Some(" mcp.example.com, 10.0.0.5:8081 ")).unwrap(),
            ["mcp.example.com", "10.0.0.5:8081"]
        );
        assert_eq!(
            McpConfig::parse_allowed_origins(Some("https://app.example.com:443")).unwrap(),
            ["https://app.example.com:443"]
        );
        assert_eq!(McpConfig::parse_allowed_origins(Some(" * ")), None);
        assert!(
            McpConfig::parse_allowed_origins(None)
                .unwrap()
                .contains(&"http://localhost:*".to_owned())
        );
    }
}
