//! Corrective invoices: a draft (`/corrections`) or created and issued at once (`/correct`);
//! the workflows are [`crate::workflows::corrections`].

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use serde::Deserialize;

use super::{
    load,
    model::{ExchangeRateEntry, Invoice, InvoiceLineRequest, InvoiceVerifactu, SupplyType},
    view,
};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::ApiResult,
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    routes::entities::PlaceholderValue,
    workflows,
};

/// What a corrective invoice changes; every field is optional.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateCorrectiveInvoiceRequest {
    /// Empty: the corrected invoice's lines with negated amounts (a full reversal).
    #[serde(default)]
    pub lines: Vec<InvoiceLineRequest>,
    /// Empty keeps the corrected invoice's values.
    #[serde(default)]
    pub custom_placeholder_values: Vec<PlaceholderValue>,
    /// Empty keeps the corrected invoice's rates.
    #[serde(default)]
    pub exchange_rates: Vec<ExchangeRateEntry>,
    /// Omitted keeps the corrected invoice's.
    #[serde(default)]
    pub supply_type: Option<SupplyType>,
    /// The legal reason (R1-R5); Spanish issuers default to R1, others ignore it.
    #[serde(default)]
    pub verifactu: Option<InvoiceVerifactu>,
}

/// Creates a corrective draft of an issued invoice.
#[utoipa::path(post, path = "/v1/invoices/{id}/corrections", tag = "invoices",
    request_body = CreateCorrectiveInvoiceRequest,
    params(("id" = String, Path, description = "Id of the issued invoice to correct")),
    responses((status = 201, description = "The corrective draft (CorrectiveInvoice)", body = Invoice),
        (status = 409, description = "The invoice is a draft", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn create_correction(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateCorrectiveInvoiceRequest>,
) -> ApiResult<(StatusCode, Json<Invoice>)> {
    let row =
        workflows::corrections::draft(state.services(), &tx, &caller.company_id, &id, req).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(row, caller.language, &state)?),
    ))
}

/// Creates a corrective invoice and issues it in one step.
#[utoipa::path(post, path = "/v1/invoices/{id}/correct", tag = "invoices",
    request_body = CreateCorrectiveInvoiceRequest,
    params(("id" = String, Path, description = "Id of the issued invoice to correct")),
    responses((status = 201, description = "The issued corrective invoice (CorrectiveInvoice)", body = Invoice),
        (status = 409, description = "The invoice is a draft", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn correct_invoice(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateCorrectiveInvoiceRequest>,
) -> ApiResult<(StatusCode, Json<Invoice>)> {
    let issued = workflows::corrections::correct_and_issue(
        state.services(),
        &tx,
        &caller.company_id,
        &caller.user_id,
        &id,
        req,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(view(issued, caller.language, &state)?),
    ))
}

/// Corrective invoices of an invoice, newest first.
#[utoipa::path(get, path = "/v1/invoices/{id}/corrections", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ListParams),
    responses((status = 200, body = Page<Invoice>), crate::openapi::ReadErrors))]
pub async fn list_corrections(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<Invoice>>> {
    load(&mut db, &caller.company_id, &id).await?;
    let limit = params.limit()?;
    let filter = store::invoices::Filter {
        corrected_invoice_id: Some(&id),
        ..Default::default()
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
