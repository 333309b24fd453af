//! Recurring invoices: a schedule (creating, changing, deleting one) that makes a draft
//! invoice every period, and [`run_due`], which the worker calls to make them.
//!
//! Exactly once by construction: a period's draft is stored in the transaction that
//! inserts the period's `recurring_runs` row, whose primary key is (schedule, period
//! start). However many workers, servers or restarts try, one insert wins; the others
//! conflict and make nothing.

use chrono::{DateTime, Days, Months, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    AppError, AppResult, Services, Writer,
    drafts::{priced_draft, store_new_draft, to_json},
};
use crate::{documents, routes::invoices::CreateInvoiceRequest};

/// Most recurring invoices one company may have.
const MAX_PER_COMPANY: i64 = 1000;
/// Periods one schedule catches up in one pass of the worker (the next pass goes on).
const MAX_PERIODS_PER_PASS: usize = 100;
/// Schedules read per batch of a pass.
const BATCH: i64 = 100;

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

    /// The frequency stored as `s`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "weekly" => Some(Self::Weekly),
            "monthly" => Some(Self::Monthly),
            "quarterly" => Some(Self::Quarterly),
            "yearly" => Some(Self::Yearly),
            _ => None,
        }
    }
}

/// The schedule fields of a create or change: every one optional (a create requires
/// `frequency` and `start_date`). `end_date: Some(None)` removes the end.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub frequency: Option<Frequency>,
    pub interval: Option<i64>,
    pub start_date: Option<NaiveDate>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    pub end_date: Option<Option<NaiveDate>>,
    pub auto_issue: Option<bool>,
    pub auto_send: Option<bool>,
    pub status: Option<String>,
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

/// A stored date (`YYYY-MM-DD`); one that does not decode is an error.
pub fn date(what: &str, text: &str) -> AppResult<NaiveDate> {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|e| documents::corrupt(what, e))
}

fn day(d: NaiveDate) -> String {
    d.format("%Y-%m-%d").to_string()
}

/// The draft's fields as a create request, checked as `POST /v1/invoices` checks them.
fn invoice_request(fields: &Map<String, Value>) -> AppResult<CreateInvoiceRequest> {
    let bytes = serde_json::to_vec(fields).map_err(|e| AppError::Internal(e.into()))?;
    crate::json::decode(&bytes).map_err(AppError::Invalid)
}

/// Checks the schedule as a whole and works out its next run date.
fn settle(
    r: &mut store::recurring::RecurringRow,
    last_period: Option<NaiveDate>,
    resume_from: Option<NaiveDate>,
) -> AppResult<()> {
    let what = format!("recurring invoice {}", r.id);
    if !(1..=1000).contains(&r.interval_count) {
        return Err(AppError::invalid(format!(
            "`interval` must be between 1 and 1000, got {}.",
            r.interval_count
        )));
    }
    let start = date(&what, &r.start_date)?;
    let end = r.end_date.as_deref().map(|d| date(&what, d)).transpose()?;
    if end.is_some_and(|e| e < start) {
        return Err(AppError::invalid(
            "`end_date` must not be before `start_date`.",
        ));
    }
    if r.auto_send != 0 && r.auto_issue == 0 {
        return Err(AppError::invalid(
            "`auto_send` sends issued invoices: set `auto_issue` too.",
        ));
    }
    let frequency = Frequency::parse(&r.frequency)
        .ok_or_else(|| documents::corrupt(what, format!("frequency `{}`", r.frequency)))?;
    let interval = u32::try_from(r.interval_count).unwrap_or(1);
    r.next_run_date =
        next_period(start, frequency, interval, end, last_period, resume_from).map(day);
    Ok(())
}

/// Validates the draft's fields the way a create would (recipient, lines, currency), on
/// a pooled connection, without storing anything.
async fn check_draft(
    svc: Services<'_>,
    company_id: &store::CompanyId,
    fields: &Map<String, Value>,
) -> AppResult<()> {
    let req = invoice_request(fields)?;
    let mut db = svc.db.acquire().await?;
    priced_draft(
        &mut db,
        svc,
        company_id,
        req,
        store::invoices::Origin::Recurring,
        store::invoices::Series::Invoice,
    )
    .await?;
    Ok(())
}

fn paused_flag(status: Option<&str>) -> AppResult<Option<i64>> {
    match status {
        None => Ok(None),
        Some("active") => Ok(Some(0)),
        Some("paused") => Ok(Some(1)),
        Some(other) => Err(AppError::invalid(format!(
            "`status` may be set to active or paused, got `{other}`."
        ))),
    }
}

