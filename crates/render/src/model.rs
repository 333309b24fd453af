//! What a caller hands the renderer: one self-contained, already computed document.
//!
//! The renderer computes nothing fiscal: amounts, taxes and totals arrive final (from the
//! `domain` crate) and are only formatted. Amounts are signed integers in minor units,
//! rates and quantities are decimal strings (`"21"`, `"-15"`, `"1.5"`), and every piece of
//! text is shown literally: none of it is ever interpreted as Typst code. The only code in
//! a document is the company's own footer and post-invoice snippets (see [`crate::snippet`]).

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// An invoice, corrective invoice or proforma, ready to be rendered to PDF.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InvoiceDocument {
    /// Which document this is; decides the template and the title.
    pub kind: DocumentKind,
    /// Draft documents carry a diagonal "DRAFT" / "BORRADOR" watermark on every page.
    pub status: DocumentStatus,
    /// Language tag of the labels, e.g. `en`, `es`, `es_ES`; anything but Spanish falls back to English.
    pub language: String,
    /// The frozen reference, e.g. `F2026-0042`; `None` while the document is a draft.
    pub reference: Option<String>,
    /// Issue date; also the PDF creation date, so renders are reproducible.
    pub issue_date: NaiveDate,
    /// Payment due date, if any.
    pub due_date: Option<NaiveDate>,
    /// Who issues the document (the company).
    pub issuer: Party,
    /// Who receives it (the customer).
    pub recipient: Party,
    /// Line items in the order they appear.
    pub lines: Vec<Line>,
    /// VAT summary, one entry per rate and treatment.
    pub tax_breakdown: Vec<TaxBreakdownEntry>,
    /// Withholding summary (Spanish IRPF), one entry per rate; amounts are negative.
    pub withholding: Vec<WithholdingEntry>,
    /// The document's sums.
    pub totals: Totals,
    /// The currency every amount is expressed in.
    pub currency: Currency,
    /// Frozen exchange rates to mention, e.g. `1 USD = 0.9123 EUR (rate frozen on 2026-01-02)`.
    pub exchange_rates: Vec<ExchangeRateNote>,
    /// Bank accounts shown as payment instructions.
    pub bank_accounts: Vec<BankAccount>,
    /// What is corrected and why: required for corrective invoices, ignored for the other kinds.
    pub corrective: Option<CorrectiveInfo>,
    /// Values of the company's custom placeholders, for `{{key}}` tokens in the two snippets
    /// only (never in other text); a key without a value renders as nothing.
    pub placeholders: BTreeMap<String, String>,
    /// Company-written Typst code shown in the footer of every page.
    pub footer_typst: Option<String>,
    /// Company-written Typst code appended after the invoice body.
    pub post_typst: Option<String>,
    /// A QR code for the top of the first page (e.g. the VERI*FACTU QR).
    pub qr: Option<QrCode>,
    /// Free notes shown under the totals.
    pub notes: Option<String>,
    /// What the law asks an invoice to state beyond the above: payment terms, the supply date
    /// or period, the buyer's references.
    #[serde(default)]
    pub legal: LegalDetails,
    /// The Factur-X XML (the EN 16931 CII of the invoice) to attach as `factur-x.xml`:
    /// the PDF is then a PDF/A-3b with that file as its alternative representation. It
    /// reaches Typst as a file the template attaches, never as code or text it evaluates.
    #[serde(default)]
    pub facturx: Option<String>,
}

/// The statements of an invoice beyond parties, lines and sums (VAT Directive art. 226,
/// EN 16931), printed under the dates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegalDetails {
    /// BT-10: the buyer's reference.
    pub buyer_reference: Option<String>,
    /// BT-13: the buyer's purchase order.
    pub order_reference: Option<String>,
    /// BT-72: when the goods or services were supplied.
    pub delivery_date: Option<NaiveDate>,
    /// BG-14: the period the invoice covers.
    pub period: Option<(NaiveDate, NaiveDate)>,
    /// BT-20: days to pay.
    pub payment_terms_days: Option<i64>,
}

impl InvoiceDocument {
    /// Whether the document carries company-written Typst (a non-blank footer or post-invoice
    /// snippet): code, not data, which a server renders in a child process with a memory
    /// limit (see [`crate::isolated`]).
    pub fn has_snippets(&self) -> bool {
        has_text(&self.footer_typst) || has_text(&self.post_typst)
    }
}

/// Whether an optional snippet has anything but white space (a blank one is not rendered).
pub(crate) fn has_text(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|s| !s.trim().is_empty())
}

/// The kind of document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentKind {
    /// An ordinary invoice.
    Invoice,
    /// A corrective invoice (factura rectificativa); needs [`InvoiceDocument::corrective`].
    CorrectiveInvoice,
    /// A proforma: a quote-like document with no fiscal effect.
    Proforma,
}

/// Whether the document is final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DocumentStatus {
    /// Not yet issued: watermarked, possibly without a reference.
    Draft,
    /// Issued: reference frozen, no watermark.
    Issued,
}

