//! GET /v1/dashboard: figures matching a hand computation.
// Amounts are written as euros_cents (100_00 is 100.00), which reads better here.
#![allow(clippy::inconsistent_digit_grouping)]

use serde_json::json;

use crate::support::*;

db_test!(dashboard_matches_hand_computed_figures, |app| {
    app.settle(&app.a).await;
    let c1 = app.entity(&app.a, irish_customer()).await;
    let c2 = app.entity(&app.a, json!({"name": "US Co", "type": "US:Inc", "address": {"lines": ["1 Main St"], "city": "Springfield", "zipcode": "62701", "state": "IL", "country": "US"}, "currency_code": "USD"})).await;
    let s = supplier(&app).await;
    // Issue in several months and currencies (net amounts; IE VAT is excluded from revenue).
    for (when, to, currency, net) in [
        ("2025-12-15T10:00:00Z", &c1, "EUR", 100_00),
        ("2026-09-03T10:00:00Z", &c1, "EUR", 200_00),
        ("2026-11-05T10:00:00Z", &c2, "USD", 300_00),
        ("2026-11-06T10:00:00Z", &c1, "EUR", 50_00),
    ] {
        app.set_time(when);
        let body = json!({"recipient_id": to, "currency_code": currency, "lines": one_line(net),
            "exchange_rates": [{"from": "USD", "to": "EUR", "rate": "0.9"}]});
        let d = app.draft(&app.a, body).await;
        app.issue(&app.a, d["id"].as_str().unwrap()).await;
    }
    // A corrective invoice in November reverses the September one (negative revenue).
    let sept = app
        .get(
            "/v1/invoices?issued_from=2026-09-01T00:00:00Z&issued_to=2026-10-01T00:00:00Z",
            As::Ai(&app.a),
        )
        .await
        .json();
    app.set_time("2026-11-10T10:00:00Z");
    app.call(
        "POST",
        &format!(
            "/v1/invoices/{}/correct",
            sept["data"][0]["id"].as_str().unwrap()
        ),
        As::Human(&app.a),
        Some(json!({})),
    )
    .await
    .expect(201);
    app.draft(&app.a, json!({"recipient_id": c1, "lines": one_line(999)}))
        .await;
    for (date, net) in [
        ("2026-11-02T00:00:00Z", 40_00),
        ("2026-01-02T00:00:00Z", 10_00),
    ] {
        app.call("POST", "/v1/expenses", As::Human(&app.a), Some(json!({"supplier_id": s, "invoice_reference": date,
            "expense_date": date, "lines": [{"concept": "x", "subtotal": net}, {"concept": "VAT", "subtotal": 1, "is_tax": true}]}))).await.expect(201);
    }
    let mut tx = app.db.begin_write().await.unwrap();
    store::payments::add_points(tx.conn(), &app.a.company_id, 500, "EUR", Some("top-up"))
        .await
        .unwrap();
    tx.commit().await.unwrap();

    app.set_time("2026-11-20T12:00:00Z");
    let d = app
        .get("/v1/dashboard", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(d["primary_currency"], "EUR");
    assert_eq!(
        d["revenue_total"],
        json!([
        {"currency": "EUR", "amount_minor": 100_00 + 200_00 + 50_00 - 200_00},
        {"currency": "USD", "amount_minor": 300_00}])
    );
    assert_eq!(
        d["revenue_this_month"],
        json!([
        {"currency": "EUR", "amount_minor": 50_00 - 200_00},
        {"currency": "USD", "amount_minor": 300_00}])
    );
    assert_eq!(
        d["expenses_total"],
        json!([{"currency": "EUR", "amount_minor": 50_00}])
    );
    assert_eq!(
        d["expenses_this_month"],
        json!([{"currency": "EUR", "amount_minor": 40_00}])
    );
    let monthly = d["monthly_revenue"].as_array().unwrap();
    assert_eq!(monthly.len(), 12);
    assert_eq!(
        monthly[0],
        json!({"month": "2025-12", "amount_minor": 100_00})
    );
    assert_eq!(
        monthly[9],
        json!({"month": "2026-09", "amount_minor": 200_00})
    );
    assert_eq!(monthly[10], json!({"month": "2026-10", "amount_minor": 0}));
    assert_eq!(
        monthly[11],
        json!({"month": "2026-11", "amount_minor": 50_00 - 200_00})
    );
    assert_eq!(
        d["top_customers"].as_array().unwrap().len(),
        1,
        "only EUR customers rank in EUR"
    );
    assert_eq!(d["top_customers"][0]["name"], "Dublin Customer Ltd");
    assert_eq!(d["top_customers"][0]["revenue_minor"], 150_00);
    assert_eq!(
        d["customer_stats"],
        json!({"total": 2, "new_this_month": 1})
    );
    assert_eq!(d["invoice_counts"]["draft"], 1);
    assert_eq!(d["invoice_counts"]["issued"], 4);
    assert_eq!(d["invoice_counts"]["corrected"], 1);
    assert_eq!(d["invoice_counts"]["corrective"], 1);
    assert_eq!(d["points_balance_minor"], 500);
    assert_eq!(d["points_currency"], "EUR");
    assert!(d["subscription_tier"].is_null());
    // The rollups issuing wrote are what a rebuild from the invoices makes.
    let mut tx = app.db.begin_write().await.unwrap();
    store::dashboard::rebuild(tx.conn(), &app.a.company_id)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let rebuilt = app
        .get("/v1/dashboard", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(d, rebuilt);
    // Company B sees none of it.
    let b = app.get("/v1/dashboard", As::Ai(&app.b)).await.json();
    assert_eq!(b["revenue_total"], json!([]));
    assert_eq!(
        b["customer_stats"],
        json!({"total": 0, "new_this_month": 0})
    );
});
