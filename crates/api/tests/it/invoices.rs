//! Invoices: drafts, taxes, issue guards, gapless numbering, snapshots, placeholders,
//! exchange rates, corrective invoices, proformas, bulk actions, isolation.

use serde_json::{Value, json};

use crate::support::*;

async fn settled_with_customer(app: &TestApp) -> String {
    app.settle(&app.a).await;
    app.entity(&app.a, irish_customer()).await
}

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

db_test!(numbers_are_gapless_per_year_and_series, |app| {
    let customer = settled_with_customer(&app).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"invoiceReferenceFormat": "{year}/{number}", "firstInvoiceYearlyNumber": 7})),
    )
    .await
    .expect(200);
    app.set_time("2026-12-31T23:59:00Z");
    let mut refs = Vec::new();
    for _ in 0..3 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        // A deleted draft never burns a number.
        let throwaway = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(1)}),
            )
            .await;
        app.call(
            "DELETE",
            &format!("/v1/invoices/{}", throwaway["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(204);
        refs.push(app.issue(&app.a, d["id"].as_str().unwrap()).await["reference"].clone());
    }
    app.set_time("2027-01-01T00:00:05Z");
    for _ in 0..2 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        assert_eq!(d["order_year"], 2027);
        assert_eq!(
            d["order_number"],
            1 + refs.len() as i64 - 3,
            "draft order restarts per year"
        );
        refs.push(app.issue(&app.a, d["id"].as_str().unwrap()).await["reference"].clone());
    }
    assert_eq!(
        refs,
        vec![
            json!("2026/7"),
            json!("2026/8"),
            json!("2026/9"),
            json!("2027/7"),
            json!("2027/8")
        ]
    );
    // Company B numbers independently.
    app.settle(&app.b).await;
    let cb = app.entity(&app.b, irish_customer()).await;
    let d = app
        .draft(&app.b, json!({"recipient_id": cb, "lines": one_line(100)}))
        .await;
    assert_eq!(
        app.issue(&app.b, d["id"].as_str().unwrap()).await["invoice_number"],
        1
    );
});

