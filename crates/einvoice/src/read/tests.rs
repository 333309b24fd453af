use std::{path::PathBuf, str::FromStr};

use rust_decimal::Decimal;

use super::*;
use crate::testing::{cii, facturx_pdf, ubl};

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

#[test]
fn reads_a_ubl_invoice_with_its_seller_lines_allowance_and_vat() {
    let doc = read(ubl("Invoice", "R-2026-17", "345.10").as_bytes()).unwrap();
    assert_eq!(doc.syntax, Syntax::Ubl);
    assert!(!doc.credit_note && !doc.from_pdf);
    assert_eq!(doc.number, "R-2026-17");
    assert_eq!(doc.issue_date.to_string(), "2026-10-05");
    assert_eq!(doc.currency, "EUR");
    assert_eq!(doc.note.as_deref(), Some("Thanks & regards"));
    assert_eq!(doc.seller.name, "Lieferant GmbH");
    assert_eq!(doc.seller.vat_id.as_deref(), Some("DE 123456789"));
    assert_eq!(doc.seller.country, "DE");
    assert_eq!(doc.seller.address_lines, ["Hauptstraße 5"]);
    assert_eq!(
        doc.seller.email.as_deref(),
        Some("billing@lieferant.example")
    );
    assert_eq!(doc.lines.len(), 2);
    assert_eq!(doc.lines[0].quantity, dec("2.5"));
    assert_eq!(doc.lines[0].unit_code.as_deref(), Some("HUR"));
    assert_eq!(
        doc.lines[1].unit_price,
        Some(dec("5")),
        "price per base quantity"
    );
    assert_eq!(doc.allowances[0].amount, dec("10"));
    assert_eq!(doc.vat[0].tax, dec("55.10"));
    assert_eq!(doc.totals.with_vat, dec("345.10"));
}

#[test]
fn reads_a_ubl_credit_note_and_cii_in_both_kinds() {
    let doc = read(ubl("CreditNote", "CN-4", "345.10").as_bytes()).unwrap();
    assert!(doc.credit_note);
    assert_eq!(doc.preceding.as_deref(), Some("INV-1"));
    let doc = read(cii("C-77", "380", "360.00").as_bytes()).unwrap();
    assert_eq!(doc.syntax, Syntax::Cii);
    assert!(!doc.credit_note);
    assert_eq!(doc.number, "C-77");
    assert_eq!(doc.seller.vat_id.as_deref(), Some("FR40303265045"));
    assert_eq!(doc.lines[0].net_amount, dec("300"));
    assert_eq!(doc.totals.vat, Some(dec("60")));
    let doc = read(cii("C-77", "381", "360.00").as_bytes()).unwrap();
    assert!(doc.credit_note);
    assert_eq!(doc.preceding.as_deref(), Some("C-70"));
}

#[test]
fn reads_the_xml_inside_a_factur_x_pdf() {
    let doc = read(&facturx_pdf(&cii("C-77", "380", "360.00"))).unwrap();
    assert!(doc.from_pdf);
    assert_eq!(doc.number, "C-77");
    let plain = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n";
    assert_eq!(read(plain).unwrap_err().rule, "FX-EMBED");
}

#[test]
fn wrong_sums_and_missing_fields_name_their_rule() {
    let err = read(ubl("Invoice", "R-1", "345.11").as_bytes()).unwrap_err();
    assert_eq!(err.rule, "BR-CO-15", "{err}");
    assert!(
        err.message.contains("345.11") && err.message.contains("345.10"),
        "{err}"
    );
    let err = read(ubl("Invoice", "", "345.10").as_bytes()).unwrap_err();
    assert_eq!(err.rule, "BR-02", "{err}");
    let err = read(cii("C-77", "380", "361.00").as_bytes()).unwrap_err();
    assert_eq!(err.rule, "BR-CO-15", "{err}");
    let bad_line = ubl("Invoice", "R-1", "345.10").replace(">250.00<", ">251.00<");
    assert_eq!(read(bad_line.as_bytes()).unwrap_err().rule, "BR-CO-10");
    let bad_vat = ubl("Invoice", "R-1", "345.10").replacen(">55.10<", ">55.00<", 1);
    assert_eq!(read(bad_vat.as_bytes()).unwrap_err().rule, "BR-CO-14");
    let not_a_number = ubl("Invoice", "R-1", "345.10").replace(">300.00<", ">three hundred<");
    assert_eq!(read(not_a_number.as_bytes()).unwrap_err().rule, "XSD");
}

#[test]
fn other_documents_and_dtds_are_refused_and_never_expanded() {
    let err = read(b"<Order xmlns=\"urn:x\"/>").unwrap_err();
    assert_eq!(err.rule, "SYNTAX", "{err}");
    assert_eq!(read(b"<Invoice").unwrap_err().rule, "XML");
    assert_eq!(read(b"\xff\xfe not utf-8").unwrap_err().rule, "XML");
    let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">&lol3;</Invoice>"#;
    let err = read(laughs.as_bytes()).unwrap_err();
    assert_eq!(err.rule, "XML", "{err}");
    assert!(err.message.contains("DTD"), "{err}");
    let external = r#"<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"><ID>&xxe;</ID></Invoice>"#;
    assert_eq!(read(external.as_bytes()).unwrap_err().rule, "XML");
}

/// The official examples of the validation kit, where it is checked out beside the repository.
fn kit_example(name: &str) -> Option<Vec<u8>> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/einvoice/examples")
        .join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(_) => {
            eprintln!("skipped: {} is not here", path.display());
            None
        }
    }
}

#[test]
fn reads_the_official_examples_and_refuses_the_broken_ones() {
    for (name, number) in [
        ("ubl-tc434-example1.xml", "12115118"),
        ("ubl-tc434-creditnote1.xml", "12115118"),
        ("CII_example1.xml", "1234"),
        ("facturx-en16931.pdf", "FA-2017-0010"),
    ] {
        let Some(bytes) = kit_example(name) else {
            continue;
        };
        match read(&bytes) {
            Ok(doc) => assert!(!doc.number.is_empty(), "{name}: {doc:?}"),
            Err(e) => panic!("{name} ({number}): {e}"),
        }
    }
    for (name, rule) in [
        ("ubl-tc434-example1-wrong-total.xml", "BR-CO-"),
        ("ubl-tc434-example1-no-bt1.xml", "BR-02"),
        ("plain.pdf", "FX-EMBED"),
    ] {
        let Some(bytes) = kit_example(name) else {
            continue;
        };
        let err = read(&bytes).expect_err(name);
        assert!(err.rule.starts_with(rule), "{name}: {err}");
    }
}
