//! From the tax engine's treatments to EN 16931's VAT categories, exemption codes and
//! reasons, and the VAT breakdown (BG-23) of a set of lines.

use std::collections::BTreeMap;

use domain::tax::Treatment;
use rust_decimal::Decimal;

use crate::model::{Line, LineVat, TaxKind, VatBreakdown, VatCategory, Withholding};

/// Treatment code of VAT stated on explicit tax lines (`is_tax`).
pub const EXPLICIT: &str = "explicit";

/// The category of a treatment at a rate.
///
/// | treatment | category | VATEX |
/// |---|---|---|
/// | domestic, intra-EU B2C, outside-EU B2C services, rate > 0 | S | |
/// | the same at rate 0 | Z | |
/// | reverse charge (arts. 44, 196) | AE | VATEX-EU-AE |
/// | intra-EU exempt supply of goods (art. 138) | K | VATEX-EU-IC |
/// | export of goods (art. 146) | G | VATEX-EU-G |
/// | not subject: services outside the EU (art. 44) | O | VATEX-EU-O |
/// | issuer outside the EU, no VAT | O | VATEX-EU-O |
pub fn category(treatment: &str, rate: Decimal) -> VatCategory {
    match treatment {
        "reverse_charge" => VatCategory::AE,
        "intra_eu_exempt" => VatCategory::K,
        "export_exempt" => VatCategory::G,
        "not_subject" | "no_vat" => VatCategory::O,
        "exempt" => VatCategory::E,
        _ if rate.is_zero() => VatCategory::Z,
        _ => VatCategory::S,
    }
}

/// BT-121: the VATEX code of a category that charges no VAT.
pub fn exemption_code(category: VatCategory) -> Option<&'static str> {
    match category {
        VatCategory::AE => Some("VATEX-EU-AE"),
        VatCategory::K => Some("VATEX-EU-IC"),
        VatCategory::G => Some("VATEX-EU-G"),
        VatCategory::O => Some("VATEX-EU-O"),
        VatCategory::E | VatCategory::S | VatCategory::Z => None,
    }
}

/// BT-120: the legal mention of a treatment in `language`, when it has one.
pub fn exemption_reason(treatment: &str, rate: Decimal, language: &str) -> Option<String> {
    match treatment {
        // The issuer is outside the EU: no mention is legally required, but EN 16931 wants a
        // reason for category O.
        "no_vat" => Some(if language.starts_with("es") {
            "Operación no sujeta al IVA de la UE".to_owned()
        } else {
            "Not subject to EU VAT".to_owned()
        }),
        _ => Treatment::from_code(treatment, rate)
            .and_then(|t| t.legal_mention(language))
            .map(str::to_owned),
    }
}

