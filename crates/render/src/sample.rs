//! A small invoice that company snippets are checked against before they are saved.

use std::collections::BTreeMap;

use chrono::NaiveDate;

use crate::model::*;

/// The sample's date, checked when the crate is built rather than when it runs.
const DATE: NaiveDate = match NaiveDate::from_ymd_opt(2026, 1, 2) {
    Some(date) => date,
    None => panic!("2026-01-02 is a date"),
};

/// What snippets are checked with as the sample's Factur-X attachment: its content does
/// not matter to the check, only that the sample is a PDF/A-3b with a file attached.
pub const FACTURX_XML: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
    <rsm:CrossIndustryInvoice xmlns:rsm=\"urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100\"/>\n";

/// A one-line issued invoice, in English, with no snippets.
pub fn document() -> InvoiceDocument {
    let date = DATE;
    let party = |name: &str| Party {
        name: name.to_owned(),
        fiscal_id: Some("B12345678".into()),
        vat_id: None,
        address_lines: vec!["Calle Mayor 1".into()],
        zipcode: "28001".into(),
        city: "Madrid".into(),
        state: None,
        country: "ES".into(),
    };
    InvoiceDocument {
        kind: DocumentKind::Invoice,
        status: DocumentStatus::Issued,
        language: "en".into(),
        reference: Some("SNIPPET-CHECK".into()),
        issue_date: date,
        due_date: None,
        issuer: party("Issuer"),
        recipient: party("Recipient"),
        lines: vec![Line {
            concept: "Service".into(),
            quantity: "1".into(),
            unit: None,
            unit_price_minor: 10_000,
            subtotal_minor: 10_000,
            taxes: vec![LineTax {
                kind: TaxKind::Vat,
                rate: "21".into(),
                base_minor: 10_000,
                amount_minor: 2_100,
                treatment: "domestic".into(),
            }],
        }],
        tax_breakdown: vec![TaxBreakdownEntry {
            rate: "21".into(),
            treatment: "domestic".into(),
            base_minor: 10_000,
            amount_minor: 2_100,
            legal_mention: None,
        }],
        withholding: Vec::new(),
        totals: Totals {
            net_minor: 10_000,
            tax_minor: 2_100,
            withholding_minor: 0,
            total_minor: 12_100,
        },
        currency: Currency {
            code: "EUR".into(),
            minor_digits: 2,
        },
        exchange_rates: Vec::new(),
        bank_accounts: Vec::new(),
        corrective: None,
        placeholders: BTreeMap::new(),
        footer_typst: None,
        post_typst: None,
        qr: None,
        notes: None,
        legal: Default::default(),
        facturx: None,
    }
}
