//! The AI review queue (`/v1/ai-audit`): list, inspect, approve, reject.
//!
//! Approval replays the captured request through the same router, as the
//! original token's user and company, inside the approver's transaction and
//! behind a savepoint: a replay that fails is rolled back to the savepoint and
//! the entry becomes `failed` with the error text, so nothing is half-written.

use axum::{
    Json,
    body::Body,
    extract::{Path, Query, State},
    http::{Request, header},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::Executor;
use tower::ServiceExt;

use crate::{
    AppState,
    auth::{Caller, CallerKind, DbConn, Source, TrustedCaller},
    error::{ApiError, ApiResult},
    gate::{Replay, Tx, restore_body},
    pagination::{ListParams, Page},
    views::ts,
};

/// A request of an AI caller and what became of it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AiAuditEntry {
    pub id: String,
    /// `api` or `mcp`.
    pub source: String,
    /// `resource.verb`, e.g. `invoices.create`.
    pub action: String,
    pub http_method: String,
    pub http_path: String,
    /// `pending`, `approved`, `rejected` or `failed`.
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub error_message: Option<String>,
    /// The captured JSON payload (other bodies as `base64:`).
    pub request_body: Option<String>,
    pub resource_id: Option<String>,
    pub reviewed_at: Option<DateTime<Utc>>,
    pub reviewed_by: Option<String>,
}

impl From<store::audit::AuditRow> for AiAuditEntry {
    fn from(r: store::audit::AuditRow) -> Self {
        Self {
            id: r.id,
            source: r.source,
            action: r.action,
            http_method: r.http_method,
            http_path: r.http_path,
            status: r.status,
            created_at: ts(r.created_at),
            error_message: r.error_message,
            request_body: r.request_body,
            resource_id: r.resource_id,
            reviewed_at: r.reviewed_at.map(ts),
            reviewed_by: r.reviewed_by,
        }
    }
}

/// Filters of the queue.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditFilter {
    /// `pending`, `approved`, `rejected` or `failed`.
    pub status: Option<String>,
}

/// Lists the company's entries, newest first.
#[utoipa::path(get, path = "/v1/ai-audit", tag = "ai-audit", params(AuditFilter, ListParams),
    responses((status = 200, body = Page<AiAuditEntry>), crate::openapi::ReadErrors))]
pub async fn list_entries(
    caller: Caller,
    mut db: DbConn,
    Query(filter): Query<AuditFilter>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<AiAuditEntry>>> {
    let status = filter.status.as_deref().filter(|s| !s.is_empty());
    if let Some(s) = status
        && !["pending", "approved", "rejected", "failed"].contains(&s)
    {
        return Err(ApiError::bad_request(format!(
            "`status` must be pending, approved, rejected or failed, got `{s}`."
        )));
    }
    let limit = params.limit()?;
    let rows = store::audit::list(
        &mut db,
        &caller.company_id,
        status,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::from_rows(
        rows,
        limit,
        |r| &r.id,
        AiAuditEntry::from,
    )))
}

/// One entry.
#[utoipa::path(get, path = "/v1/ai-audit/{id}", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, body = AiAuditEntry), crate::openapi::ReadErrors))]
pub async fn get_entry(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<AiAuditEntry>> {
    let row = store::audit::get(&mut db, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    Ok(Json(row.into()))
}

/// Approves a pending entry and runs it now. Human only; acts once (409 after).
#[utoipa::path(post, path = "/v1/ai-audit/{id}/approve", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, description = "Approved and replayed: status is `approved` (with resourceId) or `failed` (with errorMessage)", body = AiAuditEntry),
        (status = 409, description = "Already reviewed", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn approve_entry(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<AiAuditEntry>> {
    caller.require_human()?;
    let entry = claim(&tx, &caller, &id, "approved").await?;
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
        .body(Body::from(restore_body(entry.request_body.as_deref())))
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
    let row = store::audit::get(&mut conn, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    Ok(Json(row.into()))
}

/// Rejects a pending entry; it will never run. Human only; acts once (409 after).
#[utoipa::path(post, path = "/v1/ai-audit/{id}/reject", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, body = AiAuditEntry),
        (status = 409, description = "Already reviewed", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn reject_entry(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<AiAuditEntry>> {
    caller.require_human()?;
    claim(&tx, &caller, &id, "rejected").await?;
    let row = store::audit::get(&mut *tx.conn().await?, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    Ok(Json(row.into()))
}

/// Moves a pending entry of the caller's company to `status`, or explains why not.
async fn claim(
    tx: &Tx,
    caller: &Caller,
    id: &str,
    status: &str,
) -> ApiResult<store::audit::AuditRow> {
    let mut conn = tx.conn().await?;
    let entry = store::audit::get(&mut conn, &caller.company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    if !store::audit::review(&mut conn, &caller.company_id, id, status, &caller.user_id).await? {
        return Err(ApiError::Conflict(format!(
            "AI audit entry {id} was already reviewed (status {}); it can be approved or rejected once.",
            // Re-read: a concurrent review may have changed it since `entry` was loaded.
            store::audit::get(&mut conn, &caller.company_id, id)
                .await?
                .map_or(entry.status, |e| e.status)
        )));
    }
    Ok(entry)
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
