//! Issue #27, the review queue: held bodies kept once and never listed, caps per token
//! and per company, expiry, the `X-Invoicing-Source` mark, and approvals of requests
//! whose token can no longer act.

use serde_json::{Value, json};

use crate::{
    members::{add, token_for},
    support::*,
};

fn str_of(v: &Value) -> String {
    v.as_str().unwrap().to_owned()
}

async fn hold(app: &TestApp, who: As<'_>, name: &str) -> String {
    let held = app
        .call(
            "PATCH",
            "/v1/company",
            who,
            Some(json!({"friendlyName": name})),
        )
        .await
        .expect(202)
        .json();
    str_of(&held["auditEntryId"])
}

async fn entry(app: &TestApp, id: &str) -> Value {
    app.get(&format!("/v1/ai-audit/{id}"), As::Human(&app.a))
        .await
        .expect(200)
        .json()
}

async fn company_files(app: &TestApp) -> Vec<Vec<u8>> {
    sqlx::query_scalar("SELECT data FROM files WHERE company_id = $1 ORDER BY id")
        .bind(&app.a.company_id)
        .fetch_all(app.db.pool())
        .await
        .unwrap()
}

db_test!(
    a_held_upload_is_kept_once_as_raw_bytes_and_never_listed,
    |app| {
        let supplier = app.entity(&app.a, irish_customer()).await;
        let expense = str_of(
            &app.call(
                "POST",
                "/v1/expenses",
                As::Human(&app.a),
                Some(json!({"supplier_id": supplier, "invoice_reference": "R-1",
                "lines": [{"concept": "x", "subtotal": 10}]})),
            )
            .await
            .expect(201)
            .json()["id"],
        );
        let mut pdf = b"%PDF-1.7\n".to_vec();
        pdf.extend((0..2 * 1024 * 1024u32).map(|i| (i % 251) as u8));
        let id = str_of(
            &app.call_raw(
                "PUT",
                &format!("/v1/expenses/{expense}/receipt"),
                As::Ai(&app.a),
                Some(pdf.clone()),
                "application/pdf",
            )
            .await
            .expect(202)
            .json()["auditEntryId"],
        );

        // Lists carry the body's size and type, never the body.
        let list = app.get("/v1/ai-audit", As::Human(&app.a)).await.expect(200);
        assert!(list.body.len() < 4096, "{} bytes", list.body.len());
        let row = &list.json()["data"][0];
        assert_eq!(row["id"], id.as_str());
        assert!(row["requestBody"].is_null());
        assert_eq!(row["bodySize"], pdf.len());
        assert_eq!(row["contentType"], "application/pdf");
        let url = format!("/v1/ai-audit/{id}/body");
        assert_eq!(row["bodyUrl"], url.as_str());
        assert!(entry(&app, &id).await["requestBody"].is_null());

        // Downloaded as it was sent, as an attachment a browser never renders.
        let body = app.get(&url, As::Human(&app.a)).await.expect(200);
        assert!(body.body == pdf, "the body comes back byte for byte");
        assert_eq!(body.content_type(), "application/pdf");
        assert!(
            body.headers["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment")
        );
        assert_eq!(body.headers["x-content-type-options"], "nosniff");

        // Kept once, raw: not in the entry, and one file holding exactly these bytes.
        let inline: Option<String> =
            sqlx::query_scalar("SELECT request_body FROM ai_audit_entries WHERE id = $1")
                .bind(&id)
                .fetch_one(app.db.pool())
                .await
                .unwrap();
        assert!(inline.is_none());
        let files = company_files(&app).await;
        assert_eq!(files.len(), 1);
        assert!(files[0] == pdf, "raw bytes, not base64");

        // Approval replays it from there; the held copy goes once decided.
        let approved = app.review(&id, "approve").await.expect(200).json();
        assert_eq!(approved["status"], "approved", "{approved}");
        assert!(approved["bodyUrl"].is_null());
        assert_eq!(approved["bodySize"], pdf.len(), "the size stays on record");
        let receipt = app
            .get(
                &format!("/v1/expenses/{expense}/receipt"),
                As::Human(&app.a),
            )
            .await
            .expect(200);
        assert!(receipt.body == pdf);
        assert_eq!(
            company_files(&app).await.len(),
            1,
            "only the receipt is left"
        );
        let gone = app.get(&url, As::Human(&app.a)).await.expect(404);
        assert!(gone.text().contains("no longer kept"), "{}", gone.text());
    }
);

db_test!(a_small_json_body_stays_readable_in_the_entry, |app| {
    let id = hold(&app, As::Ai(&app.a), "inline").await;
    let e = entry(&app, &id).await;
    assert_eq!(
        serde_json::from_str::<Value>(e["requestBody"].as_str().unwrap()).unwrap(),
        json!({"friendlyName": "inline"})
    );
    assert!(e["bodySize"].as_i64().unwrap() > 0);
    let list = app.get("/v1/ai-audit", As::Human(&app.a)).await.json();
    assert!(list["data"][0]["requestBody"].is_null(), "not in lists");
    let body = app
        .get(&format!("/v1/ai-audit/{id}/body"), As::Ai(&app.a))
        .await
        .expect(200);
    assert_eq!(body.json(), json!({"friendlyName": "inline"}));
    // Company B sees neither the entry nor its body.
    app.get(&format!("/v1/ai-audit/{id}/body"), As::Human(&app.b))
        .await
        .expect(404);
});

