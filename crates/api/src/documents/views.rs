//! What callers see of an invoice: the API view (an issued invoice's from its document, a
//! draft's from its columns) and the document the PDF renders.

use chrono::NaiveDate;
use document::{Invoice as Doc, Party, TaxKind};
use serde_json::{Value, json};
use store::invoices::{DraftDetails, InvoiceRow};

use super::{corrupt, parse};
use crate::{
    routes::{
        entities::PlaceholderValue,
        invoices::{
            model::{ExchangeRateEntry, Invoice, InvoiceLine, InvoiceVerifactu, SupplyType},
            payments,
        },
    },
    views::{ts, ts_opt},
    workflows::AppResult,
};

/// The API view of a stored invoice, legal mentions in `lang`, its payment status as of
/// `now` (microseconds; the service's clock).
pub fn invoice(r: InvoiceRow, lang: &str, now: i64) -> AppResult<Invoice> {
    if r.status == store::invoices::InvoiceStatus::Issued {
        issued(r, lang, now)
    } else {
        draft(r, lang, now)
    }
}

fn draft(r: InvoiceRow, lang: &str, now: i64) -> AppResult<Invoice> {
    let what = |column: &str| format!("invoice {} {column}", r.id);
    let lines: Vec<domain::invoice::Line> = parse(&what("lines"), &r.lines_json)?;
    let details = DraftDetails::decode(&r.details_json).map_err(|e| corrupt(what("details"), e))?;
    let placeholders: Vec<PlaceholderValue> = parse(
        &what("placeholder values"),
        &r.custom_placeholder_values_json,
    )?;
    let rates: Vec<ExchangeRateEntry> = parse(&what("exchange rates"), &r.exchange_rates_json)?;
    let bank_accounts: Vec<Value> = parse(&what("bank accounts"), &r.bank_accounts_json)?;
    Ok(Invoice {
        lines: lines
            .into_iter()
            .map(|l| InvoiceLine::from_domain(l, lang))
            .collect(),
        custom_placeholder_values: placeholders,
        exchange_rates: rates,
        bank_accounts,
        issuer: None,
        recipient: None,
        verifactu: r
            .correction_reason
            .clone()
            .filter(|_| lang == "es" && r.series == store::invoices::Series::Corrective)
            .map(|reason| InvoiceVerifactu { reason }),
        buyer_reference: details.buyer_reference,
        order_reference: details.order_reference,
        delivery_date: details.delivery_date,
        period_start: details.period_start,
        period_end: details.period_end,
        notes: details.notes,
        ..common(r, now)?
    })
}

fn issued(r: InvoiceRow, lang: &str, now: i64) -> AppResult<Invoice> {
    let doc = super::of_row(&r)?;
    let placeholders = doc
        .presentation
        .placeholders
        .iter()
        .map(|p| PlaceholderValue {
            key: p.key.clone(),
            value: p.value.clone(),
        })
        .collect();
    let rates = doc
        .exchange_rates
        .iter()
        .map(|x| ExchangeRateEntry {
            from: x.from.clone(),
            to: x.to.clone(),
            rate: x.rate,
            date: x.date.map(|d| d.to_string()),
            source: x.source.clone(),
        })
        .collect();
    let bank_accounts = doc
        .payment
        .accounts
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| corrupt("bank account", e))?;
    let verifactu = doc
        .preceding
        .as_ref()
        .filter(|_| doc.seller.is_spanish())
        .map(|p| InvoiceVerifactu {
            reason: p.reason.code().to_owned(),
        });
    Ok(Invoice {
        lines: doc
            .lines
            .iter()
            .map(|l| InvoiceLine::from_domain(l.to_domain(), lang))
            .collect(),
        custom_placeholder_values: placeholders,
        exchange_rates: rates,
        bank_accounts,
        issuer: Some(issuer_json(&doc)),
        recipient: Some(recipient_json(&doc.buyer)?),
        verifactu,
        buyer_reference: doc.buyer_reference,
        order_reference: doc.order_reference,
        delivery_date: doc.delivery.date,
        period_start: doc.delivery.period_start,
        period_end: doc.delivery.period_end,
        notes: doc.notes,
        ..common(r, now)?
    })
}

