//! The issued invoice's PDF is the Factur-X hybrid (`GET /v1/invoices/{id}/pdf`, and
//! `GET /v1/invoices/{id}/einvoice?format=facturx`): PDF/A-3b with the EN 16931 CII
//! attached as `factur-x.xml`, accepted by the official kit; drafts and proformas stay plain;
//! an invoice that cannot be a Factur-X still has its PDF.

use std::process::Command;

use serde_json::json;

use crate::einvoice::{einvoice, issued, ready_company, validate};
use crate::support::*;

/// The files attached to `pdf`, by name, with their bytes (poppler's `pdfdetach`).
fn attachments(pdf: &[u8]) -> Vec<(String, Vec<u8>)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.pdf");
    std::fs::write(&path, pdf).unwrap();
    let list = Command::new("pdfdetach")
        .arg("-list")
        .arg(&path)
        .output()
        .expect("pdfdetach is required (scripts/test installs poppler-utils)");
    assert!(list.status.success(), "{list:?}");
    let names: Vec<String> = String::from_utf8(list.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(": ").map(|(_, n)| n.to_owned()))
        .collect();
    names
        .into_iter()
        .enumerate()
        .map(|(i, name)| {
            let file = dir.path().join(format!("{i}.bin"));
            let saved = Command::new("pdfdetach")
                .args(["-save", &(i + 1).to_string(), "-o"])
                .arg(&file)
                .arg(&path)
                .status()
                .unwrap();
            assert!(saved.success());
            (name, std::fs::read(&file).unwrap())
        })
        .collect()
}

/// Each font of `pdf` (`pdffonts`) with whether it is embedded.
fn fonts(pdf: &[u8]) -> Vec<(String, bool)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.pdf");
    std::fs::write(&path, pdf).unwrap();
    let out = Command::new("pdffonts").arg(&path).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(2)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            // name type [encoding words] emb sub uni object ID: `emb` is 5th from the end.
            (cols[0].to_owned(), cols[cols.len() - 5] == "yes")
        })
        .collect()
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// A plain PDF: no attachment, no PDF/A identification.
fn assert_plain(pdf: &[u8], what: &str) {
    assert!(pdf.starts_with(b"%PDF-"), "{what}");
    assert!(attachments(pdf).is_empty(), "{what} has attachments");
    assert_eq!(count(pdf, b"pdfaid:part"), 0, "{what} claims PDF/A");
}

db_test!(an_issued_invoice_pdf_is_a_factur_x_the_kit_accepts, |app| {
    let account = ready_company(&app).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    app.set_time("2026-03-10T10:00:00Z");
    let draft = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "bank_account_ids": [account],
                "lines": [{"concept": "Consulting", "quantity": "7.5", "unit_price": 12000},
                          {"concept": "Travel & <expenses>", "unit_price": 4599}]}),
        )
        .await;
    let id = draft["id"].as_str().unwrap().to_owned();
    // A draft is a plain PDF.
    let r = app
        .get(&format!("/v1/invoices/{id}/pdf"), As::Human(&app.a))
        .await
        .expect(200);
    assert_plain(&r.body, "the draft");
    app.issue(&app.a, &id).await;
    let credit = app
        .call(
            "POST",
            &format!("/v1/invoices/{id}/correct"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    let credit = credit["id"].as_str().unwrap().to_owned();

    let mut files = Vec::new();
    for (name, id) in [("invoice", &id), ("credit-note", &credit)] {
        let pdf = app
            .get(&format!("/v1/invoices/{id}/pdf"), As::Human(&app.a))
            .await
            .expect(200);
        assert_eq!(pdf.content_type(), "application/pdf");
        // Byte-identical on every request, later too.
        app.set_time("2026-05-01T08:00:00Z");
        let again = app
            .get(&format!("/v1/invoices/{id}/pdf"), As::Ai(&app.a))
            .await
            .expect(200);
        assert!(again.body == pdf.body, "{name}: two requests, two PDFs");
        // `?format=facturx` is that same PDF, as an attachment.
        let fx = einvoice(&app, id, Some("facturx")).await.expect(200);
        assert_eq!(fx.content_type(), "application/pdf", "{name}");
        assert_eq!(fx.headers["x-einvoice-format"], "facturx");
        let disposition = fx.headers["content-disposition"].to_str().unwrap();
        assert!(
            disposition.starts_with("attachment;") && disposition.contains("-facturx.pdf"),
            "{disposition}"
        );
        assert!(
            fx.body == pdf.body,
            "{name}: ?format=facturx is not the PDF"
        );

        // factur-x.xml, and only it, is attached: the EN 16931 CII of the invoice, which
        // is what `?format=cii` serves (Factur-X EN 16931 is that CII).
        let cii = einvoice(&app, id, Some("cii")).await.expect(200).text();
        let attached = attachments(&pdf.body);
        assert_eq!(attached.len(), 1, "{name}: {attached:?}");
        assert_eq!(attached[0].0, "factur-x.xml");
        assert!(
            attached[0].1 == cii.as_bytes(),
            "{name}: the embedded XML is not the invoice's CII"
        );
        assert!(
            cii.contains("<ram:ID>urn:cen.eu:en16931:2017</ram:ID>"),
            "{cii}"
        );
        assert_eq!(count(&pdf.body, b"/AFRelationship/Alternative"), 1);
        // PDF/A-3 in Typst's XMP and in the XMP that replaces it.
        assert_eq!(count(&pdf.body, b"<pdfaid:part>3</pdfaid:part>"), 2);
        // The Factur-X XMP, added after Typst's revision.
        assert_eq!(
            count(
                &pdf.body,
                b"<fx:ConformanceLevel>EN 16931</fx:ConformanceLevel>"
            ),
            1
        );
        let fonts = fonts(&pdf.body);
        assert!(!fonts.is_empty(), "{name}: no fonts");
        assert!(fonts.iter().all(|(_, embedded)| *embedded), "{fonts:?}");
        // The text is the invoice's.
        let text = pdf_text_of(&pdf.body);
        assert!(text.contains("Dublin Customer Ltd"), "{text}");
        files.push((format!("{name}.pdf"), pdf.body));
    }
    // The kit's Factur-X and PDF/A-3 checks, and the embedded XML against EN 16931.
    validate("facturx", &files);

    // Proformas stay plain PDFs.
    let p = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(5000)})),
        )
        .await
        .expect(201)
        .json();
    let r = app
        .get(
            &format!("/v1/proformas/{}/pdf", p["id"].as_str().unwrap()),
            As::Human(&app.a),
        )
        .await
        .expect(200);
    assert_plain(&r.body, "the proforma");
});

