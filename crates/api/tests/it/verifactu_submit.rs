//! VERI*FACTU submission: the real `verifactu.submit` job over HTTP against the fake AEAT
//! (`jobs::fake_aeat`), which checks every request against the XSD and the chain.

use std::time::Duration;

use jobs::fake_aeat::{Answer, FakeAeat};
use serde_json::{Value, json};

use crate::background::Running;
use crate::support::*;
use crate::verifactu::{authorize, records, spanish};

const SUBMIT: &str = "verifactu.submit";

/// A Spanish company A allowed to issue, and a Spanish customer.
async fn ready(app: &TestApp) -> String {
    spanish(app).await;
    authorize(app).await;
    app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await
}

async fn issue_n(app: &TestApp, customer: &str, n: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for i in 0..n {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(10000 + i as i64)}),
            )
            .await;
        out.push(app.issue(&app.a, d["id"].as_str().unwrap()).await);
    }
    out
}

async fn record(app: &TestApp, invoice: &Value) -> Value {
    records(app, invoice).await.remove(0)
}

/// Every request the fake got was valid: XSD, huellas, chain.
fn assert_clean(fake: &FakeAeat) {
    for (i, r) in fake.requests().iter().enumerate() {
        assert!(r.problems.is_empty(), "request {i}: {:?}", r.problems);
    }
}

async fn wait_for_status(app: &TestApp, invoice: &Value, status: &str) -> Value {
    for _ in 0..400 {
        let r = record(app, invoice).await;
        if r["status"] == status {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "record never reached {status}: {}",
        record(app, invoice).await
    );
}

db_test!(
    records_are_sent_in_chain_order_and_answers_stored,
    aeat,
    |app| {
        let fake = FakeAeat::start().await.unwrap();
        let customer = ready(&app).await;
        let issued = issue_n(&app, &customer, 3).await;
        // One job per issuer, however many invoices.
        let jobs = app.jobs(Some(SUBMIT)).await;
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert_eq!(
            jobs[0].company_id.as_deref(),
            Some(app.a.company_id.as_str())
        );
        for inv in &issued {
            assert_eq!(record(&app, inv).await["status"], "pending");
        }

        let worker = app.aeat_worker(&fake.url(), Duration::from_secs(10));
        assert_eq!(worker.run_until_idle().await.unwrap(), 1);
        assert_clean(&fake);
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 1, "one batch");
        let sent: Vec<&str> = reqs[0]
            .records
            .iter()
            .map(|r| r.num_serie.as_str())
            .collect();
        let expected: Vec<&str> = issued
            .iter()
            .map(|i| i["reference"].as_str().unwrap())
            .collect();
        assert_eq!(sent, expected, "chain order");
        for inv in &issued {
            let r = record(&app, inv).await;
            assert_eq!(r["status"], "accepted", "{r}");
            assert!(r["csv"].as_str().unwrap().starts_with("A-FAKE"), "{r}");
            assert_eq!(r["attempts"], 1);
            assert!(r["answered_at"].is_string() && r["submitted_at"].is_string());
        }
        let jobs = app.jobs(Some(SUBMIT)).await;
        assert_eq!(jobs[0].status, "done");
        assert_eq!(
            jobs[0].dedupe_key, None,
            "the key is free for the next invoice"
        );

        // The next invoice queues a new job, and its record chains to the last one sent.
        let more = issue_n(&app, &customer, 1).await;
        assert_eq!(app.jobs(Some(SUBMIT)).await.len(), 2);
        worker.run_until_idle().await.unwrap();
        assert_clean(&fake);
        assert_eq!(fake.requests().len(), 2);
        assert_eq!(record(&app, &more[0]).await["status"], "accepted");
        assert_eq!(fake.registered(), 4);
    }
);

db_test!(
    a_rejected_record_is_stored_and_does_not_block_the_chain,
    aeat,
    |app| {
        let fake = FakeAeat::start().await.unwrap();
        let customer = ready(&app).await;
        let issued = issue_n(&app, &customer, 3).await;
        fake.push(Answer::Reject {
        positions: vec![1],
        code: 1189,
        description: "Si TipoFactura es F1 o F3 o R1 o R2 o R3 o R4 el bloque Destinatarios tiene que estar cumplimentado.".into(),
    });
        fake.push(Answer::AcceptWithErrors {
            positions: vec![0],
            code: 2001,
        });
        let worker = app.aeat_worker(&fake.url(), Duration::from_secs(10));
        worker.run_until_idle().await.unwrap();
        let rejected = record(&app, &issued[1]).await;
        assert_eq!(rejected["status"], "rejected");
        assert_eq!(rejected["aeat_code"], "1189");
        assert!(
            rejected["aeat_description"]
                .as_str()
                .unwrap()
                .contains("customer"),
            "{rejected}"
        );
        assert!(rejected["csv"].is_null(), "a rejected record has no CSV");
        for i in [0, 2] {
            assert_eq!(record(&app, &issued[i]).await["status"], "accepted");
        }
        // Later records chain after the rejected one and are sent normally.
        let more = issue_n(&app, &customer, 1).await;
        worker.run_until_idle().await.unwrap();
        let r = record(&app, &more[0]).await;
        assert_eq!(r["status"], "accepted_with_errors");
        assert_eq!(r["aeat_code"], "2001");
        assert_eq!(
            r["previous_huella"],
            record(&app, &issued[2]).await["huella"]
        );
        assert_clean(&fake);
        assert_eq!(fake.requests().len(), 2);
    }
);

