//! In-process e-invoice benchmark (issue #30): how long this process takes to write each
//! e-invoice format of one issued invoice, and to make its Factur-X PDF (the CII, the
//! PDF/A-3b render with the CII attached, and the Factur-X XMP), without HTTP or the
//! database.
//!
//! `einvoice_bench [--runs N] [--pdf-runs M] [--dump-dir DIR]` writes each of the seven
//! formats N times (default 2,000) and the Factur-X PDF M times (default 200), each after a
//! few untimed runs, every run a distinct invoice (its number changes), and prints one JSON
//! line: per format the median and p99 in microseconds and the size in bytes; for the PDF
//! the median and p99 in milliseconds.
//!
//! The invoice is `document::samples::domestic_multirate` (four lines at three VAT rates,
//! every optional field set), built the way the service builds a document at issue.
//!
//! `--dump-dir DIR` writes, for the Python comparison (`bench/python/facturx_weasyprint.py`),
//! `invoice.json` (`{"one_page": doc}`, the renderer's model of the same invoice, the shape
//! `bench/chromium/print.mjs` reads), `factur-x.xml` (its CII) and `facturx.pdf` (ours, to
//! compare), then exits.
#![forbid(unsafe_code)]
// Like the service's crates: no unwrap outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use std::time::Instant;

use einvoice::Format;
use serde_json::json;

/// The service's allocator tuned as in the server (see `crates/cli/src/main.rs`).
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

const WARMUP: usize = 20;

fn num(args: &[String], name: &str, default: usize) -> anyhow::Result<usize> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => {
            let s = args
                .get(i + 1)
                .ok_or_else(|| anyhow::anyhow!("{name} needs a value"))?;
            s.parse().map_err(|e| anyhow::anyhow!("{name} {s}: {e}"))
        }
    }
}

/// The sample invoice numbered `n`.
fn numbered(base: &document::Invoice, n: usize) -> document::Invoice {
    let mut doc = base.clone();
    doc.number = format!("F2026-{n:05}");
    doc.payment.remittance.clone_from(&doc.number);
    doc
}

/// The Factur-X PDF of `doc`, as the service makes an issued invoice's PDF
/// (`api::routes::pdf::render_facturx`): its CII, the renderer's view of the document with
/// the CII attached, the PDF/A-3b render, the Factur-X XMP.
fn facturx_pdf(doc: &document::Invoice) -> anyhow::Result<Vec<u8>> {
    let xml = einvoice::xml(doc, Format::Facturx)?;
    let mut view = api::documents::views::render(
        doc,
        render::DocumentKind::Invoice,
        render::DocumentStatus::Issued,
        None,
    );
    view.facturx = Some(xml);
    let pdf = render::render_invoice(&view)?;
    Ok(einvoice::facturx::add_xmp(&pdf)?)
}

/// Median and p99 of `times` (sorted here), in the unit they are in, rounded to 0.01.
fn summary(mut times: Vec<f64>) -> (f64, f64) {
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let round = |v: f64| (v * 100.0).round() / 100.0;
    (round(pct(0.5)), round(pct(0.99)))
}

fn main() -> anyhow::Result<()> {
    allocator::tune();
    let args: Vec<String> = std::env::args().collect();
    let base = document::samples::domestic_multirate();
    if let Some(i) = args.iter().position(|a| a == "--dump-dir") {
        let dir = args
            .get(i + 1)
            .ok_or_else(|| anyhow::anyhow!("--dump-dir needs a directory"))?;
        std::fs::create_dir_all(dir)?;
        let view = api::documents::views::render(
            &base,
            render::DocumentKind::Invoice,
            render::DocumentStatus::Issued,
            None,
        );
        std::fs::write(
            format!("{dir}/invoice.json"),
            serde_json::to_vec_pretty(&json!({ "one_page": view }))?,
        )?;
        std::fs::write(
            format!("{dir}/factur-x.xml"),
            einvoice::xml(&base, Format::Facturx)?,
        )?;
        std::fs::write(format!("{dir}/facturx.pdf"), facturx_pdf(&base)?)?;
        eprintln!("wrote {dir}/invoice.json, factur-x.xml and facturx.pdf");
        return Ok(());
    }
    let runs = num(&args, "--runs", 2000)?;
    let pdf_runs = num(&args, "--pdf-runs", 200)?;
    anyhow::ensure!(
        runs > 0 && pdf_runs > 0,
        "--runs and --pdf-runs must be positive"
    );

    let mut formats = serde_json::Map::new();
    for format in Format::ALL {
        let mut times = Vec::with_capacity(runs);
        let mut bytes = 0;
        for i in 0..WARMUP + runs {
            let doc = numbered(&base, i + 1);
            let start = Instant::now();
            let xml = einvoice::xml(&doc, format)?;
            let us = start.elapsed().as_secs_f64() * 1e6;
            bytes = xml.len();
            if i >= WARMUP {
                times.push(us);
            }
        }
        let (median, p99) = summary(times);
        formats.insert(
            format.name().to_owned(),
            json!({"runs": runs, "median_us": median, "p99_us": p99, "bytes": bytes}),
        );
    }

    render::warm_up();
    let mut times = Vec::with_capacity(pdf_runs);
    let mut bytes = 0;
    for i in 0..5 + pdf_runs {
        let doc = numbered(&base, i + 1);
        let start = Instant::now();
        let pdf = facturx_pdf(&doc)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(pdf.starts_with(b"%PDF"), "the Factur-X render is not a PDF");
        bytes = pdf.len();
        if i >= 5 {
            times.push(ms);
        }
    }
    let (median, p99) = summary(times);
    let out = json!({
        "lines": base.lines.len(),
        "formats": formats,
        "facturx_pdf": {"runs": pdf_runs, "median_ms": median, "p99_ms": p99, "bytes": bytes},
    });
    println!("{out}");
    Ok(())
}
