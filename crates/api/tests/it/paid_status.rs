//! Getting paid: payment status with the clock, the dashboard's counts and the list filter.

use serde_json::json;

use crate::support::*;

async fn issued(app: &TestApp, to: &str, due: &str, price: i64) -> (String, i64) {
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": to, "lines": one_line(price), "due_date": due}),
        )
        .await;
    let id = d["id"].as_str().unwrap().to_owned();
    let inv = app.issue(&app.a, &id).await;
    (id, inv["total"].as_i64().unwrap())
}

async fn pay(app: &TestApp, id: &str, amount: i64) {
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        As::Human(&app.a),
        Some(json!({"amount_minor": amount})),
    )
    .await
    .expect(201);
}

async fn listed(app: &TestApp, status: &str) -> Vec<String> {
    let page = app
        .get(
            &format!("/v1/invoices?payment_status={status}"),
            As::Ai(&app.a),
        )
        .await
        .expect(200)
        .json();
    let mut ids: Vec<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            assert_eq!(i["payment_status"], status);
            i["id"].as_str().unwrap().to_owned()
        })
        .collect();
    ids.sort();
    ids
}

db_test!(
    overdue_follows_the_clock_in_views_counts_and_filters,
    |app| {
        app.set_time("2026-03-01T12:00:00Z");
        app.settle(&app.a).await;
        let c = app.entity(&app.a, irish_customer()).await;
        app.draft(&app.a, json!({"recipient_id": c, "lines": one_line(100)}))
            .await;
        let (unpaid, _) = issued(&app, &c, "2026-03-10", 10000).await;
        let (partly, _) = issued(&app, &c, "2026-03-20", 10000).await;
        let (paid, total) = issued(&app, &c, "2026-03-05", 10000).await;
        let (late, _) = issued(&app, &c, "2026-03-02", 10000).await;
        pay(&app, &partly, 1000).await;
        pay(&app, &paid, total).await;

        let counts = |d: serde_json::Value| d["invoice_counts"].clone();
        let d = counts(
            app.get("/v1/dashboard", As::Ai(&app.a))
                .await
                .expect(200)
                .json(),
        );
        assert_eq!(d["draft"], 1);
        assert_eq!(d["issued"], 4);
        assert_eq!(
            (
                &d["unpaid"],
                &d["partially_paid"],
                &d["paid"],
                &d["overdue"]
            ),
            (&json!(2), &json!(1), &json!(1), &json!(0)),
            "{d}"
        );
        let mut both = vec![unpaid.clone(), late.clone()];
        both.sort();
        assert_eq!(listed(&app, "unpaid").await, both);
        assert_eq!(listed(&app, "overdue").await, Vec::<String>::new());

        // Two weeks later: the unpaid and the partly paid invoices past their due dates are
        // overdue; the paid one stays paid.
        app.set_time("2026-03-21T00:00:01Z");
        let d = counts(
            app.get("/v1/dashboard", As::Ai(&app.a))
                .await
                .expect(200)
                .json(),
        );
        assert_eq!(
            (
                &d["unpaid"],
                &d["partially_paid"],
                &d["paid"],
                &d["overdue"]
            ),
            (&json!(0), &json!(0), &json!(1), &json!(3)),
            "{d}"
        );
        let mut three = vec![unpaid.clone(), late.clone(), partly.clone()];
        three.sort();
        assert_eq!(listed(&app, "overdue").await, three);
        assert_eq!(listed(&app, "paid").await, vec![paid.clone()]);
        assert!(listed(&app, "partially_paid").await.is_empty());
        let inv = app
            .get(&format!("/v1/invoices/{partly}"), As::Ai(&app.a))
            .await
            .json();
        assert_eq!(inv["payment_status"], "overdue");

        // Between the two: only the invoice due on 2 March is overdue (on its due day, after 00:00 UTC).
        app.set_time("2026-03-09T23:59:59Z");
        let d = counts(
            app.get("/v1/dashboard", As::Ai(&app.a))
                .await
                .expect(200)
                .json(),
        );
        assert_eq!(
            (
                &d["unpaid"],
                &d["partially_paid"],
                &d["paid"],
                &d["overdue"]
            ),
            (&json!(1), &json!(1), &json!(1), &json!(1)),
            "{d}"
        );
        assert_eq!(listed(&app, "overdue").await, vec![late.clone()]);
        assert_eq!(listed(&app, "partially_paid").await, vec![partly.clone()]);

        let r = app
            .get("/v1/invoices?payment_status=late", As::Ai(&app.a))
            .await
            .expect(400);
        assert!(r.text().contains("payment_status"), "{}", r.text());
    }
);

// An invoice with nothing to pay is paid as soon as it is issued, in the view, the list
// filter and the dashboard alike: no payment can be recorded against it, so calling it
// `unpaid` (then `overdue` for ever) would leave it owed with no way to settle it.
db_test!(an_invoice_with_nothing_to_pay_is_paid_everywhere, |app| {
    app.set_time("2026-03-01T12:00:00Z");
    app.settle(&app.a).await;
    let c = app.entity(&app.a, irish_customer()).await;
    let (free, total) = issued(&app, &c, "2026-03-02", 0).await;
    assert_eq!(total, 0);
    let (owed, _) = issued(&app, &c, "2026-03-02", 10000).await;

    // After the due date: the free one is paid, the other overdue, wherever one looks.
    app.set_time("2026-03-10T00:00:00Z");
    for (id, status) in [(&free, "paid"), (&owed, "overdue")] {
        let inv = app
            .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(inv["payment_status"], status, "{id}");
    }
    assert_eq!(listed(&app, "paid").await, vec![free.clone()]);
    assert_eq!(listed(&app, "overdue").await, vec![owed.clone()]);
    assert!(listed(&app, "unpaid").await.is_empty());
    let d = app
        .get("/v1/dashboard", As::Ai(&app.a))
        .await
        .expect(200)
        .json()["invoice_counts"]
        .clone();
    assert_eq!(
        (&d["unpaid"], &d["paid"], &d["overdue"]),
        (&json!(0), &json!(1), &json!(1)),
        "{d}"
    );
});
