//! The AI review queue (`/v1/ai-audit`): list, inspect, download a held body, approve,
//! reject.
//!
//! Lists never read bodies: an entry says how large its body is and where to download
//! it (`GET /v1/ai-audit/{id}/body`); the single-entry view includes a small JSON body.
//! A pending entry past its time reads as `expired` and can no longer be reviewed.
//! Approval (see [`approve`]) replays the captured request through the same router.

mod approve;

pub use approve::{__path_approve_entry, approve_entry};

use axum::{
    Json,
    extract::{Path, Query, State},
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::files::FileStore as _;

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    pagination::{ListParams, Page},
    views::{ts, ts_opt},
};

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuditStatus {
    /// Waiting for a person.
    Pending,
    /// Approved and replayed successfully.
    Approved,
    /// Rejected; it never ran.
    Rejected,
    /// Approved, but the replay failed (or could not run); nothing was changed.
    Failed,
    /// Not reviewed in time (`INVOICING_AI_PENDING_TTL_DAYS`); it never ran.
    Expired,
}

impl AuditStatus {
    fn parse(stored: &str) -> Result<Self, ApiError> {
        Ok(match stored {
            "pending" => Self::Pending,
            "approved" => Self::Approved,
            "rejected" => Self::Rejected,
            "failed" => Self::Failed,
            "expired" => Self::Expired,
            other => {
                return Err(ApiError::Internal(anyhow::anyhow!(
                    "an AI audit entry has the unknown status `{other}`"
                )));
            }
        })
    }
}

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
    pub status: AuditStatus,
    pub created_at: DateTime<Utc>,
    /// When a pending entry expires unless a person reviews it first.
    pub expires_at: DateTime<Utc>,
    pub error_message: Option<String>,
    /// The captured JSON payload: only in the single-entry view, and only for a small JSON
    /// body; any other body is downloaded from `bodyUrl`.
    pub request_body: Option<String>,
    /// Size of the captured body in bytes (0: none).
    pub body_size: i64,
    /// Content type the body was sent with.
    pub content_type: Option<String>,
    /// Where to download the captured body, while it is kept (large and binary bodies are
    /// removed once the entry is decided or expires).
    pub body_url: Option<String>,
    pub resource_id: Option<String>,
    pub reviewed_at: Option<DateTime<Utc>>,
    pub reviewed_by: Option<String>,
}

impl AiAuditEntry {
    /// The view of a row, with `request_body` when the caller loaded it.
    fn of(r: store::audit::AuditRow, request_body: Option<String>) -> ApiResult<Self> {
        let body_url = (r.body_kind != "none").then(|| format!("/v1/ai-audit/{}/body", r.id));
        Ok(Self {
            status: AuditStatus::parse(&r.status)?,
            id: r.id,
            source: r.source,
            action: r.action,
            http_method: r.http_method,
            http_path: r.http_path,
            created_at: ts(r.created_at)?,
            expires_at: ts(r.expires_at)?,
            error_message: r.error_message,
            request_body,
            body_size: r.body_size,
            content_type: r.content_type,
            body_url,
            resource_id: r.resource_id,
            reviewed_at: ts_opt(r.reviewed_at)?,
            reviewed_by: r.reviewed_by,
        })
    }
}

/// Filters of the queue.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditFilter {
    /// `pending`, `approved`, `rejected`, `failed` or `expired`.
    #[param(value_type = Option<AuditStatus>)]
    pub status: Option<String>,
}

/// Lists the company's entries, newest first (without their bodies).
#[utoipa::path(get, path = "/v1/ai-audit", tag = "ai-audit", params(AuditFilter, ListParams),
    responses((status = 200, body = Page<AiAuditEntry>), crate::openapi::ReadErrors))]
pub async fn list_entries(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Query(filter): Query<AuditFilter>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<AiAuditEntry>>> {
    let status = filter.status.as_deref().filter(|s| !s.is_empty());
    if let Some(s) = status
        && !store::audit::STATUSES.contains(&s)
    {
        return Err(ApiError::bad_request(format!(
            "`status` must be pending, approved, rejected, failed or expired, got `{s}`."
        )));
    }
    let limit = params.limit()?;
    let rows = store::audit::list(
        &mut db,
        &caller.company_id,
        status,
        params.after()?.as_deref(),
        limit + 1,
        state.now().timestamp_micros(),
    )
    .await?;
    // Views first (a stored status that does not parse is an error), then the page.
    let views = rows
        .into_iter()
        .map(|r| AiAuditEntry::of(r, None))
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Json(Page::from_rows(
        views,
        limit,
        |e| &e.id,
        std::convert::identity,
    )))
}

/// One entry, with its body when that is small JSON.
#[utoipa::path(get, path = "/v1/ai-audit/{id}", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, body = AiAuditEntry), crate::openapi::ReadErrors))]
pub async fn get_entry(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<AiAuditEntry>> {
    let row = store::audit::get(
        &mut db,
        &caller.company_id,
        &id,
        state.now().timestamp_micros(),
    )
    .await?
    .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    let body = if row.body_kind == "inline" {
        store::audit::inline_body(&mut db, &caller.company_id, &id).await?
    } else {
        None
    };
    Ok(Json(AiAuditEntry::of(row, body)?))
}

/// The captured body of an entry, as it was sent, for download.
#[utoipa::path(get, path = "/v1/ai-audit/{id}/body", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, description = "The body, as an attachment, with the content type it was sent with",
        content_type = "application/octet-stream", body = Vec<u8>),
        crate::openapi::ReadErrors))]
