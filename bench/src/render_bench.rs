//! In-process render benchmark (issue 5): how long Typst takes to turn an invoice into a
//! PDF in this process, without HTTP or the database, next to what warm headless Chromium
//! takes for the same invoice (`bench/chromium/print.mjs`).
//!
//! `render_bench [--runs N] [--runs-500 M] [--warmup W] [--dump-json FILE] [--pdf-dir DIR]`
//! renders a one-page invoice N times (default 200) and a 500-line invoice M times (default
//! 10), each after W untimed renders (default 5), and prints one JSON line with the median
//! and p99 in milliseconds of:
//! - `one_page`, `lines_500`: a distinct document every time (the reference changes), so
//!   Typst lays the page out again: what serving many different invoices costs;
//! - `one_page_same`, `lines_500_same`: the same document again and again, which Typst's
//!   memo cache shortens: what `loadgen --scenario pdf` measures through HTTP.
//!
//! `--profile 500,1,500 [--pdf-dir DIR]` renders only invoices of these line counts (see
//! [`profile`]), for profilers.
//!
//! `--dump-json FILE` writes `{"one_page": doc, "lines_500": doc}` (the renderer's own
//! `InvoiceDocument` model) for the Chromium script and exits; `--pdf-dir DIR` also writes
//! the two PDFs there, to look at.
#![forbid(unsafe_code)]
// Like the service's crates: no unwrap outside tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use std::time::Instant;

use render::{BankAccount, InvoiceDocument};
use serde_json::json;

/// The service's allocator tuned as in the server (see `crates/cli/src/main.rs`), so renders cost here what they
/// cost in the server.
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

fn num(args: &[String], name: &str, default: usize) -> anyhow::Result<usize> {
    arg(args, name).map_or(Ok(default), |s| {
        s.parse().map_err(|e| anyhow::anyhow!("{name} {s}: {e}"))
    })
}

/// The sample invoice of the render crate with a due date and a bank account (IBAN): one page.
fn one_page() -> InvoiceDocument {
    let mut doc = render::sample_document();
    doc.reference = Some("F2026-0001".into());
    doc.issuer.name = "Bench Issuer SL".into();
    doc.recipient.name = "Bench Customer SA".into();
    doc.due_date = doc.issue_date.checked_add_days(chrono::Days::new(30));
    doc.lines[0].concept = "Consulting services, January".into();
    doc.bank_accounts = vec![BankAccount {
        name: "Main account".into(),
        bank_name: Some("Banco Bench".into()),
        iban: Some("ES9121000418450200051332".into()),
        bic: Some("CAIXESBBXXX".into()),
    }];
    doc
}

/// The one-page invoice with its line repeated to 500 lines (the most a document may have),
/// totals and tax breakdown summed to match.
fn lines_500() -> InvoiceDocument {
    lines_n(500)
}

/// The one-page invoice with its line repeated to `count` lines, totals summed to match.
fn lines_n(count: usize) -> InvoiceDocument {
    let mut doc = one_page();
    let line = doc.lines[0].clone();
    doc.lines = (1..=count)
        .map(|i| {
            let mut l = line.clone();
            l.concept = format!("Consulting services, item {i}");
            l
        })
        .collect();
    let n = doc.lines.len() as i64;
    for entry in &mut doc.tax_breakdown {
        entry.base_minor *= n;
        entry.amount_minor *= n;
    }
    doc.totals.net_minor *= n;
    doc.totals.tax_minor *= n;
    doc.totals.withholding_minor *= n;
    doc.totals.total_minor *= n;
    doc
}

