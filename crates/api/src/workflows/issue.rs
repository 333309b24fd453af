//! Issuing: the company's permission, exchange rates, placeholders, the document, the
//! gapless number; one draft or many.

use chrono::Datelike;
use domain::reference::ReferenceFormat;

use super::{
    AppError, AppResult, Services, Writer,
    invoices::{ensure_draft, invoice_id, load},
};
use crate::{
    documents,
    routes::{entities::EntityTemplate, invoices::model::ExchangeRateEntry},
};

/// Where a Spanish issuer obtains the VERI*FACTU authorization.
pub const AUTHORIZATION_URL: &str = "/settings/verifactu";

/// Issues the draft `id` of the company `company_id` as the user `user_id` and returns the
/// issued row.
///
/// Everything is read and decided first, on a pooled connection: the draft, the company
/// and its permission to issue, the recipient, the exchange rates (fetched from the daily
/// feed if missing) and the document itself. A refusal (unknown id, already issued, terms
/// not accepted, no rate, an incomplete invoice) never takes the writer, and the write
/// transaction holds SQLite's single writer only to take the number and store the invoice,
/// on condition that the draft is still as read here.
pub async fn issue(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    user_id: &str,
    id: &str,
) -> AppResult<Issued> {
    let read = {
        let mut db = svc.db.acquire().await?;
        // The draft, the company and the recipient in one read.
        let found =
            store::invoices::for_issue(&mut db, company_id, &invoice_id(id)?, user_id).await?;
        let draft = found
            .invoice
            .ok_or_else(|| AppError::not_found("invoice"))?;
        ensure_draft(&draft)?;
        let company = may_issue(found.company)?;
        read(&mut db, company, found.recipient, draft).await?
    };
    // No connection in hand: deciding may wait for the exchange-rate feed.
    let prepared = decide(svc, read).await?;
    // The issue's batch is the transaction's first statement: it carries the `BEGIN`. Unless
    // a VERI*FACTU record follows it, it is also the last, so it may commit it too.
    let last = !prepared.company.is_spanish();
    let mut tx = tx.writing(last).await?;
    commit(&mut *tx, svc, prepared).await
}

/// Issues every listed draft of the company (ids already bounded and deduplicated), in the
/// order of their draft numbers; all or nothing. Ids that are not (or no longer) the
/// company's drafts are skipped; returns how many were issued.
pub async fn issue_many(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    user_id: &str,
    ids: Vec<String>,
) -> AppResult<i64> {
    let company = {
        let mut db = svc.db.acquire().await?;
        issuing_company(&mut db, company_id, user_id).await?
    };
    fetch_rates_first(svc, &company, &ids).await?;
    let mut conn = tx.conn().await?;
    let mut drafts = Vec::new();
    for id in ids {
        // Locked for issuing; ids that are not (or no longer) drafts are skipped.
        // A text that cannot be an id is no draft of the company either.
        let Ok(id) = store::InvoiceId::parse(&id) else {
            continue;
        };
        if let Some(row) = store::invoices::claim_draft(&mut conn, company_id, &id).await? {
            drafts.push(row);
        }
    }
    drafts.sort_by_key(|r| (r.order_year, r.order_number, r.id.clone()));
    let mut affected = 0;
    for row in drafts {
        let id = row.id.clone();
        issue_draft(&mut conn, svc, company.clone(), None, row)
            .await
            .map_err(|e| match e {
                AppError::Invalid(m) => {
                    AppError::Invalid(format!("Invoice {id}: {m} Nothing was issued."))
                }
                other => other,
            })?;
        affected += 1;
    }
    Ok(affected)
}

/// Before a write transaction that issues the drafts `ids`: fetches today's exchange rates
/// when they are not known and one of the drafts needs one, so that no issue waits for the
/// feed inside the transaction, holding SQLite's one writer (or PostgreSQL row locks) from
/// every company. Reads the drafts only then (once a day, or after a failure's pause); an
/// error of one draft is left for the transaction to report.
pub async fn fetch_rates_first(
    svc: Services<'_>,
    company: &store::companies::CompanyRow,
    ids: &[String],
) -> AppResult<()> {
    let now = svc.now();
    if !svc.fx.would_fetch(now.date_naive()) {
        return Ok(());
    }
    // The first pair a draft needs and does not supply: one fetch answers every pair of the
    // day (or fails for all).
    let mut needed = None;
    {
        let mut db = svc.db.acquire().await?;
        for id in ids {
            let Ok(id) = store::InvoiceId::parse(id) else {
                continue;
            };
            let Some(row) = store::invoices::get(&mut db, &company.id, &id).await? else {
                continue;
            };
            if ensure_draft(&row).is_err() {
                continue;
            }
            let Ok(found) = read(&mut db, company.clone(), None, row).await else {
                continue;
            };
            let Ok(template) = template_of(&found.recipient) else {
                continue;
            };
            if let Ok((_, missing)) = supplied_rates(company, &found.row, template.as_ref())
                && let Some(to) = missing.into_iter().next()
            {
                needed = Some((found.row.currency_code, to));
                break;
            }
        }
        if needed.is_some() {
            db.release();
        }
    }
    if let Some((from, to)) = needed {
        let _ = svc.fx.quote(&from, &to, now.date_naive()).await;
    }
    Ok(())
}

