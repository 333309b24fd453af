//! Hostile and malformed input: each gets a clear 4xx that says what is wrong,
//! and nothing is written (the whole database is compared before and after).

use serde_json::{Value, json};

use crate::support::*;

/// Sends `body` as a person and expects `status`, a message containing `says`, and no change.
async fn refused(app: &TestApp, method: &str, path: &str, body: Vec<u8>, status: u16, says: &str) {
    let before = app.fingerprint().await;
    let resp = app
        .call_raw(
            method,
            path,
            As::Human(&app.a),
            Some(body),
            "application/json",
        )
        .await
        .expect(status);
    let text = resp.text();
    assert!(
        text.to_lowercase().contains(&says.to_lowercase()),
        "{method} {path}: expected `{says}` in: {text}"
    );
    assert_eq!(
        app.fingerprint().await,
        before,
        "{method} {path} wrote something"
    );
}

fn bytes(v: &Value) -> Vec<u8> {
    v.to_string().into_bytes()
}

db_test!(malformed_bodies_are_refused_before_anything_runs, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    // Nesting far past any real document: a plain 400, no stack overflow, no 500.
    let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    refused(&app, "POST", "/v1/invoices", deep.into_bytes(), 400, "").await;
    let deep_lines = format!(
        "{{\"recipient_id\": \"{customer}\", \"lines\": [{}1{}]}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    refused(
        &app,
        "POST",
        "/v1/invoices",
        deep_lines.into_bytes(),
        400,
        "lines",
    )
    .await;
    let mut deep_object = String::new();
    for _ in 0..5_000 {
        deep_object.push_str("{\"a\":");
    }
    deep_object.push('1');
    deep_object.push_str(&"}".repeat(5_000));
    refused(
        &app,
        "PATCH",
        "/v1/company",
        deep_object.into_bytes(),
        400,
        "",
    )
    .await;
    // Invalid UTF-8 inside a string.
    let mut invalid = b"{\"name\": \"caf".to_vec();
    invalid.extend_from_slice(&[0xff, 0xfe]);
    invalid.extend_from_slice(b"\"}");
    refused(&app, "PATCH", "/v1/company", invalid, 400, "JSON").await;
    // Wrong types and unknown fields name the field.
    refused(
        &app,
        "POST",
        "/v1/invoices",
        bytes(&json!({"recipient_id": customer, "lines": "many"})),
        400,
        "lines",
    )
    .await;
    refused(&app, "POST", "/v1/invoices", b"null".to_vec(), 400, "").await;
});

db_test!(line_counts_are_bounded, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    let line = json!({"concept": "x", "quantity": 1, "unit_price": 1});
    let lines: Vec<Value> = (0..501).map(|_| line.clone()).collect();
    refused(
        &app,
        "POST",
        "/v1/invoices",
        bytes(&json!({"recipient_id": customer, "lines": lines})),
        400,
        "500",
    )
    .await;
    // Exactly the limit is fine.
    let lines: Vec<Value> = (0..500).map(|_| line.clone()).collect();
    let draft = app
        .draft(&app.a, json!({"recipient_id": customer, "lines": lines}))
        .await;
    assert_eq!(draft["lineCount"], 500);
});

db_test!(amounts_that_overflow_are_errors_not_wraps, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    for lines in [
        json!([{"concept": "a", "quantity": 3, "unit_price": i64::MAX / 2}]),
        json!([{"concept": "a", "subtotal": i64::MAX}, {"concept": "b", "subtotal": i64::MAX}]),
        json!([{"concept": "a", "quantity": 1, "unit_price": i64::MIN}]),
        json!([{"concept": "a", "quantity": "1e30", "unit_price": 1}]),
        json!([{"concept": "a", "quantity": 1, "unit_price": 1.5}]),
    ] {
        let before = app.fingerprint().await;
        let resp = app
            .call(
                "POST",
                "/v1/invoices",
                As::Human(&app.a),
                Some(json!({"recipient_id": customer, "lines": lines})),
            )
            .await
            .expect(400);
        // 400 bodies are plain text saying what to fix (the spec's error rule).
        assert!(resp.content_type().starts_with("text/plain"), "{lines}");
        assert!(
            resp.text().contains("lines[")
                || resp.text().contains("overflow")
                || resp.text().contains("quantity"),
            "{lines}: {}",
            resp.text()
        );
        assert_eq!(app.fingerprint().await, before);
    }
    // A payment past i64 on an issued invoice is refused too.
    let draft = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(1000)}),
        )
        .await;
    let id = draft["id"].as_str().unwrap().to_owned();
    app.issue(&app.a, &id).await;
    refused(
        &app,
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        bytes(&json!({"amount_minor": i64::MAX})),
        400,
        "",
    )
    .await;
});

db_test!(unknown_codes_are_named, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    refused(
        &app,
        "POST",
        "/v1/invoices",
        bytes(&json!({"recipient_id": customer, "currency_code": "ABC", "lines": one_line(100)})),
        400,
        "ABC",
    )
    .await;
    refused(
        &app,
        "POST",
        "/v1/entities",
        bytes(&json!({"name": "Nowhere Ltd", "type": "ZZ:LTD", "address": {"country": "ZZ"}})),
        400,
        "ZZ",
    )
    .await;
    refused(
        &app,
        "PATCH",
        "/v1/company",
        bytes(&json!({"currencyCode": "EURO"})),
        400,
        "EURO",
    )
    .await;
});

db_test!(hostile_typst_snippets_are_refused_when_saved, |app| {
    for snippet in [
        "#let f(x) = f(x)\n#f(1)",
        "#while true {}",
        "#read(\"/etc/passwd\")",
        "#image(\"/etc/hostname\")",
        "#{",
    ] {
        refused(
            &app,
            "PATCH",
            "/v1/company",
            bytes(&json!({"footerInvoiceTypst": snippet})),
            400,
            "footerInvoiceTypst",
        )
        .await;
    }
});

db_test!(nul_characters_are_refused_on_both_engines, |app| {
    // PostgreSQL cannot store U+0000 in text (found by API fuzzing): a 400 on both engines.
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    refused(
        &app,
        "POST",
        "/v1/invoices",
        bytes(
            &json!({"recipient_id": customer, "lines": [{"concept": "a\u{0}b", "subtotal": 100}]}),
        ),
        400,
        "lines[0].concept",
    )
    .await;
    refused(
        &app,
        "POST",
        "/v1/invoices/bulk/delete",
        bytes(&json!({"ids": ["ok", "\u{0}"]})),
        400,
        "NUL",
    )
    .await;
    for path in [
        "/v1/invoices/%00",
        "/v1/invoices?recipient_id=%00",
        "/v1/entities/a%00b",
    ] {
        let before = app.fingerprint().await;
        let resp = app.get(path, As::Human(&app.a)).await.expect(400);
        assert!(resp.text().contains("NUL"), "{path}: {}", resp.text());
        assert_eq!(app.fingerprint().await, before);
    }
    // A backslash followed by `u0000` is ordinary text.
    let draft = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": [{"concept": "C:\\u0000", "subtotal": 100}]}),
        )
        .await;
    assert_eq!(draft["lines"][0]["concept"], "C:\\u0000");
});
