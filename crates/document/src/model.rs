//! The types of an issued invoice, named after EN 16931's semantic model.
//!
//! Amounts are signed integers in minor units of the invoice currency (BT-5), as everywhere
//! in the service; the e-invoice writers turn them into decimals. A corrective invoice keeps
//! the signs it was issued with (a full reversal has negative amounts): outputs that need
//! positive amounts and a credit-note type (UBL `CreditNote`, CII 381) flip them there.
//! Every field a reader needs is here, so no output goes back to the database or re-derives
//! anything: the document is built once, at issue, by [`crate::build`].

use std::fmt;

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// An issued invoice, ordinary or corrective: everything it says, frozen at issue.
///
/// The id, the number and the moment of issue live in the invoice's row (its key, the
/// unique number index, the date filters): they are not stored in the document's JSON but
/// filled in when it is decoded ([`crate::stored::Frame`]), so each fact has one home.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invoice {
    /// The service's id of the invoice.
    #[serde(skip)]
    pub id: String,
    /// Ordinary or corrective, with what decides the series' numbering.
    pub kind: InvoiceKind,
    /// BT-1: the invoice number, the frozen reference, e.g. `F2026-00042`.
    #[serde(skip)]
    pub number: String,
    /// The yearly number within the series (the numeric part of BT-1).
    #[serde(skip)]
    pub yearly_number: i64,
    /// The fiscal year of the number.
    #[serde(skip)]
    pub year: i64,
    /// When it was issued; BT-2 is its UTC date ([`Invoice::issue_date`]).
    #[serde(skip)]
    pub issued_at: DateTime<Utc>,
    /// BT-5: the currency of every amount, ISO 4217.
    pub currency: Currency,
    /// BT-6 and BT-111: the VAT total in the seller's accounting currency, when it differs.
    pub accounting: Option<AccountingCurrency>,
    /// BT-9: when payment is due.
    pub due_date: Option<NaiveDate>,
    /// BT-20: payment terms, as days and as the sentence printed.
    pub payment_terms: Option<PaymentTerms>,
    /// BT-10: the buyer's reference (a Leitweg-ID for German public buyers).
    pub buyer_reference: Option<String>,
    /// BT-13: the buyer's purchase order reference.
    pub order_reference: Option<String>,
    /// BT-22: a free note.
    pub notes: Option<String>,
    /// BT-72 or BG-14: when the supply happened.
    pub delivery: Delivery,
    /// BG-3: the invoice this one corrects.
    pub preceding: Option<PrecedingInvoice>,
    /// Goods or services; decided the VAT treatment.
    pub supply_type: SupplyType,
    /// The VAT treatment the tax engine chose for the invoice as a whole, if it computed one.
    pub treatment: Option<String>,
    /// BG-4: the seller (the company).
    pub seller: Party,
    /// BG-7: the buyer (the recipient entity).
    pub buyer: Party,
    /// BG-16: how to pay.
    pub payment: PaymentInstructions,
    /// BG-25: the lines, in order; explicit tax lines (`is_tax`) included as given.
    pub lines: Vec<Line>,
    /// BG-23: one entry per VAT category and rate.
    pub vat_breakdown: Vec<VatBreakdown>,
    /// Spanish IRPF withholding, one entry per rate (negative amounts); no EN 16931 term.
    pub withholdings: Vec<Withholding>,
    /// BG-22: the sums.
    pub totals: Totals,
    /// Exchange rates frozen at issue (to the company currency and display currencies).
    pub exchange_rates: Vec<ExchangeRate>,
    /// How the PDF shows it: language, the company's snippets and placeholder values.
    pub presentation: Presentation,
}

impl Invoice {
    /// BT-2: the UTC date of issue.
    pub fn issue_date(&self) -> NaiveDate {
        self.issued_at.date_naive()
    }

    /// Whether this is a corrective invoice.
    pub fn is_corrective(&self) -> bool {
        matches!(self.kind, InvoiceKind::Corrective)
    }

    /// BT-3: `380` commercial invoice, `381` credit note for a corrective invoice.
    pub fn type_code(&self) -> &'static str {
        match self.kind {
            InvoiceKind::Ordinary => "380",
            InvoiceKind::Corrective => "381",
        }
    }
}

/// Ordinary or corrective invoice (its own series and numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvoiceKind {
    /// An ordinary invoice (series `invoice`).
    Ordinary,
    /// A corrective invoice (series `corrective`, a credit note in e-invoices).
    Corrective,
}

impl InvoiceKind {
    /// The stored series name: `invoice` or `corrective`.
    pub fn series(self) -> &'static str {
        match self {
            Self::Ordinary => "invoice",
            Self::Corrective => "corrective",
        }
    }
}

