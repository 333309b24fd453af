//! Reminders: one per `reminderDays` step after the due date, never twice for a step
//! (across runs, restarts and workers), never once the invoice is paid.

use serde_json::json;

use crate::{paid_support::outbox_mails, support::*};

db_test!(
    one_reminder_per_step_across_restarts_and_none_once_paid,
    |app| {
        app.set_time("2026-03-01T10:00:00Z");
        app.settle(&app.a).await;
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"reminderDays": [3, 10]})),
        )
        .await
        .expect(200);
        let mut customer = irish_customer();
        customer["email"] = json!("ap@dublin.example");
        let c = app.entity(&app.a, customer).await;
        let mut ids = Vec::new();
        for due in ["2026-03-05", "2026-03-05", "2026-03-30"] {
            let d = app
                .draft(
                    &app.a,
                    json!({"recipient_id": c, "lines": one_line(10000), "due_date": due}),
                )
                .await;
            let inv = app.issue(&app.a, d["id"].as_str().unwrap()).await;
            ids.push((
                inv["id"].as_str().unwrap().to_owned(),
                inv["total"].as_i64().unwrap(),
            ));
        }
        let (late, paid_later, not_yet) = (&ids[0].0, &ids[1].0, &ids[2].0);
        let outbox = tempfile::tempdir().unwrap();
        let worker = app.paid_worker(None, outbox.path());

        // Before the first step nothing is sent.
        app.set_time("2026-03-07T10:00:00Z");
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 0);
        // Three days after the due date: the first step, for both unpaid invoices due then.
        app.set_time("2026-03-08T00:00:01Z");
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 2);
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 0);
        // A restarted worker, and a second one, find nothing more to do for that step.
        let restarted = app.paid_worker(None, outbox.path());
        let (a, b) = tokio::join!(
            restarted.run_schedule(app.now()),
            worker.run_schedule(app.now())
        );
        assert_eq!(a.unwrap().reminders + b.unwrap().reminders, 0);
        worker.run_until_idle().await.unwrap();
        let mails = outbox_mails(outbox.path());
        assert_eq!(mails.len(), 2);
        assert!(mails.iter().all(|m| m.contains("Reminder")), "{mails:?}");
        assert!(mails.iter().all(|m| m.contains("application/pdf")));

        // One of them is paid; at the second step only the other is reminded.
        let (id, total) = &ids[1];
        app.call(
            "POST",
            &format!("/v1/invoices/{id}/payments"),
            As::Human(&app.a),
            Some(json!({"amount_minor": total})),
        )
        .await
        .expect(201);
        app.set_time("2026-03-20T00:00:00Z");
        assert_eq!(
            restarted.run_schedule(app.now()).await.unwrap().reminders,
            1
        );
        // Later: the invoice due on 30 March, first looked at 16 days after, gets its
        // latest step only, once.
        app.set_time("2026-04-15T00:00:00Z");
        assert_eq!(
            restarted.run_schedule(app.now()).await.unwrap().reminders,
            1
        );
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 0);
        app.set_time("2026-09-01T00:00:00Z");
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 0);
        restarted.run_until_idle().await.unwrap();

        let steps = |list: Vec<serde_json::Value>| -> Vec<(String, i64, String)> {
            list.iter()
                .map(|d| {
                    (
                        d["kind"].as_str().unwrap().to_owned(),
                        d["step"].as_i64().unwrap(),
                        d["status"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        };
        let sent = |s: i64| ("reminder".to_owned(), s, "sent".to_owned());
        assert_eq!(steps(app.deliveries(late).await), vec![sent(3), sent(10)]);
        assert_eq!(steps(app.deliveries(paid_later).await), vec![sent(3)]);
        // Due on 30 March and unpaid on 15 April: its latest step (10 days) only, once.
        assert_eq!(steps(app.deliveries(not_yet).await), vec![sent(10)]);
        assert_eq!(outbox_mails(outbox.path()).len(), 4);
    }
);

db_test!(
    turning_reminders_on_does_not_mail_long_overdue_invoices,
    |app| {
        app.set_time("2026-01-01T10:00:00Z");
        app.settle(&app.a).await;
        let mut customer = irish_customer();
        customer["email"] = json!("ap@dublin.example");
        let c = app.entity(&app.a, customer).await;
        for due in ["2026-01-05", "2026-04-20"] {
            let d = app
                .draft(
                    &app.a,
                    json!({"recipient_id": c, "lines": one_line(10000), "due_date": due}),
                )
                .await;
            app.issue(&app.a, d["id"].as_str().unwrap()).await;
        }
        app.set_time("2026-05-01T00:00:00Z");
        let outbox = tempfile::tempdir().unwrap();
        let worker = app.paid_worker(None, outbox.path());
        // Without reminderDays nothing is reminded.
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 0);
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"reminderDays": [7]})),
        )
        .await
        .expect(200);
        // Overdue since January (more than 30 days past its step): not mailed now. Due on
        // 20 April: its 7-day step has come.
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 1);
    }
);

db_test!(a_reminder_queued_before_a_payment_is_not_sent, |app| {
    app.set_time("2026-03-01T10:00:00Z");
    app.settle(&app.a).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"reminderDays": [1]})),
    )
    .await
    .expect(200);
    let mut customer = irish_customer();
    customer["email"] = json!("ap@dublin.example");
    let c = app.entity(&app.a, customer).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": c, "lines": one_line(10000), "due_date": "2026-03-02"}),
        )
        .await;
    let inv = app.issue(&app.a, d["id"].as_str().unwrap()).await;
    let id = inv["id"].as_str().unwrap();
    let outbox = tempfile::tempdir().unwrap();
    let worker = app.paid_worker(None, outbox.path());
    app.set_time("2026-03-04T00:00:00Z");
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().reminders, 1);
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/payments"),
        As::Human(&app.a),
        Some(json!({"amount_minor": inv["total"]})),
    )
    .await
    .expect(201);
    worker.run_until_idle().await.unwrap();
    assert!(outbox_mails(outbox.path()).is_empty());
    let list = app.deliveries(id).await;
    assert_eq!(list[0]["status"], "failed");
    assert!(
        list[0]["error"].as_str().unwrap().contains("paid"),
        "{}",
        list[0]
    );
});
