//! Black-box tests: render real documents and read them back with poppler-utils.

mod support;

use std::time::Instant;

use render::*;
use support::*;

fn render_ok(doc: &InvoiceDocument) -> Vec<u8> {
    render_invoice(doc).unwrap_or_else(|err| panic!("render failed: {err}"))
}

#[test]
fn an_english_invoice_shows_parties_amounts_taxes_and_payment() {
    let pdf = render_ok(&invoice());
    dump("invoice-en", &pdf);
    assert!(pdf.starts_with(b"%PDF-"));
    let text = squash(&pdf_text(&pdf));
    for expected in [
        "Invoice",
        "F2026-0042",
        "Issue date 2 January 2026",
        "Due date 1 February 2026",
        "Ñandú Ingeniería S.L.",
        "Tax ID: B12345674",
        "VAT number: ESB12345674",
        "Acme Widgets GmbH",
        "Tax ID: DE-123/456/7890",
        "VAT number: DE123456789",
        "Calle de Alcalá 42, 3º izq.",
        "28014 Madrid",
        "Consultoría técnica — análisis de requisitos",
        "Hosting (€ per month)",
        "2 h",
        "500.00",
        "1,000.00",
        "234.56",
        "Net amount 1,234.56",
        "Taxes 259.26",
        "Withholding -185.18",
        "Total 1,308.64 EUR",
        "VAT 21 %",
        "Withholding -15 %",
        "Operación sujeta y no exenta de IVA.",
        "1 USD = 0.9123 EUR (rate frozen on 2 January 2026)",
        "Main account",
        "Bank: CaixaBank",
        "IBAN: ES91 2100 0418 4502 0005 1332",
        "BIC: CAIXESBBXXX",
        "Thank you for your business.",
        "1/1",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        !text.contains("DRAFT"),
        "an issued invoice has no watermark:\n{text}"
    );
}

