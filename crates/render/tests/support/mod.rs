//! Fixtures and poppler-utils wrappers shared by the render tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::NaiveDate;
use render::*;

/// Runs a poppler tool on PDF bytes (written to a temporary file), returning stdout.
fn poppler(tool: &str, args: &[&str], pdf: &[u8]) -> String {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("render-{}-{n}.pdf", std::process::id()));
    std::fs::write(&path, pdf).unwrap();
    let out = Command::new(tool)
        .args(args)
        .arg(&path)
        .args(extra_args(tool))
        .output();
    let _ = std::fs::remove_file(&path);
    let out = out.unwrap_or_else(|err| {
        panic!(
            "cannot run `{tool}` ({err}): install poppler-utils \
             (`apt-get install -y poppler-utils`, or run scripts/test at the repo root)"
        )
    });
    assert!(
        out.status.success(),
        "{tool} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// pdftotext writes to a file unless told `-` (stdout) after the input.
fn extra_args(tool: &str) -> &'static [&'static str] {
    if tool == "pdftotext" { &["-"] } else { &[] }
}

/// The text of the whole PDF in content order (`-raw`: table rows stay on one line).
pub fn pdf_text(pdf: &[u8]) -> String {
    poppler("pdftotext", &["-raw", "-enc", "UTF-8"], pdf)
}

/// The text of one page (1-based).
pub fn page_text(pdf: &[u8], page: usize) -> String {
    let p = page.to_string();
    poppler(
        "pdftotext",
        &["-raw", "-enc", "UTF-8", "-f", &p, "-l", &p],
        pdf,
    )
}

/// The PDF's logical structure (its tags), one element a line (`pdfinfo -struct`).
pub fn pdf_structure(pdf: &[u8]) -> String {
    poppler("pdfinfo", &["-struct"], pdf)
}

/// How many pages the PDF has.
pub fn page_count(pdf: &[u8]) -> usize {
    let info = poppler("pdfinfo", &[], pdf);
    info.lines()
        .find_map(|l| l.strip_prefix("Pages:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("pdfinfo prints the page count")
}

/// `pdffonts` rows: (name, embedded?).
pub fn fonts(pdf: &[u8]) -> Vec<(String, bool)> {
    let out = poppler("pdffonts", &[], pdf);
    out.lines()
        .skip(2)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // name type [encoding...] emb sub uni object-id gen: `emb` is the 5th from the end.
            (cols[0].to_owned(), cols[cols.len() - 5] == "yes")
        })
        .collect()
}

/// Whether the diagonal watermark `word` is on the page: its letters sit on separate
/// baselines, so they are read one per line.
pub fn has_watermark(text: &str, word: &str) -> bool {
    let spread: Vec<String> = word.chars().map(String::from).collect();
    text.lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .windows(spread.len())
        .any(|w| w == spread.as_slice())
}

/// Collapses runs of whitespace, so assertions do not depend on column layout.
pub fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

pub fn party(name: &str, fiscal_id: &str, vat_id: Option<&str>, city: &str) -> Party {
    Party {
        name: name.into(),
        fiscal_id: Some(fiscal_id.into()),
        vat_id: vat_id.map(Into::into),
        address_lines: vec!["Calle de Alcalá 42, 3º izq.".into()],
        zipcode: "28014".into(),
        city: city.into(),
        state: Some("Madrid".into()),
        country: "España".into(),
    }
}

pub fn line(concept: &str, quantity: &str, unit: Option<&str>, price: i64) -> Line {
    let subtotal = price * quantity.parse::<i64>().unwrap_or(1);
    Line {
        concept: concept.into(),
        quantity: quantity.into(),
        unit: unit.map(Into::into),
        unit_price_minor: price,
        subtotal_minor: subtotal,
        taxes: vec![LineTax {
            kind: TaxKind::Vat,
            rate: "21".into(),
            base_minor: subtotal,
            amount_minor: subtotal * 21 / 100,
            treatment: "domestic".into(),
        }],
    }
}

