//! Invoice lines and totals: from what a caller sends to what is stored.
//!
//! Rounding is defined once: a line's subtotal is `quantity × unit_price`
//! rounded half-even to the currency's minor unit (unless the caller states the
//! subtotal), each tax amount is rounded half-even on its own line, and the
//! invoice total is the plain sum of all lines, tax lines included. Nothing is
//! ever rounded twice.
//!
//! Two modes: when no line is marked `is_tax`, VAT and withholding lines are
//! computed by [`crate::tax::compute_taxes`] and attached to the line they
//! tax; when the caller sends explicit tax lines (`is_tax`), they are taken as
//! given (a user can state a tax-inclusive total that lands exactly).

// Field names mirror the API line shape documented in the module docs and the OpenAPI schema.
#![allow(missing_docs)]

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::{
    money::{self, MoneyError},
    tax::{self, Issuer, Party, SupplyType, TaxKind},
};

/// Most lines one document may have.
pub const MAX_LINES: usize = 500;
/// Longest line concept, in characters.
pub const MAX_CONCEPT: usize = 2000;
/// Largest absolute unit price or subtotal, in minor units (10^13: ten trillion cents).
pub const MAX_AMOUNT: i64 = 10_000_000_000_000;

/// One line as a caller sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct LineInput {
    pub concept: String,
    pub quantity: Decimal,
    pub quantity_unit: Option<String>,
    pub unit_price: i64,
    pub unit_unit: Option<String>,
    pub is_tax: bool,
    pub tax_amount: Option<i64>,
    pub subtotal: Option<i64>,
}

/// A tax applied to one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineTax {
    /// `vat` or `withholding`.
    pub kind: String,
    /// Percentage as a decimal string, e.g. `21`, `25.5`, `-15`.
    pub rate: Decimal,
    pub base: i64,
    pub amount: i64,
    /// Treatment code, e.g. `domestic`, `reverse_charge`.
    pub treatment: String,
}

/// One line as stored and shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    pub concept: String,
    pub quantity: Decimal,
    pub quantity_unit: Option<String>,
    pub unit_price: i64,
    pub unit_unit: Option<String>,
    pub is_tax: bool,
    /// For a tax line its amount; for a taxed line the sum of its taxes.
    pub tax_amount: Option<i64>,
    pub subtotal: i64,
    pub tax_lines: Vec<LineTax>,
}

/// Sums of a document.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub net: i64,
    pub tax: i64,
    pub withholding: i64,
    pub total: i64,
}

/// Who is taxed how: the context for computed taxes.
#[derive(Debug, Clone, Copy)]
pub struct TaxContext {
    pub issuer: Issuer,
    pub recipient: Party,
    pub supply: SupplyType,
}

/// Why lines were rejected; `Display` names the line (0-based index).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    #[error("`lines` must have at least one line")]
    Empty,
    #[error("`lines` has {0} lines; at most {MAX_LINES} are allowed")]
    TooMany(usize),
    #[error("`lines[{0}].concept` must not be empty")]
    EmptyConcept(usize),
    #[error("`lines[{0}].concept` is longer than {MAX_CONCEPT} characters")]
    LongConcept(usize),
    #[error(
        "`lines[{0}].quantity` must be between -1000000000 and 1000000000 with at most 6 decimals"
    )]
    Quantity(usize),
    #[error("`lines[{0}].{1}` must be at most {MAX_AMOUNT} minor units in absolute value")]
    Amount(usize, &'static str),
    #[error("`lines[{0}]` is a tax line (`is_tax`) and needs `tax_amount`")]
    TaxLineWithoutAmount(usize),
    #[error("the amounts overflow; use smaller amounts")]
    Overflow,
    #[error("no VAT rate is known for the issuer's country {0}")]
    NoRate(String),
}

impl From<MoneyError> for LineError {
    fn from(_: MoneyError) -> Self {
        Self::Overflow
    }
}

fn check_amount(i: usize, field: &'static str, v: i64) -> Result<(), LineError> {
    if v.checked_abs().is_some_and(|a| a <= MAX_AMOUNT) {
        Ok(())
    } else {
        Err(LineError::Amount(i, field))
    }
}

