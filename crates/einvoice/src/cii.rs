//! UN/CEFACT Cross Industry Invoice D16B (EN 16931 core, XRechnung 3.0, Factur-X EN 16931).

use chrono::NaiveDate;
use document::{Invoice, Party, VatCategory};

use crate::Format;
use crate::prepare::{Prepared, plain};
use crate::writer::Writer;

const RSM: &str = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100";
const RAM: &str =
    "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100";
const UDT: &str = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100";
const QDT: &str = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100";

fn date(w: &mut Writer, tag: &'static str, inner: &str, d: NaiveDate) {
    w.open(tag);
    w.leaf_with(inner, &[("format", "102")], &d.format("%Y%m%d").to_string());
    w.close();
}

/// The CII document of `doc` in `format` (one of the CII formats).
pub fn write(doc: &Invoice, p: &Prepared, format: Format) -> String {
    let mut w = Writer::new();
    w.open_with(
        "rsm:CrossIndustryInvoice",
        &[
            ("xmlns:rsm", RSM),
            ("xmlns:ram", RAM),
            ("xmlns:udt", UDT),
            ("xmlns:qdt", QDT),
        ],
    );
    w.open("rsm:ExchangedDocumentContext");
    if format == Format::XrechnungCii {
        w.open("ram:BusinessProcessSpecifiedDocumentContextParameter");
        w.leaf("ram:ID", crate::PEPPOL_PROCESS);
        w.close();
    }
    w.open("ram:GuidelineSpecifiedDocumentContextParameter");
    w.opt("ram:ID", format.customization_id());
    w.close();
    w.close();

    w.open("rsm:ExchangedDocument");
    w.leaf("ram:ID", &doc.number);
    w.leaf("ram:TypeCode", p.kind.code());
    date(
        &mut w,
        "ram:IssueDateTime",
        "udt:DateTimeString",
        doc.issue_date(),
    );
    if let Some(note) = &p.note {
        w.open("ram:IncludedNote");
        w.leaf("ram:Content", note);
        w.close();
    }
    w.close();

    w.open("rsm:SupplyChainTradeTransaction");
    for l in &p.lines {
        w.open("ram:IncludedSupplyChainTradeLineItem");
        w.open("ram:AssociatedDocumentLineDocument");
        w.leaf("ram:LineID", &l.id.to_string());
        w.close();
        w.open("ram:SpecifiedTradeProduct");
        w.leaf("ram:Name", &l.name);
        w.close();
        w.open("ram:SpecifiedLineTradeAgreement");
        w.open("ram:NetPriceProductTradePrice");
        w.leaf("ram:ChargeAmount", &plain(l.price));
        w.close();
        w.close();
        w.open("ram:SpecifiedLineTradeDelivery");
        w.leaf_with(
            "ram:BilledQuantity",
            &[("unitCode", &l.unit_code)],
            &plain(l.quantity),
        );
        w.close();
        w.open("ram:SpecifiedLineTradeSettlement");
        w.open("ram:ApplicableTradeTax");
        w.leaf("ram:TypeCode", "VAT");
        w.leaf("ram:CategoryCode", l.category.code());
        if l.category != VatCategory::O {
            w.leaf("ram:RateApplicablePercent", &plain(l.rate));
        }
        w.close();
        w.open("ram:SpecifiedTradeSettlementLineMonetarySummation");
        w.leaf("ram:LineTotalAmount", &p.amount(l.net));
        w.close();
        w.close();
        w.close();
    }

    let o_only = p.has(VatCategory::O);
    w.open("ram:ApplicableHeaderTradeAgreement");
    w.opt("ram:BuyerReference", doc.buyer_reference.as_deref());
    w.open("ram:SellerTradeParty");
    party(&mut w, &doc.seller, true, o_only);
    w.close();
    w.open("ram:BuyerTradeParty");
    party(&mut w, &doc.buyer, false, o_only);
    w.close();
    if let Some(order) = doc
        .order_reference
        .as_deref()
        .filter(|o| !o.trim().is_empty())
    {
        w.open("ram:BuyerOrderReferencedDocument");
        w.leaf("ram:IssuerAssignedID", order);
        w.close();
    }
    w.close();

    let delivery = &doc.delivery;
    let k = p.has(VatCategory::K);
    w.open("ram:ApplicableHeaderTradeDelivery");
    if k {
        w.open("ram:ShipToTradeParty");
        w.leaf("ram:Name", &doc.buyer.name);
        address(&mut w, &doc.buyer.address);
        w.close();
    }
    // Without a date or period, the supply date is the issue date (VAT Directive art. 226(7)).
    let delivered = delivery.date.or_else(|| {
        (delivery.period_start.is_none() && delivery.period_end.is_none()).then(|| doc.issue_date())
    });
    if let Some(d) = delivered {
        w.open("ram:ActualDeliverySupplyChainEvent");
        date(&mut w, "ram:OccurrenceDateTime", "udt:DateTimeString", d);
        w.close();
    }
    w.close();

    let currency = doc.currency.code.as_str();
    w.open("ram:ApplicableHeaderTradeSettlement");
    w.leaf("ram:PaymentReference", &doc.payment.remittance);
    if let Some((code, _, _)) = &p.accounting {
        w.leaf("ram:TaxCurrencyCode", code);
    }
    w.leaf("ram:InvoiceCurrencyCode", currency);
    let accounts: Vec<_> = doc
        .payment
        .accounts
        .iter()
        .filter(|a| a.iban.as_deref().is_some_and(|i| !i.trim().is_empty()))
        .collect();
    if accounts.is_empty() {
        w.open("ram:SpecifiedTradeSettlementPaymentMeans");
        w.leaf("ram:TypeCode", "1");
        w.close();
    }
    for a in accounts {
        w.open("ram:SpecifiedTradeSettlementPaymentMeans");
        w.leaf("ram:TypeCode", "58");
        w.open("ram:PayeePartyCreditorFinancialAccount");
        w.opt("ram:IBANID", a.iban.as_deref());
        w.leaf("ram:AccountName", &a.name);
        w.close();
        if let Some(bic) = a.bic.as_deref().filter(|b| !b.trim().is_empty()) {
            w.open("ram:PayeeSpecifiedCreditorFinancialInstitution");
            w.leaf("ram:BICID", bic);
            w.close();
        }
        w.close();
    }
    for b in &p.breakdown {
        w.open("ram:ApplicableTradeTax");
        w.leaf("ram:CalculatedAmount", &p.amount(b.tax));
        w.leaf("ram:TypeCode", "VAT");
        let exempt = !matches!(b.category, VatCategory::S | VatCategory::Z);
        if exempt {
            w.opt("ram:ExemptionReason", b.reason.as_deref());
        }
        w.leaf("ram:BasisAmount", &p.amount(b.taxable));
        w.leaf("ram:CategoryCode", b.category.code());
        if exempt {
            w.opt("ram:ExemptionReasonCode", b.code.as_deref());
        }
        w.leaf("ram:RateApplicablePercent", &plain(b.rate));
        w.close();
    }
    if delivery.period_start.is_some() || delivery.period_end.is_some() {
        w.open("ram:BillingSpecifiedPeriod");
        if let Some(d) = delivery.period_start {
            date(&mut w, "ram:StartDateTime", "udt:DateTimeString", d);
        }
        if let Some(d) = delivery.period_end {
            date(&mut w, "ram:EndDateTime", "udt:DateTimeString", d);
        }
        w.close();
    }
    let terms = p
        .terms
        .clone()
        .or_else(|| (p.payable > 0 && p.due_date.is_none()).then(|| "Due on receipt".to_owned()));
    if terms.is_some() || p.due_date.is_some() {
        w.open("ram:SpecifiedTradePaymentTerms");
        w.opt("ram:Description", terms.as_deref());
        if let Some(d) = p.due_date {
            date(&mut w, "ram:DueDateDateTime", "udt:DateTimeString", d);
        }
        w.close();
    }
    w.open("ram:SpecifiedTradeSettlementHeaderMonetarySummation");
    w.leaf("ram:LineTotalAmount", &p.amount(p.line_net));
    w.leaf("ram:TaxBasisTotalAmount", &p.amount(p.line_net));
    w.leaf_with(
        "ram:TaxTotalAmount",
        &[("currencyID", currency)],
        &p.amount(p.vat),
    );
    if let Some((code, digits, vat)) = &p.accounting {
        w.leaf_with(
            "ram:TaxTotalAmount",
            &[("currencyID", code)],
            &crate::prepare::amount(*vat, *digits),
        );
    }
    w.leaf("ram:GrandTotalAmount", &p.amount(p.with_vat));
    if p.paid != 0 {
        w.leaf("ram:TotalPrepaidAmount", &p.amount(p.paid));
    }
    w.leaf("ram:DuePayableAmount", &p.amount(p.payable));
    w.close();
    if let Some(pre) = &doc.preceding {
        w.open("ram:InvoiceReferencedDocument");
        w.leaf("ram:IssuerAssignedID", &pre.number);
        date(
            &mut w,
            "ram:FormattedIssueDateTime",
            "qdt:DateTimeString",
            pre.issue_date,
        );
        w.close();
    }
    w.close();
    w.close();
    w.finish()
}

