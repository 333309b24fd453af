//! Invoice and proforma PDFs through the API: content, draft mark, frozen data, ETag, snippets.

use serde_json::json;

use crate::support::*;

db_test!(invoice_pdf_from_frozen_data, |app| {
    app.settle(&app.a).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({
        "customPlaceholders": [{"key": "po", "label": "PO", "required": false}],
        "footerInvoiceTypst": "Thanks for order {{po}}"})),
    )
    .await
    .expect(200);
    let account = app
        .call(
            "POST",
            "/v1/bank-accounts",
            As::Human(&app.a),
            Some(json!({"name": "Main", "iban": "IE29AIBK93115212345678", "bic": "AIBKIE2D"})),
        )
        .await
        .expect(201)
        .json();
    let customer = app.entity(&app.a, irish_customer()).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "bank_account_ids": [account["id"]],
        "custom_placeholder_values": [{"key": "po", "value": "PO-4711"}],
        "lines": [{"concept": "#panic(\"x\") $x^2$ *bold*", "quantity": 2, "unit_price": 123456}]}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    let draft = app
        .get(&format!("/v1/invoices/{id}/pdf"), As::Ai(&app.a))
        .await
        .expect(200);
    assert_eq!(draft.content_type(), "application/pdf");
    assert!(draft.body.starts_with(b"%PDF-"));
    let text = pdf_text_of(&draft.body);
    assert!(
        text.replace('\n', "").contains("DRAFT"),
        "draft mark: {text}"
    );
    let issued = app.issue(&app.a, id).await;
    let reference = issued["reference"].as_str().unwrap();
    let resp = app
        .get(&format!("/v1/invoices/{id}/pdf"), As::Ai(&app.a))
        .await
        .expect(200);
    let text = pdf_text_of(&resp.body);
    for expected in [
        reference,
        "Alpha Trading Ltd",
        "Dublin Customer Ltd",
        "IE6388047V",
        "2,469.12",
        "IE29 AIBK 9311 5212 3456 78",
        "Thanks for order PO-4711",
        "#panic(\"x\") $x^2$ *bold*",
    ] {
        assert!(text.contains(expected), "PDF lacks {expected:?}:\n{text}");
    }
    assert!(
        !text.replace('\n', "").contains("DRAFT"),
        "issued invoices carry no draft mark"
    );
    // Frozen: renaming the company afterwards does not change the issued PDF.
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"name": "Renamed Ltd"})),
    )
    .await
    .expect(200);
    let again = app
        .get(&format!("/v1/invoices/{id}/pdf"), As::Ai(&app.a))
        .await
        .expect(200);
    assert_eq!(again.body, resp.body, "same issued invoice, same bytes");
    let etag = again
        .headers
        .get("etag")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let cached = app
        .call_with(
            "GET",
            &format!("/v1/invoices/{id}/pdf"),
            &[
                ("authorization", format!("Bearer {}", app.a.token)),
                ("if-none-match", etag),
            ],
            None,
        )
        .await;
    assert_eq!(cached.status.as_u16(), 304);
    app.get(&format!("/v1/invoices/{id}/pdf"), As::Human(&app.b))
        .await
        .expect(404);
});

db_test!(proforma_pdf_and_snippet_checks, |app| {
    let customer = app.entity(&app.a, irish_customer()).await;
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
    let pdf = app
        .get(
            &format!("/v1/proformas/{}/pdf", p["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .expect(200);
    assert!(pdf_text_of(&pdf.body).contains(p["reference"].as_str().unwrap()));
    app.get(
        &format!("/v1/proformas/{}/pdf", p["id"].as_str().unwrap()),
        As::Human(&app.b),
    )
    .await
    .expect(404);
    // A snippet that does not compile, or reaches for files, is refused when saved, naming the line.
    let before = app.fingerprint().await;
    let r = app
        .call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"postInvoiceTypst": "ok\n#let x = (\n"})),
        )
        .await
        .expect(400);
    assert!(
        r.text().contains("postInvoiceTypst") && r.text().contains("line 2"),
        "{}",
        r.text()
    );
    let r = app
        .call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"footerInvoiceTypst": "#read(\"/etc/passwd\")"})),
        )
        .await
        .expect(400);
    assert!(r.text().contains("footerInvoiceTypst"), "{}", r.text());
    assert_eq!(app.fingerprint().await, before);
});

db_test!(
    entity_template_snippets_are_checked_when_saved_and_rendered,
    |app| {
        app.settle(&app.a).await;
        // Refused when created or changed, naming the field and the line; nothing is written.
        let before = app.fingerprint().await;
        let mut broken = irish_customer();
        broken["template"] = json!({"footer_typst": "ok\n#let x = (\n"});
        let r = app
            .call("POST", "/v1/entities", As::Human(&app.a), Some(broken))
            .await
            .expect(400);
        assert!(
            r.text().contains("template.footer_typst") && r.text().contains("line 2"),
            "{}",
            r.text()
        );
        let mut long = irish_customer();
        long["template"] = json!({"post_typst": "x".repeat(render::MAX_SNIPPET_BYTES + 1)});
        let r = app
            .call("POST", "/v1/entities", As::Human(&app.a), Some(long))
            .await
            .expect(400);
        assert!(
            r.text().contains("template.post_typst") && r.text().contains("16 KiB"),
            "{}",
            r.text()
        );
        assert_eq!(app.fingerprint().await, before);

        let mut customer = irish_customer();
        customer["template"] = json!({"footer_typst": "Entity footer for *Dublin*"});
        let customer = app.entity(&app.a, customer).await;
        let r = app
            .call(
                "PATCH",
                &format!("/v1/entities/{customer}"),
                As::Human(&app.a),
                Some(json!({"template": {"post_typst": "#read(\"/etc/passwd\")"}})),
            )
            .await
            .expect(400);
        assert!(r.text().contains("template.post_typst"), "{}", r.text());
        // Changing something else keeps the template that was checked.
        app.call(
            "PATCH",
            &format!("/v1/entities/{customer}"),
            As::Human(&app.a),
            Some(json!({"name": "Dublin Customer Two Ltd"})),
        )
        .await
        .expect(200);

        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(1000)}),
            )
            .await;
        let pdf = app
            .get(
                &format!("/v1/invoices/{}/pdf", d["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .expect(200);
        let text = pdf_text_of(&pdf.body);
        assert!(text.contains("Entity footer for Dublin"), "{text}");
        assert!(text.contains("Dublin Customer Two Ltd"), "{text}");
    }
);
