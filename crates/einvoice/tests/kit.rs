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

/// A PDF/A-3b that Typst 0.15 wrote (see docs/EINVOICE.md, "The Factur-X PDF"): the
/// render crate's sandbox world compiling
///
/// ```typst
/// #set document(title: "Invoice F1", date: datetime(year: 2026, month: 3, day: 10))
/// #pdf.attach("factur-x.xml", read("/factur-x.xml", encoding: none), relationship: "data",
///   mime-type: "text/xml", description: "Factur-X invoice")
/// = Invoice F1
/// Hello world.
/// ```
///
/// with `/factur-x.xml` the `facturx` XML of the `domestic-multirate` case, exported with
/// `PdfOptions { creator: Smart::Custom(None), standards: [PdfStandard::A_3b] }`.
const TYPST_PDF: &[u8] = include_bytes!("fixtures/typst-pdfa3b-attached.pdf");

#[test]
fn a_typst_pdf_a3_with_the_factur_x_xmp_added_is_a_valid_factur_x_invoice() {
    let dir = common::scratch("facturx-pdf");
    let plain = dir.join("typst.pdf");
    std::fs::write(&plain, TYPST_PDF).expect("written");
    let patched = einvoice::facturx::add_xmp(TYPST_PDF).expect("the XMP is added");
    assert!(patched.starts_with(TYPST_PDF), "an incremental update");
    assert_eq!(einvoice::facturx::add_xmp(TYPST_PDF).unwrap(), patched);
    let fixed = dir.join("facturx.pdf");
    std::fs::write(&fixed, &patched).expect("written");
    let Some((_, report)) = common::validate("facturx", &[plain, fixed]) else {
        return;
    };
    // What Typst lacks is exactly the Factur-X XMP ...
    assert!(
        report.contains("FATAL FX-XMP") && report.contains("typst.pdf: 1 fatal"),
        "{report}"
    );
    // ... and with it the PDF passes every check of the kit.
    assert!(
        report.contains("facturx.pdf: 0 fatal, 0 warnings"),
        "{report}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
