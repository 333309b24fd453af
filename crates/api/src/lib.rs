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
pub mod state;
pub mod views;
pub mod workflows;

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

pub use state::{ApiConfig, AppState, Clock, Limits};

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
        // Outermost: the token lookup's connection is kept for the request's reads and
        // write (`store::db::request_scope`).
        .route_layer(axum::middleware::from_fn(one_connection))
}

/// Runs a `/v1` request in its own connection scope: the connection it gives back is kept
/// for its next statement, and handed to the next request when it ends, instead of going
/// back to the pool (and being pinged) each time.
async fn one_connection(
    req: Request<axum::body::Body>,
    next: axum::middleware::Next,
) -> axum::response::Response {
    store::db::request_scope(next.run(req)).await
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
    state.set_router(app.clone());
    app
}
