//! PDFs of invoices and proformas, rendered with Typst: in process, or in a child process
//! with a memory limit when the document carries company snippets.
//!
//! Issued invoices render only from what was frozen at issue (issuer and
//! recipient snapshots, placeholder values, rates, bank accounts), so the same
//! issued invoice is the same bytes forever; drafts and proformas use live data
//! and carry a DRAFT mark. The ETag is the hash of the document data, checked
//! before rendering, so a client's cached copy costs no render.

use std::collections::BTreeMap;

use axum::{
    extract::{Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use chrono::NaiveDate;
use render::{
    BankAccount, CorrectionReason, CorrectiveInfo, Currency, DocumentKind, DocumentStatus,
    ExchangeRateNote, InvoiceDocument, LineTax, Party, QrCode, TaxBreakdownEntry, TaxKind, Totals,
    WithholdingEntry,
};
use serde_json::Value;

use super::{entities::PlaceholderValue, invoices::model::ExchangeRateEntry};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
};

fn date(micros: i64) -> NaiveDate {
    store::from_micros(micros).date_naive()
}

fn party_from_json(v: &Value, country_fallback: &str) -> Party {
    let s = |k: &str| v[k].as_str().map(str::to_owned);
    let addr = &v["address"];
    Party {
        name: s("name").unwrap_or_default(),
        fiscal_id: s("fiscal_id"),
        vat_id: s("vies_vat_id"),
        address_lines: addr["lines"]
            .as_array()
            .map(|l| {
                l.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
        zipcode: addr["zipcode"].as_str().unwrap_or_default().to_owned(),
        city: addr["city"].as_str().unwrap_or_default().to_owned(),
        state: addr["state"].as_str().map(str::to_owned),
        country: addr["country"]
            .as_str()
            .unwrap_or(country_fallback)
            .to_owned(),
    }
}

fn company_json(c: &store::companies::CompanyRow) -> Value {
    serde_json::json!({
        "name": c.name, "fiscal_id": c.fiscal_id, "vies_vat_id": c.vies_vat_id, "type": c.company_type,
        "address": c.address_json.as_deref().and_then(|a| serde_json::from_str::<Value>(a).ok()),
        "footer_invoice_typst": c.footer_invoice_typst, "post_invoice_typst": c.post_invoice_typst,
    })
}

/// Lines, the tax breakdown per rate and treatment, and the withholding.
fn lines(
    stored: &str,
    lang: &str,
) -> (
    Vec<render::Line>,
    Vec<TaxBreakdownEntry>,
    Vec<WithholdingEntry>,
) {
    let lines: Vec<domain::invoice::Line> = serde_json::from_str(stored).unwrap_or_default();
    let mut breakdown: Vec<TaxBreakdownEntry> = Vec::new();
    let mut withholding: Vec<WithholdingEntry> = Vec::new();
    for t in lines.iter().flat_map(|l| &l.tax_lines) {
        let rate = t.rate.normalize().to_string();
        if t.kind == "withholding" {
            match withholding.iter_mut().find(|w| w.rate == rate) {
                Some(w) => {
                    w.base_minor += t.base;
                    w.amount_minor += t.amount;
                }
                None => withholding.push(WithholdingEntry {
                    rate,
                    base_minor: t.base,
                    amount_minor: t.amount,
                }),
            }
            continue;
        }
        match breakdown
            .iter_mut()
            .find(|b| b.rate == rate && b.treatment == t.treatment)
        {
            Some(b) => {
                b.base_minor += t.base;
                b.amount_minor += t.amount;
            }
            None => breakdown.push(TaxBreakdownEntry {
                legal_mention: domain::tax::Treatment::from_code(&t.treatment, t.rate)
                    .and_then(|tr| tr.legal_mention(lang))
                    .map(str::to_owned),
                rate,
                treatment: t.treatment.clone(),
                base_minor: t.base,
                amount_minor: t.amount,
            }),
        }
    }
    let rendered = lines
        .into_iter()
        .map(|l| render::Line {
            concept: l.concept,
            quantity: l.quantity.normalize().to_string(),
            unit: l.quantity_unit,
            unit_price_minor: l.unit_price,
            subtotal_minor: l.subtotal,
            taxes: l
                .tax_lines
                .into_iter()
                .map(|t| LineTax {
                    kind: if t.kind == "withholding" {
                        TaxKind::Withholding
                    } else {
                        TaxKind::Vat
                    },
                    rate: t.rate.normalize().to_string(),
                    base_minor: t.base,
                    amount_minor: t.amount,
                    treatment: t.treatment,
                })
                .collect(),
        })
        .collect();
    (rendered, breakdown, withholding)
}

fn currency(code: &str) -> Currency {
    Currency {
        code: code.to_owned(),
        minor_digits: domain::currency::CurrencyCode::parse(code)
            .map_or(2, |c| c.minor_units() as u8),
    }
}

fn rates(stored: &str, issue: NaiveDate) -> Vec<ExchangeRateNote> {
    let rates: Vec<ExchangeRateEntry> = serde_json::from_str(stored).unwrap_or_default();
    rates
        .into_iter()
        .map(|r| ExchangeRateNote {
            frozen_on: r
                .date
                .as_deref()
                .and_then(|d| d.parse().ok())
                .unwrap_or(issue),
            from: r.from,
            to: r.to,
            rate: r.rate.normalize().to_string(),
        })
        .collect()
}

fn placeholders(stored: &str) -> BTreeMap<String, String> {
    let values: Vec<PlaceholderValue> = serde_json::from_str(stored).unwrap_or_default();
    values.into_iter().map(|v| (v.key, v.value)).collect()
}

fn accounts(stored: &str) -> Vec<BankAccount> {
    let v: Vec<Value> = serde_json::from_str(stored).unwrap_or_default();
    v.iter()
        .map(|a| BankAccount {
            name: a["name"].as_str().unwrap_or_default().to_owned(),
            bank_name: a["bank_name"].as_str().map(str::to_owned),
            iban: a["iban"].as_str().map(str::to_owned),
            bic: a["bic"].as_str().map(str::to_owned),
        })
        .collect()
}

/// The language of a document: the recipient's template language, else Spanish for Spanish issuers.
fn language(recipient: &Value, issuer: &Value) -> String {
    recipient["template"]["language"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| {
            if issuer["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("ES:"))
            {
                "es"
            } else {
                "en"
            }
            .into()
        })
}

/// Line units ([`render_weight`]) one core is given: on two cores one 500-line invoice
/// renders at a time, beside two one-page ones (one-page ones alone are bound by
/// [`RENDERS_PER_CORE`] before they run out of units). Measured on
/// SQLite with 8 clients asking for 500-line PDFs: the server peaked at 119-123 MiB and
/// served 20-21 a second, against 154 MiB and 33-37 a second with two at once (550 units a
/// core); one-page PDFs were served as fast either way (470-570 a second, runs alternated).
const RENDER_UNITS_PER_CORE: u32 = 350;

/// Renders at once, however short: [`RENDERS_PER_CORE`] per core.
const RENDERS_PER_CORE: usize = 2;

/// How much rendering may run at once: [`RENDER_UNITS_PER_CORE`] per core, and at most
/// [`RENDERS_PER_CORE`] renders per core. Renders are bound by the CPU, so beyond what the
/// cores can run more at once only adds memory, and a render's memory grows with its lines
/// (about 35 MiB of the server's RSS for 500): without this bound, clients asking for long
/// invoices at once could exhaust the server's memory. Each render also holds a few MiB
/// whatever its length (its layouts, the PDF being written), so renders are counted too:
/// with 8 clients asking for one-page PDFs on PostgreSQL, thirteen at once (all that the
/// line units allow on two cores) peaked the server at 119-136 MiB and answered 337-471 a
/// second at p99 46-63 ms; four at once, 103-120 MiB and 402-491 a second at p99 36-39 ms.
struct RenderBudget {
    /// Line units free ([`render_weight`]).
    units: tokio::sync::Semaphore,
    /// Line units in all.
    total: u32,
    /// Renders that may start.
    renders: tokio::sync::Semaphore,
}

static RENDER_BUDGET: std::sync::LazyLock<RenderBudget> = std::sync::LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let total = RENDER_UNITS_PER_CORE.saturating_mul(u32::try_from(cores).unwrap_or(1));
    RenderBudget {
        units: tokio::sync::Semaphore::new(total as usize),
        total,
        renders: tokio::sync::Semaphore::new(RENDERS_PER_CORE.saturating_mul(cores)),
    }
});

/// A render's share of the budget: its lines plus a fixed cost for the page furniture.
/// An invoice longer than the whole budget waits until it can run alone.
fn render_weight(lines: usize, budget: u32) -> u32 {
    u32::try_from(lines)
        .unwrap_or(u32::MAX)
        .saturating_add(50)
        .min(budget)
}

/// The 400 of a document whose company snippet cannot be rendered for it.
fn snippet_refused(e: &render::RenderError) -> ApiError {
    ApiError::bad_request(format!(
        "The company's Typst snippet cannot be rendered for this document: {e}. Fix it with \
         PATCH /v1/company, or in the recipient's template (PATCH /v1/entities/{{id}}) when it \
         is theirs."
    ))
}

/// Renders (unless the client already has it) and answers the PDF. A document with company
/// snippets renders in a child process with a memory limit ([`crate::isolation`]); others
/// in this process.
async fn respond(
    state: &AppState,
    doc: InvoiceDocument,
    headers: &HeaderMap,
    filename: &str,
) -> ApiResult<Response> {
    let data = serde_json::to_vec(&doc).map_err(|e| ApiError::Internal(e.into()))?;
    let etag = format!("\"{}\"", store::hash_bytes(&data));
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == etag || v == "*")
    {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response());
    }
    let budget = &*RENDER_BUDGET;
    let units = budget
        .units
        .acquire_many(render_weight(doc.lines.len(), budget.total))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let turn = budget
        .renders
        .acquire()
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let permit = (units, turn);
    let snippets = doc.has_snippets();
    let runner = state.config.snippet_runner.as_deref().filter(|_| snippets);
    let job = render::isolated::Job::Render(Box::new(doc));
    let pdf = crate::isolation::run(runner, job, permit)
        .await?
        .map_err(|e| match e {
            render::RenderError::Snippet { .. }
            | render::RenderError::SnippetTooLarge { .. }
            | render::RenderError::Exhausted { .. } => snippet_refused(&e),
            // A document renders in well under a second: past the deadline with a snippet,
            // the snippet is why, and trying again would not help.
            render::RenderError::Timeout(_) if snippets => snippet_refused(&e),
            render::RenderError::Timeout(_) | render::RenderError::Busy(_) => {
                ApiError::Unavailable(format!(
                    "The PDF could not be rendered now ({e}); try again shortly."
                ))
            }
            other => ApiError::Internal(anyhow::anyhow!("render: {other}")),
        })?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/pdf".to_owned()),
            (header::ETAG, etag),
            (
                header::CONTENT_DISPOSITION,
                format!("inline; filename=\"{filename}.pdf\""),
            ),
        ],
        pdf,
    )
        .into_response())
}

