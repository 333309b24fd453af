//! POST /v1/invoices/{id}/issue: the draft-to-issued workflow, its guards, exchange rates, and issuing under contention.

use serde_json::json;

use crate::support::*;

db_test!(draft_then_issue, |app| {
    let customer = settled_with_customer(&app).await;
    app.call("PATCH", "/v1/company", As::Human(&app.a),
        Some(json!({"invoiceReferenceFormat": "INV-{year}-{number:4}", "firstInvoiceYearlyNumber": 42})))
        .await
        .expect(200);
    app.set_time("2026-03-10T10:00:00Z");
    let draft = app
        .draft(&app.a, json!({"recipient_id": customer, "lines": [
            {"concept": "Consulting", "quantity": 1.5, "quantity_unit": "h", "unit_price": 10000},
            {"concept": "Travel", "quantity": 1, "unit_price": 2550}
        ]}))
        .await;
    assert_eq!(draft["status"], "draft");
    assert!(
        draft["invoice_number"].is_null()
            && draft["reference"].is_null()
            && draft["issued_at"].is_null()
    );
    assert_eq!(draft["order_number"], 1);
    assert_eq!(draft["order_year"], 2026);
    assert_eq!(draft["currency_code"], "EUR");
    assert_eq!(draft["supply_type"], "services");
    assert_eq!(draft["lineCount"], 2);
    // Irish issuer, Irish business: domestic VAT 23% per line, total = sum of all lines.
    assert_eq!(draft["treatment"], "domestic");
    assert_eq!(draft["lines"][0]["subtotal"], 15000);
    assert_eq!(draft["lines"][0]["quantity"], 1.5);
    assert_eq!(draft["lines"][0]["tax_lines"][0]["rate"], "23");
    assert_eq!(draft["lines"][0]["tax_lines"][0]["amount"], 3450);
    // 2550 × 23% = 586.5: half-even rounds to the even 586.
    assert_eq!(draft["lines"][1]["tax_lines"][0]["amount"], 586);
    let net = 15000 + 2550;
    assert_eq!(draft["net_total"], net);
    assert_eq!(
        draft["total"],
        draft["net_total"].as_i64().unwrap() + draft["tax_total"].as_i64().unwrap()
    );

    let id = draft["id"].as_str().unwrap();
    let issued = app.issue(&app.a, id).await;
    assert_eq!(issued["status"], "issued");
    assert_eq!(issued["invoice_number"], 42);
    assert_eq!(issued["invoice_year"], 2026);
    assert_eq!(issued["reference"], "INV-2026-0042");
    assert!(issued["order_number"].is_null() && issued["order_year"].is_null());
    assert_eq!(issued["issued_at"], "2026-03-10T10:00:00Z");
    assert_eq!(issued["recipient"]["name"], "Dublin Customer Ltd");
    assert_eq!(issued["issuer"]["name"], "Alpha Trading Ltd");
    assert_eq!(issued["total"], draft["total"]);
    // The snapshots' shape, every field present (null when unset), as callers read them.
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&issued["issuer"]),
        [
            "address",
            "contact_name",
            "electronic_address",
            "email",
            "fiscal_id",
            "footer_invoice_typst",
            "id",
            "name",
            "phone",
            "post_invoice_typst",
            "type",
            "vies_vat_id"
        ]
    );
    assert_eq!(
        keys(&issued["recipient"]),
        [
            "address",
            "country",
            "createdAt",
            "currency_code",
            "electronic_address",
            "email",
            "fiscal_id",
            "id",
            "is_business",
            "name",
            "template",
            "type",
            "updatedAt",
            "verifactu",
            "vies_vat_id"
        ]
    );
    assert_eq!(
        keys(&issued["recipient"]["address"]),
        ["city", "country", "lines", "state", "zipcode"]
    );
    assert!(issued["issuer"]["type"].is_string() && issued["recipient"]["createdAt"].is_string());
    // The answer is made from the document just stored, not read back: it must say exactly
    // what reading the invoice says.
    let stored = app
        .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(issued, stored);

    // Issued invoices are immutable and numbered once.
    for (method, body) in [
        ("PATCH", Some(json!({"lines": one_line(1)}))),
        ("DELETE", None),
    ] {
        let resp = app
            .call(
                method,
                &format!("/v1/invoices/{id}"),
                As::Human(&app.a),
                body,
            )
            .await
            .expect(409);
        assert!(resp.content_type().starts_with("text/plain"));
    }
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/issue"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(409);
    // Snapshots: renaming the customer later does not change the issued invoice.
    app.call(
        "PATCH",
        &format!("/v1/entities/{customer}"),
        As::Human(&app.a),
        Some(json!({"name": "Renamed"})),
    )
    .await
    .expect(200);
    let again = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(again["recipient"]["name"], "Dublin Customer Ltd");
    assert_eq!(again["reference"], "INV-2026-0042");
});

