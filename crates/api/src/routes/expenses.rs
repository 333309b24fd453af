//! Expenses (`/v1/expenses`): supplier bills with lines and an optional receipt file.

use axum::{
    Json,
    body::Bytes,
    extract::{Path, Query, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::files::FileStore;

use super::invoices::{
    issue::{BulkActionResult, BulkIdsRequest, bulk_ids},
    model::InvoiceLine,
    to_json,
};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    views::{optional_text, required_text, ts, ts_opt},
};

/// `source` of an expense recorded through the JSON API or the web app.
pub const SOURCE_MANUAL: &str = "manual";
/// `source` of an expense imported from a supplier's e-invoice (`POST /v1/expenses/import`).
pub const SOURCE_EINVOICE: &str = "einvoice";

/// Largest receipt, in bytes (10 MiB).
pub const MAX_RECEIPT: usize = 10 * 1024 * 1024;

/// One expense line (the MCP `create_expense` line shape).
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExpenseLineRequest {
    pub concept: String,
    /// Line amount, minor units.
    pub subtotal: i64,
    #[serde(default, deserialize_with = "super::invoices::model::decimal_opt")]
    #[schema(value_type = Option<f64>)]
    pub quantity: Option<rust_decimal::Decimal>,
    #[serde(default)]
    pub quantity_unit: Option<String>,
    #[serde(default)]
    pub unit_price: Option<i64>,
    #[serde(default)]
    pub unit_unit: Option<String>,
    /// A tax line (e.g. the VAT charged by the supplier).
    #[serde(default)]
    pub is_tax: bool,
    #[serde(default)]
    pub tax_amount: Option<i64>,
}

/// Recording an expense.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateExpenseRequest {
    /// The supplier: an entity of the company.
    pub supplier_id: String,
    /// The supplier's invoice number; unique per supplier.
    pub invoice_reference: String,
    pub lines: Vec<ExpenseLineRequest>,
    #[serde(default)]
    pub category: Option<String>,
    /// Defaults to the supplier's currency.
    #[serde(default)]
    pub currency_code: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Frozen rate to the company currency, in millionths (1.2345 is 1234500).
    #[serde(default)]
    pub exchange_rate: Option<i64>,
    /// Defaults to now.
    #[serde(default)]
    pub expense_date: Option<DateTime<Utc>>,
}

/// Changing an expense: any subset of the create fields.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateExpenseRequest {
    pub supplier_id: Option<String>,
    pub invoice_reference: Option<String>,
    pub lines: Option<Vec<ExpenseLineRequest>>,
    pub category: Option<String>,
    pub currency_code: Option<String>,
    pub description: Option<String>,
    pub exchange_rate: Option<i64>,
    pub expense_date: Option<DateTime<Utc>>,
}

/// The stored receipt's metadata.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReceiptInfo {
    pub content_type: String,
    pub size: i64,
}

/// An expense.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Expense {
    pub id: String,
    pub supplier_id: String,
    pub invoice_reference: String,
    pub category: Option<String>,
    pub description: Option<String>,
    pub currency_code: String,
    pub exchange_rate: Option<i64>,
    pub expense_date: DateTime<Utc>,
    pub lines: Vec<InvoiceLine>,
    #[serde(rename = "lineCount")]
    pub line_count: i64,
    pub net_total: i64,
    pub tax_total: i64,
    pub total: i64,
    pub receipt: Option<ReceiptInfo>,
    /// `manual` (recorded by hand or through the JSON API) or `einvoice` (imported from the
    /// supplier's e-invoice, which is its receipt).
    pub source: String,
    /// For an imported credit note: the expense of the invoice it corrects, when known.
    pub corrected_expense_id: Option<String>,
    #[serde(rename = "createdAt")]
    pub created_at: DateTime<Utc>,
    #[serde(rename = "updatedAt")]
    pub updated_at: Option<DateTime<Utc>>,
}

