//! The rules checked in process before a document is written: the fields each profile
//! requires, and the sums (BR-CO-10 to BR-CO-16, BR-x-08).

use std::collections::BTreeMap;
use std::fmt;

use document::{Invoice, Party, VatCategory};
use rust_decimal::Decimal;

use crate::Format;
use crate::prepare::Prepared;

/// Why a document would not be valid in a format: the business rule and the field to set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Refusal {
    /// The business rule, e.g. `BR-DE-15`, `PEPPOL-EN16931-R010`.
    pub rule: String,
    /// Where to set what is missing, e.g. "the invoice's `buyer_reference`".
    pub field: String,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (set {})", self.rule, self.message, self.field)
    }
}

impl Refusal {
    fn new(rule: &str, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            rule: rule.to_owned(),
            field: field.into(),
            message: message.into(),
        }
    }

    /// The document's own sums or lines do not agree (stored data that cannot be right).
    pub fn inconsistent(rule: &str, message: &str) -> Self {
        Self::new(
            rule,
            "the invoice's lines (issue a corrective invoice)",
            format!("the stored invoice is inconsistent: {message}"),
        )
    }
}

const COMPANY: &str = "PATCH /v1/company";

fn entity(buyer: &Party) -> String {
    format!("PATCH /v1/entities/{}", buyer.id)
}

fn blank(s: Option<&str>) -> bool {
    s.is_none_or(|s| s.trim().is_empty())
}

fn has(doc: &Invoice, category: VatCategory) -> bool {
    doc.vat_breakdown.iter().any(|b| b.category == category)
}

/// What `format` requires of `doc` that it lacks, the first such item.
pub fn check_profile(doc: &Invoice, format: Format) -> Result<(), Refusal> {
    let seller = &doc.seller;
    let buyer = &doc.buyer;
    if format == Format::Facturae {
        return check_facturae(doc);
    }
    let seller_vat = !blank(seller.vat_id.as_deref());
    let buyer_vat = !blank(buyer.vat_id.as_deref());
    for (category, rule) in [
        (VatCategory::AE, "BR-AE-02"),
        (VatCategory::K, "BR-IC-02"),
        (VatCategory::G, "BR-G-02"),
    ] {
        if has(doc, category) && !seller_vat {
            return Err(Refusal::new(
                rule,
                format!("{COMPANY} `viesVatId`"),
                format!(
                    "an invoice with VAT category {category} must state the seller's VAT identifier (BT-31)"
                ),
            ));
        }
    }
    if has(doc, VatCategory::AE) && !buyer_vat && blank(buyer.tax_id.as_deref()) {
        return Err(Refusal::new(
            "BR-AE-02",
            format!("{} `vies_vat_id`", entity(buyer)),
            "a reverse-charge invoice must state the buyer's VAT identifier (BT-48)",
        ));
    }
    if has(doc, VatCategory::K) && !buyer_vat {
        return Err(Refusal::new(
            "BR-IC-02",
            format!("{} `vies_vat_id`", entity(buyer)),
            "an intra-community supply must state the buyer's VAT identifier (BT-48)",
        ));
    }
    if has(doc, VatCategory::O)
        && doc
            .vat_breakdown
            .iter()
            .any(|b| b.category != VatCategory::O)
    {
        return Err(Refusal::new(
            "BR-O-11",
            "the lines' `tax_category` of the draft",
            "an invoice with VAT category O (not subject to VAT) cannot have lines of other categories",
        ));
    }
    if !seller_vat && blank(seller.tax_id.as_deref()) {
        return Err(Refusal::new(
            "BR-CO-26",
            format!("{COMPANY} `fiscalId`"),
            "the seller's VAT identifier (BT-31) or legal registration identifier (BT-30) is missing",
        ));
    }
    if doc.currency.minor_digits > 2 {
        return Err(Refusal::new(
            "BR-DEC-09",
            "the invoice's `currency` (a currency with at most two decimals)",
            format!(
                "EN 16931 amounts have at most two decimals; {} has {}",
                doc.currency.code, doc.currency.minor_digits
            ),
        ));
    }
    match format {
        Format::XrechnungUbl | Format::XrechnungCii => check_xrechnung(doc),
        Format::Peppol => check_peppol(doc),
        _ => Ok(()),
    }
}

