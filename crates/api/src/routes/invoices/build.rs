//! Turning a request into a priced document: recipient, currency, lines, taxes,
//! placeholders and rates, all checked before anything is written.

use domain::{country::CountryCode, currency::CurrencyCode, entity_type::EntityType, tax};

use super::model::{ExchangeRateEntry, InvoiceLineRequest, SupplyType};
use crate::{
    routes::{
        company::CustomPlaceholder,
        entities::{EntityTemplate, PlaceholderValue},
    },
    workflows::{AppError, AppResult},
};

/// What a document is created from.
#[derive(Debug, Clone)]
pub struct DocumentInput {
    pub recipient_id: String,
    pub lines: Vec<InvoiceLineRequest>,
    pub currency_code: Option<String>,
    pub custom_placeholder_values: Vec<PlaceholderValue>,
    pub exchange_rates: Vec<ExchangeRateEntry>,
    pub supply_type: Option<SupplyType>,
}

/// A checked, priced document ready to store.
#[derive(Debug, Clone)]
pub struct Built {
    pub recipient: store::entities::EntityRow,
    pub currency_code: String,
    pub supply_type: SupplyType,
    pub lines: Vec<domain::invoice::Line>,
    pub totals: domain::invoice::Totals,
    pub treatment: Option<String>,
    pub placeholders: Vec<PlaceholderValue>,
    pub rates: Vec<ExchangeRateEntry>,
}

/// The issuer as the tax engine sees it.
pub fn issuer(company: &store::companies::CompanyRow) -> AppResult<tax::Issuer> {
    let ty = company
        .company_type
        .as_deref()
        .and_then(|t| EntityType::parse(t).ok());
    let country = match &ty {
        Some(t) => t.country(),
        None => company
            .address_json
            .as_deref()
            .map(|a| crate::documents::parse::<crate::views::Address>("company address", a))
            .transpose()?
            .and_then(|a| CountryCode::parse(&a.country).ok())
            .ok_or_else(|| {
                AppError::invalid(
                    "The company has no country: set its `type` (e.g. `ES:SL`) with PATCH /v1/company.",
                )
            })?,
    };
    Ok(tax::Issuer {
        party: tax::Party {
            country,
            is_business: true,
            has_vies_vat_id: company.vies_vat_id.is_some(),
        },
        is_spanish_autonomo: ty.is_some_and(|t| t.is_spanish_autonomo()),
    })
}

/// The recipient as the tax engine sees it.
pub fn recipient_party(e: &store::entities::EntityRow) -> AppResult<tax::Party> {
    let ty = EntityType::parse(&e.entity_type).map_err(|err| AppError::Internal(err.into()))?;
    Ok(tax::Party {
        country: ty.country(),
        is_business: tax::is_business(e.fiscal_id.is_some(), e.vies_vat_id.is_some(), &ty),
        has_vies_vat_id: e.vies_vat_id.is_some(),
    })
}

