//! Building the document at issue from the draft, the company and the recipient, and
//! refusing an invoice the law would not accept (VAT Directive art. 226, EN 16931).

use chrono::{DateTime, Days, NaiveDate, Utc};
use rust_decimal::Decimal;

use crate::model::{
    AccountingCurrency, BankAccount, Currency, Delivery, ExchangeRate, Invoice, InvoiceKind, Line,
    LineTax, Party, PaymentInstructions, PaymentTerms, Placeholder, PrecedingInvoice, Presentation,
    SupplyType, TaxKind, Totals, VatCategory,
};
use crate::vat;

/// Everything the issuing workflow decided about the invoice itself.
#[derive(Debug, Clone)]
pub struct Issue {
    /// The invoice's id.
    pub id: String,
    /// Ordinary or corrective.
    pub kind: InvoiceKind,
    /// The reference (BT-1).
    pub number: String,
    /// The yearly number.
    pub yearly_number: i64,
    /// The fiscal year.
    pub year: i64,
    /// The moment of issue.
    pub issued_at: DateTime<Utc>,
    /// ISO 4217 code of the invoice.
    pub currency: String,
    /// Digits of its minor unit.
    pub minor_digits: u8,
    /// The company's accounting currency, when it has one.
    pub accounting_currency: Option<(String, u8)>,
    /// The lines as computed on the draft.
    pub lines: Vec<domain::invoice::Line>,
    /// Goods or services.
    pub supply_type: SupplyType,
    /// The invoice's treatment code, when the engine computed one.
    pub treatment: Option<String>,
    /// BT-9 as set on the draft; `None` takes the payment terms.
    pub due_date: Option<NaiveDate>,
    /// The payment terms in days (the recipient's, else the company's).
    pub payment_terms_days: Option<i64>,
    /// BT-10.
    pub buyer_reference: Option<String>,
    /// BT-13.
    pub order_reference: Option<String>,
    /// BT-22.
    pub notes: Option<String>,
    /// BT-72 / BG-14.
    pub delivery: Delivery,
    /// BT-113, minor units.
    pub prepaid: i64,
    /// BG-17, as snapshotted on the draft.
    pub bank_accounts: Vec<BankAccount>,
    /// Rates frozen at issue.
    pub exchange_rates: Vec<ExchangeRate>,
    /// BG-3 for corrective invoices.
    pub preceding: Option<PrecedingInvoice>,
    /// How the PDF shows it.
    pub presentation: Presentation,
}

/// One thing the law requires that the invoice lacks, with where to set it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing {
    /// What is missing, e.g. "the recipient's city".
    pub what: String,
    /// Where to set it, e.g. "PATCH /v1/entities/{id} `address.city`".
    pub fix: String,
}

/// Why a document could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The invoice lacks what the law requires.
    #[error("the invoice cannot be issued: {}", describe(.0))]
    Incomplete(Vec<Missing>),
    /// The sums do not add up (a bug, refused rather than issued).
    #[error("the invoice's sums do not add up: {0}")]
    Inconsistent(String),
}