/// Validates lines and computes subtotals, taxes (with `ctx`, unless explicit
/// tax lines are present) and totals.
pub fn compute(
    inputs: &[LineInput],
    ctx: Option<&TaxContext>,
) -> Result<(Vec<Line>, Totals), LineError> {
    if inputs.is_empty() {
        return Err(LineError::Empty);
    }
    if inputs.len() > MAX_LINES {
        return Err(LineError::TooMany(inputs.len()));
    }
    let mut lines = Vec::with_capacity(inputs.len());
    for (i, l) in inputs.iter().enumerate() {
        let concept = l.concept.trim();
        if concept.is_empty() {
            return Err(LineError::EmptyConcept(i));
        }
        if concept.chars().count() > MAX_CONCEPT {
            return Err(LineError::LongConcept(i));
        }
        if l.quantity.abs() > Decimal::from(1_000_000_000) || l.quantity.scale() > 6 {
            return Err(LineError::Quantity(i));
        }
        check_amount(i, "unit_price", l.unit_price)?;
        let (subtotal, tax_amount) = if l.is_tax {
            let amount = l
                .tax_amount
                .or(l.subtotal)
                .ok_or(LineError::TaxLineWithoutAmount(i))?;
            check_amount(i, "tax_amount", amount)?;
            (amount, Some(amount))
        } else {
            let subtotal = match l.subtotal {
                Some(s) => s,
                None => money::line_subtotal(l.quantity, l.unit_price)?,
            };
            check_amount(i, "subtotal", subtotal)?;
            (subtotal, None)
        };
        lines.push(Line {
            concept: concept.to_owned(),
            quantity: l.quantity.normalize(),
            quantity_unit: clean(&l.quantity_unit),
            unit_price: l.unit_price,
            unit_unit: clean(&l.unit_unit),
            is_tax: l.is_tax,
            tax_amount,
            subtotal,
            tax_lines: Vec::new(),
        });
    }
    let explicit = lines.iter().any(|l| l.is_tax);
    if !explicit && let Some(ctx) = ctx {
        let taxable: Vec<tax::TaxableLine> = lines
            .iter()
            .map(|l| tax::TaxableLine {
                subtotal_minor: l.subtotal,
                is_tax: false,
            })
            .collect();
        let computed = tax::compute_taxes(&ctx.issuer, &ctx.recipient, ctx.supply, &taxable)
            .map_err(|e| match e {
                tax::TaxError::Money(_) => LineError::Overflow,
                tax::TaxError::NoStandardRate(c) => LineError::NoRate(c.to_string()),
            })?;
        for t in computed.lines {
            if let Some(line) = lines.get_mut(t.line_index) {
                line.tax_lines.push(LineTax {
                    kind: match t.kind {
                        TaxKind::Vat => "vat".into(),
                        TaxKind::Withholding => "withholding".into(),
                    },
                    rate: t.rate.normalize(),
                    base: t.base_minor,
                    amount: t.amount_minor,
                    treatment: t.treatment.code().into(),
                });
            }
        }
        for line in &mut lines {
            if !line.tax_lines.is_empty() {
                line.tax_amount =
                    Some(money::checked_sum(line.tax_lines.iter().map(|t| t.amount))?);
            }
        }
    }
    let totals = totals(&lines)?;
    Ok((lines, totals))
}

/// Sums stored lines: net of the non-tax lines, taxes, withholding, total of everything.
pub fn totals(lines: &[Line]) -> Result<Totals, LineError> {
    let net = money::checked_sum(lines.iter().filter(|l| !l.is_tax).map(|l| l.subtotal))?;
    let explicit = money::checked_sum(lines.iter().filter(|l| l.is_tax).map(|l| l.subtotal))?;
    let taxes = |kind: &str| {
        money::checked_sum(
            lines
                .iter()
                .flat_map(|l| &l.tax_lines)
                .filter(|t| t.kind == kind)
                .map(|t| t.amount),
        )
    };
    let tax = money::checked_sum([explicit, taxes("vat")?])?;
    let withholding = taxes("withholding")?;
    let total = money::checked_sum([net, tax, withholding])?;
    Ok(Totals {
        net,
        tax,
        withholding,
        total,
    })
}

/// The lines of a full reversal: every amount negated, taxes included, so the
/// corrective invoice mirrors the original exactly.
pub fn reversed(lines: &[Line]) -> Vec<Line> {
    lines
        .iter()
        .map(|l| Line {
            unit_price: -l.unit_price,
            subtotal: -l.subtotal,
            tax_amount: l.tax_amount.map(|a| -a),
            tax_lines: l
                .tax_lines
                .iter()
                .map(|t| LineTax {
                    base: -t.base,
                    amount: -t.amount,
                    ..t.clone()
                })
                .collect(),
            ..l.clone()
        })
        .collect()
}

fn clean(s: &Option<String>) -> Option<String> {
    s.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.chars().take(40).collect())
}

#[cfg(test)]
mod tests;