/// The fields of the view that come from the row's columns alike for drafts and issued
/// invoices (the rest is filled in by the caller).
fn common(r: InvoiceRow, now: i64) -> AppResult<Invoice> {
    let payment_status = payments::payment_status(&r, now).map(str::to_owned);
    Ok(Invoice {
        id: r.id,
        status: r.status.to_string(),
        series: r.series.to_string(),
        recipient_id: r.recipient_id,
        origin: r.origin.to_string(),
        supply_type: SupplyType::parse(&r.supply_type),
        currency_code: r.currency_code,
        treatment: r.treatment,
        lines: Vec::new(),
        line_count: r.line_count,
        custom_placeholder_values: Vec::new(),
        exchange_rates: Vec::new(),
        bank_accounts: Vec::new(),
        invoice_number: r.invoice_number,
        invoice_year: r.invoice_year,
        issued_at: ts_opt(r.issued_at)?,
        order_number: r.order_number,
        order_year: r.order_year,
        reference: r.reference,
        net_total: r.net_total,
        tax_total: r.tax_total,
        withholding_total: r.withholding_total,
        total: r.total,
        corrected_invoice_id: r.corrected_invoice_id,
        verifactu: None,
        proforma_id: r.proforma_id,
        issuer: None,
        recipient: None,
        created_at: ts(r.created_at)?,
        updated_at: ts_opt(r.updated_at)?,
        due_date: ts_opt(r.due_date)?,
        paid_minor: r.paid_minor,
        payment_status,
        recurring_invoice_id: r.recurring_invoice_id,
        buyer_reference: None,
        order_reference: None,
        delivery_date: None,
        period_start: None,
        period_end: None,
        notes: None,
    })
}

fn address_json(a: &document::Address) -> Value {
    json!({
        "lines": a.lines, "zipcode": a.zipcode, "city": a.city, "state": a.state,
        "country": a.country,
    })
}

/// The seller as the invoice view shows it (the shape of the issuer snapshot).
fn issuer_json(doc: &Doc) -> Value {
    let s = &doc.seller;
    json!({
        "id": s.id, "name": s.name, "fiscal_id": s.tax_id, "vies_vat_id": s.vat_id,
        "type": s.legal_form, "email": s.contact.email, "phone": s.contact.phone,
        "contact_name": s.contact.name, "address": address_json(&s.address),
        "electronic_address": s.electronic_address,
        "footer_invoice_typst": doc.presentation.footer_typst,
        "post_invoice_typst": doc.presentation.post_typst,
    })
}

/// The buyer as the invoice view shows it (the shape of the entity at issue).
fn recipient_json(b: &Party) -> AppResult<Value> {
    // Issuing always records the buyer's entity settings; a document without them is corrupt.
    let settings = b
        .settings
        .clone()
        .ok_or_else(|| corrupt("invoice recipient", "an issued buyer without its settings"))?;
    Ok(json!({
        "id": b.id, "name": b.name, "type": b.legal_form, "country": b.country,
        "fiscal_id": b.tax_id, "vies_vat_id": b.vat_id, "currency_code": settings.currency_code,
        "email": b.contact.email, "address": address_json(&b.address),
        "template": settings.template, "verifactu": settings.verifactu,
        "electronic_address": b.electronic_address, "is_business": b.is_business,
        "createdAt": ts(settings.created_at)?, "updatedAt": ts_opt(settings.updated_at)?,
    }))
}

