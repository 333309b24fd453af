//! `facturx::add_xmp` on a PDF/A-3b that Typst writes (through the `render` crate) with the
//! Factur-X XML attached: the result passes the kit's Factur-X / PDF/A-3 checks, keeps
//! Typst's revision byte for byte, and is deterministic. No generated PDF is committed: each
//! run renders its own.

mod common;

use einvoice::{Format, facturx::add_xmp, xml};

/// The domestic multi-rate case as the Factur-X XML, attached to the render crate's sample.
fn rendered() -> (String, Vec<u8>) {
    let (_, doc) = common::cases()
        .into_iter()
        .next()
        .expect("at least one case");
    let xml = xml(&doc, Format::Facturx).expect("a valid Factur-X");
    let mut pdf_doc = render::sample_document();
    pdf_doc.facturx = Some(xml.clone());
    (xml, render::render_invoice(&pdf_doc).expect("renders"))
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

#[test]
fn the_xmp_makes_typsts_pdf_a_factur_x_that_the_kit_accepts() {
    let (xml, typst) = rendered();
    // What Typst writes by itself: PDF/A-3b with the attachment, but no Factur-X XMP.
    assert!(typst.starts_with(b"%PDF-"));
    assert_eq!(count(&typst, b"<pdfaid:part>3</pdfaid:part>"), 1);
    assert_eq!(count(&typst, b"/AFRelationship/Alternative"), 1);
    assert_eq!(count(&typst, b"fx:DocumentType"), 0);

    let pdf = add_xmp(&typst).expect("the XMP is added");
    // An incremental update: Typst's revision untouched, one more revision after it.
    assert!(pdf.starts_with(&typst));
    assert_eq!(count(&pdf, b"%%EOF"), count(&typst, b"%%EOF") + 1);
    let update = &pdf[typst.len()..];
    assert_eq!(
        count(update, b"<fx:DocumentType>INVOICE</fx:DocumentType>"),
        1
    );
    assert_eq!(
        count(
            update,
            b"<fx:DocumentFileName>factur-x.xml</fx:DocumentFileName>"
        ),
        1
    );
    assert_eq!(
        count(update, b"<pdfaSchema:prefix>fx</pdfaSchema:prefix>"),
        1
    );
    // The same input gives the same bytes.
    assert_eq!(add_xmp(&typst).expect("again"), pdf);
    assert_eq!(rendered().1, typst);

    let dir = common::scratch("facturx-pdf");
    let before = dir.join("typst-only.pdf");
    let after = dir.join("factur-x.pdf");
    let plain = dir.join("factur-x.xml");
    std::fs::write(&before, &typst).expect("written");
    std::fs::write(&after, &pdf).expect("written");
    std::fs::write(&plain, &xml).expect("written");
    let Some((_, report)) = common::validate("facturx", &[after.clone(), before.clone()]) else {
        return;
    };
    assert!(
        report.contains("factur-x.pdf: 0 fatal, 0 warnings"),
        "the Factur-X PDF is not clean:\n{report}"
    );
    // Without the XMP the kit refuses it, so the check above is the XMP's doing.
    assert!(report.contains("FATAL FX-XMP"), "{report}");
    assert!(!report.contains("typst-only.pdf: 0 fatal"), "{report}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_pdf_it_cannot_update_is_refused_with_the_reason() {
    let (_, typst) = rendered();
    // Cut before the last cross-reference: no startxref to follow.
    let cut = typst.len() - 40;
    let err = add_xmp(&typst[..cut]).expect_err("a truncated PDF");
    assert!(err.to_string().contains("Factur-X"), "{err}");
}
