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

use self::{
    build::DocumentInput,
    model::{ExchangeRateEntry, Invoice, InvoiceLine, InvoiceLineRequest, SupplyType},
};
use crate::{
    auth::{Caller, DbConn, Source},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    routes::entities::PlaceholderValue,
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

/// Checks a draft's legal details: lengths, no control characters, a whole period.
pub(crate) fn checked_details(
    d: store::invoices::DraftDetails,
) -> ApiResult<store::invoices::DraftDetails> {
    let text = |field: &str, v: Option<String>, max: usize, multiline: bool| {
        let v = crate::views::optional_text(field, v, max)?;
        if let Some(t) = &v
            && t.chars()
                .any(|c| c.is_control() && !(multiline && matches!(c, '\n' | '\t')))
        {
            return Err(ApiError::bad_request(format!(
                "`{field}` must not contain control characters."
            )));
        }
        Ok(v)
    };
    let out = store::invoices::DraftDetails {
        buyer_reference: text("buyer_reference", d.buyer_reference, 200, false)?,
        order_reference: text("order_reference", d.order_reference, 200, false)?,
        notes: text("notes", d.notes, 2000, true)?,
        delivery_date: d.delivery_date,
        period_start: d.period_start,
        period_end: d.period_end,
    };
    match (out.period_start, out.period_end) {
        (Some(a), Some(b)) if a > b => Err(ApiError::bad_request(
            "`period_start` must not be after `period_end`.",
        )),
        (Some(_), None) | (None, Some(_)) => Err(ApiError::bad_request(
            "`period_start` and `period_end` go together: give both, or neither.",
        )),
        _ => Ok(out),
    }
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
    let origin = match caller.source {
        Source::Mcp => "mcp",
        Source::Api => "api",
    };
    // Validated and priced on a pooled connection, so the write transaction (SQLite's
    // single writer) is held only for numbering and storing the draft.
    let mut row = {
        let mut db = state.db.pool().acquire().await?;
        priced_draft(
            &mut db,
            &state,
            &caller.company_id,
            req,
            origin,
            store::invoices::Series::Invoice,
        )
        .await?
    };
    let mut conn = tx.conn().await?;
    store_new_draft(&mut conn, &state, &mut row).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(row, caller.language, &state)?),
    ))
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
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    ensure_draft(&row)?;
    let company = company(&mut conn, &caller.company_id).await?;
    let current = view(row.clone(), "en", &state)?;
    let input = DocumentInput {
        recipient_id: req.recipient_id.unwrap_or(current.recipient_id),
        lines: match req.lines {
            Some(lines) => lines,
            None => current.lines.iter().map(line_request).collect(),
        },
        currency_code: Some(req.currency_code.unwrap_or(current.currency_code)),
        custom_placeholder_values: req
            .custom_placeholder_values
            .unwrap_or(current.custom_placeholder_values),
        exchange_rates: req.exchange_rates.unwrap_or(current.exchange_rates),
        supply_type: Some(req.supply_type.unwrap_or(current.supply_type)),
    };
    let built = build::build(&mut conn, &company, input).await?;
    apply_built(&mut row, built)?;
    if let Some(ids) = req.bank_account_ids {
        row.bank_accounts_json = to_json(
            &crate::routes::bank_accounts::snapshot_for_invoice(
                &mut conn,
                &caller.company_id,
                &ids,
            )
            .await?,
        )?;
    }
    if let Some(due) = req.due_date {
        row.due_date = due.map(|d| d.timestamp_micros());
    }
    let details = store::invoices::DraftDetails {
        buyer_reference: req.buyer_reference.unwrap_or(current.buyer_reference),
        order_reference: req.order_reference.unwrap_or(current.order_reference),
        delivery_date: req.delivery_date.unwrap_or(current.delivery_date),
        period_start: req.period_start.unwrap_or(current.period_start),
        period_end: req.period_end.unwrap_or(current.period_end),
        notes: req.notes.unwrap_or(current.notes),
    };
    row.details_json = checked_details(details)?
        .encode()
        .map_err(|e| ApiError::Internal(e.into()))?;
    store::invoices::update(&mut conn, &row).await?;
    view(
        load(&mut conn, &caller.company_id, &id).await?,
        caller.language,
        &state,
    )
    .map(Json)
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
    let mut conn = tx.conn().await?;
    let row = load(&mut conn, &caller.company_id, &id).await?;
    ensure_draft(&row)?;
    store::invoices::delete_draft(&mut conn, &caller.company_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Stores a new draft (from [`priced_draft`]) with the next draft number of the year, in
/// one round trip; inside the write transaction, which holds the year's draft counter.
pub(crate) async fn store_new_draft(
    conn: &mut sqlx::AnyConnection,
    state: &crate::AppState,
    row: &mut store::invoices::InvoiceRow,
) -> ApiResult<()> {
    row.order_year = Some(i64::from(chrono::Datelike::year(&state.now())));
    row.order_number = Some(store::invoices::insert_numbered_draft(conn, row).await?);
    crate::routes::webhooks::emit_invoice(conn, "invoice.created", row).await?;
    Ok(())
}

/// Builds a new draft row from a create request, validated and priced but not yet
/// numbered; it only reads, so any connection will do.
pub(crate) async fn priced_draft(
    conn: &mut sqlx::AnyConnection,
    state: &crate::AppState,
    company_id: &str,
    req: CreateInvoiceRequest,
    origin: &str,
    series: store::invoices::Series,
) -> ApiResult<store::invoices::InvoiceRow> {
    let company = company(conn, company_id).await?;
    let bank_accounts =
        crate::routes::bank_accounts::snapshot_for_invoice(conn, company_id, &req.bank_account_ids)
            .await?;
    let due_date = req.due_date.flatten().map(|d| d.timestamp_micros());
    let details = store::invoices::DraftDetails {
        buyer_reference: req.buyer_reference,
        order_reference: req.order_reference,
        delivery_date: req.delivery_date,
        period_start: req.period_start,
        period_end: req.period_end,
        notes: req.notes,
    };
    let built = build::build(
        conn,
        &company,
        DocumentInput {
            recipient_id: req.recipient_id,
            lines: req.lines,
            currency_code: req.currency_code,
            custom_placeholder_values: req.custom_placeholder_values,
            exchange_rates: req.exchange_rates,
            supply_type: req.supply_type,
        },
    )
    .await?;
    let now = state.now();
    let mut row = store::invoices::InvoiceRow {
        id: store::new_id(),
        company_id: company_id.to_owned(),
        recipient_id: String::new(),
        series,
        status: store::invoices::InvoiceStatus::Draft,
        origin: origin.to_owned(),
        supply_type: String::new(),
        currency_code: String::new(),
        treatment: None,
        invoice_number: None,
        invoice_year: None,
        reference: None,
        issued_at: None,
        order_number: None,
        order_year: None,
        net_total: 0,
        tax_total: 0,
        withholding_total: 0,
        total: 0,
        line_count: 0,
        lines_json: String::new(),
        custom_placeholder_values_json: String::new(),
        exchange_rates_json: String::new(),
        bank_accounts_json: to_json(&bank_accounts)?,
        issuer_snapshot_json: None,
        recipient_snapshot_json: None,
        corrected_invoice_id: None,
        correction_reason: None,
        proforma_id: None,
        created_at: now.timestamp_micros(),
        updated_at: None,
        due_date,
        paid_minor: 0,
        details_json: String::new(),
        document_json: None,
        recurring_invoice_id: None,
    };
    let details = store::invoices::DraftDetails {
        // The recipient's buyer reference, unless the draft gives its own.
        buyer_reference: match details.buyer_reference {
            Some(given) => Some(given),
            None => entity_buyer_reference(&built.recipient)?,
        },
        ..details
    };
    row.details_json = checked_details(details)?
        .encode()
        .map_err(|e| ApiError::Internal(e.into()))?;
    apply_built(&mut row, built)?;
    Ok(row)
}

/// The `einvoice.buyer_reference` of an entity, copied into its new drafts.
fn entity_buyer_reference(e: &store::entities::EntityRow) -> ApiResult<Option<String>> {
    Ok(e.einvoice_json
        .as_deref()
        .map(|t| {
            crate::documents::parse::<crate::documents::EntityEinvoice>(
                "entity e-invoice settings",
                t,
            )
        })
        .transpose()?
        .and_then(|s| s.buyer_reference))
}

/// Copies a priced document into a row.
pub(crate) fn apply_built(row: &mut store::invoices::InvoiceRow, b: build::Built) -> ApiResult<()> {
    row.recipient_id = b.recipient.id;
    row.supply_type = b.supply_type.as_str().into();
    row.currency_code = b.currency_code;
    row.treatment = b.treatment;
    row.net_total = b.totals.net;
    row.tax_total = b.totals.tax;
    row.withholding_total = b.totals.withholding;
    row.total = b.totals.total;
    row.line_count = b.lines.len() as i64;
    row.lines_json = to_json(&b.lines)?;
    row.custom_placeholder_values_json = to_json(&b.placeholders)?;
    row.exchange_rates_json = to_json(&b.rates)?;
    Ok(())
}

/// Serialises a value stored as a JSON column.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> ApiResult<String> {
    serde_json::to_string(v).map_err(|e| ApiError::Internal(e.into()))
}