// The reference is rendered in the database, in the round trip that takes the number: its
// text is bound as data (quotes, semicolons, percent signs and backslashes stay as they
// are), and padding is a minimum width, as the format says, not a truncation.
db_test!(references_keep_any_text_and_outgrow_their_padding, |app| {
    let customer = settled_with_customer(&app).await;
    let format = |f: &str, first: Option<i64>| {
        let mut body = json!({"invoiceReferenceFormat": f});
        if let Some(n) = first {
            body["firstInvoiceYearlyNumber"] = json!(n);
        }
        body
    };
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(format("O'Brien %d; DROP {year}|{number:3}\\", Some(998))),
    )
    .await
    .expect(200);
    app.set_time("2026-05-04T09:00:00Z");
    let issue = async || {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        let stored = app
            .get(
                &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(
            stored["reference"], issued["reference"],
            "the reference returned is the one stored"
        );
        assert_eq!(stored["invoice_number"], issued["invoice_number"]);
        (
            issued["invoice_number"].as_i64().unwrap(),
            issued["reference"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        issue().await,
        (998, "O'Brien %d; DROP 2026|998\\".to_owned())
    );
    assert_eq!(
        issue().await,
        (999, "O'Brien %d; DROP 2026|999\\".to_owned())
    );
    assert_eq!(
        issue().await,
        (1000, "O'Brien %d; DROP 2026|1000\\".to_owned())
    );
    // A format that is the number alone, and one padded to the widest allowed.
    for (f, expected) in [
        ("{number}", "1001"),
        ("{number:12}", "000000001002"),
        ("{year}{number:1}", "20261003"),
    ] {
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(format(f, None)),
        )
        .await
        .expect(200);
        assert_eq!(issue().await.1, expected, "format {f}");
    }
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

db_test!(placeholders_required_unknown_and_frozen, |app| {
    let customer = settled_with_customer(&app).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"customPlaceholders": [
            {"key": "po_number", "label": "PO number", "required": true},
            {"key": "project", "label": "Project", "required": false, "default": "General"}
        ]})),
    )
    .await
    .expect(200);
    let before = app.fingerprint().await;
    let resp = app
        .call(
            "POST",
            "/v1/invoices",
            As::Human(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(100)})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("po_number"), "{}", resp.text());
    let resp = app.call("POST", "/v1/invoices", As::Human(&app.a), Some(json!({"recipient_id": customer,
        "lines": one_line(100), "custom_placeholder_values": [{"key": "po_number", "value": "1"}, {"key": "nope", "value": "x"}]})))
        .await
        .expect(400);
    assert!(resp.text().contains("nope"), "{}", resp.text());
    assert_eq!(app.fingerprint().await, before);
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100),
        "custom_placeholder_values": [{"key": "po_number", "value": "PO-77"}]}),
        )
        .await;
    assert_eq!(
        d["custom_placeholder_values"],
        json!([
        {"key": "po_number", "value": "PO-77"}, {"key": "project", "value": "General"}])
    );
    let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
    // Changing the company default after issue does not touch the issued invoice.
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"customPlaceholders": [
            {"key": "po_number", "label": "PO number", "required": true},
            {"key": "project", "label": "Project", "default": "Other"}
        ]})),
    )
    .await
    .expect(200);
    let again = app
        .get(
            &format!("/v1/invoices/{}", issued["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(again["custom_placeholder_values"][1]["value"], "General");
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

db_test!(invoice_isolation_and_ai_gate, |app| {
    let customer = settled_with_customer(&app).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    app.get(&format!("/v1/invoices/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    for (m, p) in [
        ("PATCH", format!("/v1/invoices/{id}")),
        ("DELETE", format!("/v1/invoices/{id}")),
        ("POST", format!("/v1/invoices/{id}/issue")),
    ] {
        app.call(
            m,
            &p,
            As::Human(&app.b),
            if m == "PATCH" { Some(json!({})) } else { None },
        )
        .await
        .expect(404);
    }
    assert_eq!(
        app.get("/v1/invoices", As::Human(&app.b)).await.json()["data"],
        json!([])
    );
    // AI: create is held, approved, and then exists with origin mcp.
    let before = app.fingerprint().await;
    let held = app
        .call(
            "POST",
            "/v1/invoices",
            As::Mcp(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(500)})),
        )
        .await
        .expect(202)
        .json();
    assert_eq!(app.fingerprint().await, before);
    let entry = app
        .call(
            "POST",
            &format!(
                "/v1/ai-audit/{}/approve",
                held["auditEntryId"].as_str().unwrap()
            ),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    let created = app
        .get(
            &format!("/v1/invoices/{}", entry["resourceId"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(created["origin"], "mcp");
    assert_eq!(created["status"], "draft");
    // AI issue is held too; validation errors (bad lines) answer now.
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/issue"),
        As::Ai(&app.a),
        None,
    )
    .await
    .expect(202);
    let resp = app
        .call(
            "POST",
            "/v1/invoices",
            As::Ai(&app.a),
            Some(json!({"recipient_id": customer, "lines": []})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("lines"));
});

db_test!(list_filters_and_pages, |app| {
    let customer = settled_with_customer(&app).await;
    let other = app
        .entity(
            &app.a,
            json!({"name": "Other", "type": "US:Inc", "address": {"lines": ["1 Main St"], "city": "Springfield", "zipcode": "62701", "state": "IL", "country": "US"}}),
        )
        .await;
    app.set_time("2026-05-01T12:00:00Z");
    let mut ids = Vec::new();
    for i in 0..4 {
        let to = if i % 2 == 0 { &customer } else { &other };
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": to, "lines": one_line(100 + i)}),
            )
            .await;
        ids.push(d["id"].as_str().unwrap().to_owned());
    }
    app.issue(&app.a, &ids[0]).await;
    app.issue(&app.a, &ids[1]).await;
    let issued = app
        .get("/v1/invoices?status=issued", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(issued["data"].as_array().unwrap().len(), 2);
    let drafts = app
        .get("/v1/invoices?status=draft", As::Ai(&app.a))
        .await
        .json();
    assert_eq!(drafts["data"].as_array().unwrap().len(), 2);
    let to_other = app
        .get(
            &format!("/v1/invoices?recipient_id={other}"),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(to_other["data"].as_array().unwrap().len(), 2);
    let window = app
        .get(
            "/v1/invoices?issued_from=2026-05-01T00:00:00Z&issued_to=2026-05-02T00:00:00Z",
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(window["data"].as_array().unwrap().len(), 2);
    let none = app
        .get(
            "/v1/invoices?issued_from=2026-06-01T00:00:00Z",
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(none["data"], json!([]));
    let page1 = app.get("/v1/invoices?limit=3", As::Ai(&app.a)).await.json();
    assert_eq!(page1["data"][0]["id"], ids[3].as_str(), "newest first");
    let page2 = app
        .get(
            &format!(
                "/v1/invoices?limit=3&cursor={}",
                page1["next_cursor"].as_str().unwrap()
            ),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(page2["data"].as_array().unwrap().len(), 1);
    assert!(page2["next_cursor"].is_null());
    app.get("/v1/invoices?status=paid", As::Ai(&app.a))
        .await
        .expect(400);
    app.get("/v1/invoices?issued_from=yesterday", As::Ai(&app.a))
        .await
        .expect(400);
});

db_test!(bulk_issue_and_delete_ignore_foreign_ids, |app| {
    let customer = settled_with_customer(&app).await;
    app.settle(&app.b).await;
    let cb = app.entity(&app.b, irish_customer()).await;
    let b_draft = app
        .draft(&app.b, json!({"recipient_id": cb, "lines": one_line(100)}))
        .await;
    let mut ids: Vec<Value> = Vec::new();
    for _ in 0..3 {
        ids.push(
            app.draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await["id"]
                .clone(),
        );
    }
    let mut request = ids[..2].to_vec();
    request.push(b_draft["id"].clone());
    request.push(json!(uuid::Uuid::new_v4().to_string()));
    let r = app
        .call(
            "POST",
            "/v1/invoices/bulk/issue",
            As::Human(&app.a),
            Some(json!({"ids": request})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r, json!({"affected": 2}));
    let b_after = app
        .get(
            &format!("/v1/invoices/{}", b_draft["id"].as_str().unwrap()),
            As::Ai(&app.b),
        )
        .await
        .json();
    assert_eq!(b_after["status"], "draft", "B's draft untouched");
    let issued = app
        .get("/v1/invoices?status=issued", As::Ai(&app.a))
        .await
        .json();
    let mut numbers: Vec<i64> = issued["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["invoice_number"].as_i64().unwrap())
        .collect();
    numbers.sort();
    assert_eq!(numbers, vec![1, 2]);
    // Bulk delete removes drafts only.
    let r = app
        .call(
            "POST",
            "/v1/invoices/bulk/delete",
            As::Human(&app.a),
            Some(json!({"ids": [ids[0], ids[2], b_draft["id"]]})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r, json!({"affected": 1}));
    app.get(
        &format!("/v1/invoices/{}", ids[0].as_str().unwrap()),
        As::Ai(&app.a),
    )
    .await
    .expect(200);
    app.get(
        &format!("/v1/invoices/{}", ids[2].as_str().unwrap()),
        As::Ai(&app.a),
    )
    .await
    .expect(404);
    app.get(
        &format!("/v1/invoices/{}", b_draft["id"].as_str().unwrap()),
        As::Ai(&app.b),
    )
    .await
    .expect(200);
});

db_test!(corrective_invoices, |app| {
    let customer = settled_with_customer(&app).await;
    app.call("PATCH", "/v1/company", As::Human(&app.a),
        Some(json!({"correctiveInvoiceReferenceFormat": "R-{year}-{number:3}", "firstCorrectiveInvoiceYearlyNumber": 5})))
        .await.expect(200);
    app.set_time("2026-07-01T09:00:00Z");
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(10000)}),
        )
        .await;
    let original = app.issue(&app.a, d["id"].as_str().unwrap()).await;
    let oid = original["id"].as_str().unwrap();
    // Drafts cannot be corrected.
    let other = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(1)}),
        )
        .await;
    app.call(
        "POST",
        &format!("/v1/invoices/{}/corrections", other["id"].as_str().unwrap()),
        As::Human(&app.a),
        Some(json!({})),
    )
    .await
    .expect(409);
    // Empty lines: a full reversal, as a draft in its own series.
    let rev = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/corrections"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(rev["status"], "draft");
    assert_eq!(rev["series"], "corrective");
    assert_eq!(rev["origin"], "correction");
    assert_eq!(rev["corrected_invoice_id"], oid);
    assert_eq!(rev["total"], -original["total"].as_i64().unwrap());
    assert_eq!(rev["lines"][0]["subtotal"], -10000);
    assert_eq!(rev["lines"][0]["tax_lines"][0]["amount"], -2300);
    assert!(
        rev["verifactu"].is_null(),
        "only Spanish issuers carry a correction reason"
    );
    let rev = app.issue(&app.a, rev["id"].as_str().unwrap()).await;
    assert_eq!(rev["reference"], "R-2026-005");
    // `/correct` creates and issues at once, with given lines.
    let partial = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/correct"),
            As::Human(&app.a),
            Some(json!({"lines": [{"concept": "Discount", "unit_price": -1000}]})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(partial["status"], "issued");
    assert_eq!(partial["reference"], "R-2026-006");
    assert_eq!(partial["total"], -1230);
    // The original's ordinary series is unaffected.
    let next = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(1)}),
        )
        .await;
    assert_eq!(
        app.issue(&app.a, next["id"].as_str().unwrap()).await["invoice_number"],
        2
    );
    let list = app
        .get(&format!("/v1/invoices/{oid}/corrections"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    app.call(
        "POST",
        &format!("/v1/invoices/{oid}/corrections"),
        As::Human(&app.b),
        Some(json!({})),
    )
    .await
    .expect(404);
});

db_test!(spanish_corrections_carry_the_reason, |app| {
    app.settle(&app.a).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"type": "ES:SL", "fiscalId": "B12345674"})),
    )
    .await
    .expect(200);
    let mut tx = app.db.begin_write().await.unwrap();
    store::companies::set_verifactu_authorization(tx.conn(), &app.a.company_id, "in_effect", true)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let customer = app
        .entity(
            &app.a,
            json!({"name": "Cliente SL", "type": "ES:SL", "fiscal_id": "B12345674",
        "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}}),
        )
        .await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(10000)}),
        )
        .await;
    assert_eq!(d["lines"][0]["tax_lines"][0]["rate"], "21");
    let original = app.issue(&app.a, d["id"].as_str().unwrap()).await;
    let oid = original["id"].as_str().unwrap();
    let r1 = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/corrections"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(r1["verifactu"], json!({"reason": "R1"}));
    let r3 = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/corrections"),
            As::Human(&app.a),
            Some(json!({"verifactu": {"reason": "R3"}})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(r3["verifactu"], json!({"reason": "R3"}));
    let resp = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/corrections"),
            As::Human(&app.a),
            Some(json!({"verifactu": {"reason": "R9"}})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("verifactu.reason"));
});

db_test!(proformas_become_invoices_once, |app| {
    let customer = settled_with_customer(&app).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"proformaReferenceFormat": "PRO-{number:2}"})),
    )
    .await
    .expect(200);
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
    assert_eq!(p["reference"], "PRO-01");
    assert_eq!(p["total"], 6150);
    let pid = p["id"].as_str().unwrap();
    let p = app
        .call(
            "PATCH",
            &format!("/v1/proformas/{pid}"),
            As::Human(&app.a),
            Some(json!({"lines": one_line(6000)})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(p["total"], 7380);
    assert_eq!(p["reference"], "PRO-01");
    let inv = app
        .call(
            "POST",
            &format!("/v1/proformas/{pid}/invoice"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(201)
        .json();
    assert_eq!(inv["status"], "draft");
    assert_eq!(inv["origin"], "proforma");
    assert_eq!(inv["proforma_id"], pid);
    assert_eq!(inv["total"], 7380);
    let p = app
        .get(&format!("/v1/proformas/{pid}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(p["invoice_id"], inv["id"]);
    app.call(
        "POST",
        &format!("/v1/proformas/{pid}/invoice"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(409);
    app.get(&format!("/v1/proformas/{pid}"), As::Human(&app.b))
        .await
        .expect(404);
    let p2 = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(1)})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(p2["reference"], "PRO-02");
    let r = app
        .call(
            "POST",
            "/v1/proformas/bulk/delete",
            As::Human(&app.a),
            Some(json!({"ids": [pid, p2["id"], uuid::Uuid::new_v4().to_string()]})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r, json!({"affected": 2}));
    assert_eq!(
        app.get("/v1/proformas", As::Ai(&app.a)).await.json()["data"],
        json!([])
    );
    // The invoice made from it survives, unlinked.
    let inv = app
        .get(
            &format!("/v1/invoices/{}", inv["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .expect(200)
        .json();
    assert!(inv["proforma_id"].is_null());
});

db_test!(tax_prefill_writes_nothing_and_answers_ai_directly, |app| {
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"type": "ES:SL", "fiscalId": "B12345674",
        "viesVatId": "ESB12345674"})),
    )
    .await
    .expect(200);
    let de = app
        .entity(
            &app.a,
            json!({"name": "Kunde GmbH", "type": "DE:GmbH", "vies_vat_id": "DE136695976",
        "address": {"lines": ["Hauptstraße 5"], "city": "Berlin", "zipcode": "10115", "country": "DE"}}),
        )
        .await;
    let us = app
        .entity(
            &app.a,
            json!({"name": "Client Inc", "type": "US:Inc", "fiscal_id": "12-3456789",
        "address": {"lines": ["1 Main St"], "city": "Springfield", "zipcode": "62701", "state": "IL", "country": "US"}}),
        )
        .await;
    let before = app.fingerprint().await;
    let cases = [
        (&de, "services", "reverse_charge", 0),
        (&de, "goods", "intra_eu_exempt", 0),
        (&us, "goods", "export_exempt", 0),
        (&us, "services", "not_subject", 0),
    ];
    for (to, supply, treatment, tax) in cases {
        let p = app
            .call(
                "POST",
                "/v1/taxes/prefill",
                As::Ai(&app.a),
                Some(json!({"recipient_id": to, "supply_type": supply, "lines": one_line(10000)})),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(p["treatment"], treatment, "{supply} to {to}");
        assert_eq!(p["tax_total"], tax);
        assert!(
            p["legal_mention"].is_string(),
            "{treatment} has a legal mention"
        );
    }
    assert_eq!(app.fingerprint().await, before);
    let resp = app
        .call(
            "POST",
            "/v1/taxes/prefill",
            As::Ai(&app.a),
            Some(json!({"recipient_id": uuid::Uuid::new_v4().to_string(), "lines": one_line(1)})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("recipient_id"));
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

// Drafts made at once each get their own draft number, with none skipped: the number is
// taken and stored in one round trip (store::invoices::insert_numbered_draft), which on
// PostgreSQL must use what the counter's upsert returns, not a read of the counter.
db_test!(drafts_made_at_once_get_distinct_gapless_numbers, |app| {
    let customer = settled_with_customer(&app).await;
    let body = json!({"recipient_id": customer, "lines": one_line(100)});
    let calls = (0..16).map(|_| {
        app.call(
            "POST",
            "/v1/invoices",
            As::Human(&app.a),
            Some(body.clone()),
        )
    });
    let mut numbers: Vec<i64> = futures::future::join_all(calls)
        .await
        .iter()
        .map(|r| {
            assert_eq!(r.status.as_u16(), 201, "{}", r.text());
            r.json()["order_number"].as_i64().unwrap()
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=16).collect::<Vec<i64>>());
    let next = app.draft(&app.a, body).await;
    assert_eq!(next["order_number"], 17);
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

// Drafts made by hand, by correcting an invoice and from a proforma share one draft
// numbering (one counter, taken in the statement that stores the draft).
db_test!(every_kind_of_draft_takes_the_next_draft_number, |app| {
    let customer = settled_with_customer(&app).await;
    let body = json!({"recipient_id": customer, "lines": one_line(100)});
    let first = app.draft(&app.a, body.clone()).await;
    assert_eq!(first["order_number"], 1);
    let oid = first["id"].as_str().unwrap().to_owned();
    app.issue(&app.a, &oid).await;
    let correction = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/corrections"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(correction["order_number"], 2);
    let proforma = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(body.clone()),
        )
        .await
        .expect(201)
        .json();
    let from_proforma = app
        .call(
            "POST",
            &format!("/v1/proformas/{}/invoice", proforma["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(201)
        .json();
    assert_eq!(from_proforma["order_number"], 3);
    assert_eq!(from_proforma["order_year"], first["order_year"]);
    // Correcting and issuing in one step uses a number too, then gives it up on issue.
    let corrected = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/correct"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(corrected["status"], "issued");
    assert!(corrected["order_number"].is_null());
    assert_eq!(app.draft(&app.a, body).await["order_number"], 5);
    // Another company's drafts are numbered on their own.
    app.settle(&app.b).await;
    let theirs = app.entity(&app.b, irish_customer()).await;
    let b = app
        .draft(
            &app.b,
            json!({"recipient_id": theirs, "lines": one_line(100)}),
        )
        .await;
    assert_eq!(b["order_number"], 1);
});

db_test!(
    a_draft_is_found_by_its_id_however_many_drafts_its_company_has,
    |app| {
        // A company with thousands of drafts, just made (the database's statistics have
        // not caught up, as for a new company or one importing its backlog).
        let customer = settled_with_customer(&app).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let id = d["id"].as_str().unwrap().to_owned();
        let mut conn = app.db.pool().acquire().await.unwrap();
        sqlx::query(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) \
             INSERT INTO invoices (id, company_id, recipient_id, series, status, origin, supply_type, \
             currency_code, net_total, tax_total, withholding_total, total, line_count, lines_json, created_at) \
             SELECT id || '-' || i, company_id, recipient_id, series, status, origin, supply_type, \
             currency_code, net_total, tax_total, withholding_total, total, line_count, lines_json, created_at \
             FROM invoices, n WHERE id = $1",
        )
        .bind(&id)
        .execute(&mut *conn)
        .await
        .unwrap();

        // Issuing, bulk issuing and deleting find the draft through the primary key, not by
        // reading the company's drafts (which, under the counter lock, serialised issuing at
        // a few milliseconds each).
        let explain = match app.engine {
            Engine::Sqlite => "EXPLAIN QUERY PLAN",
            Engine::Postgres => "EXPLAIN",
        };
        let sql = format!(
            "{explain} UPDATE invoices SET status = status WHERE {}",
            store::invoices::DRAFT_BY_ID
        );
        let plan: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&app.a.company_id)
            .bind(&id)
            .fetch_all(&mut *conn)
            .await
            .unwrap()
            .iter()
            .map(|row| {
                use sqlx::Row;
                let last = row.len() - 1;
                row.try_get::<String, _>(last).unwrap()
            })
            .collect();
        let plan = plan.join("\n");
        match app.engine {
            Engine::Sqlite => assert!(
                plan.contains("(id=?)") && !plan.contains("status=?"),
                "{plan}"
            ),
            Engine::Postgres => assert!(
                plan.contains("invoices_pkey") && !plan.contains("Index Cond: ((company_id"),
                "{plan}"
            ),
        }
        drop(conn);

        // And it is issued, once, with the first number.
        let issued = app.issue(&app.a, &id).await;
        assert_eq!(issued["invoice_number"], 1);
        app.call(
            "POST",
            &format!("/v1/invoices/{id}/issue"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(409);
    }
);

db_test!(
    refused_writes_are_answered_while_another_writer_holds_the_database,
    |app| {
        let customer = settled_with_customer(&app).await;
        let issued = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let issued_id = issued["id"].as_str().unwrap().to_owned();
        app.issue(&app.a, &issued_id).await;

        // Another process holds the writer: on SQLite the database's one write lock, on
        // PostgreSQL a lock that lets invoices be read but not written.
        let other = store::Db::connect(&app.url).await.unwrap();
        let mut held = other.begin_write().await.unwrap();
        if app.engine == Engine::Postgres {
            use sqlx::Executor;
            held.conn()
                .execute("LOCK TABLE invoices IN EXCLUSIVE MODE")
                .await
                .unwrap();
        }

        // Requests refused before they write are answered now, not after the writer is
        // free (on SQLite they used to wait for the lock and fail with a 500).
        let no_recipient = app
            .call(
                "POST",
                "/v1/invoices",
                As::Human(&app.a),
                Some(json!({"recipient_id": "no-such-entity", "lines": one_line(100)})),
            )
            .await;
        assert_eq!(no_recipient.status.as_u16(), 400, "{}", no_recipient.text());
        let again = app
            .call(
                "POST",
                &format!("/v1/invoices/{issued_id}/issue"),
                As::Human(&app.a),
                None,
            )
            .await;
        assert_eq!(again.status.as_u16(), 409, "{}", again.text());
        let unknown = app
            .call(
                "POST",
                "/v1/invoices/no-such-invoice/issue",
                As::Human(&app.a),
                None,
            )
            .await;
        assert_eq!(unknown.status.as_u16(), 404, "{}", unknown.text());

        held.rollback().await.unwrap();
        // Once the writer is free, writing works as before.
        app.draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    }
);
