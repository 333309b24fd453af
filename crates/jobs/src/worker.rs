//! The worker loop: claim, run with a lease, record the outcome, back off.

use std::{sync::Arc, time::Duration};

use store::jobs::{ClaimedJob, Outcome};
use tokio::{sync::watch, time::Instant};

use crate::{Context, Job, JobError, Registry, schedule};

/// How a worker paces itself.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Sleep between polls when no job is due.
    pub poll_interval: Duration,
    /// How long a claim holds without a heartbeat; a worker that dies loses
    /// its jobs to others after this long.
    pub lease: Duration,
    /// First retry delay; each further failure doubles it.
    pub backoff_base: Duration,
    /// Longest retry delay.
    pub backoff_max: Duration,
    /// On shutdown, how long a running job may still take before it is released.
    pub shutdown_grace: Duration,
    /// Jobs run at once by this worker.
    pub concurrency: usize,
    /// How often the daily schedule is (re)enqueued.
    pub schedule_interval: Duration,
    /// How often due reminders and recurring periods are looked for
    /// (`INVOICING_SCHEDULE_SECONDS`).
    pub getting_paid_interval: Duration,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(1),
            lease: Duration::from_secs(120),
            backoff_base: Duration::from_secs(30),
            backoff_max: Duration::from_secs(3600),
            shutdown_grace: Duration::from_secs(20),
            concurrency: 2,
            schedule_interval: Duration::from_secs(300),
            getting_paid_interval: Duration::from_secs(30),
        }
    }
}

/// Runs jobs from the jobs table until told to stop.
#[derive(Clone)]
pub struct Worker {
    id: String,
    ctx: Context,
    registry: Arc<Registry>,
    config: WorkerConfig,
}

impl Worker {
    /// A worker over `ctx.db` running the kinds of `registry`.
    pub fn new(ctx: Context, registry: Registry, config: WorkerConfig) -> Self {
        Self {
            // Unique per worker: it is what guards every write to a held job.
            id: format!("{}:{}", std::process::id(), store::new_id()),
            ctx,
            registry: Arc::new(registry),
            config,
        }
    }

