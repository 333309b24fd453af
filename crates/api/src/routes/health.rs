//! Liveness and readiness probes (no authentication).

use axum::{extract::State, http::StatusCode};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{AppState, error::plain};

/// The unauthenticated probe routes.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "Alive", body = String, content_type = "text/plain")))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// The database answers.
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "Ready", body = String, content_type = "text/plain"),
        (status = 503, description = "The database does not answer", body = String, content_type = "text/plain")))]
pub async fn readyz(State(state): State<AppState>) -> axum::response::Response {
    match sqlx::query_scalar::<_, i64>("SELECT 1")
        .fetch_one(state.db.pool())
        .await
    {
        Ok(_) => plain(StatusCode::OK, "ready".into()),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "The database does not answer.".into(),
            )
        }
    }
}
