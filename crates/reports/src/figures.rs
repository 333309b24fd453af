//! The figures of a report, computed from issued invoices and expenses of one period.
//!
//! Amounts are never added across currencies: everything is grouped by currency first.
//! Revenue is the net (taxable base) of issued invoices, corrective ones included (they
//! carry negative amounts); expenses are the net of expenses dated in the period. Every
//! sum is checked: a sum past `i64` is an error, never a wrapped number.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Utc};
use domain::invoice::Line;
use rust_decimal::Decimal;

use crate::ReportError;

/// Most months one report covers (ten years).
pub const MAX_MONTHS: usize = 120;

/// An issued invoice, as reports read it.
#[derive(Debug, Clone)]
pub struct InvoiceIn {
    pub recipient_id: String,
    pub recipient_name: String,
    /// A corrective invoice (R1–R5 or any correction).
    pub corrective: bool,
    pub currency: String,
    pub issued_at: DateTime<Utc>,
    pub net: i64,
    pub tax: i64,
    pub withholding: i64,
    pub total: i64,
    pub lines: Vec<Line>,
}

/// An expense, as reports read it.
#[derive(Debug, Clone)]
pub struct ExpenseIn {
    pub supplier_id: String,
    pub supplier_name: String,
    pub category: Option<String>,
    pub currency: String,
    pub date: DateTime<Utc>,
    pub net: i64,
    pub tax: i64,
    pub total: i64,
}

/// Sums of documents of one counterparty or category.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sums {
    pub count: i64,
    pub net: i64,
    pub tax: i64,
    pub total: i64,
}

impl Sums {
    fn add(&mut self, net: i64, tax: i64, total: i64) -> Result<(), ReportError> {
        self.count = checked(self.count, 1)?;
        self.net = checked(self.net, net)?;
        self.tax = checked(self.tax, tax)?;
        self.total = checked(self.total, total)?;
        Ok(())
    }
}

/// A customer, supplier or category with its sums.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    /// The entity's name, or the category (`None`: uncategorized).
    pub name: Option<String>,
    pub sums: Sums,
}

/// Revenue and expenses (net) of one calendar month (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Month {
    pub year: i32,
    pub month: u32,
    pub revenue: i64,
    pub expenses: i64,
}

/// Taxes of one kind, treatment and rate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaxRow {
    /// Treatment code, e.g. `domestic`, `reverse_charge`.
    pub treatment: String,
    /// Percentage, e.g. `21`, `-15`.
    pub rate: Decimal,
    pub base: i64,
    pub amount: i64,
}

/// Every figure of one currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrencyFigures {
    pub currency: String,
    /// Regular invoices issued.
    pub invoices: i64,
    /// Corrective invoices issued.
    pub correctives: i64,
    /// Issued invoices, corrective ones included.
    pub revenue: Sums,
    /// Sum of withholdings (negative: withheld by customers).
    pub withholding: i64,
    pub expenses: Sums,
    /// Months of the period, oldest first (also months without documents).
    pub months: Vec<Month>,
    /// Customers by net revenue, largest first.
    pub customers: Vec<Named>,
    /// Suppliers by net expense, largest first.
    pub suppliers: Vec<Named>,
    /// Expense categories by net, largest first.
    pub categories: Vec<Named>,
    /// Output VAT by treatment and rate, from the invoices' tax lines.
    pub output_vat: Vec<TaxRow>,
    /// Explicit tax lines (taxes typed in as lines, rate unknown).
    pub explicit_tax: i64,
    /// Withholdings by rate.
    pub withholdings: Vec<TaxRow>,
}

impl CurrencyFigures {
    /// Revenue minus expenses (net).
    pub fn result(&self) -> Result<i64, ReportError> {
        self.revenue
            .net
            .checked_sub(self.expenses.net)
            .ok_or(ReportError::Overflow)
    }

    /// Output VAT (computed and explicit) minus input VAT: what a VAT return settles.
    pub fn vat_balance(&self) -> Result<i64, ReportError> {
        self.revenue
            .tax
            .checked_sub(self.expenses.tax)
            .ok_or(ReportError::Overflow)
    }
}

