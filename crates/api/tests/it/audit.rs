//! The AI review queue: held requests, approval with replay, rejection, failure,
//! concurrency, isolation, and a walk over every mutating route.

use serde_json::{Value, json};

use crate::support::*;

async fn audit_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM ai_audit_entries")
        .fetch_one(app.db.pool())
        .await
        .unwrap()
}

async fn hold(app: &TestApp, who: As<'_>, method: &str, path: &str, body: Value) -> String {
    let resp = app.call(method, path, who, Some(body)).await.expect(202);
    let v = resp.json();
    assert_eq!(v["error"], "pending_approval");
    let id = v["auditEntryId"].as_str().unwrap().to_owned();
    assert!(v["message"].as_str().unwrap().contains(&id));
    id
}

/// Approves the held entry `id` as company A's person; the entry as answered.
async fn approve(app: &TestApp, id: &str) -> Value {
    app.review(id, "approve").await.expect(200).json()
}

db_test!(ai_write_is_held_then_runs_on_approval, |app| {
    let before = app.fingerprint().await;
    let id = hold(
        &app,
        As::Ai(&app.a),
        "PATCH",
        "/v1/company",
        json!({"friendlyName": "Agent set"}),
    )
    .await;
    assert_eq!(
        app.fingerprint().await,
        before,
        "nothing changes until approval"
    );

    let entry = app
        .get(&format!("/v1/ai-audit/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(entry["status"], "pending");
    assert_eq!(entry["source"], "api");
    assert_eq!(entry["action"], "company.update");
    assert_eq!(entry["httpMethod"], "PATCH");
    assert_eq!(entry["httpPath"], "/v1/company");
    assert_eq!(
        serde_json::from_str::<Value>(entry["requestBody"].as_str().unwrap()).unwrap(),
        json!({"friendlyName": "Agent set"})
    );
    assert!(entry["reviewedAt"].is_null() && entry["resourceId"].is_null());

    let approved = approve(&app, &id).await;
    assert_eq!(approved["status"], "approved");
    assert_eq!(approved["resourceId"], app.a.company_id.as_str());
    assert_eq!(approved["reviewedBy"], app.a.user_id.as_str());
    assert!(approved["reviewedAt"].is_string());
    let company = app.get("/v1/company", As::Ai(&app.a)).await.json();
    assert_eq!(company["friendlyName"], "Agent set");

    // Acts once: a second approve or a reject is a plain-text 409.
    for action in ["approve", "reject"] {
        let resp = app.review(&id, action).await.expect(409);
        assert!(resp.content_type().starts_with("text/plain"));
    }
});

db_test!(rejected_entries_never_run, |app| {
    let before = app.fingerprint().await;
    let id = hold(
        &app,
        As::Mcp(&app.a),
        "POST",
        "/v1/company/registration",
        registration_body(),
    )
    .await;
    let entry = app
        .get(&format!("/v1/ai-audit/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(
        entry["source"], "mcp",
        "MCP tokens are recorded as source mcp"
    );
    assert_eq!(entry["action"], "company.registration");
    let rejected = app.review(&id, "reject").await.expect(200).json();
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["reviewedBy"], app.a.user_id.as_str());
    app.review(&id, "approve").await.expect(409);
    assert_eq!(app.fingerprint().await, before);
});

db_test!(
    replay_that_no_longer_succeeds_is_failed_and_writes_nothing,
    |app| {
        // Valid when asked: an Irish tax id for an Irish company.
        let mut body = registration_body();
        body["name"] = json!("Should not be written");
        let id = hold(
            &app,
            As::Ai(&app.a),
            "POST",
            "/v1/company/registration",
            body,
        )
        .await;
        // Meanwhile a person makes the company Spanish: the Irish id no longer fits.
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"type": "ES:SL"})),
        )
        .await
        .expect(200);
        let before = app.fingerprint().await;
        let entry = approve(&app, &id).await;
        assert_eq!(entry["status"], "failed");
        let msg = entry["errorMessage"].as_str().unwrap();
        assert!(msg.starts_with("400") && msg.contains("fiscal_id"), "{msg}");
        assert!(entry["resourceId"].is_null());
        assert_eq!(
            app.fingerprint().await,
            before,
            "the failed replay left nothing behind"
        );
        let failed = app
            .get("/v1/ai-audit?status=failed", As::Ai(&app.a))
            .await
            .json();
        assert_eq!(failed["data"][0]["id"], id.as_str());
    }
);