fn electronic_addresses(doc: &Invoice) -> Result<(), Refusal> {
    if doc.seller.electronic_address.is_none() {
        return Err(Refusal::new(
            "PEPPOL-EN16931-R020",
            format!("{COMPANY} `electronicAddress`"),
            "the seller's electronic address (BT-34) is missing",
        ));
    }
    if doc.buyer.electronic_address.is_none() {
        return Err(Refusal::new(
            "PEPPOL-EN16931-R010",
            format!("{} `einvoice.endpoint`", entity(&doc.buyer)),
            "the buyer's electronic address (BT-49) is missing",
        ));
    }
    Ok(())
}

fn check_xrechnung(doc: &Invoice) -> Result<(), Refusal> {
    if blank(doc.buyer_reference.as_deref()) {
        return Err(Refusal::new(
            "BR-DE-15",
            format!(
                "the invoice's `buyer_reference` (on the draft, or {} `einvoice.buyer_reference` before the draft is created)",
                entity(&doc.buyer)
            ),
            "the buyer reference (BT-10, e.g. a Leitweg-ID) is missing",
        ));
    }
    electronic_addresses(doc)?;
    let contact = &doc.seller.contact;
    for (value, rule, field, what) in [
        (
            contact.name.as_deref(),
            "BR-DE-5",
            "contactName",
            "the seller's contact point (BT-41)",
        ),
        (
            contact.phone.as_deref(),
            "BR-DE-6",
            "phone",
            "the seller's contact telephone number (BT-42)",
        ),
        (
            contact.email.as_deref(),
            "BR-DE-7",
            "email",
            "the seller's contact e-mail address (BT-43)",
        ),
    ] {
        if blank(value) {
            return Err(Refusal::new(
                rule,
                format!("{COMPANY} `{field}`"),
                format!("{what} is missing"),
            ));
        }
    }
    let address = &doc.buyer.address;
    if blank(address.city.as_deref()) {
        return Err(Refusal::new(
            "BR-DE-8",
            format!("{} `address.city`", entity(&doc.buyer)),
            "the buyer's city (BT-52) is missing",
        ));
    }
    if blank(address.zipcode.as_deref()) {
        return Err(Refusal::new(
            "BR-DE-9",
            format!("{} `address.zipcode`", entity(&doc.buyer)),
            "the buyer's post code (BT-53) is missing",
        ));
    }
    Ok(())
}

fn check_peppol(doc: &Invoice) -> Result<(), Refusal> {
    electronic_addresses(doc)?;
    // Peppol's EAS code list has no e-mail scheme.
    for (party, field) in [
        (&doc.seller, format!("{COMPANY} `electronicAddress`")),
        (
            &doc.buyer,
            format!("{} `einvoice.endpoint`", entity(&doc.buyer)),
        ),
    ] {
        if party
            .electronic_address
            .as_ref()
            .is_some_and(|a| a.scheme.eq_ignore_ascii_case("EM"))
        {
            return Err(Refusal::new(
                "PEPPOL-EN16931-CL008",
                field,
                format!(
                    "Peppol does not accept the e-mail scheme `EM` as the electronic address of {}",
                    party.name
                ),
            ));
        }
    }
    if blank(doc.buyer_reference.as_deref()) && blank(doc.order_reference.as_deref()) {
        return Err(Refusal::new(
            "PEPPOL-EN16931-R003",
            "the invoice's `buyer_reference` or `order_reference`",
            "a buyer reference (BT-10) or a purchase order reference (BT-13) must be given",
        ));
    }
    Ok(())
}

