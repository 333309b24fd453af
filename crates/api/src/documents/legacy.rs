//! Invoices issued before documents existed: their document is built once from the
//! snapshot columns they were issued with (issuer, recipient, lines, placeholders, rates,
//! bank accounts), stored, and the columns emptied.

use document::{Address, BuyerSettings, Contact, Party, Placeholder, build::Issue};
use serde::Deserialize;
use store::invoices::InvoiceRow;

use super::{corrupt, kind, parse, rates, supply};
use crate::{
    routes::{entities::PlaceholderValue, invoices::model::ExchangeRateEntry},
    workflows::{AppError, AppResult},
};

/// How many rows one pass reads and converts in one transaction.
const BATCH: i64 = 200;

/// What a run of [`backfill`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Backfilled {
    /// Documents built and stored.
    pub done: u64,
    /// Invoices whose snapshot columns did not decode (each logged with its id); they stay
    /// as they are, and reading them answers 500 until their data is repaired.
    pub failed: u64,
    /// What went wrong with the first few of them (`invoice id: error`).
    pub errors: Vec<String>,
}

/// Builds and stores the document of every issued invoice that has none. Safe to run
/// concurrently from several processes and again after a crash: a row gets a document once.
pub async fn backfill(db: &store::Db) -> anyhow::Result<Backfilled> {
    let mut out = Backfilled::default();
    let mut after: Option<String> = None;
    loop {
        let rows = {
            let mut conn = db.pool().acquire().await?;
            store::invoices::without_document(&mut conn, after.as_deref(), BATCH).await?
        };
        let Some(last) = rows.last() else { break };
        after = Some(last.id.clone());
        let mut built = Vec::with_capacity(rows.len());
        {
            let mut conn = db.pool().acquire().await?;
            for row in &rows {
                match document_of(&mut conn, row).await {
                    Ok(doc) => built.push((row.id.clone(), super::encode(&doc)?)),
                    Err(e) => {
                        out.failed += 1;
                        if out.errors.len() < 10 {
                            out.errors.push(format!("{}: {e}", row.id));
                        }
                        tracing::error!(invoice_id = %row.id, error = %e,
                            "an issued invoice's snapshot columns do not decode: it keeps them \
                             and has no document");
                    }
                }
            }
        }
        let mut tx = db.begin_write().await?;
        for (id, text) in &built {
            if store::invoices::set_document(tx.conn(), id, text).await? {
                out.done += 1;
            }
        }
        tx.commit().await?;
    }
    if out.done > 0 || out.failed > 0 {
        tracing::info!(
            done = out.done,
            failed = out.failed,
            "documents built for invoices issued before documents existed"
        );
    }
    Ok(out)
}

/// The issuer snapshot of an invoice issued before documents existed.
#[derive(Deserialize)]
struct IssuerSnapshot {
    id: String,
    name: String,
    fiscal_id: Option<String>,
    vies_vat_id: Option<String>,
    #[serde(rename = "type")]
    company_type: Option<String>,
    email: Option<String>,
    phone: Option<String>,
    address: Option<crate::views::Address>,
    footer_invoice_typst: Option<String>,
    post_invoice_typst: Option<String>,
}

/// The recipient snapshot: the entity as the API showed it at issue.
#[derive(Deserialize)]
struct RecipientSnapshot {
    id: String,
    name: String,
    #[serde(rename = "type")]
    entity_type: String,
    country: String,
    fiscal_id: Option<String>,
    vies_vat_id: Option<String>,
    currency_code: String,
    email: Option<String>,
    address: crate::routes::entities::ThirdPartyAddress,
    template: Option<serde_json::Value>,
    verifactu: Option<serde_json::Value>,
    is_business: bool,
    #[serde(rename = "createdAt")]
    created_at: chrono::DateTime<chrono::Utc>,
    #[serde(rename = "updatedAt")]
    updated_at: Option<chrono::DateTime<chrono::Utc>>,
}

