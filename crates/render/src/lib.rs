//! Invoice PDFs rendered with Typst in a sandbox: bytes and structs in, PDF bytes out.
//!
//! - **Data never becomes code.** [`render_invoice`] turns an [`InvoiceDocument`] into a
//!   JSON view (every amount, date and label already formatted, see `view.rs`) that the
//!   embedded templates read with `json("/data.json")` and only place as text. No user
//!   string is ever concatenated into Typst source.
//! - **A closed world.** The Typst world (`world.rs`) serves the embedded templates, the
//!   embedded fonts of `typst-assets`, and per-render in-memory files (the data, the QR
//!   SVG, the company snippets). Any other path, package or system font is unavailable;
//!   there is no network. Fonts and the standard library are loaded once per process.
//! - **Company snippets** (footer and post-invoice Typst) compile in that same world, with
//!   `{{key}}` placeholders replaced by data lookups (rules in [`snippet`]), a size cap, and a
//!   deadline ([`Limits::timeout`]); errors name the snippet line and column.
//! - **Factur-X.** A document that carries its Factur-X XML ([`InvoiceDocument::facturx`])
//!   is written as PDF/A-3b with that XML attached as `factur-x.xml` (relationship
//!   `Alternative`, `text/xml`, dated by the issue date); the `einvoice` crate's
//!   `facturx::add_xmp` then adds the Factur-X XMP. What PDF/A forbids is refused with
//!   [`RenderError::PdfA`], naming the snippet line when a snippet is why.
//! - **Reproducible.** The same document gives byte-identical PDFs: the PDF date is the
//!   issue date, `datetime.today()` is the issue date, and no random ids are written.
//!
//! Renders run on a few long-lived render threads, reused so each keeps a warm heap.
//!
//! Limits of in-process sandboxing: Typst cannot be interrupted, so a render past its
//! deadline returns [`RenderError::Timeout`] at once but its thread runs on until Typst
//! finishes, then exits (at most [`MAX_ABANDONED`] such threads; then renders get
//! [`RenderError::Busy`]).
//! Memory is not bounded in process (Rust cannot cap one thread's allocations): a hostile
//! snippet such as `#range(1000000000)` allocates gigabytes. So a server runs everything with
//! company snippets in a child process with an address-space limit, killed at a deadline;
//! [`isolated`] is the child's half of that.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod compile;
mod error;
mod format;
mod i18n;
pub mod isolated;
pub mod model;
mod sample;
pub mod snippet;
mod view;
mod world;

use std::time::Duration;

use chrono::Datelike;
use typst::foundations::Datetime;
use typst_pdf::Timestamp;

pub use crate::compile::{MAX_ABANDONED, threads_started as render_threads_started};
pub use crate::error::{RenderError, SnippetSlot};
pub use crate::model::*;
pub use crate::snippet::MAX_SNIPPET_BYTES;

/// Bounds on one render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// How long a render may take before it is abandoned with [`RenderError::Timeout`].
    pub timeout: Duration,
}

impl Default for Limits {
    /// Ten seconds: a one-page invoice takes a few milliseconds, a 500-line one well under a second.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(10),
        }
    }
}

/// Renders an invoice, corrective invoice or proforma (by [`InvoiceDocument::kind`]) to PDF.
pub fn render_invoice(doc: &InvoiceDocument) -> Result<Vec<u8>, RenderError> {
    render_invoice_with(doc, &Limits::default())
}

