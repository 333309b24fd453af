//! Webhooks (`/v1/webhooks`): endpoints that receive signed events (docs/WEBHOOKS.md).
//!
//! People manage endpoints; AI callers may read endpoints and deliveries, and are refused
//! (`403 human_required`) on every write. The signing secret is shown once, in the answer to
//! the creation, marked [`ShownOnce`] so an `Idempotency-Key` never stores or replays it.
//!
//! Events are emitted with [`emit`] (and the data builders below) inside the transaction of
//! the change, so they exist exactly when the change committed.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::{ShownOnce, Tx},
    json::ApiJson,
    pagination::{ListParams, Page},
    views::{ts, ts_opt},
    workflows::AppResult,
};
use store::webhooks as wh;

/// Emits `event` for the company in the request's transaction (see [`wh::emit`]).
pub async fn emit(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    event: &str,
    data: serde_json::Value,
) -> AppResult<()> {
    wh::emit(conn, company_id, event, data).await?;
    Ok(())
}

/// Emits an invoice event whose data is [`invoice_data`].
pub async fn emit_invoice(
    conn: &mut sqlx::AnyConnection,
    event: &str,
    row: &store::invoices::InvoiceRow,
) -> AppResult<()> {
    emit(conn, &row.company_id, event, invoice_data(row)?).await
}

/// The data of invoice events (shared with the worker's `invoice.sent` and
/// `invoice.overdue`): see [`store::invoice_events::invoice_data`].
pub fn invoice_data(r: &store::invoices::InvoiceRow) -> AppResult<serde_json::Value> {
    Ok(store::invoice_events::invoice_data(r)?)
}

/// Emits `invoice.paid` when a payment just recorded in this transaction `settles` the
/// invoice (its data shows the invoice with the payment).
pub async fn emit_paid(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    invoice_id: &str,
    settles: bool,
) -> AppResult<()> {
    if !settles {
        return Ok(());
    }
    let Ok(invoice_id) = store::InvoiceId::parse(invoice_id) else {
        return Ok(());
    };
    match store::invoices::get(conn, company_id, &invoice_id).await? {
        Some(row) => emit_invoice(conn, "invoice.paid", &row).await,
        None => Ok(()),
    }
}

/// Emits `expense.created`.
pub async fn emit_expense(
    conn: &mut sqlx::AnyConnection,
    r: &store::expenses::ExpenseRow,
) -> AppResult<()> {
    let data = serde_json::json!({
        "id": r.id,
        "supplier_id": r.supplier_id,
        "invoice_reference": r.invoice_reference,
        "category": r.category,
        "currency_code": r.currency_code,
        "expense_date": ts(r.expense_date)?,
        "net_total": r.net_total,
        "tax_total": r.tax_total,
        "total": r.total,
    });
    emit(conn, &r.company_id, "expense.created", data).await
}

/// The data of `ai_audit.*` events: the entry, never its body.
pub fn audit_data(r: &store::audit::AuditRow) -> AppResult<serde_json::Value> {
    Ok(serde_json::json!({
        "id": r.id,
        "status": r.status,
        "source": r.source,
        "action": r.action,
        "httpMethod": r.http_method,
        "httpPath": r.http_path,
        "resourceId": r.resource_id,
        "errorMessage": r.error_message,
        "createdAt": ts(r.created_at)?,
        "expiresAt": ts(r.expires_at)?,
    }))
}

/// Emits an `ai_audit.*` event with the entry as it is now in the transaction.
pub async fn emit_audit(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    event: &str,
    entry_id: &str,
    now: i64,
) -> AppResult<()> {
    let Some(row) = store::audit::get(conn, company_id, entry_id, now).await? else {
        return Ok(());
    };
    emit(conn, company_id, event, audit_data(&row)?).await
}

/// The key that seals signing secrets (the worker opens them with the same derivation).
fn seal_key(state: &AppState) -> wh::SealKey {
    wh::SealKey::new(reports::links::derive(&state.config.secret_key, "webhook-secrets").as_bytes())
}

/// An endpoint as shown: never its secret.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookEndpoint {
    pub id: String,
    /// Where events are POSTed.
    pub url: String,
    /// The events it receives.
    pub events: Vec<String>,
    pub description: String,
    /// Disabled endpoints receive nothing; the service disables one after a long run of
    /// failures (see `disabled_reason`).
    pub enabled: bool,
    /// Why the service disabled it; null when enabled or disabled by a person.
    pub disabled_reason: Option<String>,
    /// Attempts that failed in a row since the last success.
    pub consecutive_failures: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl WebhookEndpoint {
    fn of(r: wh::EndpointRow) -> ApiResult<Self> {
        Ok(Self {
            events: r.event_list()?,
            id: r.id,
            url: r.url,
            description: r.description,
            enabled: r.enabled == 1,
            disabled_reason: r.disabled_reason,
            consecutive_failures: r.consecutive_failures,
            created_at: ts(r.created_at)?,
            updated_at: ts(r.updated_at)?,
        })
    }
}

/// A new endpoint: `secret` is shown only in this answer.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedWebhookEndpoint {
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// The signing secret (`whsec_` + base64): verify every delivery with it.
    pub secret: String,
}

