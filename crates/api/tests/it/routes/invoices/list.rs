//! GET /v1/invoices: filters and cursor pages.

use serde_json::json;

use crate::support::*;

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
