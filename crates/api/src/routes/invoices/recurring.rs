//! Recurring invoices (`/v1/recurring-invoices`): a draft invoice made every period, and
//! [`run_due`], which the worker calls to make them.
//!
//! Exactly once by construction: a period's draft is stored in the transaction that
//! inserts the period's `recurring_runs` row, whose primary key is (schedule, period
//! start). However many workers, servers or restarts try, one insert wins; the others
//! conflict and make nothing.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, Days, Months, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CreateInvoiceRequest, priced_draft, store_new_draft};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
};

/// Most recurring invoices one company may have.
const MAX_PER_COMPANY: i64 = 1000;
/// Periods one schedule catches up in one pass of the worker (the next pass goes on).
const MAX_PERIODS_PER_PASS: usize = 100;
/// Schedules read per batch of a pass.
const BATCH: i64 = 100;
/// The schedule fields of the body; everything else is the draft's (CreateInvoiceRequest).
const SCHEDULE_FIELDS: [&str; 7] = [
    "frequency",
    "interval",
    "start_date",
    "end_date",
    "auto_issue",
    "auto_send",
    "status",
];

/// How often a recurring invoice runs (times `interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Frequency {
    Weekly,
    Monthly,
    Quarterly,
    Yearly,
}

impl Frequency {
    fn as_str(self) -> &'static str {
        match self {
            Self::Weekly => "weekly",
            Self::Monthly => "monthly",
            Self::Quarterly => "quarterly",
            Self::Yearly => "yearly",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "weekly" => Some(Self::Weekly),
            "monthly" => Some(Self::Monthly),
            "quarterly" => Some(Self::Quarterly),
            "yearly" => Some(Self::Yearly),
            _ => None,
        }
    }
}

/// The schedule fields of a create or PATCH body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleFields {
    frequency: Option<Frequency>,
    interval: Option<i64>,
    start_date: Option<NaiveDate>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    end_date: Option<Option<NaiveDate>>,
    auto_issue: Option<bool>,
    auto_send: Option<bool>,
    status: Option<String>,
}

/// Creating a recurring invoice: the fields of CreateInvoiceRequest (but `due_date`,
/// which each issue takes from the payment terms), plus the schedule. (For the OpenAPI
/// description; the handler splits the body itself.)
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct CreateRecurringInvoiceRequest {
    /// The draft each period gets (the fields of CreateInvoiceRequest, at the top level).
    #[serde(flatten)]
    pub invoice: CreateInvoiceRequest,
    pub frequency: Frequency,
    /// Every `interval` weeks, months, quarters or years (default 1).
    pub interval: Option<i64>,
    /// The first period starts on this day (UTC).
    pub start_date: NaiveDate,
    /// No period starts after this day.
    pub end_date: Option<NaiveDate>,
    /// Issue each draft through the normal issuing path (default false).
    pub auto_issue: Option<bool>,
    /// Mail each issued invoice to the recipient's `email` (needs `auto_issue`).
    pub auto_send: Option<bool>,
    /// `active` (default) or `paused`.
    pub status: Option<String>,
}

/// Changing a recurring invoice: any subset of the create fields; a draft field set to
/// null is removed. (For the OpenAPI description.)
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[allow(dead_code)]
pub struct UpdateRecurringInvoiceRequest {
    /// Fields of the draft each period gets (those of UpdateInvoiceRequest).
    #[serde(flatten)]
    pub invoice: super::UpdateInvoiceRequest,
    pub frequency: Option<Frequency>,
    pub interval: Option<i64>,
    pub start_date: Option<NaiveDate>,
    pub end_date: Option<NaiveDate>,
    pub auto_issue: Option<bool>,
    pub auto_send: Option<bool>,
    /// `paused` stops the runs; `active` resumes from the first period starting today or later.
    pub status: Option<String>,
}

