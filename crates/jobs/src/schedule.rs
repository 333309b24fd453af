//! Daily jobs without a second scheduler.
//!
//! Every few minutes each worker makes sure today's and tomorrow's run of
//! every daily job exist in the jobs table, under the dedupe key
//! `daily:<kind>:<date>`. The key is unique, so however many workers do this,
//! each day gets one job; today's runs at once if its time has passed (a
//! worker that was down at that hour catches up), tomorrow's waits for its
//! time like any job with a future `run_at`. Running, retrying and parking
//! are then the ordinary machinery.

use chrono::{DateTime, Days, NaiveTime, Utc};

/// A job enqueued once per day.
#[derive(Debug, Clone)]
pub struct Daily {
    /// Job kind to run.
    pub kind: String,
    /// Time of day (UTC) it becomes due.
    pub at: NaiveTime,
    /// Its payload.
    pub payload: serde_json::Value,
}

impl Daily {
    /// `kind` every day at `hour:minute` UTC, with an empty payload.
    pub fn new(kind: &str, hour: u32, minute: u32) -> Self {
        Self {
            kind: kind.to_owned(),
            at: NaiveTime::from_hms_opt(hour, minute, 0).unwrap_or(NaiveTime::MIN),
            payload: serde_json::json!({}),
        }
    }
}

/// Enqueues the runs of today and tomorrow (UTC) of every daily job that are
/// not in the table yet; returns how many were added.
pub async fn ensure(db: &store::Db, daily: &[Daily], now: DateTime<Utc>) -> anyhow::Result<usize> {
    if daily.is_empty() {
        return Ok(0);
    }
    let today = now.date_naive();
    let mut added = 0;
    let mut tx = db.begin_write().await?;
    for d in daily {
        for date in [Some(today), today.checked_add_days(Days::new(1))]
            .into_iter()
            .flatten()
        {
            let run_at = date.and_time(d.at).and_utc().timestamp_micros();
            let job = store::jobs::NewJob {
                run_at,
                dedupe_key: Some(format!("daily:{}:{date}", d.kind)),
                ..store::jobs::NewJob::new(&d.kind, &d.payload)
            };
            if store::jobs::enqueue(tx.conn(), &job).await?.is_some() {
                added += 1;
            }
        }
    }
    tx.commit().await?;
    Ok(added)
}
