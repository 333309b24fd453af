//! The jobs table: a transactional outbox that workers claim, retry and park.
//!
//! A change that causes background work inserts its job with [`enqueue`] on the
//! connection of its own transaction, so the job exists exactly when the change
//! committed: a rolled-back request (or an AI caller's dry run) leaves no job,
//! and a committed one never loses its job. Workers take jobs with [`claim`],
//! which on PostgreSQL skips rows another worker has locked
//! (`FOR UPDATE SKIP LOCKED`) and on SQLite runs inside a write transaction
//! (one writer at a time), so one job is never handed to two workers.
//!
//! Every state change a worker makes is guarded by `locked_by`: a worker whose
//! lease expired (and whose job was claimed again elsewhere) cannot overwrite
//! the new owner's outcome.
//!
//! Claims are fair across companies ([`claim`]): a job's class ([`priority`]) comes first,
//! so mail and tax submissions never wait behind report renders, and within a class each
//! job has a turn ([`enqueue`]) that spaces one company's waiting jobs one turn apart, so
//! a company with a large backlog takes turns with the others instead of going first.
//! See `docs/JOBS.md`.

use sqlx::AnyConnection;

use crate::{Backend, Db};

/// Job kinds known to this release, with the payload each takes.
pub mod kind {
    /// Sends a templated e-mail: [`super::EmailSend`].
    pub const EMAIL_SEND: &str = "email.send";
    /// Generates a member's first password, stores its hash and mails it: [`super::MemberPassword`].
    pub const MEMBER_PASSWORD: &str = "member.password";
    /// Deletes finished jobs past their retention (scheduled daily).
    pub const JOBS_PRUNE: &str = "jobs.prune";
    /// Renders a report's PDF and mails its download link: [`super::ReportRender`].
    pub const REPORT_RENDER: &str = "report.render";
    /// Mails the requester of a ready report its download link: [`super::ReportRender`].
    pub const REPORT_MAIL: &str = "report.mail";
    /// Sends an issuer's pending VERI*FACTU records to the AEAT: [`super::VerifactuSubmit`].
    /// One queued or running per issuer (see [`super::verifactu_submit`]).
    pub const VERIFACTU_SUBMIT: &str = "verifactu.submit";
    /// Asks whether the AEAT confirms declared powers of attorney (scheduled daily).
    pub const VERIFACTU_CHECK_AUTHORIZATION: &str = "verifactu.check_authorization";
    /// Mails an invoice (a send or a reminder) to its customer: [`crate::deliveries::DeliverJob`].
    pub const INVOICE_DELIVER: &str = "invoice.deliver";
}

/// Job classes: a lower class is always claimed first (see [`priority`]).
pub mod class {
    /// Mail and tax submissions: what a person or the tax authority is waiting for.
    pub const URGENT: i64 = 0;
    /// Maintenance and anything not named (daily checks, pruning, kinds of newer releases).
    pub const ROUTINE: i64 = 1;
    /// Report renders: long, many per request, and nobody is blocked on one in particular.
    pub const BULK: i64 = 2;
}

/// The class of a job kind. Mail and VERI*FACTU submissions are never behind report
/// renders, however many a company queued: one company's reports must not delay another
/// company's password mail or its invoices reaching the AEAT.
pub fn priority(kind: &str) -> i64 {
    match kind {
        kind::EMAIL_SEND
        | kind::MEMBER_PASSWORD
        | kind::REPORT_MAIL
        | kind::VERIFACTU_SUBMIT
        | kind::INVOICE_DELIVER => class::URGENT,
        kind::REPORT_RENDER => class::BULK,
        _ => class::ROUTINE,
    }
}

/// Payload of [`kind::VERIFACTU_SUBMIT`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct VerifactuSubmit {
    /// The issuer whose records are sent.
    pub company_id: crate::CompanyId,
}

