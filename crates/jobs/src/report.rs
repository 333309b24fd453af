//! `report.render`: computes a report's figures, renders its PDF and mails the requester a
//! signed download link (`report.mail`).
//!
//! Safe to run again after a crash: a report already `ready` is left alone; the PDF and
//! the `ready` state are written in one transaction together with the mail job, whose
//! dedupe key (`report-ready:{id}`) lets only one mail exist per report. A report deleted
//! while rendering stays deleted (the transaction writes nothing when the row is gone).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use store::files::FileStore;
use store::jobs::{NewJob, ReportRender, kind};
use store::reports::ReportRow;

use crate::templates::{self, Lang};
use crate::{Context, Job, JobError};

/// The handler: runs [`render`] and marks the report failed when it will not succeed.
pub(crate) async fn handle(ctx: Context, job: Job) -> Result<(), JobError> {
    let p: ReportRender = job.payload()?;
    let result = render(&ctx, &p.report_id).await;
    if let Err(err) = &result {
        let last = matches!(err, JobError::Permanent(_)) || job.attempt >= job.max_attempts;
        if last {
            let mut conn = ctx.db.pool().acquire().await?;
            store::reports::fail(
                &mut conn,
                &p.report_id,
                &err.to_string(),
                ctx.now().timestamp_micros(),
            )
            .await?;
        }
    }
    result
}

async fn render(ctx: &Context, report_id: &str) -> Result<(), JobError> {
    let mut conn = ctx.db.pool().acquire().await?;
    let Some(report) = store::reports::get_any(&mut conn, report_id).await? else {
        tracing::info!(report_id, "the report was deleted; nothing to render");
        return Ok(());
    };
    if report.status == "ready" {
        return Ok(());
    }
    if !store::reports::start(&mut conn, report_id, ctx.now().timestamp_micros()).await? {
        return Ok(());
    }
    let company = store::companies::get(&mut conn, &report.company_id)
        .await?
        .ok_or_else(|| JobError::Permanent("the report's company does not exist".into()))?;
    let invoices = store::reports::invoices_in(
        &mut conn,
        &report.company_id,
        report.period_start,
        report.period_end,
    )
    .await?;
    let expenses = store::reports::expenses_in(
        &mut conn,
        &report.company_id,
        report.period_start,
        report.period_end,
    )
    .await?;
    drop(conn);

    let input = input(&report, &company, invoices, expenses, ctx.now())?;
    let limits = render::Limits {
        timeout: ctx.config.report_timeout,
    };
    let pdf = tokio::task::spawn_blocking(move || reports::render(&input, &limits))
        .await
        .map_err(|e| JobError::Transient(anyhow::anyhow!("the render stopped: {e}")))?
        .map_err(|e| match e {
            reports::ReportError::Render(render::RenderError::Busy(_)) => {
                JobError::Transient(anyhow::anyhow!("{e}"))
            }
            other => JobError::Permanent(other.to_string()),
        })?;

    let mut tx = ctx.db.begin_write().await?;
    let file_id = ctx
        .db
        .files()
        .put(tx.conn(), &report.company_id, "application/pdf", &pdf)
        .await?;
    if !store::reports::finish(tx.conn(), report_id, &file_id, ctx.now().timestamp_micros()).await?
    {
        tracing::info!(report_id, "the report was deleted while rendering");
        return Ok(());
    }
    let mut mail = NewJob::new(
        kind::REPORT_MAIL,
        ReportRender {
            report_id: report_id.to_owned(),
        },
    )
    .for_company(&report.company_id);
    mail.dedupe_key = Some(format!("report-ready:{report_id}"));
    store::jobs::enqueue(tx.conn(), &mail).await?;
    crate::webhooks::emit_report_ready(tx.conn(), &report, &file_id).await?;
    tx.commit().await?;
    Ok(())
}