/// The figures of a period: one entry per currency that has documents, by currency code.
pub fn compute(
    period_start: DateTime<Utc>,
    period_end: DateTime<Utc>,
    invoices: &[InvoiceIn],
    expenses: &[ExpenseIn],
) -> Result<Vec<CurrencyFigures>, ReportError> {
    let months = months(period_start, period_end)?;
    let mut by_currency: BTreeMap<&str, Builder> = BTreeMap::new();
    for inv in invoices {
        let b = by_currency
            .entry(&inv.currency)
            .or_insert_with(|| Builder::new(&months));
        b.invoice(inv)?;
    }
    for exp in expenses {
        let b = by_currency
            .entry(&exp.currency)
            .or_insert_with(|| Builder::new(&months));
        b.expense(exp)?;
    }
    Ok(by_currency
        .into_iter()
        .map(|(currency, b)| b.finish(currency))
        .collect())
}

/// The calendar months `[start, end)` touches, oldest first.
pub fn months(start: DateTime<Utc>, end: DateTime<Utc>) -> Result<Vec<(i32, u32)>, ReportError> {
    if end <= start {
        return Err(ReportError::Period);
    }
    let last = end - chrono::Duration::microseconds(1);
    let (mut y, mut m) = (start.year(), start.month());
    let mut out = Vec::new();
    while (y, m) <= (last.year(), last.month()) {
        if out.len() == MAX_MONTHS {
            return Err(ReportError::PeriodTooLong);
        }
        out.push((y, m));
        (y, m) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    }
    Ok(out)
}

struct Builder {
    invoices: i64,
    correctives: i64,
    revenue: Sums,
    withholding: i64,
    expenses: Sums,
    months: BTreeMap<(i32, u32), (i64, i64)>,
    customers: BTreeMap<String, Named>,
    suppliers: BTreeMap<String, Named>,
    categories: BTreeMap<Option<String>, Sums>,
    output_vat: BTreeMap<(String, Decimal), (i64, i64)>,
    explicit_tax: i64,
    withholdings: BTreeMap<(String, Decimal), (i64, i64)>,
}

impl Builder {
    fn new(months: &[(i32, u32)]) -> Self {
        Self {
            invoices: 0,
            correctives: 0,
            revenue: Sums::default(),
            withholding: 0,
            expenses: Sums::default(),
            months: months.iter().map(|k| (*k, (0, 0))).collect(),
            customers: BTreeMap::new(),
            suppliers: BTreeMap::new(),
            categories: BTreeMap::new(),
            output_vat: BTreeMap::new(),
            explicit_tax: 0,
            withholdings: BTreeMap::new(),
        }
    }

    fn invoice(&mut self, inv: &InvoiceIn) -> Result<(), ReportError> {
        if inv.corrective {
            self.correctives += 1;
        } else {
            self.invoices += 1;
        }
        self.revenue.add(inv.net, inv.tax, inv.total)?;
        self.withholding = checked(self.withholding, inv.withholding)?;
        let month = (inv.issued_at.year(), inv.issued_at.month());
        if let Some(m) = self.months.get_mut(&month) {
            m.0 = checked(m.0, inv.net)?;
        }
        self.customers
            .entry(inv.recipient_id.clone())
            .or_insert_with(|| Named {
                name: Some(inv.recipient_name.clone()),
                sums: Sums::default(),
            })
            .sums
            .add(inv.net, inv.tax, inv.total)?;
        for line in &inv.lines {
            if line.is_tax {
                self.explicit_tax = checked(self.explicit_tax, line.subtotal)?;
            }
            for t in &line.tax_lines {
                let table = match t.kind.as_str() {
                    "withholding" => &mut self.withholdings,
                    _ => &mut self.output_vat,
                };
                let row = table
                    .entry((t.treatment.clone(), t.rate.normalize()))
                    .or_insert((0, 0));
                row.0 = checked(row.0, t.base)?;
                row.1 = checked(row.1, t.amount)?;
            }
        }
        Ok(())
    }