/// Attempts of a submission job: failures in a row (network errors, SOAP
/// faults) before it is parked; a batch the AEAT answers starts the count again.
/// With the backoff capped at an hour, about two days of outage.
pub const VERIFACTU_SUBMIT_MAX_ATTEMPTS: i64 = 50;

/// The submission job of an issuer, due now. Its dedupe key is per issuer, so
/// enqueueing it while one is queued or running adds nothing; the running job
/// frees the key (in a transaction that holds the issuer's chain head) only
/// once no record is left to send.
pub fn verifactu_submit(company_id: &crate::CompanyId) -> NewJob {
    NewJob {
        max_attempts: VERIFACTU_SUBMIT_MAX_ATTEMPTS,
        dedupe_key: Some(format!("{}:{company_id}", kind::VERIFACTU_SUBMIT)),
        ..NewJob::new(
            kind::VERIFACTU_SUBMIT,
            VerifactuSubmit {
                company_id: company_id.to_owned(),
            },
        )
        .for_company(company_id)
    }
}

/// Frees the dedupe key of a job `worker` is running, so the same key can be
/// enqueued again; false when it no longer holds the job.
pub async fn release_dedupe_key(
    conn: &mut AnyConnection,
    id: &str,
    worker: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE jobs SET dedupe_key = NULL, updated_at = $3 \
         WHERE id = $1 AND locked_by = $2 AND status = 'running'",
    )
    .bind(id)
    .bind(worker)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// How many times a job runs before it is parked as dead, unless enqueued otherwise.
pub const DEFAULT_MAX_ATTEMPTS: i64 = 10;

/// Payload of [`kind::EMAIL_SEND`]: the message is rendered when it is sent.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EmailSend {
    /// Recipient address.
    pub to: String,
    /// Template name, e.g. `member_added`.
    pub template: String,
    /// Language tag of the recipient (`es_ES`, `en`); unknown languages get English.
    pub language: String,
    /// Template variables. Never secrets: they are stored until the job is pruned.
    pub vars: std::collections::BTreeMap<String, String>,
}

/// Payload of [`kind::MEMBER_PASSWORD`]: ids only, the password is made by the job.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MemberPassword {
    pub company_id: crate::CompanyId,
    pub user_id: String,
    /// Language of the mail.
    pub language: String,
    /// The member who added them (named in the mail).
    pub invited_by: String,
    /// Hash this job stored on an earlier attempt, so a retry may replace it
    /// but never a password set by anyone else.
    #[serde(default)]
    pub issued_hash: Option<String>,
}

/// Payload of [`kind::REPORT_RENDER`] and [`kind::REPORT_MAIL`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct ReportRender {
    pub report_id: String,
}

/// A job to insert.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub kind: String,
    pub payload: serde_json::Value,
    pub company_id: Option<crate::CompanyId>,
    pub max_attempts: i64,
    /// Microseconds since the epoch; not claimed before.
    pub run_at: i64,
    pub dedupe_key: Option<String>,
    /// Its class ([`priority`] of the kind unless set otherwise); lower runs first.
    pub priority: i64,
}

impl NewJob {
    /// A job of `kind` due now, with the default number of attempts.
    pub fn new(kind: &str, payload: impl serde::Serialize) -> Self {
        Self {
            kind: kind.to_owned(),
            payload: serde_json::to_value(payload).unwrap_or(serde_json::Value::Null),
            company_id: None,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            run_at: crate::now_micros(),
            dedupe_key: None,
            priority: priority(kind),
        }
    }

    /// The company the job works for.
    pub fn for_company(mut self, company_id: &crate::CompanyId) -> Self {
        self.company_id = Some(company_id.to_owned());
        self
    }
}

