//! Getting paid: mailing invoices to customers (`invoice.deliver`), reminders after the
//! due date, and the periodic run of recurring invoices.
//!
//! What needs the API's invoice logic (rendering an issued invoice's PDF, making and
//! issuing the drafts of recurring invoices) comes through [`Invoicing`], which the
//! `api` crate implements and `invoicing serve`/`worker` hand to the worker: this crate
//! never depends on `api`.

use std::{collections::BTreeMap, future::Future, pin::Pin, sync::Arc};

use chrono::{DateTime, Utc};
use store::deliveries::{DeliverJob, DeliveryRow};

use crate::{
    Context, Job, JobError,
    mail::{MailAttachment, OutgoingMail},
    templates::{self, Lang},
};

/// An instant, as the hooks take it.
pub type Now = DateTime<Utc>;

/// A boxed future of the [`Invoicing`] hooks.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The invoice logic the worker borrows from the API.
pub trait Invoicing: Send + Sync {
    /// The file names a delivery of an issued invoice attaches (its PDF, its e-invoice).
    fn attachment_names(&self, invoice: &store::invoices::InvoiceRow) -> Vec<String>;

    /// The bytes of the attachment `name` of an issued invoice (as the delivery lists it).
    fn attachment<'a>(
        &'a self,
        company_id: &'a store::CompanyId,
        invoice_id: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, anyhow::Result<MailAttachment>>;

    /// Makes the draft of every period of every active recurring invoice that has started
    /// by `now` (issuing and sending it when the schedule says so); returns how many drafts
    /// were made.
    fn run_recurring(&self, now: DateTime<Utc>) -> BoxFuture<'_, anyhow::Result<usize>>;
}

/// Shared handle on the hooks.
pub type SharedInvoicing = Arc<dyn Invoicing>;

/// Companies looked at per reminder pass, and reminders queued per company and step.
const REMINDER_BATCH: i64 = 500;

/// What one pass of the schedule did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pass {
    /// Drafts made by recurring invoices.
    pub drafts: usize,
    /// Reminders queued.
    pub reminders: usize,
    /// Invoices announced as overdue (`invoice.overdue` webhook events).
    pub overdue: usize,
}

/// One pass of the getting-paid schedule as of `now`: recurring drafts, reminders, then
/// `invoice.overdue` events.
/// Every worker runs it every `INVOICING_SCHEDULE_SECONDS`; running it twice, or on two
/// workers at once, does nothing twice (the database's unique keys decide).
pub async fn run_schedule(ctx: &Context, now: DateTime<Utc>) -> anyhow::Result<Pass> {
    let drafts = match &ctx.invoicing {
        Some(hooks) => hooks.run_recurring(now).await?,
        None => 0,
    };
    let reminders = match &ctx.invoicing {
        Some(hooks) => queue_reminders(&ctx.db, hooks.as_ref(), now).await?,
        // Without the hooks no invoice can be mailed: reminders wait for a worker that can.
        None => 0,
    };
    let overdue = announce_overdue(&ctx.db, now).await?;
    Ok(Pass {
        drafts,
        reminders,
        overdue,
    })
}

const DAY: i64 = 86_400_000_000;
/// How late the last reminder step may still be sent (days after it came).
const LATE_WINDOW_DAYS: i64 = 30;