impl Expense {
    /// The view of a stored expense; lines that do not decode are an error.
    pub fn of(e: store::expenses::ExpenseRow) -> ApiResult<Self> {
        let lines: Vec<domain::invoice::Line> =
            crate::documents::parse(&format!("expense {} lines", e.id), &e.lines_json)?;
        Ok(Self {
            lines: lines
                .into_iter()
                .map(|l| InvoiceLine::from_domain(l, "en"))
                .collect(),
            receipt: e.receipt_content_type.map(|content_type| ReceiptInfo {
                content_type,
                size: e.receipt_size.unwrap_or(0),
            }),
            id: e.id,
            supplier_id: e.supplier_id,
            invoice_reference: e.invoice_reference,
            category: e.category,
            description: e.description,
            currency_code: e.currency_code,
            exchange_rate: e.exchange_rate,
            expense_date: ts(e.expense_date)?,
            line_count: e.line_count,
            net_total: e.net_total,
            tax_total: e.tax_total,
            total: e.total,
            source: e.source,
            corrected_expense_id: e.corrected_expense_id,
            created_at: ts(e.created_at)?,
            updated_at: ts_opt(e.updated_at)?,
        })
    }
}

/// Filters of the expense list.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExpenseFilter {
    pub supplier_id: Option<String>,
}

pub(crate) async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> ApiResult<store::expenses::ExpenseRow> {
    store::expenses::get(conn, company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("expense"))
}

/// Validates a whole expense into `row`.
async fn apply(
    conn: &mut sqlx::AnyConnection,
    row: &mut store::expenses::ExpenseRow,
    req: CreateExpenseRequest,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let supplier = store::entities::get(conn, &row.company_id, &req.supplier_id)
        .await?
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "`supplier_id` {} is not an entity of this company (GET /v1/entities lists them).",
                req.supplier_id
            ))
        })?;
    row.invoice_reference = required_text("invoice_reference", &req.invoice_reference, 100)?;
    row.category = optional_text("category", req.category, 100)?;
    row.description = optional_text("description", req.description, 2000)?;
    row.currency_code = match req.currency_code.filter(|c| !c.trim().is_empty()) {
        Some(c) => domain::currency::CurrencyCode::parse(&c)
            .map_err(|e| ApiError::bad_request(format!("`currency_code`: {e}.")))?
            .code()
            .to_owned(),
        None => supplier.currency_code.clone(),
    };
    if let Some(r) = req.exchange_rate
        && r <= 0
    {
        return Err(ApiError::bad_request(
            "`exchange_rate` must be positive (millionths: 1.2345 is 1234500).",
        ));
    }
    row.exchange_rate = req.exchange_rate;
    row.expense_date = req.expense_date.unwrap_or(now).timestamp_micros();
    let inputs: Vec<domain::invoice::LineInput> = req
        .lines
        .iter()
        .map(|l| domain::invoice::LineInput {
            concept: l.concept.clone(),
            quantity: l.quantity.unwrap_or(rust_decimal::Decimal::ONE),
            quantity_unit: l.quantity_unit.clone(),
            unit_price: l.unit_price.unwrap_or(l.subtotal),
            unit_unit: l.unit_unit.clone(),
            is_tax: l.is_tax,
            tax_amount: l.tax_amount.or(l.is_tax.then_some(l.subtotal)),
            subtotal: Some(l.subtotal),
        })
        .collect();
    let (lines, totals) = domain::invoice::compute(&inputs, None)
        .map_err(|e| ApiError::bad_request(format!("{e}.")))?;
    row.supplier_id = supplier.id;
    row.net_total = totals.net;
    row.tax_total = totals.tax;
    row.total = totals.total;
    row.line_count = lines.len() as i64;
    row.lines_json = to_json(&lines)?;
    Ok(())
}

/// Maps the unique (supplier, reference) violation to a 400 naming the reference.
fn duplicate(e: sqlx::Error, reference: &str) -> ApiError {
    if store::is_unique_violation(&e) {
        ApiError::bad_request(format!(
            "`invoice_reference` {reference} is already recorded for this supplier; each supplier invoice is recorded once."
        ))
    } else {
        e.into()
    }
}

