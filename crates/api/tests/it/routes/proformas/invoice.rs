//! POST /v1/proformas/{id}/invoice: a proforma becomes an invoice once.

use serde_json::json;

use crate::support::*;

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
