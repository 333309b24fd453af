//! Background work of the invoicing service, run from the jobs table.
//!
//! Requests never do slow or fallible work themselves (sending mail, talking
//! to the tax authority, rendering reports): they insert a job in their own
//! transaction (`store::jobs::enqueue`) and answer. A [`Worker`] — inside
//! `invoicing serve`, or alone as `invoicing worker` — claims due jobs, runs
//! the handler registered for the job's kind, and records the outcome: done,
//! retried later with exponential backoff, or parked as dead with its last
//! error after its attempts run out. Daily jobs are enqueued by the workers
//! themselves (see [`schedule`]), so there is no second scheduler to run.
//!
//! Handlers must be idempotent: a job runs at least once, and may run again
//! if its worker dies after the work but before recording it.
//! See `docs/JOBS.md` for adding a kind.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod aeat;
#[cfg(feature = "testing")]
pub mod fake_aeat;
mod handlers;
pub mod invoicing;
pub mod mail;
pub use store::password;
pub mod report;
pub mod schedule;
pub mod templates;
#[cfg(feature = "testing")]
pub mod testing;
pub mod verifactu;
pub mod webhooks;
pub mod worker;

use std::{collections::BTreeMap, future::Future, pin::Pin, sync::Arc};

pub use mail::{MailConfig, Mailer};
pub use worker::{Worker, WorkerConfig};

/// Settings the handlers need.
#[derive(Debug, Clone)]
pub struct JobsConfig {
    /// Public base URL of the service, for links in mail.
    pub public_url: String,
    /// Signs report download links.
    pub secret_key: reports::links::SecretKey,
    /// Longest a report render may take.
    pub report_timeout: std::time::Duration,
}

/// What every handler gets: the database, the mailer, the settings and the
/// outside services.
#[derive(Clone)]
pub struct Context {
    pub db: store::Db,
    pub mailer: Arc<Mailer>,
    pub config: Arc<JobsConfig>,
    /// The AEAT web service; `None` when `INVOICING_AEAT_MODE` is `disabled`.
    pub aeat: Option<Arc<aeat::AeatClient>>,
    /// Who confirms powers of attorney; `None` leaves it to the operator.
    pub poa_checker: Option<Arc<dyn aeat::PowerOfAttorneyChecker>>,
    /// The API's invoice logic (PDFs, recurring drafts); `None`: invoices are neither
    /// mailed nor made by schedules.
    pub invoicing: Option<invoicing::SharedInvoicing>,
    /// How webhook deliveries are made.
    pub webhooks: Arc<webhooks::Settings>,
    /// Source of the current time: the schedule passes, report dates and link expiries,
    /// reminders and webhook signatures read it (the API's clock, so tests move both).
    pub clock: store::Clock,
}

impl Context {
    /// A context without the AEAT and the power-of-attorney checker.
    pub fn new(db: store::Db, mailer: Arc<Mailer>, config: Arc<JobsConfig>) -> Self {
        Self {
            db,
            mailer,
            config,
            aeat: None,
            poa_checker: None,
            invoicing: None,
            webhooks: Arc::default(),
            clock: store::system_clock(),
        }
    }

    /// The same context reading time from `clock`.
    pub fn with_clock(mut self, clock: store::Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The current time, from [`Context::clock`].
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        (self.clock)()
    }

    /// The same context with the API's invoice logic.
    pub fn with_invoicing(mut self, invoicing: invoicing::SharedInvoicing) -> Self {
        self.invoicing = Some(invoicing);
        self
    }
}

/// A claimed job, as its handler sees it.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: String,
    pub kind: String,
    pub payload: serde_json::Value,
    pub company_id: Option<store::CompanyId>,
    /// This run's number, from 1.
    pub attempt: i64,
    pub max_attempts: i64,
    /// The worker holding the job (guards writes to the job row).
    pub worker_id: String,
}

impl Job {
    /// The payload as the handler's type; a payload that does not fit is a permanent error.
    pub fn payload<T: serde::de::DeserializeOwned>(&self) -> Result<T, JobError> {
        serde_json::from_value(self.payload.clone())
            .map_err(|e| JobError::Permanent(format!("the {} payload is invalid: {e}", self.kind)))
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    /// May work later (a server down, a timeout): retried with backoff.
    #[error("{0:#}")]
    Transient(#[from] anyhow::Error),
    /// Will never work (a malformed payload): parked as dead at once.
    #[error("{0}")]
    Permanent(String),
    /// Not a failure: the work made progress and continues at this instant
    /// (microseconds since the epoch), e.g. after the AEAT's `TiempoEsperaEnvio`.
    /// The job is queued again with its failure count reset.
    #[error("continues at {0}")]
    Later(i64),
}

/// A stored time (microseconds since the epoch); one out of range is damaged data, which no
/// retry mends: a permanent failure.
pub(crate) fn stored_time(micros: i64) -> Result<chrono::DateTime<chrono::Utc>, JobError> {
    store::from_micros(micros).map_err(|e| JobError::Permanent(e.to_string()))
}

impl From<sqlx::Error> for JobError {
    fn from(e: sqlx::Error) -> Self {
        Self::Transient(e.into())
    }
}

/// The future a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;

/// A job handler: called once per run with the shared context and the job.
pub type Handler = Arc<dyn Fn(Context, Job) -> HandlerFuture + Send + Sync>;

/// The kinds a worker runs and their handlers, plus the daily schedule.
#[derive(Clone, Default)]
pub struct Registry {
    handlers: BTreeMap<String, Handler>,
    daily: Vec<schedule::Daily>,
}

impl Registry {
    /// Every kind of this release, with the daily maintenance schedule.
    pub fn standard() -> Self {
        let mut r = Self::default();
        handlers::register(&mut r);
        r
    }

    /// Registers the handler of `kind` (replacing any earlier one).
    pub fn register<F, Fut>(&mut self, kind: &str, handler: F) -> &mut Self
    where
        F: Fn(Context, Job) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.handlers.insert(
            kind.to_owned(),
            Arc::new(move |ctx, job| Box::pin(handler(ctx, job)) as HandlerFuture),
        );
        self
    }

    /// Runs `kind` once a day (see [`schedule::Daily`]).
    pub fn daily(&mut self, daily: schedule::Daily) -> &mut Self {
        self.daily.push(daily);
        self
    }

    /// The registered kinds.
    pub fn kinds(&self) -> Vec<&str> {
        self.handlers.keys().map(String::as_str).collect()
    }

    fn handler(&self, kind: &str) -> Option<Handler> {
        self.handlers.get(kind).cloned()
    }

    fn schedules(&self) -> &[schedule::Daily] {
        &self.daily
    }
}
