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
    Unauthorized(String),
    /// 503: the API cannot be reached.
    Unavailable(String),
    /// 502: the API answered something unexpected.
    BadGateway(String),
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let (status, message) = match self {
            Self::Unauthorized(m) => (StatusCode::UNAUTHORIZED, m),
            Self::Unavailable(m) => (StatusCode::SERVICE_UNAVAILABLE, m),
            Self::BadGateway(m) => (StatusCode::BAD_GATEWAY, m),
        };
        let mut response = (
            status,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("{message}\n"),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"invoicing\""),
            );
        }
        response
    }
}

/// The axum middleware in front of the MCP service; see the module docs.
pub async fn require_token(State(api): State<ApiClient>, mut req: Request, next: Next) -> Response {
    match check(&api, req.headers()).await {
        Ok(token) => {
            req.extensions_mut().insert(token);
            next.run(req).await
        }
        Err(refusal) => {
            tracing::info!(reason = ?refusal, "MCP request refused");
            refusal.into_response()
        }
    }
}

/// The token of an `Authorization: Bearer <uuid>` header, or what is wrong with it.
fn bearer(headers: &axum::http::HeaderMap) -> Result<String, Refusal> {
    let value = headers.get(header::AUTHORIZATION).ok_or_else(|| {
        Refusal::Unauthorized(
            "Missing bearer token: send `Authorization: Bearer <token>` with an API token of \
             your company (an MCP token is best)."
                .into(),
        )
    })?;
    let value = value.to_str().map_err(|_| {
        Refusal::Unauthorized("Malformed Authorization header: it must be ASCII.".into())
    })?;
    let token = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .ok_or_else(|| {
            Refusal::Unauthorized(
                "Malformed Authorization header: expected `Bearer <token>`.".into(),
            )
        })?;
    uuid::Uuid::parse_str(token).map_err(|_| {
        Refusal::Unauthorized(
            "Malformed bearer token: API tokens are UUIDs (as shown once when created).".into(),
        )
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
        StatusCode::UNAUTHORIZED => Err(Refusal::Unauthorized(format!(
            "The bearer token was refused: {} Create a new token (POST /v1/tokens with kind \
             `mcp`) if it was revoked.",
            answer.error_message()
        ))),
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
                matches!(bearer(&headers(bad)), Err(Refusal::Unauthorized(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn unauthorized_answers_carry_www_authenticate() {
        let r = Refusal::Unauthorized("x".into()).into_response();
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(
            r.headers()[header::WWW_AUTHENTICATE]
                .to_str()
                .unwrap()
                .starts_with("Bearer")
        );
        let r = Refusal::Unavailable("x".into()).into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(r.headers().get(header::WWW_AUTHENTICATE).is_none());
    }
}
