//! The MCP server's only way to data: HTTP requests to the invoicing API.
//!
//! Every request carries the MCP caller's own bearer token and
//! `x-invoicing-source: mcp` with `x-invoicing-source-proof` (a value derived from
//! the service's secret key, so the API believes the mark: AI audit entries record
//! `source` = `mcp`), and never `X-Human-Proof`: headers are built here from scratch,
//! nothing from the MCP client's request is copied through.

use std::time::Duration;

use axum::http::{HeaderValue, Method, Request, StatusCode, Uri, header};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};

/// Header that marks a request as forwarded by the MCP server.
pub const SOURCE_HEADER: &str = "x-invoicing-source";
/// Header that proves [`SOURCE_HEADER`] to the API (without it the mark is ignored).
pub const SOURCE_PROOF_HEADER: &str = "x-invoicing-source-proof";

/// The value of [`SOURCE_PROOF_HEADER`]: derived from the service's secret key by the
/// `invoicing` binary (`api::auth::mcp_source_proof`); never printed.
#[derive(Clone)]
pub struct SourceProof(HeaderValue);

impl SourceProof {
    /// Wraps the proof; `None` when it cannot be sent as a header.
    pub fn new(proof: &str) -> Option<Self> {
        let mut value = HeaderValue::from_str(proof).ok()?;
        value.set_sensitive(true);
        Some(Self(value))
    }
}

impl std::fmt::Debug for SourceProof {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourceProof(..)")
    }
}

/// How long one API request may take before the MCP server gives up on it.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest API response body read (a page of 500 invoices with their lines fits).
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// A client of the invoicing HTTP API at one base URL.
#[derive(Clone, Debug)]
pub struct ApiClient {
    base: String,
    http: Client<HttpConnector, Full<Bytes>>,
    source_proof: Option<SourceProof>,
}

/// An API answer: its status and body.
#[derive(Debug)]
pub struct ApiResponse {
    /// HTTP status of the answer.
    pub status: StatusCode,
    /// The body, as sent.
    pub body: Bytes,
}

impl ApiResponse {
    /// The body as text (plain-text error messages of the API).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).trim().to_owned()
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Result<serde_json::Value, ApiError> {
        serde_json::from_slice(&self.body).map_err(|e| {
            ApiError::Unexpected(format!(
                "the API answered {} with a body that is not JSON: {e}",
                self.status
            ))
        })
    }

    /// The message an error answer carries: the plain-text body, or the
    /// `message` of a JSON error body (403 `{"error","message"}`).
    pub fn error_message(&self) -> String {
        let text = self.text();
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => match (v["error"].as_str(), v["message"].as_str()) {
                (Some(code), Some(msg)) => format!("{msg} ({code})"),
                (None, Some(msg)) => msg.to_owned(),
                _ => text,
            },
            Err(_) if text.is_empty() => format!("the API answered {}", self.status),
            Err(_) => text,
        }
    }
}

