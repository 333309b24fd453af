use std::{path::PathBuf, str::FromStr};

use rust_decimal::Decimal;

use super::*;

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

/// A UBL invoice with two lines at 19% and one allowance; `total` is BT-112 as stated.
pub(crate) fn ubl(root: &str, number: &str, total: &str) -> String {
    let (ns, line, qty) = match root {
        "CreditNote" => ("CreditNote-2", "CreditNoteLine", "CreditedQuantity"),
        _ => ("Invoice-2", "InvoiceLine", "InvoicedQuantity"),
    };
    let type_code = if root == "CreditNote" {
        "<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>"
    } else {
        "<cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>"
    };
    let id = if number.is_empty() {
        String::new()
    } else {
        format!("<cbc:ID>{number}</cbc:ID>")
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<{root} xmlns="urn:oasis:names:specification:ubl:schema:xsd:{ns}"
  xmlns:cac="urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"
  xmlns:cbc="urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2">
  {id}
  <cbc:IssueDate>2026-10-05</cbc:IssueDate>
  {type_code}
  <cbc:Note>Thanks &amp; regards</cbc:Note>
  <cbc:DocumentCurrencyCode>EUR</cbc:DocumentCurrencyCode>
  <cac:BillingReference><cac:InvoiceDocumentReference><cbc:ID>INV-1</cbc:ID></cac:InvoiceDocumentReference></cac:BillingReference>
  <cac:AccountingSupplierParty><cac:Party>
    <cac:PostalAddress>
      <cbc:StreetName>Hauptstraße 5</cbc:StreetName><cbc:CityName>Berlin</cbc:CityName>
      <cbc:PostalZone>10115</cbc:PostalZone><cac:Country><cbc:IdentificationCode>DE</cbc:IdentificationCode></cac:Country>
    </cac:PostalAddress>
    <cac:PartyTaxScheme><cbc:CompanyID>DE 123456789</cbc:CompanyID><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:PartyTaxScheme>
    <cac:PartyLegalEntity><cbc:RegistrationName>Lieferant GmbH</cbc:RegistrationName></cac:PartyLegalEntity>
    <cac:Contact><cbc:ElectronicMail>billing@lieferant.example</cbc:ElectronicMail></cac:Contact>
  </cac:Party></cac:AccountingSupplierParty>
  <cac:AllowanceCharge><cbc:ChargeIndicator>false</cbc:ChargeIndicator><cbc:AllowanceChargeReason>Discount</cbc:AllowanceChargeReason><cbc:Amount currencyID="EUR">10.00</cbc:Amount>
    <cac:TaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>19</cbc:Percent><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:AllowanceCharge>
  <cac:TaxTotal><cbc:TaxAmount currencyID="EUR">55.10</cbc:TaxAmount>
    <cac:TaxSubtotal><cbc:TaxableAmount currencyID="EUR">290.00</cbc:TaxableAmount><cbc:TaxAmount currencyID="EUR">55.10</cbc:TaxAmount>
      <cac:TaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>19</cbc:Percent><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:TaxCategory></cac:TaxSubtotal>
  </cac:TaxTotal>
  <cac:LegalMonetaryTotal>
    <cbc:LineExtensionAmount currencyID="EUR">300.00</cbc:LineExtensionAmount>
    <cbc:TaxExclusiveAmount currencyID="EUR">290.00</cbc:TaxExclusiveAmount>
    <cbc:TaxInclusiveAmount currencyID="EUR">{total}</cbc:TaxInclusiveAmount>
    <cbc:AllowanceTotalAmount currencyID="EUR">10.00</cbc:AllowanceTotalAmount>
    <cbc:PayableAmount currencyID="EUR">{total}</cbc:PayableAmount>
  </cac:LegalMonetaryTotal>
  <cac:{line}><cbc:ID>1</cbc:ID><cbc:{qty} unitCode="HUR">2.5</cbc:{qty}><cbc:LineExtensionAmount currencyID="EUR">250.00</cbc:LineExtensionAmount>
    <cac:Item><cbc:Name>Consulting</cbc:Name><cac:ClassifiedTaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>19</cbc:Percent><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:ClassifiedTaxCategory></cac:Item>
    <cac:Price><cbc:PriceAmount currencyID="EUR">100.00</cbc:PriceAmount></cac:Price></cac:{line}>
  <cac:{line}><cbc:ID>2</cbc:ID><cbc:{qty} unitCode="C62">10</cbc:{qty}><cbc:LineExtensionAmount currencyID="EUR">50.00</cbc:LineExtensionAmount>
    <cac:Item><cbc:Name>Cables</cbc:Name><cac:ClassifiedTaxCategory><cbc:ID>S</cbc:ID><cbc:Percent>19</cbc:Percent><cac:TaxScheme><cbc:ID>VAT</cbc:ID></cac:TaxScheme></cac:ClassifiedTaxCategory></cac:Item>
    <cac:Price><cbc:PriceAmount currencyID="EUR">50.00</cbc:PriceAmount><cbc:BaseQuantity>10</cbc:BaseQuantity></cac:Price></cac:{line}>
</{root}>"#
    )
}

