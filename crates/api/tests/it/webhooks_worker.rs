//! Webhook events the worker emits: `invoice.sent` when the `invoice.deliver` job mails a
//! send (not a reminder), and `invoice.overdue` once per invoice when its due date passes
//! unpaid (the schedule pass), never twice, also across workers; signed like every event,
//! and only to the invoice's company.

use std::sync::Arc;

use jobs::{Registry, Worker};
use serde_json::json;

use crate::{
    background::{Running, context, fast_config},
    paid_support::TestInvoicing,
    support::*,
    webhooks::{Receiver, drive, endpoint, verify},
};

/// A worker that mails invoices (to `.eml` files) and delivers webhooks to 127.0.0.1.
fn worker(app: &TestApp, outbox: &std::path::Path) -> Worker {
    let mut ctx = context(&app.db, None, outbox)
        .with_clock(app.state.clock.clone())
        .with_invoicing(Arc::new(TestInvoicing(app.state.clone())));
    ctx.webhooks = Arc::new(jobs::webhooks::Settings {
        allow_private: true,
        ..jobs::webhooks::Settings::default()
    });
    Worker::new(ctx, Registry::standard(), fast_config())
}

db_test!(invoice_sent_and_overdue_are_emitted_once_each, |app| {
    app.set_time("2026-03-01T10:00:00Z");
    let rx = Receiver::start().await;
    let (_, secret) = endpoint(&app, &app.a, &rx.url, &["invoice.sent", "invoice.overdue"]).await;
    // The other company listens too, and hears nothing of the first one's invoices.
    let other = Receiver::start().await;
    endpoint(
        &app,
        &app.b,
        &other.url,
        &["invoice.sent", "invoice.overdue"],
    )
    .await;
    app.settle(&app.a).await;
    let mut customer = irish_customer();
    customer["email"] = json!("ap@dublin.example");
    let c = app.entity(&app.a, customer).await;
    let mut issued = Vec::new();
    // The third has nothing to pay: paid when issued, so never overdue. The fourth is owed.
    for price in [10000, 10000, 0, 5000] {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": c, "lines": one_line(price), "due_date": "2026-03-05"}),
            )
            .await;
        issued.push(app.issue(&app.a, d["id"].as_str().unwrap()).await);
    }
    let (late, paid, nothing_owed, also_late) = (
        issued[0]["id"].as_str().unwrap().to_owned(),
        issued[1]["id"].as_str().unwrap().to_owned(),
        issued[2]["id"].as_str().unwrap().to_owned(),
        issued[3]["id"].as_str().unwrap().to_owned(),
    );
    assert_eq!(issued[2]["total"], 0);
    app.call(
        "POST",
        &format!("/v1/invoices/{paid}/payments"),
        As::Human(&app.a),
        Some(json!({"amount_minor": issued[1]["total"]})),
    )
    .await
    .expect(201);

    // A send: `invoice.sent` once the job has mailed it, not when it is queued.
    let outbox = tempfile::tempdir().unwrap();
    let w = worker(&app, outbox.path());
    let queued = app
        .call(
            "POST",
            &format!("/v1/invoices/{late}/send"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert!(rx.events().is_empty());
    drive(&w, "invoice.sent", || !rx.events().is_empty()).await;
    assert_eq!(rx.events(), ["invoice.sent"]);
    let sent = rx.got()[0].json();
    assert_eq!(sent["data"]["id"], late.as_str());
    assert_eq!(sent["data"]["delivery_id"], queued["id"]);
    assert_eq!(app.deliveries(&late).await[0]["status"], "sent");

    // Not overdue on its due date; the day after, once, whatever runs the pass.
    app.set_time("2026-03-04T23:00:00Z");
    assert_eq!(w.run_schedule(app.now()).await.unwrap().overdue, 0);
    app.set_time("2026-03-06T08:00:00Z");
    let second = worker(&app, outbox.path());
    let (a, b) = tokio::join!(w.run_schedule(app.now()), second.run_schedule(app.now()));
    assert_eq!(a.unwrap().overdue + b.unwrap().overdue, 2);
    assert_eq!(w.run_schedule(app.now()).await.unwrap().overdue, 0);
    drive(&w, "invoice.overdue", || rx.events().len() == 3).await;
    app.set_time("2026-03-09T08:00:00Z");
    assert_eq!(second.run_schedule(app.now()).await.unwrap().overdue, 0);
    w.run_until_idle().await.unwrap();

    let got = rx.got();
    assert_eq!(
        rx.events(),
        ["invoice.sent", "invoice.overdue", "invoice.overdue"]
    );
    let mut announced: Vec<String> = got[1..]
        .iter()
        .map(|e| e.json()["data"]["id"].as_str().unwrap().to_owned())
        .collect();
    announced.sort();
    let mut owed = vec![late.clone(), also_late.clone()];
    owed.sort();
    assert_eq!(announced, owed, "the unpaid ones, not the paid ones");
    // Exactly those the API calls overdue.
    for id in [&late, &also_late, &nothing_owed, &paid] {
        let status = app
            .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
            .await
            .expect(200)
            .json()["payment_status"]
            .clone();
        assert_eq!(status == "overdue", owed.contains(id), "{id}: {status}");
    }
    // Signed with the service's clock as the worker sent each one (a worker reading the
    // system clock would sign with today's time instead).
    verify(&secret, &got[0], "2026-03-01T10:00:00Z".parse().unwrap());
    verify(&secret, &got[1], "2026-03-06T08:00:00Z".parse().unwrap());
    assert!(other.got().is_empty(), "{:?}", other.events());
});

db_test!(
    a_running_worker_passes_the_schedule_on_the_services_clock,
    |app| {
        // Years ahead of the system clock: only a worker reading the service's clock finds the
        // invoice overdue.
        app.set_time("2030-01-01T10:00:00Z");
        let rx = Receiver::start().await;
        let (_, secret) = endpoint(&app, &app.a, &rx.url, &["invoice.overdue"]).await;
        app.settle(&app.a).await;
        let c = app.entity(&app.a, irish_customer()).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": c, "lines": one_line(10000), "due_date": "2030-01-05"}),
            )
            .await;
        let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        app.set_time("2030-01-06T08:00:00Z");

        // The worker's own loop (not a pass the test runs with a time it chose).
        let outbox = tempfile::tempdir().unwrap();
        let running = Running::spawn(worker(&app, outbox.path()));
        for _ in 0..400 {
            if !rx.events().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        running.stop().await;
        assert_eq!(rx.events(), ["invoice.overdue"]);
        let got = rx.got();
        assert_eq!(got[0].json()["data"]["id"], issued["id"]);
        verify(&secret, &got[0], app.now());
    }
);