/// Creating an endpoint.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhookRequest {
    /// An `https://` (or `http://`) URL on a public address.
    pub url: String,
    /// Event names, e.g. `["invoice.paid", "ai_audit.pending"]`.
    pub events: Vec<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Default true.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Changing an endpoint (absent fields stay as they are). Enabling clears its failures.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateWebhookRequest {
    pub url: Option<String>,
    pub events: Option<Vec<String>>,
    pub description: Option<String>,
    pub enabled: Option<bool>,
}

/// One delivery of an event to an endpoint.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WebhookDelivery {
    pub id: String,
    pub endpoint_id: String,
    /// The `webhook-id` header: the same on every attempt and re-send.
    pub message_id: String,
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub attempts: i64,
    /// The HTTP status of the last answer, if one came.
    pub response_status: Option<i64>,
    /// Why the last attempt failed.
    pub last_error: Option<String>,
    /// The body sent: `{"type","timestamp","data"}`.
    pub payload: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    /// The last attempts (at most 50), oldest first.
    pub attempt_log: Vec<DeliveryAttempt>,
}

/// One attempt of a delivery.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DeliveryAttempt {
    pub at: DateTime<Utc>,
    /// The HTTP status answered, if an answer came.
    pub response_status: Option<i64>,
    /// Why it failed; null for a success.
    pub error: Option<String>,
}

impl WebhookDelivery {
    fn of(r: wh::DeliveryRow) -> ApiResult<Self> {
        let payload = serde_json::from_str(&r.payload).map_err(|e| {
            ApiError::Internal(anyhow::anyhow!(
                "delivery {} has an unreadable body: {e}",
                r.id
            ))
        })?;
        let attempt_log = r
            .attempt_log()?
            .into_iter()
            .map(|a| {
                Ok(DeliveryAttempt {
                    at: ts(a.at)?,
                    response_status: a.response_status,
                    error: a.error,
                })
            })
            .collect::<ApiResult<_>>()?;
        Ok(Self {
            attempt_log,
            id: r.id,
            endpoint_id: r.endpoint_id,
            message_id: r.message_id,
            event_type: r.event_type,
            status: r.status,
            attempts: r.attempts,
            response_status: r.response_status,
            last_error: r.last_error,
            payload,
            created_at: ts(r.created_at)?,
            last_attempt_at: ts_opt(r.last_attempt_at)?,
            delivered_at: ts_opt(r.delivered_at)?,
        })
    }
}

fn events(list: Vec<String>) -> ApiResult<Vec<String>> {
    if list.is_empty() {
        return Err(ApiError::bad_request(format!(
            "`events` must name at least one event: {}.",
            wh::EVENTS.join(", ")
        )));
    }
    let mut out: Vec<String> = Vec::new();
    for e in list {
        let e = e.trim().to_owned();
        if !wh::EVENTS.contains(&e.as_str()) {
            return Err(ApiError::bad_request(format!(
                "`events` names an unknown event `{}`; the events are: {}.",
                e.chars().take(80).collect::<String>(),
                wh::EVENTS.join(", ")
            )));
        }
        if !out.contains(&e) {
            out.push(e);
        }
    }
    Ok(out)
}

/// Checks a target URL: form and literal address, then the addresses its name resolves to.
/// A name that does not resolve now is accepted (it is checked again at every delivery).
async fn target(state: &AppState, raw: &str) -> ApiResult<String> {
    let allow = state.config.webhooks_allow_private;
    let url = wh::check_url(raw, allow).map_err(ApiError::BadRequest)?;
    if !allow && let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) {
        match wh::vet_addresses(host, port, false).await {
            Ok(_) => {}
            Err(e) if e.contains("loopback, private") => {
                return Err(ApiError::bad_request(format!(
                    "`url` is refused: {e} (an operator may allow private ones with \
                     INVOICING_WEBHOOKS_ALLOW_PRIVATE=1)."
                )));
            }
            Err(e) => tracing::info!(error = %e, "a new webhook URL does not resolve yet"),
        }
    }
    Ok(url.to_string())
}

fn description(d: Option<String>) -> ApiResult<String> {
    Ok(crate::views::optional_text("description", d, 500)?.unwrap_or_default())
}

/// Lists the company's webhook endpoints, newest first.
#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", params(ListParams),
    responses((status = 200, body = Page<WebhookEndpoint>), crate::openapi::ReadErrors))]
pub async fn list_webhooks(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<WebhookEndpoint>>> {
    let limit = params.limit()?;
    let rows = wh::list(
        &mut db,
        &caller.company_id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        WebhookEndpoint::of,
    )?))
}

/// Creates an endpoint and answers its signing secret, shown only here. People only.
#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", request_body = CreateWebhookRequest,
    responses((status = 201, body = CreatedWebhookEndpoint), crate::openapi::WriteErrors))]