/// The request line that reproduces a stored line.
pub(crate) fn line_request(l: &InvoiceLine) -> InvoiceLineRequest {
    InvoiceLineRequest {
        concept: l.concept.clone(),
        quantity: Some(l.quantity),
        quantity_unit: l.quantity_unit.clone(),
        unit_price: Some(l.unit_price),
        unit_unit: l.unit_unit.clone(),
        is_tax: l.is_tax,
        tax_amount: if l.is_tax { l.tax_amount } else { None },
        subtotal: Some(l.subtotal),
    }
}

pub(crate) fn ensure_draft(row: &store::invoices::InvoiceRow) -> ApiResult<()> {
    if row.status == store::invoices::InvoiceStatus::Draft {
        Ok(())
    } else {
        Err(ApiError::Conflict(format!(
            "Invoice {} is issued and cannot change; issue a corrective invoice instead \
             (POST /v1/invoices/{}/corrections).",
            row.reference.as_deref().unwrap_or(&row.id),
            row.id
        )))
    }
}

pub(crate) async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &str,
    id: &str,
) -> ApiResult<store::invoices::InvoiceRow> {
    store::invoices::get(conn, company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("invoice"))
}

pub(crate) async fn company(
    conn: &mut sqlx::AnyConnection,
    company_id: &str,
) -> ApiResult<store::companies::CompanyRow> {
    store::companies::get(conn, company_id)
        .await?
        .ok_or_else(|| ApiError::not_found("company"))
}

/// The API view of a stored invoice, as of the service's clock.
pub(crate) fn view(
    r: store::invoices::InvoiceRow,
    lang: &str,
    state: &crate::AppState,
) -> ApiResult<Invoice> {
    crate::documents::views::invoice(r, lang, state.now().timestamp_micros())
}
