//! Corrective invoices: a draft (`/corrections`) or created and issued at once (`/correct`).

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use serde::Deserialize;

use super::{
    company, issue, load,
    model::{ExchangeRateEntry, Invoice, InvoiceLineRequest, InvoiceVerifactu, SupplyType},
    to_json, view,
};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    routes::entities::PlaceholderValue,
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
    let mut conn = tx.conn().await?;
    let mut row = corrective_draft(&mut conn, &state, &caller, &id, req).await?;
    super::store_new_draft(&mut conn, &state, &mut row).await?;
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
    // Checked before the write transaction, in the order the answers are due: the invoice
    // (404, 409), then whether the company may issue.
    let company = {
        let mut db = state.db.pool().acquire().await?;
        ensure_issued(&load(&mut db, &caller.company_id, &id).await?)?;
        issue::issuing_company(&mut db, &caller).await?
    };
    let mut conn = tx.conn().await?;
    let mut row = corrective_draft(&mut conn, &state, &caller, &id, req).await?;
    super::store_new_draft(&mut conn, &state, &mut row).await?;
    let issued = issue::issue_draft(&mut conn, &state, company, None, row).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(issued, caller.language, &state)?),
    ))
}

/// Only issued invoices can be corrected (409 otherwise).
fn ensure_issued(original: &store::invoices::InvoiceRow) -> ApiResult<()> {
    if original.status == store::invoices::InvoiceStatus::Issued {
        Ok(())
    } else {
        Err(ApiError::Conflict(
            "Only issued invoices can be corrected; edit or delete the draft instead.".into(),
        ))
    }
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

async fn corrective_draft(
    conn: &mut sqlx::AnyConnection,
    state: &AppState,
    caller: &Caller,
    id: &str,
    req: CreateCorrectiveInvoiceRequest,
) -> ApiResult<store::invoices::InvoiceRow> {
    let original = load(conn, &caller.company_id, id).await?;
    ensure_issued(&original)?;
    let doc = crate::documents::of_row(&original)?;
    let company = company(conn, &caller.company_id).await?;
    let spanish = company.is_spanish();
    let reason = match (spanish, req.verifactu) {
        (false, _) => None,
        (true, None) => Some("R1".to_owned()),
        (true, Some(v)) if ["R1", "R2", "R3", "R4", "R5"].contains(&v.reason.as_str()) => {
            Some(v.reason)
        }
        (true, Some(v)) => {
            return Err(ApiError::bad_request(format!(
                "`verifactu.reason` must be one of R1, R2, R3, R4, R5, got `{}`.",
                v.reason
            )));
        }
    };
    let placeholders = if req.custom_placeholder_values.is_empty() {
        doc.presentation
            .placeholders
            .iter()
            .map(|p| PlaceholderValue {
                key: p.key.clone(),
                value: p.value.clone(),
            })
            .collect()
    } else {
        req.custom_placeholder_values
    };
    let rates = if req.exchange_rates.is_empty() {
        doc.exchange_rates
            .iter()
            .map(|r| ExchangeRateEntry {
                from: r.from.clone(),
                to: r.to.clone(),
                rate: r.rate,
                date: r.date.map(|d| d.to_string()),
                source: r.source.clone(),
            })
            .collect()
    } else {
        req.exchange_rates
    };
    let supply = req
        .supply_type
        .unwrap_or(SupplyType::parse(&original.supply_type));
    let reversal = req.lines.is_empty();
    let draft_req = super::CreateInvoiceRequest {
        recipient_id: original.recipient_id.clone(),
        // A placeholder line keeps `build` happy for a reversal; its lines are replaced below.
        lines: if reversal {
            vec![InvoiceLineRequest {
                concept: "reversal".into(),
                quantity: None,
                quantity_unit: None,
                unit_price: None,
                unit_unit: None,
                is_tax: false,
                tax_amount: None,
                subtotal: None,
            }]
        } else {
            req.lines
        },
        bank_account_ids: Vec::new(),
        currency_code: Some(original.currency_code.clone()),
        custom_placeholder_values: placeholders,
        exchange_rates: rates,
        supply_type: Some(supply),
        due_date: None,
        // A corrective invoice names the buyer's references of the invoice it corrects.
        buyer_reference: doc.buyer_reference.clone(),
        order_reference: doc.order_reference.clone(),
        delivery_date: doc.delivery.date,
        period_start: doc.delivery.period_start,
        period_end: doc.delivery.period_end,
        notes: None,
    };
    let mut row = super::priced_draft(
        conn,
        state,
        &caller.company_id,
        draft_req,
        "correction",
        store::invoices::Series::Corrective,
    )
    .await?;
    if reversal {
        let original_lines: Vec<domain::invoice::Line> =
            doc.lines.iter().map(document::Line::to_domain).collect();
        let lines = domain::invoice::reversed(&original_lines);
        let totals =
            domain::invoice::totals(&lines).map_err(|e| ApiError::bad_request(format!("{e}.")))?;
        row.lines_json = to_json(&lines)?;
        row.line_count = lines.len() as i64;
        row.net_total = totals.net;
        row.tax_total = totals.tax;
        row.withholding_total = totals.withholding;
        row.total = totals.total;
        row.treatment = original.treatment.clone();
        row.supply_type = original.supply_type.clone();
    }
    row.bank_accounts_json = to_json(&doc.payment.accounts)?;
    row.corrected_invoice_id = Some(original.id);
    row.correction_reason = reason;
    Ok(row)
}