fn some(s: Option<String>) -> Option<String> {
    s.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

async fn document_of(
    conn: &mut sqlx::AnyConnection,
    row: &InvoiceRow,
) -> AppResult<document::Invoice> {
    let what = |column: &str| format!("invoice {} {column}", row.id);
    let issuer: IssuerSnapshot = parse(
        &what("issuer snapshot"),
        row.issuer_snapshot_json
            .as_deref()
            .ok_or_else(|| corrupt(what("issuer snapshot"), "missing"))?,
    )?;
    let recipient: RecipientSnapshot = parse(
        &what("recipient snapshot"),
        row.recipient_snapshot_json
            .as_deref()
            .ok_or_else(|| corrupt(what("recipient snapshot"), "missing"))?,
    )?;
    let placeholders: Vec<PlaceholderValue> = parse(
        &what("placeholder values"),
        &row.custom_placeholder_values_json,
    )?;
    let entries: Vec<ExchangeRateEntry> = parse(&what("exchange rates"), &row.exchange_rates_json)?;
    let lines: Vec<domain::invoice::Line> = parse(&what("lines"), &row.lines_json)?;

    let legal_form = issuer.company_type.clone().unwrap_or_default();
    let country = domain::entity_type::EntityType::parse(&legal_form)
        .map(|t| t.country().to_string())
        .ok()
        .or_else(|| issuer.address.as_ref().map(|a| a.country.clone()))
        .unwrap_or_default();
    let fiscal_id = some(issuer.fiscal_id);
    let seller = Party {
        id: issuer.id,
        name: issuer.name,
        trading_name: None,
        vat_id: some(issuer.vies_vat_id).or_else(|| {
            fiscal_id
                .as_deref()
                .and_then(|f| domain::fiscal::validate_vat_id(f).ok())
                .map(|v| v.as_str().to_owned())
        }),
        tax_id: fiscal_id,
        address: issuer.address.map_or_else(
            || Address {
                country: country.clone(),
                ..Address::default()
            },
            |a| Address {
                lines: a.lines,
                city: some(Some(a.city)),
                zipcode: some(Some(a.zipcode)),
                state: some(a.state),
                country: a.country,
            },
        ),
        contact: Contact {
            name: None,
            phone: some(issuer.phone),
            email: some(issuer.email),
        },
        electronic_address: None,
        is_business: true,
        legal_form,
        country,
        settings: None,
    };
    let template = recipient.template.filter(|t| !t.is_null());
    let buyer = Party {
        id: recipient.id,
        name: recipient.name,
        trading_name: None,
        legal_form: recipient.entity_type,
        country: recipient.country,
        is_business: recipient.is_business,
        vat_id: some(recipient.vies_vat_id),
        tax_id: some(recipient.fiscal_id),
        address: Address {
            lines: recipient.address.lines,
            city: some(recipient.address.city),
            zipcode: some(recipient.address.zipcode),
            state: some(recipient.address.state),
            country: recipient.address.country,
        },
        contact: Contact {
            name: None,
            phone: None,
            email: some(recipient.email),
        },
        electronic_address: None,
        settings: Some(BuyerSettings {
            currency_code: recipient.currency_code,
            language: None,
            aeat_id_type: recipient
                .verifactu
                .as_ref()
                .and_then(|v| v["id_type"].as_str())
                .map(str::to_owned),
            template: template.clone(),
            verifactu: recipient.verifactu.filter(|v| !v.is_null()),
            created_at: recipient.created_at.timestamp_micros(),
            updated_at: recipient.updated_at.map(|t| t.timestamp_micros()),
        }),
    };
    let preceding = match &row.corrected_invoice_id {
        Some(id) => {
            let id = store::InvoiceId::parse(id)
                .map_err(|e| corrupt(what("corrected invoice"), e.to_string()))?;
            let corrected = store::invoices::get(conn, &row.company_id, &id)
                .await?
                .ok_or_else(|| corrupt(what("corrected invoice"), "missing"))?;
            Some(super::preceding(
                &corrected,
                row.correction_reason.as_deref(),
            )?)
        }
        None => None,
    };
    let str_of = |v: &Option<serde_json::Value>, key: &str| {
        v.as_ref().and_then(|t| t[key].as_str()).map(str::to_owned)
    };
    let language = str_of(&template, "language")
        .unwrap_or_else(|| if seller.is_spanish() { "es" } else { "en" }.into());
    let currency = domain::currency::CurrencyCode::parse(&row.currency_code)
        .map_err(|e| corrupt(what("currency"), e))?;
    let issued = row.issued().map_err(|e| corrupt(what("issue data"), e))?;
    // The accounting currency (BT-6) is the company's, as at issue: legacy rows did not keep
    // it, and without it a foreign-currency invoice's e-invoice (and so its Factur-X PDF)
    // would lose its VAT total in that currency (BT-111).
    let accounting_currency = store::companies::get(conn, &row.company_id)
        .await?
        .and_then(|c| c.currency_code)
        .and_then(|c| domain::currency::CurrencyCode::parse(&c).ok())
        .map(|c| (c.code().to_owned(), c.minor_units() as u8));
    let issue = Issue {
        id: row.id.clone(),
        kind: kind(row.series),
        number: issued.reference.to_owned(),
        yearly_number: issued.number,
        year: issued.year,
        issued_at: issued.issued_at,
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
        payment_terms_days: None,
        buyer_reference: None,
        order_reference: None,
        notes: None,
        delivery: document::Delivery::default(),
        prepaid: 0,
        bank_accounts: super::accounts(row)?,
        exchange_rates: rates(&entries),
        preceding,
        presentation: document::Presentation {
            language,
            footer_typst: str_of(&template, "footer_typst").or(issuer.footer_invoice_typst),
            post_typst: str_of(&template, "post_typst").or(issuer.post_invoice_typst),
            placeholders: placeholders
                .into_iter()
                .map(|p| Placeholder {
                    key: p.key,
                    value: p.value,
                })
                .collect(),
            display_currencies: template
                .as_ref()
                .and_then(|t| t["display_currencies"].as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|c| c.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        },
    };
    document::build::assemble(issue, seller, buyer)
        .map_err(|e| AppError::Internal(anyhow::anyhow!("invoice {}: {e}", row.id)))
}