/// Why a draft read before the write transaction could not be issued inside it: it is gone
/// (404), was issued by a concurrent request (409), or was changed meanwhile (409, retry).
async fn lost_draft(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> AppError {
    let row = match load(conn, company_id, id).await {
        Ok(row) => row,
        Err(e) => return e,
    };
    match ensure_draft(&row) {
        Err(e) => e,
        Ok(()) => AppError::Conflict(format!(
            "Invoice {id} was changed while it was being issued; nothing was issued. Issue it \
             again to issue the draft as it is now."
        )),
    }
}

/// The company `company_id`, once it is checked that `user_id` may issue for it: settled,
/// the current legal documents accepted by the user, and for Spanish issuers the
/// VERI*FACTU authorization in effect (refused in that order). One query. The worker
/// issuing a recurring invoice does so as the person who set it up.
///
/// Read before the write transaction (on any connection): like every read of a
/// PostgreSQL transaction at READ COMMITTED, it sees the company as it was when read.
pub async fn issuing_company(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    user_id: &str,
) -> AppResult<store::companies::CompanyRow> {
    may_issue(store::companies::for_issuing(conn, company_id, user_id).await?)
}

/// The company of [`issuing_company`] as read, once it is checked that the user may issue
/// for it.
fn may_issue(
    found: Option<store::companies::IssuingCompany>,
) -> AppResult<store::companies::CompanyRow> {
    let found = found.ok_or_else(|| AppError::not_found("company"))?;
    let company = found.company;
    if company.is_settled == 0 {
        return Err(AppError::company_not_settled());
    }
    if found.unaccepted_documents > 0 {
        return Err(AppError::agreement_required());
    }
    if company.is_spanish() && found.verifactu_in_effect != 1 {
        return Err(AppError::Refused {
            code: "verifactu_authorization_required",
            message: "Spanish issuers must report every invoice to the AEAT (VERI*FACTU): authorize this \
                      service to submit on the company's behalf first. The invoice stays a draft."
                .into(),
            authorization_url: Some(AUTHORIZATION_URL.into()),
        });
    }
    Ok(company)
}

/// Issues one draft inside the caller's transaction and returns the stored row:
/// [`prepare`], then [`commit`], on the transaction's connection.
///
/// `row` is the draft as read (before the transaction, or locked with
/// [`store::invoices::claim_draft`]); if it is no longer that draft when stored, nothing is
/// issued and the error says why (the caller's transaction must roll back). `company` comes
/// from [`issuing_company`]; `recipient`, when given, is the draft's recipient read earlier
/// (it is read here when missing or not the draft's).
pub async fn issue_draft(
    conn: &mut sqlx::AnyConnection,
    svc: Services<'_>,
    company: store::companies::CompanyRow,
    recipient: Option<store::entities::EntityRow>,
    row: store::invoices::InvoiceRow,
) -> AppResult<store::invoices::InvoiceRow> {
    let prepared = prepare(conn, svc, company, recipient, row).await?;
    Ok(commit(conn, svc, prepared).await?.row)
}

/// An invoice decided and ready to store: everything but its number.
pub struct Prepared {
    company: store::companies::CompanyRow,
    row: store::invoices::InvoiceRow,
    doc: document::Invoice,
    first: i64,
    reference: Vec<domain::reference::ReferencePart>,
    now: chrono::DateTime<chrono::Utc>,
}

/// Decides everything an issue of `row` states (rates, placeholders, the document) and
/// refuses what cannot be issued; it only reads, so any connection will do: [`read`], then
/// [`decide`]. A caller that holds no transaction should call the two itself and let its
/// connection go in between, since deciding may wait for the exchange-rate feed.
pub async fn prepare(
    conn: &mut sqlx::AnyConnection,
    svc: Services<'_>,
    company: store::companies::CompanyRow,
    recipient: Option<store::entities::EntityRow>,
    row: store::invoices::InvoiceRow,
) -> AppResult<Prepared> {
    decide(svc, read(conn, company, recipient, row).await?).await
}

/// What an issue reads before it decides: the draft, its company, its recipient and, for a
/// corrective invoice, the invoice it corrects.
pub struct Read {
    company: store::companies::CompanyRow,
    recipient: store::entities::EntityRow,
    row: store::invoices::InvoiceRow,
    preceding: Option<document::PrecedingInvoice>,
}

/// The reads of an issue, on `conn`: `recipient`, when given, is the draft's recipient read
/// earlier (it is read here when missing or not the draft's).
pub async fn read(
    conn: &mut sqlx::AnyConnection,
    company: store::companies::CompanyRow,
    recipient: Option<store::entities::EntityRow>,
    row: store::invoices::InvoiceRow,
) -> AppResult<Read> {
    let recipient = match recipient.filter(|r| r.id == row.recipient_id) {
        Some(r) => r,
        None => store::entities::get(conn, &company.id, &row.recipient_id)
            .await?
            .ok_or_else(|| AppError::invalid("The invoice's recipient no longer exists."))?,
    };
    let preceding = match &row.corrected_invoice_id {
        Some(id) => Some(preceding_of(conn, &company, id, row.correction_reason.as_deref()).await?),
        None => None,
    };
    Ok(Read {
        company,
        recipient,
        row,
        preceding,
    })
}

/// Everything the issue states, from what [`read`] found and the exchange rates (supplied,
/// or fetched from the daily feed when missing): it touches no database.
pub async fn decide(svc: Services<'_>, read: Read) -> AppResult<Prepared> {
    let Read {
        company,
        recipient,
        mut row,
        preceding,
    } = read;
    let company = &company;
    let now = svc.now();

    // Placeholders: a required one added to the company after the draft was made must be filled.
    let given: Vec<crate::routes::entities::PlaceholderValue> = documents::parse(
        "invoice placeholder values",
        &row.custom_placeholder_values_json,
    )?;
    let template = template_of(&recipient)?;
    let placeholders =
        crate::routes::invoices::build::placeholders(company, template.as_ref(), given)?;

    let rates = freeze_rates(svc, company, &row, template.as_ref(), now).await?;

    let (series_format, first) = match row.series {
        store::invoices::Series::Corrective => (
            &company.corrective_invoice_reference_format,
            company.first_corrective_invoice_yearly_number,
        ),
        store::invoices::Series::Invoice => (
            &company.invoice_reference_format,
            company.first_invoice_yearly_number,
        ),
    };
    let format = ReferenceFormat::parse(series_format).map_err(|e| {
        AppError::invalid(format!(
            "The company's reference format {e}; fix it with PATCH /v1/company."
        ))
    })?;
    let year = i64::from(now.year());

    // The document: everything the invoice says, decided now and frozen. Its number is
    // taken when it is stored below (it lives in the row, not in the document's JSON).
    let seller = documents::seller(company)?;
    let buyer = documents::buyer(&recipient)?;
    let terms = recipient
        .payment_terms_days
        .unwrap_or(company.payment_terms_days);
    let input = documents::issue_of(
        &row,
        company,
        &seller,
        &buyer,
        placeholders
            .into_iter()
            .map(|p| document::Placeholder {
                key: p.key,
                value: p.value,
            })
            .collect(),
        documents::rates(&rates),
        Some(terms),
        preceding,
        now,
    )?;
    let doc = document::build::build(input, seller, buyer).map_err(|e| {
        AppError::invalid(format!(
            "{}. The invoice stays a draft.",
            capitalized(&e.to_string())
        ))
    })?;

    row.status = store::invoices::InvoiceStatus::Issued;
    row.invoice_year = Some(year);
    row.issued_at = Some(now.timestamp_micros());
    row.order_number = None;
    row.order_year = None;
    // A due date given on the draft stays as given; otherwise the terms decided it.
    if row.due_date.is_none() {
        row.due_date = doc
            .due_date
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|d| d.and_utc().timestamp_micros());
    }
    row.document_json = Some(documents::encode(&doc)?);
    // From now on the document is the invoice's content: the draft's columns it was built
    // from are emptied, so nothing can read a second copy.
    row.lines_json = "[]".into();
    row.custom_placeholder_values_json = "[]".into();
    row.exchange_rates_json = "[]".into();
    row.bank_accounts_json = "[]".into();
    row.issuer_snapshot_json = None;
    row.recipient_snapshot_json = None;
    Ok(Prepared {
        company: company.clone(),
        row,
        doc,
        first,
        reference: format.parts(year),
        now,
    })
}

