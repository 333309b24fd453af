//! The typed invoice document (crate `document`) and the service's rows: the seller and
//! buyer from the company and the entity, the document of an issued row (decoded once,
//! an error when it does not decode), and the previews of drafts and proformas that the PDF
//! renders the same way.

pub mod legacy;
pub mod views;

use chrono::{DateTime, NaiveDate, Utc};
use document::{
    Address, BankAccount, BuyerSettings, Contact, Delivery, ElectronicAddress, ExchangeRate,
    Invoice, InvoiceKind, Party, Placeholder, PrecedingInvoice, Presentation, SupplyType,
    build::Issue, stored::Frame,
};
use domain::entity_type::EntityType;
use store::{companies::CompanyRow, entities::EntityRow, invoices::InvoiceRow};

use crate::{
    routes::{
        entities::{EntityTemplate, ThirdPartyAddress},
        invoices::model::ExchangeRateEntry,
    },
    workflows::{AppError, AppResult},
};

/// An internal error for stored data that does not read as what it must be.
pub(crate) fn corrupt(what: impl std::fmt::Display, e: impl std::fmt::Display) -> AppError {
    AppError::Internal(anyhow::anyhow!("stored {what} does not decode: {e}"))
}

/// Decodes a stored JSON column of type `T`; a value that does not decode is an error.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(what: &str, text: &str) -> AppResult<T> {
    serde_json::from_str(text).map_err(|e| corrupt(what, e))
}

/// The document of an issued invoice row.
pub fn of_row(row: &InvoiceRow) -> AppResult<Invoice> {
    let text = row.document_json.as_deref().ok_or_else(|| {
        AppError::Internal(anyhow::anyhow!(
            "issued invoice {} has no document (run `invoicing migrate`)",
            row.id
        ))
    })?;
    document::stored::decode(text, frame(row)?)
        .map_err(|e| corrupt(format!("invoice {}", row.id), e))
}

/// What an issued row keeps of its document outside the document's JSON (its id, number
/// and issue time).
pub(crate) fn frame(row: &InvoiceRow) -> AppResult<Frame> {
    // What issuing stored beside the document: an issued row without it is corrupt, never
    // an invoice numbered 0 of 1970.
    let issued = row
        .issued()
        .map_err(|e| corrupt(format!("invoice {}", row.id), e))?;
    Ok(Frame {
        id: row.id.clone(),
        number: issued.reference.to_owned(),
        yearly_number: issued.number,
        year: issued.year,
        issued_at: issued.issued_at,
    })
}

/// BG-3 of a corrective invoice: the corrected invoice as issued, and the reason (R1 when
/// none or an unknown one is stored). A corrected invoice that is still a draft is a
/// conflict; an issued one without its number or date is corrupt data.
pub fn preceding(
    corrected: &InvoiceRow,
    reason: Option<&str>,
) -> AppResult<document::PrecedingInvoice> {
    let issued = corrected.issued().map_err(|e| match e {
        store::invoices::NotIssued::Draft(_) => {
            AppError::Conflict("Only issued invoices can be corrected.".into())
        }
        e @ store::invoices::NotIssued::Corrupt { .. } => corrupt("corrected invoice", e),
    })?;
    Ok(document::PrecedingInvoice {
        id: corrected.id.clone(),
        number: issued.reference.to_owned(),
        issue_date: issued.issued_at.date_naive(),
        issued_at: issued.issued_at,
        reason: reason
            .and_then(document::CorrectionReason::parse)
            .unwrap_or(document::CorrectionReason::R1),
    })
}

/// The stored text of a document.
pub fn encode(doc: &Invoice) -> AppResult<String> {
    document::stored::encode(doc).map_err(|e| AppError::Internal(e.into()))
}