/// Inserts a job on the caller's connection (inside its transaction); returns
/// its id, or `None` when a job with the same `dedupe_key` already exists.
///
/// The job's turn in its class is the turn being served now (the latest turn of a running
/// job of the class, else the earliest of a queued one), or one past the company's last
/// queued job of the class when that is later: a company that queues a thousand jobs fills
/// turns far ahead, and another company's job, queued after them, still gets the current
/// turn and runs next. Computed in the insert itself, with three index lookups
/// (`jobs_turns`, `jobs_company_turns`) whatever the length of the queue. A job without a
/// company (daily maintenance) takes the turn being served. Two transactions enqueueing at
/// once may compute the same turn: ties go to the older job.
pub async fn enqueue(conn: &mut AnyConnection, job: &NewJob) -> sqlx::Result<Option<String>> {
    let id = crate::new_id();
    let now = crate::now_micros();
    // `WHERE true`: SQLite needs a WHERE before an upsert's ON CONFLICT after a SELECT.
    let done = sqlx::query(
        "INSERT INTO jobs (id, kind, payload, company_id, status, attempts, max_attempts, run_at, \
         dedupe_key, created_at, updated_at, priority, turn) \
         SELECT $1, $2, $3, $4, 'queued', 0, $5, $6, $7, $8, $8, $9, \
           CASE WHEN t.last IS NOT NULL AND t.last + 1 > t.serving THEN t.last + 1 \
                ELSE t.serving END \
         FROM (SELECT \
           (SELECT MAX(turn) FROM jobs WHERE status = 'queued' AND priority = $9 \
              AND company_id = $4) AS last, \
           COALESCE((SELECT MAX(turn) FROM jobs WHERE status = 'running' AND priority = $9), \
                    (SELECT MIN(turn) FROM jobs WHERE status = 'queued' AND priority = $9), \
                    0) AS serving) t \
         WHERE true \
         ON CONFLICT (dedupe_key) DO NOTHING",
    )
    .bind(&id)
    .bind(&job.kind)
    .bind(job.payload.to_string())
    .bind(job.company_id.as_deref())
    .bind(job.max_attempts.max(1))
    .bind(job.run_at)
    .bind(job.dedupe_key.as_deref())
    .bind(now)
    .bind(job.priority)
    .execute(conn)
    .await?;
    Ok((done.rows_affected() == 1).then_some(id))
}

/// Jobs of `kind` the company has queued or running (for caps on what one company may
/// queue, such as report renders).
pub async fn waiting_for_company(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    kind: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running') AND priority = $1 \
         AND company_id = $2 AND kind = $3",
    )
    .bind(priority(kind))
    .bind(company_id)
    .bind(kind)
    .fetch_one(conn)
    .await
}

/// A job as a worker holds it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClaimedJob {
    pub id: String,
    pub kind: String,
    pub payload: String,
    pub company_id: Option<crate::CompanyId>,
    /// This run's number, from 1.
    pub attempts: i64,
    pub max_attempts: i64,
}

