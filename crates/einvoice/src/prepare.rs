//! The document in the terms every syntax writes: invoice lines without the explicit tax
//! lines, prices that are never negative, one VAT breakdown entry per category and rate,
//! and the signs of the document type (a credit note's amounts positive).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use document::{Invoice, InvoiceKind, TaxKind, VatCategory};
use rust_decimal::Decimal;

use crate::rules::Refusal;

/// BT-3: what the document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// 380: a commercial invoice.
    Invoice,
    /// 381: a credit note (a corrective invoice that credits).
    CreditNote,
    /// 384: a corrected invoice (a corrective invoice that charges more).
    Corrected,
}

impl DocKind {
    /// The UNTDID 1001 code.
    pub fn code(self) -> &'static str {
        match self {
            Self::Invoice => "380",
            Self::CreditNote => "381",
            Self::Corrected => "384",
        }
    }
}

/// An invoice line (BG-25) as written.
#[derive(Debug, Clone)]
pub struct OutLine {
    /// BT-126: 1, 2, ... in the order of the invoice lines.
    pub id: usize,
    /// BT-153.
    pub name: String,
    /// BT-129, negative when the line credits.
    pub quantity: Decimal,
    /// BT-130.
    pub unit_code: String,
    /// BT-146, major units, never negative.
    pub price: Decimal,
    /// BT-131, minor units in the document's sign.
    pub net: i64,
    /// BT-151.
    pub category: VatCategory,
    /// BT-152.
    pub rate: Decimal,
    /// The line's VAT amount as the tax engine computed it, minor units in the document's sign.
    pub vat: i64,
    /// IRPF withheld on the line: rate (positive percent), base and amount (positive when
    /// withheld), minor units in the document's sign.
    pub withheld: Vec<(Decimal, i64, i64)>,
}

/// A VAT breakdown entry (BG-23) as written.
#[derive(Debug, Clone)]
pub struct OutVat {
    /// BT-118.
    pub category: VatCategory,
    /// BT-119.
    pub rate: Decimal,
    /// BT-116, minor units in the document's sign.
    pub taxable: i64,
    /// BT-117.
    pub tax: i64,
    /// BT-120.
    pub reason: Option<String>,
    /// BT-121.
    pub code: Option<String>,
}

/// The document ready to be written.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// BT-3.
    pub kind: DocKind,
    /// Minor digits of BT-5.
    pub digits: u8,
    /// BG-25.
    pub lines: Vec<OutLine>,
    /// BG-23.
    pub breakdown: Vec<OutVat>,
    /// BT-106 = BT-109.
    pub line_net: i64,
    /// BT-110.
    pub vat: i64,
    /// BT-112.
    pub with_vat: i64,
    /// BT-113: paid before issue plus the IRPF withheld.
    pub paid: i64,
    /// The IRPF withheld in all (positive when withheld).
    pub withheld: i64,
    /// The payment stated on the draft as already received.
    pub prepaid: i64,
    /// BT-115.
    pub payable: i64,
    /// BT-6 and BT-111: the accounting currency, its minor digits and the VAT total in it.
    pub accounting: Option<(String, u8, i64)>,
    /// BT-22: the note, with the withholding stated.
    pub note: Option<String>,
    /// BT-9.
    pub due_date: Option<NaiveDate>,
    /// BT-20.
    pub terms: Option<String>,
}

impl Prepared {
    /// `minor` as a decimal string in the invoice currency, e.g. `1234.50`.
    pub fn amount(&self, minor: i64) -> String {
        amount(minor, self.digits)
    }

    /// Whether any line or breakdown entry has `category`.
    pub fn has(&self, category: VatCategory) -> bool {
        self.breakdown.iter().any(|b| b.category == category)
    }
}

/// `minor` units with `digits` decimals, e.g. `-12.30`.
pub fn amount(minor: i64, digits: u8) -> String {
    Decimal::new(minor, u32::from(digits.min(28))).to_string()
}

/// A rate or quantity without trailing zeros, e.g. `21`, `10.5`.
pub fn plain(d: Decimal) -> String {
    let n = d.normalize();
    if n.is_zero() {
        "0".to_owned()
    } else {
        n.to_string()
    }
}

fn major(minor: i64, digits: u8) -> Decimal {
    Decimal::new(minor, u32::from(digits.min(28)))
}