/// A recurring invoice.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct RecurringInvoice {
    pub id: String,
    /// The fields of the draft each period gets (CreateInvoiceRequest), at the top level.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub invoice: Map<String, Value>,
    pub frequency: Frequency,
    pub interval: i64,
    pub start_date: NaiveDate,
    pub end_date: Option<NaiveDate>,
    pub auto_issue: bool,
    pub auto_send: bool,
    /// `active`, `paused` or `ended` (no period starts any more).
    pub status: String,
    /// When the next period starts (its draft is made that day, UTC); null once ended.
    pub next_run_date: Option<NaiveDate>,
    /// Why the latest run could not make, issue or send its invoice; null once one did.
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: Option<DateTime<Utc>>,
}

/// The start of period `k` (from 0) of a schedule.
fn period(start: NaiveDate, frequency: Frequency, interval: u32, k: u32) -> Option<NaiveDate> {
    let steps = interval.checked_mul(k)?;
    match frequency {
        Frequency::Weekly => start.checked_add_days(Days::new(7 * u64::from(steps))),
        Frequency::Monthly => start.checked_add_months(Months::new(steps)),
        Frequency::Quarterly => start.checked_add_months(Months::new(steps.checked_mul(3)?)),
        Frequency::Yearly => start.checked_add_months(Months::new(steps.checked_mul(12)?)),
    }
}

/// The first period start on or after `from` (and after `after`, the latest period that
/// ran), unless it is past `end`: `None` means the schedule has ended.
fn next_period(
    start: NaiveDate,
    frequency: Frequency,
    interval: u32,
    end: Option<NaiveDate>,
    after: Option<NaiveDate>,
    from: Option<NaiveDate>,
) -> Option<NaiveDate> {
    // Weekly for a thousand years is 52,000 periods: far past any date a request may give.
    let found = (0..60_000u32)
        .map_while(|k| period(start, frequency, interval, k))
        .find(|p| after.is_none_or(|a| *p > a) && from.is_none_or(|f| *p >= f))?;
    match end {
        Some(end) if found > end => None,
        _ => Some(found),
    }
}

fn date(what: &str, text: &str) -> ApiResult<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|e| crate::documents::corrupt(what.to_owned(), e).into())
}

/// The view of a stored schedule; a column that does not decode is an error.
fn view(r: store::recurring::RecurringRow) -> ApiResult<RecurringInvoice> {
    let what = format!("recurring invoice {}", r.id);
    let invoice: Map<String, Value> = crate::documents::parse(&what, &r.invoice_json)?;
    let frequency = Frequency::parse(&r.frequency).ok_or_else(|| {
        crate::documents::corrupt(what.clone(), format!("frequency `{}`", r.frequency))
    })?;
    let next_run_date = r
        .next_run_date
        .as_deref()
        .map(|d| date(&what, d))
        .transpose()?;
    Ok(RecurringInvoice {
        invoice,
        frequency,
        interval: r.interval_count,
        start_date: date(&what, &r.start_date)?,
        end_date: r.end_date.as_deref().map(|d| date(&what, d)).transpose()?,
        auto_issue: r.auto_issue != 0,
        auto_send: r.auto_send != 0,
        status: if next_run_date.is_none() {
            "ended"
        } else if r.paused != 0 {
            "paused"
        } else {
            "active"
        }
        .into(),
        next_run_date,
        last_error: r.last_error,
        created_at: store::from_micros(r.created_at),
        updated_at: r.updated_at.map(store::from_micros),
        id: r.id,
    })
}

/// Splits a body into its schedule fields and the draft's fields.
fn split(body: Value) -> ApiResult<(ScheduleFields, Map<String, Value>)> {
    let Value::Object(mut all) = body else {
        return Err(ApiError::bad_request(
            "The request body must be a JSON object.",
        ));
    };
    let mut schedule = Map::new();
    for key in SCHEDULE_FIELDS {
        if let Some(v) = all.remove(key) {
            schedule.insert(key.to_owned(), v);
        }
    }
    let bytes = serde_json::to_vec(&schedule).map_err(|e| ApiError::Internal(e.into()))?;
    let fields: ScheduleFields = crate::json::parse(&bytes)?;
    if all.contains_key("due_date") {
        return Err(ApiError::bad_request(
            "A recurring invoice takes each due date from the payment terms at issue: drop \
             `due_date` (set `payment_terms_days` on the entity or `paymentTermsDays` on the company).",
        ));
    }
    Ok((fields, all))
}

