//! The transaction every mutating request runs in, and the AI review gate over it.
//!
//! Every POST, PUT, PATCH and DELETE under `/v1` passes through [`gate`]:
//!
//! - a person's request runs inside one write transaction, committed when the
//!   handler answers 2xx and rolled back otherwise, so a failed request leaves
//!   nothing half-written;
//! - an AI caller's request runs the real handler the same way but the
//!   transaction is always rolled back (a dry run: every side effect lives in
//!   the database, jobs included, so nothing escapes). If the handler would
//!   have failed, its error is answered now and nothing is recorded; if it
//!   would have succeeded, the request is captured as a pending AI audit entry
//!   and answered `202 pending_approval`.
//!
//! Because the gate wraps routes, not handlers, no handler can forget it, and
//! a new route is gated the moment it is added.
//!
//! A POST may carry `Idempotency-Key` (Stripe's semantics): the first successful
//! answer (2xx, the AI 202 included) is stored per company in the same transaction
//! as the request's writes; within 24 hours the same key with the same method, path
//! and body gets that answer again (`Idempotent-Replayed: true`) without running
//! anything, and with a different request gets 409. Failed requests store nothing,
//! so they can be retried with the same key.

use std::sync::Arc;

use axum::{
    body::Body,
    extract::{FromRequestParts, MatchedPath, Request, State},
    http::{Method, StatusCode, request::Parts},
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde::Serialize;
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

use crate::{
    AppState,
    auth::{Caller, CallerKind},
    error::ApiError,
};

/// Header that makes a POST safe to retry.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Longest idempotency key accepted.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;
/// Largest answer stored for replay.
const MAX_STORED_RESPONSE: usize = 4 * 1024 * 1024;

/// The idempotency key of the current request and what identifies the request.
struct Idem {
    company_id: String,
    key: String,
    hash: String,
}

/// Largest body an AI caller's request may carry into the review queue (receipts are the largest).
pub const MAX_CAPTURED_BODY: usize = 11 * 1024 * 1024;

/// The write transaction of the current request, shared with its handler.
///
/// It begins lazily, on the handler's first [`Tx::conn`]: whatever a handler does before
/// (reading the body, validating it, reading from the pool) runs without holding
/// SQLite's single writer, and a request refused before that never takes it.
#[derive(Clone)]
pub struct TxSlot {
    db: store::Db,
    tx: Arc<Mutex<SlotState>>,
}

enum SlotState {
    /// Nothing written yet; the transaction begins on first use.
    NotBegun,
    Open(store::WriteTx),
    /// Committed or rolled back.
    Closed,
}

impl TxSlot {
    fn new(db: store::Db) -> Self {
        Self {
            db,
            tx: Arc::new(Mutex::new(SlotState::NotBegun)),
        }
    }

    async fn take(&self) -> Option<store::WriteTx> {
        match std::mem::replace(&mut *self.tx.lock().await, SlotState::Closed) {
            SlotState::Open(tx) => Some(tx),
            SlotState::NotBegun | SlotState::Closed => None,
        }
    }

    /// The open transaction, begun now if this is its first use.
    async fn open(&self) -> Result<MappedMutexGuard<'_, store::WriteTx>, ApiError> {
        let mut guard = self.tx.lock().await;
        if matches!(*guard, SlotState::NotBegun) {
            *guard = SlotState::Open(self.db.begin_write().await?);
        }
        MutexGuard::try_map(guard, |state| match state {
            SlotState::Open(tx) => Some(tx),
            SlotState::NotBegun | SlotState::Closed => None,
        })
        .map_err(|_| ApiError::Internal(anyhow::anyhow!("the request transaction is closed")))
    }

    /// Commits the transaction (once; nothing to do if it never began); a failure is an
    /// internal error.
    async fn commit(&self) -> Result<(), ApiError> {
        match self.take().await {
            Some(tx) => tx.commit().await.map_err(ApiError::from),
            None => Ok(()),
        }
    }

    async fn rollback(&self) {
        if let Some(tx) = self.take().await
            && let Err(e) = tx.rollback().await
        {
            tracing::warn!(error = %e, "rollback failed");
        }
    }
}

/// Handler access to the request's write transaction.
pub struct Tx(TxSlot);

