//! Facturae 3.2.2 (unsigned), with the IRPF withholding as `TaxesWithheld`.

use document::{CorrectionReason, Invoice, Party};
use rust_decimal::Decimal;

use crate::country::alpha3;
use crate::prepare::{Prepared, plain};
use crate::rules::Refusal;
use crate::writer::{Writer, cut};

const NS: &str = "http://www.facturae.gob.es/formato/Versiones/Facturaev3_2_2.xml";
const DS: &str = "http://www.w3.org/2000/09/xmldsig#";

/// The languages Facturae's `LanguageName` accepts.
const LANGUAGES: &str = "ar be bg ca cs da de el en es et eu fi fr ga gl hr hu is it lv lt mk mt \
    nl no pl pt ro ru sk sl sq sr sv tr uk";

/// An amount with exactly two decimals, as Facturae writes them.
fn money(p: &Prepared, minor: i64) -> String {
    let d = Decimal::new(minor, u32::from(p.digits.min(28)));
    format!("{:.2}", d.round_dp(2))
}

fn total(w: &mut Writer, tag: &'static str, value: &str) {
    w.open(tag);
    w.leaf("TotalAmount", value);
    w.close();
}

/// The Facturae document of `doc`, in the document's own signs.
pub fn write(doc: &Invoice, p: &Prepared) -> Result<String, Refusal> {
    let seller_id = tax_number(&doc.seller);
    let executable = p.with_vat - p.withheld - p.prepaid;
    let invoice_total = p.with_vat - p.withheld;
    let outstanding = invoice_total - p.prepaid;

    let mut w = Writer::new();
    w.open_with("fe:Facturae", &[("xmlns:fe", NS), ("xmlns:ds", DS)]);
    w.open("FileHeader");
    w.leaf("SchemaVersion", "3.2.2");
    w.leaf("Modality", "I");
    w.leaf("InvoiceIssuerType", "EM");
    w.open("Batch");
    w.leaf(
        "BatchIdentifier",
        &cut(&format!("{seller_id}{}", doc.number), 70),
    );
    w.leaf("InvoicesCount", "1");
    total(&mut w, "TotalInvoicesAmount", &money(p, invoice_total));
    total(&mut w, "TotalOutstandingAmount", &money(p, outstanding));
    total(&mut w, "TotalExecutableAmount", &money(p, executable));
    w.leaf("InvoiceCurrencyCode", &doc.currency.code);
    w.close();
    w.close();

    w.open("Parties");
    w.open("SellerParty");
    party(&mut w, &doc.seller)?;
    w.close();
    w.open("BuyerParty");
    party(&mut w, &doc.buyer)?;
    w.close();
    w.close();

    w.open("Invoices");
    w.open("Invoice");
    w.open("InvoiceHeader");
    w.leaf("InvoiceNumber", &doc.number);
    w.leaf("InvoiceDocumentType", "FC");
    if let Some(pre) = &doc.preceding {
        w.leaf("InvoiceClass", "OR");
        w.open("Corrective");
        w.leaf("InvoiceNumber", &pre.number);
        let (code, description) = reason(pre.reason);
        w.leaf("ReasonCode", code);
        w.leaf("ReasonDescription", description);
        w.open("TaxPeriod");
        w.leaf("StartDate", &pre.issue_date.to_string());
        w.leaf("EndDate", &pre.issue_date.to_string());
        w.close();
        w.leaf("CorrectionMethod", "02");
        w.leaf(
            "CorrectionMethodDescription",
            "Rectificación por diferencias",
        );
        w.leaf("InvoiceIssueDate", &pre.issue_date.to_string());
        w.close();
    } else {
        w.leaf("InvoiceClass", "OO");
    }
    w.close();

    w.open("InvoiceIssueData");
    w.leaf("IssueDate", &doc.issue_date().to_string());
    w.opt(
        "OperationDate",
        doc.delivery.date.map(|d| d.to_string()).as_deref(),
    );
    if let (Some(start), Some(end)) = (doc.delivery.period_start, doc.delivery.period_end) {
        w.open("InvoicingPeriod");
        w.leaf("StartDate", &start.to_string());
        w.leaf("EndDate", &end.to_string());
        w.close();
    }
    w.leaf("InvoiceCurrencyCode", &doc.currency.code);
    let tax_currency = match &doc.accounting {
        Some(a) => {
            w.open("ExchangeRateDetails");
            w.leaf("ExchangeRate", &plain(a.rate.round_dp(8)));
            w.leaf("ExchangeRateDate", &doc.issue_date().to_string());
            w.close();
            a.currency.code.clone()
        }
        None => doc.currency.code.clone(),
    };
    w.leaf("TaxCurrencyCode", &tax_currency);
    let language = doc
        .presentation
        .language
        .get(..2)
        .map(str::to_ascii_lowercase)
        .filter(|l| LANGUAGES.split_whitespace().any(|x| x == l))
        .unwrap_or_else(|| "es".to_owned());
    w.leaf("LanguageName", &language);
    // Facturae's references have at most 20 characters: a longer one is not cut (it would
    // name something else) but stated in the additional information below.
    w.opt(
        "ReceiverTransactionReference",
        short(doc.order_reference.as_deref()),
    );
    w.opt(
        "ReceiverContractReference",
        short(doc.buyer_reference.as_deref()),
    );
    w.close();

    w.open("TaxesOutputs");
    for b in &p.breakdown {
        w.open("Tax");
        w.leaf("TaxTypeCode", "01");
        w.leaf("TaxRate", &format!("{:.2}", b.rate));
        total(&mut w, "TaxableBase", &money(p, b.taxable));
        total(&mut w, "TaxAmount", &money(p, b.tax));
        w.close();
    }
    w.close();
    if !doc.withholdings.is_empty() {
        w.open("TaxesWithheld");
        for h in &doc.withholdings {
            w.open("Tax");
            w.leaf("TaxTypeCode", "04");
            w.leaf("TaxRate", &format!("{:.2}", h.rate.abs()));
            total(&mut w, "TaxableBase", &money(p, h.base));
            total(&mut w, "TaxAmount", &money(p, -h.amount));
            w.close();
        }
        w.close();
    }

    w.open("InvoiceTotals");
    w.leaf("TotalGrossAmount", &money(p, p.line_net));
    w.leaf("TotalGrossAmountBeforeTaxes", &money(p, p.line_net));
    w.leaf("TotalTaxOutputs", &money(p, p.vat));
    w.leaf("TotalTaxesWithheld", &money(p, p.withheld));
    w.leaf("InvoiceTotal", &money(p, invoice_total));
    if p.prepaid != 0 {
        w.open("PaymentsOnAccount");
        w.open("PaymentOnAccount");
        w.leaf("PaymentOnAccountDate", &doc.issue_date().to_string());
        w.leaf("PaymentOnAccountAmount", &money(p, p.prepaid));
        w.close();
        w.close();
    }
    w.leaf("TotalOutstandingAmount", &money(p, outstanding));
    if p.prepaid != 0 {
        w.leaf("TotalPaymentsOnAccount", &money(p, p.prepaid));
    }
    w.leaf("TotalExecutableAmount", &money(p, executable));
    w.close();

    let explicit = doc.lines.iter().any(|l| l.is_tax);
    w.open("Items");
    for l in &p.lines {
        w.open("InvoiceLine");
        w.leaf("ItemDescription", &cut(&l.name, 2500));
        w.leaf("Quantity", &plain(l.quantity));
        w.leaf("UnitPriceWithoutTax", &plain(l.price.round_dp(8)));
        w.leaf("TotalCost", &money(p, l.net));
        w.leaf("GrossAmount", &money(p, l.net));
        if !l.withheld.is_empty() {
            w.open("TaxesWithheld");
            for (rate, base, amount) in &l.withheld {
                w.open("Tax");
                w.leaf("TaxTypeCode", "04");
                w.leaf("TaxRate", &format!("{rate:.2}"));
                total(&mut w, "TaxableBase", &money(p, *base));
                total(&mut w, "TaxAmount", &money(p, *amount));
                w.close();
            }
            w.close();
        }
        w.open("TaxesOutputs");
        w.open("Tax");
        w.leaf("TaxTypeCode", "01");
        w.leaf("TaxRate", &format!("{:.2}", l.rate));
        total(&mut w, "TaxableBase", &money(p, l.net));
        if !explicit {
            total(&mut w, "TaxAmount", &money(p, l.vat));
        }
        w.close();
        w.close();
        w.close();
    }
    w.close();

    let iban = doc
        .payment
        .accounts
        .iter()
        .find_map(|a| a.iban.as_deref().filter(|i| !i.trim().is_empty()));
    if executable > 0 {
        w.open("PaymentDetails");
        w.open("Installment");
        w.leaf(
            "InstallmentDueDate",
            &doc.due_date.unwrap_or_else(|| doc.issue_date()).to_string(),
        );
        w.leaf("InstallmentAmount", &money(p, executable));
        match iban {
            Some(iban) => {
                w.leaf("PaymentMeans", "04");
                w.open("AccountToBeCredited");
                w.leaf("IBAN", &cut(iban, 34));
                w.close();
            }
            None => w.leaf("PaymentMeans", "13"),
        }
        w.close();
        w.close();
    }
    let mut info: Vec<String> = Vec::new();
    if let Some(note) = &p.note {
        info.push(note.clone());
    }
    for (label, reference) in [
        ("Order reference", &doc.order_reference),
        ("Buyer reference", &doc.buyer_reference),
    ] {
        if let Some(r) = reference.as_deref().map(str::trim)
            && r.chars().count() > 20
        {
            info.push(format!("{label}: {r}"));
        }
    }
    info.extend(p.breakdown.iter().filter_map(|b| b.reason.clone()));
    if doc.preceding.is_some() || !info.is_empty() {
        w.open("AdditionalData");
        w.opt(
            "RelatedInvoice",
            doc.preceding
                .as_ref()
                .map(|pre| cut(&pre.number, 40))
                .as_deref(),
        );
        if !info.is_empty() {
            w.leaf("InvoiceAdditionalInformation", &cut(&info.join("\n"), 2500));
        }
        w.close();
    }
    Ok(w.finish())
}