/// The same invoice in CII (type `type_code`), BT-112 as stated.
pub(crate) fn cii(type_code: &str, total: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<rsm:CrossIndustryInvoice xmlns:rsm="urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
  xmlns:ram="urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
  xmlns:udt="urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100">
  <rsm:ExchangedDocumentContext><ram:GuidelineSpecifiedDocumentContextParameter><ram:ID>urn:cen.eu:en16931:2017</ram:ID></ram:GuidelineSpecifiedDocumentContextParameter></rsm:ExchangedDocumentContext>
  <rsm:ExchangedDocument><ram:ID>C-77</ram:ID><ram:TypeCode>{type_code}</ram:TypeCode>
    <ram:IssueDateTime><udt:DateTimeString format="102">20261005</udt:DateTimeString></ram:IssueDateTime></rsm:ExchangedDocument>
  <rsm:SupplyChainTradeTransaction>
    <ram:IncludedSupplyChainTradeLineItem>
      <ram:AssociatedDocumentLineDocument><ram:LineID>1</ram:LineID></ram:AssociatedDocumentLineDocument>
      <ram:SpecifiedTradeProduct><ram:Name>Consulting</ram:Name></ram:SpecifiedTradeProduct>
      <ram:SpecifiedLineTradeAgreement><ram:NetPriceProductTradePrice><ram:ChargeAmount>100.00</ram:ChargeAmount></ram:NetPriceProductTradePrice></ram:SpecifiedLineTradeAgreement>
      <ram:SpecifiedLineTradeDelivery><ram:BilledQuantity unitCode="HUR">3</ram:BilledQuantity></ram:SpecifiedLineTradeDelivery>
      <ram:SpecifiedLineTradeSettlement>
        <ram:ApplicableTradeTax><ram:TypeCode>VAT</ram:TypeCode><ram:CategoryCode>S</ram:CategoryCode><ram:RateApplicablePercent>20</ram:RateApplicablePercent></ram:ApplicableTradeTax>
        <ram:SpecifiedTradeSettlementLineMonetarySummation><ram:LineTotalAmount>300.00</ram:LineTotalAmount></ram:SpecifiedTradeSettlementLineMonetarySummation>
      </ram:SpecifiedLineTradeSettlement>
    </ram:IncludedSupplyChainTradeLineItem>
    <ram:ApplicableHeaderTradeAgreement>
      <ram:SellerTradeParty><ram:Name>Fournisseur SARL</ram:Name>
        <ram:PostalTradeAddress><ram:PostcodeCode>75001</ram:PostcodeCode><ram:LineOne>1 rue de Rivoli</ram:LineOne><ram:CityName>Paris</ram:CityName><ram:CountryID>FR</ram:CountryID></ram:PostalTradeAddress>
        <ram:SpecifiedTaxRegistration><ram:ID schemeID="VA">FR40303265045</ram:ID></ram:SpecifiedTaxRegistration>
      </ram:SellerTradeParty>
    </ram:ApplicableHeaderTradeAgreement>
    <ram:ApplicableHeaderTradeDelivery/>
    <ram:ApplicableHeaderTradeSettlement>
      <ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>
      <ram:ApplicableTradeTax><ram:CalculatedAmount>60.00</ram:CalculatedAmount><ram:TypeCode>VAT</ram:TypeCode><ram:BasisAmount>300.00</ram:BasisAmount><ram:CategoryCode>S</ram:CategoryCode><ram:RateApplicablePercent>20</ram:RateApplicablePercent></ram:ApplicableTradeTax>
      <ram:InvoiceReferencedDocument><ram:IssuerAssignedID>C-70</ram:IssuerAssignedID></ram:InvoiceReferencedDocument>
      <ram:SpecifiedTradeSettlementHeaderMonetarySummation>
        <ram:LineTotalAmount>300.00</ram:LineTotalAmount><ram:TaxBasisTotalAmount>300.00</ram:TaxBasisTotalAmount>
        <ram:TaxTotalAmount currencyID="EUR">60.00</ram:TaxTotalAmount><ram:GrandTotalAmount>{total}</ram:GrandTotalAmount>
        <ram:DuePayableAmount>{total}</ram:DuePayableAmount>
      </ram:SpecifiedTradeSettlementHeaderMonetarySummation>
    </ram:ApplicableHeaderTradeSettlement>
  </rsm:SupplyChainTradeTransaction>
</rsm:CrossIndustryInvoice>"#
    )
}

/// A minimal PDF with `xml` attached as a deflated embedded-file stream.
pub(crate) fn facturx_pdf(xml: &str) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(xml.as_bytes()).unwrap();
    let data = z.finish().unwrap();
    let mut pdf = b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Names << /EmbeddedFiles << /Names [(factur-x.xml) 2 0 R] >> >> >>\nendobj\n2 0 obj\n<< /Type /Filespec /F (factur-x.xml) /UF (factur-x.xml) /EF << /F 3 0 R >> /AFRelationship /Data >>\nendobj\n".to_vec();
    pdf.extend_from_slice(
        format!(
            "3 0 obj\n<< /Type /EmbeddedFile /Subtype /text#2Fxml /Filter /FlateDecode /Length {} >>\nstream\n",
            data.len()
        )
        .as_bytes(),
    );
    pdf.extend_from_slice(&data);
    pdf.extend_from_slice(b"\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n");
    pdf
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
    let doc = read(cii("380", "360.00").as_bytes()).unwrap();
    assert_eq!(doc.syntax, Syntax::Cii);
    assert!(!doc.credit_note);
    assert_eq!(doc.number, "C-77");
    assert_eq!(doc.seller.vat_id.as_deref(), Some("FR40303265045"));
    assert_eq!(doc.lines[0].net_amount, dec("300"));
    assert_eq!(doc.totals.vat, Some(dec("60")));
    let doc = read(cii("381", "360.00").as_bytes()).unwrap();
    assert!(doc.credit_note);
    assert_eq!(doc.preceding.as_deref(), Some("C-70"));
}

#[test]
fn reads_the_xml_inside_a_factur_x_pdf() {
    let doc = read(&facturx_pdf(&cii("380", "360.00"))).unwrap();
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
    let err = read(cii("380", "361.00").as_bytes()).unwrap_err();
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
