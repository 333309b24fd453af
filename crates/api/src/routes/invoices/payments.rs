//! Payments received on issued invoices (`/v1/invoices/{id}/payments`); the workflows are
//! [`crate::workflows::payments`].

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
    views::ts,
    workflows,
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

impl TryFrom<store::payments::PaymentRow> for Payment {
    type Error = ApiError;

    fn try_from(p: store::payments::PaymentRow) -> ApiResult<Self> {
        Ok(Self {
            id: p.id,
            invoice_id: p.invoice_id,
            amount_minor: p.amount_minor,
            paid_at: ts(p.paid_at)?,
            bank_account_id: p.bank_account_id,
            note: p.note,
            created_at: ts(p.created_at)?,
        })
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
    let row =
        workflows::payments::record(state.services(), &tx, &caller.company_id, &id, req).await?;
    Ok((StatusCode::CREATED, Json(row.try_into()?)))
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
        data: rows
            .into_iter()
            .map(Payment::try_from)
            .collect::<ApiResult<_>>()?,
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
    workflows::payments::delete(&tx, &caller.company_id, &id, &pid).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `unpaid`, `partially_paid`, `paid` or `overdue` for an issued ordinary invoice. `paid`
/// once nothing is left to pay, so an invoice with a total of zero (or less) is paid when
/// issued; the same condition (`paid_minor >= total`) as the list filter, the dashboard's
/// counts, reminders and the overdue webhook.
pub fn payment_status(r: &store::invoices::InvoiceRow, now: i64) -> Option<&'static str> {
    if r.status != store::invoices::InvoiceStatus::Issued
        || r.series != store::invoices::Series::Invoice
    {
        return None;
    }
    Some(if r.paid_minor >= r.total {
        "paid"
    } else if r.due_date.is_some_and(|d| d < now) {
        "overdue"
    } else if r.paid_minor > 0 {
        "partially_paid"
    } else {
        "unpaid"
    })
}