impl Tx {
    /// Locks the transaction's connection for the next statements.
    /// The first call begins the transaction (on SQLite: takes the single writer).
    pub async fn conn(&self) -> Result<MappedMutexGuard<'_, sqlx::AnyConnection>, ApiError> {
        Ok(MappedMutexGuard::map(
            self.0.open().await?,
            store::WriteTx::conn,
        ))
    }

    /// The shared slot, to hand the same transaction to a replayed request.
    pub(crate) fn slot(&self) -> TxSlot {
        self.0.clone()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Tx {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<TxSlot>()
            .cloned()
            .map(Tx)
            .ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!(
                    "handler asked for a transaction on a route outside the gate"
                ))
            })
    }
}

/// Marks a request replayed by an approval: it runs in the approver's transaction.
#[derive(Clone)]
pub(crate) struct Replay;

/// The 202 body answered to AI callers.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PendingApproval {
    /// Always `pending_approval`.
    pub error: String,
    /// What happens next, in words.
    pub message: String,
    /// Id of the AI audit entry a person must approve.
    #[serde(rename = "auditEntryId")]
    pub audit_entry_id: String,
}

/// Whether a method changes data.
pub fn is_mutating(method: &Method) -> bool {
    matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

/// POST routes that only compute and never write: answered directly for every caller.
pub const READ_ONLY_POSTS: &[&str] = &["/v1/taxes/prefill"];

/// The gate middleware; see the module docs.
pub async fn gate(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let read_only = req
        .extensions()
        .get::<MatchedPath>()
        .is_some_and(|p| READ_ONLY_POSTS.contains(&p.as_str()));
    if !is_mutating(req.method()) || read_only || req.extensions().get::<Replay>().is_some() {
        return next.run(req).await;
    }
    let Some(caller) = req.extensions().get::<Caller>().cloned() else {
        return ApiError::Unauthorized("Missing bearer token.").into_response();
    };
    let (req, idem) = match idempotency(&state, &caller, req).await {
        Ok(Prepared::Run(req, idem)) => (req, idem),
        Ok(Prepared::Answered(resp)) => return resp,
        Err(e) => return e.into_response(),
    };
    match caller.kind {
        CallerKind::Human => run_in_tx(&state, req, next, true, idem.as_ref()).await,
        CallerKind::Ai => hold_for_review(&state, caller, req, next, idem.as_ref())
            .await
            .unwrap_or_else(IntoResponse::into_response),
    }
}

enum Prepared {
    /// Run the request (with its key, if it has one).
    Run(Request, Option<Idem>),
    /// The stored answer of an earlier identical request.
    Answered(Response),
}

/// Reads the `Idempotency-Key` of a POST: replays a stored answer, refuses a reused key,
/// or lets the request run with the key to store its answer.
async fn idempotency(
    state: &AppState,
    caller: &Caller,
    req: Request,
) -> Result<Prepared, ApiError> {
    if req.method() != Method::POST {
        return Ok(Prepared::Run(req, None));
    }
    let Some(value) = req.headers().get(IDEMPOTENCY_HEADER) else {
        return Ok(Prepared::Run(req, None));
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
    let bytes = axum::body::to_bytes(body, MAX_CAPTURED_BODY)
        .await
        .map_err(|_| {
            ApiError::PayloadTooLarge(format!(
                "The request body is larger than {} MiB.",
                MAX_CAPTURED_BODY / (1024 * 1024)
            ))
        })?;
    let mut fingerprint = format!("POST\n{target}\n").into_bytes();
    fingerprint.extend_from_slice(&bytes);
    let hash = store::hash_bytes(&fingerprint);
    let mut conn = state.db.pool().acquire().await?;
    let now = state.now().timestamp_micros();
    if let Some(stored) = store::idempotency::find(&mut conn, &caller.company_id, &key, now).await?
    {
        if stored.request_hash != hash {
            return Err(ApiError::Conflict(format!(
                "Idempotency-Key `{key}` was already used for a different request in the last \
                 24 hours; use a new key for a new request."
            )));
        }
        return Ok(Prepared::Answered(replay(stored)));
    }
    drop(conn);
    Ok(Prepared::Run(
        Request::from_parts(parts, Body::from(bytes)),
        Some(Idem {
            company_id: caller.company_id.clone(),
            key,
            hash,
        }),
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
        .and_then(|ct| axum::http::HeaderValue::from_str(&ct).ok())
    {
        resp.headers_mut()
            .insert(axum::http::header::CONTENT_TYPE, ct);
    }
    resp.headers_mut().insert(
        "idempotent-replayed",
        axum::http::HeaderValue::from_static("true"),
    );
    resp
}

/// Stores a successful answer under the request's key, on the request's connection.
async fn remember(
    conn: &mut sqlx::AnyConnection,
    idem: &Idem,
    status: StatusCode,
    content_type: Option<String>,
    body: Vec<u8>,
    now: i64,
) -> Result<(), ApiError> {
    let stored = store::idempotency::Stored {
        request_hash: idem.hash.clone(),
        status_code: i64::from(status.as_u16()),
        content_type,
        response_body: body,
    };
    store::idempotency::insert(conn, &idem.company_id, &idem.key, &stored, now)
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

/// Runs the rest of the stack in a fresh write transaction; commits on 2xx if `commit`
/// (storing the answer under the idempotency key first, when there is one).
async fn run_in_tx(
    state: &AppState,
    mut req: Request,
    next: Next,
    commit: bool,
    idem: Option<&Idem>,
) -> Response {
    let slot = TxSlot::new(state.db.clone());
    req.extensions_mut().insert(slot.clone());
    let mut resp = next.run(req).await;
    if commit && resp.status().is_success() {
        if let Some(idem) = idem {
            match remember_in(state, &slot, idem, resp).await {
                Ok(kept) => resp = kept,
                Err(e) => {
                    slot.rollback().await;
                    return e.into_response();
                }
            }
        }
        if let Err(e) = slot.commit().await {
            return e.into_response();
        }
    } else {
        slot.rollback().await;
    }
    resp
}

/// Reads the answer, stores it in the request's transaction, and gives it back.
async fn remember_in(
    state: &AppState,
    slot: &TxSlot,
    idem: &Idem,
    resp: Response,
) -> Result<Response, ApiError> {
    let (parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_STORED_RESPONSE)
        .await
        .map_err(|e| {
            ApiError::Internal(anyhow::anyhow!("cannot read the answer to store it: {e}"))
        })?;
    let content_type = parts
        .headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    {
        let mut tx = slot.open().await?;
        remember(
            tx.conn(),
            idem,
            parts.status,
            content_type,
            bytes.to_vec(),
            state.now().timestamp_micros(),
        )
        .await?;
    }
    Ok(Response::from_parts(parts, Body::from(bytes)))
}

async fn hold_for_review(
    state: &AppState,
    caller: Caller,
    req: Request,
    next: Next,
    idem: Option<&Idem>,
) -> Result<Response, ApiError> {
    let action = action_label(
        req.method(),
        req.extensions()
            .get::<MatchedPath>()
            .map_or("/unknown", MatchedPath::as_str),
    );
    let method = req.method().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| req.uri().path().to_owned());
    let content_type = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_CAPTURED_BODY)
        .await
        .map_err(|_| {
            ApiError::PayloadTooLarge(format!(
                "The request body is larger than {} MiB.",
                MAX_CAPTURED_BODY / (1024 * 1024)
            ))
        })?;
    let request_body = capture_body(&bytes, content_type.as_deref())?;

    // Dry run: the real handler, in a transaction that is always rolled back.
    let dry = Request::from_parts(parts, Body::from(bytes));
    let resp = run_in_tx(state, dry, next, false, None).await;
    if !resp.status().is_success() {
        return Ok(resp);
    }

    let mut tx = state.db.begin_write().await?;
    let id = store::audit::insert(
        tx.conn(),
        &caller.company_id,
        &store::audit::NewEntry {
            user_id: &caller.user_id,
            token_id: &caller.token_id,
            source: caller.source.as_str(),
            action: &action,
            http_method: &method,
            http_path: &path,
            request_body: request_body.as_deref(),
            content_type: content_type.as_deref(),
        },
    )
    .await?;
    let pending = PendingApproval {
        error: "pending_approval".into(),
        message: format!(
            "This request was made by an AI caller and is held for review: a person must \
             approve AI audit entry {id} (POST /v1/ai-audit/{id}/approve) before it runs."
        ),
        audit_entry_id: id.clone(),
    };
    if let Some(idem) = idem {
        let body = serde_json::to_vec(&pending)
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("cannot encode the answer: {e}")))?;
        remember(
            tx.conn(),
            idem,
            StatusCode::ACCEPTED,
            Some("application/json".into()),
            body,
            state.now().timestamp_micros(),
        )
        .await?;
    }
    tx.commit().await?;
    tracing::info!(audit_entry_id = %id, %action, "AI request held for approval");
    Ok((StatusCode::ACCEPTED, axum::Json(pending)).into_response())
}

/// Keeps a JSON body as text; any other body (a receipt file) as base64.
fn capture_body(bytes: &[u8], content_type: Option<&str>) -> Result<Option<String>, ApiError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let is_json = content_type.is_none_or(|ct| ct.contains("json"));
    if is_json && let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(Some(text.to_owned()));
    }
    use base64::Engine;
    Ok(Some(format!(
        "base64:{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )))
}

/// Decodes a captured body back into bytes for the replay.
pub(crate) fn restore_body(captured: Option<&str>) -> Vec<u8> {
    use base64::Engine;
    match captured {
        None => Vec::new(),
        Some(text) => match text.strip_prefix("base64:") {
            Some(b64) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .unwrap_or_default(),
            None => text.as_bytes().to_vec(),
        },
    }
}

/// The `resource.verb` label of a route, e.g. `invoices.create`, `invoices.issue`,
/// `bank_accounts.snapshots_delete`.
///
/// The resource is the first segment after `/v1`. The verb is the action named
/// by a trailing static segment of a POST (`issue`, `approve`), otherwise the
/// method's verb (`create`, `update`, `replace`, `delete`), prefixed by any
/// sub-resource segments.
pub fn action_label(method: &Method, path: &str) -> String {
    let segments: Vec<&str> = path
        .trim_start_matches('/')
        .split('/')
        .filter(|s| !s.is_empty() && *s != "v1")
        .collect();
    let resource = segments
        .first()
        .copied()
        .unwrap_or("unknown")
        .replace('-', "_");
    let statics: Vec<String> = segments
        .iter()
        .skip(1)
        .filter(|s| !s.starts_with('{'))
        .map(|s| s.replace('-', "_"))
        .collect();
    let ends_static = segments.len() > 1 && !segments.last().is_some_and(|s| s.starts_with('{'));
    let method_verb = match *method {
        Method::POST => "create",
        Method::PATCH => "update",
        Method::PUT => "replace",
        Method::DELETE => "delete",
        _ => "read",
    };
    let verb = if statics.is_empty() {
        method_verb.to_owned()
    } else if ends_static && *method == Method::POST {
        statics.join("_")
    } else {
        format!("{}_{method_verb}", statics.join("_"))
    };
    format!("{resource}.{verb}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_actions() {
        let cases = [
            (Method::POST, "/v1/invoices", "invoices.create"),
            (Method::PATCH, "/v1/invoices/{id}", "invoices.update"),
            (Method::DELETE, "/v1/invoices/{id}", "invoices.delete"),
            (Method::POST, "/v1/invoices/{id}/issue", "invoices.issue"),
            (
                Method::POST,
                "/v1/invoices/bulk/issue",
                "invoices.bulk_issue",
            ),
            (
                Method::PUT,
                "/v1/expenses/{id}/receipt",
                "expenses.receipt_replace",
            ),
            (
                Method::POST,
                "/v1/bank-accounts/{id}/snapshots",
                "bank_accounts.snapshots",
            ),
            (
                Method::DELETE,
                "/v1/bank-accounts/{id}/snapshots/{sid}",
                "bank_accounts.snapshots_delete",
            ),
            (Method::PATCH, "/v1/company", "company.update"),
            (
                Method::POST,
                "/v1/company/registration",
                "company.registration",
            ),
        ];
        for (m, p, want) in cases {
            assert_eq!(action_label(&m, p), want, "{m} {p}");
        }
    }

    #[test]
    fn capture_round_trips_binary_and_json() {
        let json = capture_body(b"{\"a\":1}", Some("application/json")).unwrap();
        assert_eq!(json.as_deref(), Some("{\"a\":1}"));
        let bin = capture_body(&[0xff, 0x00, 0x25], Some("application/pdf")).unwrap();
        assert_eq!(restore_body(bin.as_deref()), vec![0xff, 0x00, 0x25]);
        assert_eq!(capture_body(b"", None).unwrap(), None);
    }
}
