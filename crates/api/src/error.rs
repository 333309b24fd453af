//! The one error type of the API and how each kind is answered.
//!
//! Bodies follow the spec: plain text saying what to fix for 400/401/404/409/413,
//! JSON `{"error","message","requiresAuthorizationUrl"?}` for a 403 that asks
//! for an action. Internal errors are logged once and never shown. Every `429` and `503`
//! carries `Retry-After` (whole seconds).

use axum::{
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Serialize;

use crate::workflows::AppError;

/// Everything a handler can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(&'static str),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    #[error("{message}")]
    Forbidden {
        code: &'static str,
        message: String,
        authorization_url: Option<String>,
    },
    /// A 503 with `Retry-After` [`DEFAULT_RETRY_AFTER_SECS`].
    #[error("service unavailable: {0}")]
    Unavailable(String),
    /// A 503 with a given `Retry-After`.
    #[error("service unavailable: {message}")]
    UnavailableFor {
        message: String,
        retry_after_secs: u64,
    },
    /// A 429: the caller (or its company) has too much under way; `Retry-After` says when
    /// to try again.
    #[error("{message}")]
    TooManyRequests {
        message: String,
        retry_after_secs: u64,
    },
    #[error("internal error: {0:#}")]
    Internal(anyhow::Error),
}

/// `Retry-After` of a 503 that names no other delay.
pub const DEFAULT_RETRY_AFTER_SECS: u64 = 5;

/// JSON body of a 403 that asks the caller to do something first.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ActionRequired {
    /// Machine-readable code, e.g. `company_not_settled`, `agreement_required`, `human_required`.
    pub error: String,
    /// What the caller must do, in words.
    pub message: String,
    /// Path of the page where the required action is done.
    #[serde(
        rename = "requiresAuthorizationUrl",
        skip_serializing_if = "Option::is_none"
    )]
    pub requires_authorization_url: Option<String>,
}

impl ApiError {
    /// A 400 with the given explanation.
    pub fn bad_request(msg: impl Into<String>) -> Self {
        Self::BadRequest(msg.into())
    }

    /// A 404 naming what was not found.
    pub fn not_found(what: &str) -> Self {
        Self::NotFound(format!("{what} not found"))
    }

    /// The 403 answered to AI callers of operations only a person may perform.
    pub fn human_required() -> Self {
        Self::Forbidden {
            code: "human_required",
            message: "Only a person can do this: send the request with a standard token and its \
                      X-Human-Proof header."
                .into(),
            authorization_url: None,
        }
    }

    /// The 403 answered while the company has not completed its registration.
    pub fn company_not_settled() -> Self {
        Self::Forbidden {
            code: "company_not_settled",
            message: "Complete the company registration first (POST /v1/company/registration)."
                .into(),
            authorization_url: None,
        }
    }

    /// The 403 answered while the user has not accepted the current legal documents.
    pub fn agreement_required() -> Self {
        Self::Forbidden {
            code: "agreement_required",
            message: "Accept the current legal documents first (GET /v1/agreements, then POST \
                      /v1/agreements/{id}/accept for each one not yet accepted)."
                .into(),
            authorization_url: None,
        }
    }

    /// The 503 of a render that found no slot within the wait ([`crate::render_gate`]).
    pub(crate) fn render_busy(busy: crate::render_gate::Busy) -> Self {
        let secs = busy.waited.as_secs().max(1);
        Self::UnavailableFor {
            message: format!(
                "Every render slot this company may use stayed busy for {secs} s (a company may \
                 hold only a share of them); try again in {secs} s."
            ),
            retry_after_secs: secs,
        }
    }

    fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Conflict(_) => StatusCode::CONFLICT,
            Self::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::Unavailable(_) | Self::UnavailableFor { .. } => StatusCode::SERVICE_UNAVAILABLE,
            Self::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<AppError> for ApiError {
    /// How the API answers each failure of a workflow (the one place it is decided).
    fn from(e: AppError) -> Self {
        match e {
            AppError::Invalid(m) => Self::BadRequest(m),
            AppError::NotFound(m) => Self::NotFound(m),
            AppError::Conflict(m) => Self::Conflict(m),
            AppError::Refused {
                code,
                message,
                authorization_url,
            } => Self::Forbidden {
                code,
                message,
                authorization_url,
            },
            AppError::Busy {
                message,
                retry_after_secs,
            } => Self::TooManyRequests {
                message,
                retry_after_secs,
            },
            AppError::Unavailable(m) => Self::Unavailable(m),
            AppError::Internal(e) => Self::Internal(e),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    /// A lost or unobtainable database connection is a `503` with `Retry-After` (the
    /// request did not happen and may be sent again); anything else is an internal error.
    fn from(e: sqlx::Error) -> Self {
        AppError::from(e).into()
    }
}

impl From<anyhow::Error> for ApiError {
    /// As for [`sqlx::Error`], also when a store error wraps a lost connection.
    fn from(e: anyhow::Error) -> Self {
        AppError::from(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        match self {
            Self::Forbidden {
                code,
                message,
                authorization_url,
            } => {
                let body = ActionRequired {
                    error: code.to_owned(),
                    message,
                    requires_authorization_url: authorization_url,
                };
                (status, axum::Json(body)).into_response()
            }
            Self::Internal(err) => {
                // Logged once here, inside the request span that carries the request id.
                tracing::error!(error = format!("{err:#}"), "internal error");
                plain(
                    status,
                    "Internal server error. Quote the X-Request-Id header of this response when \
                     reporting it."
                        .to_owned(),
                )
            }
            Self::Unauthorized(msg) => {
                let mut resp = plain(status, msg.to_owned());
                resp.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                resp
            }
            Self::Unavailable(m) => retry_after(plain(status, m), DEFAULT_RETRY_AFTER_SECS),
            Self::UnavailableFor {
                message,
                retry_after_secs,
            }
            | Self::TooManyRequests {
                message,
                retry_after_secs,
            } => retry_after(plain(status, message), retry_after_secs),
            Self::BadRequest(m)
            | Self::NotFound(m)
            | Self::Conflict(m)
            | Self::PayloadTooLarge(m) => plain(status, m),
        }
    }
}

/// A `text/plain` response.
pub fn plain(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// Adds `Retry-After: secs` (at least 1).
fn retry_after(mut resp: Response, secs: u64) -> Response {
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs.max(1)));
    resp
}

/// Result alias for handlers.
pub type ApiResult<T> = Result<T, ApiError>;