/// The draft's fields as a create request, checked as `POST /v1/invoices` checks them.
fn invoice_request(fields: &Map<String, Value>) -> ApiResult<CreateInvoiceRequest> {
    let bytes = serde_json::to_vec(fields).map_err(|e| ApiError::Internal(e.into()))?;
    crate::json::parse(&bytes)
}

/// Checks the schedule as a whole and works out its next run date.
fn settle(
    r: &mut store::recurring::RecurringRow,
    last_period: Option<NaiveDate>,
    resume_from: Option<NaiveDate>,
) -> ApiResult<()> {
    let what = format!("recurring invoice {}", r.id);
    if !(1..=1000).contains(&r.interval_count) {
        return Err(ApiError::bad_request(format!(
            "`interval` must be between 1 and 1000, got {}.",
            r.interval_count
        )));
    }
    let start = date(&what, &r.start_date)?;
    let end = r.end_date.as_deref().map(|d| date(&what, d)).transpose()?;
    if end.is_some_and(|e| e < start) {
        return Err(ApiError::bad_request(
            "`end_date` must not be before `start_date`.",
        ));
    }
    if r.auto_send != 0 && r.auto_issue == 0 {
        return Err(ApiError::bad_request(
            "`auto_send` sends issued invoices: set `auto_issue` too.",
        ));
    }
    let frequency = Frequency::parse(&r.frequency)
        .ok_or_else(|| crate::documents::corrupt(what, format!("frequency `{}`", r.frequency)))?;
    let interval = u32::try_from(r.interval_count).unwrap_or(1);
    r.next_run_date = next_period(start, frequency, interval, end, last_period, resume_from)
        .map(|d| d.format("%Y-%m-%d").to_string());
    Ok(())
}

/// Validates the draft's fields the way a create would (recipient, lines, currency), on
/// a pooled connection, without storing anything.
async fn check_draft(
    state: &AppState,
    company_id: &str,
    fields: &Map<String, Value>,
) -> ApiResult<()> {
    let req = invoice_request(fields)?;
    let mut db = state.db.pool().acquire().await?;
    priced_draft(
        &mut db,
        state.services(),
        company_id,
        req,
        store::invoices::Origin::Recurring,
        store::invoices::Series::Invoice,
    )
    .await?;
    Ok(())
}

fn status_flag(status: Option<&str>) -> ApiResult<Option<i64>> {
    match status {
        None => Ok(None),
        Some("active") => Ok(Some(0)),
        Some("paused") => Ok(Some(1)),
        Some(other) => Err(ApiError::bad_request(format!(
            "`status` may be set to active or paused, got `{other}`."
        ))),
    }
}

/// Lists the company's recurring invoices, newest first.
#[utoipa::path(get, path = "/v1/recurring-invoices", tag = "recurring-invoices",
    params(ListParams),
    responses((status = 200, body = Page<RecurringInvoice>), crate::openapi::ReadErrors))]
pub async fn list_recurring(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<RecurringInvoice>>> {
    let limit = params.limit()?;
    let rows = store::recurring::list(
        &mut db,
        &caller.company_id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(rows, limit, |r| &r.id, view)?))
}

/// Creates a recurring invoice. The worker makes the draft of every period whose start has
/// come (UTC), catching up missed ones, each exactly once.
#[utoipa::path(post, path = "/v1/recurring-invoices", tag = "recurring-invoices",
    request_body = CreateRecurringInvoiceRequest,
    responses((status = 201, body = RecurringInvoice), crate::openapi::WriteErrors))]
