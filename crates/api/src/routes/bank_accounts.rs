//! Bank accounts (`/v1/bank-accounts`) with balance snapshots; at most one default per company.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::{ApiJson, double_option},
    pagination::{ListParams, Page},
    views::{optional_text, required_text, ts, ts_opt},
};

/// A bank account with its current balance.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct BankAccountView {
    pub id: String,
    pub name: String,
    pub currency_code: String,
    /// The default account (at most one per company).
    pub is_main: bool,
    pub created_at: DateTime<Utc>,
    /// Date of the latest snapshot.
    pub balance_as_of: Option<DateTime<Utc>>,
    pub bank_name: Option<String>,
    pub bic: Option<String>,
    /// Electronic form, no spaces.
    pub iban: Option<String>,
    /// From the latest snapshot by `as_of_date`; null until a balance is recorded.
    pub current_balance_minor: Option<i64>,
    pub updated_at: Option<DateTime<Utc>>,
}

impl TryFrom<store::bank_accounts::AccountRow> for BankAccountView {
    type Error = ApiError;

    fn try_from(a: store::bank_accounts::AccountRow) -> ApiResult<Self> {
        Ok(Self {
            id: a.id,
            name: a.name,
            currency_code: a.currency_code,
            is_main: a.is_main == 1,
            created_at: ts(a.created_at)?,
            balance_as_of: ts_opt(a.balance_as_of)?,
            bank_name: a.bank_name,
            bic: a.bic,
            iban: a.iban,
            current_balance_minor: a.current_balance_minor,
            updated_at: ts_opt(a.updated_at)?,
        })
    }
}

/// A recorded balance.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BalanceSnapshotView {
    pub id: String,
    pub bank_account_id: String,
    pub as_of_date: DateTime<Utc>,
    /// Signed, minor units.
    pub balance_minor: i64,
    pub created_at: DateTime<Utc>,
    pub note: Option<String>,
}

impl TryFrom<store::bank_accounts::SnapshotRow> for BalanceSnapshotView {
    type Error = ApiError;

    fn try_from(s: store::bank_accounts::SnapshotRow) -> ApiResult<Self> {
        Ok(Self {
            id: s.id,
            bank_account_id: s.bank_account_id,
            as_of_date: ts(s.as_of_date)?,
            balance_minor: s.balance_minor,
            created_at: ts(s.created_at)?,
            note: s.note,
        })
    }
}

/// An account with its snapshots, newest first (the first is the current balance).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct BankAccountDetail {
    pub account: BankAccountView,
    pub snapshots: Vec<BalanceSnapshotView>,
}

/// Creating an account.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBankAccountRequest {
    pub name: String,
    #[serde(default)]
    pub bank_name: Option<String>,
    #[serde(default)]
    pub bic: Option<String>,
    #[serde(default)]
    pub iban: Option<String>,
    /// Defaults to `EUR`.
    #[serde(default)]
    pub currency_code: Option<String>,
    /// The first account of a company is always the default.
    #[serde(default)]
    pub is_main: Option<bool>,
}

/// Changing an account.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateBankAccountRequest {
    pub name: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub bank_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub bic: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub iban: Option<Option<String>>,
    pub currency_code: Option<String>,
    /// `true` makes this the default (the old default is unset atomically).
    pub is_main: Option<bool>,
}

/// Recording a balance.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBalanceSnapshotRequest {
    pub balance_minor: i64,
    /// Defaults to now.
    #[serde(default)]
    pub as_of_date: Option<DateTime<Utc>>,
    #[serde(default)]
    pub note: Option<String>,
}

fn iban(v: Option<String>) -> ApiResult<Option<String>> {
    optional_text("iban", v, 50)?
        .map(|i| {
            domain::bank::Iban::parse(&i)
                .map(|i| i.as_str().to_owned())
                .map_err(|e| ApiError::bad_request(format!("`iban`: {e}.")))
        })
        .transpose()
}

