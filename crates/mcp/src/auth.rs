//! Every HTTP request to `/mcp` must carry a bearer token the API accepts right now.
//!
//! [`require_token`] runs in front of the rmcp service on every request
//! (initialize, listings, reads, tool calls, notifications alike) and asks the
//! API `GET /v1/session` with the token. Nothing is cached, so a token revoked
//! a moment ago fails on the very next request. The accepted token is put in
//! the request's extensions as [`BearerToken`]; rmcp hands the request parts to
//! the handlers, which forward the token to the API.

use axum::{
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use crate::api::{ApiClient, ApiError};

/// The caller's bearer token, checked against the API for this request.
#[derive(Clone)]
pub struct BearerToken(pub String);

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

/// Why a request was refused before reaching the MCP service.
#[derive(Debug)]
enum Refusal {
    /// 401: fix the `Authorization` header or use another token.
    Unauthorized {
        message: String,
        /// Whether the request carried an `Authorization` header at all.
        token_sent: bool,
    },
    /// 503: the API cannot be reached.
    Unavailable(String),
    /// 502: the API answered something unexpected.
    BadGateway(String),
}

/// What a person must do when a client is refused: said in every 401, because MCP clients
/// show little else.
const HOW_TO_CONNECT: &str = "MCP clients that support OAuth sign in on their own (the \
    `WWW-Authenticate` header names this server's protected-resource metadata); others must \
    send the header `Authorization: Bearer <token>` with an MCP token of your company \
    (`mcp_token` in data/bootstrap.json after `invoicing serve --bootstrap`, or a new one from \
    POST /v1/tokens {\"kind\":\"mcp\"}). See docs/MCP.md.";

/// JSON-RPC error code of a refused request (in the range JSON-RPC leaves to servers).
const UNAUTHORIZED_CODE: i64 = -32001;

/// The `WWW-Authenticate` of a 401 (RFC 6750, RFC 9728): the realm, where the
/// protected-resource metadata is (which starts an OAuth client's sign-in), `invalid_token`
/// when a token was sent (none when it was missing), and what to do, which clients may show.
fn www_authenticate(token_sent: bool, resource_metadata: Option<&str>) -> HeaderValue {
    let error = if token_sent {
        ", error=\"invalid_token\""
    } else {
        ""
    };
    let metadata = resource_metadata
        .map(|m| format!(", resource_metadata=\"{m}\""))
        .unwrap_or_default();
    let value = format!(
        "Bearer realm=\"invoicing\"{metadata}{error}, error_description=\"Sign in with OAuth, \
         or send Authorization: Bearer <token> with an MCP token of your company\""
    );
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, message, token_sent) = match self {
            Self::Unauthorized {
                message,
                token_sent,
            } => (StatusCode::UNAUTHORIZED, message, token_sent),
            Self::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, m, true),
            Self::BadGateway(m) => (StatusCode::BAD_GATEWAY, m, true),
        };
        if status != StatusCode::UNAUTHORIZED {
            return (
                status,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("{message}\n"),
            )
                .into_response();
        }
        // A JSON-RPC error, which MCP clients show to the person (the official SDKs surface
        // an error body at any status); curl shows the same words.
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": UNAUTHORIZED_CODE,
                "message": format!("Unauthorized: {message} {HOW_TO_CONNECT}"),
            },
        });
        let mut response = (
            status,
            [(header::CONTENT_TYPE, "application/json")],
            format!("{body}\n"),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, www_authenticate(token_sent, None));
        response
    }
}

/// What the token check needs: the API, and where this server's protected-resource
/// metadata is (named in every 401 so that OAuth clients can sign in).
#[derive(Clone)]
pub struct Guard {
    /// The API that checks tokens.
    pub api: ApiClient,
    /// The URL of the RFC 9728 metadata; `None` when OAuth sign-in is not offered.
    pub resource_metadata: Option<std::sync::Arc<str>>,
}

