//! POST /v1/invoices/{id}/correct and /v1/invoices/{id}/corrections: corrective invoices (R1-R5) and the reason Spanish corrections carry.

use serde_json::json;

use crate::support::*;

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