fn bic(v: Option<String>) -> ApiResult<Option<String>> {
    optional_text("bic", v, 11)?
        .map(|b| {
            domain::bank::Bic::parse(&b)
                .map(|b| b.as_str().to_owned())
                .map_err(|e| ApiError::bad_request(format!("`bic`: {e}.")))
        })
        .transpose()
}

fn currency(v: &str) -> ApiResult<String> {
    domain::currency::CurrencyCode::parse(v)
        .map(|c| c.code().to_owned())
        .map_err(|e| ApiError::bad_request(format!("`currency_code`: {e}.")))
}

async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> ApiResult<store::bank_accounts::AccountRow> {
    store::bank_accounts::get(conn, company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("bank account"))
}

/// Lists the company's bank accounts, newest first.
#[utoipa::path(get, path = "/v1/bank-accounts", tag = "bank-accounts", params(ListParams),
    responses((status = 200, body = Page<BankAccountView>), crate::openapi::ReadErrors))]
pub async fn list_accounts(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<BankAccountView>>> {
    let limit = params.limit()?;
    let rows = store::bank_accounts::list(
        &mut db,
        &caller.company_id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        BankAccountView::try_from,
    )?))
}

/// Creates an account; IBAN and BIC are checked (checksums).
#[utoipa::path(post, path = "/v1/bank-accounts", tag = "bank-accounts", request_body = CreateBankAccountRequest,
    responses((status = 201, body = BankAccountView), crate::openapi::WriteErrors))]
pub async fn create_account(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateBankAccountRequest>,
) -> ApiResult<(StatusCode, Json<BankAccountView>)> {
    let mut row = store::bank_accounts::AccountRow {
        id: store::new_id(),
        company_id: caller.company_id.clone(),
        name: required_text("name", &req.name, 100)?,
        bank_name: optional_text("bank_name", req.bank_name, 100)?,
        iban: iban(req.iban)?,
        bic: bic(req.bic)?,
        currency_code: currency(req.currency_code.as_deref().unwrap_or("EUR"))?,
        is_main: 0,
        created_at: state.now().timestamp_micros(),
        updated_at: None,
        current_balance_minor: None,
        balance_as_of: None,
    };
    let mut conn = tx.conn().await?;
    store::bank_accounts::lock_company(&mut conn, &caller.company_id).await?;
    let first = store::bank_accounts::count(&mut conn, &caller.company_id).await? == 0;
    if first || req.is_main == Some(true) {
        store::bank_accounts::clear_main(&mut conn, &caller.company_id).await?;
        row.is_main = 1;
    }
    store::bank_accounts::insert(&mut conn, &row).await?;
    Ok((StatusCode::CREATED, Json(row.try_into()?)))
}

/// One account with its snapshots.
#[utoipa::path(get, path = "/v1/bank-accounts/{id}", tag = "bank-accounts",
    params(("id" = String, Path, description = "Bank account id")),
    responses((status = 200, body = BankAccountDetail), crate::openapi::ReadErrors))]
pub async fn get_account(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<BankAccountDetail>> {
    let account = load(&mut db, &caller.company_id, &id).await?;
    let snapshots = store::bank_accounts::snapshots(&mut db, &caller.company_id, &id).await?;
    Ok(Json(BankAccountDetail {
        account: account.try_into()?,
        snapshots: snapshots
            .into_iter()
            .map(TryInto::try_into)
            .collect::<ApiResult<_>>()?,
    }))
}

/// Changes an account; `is_main: true` moves the default here atomically.
#[utoipa::path(patch, path = "/v1/bank-accounts/{id}", tag = "bank-accounts", request_body = UpdateBankAccountRequest,
    params(("id" = String, Path, description = "Bank account id")),
    responses((status = 200, body = BankAccountView), crate::openapi::WriteErrors))]
