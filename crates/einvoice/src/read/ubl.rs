//! UBL 2.1 `Invoice` and `CreditNote` (EN 16931's UBL binding).

use roxmltree::Node;
use rust_decimal::Decimal;

use super::xml::{at, child, children, decimal, optional_date, required, required_decimal, text};
use super::{Adjustment, Incoming, Line, ReadError, Seller, Syntax, Totals, VatEntry};

pub const INVOICE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2";
pub const CREDIT_NOTE_NS: &str = "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2";
const CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
const CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";

fn cbc<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    child(n, CBC, name)
}

fn cac<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    child(n, CAC, name)
}

/// Reads an `Invoice` (or, with `credit_note`, a `CreditNote`) element.
pub fn read(root: Node<'_, '_>, credit_note: bool) -> Result<Incoming, ReadError> {
    let number = required(
        cbc(root, "ID"),
        "BR-02",
        "The invoice number (BT-1, cbc:ID)",
    )?;
    let issue_date = required(cbc(root, "IssueDate"), "BR-03", "The issue date (BT-2)")?;
    let issue_date = super::xml::date(&issue_date, "The issue date (BT-2)")?;
    let type_element = if credit_note {
        "CreditNoteTypeCode"
    } else {
        "InvoiceTypeCode"
    };
    let type_code = required(cbc(root, type_element), "BR-04", "The type code (BT-3)")?;
    let currency = super::xml::currency(required(
        cbc(root, "DocumentCurrencyCode"),
        "BR-05",
        "The currency (BT-5)",
    )?)?;
    let due_date = match optional_date(cbc(root, "DueDate"), "The due date (BT-9)")? {
        Some(d) => Some(d),
        None => optional_date(
            at(root, &[(CAC, "PaymentMeans"), (CBC, "PaymentDueDate")]),
            "The due date (BT-9)",
        )?,
    };
    let preceding = text(at(
        root,
        &[
            (CAC, "BillingReference"),
            (CAC, "InvoiceDocumentReference"),
            (CBC, "ID"),
        ],
    ));
    let notes: Vec<String> = children(root, CBC, "Note")
        .filter_map(|n| text(Some(n)))
        .collect();
    let party = at(root, &[(CAC, "AccountingSupplierParty"), (CAC, "Party")])
        .ok_or_else(|| ReadError::new("BR-06", "The seller (BG-4) is missing"))?;
    let seller = seller(party)?;

    let line_element = if credit_note {
        "CreditNoteLine"
    } else {
        "InvoiceLine"
    };
    let quantity_element = if credit_note {
        "CreditedQuantity"
    } else {
        "InvoicedQuantity"
    };
    let lines = children(root, CAC, line_element)
        .map(|l| line(l, quantity_element))
        .collect::<Result<Vec<_>, _>>()?;

    let mut allowances = Vec::new();
    let mut charges = Vec::new();
    for ac in children(root, CAC, "AllowanceCharge") {
        let is_charge = text(cbc(ac, "ChargeIndicator")).is_some_and(|t| t == "true");
        let amount = required_decimal(
            cbc(ac, "Amount"),
            if is_charge { "BR-36" } else { "BR-31" },
            "A document allowance or charge amount (BT-92, BT-99)",
        )?;
        let adjustment = Adjustment {
            amount,
            reason: text(cbc(ac, "AllowanceChargeReason")),
        };
        if is_charge {
            charges.push(adjustment);
        } else {
            allowances.push(adjustment);
        }
    }

    // BT-110 is the TaxTotal in the document's currency; a second one in the tax currency
    // (BT-111) carries no breakdown.
    let mut vat_total = None;
    let mut vat = Vec::new();
    for total in children(root, CAC, "TaxTotal") {
        let amount = cbc(total, "TaxAmount");
        let in_document_currency = amount
            .and_then(|a| a.attribute("currencyID"))
            .is_none_or(|c| c == currency);
        if !in_document_currency {
            continue;
        }
        vat_total = decimal(amount, "The VAT total (BT-110)")?;
        for sub in children(total, CAC, "TaxSubtotal") {
            let category = cac(sub, "TaxCategory");
            vat.push(VatEntry {
                category: required(
                    category.and_then(|c| cbc(c, "ID")),
                    "BR-CO-18",
                    "A VAT breakdown's category (BT-118)",
                )?,
                rate: decimal(
                    category.and_then(|c| cbc(c, "Percent")),
                    "A VAT rate (BT-119)",
                )?,
                taxable: required_decimal(
                    cbc(sub, "TaxableAmount"),
                    "BR-45",
                    "A VAT breakdown's taxable amount (BT-116)",
                )?,
                tax: required_decimal(
                    cbc(sub, "TaxAmount"),
                    "BR-46",
                    "A VAT breakdown's tax amount (BT-117)",
                )?,
            });
        }
    }

    let sums = cac(root, "LegalMonetaryTotal")
        .ok_or_else(|| ReadError::new("BR-12", "The document totals (BG-22) are missing"))?;
    let totals = Totals {
        line_total: required_decimal(
            cbc(sums, "LineExtensionAmount"),
            "BR-12",
            "The sum of line net amounts (BT-106)",
        )?,
        allowances: decimal(cbc(sums, "AllowanceTotalAmount"), "BT-107")?,
        charges: decimal(cbc(sums, "ChargeTotalAmount"), "BT-108")?,
        without_vat: required_decimal(
            cbc(sums, "TaxExclusiveAmount"),
            "BR-13",
            "The total without VAT (BT-109)",
        )?,
        vat: vat_total,
        with_vat: required_decimal(
            cbc(sums, "TaxInclusiveAmount"),
            "BR-14",
            "The total with VAT (BT-112)",
        )?,
        prepaid: decimal(cbc(sums, "PrepaidAmount"), "BT-113")?,
        rounding: decimal(cbc(sums, "PayableRoundingAmount"), "BT-114")?,
        payable: required_decimal(
            cbc(sums, "PayableAmount"),
            "BR-15",
            "The amount due (BT-115)",
        )?,
    };
    Ok(Incoming {
        syntax: Syntax::Ubl,
        from_pdf: false,
        credit_note: credit_note || type_code == "381",
        number,
        issue_date,
        type_code,
        currency,
        due_date,
        preceding,
        note: (!notes.is_empty()).then(|| notes.join("\n")),
        seller,
        lines,
        allowances,
        charges,
        vat,
        totals,
    })
}