pub async fn create_recurring(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<RecurringInvoice>)> {
    let (s, fields) = split(body)?;
    let frequency = s.frequency.ok_or_else(|| {
        ApiError::bad_request("`frequency` is required (weekly, monthly, quarterly or yearly).")
    })?;
    let start = s
        .start_date
        .ok_or_else(|| ApiError::bad_request("`start_date` is required (YYYY-MM-DD)."))?;
    let paused = status_flag(s.status.as_deref())?.unwrap_or(0);
    check_draft(&state, &caller.company_id, &fields).await?;
    let mut row = store::recurring::RecurringRow {
        id: store::new_id(),
        company_id: caller.company_id.clone(),
        created_by: caller.user_id.clone(),
        invoice_json: super::to_json(&fields)?,
        frequency: frequency.as_str().into(),
        interval_count: s.interval.unwrap_or(1),
        start_date: start.format("%Y-%m-%d").to_string(),
        end_date: s
            .end_date
            .flatten()
            .map(|d| d.format("%Y-%m-%d").to_string()),
        auto_issue: i64::from(s.auto_issue.unwrap_or(false)),
        auto_send: i64::from(s.auto_send.unwrap_or(false)),
        paused,
        next_run_date: None,
        last_error: None,
        created_at: state.now().timestamp_micros(),
        updated_at: None,
    };
    settle(&mut row, None, None)?;
    let mut conn = tx.conn().await?;
    if store::recurring::count(&mut conn, &caller.company_id).await? >= MAX_PER_COMPANY {
        return Err(ApiError::Conflict(format!(
            "A company may have at most {MAX_PER_COMPANY} recurring invoices: delete ones that ended."
        )));
    }
    store::recurring::insert(&mut conn, &row).await?;
    Ok((StatusCode::CREATED, Json(view(row)?)))
}

async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &str,
    id: &str,
) -> ApiResult<store::recurring::RecurringRow> {
    store::recurring::get(conn, company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("recurring invoice"))
}

/// One recurring invoice.
#[utoipa::path(get, path = "/v1/recurring-invoices/{id}", tag = "recurring-invoices",
    params(("id" = String, Path, description = "Recurring invoice id")),
    responses((status = 200, body = RecurringInvoice), crate::openapi::ReadErrors))]
pub async fn get_recurring(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<RecurringInvoice>> {
    view(load(&mut db, &caller.company_id, &id).await?).map(Json)
}

/// Changes a recurring invoice: any field, `start_date` included (`next_run_date`
/// follows; periods that already ran never run again). A draft field set to null is
/// removed. `status` `paused` stops it; `active` resumes it from the first period that
/// starts today or later (periods that started while it was paused are skipped).
#[utoipa::path(patch, path = "/v1/recurring-invoices/{id}", tag = "recurring-invoices",
    request_body = UpdateRecurringInvoiceRequest,
    params(("id" = String, Path, description = "Recurring invoice id")),
    responses((status = 200, body = RecurringInvoice), crate::openapi::WriteErrors))]