/// The invoice as a PDF (drafts carry a DRAFT mark).
#[utoipa::path(get, path = "/v1/invoices/{id}/pdf", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 304, description = "Not modified (If-None-Match matched the ETag)"),
        crate::openapi::ReadErrors))]
pub async fn invoice_pdf(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let r = super::invoices::load(&mut db, &caller.company_id, &id).await?;
    let issued = r.status == "issued";
    let issuer = match (&r.issuer_snapshot_json, issued) {
        (Some(s), true) => serde_json::from_str(s).unwrap_or(Value::Null),
        _ => company_json(&super::invoices::company(&mut db, &caller.company_id).await?),
    };
    let recipient: Value = match (&r.recipient_snapshot_json, issued) {
        (Some(s), true) => serde_json::from_str(s).unwrap_or(Value::Null),
        _ => {
            let e = super::entities::load(&mut db, &caller.company_id, &r.recipient_id).await?;
            serde_json::to_value(super::entities::Entity::from(e)).unwrap_or(Value::Null)
        }
    };
    let lang = language(&recipient, &issuer);
    let issue_date = date(r.issued_at.unwrap_or(r.created_at));
    let (doc_lines, tax_breakdown, withholding) = lines(&r.lines_json, &lang);
    let corrective = match &r.corrected_invoice_id {
        Some(original) => {
            let o = super::invoices::load(&mut db, &caller.company_id, original).await?;
            let reason = match r.correction_reason.as_deref() {
                Some("R2") => CorrectionReason::R2,
                Some("R3") => CorrectionReason::R3,
                Some("R4") => CorrectionReason::R4,
                Some("R5") => CorrectionReason::R5,
                _ => CorrectionReason::R1,
            };
            Some(CorrectiveInfo {
                corrected_reference: o.reference.unwrap_or_default(),
                corrected_issue_date: date(o.issued_at.unwrap_or(o.created_at)),
                reason,
                reason_text: r.correction_reason.clone().unwrap_or_default(),
            })
        }
        None => None,
    };
    let qr = if issued {
        store::verifactu::for_invoice(&mut db, &caller.company_id, &id)
            .await?
            .into_iter()
            .find_map(|rec| rec.qr_url)
            .and_then(|url| verifactu::qr::qr_svg(&url, 120).ok())
            .map(|svg| QrCode {
                svg,
                caption: "VERI*FACTU".into(),
            })
    } else {
        None
    };
    let template = &recipient["template"];
    let doc = InvoiceDocument {
        kind: if r.series == "corrective" {
            DocumentKind::CorrectiveInvoice
        } else {
            DocumentKind::Invoice
        },
        status: if issued {
            DocumentStatus::Issued
        } else {
            DocumentStatus::Draft
        },
        language: lang,
        reference: r.reference.clone(),
        issue_date,
        due_date: r.due_date.map(date),
        issuer: party_from_json(&issuer, ""),
        recipient: party_from_json(
            &recipient,
            recipient["country"].as_str().unwrap_or_default(),
        ),
        lines: doc_lines,
        tax_breakdown,
        withholding,
        totals: Totals {
            net_minor: r.net_total,
            tax_minor: r.tax_total,
            withholding_minor: r.withholding_total,
            total_minor: r.total,
        },
        currency: currency(&r.currency_code),
        exchange_rates: rates(&r.exchange_rates_json, issue_date),
        bank_accounts: accounts(&r.bank_accounts_json),
        corrective,
        placeholders: placeholders(&r.custom_placeholder_values_json),
        footer_typst: template["footer_typst"]
            .as_str()
            .or(issuer["footer_invoice_typst"].as_str())
            .map(str::to_owned),
        post_typst: template["post_typst"]
            .as_str()
            .or(issuer["post_invoice_typst"].as_str())
            .map(str::to_owned),
        qr,
        notes: None,
    };
    let name = r
        .reference
        .clone()
        .unwrap_or_else(|| format!("draft-{}", r.id));
    // Back to the pool before waiting for a render: a PDF must not hold a connection
    // other requests need while it queues for the render budget.
    drop(db);
    respond(&state, doc, &headers, &name).await
}