fn input(
    report: &ReportRow,
    company: &store::companies::CompanyRow,
    invoices: Vec<store::reports::ReportInvoice>,
    expenses: Vec<store::reports::ReportExpense>,
    generated_at: DateTime<Utc>,
) -> Result<reports::Input, JobError> {
    let report_type: reports::ReportType = report
        .report_type
        .parse()
        .map_err(|e: String| JobError::Permanent(e))?;
    let invoices = invoices
        .into_iter()
        .map(|i| {
            let doc =
                crate::invoicing::decode_issued(&i.id, i.document_json.as_deref(), i.issued())
                    .map_err(JobError::Permanent)?;
            let lines = doc.lines.iter().map(document::Line::to_domain).collect();
            Ok(reports::InvoiceIn {
                recipient_id: i.recipient_id,
                recipient_name: i.recipient_name,
                corrective: i.series == "corrective",
                currency: i.currency_code,
                issued_at: doc.issued_at,
                net: i.net_total,
                tax: i.tax_total,
                withholding: i.withholding_total,
                total: i.total,
                lines,
            })
        })
        .collect::<Result<Vec<_>, JobError>>()?;
    let expenses = expenses
        .into_iter()
        .map(|x| {
            Ok(reports::ExpenseIn {
                date: crate::stored_time(x.expense_date)?,
                supplier_id: x.supplier_id,
                supplier_name: x.supplier_name,
                category: x.category,
                currency: x.currency_code,
                net: x.net_total,
                tax: x.tax_total,
                total: x.total,
            })
        })
        .collect::<Result<Vec<_>, JobError>>()?;
    Ok(reports::Input {
        report_type,
        locale: report.locale.clone(),
        company_name: company.name.clone(),
        company_fiscal_id: Some(company.fiscal_id.clone()).filter(|f| !f.is_empty()),
        period_start: crate::stored_time(report.period_start)?,
        period_end: crate::stored_time(report.period_end)?,
        generated_at,
        invoices,
        expenses,
    })
}

/// `report.mail`: mails the requester a signed download link to a ready report.
///
/// The link is made here, when the mail is sent, so it is never stored (a link is a
/// credential for [`reports::links::LINK_DAYS`] days). A report deleted meanwhile gets no mail.
pub(crate) async fn mail(ctx: Context, job: Job) -> Result<(), JobError> {
    let p: ReportRender = job.payload()?;
    let mut conn = ctx.db.pool().acquire().await?;
    let Some(report) = store::reports::get_any(&mut conn, &p.report_id).await? else {
        tracing::info!(report_id = %p.report_id, "the report was deleted; no mail");
        return Ok(());
    };
    let Some(user) = store::users::get(&mut conn, &report.requested_by).await? else {
        return Ok(());
    };
    let company_name = store::companies::get(&mut conn, &report.company_id)
        .await?
        .map(|c| c.name)
        .unwrap_or_default();
    drop(conn);
    let expires = ctx.now().timestamp() + reports::links::LINK_DAYS * 24 * 3600;
    let link = reports::links::url(
        &ctx.config.secret_key,
        &ctx.config.public_url,
        &report.id,
        expires,
    );
    let language = report
        .locale
        .split('-')
        .next()
        .unwrap_or(&user.language)
        .to_owned();
    let report_type: reports::ReportType = report
        .report_type
        .parse()
        .map_err(|e: String| JobError::Permanent(e))?;
    let period = period_text(
        crate::stored_time(report.period_start)?,
        crate::stored_time(report.period_end)?,
    );
    let vars: BTreeMap<String, String> = [
        (
            "name",
            crate::handlers::display_name(&user.name, &user.email),
        ),
        ("report_title", report_type.title(&language).to_owned()),
        ("locale", report.locale.clone()),
        ("company_name", company_name),
        ("period", period),
        ("link", link),
        ("link_days", reports::links::LINK_DAYS.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let rendered = templates::render("report_ready", Lang::from_tag(&language), &vars)
        .map_err(|e| JobError::Permanent(e.to_string()))?;
    crate::handlers::send(&ctx, &job, user.email, rendered).await
}

/// `2026-01-01 – 2026-03-31`: the period with its last day, not the exclusive end.
fn period_text(start: DateTime<Utc>, end: DateTime<Utc>) -> String {
    let last = end - chrono::Duration::microseconds(1);
    format!("{} – {}", start.date_naive(), last.date_naive())
}
