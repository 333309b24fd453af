//! Invoices (`/v1/invoices`): drafts, issue, corrective invoices, bulk actions.

pub mod build;
pub mod corrections;
pub mod issue;
pub mod model;
pub mod payments;
pub mod recurring;
pub mod send;

use axum::{
    Json,
    extract::{Path, Query},
    http::StatusCode,
};
use serde::Deserialize;

use self::model::{ExchangeRateEntry, Invoice, InvoiceLineRequest, SupplyType};
use crate::{
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    routes::entities::PlaceholderValue,
    workflows,
};

/// Creating a draft invoice.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInvoiceRequest {
    pub recipient_id: String,
    pub lines: Vec<InvoiceLineRequest>,
    /// Company bank accounts to show as payment instructions (snapshotted; unknown ids ignored).
    #[serde(default)]
    pub bank_account_ids: Vec<String>,
    /// Defaults to the recipient's currency.
    #[serde(default)]
    pub currency_code: Option<String>,
    #[serde(default)]
    pub custom_placeholder_values: Vec<PlaceholderValue>,
    #[serde(default)]
    pub exchange_rates: Vec<ExchangeRateEntry>,
    /// Defaults to `services`.
    #[serde(default)]
    pub supply_type: Option<SupplyType>,
    /// BT-9: when payment is due (RFC 3339, or `YYYY-MM-DD` for 00:00 UTC); omitted: the
    /// issue date plus the recipient's (else the company's) payment terms.
    #[serde(default, deserialize_with = "model::flexible_instant")]
    #[schema(value_type = Option<String>)]
    pub due_date: Option<Option<chrono::DateTime<chrono::Utc>>>,
    /// BT-10; omitted: the recipient's `einvoice.buyer_reference`.
    #[serde(default)]
    pub buyer_reference: Option<String>,
    /// BT-13: the buyer's purchase order reference.
    #[serde(default)]
    pub order_reference: Option<String>,
    /// BT-72: when the goods or services were supplied (`YYYY-MM-DD`).
    #[serde(default)]
    pub delivery_date: Option<chrono::NaiveDate>,
    /// BT-73: start of the period the invoice covers (with `period_end`).
    #[serde(default)]
    pub period_start: Option<chrono::NaiveDate>,
    /// BT-74: end of the period the invoice covers (with `period_start`).
    #[serde(default)]
    pub period_end: Option<chrono::NaiveDate>,
    /// BT-22: a note printed on the invoice (at most 2,000 characters).
    #[serde(default)]
    pub notes: Option<String>,
}

/// Changing a draft: any subset of the create fields (lines replace all lines).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateInvoiceRequest {
    pub recipient_id: Option<String>,
    pub lines: Option<Vec<InvoiceLineRequest>>,
    pub bank_account_ids: Option<Vec<String>>,
    pub currency_code: Option<String>,
    pub custom_placeholder_values: Option<Vec<PlaceholderValue>>,
    pub exchange_rates: Option<Vec<ExchangeRateEntry>>,
    pub supply_type: Option<SupplyType>,
    #[serde(default, deserialize_with = "model::flexible_instant")]
    #[schema(value_type = Option<String>)]
    pub due_date: Option<Option<chrono::DateTime<chrono::Utc>>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub buyer_reference: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub order_reference: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<chrono::NaiveDate>)]
    pub delivery_date: Option<Option<chrono::NaiveDate>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<chrono::NaiveDate>)]
    pub period_start: Option<Option<chrono::NaiveDate>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<chrono::NaiveDate>)]
    pub period_end: Option<Option<chrono::NaiveDate>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub notes: Option<Option<String>>,
}

/// Filters of the invoice list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct InvoiceFilter {
    /// `draft` or `issued`.
    pub status: Option<String>,
    pub recipient_id: Option<String>,
    /// `invoice` or `corrective`.
    pub series: Option<String>,
    /// Issued at or after this instant (RFC 3339).
    pub issued_from: Option<chrono::DateTime<chrono::Utc>>,
    /// Issued before this instant (RFC 3339).
    pub issued_to: Option<chrono::DateTime<chrono::Utc>>,
    /// `unpaid`, `partially_paid`, `paid` or `overdue` (issued ordinary invoices).
    pub payment_status: Option<String>,
    /// Drafts made by this recurring invoice.
    pub recurring_invoice_id: Option<String>,
}