/// Assigns each non-tax line its VAT (BG-30) and sums the breakdown (BG-23) and the
/// withholdings.
///
/// Lines taxed by the engine carry their VAT in [`Line::taxes`]. When the caller stated
/// explicit tax lines (`is_tax`), each one taxes the non-tax lines between it and the
/// previous tax line, at the rate `tax_amount / base` rounded to two decimals; non-tax
/// lines after the last tax line are untaxed (category Z, or O when nothing is taxed at all).
pub fn breakdown(lines: &mut [Line], language: &str) -> (Vec<VatBreakdown>, Vec<Withholding>) {
    if lines.iter().any(|l| l.is_tax) {
        assign_explicit(lines);
    } else {
        for line in lines.iter_mut() {
            let vat = line.taxes.iter().find(|t| t.kind == TaxKind::Vat);
            line.vat = Some(match vat {
                Some(t) => LineVat {
                    category: category(&t.treatment, t.rate),
                    rate: t.rate,
                },
                // Lines without computed VAT: the issuer is outside the EU.
                None => LineVat {
                    category: VatCategory::O,
                    rate: Decimal::ZERO,
                },
            });
        }
    }

    let mut entries: BTreeMap<(VatCategory, Decimal, String), (i64, i64)> = BTreeMap::new();
    let mut withheld: BTreeMap<Decimal, (i64, i64)> = BTreeMap::new();
    let explicit = lines.iter().any(|l| l.is_tax);
    for (i, line) in lines.iter().enumerate() {
        if line.is_tax {
            continue;
        }
        let Some(vat) = &line.vat else { continue };
        let treatment = if explicit {
            EXPLICIT.to_owned()
        } else {
            line.taxes
                .iter()
                .find(|t| t.kind == TaxKind::Vat)
                .map_or_else(|| "no_vat".to_owned(), |t| t.treatment.clone())
        };
        let tax = if explicit {
            explicit_tax_of(lines, i)
        } else {
            line.taxes
                .iter()
                .filter(|t| t.kind == TaxKind::Vat)
                .map(|t| t.amount)
                .sum()
        };
        let e = entries
            .entry((vat.category, vat.rate.normalize(), treatment))
            .or_default();
        e.0 += line.net_amount;
        e.1 += tax;
        for w in line.taxes.iter().filter(|t| t.kind == TaxKind::Withholding) {
            let e = withheld.entry(w.rate.normalize()).or_default();
            e.0 += w.base;
            e.1 += w.amount;
        }
    }
    let breakdown = entries
        .into_iter()
        .map(
            |((category, rate, treatment), (taxable, tax))| VatBreakdown {
                category,
                rate,
                taxable_amount: taxable,
                tax_amount: tax,
                exemption_reason: match category {
                    VatCategory::S | VatCategory::Z => None,
                    _ => exemption_reason(&treatment, rate, language),
                },
                exemption_code: exemption_code(category).map(str::to_owned),
                treatment,
            },
        )
        .collect();
    let withholdings = withheld
        .into_iter()
        .map(|(rate, (base, amount))| Withholding { rate, base, amount })
        .collect();
    (breakdown, withholdings)
}

/// The groups of explicit tax lines: the tax lines of a group and the indexes of the
/// non-tax lines they tax. Consecutive tax lines tax the same lines (VAT and a surcharge
/// stated one after the other); tax lines before any other line tax the lines that follow
/// them up to the next tax line.
fn explicit_groups(lines: &[Line]) -> Vec<(Vec<usize>, Vec<usize>)> {
    let mut groups: Vec<(Vec<usize>, Vec<usize>)> = Vec::new();
    let mut members = Vec::new();
    let mut leading = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if !line.is_tax {
            members.push(i);
        } else if !members.is_empty() {
            let mut taxes = std::mem::take(&mut leading);
            taxes.push(i);
            groups.push((taxes, std::mem::take(&mut members)));
        } else if let Some(last) = groups.last_mut() {
            last.0.push(i);
        } else {
            leading.push(i);
        }
    }
    if !leading.is_empty() && !members.is_empty() {
        groups.push((leading, members));
    }
    groups
}

/// The share of its group's stated tax that falls on line `i` (the whole group's tax on the
/// group's first line, so the breakdown's sum is exactly what was stated).
fn explicit_tax_of(lines: &[Line], i: usize) -> i64 {
    explicit_groups(lines)
        .into_iter()
        .find(|(_, taxed)| taxed.first() == Some(&i))
        .map_or(0, |(taxes, _)| {
            taxes.iter().map(|&t| lines[t].net_amount).sum()
        })
}

fn assign_explicit(lines: &mut [Line]) {
    let groups = explicit_groups(lines);
    let mut taxed = vec![false; lines.len()];
    for (taxes, members) in &groups {
        let base: i64 = members.iter().map(|&i| lines[i].net_amount).sum();
        let tax: i64 = taxes.iter().map(|&t| lines[t].net_amount).sum();
        let rate = if base == 0 {
            Decimal::ZERO
        } else {
            (Decimal::from(tax) * Decimal::ONE_HUNDRED / Decimal::from(base))
                .round_dp(2)
                .normalize()
        };
        let category = if rate.is_zero() {
            VatCategory::Z
        } else {
            VatCategory::S
        };
        for &i in members {
            taxed[i] = true;
            lines[i].vat = Some(LineVat { category, rate });
        }
    }
    for (i, line) in lines.iter_mut().enumerate() {
        if !line.is_tax && !taxed[i] {
            line.vat = Some(LineVat {
                category: VatCategory::Z,
                rate: Decimal::ZERO,
            });
        }
    }
}