db_test!(
    the_review_queue_is_capped_per_token_and_per_company,
    |app| {
        let mut app = app;
        app.router = app.with_queue_limits(api::gate::QueueLimits {
            max_entries: 3,
            max_bytes: 1024 * 1024,
            max_entries_per_token: 2,
            max_bytes_per_token: 4096,
            ttl_days: 14,
        });
        let first = hold(&app, As::Ai(&app.a), "1").await;
        hold(&app, As::Ai(&app.a), "2").await;
        let before = app.fingerprint().await;
        let full = app
            .call(
                "PATCH",
                "/v1/company",
                As::Ai(&app.a),
                Some(json!({"friendlyName": "3"})),
            )
            .await
            .expect(429);
        assert!(
            full.headers["retry-after"]
                .to_str()
                .unwrap()
                .parse::<u64>()
                .unwrap()
                > 0
        );
        let text = full.text();
        assert!(
            text.contains("this token")
                && text.contains("2 requests")
                && text.contains("approve or reject"),
            "{text}"
        );
        // Another token of the company has its own allowance, up to the company's.
        hold(&app, As::Mcp(&app.a), "mcp").await;
        let full = app
            .call(
                "PATCH",
                "/v1/company",
                As::Mcp(&app.a),
                Some(json!({"friendlyName": "mcp 2"})),
            )
            .await
            .expect(429);
        assert!(
            full.text().contains("this company") && full.text().contains("3 requests"),
            "{}",
            full.text()
        );
        // Another company is not affected.
        hold(&app, As::Ai(&app.b), "b").await;
        // A person's decision makes room.
        app.review(&first, "reject").await.expect(200);
        hold(&app, As::Ai(&app.a), "again").await;
        // Bytes count too: a body past the token's allowance is refused before anything runs.
        let big = app
            .call_raw(
                "PATCH",
                "/v1/company",
                As::Mcp(&app.a),
                Some(vec![b' '; 5000]),
                "application/json",
            )
            .await;
        assert_eq!(big.status.as_u16(), 429, "{}", big.text());
        assert!(big.text().contains("MiB"), "{}", big.text());
        assert_eq!(app.fingerprint().await, before, "refusals wrote nothing");
        let pending = app
            .get("/v1/ai-audit?status=pending", As::Human(&app.a))
            .await
            .json();
        assert_eq!(pending["data"].as_array().unwrap().len(), 3);
    }
);