/// Lists invoices, newest first.
#[utoipa::path(get, path = "/v1/invoices", tag = "invoices", params(InvoiceFilter, ListParams),
    responses((status = 200, body = Page<Invoice>), crate::openapi::ReadErrors))]
pub async fn list_invoices(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    caller: Caller,
    mut db: DbConn,
    Query(f): Query<InvoiceFilter>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<Invoice>>> {
    let status = f
        .status
        .as_deref()
        .map(str::parse::<store::invoices::InvoiceStatus>)
        .transpose()
        .map_err(|e| {
            ApiError::bad_request(format!(
                "`status` must be draft or issued, got `{}`.",
                e.value
            ))
        })?;
    let series = f
        .series
        .as_deref()
        .map(str::parse::<store::invoices::Series>)
        .transpose()
        .map_err(|e| {
            ApiError::bad_request(format!(
                "`series` must be invoice or corrective, got `{}`.",
                e.value
            ))
        })?;
    if let Some(s) = f.payment_status.as_deref()
        && !["unpaid", "partially_paid", "paid", "overdue"].contains(&s)
    {
        return Err(ApiError::bad_request(format!(
            "`payment_status` must be unpaid, partially_paid, paid or overdue, got `{s}`."
        )));
    }
    let limit = params.limit()?;
    let filter = store::invoices::Filter {
        status,
        recipient_id: f.recipient_id.as_deref(),
        series,
        corrected_invoice_id: None,
        issued_from: f.issued_from.map(|t| t.timestamp_micros()),
        issued_to: f.issued_to.map(|t| t.timestamp_micros()),
        recurring_invoice_id: f.recurring_invoice_id.as_deref(),
        payment_status: f.payment_status.as_deref(),
        now: state.now().timestamp_micros(),
    };
    let rows = store::invoices::list(
        &mut db,
        &caller.company_id,
        &filter,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        |r| view(r, caller.language, &state),
    )?))
}

/// Creates a draft invoice; taxes are computed unless explicit tax lines are sent.
#[utoipa::path(post, path = "/v1/invoices", tag = "invoices", request_body = CreateInvoiceRequest,
    responses((status = 201, body = Invoice), crate::openapi::WriteErrors))]
pub async fn create_invoice(
    state: axum::extract::State<crate::AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateInvoiceRequest>,
) -> ApiResult<(StatusCode, Json<Invoice>)> {
    let row = workflows::drafts::create(
        state.services(),
        &tx,
        &caller.company_id,
        caller.source,
        req,
    )
    .await?;
    let created = view(row, caller.language, &state)?;
    tx.done().await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// One invoice with its lines.
#[utoipa::path(get, path = "/v1/invoices/{id}", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, body = Invoice), crate::openapi::ReadErrors))]
pub async fn get_invoice(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<Invoice>> {
    let row = load(&mut db, &caller.company_id, &id).await?;
    Ok(Json(view(row, caller.language, &state)?))
}

/// Changes a draft; issued invoices are immutable (409).
#[utoipa::path(patch, path = "/v1/invoices/{id}", tag = "invoices", request_body = UpdateInvoiceRequest,
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, body = Invoice),
        (status = 409, description = "The invoice is issued", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn update_invoice(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateInvoiceRequest>,
) -> ApiResult<Json<Invoice>> {
    let row =
        workflows::drafts::update(state.services(), &tx, &caller.company_id, &id, req).await?;
    Ok(Json(view(row, caller.language, &state)?))
}

/// Deletes a draft; issued invoices cannot be deleted (409).
#[utoipa::path(delete, path = "/v1/invoices/{id}", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 204, description = "Deleted"),
        (status = 409, description = "The invoice is issued", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn delete_invoice(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    workflows::drafts::delete(&tx, &caller.company_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(crate) use crate::workflows::{
    drafts::to_json,
    invoices::{company, load},
};

/// The API view of a stored invoice, as of the service's clock.
pub(crate) fn view(
    r: store::invoices::InvoiceRow,
    lang: &str,
    state: &crate::AppState,
) -> ApiResult<Invoice> {
    Ok(crate::documents::views::invoice(
        r,
        lang,
        state.now().timestamp_micros(),
    )?)
}
