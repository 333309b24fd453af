use chrono::{TimeZone, Utc};
use rust_decimal::Decimal;

use crate::build::{BuildError, Issue, build, unit_code};
use crate::model::*;
use crate::stored;

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

fn party(id: &str, country: &str, vat_id: Option<&str>) -> Party {
    Party {
        id: id.into(),
        name: format!("{id} Ltd"),
        trading_name: None,
        legal_form: format!("{country}:SL"),
        country: country.into(),
        is_business: true,
        vat_id: vat_id.map(str::to_owned),
        tax_id: Some("B12345678".into()),
        address: Address {
            lines: vec!["Calle Mayor 1".into()],
            city: Some("Madrid".into()),
            zipcode: Some("28001".into()),
            state: None,
            country: country.into(),
        },
        contact: Contact::default(),
        electronic_address: None,
        settings: None,
    }
}

fn taxed(concept: &str, subtotal: i64, rate: &str, treatment: &str) -> domain::invoice::Line {
    let amount = domain::money::percent_of(subtotal, dec(rate)).unwrap();
    domain::invoice::Line {
        concept: concept.into(),
        quantity: Decimal::ONE,
        quantity_unit: Some("h".into()),
        unit_price: subtotal,
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

fn plain(concept: &str, subtotal: i64, is_tax: bool) -> domain::invoice::Line {
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

fn issue(lines: Vec<domain::invoice::Line>) -> Issue {
    Issue {
        id: "inv-1".into(),
        kind: InvoiceKind::Ordinary,
        number: "F2026-0001".into(),
        yearly_number: 1,
        year: 2026,
        issued_at: Utc.with_ymd_and_hms(2026, 3, 30, 23, 30, 0).unwrap(),
        currency: "EUR".into(),
        minor_digits: 2,
        accounting_currency: None,
        lines,
        supply_type: SupplyType::Services,
        treatment: Some("domestic".into()),
        due_date: None,
        payment_terms_days: Some(30),
        buyer_reference: None,
        order_reference: None,
        notes: None,
        delivery: Delivery::default(),
        prepaid: 0,
        bank_accounts: Vec::new(),
        exchange_rates: Vec::new(),
        preceding: None,
        presentation: Presentation {
            language: "en".into(),
            ..Presentation::default()
        },
    }
}

#[test]
fn builds_a_domestic_invoice_with_its_breakdown_totals_and_due_date() {
    let doc = build(
        issue(vec![
            taxed("Consulting", 10_000, "21", "domestic"),
            taxed("Support", 5_000, "21", "domestic"),
        ]),
        party("seller", "ES", Some("ESB12345678")),
        party("buyer", "ES", Some("ESB87654321")),
    )
    .unwrap();
    assert_eq!(doc.vat_breakdown.len(), 1);
    let b = &doc.vat_breakdown[0];
    assert_eq!(
        (b.category, b.taxable_amount, b.tax_amount),
        (VatCategory::S, 15_000, 3_150)
    );
    assert_eq!(b.exemption_code, None);
    assert_eq!(doc.totals.line_net, 15_000);
    assert_eq!(doc.totals.vat, 3_150);
    assert_eq!(doc.totals.with_vat, 18_150);
    assert_eq!(doc.totals.payable, 18_150);
    assert_eq!(doc.due_date, Some("2026-04-29".parse().unwrap()));
    assert_eq!(doc.lines[0].unit_code, "HUR");
    assert_eq!(doc.type_code(), "380");
    assert_eq!(doc.payment.remittance, "F2026-0001");
}

#[test]
fn maps_every_treatment_to_its_category_and_exemption() {
    let cases = [
        ("domestic", "21", VatCategory::S, None),
        ("domestic", "0", VatCategory::Z, None),
        ("intra_eu_b2c", "21", VatCategory::S, None),
        ("outside_eu_b2c", "21", VatCategory::S, None),
        ("reverse_charge", "0", VatCategory::AE, Some("VATEX-EU-AE")),
        ("intra_eu_exempt", "0", VatCategory::K, Some("VATEX-EU-IC")),
        ("export_exempt", "0", VatCategory::G, Some("VATEX-EU-G")),
        ("not_subject", "0", VatCategory::O, Some("VATEX-EU-O")),
    ];
    for (treatment, rate, category, code) in cases {
        let doc = build(
            issue(vec![taxed("x", 10_000, rate, treatment)]),
            party("seller", "ES", Some("ESB12345678")),
            party("buyer", "DE", Some("DE123456789")),
        )
        .unwrap();
        let b = &doc.vat_breakdown[0];
        assert_eq!(b.category, category, "{treatment}");
        assert_eq!(b.exemption_code.as_deref(), code, "{treatment}");
        assert_eq!(
            b.exemption_reason.is_some(),
            code.is_some(),
            "{treatment}: a reason exactly where no VAT is charged"
        );
        assert_eq!(doc.lines[0].vat.as_ref().unwrap().category, category);
    }
}

#[test]
fn explicit_tax_lines_tax_the_lines_before_them() {
    let doc = build(
        issue(vec![
            plain("Goods A", 10_000, false),
            plain("VAT 21%", 2_100, true),
            plain("Books", 5_000, false),
            plain("VAT 4%", 200, true),
            plain("Deposit", 1_000, false),
        ]),
        party("seller", "ES", Some("ESB12345678")),
        party("buyer", "ES", Some("ESB87654321")),
    )
    .unwrap();
    let rates: Vec<(VatCategory, String, i64, i64)> = doc
        .vat_breakdown
        .iter()
        .map(|b| {
            (
                b.category,
                b.rate.to_string(),
                b.taxable_amount,
                b.tax_amount,
            )
        })
        .collect();
    assert_eq!(
        rates,
        vec![
            (VatCategory::S, "4".into(), 5_000, 200),
            (VatCategory::S, "21".into(), 10_000, 2_100),
            (VatCategory::Z, "0".into(), 1_000, 0),
        ]
    );
    assert_eq!(doc.totals.vat, 2_300);
    assert_eq!(doc.totals.line_net, 16_000);
    assert!(doc.lines[1].vat.is_none() || doc.lines[1].is_tax);
}

#[test]
fn refuses_what_the_law_requires_and_names_each_item() {
    let mut buyer = party("buyer", "DE", None);
    buyer.address.city = None;
    buyer.address.zipcode = Some(" ".into());
    let err = build(
        issue(vec![taxed("x", 10_000, "0", "reverse_charge")]),
        party("seller", "ES", Some("ESB12345678")),
        buyer,
    )
    .unwrap_err();
    let BuildError::Incomplete(missing) = &err else {
        panic!("{err}")
    };
    let whats: Vec<&str> = missing.iter().map(|m| m.what.as_str()).collect();
    assert_eq!(
        whats,
        vec![
            "the recipient's city",
            "the recipient's post code",
            "the recipient's VAT id (a reverse-charge or exempt supply must name it)",
        ]
    );
    assert!(
        err.to_string()
            .contains("PATCH /v1/entities/buyer `address.city`")
    );
}

#[test]
fn consumers_need_no_address_and_countries_without_postcodes_need_none() {
    let mut consumer = party("buyer", "ES", None);
    consumer.is_business = false;
    consumer.address = Address {
        country: "ES".into(),
        ..Address::default()
    };
    assert!(
        build(
            issue(vec![taxed("x", 100, "21", "domestic")]),
            party("seller", "ES", Some("ESB12345678")),
            consumer
        )
        .is_ok()
    );
    let mut hk = party("buyer", "HK", None);
    hk.address.zipcode = None;
    hk.address.country = "HK".into();
    assert!(
        build(
            issue(vec![taxed("x", 100, "0", "not_subject")]),
            party("seller", "ES", Some("ESB12345678")),
            hk
        )
        .is_ok()
    );
}

#[test]
fn the_vat_total_in_the_accounting_currency_uses_the_frozen_rate() {
    let mut i = issue(vec![taxed("x", 10_000, "21", "domestic")]);
    i.currency = "USD".into();
    i.accounting_currency = Some(("EUR".into(), 2));
    i.exchange_rates = vec![ExchangeRate {
        from: "USD".into(),
        to: "EUR".into(),
        rate: dec("0.9123"),
        date: None,
        source: Some("ecb".into()),
    }];
    let doc = build(
        i,
        party("seller", "ES", Some("ESB12345678")),
        party("buyer", "ES", Some("ESB87654321")),
    )
    .unwrap();
    let acc = doc.accounting.unwrap();
    assert_eq!(acc.currency.code, "EUR");
    // 21.00 USD × 0.9123 = 19.1583 EUR -> 19.16
    assert_eq!(acc.vat_total, 1_916);
}

#[test]
fn prepaid_amounts_reduce_what_is_payable() {
    let mut i = issue(vec![taxed("x", 10_000, "21", "domestic")]);
    i.prepaid = 2_100;
    let doc = build(
        i,
        party("seller", "ES", Some("ESB12345678")),
        party("buyer", "ES", Some("ESB87654321")),
    )
    .unwrap();
    assert_eq!(doc.totals.payable, 10_000);
}

#[test]
fn stored_documents_round_trip_and_bad_ones_are_errors() {
    let doc = build(
        issue(vec![taxed("x", 10_000, "21", "domestic")]),
        party("seller", "ES", Some("ESB12345678")),
        party("buyer", "ES", Some("ESB87654321")),
    )
    .unwrap();
    let text = stored::encode(&doc).unwrap();
    assert!(text.starts_with("{\"version\":\"1\""), "{text}");
    assert!(
        !text.contains("F2026-0001"),
        "the number lives in the row: {text}"
    );
    assert_eq!(stored::decode(&text, doc.frame()).unwrap(), doc);
    // The same document with its keys in another order (the tag no longer first) is
    // read the general way, to the same value.
    let reordered =
        serde_json::to_string(&serde_json::from_str::<serde_json::Value>(&text).unwrap()).unwrap();
    assert!(!reordered.starts_with("{\"version\""), "{reordered}");
    assert_eq!(stored::decode(&reordered, doc.frame()).unwrap(), doc);
    // An unknown field is an error either way.
    let extra = text.replacen(
        "{\"version\":\"1\",",
        "{\"version\":\"1\",\"surprise\":1,",
        1,
    );
    assert_ne!(extra, text);
    assert!(stored::decode(&extra, doc.frame()).is_err());
    assert!(
        stored::decode(
            &extra.replacen("\"surprise\":1,", "", 1).replacen(
                "\"version\":\"1\"",
                "\"version\":\"2\"",
                1
            ),
            doc.frame()
        )
        .is_err()
    );
    assert!(stored::decode("{}", doc.frame()).is_err());
    assert!(stored::decode("{\"version\":\"2\"}", doc.frame()).is_err());
    let truncated = &text[..text.len() - 10];
    assert!(stored::decode(truncated, doc.frame()).is_err());
}

#[test]
fn unit_labels_map_to_recommendation_20() {
    assert_eq!(unit_code(Some("h")), "HUR");
    assert_eq!(unit_code(Some("Horas")), "HUR");
    assert_eq!(unit_code(Some("kg")), "KGM");
    assert_eq!(unit_code(Some("licences")), "C62");
    assert_eq!(unit_code(None), "C62");
}