fn seller(party: Node<'_, '_>) -> Result<Seller, ReadError> {
    let name = text(at(
        party,
        &[(CAC, "PartyLegalEntity"), (CBC, "RegistrationName")],
    ))
    .or_else(|| text(at(party, &[(CAC, "PartyName"), (CBC, "Name")])))
    .ok_or_else(|| ReadError::new("BR-06", "The seller's name (BT-27) is missing"))?;
    let mut vat_id = None;
    let mut tax_id = None;
    for scheme in children(party, CAC, "PartyTaxScheme") {
        let id = text(cbc(scheme, "CompanyID"));
        if text(at(scheme, &[(CAC, "TaxScheme"), (CBC, "ID")])).as_deref() == Some("VAT") {
            vat_id = vat_id.or(id);
        } else {
            tax_id = tax_id.or(id);
        }
    }
    let address = cac(party, "PostalAddress")
        .ok_or_else(|| ReadError::new("BR-08", "The seller's address (BG-5) is missing"))?;
    let mut lines: Vec<String> = ["StreetName", "AdditionalStreetName"]
        .iter()
        .filter_map(|n| text(cbc(address, n)))
        .collect();
    lines.extend(at(address, &[(CAC, "AddressLine"), (CBC, "Line")]).and_then(|l| text(Some(l))));
    Ok(Seller {
        name,
        vat_id,
        tax_id,
        address_lines: lines,
        city: text(cbc(address, "CityName")),
        postcode: text(cbc(address, "PostalZone")),
        subdivision: text(cbc(address, "CountrySubentity")),
        country: required(
            at(address, &[(CAC, "Country"), (CBC, "IdentificationCode")]),
            "BR-09",
            "The seller's country (BT-40)",
        )?,
        email: text(at(party, &[(CAC, "Contact"), (CBC, "ElectronicMail")])),
    })
}

fn line(l: Node<'_, '_>, quantity_element: &str) -> Result<Line, ReadError> {
    let id = required(cbc(l, "ID"), "BR-21", "A line's identifier (BT-126)")?;
    let what = |bt: &str| format!("Line {id}: {bt}");
    let quantity_node = cbc(l, quantity_element);
    let item = cac(l, "Item");
    let category = item.and_then(|i| cac(i, "ClassifiedTaxCategory"));
    let price = cac(l, "Price");
    let base = decimal(price.and_then(|p| cbc(p, "BaseQuantity")), &what("BT-149"))?;
    let unit_price =
        decimal(price.and_then(|p| cbc(p, "PriceAmount")), &what("BT-146"))?.map(|p| match base {
            Some(b) if !b.is_zero() => p / b,
            _ => p,
        });
    Ok(Line {
        name: required(
            item.and_then(|i| cbc(i, "Name")),
            "BR-25",
            &what("the item name (BT-153)"),
        )?,
        quantity: required_decimal(quantity_node, "BR-22", &what("the quantity (BT-129)"))?,
        unit_code: quantity_node
            .and_then(|q| q.attribute("unitCode"))
            .map(str::to_owned),
        net_amount: required_decimal(
            cbc(l, "LineExtensionAmount"),
            "BR-24",
            &what("the net amount (BT-131)"),
        )?,
        unit_price: unit_price.map(|p: Decimal| p.normalize()),
        vat_category: text(category.and_then(|c| cbc(c, "ID"))),
        vat_rate: decimal(category.and_then(|c| cbc(c, "Percent")), &what("BT-152"))?,
        id,
    })
}