fn text(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

fn opt(s: &Option<String>) -> Option<String> {
    s.as_deref().and_then(text)
}

/// The company as seller (BG-4).
pub fn seller(c: &CompanyRow) -> AppResult<Party> {
    let address: Option<crate::views::Address> = c
        .address_json
        .as_deref()
        .map(|a| parse("company address", a))
        .transpose()?;
    let legal_form = c.company_type.clone().unwrap_or_default();
    let country = EntityType::parse(&legal_form)
        .map(|t| t.country().to_string())
        .ok()
        .or_else(|| address.as_ref().map(|a| a.country.clone()))
        .unwrap_or_default();
    let electronic_address = c
        .electronic_address_json
        .as_deref()
        .map(|a| parse::<ElectronicAddress>("company electronic address", a))
        .transpose()?;
    Ok(Party {
        id: c.id.to_string(),
        name: c.name.clone(),
        trading_name: opt(&c.friendly_name).filter(|n| *n != c.name),
        vat_id: opt(&c.vies_vat_id).or_else(|| vat_like(&c.fiscal_id)),
        tax_id: text(&c.fiscal_id),
        address: address.map_or_else(
            || Address {
                country: country.clone(),
                ..Address::default()
            },
            |a| Address {
                lines: a.lines,
                city: text(&a.city),
                zipcode: text(&a.zipcode),
                state: opt(&a.state),
                country: a.country,
            },
        ),
        contact: Contact {
            name: opt(&c.contact_name),
            phone: text(&c.phone),
            email: text(&c.email),
        },
        electronic_address,
        is_business: true,
        legal_form,
        country,
        settings: None,
    })
}

/// `id` when it is an EU VAT id (a company registered with its VAT id as its tax id).
fn vat_like(id: &str) -> Option<String> {
    domain::fiscal::validate_vat_id(id)
        .ok()
        .map(|v| v.as_str().to_owned())
}

/// The e-invoice formats the service produces, by name.
pub const EINVOICE_FORMATS: [&str; 7] = [
    "ubl",
    "cii",
    "xrechnung-ubl",
    "xrechnung-cii",
    "peppol",
    "facturx",
    "facturae",
];

/// The e-invoice settings of an entity (`einvoice`), as stored.
#[derive(
    Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(deny_unknown_fields)]
pub struct EntityEinvoice {
    /// The format the recipient receives by default (`ubl`, `cii`, `xrechnung-ubl`,
    /// `xrechnung-cii`, `peppol`, `facturx`, `facturae`); `null`: `ubl`.
    #[serde(default)]
    pub format: Option<String>,
    /// BT-49: the recipient's electronic address, e.g. a Peppol id or a Leitweg-ID (`0204`).
    #[serde(default)]
    pub endpoint: Option<ElectronicAddressView>,
    /// BT-10 copied into new drafts for this recipient.
    #[serde(default)]
    pub buyer_reference: Option<String>,
}

/// An electronic address: a scheme of the EAS code list and an id.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ElectronicAddressView {
    /// EAS scheme code, e.g. `9930` (German VAT), `0204` (Leitweg-ID), `0088` (GLN), `EM` (e-mail).
    pub scheme: String,
    /// The identifier within the scheme.
    pub id: String,
}

/// The entity as buyer (BG-7), with what the service kept of it.
pub fn buyer(e: &EntityRow) -> AppResult<Party> {
    let address: ThirdPartyAddress = parse("entity address", &e.address_json)?;
    let template: Option<serde_json::Value> = e
        .template_json
        .as_deref()
        .map(|t| parse("entity template", t))
        .transpose()?;
    let verifactu: Option<serde_json::Value> = e
        .verifactu_json
        .as_deref()
        .map(|v| parse("entity VERI*FACTU settings", v))
        .transpose()?;
    let einvoice: Option<EntityEinvoice> = e
        .einvoice_json
        .as_deref()
        .map(|v| parse("entity e-invoice settings", v))
        .transpose()?;
    let ty = EntityType::parse(&e.entity_type).map_err(|err| corrupt("entity type", err))?;
    Ok(Party {
        id: e.id.clone(),
        name: e.name.clone(),
        trading_name: None,
        legal_form: e.entity_type.clone(),
        country: e.country.clone(),
        is_business: domain::tax::is_business(e.fiscal_id.is_some(), e.vies_vat_id.is_some(), &ty),
        vat_id: opt(&e.vies_vat_id),
        tax_id: opt(&e.fiscal_id),
        address: Address {
            lines: address
                .lines
                .into_iter()
                .filter(|l| !l.trim().is_empty())
                .collect(),
            city: opt(&address.city),
            zipcode: opt(&address.zipcode),
            state: opt(&address.state),
            country: address.country,
        },
        contact: Contact {
            name: None,
            phone: None,
            email: opt(&e.email),
        },
        electronic_address: einvoice
            .and_then(|i| i.endpoint)
            .map(|a| ElectronicAddress {
                scheme: a.scheme,
                id: a.id,
            }),
        settings: Some(BuyerSettings {
            currency_code: e.currency_code.clone(),
            language: e.language.clone(),
            aeat_id_type: verifactu
                .as_ref()
                .and_then(|v| v["id_type"].as_str())
                .map(str::to_owned),
            template,
            verifactu,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }),
    })
}

