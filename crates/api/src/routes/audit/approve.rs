//! Approving an entry: the captured request replayed through the same router.
//!
//! The replay runs as the original token's user and company, inside the approver's
//! transaction and behind a savepoint: a replay that fails is rolled back to the
//! savepoint and the entry becomes `failed` with the error text, so nothing is
//! half-written. A request whose token was revoked since, or whose user is no longer an
//! active member, is not replayed at all: the entry becomes `failed` saying so.

use axum::{
    Json,
    body::Body,
    extract::{Path, State},
    http::{Request, header},
};
use sqlx::Executor;
use tower::ServiceExt;

use super::{AiAuditEntry, body_bytes, claim, drop_body};
use crate::{
    AppState,
    auth::{Caller, CallerKind, Source, TrustedCaller},
    error::{ApiError, ApiResult},
    gate::{Replay, Tx},
};

/// Approves a pending entry and runs it now. Human only; acts once (409 after, and for an
/// expired entry).
#[utoipa::path(post, path = "/v1/ai-audit/{id}/approve", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, description = "Approved and replayed: status is `approved` (with resourceId) or `failed` (with errorMessage; also when the token that asked was revoked since)", body = AiAuditEntry),
        (status = 409, description = "Already reviewed, or expired", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn approve_entry(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<AiAuditEntry>> {
    caller.require_human()?;
    let now = state.now().timestamp_micros();
    let entry = claim(&tx, &caller, &id, "approved", now).await?;

    // The replay skips authentication (it is trusted, in process), so whether the token
    // could still act is checked here: approving must not revive a revoked token.
    let standing = {
        let mut conn = tx.conn().await?;
        store::tokens::standing(&mut conn, &entry.company_id, &entry.token_id, now).await?
    };
    let refusal = match standing {
        store::tokens::Standing::Active => None,
        store::tokens::Standing::Revoked => Some(
            "Not run: the API token that asked for this request has been revoked since, so \
             what it asked for can no longer be approved; nothing was changed.",
        ),
        store::tokens::Standing::MemberInactive => Some(
            "Not run: the user whose token asked for this request is no longer an active \
             member of the company, so what it asked for can no longer be approved; nothing \
             was changed.",
        ),
    };
    if let Some(message) = refusal {
        let mut conn = tx.conn().await?;
        tracing::info!(audit_entry_id = %id, "approved AI request refused: its token can no longer act");
        store::audit::record_outcome(
            &mut conn,
            &caller.company_id,
            &id,
            "failed",
            None,
            Some(message),
        )
        .await?;
        drop_body(&state, &mut conn, &entry).await?;
        crate::routes::webhooks::emit_audit(
            &mut conn,
            &caller.company_id,
            "ai_audit.failed",
            &id,
            now,
        )
        .await?;
        return reread(&mut conn, &caller, &id, now).await;
    }

    let body = {
        let mut conn = tx.conn().await?;
        body_bytes(&state, &mut conn, &entry)
            .await?
            .unwrap_or_default()
    };
    let router = state.router()?;
    tx.conn().await?.execute("SAVEPOINT ai_replay").await?;

    let replayed = Caller {
        company_id: entry.company_id.clone(),
        user_id: entry.user_id.clone(),
        token_id: entry.token_id.clone(),
        kind: CallerKind::Human,
        source: if entry.source == "mcp" {
            Source::Mcp
        } else {
            Source::Api
        },
        // The entry belongs to the approver's company (claim checks it).
        language: caller.language,
    };
    let mut req = Request::builder()
        .method(entry.http_method.as_str())
        .uri(entry.http_path.as_str())
        .header(
            header::CONTENT_TYPE,
            entry.content_type.as_deref().unwrap_or("application/json"),
        )
        .body(Body::from(body))
        .map_err(|e| ApiError::Internal(e.into()))?;
    req.extensions_mut().insert(TrustedCaller(replayed));
    req.extensions_mut().insert(Replay);
    req.extensions_mut().insert(tx.slot());
    let resp = router
        .oneshot(req)
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("replay failed: {e:?}")))?;
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), 16 * 1024 * 1024)
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("replay body: {e}")))?;

    let mut conn = tx.conn().await?;
    if status.is_success() {
        conn.execute("RELEASE SAVEPOINT ai_replay").await?;
        let resource_id = resource_id(&body, &entry.http_path);
        store::audit::record_outcome(
            &mut conn,
            &caller.company_id,
            &id,
            "approved",
            resource_id.as_deref(),
            None,
        )
        .await?;
    } else {
        conn.execute("ROLLBACK TO SAVEPOINT ai_replay").await?;
        conn.execute("RELEASE SAVEPOINT ai_replay").await?;
        let message = error_text(status, &body);
        tracing::info!(audit_entry_id = %id, %status, "approved AI request failed on replay");
        store::audit::record_outcome(
            &mut conn,
            &caller.company_id,
            &id,
            "failed",
            None,
            Some(&message),
        )
        .await?;
    }
    drop_body(&state, &mut conn, &entry).await?;
    let event = if status.is_success() {
        "ai_audit.approved"
    } else {
        "ai_audit.failed"
    };
    crate::routes::webhooks::emit_audit(&mut conn, &caller.company_id, event, &id, now).await?;
    reread(&mut conn, &caller, &id, now).await
}

async fn reread(
    conn: &mut sqlx::AnyConnection,
    caller: &Caller,
    id: &str,
    now: i64,
) -> ApiResult<Json<AiAuditEntry>> {
    let row = store::audit::get(conn, &caller.company_id, id, now)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    let body = if row.body_kind == "inline" {
        store::audit::inline_body(conn, &caller.company_id, id).await?
    } else {
        None
    };
    Ok(Json(AiAuditEntry::of(row, body)?))
}

/// The id of what the replay created or affected: the `id` of a JSON answer,
/// else the last id in the path.
fn resource_id(body: &[u8], path: &str) -> Option<String> {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("id").and_then(|id| id.as_str()).map(str::to_owned))
        .or_else(|| {
            path.split(['/', '?'])
                .rfind(|s| uuid::Uuid::parse_str(s).is_ok())
                .map(str::to_owned)
        })
}

/// The error text of a failed replay: the plain-text body, or a JSON `message`.
fn error_text(status: axum::http::StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let msg = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
        .unwrap_or_else(|| text.trim().to_owned());
    format!(
        "{} {}: {msg}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    )
}
