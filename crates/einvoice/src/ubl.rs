//! UBL 2.1 `Invoice` and `CreditNote` (EN 16931 core, XRechnung 3.0, Peppol BIS 3.0).

use document::{Invoice, Party, VatCategory};

use crate::Format;
use crate::prepare::{DocKind, Prepared, plain};
use crate::writer::Writer;

const INVOICE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2";
const CREDIT_NOTE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2";
const CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
const CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";

/// The UBL document of `doc` in `format` (one of the UBL formats).
pub fn write(doc: &Invoice, p: &Prepared, format: Format) -> String {
    let credit = p.kind == DocKind::CreditNote;
    let currency = doc.currency.code.as_str();
    let cur = [("currencyID", currency)];
    let mut w = Writer::new();
    let (root, ns) = if credit {
        ("CreditNote", CREDIT_NOTE_NS)
    } else {
        ("Invoice", INVOICE_NS)
    };
    w.open_with(
        root,
        &[("xmlns", ns), ("xmlns:cac", CAC), ("xmlns:cbc", CBC)],
    );
    w.opt("cbc:CustomizationID", format.customization_id());
    if matches!(format, Format::Peppol | Format::XrechnungUbl) {
        w.leaf("cbc:ProfileID", crate::PEPPOL_PROCESS);
    }
    w.leaf("cbc:ID", &doc.number);
    w.leaf("cbc:IssueDate", &doc.issue_date().to_string());
    if !credit {
        w.opt("cbc:DueDate", p.due_date.map(|d| d.to_string()).as_deref());
        w.leaf("cbc:InvoiceTypeCode", p.kind.code());
    } else {
        w.leaf("cbc:CreditNoteTypeCode", p.kind.code());
    }
    w.opt("cbc:Note", p.note.as_deref());
    w.leaf("cbc:DocumentCurrencyCode", currency);
    if let Some((code, _, _)) = &p.accounting {
        w.leaf("cbc:TaxCurrencyCode", code);
    }
    w.opt("cbc:BuyerReference", doc.buyer_reference.as_deref());
    let delivery = &doc.delivery;
    if delivery.period_start.is_some() || delivery.period_end.is_some() {
        w.open("cac:InvoicePeriod");
        w.opt(
            "cbc:StartDate",
            delivery.period_start.map(|d| d.to_string()).as_deref(),
        );
        w.opt(
            "cbc:EndDate",
            delivery.period_end.map(|d| d.to_string()).as_deref(),
        );
        w.close();
    }
    if let Some(order) = doc
        .order_reference
        .as_deref()
        .filter(|o| !o.trim().is_empty())
    {
        w.open("cac:OrderReference");
        w.leaf("cbc:ID", order);
        w.close();
    }
    if let Some(pre) = &doc.preceding {
        w.open("cac:BillingReference");
        w.open("cac:InvoiceDocumentReference");
        w.leaf("cbc:ID", &pre.number);
        w.leaf("cbc:IssueDate", &pre.issue_date.to_string());
        w.close();
        w.close();
    }
    let o_only = p.has(VatCategory::O);
    w.open("cac:AccountingSupplierParty");
    party(&mut w, &doc.seller, true, o_only);
    w.close();
    w.open("cac:AccountingCustomerParty");
    party(&mut w, &doc.buyer, false, o_only);
    w.close();

    // BG-13: the supply date, and for intra-community supplies where the goods went.
    // Without a date or period, the supply date is the issue date (VAT Directive art. 226(7)).
    let k = p.has(VatCategory::K);
    let date = delivery.date.or_else(|| {
        (delivery.period_start.is_none() && delivery.period_end.is_none()).then(|| doc.issue_date())
    });
    if date.is_some() || k {
        w.open("cac:Delivery");
        w.opt(
            "cbc:ActualDeliveryDate",
            date.map(|d| d.to_string()).as_deref(),
        );
        if k {
            w.open("cac:DeliveryLocation");
            address(&mut w, "cac:Address", &doc.buyer.address);
            w.close();
        }
        w.close();
    }

    let accounts: Vec<_> = doc
        .payment
        .accounts
        .iter()
        .filter(|a| a.iban.as_deref().is_some_and(|i| !i.trim().is_empty()))
        .collect();
    let means = |w: &mut Writer, code: &str| {
        w.open("cac:PaymentMeans");
        w.leaf("cbc:PaymentMeansCode", code);
        if credit {
            w.opt(
                "cbc:PaymentDueDate",
                p.due_date.map(|d| d.to_string()).as_deref(),
            );
        }
        w.leaf("cbc:PaymentID", &doc.payment.remittance);
    };
    if accounts.is_empty() {
        means(&mut w, "1");
        w.close();
    } else {
        for a in accounts {
            means(&mut w, "58");
            w.open("cac:PayeeFinancialAccount");
            w.opt("cbc:ID", a.iban.as_deref());
            w.leaf("cbc:Name", &a.name);
            if let Some(bic) = a.bic.as_deref().filter(|b| !b.trim().is_empty()) {
                w.open("cac:FinancialInstitutionBranch");
                w.leaf("cbc:ID", bic);
                w.close();
            }
            w.close();
            w.close();
        }
    }
    let terms = p
        .terms
        .clone()
        .or_else(|| (p.payable > 0 && p.due_date.is_none()).then(|| "Due on receipt".to_owned()));
    if let Some(terms) = terms {
        w.open("cac:PaymentTerms");
        w.leaf("cbc:Note", &terms);
        w.close();
    }

    w.open("cac:TaxTotal");
    w.leaf_with("cbc:TaxAmount", &cur, &p.amount(p.vat));
    for b in &p.breakdown {
        w.open("cac:TaxSubtotal");
        w.leaf_with("cbc:TaxableAmount", &cur, &p.amount(b.taxable));
        w.leaf_with("cbc:TaxAmount", &cur, &p.amount(b.tax));
        w.open("cac:TaxCategory");
        w.leaf("cbc:ID", b.category.code());
        w.leaf("cbc:Percent", &plain(b.rate));
        if !matches!(b.category, VatCategory::S | VatCategory::Z) {
            w.opt("cbc:TaxExemptionReasonCode", b.code.as_deref());
            w.opt("cbc:TaxExemptionReason", b.reason.as_deref());
        }
        tax_scheme(&mut w);
        w.close();
        w.close();
    }
    w.close();
    if let Some((code, digits, vat)) = &p.accounting {
        w.open("cac:TaxTotal");
        w.leaf_with(
            "cbc:TaxAmount",
            &[("currencyID", code)],
            &crate::prepare::amount(*vat, *digits),
        );
        w.close();
    }

    w.open("cac:LegalMonetaryTotal");
    w.leaf_with("cbc:LineExtensionAmount", &cur, &p.amount(p.line_net));
    w.leaf_with("cbc:TaxExclusiveAmount", &cur, &p.amount(p.line_net));
    w.leaf_with("cbc:TaxInclusiveAmount", &cur, &p.amount(p.with_vat));
    if p.paid != 0 {
        w.leaf_with("cbc:PrepaidAmount", &cur, &p.amount(p.paid));
    }
    w.leaf_with("cbc:PayableAmount", &cur, &p.amount(p.payable));
    w.close();

    let (line_tag, qty_tag) = if credit {
        ("cac:CreditNoteLine", "cbc:CreditedQuantity")
    } else {
        ("cac:InvoiceLine", "cbc:InvoicedQuantity")
    };
    for l in &p.lines {
        w.open(line_tag);
        w.leaf("cbc:ID", &l.id.to_string());
        w.leaf_with(qty_tag, &[("unitCode", &l.unit_code)], &plain(l.quantity));
        w.leaf_with("cbc:LineExtensionAmount", &cur, &p.amount(l.net));
        w.open("cac:Item");
        w.leaf("cbc:Name", &l.name);
        w.open("cac:ClassifiedTaxCategory");
        w.leaf("cbc:ID", l.category.code());
        if l.category != VatCategory::O {
            w.leaf("cbc:Percent", &plain(l.rate));
        }
        tax_scheme(&mut w);
        w.close();
        w.close();
        w.open("cac:Price");
        w.leaf_with("cbc:PriceAmount", &cur, &plain(l.price));
        w.close();
        w.close();
    }
    w.finish()
}

