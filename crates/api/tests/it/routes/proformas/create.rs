//! POST /v1/proformas: a proforma is a quote; the invoice fields it does not keep are
//! refused, named, rather than dropped.

use serde_json::json;

use crate::support::*;

db_test!(fields_a_proforma_does_not_keep_are_refused_by_name, |app| {
    let customer = settled_with_customer(&app).await;
    let r = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(5000),
                "due_date": "2026-12-31", "notes": "Thanks"})),
        )
        .await
        .expect(400);
    let msg = r.text();
    assert!(
        msg.contains("`due_date`") && msg.contains("`notes`") && msg.contains("/invoice"),
        "{msg}"
    );
    // Nothing was stored.
    let list = app
        .get("/v1/proformas", As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"].as_array().unwrap().len(), 0, "{list}");
    // Without them it is made; an explicit null due date is no value to drop.
    let p = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(5000), "due_date": null})),
        )
        .await
        .expect(201)
        .json();
    let pid = p["id"].as_str().unwrap();
    let r = app
        .call(
            "PATCH",
            &format!("/v1/proformas/{pid}"),
            As::Human(&app.a),
            Some(json!({"buyer_reference": "PO-1", "lines": one_line(7000)})),
        )
        .await
        .expect(400);
    assert!(r.text().contains("`buyer_reference`"), "{}", r.text());
    let unchanged = app
        .get(&format!("/v1/proformas/{pid}"), As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(unchanged["total"], p["total"]);
});