/// Takes the next due job of one of `kinds` for `worker`, holding it until
/// `lease_until` (microseconds): the due job of the lowest class, and within it the
/// earliest turn ([`enqueue`]), so companies take turns. A job whose previous worker's
/// lease expired is first put back in line (at its old turn, so it comes early).
///
/// PostgreSQL: the inner `SELECT ... FOR UPDATE SKIP LOCKED` passes over rows
/// other workers are claiming, and re-checks the row it locks, so concurrent
/// workers never take the same job. SQLite: the same statement without the
/// locking clause, in a write transaction (one writer at a time). Either way the
/// statement walks the `jobs_turns` index in claim order and stops at the first due
/// job of a kind it knows: no sort of the queue, however long.
pub async fn claim(
    db: &Db,
    worker: &str,
    kinds: &[&str],
    lease_until: i64,
) -> sqlx::Result<Option<ClaimedJob>> {
    if kinds.is_empty() {
        return Ok(None);
    }
    let placeholders: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 4)).collect();
    // SQLite's planner would take `jobs_queue` for `run_at <= now` and sort every due job;
    // it is told to walk `jobs_turns`, which is already in claim order.
    let (index, lock) = match db.backend() {
        Backend::Postgres => ("", " FOR UPDATE SKIP LOCKED"),
        Backend::Sqlite => (" INDEXED BY jobs_turns", ""),
    };
    let sql = format!(
        "UPDATE jobs SET status = 'running', attempts = attempts + 1, locked_by = $1, \
         locked_until = $2, updated_at = $3 \
         WHERE id = (SELECT id FROM jobs{index} \
           WHERE status = 'queued' AND run_at <= $3 AND kind IN ({}) \
           ORDER BY priority, turn, id LIMIT 1{lock}) \
         RETURNING id, kind, payload, company_id, attempts, max_attempts",
        placeholders.join(", ")
    );
    let now = crate::now_micros();
    // A look first, without the writer: an idle worker polls twice a second, and on SQLite
    // a write transaction that finds nothing would still queue behind (and hold up) every
    // request's write. What it reads may be stale by the time a write transaction would
    // begin; a job that became due meanwhile is claimed at the next poll.
    let kinds_in: Vec<String> = (0..kinds.len()).map(|i| format!("${}", i + 2)).collect();
    let mut look = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT 1 WHERE EXISTS (SELECT 1 FROM jobs WHERE status = 'running' AND locked_until < $1) \
         OR EXISTS (SELECT 1 FROM jobs WHERE status = 'queued' AND run_at <= $1 AND kind IN ({}))",
        kinds_in.join(", ")
    )))
    .bind(now);
    for kind in kinds {
        look = look.bind(*kind);
    }
    if look
        .fetch_optional(&mut *db.acquire().await?)
        .await?
        .is_none()
    {
        return Ok(None);
    }
    let mut tx = db.begin_write().await?;
    // Leases that ran out: their workers died. Back in line, attempts kept (the claim
    // counts another; a job whose workers keep dying is parked by the worker).
    sqlx::query(
        "UPDATE jobs SET status = 'queued', locked_by = NULL, locked_until = NULL, \
         updated_at = $1 WHERE status = 'running' AND locked_until < $1",
    )
    .bind(now)
    .execute(tx.conn())
    .await?;
    let mut query = sqlx::query_as::<_, ClaimedJob>(sqlx::AssertSqlSafe(sql))
        .bind(worker)
        .bind(lease_until)
        .bind(now);
    for kind in kinds {
        query = query.bind(*kind);
    }
    let job = query.fetch_optional(tx.conn()).await?;
    tx.commit().await?;
    Ok(job)
}