/// The axum middleware in front of the MCP service; see the module docs.
pub async fn require_token(State(guard): State<Guard>, mut req: Request, next: Next) -> Response {
    match check(&guard.api, req.headers()).await {
        Ok(token) => {
            req.extensions_mut().insert(token);
            next.run(req).await
        }
        Err(refusal) => {
            tracing::info!(reason = ?refusal, "MCP request refused");
            let token_sent = matches!(
                refusal,
                Refusal::Unauthorized {
                    token_sent: true,
                    ..
                }
            );
            let mut resp = refusal.into_response();
            if resp.status() == StatusCode::UNAUTHORIZED {
                resp.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    www_authenticate(token_sent, guard.resource_metadata.as_deref()),
                );
            }
            resp
        }
    }
}

/// A 401 for a request that sent an `Authorization` header.
fn unauthorized(message: &str) -> Refusal {
    Refusal::Unauthorized {
        message: message.to_owned(),
        token_sent: true,
    }
}

/// The token of an `Authorization: Bearer <uuid>` header, or what is wrong with it.
fn bearer(headers: &axum::http::HeaderMap) -> Result<String, Refusal> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| Refusal::Unauthorized {
            message: "No Authorization header.".into(),
            token_sent: false,
        })?;
    let value = value
        .to_str()
        .map_err(|_| unauthorized("Malformed Authorization header: it must be ASCII."))?;
    let token = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .ok_or_else(|| {
            unauthorized("Malformed Authorization header: expected `Bearer <token>`.")
        })?;
    uuid::Uuid::parse_str(token).map_err(|_| {
        unauthorized("Malformed bearer token: API tokens are UUIDs (as shown once when created).")
    })?;
    Ok(token.to_owned())
}

async fn check(api: &ApiClient, headers: &axum::http::HeaderMap) -> Result<BearerToken, Refusal> {
    let token = bearer(headers)?;
    let answer = api.get(&token, "/v1/session").await.map_err(|e| match e {
        ApiError::Unreachable(m) => Refusal::Unavailable(format!(
            "The MCP server cannot check the token because {m}. Try again shortly."
        )),
        ApiError::Unexpected(m) => Refusal::BadGateway(m),
    })?;
    match answer.status {
        s if s.is_success() => Ok(BearerToken(token)),
        StatusCode::UNAUTHORIZED => Err(Refusal::Unauthorized {
            message: format!(
                "The bearer token was refused: {} Create a new token if it was revoked.",
                answer.error_message().trim_end()
            ),
            token_sent: true,
        }),
        s => Err(Refusal::BadGateway(format!(
            "The invoicing API answered {s} when checking the token: {}",
            answer.error_message()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderMap;

    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert(header::AUTHORIZATION, HeaderValue::from_str(a).unwrap());
        }
        h
    }

    #[test]
    fn bearer_header_is_parsed_before_asking_the_api() {
        let id = "0190c0de-0000-7000-8000-000000000001";
        assert_eq!(bearer(&headers(Some(&format!("Bearer {id}")))).unwrap(), id);
        assert_eq!(
            bearer(&headers(Some(&format!("bearer  {id}")))).unwrap(),
            id
        );
        for bad in [
            None,
            Some("Basic abc"),
            Some("Bearer"),
            Some("Bearer not-a-uuid"),
        ] {
            assert!(
                matches!(bearer(&headers(bad)), Err(Refusal::Unauthorized { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn unauthorized_answers_carry_www_authenticate() {
        for token_sent in [false, true] {
            let r = Refusal::Unauthorized {
                message: "x".into(),
                token_sent,
            }
            .into_response();
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
            let www = r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
            assert!(www.starts_with("Bearer realm=\"invoicing\""), "{www}");
            assert!(
                www.contains("error_description=\"Sign in with OAuth, or send Authorization"),
                "{www}"
            );
            assert_eq!(www.contains("invalid_token"), token_sent, "{www}");
            let with = www_authenticate(token_sent, Some("http://h:1/.well-known/x"));
            let with = with.to_str().unwrap();
            assert!(
                with.starts_with(
                    "Bearer realm=\"invoicing\", resource_metadata=\"http://h:1/.well-known/x\""
                ),
                "{with}"
            );
        }
        let r = Refusal::Unavailable("x".into()).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