/// Issuer or recipient of a document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Party {
    /// Legal name.
    pub name: String,
    /// National tax identifier (NIF, CIF, Steuernummer...).
    pub fiscal_id: Option<String>,
    /// Intra-EU VAT identifier (VIES), e.g. `ESB12345678`.
    pub vat_id: Option<String>,
    /// Street lines of the postal address.
    pub address_lines: Vec<String>,
    /// Postal code.
    pub zipcode: String,
    /// City or town.
    pub city: String,
    /// State, province or region.
    pub state: Option<String>,
    /// Country, as it should be printed (a name or an ISO code).
    pub country: String,
}

/// One line item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// What is billed.
    pub concept: String,
    /// Quantity as a decimal string, e.g. `"3"`, `"1.5"`, `"-2"`.
    pub quantity: String,
    /// Unit of the quantity, e.g. `h`, `kg`, `units`.
    pub unit: Option<String>,
    /// Price of one unit, in minor units.
    pub unit_price_minor: i64,
    /// The line's amount before taxes, in minor units.
    pub subtotal_minor: i64,
    /// Taxes applied to this line.
    pub taxes: Vec<LineTax>,
}

/// The kind of a tax applied to a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaxKind {
    /// Value added tax.
    Vat,
    /// An income-tax withholding (IRPF); its rate and amount are negative.
    Withholding,
}

/// A tax applied to one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineTax {
    /// VAT or withholding.
    pub kind: TaxKind,
    /// Rate in percent as a decimal string, e.g. `"21"`, `"-15"`.
    pub rate: String,
    /// Taxed base, in minor units.
    pub base_minor: i64,
    /// Tax amount, in minor units.
    pub amount_minor: i64,
    /// Treatment code, e.g. `domestic`, `reverse_charge`.
    pub treatment: String,
}

/// One row of the VAT summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaxBreakdownEntry {
    /// Rate in percent as a decimal string.
    pub rate: String,
    /// Treatment code, e.g. `domestic`, `reverse_charge`, `export_exempt`.
    pub treatment: String,
    /// Sum of the bases at this rate and treatment, in minor units.
    pub base_minor: i64,
    /// Sum of the amounts, in minor units.
    pub amount_minor: i64,
    /// The legal mention the treatment requires, printed under the row.
    pub legal_mention: Option<String>,
}

/// One row of the withholding summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithholdingEntry {
    /// Rate in percent as a decimal string (negative, e.g. `"-15"`).
    pub rate: String,
    /// Withheld base, in minor units.
    pub base_minor: i64,
    /// Withheld amount, in minor units (negative).
    pub amount_minor: i64,
}

/// The sums of a document, in minor units; `total = net + tax + withholding`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Sum of the lines before taxes.
    pub net_minor: i64,
    /// Sum of VAT.
    pub tax_minor: i64,
    /// Sum of withholding (zero or negative).
    pub withholding_minor: i64,
    /// What the recipient pays.
    pub total_minor: i64,
}

/// The currency of the document's amounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Currency {
    /// ISO 4217 code, e.g. `EUR`.
    pub code: String,
    /// Digits of the minor unit: 2 for EUR, 0 for JPY, 3 for KWD (at most 4).
    pub minor_digits: u8,
}

/// A frozen exchange rate: `1 {from} = {rate} {to}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExchangeRateNote {
    /// Source currency code.
    pub from: String,
    /// Target currency code.
    pub to: String,
    /// Units of `to` per unit of `from`, as a decimal string, e.g. `"0.9123"`.
    pub rate: String,
    /// When the rate was frozen.
    pub frozen_on: NaiveDate,
}

/// A bank account shown as a payment instruction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BankAccount {
    /// The account's label.
    pub name: String,
    /// Name of the bank.
    pub bank_name: Option<String>,
    /// IBAN, already validated; printed in groups of four.
    pub iban: Option<String>,
    /// BIC / SWIFT code.
    pub bic: Option<String>,
}

/// The legal reason of a Spanish corrective invoice (art. 80 LIVA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CorrectionReason {
    /// Error founded in law or art. 80.1, 80.2 and 80.6.
    R1,
    /// Art. 80.3 (insolvency proceedings).
    R2,
    /// Art. 80.4 (uncollectable debts).
    R3,
    /// Other causes.
    R4,
    /// Corrections of simplified invoices.
    R5,
}

/// What a corrective invoice corrects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorrectiveInfo {
    /// Reference of the corrected invoice.
    pub corrected_reference: String,
    /// Issue date of the corrected invoice.
    pub corrected_issue_date: NaiveDate,
    /// Legal reason code.
    pub reason: CorrectionReason,
    /// The reason in words, printed after the code.
    pub reason_text: String,
}

/// A QR code image with its caption.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QrCode {
    /// The SVG document (as produced by the `qrcode` crate's SVG renderer).
    pub svg: String,
    /// Text printed with the code, e.g. `VERI*FACTU`.
    pub caption: String,
}
