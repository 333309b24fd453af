//! Recurring invoices (`/v1/recurring-invoices`): the handlers and views over
//! [`crate::workflows::recurring`], which owns the schedules and the runner the worker calls.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::CreateInvoiceRequest;
pub use crate::workflows::recurring::Frequency;
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    workflows::recurring::{self, Schedule, date},
};

/// The schedule fields of the body; everything else is the draft's (CreateInvoiceRequest).
const SCHEDULE_FIELDS: [&str; 7] = [
    "frequency",
    "interval",
    "start_date",
    "end_date",
    "auto_issue",
    "auto_send",
    "status",
];

/// Creating a recurring invoice: the fields of CreateInvoiceRequest (but `due_date`,
/// which each issue takes from the payment terms), plus the schedule. (For the OpenAPI
/// description; the handler splits the body itself.)
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct CreateRecurringInvoiceRequest {
    /// The draft each period gets (the fields of CreateInvoiceRequest, at the top level).
    #[serde(flatten)]
    pub invoice: CreateInvoiceRequest,
    pub frequency: Frequency,
    /// Every `interval` weeks, months, quarters or years (default 1).
    pub interval: Option<i64>,
    /// The first period starts on this day (UTC).
    pub start_date: NaiveDate,
    /// No period starts after this day.
    pub end_date: Option<NaiveDate>,
    /// Issue each draft through the normal issuing path (default false).
    pub auto_issue: Option<bool>,
    /// Mail each issued invoice to the recipient's `email` (needs `auto_issue`).
    pub auto_send: Option<bool>,
    /// `active` (default) or `paused`.
    pub status: Option<String>,
}

/// Changing a recurring invoice: any subset of the create fields; a draft field set to
/// null is removed. (For the OpenAPI description.)
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct UpdateRecurringInvoiceRequest {
    /// Fields of the draft each period gets (those of UpdateInvoiceRequest).
    #[serde(flatten)]
    pub invoice: super::UpdateInvoiceRequest,
    pub frequency: Option<Frequency>,
    pub interval: Option<i64>,
    pub start_date: Option<NaiveDate>,
    pub end_date: Option<NaiveDate>,
    pub auto_issue: Option<bool>,
    pub auto_send: Option<bool>,
    /// `paused` stops the runs; `active` resumes from the first period starting today or later.
    pub status: Option<String>,
}

/// A recurring invoice.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RecurringInvoice {
    pub id: String,
    /// The fields of the draft each period gets (CreateInvoiceRequest), at the top level.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub invoice: Map<String, Value>,
    pub frequency: Frequency,
    pub interval: i64,
    pub start_date: NaiveDate,
    pub end_date: Option<NaiveDate>,
    pub auto_issue: bool,
    pub auto_send: bool,
    /// `active`, `paused` or `ended` (no period starts any more).
    pub status: String,
    /// When the next period starts (its draft is made that day, UTC); null once ended.
    pub next_run_date: Option<NaiveDate>,
    /// Why the latest run could not make, issue or send its invoice; null once one did.
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// The view of a stored schedule; a column that does not decode is an error.
fn view(r: store::recurring::RecurringRow) -> ApiResult<RecurringInvoice> {
    let what = format!("recurring invoice {}", r.id);
    let invoice: Map<String, Value> = crate::documents::parse(&what, &r.invoice_json)?;
    let frequency = Frequency::parse(&r.frequency).ok_or_else(|| {
        crate::documents::corrupt(what.clone(), format!("frequency `{}`", r.frequency))
    })?;
    let next_run_date = r
        .next_run_date
        .as_deref()
        .map(|d| date(&what, d))
        .transpose()?;
    Ok(RecurringInvoice {
        invoice,
        frequency,
        interval: r.interval_count,
        start_date: date(&what, &r.start_date)?,
        end_date: r.end_date.as_deref().map(|d| date(&what, d)).transpose()?,
        auto_issue: r.auto_issue != 0,
        auto_send: r.auto_send != 0,
        status: if next_run_date.is_none() {
            "ended"
        } else if r.paused != 0 {
            "paused"
        } else {
            "active"
        }
        .into(),
        next_run_date,
        last_error: r.last_error,
        created_at: crate::views::ts(r.created_at)?,
        updated_at: crate::views::ts_opt(r.updated_at)?,
        id: r.id,
    })
}