/// A just-issued invoice: its row as stored and its document, framed by that row (the value
/// [`crate::documents::of_row`] would decode from it), so that answering the issue does not
/// decode what it has just encoded.
pub struct Issued {
    pub row: store::invoices::InvoiceRow,
    pub doc: document::Invoice,
}

/// Takes the next number and stores the prepared invoice, inside the caller's transaction;
/// for Spanish issuers also chains its VERI*FACTU record. The draft must still be the one
/// prepared: if it was issued or changed meanwhile, nothing is issued and the error says why.
pub async fn commit(
    tx: &mut impl store::Writing,
    svc: Services<'_>,
    prepared: Prepared,
) -> AppResult<Issued> {
    let Prepared {
        company,
        mut row,
        mut doc,
        first,
        reference,
        now,
    } = prepared;
    let Some(endpoints) = store::invoices::store_issued(tx, &mut row, first, &reference).await?
    else {
        return Err(lost_draft(tx.conn().await?, &company.id, &row.id).await);
    };
    // The number the store just gave (a row it answers without one is a store defect), and
    // the rest of the row's part of the document, as decoding the row would fill them in.
    doc.set_frame(documents::frame(&row)?);
    if company.is_spanish() {
        crate::aeat::register_issue(tx.conn().await?, svc.aeat_mode, &company, &doc, now).await?;
    }
    store::webhooks::emit_counted(tx, endpoints, &row.company_id, "invoice.issued", || {
        store::invoice_events::invoice_data(&row)
    })
    .await?;
    Ok(Issued { row, doc })
}

