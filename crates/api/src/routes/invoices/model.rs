//! Request and response shapes shared by invoices, corrective invoices and proformas.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::routes::entities::PlaceholderValue;

/// Goods or services (decides the VAT treatment of cross-border supplies).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SupplyType {
    #[default]
    Services,
    Goods,
}

impl SupplyType {
    /// The stored code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Services => "services",
            Self::Goods => "goods",
        }
    }

    /// From the stored code.
    pub fn parse(s: &str) -> Self {
        if s == "goods" {
            Self::Goods
        } else {
            Self::Services
        }
    }

    /// The tax engine's supply type.
    pub fn domain(self) -> domain::tax::SupplyType {
        match self {
            Self::Services => domain::tax::SupplyType::Services,
            Self::Goods => domain::tax::SupplyType::Goods,
        }
    }
}

/// One line as sent (the MCP line shape); only `concept` is required.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvoiceLineRequest {
    pub concept: String,
    /// Decimal quantity (number or string), default 1.
    #[serde(default, deserialize_with = "decimal_opt")]
    #[schema(value_type = Option<f64>)]
    pub quantity: Option<Decimal>,
    #[serde(default)]
    pub quantity_unit: Option<String>,
    /// Unit price in minor units (cents).
    #[serde(default)]
    pub unit_price: Option<i64>,
    #[serde(default)]
    pub unit_unit: Option<String>,
    /// An explicit tax line; when any line is one, no taxes are computed.
    #[serde(default)]
    pub is_tax: bool,
    /// Amount of an explicit tax line, minor units.
    #[serde(default)]
    pub tax_amount: Option<i64>,
    /// Line amount in minor units; default `round_half_even(quantity × unit_price)`.
    #[serde(default)]
    pub subtotal: Option<i64>,
}

impl InvoiceLineRequest {
    /// The domain's input line.
    pub fn domain(&self) -> domain::invoice::LineInput {
        domain::invoice::LineInput {
            concept: self.concept.clone(),
            quantity: self.quantity.unwrap_or(Decimal::ONE),
            quantity_unit: self.quantity_unit.clone(),
            unit_price: self.unit_price.unwrap_or(0),
            unit_unit: self.unit_unit.clone(),
            is_tax: self.is_tax,
            tax_amount: self.tax_amount,
            subtotal: self.subtotal,
        }
    }
}

/// A tax applied to a line.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TaxLineView {
    /// `vat` or `withholding`.
    pub kind: String,
    /// Percentage, e.g. `"21"`, `"25.5"`, `"-15"`.
    pub rate: String,
    pub base: i64,
    pub amount: i64,
    /// `domestic`, `reverse_charge`, `intra_eu_exempt`, `intra_eu_b2c`, `export_exempt`,
    /// `not_subject`, `outside_eu_b2c` or `no_vat`.
    pub treatment: String,
    /// The legal mention printed on the document, if the treatment has one.
    pub legal_mention: Option<String>,
}

/// A stored line.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct InvoiceLine {
    pub concept: String,
    #[serde(serialize_with = "decimal_number")]
    #[schema(value_type = f64)]
    pub quantity: Decimal,
    pub quantity_unit: Option<String>,
    pub unit_price: i64,
    pub unit_unit: Option<String>,
    pub is_tax: bool,
    pub tax_amount: Option<i64>,
    pub subtotal: i64,
    pub tax_lines: Vec<TaxLineView>,
}

impl InvoiceLine {
    /// The view of a stored line, legal mentions in `lang`.
    pub fn from_domain(l: domain::invoice::Line, lang: &str) -> Self {
        Self {
            tax_lines: l
                .tax_lines
                .into_iter()
                .map(|t| TaxLineView {
                    legal_mention: domain::tax::Treatment::from_code(&t.treatment, t.rate)
                        .and_then(|tr| tr.legal_mention(lang))
                        .map(str::to_owned),
                    kind: t.kind,
                    rate: t.rate.to_string(),
                    base: t.base,
                    amount: t.amount,
                    treatment: t.treatment,
                })
                .collect(),
            concept: l.concept,
            quantity: l.quantity,
            quantity_unit: l.quantity_unit,
            unit_price: l.unit_price,
            unit_unit: l.unit_unit,
            is_tax: l.is_tax,
            tax_amount: l.tax_amount,
            subtotal: l.subtotal,
        }
    }
}

/// A manually supplied or frozen exchange rate: 1 `from` = `rate` `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRateEntry {
    pub from: String,
    pub to: String,
    /// Decimal rate (number or string), e.g. `0.9123`.
    #[serde(deserialize_with = "decimal", serialize_with = "decimal_string")]
    #[schema(value_type = String)]
    pub rate: Decimal,
    /// Day the rate applies to (YYYY-MM-DD); set when frozen at issue.
    #[serde(default)]
    pub date: Option<String>,
    /// `manual` (given by the caller) or `ecb` (fetched at issue).
    #[serde(default)]
    pub source: Option<String>,
}

/// The legal reason of a corrective invoice (Spanish issuers).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvoiceVerifactu {
    /// `R1` to `R5`.
    #[schema(value_type = crate::openapi::CorrectionReason)]
    pub reason: String,
}