fn describe(missing: &[Missing]) -> String {
    missing
        .iter()
        .map(|m| format!("{} is missing (set it with {})", m.what, m.fix))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Countries whose addresses have no post code.
const NO_POSTCODE: &str = "AE AG AO AW BF BI BJ BO BS BW BZ CD CF CG CI CK CM DJ DM ER FJ GA GD GH \
    GM GQ GY HK IE JM KI KM KN KP LC ML MO MR MS MW NA NR NU QA RW SB SC SL SR ST SY TD TF TG TK TL \
    TO TT TV UG VU YE ZW";

/// Whether addresses in `country` carry a post code.
pub fn has_postcodes(country: &str) -> bool {
    !NO_POSTCODE.split_whitespace().any(|c| c == country)
}

fn blank(s: &Option<String>) -> bool {
    s.as_deref().is_none_or(|s| s.trim().is_empty())
}

/// What the law requires of the parties and that they lack.
///
/// - the seller: a postal address (a street line, city, post code where the country has
///   them) and a tax id (art. 226(3));
/// - a business buyer: a full postal address (art. 226(5));
/// - a reverse-charge, intra-EU exempt or exempt supply: the buyer's VAT id (art. 226(4)).
pub fn missing_items(seller: &Party, buyer: &Party, categories: &[VatCategory]) -> Vec<Missing> {
    let mut missing = Vec::new();
    let company = "PATCH /v1/company";
    let entity = format!("PATCH /v1/entities/{}", buyer.id);
    let mut address = |who: &str, a: &crate::model::Address, fix: &str| {
        if a.lines.iter().all(|l| l.trim().is_empty()) {
            missing.push(Missing {
                what: format!("{who} street address"),
                fix: format!("{fix} `address.lines`"),
            });
        }
        if blank(&a.city) {
            missing.push(Missing {
                what: format!("{who} city"),
                fix: format!("{fix} `address.city`"),
            });
        }
        if has_postcodes(&a.country) && blank(&a.zipcode) {
            missing.push(Missing {
                what: format!("{who} post code"),
                fix: format!("{fix} `address.zipcode`"),
            });
        }
    };
    address("the company's", &seller.address, company);
    if buyer.is_business {
        address("the recipient's", &buyer.address, &entity);
    }
    if blank(&seller.tax_id) && blank(&seller.vat_id) {
        missing.push(Missing {
            what: "the company's tax id".into(),
            fix: format!("{company} `fiscalId`"),
        });
    }
    let needs_vat_id = categories
        .iter()
        .any(|c| matches!(c, VatCategory::AE | VatCategory::K | VatCategory::E));
    if needs_vat_id && blank(&buyer.vat_id) {
        missing.push(Missing {
            what: "the recipient's VAT id (a reverse-charge or exempt supply must name it)".into(),
            fix: format!("{entity} `vies_vat_id`"),
        });
    }
    missing
}

/// Builds the document of an invoice being issued, or says what the law requires that it
/// lacks.
pub fn build(issue: Issue, seller: Party, buyer: Party) -> Result<Invoice, BuildError> {
    let doc = assemble(issue, seller, buyer)?;
    let categories: Vec<VatCategory> = doc.vat_breakdown.iter().map(|b| b.category).collect();
    let missing = missing_items(&doc.seller, &doc.buyer, &categories);
    if !missing.is_empty() {
        return Err(BuildError::Incomplete(missing));
    }
    Ok(doc)
}

/// The document of `issue` without the legal check: a draft's preview, or an invoice
/// issued before the check existed.
pub fn assemble(issue: Issue, seller: Party, buyer: Party) -> Result<Invoice, BuildError> {
    let language = issue.presentation.language.clone();
    let mut lines: Vec<Line> = issue.lines.into_iter().map(line).collect();
    let (vat_breakdown, withholdings) = vat::breakdown(&mut lines, &language);

    let totals = totals(&lines, &vat_breakdown, issue.prepaid)?;
    let issue_date = issue.issued_at.date_naive();
    let due_date = issue.due_date.or_else(|| {
        issue
            .payment_terms_days
            .and_then(|d| u64::try_from(d).ok())
            .and_then(|d| issue_date.checked_add_days(Days::new(d)))
    });
    let accounting = issue
        .accounting_currency
        .filter(|(code, _)| *code != issue.currency)
        .and_then(|(code, digits)| {
            let rate = issue
                .exchange_rates
                .iter()
                .find(|r| r.from == issue.currency && r.to == code)?
                .rate;
            Some(AccountingCurrency {
                vat_total: convert(totals.vat, issue.minor_digits, rate, digits)?,
                currency: Currency {
                    code,
                    minor_digits: digits,
                },
                rate,
            })
        });
    Ok(Invoice {
        id: issue.id,
        kind: issue.kind,
        payment: PaymentInstructions {
            remittance: issue.number.clone(),
            accounts: issue.bank_accounts,
        },
        number: issue.number,
        yearly_number: issue.yearly_number,
        year: issue.year,
        issued_at: issue.issued_at,
        currency: Currency {
            code: issue.currency,
            minor_digits: issue.minor_digits,
        },
        accounting,
        due_date,
        // Stated only when they decided the due date: beside a due date given on the draft,
        // "N days" would say something else.
        payment_terms: issue
            .payment_terms_days
            .filter(|_| issue.due_date.is_none())
            .map(|days| PaymentTerms { days }),
        buyer_reference: issue.buyer_reference,
        order_reference: issue.order_reference,
        notes: issue.notes,
        delivery: issue.delivery,
        preceding: issue.preceding,
        supply_type: issue.supply_type,
        treatment: issue.treatment,
        seller,
        buyer,
        lines,
        vat_breakdown,
        withholdings,
        totals,
        exchange_rates: issue.exchange_rates,
        presentation: issue.presentation,
    })
}

/// `amount` minor units (of `from_digits`) times `rate`, in minor units of `to_digits`,
/// rounded half-even.
fn convert(amount: i64, from_digits: u8, rate: Decimal, to_digits: u8) -> Option<i64> {
    let major = Decimal::from(amount).checked_div(Decimal::from(10_i64.pow(from_digits.into())))?;
    let converted = major.checked_mul(rate)?;
    let minor = converted.checked_mul(Decimal::from(10_i64.pow(to_digits.into())))?;
    use rust_decimal::prelude::ToPrimitive;
    domain::money::round_half_even(minor).to_i64()
}

fn line(l: domain::invoice::Line) -> Line {
    Line {
        unit_code: unit_code(l.quantity_unit.as_deref()).to_owned(),
        concept: l.concept,
        quantity: l.quantity,
        quantity_unit: l.quantity_unit,
        unit_price: l.unit_price,
        unit_unit: l.unit_unit,
        net_amount: l.subtotal,
        is_tax: l.is_tax,
        tax_amount: l.tax_amount,
        vat: None,
        taxes: l
            .tax_lines
            .into_iter()
            .map(|t| LineTax {
                kind: if t.kind == "withholding" {
                    TaxKind::Withholding
                } else {
                    TaxKind::Vat
                },
                rate: t.rate,
                base: t.base,
                amount: t.amount,
                treatment: t.treatment,
            })
            .collect(),
    }
}

/// The UN/ECE Recommendation 20 code of a unit label; `C62` ("one") when unknown.
pub fn unit_code(label: Option<&str>) -> &'static str {
    let Some(label) = label else { return "C62" };
    let l = label.trim().to_lowercase();
    match l.trim_end_matches('.') {
        "h" | "hr" | "hrs" | "hour" | "hours" | "hora" | "horas" | "stunde" | "stunden" | "std"
        | "heure" | "heures" => "HUR",
        "min" | "mins" | "minute" | "minutes" | "minuto" | "minutos" => "MIN",
        "d" | "day" | "days" | "día" | "dia" | "días" | "dias" | "tag" | "tage" | "jour"
        | "jours" => "DAY",
        "week" | "weeks" | "wk" | "semana" | "semanas" | "woche" | "wochen" => "WEE",
        "month" | "months" | "mes" | "meses" | "monat" | "monate" | "mois" => "MON",
        "year" | "years" | "año" | "años" | "jahr" | "jahre" | "an" | "ans" => "ANN",
        "kg" | "kilogram" | "kilograms" | "kilo" | "kilos" => "KGM",
        "g" | "gram" | "grams" | "gramo" | "gramos" => "GRM",
        "t" | "tonne" | "tonnes" | "ton" => "TNE",
        "l" | "litre" | "liter" | "litres" | "liters" | "litro" | "litros" => "LTR",
        "m" | "metre" | "meter" | "metres" | "meters" | "metro" | "metros" => "MTR",
        "km" | "kilometre" | "kilometer" | "kilometres" | "kilometers" => "KMT",
        "m2" | "m²" | "sqm" => "MTK",
        "m3" | "m³" => "MTQ",
        "kwh" => "KWH",
        "pc" | "pcs" | "piece" | "pieces" | "unit" | "units" | "u" | "ud" | "uds" | "unidad"
        | "unidades" | "stk" | "stück" | "ea" | "each" => "H87",
        "set" | "sets" => "SET",
        "pack" | "packs" | "package" => "XPK",
        _ => "C62",
    }
}