/// The written form of `doc`: credit notes flipped to positive amounts (`flip`), or the
/// document's own signs.
pub fn prepare(doc: &Invoice, flip: bool) -> Result<Prepared, Refusal> {
    let totals = &doc.totals;
    let kind = match doc.kind {
        InvoiceKind::Ordinary => DocKind::Invoice,
        InvoiceKind::Corrective if totals.with_vat > 0 => DocKind::Corrected,
        InvoiceKind::Corrective => DocKind::CreditNote,
    };
    let sign = if flip && kind == DocKind::CreditNote {
        -1
    } else {
        1
    };
    let digits = doc.currency.minor_digits;
    let overflow = || Refusal::inconsistent("BR-CO-10", "an amount overflows");

    let mut lines = Vec::new();
    for line in doc.lines.iter().filter(|l| !l.is_tax) {
        let id = lines.len() + 1;
        let Some(vat) = &line.vat else {
            return Err(Refusal::inconsistent(
                "BR-CO-04",
                &format!("invoice line {id} has no VAT category"),
            ));
        };
        let net = line.net_amount.checked_mul(sign).ok_or_else(overflow)?;
        let quantity = line.quantity.abs();
        let listed = major(line.unit_price.abs(), digits);
        let net_major = major(net.abs(), digits);
        let tolerance = major(1, digits);
        let (quantity, price) = if quantity.is_zero() {
            if net == 0 {
                (quantity, listed)
            } else {
                (Decimal::ONE, net_major)
            }
        } else if quantity
            .checked_mul(listed)
            .is_some_and(|gross| (gross - net_major).abs() <= tolerance)
        {
            (quantity, listed)
        } else {
            // The net amount was given rather than computed: state the price it implies.
            let implied = net_major
                .checked_div(quantity)
                .ok_or_else(|| Refusal::inconsistent("BR-27", "a line's price overflows"))?;
            (quantity, implied.round_dp(8).normalize())
        };
        let quantity = if net < 0 { -quantity } else { quantity };
        let vat_amount: i64 = line
            .taxes
            .iter()
            .filter(|t| t.kind == TaxKind::Vat)
            .map(|t| t.amount)
            .sum();
        lines.push(OutLine {
            id,
            name: if line.concept.trim().is_empty() {
                "-".to_owned()
            } else {
                line.concept.clone()
            },
            quantity: quantity.normalize(),
            unit_code: line.unit_code.clone(),
            price,
            net,
            category: vat.category,
            rate: vat.rate.normalize(),
            vat: vat_amount * sign,
            withheld: line
                .taxes
                .iter()
                .filter(|t| t.kind == TaxKind::Withholding)
                .map(|t| (t.rate.abs().normalize(), t.base * sign, -t.amount * sign))
                .collect(),
        });
    }

    let mut merged: BTreeMap<(VatCategory, Decimal), OutVat> = BTreeMap::new();
    for b in &doc.vat_breakdown {
        let rate = b.rate.normalize();
        let e = merged.entry((b.category, rate)).or_insert_with(|| OutVat {
            category: b.category,
            rate,
            taxable: 0,
            tax: 0,
            reason: None,
            code: None,
        });
        e.taxable += b.taxable_amount * sign;
        e.tax += b.tax_amount * sign;
        if e.reason.is_none() {
            e.reason.clone_from(&b.exemption_reason);
        }
        if e.code.is_none() {
            e.code.clone_from(&b.exemption_code);
        }
    }
    let mut breakdown: Vec<OutVat> = merged.into_values().collect();
    for b in &mut breakdown {
        if b.reason.is_none() && b.code.is_none() {
            b.reason = match b.category {
                VatCategory::E => Some("Exempt from VAT".to_owned()),
                VatCategory::AE => Some("Reverse charge".to_owned()),
                VatCategory::K => Some("Intra-community supply".to_owned()),
                VatCategory::G => Some("Export outside the EU".to_owned()),
                VatCategory::O => Some("Not subject to VAT".to_owned()),
                VatCategory::S | VatCategory::Z => None,
            };
        }
    }

    let withheld = -totals.withholding * sign;
    let prepaid = totals.prepaid * sign;
    let with_vat = totals.with_vat * sign;
    let payable = totals.payable * sign;
    let spanish = doc.presentation.language.starts_with("es");
    let mut notes: Vec<String> = doc
        .notes
        .iter()
        .map(|n| n.trim().to_owned())
        .filter(|n| !n.is_empty())
        .collect();
    for w in &doc.withholdings {
        let what = if spanish {
            "Retención IRPF"
        } else {
            "IRPF withholding"
        };
        notes.push(format!(
            "{what} {}% {} {}: {} {}",
            plain(w.rate.abs()),
            if spanish { "sobre" } else { "on" },
            amount(w.base * sign, digits),
            amount(w.amount * sign, digits),
            doc.currency.code
        ));
    }
    let terms = doc.payment_terms.as_ref().map(|t| {
        if spanish {
            format!("Pago a {} días", t.days)
        } else {
            format!("Payment within {} days", t.days)
        }
    });
    Ok(Prepared {
        kind,
        digits,
        lines,
        breakdown,
        line_net: totals.line_net * sign,
        vat: totals.vat * sign,
        with_vat,
        paid: with_vat - payable,
        withheld,
        prepaid,
        payable,
        accounting: doc.accounting.as_ref().map(|a| {
            (
                a.currency.code.clone(),
                a.currency.minor_digits,
                a.vat_total * sign,
            )
        }),
        note: (!notes.is_empty()).then(|| notes.join("\n")),
        due_date: doc.due_date,
        terms,
    })
}