/// Renders like [`render_invoice`], with explicit limits.
pub fn render_invoice_with(doc: &InvoiceDocument, limits: &Limits) -> Result<Vec<u8>, RenderError> {
    let view = view::build(doc)?;
    let data = serde_json::to_vec(&view)
        .map_err(|err| RenderError::Internal(format!("cannot serialize the view: {err}")))?;
    let main = match doc.kind {
        DocumentKind::Proforma => world::PROFORMA_PATH,
        DocumentKind::Invoice | DocumentKind::CorrectiveInvoice => world::INVOICE_PATH,
    };
    let weight = compile::weight(data.len(), doc.lines.len());
    let mut sandbox = world::Sandbox::new(main, doc.issue_date);
    sandbox.add_file(world::DATA_PATH, data);
    if let Some(qr) = &doc.qr {
        sandbox.add_file(world::QR_PATH, qr.svg.clone().into_bytes());
    }
    let standard = match &doc.facturx {
        // Attached by the template from this file: the XML is data, never Typst code.
        Some(xml) => {
            sandbox.add_file(world::FACTURX_PATH, xml.clone().into_bytes());
            compile::Standard::PdfA3b
        }
        None => compile::Standard::Plain,
    };
    let mut snippets = compile::Snippets { files: Vec::new() };
    let slots = [
        (SnippetSlot::Footer, world::FOOTER_PATH, &doc.footer_typst),
        (SnippetSlot::Post, world::POST_PATH, &doc.post_typst),
    ];
    for (slot, path, text) in slots {
        // `view::build` sets `has_footer`/`has_post` by the same test.
        if let Some(text) = text.as_deref().filter(|t| !t.trim().is_empty()) {
            let prepared = snippet::Prepared::new(slot, text)?;
            let id = sandbox.add_source(path, prepared.text.clone());
            snippets.files.push((id, prepared));
        }
    }
    compile::to_pdf(
        sandbox,
        snippets,
        weight,
        compile::Output {
            timestamp: timestamp(doc.issue_date),
            standard,
        },
        limits.timeout,
    )
}

/// Renders a business report from its view: a JSON-serializable value whose every text is
/// already formatted (see the `reports` crate and `templates/report.typ` for its shape).
///
/// `date` is the report's generation date: the PDF's date, so the same figures on the same
/// day give the same bytes.
pub fn render_report(
    view: &impl serde::Serialize,
    date: chrono::NaiveDate,
    limits: &Limits,
) -> Result<Vec<u8>, RenderError> {
    let data = serde_json::to_vec(view)
        .map_err(|err| RenderError::Internal(format!("cannot serialize the report: {err}")))?;
    let weight = compile::weight(data.len(), 0);
    let mut sandbox = world::Sandbox::new(world::REPORT_PATH, date);
    sandbox.add_file(world::DATA_PATH, data);
    let snippets = compile::Snippets { files: Vec::new() };
    let output = compile::Output {
        timestamp: timestamp(date),
        standard: compile::Standard::Plain,
    };
    compile::to_pdf(sandbox, snippets, weight, output, limits.timeout)
}

/// Checks a company snippet before it is saved: size, placeholders, syntax, sandbox, time.
///
/// The snippet is rendered as the post-invoice snippet of a sample invoice, so anything
/// valid in the body passes (page breaks included). The sample is a Factur-X PDF/A-3b, as
/// every issued invoice is: a snippet that PDF/A forbids (a character no embedded font has,
/// a PDF image, a CMYK colour...) is refused with [`RenderError::PdfA`]. Use [`check_snippet_as`] with
/// [`SnippetSlot::Footer`] for a footer. Placeholders need no values: unknown keys render
/// as nothing.
pub fn check_snippet(snippet: &str) -> Result<(), RenderError> {
    check_snippet_as(SnippetSlot::Post, snippet)
}

/// Checks a company snippet in the slot it will be used in.
pub fn check_snippet_as(slot: SnippetSlot, snippet: &str) -> Result<(), RenderError> {
    let mut doc = sample::document();
    doc.facturx = Some(sample::FACTURX_XML.to_owned());
    match slot {
        SnippetSlot::Footer => doc.footer_typst = Some(snippet.to_owned()),
        SnippetSlot::Post => doc.post_typst = Some(snippet.to_owned()),
    }
    render_invoice(&doc).map(drop)
}

/// A one-line issued invoice in English with no snippets: what snippets are checked
/// against, and the base of the render benchmark (`bench/src/render_bench.rs`).
pub fn sample_document() -> InvoiceDocument {
    sample::document()
}

/// Loads fonts, the standard library and the templates now rather than on the first render.
pub fn warm_up() {
    world::warm_up();
}

fn timestamp(date: chrono::NaiveDate) -> Option<Timestamp> {
    let month = u8::try_from(date.month()).ok()?;
    let day = u8::try_from(date.day()).ok()?;
    let datetime = Datetime::from_ymd_hms(date.year(), month, day, 0, 0, 0)?;
    Some(Timestamp::new_utc(datetime))
}
