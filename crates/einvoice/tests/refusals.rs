//! What the writer refuses (each rule, with the field to set), the format names, and what
//! the documents say about the cases the mapping decides (credit notes, BT-111, IRPF).

mod common;

use document::{ElectronicAddress, Invoice, VatCategory};
use einvoice::{Format, xml};

fn case(name: &str) -> Invoice {
    common::cases()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, d)| d)
        .expect("a known case")
}

fn refused(doc: &Invoice, format: Format) -> einvoice::Refusal {
    match xml(doc, format) {
        Ok(_) => panic!("{format} was written, a refusal was expected"),
        Err(r) => r,
    }
}

fn assert_refused(doc: &Invoice, format: Format, rule: &str, field: &str) {
    let r = refused(doc, format);
    assert_eq!(r.rule, rule, "{format}: {r}");
    assert!(r.field.contains(field), "{format}: {r} should name {field}");
    assert!(r.to_string().starts_with(rule), "{r}");
}

#[test]
fn format_names_parse_and_an_unknown_one_lists_all_seven() {
    for f in Format::ALL {
        assert_eq!(f.name().parse::<Format>(), Ok(f));
    }
    let err = "zugferd".parse::<Format>().unwrap_err().to_string();
    for name in [
        "ubl",
        "cii",
        "xrechnung-ubl",
        "xrechnung-cii",
        "peppol",
        "facturx",
        "facturae",
    ] {
        assert!(err.contains(name), "{err}");
    }
    assert!(err.contains("zugferd"), "{err}");
}

#[test]
fn xrechnung_refuses_each_missing_field_by_its_rule() {
    for format in [Format::XrechnungUbl, Format::XrechnungCii] {
        let mut d = case("german-leitweg");
        assert!(xml(&d, format).is_ok());
        d.buyer_reference = None;
        assert_refused(&d, format, "BR-DE-15", "buyer_reference");

        let mut d = case("german-leitweg");
        d.seller.electronic_address = None;
        assert_refused(&d, format, "PEPPOL-EN16931-R020", "electronicAddress");

        let mut d = case("german-leitweg");
        d.buyer.electronic_address = None;
        assert_refused(&d, format, "PEPPOL-EN16931-R010", "einvoice.endpoint");

        let mut d = case("german-leitweg");
        d.seller.contact.name = None;
        assert_refused(&d, format, "BR-DE-5", "contactName");
        let mut d = case("german-leitweg");
        d.seller.contact.phone = Some(" ".into());
        assert_refused(&d, format, "BR-DE-6", "phone");
        let mut d = case("german-leitweg");
        d.seller.contact.email = None;
        assert_refused(&d, format, "BR-DE-7", "email");

        let mut d = case("german-leitweg");
        d.buyer.address.city = None;
        assert_refused(&d, format, "BR-DE-8", "address.city");
        let mut d = case("german-leitweg");
        d.buyer.address.zipcode = None;
        assert_refused(&d, format, "BR-DE-9", "address.zipcode");
    }
}

#[test]
fn peppol_refuses_missing_endpoints_and_references() {
    let mut d = case("domestic-multirate");
    d.seller.electronic_address = None;
    assert_refused(
        &d,
        Format::Peppol,
        "PEPPOL-EN16931-R020",
        "electronicAddress",
    );

    let mut d = case("domestic-multirate");
    d.buyer.electronic_address = None;
    assert_refused(
        &d,
        Format::Peppol,
        "PEPPOL-EN16931-R010",
        "einvoice.endpoint",
    );

    let mut d = case("domestic-multirate");
    d.buyer.electronic_address = Some(ElectronicAddress {
        scheme: "EM".into(),
        id: "ap@buyer.example".into(),
    });
    assert_refused(
        &d,
        Format::Peppol,
        "PEPPOL-EN16931-CL008",
        "einvoice.endpoint",
    );

    let mut d = case("domestic-multirate");
    d.buyer_reference = None;
    d.order_reference = None;
    assert_refused(
        &d,
        Format::Peppol,
        "PEPPOL-EN16931-R003",
        "`buyer_reference` or `order_reference`",
    );
    // An order reference alone is enough for Peppol; UBL needs neither.
    d.order_reference = Some("PO-1".into());
    assert!(xml(&d, Format::Peppol).is_ok());
    d.order_reference = None;
    d.buyer.electronic_address = None;
    assert!(xml(&d, Format::Ubl).is_ok());
}