/// The document the PDF renders.
pub fn render(
    doc: &Doc,
    kind: render::DocumentKind,
    status: render::DocumentStatus,
    qr: Option<render::QrCode>,
) -> render::InvoiceDocument {
    let lang = doc.presentation.language.clone();
    let party = |p: &Party| render::Party {
        name: p.name.clone(),
        fiscal_id: p.tax_id.clone(),
        vat_id: p.vat_id.clone(),
        address_lines: p.address.lines.clone(),
        zipcode: p.address.zipcode.clone().unwrap_or_default(),
        city: p.address.city.clone().unwrap_or_default(),
        state: p.address.state.clone(),
        country: domain::country::name(&p.address.country, &lang)
            .map_or_else(|| p.address.country.clone(), str::to_owned),
    };
    let breakdown = doc
        .vat_breakdown
        .iter()
        .map(|b| render::TaxBreakdownEntry {
            rate: b.rate.normalize().to_string(),
            treatment: b.treatment.clone(),
            base_minor: b.taxable_amount,
            amount_minor: b.tax_amount,
            legal_mention: b.exemption_reason.clone(),
        })
        .collect();
    render::InvoiceDocument {
        kind,
        status,
        language: lang.clone(),
        reference: Some(doc.number.clone()).filter(|n| !n.is_empty()),
        issue_date: doc.issue_date(),
        due_date: doc.due_date,
        issuer: party(&doc.seller),
        recipient: party(&doc.buyer),
        lines: doc
            .lines
            .iter()
            .map(|l| render::Line {
                concept: l.concept.clone(),
                quantity: l.quantity.normalize().to_string(),
                unit: l.quantity_unit.clone(),
                unit_price_minor: l.unit_price,
                subtotal_minor: l.net_amount,
                taxes: l
                    .taxes
                    .iter()
                    .map(|t| render::LineTax {
                        kind: match t.kind {
                            TaxKind::Vat => render::TaxKind::Vat,
                            TaxKind::Withholding => render::TaxKind::Withholding,
                        },
                        rate: t.rate.normalize().to_string(),
                        base_minor: t.base,
                        amount_minor: t.amount,
                        treatment: t.treatment.clone(),
                    })
                    .collect(),
            })
            .collect(),
        tax_breakdown: breakdown,
        withholding: doc
            .withholdings
            .iter()
            .map(|w| render::WithholdingEntry {
                rate: w.rate.normalize().to_string(),
                base_minor: w.base,
                amount_minor: w.amount,
            })
            .collect(),
        totals: render::Totals {
            net_minor: doc.totals.line_net,
            tax_minor: doc.totals.vat,
            withholding_minor: doc.totals.withholding,
            total_minor: doc.totals.total,
        },
        currency: render::Currency {
            code: doc.currency.code.clone(),
            minor_digits: doc.currency.minor_digits,
        },
        exchange_rates: doc
            .exchange_rates
            .iter()
            .map(|r| render::ExchangeRateNote {
                from: r.from.clone(),
                to: r.to.clone(),
                rate: r.rate.normalize().to_string(),
                frozen_on: r.date.unwrap_or_else(|| doc.issue_date()),
            })
            .collect(),
        bank_accounts: doc
            .payment
            .accounts
            .iter()
            .map(|a| render::BankAccount {
                name: a.name.clone(),
                bank_name: a.bank_name.clone(),
                iban: a.iban.clone(),
                bic: a.bic.clone(),
            })
            .collect(),
        corrective: doc.preceding.as_ref().map(|p| render::CorrectiveInfo {
            corrected_reference: p.number.clone(),
            corrected_issue_date: p.issue_date,
            reason: match p.reason {
                document::CorrectionReason::R1 => render::CorrectionReason::R1,
                document::CorrectionReason::R2 => render::CorrectionReason::R2,
                document::CorrectionReason::R3 => render::CorrectionReason::R3,
                document::CorrectionReason::R4 => render::CorrectionReason::R4,
                document::CorrectionReason::R5 => render::CorrectionReason::R5,
            },
            reason_text: p.reason.code().to_owned(),
        }),
        placeholders: doc
            .presentation
            .placeholders
            .iter()
            .map(|p| (p.key.clone(), p.value.clone()))
            .collect(),
        footer_typst: doc.presentation.footer_typst.clone(),
        post_typst: doc.presentation.post_typst.clone(),
        qr,
        notes: doc.notes.clone(),
        legal: render::LegalDetails {
            buyer_reference: doc.buyer_reference.clone(),
            order_reference: doc.order_reference.clone(),
            delivery_date: doc.delivery.date,
            period: match (doc.delivery.period_start, doc.delivery.period_end) {
                (Some(a), Some(b)) => Some((a, b)),
                _ => None,
            },
            payment_terms_days: doc.payment_terms.as_ref().map(|t| t.days),
        },
        // Attached by the PDF route to issued invoices (`routes::pdf`).
        facturx: None,
    }
}

/// A date for a view's `YYYY-MM-DD` field.
pub fn date(d: NaiveDate) -> String {
    d.to_string()
}
