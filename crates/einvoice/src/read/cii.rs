//! UN/CEFACT Cross Industry Invoice D16B (EN 16931's CII binding; Factur-X and
//! XRechnung CII are profiles of it).

use roxmltree::Node;

use super::xml::{at, child, children, date, decimal, required, required_decimal, text};
use super::{Adjustment, Incoming, Line, ReadError, Seller, Syntax, Totals, VatEntry};

pub const RSM: &str = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100";
const RAM: &str =
    "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100";
const UDT: &str = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100";

fn ram<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    child(n, RAM, name)
}

/// Reads a `CrossIndustryInvoice` element.
pub fn read(root: Node<'_, '_>) -> Result<Incoming, ReadError> {
    let document = child(root, RSM, "ExchangedDocument").ok_or_else(|| {
        ReadError::new(
            "BR-02",
            "The document header (rsm:ExchangedDocument) is missing",
        )
    })?;
    let number = required(
        ram(document, "ID"),
        "BR-02",
        "The invoice number (BT-1, ram:ID)",
    )?;
    let type_code = required(ram(document, "TypeCode"), "BR-04", "The type code (BT-3)")?;
    let issue_date = required(
        at(document, &[(RAM, "IssueDateTime"), (UDT, "DateTimeString")]),
        "BR-03",
        "The issue date (BT-2)",
    )?;
    let issue_date = date(&issue_date, "The issue date (BT-2)")?;
    let notes: Vec<String> = children(document, RAM, "IncludedNote")
        .filter_map(|n| text(ram(n, "Content")))
        .collect();
    let transaction = child(root, RSM, "SupplyChainTradeTransaction").ok_or_else(|| {
        ReadError::new(
            "BR-16",
            "The transaction (rsm:SupplyChainTradeTransaction) is missing",
        )
    })?;
    let agreement = ram(transaction, "ApplicableHeaderTradeAgreement");
    let party = agreement
        .and_then(|a| ram(a, "SellerTradeParty"))
        .ok_or_else(|| ReadError::new("BR-06", "The seller (BG-4) is missing"))?;
    let seller = seller(party)?;
    let settlement = ram(transaction, "ApplicableHeaderTradeSettlement").ok_or_else(|| {
        ReadError::new(
            "BR-05",
            "The settlement (ram:ApplicableHeaderTradeSettlement) is missing",
        )
    })?;
    let currency = super::xml::currency(required(
        ram(settlement, "InvoiceCurrencyCode"),
        "BR-05",
        "The currency (BT-5)",
    )?)?;
    let due_date = text(at(
        settlement,
        &[
            (RAM, "SpecifiedTradePaymentTerms"),
            (RAM, "DueDateDateTime"),
            (UDT, "DateTimeString"),
        ],
    ))
    .map(|d| date(&d, "The due date (BT-9)"))
    .transpose()?;
    let preceding = text(at(
        settlement,
        &[
            (RAM, "InvoiceReferencedDocument"),
            (RAM, "IssuerAssignedID"),
        ],
    ));

    let lines = children(transaction, RAM, "IncludedSupplyChainTradeLineItem")
        .map(line)
        .collect::<Result<Vec<_>, _>>()?;

    let mut allowances = Vec::new();
    let mut charges = Vec::new();
    for ac in children(settlement, RAM, "SpecifiedTradeAllowanceCharge") {
        let is_charge = text(at(ac, &[(RAM, "ChargeIndicator"), (UDT, "Indicator")]))
            .is_some_and(|t| t == "true");
        let adjustment = Adjustment {
            amount: required_decimal(
                ram(ac, "ActualAmount"),
                if is_charge { "BR-36" } else { "BR-31" },
                "A document allowance or charge amount (BT-92, BT-99)",
            )?,
            reason: text(ram(ac, "Reason")),
        };
        if is_charge {
            charges.push(adjustment);
        } else {
            allowances.push(adjustment);
        }
    }

    let vat = children(settlement, RAM, "ApplicableTradeTax")
        .map(|t| {
            Ok(VatEntry {
                category: required(
                    ram(t, "CategoryCode"),
                    "BR-CO-18",
                    "A VAT breakdown's category (BT-118)",
                )?,
                rate: decimal(ram(t, "RateApplicablePercent"), "A VAT rate (BT-119)")?,
                taxable: required_decimal(
                    ram(t, "BasisAmount"),
                    "BR-45",
                    "A VAT breakdown's taxable amount (BT-116)",
                )?,
                tax: required_decimal(
                    ram(t, "CalculatedAmount"),
                    "BR-46",
                    "A VAT breakdown's tax amount (BT-117)",
                )?,
            })
        })
        .collect::<Result<Vec<_>, ReadError>>()?;

    let sums = ram(
        settlement,
        "SpecifiedTradeSettlementHeaderMonetarySummation",
    )
    .ok_or_else(|| ReadError::new("BR-12", "The document totals (BG-22) are missing"))?;
    // BT-110 is the tax total in the document's currency; another in the tax currency is BT-111.
    let vat_total = children(sums, RAM, "TaxTotalAmount")
        .find(|t| t.attribute("currencyID").is_none_or(|c| c == currency));
    let totals = Totals {
        line_total: required_decimal(
            ram(sums, "LineTotalAmount"),
            "BR-12",
            "The sum of line net amounts (BT-106)",
        )?,
        allowances: decimal(ram(sums, "AllowanceTotalAmount"), "BT-107")?,
        charges: decimal(ram(sums, "ChargeTotalAmount"), "BT-108")?,
        without_vat: required_decimal(
            ram(sums, "TaxBasisTotalAmount"),
            "BR-13",
            "The total without VAT (BT-109)",
        )?,
        vat: decimal(vat_total, "The VAT total (BT-110)")?,
        with_vat: required_decimal(
            ram(sums, "GrandTotalAmount"),
            "BR-14",
            "The total with VAT (BT-112)",
        )?,
        prepaid: decimal(ram(sums, "TotalPrepaidAmount"), "BT-113")?,
        rounding: decimal(ram(sums, "RoundingAmount"), "BT-114")?,
        payable: required_decimal(
            ram(sums, "DuePayableAmount"),
            "BR-15",
            "The amount due (BT-115)",
        )?,
    };
    Ok(Incoming {
        syntax: Syntax::Cii,
        from_pdf: false,
        credit_note: type_code == "381",
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
    let name = required(ram(party, "Name"), "BR-06", "The seller's name (BT-27)")?;
    let mut vat_id = None;
    let mut tax_id = None;
    for registration in children(party, RAM, "SpecifiedTaxRegistration") {
        let Some(id) = ram(registration, "ID") else {
            continue;
        };
        match id.attribute("schemeID") {
            Some("VA") => vat_id = vat_id.or(text(Some(id))),
            Some("FC") => tax_id = tax_id.or(text(Some(id))),
            _ => {}
        }
    }
    let address = ram(party, "PostalTradeAddress")
        .ok_or_else(|| ReadError::new("BR-08", "The seller's address (BG-5) is missing"))?;
    Ok(Seller {
        name,
        vat_id,
        tax_id,
        address_lines: ["LineOne", "LineTwo", "LineThree"]
            .iter()
            .filter_map(|n| text(ram(address, n)))
            .collect(),
        city: text(ram(address, "CityName")),
        postcode: text(ram(address, "PostcodeCode")),
        subdivision: text(ram(address, "CountrySubDivisionName")),
        country: required(
            ram(address, "CountryID"),
            "BR-09",
            "The seller's country (BT-40)",
        )?,
        email: text(at(
            party,
            &[
                (RAM, "DefinedTradeContact"),
                (RAM, "EmailURIUniversalCommunication"),
                (RAM, "URIID"),
            ],
        )),
    })
}

fn line(item: Node<'_, '_>) -> Result<Line, ReadError> {
    let id = required(
        at(
            item,
            &[(RAM, "AssociatedDocumentLineDocument"), (RAM, "LineID")],
        ),
        "BR-21",
        "A line's identifier (BT-126)",
    )?;
    let what = |bt: &str| format!("Line {id}: {bt}");
    let quantity = at(
        item,
        &[(RAM, "SpecifiedLineTradeDelivery"), (RAM, "BilledQuantity")],
    );
    let price = at(
        item,
        &[
            (RAM, "SpecifiedLineTradeAgreement"),
            (RAM, "NetPriceProductTradePrice"),
        ],
    );
    let base = decimal(price.and_then(|p| ram(p, "BasisQuantity")), &what("BT-149"))?;
    let unit_price =
        decimal(price.and_then(|p| ram(p, "ChargeAmount")), &what("BT-146"))?.map(|p| match base {
            Some(b) if !b.is_zero() => (p / b).normalize(),
            _ => p.normalize(),
        });
    let settlement = ram(item, "SpecifiedLineTradeSettlement");
    let tax = settlement.and_then(|s| ram(s, "ApplicableTradeTax"));
    Ok(Line {
        name: required(
            at(item, &[(RAM, "SpecifiedTradeProduct"), (RAM, "Name")]),
            "BR-25",
            &what("the item name (BT-153)"),
        )?,
        quantity: required_decimal(quantity, "BR-22", &what("the quantity (BT-129)"))?,
        unit_code: quantity
            .and_then(|q| q.attribute("unitCode"))
            .map(str::to_owned),
        net_amount: required_decimal(
            settlement.and_then(|s| {
                at(
                    s,
                    &[
                        (RAM, "SpecifiedTradeSettlementLineMonetarySummation"),
                        (RAM, "LineTotalAmount"),
                    ],
                )
            }),
            "BR-24",
            &what("the net amount (BT-131)"),
        )?,
        unit_price,
        vat_category: text(tax.and_then(|t| ram(t, "CategoryCode"))),
        vat_rate: decimal(
            tax.and_then(|t| ram(t, "RateApplicablePercent")),
            &what("BT-152"),
        )?,
        id,
    })
}
