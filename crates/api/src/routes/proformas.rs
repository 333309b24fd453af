//! Proformas (`/v1/proformas`): quotes with their own references, convertible to a draft invoice.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::{
    entities::PlaceholderValue,
    invoices::{
        self, CreateInvoiceRequest, UpdateInvoiceRequest,
        issue::{BulkActionResult, BulkIdsRequest, bulk_ids},
        model::{ExchangeRateEntry, Invoice, InvoiceLine, SupplyType},
    },
};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::ApiResult,
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    views::{ts, ts_opt},
    workflows::{self, proformas::load},
};

/// A proforma.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Proforma {
    pub id: String,
    pub reference: String,
    pub number: i64,
    pub year: i64,
    pub recipient_id: String,
    pub supply_type: SupplyType,
    pub currency_code: String,
    pub treatment: Option<String>,
    pub lines: Vec<InvoiceLine>,
    #[serde(rename = "lineCount")]
    pub line_count: i64,
    pub custom_placeholder_values: Vec<PlaceholderValue>,
    pub exchange_rates: Vec<ExchangeRateEntry>,
    pub net_total: i64,
    pub tax_total: i64,
    pub withholding_total: i64,
    pub total: i64,
    /// The draft invoice made from it, if any.
    pub invoice_id: Option<String>,
    #[serde(rename = "createdAt")]
    pub created_at: DateTime<Utc>,
    #[serde(rename = "updatedAt")]
    pub updated_at: Option<DateTime<Utc>>,
}

fn view(r: store::proformas::ProformaRow, lang: &str) -> ApiResult<Proforma> {
    let content = workflows::proformas::content(&r)?;
    Ok(Proforma {
        lines: content
            .lines
            .into_iter()
            .map(|l| InvoiceLine::from_domain(l, lang))
            .collect(),
        custom_placeholder_values: content.placeholders,
        exchange_rates: content.rates,
        id: r.id,
        reference: r.reference,
        number: r.number,
        year: r.year,
        recipient_id: r.recipient_id,
        supply_type: SupplyType::parse(&r.supply_type),
        currency_code: r.currency_code,
        treatment: r.treatment,
        line_count: r.line_count,
        net_total: r.net_total,
        tax_total: r.tax_total,
        withholding_total: r.withholding_total,
        total: r.total,
        invoice_id: r.invoice_id,
        created_at: ts(r.created_at)?,
        updated_at: ts_opt(r.updated_at)?,
    })
}

/// Filters of the proforma list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProformaFilter {
    pub recipient_id: Option<String>,
}

/// Lists proformas, newest first.
#[utoipa::path(get, path = "/v1/proformas", tag = "proformas", params(ProformaFilter, ListParams),
    responses((status = 200, body = Page<Proforma>), crate::openapi::ReadErrors))]
pub async fn list_proformas(
    caller: Caller,
    mut db: DbConn,
    Query(f): Query<ProformaFilter>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<Proforma>>> {
    let limit = params.limit()?;
    let rows = store::proformas::list(
        &mut db,
        &caller.company_id,
        f.recipient_id.as_deref(),
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        |r| view(r, caller.language),
    )?))
}

/// Creates a proforma; its reference follows `proformaReferenceFormat`. It takes the
/// recipient, lines, currency, supply type, placeholders and exchange rates of an invoice
/// request; `bank_account_ids`, `due_date`, the references, the supply date or period and
/// `notes` belong on the invoice made from it and are refused (400, naming them).
#[utoipa::path(post, path = "/v1/proformas", tag = "proformas", request_body = CreateInvoiceRequest,
    responses((status = 201, body = Proforma), crate::openapi::WriteErrors))]
pub async fn create_proforma(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateInvoiceRequest>,
) -> ApiResult<(StatusCode, Json<Proforma>)> {
    let row = workflows::proformas::create(state.services(), &tx, &caller.company_id, req).await?;
    Ok((StatusCode::CREATED, Json(view(row, caller.language)?)))
}

/// One proforma with its lines.
#[utoipa::path(get, path = "/v1/proformas/{id}", tag = "proformas",
    params(("id" = String, Path, description = "Proforma id")),
    responses((status = 200, body = Proforma), crate::openapi::ReadErrors))]
pub async fn get_proforma(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<Proforma>> {
    let row = load(&mut db, &caller.company_id, &id).await?;
    Ok(Json(view(row, caller.language)?))
}

/// Changes a proforma (its reference stays).
#[utoipa::path(patch, path = "/v1/proformas/{id}", tag = "proformas", request_body = UpdateInvoiceRequest,
    params(("id" = String, Path, description = "Proforma id")),
    responses((status = 200, body = Proforma), crate::openapi::WriteErrors))]
pub async fn update_proforma(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateInvoiceRequest>,
) -> ApiResult<Json<Proforma>> {
    let row = workflows::proformas::update(&tx, &caller.company_id, &id, req).await?;
    Ok(Json(view(row, caller.language)?))
}

/// Deletes a proforma.
#[utoipa::path(delete, path = "/v1/proformas/{id}", tag = "proformas",
    params(("id" = String, Path, description = "Proforma id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_proforma(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    workflows::proformas::delete(&tx, &caller.company_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Makes a draft invoice from a proforma and links both (once).
#[utoipa::path(post, path = "/v1/proformas/{id}/invoice", tag = "proformas",
    params(("id" = String, Path, description = "Proforma id")),
    responses((status = 201, body = Invoice),
        (status = 409, description = "Already invoiced", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn invoice_proforma(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<Invoice>)> {
    let invoice =
        workflows::proformas::to_invoice(state.services(), &tx, &caller.company_id, &id).await?;
    Ok((
        StatusCode::CREATED,
        Json(invoices::view(invoice, caller.language, &state)?),
    ))
}

/// Deletes every listed proforma; other companies' ids are ignored.
#[utoipa::path(post, path = "/v1/proformas/bulk/delete", tag = "proformas", request_body = BulkIdsRequest,
    responses((status = 200, body = BulkActionResult), crate::openapi::WriteErrors))]
pub async fn bulk_delete_proformas(
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<BulkIdsRequest>,
) -> ApiResult<Json<BulkActionResult>> {
    let affected =
        workflows::proformas::delete_many(&tx, &caller.company_id, bulk_ids(req)?).await?;
    Ok(Json(BulkActionResult { affected }))
}
