//! An AI caller's mutating request: validated by a dry run, then held in the review queue.
//!
//! The queue is bounded: per token and per company, at most so many pending entries and
//! so many bytes of held bodies ([`QueueLimits`]); past a cap the request is refused with
//! `429` until a person approves or rejects some. A pending entry expires after
//! [`QueueLimits::ttl_days`]. A held body is kept once: a small JSON body inline in the
//! entry, any other (a receipt upload) as a file through the storage layer, raw bytes.

use axum::{
    body::Body,
    extract::{MatchedPath, Request},
    http::StatusCode,
    middleware::Next,
    response::{IntoResponse, Response},
};
use serde::Serialize;
use store::files::FileStore as _;

use super::{action_label, captured_body, idempotency, run_in_tx};
use crate::{AppState, auth::Caller, error::ApiError};

/// Largest JSON body kept inline in its audit entry; larger or binary bodies are files.
pub const MAX_INLINE_BODY: usize = 64 * 1024;

/// Seconds an AI caller is told to wait when the review queue is full.
const QUEUE_FULL_RETRY_SECS: u64 = 60;

/// Caps on the review queue and how long an entry waits (`INVOICING_AI_PENDING_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    /// Pending entries per company (`INVOICING_AI_PENDING_MAX_ENTRIES`).
    pub max_entries: i64,
    /// Bytes of pending bodies per company (`INVOICING_AI_PENDING_MAX_BYTES`).
    pub max_bytes: i64,
    /// Pending entries per token (`INVOICING_AI_PENDING_MAX_ENTRIES_PER_TOKEN`).
    pub max_entries_per_token: i64,
    /// Bytes of pending bodies per token (`INVOICING_AI_PENDING_MAX_BYTES_PER_TOKEN`).
    pub max_bytes_per_token: i64,
    /// Days a pending entry waits before it expires (`INVOICING_AI_PENDING_TTL_DAYS`).
    pub ttl_days: i64,
}

impl Default for QueueLimits {
    fn default() -> Self {
        Self {
            max_entries: 500,
            max_bytes: 512 * 1024 * 1024,
            max_entries_per_token: 100,
            max_bytes_per_token: 128 * 1024 * 1024,
            ttl_days: 14,
        }
    }
}

impl QueueLimits {
    /// How long a pending entry waits, in microseconds.
    pub fn ttl_micros(&self) -> i64 {
        self.ttl_days.saturating_mul(24 * 3600 * 1_000_000)
    }

    /// Refuses one more entry of `size` bytes when it would pass a cap.
    fn admit(&self, load: &store::audit::PendingLoad, size: i64) -> Result<(), ApiError> {
        let mib = |b: i64| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0));
        let full =
            |whose: &str, entries: i64, bytes: i64, limit: String| ApiError::TooManyRequests {
                message: format!(
                    "The review queue is full for {whose}: {entries} requests ({}) are waiting \
                     for a person, and the limit is {limit}. A person must approve or reject \
                     some of them first (GET /v1/ai-audit?status=pending, or the web app's \
                     review page); then send this request again.",
                    mib(bytes)
                ),
                retry_after_secs: QUEUE_FULL_RETRY_SECS,
            };
        if load.token_entries + 1 > self.max_entries_per_token
            || load.token_bytes + size > self.max_bytes_per_token
        {
            return Err(full(
                "this token",
                load.token_entries,
                load.token_bytes,
                format!(
                    "{} requests or {} per token",
                    self.max_entries_per_token,
                    mib(self.max_bytes_per_token)
                ),
            ));
        }
        if load.company_entries + 1 > self.max_entries || load.company_bytes + size > self.max_bytes
        {
            return Err(full(
                "this company",
                load.company_entries,
                load.company_bytes,
                format!(
                    "{} requests or {} per company",
                    self.max_entries,
                    mib(self.max_bytes)
                ),
            ));
        }
        Ok(())
    }
}

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

/// What is captured of the request besides its body.
struct Captured {
    action: String,
    method: String,
    path: String,
    content_type: Option<String>,
}

impl Captured {
    fn of(req: &Request) -> Self {
        Self {
            action: action_label(
                req.method(),
                req.extensions()
                    .get::<MatchedPath>()
                    .map_or("/unknown", MatchedPath::as_str),
            ),
            method: req.method().to_string(),
            path: req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_owned())
                .unwrap_or_else(|| req.uri().path().to_owned()),
            content_type: req
                .headers()
                .get(axum::http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        }
    }
}