pub async fn update_recurring(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Json<RecurringInvoice>> {
    let (s, changes) = split(body)?;
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    let mut fields: Map<String, Value> =
        crate::documents::parse("recurring invoice fields", &row.invoice_json)?;
    for (k, v) in changes {
        if v.is_null() {
            fields.remove(&k);
        } else {
            fields.insert(k, v);
        }
    }
    drop(conn);
    check_draft(&state, &caller.company_id, &fields).await?;
    let mut conn = tx.conn().await?;
    row.invoice_json = super::to_json(&fields)?;
    if let Some(f) = s.frequency {
        row.frequency = f.as_str().into();
    }
    if let Some(i) = s.interval {
        row.interval_count = i;
    }
    if let Some(d) = s.start_date {
        row.start_date = d.format("%Y-%m-%d").to_string();
    }
    if let Some(d) = s.end_date {
        row.end_date = d.map(|d| d.format("%Y-%m-%d").to_string());
    }
    if let Some(b) = s.auto_issue {
        row.auto_issue = i64::from(b);
    }
    if let Some(b) = s.auto_send {
        row.auto_send = i64::from(b);
    }
    let was_paused = row.paused != 0;
    if let Some(p) = status_flag(s.status.as_deref())? {
        row.paused = p;
    }
    let last = store::recurring::last_period(&mut conn, &caller.company_id, &id)
        .await?
        .map(|d| date("recurring run", &d))
        .transpose()?;
    let today = state.now().date_naive();
    let resume_from = (was_paused && row.paused == 0).then_some(today);
    settle(&mut row, last, resume_from)?;
    row.updated_at = Some(state.now().timestamp_micros());
    store::recurring::update(&mut conn, &row).await?;
    Ok(Json(view(row)?))
}

/// Deletes a recurring invoice; the drafts and invoices it made stay.
#[utoipa::path(delete, path = "/v1/recurring-invoices/{id}", tag = "recurring-invoices",
    params(("id" = String, Path, description = "Recurring invoice id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_recurring(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    if store::recurring::delete(&mut conn, &caller.company_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("recurring invoice"))
    }
}

/// The message of an error as a schedule's `last_error` shows it.
fn message(e: &ApiError) -> String {
    match e {
        ApiError::Internal(_) => "An internal error stopped this run; it is tried again.".into(),
        other => other.to_string(),
    }
}

/// Makes the draft of every period that has started by `now` (UTC) of every active
/// recurring invoice, issuing and sending it when the schedule says so; returns how many
/// drafts were made. The worker runs it every `INVOICING_SCHEDULE_SECONDS`.
pub async fn run_due(state: &AppState, now: DateTime<Utc>) -> anyhow::Result<usize> {
    let today = now.date_naive().format("%Y-%m-%d").to_string();
    let mut made = 0;
    // One walk over the due schedules in id order: each gets its turn once per pass, and
    // one that cannot run (it stays due, with its `last_error`) delays no other.
    let mut after: Option<String> = None;
    loop {
        let due = {
            let mut conn = state.db.pool().acquire().await?;
            store::recurring::due(&mut conn, &today, after.as_deref(), BATCH).await?
        };
        let Some(last) = due.last() else {
            return Ok(made);
        };
        after = Some(last.id.clone());
        let full = due.len() as i64 == BATCH;
        for schedule in due {
            let id = schedule.id.clone();
            match run_schedule(state, schedule, now).await {
                Ok(n) => made += n,
                // One schedule's failure (stored data that does not decode, a lost
                // connection) is logged and stops only that schedule for this pass.
                Err(e) => {
                    tracing::error!(schedule = %id, error = %format!("{e:#}"), "running a recurring invoice failed")
                }
            }
        }
        if !full {
            return Ok(made);
        }
    }
}

/// Runs the started periods of one schedule, up to [`MAX_PERIODS_PER_PASS`].
async fn run_schedule(
    state: &AppState,
    mut s: store::recurring::RecurringRow,
    now: DateTime<Utc>,
) -> anyhow::Result<usize> {
    let today = now.date_naive();
    let mut made = 0;
    for _ in 0..MAX_PERIODS_PER_PASS {
        let Some(period) = s.next_run_date.clone() else {
            break;
        };
        let start = date("recurring period", &period)?;
        if start > today {
            break;
        }
        let draft = {
            let fields: Result<Map<String, Value>, ApiError> =
                crate::documents::parse("recurring invoice fields", &s.invoice_json)
                    .map_err(ApiError::from);
            match fields.and_then(|f| invoice_request(&f)) {
                Ok(req) => {
                    let mut db = state.db.pool().acquire().await?;
                    priced_draft(
                        &mut db,
                        state.services(),
                        &s.company_id,
                        req,
                        store::invoices::Origin::Recurring,
                        store::invoices::Series::Invoice,
                    )
                    .await
                    .map_err(ApiError::from)
                }
                Err(e) => Err(e),
            }
        };
        let mut draft = match draft {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(schedule = %s.id, period = %period, error = %e, "a recurring draft could not be made");
                // The period stays due: the draft is made once the schedule is fixed.
                record_error(
                    state,
                    &s,
                    Some(&format!(
                        "The draft of the period starting {period} could not be made: {}",
                        message(&e)
                    )),
                )
                .await?;
                break;
            }
        };
        draft.recurring_invoice_id = Some(s.id.clone());
        let mut next = s.clone();
        let last = Some(start);
        settle(&mut next, last, None).map_err(|e| anyhow::anyhow!("{e}"))?;

        let mut tx = state.db.begin_write().await?;
        // The period's run row first: its primary key decides which transaction makes the
        // draft. Then the schedule moves on, on condition that it still expects this period
        // and is not paused (a PATCH or pause meanwhile: nothing is made).
        if !store::recurring::claim_period(
            tx.conn(),
            &s.company_id,
            &s.id,
            &period,
            now.timestamp_micros(),
        )
        .await?
            || !store::recurring::advance(
                tx.conn(),
                &s.company_id,
                &s.id,
                &period,
                next.next_run_date.as_deref(),
            )
            .await?
        {
            tx.rollback().await?;
            break;
        }
        store_new_draft(tx.conn(), state.services(), &mut draft)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        store::recurring::set_run_invoice(tx.conn(), &s.id, &period, &draft.id).await?;
        store::recurring::set_last_error(tx.conn(), &s.company_id, &s.id, None).await?;
        tx.commit().await?;
        made += 1;
        s.next_run_date = next.next_run_date;
        s.last_error = None;

        if s.auto_issue != 0
            && let Err(e) = issue_and_send(state, &s, draft).await
        {
            if let Step::Issue(inner @ ApiError::Internal(_))
            | Step::Send(inner @ ApiError::Internal(_)) = &e
            {
                tracing::error!(schedule = %s.id, period = %period, error = %inner, "automatic issue or send of a recurring invoice failed");
            }
            let error = match e {
                Step::Issue(e) => format!(
                    "The invoice of the period starting {period} stays a draft: {}",
                    message(&e)
                ),
                Step::Send(e) => format!(
                    "The invoice of the period starting {period} was issued but not sent: {}",
                    message(&e)
                ),
            };
            record_error(state, &s, Some(&error)).await?;
        }
    }
    Ok(made)
}