#[test]
fn vat_categories_refuse_missing_vat_identifiers() {
    for format in [Format::Ubl, Format::Cii, Format::Peppol] {
        let mut d = case("reverse-charge");
        d.seller.vat_id = None;
        assert_refused(&d, format, "BR-AE-02", "viesVatId");

        let mut d = case("reverse-charge");
        d.buyer.vat_id = None;
        d.buyer.tax_id = None;
        assert_refused(&d, format, "BR-AE-02", "vies_vat_id");

        let mut d = case("intra-eu-goods");
        d.buyer.vat_id = None;
        assert_refused(&d, format, "BR-IC-02", "vies_vat_id");

        let mut d = case("export");
        d.seller.vat_id = None;
        assert_refused(&d, format, "BR-G-02", "viesVatId");

        let mut d = case("domestic-multirate");
        d.seller.vat_id = None;
        d.seller.tax_id = None;
        assert_refused(&d, format, "BR-CO-26", "fiscalId");
    }
}

#[test]
fn outside_scope_lines_cannot_mix_with_other_categories() {
    let mut d = case("outside-scope");
    let mut extra = d.vat_breakdown[0].clone();
    extra.category = VatCategory::S;
    d.vat_breakdown.push(extra);
    assert_refused(&d, Format::Ubl, "BR-O-11", "tax_category");
}

#[test]
fn inconsistent_sums_are_refused_by_their_rule() {
    let mut d = case("domestic-multirate");
    d.totals.line_net += 1;
    assert_refused(&d, Format::Ubl, "BR-CO-10", "lines");

    let mut d = case("domestic-multirate");
    d.vat_breakdown[0].tax_amount += 1;
    assert_refused(&d, Format::Cii, "BR-CO-14", "lines");

    let mut d = case("domestic-multirate");
    d.vat_breakdown[0].taxable_amount += 1;
    d.vat_breakdown[1].taxable_amount -= 1;
    assert_refused(&d, Format::Ubl, "BR-S-08", "lines");

    let mut d = case("withholding-prepaid");
    d.totals.payable += 1;
    assert_refused(&d, Format::Ubl, "BR-CO-16", "lines");

    let mut d = case("domestic-multirate");
    d.lines[0].vat = None;
    assert_refused(&d, Format::Ubl, "BR-CO-04", "lines");
}

#[test]
fn currencies_with_three_decimals_are_refused() {
    let mut d = case("domestic-multirate");
    d.currency.code = "KWD".into();
    d.currency.minor_digits = 3;
    assert_refused(&d, Format::Ubl, "BR-DEC-09", "currency");
}

#[test]
fn facturae_refuses_parties_it_cannot_name() {
    let d = case("minimal");
    assert_refused(
        &d,
        Format::Facturae,
        "FACTURAE-TaxIdentificationNumber",
        "fiscal_id",
    );

    let mut d = case("domestic-multirate");
    d.buyer.address.zipcode = Some("2800".into());
    assert_refused(&d, Format::Facturae, "FACTURAE-PostCode", "address.zipcode");

    let mut d = case("domestic-multirate");
    d.buyer.address.lines.clear();
    assert_refused(&d, Format::Facturae, "FACTURAE-Address", "address.lines");

    let mut d = case("domestic-multirate");
    d.number = "F2026-0000000000000001".into();
    assert_refused(
        &d,
        Format::Facturae,
        "FACTURAE-InvoiceNumber",
        "invoiceReferenceFormat",
    );
}

#[test]
fn a_reversal_is_a_credit_note_with_positive_amounts_naming_the_corrected_invoice() {
    let d = case("credit-note");
    assert!(d.totals.with_vat < 0);
    let ubl = xml(&d, Format::Ubl).unwrap();
    assert!(ubl.contains("<CreditNote xmlns="), "{ubl}");
    assert!(ubl.contains("<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>"));
    assert!(ubl.contains(
        "<cac:InvoiceDocumentReference>\n      <cbc:ID>F2026-00001</cbc:ID>\n      <cbc:IssueDate>2026-03-02</cbc:IssueDate>"
    ), "{ubl}");
    let payable = format!("{:.2}", -d.totals.payable as f64 / 100.0);
    assert!(
        ubl.contains(&format!(
            "<cbc:PayableAmount currencyID=\"EUR\">{payable}</cbc:PayableAmount>"
        )),
        "{ubl}"
    );
    assert!(
        !ubl.contains(">-"),
        "no negative amount in a credit note: {ubl}"
    );

    let cii = xml(&d, Format::Cii).unwrap();
    assert!(cii.contains("<ram:TypeCode>381</ram:TypeCode>"));
    assert!(cii.contains("<ram:IssuerAssignedID>F2026-00001</ram:IssuerAssignedID>"));
    assert!(!cii.contains(">-"), "{cii}");

    // Facturae keeps the signs and names the corrected invoice.
    let fe = xml(&d, Format::Facturae).unwrap();
    assert!(fe.contains("<InvoiceClass>OR</InvoiceClass>"), "{fe}");
    assert!(fe.contains("<InvoiceTotal>-"), "{fe}");
}