/// Runs the request as a dry run and, when it would succeed, holds it for review.
pub(super) async fn hold_for_review(
    state: &AppState,
    caller: Caller,
    req: Request,
    next: Next,
    idem: Option<&idempotency::Idem>,
) -> Result<Response, ApiError> {
    let captured = Captured::of(&req);
    let (parts, body) = req.into_parts();
    let bytes = captured_body(body).await?;
    let size = i64::try_from(bytes.len()).unwrap_or(i64::MAX);
    let limits = state.config.ai_queue;

    // A full queue is refused before the dry run does any work; checked again, exactly,
    // under the company's lock when the entry is written.
    {
        let mut conn = state.db.acquire().await?;
        let now = state.now().timestamp_micros();
        let load = store::audit::pending_load(&mut conn, &caller.company_id, &caller.token_id, now)
            .await?;
        limits.admit(&load, size)?;
    }

    // Dry run: the real handler, in a transaction that is always rolled back.
    let dry = Request::from_parts(parts, Body::from(bytes.clone()));
    let resp = run_in_tx(state, dry, next, false, None).await;
    if !resp.status().is_success() {
        return Ok(resp);
    }

    let now = state.now().timestamp_micros();
    let mut tx = state.db.begin_write().await?;
    let conn = tx.conn();
    // Concurrent holds of one company queue here, so the caps hold exactly.
    store::members::lock_company(conn, &caller.company_id).await?;
    let files = state.db.files();
    // Entries past their time are expired here too, so the queue keeps its bounds
    // without the worker's daily sweep.
    for (company, file) in store::audit::expire_due(conn, Some(&caller.company_id), now).await? {
        files.delete(conn, &company, &file).await?;
    }
    let load = store::audit::pending_load(conn, &caller.company_id, &caller.token_id, now).await?;
    limits.admit(&load, size)?;
    let inline = inline_json(&bytes, captured.content_type.as_deref());
    let file_id = match (inline, bytes.is_empty()) {
        (Some(_), _) | (None, true) => None,
        (None, false) => Some(
            files
                .put(
                    conn,
                    &caller.company_id,
                    captured
                        .content_type
                        .as_deref()
                        .unwrap_or("application/octet-stream"),
                    &bytes,
                )
                .await?,
        ),
    };
    let body = match (inline, file_id.as_deref()) {
        (Some(text), _) => store::audit::NewBody::Inline(text),
        (None, Some(file)) => store::audit::NewBody::File(file),
        (None, None) => store::audit::NewBody::None,
    };
    let id = store::audit::insert(
        conn,
        &caller.company_id,
        &store::audit::NewEntry {
            user_id: &caller.user_id,
            token_id: &caller.token_id,
            source: caller.source.as_str(),
            action: &captured.action,
            http_method: &captured.method,
            http_path: &captured.path,
            body,
            body_size: size,
            content_type: captured.content_type.as_deref(),
            created_at: now,
            expires_at: now.saturating_add(limits.ttl_micros()),
        },
    )
    .await?;
    crate::routes::webhooks::emit_audit(conn, &caller.company_id, "ai_audit.pending", &id, now)
        .await?;
    let pending = PendingApproval {
        error: "pending_approval".into(),
        message: format!(
            "This request was made by an AI caller and is held for review: a person must \
             approve AI audit entry {id} (POST /v1/ai-audit/{id}/approve) within {} days, \
             before it runs.",
            limits.ttl_days
        ),
        audit_entry_id: id.clone(),
    };
    if let Some(idem) = idem {
        let body = serde_json::to_vec(&pending)
            .map_err(|e| ApiError::Internal(anyhow::anyhow!("cannot encode the answer: {e}")))?;
        let stored = idempotency::record(
            idem,
            StatusCode::ACCEPTED,
            Some("application/json".into()),
            body,
            false,
        );
        idempotency::remember(tx.conn(), idem, &stored, now).await?;
    }
    tx.commit().await?;
    tracing::info!(audit_entry_id = %id, action = %captured.action, "AI request held for approval");
    Ok((StatusCode::ACCEPTED, axum::Json(pending)).into_response())
}

/// The body as text when it is a small JSON body kept inline in its entry.
fn inline_json<'a>(bytes: &'a [u8], content_type: Option<&str>) -> Option<&'a str> {
    let is_json = content_type.is_none_or(|ct| ct.contains("json"));
    if bytes.is_empty() || !is_json || bytes.len() > MAX_INLINE_BODY {
        return None;
    }
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_small_json_bodies_stay_inline() {
        assert_eq!(
            inline_json(b"{\"a\":1}", Some("application/json")),
            Some("{\"a\":1}")
        );
        assert_eq!(inline_json(b"{\"a\":1}", None), Some("{\"a\":1}"));
        assert_eq!(inline_json(b"%PDF-1.7", Some("application/pdf")), None);
        assert_eq!(inline_json(&[0xff, 0xfe], Some("application/json")), None);
        assert_eq!(inline_json(b"", Some("application/json")), None);
        let big = vec![b' '; MAX_INLINE_BODY + 1];
        assert_eq!(inline_json(&big, Some("application/json")), None);
    }

    #[test]
    fn caps_count_this_request() {
        let limits = QueueLimits {
            max_entries: 3,
            max_bytes: 100,
            max_entries_per_token: 2,
            max_bytes_per_token: 50,
            ttl_days: 1,
        };
        let load = |ce, cb, te, tb| store::audit::PendingLoad {
            company_entries: ce,
            company_bytes: cb,
            token_entries: te,
            token_bytes: tb,
        };
        assert!(limits.admit(&load(0, 0, 0, 0), 50).is_ok());
        assert!(limits.admit(&load(1, 10, 1, 10), 40).is_ok());
        assert!(
            limits.admit(&load(1, 10, 2, 10), 1).is_err(),
            "token entries"
        );
        assert!(
            limits.admit(&load(1, 10, 1, 10), 41).is_err(),
            "token bytes"
        );
        assert!(
            limits.admit(&load(3, 10, 0, 0), 1).is_err(),
            "company entries"
        );
        assert!(
            limits.admit(&load(2, 90, 0, 0), 11).is_err(),
            "company bytes"
        );
    }
}
