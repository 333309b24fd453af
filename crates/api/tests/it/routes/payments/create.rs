//! POST /v1/invoices/{id}/payments and DELETE /v1/invoices/{id}/payments/{pid}: payments and the statuses they give an invoice.

use serde_json::json;

use crate::support::*;

db_test!(payments_and_statuses, |app| {
    app.settle(&app.a).await;
    let c = app.entity(&app.a, irish_customer()).await;
    let d = app.draft(&app.a, json!({"recipient_id": c, "lines": one_line(10000), "due_date": "2020-01-31T00:00:00Z"})).await;
    let id = d["id"].as_str().unwrap();
    assert!(
        d["payment_status"].is_null(),
        "drafts have no payment status"
    );
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        As::Human(&app.a),
        Some(json!({"amount_minor": 100})),
    )
    .await
    .expect(400);
    let inv = app.issue(&app.a, id).await;
    assert_eq!(inv["payment_status"], "overdue");
    let total = inv["total"].as_i64().unwrap();
    let p = app
        .call(
            "POST",
            &format!("/v1/invoices/{id}/payments"),
            As::Human(&app.a),
            Some(json!({"amount_minor": 5000, "paid_at": "2026-02-01T00:00:00Z"})),
        )
        .await
        .expect(201)
        .json();
    let inv = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(inv["paid_minor"], 5000);
    let r = app
        .call(
            "POST",
            &format!("/v1/invoices/{id}/payments"),
            As::Human(&app.a),
            Some(json!({"amount_minor": total})),
        )
        .await
        .expect(400);
    assert!(
        r.text().contains("outstanding"),
        "overpayment: {}",
        r.text()
    );
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        As::Human(&app.a),
        Some(json!({"amount_minor": total - 5000})),
    )
    .await
    .expect(201);
    let inv = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(inv["payment_status"], "paid");
    let list = app
        .get(&format!("/v1/invoices/{id}/payments"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    app.call(
        "DELETE",
        &format!("/v1/invoices/{id}/payments/{}", p["id"].as_str().unwrap()),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let inv = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(inv["payment_status"], "overdue");
    assert_eq!(inv["paid_minor"], total - 5000);
    app.get(&format!("/v1/invoices/{id}/payments"), As::Human(&app.b))
        .await
        .expect(404);
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        As::Human(&app.b),
        Some(json!({"amount_minor": 1})),
    )
    .await
    .expect(404);
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        As::Ai(&app.a),
        Some(json!({"amount_minor": 1})),
    )
    .await
    .expect(202);
});