/// Lists expenses, newest first.
#[utoipa::path(get, path = "/v1/expenses", tag = "expenses", params(ExpenseFilter, ListParams),
    responses((status = 200, body = Page<Expense>), crate::openapi::ReadErrors))]
pub async fn list_expenses(
    caller: Caller,
    mut db: DbConn,
    Query(f): Query<ExpenseFilter>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<Expense>>> {
    let limit = params.limit()?;
    let rows = store::expenses::list(
        &mut db,
        &caller.company_id,
        f.supplier_id.as_deref(),
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        Expense::of,
    )?))
}

/// Records an expense.
#[utoipa::path(post, path = "/v1/expenses", tag = "expenses", request_body = CreateExpenseRequest,
    responses((status = 201, body = Expense), crate::openapi::WriteErrors))]
pub async fn create_expense(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateExpenseRequest>,
) -> ApiResult<(StatusCode, Json<Expense>)> {
    let mut conn = tx.conn().await?;
    let now = state.now();
    let mut row = store::expenses::ExpenseRow {
        id: store::new_id(),
        company_id: caller.company_id.clone(),
        supplier_id: String::new(),
        invoice_reference: String::new(),
        category: None,
        description: None,
        currency_code: String::new(),
        exchange_rate: None,
        expense_date: 0,
        net_total: 0,
        tax_total: 0,
        total: 0,
        line_count: 0,
        lines_json: String::new(),
        receipt_file_id: None,
        created_at: now.timestamp_micros(),
        updated_at: None,
        receipt_content_type: None,
        receipt_size: None,
        source: SOURCE_MANUAL.to_owned(),
        corrected_expense_id: None,
    };
    apply(&mut conn, &mut row, req, now).await?;
    store::expenses::insert(&mut conn, &row)
        .await
        .map_err(|e| duplicate(e, &row.invoice_reference))?;
    crate::routes::webhooks::emit_expense(&mut conn, &row).await?;
    Ok((StatusCode::CREATED, Json(Expense::of(row)?)))
}

/// One expense.
#[utoipa::path(get, path = "/v1/expenses/{id}", tag = "expenses",
    params(("id" = String, Path, description = "Expense id")),
    responses((status = 200, body = Expense), crate::openapi::ReadErrors))]
pub async fn get_expense(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<Expense>> {
    Ok(Json(Expense::of(
        load(&mut db, &caller.company_id, &id).await?,
    )?))
}

/// Changes an expense.
#[utoipa::path(patch, path = "/v1/expenses/{id}", tag = "expenses", request_body = UpdateExpenseRequest,
    params(("id" = String, Path, description = "Expense id")),
    responses((status = 200, body = Expense), crate::openapi::WriteErrors))]
pub async fn update_expense(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateExpenseRequest>,
) -> ApiResult<Json<Expense>> {
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    let current = Expense::of(row.clone())?;
    let merged = CreateExpenseRequest {
        supplier_id: req.supplier_id.unwrap_or(current.supplier_id),
        invoice_reference: req.invoice_reference.unwrap_or(current.invoice_reference),
        lines: req.lines.unwrap_or_else(|| {
            current
                .lines
                .iter()
                .map(|l| ExpenseLineRequest {
                    concept: l.concept.clone(),
                    subtotal: l.subtotal,
                    quantity: Some(l.quantity),
                    quantity_unit: l.quantity_unit.clone(),
                    unit_price: Some(l.unit_price),
                    unit_unit: l.unit_unit.clone(),
                    is_tax: l.is_tax,
                    tax_amount: l.tax_amount,
                })
                .collect()
        }),
        category: req.category.or(current.category),
        currency_code: Some(req.currency_code.unwrap_or(current.currency_code)),
        description: req.description.or(current.description),
        exchange_rate: req.exchange_rate.or(current.exchange_rate),
        expense_date: Some(req.expense_date.unwrap_or(current.expense_date)),
    };
    apply(&mut conn, &mut row, merged, state.now()).await?;
    store::expenses::update(&mut conn, &row)
        .await
        .map_err(|e| duplicate(e, &row.invoice_reference))?;
    Ok(Json(Expense::of(
        load(&mut conn, &caller.company_id, &id).await?,
    )?))
}