pub async fn create_webhook(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateWebhookRequest>,
) -> ApiResult<(StatusCode, ShownOnce, Json<CreatedWebhookEndpoint>)> {
    caller.require_human()?;
    let events = events(req.events)?;
    let description = description(req.description)?;
    let url = target(&state, &req.url).await?;
    let secret = wh::new_secret();
    let sealed = seal_key(&state).seal(&secret);
    let mut conn = tx.conn().await?;
    // One at a time per company, so the cap holds exactly.
    store::members::lock_company(&mut conn, &caller.company_id).await?;
    if wh::count(&mut conn, &caller.company_id).await? >= wh::MAX_ENDPOINTS {
        return Err(ApiError::bad_request(format!(
            "A company may have at most {} webhook endpoints; delete one first.",
            wh::MAX_ENDPOINTS
        )));
    }
    let row = wh::insert(
        &mut conn,
        &caller.company_id,
        &wh::NewEndpoint {
            url: &url,
            description: &description,
            events: &events,
            enabled: req.enabled.unwrap_or(true),
            secret_sealed: &sealed,
            created_by: &caller.user_id,
        },
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        ShownOnce,
        Json(CreatedWebhookEndpoint {
            endpoint: WebhookEndpoint::of(row)?,
            secret,
        }),
    ))
}

/// One endpoint (never its secret).
#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id")),
    responses((status = 200, body = WebhookEndpoint), crate::openapi::ReadErrors))]
pub async fn get_webhook(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<WebhookEndpoint>> {
    let row = wh::get(&mut db, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook endpoint"))?;
    Ok(Json(WebhookEndpoint::of(row)?))
}

/// Changes an endpoint; `{"enabled": true}` turns a disabled one back on. People only.
#[utoipa::path(patch, path = "/v1/webhooks/{id}", tag = "webhooks", request_body = UpdateWebhookRequest,
    params(("id" = String, Path, description = "Endpoint id")),
    responses((status = 200, body = WebhookEndpoint), crate::openapi::WriteErrors))]
pub async fn update_webhook(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateWebhookRequest>,
) -> ApiResult<Json<WebhookEndpoint>> {
    caller.require_human()?;
    let url = match req.url {
        Some(u) => Some(target(&state, &u).await?),
        None => None,
    };
    let changes = wh::EndpointChanges {
        url,
        events: req.events.map(events).transpose()?,
        description: req.description.map(|d| description(Some(d))).transpose()?,
        enabled: req.enabled,
    };
    let mut conn = tx.conn().await?;
    let row = wh::update(&mut conn, &caller.company_id, &id, &changes)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook endpoint"))?;
    Ok(Json(WebhookEndpoint::of(row)?))
}

/// Deletes an endpoint and its delivery log. People only.
#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_webhook(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_human()?;
    let mut conn = tx.conn().await?;
    if wh::delete(&mut conn, &caller.company_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("webhook endpoint"))
    }
}

/// The delivery log of an endpoint, newest first: each event, its status, attempts and
/// the last answer's HTTP status.
#[utoipa::path(get, path = "/v1/webhooks/{id}/deliveries", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id"), ListParams),
    responses((status = 200, body = Page<WebhookDelivery>), crate::openapi::ReadErrors))]
pub async fn list_webhook_deliveries(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<WebhookDelivery>>> {
    let limit = params.limit()?;
    wh::get(&mut db, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook endpoint"))?;
    let rows = wh::list_deliveries(
        &mut db,
        &caller.company_id,
        &id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        WebhookDelivery::of,
    )?))
}

/// Sends one delivery again now (same `webhook-id` and body, freshly signed), with a new
/// run of attempts. 409 while it is still pending or when the endpoint is disabled. People
/// only.
#[utoipa::path(post, path = "/v1/webhooks/{id}/deliveries/{delivery_id}/retry", tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id"),
        ("delivery_id" = String, Path, description = "Delivery id")),
    responses((status = 200, description = "Queued again: status is `pending`", body = WebhookDelivery),
        (status = 409, description = "Still pending, or the endpoint is disabled", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn retry_webhook_delivery(
    caller: Caller,
    tx: Tx,
    Path((id, delivery_id)): Path<(String, String)>,
) -> ApiResult<Json<WebhookDelivery>> {
    caller.require_human()?;
    let mut conn = tx.conn().await?;
    let endpoint = wh::get(&mut conn, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook endpoint"))?;
    let delivery = wh::get_delivery(&mut conn, &caller.company_id, &delivery_id)
        .await?
        .filter(|d| d.endpoint_id == endpoint.id)
        .ok_or_else(|| ApiError::not_found("webhook delivery"))?;
    if endpoint.enabled != 1 {
        return Err(ApiError::Conflict(
            "The endpoint is disabled: enable it (PATCH /v1/webhooks/{id} with \
             {\"enabled\": true}) before sending deliveries again."
                .into(),
        ));
    }
    if !wh::resend(&mut conn, &caller.company_id, &delivery.id).await? {
        return Err(ApiError::Conflict(
            "This delivery is still pending: it will be sent (or retried) by itself.".into(),
        ));
    }
    let row = wh::get_delivery(&mut conn, &caller.company_id, &delivery.id)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook delivery"))?;
    Ok(Json(WebhookDelivery::of(row)?))
}
