//! `POST /v1/taxes/prefill`: previews the taxes of lines for a recipient, writing nothing.

use axum::{Json, extract::State};
use serde::{Deserialize, Serialize};

use super::invoices::{
    build,
    model::{InvoiceLine, InvoiceLineRequest, SupplyType},
};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    json::ApiJson,
};

/// What to price.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TaxPrefillRequest {
    pub recipient_id: String,
    #[serde(default)]
    pub supply_type: Option<SupplyType>,
    pub lines: Vec<InvoiceLineRequest>,
}

/// The lines with their computed taxes, and the treatment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TaxPrefill {
    /// e.g. `domestic`, `reverse_charge`, `export_exempt`; null when no VAT applies.
    pub treatment: Option<String>,
    /// Legal mention to print for the treatment, if any.
    pub legal_mention: Option<String>,
    pub lines: Vec<InvoiceLine>,
    pub net_total: i64,
    pub tax_total: i64,
    pub withholding_total: i64,
    pub total: i64,
}

/// Previews taxes for a recipient, supply type and lines (nothing is stored).
///
/// A POST that reads only: it is never held for review.
#[utoipa::path(post, path = "/v1/taxes/prefill", tag = "invoices", request_body = TaxPrefillRequest,
    responses((status = 200, body = TaxPrefill), crate::openapi::WriteErrors))]
pub async fn prefill(
    State(_state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    ApiJson(req): ApiJson<TaxPrefillRequest>,
) -> ApiResult<Json<TaxPrefill>> {
    let company = super::invoices::company(&mut db, &caller.company_id).await?;
    let recipient = build::recipient(&mut db, &caller.company_id, &req.recipient_id).await?;
    let supply = req.supply_type.unwrap_or_default();
    let ctx = domain::invoice::TaxContext {
        issuer: build::issuer(&company)?,
        recipient: build::recipient_party(&recipient)?,
        supply: supply.domain(),
    };
    let inputs: Vec<_> = req.lines.iter().map(InvoiceLineRequest::domain).collect();
    let (lines, totals) = domain::invoice::compute(&inputs, Some(&ctx))
        .map_err(|e| ApiError::bad_request(format!("{e}.")))?;
    let treatment = domain::tax::determine_treatment(&ctx.issuer.party, &ctx.recipient, ctx.supply);
    Ok(Json(TaxPrefill {
        treatment: lines
            .iter()
            .flat_map(|l| &l.tax_lines)
            .find(|t| t.kind == "vat")
            .map(|t| t.treatment.clone())
            .or_else(|| (treatment.code() == "no_vat").then(|| "no_vat".to_owned())),
        legal_mention: treatment.legal_mention(caller.language).map(str::to_owned),
        lines: lines
            .into_iter()
            .map(|l| InvoiceLine::from_domain(l, caller.language))
            .collect(),
        net_total: totals.net,
        tax_total: totals.tax,
        withholding_total: totals.withholding,
        total: totals.total,
    }))
}