/// A realistic issued Spanish-issuer invoice: EUR, VAT 21 %, IRPF 15 %, one bank account.
///
/// Net 1,234.56 (`123_456`), VAT 259.26, withholding -185.18, total 1,308.64.
pub fn invoice() -> InvoiceDocument {
    let mut consulting = line(
        "Consultoría técnica — análisis de requisitos",
        "2",
        Some("h"),
        50_000,
    );
    consulting.taxes.push(LineTax {
        kind: TaxKind::Withholding,
        rate: "-15".into(),
        base_minor: 100_000,
        amount_minor: -15_000,
        treatment: "domestic".into(),
    });
    let mut hosting = line("Hosting (€ per month)", "1", None, 23_456);
    hosting.taxes.push(LineTax {
        kind: TaxKind::Withholding,
        rate: "-15".into(),
        base_minor: 23_456,
        amount_minor: -3_518,
        treatment: "domestic".into(),
    });
    InvoiceDocument {
        kind: DocumentKind::Invoice,
        status: DocumentStatus::Issued,
        language: "en".into(),
        reference: Some("F2026-0042".into()),
        issue_date: date(2026, 1, 2),
        due_date: Some(date(2026, 2, 1)),
        issuer: party(
            "Ñandú Ingeniería S.L.",
            "B12345674",
            Some("ESB12345674"),
            "Madrid",
        ),
        recipient: party(
            "Acme Widgets GmbH",
            "DE-123/456/7890",
            Some("DE123456789"),
            "Berlin",
        ),
        lines: vec![consulting, hosting],
        tax_breakdown: vec![TaxBreakdownEntry {
            rate: "21".into(),
            treatment: "domestic".into(),
            base_minor: 123_456,
            amount_minor: 25_926,
            legal_mention: Some("Operación sujeta y no exenta de IVA.".into()),
        }],
        withholding: vec![WithholdingEntry {
            rate: "-15".into(),
            base_minor: 123_456,
            amount_minor: -18_518,
        }],
        totals: Totals {
            net_minor: 123_456,
            tax_minor: 25_926,
            withholding_minor: -18_518,
            total_minor: 130_864,
        },
        currency: Currency {
            code: "EUR".into(),
            minor_digits: 2,
        },
        exchange_rates: vec![ExchangeRateNote {
            from: "USD".into(),
            to: "EUR".into(),
            rate: "0.9123".into(),
            frozen_on: date(2026, 1, 2),
        }],
        bank_accounts: vec![BankAccount {
            name: "Main account".into(),
            bank_name: Some("CaixaBank".into()),
            iban: Some("ES9121000418450200051332".into()),
            bic: Some("CAIXESBBXXX".into()),
        }],
        corrective: None,
        placeholders: BTreeMap::new(),
        footer_typst: None,
        post_typst: None,
        qr: None,
        notes: Some("Thank you for your business.\nPayment by bank transfer.".into()),
        legal: Default::default(),
        facturx: None,
    }
}

/// `invoice()` with `n` lines of one unit at 10.00 each (totals adjusted).
pub fn long_invoice(n: usize) -> InvoiceDocument {
    let mut doc = invoice();
    doc.lines = (1..=n)
        .map(|i| line(&format!("Item number {i}"), "1", Some("u"), 1_000))
        .collect();
    let net = 1_000 * n as i64;
    doc.tax_breakdown[0].base_minor = net;
    doc.tax_breakdown[0].amount_minor = net * 21 / 100;
    doc.withholding.clear();
    doc.totals = Totals {
        net_minor: net,
        tax_minor: net * 21 / 100,
        withholding_minor: 0,
        total_minor: net + net * 21 / 100,
    };
    doc
}

/// Writes a PDF to `$RENDER_DUMP_DIR/{name}.pdf` when that variable is set, to look at it.
pub fn dump(name: &str, pdf: &[u8]) {
    if let Some(dir) = std::env::var_os("RENDER_DUMP_DIR") {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(format!("{name}.pdf")), pdf).unwrap();
    }
}