fn tax_scheme(w: &mut Writer) {
    w.open("cac:TaxScheme");
    w.leaf("cbc:ID", "VAT");
    w.close();
}

fn address(w: &mut Writer, tag: &'static str, a: &document::Address) {
    let lines: Vec<&str> = a
        .lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    w.open(tag);
    w.opt("cbc:StreetName", lines.first().copied());
    w.opt("cbc:AdditionalStreetName", lines.get(1).copied());
    w.opt("cbc:CityName", a.city.as_deref());
    w.opt("cbc:PostalZone", a.zipcode.as_deref());
    w.opt("cbc:CountrySubentity", a.state.as_deref());
    if lines.len() > 2 {
        w.open("cac:AddressLine");
        w.leaf("cbc:Line", &lines[2..].join(", "));
        w.close();
    }
    w.open("cac:Country");
    w.leaf("cbc:IdentificationCode", &a.country);
    w.close();
    w.close();
}

/// BG-4 / BG-7. `o_only`: the invoice is not subject to VAT (BR-O-02: no VAT identifiers).
fn party(w: &mut Writer, party: &Party, seller: bool, o_only: bool) {
    w.open("cac:Party");
    if let Some(ea) = &party.electronic_address {
        w.leaf_with("cbc:EndpointID", &[("schemeID", &ea.scheme)], &ea.id);
    }
    if let Some(trading) = party.trading_name.as_deref() {
        w.open("cac:PartyName");
        w.leaf("cbc:Name", trading);
        w.close();
    }
    address(w, "cac:PostalAddress", &party.address);
    let vat_id = party.vat_id.as_deref().filter(|v| !v.trim().is_empty());
    let tax_id = party.tax_id.as_deref().filter(|t| !t.trim().is_empty());
    if let Some(vat) = vat_id.filter(|_| !o_only) {
        w.open("cac:PartyTaxScheme");
        w.leaf("cbc:CompanyID", vat);
        tax_scheme(w);
        w.close();
    }
    if seller {
        // BT-32: the national tax registration, when it is not the VAT id itself.
        if let Some(tax) = tax_id.filter(|t| Some(*t) != vat_id) {
            w.open("cac:PartyTaxScheme");
            w.leaf("cbc:CompanyID", tax);
            w.open("cac:TaxScheme");
            w.leaf("cbc:ID", "TAX");
            w.close();
            w.close();
        }
    }
    w.open("cac:PartyLegalEntity");
    w.leaf("cbc:RegistrationName", &party.name);
    w.opt("cbc:CompanyID", tax_id);
    w.close();
    let c = &party.contact;
    if [&c.name, &c.phone, &c.email]
        .iter()
        .any(|v| v.as_deref().is_some_and(|v| !v.trim().is_empty()))
    {
        w.open("cac:Contact");
        w.opt("cbc:Name", c.name.as_deref());
        w.opt("cbc:Telephone", c.phone.as_deref());
        w.opt("cbc:ElectronicMail", c.email.as_deref());
        w.close();
    }
    w.close();
}