/// The recipient's template, if it has one.
fn template_of(recipient: &store::entities::EntityRow) -> AppResult<Option<EntityTemplate>> {
    recipient
        .template_json
        .as_deref()
        .map(|t| documents::parse("entity template", t))
        .transpose()
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// BG-3 of a corrective invoice: the corrected invoice as issued, and the reason.
async fn preceding_of(
    conn: &mut sqlx::AnyConnection,
    company: &store::companies::CompanyRow,
    id: &str,
    reason: Option<&str>,
) -> AppResult<document::PrecedingInvoice> {
    let id = store::InvoiceId::parse(id)
        .map_err(|_| AppError::invalid("The corrected invoice no longer exists."))?;
    let corrected = store::invoices::get(conn, &company.id, &id)
        .await?
        .ok_or_else(|| AppError::invalid("The corrected invoice no longer exists."))?;
    documents::preceding(&corrected, reason)
}

/// The rates the draft supplies, and the currencies it needs a rate to (from its own) that
/// it does not supply: the company's, then the template's display currencies.
fn supplied_rates(
    company: &store::companies::CompanyRow,
    row: &store::invoices::InvoiceRow,
    template: Option<&EntityTemplate>,
) -> AppResult<(Vec<ExchangeRateEntry>, Vec<String>)> {
    let rates: Vec<ExchangeRateEntry> =
        documents::parse("invoice exchange rates", &row.exchange_rates_json)?;
    let from = &row.currency_code;
    let wanted = company
        .currency_code
        .iter()
        .chain(template.iter().flat_map(|t| t.display_currencies.iter()));
    let mut missing: Vec<String> = Vec::new();
    for to in wanted {
        if to != from
            && !missing.contains(to)
            && !rates.iter().any(|r| &r.from == from && &r.to == to)
        {
            missing.push(to.clone());
        }
    }
    Ok((rates, missing))
}

/// Every pair the invoice needs (to the company currency and to the template's display
/// currencies): supplied ones as given, missing ones from the daily feed, else a 400.
async fn freeze_rates(
    svc: Services<'_>,
    company: &store::companies::CompanyRow,
    row: &store::invoices::InvoiceRow,
    template: Option<&EntityTemplate>,
    now: chrono::DateTime<chrono::Utc>,
) -> AppResult<Vec<ExchangeRateEntry>> {
    let (mut rates, missing) = supplied_rates(company, row, template)?;
    let from = row.currency_code.clone();
    for to in missing {
        if svc.fx.would_fetch(now.date_naive()) {
            // Waiting for the feed (up to seconds) with a connection kept for this request
            // would hold it from every other company: give it back.
            store::db::give_back();
        }
        match svc.fx.quote(&from, &to, now.date_naive()).await {
            Some(q) => rates.push(ExchangeRateEntry {
                from: from.clone(),
                to: to.clone(),
                rate: q.rate,
                date: Some(q.date.to_string()),
                source: Some("ecb".into()),
            }),
            None => {
                return Err(AppError::invalid(format!(
                    "No exchange rate {from}->{to} could be obtained; supply it in the draft's \
                     `exchange_rates`, e.g. {{\"from\":\"{from}\",\"to\":\"{to}\",\"rate\":\"1.2345\"}} \
                     (PATCH /v1/invoices/{}), then issue again.",
                    row.id
                )));
            }
        }
    }
    Ok(rates)
}
