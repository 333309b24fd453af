//! A document with its Factur-X XML is a PDF/A-3b with `factur-x.xml` attached; what PDF/A
//! forbids in a company snippet is refused, naming the snippet line.

mod support;

use std::process::Command;

use render::*;
use support::*;

const XML: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rsm:CrossIndustryInvoice \
    xmlns:rsm=\"urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100\">\
    <!-- #panic(\"never code\") {{po}} --></rsm:CrossIndustryInvoice>\n";

fn facturx() -> InvoiceDocument {
    let mut doc = invoice();
    doc.facturx = Some(XML.into());
    doc
}

/// The files attached to `pdf` (`pdfdetach`), by name, with their bytes.
fn attachments(pdf: &[u8]) -> Vec<(String, Vec<u8>)> {
    let dir = tempdir("attachments");
    let path = dir.join("in.pdf");
    std::fs::write(&path, pdf).unwrap();
    let list = Command::new("pdfdetach")
        .arg("-list")
        .arg(&path)
        .output()
        .expect("pdfdetach runs (poppler-utils)");
    assert!(list.status.success());
    let names: Vec<String> = String::from_utf8(list.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(": ").map(|(_, n)| n.to_owned()))
        .collect();
    let out = names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let file = dir.join(format!("{i}.bin"));
            let saved = Command::new("pdfdetach")
                .args(["-save", &(i + 1).to_string(), "-o"])
                .arg(&file)
                .arg(&path)
                .status()
                .unwrap();
            assert!(saved.success());
            (name, std::fs::read(&file).unwrap())
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("facturx-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

#[test]
fn the_xml_is_attached_as_data_to_a_pdf_a_3b() {
    let pdf = render_invoice(&facturx()).unwrap_or_else(|e| panic!("{e}"));
    dump("facturx", &pdf);
    let files = attachments(&pdf);
    assert_eq!(
        files,
        vec![("factur-x.xml".to_owned(), XML.as_bytes().to_vec())]
    );
    assert_eq!(count(&pdf, b"/AFRelationship/Alternative"), 1);
    assert_eq!(count(&pdf, b"/Subtype/text#2Fxml"), 1);
    assert_eq!(count(&pdf, b"<pdfaid:part>3</pdfaid:part>"), 1, "PDF/A-3");
    assert_eq!(
        count(&pdf, b"<pdfaid:conformance>B</pdfaid:conformance>"),
        1
    );
    assert_eq!(count(&pdf, b"/OutputIntents"), 1);
    // The XML is data: its Typst-looking comment is neither run nor shown.
    let text = squash(&pdf_text(&pdf));
    assert!(text.contains("F2026-0042"), "{text}");
    assert!(!text.contains("never code"), "{text}");
    // Every font embedded.
    let fonts = fonts(&pdf);
    assert!(!fonts.is_empty());
    assert!(fonts.iter().all(|(_, embedded)| *embedded), "{fonts:?}");
    // Reproducible, like every render.
    assert_eq!(render_invoice(&facturx()).unwrap(), pdf);

    // Without the XML: no attachment, no PDF/A.
    let plain = render_invoice(&invoice()).unwrap();
    assert!(attachments(&plain).is_empty());
    assert_eq!(count(&plain, b"pdfaid:part"), 0);
}

#[test]
fn what_pdf_a_forbids_in_a_snippet_is_refused_with_its_line() {
    // A character no embedded font has: a blank box in a plain PDF, forbidden by PDF/A.
    let snippet = "Thanks\n#text(\"漢字\")";
    let mut doc = facturx();
    doc.footer_typst = Some(snippet.into());
    let Err(err) = render_invoice(&doc) else {
        panic!("PDF/A accepted a character without a glyph");
    };
    let RenderError::PdfA {
        slot: Some(SnippetSlot::Footer),
        message,
    } = &err
    else {
        panic!("not a PDF/A refusal of the footer: {err:?}");
    };
    assert!(message.contains("footer snippet, line 2"), "{message}");
    assert!(err.to_string().contains("PDF/A-3b"), "{err}");
    // The same document without the XML renders: the caller can fall back to it.
    doc.facturx = None;
    render_invoice(&doc).unwrap_or_else(|e| panic!("{e}"));
    // And a snippet is checked as it will be used: in a Factur-X PDF/A-3b.
    let checked = check_snippet_as(SnippetSlot::Footer, snippet).unwrap_err();
    assert!(
        matches!(&checked, RenderError::PdfA { message, .. } if message.contains("footer snippet, line 2")),
        "{checked:?}"
    );
    check_snippet_as(SnippetSlot::Footer, "Thanks").unwrap();
}
