//! POST /v1/invoices/bulk/issue and /v1/invoices/bulk/delete: foreign ids are ignored.

use serde_json::{Value, json};

use crate::support::*;

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