/// An invoice (ordinary or corrective), draft or issued.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Invoice {
    pub id: String,
    /// `draft` or `issued`.
    pub status: String,
    /// `invoice` or `corrective`.
    pub series: String,
    pub recipient_id: String,
    /// How it came to exist: `api`, `mcp` (an approved AI request), `proforma`, `correction`,
    /// `recurring`.
    pub origin: String,
    pub supply_type: SupplyType,
    pub currency_code: String,
    /// Tax treatment of the invoice, e.g. `domestic`, `reverse_charge`.
    pub treatment: Option<String>,
    pub lines: Vec<InvoiceLine>,
    #[serde(rename = "lineCount")]
    pub line_count: i64,
    pub custom_placeholder_values: Vec<PlaceholderValue>,
    pub exchange_rates: Vec<ExchangeRateEntry>,
    /// Bank accounts snapshotted as payment instructions.
    #[schema(value_type = Vec<Object>)]
    pub bank_accounts: Vec<crate::documents::views::BankAccountView>,
    pub invoice_number: Option<i64>,
    pub invoice_year: Option<i64>,
    pub issued_at: Option<DateTime<Utc>>,
    pub order_number: Option<i64>,
    pub order_year: Option<i64>,
    pub reference: Option<String>,
    pub net_total: i64,
    pub tax_total: i64,
    pub withholding_total: i64,
    /// Sum of all lines, taxes included, minor units.
    pub total: i64,
    pub corrected_invoice_id: Option<String>,
    /// Corrective metadata; present only for Spanish issuers.
    pub verifactu: Option<InvoiceVerifactu>,
    pub proforma_id: Option<String>,
    /// The issuer as the invoice states it (frozen at issue; `null` for drafts).
    #[schema(value_type = Option<Object>)]
    pub issuer: Option<crate::documents::views::IssuerView>,
    /// The recipient as the invoice states it (frozen at issue; `null` for drafts).
    #[schema(value_type = Option<Object>)]
    pub recipient: Option<crate::documents::views::RecipientView>,
    #[serde(rename = "createdAt")]
    pub created_at: DateTime<Utc>,
    #[serde(rename = "updatedAt")]
    pub updated_at: Option<DateTime<Utc>>,
    /// When payment is due, if set.
    pub due_date: Option<DateTime<Utc>>,
    /// Sum of recorded payments, minor units.
    pub paid_minor: i64,
    /// For issued invoices: `unpaid`, `partially_paid`, `paid` or `overdue`.
    pub payment_status: Option<String>,
    /// The recurring invoice that made this invoice's draft (`origin` `recurring`).
    pub recurring_invoice_id: Option<String>,
    /// BT-10: the buyer's reference (a Leitweg-ID for German public buyers).
    pub buyer_reference: Option<String>,
    /// BT-13: the buyer's purchase order reference.
    pub order_reference: Option<String>,
    /// BT-72: when the goods or services were supplied (`YYYY-MM-DD`).
    pub delivery_date: Option<chrono::NaiveDate>,
    /// BT-73: start of the period the invoice covers.
    pub period_start: Option<chrono::NaiveDate>,
    /// BT-74: end of the period the invoice covers.
    pub period_end: Option<chrono::NaiveDate>,
    /// BT-22: a note printed on the invoice.
    pub notes: Option<String>,
}

/// A due date given as an RFC 3339 instant or a plain date `YYYY-MM-DD` (00:00 UTC that day).
pub fn flexible_instant<'de, D: Deserializer<'de>>(
    de: D,
) -> Result<Option<Option<DateTime<Utc>>>, D::Error> {
    let v = Option::<String>::deserialize(de)?;
    let Some(text) = v else { return Ok(Some(None)) };
    parse_instant(&text).map(|t| Some(Some(t))).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "`{text}` is neither a date (YYYY-MM-DD) nor an RFC 3339 date-time"
        ))
    })
}

/// An RFC 3339 instant or a plain date (00:00 UTC).
pub fn parse_instant(text: &str) -> Option<DateTime<Utc>> {
    let text = text.trim();
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .ok()
        .or_else(|| {
            chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|d| d.and_utc())
        })
}

fn decimal_number<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    use rust_decimal::prelude::ToPrimitive;
    match (d.fract().is_zero(), d.to_i64(), d.to_f64()) {
        (true, Some(i), _) => s.serialize_i64(i),
        (_, _, Some(f)) => s.serialize_f64(f),
        _ => s.serialize_str(&d.to_string()),
    }
}

fn decimal_string<S: Serializer>(d: &Decimal, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&d.normalize().to_string())
}

/// A decimal given as a JSON number or string.
pub fn decimal<'de, D: Deserializer<'de>>(de: D) -> Result<Decimal, D::Error> {
    let v = serde_json::Value::deserialize(de)?;
    let text = match &v {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s.trim().to_owned(),
        _ => return Err(serde::de::Error::custom("expected a decimal number")),
    };
    Decimal::from_str(&text)
        .or_else(|_| Decimal::from_scientific(&text))
        .map_err(|_| serde::de::Error::custom(format!("`{text}` is not a decimal number")))
}

pub fn decimal_opt<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Decimal>, D::Error> {
    decimal(de).map(Some)
}
