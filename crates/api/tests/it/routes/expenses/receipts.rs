//! /v1/expenses and /v1/expenses/{id}/receipt: expenses with their receipts, isolation and the AI gate.

use serde_json::json;

use crate::support::*;

db_test!(expenses_with_receipts, |app| {
    let s = supplier(&app).await;
    let e = app
        .call(
            "POST",
            "/v1/expenses",
            As::Human(&app.a),
            Some(expense(&s, "F-1")),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(e["net_total"], 10000);
    assert_eq!(e["tax_total"], 2100);
    assert_eq!(e["total"], 12100);
    assert_eq!(e["currency_code"], "EUR", "the supplier's currency");
    assert!(e["receipt"].is_null());
    let id = e["id"].as_str().unwrap();
    // The same supplier invoice twice: a 400 naming it, also under concurrent requests.
    let r = app
        .call(
            "POST",
            "/v1/expenses",
            As::Human(&app.a),
            Some(expense(&s, "F-1")),
        )
        .await
        .expect(400);
    assert!(r.text().contains("F-1"), "{}", r.text());
    let (r1, r2) = tokio::join!(
        app.call(
            "POST",
            "/v1/expenses",
            As::Human(&app.a),
            Some(expense(&s, "F-2"))
        ),
        app.call(
            "POST",
            "/v1/expenses",
            As::Human(&app.a),
            Some(expense(&s, "F-2"))
        )
    );
    let mut statuses = [r1.status.as_u16(), r2.status.as_u16()];
    statuses.sort();
    assert_eq!(statuses, [201, 400], "{} / {}", r1.text(), r2.text());
    // Validation.
    for (body, field) in [
        (
            json!({"supplier_id": s, "invoice_reference": " ", "lines": [{"concept": "x", "subtotal": 1}]}),
            "invoice_reference",
        ),
        (
            json!({"supplier_id": uuid::Uuid::new_v4().to_string(), "invoice_reference": "Z", "lines": [{"concept": "x", "subtotal": 1}]}),
            "supplier_id",
        ),
        (
            json!({"supplier_id": s, "invoice_reference": "Z", "lines": [{"concept": "x"}]}),
            "subtotal",
        ),
        (
            json!({"supplier_id": s, "invoice_reference": "Z", "lines": []}),
            "lines",
        ),
    ] {
        let r = app
            .call("POST", "/v1/expenses", As::Human(&app.a), Some(body))
            .await
            .expect(400);
        assert!(r.text().contains(field), "{}", r.text());
    }
    // Receipts: sniffed from the bytes, bounded.
    let pdf = b"%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF".to_vec();
    let with = app
        .call_raw(
            "PUT",
            &format!("/v1/expenses/{id}/receipt"),
            As::Human(&app.a),
            Some(pdf.clone()),
            "application/octet-stream",
        )
        .await
        .expect(200)
        .json();
    assert_eq!(with["receipt"]["content_type"], "application/pdf");
    assert_eq!(with["receipt"]["size"], pdf.len());
    let got = app
        .get(&format!("/v1/expenses/{id}/receipt"), As::Ai(&app.a))
        .await
        .expect(200);
    assert_eq!(got.content_type(), "application/pdf");
    assert_eq!(got.body, pdf);
    let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    app.call_raw(
        "PUT",
        &format!("/v1/expenses/{id}/receipt"),
        As::Human(&app.a),
        Some(png),
        "application/pdf",
    )
    .await
    .expect(200);
    assert_eq!(
        app.get(&format!("/v1/expenses/{id}/receipt"), As::Ai(&app.a))
            .await
            .content_type(),
        "image/png",
        "type from the bytes, not the header"
    );
    let files: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM files")
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    assert_eq!(files, 1, "the replaced receipt is gone");
    app.call_raw(
        "PUT",
        &format!("/v1/expenses/{id}/receipt"),
        As::Human(&app.a),
        Some(b"MZ not a receipt".to_vec()),
        "application/pdf",
    )
    .await
    .expect(400);
    let mut big = b"%PDF-".to_vec();
    big.resize(10 * 1024 * 1024 + 1, b'x');
    app.call_raw(
        "PUT",
        &format!("/v1/expenses/{id}/receipt"),
        As::Human(&app.a),
        Some(big),
        "application/pdf",
    )
    .await
    .expect(413);
    // An AI caller's receipt is held and replayed byte for byte on approval.
    let jpeg = vec![0xFF, 0xD8, 0xFF, 0xE0, 1, 2, 3];
    let held = app
        .call_raw(
            "PUT",
            &format!("/v1/expenses/{id}/receipt"),
            As::Ai(&app.a),
            Some(jpeg.clone()),
            "image/jpeg",
        )
        .await
        .expect(202)
        .json();
    app.call(
        "POST",
        &format!(
            "/v1/ai-audit/{}/approve",
            held["auditEntryId"].as_str().unwrap()
        ),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    let got = app
        .get(&format!("/v1/expenses/{id}/receipt"), As::Ai(&app.a))
        .await
        .expect(200);
    assert_eq!(
        (got.content_type(), got.body),
        ("image/jpeg".to_owned(), jpeg)
    );
    // Update, isolation, delete.
    let e = app
        .call(
            "PATCH",
            &format!("/v1/expenses/{id}"),
            As::Human(&app.a),
            Some(json!({"category": "travel"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(e["category"], "travel");
    assert_eq!(e["total"], 12100);
    app.get(&format!("/v1/expenses/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    app.get(&format!("/v1/expenses/{id}/receipt"), As::Human(&app.b))
        .await
        .expect(404);
    app.call(
        "DELETE",
        &format!("/v1/expenses/{id}"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
    app.call(
        "POST",
        "/v1/expenses",
        As::Mcp(&app.a),
        Some(expense(&s, "F-9")),
    )
    .await
    .expect(202);
    app.call(
        "DELETE",
        &format!("/v1/expenses/{id}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let files: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM files")
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    assert_eq!(files, 0, "the receipt goes with its expense");
});
