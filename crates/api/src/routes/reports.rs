//! Business reports (`/v1/reports`): one PDF per requested locale, rendered in the background.
//!
//! `POST` stores one `queued` report per locale and, in the same transaction, the jobs that
//! render them (`report.render`); the worker renders the PDF and mails the requester a
//! signed, expiring download link (`GET /v1/reports/{id}/pdf?expires=..&signature=..`,
//! which needs no bearer token). See docs/REPORTS.md.

use axum::{
    Extension, Json,
    extract::{Path, Query, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::files::FileStore;

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    views::{ts, ts_opt},
};

/// `Retry-After` of a request refused because the company's report queue is full: about
/// the time a few reports take to render.
const REPORT_QUEUE_RETRY_AFTER_SECS: u64 = 30;

/// The kinds of report.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportType {
    /// Revenue, expenses, result, invoice counts, top customers and a monthly chart.
    BusinessOverview,
    /// Output VAT by rate and treatment, input VAT, withholdings and the balance.
    VatSummary,
    /// Revenue minus expenses by month and expense category.
    ProfitLoss,
    /// Per customer: invoices, net, tax and total.
    ClientRevenue,
    /// Per supplier and per category.
    ExpenseSupplier,
}

impl From<ReportType> for reports::ReportType {
    fn from(t: ReportType) -> Self {
        match t {
            ReportType::BusinessOverview => Self::BusinessOverview,
            ReportType::VatSummary => Self::VatSummary,
            ReportType::ProfitLoss => Self::ProfitLoss,
            ReportType::ClientRevenue => Self::ClientRevenue,
            ReportType::ExpenseSupplier => Self::ExpenseSupplier,
        }
    }
}

/// What to report on (the same fields as the MCP tool `generate_report`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct CreateReportRequest {
    pub report_type: ReportType,
    /// Start of the period, inclusive (RFC 3339).
    pub period_start: DateTime<Utc>,
    /// End of the period, exclusive (RFC 3339); after `period_start`, at most ten years later.
    pub period_end: DateTime<Utc>,
    /// One report per locale (`en`, `es`, `es_ES`, `es-MX`...; at most 10), each of a language
    /// the service has number and date formats for. Omitted or empty: one report in the
    /// requesting user's language.
    #[serde(default)]
    pub locales: Option<Vec<String>>,
}

/// A report and where it stands.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ReportView {
    pub id: String,
    pub report_type: ReportType,
    /// Canonical locale tag, e.g. `es-ES`.
    pub locale: String,
    /// `queued`, `rendering`, `ready` or `failed`.
    pub status: String,
    pub period_start: DateTime<Utc>,
    pub period_end: DateTime<Utc>,
    /// Why the report failed (null unless `failed`).
    pub error: Option<String>,
    /// Where the PDF is, once `ready`.
    pub pdf_url: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub ready_at: Option<DateTime<Utc>>,
}

impl TryFrom<store::reports::ReportRow> for ReportView {
    type Error = ApiError;

    fn try_from(r: store::reports::ReportRow) -> ApiResult<Self> {
        let report_type = serde_json::from_value(serde_json::Value::String(r.report_type))
            .map_err(|e| crate::documents::corrupt(format!("report {} type", r.id), e))?;
        Ok(Self {
            pdf_url: (r.status == "ready").then(|| format!("/v1/reports/{}/pdf", r.id)),
            id: r.id,
            report_type,
            locale: r.locale,
            status: r.status,
            period_start: ts(r.period_start)?,
            period_end: ts(r.period_end)?,
            error: r.error,
            created_at: ts(r.created_at)?,
            updated_at: ts(r.updated_at)?,
            ready_at: ts_opt(r.ready_at)?,
        })
    }
}

/// The reports a request created, one per locale.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedReports {
    pub data: Vec<ReportView>,
}