/// Queues the reminders due at `now`: for each unpaid invoice, the latest `reminderDays`
/// step that has come, unless it had that step already (the unique index on
/// `deliveries (invoice_id, step)` makes a step happen once, also across workers and
/// restarts). Earlier steps missed while no worker ran are not sent late: the customer
/// gets one reminder, the latest; the last step is sent at most 30 days late. Returns how
/// many were queued.
pub async fn queue_reminders(
    db: &store::Db,
    hooks: &dyn Invoicing,
    now: DateTime<Utc>,
) -> anyhow::Result<usize> {
    let now = now.timestamp_micros();
    let mut queued = 0;
    let mut after: Option<String> = None;
    loop {
        let companies = {
            let mut conn = db.pool().acquire().await?;
            store::deliveries::reminding_companies(&mut conn, after.as_deref(), REMINDER_BATCH)
                .await?
        };
        let Some((last, _)) = companies.last() else {
            break;
        };
        after = Some(last.to_string());
        for (company_id, days_json) in &companies {
            match remind_company(db, hooks, company_id, days_json, now).await {
                Ok(n) => queued += n,
                // One company's failure (stored data that does not decode) is logged and
                // stops only its reminders for this pass.
                Err(e) => {
                    tracing::error!(company = %company_id, error = %format!("{e:#}"), "queuing reminders failed")
                }
            }
        }
        if (companies.len() as i64) < REMINDER_BATCH {
            break;
        }
    }
    Ok(queued)
}

/// Queues the due reminders of one company (`days_json`: its `reminderDays`).
async fn remind_company(
    db: &store::Db,
    hooks: &dyn Invoicing,
    company_id: &store::CompanyId,
    days_json: &str,
    now: i64,
) -> anyhow::Result<usize> {
    let mut steps: Vec<i64> = serde_json::from_str(days_json).map_err(|e| {
        anyhow::anyhow!("company {company_id} has reminder days that do not decode: {e}")
    })?;
    steps.retain(|d| *d >= 0);
    steps.sort_unstable();
    steps.dedup();
    let mut queued = 0;
    // Step i is due for invoices due at least steps[i] days ago and less than
    // steps[i + 1] days ago (the later step is theirs then); the last step for those due
    // less than LATE_WINDOW_DAYS after it. So each pass reads only invoices in a window,
    // and turning reminders on does not mail every invoice that has been overdue for years.
    for (i, step) in steps.iter().enumerate() {
        let due_by = now - step * DAY;
        let due_after = match steps.get(i + 1) {
            Some(next) => now - next * DAY,
            None => now - (step + LATE_WINDOW_DAYS) * DAY,
        };
        queued += remind_step(db, hooks, company_id, *step, Some(due_after), due_by, now).await?;
    }
    Ok(queued)
}

async fn remind_step(
    db: &store::Db,
    hooks: &dyn Invoicing,
    company_id: &store::CompanyId,
    step: i64,
    due_after: Option<i64>,
    due_by: i64,
    now: i64,
) -> anyhow::Result<usize> {
    let mut tx = db.begin_write().await?;
    let candidates = store::deliveries::reminder_candidates(
        tx.conn(),
        company_id,
        step,
        due_after,
        due_by,
        REMINDER_BATCH,
    )
    .await?;
    let mut queued = 0;
    for c in candidates {
        // No address, no reminder: nothing to queue (a send names its addresses explicitly).
        let Some(email) = c.email.filter(|e| !e.trim().is_empty()) else {
            continue;
        };
        let invoice = store::invoices::get(
            tx.conn(),
            company_id,
            &store::InvoiceId::parse(&c.invoice_id)?,
        )
        .await?
        .ok_or_else(|| anyhow::anyhow!("invoice {} vanished", c.invoice_id))?;
        let row = DeliveryRow {
            id: store::new_id(),
            company_id: company_id.to_owned(),
            invoice_id: c.invoice_id.clone(),
            kind: "reminder".into(),
            step: Some(step),
            status: "queued".into(),
            to_json: serde_json::to_string(&[email])?,
            cc_json: "[]".into(),
            message: None,
            attachments_json: serde_json::to_string(&hooks.attachment_names(&invoice))?,
            // The invoice's language (the recipient's, decided at issue).
            language: issued_document(&invoice)
                .map_err(|e| anyhow::anyhow!(e))?
                .presentation
                .language,
            error: None,
            created_at: now,
            sent_at: None,
        };
        if store::deliveries::insert_queued(tx.conn(), &row).await? {
            queued += 1;
        }
    }
    tx.commit().await?;
    Ok(queued)
}