/// Goods or services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SupplyType {
    /// Services.
    Services,
    /// Goods.
    Goods,
}

/// BT-5 with its minor unit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Currency {
    /// ISO 4217 code, e.g. `EUR`.
    pub code: String,
    /// Digits of the minor unit: 2 for EUR, 0 for JPY, 3 for KWD.
    pub minor_digits: u8,
}

/// BT-6 and BT-111: the seller's accounting currency and the VAT total in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccountingCurrency {
    /// BT-6, ISO 4217.
    pub currency: Currency,
    /// 1 invoice currency = `rate` accounting currency (frozen at issue).
    pub rate: Decimal,
    /// BT-111: the VAT total in minor units of the accounting currency.
    pub vat_total: i64,
}

/// BT-20: payment terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentTerms {
    /// Days from the issue date to the due date.
    pub days: i64,
}

/// When the goods or services were supplied: a date (BT-72), a period (BG-14), or neither
/// (then the issue date is the supply date, as the VAT Directive allows).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    /// BT-72: the actual delivery date.
    pub date: Option<NaiveDate>,
    /// BT-73: start of the invoicing period.
    pub period_start: Option<NaiveDate>,
    /// BT-74: end of the invoicing period.
    pub period_end: Option<NaiveDate>,
}

impl Delivery {
    /// Whether no supply date or period was given.
    pub fn is_empty(&self) -> bool {
        self.date.is_none() && self.period_start.is_none() && self.period_end.is_none()
    }
}

/// BG-3: the invoice a corrective invoice corrects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrecedingInvoice {
    /// The service's id of the corrected invoice.
    pub id: String,
    /// BT-25: its number.
    pub number: String,
    /// BT-26: its issue date (the UTC date of `issued_at`).
    pub issue_date: NaiveDate,
    /// When it was issued (VERI*FACTU names it by its date in Madrid).
    pub issued_at: DateTime<Utc>,
    /// The legal reason (`R1` to `R5`, Spanish issuers; `R1` elsewhere unless given).
    pub reason: CorrectionReason,
}

/// The legal reason of a corrective invoice (art. 80 of the Spanish VAT Act).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CorrectionReason {
    /// Error founded in law, or art. 80.1, 80.2 and 80.6.
    R1,
    /// Art. 80.3: insolvency proceedings.
    R2,
    /// Art. 80.4: uncollectable debts.
    R3,
    /// Other causes.
    R4,
    /// Corrections of simplified invoices.
    R5,
}

impl CorrectionReason {
    /// From its code, `R1` to `R5`.
    pub fn parse(code: &str) -> Option<Self> {
        Some(match code {
            "R1" => Self::R1,
            "R2" => Self::R2,
            "R3" => Self::R3,
            "R4" => Self::R4,
            "R5" => Self::R5,
            _ => return None,
        })
    }

    /// The code, `R1` to `R5`.
    pub fn code(self) -> &'static str {
        match self {
            Self::R1 => "R1",
            Self::R2 => "R2",
            Self::R3 => "R3",
            Self::R4 => "R4",
            Self::R5 => "R5",
        }
    }
}

/// Seller (BG-4) or buyer (BG-7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Party {
    /// The service's id: the company's for the seller, the entity's for the buyer.
    pub id: String,
    /// BT-27 / BT-44: legal name.
    pub name: String,
    /// BT-28 / BT-45: trading name, when it differs.
    pub trading_name: Option<String>,
    /// Country of establishment and legal form, e.g. `ES:SL`; decided the VAT treatment.
    pub legal_form: String,
    /// Country of establishment (ISO 3166-1 alpha-2), from [`Party::legal_form`].
    pub country: String,
    /// Whether the party acts as a business (it has a tax id, a VAT id or a company form).
    pub is_business: bool,
    /// BT-31 / BT-48: VAT identifier with its country prefix, e.g. `DE123456789`.
    pub vat_id: Option<String>,
    /// BT-32 (seller's tax registration) / BT-47 (buyer's legal registration): the national
    /// tax id, e.g. a Spanish NIF `B12345678`.
    pub tax_id: Option<String>,
    /// BG-5 / BG-8: postal address.
    pub address: Address,
    /// BG-6 / BG-9: contact.
    pub contact: Contact,
    /// BT-34 / BT-49: electronic address, e.g. a Peppol participant id.
    pub electronic_address: Option<ElectronicAddress>,
    /// The buyer's settings that were in force at issue, as the service keeps them (the
    /// seller has none).
    pub settings: Option<BuyerSettings>,
}

impl Party {
    /// Whether the party is established in Spain (its legal form's country is `ES`).
    pub fn is_spanish(&self) -> bool {
        self.country == "ES"
    }
}