/// The proforma as a PDF.
#[utoipa::path(get, path = "/v1/proformas/{id}/pdf", tag = "proformas",
    params(("id" = String, Path, description = "Proforma id")),
    responses((status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 304, description = "Not modified (If-None-Match matched the ETag)"),
        crate::openapi::ReadErrors))]
pub async fn proforma_pdf(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let p = store::proformas::get(&mut db, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("proforma"))?;
    let company = super::invoices::company(&mut db, &caller.company_id).await?;
    let issuer = company_json(&company);
    let e = super::entities::load(&mut db, &caller.company_id, &p.recipient_id).await?;
    let recipient = serde_json::to_value(super::entities::Entity::from(e)).unwrap_or(Value::Null);
    let lang = language(&recipient, &issuer);
    let issue_date = date(p.created_at);
    let (doc_lines, tax_breakdown, withholding) = lines(&p.lines_json, &lang);
    let doc = InvoiceDocument {
        kind: DocumentKind::Proforma,
        status: DocumentStatus::Issued,
        language: lang,
        reference: Some(p.reference.clone()),
        issue_date,
        due_date: None,
        issuer: party_from_json(&issuer, ""),
        recipient: party_from_json(
            &recipient,
            recipient["country"].as_str().unwrap_or_default(),
        ),
        lines: doc_lines,
        tax_breakdown,
        withholding,
        totals: Totals {
            net_minor: p.net_total,
            tax_minor: p.tax_total,
            withholding_minor: p.withholding_total,
            total_minor: p.total,
        },
        currency: currency(&p.currency_code),
        exchange_rates: rates(&p.exchange_rates_json, issue_date),
        bank_accounts: Vec::new(),
        corrective: None,
        placeholders: placeholders(&p.custom_placeholder_values_json),
        footer_typst: issuer["footer_invoice_typst"].as_str().map(str::to_owned),
        post_typst: issuer["post_invoice_typst"].as_str().map(str::to_owned),
        qr: None,
        notes: None,
    };
    drop(db);
    respond(&state, doc, &headers, &p.reference).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_invoices_take_more_of_the_render_budget_but_never_more_than_all_of_it() {
        let budget = 2 * RENDER_UNITS_PER_CORE;
        assert_eq!(render_weight(1, budget), 51);
        assert_eq!(render_weight(500, budget), 550);
        // On two cores one 500-line invoice renders at a time, beside two one-page ones.
        assert!(2 * render_weight(500, budget) > budget);
        assert!(render_weight(500, budget) + 2 * render_weight(1, budget) <= budget);
        // On four, two.
        assert!(2 * render_weight(500, 2 * budget) <= 2 * budget);
        // One too long for the budget runs alone rather than never.
        assert_eq!(render_weight(5_000, budget), budget);
        assert_eq!(render_weight(usize::MAX, budget), budget);
    }
}
