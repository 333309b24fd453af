//! Company configuration and registration: happy paths and every validation, writing nothing on error.

use serde_json::json;

use crate::support::*;

db_test!(get_company_returns_configuration, |app| {
    let c = app
        .get("/v1/company", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(c["id"], app.a.company_id.as_str());
    assert_eq!(c["name"], "Alpha Ltd");
    assert_eq!(c["fiscalId"], "IE6388047V");
    assert_eq!(c["type"], "IE:LTD");
    assert_eq!(c["currencyCode"], "EUR");
    assert_eq!(c["firstInvoiceYearlyNumber"], 1);
    assert_eq!(c["customPlaceholders"], json!([]));
    assert_eq!(c["isSettled"], false);
    assert!(c["createdAt"].as_str().unwrap().ends_with('Z'));
    // B sees its own company, never A's.
    let cb = app
        .get("/v1/company", As::Ai(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(cb["id"], app.b.company_id.as_str());
});

db_test!(patch_company_updates_every_writable_field, |app| {
    let body = json!({
        "name": "Alpha Renamed Ltd",
        "friendlyName": "Alpha",
        "invoiceReferenceFormat": "INV-{year}-{number:5}",
        "correctiveInvoiceReferenceFormat": "RECT-{year}-{number}",
        "proformaReferenceFormat": "PRO-{number:3}",
        "firstInvoiceYearlyNumber": 100,
        "firstCorrectiveInvoiceYearlyNumber": 7,
        "currencyCode": "usd",
        "customPlaceholders": [
            {"key": "po_number", "label": "PO number", "required": true},
            {"key": "project", "label": "Project", "required": false, "default": "General"}
        ],
        "footerInvoiceTypst": "Thank you, {{po_number}}",
        "postInvoiceTypst": null,
        "viesVatId": "IE6388047V",
        "phone": "+353 1 555 0100",
        "email": "Billing@Alpha.test"
    });
    let c = app
        .call("PATCH", "/v1/company", As::Human(&app.a), Some(body))
        .await
        .expect(200)
        .json();
    assert_eq!(c["name"], "Alpha Renamed Ltd");
    assert_eq!(c["friendlyName"], "Alpha");
    assert_eq!(c["invoiceReferenceFormat"], "INV-{year}-{number:5}");
    assert_eq!(c["firstInvoiceYearlyNumber"], 100);
    assert_eq!(c["firstCorrectiveInvoiceYearlyNumber"], 7);
    assert_eq!(c["currencyCode"], "USD");
    assert_eq!(c["email"], "billing@alpha.test");
    assert_eq!(c["customPlaceholders"][0]["key"], "po_number");
    assert_eq!(c["customPlaceholders"][1]["default"], "General");
    assert_eq!(c["viesVatId"], "IE6388047V");
    assert!(c["updatedAt"].is_string());
    // Persisted: a fresh GET agrees; B is untouched.
    let again = app
        .get("/v1/company", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(again, c);
    let b = app
        .get("/v1/company", As::Ai(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(b["name"], "Beta Ltd");
    // null clears an optional field; absent fields are kept.
    let c = app
        .call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"friendlyName": null})),
        )
        .await
        .expect(200)
        .json();
    assert!(c["friendlyName"].is_null());
    assert_eq!(c["currencyCode"], "USD");
    // The GET body can be sent back as is (read-only fields are ignored).
    app.call("PATCH", "/v1/company", As::Human(&app.a), Some(c.clone()))
        .await
        .expect(200);
});

db_test!(
    patch_company_rejects_bad_input_naming_the_field_and_writes_nothing,
    |app| {
        let before = app.fingerprint().await;
        let cases = [
            (
                json!({"invoiceReferenceFormat": "INV-{year}"}),
                "invoiceReferenceFormat",
            ),
            (
                json!({"proformaReferenceFormat": "P-{nmber}"}),
                "proformaReferenceFormat",
            ),
            (json!({"currencyCode": "EURO"}), "currencyCode"),
            (json!({"currencyCode": "XYZ"}), "currencyCode"),
            (
                json!({"customPlaceholders": [{"key": "a", "label": "A"}, {"key": "a", "label": "B"}]}),
                "customPlaceholders",
            ),
            (
                json!({"customPlaceholders": [{"key": "Bad Key", "label": "A"}]}),
                "customPlaceholders",
            ),
            (
                json!({"customPlaceholders": [{"key": "ok", "label": " "}]}),
                "customPlaceholders[0].label",
            ),
            (
                json!({"firstInvoiceYearlyNumber": 0}),
                "firstInvoiceYearlyNumber",
            ),
            (
                json!({"firstInvoiceYearlyNumber": "ten"}),
                "firstInvoiceYearlyNumber",
            ),
            (json!({"name": ""}), "name"),
            (json!({"email": "not-an-email"}), "email"),
            (json!({"type": "XX:SL"}), "type"),
            (json!({"viesVatId": "DE123"}), "viesVatId"),
            (json!({"fiscalId": "!!"}), "fiscalId"),
            (json!({"unknownField": 1}), "unknownField"),
            // A valid change together with an invalid one: nothing at all is written.
            (
                json!({"name": "Changed", "currencyCode": "nope"}),
                "currencyCode",
            ),
        ];
        for (body, field) in cases {
            let resp = app
                .call(
                    "PATCH",
                    "/v1/company",
                    As::Human(&app.a),
                    Some(body.clone()),
                )
                .await
                .expect(400);
            assert!(resp.content_type().starts_with("text/plain"));
            assert!(resp.text().contains(field), "{body}: {}", resp.text());
        }
        assert_eq!(app.fingerprint().await, before);
    }
);

db_test!(malformed_json_and_oversized_bodies, |app| {
    let before = app.fingerprint().await;
    let resp = app
        .call_raw(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(b"{\"name\": ".to_vec()),
            "application/json",
        )
        .await
        .expect(400);
    assert!(resp.text().contains("not valid JSON"), "{}", resp.text());
    let big = format!("{{\"name\": \"{}\"}}", "x".repeat(1024 * 1024 + 10));
    app.call_raw(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(big.into_bytes()),
        "application/json",
    )
    .await
    .expect(413);
    let resp = app
        .call_raw(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(b"name=x".to_vec()),
            "application/x-www-form-urlencoded",
        )
        .await
        .expect(400);
    assert!(resp.text().contains("JSON"));
    assert_eq!(app.fingerprint().await, before);
});

db_test!(registration_settles_the_company, |app| {
    let c = app
        .call(
            "POST",
            "/v1/company/registration",
            As::Human(&app.a),
            Some(registration_body()),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        c,
        json!({
            "id": app.a.company_id, "name": "Alpha Trading Ltd", "fiscal_id": "IE6388047V",
            "email": "billing@alpha.test", "phone": "+353 1 555 0100", "is_settled": true
        })
    );
    let s = app
        .get("/v1/session", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(s["company"]["isSettled"], true);
    assert_eq!(s["company"]["address"]["city"], "Dublin");
    assert_eq!(s["company"]["address"]["country"], "IE");
    let cfg = app
        .get("/v1/company", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(cfg["isSettled"], true);
    assert_eq!(cfg["address"]["lines"], json!(["1 Main Street"]));
    // B is still unsettled.
    let sb = app
        .get("/v1/session", As::Ai(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(sb["company"]["isSettled"], false);
});

db_test!(registration_rejects_bad_input_and_writes_nothing, |app| {
    let before = app.fingerprint().await;
    let mut cases = Vec::new();
    for (pointer, value, field) in [
        ("/name", json!(""), "name"),
        ("/email", json!("nope"), "email"),
        ("/address/country", json!("Ireland"), "address.country"),
        ("/address/lines", json!([]), "address.lines"),
        ("/address/city", json!(""), "address.city"),
        ("/fiscal_id", json!("!!"), "fiscal_id"),
    ] {
        let mut body = registration_body();
        *body.pointer_mut(pointer).unwrap() = value;
        cases.push((body, field));
    }
    let mut missing = registration_body();
    missing.as_object_mut().unwrap().remove("phone");
    cases.push((missing, "phone"));
    // A Spanish company type needs a valid Spanish tax id.
    let mut spanish = registration_body();
    spanish["type"] = json!("ES:SL");
    cases.push((spanish, "fiscal_id"));
    for (body, field) in cases {
        let resp = app
            .call(
                "POST",
                "/v1/company/registration",
                As::Human(&app.a),
                Some(body.clone()),
            )
            .await
            .expect(400);
        assert!(resp.text().contains(field), "{body}: {}", resp.text());
    }
    assert_eq!(app.fingerprint().await, before);
});