/// A recurring invoice of the company, made by `user_id` (whose permission to issue each
/// automatic issue then needs), from its schedule and the draft's fields (those of
/// `POST /v1/invoices`, checked as a create checks them).
pub async fn create(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    user_id: &str,
    s: Schedule,
    fields: Map<String, Value>,
) -> AppResult<store::recurring::RecurringRow> {
    let frequency = s.frequency.ok_or_else(|| {
        AppError::invalid("`frequency` is required (weekly, monthly, quarterly or yearly).")
    })?;
    let start = s
        .start_date
        .ok_or_else(|| AppError::invalid("`start_date` is required (YYYY-MM-DD)."))?;
    let paused = paused_flag(s.status.as_deref())?.unwrap_or(0);
    check_draft(svc, company_id, &fields).await?;
    let mut row = store::recurring::RecurringRow {
        id: store::new_id(),
        company_id: company_id.to_owned(),
        created_by: user_id.to_owned(),
        invoice_json: to_json(&fields)?,
        frequency: frequency.as_str().into(),
        interval_count: s.interval.unwrap_or(1),
        start_date: day(start),
        end_date: s.end_date.flatten().map(day),
        auto_issue: i64::from(s.auto_issue.unwrap_or(false)),
        auto_send: i64::from(s.auto_send.unwrap_or(false)),
        paused,
        next_run_date: None,
        last_error: None,
        created_at: svc.now().timestamp_micros(),
        updated_at: None,
    };
    settle(&mut row, None, None)?;
    let mut conn = tx.conn().await?;
    if store::recurring::count(&mut conn, company_id).await? >= MAX_PER_COMPANY {
        return Err(AppError::Conflict(format!(
            "A company may have at most {MAX_PER_COMPANY} recurring invoices: delete ones that ended."
        )));
    }
    store::recurring::insert(&mut conn, &row).await?;
    Ok(row)
}

/// One recurring invoice of the company.
pub async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> AppResult<store::recurring::RecurringRow> {
    store::recurring::get(conn, company_id, id)
        .await?
        .ok_or_else(|| AppError::not_found("recurring invoice"))
}

/// Changes a recurring invoice: any schedule field, and the draft's fields (`changes`; one
/// set to null is removed). `next_run_date` follows; periods that already ran never run
/// again. Resuming a paused one starts from the first period that starts today or later.
pub async fn update(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    s: Schedule,
    changes: Map<String, Value>,
) -> AppResult<store::recurring::RecurringRow> {
    let mut row = {
        let mut conn = tx.conn().await?;
        load(&mut conn, company_id, id).await?
    };
    let mut fields: Map<String, Value> =
        documents::parse("recurring invoice fields", &row.invoice_json)?;
    for (k, v) in changes {
        if v.is_null() {
            fields.remove(&k);
        } else {
            fields.insert(k, v);
        }
    }
    check_draft(svc, company_id, &fields).await?;
    let mut conn = tx.conn().await?;
    row.invoice_json = to_json(&fields)?;
    if let Some(f) = s.frequency {
        row.frequency = f.as_str().into();
    }
    if let Some(i) = s.interval {
        row.interval_count = i;
    }
    if let Some(d) = s.start_date {
        row.start_date = day(d);
    }
    if let Some(d) = s.end_date {
        row.end_date = d.map(day);
    }
    if let Some(b) = s.auto_issue {
        row.auto_issue = i64::from(b);
    }
    if let Some(b) = s.auto_send {
        row.auto_send = i64::from(b);
    }
    let was_paused = row.paused != 0;
    if let Some(p) = paused_flag(s.status.as_deref())? {
        row.paused = p;
    }
    let last = store::recurring::last_period(&mut conn, company_id, id)
        .await?
        .map(|d| date("recurring run", &d))
        .transpose()?;
    let now = svc.now();
    let resume_from = (was_paused && row.paused == 0).then_some(now.date_naive());
    settle(&mut row, last, resume_from)?;
    row.updated_at = Some(now.timestamp_micros());
    store::recurring::update(&mut conn, &row).await?;
    Ok(row)
}

/// Deletes a recurring invoice; the drafts and invoices it made stay.
pub async fn delete(tx: &impl Writer, company_id: &store::CompanyId, id: &str) -> AppResult<()> {
    let mut conn = tx.conn().await?;
    if store::recurring::delete(&mut conn, company_id, id).await? {
        Ok(())
    } else {
        Err(AppError::not_found("recurring invoice"))
    }
}

/// The message of an error as a schedule's `last_error` shows it.
fn message(e: &AppError) -> String {
    match e {
        AppError::Internal(_) => "An internal error stopped this run; it is tried again.".into(),
        other => other.to_string(),
    }
}