/// A postal address (BG-5, BG-8, BG-15).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// BT-35..BT-36, BT-162: street lines.
    pub lines: Vec<String>,
    /// BT-37: city.
    pub city: Option<String>,
    /// BT-38: post code.
    pub zipcode: Option<String>,
    /// BT-39: region.
    pub state: Option<String>,
    /// BT-40: country, ISO 3166-1 alpha-2.
    pub country: String,
}

/// BG-6 / BG-9: how to reach a person at the party.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contact {
    /// BT-41 / BT-56: contact point.
    pub name: Option<String>,
    /// BT-42 / BT-57: telephone.
    pub phone: Option<String>,
    /// BT-43 / BT-58: e-mail.
    pub email: Option<String>,
}

/// BT-34 / BT-49: an electronic address with its scheme (EAS code list, e.g. `9930`,
/// `0204`, `0088`, `EM`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ElectronicAddress {
    /// The EAS scheme code.
    pub scheme: String,
    /// The identifier within the scheme.
    pub id: String,
}

/// What the service kept of a buyer entity at issue beyond EN 16931: the invoice view shows
/// it as the recipient snapshot, and VERI*FACTU needs the id type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuyerSettings {
    /// The entity's default currency.
    pub currency_code: String,
    /// The entity's document language, if set.
    pub language: Option<String>,
    /// The entity's per-recipient template, as stored (JSON), if any.
    pub template: Option<serde_json::Value>,
    /// The entity's VERI*FACTU settings, as stored (JSON), if any.
    pub verifactu: Option<serde_json::Value>,
    /// The AEAT IDType for a recipient without a Spanish NIF (`02` to `07`).
    pub aeat_id_type: Option<String>,
    /// When the entity was created, microseconds since the epoch.
    pub created_at: i64,
    /// When the entity was last changed, microseconds since the epoch.
    pub updated_at: Option<i64>,
}

/// BG-16: payment instructions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaymentInstructions {
    /// BT-83: the remittance information (the invoice number, filled in on decoding).
    #[serde(skip)]
    pub remittance: String,
    /// BG-17: accounts to pay into, as snapshotted on the draft.
    pub accounts: Vec<BankAccount>,
}

impl PaymentInstructions {
    /// BT-81: `58` (SEPA credit transfer) when an account has an IBAN, `30` (credit
    /// transfer) when only other accounts are given, `1` (not defined) without accounts.
    pub fn means_code(&self) -> &'static str {
        if self.accounts.iter().any(|a| a.iban.is_some()) {
            "58"
        } else if self.accounts.is_empty() {
            "1"
        } else {
            "30"
        }
    }
}

/// BG-17: a bank account to pay into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BankAccount {
    /// The service's id of the account.
    pub id: Option<String>,
    /// BT-85: the account's name (label).
    pub name: String,
    /// The bank's name.
    pub bank_name: Option<String>,
    /// BT-84: IBAN, electronic form (no spaces).
    pub iban: Option<String>,
    /// BT-86: BIC.
    pub bic: Option<String>,
    /// The account's currency.
    pub currency_code: Option<String>,
}

/// BG-25: an invoice line, or an explicit tax line as the caller gave it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    /// BT-153: what is billed.
    pub concept: String,
    /// BT-129: quantity.
    pub quantity: Decimal,
    /// The quantity's unit as written, e.g. `h`.
    pub quantity_unit: Option<String>,
    /// BT-130: the unit as a UN/ECE Recommendation 20 code (`C62` one, `HUR` hour...).
    pub unit_code: String,
    /// BT-146: net price of one unit, minor units.
    pub unit_price: i64,
    /// The currency label the caller gave for the unit price, if any.
    pub unit_unit: Option<String>,
    /// BT-131: the line's net amount, minor units.
    pub net_amount: i64,
    /// An explicit tax line (the caller stated the tax): not an EN 16931 line; it taxes
    /// the lines before it (see [`Line::vat`] of those lines).
    pub is_tax: bool,
    /// For a tax line its amount; for a taxed line the sum of its taxes.
    pub tax_amount: Option<i64>,
    /// BG-30: the line's VAT category and rate (`None` only on explicit tax lines).
    pub vat: Option<LineVat>,
    /// The taxes computed on this line (VAT and withholding), as the tax engine gave them.
    pub taxes: Vec<LineTax>,
}

/// BG-30: a line's VAT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineVat {
    /// BT-151.
    pub category: VatCategory,
    /// BT-152: rate in percent.
    pub rate: Decimal,
}

/// A tax computed on one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineTax {
    /// VAT or withholding.
    pub kind: TaxKind,
    /// Rate in percent (negative for withholding).
    pub rate: Decimal,
    /// Taxed base, minor units.
    pub base: i64,
    /// Amount, minor units.
    pub amount: i64,
    /// The tax engine's treatment code, e.g. `domestic`, `reverse_charge`.
    pub treatment: String,
}