db_test!(ai_validation_errors_answer_now_and_record_nothing, |app| {
    let resp = app
        .call(
            "PATCH",
            "/v1/company",
            As::Ai(&app.a),
            Some(json!({"currencyCode": "nope"})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("currencyCode"));
    app.call(
        "POST",
        &format!("/v1/agreements/{}/accept", uuid::Uuid::new_v4()),
        As::Ai(&app.a),
        None,
    )
    .await
    .expect(403);
    assert_eq!(audit_count(&app).await, 0);
});

db_test!(approval_is_human_only_and_tenant_scoped, |app| {
    let id = hold(
        &app,
        As::Ai(&app.a),
        "PATCH",
        "/v1/company",
        json!({"friendlyName": "x"}),
    )
    .await;
    for who in [As::Ai(&app.a), As::Mcp(&app.a)] {
        for action in ["approve", "reject"] {
            let resp = app
                .call("POST", &format!("/v1/ai-audit/{id}/{action}"), who, None)
                .await
                .expect(403);
            assert_eq!(resp.json()["error"], "human_required");
        }
    }
    // Company B neither sees nor reviews A's entries.
    app.get(&format!("/v1/ai-audit/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    for action in ["approve", "reject"] {
        app.call(
            "POST",
            &format!("/v1/ai-audit/{id}/{action}"),
            As::Human(&app.b),
            None,
        )
        .await
        .expect(404);
    }
    let b_list = app
        .get("/v1/ai-audit", As::Human(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(b_list["data"], json!([]));
    let entry = app
        .get(&format!("/v1/ai-audit/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(entry["status"], "pending");
});

db_test!(concurrent_approvals_run_once, |app| {
    let id = hold(
        &app,
        As::Ai(&app.a),
        "PATCH",
        "/v1/company",
        json!({"friendlyName": "once"}),
    )
    .await;
    let path = format!("/v1/ai-audit/{id}/approve");
    let (r1, r2) = tokio::join!(
        app.call("POST", &path, As::Human(&app.a), None),
        app.call("POST", &path, As::Human(&app.a), None)
    );
    let mut statuses = [r1.status.as_u16(), r2.status.as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{} / {}", r1.text(), r2.text());
    let entry = app
        .get(&format!("/v1/ai-audit/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(entry["status"], "approved");
});

db_test!(queue_lists_filter_and_paginate, |app| {
    let first = hold(
        &app,
        As::Ai(&app.a),
        "PATCH",
        "/v1/company",
        json!({"friendlyName": "1"}),
    )
    .await;
    let second = hold(
        &app,
        As::Ai(&app.a),
        "PATCH",
        "/v1/company",
        json!({"friendlyName": "2"}),
    )
    .await;
    app.review(&first, "reject").await.expect(200);
    let all = app
        .get("/v1/ai-audit?limit=1", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(all["data"][0]["id"], second.as_str(), "newest first");
    let cursor = all["next_cursor"].as_str().unwrap();
    let next = app
        .get(
            &format!("/v1/ai-audit?limit=1&cursor={cursor}"),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(next["data"][0]["id"], first.as_str());
    assert!(next["next_cursor"].is_null());
    let pending = app
        .get("/v1/ai-audit?status=pending", As::Ai(&app.a))
        .await
        .json();
    assert_eq!(pending["data"].as_array().unwrap().len(), 1);
    assert_eq!(pending["data"][0]["id"], second.as_str());
    app.get("/v1/ai-audit?status=bogus", As::Ai(&app.a))
        .await
        .expect(400);
});

/// Sample bodies that succeed, so the walk sees real 202s and not only validation errors.
fn sample_body(method: &str, path: &str) -> Option<Value> {
    match (method, path) {
        ("PATCH", "/v1/company") => Some(json!({"friendlyName": "walk"})),
        ("POST", "/v1/company/registration") => Some(registration_body()),
        ("POST", "/v1/entities") => Some(irish_customer()),
        ("POST", "/v1/bank-accounts") => Some(json!({"name": "Walk"})),
        ("POST", "/v1/reports") => Some(json!({"report_type": "vat_summary",
            "period_start": "2026-01-01T00:00:00Z", "period_end": "2026-04-01T00:00:00Z"})),
        _ => None,
    }
}

db_test!(every_mutating_route_is_gated_for_ai_callers, |app| {
    let doc = app
        .get("/openapi.json", As::Anonymous)
        .await
        .expect(200)
        .json();
    // Real ids where a route needs one, so the handler gets as far as it can.
    let agreement = app.get("/v1/agreements", As::Ai(&app.a)).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = app.get("/v1/tokens", As::Ai(&app.a)).await.json()["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let pending = hold(
        &app,
        As::Ai(&app.a),
        "PATCH",
        "/v1/company",
        json!({"friendlyName": "p"}),
    )
    .await;
    let before = app.fingerprint().await;
    let mut mutating = 0;
    let mut held = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in ["post", "put", "patch", "delete"] {
            if item.get(method).is_none() {
                continue;
            }
            mutating += 1;
            let concrete = path
                .replace("/agreements/{id}", &format!("/agreements/{agreement}"))
                .replace("/tokens/{id}", &format!("/tokens/{token}"))
                .replace("/ai-audit/{id}", &format!("/ai-audit/{pending}"))
                .replace("{id}", &uuid::Uuid::new_v4().to_string())
                .replace("{pid}", &uuid::Uuid::new_v4().to_string())
                .replace("{sid}", &uuid::Uuid::new_v4().to_string())
                .replace("{delivery_id}", &uuid::Uuid::new_v4().to_string())
                .replace("{email}", "owner@alpha.test");
            let m = method.to_uppercase();
            for who in [As::Ai(&app.a), As::Mcp(&app.a)] {
                let body = sample_body(&m, path).unwrap_or_else(|| json!({}));
                let before_count = audit_count(&app).await;
                let resp = app.call(&m, &concrete, who, Some(body)).await;
                let status = resp.status.as_u16();
                if api::gate::READ_ONLY_POSTS.contains(&path.as_str()) {
                    assert!([200, 400].contains(&status), "{m} {path}: {status}");
                    assert_eq!(app.fingerprint().await, before, "{m} {path} wrote");
                    continue;
                }
                assert!(
                    [202, 400, 403, 404, 409].contains(&status),
                    "{m} {path} answered {status} to an AI caller: {}",
                    resp.text()
                );
                if status == 202 {
                    held += 1;
                    assert_eq!(audit_count(&app).await, before_count + 1);
                } else {
                    assert_eq!(
                        audit_count(&app).await,
                        before_count,
                        "{m} {path}: error recorded"
                    );
                }
                if sample_body(&m, path).is_some() {
                    assert_eq!(status, 202, "{m} {path} with a valid body must be held");
                }
                assert_eq!(
                    app.fingerprint().await,
                    before,
                    "{m} {path} changed data for an AI caller"
                );
            }
        }
    }
    assert!(
        mutating >= 7,
        "the route table lists the mutating routes ({mutating})"
    );
    assert!(held >= 4);
});

// Creating and issuing an invoice commit as soon as their writes are done (`Tx::done`), before
// the answer is made, but only for a person's own request: an AI caller's dry run still writes
// nothing, and an approval replays the request inside the approver's transaction, which goes
// on after the replay to record the outcome.
db_test!(
    an_ai_callers_invoice_is_created_and_issued_only_on_approval,
    |app| {
        let customer = settled_with_customer(&app).await;
        let body = json!({"recipient_id": customer, "lines": one_line(10000)});
        let before = app.fingerprint().await;
        let created = hold(&app, As::Ai(&app.a), "POST", "/v1/invoices", body.clone()).await;
        assert_eq!(app.fingerprint().await, before, "the dry run wrote nothing");
        let approved = approve(&app, &created).await;
        assert_eq!(approved["status"], "approved");
        let draft = approved["resourceId"]
            .as_str()
            .expect("the draft's id")
            .to_owned();
        let got = app
            .get(&format!("/v1/invoices/{draft}"), As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(got["status"], "draft");

        let before = app.fingerprint().await;
        let issue = hold(
            &app,
            As::Ai(&app.a),
            "POST",
            &format!("/v1/invoices/{draft}/issue"),
            json!({}),
        )
        .await;
        assert_eq!(
            app.fingerprint().await,
            before,
            "the dry run issued nothing"
        );
        let approved = approve(&app, &issue).await;
        assert_eq!(approved["status"], "approved");
        let issued = app
            .get(&format!("/v1/invoices/{draft}"), As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(issued["status"], "issued");
        assert_eq!(issued["invoice_number"], 1, "{issued}");
        // A person's own create and issue answer with what they committed.
        let mine = app.draft(&app.a, body).await;
        let mine = app.issue(&app.a, mine["id"].as_str().expect("id")).await;
        assert_eq!(mine["invoice_number"], 2, "{mine}");
        assert_eq!(
            app.get(
                &format!("/v1/invoices/{}", mine["id"].as_str().expect("id")),
                As::Human(&app.a)
            )
            .await
            .expect(200)
            .json(),
            mine
        );
    }
);