async fn record_error(
    state: &AppState,
    s: &store::recurring::RecurringRow,
    error: Option<&str>,
) -> anyhow::Result<()> {
    let mut tx = state.db.begin_write().await?;
    store::recurring::set_last_error(tx.conn(), &s.company_id, &s.id, error).await?;
    tx.commit().await?;
    Ok(())
}

/// Which step of an automatic issue failed.
enum Step {
    Issue(ApiError),
    Send(ApiError),
}

/// Issues a recurring draft through the normal issuing path, as the person who set the
/// schedule up, then queues its mailing when the schedule sends (in a transaction of its
/// own: an invoice that cannot be mailed is issued all the same).
async fn issue_and_send(
    state: &AppState,
    s: &store::recurring::RecurringRow,
    draft: store::invoices::InvoiceRow,
) -> Result<(), Step> {
    let issued = async {
        let prepared = {
            let mut db = state.db.pool().acquire().await?;
            let company =
                crate::workflows::issue::issuing_company(&mut db, &s.company_id, &s.created_by)
                    .await?;
            crate::workflows::issue::prepare(&mut db, state.services(), company, None, draft)
                .await?
        };
        let mut tx = state.db.begin_write().await?;
        let issued = crate::workflows::issue::commit(tx.conn(), state.services(), prepared).await?;
        tx.commit().await?;
        ApiResult::Ok(issued)
    }
    .await
    .map_err(Step::Issue)?;
    if s.auto_send == 0 {
        return Ok(());
    }
    async {
        let mut tx = state.db.begin_write().await?;
        crate::workflows::send::queue(
            tx.conn(),
            &issued,
            super::send::SendInvoiceRequest::default(),
            state.now(),
        )
        .await?;
        tx.commit().await?;
        ApiResult::Ok(())
    }
    .await
    .map_err(Step::Send)
}
