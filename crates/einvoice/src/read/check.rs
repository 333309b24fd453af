//! The sums of EN 16931 (BR-CO-10 to BR-CO-16), checked exactly in decimal.

use rust_decimal::Decimal;

use super::{Incoming, ReadError};

fn differs(rule: &str, what: &str, stated: Decimal, computed: Decimal) -> Result<(), ReadError> {
    if stated == computed {
        Ok(())
    } else {
        Err(ReadError::new(
            rule,
            format!("{what}: the file states {stated}, the figures it is made of give {computed}"),
        ))
    }
}

/// Checks that the document has lines and that its totals are the sums of its parts.
pub fn sums(doc: &Incoming) -> Result<(), ReadError> {
    if doc.lines.is_empty() {
        return Err(ReadError::new("BR-16", "The invoice has no lines (BG-25)"));
    }
    let t = &doc.totals;
    let lines: Decimal = doc.lines.iter().map(|l| l.net_amount).sum();
    differs(
        "BR-CO-10",
        "The sum of line net amounts (BT-106)",
        t.line_total,
        lines,
    )?;
    let allowances: Decimal = doc.allowances.iter().map(|a| a.amount).sum();
    differs(
        "BR-CO-11",
        "The sum of allowances on document level (BT-107)",
        t.allowances.unwrap_or_default(),
        allowances,
    )?;
    let charges: Decimal = doc.charges.iter().map(|c| c.amount).sum();
    differs(
        "BR-CO-12",
        "The sum of charges on document level (BT-108)",
        t.charges.unwrap_or_default(),
        charges,
    )?;
    differs(
        "BR-CO-13",
        "The invoice total without VAT (BT-109)",
        t.without_vat,
        t.line_total - t.allowances.unwrap_or_default() + t.charges.unwrap_or_default(),
    )?;
    let vat: Decimal = doc.vat.iter().map(|v| v.tax).sum();
    differs(
        "BR-CO-14",
        "The invoice total VAT amount (BT-110)",
        t.vat.unwrap_or_default(),
        vat,
    )?;
    differs(
        "BR-CO-15",
        "The invoice total with VAT (BT-112)",
        t.with_vat,
        t.without_vat + t.vat.unwrap_or_default(),
    )?;
    differs(
        "BR-CO-16",
        "The amount due for payment (BT-115)",
        t.payable,
        t.with_vat - t.prepaid.unwrap_or_default() + t.rounding.unwrap_or_default(),
    )
}