/// The document's sums from its lines, checked against the breakdown.
fn totals(
    lines: &[Line],
    breakdown: &[crate::model::VatBreakdown],
    prepaid: i64,
) -> Result<Totals, BuildError> {
    let overflow = || BuildError::Inconsistent("an amount overflows".into());
    let line_net = sum(lines.iter().filter(|l| !l.is_tax).map(|l| l.net_amount))?;
    let explicit = sum(lines.iter().filter(|l| l.is_tax).map(|l| l.net_amount))?;
    let computed = sum(lines
        .iter()
        .flat_map(|l| &l.taxes)
        .filter(|t| t.kind == TaxKind::Vat)
        .map(|t| t.amount))?;
    let withholding = sum(lines
        .iter()
        .flat_map(|l| &l.taxes)
        .filter(|t| t.kind == TaxKind::Withholding)
        .map(|t| t.amount))?;
    let vat = explicit.checked_add(computed).ok_or_else(overflow)?;
    let in_breakdown = sum(breakdown.iter().map(|b| b.tax_amount))?;
    let taxable = sum(breakdown.iter().map(|b| b.taxable_amount))?;
    if in_breakdown != vat || taxable != line_net {
        return Err(BuildError::Inconsistent(format!(
            "the VAT breakdown sums to {in_breakdown} on {taxable}, the lines to {vat} on \
             {line_net}; an explicit tax line must follow the lines it taxes"
        )));
    }
    let with_vat = line_net.checked_add(vat).ok_or_else(overflow)?;
    let total = with_vat.checked_add(withholding).ok_or_else(overflow)?;
    Ok(Totals {
        line_net,
        vat,
        with_vat,
        withholding,
        total,
        prepaid,
        payable: total.checked_sub(prepaid).ok_or_else(overflow)?,
    })
}