/// VAT or an income-tax withholding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaxKind {
    /// Value added tax.
    Vat,
    /// Spanish IRPF withholding; rate and amount negative.
    Withholding,
}

impl TaxKind {
    /// The stored code, `vat` or `withholding`.
    pub fn code(self) -> &'static str {
        match self {
            Self::Vat => "vat",
            Self::Withholding => "withholding",
        }
    }
}

/// UNTDID 5305 VAT category codes as EN 16931 uses them (BT-118, BT-151).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum VatCategory {
    /// Standard rate.
    S,
    /// Zero rated goods.
    Z,
    /// Exempt from VAT.
    E,
    /// VAT reverse charge.
    AE,
    /// Intra-community supply, exempt.
    K,
    /// Free export item, VAT not charged.
    G,
    /// Services outside scope of tax.
    O,
}

impl VatCategory {
    /// The code, e.g. `AE`.
    pub fn code(self) -> &'static str {
        match self {
            Self::S => "S",
            Self::Z => "Z",
            Self::E => "E",
            Self::AE => "AE",
            Self::K => "K",
            Self::G => "G",
            Self::O => "O",
        }
    }

    /// From a code, e.g. `AE`.
    pub fn parse(code: &str) -> Option<Self> {
        Some(match code {
            "S" => Self::S,
            "Z" => Self::Z,
            "E" => Self::E,
            "AE" => Self::AE,
            "K" => Self::K,
            "G" => Self::G,
            "O" => Self::O,
            _ => return None,
        })
    }

    /// Every category, in code order.
    pub const ALL: [Self; 7] = [
        Self::S,
        Self::Z,
        Self::E,
        Self::AE,
        Self::K,
        Self::G,
        Self::O,
    ];
}

impl fmt::Display for VatCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// BG-23: the VAT of one category and rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VatBreakdown {
    /// BT-118.
    pub category: VatCategory,
    /// BT-119: rate in percent (0 for every category but S).
    pub rate: Decimal,
    /// BT-116: sum of the net amounts of the lines in this category and rate.
    pub taxable_amount: i64,
    /// BT-117: the VAT.
    pub tax_amount: i64,
    /// BT-120: why no VAT is charged, in words (the legal mention), for E, AE, K, G, O.
    pub exemption_reason: Option<String>,
    /// BT-121: the VATEX code, e.g. `VATEX-EU-AE`.
    pub exemption_code: Option<String>,
    /// The tax engine's treatment code the entry comes from (`explicit` for stated tax lines).
    pub treatment: String,
}

/// A Spanish IRPF withholding of one rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Withholding {
    /// Rate in percent, negative (e.g. `-15`).
    pub rate: Decimal,
    /// Withheld base, minor units.
    pub base: i64,
    /// Withheld amount, minor units, negative.
    pub amount: i64,
}

/// BG-22: the document's sums, minor units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Totals {
    /// BT-106: sum of the lines' net amounts (BT-109 too: there are no document-level
    /// allowances or charges).
    pub line_net: i64,
    /// BT-110: the VAT total.
    pub vat: i64,
    /// BT-112: total with VAT.
    pub with_vat: i64,
    /// Sum of withholdings (zero or negative).
    pub withholding: i64,
    /// What the recipient pays in all: BT-112 plus the withholding. The service's `total`.
    pub total: i64,
    /// BT-113: paid before issue (stated on the draft; payments recorded later do not change
    /// the issued document).
    pub prepaid: i64,
    /// BT-115: amount due for payment, `total - prepaid`.
    pub payable: i64,
}

/// An exchange rate frozen at issue: 1 `from` = `rate` `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExchangeRate {
    /// Source currency.
    pub from: String,
    /// Target currency.
    pub to: String,
    /// Units of `to` for one `from`.
    pub rate: Decimal,
    /// The day the rate applies to.
    pub date: Option<NaiveDate>,
    /// `manual` (given by the caller) or `ecb` (fetched at issue).
    pub source: Option<String>,
}

/// How the PDF shows the invoice; frozen so that it renders the same bytes forever.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Presentation {
    /// Language of the labels, e.g. `en`, `es`, `es_ES`.
    pub language: String,
    /// The company's (or the recipient template's) footer Typst snippet.
    pub footer_typst: Option<String>,
    /// The company's (or the recipient template's) post-invoice Typst snippet.
    pub post_typst: Option<String>,
    /// Placeholder values, in the order given.
    pub placeholders: Vec<Placeholder>,
    /// Extra currencies to show totals in.
    pub display_currencies: Vec<String>,
}

/// A custom placeholder's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Placeholder {
    /// The key, as in `{{key}}`.
    pub key: String,
    /// The value.
    pub value: String,
}
