//! Sample invoice documents for tests and benchmarks (feature `samples`): parties of
//! several countries, lines taxed the way the tax engine taxes them, and an [`Issue`] with
//! every field a German or Spanish B2B invoice carries, built by [`build`] exactly as the
//! service builds a document at issue.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use chrono::{NaiveDate, TimeZone, Utc};
use rust_decimal::Decimal;

use crate::build::{Issue, build};
use crate::*;

pub fn dec(s: &str) -> Decimal {
    s.parse().expect("a decimal")
}

pub fn date(s: &str) -> NaiveDate {
    s.parse().expect("a date")
}

/// A business party in `country`.
pub fn party(id: &str, name: &str, country: &str, vat_id: Option<&str>, tax_id: &str) -> Party {
    let (street, city, zip) = match country {
        "ES" => ("Calle Mayor 1", "Madrid", "28001"),
        "DE" => ("Hauptstraße 5", "Berlin", "10115"),
        "FR" => ("1 rue de Rivoli", "Paris", "75001"),
        "US" => ("500 Main Street", "Springfield", "62701"),
        _ => ("1 Road", "Town", "1000"),
    };
    Party {
        id: id.into(),
        name: name.into(),
        trading_name: None,
        legal_form: format!("{country}:SL"),
        country: country.into(),
        is_business: true,
        vat_id: vat_id.map(str::to_owned),
        tax_id: Some(tax_id.into()),
        address: Address {
            lines: vec![street.into()],
            city: Some(city.into()),
            zipcode: Some(zip.into()),
            state: None,
            country: country.into(),
        },
        contact: Contact {
            name: None,
            phone: None,
            email: Some(format!("billing@{id}.example")),
        },
        electronic_address: None,
        settings: None,
    }
}

pub fn spanish_seller() -> Party {
    let mut p = party(
        "company-1",
        "Acme Servicios S.L.",
        "ES",
        Some("ESB12345674"),
        "B12345674",
    );
    p.contact = Contact {
        name: Some("Ana García".into()),
        phone: Some("+34 910 000 000".into()),
        email: Some("facturas@acme.example".into()),
    };
    p.electronic_address = Some(ElectronicAddress {
        scheme: "9920".into(),
        id: "ESB12345674".into(),
    });
    p
}

pub fn german_seller() -> Party {
    let mut p = party(
        "company-2",
        "Beispiel GmbH",
        "DE",
        Some("DE123456789"),
        "201/113/40209",
    );
    p.contact = Contact {
        name: Some("Max Muster".into()),
        phone: Some("+49 30 1234567".into()),
        email: Some("rechnung@beispiel.example".into()),
    };
    p.electronic_address = Some(ElectronicAddress {
        scheme: "9930".into(),
        id: "DE123456789".into(),
    });
    p
}

/// A buyer with an electronic address (Peppol / XRechnung ready).
pub fn buyer(country: &str, vat_id: Option<&str>, tax_id: &str) -> Party {
    let mut p = party(
        "entity-1",
        "Cliente & Hijos <S.A.>",
        country,
        vat_id,
        tax_id,
    );
    p.electronic_address = Some(match vat_id {
        Some(v) => ElectronicAddress {
            scheme: match country {
                "ES" => "9920",
                "DE" => "9930",
                "FR" => "9957",
                _ => "EM",
            }
            .into(),
            id: v.into(),
        },
        None => ElectronicAddress {
            scheme: "EM".into(),
            id: "ap@buyer.example".into(),
        },
    });
    p
}

/// A line taxed by the engine with `treatment` at `rate`.
pub fn taxed(
    concept: &str,
    quantity: &str,
    unit_price: i64,
    rate: &str,
    treatment: &str,
) -> domain::invoice::Line {
    let quantity = dec(quantity);
    let subtotal = domain::money::line_subtotal(quantity, unit_price).expect("subtotal");
    let amount = domain::money::percent_of(subtotal, dec(rate)).expect("vat");
    domain::invoice::Line {
        concept: concept.into(),
        quantity,
        quantity_unit: Some("h".into()),
        unit_price,
        unit_unit: None,
        is_tax: false,
        tax_amount: Some(amount),
        subtotal,
        tax_lines: vec![domain::invoice::LineTax {
            kind: "vat".into(),
            rate: dec(rate),
            base: subtotal,
            amount,
            treatment: treatment.into(),
        }],
    }
}