/// Median and p99 of `runs` timed renders (after `warmup` untimed ones), in milliseconds.
fn measure(
    base: &InvoiceDocument,
    distinct: bool,
    warmup: usize,
    runs: usize,
) -> anyhow::Result<serde_json::Value> {
    let mut times = Vec::with_capacity(runs);
    let mut bytes = 0;
    for i in 0..warmup + runs {
        let mut doc = base.clone();
        if distinct {
            doc.reference = Some(format!("F2026-{:05}", i + 1));
        }
        let start = Instant::now();
        let pdf = render::render_invoice(&doc)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        anyhow::ensure!(pdf.starts_with(b"%PDF"), "the render is not a PDF");
        bytes = pdf.len();
        if i >= warmup {
            times.push(ms);
        }
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        times
            .get(((times.len() as f64 - 1.0) * p).round() as usize)
            .copied()
            .unwrap_or(0.0)
    };
    let round = |v: f64| (v * 100.0).round() / 100.0;
    Ok(
        json!({"runs": runs, "median_ms": round(pct(0.5)), "p99_ms": round(pct(0.99)), "pdf_bytes": bytes}),
    )
}

fn main() -> anyhow::Result<()> {
    allocator::tune();
    let args: Vec<String> = std::env::args().collect();
    let (one, long) = (one_page(), lines_500());
    if let Some(file) = arg(&args, "--dump-json") {
        let data = json!({"one_page": one, "lines_500": long});
        std::fs::write(&file, serde_json::to_vec_pretty(&data)?)?;
        eprintln!("wrote {file}");
        return Ok(());
    }
    if let Some(list) = arg(&args, "--profile") {
        return profile(&list, arg(&args, "--pdf-dir"));
    }
    let runs = num(&args, "--runs", 200)?;
    let runs_500 = num(&args, "--runs-500", 10)?;
    let warmup = num(&args, "--warmup", 5)?;
    anyhow::ensure!(
        runs > 0 && runs_500 > 0,
        "--runs and --runs-500 must be positive"
    );

    // The first render of a process loads fonts, the standard library and the templates.
    let start = Instant::now();
    render::warm_up();
    let pdf = render::render_invoice(&one)?;
    let first_ms = start.elapsed().as_secs_f64() * 1000.0;
    if let Some(dir) = arg(&args, "--pdf-dir") {
        std::fs::create_dir_all(&dir)?;
        std::fs::write(format!("{dir}/one_page.pdf"), &pdf)?;
        std::fs::write(
            format!("{dir}/lines_500.pdf"),
            render::render_invoice(&long)?,
        )?;
    }
    let out = json!({
        "first_render_ms": (first_ms * 100.0).round() / 100.0,
        "one_page": measure(&one, true, warmup, runs)?,
        "one_page_same": measure(&one, false, warmup, runs)?,
        "lines_500": measure(&long, true, warmup.min(2), runs_500)?,
        "lines_500_same": measure(&long, false, warmup.min(2), runs_500)?,
    });
    println!("{out}");
    Ok(())
}

/// `--profile 500,1,500`: after the warm-up only, renders invoices of these line counts in
/// that order (each a distinct document) and prints each time to stderr. For profilers
/// (`valgrind --tool=massif` or `callgrind`), which then see nothing but these renders.
/// With `--pdf-dir DIR`, each PDF is written there as `profile-{i}-{lines}.pdf`. Massif
/// cannot see mimalloc's heap: profile a copy built without the `#[global_allocator]` above.
fn profile(list: &str, pdf_dir: Option<String>) -> anyhow::Result<()> {
    render::warm_up();
    if let Some(dir) = &pdf_dir {
        std::fs::create_dir_all(dir)?;
    }
    for (i, count) in list.split(',').enumerate() {
        let count: usize = count
            .trim()
            .parse()
            .map_err(|e| anyhow::anyhow!("--profile {list}: {e}"))?;
        let mut doc = if count == 1 {
            one_page()
        } else {
            lines_n(count)
        };
        doc.reference = Some(format!("P2026-{:05}", i + 1));
        let start = Instant::now();
        let pdf = render::render_invoice(&doc)?;
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        eprintln!("{count} lines: {ms:.2} ms, {} bytes", pdf.len());
        if let Some(dir) = &pdf_dir {
            std::fs::write(format!("{dir}/profile-{}-{count}.pdf", i + 1), &pdf)?;
        }
    }
    Ok(())
}
