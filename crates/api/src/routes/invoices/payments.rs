//! Payments received on issued invoices (`/v1/invoices/{id}/payments`).

use axum::{
    Json,
    extract::{Path, State},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::load;
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    views::{optional_text, ts},
};

/// Recording a payment.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePaymentRequest {
    /// Amount received, minor units of the invoice currency (positive).
    pub amount_minor: i64,
    /// When it was received; defaults to now.
    #[serde(default)]
    pub paid_at: Option<DateTime<Utc>>,
    /// The company bank account it arrived in.
    #[serde(default)]
    pub bank_account_id: Option<String>,
    #[serde(default)]
    pub note: Option<String>,
}

/// A recorded payment.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Payment {
    pub id: String,
    pub invoice_id: String,
    pub amount_minor: i64,
    pub paid_at: DateTime<Utc>,
    pub bank_account_id: Option<String>,
    pub note: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<store::payments::PaymentRow> for Payment {
    fn from(p: store::payments::PaymentRow) -> Self {
        Self {
            id: p.id,
            invoice_id: p.invoice_id,
            amount_minor: p.amount_minor,
            paid_at: ts(p.paid_at),
            bank_account_id: p.bank_account_id,
            note: p.note,
            created_at: ts(p.created_at),
        }
    }
}

/// The payments of an invoice.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PaymentList {
    pub data: Vec<Payment>,
}

/// Records a payment on an issued invoice; more than the outstanding amount is a 400.
#[utoipa::path(post, path = "/v1/invoices/{id}/payments", tag = "invoices", request_body = CreatePaymentRequest,
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 201, body = Payment), crate::openapi::WriteErrors))]
pub async fn create_payment(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreatePaymentRequest>,
) -> ApiResult<(StatusCode, Json<Payment>)> {
    let mut conn = tx.conn().await?;
    let invoice = load(&mut conn, &caller.company_id, &id).await?;
    if invoice.status != store::invoices::InvoiceStatus::Issued
        || invoice.series != store::invoices::Series::Invoice
    {
        return Err(ApiError::bad_request(
            "Payments are recorded on issued invoices only (not on drafts or corrective invoices).",
        ));
    }
    if req.amount_minor <= 0 {
        return Err(ApiError::bad_request("`amount_minor` must be positive."));
    }
    let outstanding = invoice.total - invoice.paid_minor;
    if req.amount_minor > outstanding {
        return Err(ApiError::bad_request(format!(
            "`amount_minor` {} is more than the {} still outstanding on this invoice.",
            req.amount_minor, outstanding
        )));
    }
    if let Some(account) = &req.bank_account_id
        && store::bank_accounts::get(&mut conn, &caller.company_id, account)
            .await?
            .is_none()
    {
        return Err(ApiError::bad_request(format!(
            "`bank_account_id` {account} is not a bank account of this company."
        )));
    }
    let now = state.now();
    let row = store::payments::PaymentRow {
        id: store::new_id(),
        invoice_id: id,
        amount_minor: req.amount_minor,
        paid_at: req.paid_at.unwrap_or(now).timestamp_micros(),
        bank_account_id: req.bank_account_id,
        note: optional_text("note", req.note, 500)?,
        created_at: now.timestamp_micros(),
    };
    store::payments::insert(&mut conn, &caller.company_id, &row).await?;
    crate::routes::webhooks::emit_paid(
        &mut conn,
        &caller.company_id,
        &row.invoice_id,
        outstanding == req.amount_minor,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// Lists the payments of an invoice, newest first.
#[utoipa::path(get, path = "/v1/invoices/{id}/payments", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, body = PaymentList), crate::openapi::ReadErrors))]
pub async fn list_payments(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<PaymentList>> {
    load(&mut db, &caller.company_id, &id).await?;
    let rows = store::payments::list(&mut db, &caller.company_id, &id).await?;
    Ok(Json(PaymentList {
        data: rows.into_iter().map(Payment::from).collect(),
    }))
}

/// Deletes a payment (e.g. recorded by mistake).
#[utoipa::path(delete, path = "/v1/invoices/{id}/payments/{pid}", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("pid" = String, Path, description = "Payment id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_payment(
    caller: Caller,
    tx: Tx,
    Path((id, pid)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    if store::payments::delete(&mut conn, &caller.company_id, &id, &pid).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("payment"))
    }
}

/// `unpaid`, `partially_paid`, `paid` or `overdue` for an issued ordinary invoice.
pub fn payment_status(r: &store::invoices::InvoiceRow, now: i64) -> Option<&'static str> {
    if r.status != store::invoices::InvoiceStatus::Issued
        || r.series != store::invoices::Series::Invoice
    {
        return None;
    }
    Some(if r.total > 0 && r.paid_minor >= r.total {
        "paid"
    } else if r.due_date.is_some_and(|d| d < now) {
        "overdue"
    } else if r.paid_minor > 0 {
        "partially_paid"
    } else {
        "unpaid"
    })
}