/// The document of an issued invoice; one that is missing or does not decode is an error.
fn issued_document(invoice: &store::invoices::InvoiceRow) -> Result<document::Invoice, String> {
    decode_issued(
        &invoice.id,
        invoice.document_json.as_deref(),
        invoice.issued(),
    )
}

/// The document of issued invoice `id` from its stored text and the issue data stored
/// beside it (for the invoice rows mails and reports read); missing or not decoding, an
/// error that says which.
pub(crate) fn decode_issued(
    id: &str,
    document: Option<&str>,
    issued: Result<store::invoices::Issued<'_>, store::invoices::NotIssued>,
) -> Result<document::Invoice, String> {
    let text = document
        .ok_or_else(|| format!("invoice {id} has no document (run `invoicing migrate`)"))?;
    let issued = issued.map_err(|e| e.to_string())?;
    let frame = document::stored::Frame {
        id: id.to_owned(),
        number: issued.reference.to_owned(),
        yearly_number: issued.number,
        year: issued.year,
        issued_at: issued.issued_at,
    };
    document::stored::decode(text, frame)
        .map_err(|e| format!("the document of invoice {id} does not decode: {e}"))
}

/// `invoice.deliver`: mails a delivery with its attachments and records the outcome.
/// A try that fails for a passing reason stays `queued` with its error and is retried; a
/// permanent failure, or the last try, is `failed` with the error. A reminder of an
/// invoice paid since it was queued is not sent (`failed`, saying so).
pub(crate) async fn deliver(ctx: Context, job: Job) -> Result<(), JobError> {
    let p: DeliverJob = job.payload()?;
    let result = try_deliver(&ctx, &job, &p).await;
    let mut conn = ctx.db.pool().acquire().await?;
    match &result {
        Ok(()) => {}
        Err(JobError::Later(_)) => {}
        Err(e) => {
            let last = matches!(e, JobError::Permanent(_)) || job.attempt >= job.max_attempts;
            let status = if last { "failed" } else { "queued" };
            let message = e.to_string();
            store::deliveries::set_outcome(
                &mut conn,
                &p.company_id,
                &p.delivery_id,
                status,
                Some(&message),
                None,
            )
            .await?;
        }
    }
    result
}

