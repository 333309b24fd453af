//! Every format for every kind of invoice, validated by the official rules (the offline kit
//! in ../shared/einvoice: CEN EN 16931, XRechnung, Peppol BIS 3, Factur-X XSD, Facturae XSD).

mod common;

use einvoice::{Format, xml};

/// The cases a format cannot represent, with the rule its refusal names.
fn expected_refusal(case: &str, format: Format) -> Option<&'static str> {
    match (case, format) {
        ("minimal", Format::XrechnungUbl | Format::XrechnungCii) => Some("BR-DE-15"),
        ("minimal", Format::Peppol) => Some("PEPPOL-EN16931-R020"),
        ("minimal", Format::Facturae) => Some("FACTURAE-TaxIdentificationNumber"),
        _ => None,
    }
}

/// Writes every case in `format`, checks the refusals, and validates the rest in one call.
fn every_case_validates(format: Format, profile: &str) {
    let dir = common::scratch(format.name());
    let mut files = Vec::new();
    for (name, doc) in common::cases() {
        match (xml(&doc, format), expected_refusal(name, format)) {
            (Ok(text), None) => {
                let path = dir.join(format!("{name}.xml"));
                std::fs::write(&path, text).expect("written");
                files.push(path);
            }
            (Err(refusal), Some(rule)) => assert_eq!(refusal.rule, rule, "{name}: {refusal}"),
            (Ok(_), Some(rule)) => panic!("{name} in {format}: expected a refusal naming {rule}"),
            (Err(refusal), None) => panic!("{name} in {format}: refused: {refusal}"),
        }
    }
    assert!(files.len() >= 12, "{format}: {} files", files.len());
    let Some((ok, report)) = common::validate(profile, &files) else {
        return;
    };
    assert!(ok, "{format} ({profile}) has fatal findings:\n{report}");
    for f in &files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        assert!(
            report.contains(&format!("{name}: 0 fatal")),
            "{format}: no clean summary for {name}:\n{report}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ubl_validates_against_en16931() {
    every_case_validates(Format::Ubl, "en16931");
}

#[test]
fn cii_validates_against_en16931() {
    every_case_validates(Format::Cii, "en16931");
}

#[test]
fn xrechnung_ubl_validates_against_xrechnung() {
    every_case_validates(Format::XrechnungUbl, "xrechnung");
}

#[test]
fn xrechnung_cii_validates_against_xrechnung() {
    every_case_validates(Format::XrechnungCii, "xrechnung");
}

#[test]
fn peppol_validates_against_peppol_bis() {
    every_case_validates(Format::Peppol, "peppol");
}

#[test]
fn facturx_validates_against_facturx_en16931() {
    every_case_validates(Format::Facturx, "facturx");
}

#[test]
fn facturae_validates_against_its_schema() {
    every_case_validates(Format::Facturae, "facturae");
}