db_test!(
    an_invoice_that_cannot_be_a_factur_x_still_has_its_pdf,
    |app| {
        let account = ready_company(&app).await;
        let customer = app.entity(&app.a, irish_customer()).await;
        // EN 16931 has no three-decimal currencies: no Factur-X, the plain PDF.
        let kwd = issued(
            &app,
            json!({"recipient_id": customer, "bank_account_ids": [account], "currency_code": "KWD",
            "exchange_rates": [{"from": "KWD", "to": "EUR", "rate": "2.95"}],
            "lines": one_line(12345)}),
        )
        .await;
        let r = einvoice(&app, &kwd, Some("facturx")).await.expect(400);
        assert!(r.text().contains("BR-DEC-09"), "{}", r.text());
        let pdf = app
            .get(&format!("/v1/invoices/{kwd}/pdf"), As::Human(&app.a))
            .await
            .expect(200);
        assert_plain(&pdf.body, "the KWD invoice");

        // A character no embedded font has (PDF/A forbids it), from a placeholder value into the company's footer: the
        // snippet was fine when saved, the PDF is served plain, and ?format=facturx says why.
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({
            "customPlaceholders": [{"key": "po", "label": "PO", "required": false}],
            "footerInvoiceTypst": "Thanks\nOrder {{po}}"})),
        )
        .await
        .expect(200);
        let private = issued(
            &app,
            json!({"recipient_id": customer, "bank_account_ids": [account],
            "custom_placeholder_values": [{"key": "po", "value": "PO-漢字-7"}],
            "lines": one_line(5000)}),
        )
        .await;
        let pdf = app
            .get(&format!("/v1/invoices/{private}/pdf"), As::Human(&app.a))
            .await
            .expect(200);
        assert_plain(&pdf.body, "the invoice with a character no font has");
        assert!(pdf_text_of(&pdf.body).contains("Order PO-"));
        let r = einvoice(&app, &private, Some("facturx")).await.expect(400);
        for expected in [
            "PDF/A-3b",
            "footer snippet, line 2",
            "PATCH /v1/company",
            "/pdf",
        ] {
            assert!(r.text().contains(expected), "{expected}: {}", r.text());
        }
        // Its XML formats are unaffected.
        einvoice(&app, &private, Some("cii")).await.expect(200);

        // A snippet that PDF/A forbids by itself is refused when saved, naming the line.
        let before = app.fingerprint().await;
        let r = app
            .call(
                "PATCH",
                "/v1/company",
                As::Human(&app.a),
                Some(json!({"postInvoiceTypst": "Terms\n\nLogo: 漢"})),
            )
            .await
            .expect(400);
        for expected in ["postInvoiceTypst", "PDF/A-3b", "line 3"] {
            assert!(r.text().contains(expected), "{expected}: {}", r.text());
        }
        assert_eq!(app.fingerprint().await, before);
    }
);