pub async fn update_account(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateBankAccountRequest>,
) -> ApiResult<Json<BankAccountView>> {
    let mut conn = tx.conn().await?;
    store::bank_accounts::lock_company(&mut conn, &caller.company_id).await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    if let Some(v) = req.name {
        row.name = required_text("name", &v, 100)?;
    }
    if let Some(v) = req.bank_name {
        row.bank_name = optional_text("bank_name", v, 100)?;
    }
    if let Some(v) = req.iban {
        row.iban = iban(v)?;
    }
    if let Some(v) = req.bic {
        row.bic = bic(v)?;
    }
    if let Some(v) = req.currency_code {
        row.currency_code = currency(&v)?;
    }
    match req.is_main {
        Some(true) if row.is_main == 0 => {
            store::bank_accounts::clear_main(&mut conn, &caller.company_id).await?;
            row.is_main = 1;
        }
        Some(false) if row.is_main == 1 => {
            return Err(ApiError::bad_request(
                "`is_main`: a company always has a default account; make another account the default instead.",
            ));
        }
        _ => {}
    }
    store::bank_accounts::update(&mut conn, &row).await?;
    Ok(Json(
        load(&mut conn, &caller.company_id, &id).await?.try_into()?,
    ))
}

/// Deletes an account and its snapshots; the oldest remaining account becomes the default.
#[utoipa::path(delete, path = "/v1/bank-accounts/{id}", tag = "bank-accounts",
    params(("id" = String, Path, description = "Bank account id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_account(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    store::bank_accounts::lock_company(&mut conn, &caller.company_id).await?;
    if store::bank_accounts::delete(&mut conn, &caller.company_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("bank account"))
    }
}

/// Records a balance of the account.
#[utoipa::path(post, path = "/v1/bank-accounts/{id}/snapshots", tag = "bank-accounts",
    request_body = CreateBalanceSnapshotRequest,
    params(("id" = String, Path, description = "Bank account id")),
    responses((status = 201, body = BalanceSnapshotView), crate::openapi::WriteErrors))]
pub async fn create_snapshot(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<CreateBalanceSnapshotRequest>,
) -> ApiResult<(StatusCode, Json<BalanceSnapshotView>)> {
    let mut conn = tx.conn().await?;
    load(&mut conn, &caller.company_id, &id).await?;
    if req
        .balance_minor
        .checked_abs()
        .is_none_or(|a| a > domain::invoice::MAX_AMOUNT)
    {
        return Err(ApiError::bad_request("`balance_minor` is out of range."));
    }
    let now = state.now();
    let row = store::bank_accounts::SnapshotRow {
        id: store::new_id(),
        bank_account_id: id,
        as_of_date: req.as_of_date.unwrap_or(now).timestamp_micros(),
        balance_minor: req.balance_minor,
        note: optional_text("note", req.note, 500)?,
        created_at: now.timestamp_micros(),
    };
    store::bank_accounts::insert_snapshot(&mut conn, &caller.company_id, &row).await?;
    Ok((StatusCode::CREATED, Json(row.try_into()?)))
}

/// Deletes a snapshot of the account.
#[utoipa::path(delete, path = "/v1/bank-accounts/{id}/snapshots/{sid}", tag = "bank-accounts",
    params(("id" = String, Path, description = "Bank account id"), ("sid" = String, Path, description = "Snapshot id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_snapshot(
    caller: Caller,
    tx: Tx,
    Path((id, sid)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    if store::bank_accounts::delete_snapshot(&mut conn, &caller.company_id, &id, &sid).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("balance snapshot"))
    }
}

/// The payment instructions frozen onto an invoice: the named accounts of the company
/// (unknown ids ignored), in the order given.
pub async fn snapshot_for_invoice(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    ids: &[String],
) -> crate::workflows::AppResult<Vec<document::BankAccount>> {
    let mut out = Vec::new();
    for id in ids.iter().take(10) {
        if let Some(a) = store::bank_accounts::get(conn, company_id, id).await? {
            out.push(document::BankAccount {
                id: Some(a.id),
                name: a.name,
                bank_name: a.bank_name,
                iban: a.iban,
                bic: a.bic,
                currency_code: Some(a.currency_code),
            });
        }
    }
    Ok(out)
}