/// Extends the lease of a running job; false when `worker` no longer holds it.
pub async fn heartbeat(db: &Db, id: &str, worker: &str, lease_until: i64) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE jobs SET locked_until = $3, updated_at = $4 \
         WHERE id = $1 AND locked_by = $2 AND status = 'running'",
    )
    .bind(id)
    .bind(worker)
    .bind(lease_until)
    .bind(crate::now_micros())
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Replaces the payload of a job `worker` is running (a handler keeping what a
/// retry must know); false when it no longer holds the job.
pub async fn set_payload(
    conn: &mut AnyConnection,
    id: &str,
    worker: &str,
    payload: &serde_json::Value,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE jobs SET payload = $3, updated_at = $4 \
         WHERE id = $1 AND locked_by = $2 AND status = 'running'",
    )
    .bind(id)
    .bind(worker)
    .bind(payload.to_string())
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// What became of a run.
#[derive(Debug, Clone)]
pub enum Outcome<'a> {
    /// Finished: never runs again.
    Done,
    /// Failed; runs again at the given instant (microseconds).
    Retry { at: i64, error: &'a str },
    /// Failed for good (attempts exhausted or a permanent error); the error is kept.
    Dead { error: &'a str },
    /// Not run to the end (the worker is stopping): queued again, the attempt not counted.
    Released,
    /// Made progress and has more to do later (e.g. a rate limit): queued again
    /// for the given instant with its failure count reset.
    Snooze { at: i64 },
}

/// Records the outcome of a run; false when `worker` no longer held the job.
pub async fn finish(db: &Db, id: &str, worker: &str, outcome: Outcome<'_>) -> sqlx::Result<bool> {
    const HELD: &str = "WHERE id = $1 AND locked_by = $2 AND status = 'running'";
    let now = crate::now_micros();
    let query = match outcome {
        Outcome::Done => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET status = 'done', finished_at = $3, updated_at = $3, \
             locked_by = NULL, locked_until = NULL {HELD}"
        )))
        .bind(id)
        .bind(worker)
        .bind(now),
        Outcome::Retry { at, error } => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET status = 'queued', run_at = $4, last_error = $5, updated_at = $3, \
             locked_by = NULL, locked_until = NULL {HELD}"
        )))
        .bind(id)
        .bind(worker)
        .bind(now)
        .bind(at)
        .bind(error),
        Outcome::Dead { error } => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET status = 'dead', last_error = $4, finished_at = $3, updated_at = $3, \
             locked_by = NULL, locked_until = NULL {HELD}"
        )))
        .bind(id)
        .bind(worker)
        .bind(now)
        .bind(error),
        Outcome::Snooze { at } => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET status = 'queued', attempts = 0, run_at = $4, last_error = NULL, updated_at = $3, \
             locked_by = NULL, locked_until = NULL {HELD}"
        )))
        .bind(id)
        .bind(worker)
        .bind(now)
        .bind(at),
        Outcome::Released => sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE jobs SET status = 'queued', attempts = attempts - 1, updated_at = $3, \
             locked_by = NULL, locked_until = NULL {HELD}"
        )))
        .bind(id)
        .bind(worker)
        .bind(now),
    };
    let done = query.execute(db.pool()).await?;
    Ok(done.rows_affected() == 1)
}

/// A job as stored, for operators and tests.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: String,
    pub kind: String,
    pub payload: String,
    pub company_id: Option<crate::CompanyId>,
    pub status: String,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: i64,
    pub locked_by: Option<String>,
    pub last_error: Option<String>,
    pub dedupe_key: Option<String>,
    pub created_at: i64,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, kind, payload, company_id, status, attempts, max_attempts, run_at, \
    locked_by, last_error, dedupe_key, created_at, finished_at";

/// Jobs in insertion order, optionally of one kind and one status.
pub async fn list(
    conn: &mut AnyConnection,
    kind: Option<&str>,
    status: Option<&str>,
) -> sqlx::Result<Vec<JobRow>> {
    sqlx::query_as::<_, JobRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM jobs WHERE ($1 IS NULL OR kind = $1) \
         AND ($2 IS NULL OR status = $2) ORDER BY id"
    )))
    .bind(kind)
    .bind(status)
    .fetch_all(conn)
    .await
}

/// One job.
pub async fn get(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as::<_, JobRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM jobs WHERE id = $1"
    )))
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Queues a dead job again with a fresh set of attempts; false when it is not dead.
pub async fn retry_dead(conn: &mut AnyConnection, id: &str) -> sqlx::Result<bool> {
    let now = crate::now_micros();
    let done = sqlx::query(
        "UPDATE jobs SET status = 'queued', attempts = 0, run_at = $2, updated_at = $2, \
         finished_at = NULL WHERE id = $1 AND status = 'dead'",
    )
    .bind(id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes jobs done before `done_before` and dead before `dead_before`; returns how many.
pub async fn prune(
    conn: &mut AnyConnection,
    done_before: i64,
    dead_before: i64,
) -> sqlx::Result<u64> {
    let done = sqlx::query(
        "DELETE FROM jobs WHERE (status = 'done' AND finished_at < $1) \
         OR (status = 'dead' AND finished_at < $2)",
    )
    .bind(done_before)
    .bind(dead_before)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}
