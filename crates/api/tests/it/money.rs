//! Bank accounts, expenses with receipts, payments, and the dashboard.
// Amounts are written as euros_cents (100_00 is 100.00), which reads better here.
#![allow(clippy::inconsistent_digit_grouping)]

use serde_json::{Value, json};

use crate::support::*;

const IBAN: &str = "ES91 2100 0418 4502 0005 1332";
const IBAN2: &str = "DE89370400440532013000";

db_test!(bank_accounts_and_the_default_invariant, |app| {
    let first = app
        .call(
            "POST",
            "/v1/bank-accounts",
            As::Human(&app.a),
            Some(json!({"name": "Main", "iban": IBAN, "bic": "CAIXESBBXXX", "is_main": false})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(
        first["is_main"], true,
        "the first account is always the default"
    );
    assert_eq!(first["iban"], "ES9121000418450200051332");
    assert_eq!(first["currency_code"], "EUR");
    assert!(first["current_balance_minor"].is_null());
    let second = app
        .call(
            "POST",
            "/v1/bank-accounts",
            As::Human(&app.a),
            Some(json!({"name": "USD", "iban": IBAN2, "currency_code": "usd", "is_main": true})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(second["is_main"], true);
    let a1 = app
        .get(
            &format!("/v1/bank-accounts/{}", first["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(
        a1["account"]["is_main"], false,
        "making another default unsets the old one"
    );
    // Un-defaulting the default is refused; there is always one.
    app.call(
        "PATCH",
        &format!("/v1/bank-accounts/{}", second["id"].as_str().unwrap()),
        As::Human(&app.a),
        Some(json!({"is_main": false})),
    )
    .await
    .expect(400);
    // Bad input names the field and writes nothing.
    let before = app.fingerprint().await;
    for (body, field) in [
        (
            json!({"name": "X", "iban": "ES91 2100 0418 4502 0005 1333"}),
            "iban",
        ),
        (json!({"name": "X", "bic": "NOTABIC"}), "bic"),
        (
            json!({"name": "X", "currency_code": "EURO"}),
            "currency_code",
        ),
        (json!({"name": ""}), "name"),
    ] {
        let r = app
            .call("POST", "/v1/bank-accounts", As::Human(&app.a), Some(body))
            .await
            .expect(400);
        assert!(r.text().contains(field), "{}", r.text());
    }
    assert_eq!(app.fingerprint().await, before);
    // Snapshots: the latest by as_of_date is the current balance; listed newest first.
    let id = first["id"].as_str().unwrap();
    for (date, balance) in [
        ("2026-01-31T00:00:00Z", 100_00),
        ("2026-03-31T00:00:00Z", -50_00),
        ("2026-02-28T00:00:00Z", 70_00),
    ] {
        app.call(
            "POST",
            &format!("/v1/bank-accounts/{id}/snapshots"),
            As::Human(&app.a),
            Some(json!({"balance_minor": balance, "as_of_date": date})),
        )
        .await
        .expect(201);
    }
    let detail = app
        .get(&format!("/v1/bank-accounts/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(detail["account"]["current_balance_minor"], -5000);
    assert_eq!(detail["account"]["balance_as_of"], "2026-03-31T00:00:00Z");
    let balances: Vec<i64> = detail["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["balance_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(balances, vec![-5000, 7000, 10000]);
    let sid = detail["snapshots"][0]["id"].as_str().unwrap();
    app.call(
        "DELETE",
        &format!("/v1/bank-accounts/{id}/snapshots/{sid}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let detail = app
        .get(&format!("/v1/bank-accounts/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(detail["account"]["current_balance_minor"], 7000);
    // Isolation and the AI gate.
    app.get(&format!("/v1/bank-accounts/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    app.call(
        "DELETE",
        &format!("/v1/bank-accounts/{id}"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
    app.call(
        "POST",
        &format!("/v1/bank-accounts/{id}/snapshots"),
        As::Human(&app.b),
        Some(json!({"balance_minor": 1})),
    )
    .await
    .expect(404);
    app.call(
        "POST",
        "/v1/bank-accounts",
        As::Ai(&app.a),
        Some(json!({"name": "Agent"})),
    )
    .await
    .expect(202);
    // Deleting the default promotes the oldest remaining account.
    app.call(
        "DELETE",
        &format!("/v1/bank-accounts/{}", second["id"].as_str().unwrap()),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let a1 = app
        .get(&format!("/v1/bank-accounts/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(a1["account"]["is_main"], true);
});

db_test!(default_account_survives_concurrent_switches, |app| {
    let mut ids = Vec::new();
    for i in 0..4 {
        let a = app
            .call(
                "POST",
                "/v1/bank-accounts",
                As::Human(&app.a),
                Some(json!({"name": format!("A{i}")})),
            )
            .await
            .expect(201)
            .json();
        ids.push(a["id"].as_str().unwrap().to_owned());
    }
    let paths: Vec<String> = ids
        .iter()
        .map(|id| format!("/v1/bank-accounts/{id}"))
        .collect();
    let calls = paths.iter().map(|p| {
        app.call(
            "PATCH",
            p,
            As::Human(&app.a),
            Some(json!({"is_main": true})),
        )
    });
    for r in futures::future::join_all(calls).await {
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    }
    let list = app.get("/v1/bank-accounts", As::Ai(&app.a)).await.json();
    let mains = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["is_main"] == true)
        .count();
    assert_eq!(mains, 1);
});

async fn supplier(app: &TestApp) -> String {
    app.entity(&app.a, json!({"name": "Supplies SL", "type": "ES:SL", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}, "currency_code": "EUR"})).await
}

fn expense(supplier: &str, reference: &str) -> Value {
    json!({"supplier_id": supplier, "invoice_reference": reference, "category": "office",
        "expense_date": "2026-02-10T00:00:00Z",
        "lines": [{"concept": "Paper", "subtotal": 10000}, {"concept": "VAT 21%", "subtotal": 2100, "is_tax": true}]})
}

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
    // Company B sees none of it.
    let b = app.get("/v1/dashboard", As::Ai(&app.b)).await.json();
    assert_eq!(b["revenue_total"], json!([]));
    assert_eq!(
        b["customer_stats"],
        json!({"total": 0, "new_this_month": 0})
    );
});