/// A reference that fits Facturae's 20 characters.
fn short(reference: Option<&str>) -> Option<&str> {
    reference.map(str::trim).filter(|r| r.chars().count() <= 20)
}

/// Facturae's reason for a corrective invoice (code and its fixed description).
fn reason(reason: CorrectionReason) -> (&'static str, &'static str) {
    match reason {
        CorrectionReason::R2 | CorrectionReason::R3 => (
            "85",
            "Base imponible modificada cuotas repercutidas no satisfechas. Auto de declaración de concurso",
        ),
        CorrectionReason::R1 | CorrectionReason::R4 | CorrectionReason::R5 => {
            ("16", "Base imponible")
        }
    }
}

/// The tax id Facturae names a party by: the NIF for Spanish parties, else the VAT id.
fn tax_number(party: &Party) -> String {
    let id = if party.is_spanish() {
        party.tax_id.clone().or_else(|| {
            party
                .vat_id
                .clone()
                .map(|v| v.trim_start_matches("ES").to_owned())
        })
    } else {
        party.vat_id.clone().or_else(|| party.tax_id.clone())
    };
    cut(&id.unwrap_or_default(), 30)
}

fn party(w: &mut Writer, party: &Party) -> Result<(), Refusal> {
    let id = tax_number(party);
    let individual = !party.is_business
        || (party.is_spanish()
            && id
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_digit() || "XYZKLM".contains(c)));
    let country = domain::country::CountryCode::parse(&party.address.country).ok();
    let residence = match country {
        Some(c) if c.as_str() == "ES" => "R",
        Some(c) if c.is_eu() => "U",
        _ => "E",
    };
    w.open("TaxIdentification");
    w.leaf("PersonTypeCode", if individual { "F" } else { "J" });
    w.leaf("ResidenceTypeCode", residence);
    w.leaf("TaxIdentificationNumber", &id);
    w.close();
    if individual {
        w.open("Individual");
        let mut words = party.name.split_whitespace();
        let first = words.next().unwrap_or("-");
        let rest: Vec<&str> = words.collect();
        w.leaf("Name", &cut(first, 40));
        let surname = if rest.is_empty() {
            "-".to_owned()
        } else {
            rest.join(" ")
        };
        w.leaf("FirstSurname", &cut(&surname, 40));
    } else {
        w.open("LegalEntity");
        w.leaf("CorporateName", &cut(&party.name, 80));
        w.opt(
            "TradeName",
            party.trading_name.as_deref().map(|t| cut(t, 40)).as_deref(),
        );
    }
    address(w, party)?;
    let c = &party.contact;
    let phone = c.phone.as_deref().map(|v| cut(v, 15));
    let email = c.email.as_deref().map(|v| cut(v, 60));
    let name = c.name.as_deref().map(|v| cut(v, 40));
    if phone.is_some() || email.is_some() || name.is_some() {
        w.open("ContactDetails");
        w.opt("Telephone", phone.as_deref());
        w.opt("ElectronicMail", email.as_deref());
        w.opt("ContactPersons", name.as_deref());
        w.close();
    }
    w.close();
    Ok(())
}

fn address(w: &mut Writer, party: &Party) -> Result<(), Refusal> {
    let a = &party.address;
    let street = a
        .lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    let city = a.city.clone().unwrap_or_default();
    let province = a.state.clone().unwrap_or_else(|| city.clone());
    let Some(country) = alpha3(&a.country) else {
        return Err(Refusal::inconsistent(
            "FACTURAE-CountryCode",
            &format!("unknown country `{}`", a.country),
        ));
    };
    let zip = a.zipcode.clone().unwrap_or_default();
    if a.country == "ES" {
        w.open("AddressInSpain");
        w.leaf("Address", &cut(&street, 80));
        w.leaf("PostCode", zip.trim());
        w.leaf("Town", &cut(&city, 50));
        w.leaf("Province", &cut(&province, 20));
    } else {
        w.open("OverseasAddress");
        w.leaf("Address", &cut(&street, 80));
        w.leaf(
            "PostCodeAndTown",
            &cut(format!("{} {}", zip.trim(), city).trim(), 50),
        );
        w.leaf("Province", &cut(&province, 20));
    }
    w.leaf("CountryCode", country);
    w.close();
    Ok(())
}
