//! What callers see of an invoice: the API view (an issued invoice's from its document, a
//! draft's from its columns) and the document the PDF renders.

use chrono::{DateTime, NaiveDate, Utc};
use document::{Invoice as Doc, Party, TaxKind};
use serde::Serialize;
use serde_json::Value;
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
    let bank_accounts: Vec<document::BankAccount> =
        parse(&what("bank accounts"), &r.bank_accounts_json)?;
    Ok(Invoice {
        lines: lines
            .into_iter()
            .map(|l| InvoiceLine::from_domain(l, lang))
            .collect(),
        custom_placeholder_values: placeholders,
        exchange_rates: rates,
        bank_accounts: bank_accounts
            .into_iter()
            .map(BankAccountView::from)
            .collect(),
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
    issued_with(r, doc, lang, now)
}

/// The API view of an issued invoice whose document is at hand: `doc` must be `r`'s (what
/// [`super::of_row`] decodes from it), as a just-issued invoice's is.
pub fn issued_with(r: InvoiceRow, mut doc: Doc, lang: &str, now: i64) -> AppResult<Invoice> {
    let placeholders = std::mem::take(&mut doc.presentation.placeholders)
        .into_iter()
        .map(|p| PlaceholderValue {
            key: p.key,
            value: p.value,
        })
        .collect();
    let rates = std::mem::take(&mut doc.exchange_rates)
        .into_iter()
        .map(|x| ExchangeRateEntry {
            date: x.date.map(|d| d.to_string()),
            from: x.from,
            to: x.to,
            rate: x.rate,
            source: x.source,
        })
        .collect();
    let bank_accounts = std::mem::take(&mut doc.payment.accounts)
        .into_iter()
        .map(BankAccountView::from)
        .collect();
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
        issuer: Some(issuer_view(doc.seller, &mut doc.presentation)),
        recipient: Some(recipient_view(doc.buyer)?),
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

// The issuer, recipient and bank accounts of the view are typed, not `json!` trees: a list
// page builds fifty of each, and a tree is a map insert per field and a second walk to
// write it. Their fields are in alphabetical order, the order the trees wrote them in.

/// A postal address as the invoice view shows it.
#[derive(Debug, Clone, Serialize)]
pub struct AddressView {
    city: Option<String>,
    country: String,
    lines: Vec<String>,
    state: Option<String>,
    zipcode: Option<String>,
}

impl From<document::Address> for AddressView {
    fn from(a: document::Address) -> Self {
        Self {
            city: a.city,
            country: a.country,
            lines: a.lines,
            state: a.state,
            zipcode: a.zipcode,
        }
    }
}

/// An electronic address (BT-34 / BT-49) as the invoice view shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ElectronicAddressView {
    id: String,
    scheme: String,
}

fn electronic(a: Option<document::ElectronicAddress>) -> Option<ElectronicAddressView> {
    a.map(|a| ElectronicAddressView {
        id: a.id,
        scheme: a.scheme,
    })
}

/// The seller as the invoice view shows it (the shape of the issuer snapshot).
#[derive(Debug, Clone, Serialize)]
pub struct IssuerView {
    address: AddressView,
    contact_name: Option<String>,
    electronic_address: Option<ElectronicAddressView>,
    email: Option<String>,
    fiscal_id: Option<String>,
    footer_invoice_typst: Option<String>,
    id: String,
    name: String,
    phone: Option<String>,
    post_invoice_typst: Option<String>,
    #[serde(rename = "type")]
    legal_form: String,
    vies_vat_id: Option<String>,
}

/// The buyer as the invoice view shows it (the shape of the entity at issue).
#[derive(Debug, Clone, Serialize)]
pub struct RecipientView {
    address: AddressView,
    country: String,
    #[serde(rename = "createdAt")]
    created_at: DateTime<Utc>,
    currency_code: String,
    electronic_address: Option<ElectronicAddressView>,
    email: Option<String>,
    fiscal_id: Option<String>,
    id: String,
    is_business: bool,
    name: String,
    template: Option<Value>,
    #[serde(rename = "type")]
    legal_form: String,
    #[serde(rename = "updatedAt")]
    updated_at: Option<DateTime<Utc>>,
    verifactu: Option<Value>,
    vies_vat_id: Option<String>,
}

/// A bank account an invoice asks to be paid into, as the invoice view shows it.
#[derive(Debug, Clone, Serialize)]
pub struct BankAccountView {
    bank_name: Option<String>,
    bic: Option<String>,
    currency_code: Option<String>,
    iban: Option<String>,
    id: Option<String>,
    name: String,
}

impl From<document::BankAccount> for BankAccountView {
    fn from(a: document::BankAccount) -> Self {
        Self {
            bank_name: a.bank_name,
            bic: a.bic,
            currency_code: a.currency_code,
            iban: a.iban,
            id: a.id,
            name: a.name,
        }
    }
}

/// The seller as the invoice view shows it, with the document's Typst snippets.
fn issuer_view(s: Party, presentation: &mut document::Presentation) -> IssuerView {
    IssuerView {
        address: s.address.into(),
        contact_name: s.contact.name,
        electronic_address: electronic(s.electronic_address),
        email: s.contact.email,
        fiscal_id: s.tax_id,
        footer_invoice_typst: presentation.footer_typst.take(),
        id: s.id,
        name: s.name,
        phone: s.contact.phone,
        post_invoice_typst: presentation.post_typst.take(),
        legal_form: s.legal_form,
        vies_vat_id: s.vat_id,
    }
}

/// The buyer as the invoice view shows it.
fn recipient_view(b: Party) -> AppResult<RecipientView> {
    // Issuing always records the buyer's entity settings; a document without them is corrupt.
    let settings = b
        .settings
        .ok_or_else(|| corrupt("invoice recipient", "an issued buyer without its settings"))?;
    Ok(RecipientView {
        address: b.address.into(),
        country: b.country,
        created_at: ts(settings.created_at)?,
        currency_code: settings.currency_code,
        electronic_address: electronic(b.electronic_address),
        email: b.contact.email,
        fiscal_id: b.tax_id,
        id: b.id,
        is_business: b.is_business,
        name: b.name,
        template: settings.template,
        legal_form: b.legal_form,
        updated_at: ts_opt(settings.updated_at)?,
        verifactu: settings.verifactu,
        vies_vat_id: b.vat_id,
    })
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
