//! `Idempotency-Key` on POST (Stripe's semantics), per caller.
//!
//! A key belongs to its caller: the company, the token, and whether the token called as a
//! person (with its human proof) or as an AI caller. The same standard token without its
//! proof is another caller and never sees a person's stored answer, so a replay gives
//! nothing the caller could not get by running the request: authentication has already
//! run (the gate sits under it), and answers of person-only operations are only ever
//! stored for people.
//!
//! An answer that carries a secret shown once (a new token and its human proof) is marked
//! [`ShownOnce`] by its handler: it is never stored. Only the use of the key is kept, so
//! the same key and request again is a 409 that says so, rather than running twice.

use axum::{
    body::Body,
    extract::Request,
    http::{HeaderValue, Method, StatusCode, header},
    response::{IntoResponse, IntoResponseParts, Response, ResponseParts},
};

use super::{TxSlot, captured_body};
use crate::{AppState, auth::Caller, error::ApiError};

/// Header that makes a POST safe to retry.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Longest idempotency key accepted.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// Largest answer stored for replay.
const MAX_STORED_RESPONSE: usize = 4 * 1024 * 1024;

/// Marks an answer that carries a secret shown only once (a token and its human proof):
/// the gate never stores it for an idempotent replay. A handler adds it to its response,
/// e.g. `Ok((StatusCode::CREATED, ShownOnce, Json(created)))`.
#[derive(Debug, Clone, Copy)]
pub struct ShownOnce;

impl IntoResponseParts for ShownOnce {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut res: ResponseParts) -> Result<ResponseParts, Self::Error> {
        res.extensions_mut().insert(self);
        Ok(res)
    }
}

/// The idempotency key of the current request, whose it is, and what identifies the request.
pub(super) struct Idem {
    company_id: store::CompanyId,
    token_id: String,
    caller_kind: &'static str,
    key: String,
    hash: String,
}

impl Idem {
    fn scope(&self) -> store::idempotency::Scope<'_> {
        store::idempotency::Scope {
            company_id: &self.company_id,
            token_id: &self.token_id,
            caller_kind: self.caller_kind,
        }
    }
}

pub(super) enum Prepared {
    /// Run the request (with its key, if it has one); boxed, as a request is large.
    Run(Box<Request>, Option<Idem>),
    /// The stored answer of an earlier identical request of the same caller.
    Answered(Response),
}

/// Reads the `Idempotency-Key` of a POST: replays the caller's stored answer, refuses a
/// reused key, or lets the request run with the key to store its answer.
pub(super) async fn prepare(
    state: &AppState,
    caller: &Caller,
    req: Request,
) -> Result<Prepared, ApiError> {
    if req.method() != Method::POST {
        return Ok(Prepared::Run(Box::new(req), None));
    }
    let Some(value) = req.headers().get(IDEMPOTENCY_HEADER) else {
        return Ok(Prepared::Run(Box::new(req), None));
    };
    let key = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty() && k.len() <= MAX_IDEMPOTENCY_KEY)
        .filter(|k| k.chars().all(|c| c.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "Idempotency-Key must be 1 to {MAX_IDEMPOTENCY_KEY} printable ASCII characters \
                 without spaces (a UUID is a good choice)."
            ))
        })?
        .to_owned();
    let target = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let (parts, body) = req.into_parts();
    let bytes = captured_body(body).await?;
    let mut fingerprint = format!("POST\n{target}\n").into_bytes();
    fingerprint.extend_from_slice(&bytes);
    let idem = Idem {
        company_id: caller.company_id.clone(),
        token_id: caller.token_id.clone(),
        caller_kind: caller.kind.as_str(),
        key,
        hash: store::hash_bytes(&fingerprint),
    };
    let mut conn = state.db.acquire().await?;
    let now = state.now().timestamp_micros();
    if let Some(stored) = store::idempotency::find(&mut conn, idem.scope(), &idem.key, now).await? {
        if stored.request_hash != idem.hash {
            return Err(ApiError::Conflict(format!(
                "Idempotency-Key `{}` was already used for a different request in the last \
                 24 hours; use a new key for a new request.",
                idem.key
            )));
        }
        if !stored.replayable {
            return Err(ApiError::Conflict(format!(
                "Idempotency-Key `{}` was already used for this request, which succeeded, but \
                 its answer carried a secret shown only once and is not kept, so it cannot be \
                 sent again; list what exists (e.g. GET /v1/tokens) instead, or use a new key \
                 to run the request again.",
                idem.key
            )));
        }
        return Ok(Prepared::Answered(replay(stored)));
    }
    drop(conn);
    Ok(Prepared::Run(
        Box::new(Request::from_parts(parts, Body::from(bytes))),
        Some(idem),
    ))
}

/// A stored answer, sent again.
fn replay(stored: store::idempotency::Stored) -> Response {
    let status = u16::try_from(stored.status_code)
        .ok()
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::OK);
    let mut resp = (status, stored.response_body).into_response();
    if let Some(ct) = stored
        .content_type
        .and_then(|ct| HeaderValue::from_str(&ct).ok())
    {
        resp.headers_mut().insert(header::CONTENT_TYPE, ct);
    }
    resp.headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    resp
}

/// Stores a successful answer under the request's key, on the request's connection.
pub(super) async fn remember(
    conn: &mut sqlx::AnyConnection,
    idem: &Idem,
    stored: &store::idempotency::Stored,
    now: i64,
) -> Result<(), ApiError> {
    store::idempotency::insert(conn, idem.scope(), &idem.key, stored, now)
        .await
        .map_err(|e| {
            if store::is_unique_violation(&e) {
                ApiError::Conflict(format!(
                    "Another request with Idempotency-Key `{}` finished first; send this one \
                     again to receive its answer.",
                    idem.key
                ))
            } else {
                ApiError::from(e)
            }
        })
}

/// The record of a successful answer: the answer itself, or only the key's use when the
/// answer is [`ShownOnce`].
pub(super) fn record(
    idem: &Idem,
    status: StatusCode,
    content_type: Option<String>,
    body: Vec<u8>,
    shown_once: bool,
) -> store::idempotency::Stored {
    store::idempotency::Stored {
        request_hash: idem.hash.clone(),
        status_code: i64::from(status.as_u16()),
        content_type: if shown_once { None } else { content_type },
        replayable: !shown_once,
        response_body: if shown_once { Vec::new() } else { body },
    }
}

/// Reads the answer, stores it (or, for a [`ShownOnce`] answer, only the key's use) in the
/// request's transaction, and gives it back.
pub(super) async fn remember_in(
    state: &AppState,
    slot: &TxSlot,
    idem: &Idem,
    resp: Response,
) -> Result<Response, ApiError> {
    let shown_once = resp.extensions().get::<ShownOnce>().is_some();
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_STORED_RESPONSE)
        .await
        .map_err(|e| {
            ApiError::Internal(anyhow::anyhow!("cannot read the answer to store it: {e}"))
        })?;
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let stored = record(idem, parts.status, content_type, bytes.to_vec(), shown_once);
    {
        let mut tx = slot.open().await?;
        remember(tx.conn(), idem, &stored, state.now().timestamp_micros()).await?;
    }
    Ok(Response::from_parts(parts, Body::from(bytes)))
}