fn check_facturae(doc: &Invoice) -> Result<(), Refusal> {
    for (number, what) in [
        (Some(&doc.number), "the invoice number"),
        (
            doc.preceding.as_ref().map(|p| &p.number),
            "the corrected invoice's number",
        ),
    ] {
        if number.is_some_and(|n| n.chars().count() > 20) {
            return Err(Refusal::new(
                "FACTURAE-InvoiceNumber",
                format!(
                    "{COMPANY} `invoiceReferenceFormat` (for invoices issued after the change)"
                ),
                format!("Facturae numbers have at most 20 characters; {what} has more"),
            ));
        }
    }
    for (party, fix) in [
        (&doc.seller, format!("{COMPANY} `fiscalId`")),
        (&doc.buyer, format!("{} `fiscal_id`", entity(&doc.buyer))),
    ] {
        if blank(party.tax_id.as_deref()) && blank(party.vat_id.as_deref()) {
            return Err(Refusal::new(
                "FACTURAE-TaxIdentificationNumber",
                fix,
                format!("Facturae requires the tax id of {}", party.name),
            ));
        }
    }
    for (party, fix) in [
        (&doc.seller, COMPANY.to_owned()),
        (&doc.buyer, entity(&doc.buyer)),
    ] {
        let a = &party.address;
        if a.lines.iter().all(|l| l.trim().is_empty()) {
            return Err(Refusal::new(
                "FACTURAE-Address",
                format!("{fix} `address.lines`"),
                format!("Facturae requires the street address of {}", party.name),
            ));
        }
        if blank(a.city.as_deref()) {
            return Err(Refusal::new(
                "FACTURAE-Town",
                format!("{fix} `address.city`"),
                format!("Facturae requires the town of {}", party.name),
            ));
        }
        if crate::country::alpha3(&a.country).is_none() {
            return Err(Refusal::new(
                "FACTURAE-CountryCode",
                format!("{fix} `address.country`"),
                format!("Facturae does not know the country `{}`", a.country),
            ));
        }
        let zip = a.zipcode.as_deref().unwrap_or("").trim();
        if a.country == "ES" && (zip.len() != 5 || !zip.chars().all(|c| c.is_ascii_digit())) {
            return Err(Refusal::new(
                "FACTURAE-PostCode",
                format!("{fix} `address.zipcode`"),
                format!(
                    "Facturae requires a five-digit Spanish post code for {}",
                    party.name
                ),
            ));
        }
    }
    Ok(())
}

fn category_rule(category: VatCategory) -> &'static str {
    match category {
        VatCategory::S => "BR-S-08",
        VatCategory::Z => "BR-Z-08",
        VatCategory::E => "BR-E-08",
        VatCategory::AE => "BR-AE-08",
        VatCategory::K => "BR-IC-08",
        VatCategory::G => "BR-G-08",
        VatCategory::O => "BR-O-08",
    }
}

/// The sums EN 16931 checks (BR-CO-10, 13 to 16, and each category's BR-x-08).
pub fn check_sums(p: &Prepared) -> Result<(), Refusal> {
    let line_sum: i64 = p.lines.iter().map(|l| l.net).sum();
    if line_sum != p.line_net {
        return Err(Refusal::inconsistent(
            "BR-CO-10",
            &format!(
                "the lines sum to {}, the document says {}",
                p.amount(line_sum),
                p.amount(p.line_net)
            ),
        ));
    }
    if p.breakdown.is_empty() {
        return Err(Refusal::inconsistent(
            "BR-CO-18",
            "there is no VAT breakdown",
        ));
    }
    let vat_sum: i64 = p.breakdown.iter().map(|b| b.tax).sum();
    if vat_sum != p.vat {
        return Err(Refusal::inconsistent(
            "BR-CO-14",
            &format!(
                "the VAT breakdown sums to {}, the VAT total is {}",
                p.amount(vat_sum),
                p.amount(p.vat)
            ),
        ));
    }
    if p.with_vat != p.line_net + p.vat {
        return Err(Refusal::inconsistent(
            "BR-CO-15",
            "the total with VAT is not the net total plus the VAT",
        ));
    }
    if p.payable != p.with_vat - p.prepaid - p.withheld {
        return Err(Refusal::inconsistent(
            "BR-CO-16",
            "the amount due is not the total less what was paid and withheld",
        ));
    }
    let mut by_category: BTreeMap<(VatCategory, Decimal), i64> = BTreeMap::new();
    for l in &p.lines {
        *by_category.entry((l.category, l.rate)).or_default() += l.net;
    }
    for b in &p.breakdown {
        let lines = by_category.remove(&(b.category, b.rate)).unwrap_or(0);
        if lines != b.taxable {
            return Err(Refusal::inconsistent(
                category_rule(b.category),
                &format!(
                    "the lines of category {} at {}% sum to {}, the breakdown says {}",
                    b.category,
                    b.rate,
                    p.amount(lines),
                    p.amount(b.taxable)
                ),
            ));
        }
    }
    if let Some(((category, rate), _)) = by_category.into_iter().next() {
        return Err(Refusal::inconsistent(
            category_rule(category),
            &format!("lines of category {category} at {rate}% have no VAT breakdown entry"),
        ));
    }
    Ok(())
}
