//! The XML embedded in a Factur-X / ZUGFeRD 2.x / XRechnung PDF.
//!
//! An attached file is an embedded-file stream (`/Type /EmbeddedFile`), which PDF always
//! writes as a top-level object, never inside an object stream. So the file's bytes are
//! scanned for those streams rather than parsed as a whole PDF: each is inflated (only
//! `FlateDecode`, or no filter) with a cap on its size, and the first that is an XML
//! invoice is the one read. A PDF with none is refused as `FX-EMBED`.

use std::io::Read;

use super::ReadError;

/// Largest inflated attachment (an invoice XML of 500 lines is well under 1 MiB).
const MAX_XML: u64 = 16 * 1024 * 1024;
/// Most embedded files looked at.
const MAX_ATTACHMENTS: usize = 32;
/// Most occurrences of `/EmbeddedFile` looked at.
const MAX_HITS: usize = 256;
/// How far from the name a stream's dictionary may start or end.
const DICT_SPAN: usize = 4096;

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

/// The first embedded XML invoice of a PDF.
pub fn embedded_xml(pdf: &[u8]) -> Result<Vec<u8>, ReadError> {
    if find(pdf, b"/Encrypt", 0).is_some() {
        return Err(ReadError::new(
            "PDF",
            "the PDF is encrypted; a Factur-X invoice is not",
        ));
    }
    // Every scan is bounded: at most MAX_HITS occurrences of the name are looked at, and a
    // stream's dictionary is looked for within DICT_SPAN bytes of it.
    let mut hits = 0;
    let mut seen = 0;
    let mut at = 0;
    let mut last_error = None;
    while let Some(hit) = find(pdf, b"/EmbeddedFile", at) {
        at = hit + 1;
        hits += 1;
        if hits > MAX_HITS {
            break;
        }
        // `/EmbeddedFiles` is the name tree, not a stream.
        if pdf.get(hit + 13) == Some(&b's') {
            continue;
        }
        let before = hit.saturating_sub(DICT_SPAN);
        let Some(dict_start) = pdf[before..hit].windows(2).rposition(|w| w == b"<<") else {
            continue;
        };
        let dict_start = before + dict_start;
        let window_end = (hit + DICT_SPAN).min(pdf.len());
        let Some(stream_kw) = find(&pdf[..window_end], b"stream", hit) else {
            continue;
        };
        // The dictionary of this stream must not have ended in an `endobj` before `stream`.
        if find(&pdf[..stream_kw], b"endobj", hit).is_some() {
            continue;
        }
        seen += 1;
        if seen > MAX_ATTACHMENTS {
            break;
        }
        let dict = &pdf[dict_start..stream_kw];
        let mut start = stream_kw + b"stream".len();
        if pdf.get(start) == Some(&b'\r') {
            start += 1;
        }
        if pdf.get(start) == Some(&b'\n') {
            start += 1;
        }
        let Some(end) = find(pdf, b"endstream", start) else {
            break;
        };
        let raw = &pdf[start..end];
        match inflate(dict, raw) {
            Ok(bytes) if looks_like_invoice(&bytes) => return Ok(bytes),
            Ok(_) => {}
            Err(e) => last_error = Some(e),
        }
        at = end;
    }
    Err(last_error.unwrap_or_else(|| {
        ReadError::new(
            "FX-EMBED",
            "the PDF has no embedded XML invoice (factur-x.xml, zugferd-invoice.xml or \
             xrechnung.xml); send the XML, or a Factur-X / ZUGFeRD PDF",
        )
    }))
}

fn inflate(dict: &[u8], raw: &[u8]) -> Result<Vec<u8>, ReadError> {
    let flate = find(dict, b"/FlateDecode", 0).is_some();
    let other_filter = find(dict, b"/Filter", 0).is_some() && !flate;
    if other_filter {
        return Err(ReadError::new(
            "PDF",
            "the embedded XML uses a filter other than FlateDecode",
        ));
    }
    if !flate {
        return Ok(trim_eol(raw).to_vec());
    }
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(raw)
        .take(MAX_XML + 1)
        .read_to_end(&mut out)
        .map_err(|e| ReadError::new("PDF", format!("the embedded file cannot be inflated: {e}")))?;
    if out.len() as u64 > MAX_XML {
        return Err(ReadError::new(
            "PDF",
            format!(
                "the embedded file is larger than {} MiB once inflated",
                MAX_XML / (1024 * 1024)
            ),
        ));
    }
    Ok(out)
}

fn trim_eol(raw: &[u8]) -> &[u8] {
    let mut end = raw.len();
    while end > 0 && matches!(raw[end - 1], b'\r' | b'\n') {
        end -= 1;
    }
    &raw[..end]
}

/// Whether inflated bytes are an invoice in one of the syntaxes read (by its root element).
fn looks_like_invoice(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(4096)];
    [
        &b"CrossIndustryInvoice"[..],
        b"urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
        b"urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
    ]
    .iter()
    .any(|n| find(head, n, 0).is_some())
}
