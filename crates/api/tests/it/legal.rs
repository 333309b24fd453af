//! The legal content of an invoice (VAT Directive art. 226, EN 16931): the fields a draft
//! carries, what issuing refuses, the due date from payment terms, and what the PDF prints.

use serde_json::{Value, json};

use crate::support::*;

/// A German business customer with a full address and a VIES VAT id.
fn german_customer() -> Value {
    json!({
        "name": "Kunde AG", "type": "DE:AG", "vies_vat_id": "DE136695976",
        "address": {"lines": ["Hauptstraße 5"], "city": "Berlin", "zipcode": "10115", "country": "DE"}
    })
}

db_test!(
    a_draft_carries_the_legal_fields_and_the_issued_invoice_keeps_them,
    |app| {
        app.settle(&app.a).await;
        let customer = app.entity(&app.a, irish_customer()).await;
        app.set_time("2026-03-10T10:00:00Z");
        let draft = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(10000),
                   "buyer_reference": "PO-DEPT-7", "order_reference": "ORDER 2026/15",
                   "period_start": "2026-02-01", "period_end": "2026-02-28",
                   "notes": "Thank you.\nPay by transfer.", "due_date": "2026-04-15"}),
            )
            .await;
        assert_eq!(draft["buyer_reference"], "PO-DEPT-7");
        assert_eq!(draft["order_reference"], "ORDER 2026/15");
        assert_eq!(draft["period_start"], "2026-02-01");
        assert_eq!(draft["period_end"], "2026-02-28");
        assert_eq!(draft["notes"], "Thank you.\nPay by transfer.");
        // A plain date is 00:00 UTC that day.
        assert_eq!(draft["due_date"], "2026-04-15T00:00:00Z");
        let id = draft["id"].as_str().unwrap();

        // PATCH changes one field and keeps the others; null clears.
        let patched = app
            .call(
                "PATCH",
                &format!("/v1/invoices/{id}"),
                As::Human(&app.a),
                Some(json!({"order_reference": null, "delivery_date": "2026-02-27"})),
            )
            .await
            .expect(200)
            .json();
        assert!(patched["order_reference"].is_null());
        assert_eq!(patched["delivery_date"], "2026-02-27");
        assert_eq!(patched["buyer_reference"], "PO-DEPT-7");

        let issued = app.issue(&app.a, id).await;
        for field in [
            "buyer_reference",
            "delivery_date",
            "period_start",
            "period_end",
            "notes",
        ] {
            assert_eq!(issued[field], patched[field], "{field}");
        }
        assert_eq!(issued["due_date"], "2026-04-15T00:00:00Z");
        // Reading it again gives the same (from its one stored document).
        let again = app
            .call(
                "GET",
                &format!("/v1/invoices/{id}"),
                As::Human(&app.a),
                None,
            )
            .await
            .expect(200)
            .json();
        assert_eq!(again, issued);
    }
);

db_test!(bad_legal_fields_are_refused_and_nothing_is_written, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    for (body, says) in [
        (
            json!({"period_start": "2026-02-01"}),
            "`period_start` and `period_end` go together",
        ),
        (
            json!({"period_start": "2026-03-01", "period_end": "2026-02-01"}),
            "`period_start` must not be after `period_end`",
        ),
        (
            json!({"buyer_reference": "a\u{7}b"}),
            "`buyer_reference` must not contain control",
        ),
        (
            json!({"notes": "x".repeat(2001)}),
            "`notes` must be at most 2000",
        ),
        (json!({"due_date": "next tuesday"}), "neither a date"),
    ] {
        let mut req = json!({"recipient_id": customer, "lines": one_line(100)});
        for (k, v) in body.as_object().unwrap() {
            req[k] = v.clone();
        }
        let resp = app
            .call("POST", "/v1/invoices", As::Human(&app.a), Some(req))
            .await
            .expect(400);
        assert!(resp.text().contains(says), "{}", resp.text());
    }
    let list = app
        .call("GET", "/v1/invoices", As::Human(&app.a), None)
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"].as_array().unwrap().len(), 0);
});