    fn expense(&mut self, exp: &ExpenseIn) -> Result<(), ReportError> {
        self.expenses.add(exp.net, exp.tax, exp.total)?;
        let month = (exp.date.year(), exp.date.month());
        if let Some(m) = self.months.get_mut(&month) {
            m.1 = checked(m.1, exp.net)?;
        }
        self.suppliers
            .entry(exp.supplier_id.clone())
            .or_insert_with(|| Named {
                name: Some(exp.supplier_name.clone()),
                sums: Sums::default(),
            })
            .sums
            .add(exp.net, exp.tax, exp.total)?;
        let category = exp
            .category
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        self.categories
            .entry(category)
            .or_default()
            .add(exp.net, exp.tax, exp.total)?;
        Ok(())
    }

    fn finish(self, currency: &str) -> CurrencyFigures {
        let by_net = |mut v: Vec<Named>| {
            v.sort_by(|a, b| b.sums.net.cmp(&a.sums.net).then(a.name.cmp(&b.name)));
            v
        };
        let rows = |t: BTreeMap<(String, Decimal), (i64, i64)>| {
            t.into_iter()
                .map(|((treatment, rate), (base, amount))| TaxRow {
                    treatment,
                    rate,
                    base,
                    amount,
                })
                .collect()
        };
        CurrencyFigures {
            currency: currency.to_owned(),
            invoices: self.invoices,
            correctives: self.correctives,
            revenue: self.revenue,
            withholding: self.withholding,
            expenses: self.expenses,
            months: self
                .months
                .into_iter()
                .map(|((year, month), (revenue, expenses))| Month {
                    year,
                    month,
                    revenue,
                    expenses,
                })
                .collect(),
            customers: by_net(self.customers.into_values().collect()),
            suppliers: by_net(self.suppliers.into_values().collect()),
            categories: by_net(
                self.categories
                    .into_iter()
                    .map(|(name, sums)| Named { name, sums })
                    .collect(),
            ),
            output_vat: rows(self.output_vat),
            explicit_tax: self.explicit_tax,
            withholdings: rows(self.withholdings),
        }
    }
}