#[test]
fn a_corrective_that_charges_more_is_a_corrected_invoice_and_in_peppol_an_invoice() {
    let d = case("corrected-invoice");
    assert!(
        xml(&d, Format::Ubl)
            .unwrap()
            .contains("<cbc:InvoiceTypeCode>384<")
    );
    assert!(
        xml(&d, Format::XrechnungCii)
            .unwrap()
            .contains("<ram:TypeCode>384<")
    );
    let peppol = xml(&d, Format::Peppol).unwrap();
    assert!(peppol.contains("<cbc:InvoiceTypeCode>380<"), "{peppol}");
    assert!(peppol.contains("<cac:BillingReference>"), "{peppol}");
}

#[test]
fn specification_identifiers_follow_the_format() {
    let d = case("german-leitweg");
    let id = |f: Format| {
        let x = xml(&d, f).unwrap();
        let start = x
            .find("<cbc:CustomizationID>")
            .map(|i| i + "<cbc:CustomizationID>".len())
            .or_else(|| {
                x.find("<ram:GuidelineSpecifiedDocumentContextParameter>")
                    .and_then(|i| x[i..].find("<ram:ID>").map(|j| i + j + "<ram:ID>".len()))
            })
            .unwrap();
        x[start..start + x[start..].find('<').unwrap()].to_owned()
    };
    assert_eq!(id(Format::Ubl), "urn:cen.eu:en16931:2017");
    assert_eq!(id(Format::Cii), "urn:cen.eu:en16931:2017");
    assert_eq!(id(Format::Facturx), "urn:cen.eu:en16931:2017");
    assert_eq!(
        id(Format::XrechnungUbl),
        "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
    );
    assert_eq!(id(Format::XrechnungCii), id(Format::XrechnungUbl));
    assert_eq!(
        id(Format::Peppol),
        "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
    );
    assert_eq!(xml(&d, Format::Facturx), xml(&d, Format::Cii));
}

#[test]
fn foreign_currency_states_the_vat_in_the_accounting_currency() {
    let d = case("foreign-currency");
    let acc = d.accounting.clone().unwrap();
    let bt111 = format!("{:.2}", acc.vat_total as f64 / 100.0);
    let ubl = xml(&d, Format::Ubl).unwrap();
    assert!(ubl.contains("<cbc:DocumentCurrencyCode>USD<"));
    assert!(ubl.contains("<cbc:TaxCurrencyCode>EUR<"));
    assert!(
        ubl.contains(&format!(
            "<cbc:TaxAmount currencyID=\"EUR\">{bt111}</cbc:TaxAmount>"
        )),
        "{ubl}"
    );
    let cii = xml(&d, Format::Cii).unwrap();
    assert!(cii.contains(&format!(
        "<ram:TaxTotalAmount currencyID=\"EUR\">{bt111}</ram:TaxTotalAmount>"
    )));
}

#[test]
fn irpf_is_withheld_in_facturae_and_counted_as_paid_elsewhere() {
    let d = case("withholding-prepaid");
    // 1700.00 net, 357.00 VAT, 255.00 withheld, 100.00 paid before issue.
    assert_eq!(
        (
            d.totals.line_net,
            d.totals.vat,
            d.totals.withholding,
            d.totals.prepaid
        ),
        (170_000, 35_700, -25_500, 10_000)
    );
    let fe = xml(&d, Format::Facturae).unwrap();
    assert!(fe.contains("<TaxesWithheld>"), "{fe}");
    assert!(fe.contains("<TaxTypeCode>04</TaxTypeCode>"), "{fe}");
    assert!(
        fe.contains("<TotalTaxesWithheld>255.00</TotalTaxesWithheld>"),
        "{fe}"
    );
    assert!(fe.contains("<InvoiceTotal>1802.00</InvoiceTotal>"), "{fe}");
    assert!(
        fe.contains("<TotalExecutableAmount>1702.00</TotalExecutableAmount>"),
        "{fe}"
    );

    let ubl = xml(&d, Format::Ubl).unwrap();
    assert!(ubl.contains("<cbc:TaxInclusiveAmount currencyID=\"EUR\">2057.00<"));
    assert!(
        ubl.contains("<cbc:PrepaidAmount currencyID=\"EUR\">355.00<"),
        "{ubl}"
    );
    assert!(ubl.contains("<cbc:PayableAmount currencyID=\"EUR\">1702.00<"));
    assert!(ubl.contains("Retención IRPF 15%"), "{ubl}");
}

#[test]
fn markup_in_names_and_notes_is_escaped() {
    let d = case("domestic-multirate");
    for f in Format::ALL {
        let x = xml(&d, f).unwrap();
        assert!(x.contains("Cliente &amp; Hijos &lt;S.A.&gt;"), "{f}");
        assert!(!x.contains("<S.A.>"), "{f}");
    }
}