pub async fn get_body(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let row = store::audit::get(
        &mut db,
        &caller.company_id,
        &id,
        state.now().timestamp_micros(),
    )
    .await?
    .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    let Some(bytes) = body_bytes(&state, &mut db, &row).await? else {
        return Err(ApiError::NotFound(if row.body_size > 0 {
            format!(
                "The body of AI audit entry {id} is no longer kept: large and binary bodies \
                 are removed once the entry is decided or expires."
            )
        } else {
            format!("AI audit entry {id} has no body.")
        }));
    };
    let content_type = row
        .content_type
        .as_deref()
        .and_then(|ct| HeaderValue::from_str(ct).ok())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let mut resp = bytes.into_response();
    let headers = resp.headers_mut();
    headers.insert(header::CONTENT_TYPE, content_type);
    // An agent chose this content and its type: never let a browser render it here.
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"ai-audit-body\""),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    Ok(resp)
}

/// Rejects a pending entry; it will never run. Human only; acts once (409 after, and for
/// an expired entry).
#[utoipa::path(post, path = "/v1/ai-audit/{id}/reject", tag = "ai-audit",
    params(("id" = String, Path, description = "Entry id")),
    responses((status = 200, body = AiAuditEntry),
        (status = 409, description = "Already reviewed, or expired", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn reject_entry(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<AiAuditEntry>> {
    caller.require_human()?;
    let now = state.now().timestamp_micros();
    let entry = claim(&tx, &caller, &id, "rejected", now).await?;
    let mut conn = tx.conn().await?;
    drop_body(&state, &mut conn, &entry).await?;
    crate::routes::webhooks::emit_audit(
        &mut conn,
        &caller.company_id,
        "ai_audit.rejected",
        &id,
        now,
    )
    .await?;
    let row = store::audit::get(&mut conn, &caller.company_id, &id, now)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    Ok(Json(AiAuditEntry::of(row, None)?))
}

/// Moves a pending entry of the caller's company to `status`, or explains why not.
async fn claim(
    tx: &Tx,
    caller: &Caller,
    id: &str,
    status: &str,
    now: i64,
) -> ApiResult<store::audit::AuditRow> {
    let mut conn = tx.conn().await?;
    let entry = store::audit::get(&mut conn, &caller.company_id, id, now)
        .await?
        .ok_or_else(|| ApiError::not_found("AI audit entry"))?;
    if entry.status == "expired" {
        return Err(expired(&entry));
    }
    if !store::audit::review(
        &mut conn,
        &caller.company_id,
        id,
        status,
        &caller.user_id,
        now,
    )
    .await?
    {
        // Re-read: a concurrent review may have changed it since `entry` was loaded.
        let now_entry = store::audit::get(&mut conn, &caller.company_id, id, now)
            .await?
            .unwrap_or(entry);
        if now_entry.status == "expired" {
            return Err(expired(&now_entry));
        }
        return Err(ApiError::Conflict(format!(
            "AI audit entry {id} was already reviewed (status {}); it can be approved or \
             rejected once.",
            now_entry.status
        )));
    }
    Ok(entry)
}

/// The 409 for an entry that waited too long.
fn expired(entry: &store::audit::AuditRow) -> ApiError {
    ApiError::Conflict(format!(
        "AI audit entry {} expired at {} without being reviewed, so it can no longer be \
         approved or rejected and will never run; ask the agent to send the request again if \
         it is still wanted.",
        entry.id,
        ts(entry.expires_at).map_or_else(
            |_| format!("{} µs", entry.expires_at),
            |t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )
    ))
}

/// The held body's bytes (`None` when there is none, or it is no longer kept).
async fn body_bytes(
    state: &AppState,
    conn: &mut sqlx::AnyConnection,
    row: &store::audit::AuditRow,
) -> ApiResult<Option<Vec<u8>>> {
    match (row.body_kind.as_str(), row.body_file_id.as_deref()) {
        ("none", _) => Ok(None),
        ("inline", _) => Ok(store::audit::inline_body(conn, &row.company_id, &row.id)
            .await?
            .map(String::into_bytes)),
        ("legacy", _) => {
            use base64::Engine as _;
            let text = store::audit::inline_body(conn, &row.company_id, &row.id)
                .await?
                .ok_or_else(|| {
                    ApiError::Internal(anyhow::anyhow!(
                        "the inline body of AI audit entry {} is gone",
                        row.id
                    ))
                })?;
            let b64 = text.strip_prefix("base64:").unwrap_or(&text);
            base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map(Some)
                .map_err(|e| {
                    ApiError::Internal(anyhow::anyhow!(
                        "the base64 body of AI audit entry {} does not decode: {e}",
                        row.id
                    ))
                })
        }
        ("file", Some(file_id)) => state
            .db
            .files()
            .get(conn, &row.company_id, file_id)
            .await?
            .map(|f| Some(f.data))
            .ok_or_else(|| {
                ApiError::Internal(anyhow::anyhow!(
                    "the body file {file_id} of AI audit entry {} is missing",
                    row.id
                ))
            }),
        (kind, _) => Err(ApiError::Internal(anyhow::anyhow!(
            "AI audit entry {} has an unknown body kind `{kind}`",
            row.id
        ))),
    }
}

/// Removes a decided entry's large body (its file, or a legacy inline one), in the
/// request's transaction; a small JSON body stays as the record of what was asked.
async fn drop_body(
    state: &AppState,
    conn: &mut sqlx::AnyConnection,
    row: &store::audit::AuditRow,
) -> ApiResult<()> {
    if let Some(file_id) = row.body_file_id.as_deref() {
        state
            .db
            .files()
            .delete(conn, &row.company_id, file_id)
            .await?;
    }
    store::audit::forget_body(conn, &row.company_id, &row.id).await?;
    Ok(())
}