/// A domestic 21% line with a 15% IRPF withholding.
pub fn withheld(concept: &str, unit_price: i64) -> domain::invoice::Line {
    let mut l = taxed(concept, "1", unit_price, "21", "domestic");
    let w = domain::money::percent_of(unit_price, dec("-15")).expect("withholding");
    l.tax_lines.push(domain::invoice::LineTax {
        kind: "withholding".into(),
        rate: dec("-15"),
        base: unit_price,
        amount: w,
        treatment: "domestic".into(),
    });
    l.tax_amount = l.tax_amount.map(|a| a + w);
    l
}

/// A line or explicit tax line as given, without computed taxes.
pub fn plain(concept: &str, subtotal: i64, is_tax: bool) -> domain::invoice::Line {
    domain::invoice::Line {
        concept: concept.into(),
        quantity: Decimal::ONE,
        quantity_unit: None,
        unit_price: subtotal,
        unit_unit: None,
        is_tax,
        tax_amount: is_tax.then_some(subtotal),
        subtotal,
        tax_lines: Vec::new(),
    }
}

pub fn issue(number: &str, lines: Vec<domain::invoice::Line>) -> Issue {
    Issue {
        id: format!("inv-{number}"),
        kind: InvoiceKind::Ordinary,
        number: number.into(),
        yearly_number: 1,
        year: 2026,
        issued_at: Utc
            .with_ymd_and_hms(2026, 3, 30, 10, 0, 0)
            .single()
            .expect("a time"),
        currency: "EUR".into(),
        minor_digits: 2,
        accounting_currency: Some(("EUR".into(), 2)),
        lines,
        supply_type: SupplyType::Services,
        treatment: Some("domestic".into()),
        due_date: None,
        payment_terms_days: Some(30),
        buyer_reference: Some("04011000-12345-03".into()),
        order_reference: None,
        notes: None,
        delivery: Delivery::default(),
        prepaid: 0,
        bank_accounts: vec![BankAccount {
            id: Some("acc-1".into()),
            name: "Main account".into(),
            bank_name: Some("Banco".into()),
            iban: Some("ES9121000418450200051332".into()),
            bic: Some("CAIXESBBXXX".into()),
            currency_code: Some("EUR".into()),
        }],
        exchange_rates: Vec::new(),
        preceding: None,
        presentation: Presentation {
            language: "en".into(),
            ..Presentation::default()
        },
    }
}

/// The document `build` makes of `issue` between `seller` and `buyer`, with what decoding
/// fills in from the row.
pub fn doc(issue: Issue, seller: Party, buyer: Party) -> Invoice {
    let mut d = build(issue, seller, buyer).expect("the document builds");
    // What decoding fills in from the row.
    d.payment.remittance.clone_from(&d.number);
    d
}

/// A Spanish domestic B2B invoice with four lines at three VAT rates and every optional
/// field set (order reference, notes, supply period, due date, contacts, a bank account):
/// valid in every e-invoice format.
pub fn domestic_multirate() -> Invoice {
    let mut i = issue(
        "F2026-00001",
        vec![
            taxed("Consulting", "10", 8_000, "21", "domestic"),
            taxed("Catering", "3", 1_550, "10", "domestic"),
            taxed("Books", "2.5", 1_999, "4", "domestic"),
            taxed("Support", "0.75", 12_000, "21", "domestic"),
        ],
    );
    i.order_reference = Some("PO-4711".into());
    i.notes = Some("Thank you for your business & <trust>.".into());
    i.delivery = Delivery {
        date: None,
        period_start: Some(date("2026-03-01")),
        period_end: Some(date("2026-03-31")),
    };
    i.due_date = Some(date("2026-04-30"));
    let mut seller = spanish_seller();
    seller.trading_name = Some("Acme".into());
    let mut b = buyer("ES", Some("ESA28017895"), "A28017895");
    b.contact.name = Some("Luis".into());
    b.contact.phone = Some("+34 600 000 000".into());
    b.address.lines.push("Planta 3".into());
    b.address.lines.push("Puerta B".into());
    b.address.state = Some("Madrid".into());
    doc(i, seller, b)
}