/// Splits a body into its schedule fields and the draft's fields.
fn split(body: Value) -> ApiResult<(Schedule, Map<String, Value>)> {
    let Value::Object(mut all) = body else {
        return Err(ApiError::bad_request(
            "The request body must be a JSON object.",
        ));
    };
    let mut schedule = Map::new();
    for key in SCHEDULE_FIELDS {
        if let Some(v) = all.remove(key) {
            schedule.insert(key.to_owned(), v);
        }
    }
    let bytes = serde_json::to_vec(&schedule).map_err(|e| ApiError::Internal(e.into()))?;
    let fields: Schedule = crate::json::parse(&bytes)?;
    if all.contains_key("due_date") {
        return Err(ApiError::bad_request(
            "A recurring invoice takes each due date from the payment terms at issue: drop \
             `due_date` (set `payment_terms_days` on the entity or `paymentTermsDays` on the company).",
        ));
    }
    Ok((fields, all))
}

/// Lists the company's recurring invoices, newest first.
#[utoipa::path(get, path = "/v1/recurring-invoices", tag = "recurring-invoices",
    params(ListParams),
    responses((status = 200, body = Page<RecurringInvoice>), crate::openapi::ReadErrors))]
pub async fn list_recurring(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<RecurringInvoice>>> {
    let limit = params.limit()?;
    let rows = store::recurring::list(
        &mut db,
        &caller.company_id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(rows, limit, |r| &r.id, view)?))
}

/// Creates a recurring invoice. The worker makes the draft of every period whose start has
/// come (UTC), catching up missed ones, each exactly once.
#[utoipa::path(post, path = "/v1/recurring-invoices", tag = "recurring-invoices",
    request_body = CreateRecurringInvoiceRequest,
    responses((status = 201, body = RecurringInvoice), crate::openapi::WriteErrors))]
pub async fn create_recurring(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<RecurringInvoice>)> {
    let (s, fields) = split(body)?;
    let row = recurring::create(
        state.services(),
        &tx,
        &caller.company_id,
        &caller.user_id,
        s,
        fields,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(view(row)?)))
}

/// One recurring invoice.
#[utoipa::path(get, path = "/v1/recurring-invoices/{id}", tag = "recurring-invoices",
    params(("id" = String, Path, description = "Recurring invoice id")),
    responses((status = 200, body = RecurringInvoice), crate::openapi::ReadErrors))]
pub async fn get_recurring(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<RecurringInvoice>> {
    view(recurring::load(&mut db, &caller.company_id, &id).await?).map(Json)
}

/// Changes a recurring invoice: any field, `start_date` included (`next_run_date`
/// follows; periods that already ran never run again). A draft field set to null is
/// removed. `status` `paused` stops it; `active` resumes it from the first period that
/// starts today or later (periods that started while it was paused are skipped).
#[utoipa::path(patch, path = "/v1/recurring-invoices/{id}", tag = "recurring-invoices",
    request_body = UpdateRecurringInvoiceRequest,
    params(("id" = String, Path, description = "Recurring invoice id")),
    responses((status = 200, body = RecurringInvoice), crate::openapi::WriteErrors))]
pub async fn update_recurring(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<RecurringInvoice>> {
    let (s, changes) = split(body)?;
    let row = recurring::update(state.services(), &tx, &caller.company_id, &id, s, changes).await?;
    Ok(Json(view(row)?))
}

/// Deletes a recurring invoice; the drafts and invoices it made stay.
#[utoipa::path(delete, path = "/v1/recurring-invoices/{id}", tag = "recurring-invoices",
    params(("id" = String, Path, description = "Recurring invoice id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_recurring(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    recurring::delete(&tx, &caller.company_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