    /// This worker's id, as stored in `jobs.locked_by`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Runs until `shutdown` resolves, then lets running jobs finish within
    /// the grace period and releases those that do not.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send) {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut loops = tokio::task::JoinSet::new();
        for n in 0..self.config.concurrency.max(1) {
            let worker = self.clone();
            let stop = stop_rx.clone();
            // Only the first loop keeps the schedule; once is enough.
            loops.spawn(async move { worker.run_loop(stop, n == 0).await });
        }
        tracing::info!(worker = %self.id, kinds = ?self.registry.kinds(), "worker started");
        shutdown.await;
        let _ = stop_tx.send(true);
        while loops.join_next().await.is_some() {}
        tracing::info!(worker = %self.id, "worker stopped");
    }

    /// Runs due jobs one after the other until none is due; returns how many
    /// ran. The daily schedule is left alone. For tests and one-off maintenance.
    pub async fn run_until_idle(&self) -> anyhow::Result<usize> {
        let (_stop_tx, stop) = watch::channel(false);
        let mut ran = 0;
        while let Some(job) = self.claim().await? {
            self.execute(job, stop.clone()).await;
            ran += 1;
        }
        Ok(ran)
    }

    /// Enqueues today's and tomorrow's runs of the daily jobs (what every
    /// running worker does every `schedule_interval`); returns how many were new.
    pub async fn enqueue_daily(&self, now: chrono::DateTime<chrono::Utc>) -> anyhow::Result<usize> {
        schedule::ensure(&self.ctx.db, self.registry.schedules(), now).await
    }

    /// One pass of the getting-paid schedule as of `now` (what every running worker does
    /// every `getting_paid_interval`): the drafts of recurring periods that have started,
    /// and the reminders that are due. See [`crate::invoicing::run_schedule`].
    pub async fn run_schedule(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<crate::invoicing::Pass> {
        crate::invoicing::run_schedule(&self.ctx, now).await
    }

    async fn run_loop(&self, mut stop: watch::Receiver<bool>, keeps_schedule: bool) {
        let mut next_schedule = Instant::now();
        let mut next_paid = Instant::now();
        while !*stop.borrow() {
            if keeps_schedule && Instant::now() >= next_schedule {
                // The jobs table's own timing: the daily runs' `run_at` is compared with
                // the system time by every claim, so it is set from the system time too
                // (the schedule pass below is the service's business and reads its clock).
                if let Err(e) = self.enqueue_daily(chrono::Utc::now()).await {
                    tracing::warn!(error = %format!("{e:#}"), "could not enqueue the daily jobs");
                }
                next_schedule = Instant::now() + self.config.schedule_interval;
            }
            if keeps_schedule && Instant::now() >= next_paid {
                if let Err(e) = self.run_schedule(self.ctx.now()).await {
                    tracing::warn!(error = %format!("{e:#}"), "the recurring invoices and reminders pass failed");
                }
                next_paid = Instant::now() + self.config.getting_paid_interval;
            }
            match self.claim().await {
                Ok(Some(job)) => self.execute(job, stop.clone()).await,
                Ok(None) => idle(&mut stop, self.config.poll_interval).await,
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "claiming a job failed");
                    idle(&mut stop, self.config.poll_interval).await;
                }
            }
        }
    }

    async fn claim(&self) -> anyhow::Result<Option<ClaimedJob>> {
        let kinds = self.registry.kinds();
        Ok(store::jobs::claim(&self.ctx.db, &self.id, &kinds, self.lease_until()).await?)
    }

    fn lease_until(&self) -> i64 {
        let lease = i64::try_from(self.config.lease.as_micros()).unwrap_or(i64::MAX / 2);
        store::now_micros().saturating_add(lease)
    }

    /// Runs one claimed job to its outcome, in a span naming it (never its payload).
    async fn execute(&self, claimed: ClaimedJob, stop: watch::Receiver<bool>) {
        use tracing::Instrument;
        let span = tracing::info_span!("job", id = %claimed.id, kind = %claimed.kind, attempt = claimed.attempts);
        self.execute_in_span(claimed, stop).instrument(span).await;
    }

    async fn execute_in_span(&self, claimed: ClaimedJob, mut stop: watch::Receiver<bool>) {
        let Some(handler) = self.registry.handler(&claimed.kind) else {
            // Cannot happen: claims are limited to registered kinds.
            self.record(&claimed, Outcome::Released).await;
            return;
        };
        if claimed.attempts > claimed.max_attempts {
            // Re-claimed after its workers died mid-run too often.
            let error = format!(
                "gave up after {} attempts whose workers stopped before finishing",
                claimed.max_attempts
            );
            self.record(&claimed, Outcome::Dead { error: &error }).await;
            return;
        }
        let payload = match serde_json::from_str(&claimed.payload) {
            Ok(p) => p,
            Err(e) => {
                // A stored payload that does not decode can never run: it is dead, loudly.
                let error = format!("its stored payload does not decode: {e}");
                self.record(&claimed, Outcome::Dead { error: &error }).await;
                return;
            }
        };
        let job = Job {
            id: claimed.id.clone(),
            kind: claimed.kind.clone(),
            payload,
            company_id: claimed.company_id.clone(),
            attempt: claimed.attempts,
            max_attempts: claimed.max_attempts,
            worker_id: self.id.clone(),
        };
        // A task of its own, so a panicking handler is a failed run, not a dead worker.
        let mut task = tokio::spawn(handler(self.ctx.clone(), job));
        let mut heartbeat =
            tokio::time::interval((self.config.lease / 3).max(Duration::from_millis(10)));
        heartbeat.tick().await;
        let mut deadline: Option<Instant> = None;
        let result = loop {
            tokio::select! {
                joined = &mut task => break Some(joined),
                _ = heartbeat.tick() => {
                    match store::jobs::heartbeat(&self.ctx.db, &claimed.id, &self.id, self.lease_until()).await {
                        Ok(true) => {}
                        Ok(false) => tracing::warn!("lost the job's lease; another worker may run it"),
                        Err(e) => tracing::warn!(error = %e, "extending the job's lease failed"),
                    }
                }
                _ = stop.changed(), if deadline.is_none() => {
                    deadline = Some(Instant::now() + self.config.shutdown_grace);
                }
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    task.abort();
                    break None;
                }
            }
        };
        let outcome_error;
        let outcome = match result {
            None => {
                tracing::info!("stopping: job released for another run");
                Outcome::Released
            }
            Some(Ok(Ok(()))) => {
                tracing::info!("job done");
                Outcome::Done
            }
            Some(Ok(Err(JobError::Permanent(msg)))) => {
                outcome_error = msg;
                tracing::warn!(error = %outcome_error, "job failed permanently; parked as dead");
                Outcome::Dead {
                    error: &outcome_error,
                }
            }
            Some(Ok(Err(JobError::Later(at)))) => {
                let run_at =
                    store::from_micros(at).map_or_else(|_| at.to_string(), |t| t.to_rfc3339());
                tracing::info!(%run_at, "job continues later");
                Outcome::Snooze { at }
            }
            Some(Ok(Err(JobError::Transient(e)))) => {
                outcome_error = format!("{e:#}");
                self.failed(&claimed, &outcome_error)
            }
            Some(Err(join)) => {
                outcome_error = format!("the handler panicked: {join}");
                self.failed(&claimed, &outcome_error)
            }
        };
        self.record(&claimed, outcome).await;
    }

    /// Retry later, or park as dead when this was the last attempt.
    fn failed<'e>(&self, job: &ClaimedJob, error: &'e str) -> Outcome<'e> {
        if job.attempts >= job.max_attempts {
            tracing::warn!(error, "job failed on its last attempt; parked as dead");
            Outcome::Dead { error }
        } else {
            let delay = backoff(&self.config, job.attempts);
            tracing::warn!(error, retry_in = ?delay, "job failed; will retry");
            let delay = i64::try_from(delay.as_micros()).unwrap_or(i64::MAX / 2);
            Outcome::Retry {
                at: store::now_micros().saturating_add(delay),
                error,
            }
        }
    }

    async fn record(&self, job: &ClaimedJob, outcome: Outcome<'_>) {
        match store::jobs::finish(&self.ctx.db, &job.id, &self.id, outcome).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!("the job's lease had expired; its outcome is not recorded"),
            // The lease runs out and another worker runs the job again.
            Err(e) => tracing::error!(error = %e, "recording the job's outcome failed"),
        }
    }
}