db_test!(
    faults_and_http_errors_are_retried_with_the_same_batch,
    aeat,
    |app| {
        let fake = FakeAeat::start().await.unwrap();
        let customer = ready(&app).await;
        let issued = issue_n(&app, &customer, 2).await;
        fake.push(Answer::Fault {
            server: true,
            message: "Error técnico. Inténtelo más tarde.".into(),
        });
        fake.push(Answer::Http(503));
        let worker = app.aeat_worker(&fake.url(), Duration::from_secs(10));
        // First run: the fault. The batch stays `sending` with the error shown.
        worker.run_until_idle().await.unwrap();
        let r = record(&app, &issued[0]).await;
        assert_eq!(r["status"], "sending");
        assert!(
            r["last_error"].as_str().unwrap().contains("SOAP fault"),
            "{r}"
        );
        let job = &app.jobs(Some(SUBMIT)).await[0];
        assert_eq!((job.status.as_str(), job.attempts), ("queued", 1));
        assert!(job.last_error.as_deref().unwrap().contains("Error técnico"));

        let running = Running::spawn(app.aeat_worker(&fake.url(), Duration::from_secs(10)));
        wait_for_status(&app, &issued[1], "accepted").await;
        running.stop().await;
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 3, "fault, 503, success");
        assert!(
            reqs.iter().all(|r| r.body == reqs[0].body),
            "the same batch each time"
        );
        assert_clean(&fake);
        let r = record(&app, &issued[0]).await;
        assert_eq!(
            (r["status"].clone(), r["attempts"].clone()),
            (json!("accepted"), json!(3))
        );
        assert!(r["last_error"].is_null());
        assert_eq!(fake.registered(), 2);
    }
);

db_test!(
    a_lost_answer_is_sent_again_and_duplicates_count_as_accepted,
    aeat,
    |app| {
        let fake = FakeAeat::start().await.unwrap();
        let customer = ready(&app).await;
        let issued = issue_n(&app, &customer, 2).await;
        // The AEAT registers the records but the answer comes after the client gave up
        // (as when the worker dies after sending).
        fake.push(Answer::Slow(Duration::from_secs(3)));
        let worker = app.aeat_worker(&fake.url(), Duration::from_millis(800));
        worker.run_until_idle().await.unwrap();
        let r = record(&app, &issued[0]).await;
        assert_eq!(r["status"], "sending");
        assert!(
            r["last_error"].as_str().unwrap().contains("did not answer"),
            "{r}"
        );
        assert_eq!(fake.registered(), 2);

        let running = Running::spawn(app.aeat_worker(&fake.url(), Duration::from_secs(10)));
        wait_for_status(&app, &issued[1], "accepted").await;
        running.stop().await;
        let reqs = fake.requests();
        assert_eq!(reqs.len(), 2);
        assert_eq!(reqs[0].body, reqs[1].body, "the same batch, byte for byte");
        for inv in &issued {
            let r = record(&app, inv).await;
            assert_eq!(r["status"], "accepted", "{r}");
            assert!(
                r["aeat_description"].as_str().unwrap().contains("3000"),
                "{r}"
            );
        }
        assert_eq!(fake.registered(), 2, "nothing registered twice");
        assert_clean(&fake);
    }
);

db_test!(the_wait_time_paces_the_next_batch, aeat, |app| {
    let fake = FakeAeat::start().await.unwrap();
    fake.set_wait(2);
    let customer = ready(&app).await;
    let first = issue_n(&app, &customer, 1).await;
    let worker = app.aeat_worker(&fake.url(), Duration::from_secs(10));
    worker.run_until_idle().await.unwrap();
    assert_eq!(record(&app, &first[0]).await["status"], "accepted");
    let sent_at = std::time::Instant::now();

    let second = issue_n(&app, &customer, 1).await;
    worker.run_until_idle().await.unwrap();
    // Not sent: the job waits for TiempoEsperaEnvio, rescheduled without counting a failure.
    assert_eq!(record(&app, &second[0]).await["status"], "pending");
    assert_eq!(fake.requests().len(), 1);
    let job = app.jobs(Some(SUBMIT)).await.into_iter().last().unwrap();
    assert_eq!((job.status.as_str(), job.attempts), ("queued", 0));
    assert!(job.run_at > store::now_micros(), "rescheduled for later");
    assert!(job.last_error.is_none());

    let running = Running::spawn(app.aeat_worker(&fake.url(), Duration::from_secs(10)));
    wait_for_status(&app, &second[0], "accepted").await;
    running.stop().await;
    assert!(
        sent_at.elapsed() >= Duration::from_millis(1500),
        "the second request waited"
    );
    assert_eq!(fake.requests().len(), 2);
    assert_clean(&fake);
});

db_test!(non_spanish_issuers_queue_nothing, aeat, |app| {
    app.settle(&app.b).await;
    let c = app.entity(&app.b, irish_customer()).await;
    let d = app
        .draft(&app.b, json!({"recipient_id": c, "lines": one_line(100)}))
        .await;
    let inv = app.issue(&app.b, d["id"].as_str().unwrap()).await;
    let r = app
        .get(
            &format!("/v1/invoices/{}/verifactu", inv["id"].as_str().unwrap()),
            As::Ai(&app.b),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["data"], json!([]));
    assert!(r["annulled_at"].is_null());
    assert!(app.jobs(Some(SUBMIT)).await.is_empty());
});

db_test!(
    disabled_mode_builds_records_but_queues_no_submission,
    |app| {
        let customer = ready(&app).await;
        let issued = issue_n(&app, &customer, 1).await;
        assert_eq!(record(&app, &issued[0]).await["status"], "not_sent");
        assert!(app.jobs(Some(SUBMIT)).await.is_empty());
    }
);