/// The checked sum of `amounts`.
fn sum(amounts: impl Iterator<Item = i64>) -> Result<i64, BuildError> {
    domain::money::checked_sum(amounts)
        .map_err(|_| BuildError::Inconsistent("an amount overflows".into()))
}

/// The placeholder values as the document keeps them.
pub fn placeholders(values: impl IntoIterator<Item = (String, String)>) -> Vec<Placeholder> {
    values
        .into_iter()
        .map(|(key, value)| Placeholder { key, value })
        .collect()
}

impl Line {
    /// The line as the tax engine and the reports know it.
    pub fn to_domain(&self) -> domain::invoice::Line {
        domain::invoice::Line {
            concept: self.concept.clone(),
            quantity: self.quantity,
            quantity_unit: self.quantity_unit.clone(),
            unit_price: self.unit_price,
            unit_unit: self.unit_unit.clone(),
            is_tax: self.is_tax,
            tax_amount: self.tax_amount,
            subtotal: self.net_amount,
            tax_lines: self
                .taxes
                .iter()
                .map(|t| domain::invoice::LineTax {
                    kind: t.kind.code().to_owned(),
                    rate: t.rate,
                    base: t.base,
                    amount: t.amount,
                    treatment: t.treatment.clone(),
                })
                .collect(),
        }
    }
}
