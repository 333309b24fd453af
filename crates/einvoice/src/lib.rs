//! The issued invoice document ([`document::Invoice`]) as structured e-invoices.
//!
//! [`xml`] writes one of seven [`Format`]s: UBL 2.1 (EN 16931), UN/CEFACT CII D16B (EN 16931),
//! XRechnung 3.0 in both syntaxes, Peppol BIS Billing 3.0, the CII of a Factur-X 1.07 /
//! ZUGFeRD 2.3 invoice (profile EN 16931) and Facturae 3.2.2. Before writing, it checks the
//! rules it can check in process (the sums BR-CO-10 to BR-CO-16, the fields each profile
//! requires) and refuses, naming the business rule and the field to set, a document that its
//! own rules know to be invalid ([`Refusal`]).
//!
//! Mapping decisions (see docs/EINVOICE.md):
//! - a corrective invoice whose total is zero or negative is a credit note (UBL `CreditNote`,
//!   CII 381) with the signs flipped, so that the amounts are positive; one whose total is
//!   positive (it charges more) is a corrected invoice (384). Both name the corrected invoice
//!   (BT-25, BT-26).
//! - explicit tax lines (`is_tax`) are not invoice lines: their VAT is in the breakdown.
//! - the Spanish IRPF withholding has no EN 16931 term: in UBL and CII it is stated in the
//!   note (BT-22) and counted in the paid amount (BT-113), so that the amount due (BT-115) is
//!   what the buyer pays; Facturae states it as `TaxesWithheld`.
//!
//! [`read`] is the other direction, for imports: a supplier's file (UBL 2.1 Invoice or
//! CreditNote, CII D16B, XRechnung in either syntax, or a Factur-X / ZUGFeRD 2.x PDF with its
//! embedded XML) into one checked [`read::Incoming`], refused with the rule it breaks.
//!
//! Nothing here does I/O; no DTD, entity or external reference in a file read is resolved.
#![forbid(unsafe_code)]
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod c14n;
mod cii;
mod country;
mod facturae;
pub mod facturx;
mod prepare;
pub mod read;
mod rules;
mod ubl;
mod writer;
pub mod xades;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::fmt;
use std::str::FromStr;

pub use rules::Refusal;

/// An e-invoice format, by its API name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `ubl`: UBL 2.1 Invoice / CreditNote, EN 16931 core.
    Ubl,
    /// `cii`: UN/CEFACT CII D16B, EN 16931 core.
    Cii,
    /// `xrechnung-ubl`: XRechnung 3.0, UBL syntax.
    XrechnungUbl,
    /// `xrechnung-cii`: XRechnung 3.0, CII syntax.
    XrechnungCii,
    /// `peppol`: Peppol BIS Billing 3.0 (UBL).
    Peppol,
    /// `facturx`: Factur-X 1.07 / ZUGFeRD 2.3, profile EN 16931 (the CII of the hybrid PDF).
    Facturx,
    /// `facturae`: Facturae 3.2.2, unsigned.
    Facturae,
}

impl Format {
    /// Every format, in the order the API lists them.
    pub const ALL: [Self; 7] = [
        Self::Ubl,
        Self::Cii,
        Self::XrechnungUbl,
        Self::XrechnungCii,
        Self::Peppol,
        Self::Facturx,
        Self::Facturae,
    ];

    /// The API name, e.g. `xrechnung-ubl`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Ubl => "ubl",
            Self::Cii => "cii",
            Self::XrechnungUbl => "xrechnung-ubl",
            Self::XrechnungCii => "xrechnung-cii",
            Self::Peppol => "peppol",
            Self::Facturx => "facturx",
            Self::Facturae => "facturae",
        }
    }

    /// The names of every format, comma separated, for messages.
    pub fn names() -> String {
        Self::ALL.map(Self::name).join(", ")
    }

    /// BT-24, the specification identifier the document declares (Facturae has none).
    pub fn customization_id(self) -> Option<&'static str> {
        match self {
            Self::Ubl | Self::Cii | Self::Facturx => Some(EN16931),
            Self::XrechnungUbl | Self::XrechnungCii => Some(XRECHNUNG),
            Self::Peppol => Some(PEPPOL),
            Self::Facturae => None,
        }
    }

    /// The XML syntax the format is written in.
    fn syntax(self) -> Syntax {
        match self {
            Self::Ubl | Self::XrechnungUbl | Self::Peppol => Syntax::Ubl,
            Self::Cii | Self::XrechnungCii | Self::Facturx => Syntax::Cii,
            Self::Facturae => Syntax::Facturae,
        }
    }
}

/// BT-24 of EN 16931 core (UBL, CII, Factur-X EN 16931).
pub const EN16931: &str = "urn:cen.eu:en16931:2017";
/// BT-24 of XRechnung 3.0.
pub const XRECHNUNG: &str = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0";
/// BT-24 of Peppol BIS Billing 3.0.
pub const PEPPOL: &str =
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0";
/// BT-23 of Peppol BIS Billing 3.0 (also written by XRechnung).
pub const PEPPOL_PROCESS: &str = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    Ubl,
    Cii,
    Facturae,
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of the seven.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown e-invoice format `{0}`: the formats are {names}", names = Format::names())]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_owned()))
    }
}

/// The e-invoice of `doc` in `format`, or why it would not be valid in that format.
pub fn xml(doc: &document::Invoice, format: Format) -> Result<String, Refusal> {
    rules::check_profile(doc, format)?;
    let mut prepared = prepare::prepare(doc, format.syntax() != Syntax::Facturae)?;
    // Peppol allows the corrected invoice (384) only between German parties
    // (PEPPOL-EN16931-P0112): elsewhere it is an invoice that names the one it corrects.
    if format == Format::Peppol
        && prepared.kind == prepare::DocKind::Corrected
        && !(doc.seller.country == "DE" && doc.buyer.country == "DE")
    {
        prepared.kind = prepare::DocKind::Invoice;
    }
    rules::check_sums(&prepared)?;
    Ok(match format.syntax() {
        Syntax::Ubl => ubl::write(doc, &prepared, format),
        Syntax::Cii => cii::write(doc, &prepared, format),
        Syntax::Facturae => facturae::write(doc, &prepared)?,
    })
}