db_test!(
    issuing_refuses_what_the_law_would_not_accept_and_names_each_item,
    |app| {
        app.settle(&app.a).await;
        // A business without an address, and an intra-EU reverse charge without a VAT id.
        let bare = app
            .entity(
                &app.a,
                json!({"name": "Bare GmbH", "type": "DE:GmbH", "address": {"country": "DE"}}),
            )
            .await;
        let draft = app
            .draft(
                &app.a,
                json!({"recipient_id": bare, "lines": one_line(10000)}),
            )
            .await;
        let id = draft["id"].as_str().unwrap();
        let resp = app
            .call(
                "POST",
                &format!("/v1/invoices/{id}/issue"),
                As::Human(&app.a),
                None,
            )
            .await
            .expect(400);
        let text = resp.text();
        for says in [
            "the recipient's street address is missing",
            "the recipient's city is missing",
            "the recipient's post code is missing",
            &format!("PATCH /v1/entities/{bare} `address.city`"),
            "The invoice stays a draft",
        ] {
            assert!(text.contains(says), "{says}: {text}");
        }
        // Nothing was issued and no number was taken: fixing the address lets it issue as 1.
        let still = app
            .call(
                "GET",
                &format!("/v1/invoices/{id}"),
                As::Human(&app.a),
                None,
            )
            .await
            .expect(200)
            .json();
        assert_eq!(still["status"], "draft");
        app.call(
        "PATCH",
        &format!("/v1/entities/{bare}"),
        As::Human(&app.a),
        Some(json!({"address": {"lines": ["Ring 1"], "city": "Köln", "zipcode": "50667", "country": "DE"}})),
    )
    .await
    .expect(200);
        let issued = app.issue(&app.a, id).await;
        assert_eq!(issued["invoice_number"], 1);

        // A reverse charge names the recipient's VAT id: without one (a fiscal id only, so a
        // business, but no VIES id) the engine charges Irish VAT instead; with a VIES id it is
        // a reverse charge, which issues.
        let german = app.entity(&app.a, german_customer()).await;
        let rc = app
            .draft(
                &app.a,
                json!({"recipient_id": german, "lines": one_line(10000)}),
            )
            .await;
        assert_eq!(rc["treatment"], "reverse_charge");
        let issued = app.issue(&app.a, rc["id"].as_str().unwrap()).await;
        assert_eq!(issued["recipient"]["vies_vat_id"], "DE136695976");
    }
);

db_test!(
    the_due_date_follows_the_recipients_then_the_companys_payment_terms,
    |app| {
        app.settle(&app.a).await;
        app.set_time("2026-03-10T10:00:00Z");
        let company = app
            .call("GET", "/v1/company", As::Human(&app.a), None)
            .await
            .expect(200)
            .json();
        assert_eq!(company["paymentTermsDays"], 30);
        let customer = app.entity(&app.a, irish_customer()).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        assert!(d["due_date"].is_null());
        let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        assert_eq!(issued["due_date"], "2026-04-09T00:00:00Z");

        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"paymentTermsDays": 14})),
        )
        .await
        .expect(200);
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        assert_eq!(
            app.issue(&app.a, d["id"].as_str().unwrap()).await["due_date"],
            "2026-03-24T00:00:00Z"
        );

        app.call(
            "PATCH",
            &format!("/v1/entities/{customer}"),
            As::Human(&app.a),
            Some(json!({"payment_terms_days": 0})),
        )
        .await
        .expect(200);
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        assert_eq!(
            app.issue(&app.a, d["id"].as_str().unwrap()).await["due_date"],
            "2026-03-10T00:00:00Z"
        );

        for (path, body, says) in [
            (
                "/v1/company".to_owned(),
                json!({"paymentTermsDays": 400}),
                "`paymentTermsDays` must be between 0 and 365",
            ),
            (
                format!("/v1/entities/{customer}"),
                json!({"payment_terms_days": -1}),
                "`payment_terms_days` must be between 0 and 365",
            ),
        ] {
            let r = app
                .call("PATCH", &path, As::Human(&app.a), Some(body))
                .await
                .expect(400);
            assert!(r.text().contains(says), "{}", r.text());
        }
    }
);

