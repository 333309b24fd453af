//! Issuing (`/v1/invoices/{id}/issue`) and bulk actions; the workflow is
//! [`crate::workflows::issue`].

use axum::{
    Json,
    extract::{Path, State},
};
use serde::{Deserialize, Serialize};

use super::model::Invoice;
use crate::{
    AppState,
    auth::Caller,
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    workflows,
};

/// Issues a draft: assigns the next number of its series and year, freezes the reference,
/// recipient, company data, placeholder values and exchange rates.
#[utoipa::path(post, path = "/v1/invoices/{id}/issue", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, body = Invoice),
        (status = 409, description = "Already issued", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn issue_invoice(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<Invoice>> {
    let issued = workflows::issue::issue(
        state.services(),
        &tx,
        &caller.company_id,
        &caller.user_id,
        &id,
    )
    .await?;
    let issued = crate::documents::views::issued_with(
        issued.row,
        issued.doc,
        caller.language,
        state.now().timestamp_micros(),
    )?;
    tx.done().await?;
    Ok(Json(issued))
}

/// Ids for a bulk action; ids that are not the caller's are ignored.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkIdsRequest {
    pub ids: Vec<String>,
}

/// How many requested documents the action applied to.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BulkActionResult {
    #[schema(minimum = 0)]
    pub affected: i64,
}

/// Deduplicated, bounded ids.
pub fn bulk_ids(req: BulkIdsRequest) -> ApiResult<Vec<String>> {
    if req.ids.len() > 500 {
        return Err(ApiError::bad_request("`ids` takes at most 500 ids."));
    }
    let mut ids = req.ids;
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Issues every listed draft, in the order of their draft numbers; all or nothing.
#[utoipa::path(post, path = "/v1/invoices/bulk/issue", tag = "invoices", request_body = BulkIdsRequest,
    responses((status = 200, body = BulkActionResult), crate::openapi::WriteErrors))]
pub async fn bulk_issue(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<BulkIdsRequest>,
) -> ApiResult<Json<BulkActionResult>> {
    let ids = bulk_ids(req)?;
    let affected = workflows::issue::issue_many(
        state.services(),
        &tx,
        &caller.company_id,
        &caller.user_id,
        ids,
    )
    .await?;
    Ok(Json(BulkActionResult { affected }))
}

/// Deletes every listed draft; issued invoices and other companies' ids are ignored.
#[utoipa::path(post, path = "/v1/invoices/bulk/delete", tag = "invoices", request_body = BulkIdsRequest,
    responses((status = 200, body = BulkActionResult), crate::openapi::WriteErrors))]
pub async fn bulk_delete(
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<BulkIdsRequest>,
) -> ApiResult<Json<BulkActionResult>> {
    let ids = bulk_ids(req)?;
    let affected = workflows::drafts::delete_many(&tx, &caller.company_id, ids).await?;
    Ok(Json(BulkActionResult { affected }))
}