db_test!(pending_entries_expire_and_can_never_be_approved, |app| {
    let before = app.fingerprint().await;
    let id = hold(&app, As::Ai(&app.a), "late").await;
    let e = entry(&app, &id).await;
    let created: chrono::DateTime<chrono::Utc> = e["createdAt"].as_str().unwrap().parse().unwrap();
    let expires: chrono::DateTime<chrono::Utc> = e["expiresAt"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        expires - created,
        chrono::Duration::days(14),
        "the default time"
    );

    app.set_time(&(chrono::Utc::now() + chrono::Duration::days(15)).to_rfc3339());
    assert_eq!(entry(&app, &id).await["status"], "expired");
    let pending = app
        .get("/v1/ai-audit?status=pending", As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(pending["data"], json!([]));
    let expired = app
        .get("/v1/ai-audit?status=expired", As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(expired["data"][0]["id"], id.as_str());
    for action in ["approve", "reject"] {
        let r = app.review(&id, action).await.expect(409);
        assert!(r.text().contains("expired"), "{}", r.text());
    }
    assert_eq!(app.fingerprint().await, before, "it never ran");
    // The next hold writes the status (no worker needed); the entry still never runs.
    hold(&app, As::Ai(&app.a), "next").await;
    let status: String = sqlx::query_scalar("SELECT status FROM ai_audit_entries WHERE id = $1")
        .bind(&id)
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    assert_eq!(status, "expired");
    // The status is documented.
    let doc = app.get("/openapi.json", As::Anonymous).await.json();
    let statuses = &doc["components"]["schemas"]["AuditStatus"]["enum"];
    assert!(
        statuses.as_array().unwrap().contains(&json!("expired")),
        "{statuses}"
    );
});

db_test!(
    only_the_mcp_server_can_mark_a_request_as_coming_through_mcp,
    |app| {
        let forged = |proof: Option<String>| {
            let mut h = vec![
                ("authorization", format!("Bearer {}", app.a.token)),
                ("content-type", "application/json".to_owned()),
                ("x-invoicing-source", "mcp".to_owned()),
            ];
            if let Some(p) = proof {
                h.push(("x-invoicing-source-proof", p));
            }
            h
        };
        let body = || Some(serde_json::to_vec(&json!({"friendlyName": "src"})).unwrap());
        let proof = api::auth::mcp_source_proof(&test_secret());
        for (given, want) in [
            (None, "api"),
            (Some("not-the-proof".to_owned()), "api"),
            (Some(proof.clone()), "mcp"),
        ] {
            let held = app
                .call_with("PATCH", "/v1/company", &forged(given), body())
                .await
                .expect(202)
                .json();
            let e = entry(&app, held["auditEntryId"].as_str().unwrap()).await;
            assert_eq!(e["source"], want);
        }
        // A person cannot stamp an invoice's origin `mcp` with the bare header either.
        let customer = app.entity(&app.a, irish_customer()).await;
        let mut h = forged(None);
        h.push(("x-human-proof", app.a.proof.clone()));
        let invoice = app
            .call_with(
                "POST",
                "/v1/invoices",
                &h,
                Some(
                    serde_json::to_vec(&json!({"recipient_id": customer, "lines": one_line(100)}))
                        .unwrap(),
                ),
            )
            .await
            .expect(201)
            .json();
        assert_eq!(invoice["origin"], "api");
    }
);

db_test!(
    approving_a_request_whose_token_can_no_longer_act_fails_it,
    |app| {
        let created = app
            .call(
                "POST",
                "/v1/tokens",
                As::Human(&app.a),
                Some(json!({"description": "agent"})),
            )
            .await
            .expect(201)
            .json();
        let agent = format!("Bearer {}", created["token"].as_str().unwrap());
        let id = hold(&app, As::Header(&agent), "from a revoked token").await;
        app.call(
            "DELETE",
            &format!("/v1/tokens/{}", created["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(204);
        let before = app.fingerprint().await;
        let done = app.review(&id, "approve").await.expect(200).json();
        assert_eq!(done["status"], "failed", "{done}");
        assert!(
            done["errorMessage"].as_str().unwrap().contains("revoked"),
            "{done}"
        );
        assert_eq!(app.fingerprint().await, before, "nothing ran");
        app.review(&id, "approve").await.expect(409);

        // A member deactivated since: the same.
        add(
            &app,
            &app.a,
            json!({"email": "ana@example.com", "kind": "password"}),
        )
        .await;
        let ana = token_for(&app, &app.a, "ana@example.com").await;
        let id = hold(&app, As::Header(&ana), "from a former member").await;
        app.call(
            "POST",
            "/v1/members/ana@example.com/deactivate",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200);
        let before = app.fingerprint().await;
        let done = app.review(&id, "approve").await.expect(200).json();
        assert_eq!(done["status"], "failed", "{done}");
        assert!(
            done["errorMessage"]
                .as_str()
                .unwrap()
                .contains("no longer an active member"),
            "{done}"
        );
        assert_eq!(app.fingerprint().await, before, "nothing ran");
    }
);

db_test!(
    the_daily_prune_expires_old_entries_and_removes_their_bodies,
    |app| {
        let supplier = app.entity(&app.a, irish_customer()).await;
        let expense = str_of(
            &app.call(
                "POST",
                "/v1/expenses",
                As::Human(&app.a),
                Some(json!({"supplier_id": supplier, "invoice_reference": "R-2",
                "lines": [{"concept": "x", "subtotal": 10}]})),
            )
            .await
            .expect(201)
            .json()["id"],
        );
        // Held three weeks ago: its 14 days are over.
        app.set_time(&(chrono::Utc::now() - chrono::Duration::days(21)).to_rfc3339());
        let id = str_of(
            &app.call_raw(
                "PUT",
                &format!("/v1/expenses/{expense}/receipt"),
                As::Ai(&app.a),
                Some(b"%PDF-1.7 old upload".to_vec()),
                "application/pdf",
            )
            .await
            .expect(202)
            .json()["auditEntryId"],
        );
        *app.clock.lock().unwrap() = None;
        assert_eq!(company_files(&app).await.len(), 1, "the held body");

        let mut tx = app.db.begin_write().await.unwrap();
        store::jobs::enqueue(
            tx.conn(),
            &store::jobs::NewJob::new("jobs.prune", json!({})),
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let outbox = tempfile::tempdir().unwrap();
        app.worker(None, outbox.path())
            .run_until_idle()
            .await
            .unwrap();

        let status: String =
            sqlx::query_scalar("SELECT status FROM ai_audit_entries WHERE id = $1")
                .bind(&id)
                .fetch_one(app.db.pool())
                .await
                .unwrap();
        assert_eq!(status, "expired");
        assert!(company_files(&app).await.is_empty(), "its body is gone");
        let gone = app
            .get(&format!("/v1/ai-audit/{id}/body"), As::Human(&app.a))
            .await
            .expect(404);
        assert!(gone.text().contains("no longer kept"), "{}", gone.text());
    }
);