fn address(w: &mut Writer, a: &document::Address) {
    let lines: Vec<&str> = a
        .lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect();
    w.open("ram:PostalTradeAddress");
    w.opt("ram:PostcodeCode", a.zipcode.as_deref());
    w.opt("ram:LineOne", lines.first().copied());
    w.opt("ram:LineTwo", lines.get(1).copied());
    if lines.len() > 2 {
        w.leaf("ram:LineThree", &lines[2..].join(", "));
    }
    w.opt("ram:CityName", a.city.as_deref());
    w.leaf("ram:CountryID", &a.country);
    w.opt("ram:CountrySubDivisionName", a.state.as_deref());
    w.close();
}

/// BG-4 / BG-7. `o_only`: the invoice is not subject to VAT (BR-O-02: no VAT identifiers).
fn party(w: &mut Writer, party: &Party, seller: bool, o_only: bool) {
    let vat_id = party.vat_id.as_deref().filter(|v| !v.trim().is_empty());
    let tax_id = party.tax_id.as_deref().filter(|t| !t.trim().is_empty());
    w.leaf("ram:Name", &party.name);
    if tax_id.is_some() || party.trading_name.is_some() {
        w.open("ram:SpecifiedLegalOrganization");
        w.opt("ram:ID", tax_id);
        w.opt("ram:TradingBusinessName", party.trading_name.as_deref());
        w.close();
    }
    let c = &party.contact;
    if [&c.name, &c.phone, &c.email]
        .iter()
        .any(|v| v.as_deref().is_some_and(|v| !v.trim().is_empty()))
    {
        w.open("ram:DefinedTradeContact");
        w.opt("ram:PersonName", c.name.as_deref());
        if let Some(phone) = c.phone.as_deref().filter(|v| !v.trim().is_empty()) {
            w.open("ram:TelephoneUniversalCommunication");
            w.leaf("ram:CompleteNumber", phone);
            w.close();
        }
        if let Some(email) = c.email.as_deref().filter(|v| !v.trim().is_empty()) {
            w.open("ram:EmailURIUniversalCommunication");
            w.leaf("ram:URIID", email);
            w.close();
        }
        w.close();
    }
    address(w, &party.address);
    if let Some(ea) = &party.electronic_address {
        w.open("ram:URIUniversalCommunication");
        w.leaf_with("ram:URIID", &[("schemeID", &ea.scheme)], &ea.id);
        w.close();
    }
    if let Some(vat) = vat_id.filter(|_| !o_only) {
        w.open("ram:SpecifiedTaxRegistration");
        w.leaf_with("ram:ID", &[("schemeID", "VA")], vat);
        w.close();
    }
    if seller && let Some(tax) = tax_id.filter(|t| Some(*t) != vat_id) {
        w.open("ram:SpecifiedTaxRegistration");
        w.leaf_with("ram:ID", &[("schemeID", "FC")], tax);
        w.close();
    }
}