/// Asks for a report in one or more locales; each is rendered in the background.
#[utoipa::path(post, path = "/v1/reports", tag = "reports", request_body = CreateReportRequest,
    responses((status = 201, body = CreatedReports),
        (status = 429, description = "The company has too many reports waiting to be rendered (`Retry-After` says when to ask again)", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn create_report(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateReportRequest>,
) -> ApiResult<(StatusCode, Json<CreatedReports>)> {
    let start = req.period_start.timestamp_micros();
    let end = req.period_end.timestamp_micros();
    if end <= start {
        return Err(ApiError::bad_request(
            "`period_end` must be after `period_start` (the start is inclusive, the end exclusive).",
        ));
    }
    // The same bound the renderer applies, checked now rather than in the background.
    reports::figures::months(req.period_start, req.period_end)
        .map_err(|e| ApiError::bad_request(format!("`period_end`: {e}.")))?;
    let mut conn = tx.conn().await?;
    let requested = req.locales.unwrap_or_default();
    if requested.len() > reports::MAX_LOCALES {
        return Err(ApiError::bad_request(format!(
            "`locales`: at most {} locales per request.",
            reports::MAX_LOCALES
        )));
    }
    let mut locales: Vec<String> = Vec::new();
    for tag in &requested {
        let tag = reports::supported(tag)
            .map_err(|e| ApiError::bad_request(format!("`locales`: {e}.")))?;
        if !locales.contains(&tag) {
            locales.push(tag);
        }
    }
    if locales.is_empty() {
        let language = store::users::get(&mut conn, &caller.user_id)
            .await?
            .map(|u| u.language)
            .unwrap_or_default();
        locales.push(reports::supported(&language).unwrap_or_else(|_| "en".into()));
    }
    // One company must not fill the render queue: its renders are fair-queued against the
    // others' (docs/JOBS.md), but each queued report is work, memory and a stored PDF.
    let queued = store::jobs::waiting_for_company(
        &mut conn,
        &caller.company_id,
        store::jobs::kind::REPORT_RENDER,
    )
    .await?;
    let cap = state.config.limits.max_queued_reports;
    if queued.saturating_add(locales.len() as i64) > cap {
        return Err(ApiError::TooManyRequests {
            message: format!(
                "The company already has {queued} reports waiting to be rendered, and at most \
                 {cap} may wait at once; ask for these {} again once some are ready.",
                locales.len()
            ),
            retry_after_secs: REPORT_QUEUE_RETRY_AFTER_SECS,
        });
    }
    let now = state.now().timestamp_micros();
    let report_type = reports::ReportType::from(req.report_type).code();
    let mut created = Vec::new();
    for locale in locales {
        let row = store::reports::ReportRow {
            id: store::new_id(),
            company_id: caller.company_id.clone(),
            requested_by: caller.user_id.clone(),
            report_type: report_type.to_owned(),
            locale,
            period_start: start,
            period_end: end,
            status: "queued".into(),
            error: None,
            file_id: None,
            created_at: now,
            updated_at: now,
            ready_at: None,
        };
        store::reports::insert(&mut conn, &row).await?;
        store::jobs::enqueue(
            &mut conn,
            &store::reports::render_job(&row.id, &row.company_id),
        )
        .await?;
        created.push(row.try_into()?);
    }
    Ok((StatusCode::CREATED, Json(CreatedReports { data: created })))
}

/// Reports of the company, newest first.
#[utoipa::path(get, path = "/v1/reports", tag = "reports", params(ListParams),
    responses((status = 200, body = Page<ReportView>), crate::openapi::ReadErrors))]
pub async fn list_reports(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<ReportView>>> {
    let limit = params.limit()?;
    let rows = store::reports::list(
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
        ReportView::try_from,
    )?))
}

/// One report.
#[utoipa::path(get, path = "/v1/reports/{id}", tag = "reports",
    params(("id" = String, Path, description = "Report id")),
    responses((status = 200, body = ReportView), crate::openapi::ReadErrors))]
pub async fn get_report(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<ReportView>> {
    let r = store::reports::get(&mut db, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("report"))?;
    Ok(Json(r.try_into()?))
}

/// Deletes a report and its stored PDF (its download links stop working).
#[utoipa::path(delete, path = "/v1/reports/{id}", tag = "reports",
    params(("id" = String, Path, description = "Report id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_report(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    if store::reports::delete(&mut conn, &caller.company_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("report"))
    }
}

/// A signed download link's parameters (from the mail).
#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct LinkParams {
    /// Unix seconds after which the link is refused.
    pub expires: Option<i64>,
    /// HMAC signature of the link.
    pub signature: Option<String>,
}

/// The report's PDF: with a bearer token, or without one through a signed link from the mail.
#[utoipa::path(get, path = "/v1/reports/{id}/pdf", tag = "reports",
    params(("id" = String, Path, description = "Report id"), LinkParams),
    responses((status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 409, description = "The report is not ready (queued, rendering or failed)", body = String, content_type = "text/plain"),
        (status = 403, description = "A signed link that expired (`link_expired`) or does not match (`link_invalid`)", body = crate::error::ActionRequired),
        crate::openapi::ReadErrors))]
pub async fn report_pdf(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
    Path(id): Path<String>,
    Query(link): Query<LinkParams>,
) -> ApiResult<Response> {
    let mut conn = state.db.acquire().await?;
    let report = match caller {
        Some(Extension(caller)) => store::reports::get(&mut conn, &caller.company_id, &id).await?,
        None => {
            // Only a request with a signature gets here without a token (auth.rs).
            let (Some(expires), Some(signature)) = (link.expires, link.signature.as_deref()) else {
                return Err(ApiError::Unauthorized(
                    "Missing bearer token: send `Authorization: Bearer <token>`.",
                ));
            };
            reports::links::verify(
                &state.config.secret_key,
                &id,
                expires,
                signature,
                state.now().timestamp(),
            )
            .map_err(|e| ApiError::Forbidden {
                code: match e {
                    reports::links::LinkError::Expired => "link_expired",
                    reports::links::LinkError::BadSignature => "link_invalid",
                },
                message: e.to_string(),
                authorization_url: None,
            })?;
            // A valid link to a deleted report: 404.
            store::reports::get_any(&mut conn, &id).await?
        }
    };
    let report = report.ok_or_else(|| ApiError::not_found("report"))?;
    let Some(file_id) = report.file_id.as_deref() else {
        let why = match report.error.as_deref() {
            Some(error) => format!("The report failed: {error}"),
            None => format!(
                "The report is not ready yet (status {}); try again when its status is ready.",
                report.status
            ),
        };
        return Err(ApiError::Conflict(why));
    };
    let file = state
        .db
        .files()
        .get(&mut conn, &report.company_id, file_id)
        .await?
        .ok_or_else(|| ApiError::not_found("report PDF"))?;
    let name = format!("{}-{}.pdf", report.report_type, report.locale);
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/pdf"),
            ),
            (
                header::CONTENT_DISPOSITION,
                crate::views::content_disposition(crate::views::Disposition::Inline, &name),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("private, no-store"),
            ),
        ],
        file.data,
    )
        .into_response())
}