#[test]
fn a_spanish_invoice_uses_spanish_labels_and_separators() {
    let mut doc = invoice();
    doc.language = "es_ES".into();
    let text = squash(&pdf_text(&render_ok(&doc)));
    for expected in [
        "Factura",
        "Fecha de expedición 2 de enero de 2026",
        "Base imponible 1.234,56",
        "Impuestos 259,26",
        "Retención IRPF -185,18",
        "Total 1.308,64 EUR",
        "1.000,00",
        "IVA 21 %",
        "1 USD = 0,9123 EUR (tipo fijado el 2 de enero de 2026)",
        "IBAN: ES91 2100 0418 4502 0005 1332",
        "Concepto",
        "1/1",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(!text.contains("1,234.56"), "{text}");
}

#[test]
fn amounts_have_the_currency_minor_digits() {
    for (code, digits, lang, expected, unexpected) in [
        ("JPY", 0, "en", "1,234,567 JPY", "1,234,567."),
        ("JPY", 0, "es", "1.234.567 JPY", "1.234.567,"),
        ("KWD", 3, "en", "1,234.567 KWD", "1,234.5670"),
        ("KWD", 3, "es", "1.234,567 KWD", "1.234,5670"),
        ("EUR", 2, "es", "12.345,67 EUR", "12.345,670"),
    ] {
        let mut doc = invoice();
        doc.language = lang.into();
        doc.currency = Currency {
            code: code.into(),
            minor_digits: digits,
        };
        doc.totals.total_minor = 1_234_567;
        let text = squash(&pdf_text(&render_ok(&doc)));
        assert!(
            text.contains(expected),
            "{code}/{lang}: missing {expected:?} in:\n{text}"
        );
        assert!(
            !text.contains(unexpected),
            "{code}/{lang}: found {unexpected:?} in:\n{text}"
        );
    }
}

#[test]
fn corrective_invoices_name_the_corrected_invoice_and_reason() {
    let mut doc = invoice();
    doc.kind = DocumentKind::CorrectiveInvoice;
    doc.reference = Some("R2026-0001".into());
    doc.corrective = Some(CorrectiveInfo {
        corrected_reference: "F2025-0100".into(),
        corrected_issue_date: date(2025, 3, 3),
        reason: CorrectionReason::R1,
        reason_text: "Error in the VAT rate".into(),
    });
    let text = squash(&pdf_text(&render_ok(&doc)));
    for expected in [
        "Corrective invoice",
        "R2026-0001",
        "Corrects invoice F2025-0100 of 3 March 2025",
        "Reason: R1 — Error in the VAT rate",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    doc.language = "es".into();
    let text = squash(&pdf_text(&render_ok(&doc)));
    assert!(text.contains("Factura rectificativa"), "{text}");
    assert!(
        text.contains("Rectifica la factura F2025-0100 de 3 de marzo de 2025"),
        "{text}"
    );
    assert!(text.contains("Motivo: R1"), "{text}");

    doc.corrective = None;
    assert!(matches!(
        render_invoice(&doc),
        Err(RenderError::InvalidInput(_))
    ));
}

#[test]
fn proformas_have_their_own_title_and_notice() {
    let mut doc = invoice();
    doc.kind = DocumentKind::Proforma;
    doc.reference = Some("P2026-0007".into());
    let text = squash(&pdf_text(&render_ok(&doc)));
    assert!(text.contains("Proforma invoice"), "{text}");
    assert!(text.contains("P2026-0007"), "{text}");
    assert!(text.contains("is not an invoice"), "{text}");
    doc.language = "es".into();
    let text = squash(&pdf_text(&render_ok(&doc)));
    assert!(text.contains("Factura proforma"), "{text}");
}

#[test]
fn drafts_carry_a_watermark_and_issued_documents_do_not() {
    let mut doc = invoice();
    doc.status = DocumentStatus::Draft;
    doc.reference = None;
    let pdf = render_ok(&doc);
    dump("draft", &pdf);
    let text = pdf_text(&pdf);
    assert!(has_watermark(&text, "DRAFT"), "{text}");
    assert!(squash(&text).contains("Number Draft"), "{text}");

    let long = render_ok(&{
        let mut long = long_invoice(120);
        long.status = DocumentStatus::Draft;
        long
    });
    for page in 1..=page_count(&long) {
        assert!(
            has_watermark(&page_text(&long, page), "DRAFT"),
            "page {page}"
        );
    }

    doc.language = "es".into();
    let text = pdf_text(&render_ok(&doc));
    assert!(has_watermark(&text, "BORRADOR"), "{text}");
    assert!(!has_watermark(&text, "DRAFT"), "{text}");

    let text = pdf_text(&render_ok(&invoice()));
    assert!(
        !has_watermark(&text, "DRAFT") && !has_watermark(&text, "BORRADOR"),
        "{text}"
    );
}

/// Up to 60 lines the line table is a Typst table; beyond, one block per line with the
/// header repeated by the page header (templates/common.typ): both repeat the header and
/// number the pages.
#[test]
fn long_invoices_repeat_the_table_header_and_number_pages() {
    for (lines, at_least) in [(60, 2), (120, 3)] {
        let pdf = render_ok(&long_invoice(lines));
        dump(&format!("long-{lines}"), &pdf);
        let pages = page_count(&pdf);
        assert!(
            pages >= at_least,
            "{lines} lines should take at least {at_least} pages, got {pages}"
        );
        for page in 1..=pages {
            let text = squash(&page_text(&pdf, page));
            assert!(
                text.contains("Description Quantity Unit price Tax Amount"),
                "{lines} lines: page {page} lacks the header row:\n{text}"
            );
            assert!(
                text.contains(&format!("{page}/{pages}")),
                "{lines} lines: page {page} lacks {page}/{pages}:\n{text}"
            );
        }
        let all = squash(&pdf_text(&pdf));
        for i in [1, lines / 2, lines] {
            assert!(
                all.contains(&format!("Item number {i} ")),
                "{lines} lines: line {i} missing"
            );
        }
    }
}

/// A screen reader finds the lines of an ordinary invoice as a table with a header row
/// (the PDF's structure tree, read with `pdfinfo -struct`), as it finds the tax breakdown.
#[test]
fn the_lines_of_an_ordinary_invoice_are_a_tagged_table() {
    let structure = pdf_structure(&render_ok(&invoice()));
    assert_eq!(
        structure.matches("Table (block)").count(),
        2,
        "the lines and the tax breakdown are tables:\n{structure}"
    );
    // Five column headings for the lines, three for the tax breakdown.
    assert_eq!(structure.matches("TH <").count(), 8, "{structure}");
    assert_eq!(structure.matches("THead").count(), 2, "{structure}");
}

fn reproducible_document() -> InvoiceDocument {
    let mut doc = invoice();
    doc.footer_typst = Some("Order {{po}} · #datetime.today().display()".into());
    doc.placeholders.insert("po".into(), "PO-77".into());
    doc.post_typst = Some("#link(\"https://example.com\")[Terms] <terms>".into());
    doc.qr = Some(qr());
    doc
}

#[test]
fn the_same_document_gives_the_same_bytes() {
    let doc = reproducible_document();
    let first = render_ok(&doc);
    let second = render_ok(&doc);
    assert!(first == second, "two renders of the same document differ");
    let text = squash(&pdf_text(&first));
    assert!(text.contains("Order PO-77 · 2026-01-02"), "{text}");
}

#[test]
fn the_same_document_gives_the_same_bytes_in_another_process() {
    const NAME: &str = "the_same_document_gives_the_same_bytes_in_another_process";
    if let Some(out) = std::env::var_os("RENDER_CHILD_OUT") {
        std::fs::write(out, render_ok(&reproducible_document())).unwrap();
        return;
    }
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("child-{}.pdf", std::process::id()));
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--test-threads=1"])
        .env("RENDER_CHILD_OUT", &out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    let child = std::fs::read(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    // Unlike the child, this process has rendered other documents and tried other paths first.
    let mut other = long_invoice(3);
    other.language = "es".into();
    render_ok(&other);
    let _ = render_invoice(&{
        let mut doc = invoice();
        doc.footer_typst = Some("#read(\"/some/other/path\")".into());
        doc
    });
    assert!(
        child == render_ok(&reproducible_document()),
        "the two processes' PDFs differ"
    );
}

#[test]
fn every_font_is_embedded() {
    let mut doc = invoice();
    doc.lines[0].concept =
        "Ελληνικά, кириллица, ÀÉÎÕÜ àéîõü ß ø å ç ñ € £ ¥ “quotes” — ‘dash’".into();
    let pdf = render_ok(&doc);
    let fonts = fonts(&pdf);
    assert!(!fonts.is_empty());
    assert!(fonts.iter().all(|(_, embedded)| *embedded), "{fonts:?}");
    let text = squash(&pdf_text(&pdf));
    assert!(text.contains("ÀÉÎÕÜ àéîõü ß ø å ç ñ € £ ¥"), "{text}");
}

#[test]
fn the_qr_code_and_its_caption_are_on_the_first_page() {
    let mut doc = invoice();
    doc.qr = Some(qr());
    let pdf = render_ok(&doc);
    dump("qr", &pdf);
    assert!(squash(&page_text(&pdf, 1)).contains("QR tributario: VERI*FACTU"));
}

#[test]
#[ignore = "timing print; run with --release --ignored --nocapture"]
fn timing() {
    let start = Instant::now();
    render::warm_up();
    println!(
        "warm-up (fonts, library, templates): {:.2?}",
        start.elapsed()
    );
    let doc = invoice();
    let start = Instant::now();
    render_ok(&doc);
    println!("first one-page invoice: {:.2?}", start.elapsed());
    let runs = 50;
    let start = Instant::now();
    for _ in 0..runs {
        render_ok(&doc);
    }
    println!(
        "same one-page invoice again: {:.2?} per render",
        start.elapsed() / runs
    );
    let start = Instant::now();
    for i in 0..runs {
        let mut doc = invoice();
        doc.reference = Some(format!("F2026-{i:04}"));
        doc.lines[0].concept = format!("Consulting, batch {i}");
        doc.totals.total_minor += i64::from(i);
        render_ok(&doc);
    }
    println!(
        "distinct one-page invoices: {:.2?} per render",
        start.elapsed() / runs
    );
    for n in [120, 500] {
        let start = Instant::now();
        render_ok(&long_invoice(n));
        println!("{n}-line invoice: {:.2?}", start.elapsed());
    }
}

fn qr() -> QrCode {
    let mut svg = String::from(
        r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 21 21"><rect width="21" height="21" fill="#fff"/>"##,
    );
    for i in 0..21 {
        for j in 0..21 {
            if (i * 7 + j * 3) % 5 < 2 || (i < 7 && j < 7) {
                svg.push_str(&format!(r#"<rect x="{i}" y="{j}" width="1" height="1"/>"#));
            }
        }
    }
    svg.push_str("</svg>");
    QrCode {
        svg,
        caption: "QR tributario: VERI*FACTU".into(),
    }
}