fn checked(a: i64, b: i64) -> Result<i64, ReportError> {
    a.checked_add(b).ok_or(ReportError::Overflow)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use domain::invoice::LineTax;

    use super::*;

    fn at(y: i32, m: u32, d: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(y, m, d, 12, 0, 0).unwrap()
    }

    fn line(subtotal: i64, taxes: &[(&str, &str, i64, &str)]) -> Line {
        Line {
            concept: "x".into(),
            quantity: Decimal::ONE,
            quantity_unit: None,
            unit_price: subtotal,
            unit_unit: None,
            is_tax: false,
            tax_amount: None,
            subtotal,
            tax_lines: taxes
                .iter()
                .map(|(kind, rate, amount, treatment)| LineTax {
                    kind: (*kind).into(),
                    rate: rate.parse().unwrap(),
                    base: subtotal,
                    amount: *amount,
                    treatment: (*treatment).into(),
                })
                .collect(),
        }
    }

    fn invoice(
        who: &str,
        currency: &str,
        when: DateTime<Utc>,
        lines: Vec<Line>,
        corrective: bool,
    ) -> InvoiceIn {
        let t = domain::invoice::totals(&lines).unwrap();
        InvoiceIn {
            recipient_id: who.into(),
            recipient_name: format!("{who} Ltd"),
            corrective,
            currency: currency.into(),
            issued_at: when,
            net: t.net,
            tax: t.tax,
            withholding: t.withholding,
            total: t.total,
            lines,
        }
    }

    fn expense(who: &str, cat: Option<&str>, when: DateTime<Utc>, net: i64, tax: i64) -> ExpenseIn {
        ExpenseIn {
            supplier_id: who.into(),
            supplier_name: format!("{who} SA"),
            category: cat.map(Into::into),
            currency: "EUR".into(),
            date: when,
            net,
            tax,
            total: net + tax,
        }
    }

    /// A quarter computed by hand:
    /// - A: 1,000.00 at 21% (210.00) with 15% withholding (-150.00), January
    /// - B: 500.00 at 10% (50.00), February; then a corrective -100.00 at 21% (-21.00), March
    /// - C: 200.00 USD, not subject, February (its own section)
    /// - expenses: 300.00 + 63.00 VAT "software" (Jan), 50.00 + 0 uncategorized (Mar)
    #[test]
    fn a_quarter_by_hand() {
        let invoices = vec![
            invoice(
                "A",
                "EUR",
                at(2026, 1, 10),
                vec![line(
                    100_000,
                    &[
                        ("vat", "21", 21_000, "domestic"),
                        ("withholding", "-15", -15_000, "domestic"),
                    ],
                )],
                false,
            ),
            invoice(
                "B",
                "EUR",
                at(2026, 2, 3),
                vec![line(50_000, &[("vat", "10", 5_000, "domestic")])],
                false,
            ),
            invoice(
                "B",
                "EUR",
                at(2026, 3, 30),
                vec![line(-10_000, &[("vat", "21", -2_100, "domestic")])],
                true,
            ),
            invoice(
                "C",
                "USD",
                at(2026, 2, 14),
                vec![line(20_000, &[("vat", "0", 0, "not_subject")])],
                false,
            ),
        ];
        let expenses = vec![
            expense("S", Some("software"), at(2026, 1, 20), 30_000, 6_300),
            expense("T", None, at(2026, 3, 1), 5_000, 0),
        ];
        let end = Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).unwrap();
        let figs = compute(at(2026, 1, 1), end, &invoices, &expenses).unwrap();
        assert_eq!(figs.len(), 2);
        let eur = &figs[0];
        assert_eq!(eur.currency, "EUR");
        assert_eq!((eur.invoices, eur.correctives), (2, 1));
        // 1,000 + 500 - 100
        assert_eq!(eur.revenue.net, 140_000);
        // 210 + 50 - 21
        assert_eq!(eur.revenue.tax, 23_900);
        assert_eq!(eur.withholding, -15_000);
        // 1,400 + 239 - 150
        assert_eq!(eur.revenue.total, 148_900);
        assert_eq!(eur.expenses.net, 35_000);
        assert_eq!(eur.expenses.tax, 6_300);
        assert_eq!(eur.result().unwrap(), 105_000);
        assert_eq!(eur.vat_balance().unwrap(), 17_600);
        assert_eq!(
            eur.months
                .iter()
                .map(|m| (m.month, m.revenue, m.expenses))
                .collect::<Vec<_>>(),
            vec![(1, 100_000, 30_000), (2, 50_000, 0), (3, -10_000, 5_000)]
        );
        assert_eq!(eur.customers[0].name.as_deref(), Some("A Ltd"));
        assert_eq!(
            eur.customers[1].sums,
            Sums {
                count: 2,
                net: 40_000,
                tax: 2_900,
                total: 42_900
            }
        );
        assert_eq!(
            eur.output_vat
                .iter()
                .map(|r| (r.rate.to_string(), r.base, r.amount))
                .collect::<Vec<_>>(),
            vec![("10".into(), 50_000, 5_000), ("21".into(), 90_000, 18_900)]
        );
        assert_eq!(eur.withholdings.len(), 1);
        assert_eq!(eur.withholdings[0].amount, -15_000);
        assert_eq!(eur.categories[0].name.as_deref(), Some("software"));
        assert_eq!(eur.categories[1].name, None);
        let usd = &figs[1];
        assert_eq!((usd.currency.as_str(), usd.revenue.net), ("USD", 20_000));
        assert_eq!(usd.expenses, Sums::default());
        assert_eq!(usd.output_vat[0].treatment, "not_subject");
    }

    #[test]
    fn sums_past_i64_are_errors_not_wraps() {
        let big = invoice(
            "A",
            "EUR",
            at(2026, 1, 2),
            vec![line(i64::MAX - 1, &[])],
            false,
        );
        let err = compute(at(2026, 1, 1), at(2026, 2, 1), &[big.clone(), big], &[]).unwrap_err();
        assert!(matches!(err, ReportError::Overflow));
    }

    #[test]
    fn periods_are_checked() {
        assert!(matches!(
            compute(at(2026, 2, 1), at(2026, 2, 1), &[], &[]),
            Err(ReportError::Period)
        ));
        assert!(matches!(
            compute(at(2000, 1, 1), at(2026, 1, 1), &[], &[]),
            Err(ReportError::PeriodTooLong)
        ));
        // An end at midnight of the 1st does not add that month.
        assert_eq!(
            months(
                at(2026, 1, 1),
                Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap()
            )
            .unwrap()
            .len(),
            2
        );
    }
}