async fn try_deliver(ctx: &Context, job: &Job, p: &DeliverJob) -> Result<(), JobError> {
    let mut conn = ctx.db.pool().acquire().await?;
    let Some(d) = store::deliveries::get(&mut conn, &p.company_id, &p.delivery_id).await? else {
        return Err(JobError::Permanent(format!(
            "delivery {} does not exist",
            p.delivery_id
        )));
    };
    if d.status == "sent" {
        // Ran before and recorded it; the job's own record was what got lost.
        return Ok(());
    }
    let invoice_id = store::InvoiceId::parse(&d.invoice_id)
        .map_err(|e| JobError::Permanent(format!("the delivery's invoice id: {e}")))?;
    let invoice = store::invoices::get(&mut conn, &d.company_id, &invoice_id)
        .await?
        .ok_or_else(|| JobError::Permanent(format!("invoice {} does not exist", d.invoice_id)))?;
    if d.kind == "reminder" && invoice.paid_minor >= invoice.total {
        return Err(JobError::Permanent(
            "the invoice was paid before the reminder went out; not sent".into(),
        ));
    }
    let doc = issued_document(&invoice).map_err(JobError::Permanent)?;
    drop(conn);

    let list = |what: &str, json: &str| -> Result<Vec<String>, JobError> {
        serde_json::from_str(json)
            .map_err(|e| JobError::Permanent(format!("the delivery's {what} do not decode: {e}")))
    };
    let to = list("recipients", &d.to_json)?;
    let mut cc = list("copies", &d.cc_json)?;
    let names = list("attachments", &d.attachments_json)?;
    let Some((first, more)) = to.split_first() else {
        return Err(JobError::Permanent("the delivery has no recipient".into()));
    };
    cc.extend(more.iter().cloned());

    let hooks = ctx.invoicing.as_ref().ok_or_else(|| {
        JobError::Permanent("this worker cannot render invoices (no invoicing hooks)".into())
    })?;
    let mut attachments = Vec::with_capacity(names.len());
    for name in &names {
        attachments.push(
            hooks
                .attachment(&d.company_id, &d.invoice_id, name)
                .await
                .map_err(JobError::Transient)?,
        );
    }

    let formats = reports::locale::Formats::new(&d.language)
        .or_else(|_| reports::locale::Formats::new("en"))
        .map_err(|e| JobError::Permanent(e.to_string()))?;
    let digits = doc.currency.minor_digits;
    let money = |minor: i64| formats.money(minor, &doc.currency.code, digits);
    let due = doc
        .due_date
        .map(Ok)
        .or_else(|| {
            invoice
                .due_date
                .map(|d| store::from_micros(d).map(|t| t.date_naive()))
        })
        .transpose()
        .map_err(|e| JobError::Permanent(format!("invoice {}: {e}", invoice.id)))?
        .map(|d| formats.date(d))
        .unwrap_or_else(|| "-".into());
    let vars: BTreeMap<String, String> = [
        ("company_name", doc.seller.name.clone()),
        ("reference", doc.number.clone()),
        ("total", money(invoice.total)),
        ("outstanding", money(invoice.total - invoice.paid_minor)),
        ("due_date", due),
        ("message", d.message.clone().unwrap_or_default()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let template = if d.kind == "reminder" {
        "invoice_reminder"
    } else {
        "invoice_send"
    };
    let rendered = templates::render(template, Lang::from_tag(&d.language), &vars)
        .map_err(|e| JobError::Permanent(e.to_string()))?;
    let mail = OutgoingMail {
        to: first.clone(),
        subject: rendered.subject,
        text: rendered.text,
        html: rendered.html,
        message_id: Some(job.id.clone()),
        cc,
        attachments,
    };
    ctx.mailer.send(&mail).await?;
    tracing::info!(delivery = %d.id, kind = %d.kind, "invoice mailed");
    // Marked sent and announced (`invoice.sent`, for sends, not reminders) together.
    let mut tx = ctx.db.begin_write().await?;
    store::deliveries::set_outcome(
        tx.conn(),
        &d.company_id,
        &d.id,
        "sent",
        None,
        Some(ctx.now().timestamp_micros()),
    )
    .await?;
    if d.kind == "send" {
        let mut data = store::invoice_events::invoice_data(&invoice)?;
        data["delivery_id"] = serde_json::Value::from(d.id.clone());
        store::webhooks::emit(tx.conn(), &d.company_id, "invoice.sent", data).await?;
    }
    tx.commit().await?;
    Ok(())
}

/// Invoices announced as overdue per schedule pass (the next pass takes the rest).
const OVERDUE_BATCH: i64 = 500;

/// Emits `invoice.overdue` for the invoices that became overdue by `now`, once each: the
/// mark and the event are written in one transaction, and the mark's key refuses a second
/// (also from another worker at the same time). Returns how many were announced.
pub async fn announce_overdue(db: &store::Db, now: DateTime<Utc>) -> anyhow::Result<usize> {
    let now = now.timestamp_micros();
    let due = {
        let mut conn = db.pool().acquire().await?;
        store::invoice_events::newly_overdue(&mut conn, now, OVERDUE_BATCH).await?
    };
    let mut announced = 0;
    for (company_id, invoice_id) in due {
        let mut tx = db.begin_write().await?;
        if !store::invoice_events::mark_overdue(tx.conn(), &company_id, &invoice_id, now).await? {
            continue;
        }
        let id = store::InvoiceId::parse(&invoice_id)?;
        let Some(invoice) = store::invoices::get(tx.conn(), &company_id, &id).await? else {
            continue;
        };
        let data = store::invoice_events::invoice_data(&invoice)?;
        store::webhooks::emit(tx.conn(), &company_id, "invoice.overdue", data).await?;
        tx.commit().await?;
        announced += 1;
    }
    Ok(announced)
}
