//! Reading a supplier's e-invoice: detect the syntax, map it to [`Incoming`], check it.
//!
//! What is read is what an expense needs and what the sums are checked with: the
//! document's number, dates, currency and type, the seller (BG-4, BG-5, BT-31, BT-32), the
//! lines (BG-25), document allowances and charges (BG-20, BG-21), the VAT breakdown
//! (BG-23) and the totals (BG-22). A value that is present but not what its syntax allows
//! (a date or an amount that does not parse) is an error naming it, never a default.

mod check;
mod cii;
mod pdf;
mod ubl;
mod xml;

use chrono::NaiveDate;
use rust_decimal::Decimal;

/// Largest file read (the API refuses larger bodies first).
pub const MAX_FILE: usize = 10 * 1024 * 1024;

/// Why a file cannot be imported: the rule it breaks (an EN 16931 business rule such as
/// `BR-CO-15`, or the validation kit's names: `XML`, `SYNTAX`, `FX-EMBED`, `PDF`) and what
/// is wrong, in words for the person who sent it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{rule}: {message}")]
pub struct ReadError {
    pub rule: String,
    pub message: String,
}

impl ReadError {
    pub(crate) fn new(rule: &str, message: impl Into<String>) -> Self {
        Self {
            rule: rule.to_owned(),
            message: message.into(),
        }
    }
}

/// The syntax a file was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// OASIS UBL 2.1 (`Invoice` or `CreditNote`), XRechnung UBL and Peppol BIS included.
    Ubl,
    /// UN/CEFACT Cross Industry Invoice D16B, XRechnung CII and Factur-X included.
    Cii,
}

impl Syntax {
    /// The name used in messages and in an expense's description.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ubl => "UBL",
            Self::Cii => "CII",
        }
    }
}

/// The seller (BG-4) as the file states it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seller {
    /// BT-27.
    pub name: String,
    /// BT-31, as written.
    pub vat_id: Option<String>,
    /// BT-32, as written.
    pub tax_id: Option<String>,
    /// BT-35, BT-36 and BT-162, in that order.
    pub address_lines: Vec<String>,
    /// BT-37.
    pub city: Option<String>,
    /// BT-38.
    pub postcode: Option<String>,
    /// BT-39.
    pub subdivision: Option<String>,
    /// BT-40, ISO 3166-1 alpha-2.
    pub country: String,
    /// BT-43.
    pub email: Option<String>,
}

/// An invoice line (BG-25).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// BT-126.
    pub id: String,
    /// BT-153.
    pub name: String,
    /// BT-129.
    pub quantity: Decimal,
    /// BT-130 (UN/ECE Recommendation 20).
    pub unit_code: Option<String>,
    /// BT-131, the line's net amount.
    pub net_amount: Decimal,
    /// BT-146 divided by BT-149 (the price of one unit), when stated.
    pub unit_price: Option<Decimal>,
    /// BT-151.
    pub vat_category: Option<String>,
    /// BT-152.
    pub vat_rate: Option<Decimal>,
}

/// A document-level allowance (BG-20) or charge (BG-21).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adjustment {
    /// BT-92 / BT-99.
    pub amount: Decimal,
    /// BT-97 / BT-104.
    pub reason: Option<String>,
}

/// One VAT breakdown entry (BG-23).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VatEntry {
    /// BT-118.
    pub category: String,
    /// BT-119.
    pub rate: Option<Decimal>,
    /// BT-116.
    pub taxable: Decimal,
    /// BT-117.
    pub tax: Decimal,
}

/// The document totals (BG-22).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals {
    /// BT-106.
    pub line_total: Decimal,
    /// BT-107.
    pub allowances: Option<Decimal>,
    /// BT-108.
    pub charges: Option<Decimal>,
    /// BT-109.
    pub without_vat: Decimal,
    /// BT-110, in the document's currency.
    pub vat: Option<Decimal>,
    /// BT-112.
    pub with_vat: Decimal,
    /// BT-113.
    pub prepaid: Option<Decimal>,
    /// BT-114.
    pub rounding: Option<Decimal>,
    /// BT-115.
    pub payable: Decimal,
}

/// A supplier's invoice or credit note, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub syntax: Syntax,
    /// True when the XML came out of a Factur-X / ZUGFeRD PDF.
    pub from_pdf: bool,
    /// A credit note (UBL `CreditNote`, or type code 381): amounts are positive in the
    /// file and the sign is in the type.
    pub credit_note: bool,
    /// BT-1.
    pub number: String,
    /// BT-2.
    pub issue_date: NaiveDate,
    /// BT-3.
    pub type_code: String,
    /// BT-5.
    pub currency: String,
    /// BT-9.
    pub due_date: Option<NaiveDate>,
    /// BT-25: the invoice a credit note corrects.
    pub preceding: Option<String>,
    /// BT-22, the notes joined.
    pub note: Option<String>,
    pub seller: Seller,
    pub lines: Vec<Line>,
    pub allowances: Vec<Adjustment>,
    pub charges: Vec<Adjustment>,
    pub vat: Vec<VatEntry>,
    pub totals: Totals,
}

/// Reads a file: a UBL or CII XML document, or a PDF with one embedded.
pub fn read(bytes: &[u8]) -> Result<Incoming, ReadError> {
    if bytes.len() > MAX_FILE {
        return Err(ReadError::new(
            "IO",
            format!("the file is larger than {} MiB", MAX_FILE / (1024 * 1024)),
        ));
    }
    let (xml, from_pdf) = if bytes.starts_with(b"%PDF-") {
        (pdf::embedded_xml(bytes)?, true)
    } else {
        (bytes.to_vec(), false)
    };
    let mut incoming = read_xml(&xml)?;
    incoming.from_pdf = from_pdf;
    check::sums(&incoming)?;
    Ok(incoming)
}

/// Reads an XML document of a known syntax.
fn read_xml(bytes: &[u8]) -> Result<Incoming, ReadError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        ReadError::new(
            "XML",
            format!("the file is neither a PDF nor UTF-8 XML ({e})"),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = xml::parse(text)?;
    let root = doc.root_element();
    let ns = root.tag_name().namespace().unwrap_or("");
    match (ns, root.tag_name().name()) {
        (ubl::INVOICE_NS, "Invoice") => ubl::read(root, false),
        (ubl::CREDIT_NOTE_NS, "CreditNote") => ubl::read(root, true),
        (cii::RSM, "CrossIndustryInvoice") => cii::read(root),
        (ns, name) => Err(ReadError::new(
            "SYNTAX",
            format!(
                "the document is `{name}`{} — not a UBL 2.1 Invoice or CreditNote, nor a CII \
                 CrossIndustryInvoice",
                if ns.is_empty() {
                    String::new()
                } else {
                    format!(" in namespace {ns}")
                }
            ),
        )),
    }
}

#[cfg(test)]
mod tests;