/// The language of an invoice's labels: the recipient template's, else the recipient's,
/// else Spanish for Spanish issuers, else English.
pub fn language(seller: &Party, buyer: &Party) -> String {
    let settings = buyer.settings.as_ref();
    settings
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t["language"].as_str())
        .map(str::to_owned)
        .or_else(|| settings.and_then(|s| s.language.clone()))
        .unwrap_or_else(|| if seller.is_spanish() { "es" } else { "en" }.into())
}

/// How the PDF shows an invoice: the recipient template's snippets over the company's.
pub fn presentation(
    company: &CompanyRow,
    seller: &Party,
    buyer: &Party,
    placeholders: Vec<Placeholder>,
) -> AppResult<Presentation> {
    let template: Option<EntityTemplate> = buyer
        .settings
        .as_ref()
        .and_then(|s| s.template.clone())
        .map(|t| serde_json::from_value(t).map_err(|e| corrupt("entity template", e)))
        .transpose()?;
    let t = template.unwrap_or_default();
    Ok(Presentation {
        language: language(seller, buyer),
        footer_typst: t
            .footer_typst
            .or_else(|| company.footer_invoice_typst.clone()),
        post_typst: t.post_typst.or_else(|| company.post_invoice_typst.clone()),
        placeholders,
        display_currencies: t.display_currencies,
    })
}

/// Rates as the document keeps them.
pub fn rates(entries: &[ExchangeRateEntry]) -> Vec<ExchangeRate> {
    entries
        .iter()
        .map(|r| ExchangeRate {
            from: r.from.clone(),
            to: r.to.clone(),
            rate: r.rate,
            date: r.date.as_deref().and_then(|d| d.parse::<NaiveDate>().ok()),
            source: r.source.clone(),
        })
        .collect()
}

/// The draft's bank accounts as the document keeps them.
pub fn accounts(row: &InvoiceRow) -> AppResult<Vec<BankAccount>> {
    parse("invoice bank accounts", &row.bank_accounts_json)
}

/// The kind of a stored series.
pub fn kind(series: store::invoices::Series) -> InvoiceKind {
    match series {
        store::invoices::Series::Corrective => InvoiceKind::Corrective,
        store::invoices::Series::Invoice => InvoiceKind::Ordinary,
    }
}

/// The supply type of a stored code.
pub fn supply(code: &str) -> SupplyType {
    if code == "goods" {
        SupplyType::Goods
    } else {
        SupplyType::Services
    }
}

/// What a draft row says, for [`document::build`]: everything but the number, which the
/// caller fills in (or leaves empty for a preview).
#[allow(clippy::too_many_arguments)]
pub fn issue_of(
    row: &InvoiceRow,
    company: &CompanyRow,
    seller: &Party,
    buyer: &Party,
    placeholders: Vec<Placeholder>,
    rates: Vec<ExchangeRate>,
    payment_terms_days: Option<i64>,
    preceding: Option<PrecedingInvoice>,
    issued_at: DateTime<Utc>,
) -> AppResult<Issue> {
    let details = store::invoices::DraftDetails::decode(&row.details_json)
        .map_err(|e| corrupt(format!("invoice {} details", row.id), e))?;
    let lines: Vec<domain::invoice::Line> =
        parse(&format!("invoice {} lines", row.id), &row.lines_json)?;
    let currency = domain::currency::CurrencyCode::parse(&row.currency_code)
        .map_err(|e| corrupt("invoice currency", e))?;
    let accounting_currency = company
        .currency_code
        .as_deref()
        .and_then(|c| domain::currency::CurrencyCode::parse(c).ok())
        .map(|c| (c.code().to_owned(), c.minor_units() as u8));
    Ok(Issue {
        id: row.id.clone(),
        kind: kind(row.series),
        number: String::new(),
        yearly_number: 0,
        year: 0,
        issued_at,
        currency: currency.code().to_owned(),
        minor_digits: currency.minor_units() as u8,
        accounting_currency,
        lines,
        supply_type: supply(&row.supply_type),
        treatment: row.treatment.clone(),
        due_date: row
            .due_date
            .map(|d| store::from_micros(d).map(|t| t.date_naive()))
            .transpose()?,
        payment_terms_days,
        buyer_reference: details.buyer_reference,
        order_reference: details.order_reference,
        notes: details.notes,
        delivery: Delivery {
            date: details.delivery_date,
            period_start: details.period_start,
            period_end: details.period_end,
        },
        prepaid: 0,
        bank_accounts: accounts(row)?,
        exchange_rates: rates,
        preceding,
        presentation: presentation(company, seller, buyer, placeholders)?,
    })
}
