use std::str::FromStr;

use super::*;
use crate::country::CountryCode;

fn line(concept: &str, qty: &str, price: i64) -> LineInput {
    LineInput {
        concept: concept.into(),
        quantity: Decimal::from_str(qty).unwrap(),
        quantity_unit: None,
        unit_price: price,
        unit_unit: None,
        is_tax: false,
        tax_amount: None,
        subtotal: None,
    }
}

fn spain_b2b() -> TaxContext {
    let es = CountryCode::parse("ES").unwrap();
    TaxContext {
        issuer: Issuer {
            party: Party {
                country: es,
                is_business: true,
                has_vies_vat_id: true,
            },
            is_spanish_autonomo: false,
        },
        recipient: Party {
            country: es,
            is_business: true,
            has_vies_vat_id: false,
        },
        supply: SupplyType::Services,
    }
}

#[test]
fn subtotal_rounds_half_even_and_total_sums_lines() {
    // 2.5 × 1 = 2.5 -> 2 ; 1.5 × 1 = 1.5 -> 2
    let (lines, totals) = compute(&[line("a", "2.5", 1), line("b", "1.5", 1)], None).unwrap();
    assert_eq!(lines[0].subtotal, 2);
    assert_eq!(lines[1].subtotal, 2);
    assert_eq!(
        totals,
        Totals {
            net: 4,
            tax: 0,
            withholding: 0,
            total: 4
        }
    );
}

#[test]
fn computed_vat_is_attached_per_line() {
    let (lines, totals) = compute(&[line("Consulting", "3", 10_000)], Some(&spain_b2b())).unwrap();
    assert_eq!(lines[0].subtotal, 30_000);
    assert_eq!(lines[0].tax_lines.len(), 1);
    assert_eq!(lines[0].tax_lines[0].amount, 6_300);
    assert_eq!(lines[0].tax_lines[0].treatment, "domestic");
    assert_eq!(lines[0].tax_amount, Some(6_300));
    assert_eq!(
        totals,
        Totals {
            net: 30_000,
            tax: 6_300,
            withholding: 0,
            total: 36_300
        }
    );
}

#[test]
fn autonomo_withholding_reduces_the_total() {
    let mut ctx = spain_b2b();
    ctx.issuer.is_spanish_autonomo = true;
    let (_, totals) = compute(&[line("Design", "1", 100_000)], Some(&ctx)).unwrap();
    assert_eq!(
        totals,
        Totals {
            net: 100_000,
            tax: 21_000,
            withholding: -15_000,
            total: 106_000
        }
    );
}

#[test]
fn explicit_tax_lines_are_taken_as_given() {
    let mut tax = line("VAT 21%", "1", 0);
    tax.is_tax = true;
    tax.tax_amount = Some(2_101);
    let (lines, totals) = compute(&[line("Item", "1", 10_000), tax], Some(&spain_b2b())).unwrap();
    assert!(
        lines[0].tax_lines.is_empty(),
        "no computed taxes next to explicit ones"
    );
    assert_eq!(totals.total, 12_101);
}

#[test]
fn reversal_negates_everything() {
    let (lines, totals) = compute(&[line("Consulting", "3", 10_000)], Some(&spain_b2b())).unwrap();
    let rev = reversed(&lines);
    let t = super::totals(&rev).unwrap();
    assert_eq!(t.total, -totals.total);
    assert_eq!(rev[0].tax_lines[0].amount, -6_300);
    assert_eq!(rev[0].quantity, lines[0].quantity);
}

#[test]
fn rejects_bad_lines_naming_them() {
    assert_eq!(compute(&[], None), Err(LineError::Empty));
    let err = compute(&[line("ok", "1", 1), line(" ", "1", 1)], None).unwrap_err();
    assert_eq!(err.to_string(), "`lines[1].concept` must not be empty");
    assert!(matches!(
        compute(&[line("a", "1.1234567", 1)], None),
        Err(LineError::Quantity(0))
    ));
    assert!(matches!(
        compute(&[line("a", "1", i64::MAX)], None),
        Err(LineError::Amount(0, "unit_price"))
    ));
    let mut tax = line("t", "1", 0);
    tax.is_tax = true;
    assert_eq!(
        compute(&[tax], None),
        Err(LineError::TaxLineWithoutAmount(0))
    );
    let many: Vec<_> = (0..=MAX_LINES).map(|_| line("x", "1", 1)).collect();
    assert!(matches!(compute(&many, None), Err(LineError::TooMany(_))));
}