db_test!(issue_guards, |app| {
    let customer = app.entity(&app.a, irish_customer()).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    let path = format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap());
    let resp = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(403);
    assert_eq!(resp.json()["error"], "company_not_settled");
    app.call(
        "POST",
        "/v1/company/registration",
        As::Human(&app.a),
        Some(registration_body()),
    )
    .await
    .expect(200);
    let resp = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(403);
    assert_eq!(resp.json()["error"], "agreement_required");
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("agreements")
    );
    app.accept_all_agreements(&app.a).await;
    // A Spanish issuer without the VERI*FACTU authorization: 403 and the invoice stays a draft.
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"type": "ES:SL", "fiscalId": "B12345674"})),
    )
    .await
    .expect(200);
    let resp = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(403);
    let body = resp.json();
    assert_eq!(body["error"], "verifactu_authorization_required");
    assert!(
        body["requiresAuthorizationUrl"]
            .as_str()
            .unwrap()
            .starts_with('/')
    );
    let still = app
        .get(
            &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(still["status"], "draft");
    assert!(still["invoice_number"].is_null());
    // AI callers get the same guard answer now (validated), nothing queued.
    let resp = app
        .call("POST", &path, As::Ai(&app.a), None)
        .await
        .expect(403);
    assert_eq!(resp.json()["error"], "verifactu_authorization_required");
    // Once the authorization is in effect, issuing works.
    let mut tx = app.db.begin_write().await.unwrap();
    store::companies::set_verifactu_authorization(tx.conn(), &app.a.company_id, "in_effect", true)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    // The draft was priced when the company was Irish: re-pricing it applies Spanish VAT.
    let repriced = app
        .call(
            "PATCH",
            &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(repriced["lines"][0]["tax_lines"][0]["rate"], "21");
    let issued = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(200)
        .json();
    assert_eq!(issued["status"], "issued");
});

db_test!(foreign_currency_needs_a_rate, |app| {
    let customer = settled_with_customer(&app).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "currency_code": "USD", "lines": one_line(10000)}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    let resp = app
        .call(
            "POST",
            &format!("/v1/invoices/{id}/issue"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(
        resp.text().contains("USD->EUR"),
        "names the pair: {}",
        resp.text()
    );
    let still = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(still["status"], "draft");
    // A supplied rate is frozen as given.
    app.call(
        "PATCH",
        &format!("/v1/invoices/{id}"),
        As::Human(&app.a),
        Some(json!({"exchange_rates": [{"from": "USD", "to": "EUR", "rate": 0.9123}]})),
    )
    .await
    .expect(200);
    let issued = app.issue(&app.a, id).await;
    assert_eq!(
        issued["exchange_rates"],
        json!([{"from": "USD", "to": "EUR", "rate": "0.9123", "date": null, "source": "manual"}])
    );
    // Bad rates are named.
    for rate in [json!(0), json!(-1), json!("abc")] {
        let resp = app.call("POST", "/v1/invoices", As::Human(&app.a), Some(json!({"recipient_id": customer,
            "currency_code": "USD", "lines": one_line(1), "exchange_rates": [{"from": "USD", "to": "EUR", "rate": rate}]})))
            .await
            .expect(400);
        assert!(resp.text().contains("exchange_rates[0]"), "{}", resp.text());
    }
});

db_test!(issuing_one_draft_twice_at_once_issues_it_once, |app| {
    let customer = settled_with_customer(&app).await;
    for round in 0..6 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let path = format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap());
        let calls = (0..16).map(|_| app.call("POST", &path, As::Human(&app.a), None));
        let answers = futures::future::join_all(calls).await;
        let issued: Vec<&_> = answers
            .iter()
            .filter(|r| r.status.as_u16() == 200)
            .collect();
        assert_eq!(issued.len(), 1, "round {round}: exactly one issue succeeds");
        for r in answers.iter().filter(|r| r.status.as_u16() != 200) {
            assert_eq!(r.status.as_u16(), 409, "round {round}: {}", r.text());
        }
        // The number the winner got is the one stored, and no number was burnt.
        let number = issued[0].json()["invoice_number"].clone();
        assert_eq!(number, round + 1);
        let stored = app
            .get(
                &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .json();
        assert_eq!(stored["invoice_number"], number);
    }
});

// Issuing reads the draft before its write transaction and stores it only if it is still
// that draft. A change that lands in between (here made by another connection that holds
// the writer, so the issue must wait for it) is not overwritten with the old content: the
// issue is refused, nothing is numbered, and issuing again issues the draft as it is now.
db_test!(
    a_draft_changed_while_being_issued_is_not_issued_as_it_was,
    |app| {
        let customer = settled_with_customer(&app).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let id = d["id"].as_str().unwrap().to_owned();
        assert!(d["due_date"].is_null());

        let other = store::Db::connect(&app.url).await.unwrap();
        let mut held = other.begin_write().await.unwrap();
        let due = chrono::Utc::now().timestamp_micros() + 30 * 86_400_000_000;
        sqlx::query("UPDATE invoices SET due_date = $1, updated_at = $2 WHERE id = $3")
            .bind(due)
            .bind(chrono::Utc::now().timestamp_micros())
            .bind(&id)
            .execute(held.conn())
            .await
            .unwrap();
        // The issue reads the draft as committed (without the change), then waits for the
        // writer; the change is committed while it waits.
        let path = format!("/v1/invoices/{id}/issue");
        let (issue, ()) = futures::join!(app.call("POST", &path, As::Human(&app.a), None), async {
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            held.commit().await.unwrap();
        });
        assert_eq!(issue.status.as_u16(), 409, "{}", issue.text());
        assert!(
            issue.text().contains("changed while it was being issued"),
            "{}",
            issue.text()
        );

        let stored = app
            .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
            .await
            .json();
        assert_eq!(stored["status"], "draft");
        assert!(
            stored["due_date"].is_string(),
            "the change is kept: {stored}"
        );
        let issued = app.issue(&app.a, &id).await;
        assert_eq!(
            issued["invoice_number"], 1,
            "no number was used by the refused issue"
        );
        assert_eq!(issued["due_date"], stored["due_date"]);
        other.close().await;
    }
);
