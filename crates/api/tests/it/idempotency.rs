//! `Idempotency-Key` on POST: retries replay the first answer and never run twice.

use serde_json::{Value, json};

use crate::support::*;

fn headers(t: &Tenant, human: bool, key: &str) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("authorization", format!("Bearer {}", t.token)),
        ("content-type", "application/json".to_owned()),
        ("idempotency-key", key.to_owned()),
    ];
    if human {
        h.push(("x-human-proof", t.proof.clone()));
    }
    h
}

async fn post(app: &TestApp, t: &Tenant, human: bool, key: &str, path: &str, body: &Value) -> Resp {
    app.call_with(
        "POST",
        path,
        &headers(t, human, key),
        Some(serde_json::to_vec(body).unwrap()),
    )
    .await
}

async fn entity_count(app: &TestApp, t: &Tenant) -> usize {
    app.get("/v1/entities", As::Human(t))
        .await
        .expect(200)
        .json()["data"]
        .as_array()
        .unwrap()
        .len()
}

db_test!(a_retried_post_is_answered_again_and_runs_once, |app| {
    let body = irish_customer();
    let first = post(&app, &app.a, true, "k-1", "/v1/entities", &body)
        .await
        .expect(201);
    assert!(first.headers.get("idempotent-replayed").is_none());
    let again = post(&app, &app.a, true, "k-1", "/v1/entities", &body)
        .await
        .expect(201);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.body, first.body, "the same answer, byte for byte");
    assert_eq!(again.content_type(), "application/json");
    assert_eq!(entity_count(&app, &app.a).await, 1);

    // The same key for another request: 409, nothing runs.
    let other = json!({"name": "Other", "type": "IE:LTD", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}});
    let r = post(&app, &app.a, true, "k-1", "/v1/entities", &other)
        .await
        .expect(409);
    assert!(r.text().contains("k-1"), "{}", r.text());
    post(
        &app,
        &app.a,
        true,
        "k-1",
        "/v1/bank-accounts",
        &json!({"name": "x"}),
    )
    .await
    .expect(409);
    assert_eq!(entity_count(&app, &app.a).await, 1);

    // Keys are per company: B's "k-1" is its own.
    post(&app, &app.b, true, "k-1", "/v1/entities", &body)
        .await
        .expect(201);
    assert_eq!(entity_count(&app, &app.b).await, 1);

    // After 24 hours the key is forgotten.
    app.set_time(&(chrono::Utc::now() + chrono::Duration::hours(25)).to_rfc3339());
    let late = post(&app, &app.a, true, "k-1", "/v1/entities", &body)
        .await
        .expect(201);
    assert!(late.headers.get("idempotent-replayed").is_none());
    assert_eq!(entity_count(&app, &app.a).await, 2);
});

db_test!(
    a_failed_request_stores_nothing_and_may_be_retried_with_its_key,
    |app| {
        let before = app.fingerprint().await;
        let bad = json!({"name": "No type", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}});
        post(&app, &app.a, true, "k-2", "/v1/entities", &bad)
            .await
            .expect(400);
        assert_eq!(
            app.fingerprint().await,
            before,
            "no stored answer for a failure"
        );
        post(&app, &app.a, true, "k-2", "/v1/entities", &irish_customer())
            .await
            .expect(201);
    }
);

db_test!(issuing_twice_with_a_key_returns_the_same_number, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    let draft = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(1000)}),
        )
        .await;
    let path = format!("/v1/invoices/{}/issue", draft["id"].as_str().unwrap());
    let first = post(&app, &app.a, true, "issue-1", &path, &Value::Null)
        .await
        .expect(200)
        .json();
    let again = post(&app, &app.a, true, "issue-1", &path, &Value::Null)
        .await
        .expect(200);
    assert_eq!(again.json()["invoice_number"], first["invoice_number"]);
    // Without the key, a second issue is refused: the key is what makes retries safe.
    app.call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(409);
});

db_test!(an_ai_retry_gets_the_same_audit_entry, |app| {
    let body = irish_customer();
    let first = post(&app, &app.a, false, "ai-1", "/v1/entities", &body)
        .await
        .expect(202)
        .json();
    let again = post(&app, &app.a, false, "ai-1", "/v1/entities", &body)
        .await
        .expect(202);
    assert_eq!(again.headers["idempotent-replayed"], "true");
    assert_eq!(again.json()["auditEntryId"], first["auditEntryId"]);
    let pending = app
        .get("/v1/ai-audit?status=pending", As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(pending["data"].as_array().unwrap().len(), 1, "{pending}");
});

db_test!(concurrent_requests_with_one_key_run_once, |app| {
    let body = irish_customer();
    let (r1, r2) = tokio::join!(
        post(&app, &app.a, true, "race", "/v1/entities", &body),
        post(&app, &app.a, true, "race", "/v1/entities", &body),
    );
    let statuses = [r1.status.as_u16(), r2.status.as_u16()];
    assert!(statuses.contains(&201), "{statuses:?}");
    assert!(
        statuses.iter().all(|s| [201, 409].contains(s)),
        "{statuses:?}"
    );
    assert_eq!(entity_count(&app, &app.a).await, 1);
});

db_test!(malformed_keys_are_refused, |app| {
    let before = app.fingerprint().await;
    for key in ["has space", &"x".repeat(256), "a\tb"] {
        let r = post(&app, &app.a, true, key, "/v1/entities", &irish_customer())
            .await
            .expect(400);
        assert!(r.text().contains("Idempotency-Key"), "{}", r.text());
    }
    assert_eq!(app.fingerprint().await, before);
});

db_test!(the_key_is_documented_on_every_writing_post, |app| {
    let doc = app
        .get("/openapi.json", As::Anonymous)
        .await
        .expect(200)
        .json();
    let mut posts = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(op) = item.get("post") else { continue };
        let has = op["parameters"].as_array().is_some_and(|ps| {
            ps.iter()
                .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header")
        });
        let read_only = api::gate::READ_ONLY_POSTS.contains(&path.as_str());
        assert_eq!(has, !read_only, "POST {path}");
        posts += 1;
    }
    assert!(posts > 20);
});