/// Deletes an expense and its receipt.
#[utoipa::path(delete, path = "/v1/expenses/{id}", tag = "expenses",
    params(("id" = String, Path, description = "Expense id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_expense(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    if store::expenses::delete(&mut conn, &caller.company_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("expense"))
    }
}

/// Deletes every listed expense; other companies' ids are ignored.
#[utoipa::path(post, path = "/v1/expenses/bulk/delete", tag = "expenses", request_body = BulkIdsRequest,
    responses((status = 200, body = BulkActionResult), crate::openapi::WriteErrors))]
pub async fn bulk_delete_expenses(
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<BulkIdsRequest>,
) -> ApiResult<Json<BulkActionResult>> {
    let mut conn = tx.conn().await?;
    let mut affected = 0;
    for id in bulk_ids(req)? {
        if store::expenses::delete(&mut conn, &caller.company_id, &id).await? {
            affected += 1;
        }
    }
    Ok(Json(BulkActionResult { affected }))
}

/// The type of a receipt, from its first bytes (never from the client's word).
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Stores (or replaces) the receipt: PDF, PNG, JPEG or WebP, at most 10 MiB.
#[utoipa::path(put, path = "/v1/expenses/{id}/receipt", tag = "expenses",
    params(("id" = String, Path, description = "Expense id")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "The file's bytes"),
    responses((status = 200, body = Expense), crate::openapi::WriteErrors))]
pub async fn put_receipt(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> ApiResult<Json<Expense>> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge("A receipt may be at most 10 MiB.".into())
        } else {
            ApiError::bad_request(format!("The receipt could not be read: {e}"))
        }
    })?;
    let content_type = sniff(&bytes).ok_or_else(|| {
        ApiError::bad_request(
            "The receipt must be a PDF, PNG, JPEG or WebP file (checked from its content).",
        )
    })?;
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    let files = state.db.files();
    let old = row.receipt_file_id.take();
    row.receipt_file_id = Some(
        files
            .put(&mut conn, &caller.company_id, content_type, &bytes)
            .await?,
    );
    store::expenses::update(&mut conn, &row).await?;
    if let Some(old) = old {
        files.delete(&mut conn, &caller.company_id, &old).await?;
    }
    Ok(Json(Expense::of(
        load(&mut conn, &caller.company_id, &id).await?,
    )?))
}

/// Downloads the receipt with its type.
#[utoipa::path(get, path = "/v1/expenses/{id}/receipt", tag = "expenses",
    params(("id" = String, Path, description = "Expense id")),
    responses((status = 200, description = "The file", content_type = "application/octet-stream", body = Vec<u8>),
        crate::openapi::ReadErrors))]
pub async fn get_receipt(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let row = load(&mut db, &caller.company_id, &id).await?;
    let file_id = row
        .receipt_file_id
        .ok_or_else(|| ApiError::NotFound("This expense has no receipt.".into()))?;
    let file = state
        .db
        .files()
        .get(&mut db, &caller.company_id, &file_id)
        .await?
        .ok_or_else(|| ApiError::not_found("receipt"))?;
    let extension = match file.content_type.as_str() {
        "application/pdf" => "pdf",
        "image/png" => "png",
        "image/jpeg" => "jpg",
        "image/webp" => "webp",
        "application/xml" => "xml",
        _ => "bin",
    };
    let disposition = crate::views::content_disposition(
        crate::views::Disposition::Inline,
        &format!("receipt-{id}.{extension}"),
    );
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_str(&file.content_type)
                    .map_err(|e| ApiError::Internal(e.into()))?,
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        file.data,
    )
        .into_response())
}