/// Loads the recipient of the caller's company; a foreign or unknown id is a 400 naming the field.
pub async fn recipient(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> AppResult<store::entities::EntityRow> {
    store::entities::get(conn, company_id, id)
        .await?
        .ok_or_else(|| no_such_recipient(id))
}

/// The refusal of a `recipient_id` that is not one of the company's entities.
pub fn no_such_recipient(id: &str) -> AppError {
    AppError::invalid(format!(
        "`recipient_id` {id} is not an entity of this company (GET /v1/entities lists them)."
    ))
}

/// Checks and prices a document.
pub async fn build(
    conn: &mut sqlx::AnyConnection,
    company: &store::companies::CompanyRow,
    input: DocumentInput,
) -> AppResult<Built> {
    let recipient = recipient(conn, &company.id, &input.recipient_id).await?;
    build_for(company, recipient, input)
}

/// [`build`] with the recipient already read (the entity `input.recipient_id` of the
/// company).
pub fn build_for(
    company: &store::companies::CompanyRow,
    recipient: store::entities::EntityRow,
    input: DocumentInput,
) -> AppResult<Built> {
    let currency_code = match input.currency_code.filter(|c| !c.trim().is_empty()) {
        Some(c) => CurrencyCode::parse(&c)
            .map_err(|e| AppError::invalid(format!("`currency_code`: {e}.")))?
            .code()
            .to_owned(),
        None => recipient.currency_code.clone(),
    };
    let supply_type = input.supply_type.unwrap_or_default();
    let ctx = domain::invoice::TaxContext {
        issuer: issuer(company)?,
        recipient: recipient_party(&recipient)?,
        supply: supply_type.domain(),
    };
    let inputs: Vec<_> = input.lines.iter().map(InvoiceLineRequest::domain).collect();
    let (lines, totals) = domain::invoice::compute(&inputs, Some(&ctx))
        .map_err(|e| AppError::invalid(format!("{e}.")))?;
    let treatment = lines
        .iter()
        .flat_map(|l| &l.tax_lines)
        .find(|t| t.kind == "vat")
        .map(|t| t.treatment.clone());
    let template: Option<EntityTemplate> = recipient
        .template_json
        .as_deref()
        .map(|t| crate::documents::parse("entity template", t))
        .transpose()?;
    let placeholders = placeholders(company, template.as_ref(), input.custom_placeholder_values)?;
    let rates = exchange_rates(input.exchange_rates)?;
    Ok(Built {
        recipient,
        currency_code,
        supply_type,
        lines,
        totals,
        treatment,
        placeholders,
        rates,
    })
}

/// Resolves placeholder values: given > the recipient's template > the company default.
/// Unknown keys and missing required values are 400s naming the key.
pub fn placeholders(
    company: &store::companies::CompanyRow,
    template: Option<&EntityTemplate>,
    given: Vec<PlaceholderValue>,
) -> AppResult<Vec<PlaceholderValue>> {
    let defined: Vec<CustomPlaceholder> =
        crate::documents::parse("company placeholders", &company.custom_placeholders_json)?;
    for (i, v) in given.iter().enumerate() {
        if !defined.iter().any(|d| d.key == v.key) {
            return Err(AppError::invalid(format!(
                "`custom_placeholder_values[{i}].key`: `{}` is not a placeholder of the company (defined: {}).",
                v.key,
                if defined.is_empty() {
                    "none".to_owned()
                } else {
                    defined
                        .iter()
                        .map(|d| d.key.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                }
            )));
        }
        if given[..i].iter().any(|p| p.key == v.key) {
            return Err(AppError::invalid(format!(
                "`custom_placeholder_values`: `{}` is given more than once.",
                v.key
            )));
        }
        if v.value.chars().count() > 1000 {
            return Err(AppError::invalid(format!(
                "`custom_placeholder_values[{i}].value` must be at most 1000 characters."
            )));
        }
    }
    let mut out = Vec::new();
    for d in &defined {
        let value = given
            .iter()
            .find(|v| v.key == d.key)
            .map(|v| v.value.clone())
            .or_else(|| {
                template.and_then(|t| {
                    t.placeholder_values
                        .iter()
                        .find(|v| v.key == d.key)
                        .map(|v| v.value.clone())
                })
            })
            .or_else(|| d.default.clone())
            .filter(|v| !v.trim().is_empty());
        match value {
            Some(value) => out.push(PlaceholderValue {
                key: d.key.clone(),
                value,
            }),
            None if d.required => {
                return Err(AppError::invalid(format!(
                    "`custom_placeholder_values`: `{}` ({}) is required; give it a value.",
                    d.key, d.label
                )));
            }
            None => {}
        }
    }
    Ok(out)
}

/// Checks supplied rates: ISO codes, positive, one per pair.
pub fn exchange_rates(rates: Vec<ExchangeRateEntry>) -> AppResult<Vec<ExchangeRateEntry>> {
    if rates.len() > 20 {
        return Err(AppError::invalid(
            "`exchange_rates` takes at most 20 entries.",
        ));
    }
    let mut out: Vec<ExchangeRateEntry> = Vec::new();
    for (i, r) in rates.into_iter().enumerate() {
        let code = |field: &str, c: &str| {
            CurrencyCode::parse(c)
                .map(|c| c.code().to_owned())
                .map_err(|e| AppError::invalid(format!("`exchange_rates[{i}].{field}`: {e}.")))
        };
        let (from, to) = (code("from", &r.from)?, code("to", &r.to)?);
        if r.rate <= rust_decimal::Decimal::ZERO || r.rate.scale() > 10 {
            return Err(AppError::invalid(format!(
                "`exchange_rates[{i}].rate` must be a positive decimal with at most 10 decimals."
            )));
        }
        if out.iter().any(|o| o.from == from && o.to == to) {
            return Err(AppError::invalid(format!(
                "`exchange_rates` gives {from}->{to} more than once."
            )));
        }
        out.push(ExchangeRateEntry {
            from,
            to,
            rate: r.rate.normalize(),
            date: r.date,
            source: Some("manual".into()),
        });
    }
    Ok(out)
}
