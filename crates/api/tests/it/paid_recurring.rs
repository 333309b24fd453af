//! Recurring invoices: catching up exactly the periods that started, once each whatever
//! the number of workers and runs, pausing and ending, automatic issue (and its clear
//! error), and the AI hold.

use serde_json::{Value, json};

use crate::support::*;

async fn create(app: &TestApp, body: Value) -> Value {
    app.call(
        "POST",
        "/v1/recurring-invoices",
        As::Human(&app.a),
        Some(body),
    )
    .await
    .expect(201)
    .json()
}

async fn get(app: &TestApp, id: &str) -> Value {
    app.get(&format!("/v1/recurring-invoices/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json()
}

fn monthly(customer: &str, start: &str) -> Value {
    json!({
        "recipient_id": customer,
        "lines": one_line(9900),
        "notes": "Monthly support",
        "frequency": "monthly",
        "start_date": start,
    })
}

db_test!(catch_up_makes_exactly_the_periods_that_started, |app| {
    app.set_time("2026-01-10T08:00:00Z");
    app.settle(&app.a).await;
    let c = app.entity(&app.a, irish_customer()).await;
    let mut body = monthly(&c, "2025-10-31");
    body["end_date"] = json!("2026-03-15");
    let r = create(&app, body).await;
    let id = r["id"].as_str().unwrap().to_owned();
    assert_eq!(r["status"], "active");
    assert_eq!(r["next_run_date"], "2025-10-31");
    assert_eq!(r["frequency"], "monthly");
    assert_eq!(r["interval"], 1);
    assert_eq!(r["notes"], "Monthly support");
    assert!(
        app.made_by(&id).await.is_empty(),
        "nothing is made in the request"
    );

    let outbox = tempfile::tempdir().unwrap();
    let worker = app.paid_worker(None, outbox.path());
    // Three months of downtime: the periods of 31 October, 30 November and 31 December.
    let pass = worker.run_schedule(app.now()).await.unwrap();
    assert_eq!(pass.drafts, 3);
    let made = app.made_by(&id).await;
    assert_eq!(made.len(), 3);
    for d in &made {
        assert_eq!(d["status"], "draft");
        assert_eq!(d["origin"], "recurring");
        assert_eq!(d["recurring_invoice_id"], id.as_str());
        assert_eq!(d["notes"], "Monthly support");
        assert_eq!(d["recipient_id"], c.as_str());
    }
    let r = get(&app, &id).await;
    assert_eq!(r["next_run_date"], "2026-01-31");
    assert!(r["last_error"].is_null(), "{r}");

    // Running again, or as a restarted worker, makes nothing more.
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 0);
    let restarted = app.paid_worker(None, outbox.path());
    assert_eq!(restarted.run_schedule(app.now()).await.unwrap().drafts, 0);
    // A deleted draft is not made again: its period ran.
    let first = made[0]["id"].as_str().unwrap();
    app.call(
        "DELETE",
        &format!("/v1/invoices/{first}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    assert_eq!(restarted.run_schedule(app.now()).await.unwrap().drafts, 0);
    assert_eq!(app.made_by(&id).await.len(), 2);

    // By 20 March: 31 January and 28 February; the next (31 March) is past the end.
    app.set_time("2026-03-20T00:00:00Z");
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 2);
    let r = get(&app, &id).await;
    assert_eq!(r["status"], "ended");
    assert!(r["next_run_date"].is_null());
    app.set_time("2027-01-01T00:00:00Z");
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 0);
    assert_eq!(app.made_by(&id).await.len(), 4);
    let all = app
        .get("/v1/invoices?status=draft", As::Ai(&app.a))
        .await
        .json();
    assert_eq!(all["data"].as_array().unwrap().len(), 4);
});

db_test!(two_workers_on_two_pools_make_each_period_once, |app| {
    app.set_time("2026-06-01T00:00:00Z");
    app.settle(&app.a).await;
    let c = app.entity(&app.a, irish_customer()).await;
    let mut ids = Vec::new();
    for start in ["2026-01-05", "2026-02-02", "2026-03-02"] {
        let mut body = monthly(&c, start);
        body["frequency"] = json!("weekly");
        ids.push(create(&app, body).await["id"].as_str().unwrap().to_owned());
    }
    // A second server on the same database: its own pool, the same clock.
    let second_db = store::Db::connect(&app.url).await.unwrap();
    let mut second = app.state.clone();
    second.db = second_db;
    let outbox = tempfile::tempdir().unwrap();
    let w1 = app.paid_worker(None, outbox.path());
    let w2 = app.paid_worker_on(second, None, outbox.path());
    let now = app.now();
    let (a, b, c2) = tokio::join!(
        w1.run_schedule(now),
        w2.run_schedule(now),
        w1.run_schedule(now)
    );
    let total = a.unwrap().drafts + b.unwrap().drafts + c2.unwrap().drafts;
    // Weeks started by 1 June: from 5 January 22, from 2 February 18, from 2 March 14.
    assert_eq!(total, 22 + 18 + 14);
    for (id, weeks) in ids.iter().zip([22, 18, 14]) {
        let made = app.made_by(id).await;
        assert_eq!(made.len(), weeks, "schedule {id}");
    }
    let (a, b) = tokio::join!(w1.run_schedule(now), w2.run_schedule(now));
    assert_eq!(a.unwrap().drafts + b.unwrap().drafts, 0);
});

db_test!(pausing_skips_periods_and_patch_moves_the_schedule, |app| {
    app.set_time("2026-01-01T00:00:00Z");
    app.settle(&app.a).await;
    let c = app.entity(&app.a, irish_customer()).await;
    let r = create(&app, monthly(&c, "2026-01-01")).await;
    let id = r["id"].as_str().unwrap().to_owned();
    let outbox = tempfile::tempdir().unwrap();
    let worker = app.paid_worker(None, outbox.path());
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 1);

    let path = format!("/v1/recurring-invoices/{id}");
    let p = app
        .call(
            "PATCH",
            &path,
            As::Human(&app.a),
            Some(json!({"status": "paused"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(p["status"], "paused");
    app.set_time("2026-04-15T00:00:00Z");
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 0);
    // Resumed: February to April started while paused and are skipped; May is next.
    let p = app
        .call(
            "PATCH",
            &path,
            As::Human(&app.a),
            Some(json!({"status": "active"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(p["status"], "active");
    assert_eq!(p["next_run_date"], "2026-05-01");
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 0);

    // PATCH may move the start and change the draft; the next run date follows.
    let p = app
        .call(
            "PATCH",
            &path,
            As::Human(&app.a),
            Some(json!({"start_date": "2026-04-10", "frequency": "quarterly", "lines": one_line(500)})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(p["next_run_date"], "2026-04-10");
    assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 1);
    let made = app.made_by(&id).await;
    assert_eq!(made.len(), 2);
    assert_eq!(made[1]["lines"][0]["unit_price"], 500);
    assert_eq!(get(&app, &id).await["next_run_date"], "2026-07-10");

    // Refusals: what could never work is a 400, and nothing changes.
    for (body, says) in [
        (json!({"interval": 0}), "interval"),
        (json!({"status": "ended"}), "status"),
        (json!({"due_date": "2026-05-01"}), "due_date"),
        (json!({"end_date": "2020-01-01"}), "end_date"),
        (json!({"auto_send": true}), "auto_issue"),
        (
            json!({"recipient_id": uuid::Uuid::new_v4().to_string()}),
            "",
        ),
        (json!({"frequency": "daily"}), "frequency"),
    ] {
        let r = app
            .call("PATCH", &path, As::Human(&app.a), Some(body.clone()))
            .await;
        assert!(
            [400, 404].contains(&r.status.as_u16()),
            "{body}: {}",
            r.text()
        );
        assert!(r.text().contains(says), "{body}: {}", r.text());
    }
    let r = app
        .call(
            "POST",
            "/v1/recurring-invoices",
            As::Human(&app.a),
            Some(json!({"recipient_id": c, "lines": one_line(1), "start_date": "2026-01-01"})),
        )
        .await
        .expect(400);
    assert!(r.text().contains("frequency"), "{}", r.text());

    // Another company sees none of it.
    app.get(&path, As::Human(&app.b)).await.expect(404);
    let list = app
        .get("/v1/recurring-invoices", As::Human(&app.b))
        .await
        .expect(200)
        .json();
    assert!(list["data"].as_array().unwrap().is_empty());
    app.call("DELETE", &path, As::Human(&app.b), None)
        .await
        .expect(404);
    app.call("DELETE", &path, As::Human(&app.a), None)
        .await
        .expect(204);
    app.get(&path, As::Human(&app.a)).await.expect(404);
    // Its drafts stay.
    assert_eq!(app.made_by(&id).await.len(), 2);
});

db_test!(
    auto_issue_uses_the_issuing_path_and_says_why_it_could_not,
    |app| {
        app.set_time("2026-02-16T09:00:00Z");
        app.settle(&app.a).await;
        let mut customer = irish_customer();
        customer["email"] = json!("ap@dublin.example");
        let c = app.entity(&app.a, customer).await;
        let mut body = monthly(&c, "2026-01-15");
        body["auto_issue"] = json!(true);
        body["auto_send"] = json!(true);
        let r = create(&app, body).await;
        let id = r["id"].as_str().unwrap().to_owned();
        let outbox = tempfile::tempdir().unwrap();
        let worker = app.paid_worker(None, outbox.path());
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 2);
        let made = app.made_by(&id).await;
        assert_eq!(made.len(), 2);
        let mut numbers = Vec::new();
        for inv in &made {
            assert_eq!(inv["status"], "issued", "{inv}");
            assert_eq!(inv["origin"], "recurring");
            assert!(
                inv["due_date"].is_string(),
                "due date from the terms: {inv}"
            );
            numbers.push(inv["invoice_number"].as_i64().unwrap());
            let deliveries = app.deliveries(inv["id"].as_str().unwrap()).await;
            assert_eq!(deliveries.len(), 1);
            assert_eq!(deliveries[0]["kind"], "send");
            assert_eq!(deliveries[0]["to"], json!(["ap@dublin.example"]));
        }
        numbers.sort();
        assert_eq!(numbers[1], numbers[0] + 1, "gapless: {numbers:?}");
        assert!(get(&app, &id).await["last_error"].is_null());
        worker.run_until_idle().await.unwrap();
        assert_eq!(crate::paid_support::outbox_mails(outbox.path()).len(), 2);

        // A Spanish issuer without the VERI*FACTU authorization: the draft is made (no gap in
        // the periods), stays a draft, and the schedule says why.
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"type": "ES:SL", "fiscalId": "B12345674"})),
        )
        .await
        .expect(200);
        app.set_time("2026-03-16T09:00:00Z");
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 1);
        let made = app.made_by(&id).await;
        assert_eq!(made.len(), 3);
        assert_eq!(made[2]["status"], "draft");
        let r = get(&app, &id).await;
        let error = r["last_error"].as_str().unwrap_or_default().to_owned();
        assert!(
            error.contains("VERI*FACTU") && error.contains("draft"),
            "{r}"
        );
        assert_eq!(r["next_run_date"], "2026-04-15");
    }
);

db_test!(
    an_ai_callers_schedule_is_held_until_a_person_approves,
    |app| {
        app.set_time("2026-01-10T00:00:00Z");
        app.settle(&app.a).await;
        let c = app.entity(&app.a, irish_customer()).await;
        let before = app.fingerprint().await;
        let held = app
            .call(
                "POST",
                "/v1/recurring-invoices",
                As::Mcp(&app.a),
                Some(monthly(&c, "2026-01-01")),
            )
            .await
            .expect(202)
            .json();
        assert_eq!(held["error"], "pending_approval");
        assert_eq!(
            app.fingerprint().await,
            before,
            "nothing is stored while held"
        );
        // Validated first: a schedule that could never work is refused at once.
        app.call(
        "POST",
        "/v1/recurring-invoices",
        As::Ai(&app.a),
        Some(json!({"recipient_id": c, "lines": one_line(1), "frequency": "hourly", "start_date": "2026-01-01"})),
    )
    .await
    .expect(400);
        let entry = held["auditEntryId"].as_str().unwrap();
        app.call(
            "POST",
            &format!("/v1/ai-audit/{entry}/approve"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200);
        let list = app
            .get("/v1/recurring-invoices", As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(list["data"].as_array().unwrap().len(), 1);
    }
);

db_test!(
    a_schedule_that_cannot_make_its_draft_says_why_until_fixed,
    |app| {
        app.set_time("2026-01-01T00:00:00Z");
        app.settle(&app.a).await;
        let gone = app.entity(&app.a, irish_customer()).await;
        let kept = app.entity(&app.a, irish_customer()).await;
        let broken = create(&app, monthly(&gone, "2026-02-01")).await;
        let broken = broken["id"].as_str().unwrap().to_owned();
        let fine = create(&app, monthly(&kept, "2026-02-01")).await;
        let fine = fine["id"].as_str().unwrap().to_owned();
        app.call(
            "DELETE",
            &format!("/v1/entities/{gone}"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(204);
        let outbox = tempfile::tempdir().unwrap();
        let worker = app.paid_worker(None, outbox.path());
        app.set_time("2026-03-05T00:00:00Z");
        // The broken schedule delays no other: the fine one gets its two drafts.
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 2);
        assert_eq!(app.made_by(&fine).await.len(), 2);
        let r = get(&app, &broken).await;
        let error = r["last_error"].as_str().unwrap_or_default().to_owned();
        assert!(error.contains("2026-02-01"), "{r}");
        assert_eq!(r["next_run_date"], "2026-02-01", "the period stays due");
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 0);
        // Fixed with PATCH: the missed periods are made on the next pass, and the error clears.
        app.call(
            "PATCH",
            &format!("/v1/recurring-invoices/{broken}"),
            As::Human(&app.a),
            Some(json!({"recipient_id": kept})),
        )
        .await
        .expect(200);
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 2);
        let r = get(&app, &broken).await;
        assert!(r["last_error"].is_null(), "{r}");
        assert_eq!(r["next_run_date"], "2026-04-01");
    }
);

db_test!(
    a_corrupt_schedule_is_an_error_and_stops_only_itself,
    |app| {
        app.set_time("2026-01-01T00:00:00Z");
        app.settle(&app.a).await;
        let c = app.entity(&app.a, irish_customer()).await;
        let bad = create(&app, monthly(&c, "2026-01-01")).await;
        let bad = bad["id"].as_str().unwrap().to_owned();
        let good = create(&app, monthly(&c, "2026-01-01")).await;
        let good = good["id"].as_str().unwrap().to_owned();
        sqlx::query("UPDATE recurring_invoices SET frequency = 'fortnightly' WHERE id = $1")
            .bind(&bad)
            .execute(app.db.pool())
            .await
            .unwrap();
        // Stored data that does not decode is an error, never a silent default.
        app.get(&format!("/v1/recurring-invoices/{bad}"), As::Human(&app.a))
            .await
            .expect(500);
        let outbox = tempfile::tempdir().unwrap();
        let worker = app.paid_worker(None, outbox.path());
        assert_eq!(worker.run_schedule(app.now()).await.unwrap().drafts, 1);
        assert_eq!(app.made_by(&good).await.len(), 1);
    }
);