/// Why an API request got no usable answer.
#[derive(Debug)]
pub enum ApiError {
    /// The API could not be reached (connection refused, timeout).
    Unreachable(String),
    /// The API answered something this server cannot use.
    Unexpected(String),
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(m) | Self::Unexpected(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ApiError {}

impl ApiClient {
    /// A client of the API at `base_url` (`http://host:port`, optionally with a path prefix).
    ///
    /// Only plain `http://` is supported: the MCP server is meant to run next to the
    /// API (as `serve`'s child or beside it), with TLS ending at the load balancer.
    pub fn new(base_url: &str) -> anyhow::Result<Self> {
        let trimmed = base_url.trim().trim_end_matches('/');
        let uri: Uri = trimmed.parse().map_err(|e| {
            anyhow::anyhow!(
                "INVOICING_API_URL `{base_url}` is not a URL ({e}): use e.g. http://127.0.0.1:8080"
            )
        })?;
        match (uri.scheme_str(), uri.authority()) {
            (Some("http"), Some(_)) => {}
            (Some("https"), _) => anyhow::bail!(
                "INVOICING_API_URL `{base_url}` uses https, which the MCP server does not speak: \
                 run it next to the API and give the API's plain http:// address"
            ),
            _ => anyhow::bail!(
                "INVOICING_API_URL `{base_url}` must be an http:// URL with a host, e.g. \
                 http://127.0.0.1:8080"
            ),
        }
        if uri.query().is_some() {
            anyhow::bail!("INVOICING_API_URL `{base_url}` must not have a query string");
        }
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        connector.set_nodelay(true);
        let http = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .build(connector);
        Ok(Self {
            base: trimmed.to_owned(),
            http,
            source_proof: None,
        })
    }

    /// The same client proving its `x-invoicing-source: mcp` mark with `proof`; without
    /// one the API records its requests as source `api` (MCP tokens' as `mcp` anyway).
    pub fn with_source_proof(mut self, proof: Option<SourceProof>) -> Self {
        self.source_proof = proof;
        self
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// `GET {base}{path_and_query}` with the caller's token.
    pub async fn get(&self, token: &str, path_and_query: &str) -> Result<ApiResponse, ApiError> {
        self.send(Method::GET, token, path_and_query, None).await
    }

    /// Sends one request with the caller's token and an optional JSON body.
    pub async fn send(
        &self,
        method: Method,
        token: &str,
        path_and_query: &str,
        json: Option<&serde_json::Value>,
    ) -> Result<ApiResponse, ApiError> {
        let url = format!("{}{path_and_query}", self.base);
        let auth = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            ApiError::Unexpected("the bearer token cannot be sent as a header".into())
        })?;
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(&url)
            .header(header::AUTHORIZATION, auth)
            .header(SOURCE_HEADER, "mcp")
            .header(header::ACCEPT, "application/json");
        if let Some(SourceProof(proof)) = &self.source_proof {
            builder = builder.header(SOURCE_PROOF_HEADER, proof.clone());
        }
        let body = match json {
            Some(v) => {
                builder = builder.header(header::CONTENT_TYPE, "application/json");
                Bytes::from(serde_json::to_vec(v).map_err(|e| {
                    ApiError::Unexpected(format!("cannot encode the request body: {e}"))
                })?)
            }
            None => Bytes::new(),
        };
        let request = builder
            .body(Full::new(body))
            .map_err(|e| ApiError::Unexpected(format!("cannot build the request {url}: {e}")))?;
        let call = async {
            let response = self.http.request(request).await.map_err(|e| {
                ApiError::Unreachable(format!(
                    "the invoicing API at {} cannot be reached: {e}",
                    self.base
                ))
            })?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    ApiError::Unreachable(format!(
                        "the answer of the invoicing API to {method} {path_and_query} was cut: {e}"
                    ))
                })?
                .to_bytes();
            Ok(ApiResponse { status, body })
        };
        tokio::time::timeout(REQUEST_TIMEOUT, call)
            .await
            .map_err(|_| {
                ApiError::Unreachable(format!(
                    "the invoicing API at {} did not answer {method} {path_and_query} within {} s",
                    self.base,
                    REQUEST_TIMEOUT.as_secs()
                ))
            })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_base_urls_are_accepted() {
        assert_eq!(
            ApiClient::new("http://127.0.0.1:8080/").unwrap().base_url(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            ApiClient::new("http://api.internal/invoicing")
                .unwrap()
                .base_url(),
            "http://api.internal/invoicing"
        );
        for bad in [
            "https://x.example",
            "127.0.0.1:8080",
            "ftp://x",
            "http://x/?a=1",
            "",
        ] {
            assert!(ApiClient::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn error_messages_come_from_text_or_json_bodies() {
        let r = |status: u16, body: &str| ApiResponse {
            status: StatusCode::from_u16(status).unwrap(),
            body: Bytes::from(body.to_owned()),
        };
        assert_eq!(r(400, "Bad period.\n").error_message(), "Bad period.");
        assert_eq!(
            r(
                403,
                r#"{"error":"company_not_settled","message":"Complete it."}"#
            )
            .error_message(),
            "Complete it. (company_not_settled)"
        );
        assert_eq!(
            r(500, "").error_message(),
            "the API answered 500 Internal Server Error"
        );
    }
}
