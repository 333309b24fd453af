//! The handlers of this release's job kinds (`store::jobs::kind`).

use std::collections::BTreeMap;

use store::jobs::{EmailSend, MemberPassword, kind};

use crate::{
    Context, Job, JobError, Registry,
    mail::OutgoingMail,
    password,
    schedule::Daily,
    templates::{self, Lang},
};

/// Finished jobs are kept this long for inspection, then pruned.
const KEEP_DONE_DAYS: i64 = 30;
/// Dead jobs are kept longer: someone may still want to read their error or retry them.
const KEEP_DEAD_DAYS: i64 = 90;

/// Registers every kind of this release and the daily maintenance.
pub(crate) fn register(r: &mut Registry) {
    r.register(kind::EMAIL_SEND, email_send)
        .register(kind::MEMBER_PASSWORD, member_password)
        .register(kind::JOBS_PRUNE, prune)
        .register(store::webhooks::DELIVER_KIND, crate::webhooks::deliver)
        .register(kind::REPORT_RENDER, crate::report::handle)
        .register(kind::REPORT_MAIL, crate::report::mail)
        .register(kind::VERIFACTU_SUBMIT, crate::verifactu::submit)
        .register(kind::INVOICE_DELIVER, crate::invoicing::deliver)
        .register(
            kind::VERIFACTU_CHECK_AUTHORIZATION,
            crate::verifactu::check_authorization,
        )
        .daily(Daily::new(kind::JOBS_PRUNE, 3, 15))
        .daily(Daily::new(kind::VERIFACTU_CHECK_AUTHORIZATION, 7, 30));
}

/// `email.send`: renders a template and sends it. Retried while the mail server fails.
async fn email_send(ctx: Context, job: Job) -> Result<(), JobError> {
    let p: EmailSend = job.payload()?;
    let mut vars = p.vars;
    vars.entry("sign_in_url".to_owned())
        .or_insert_with(|| ctx.config.public_url.clone());
    let rendered = templates::render(&p.template, Lang::from_tag(&p.language), &vars)
        .map_err(|e| JobError::Permanent(e.to_string()))?;
    send(&ctx, &job, p.to, rendered).await
}