/// Makes the draft of every period that has started by `now` (UTC) of every active
/// recurring invoice, issuing and sending it when the schedule says so; returns how many
/// drafts were made. The worker runs it every `INVOICING_SCHEDULE_SECONDS`.
pub async fn run_due(svc: Services<'_>, now: DateTime<Utc>) -> anyhow::Result<usize> {
    let today = day(now.date_naive());
    let mut made = 0;
    // One walk over the due schedules in id order: each gets its turn once per pass, and
    // one that cannot run (it stays due, with its `last_error`) delays no other.
    let mut after: Option<String> = None;
    loop {
        let due = {
            let mut conn = svc.db.acquire().await?;
            store::recurring::due(&mut conn, &today, after.as_deref(), BATCH).await?
        };
        let Some(last) = due.last() else {
            return Ok(made);
        };
        after = Some(last.id.clone());
        let full = due.len() as i64 == BATCH;
        for schedule in due {
            let id = schedule.id.clone();
            match run_schedule(svc, schedule, now).await {
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

/// The draft of one period, priced as a create would price it.
async fn period_draft(
    svc: Services<'_>,
    s: &store::recurring::RecurringRow,
) -> AppResult<store::invoices::InvoiceRow> {
    let fields: Map<String, Value> = documents::parse("recurring invoice fields", &s.invoice_json)?;
    let req = invoice_request(&fields)?;
    let mut db = svc.db.acquire().await?;
    priced_draft(
        &mut db,
        svc,
        &s.company_id,
        req,
        store::invoices::Origin::Recurring,
        store::invoices::Series::Invoice,
    )
    .await
}

/// Runs the started periods of one schedule, up to [`MAX_PERIODS_PER_PASS`].
async fn run_schedule(
    svc: Services<'_>,
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
        let mut draft = match period_draft(svc, &s).await {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(schedule = %s.id, period = %period, error = %e, "a recurring draft could not be made");
                // The period stays due: the draft is made once the schedule is fixed.
                record_error(
                    svc,
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
        settle(&mut next, Some(start), None)?;

        let mut tx = svc.db.begin_write().await?;
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
        store_new_draft(tx.conn(), svc, &mut draft).await?;
        store::recurring::set_run_invoice(tx.conn(), &s.id, &period, &draft.id).await?;
        store::recurring::set_last_error(tx.conn(), &s.company_id, &s.id, None).await?;
        tx.commit().await?;
        made += 1;
        s.next_run_date = next.next_run_date;
        s.last_error = None;

        if s.auto_issue != 0
            && let Err(e) = issue_and_send(svc, &s, draft).await
        {
            if let Step::Issue(inner @ AppError::Internal(_))
            | Step::Send(inner @ AppError::Internal(_)) = &e
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
            record_error(svc, &s, Some(&error)).await?;
        }
    }
    Ok(made)
}

async fn record_error(
    svc: Services<'_>,
    s: &store::recurring::RecurringRow,
    error: Option<&str>,
) -> anyhow::Result<()> {
    let mut tx = svc.db.begin_write().await?;
    store::recurring::set_last_error(tx.conn(), &s.company_id, &s.id, error).await?;
    tx.commit().await?;
    Ok(())
}

/// Which step of an automatic issue failed.
enum Step {
    Issue(AppError),
    Send(AppError),
}

/// Issues a recurring draft through the normal issuing path, as the person who set the
/// schedule up, then queues its mailing when the schedule sends (in a transaction of its
/// own: an invoice that cannot be mailed is issued all the same).
async fn issue_and_send(
    svc: Services<'_>,
    s: &store::recurring::RecurringRow,
    draft: store::invoices::InvoiceRow,
) -> Result<(), Step> {
    let issued = async {
        let read = {
            let mut db = svc.db.acquire().await?;
            let company =
                super::issue::issuing_company(&mut db, &s.company_id, &s.created_by).await?;
            super::issue::read(&mut db, company, None, draft).await?
        };
        // No connection in hand: deciding may wait for the exchange-rate feed.
        let prepared = super::issue::decide(svc, read).await?;
        // Its `BEGIN` goes with the issue's batch.
        let mut tx = svc.db.begin_write_deferred().await?;
        let issued = super::issue::commit(&mut tx, svc, prepared).await?.row;
        tx.commit().await?;
        AppResult::Ok(issued)
    }
    .await
    .map_err(Step::Issue)?;
    if s.auto_send == 0 {
        return Ok(());
    }
    async {
        let mut tx = svc.db.begin_write().await?;
        super::send::queue(
            tx.conn(),
            &issued,
            crate::routes::invoices::send::SendInvoiceRequest::default(),
            svc.now(),
        )
        .await?;
        tx.commit().await?;
        AppResult::Ok(())
    }
    .await
    .map_err(Step::Send)
}