db_test!(
    company_and_entity_einvoice_settings_are_checked_and_kept,
    |app| {
        app.settle(&app.a).await;
        let c = app
            .call(
                "PATCH",
                "/v1/company",
                As::Human(&app.a),
                Some(
                    json!({"electronicAddress": {"scheme": "9930", "id": "DE987654328"},
                        "contactName": "Ana Pérez", "reminderDays": [14, 7, 7]}),
                ),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(
            c["electronicAddress"],
            json!({"scheme": "9930", "id": "DE987654328"})
        );
        assert_eq!(c["contactName"], "Ana Pérez");
        assert_eq!(c["reminderDays"], json!([7, 14]));
        for (body, says) in [
            (
                json!({"electronicAddress": {"scheme": "99", "id": "x"}}),
                "`electronicAddress.scheme`",
            ),
            (json!({"reminderDays": [0]}), "`reminderDays`"),
        ] {
            let r = app
                .call("PATCH", "/v1/company", As::Human(&app.a), Some(body))
                .await
                .expect(400);
            assert!(r.text().contains(says), "{}", r.text());
        }

        let mut body = german_customer();
        body["einvoice"] = json!({"format": "XRechnung-UBL",
        "endpoint": {"scheme": "0204", "id": "991-01234-56"}, "buyer_reference": "991-01234-56"});
        let e = app
            .call(
                "POST",
                "/v1/entities",
                As::Human(&app.a),
                Some(body.clone()),
            )
            .await
            .expect(201)
            .json();
        assert_eq!(e["einvoice"]["format"], "xrechnung-ubl");
        assert_eq!(e["einvoice"]["endpoint"]["scheme"], "0204");
        // The entity's buyer reference is copied into its new drafts unless one is given.
        let id = e["id"].as_str().unwrap();
        let d = app
            .draft(&app.a, json!({"recipient_id": id, "lines": one_line(100)}))
            .await;
        assert_eq!(d["buyer_reference"], "991-01234-56");
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": id, "lines": one_line(100), "buyer_reference": "own"}),
            )
            .await;
        assert_eq!(d["buyer_reference"], "own");

        body["einvoice"]["format"] = json!("pdf");
        let r = app
            .call("POST", "/v1/entities", As::Human(&app.a), Some(body))
            .await
            .expect(400);
        assert!(
            r.text()
                .contains("`einvoice.format` must be one of ubl, cii, xrechnung-ubl"),
            "{}",
            r.text()
        );
    }
);

db_test!(
    a_corrective_invoice_inherits_the_buyer_and_order_references,
    |app| {
        app.settle(&app.a).await;
        let customer = app.entity(&app.a, irish_customer()).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(5000),
            "buyer_reference": "BR-1", "order_reference": "PO-9"}),
            )
            .await;
        let original = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        let c = app
            .call(
                "POST",
                &format!("/v1/invoices/{}/correct", original["id"].as_str().unwrap()),
                As::Human(&app.a),
                Some(json!({})),
            )
            .await
            .expect(201)
            .json();
        assert_eq!(c["buyer_reference"], "BR-1");
        assert_eq!(c["order_reference"], "PO-9");
        assert_eq!(c["total"], -original["total"].as_i64().unwrap());
    }
);

db_test!(the_pdf_prints_what_the_law_requires, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, german_customer()).await;
    app.set_time("2026-03-10T10:00:00Z");
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(10000),
            "buyer_reference": "LEITWEG-42", "order_reference": "PO-77",
            "delivery_date": "2026-03-02"}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    app.issue(&app.a, id).await;
    let pdf = app
        .call(
            "GET",
            &format!("/v1/invoices/{id}/pdf"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200);
    let text = pdf_text_of(&pdf.body);
    for says in [
        "Due date",
        "Payment terms",
        "30 days from the issue date",
        "Date of supply",
        "Your reference",
        "LEITWEG-42",
        "Purchase order",
        "PO-77",
        "VAT number: DE136695976",
        // Countries by name, not code.
        "Germany",
        "Ireland",
        // The reverse charge's mention.
        "Reverse charge",
    ] {
        assert!(text.contains(says), "{says} not in:\n{text}");
    }
});