/// `member.password`: gives a new password member their first password.
///
/// The password is made here, not in the request, so it is never written
/// anywhere but in the mail: the request stores only ids. The hash is stored
/// before the mail is sent (in one transaction with the job's record of which
/// hash it issued), so the mailed password always works; a retry after a
/// failed send issues a fresh password and replaces only the hash this job
/// issued, never one the user set meanwhile.
async fn member_password(ctx: Context, job: Job) -> Result<(), JobError> {
    let mut p: MemberPassword = job.payload()?;
    let mut conn = ctx.db.pool().acquire().await?;
    let Some(user) = store::users::get(&mut conn, &p.user_id).await? else {
        return Err(JobError::Permanent(format!(
            "user {} does not exist",
            p.user_id
        )));
    };
    let Some(company) = store::companies::get(&mut conn, &p.company_id).await? else {
        return Err(JobError::Permanent(format!(
            "company {} does not exist",
            p.company_id
        )));
    };
    let Some(member) = store::members::get_by_email(&mut conn, &p.company_id, &user.email).await?
    else {
        tracing::info!("no longer a member of the company; no password sent");
        return Ok(());
    };
    // The inviter as this company knows them, never a name another company gave.
    let inviter = store::members::get_by_user(&mut conn, &p.company_id, &p.invited_by)
        .await?
        .and_then(|m| m.name());
    drop(conn);

    let password = password::generate();
    // The same bound as sign-ins: a burst of new members never runs more hashes
    // at once than the process allows (busy: the job is retried later).
    let hash = password::HashGate::shared()
        .hash(&password)
        .await
        .map_err(|e| JobError::Transient(anyhow::anyhow!("{e}")))?;
    let mut tx = ctx.db.begin_write().await?;
    let replaced =
        store::users::replace_password_hash(tx.conn(), &p.user_id, p.issued_hash.as_deref(), &hash)
            .await?;
    if !replaced {
        tracing::info!("the account got a password elsewhere meanwhile; no password sent");
        return Ok(());
    }
    p.issued_hash = Some(hash);
    let payload = serde_json::to_value(&p).map_err(anyhow::Error::from)?;
    if !store::jobs::set_payload(tx.conn(), &job.id, &job.worker_id, &payload).await? {
        return Err(anyhow::anyhow!("lost the job's lease before sending").into());
    }
    tx.commit().await?;

    let name = member
        .display_name
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| display_name(&member.account_name, &user.email));
    let vars: BTreeMap<String, String> = [
        ("name", name),
        ("email", user.email.clone()),
        ("company_name", company.name),
        (
            "inviter_name",
            inviter.unwrap_or_else(|| "A colleague".into()),
        ),
        ("password", password),
        ("sign_in_url", ctx.config.public_url.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let rendered = templates::render("member_password", Lang::from_tag(&p.language), &vars)
        .map_err(|e| JobError::Permanent(e.to_string()))?;
    send(&ctx, &job, user.email, rendered).await
}

/// `jobs.prune`: deletes finished jobs past their retention, expired idempotency keys,
/// expired web sessions and day-old sign-in attempt counters, marks AI audit entries that waited
/// past their time `expired` (removing their held bodies), and, with an object store, objects
/// that no file row names any more (deleted receipts and reports, rolled-back uploads)
/// once they are a day old.
async fn prune(ctx: Context, _job: Job) -> Result<(), JobError> {
    const DAY: i64 = 24 * 3600 * 1_000_000;
    let now = store::now_micros();
    let mut conn = ctx.db.pool().acquire().await?;
    let n = store::jobs::prune(
        &mut conn,
        now - KEEP_DONE_DAYS * DAY,
        now - KEEP_DEAD_DAYS * DAY,
    )
    .await?;
    tracing::info!(deleted = n, "pruned finished jobs");
    let deliveries = store::webhooks::prune(&mut conn, now - KEEP_DONE_DAYS * DAY).await?;
    tracing::info!(deleted = deliveries, "pruned finished webhook deliveries");
    let keys = store::idempotency::prune(&mut conn, now).await?;
    tracing::info!(deleted = keys, "pruned expired idempotency keys");
    let expired = expire_ai_entries(&ctx, now).await?;
    tracing::info!(bodies = expired, "expired AI audit entries past their time");
    let web = store::web::prune(&mut conn, now, now - DAY).await?;
    tracing::info!(
        deleted = web,
        "pruned expired web sessions and old failed sign-ins"
    );
    if let store::files::Files::Object(objects) = ctx.db.files() {
        let sweep = objects.sweep_orphans(&mut conn, now - DAY).await?;
        tracing::info!(
            seen = sweep.seen,
            deleted = sweep.deleted,
            "swept orphaned objects from the file store"
        );
    }
    Ok(())
}

/// Writes `expired` on pending AI audit entries past their time and deletes their body
/// files in the same transaction; returns how many files were deleted. (The API refuses
/// to approve such entries whether or not this has run.)
async fn expire_ai_entries(ctx: &Context, now: i64) -> Result<usize, JobError> {
    use store::files::FileStore as _;
    let mut tx = ctx.db.begin_write().await?;
    let due = store::audit::expire_due(tx.conn(), None, now).await?;
    for (company, file) in &due {
        ctx.db
            .files()
            .delete(tx.conn(), company, file)
            .await
            .map_err(JobError::Transient)?;
    }
    tx.commit().await?;
    Ok(due.len())
}

/// A greeting name: the account's name, else the address's local part.
pub(crate) fn display_name(account_name: &str, email: &str) -> String {
    if account_name.is_empty() {
        email.split('@').next().unwrap_or(email).to_owned()
    } else {
        account_name.to_owned()
    }
}

pub(crate) async fn send(
    ctx: &Context,
    job: &Job,
    to: String,
    rendered: templates::Rendered,
) -> Result<(), JobError> {
    let mail = OutgoingMail {
        to,
        subject: rendered.subject,
        text: rendered.text,
        html: rendered.html,
        message_id: Some(job.id.clone()),
        cc: Vec::new(),
        attachments: Vec::new(),
    };
    ctx.mailer.send(&mail).await?;
    tracing::info!(to = %mail.to, "mail sent");
    Ok(())
}