/// Waits `poll` or until told to stop.
async fn idle(stop: &mut watch::Receiver<bool>, poll: Duration) {
    tokio::select! {
        () = tokio::time::sleep(poll) => {}
        _ = stop.changed() => {}
    }
}

/// Delay before the retry after failed attempt `attempt` (from 1): the base
/// doubled per earlier failure, capped, with up to 20 % jitter so jobs that
/// failed together (an SMTP outage) do not all return at the same instant.
pub fn backoff(config: &WorkerConfig, attempt: i64) -> Duration {
    let exp = u32::try_from(attempt.saturating_sub(1).clamp(0, 30)).unwrap_or(30);
    let plain = config
        .backoff_base
        .saturating_mul(2u32.saturating_pow(exp))
        .min(config.backoff_max);
    let jitter = rand::random::<f64>() * 0.2;
    plain.mul_f64(1.0 - jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let c = WorkerConfig {
            backoff_base: Duration::from_secs(30),
            backoff_max: Duration::from_secs(3600),
            ..WorkerConfig::default()
        };
        for (attempt, plain) in [(1, 30), (2, 60), (3, 120), (4, 240), (8, 3600), (40, 3600)] {
            let d = backoff(&c, attempt).as_secs_f64();
            let plain = plain as f64;
            assert!(d <= plain && d >= plain * 0.8, "attempt {attempt}: {d}");
        }
    }
}
