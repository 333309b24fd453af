//! Invoice documents covering every case the e-invoices must handle, built the way the
//! service builds them at issue (`document::build::build`), and the validation kit.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use chrono::{TimeZone, Utc};
use document::*;

pub use document::samples::*;

/// Every case: (name, document). All carry what XRechnung and Peppol need unless the name
/// says `minimal`.
pub fn cases() -> Vec<(&'static str, Invoice)> {
    let mut out = Vec::new();

    out.push(("domestic-multirate", domestic_multirate()));

    // German domestic supply (XRechnung's home case) with a Leitweg-ID.
    let mut i = issue(
        "RE-2026-0001",
        vec![
            taxed("Beratung", "8", 12_000, "19", "domestic"),
            taxed("Fachbuch", "1", 4_990, "7", "domestic"),
        ],
    );
    i.delivery.date = Some(date("2026-03-20"));
    let mut b = buyer("DE", Some("DE987654321"), "12/345/67890");
    b.electronic_address = Some(ElectronicAddress {
        scheme: "0204".into(),
        id: "04011000-12345-03".into(),
    });
    out.push(("german-leitweg", doc(i, german_seller(), b)));

    // Exempt (E), the reason from the fallback.
    let i = issue(
        "F2026-00002",
        vec![taxed("Medical training", "1", 50_000, "0", "exempt")],
    );
    out.push((
        "exempt",
        doc(
            i,
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // Reverse charge (AE): services to a German business.
    let i = issue(
        "F2026-00003",
        vec![taxed(
            "Software development",
            "40",
            7_500,
            "0",
            "reverse_charge",
        )],
    );
    out.push((
        "reverse-charge",
        doc(
            i,
            spanish_seller(),
            buyer("DE", Some("DE987654321"), "12/345/67890"),
        ),
    ));

    // Intra-EU supply of goods (K).
    let mut i = issue(
        "F2026-00004",
        vec![taxed("Olive oil", "12", 2_345, "0", "intra_eu_exempt")],
    );
    i.supply_type = SupplyType::Goods;
    i.delivery.date = Some(date("2026-03-28"));
    out.push((
        "intra-eu-goods",
        doc(
            i,
            spanish_seller(),
            buyer("FR", Some("FR40303265045"), "303265045"),
        ),
    ));

    // Export of goods (G).
    let mut i = issue(
        "F2026-00005",
        vec![taxed("Wine", "24", 1_800, "0", "export_exempt")],
    );
    i.supply_type = SupplyType::Goods;
    let mut b = buyer("US", None, "12-3456789");
    b.electronic_address = Some(ElectronicAddress {
        scheme: "0060".into(),
        id: "123456789".into(),
    });
    out.push(("export", doc(i, spanish_seller(), b.clone())));

    // Services outside the scope of EU VAT (O).
    let i = issue(
        "F2026-00006",
        vec![taxed("Consulting", "5", 20_000, "0", "not_subject")],
    );
    out.push(("outside-scope", doc(i, spanish_seller(), b)));

    // Foreign currency: USD invoice, EUR accounting currency (BT-6, BT-111).
    let mut i = issue(
        "F2026-00007",
        vec![taxed("Licence", "3", 33_333, "21", "domestic")],
    );
    i.currency = "USD".into();
    i.exchange_rates = vec![ExchangeRate {
        from: "USD".into(),
        to: "EUR".into(),
        rate: dec("0.9123"),
        date: Some(date("2026-03-27")),
        source: Some("ecb".into()),
    }];
    out.push((
        "foreign-currency",
        doc(
            i,
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // Corrective: a full reversal, as a credit note with positive amounts.
    let mut i = issue(
        "R2026-00001",
        vec![
            taxed("Consulting", "-10", 8_000, "21", "domestic"),
            taxed("Catering", "-3", 1_550, "10", "domestic"),
        ],
    );
    i.kind = InvoiceKind::Corrective;
    i.preceding = Some(PrecedingInvoice {
        id: "inv-F2026-00001".into(),
        number: "F2026-00001".into(),
        issue_date: date("2026-03-02"),
        issued_at: Utc
            .with_ymd_and_hms(2026, 3, 2, 9, 0, 0)
            .single()
            .expect("a time"),
        reason: CorrectionReason::R1,
    });
    let corrective = i.clone();
    out.push((
        "credit-note",
        doc(
            i,
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // Corrective that charges more: a corrected invoice (384).
    let mut i = corrective;
    i.number = "R2026-00002".into();
    i.lines = vec![
        taxed("Extra hours", "2", 8_000, "21", "domestic"),
        taxed("Refund of catering", "-1", 1_550, "10", "domestic"),
    ];
    out.push((
        "corrected-invoice",
        doc(
            i,
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // Spanish professional with IRPF withholding, partly paid before issue.
    let mut i = issue(
        "F2026-00008",
        vec![
            withheld("Architecture project", 150_000),
            withheld("Site visits", 20_000),
        ],
    );
    i.prepaid = 10_000;
    i.presentation.language = "es".into();
    out.push((
        "withholding-prepaid",
        doc(
            i,
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // Explicit tax lines.
    let i = issue(
        "F2026-00009",
        vec![
            plain("Goods A", 10_000, false),
            plain("VAT 21%", 2_100, true),
            plain("Books", 5_000, false),
            plain("VAT 4%", 200, true),
        ],
    );
    out.push((
        "explicit-tax-lines",
        doc(
            i,
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // A long invoice: 120 lines with amounts that round.
    let lines = (1..=120)
        .map(|n| {
            let rate = if n % 3 == 0 { "10" } else { "21" };
            taxed(
                &format!("Item {n}"),
                &format!("{}.{}", n % 7 + 1, n % 10),
                1_000 + n * 37,
                rate,
                "domestic",
            )
        })
        .collect();
    out.push((
        "long",
        doc(
            issue("F2026-00010", lines),
            spanish_seller(),
            buyer("ES", Some("ESA28017895"), "A28017895"),
        ),
    ));

    // No optional field: no references, no bank account, no electronic addresses, a
    // consumer without a tax id.
    let mut i = issue(
        "F2026-00011",
        vec![taxed("Repair", "1", 9_900, "21", "domestic")],
    );
    i.buyer_reference = None;
    i.bank_accounts = Vec::new();
    i.payment_terms_days = None;
    let mut seller = spanish_seller();
    seller.electronic_address = None;
    seller.contact = Contact::default();
    let consumer = Party {
        id: "entity-9".into(),
        name: "Juan Pérez".into(),
        trading_name: None,
        legal_form: "ES:individual".into(),
        country: "ES".into(),
        is_business: false,
        vat_id: None,
        tax_id: None,
        address: Address {
            country: "ES".into(),
            ..Address::default()
        },
        contact: Contact::default(),
        electronic_address: None,
        settings: None,
    };
    out.push(("minimal", doc(i, seller, consumer)));
    out
}

/// The validation kit's script, resolved from this crate's place in the repository.
pub fn kit() -> Option<(PathBuf, String)> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/einvoice/validate");
    // The kit lives beside the repository (../shared/einvoice), not in it: where it is not
    // checked out the validation is skipped with a warning, unless it is required.
    let required = std::env::var("INVOICING_REQUIRE_EINVOICE_KIT").is_ok_and(|v| v == "1");
    if !script.exists() && !required {
        eprintln!(
            "warning: {} is not here: e-invoices are not validated by the official rules",
            script.display()
        );
        return None;
    }
    let python = std::env::var("INVOICING_TEST_PYTHON").ok();
    match python {
        Some(python) if script.exists() => Some((script, python)),
        python => panic!(
            "the e-invoice validation kit is needed: {} exists: {}, INVOICING_TEST_PYTHON: \
             {python:?} (scripts/test sets it)",
            script.display(),
            script.exists()
        ),
    }
}

/// Runs the kit with `profile` on `files` (one process); returns its stdout and whether it
/// found no fatal error.
pub fn validate(profile: &str, files: &[PathBuf]) -> Option<(bool, String)> {
    let (script, python) = kit()?;
    let out = Command::new(python)
        .arg(script)
        .arg("--profile")
        .arg(profile)
        .args(files)
        .output()
        .expect("the validation kit runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "the kit failed to run: {stdout}\n{stderr}"
    );
    Some((out.status.success(), stdout))
}

/// A fresh directory for the files of one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("einvoice-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}
