//! API tokens: secrets shown once, listed without them, human-only writes, tenant isolation.

use serde_json::json;

use crate::support::*;

db_test!(created_token_is_shown_once_and_works, |app| {
    let created = app
        .call(
            "POST",
            "/v1/tokens",
            As::Human(&app.a),
            Some(json!({"description": "CI export"})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(created["kind"], "standard");
    let token = created["token"].as_str().unwrap();
    let proof = created["humanProof"].as_str().unwrap();
    assert!(uuid::Uuid::parse_str(token).is_ok());
    // The new token acts in the same company, as a person with its proof.
    let s = app
        .call_with(
            "GET",
            "/v1/session",
            &[("authorization", format!("Bearer {token}"))],
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(s["company"]["id"], app.a.company_id.as_str());
    app.call_with(
        "PATCH",
        "/v1/company",
        &[
            ("authorization", format!("Bearer {token}")),
            ("x-human-proof", proof.to_owned()),
            ("content-type", "application/json".into()),
        ],
        Some(br#"{"friendlyName":"via new token"}"#.to_vec()),
    )
    .await
    .expect(200);

    // Listing never shows secrets, and only this company's tokens.
    let list = app
        .get("/v1/tokens", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    let text = list.to_string();
    assert!(!text.contains(token) && !text.contains(proof));
    let items = list["data"].as_array().unwrap();
    assert_eq!(items.len(), 3, "two bootstrap tokens and the new one");
    assert_eq!(items[0]["id"], created["id"], "newest first");
    assert_eq!(items[0]["description"], "CI export");
    assert_eq!(items[0]["user_email"], "owner@alpha.test");
    assert!(items.iter().all(|t| t.get("token").is_none()));
    let b_list = app
        .get("/v1/tokens", As::Ai(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(b_list["data"].as_array().unwrap().len(), 2);
    // Stored only as hashes.
    let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM api_tokens")
        .fetch_all(app.db.pool())
        .await
        .unwrap();
    assert!(stored.iter().all(|h| h.len() == 64 && h != token));
});

db_test!(mcp_tokens_have_no_proof_and_are_always_ai, |app| {
    let created = app
        .call(
            "POST",
            "/v1/tokens",
            As::Human(&app.a),
            Some(json!({"description": "agent", "kind": "mcp"})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(created["kind"], "mcp");
    assert!(created["humanProof"].is_null());
    let token = created["token"].as_str().unwrap();
    let resp = app
        .call_with(
            "PATCH",
            "/v1/company",
            &[
                ("authorization", format!("Bearer {token}")),
                ("content-type", "application/json".into()),
            ],
            Some(br#"{"friendlyName":"agent"}"#.to_vec()),
        )
        .await
        .expect(202);
    assert_eq!(resp.json()["error"], "pending_approval");
});

db_test!(token_writes_are_human_only, |app| {
    let before = app.fingerprint().await;
    for who in [As::Ai(&app.a), As::Mcp(&app.a)] {
        let resp = app
            .call(
                "POST",
                "/v1/tokens",
                who,
                Some(json!({"description": "sneaky"})),
            )
            .await
            .expect(403);
        assert_eq!(resp.json()["error"], "human_required");
        let list = app.get("/v1/tokens", As::Ai(&app.a)).await.json();
        let id = list["data"][0]["id"].as_str().unwrap().to_owned();
        app.call("DELETE", &format!("/v1/tokens/{id}"), who, None)
            .await
            .expect(403);
    }
    assert_eq!(app.fingerprint().await, before);
    let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM ai_audit_entries")
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    assert_eq!(count, 0, "human-only operations are refused, not queued");
});

db_test!(token_validation_and_isolation, |app| {
    let before = app.fingerprint().await;
    for body in [
        json!({"description": ""}),
        json!({}),
        json!({"description": "x", "kind": "root"}),
    ] {
        app.call("POST", "/v1/tokens", As::Human(&app.a), Some(body))
            .await
            .expect(400);
    }
    // B cannot revoke A's token: 404, and A's token keeps working.
    let a_tokens = app.get("/v1/tokens", As::Ai(&app.a)).await.json();
    let a_id = a_tokens["data"][0]["id"].as_str().unwrap().to_owned();
    app.call(
        "DELETE",
        &format!("/v1/tokens/{a_id}"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
    app.call(
        "DELETE",
        &format!("/v1/tokens/{}", uuid::Uuid::new_v4()),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(404);
    assert_eq!(app.fingerprint().await, before);
    app.get("/v1/session", As::Ai(&app.a)).await.expect(200);
});

db_test!(token_list_paginates_with_a_cursor, |app| {
    for i in 0..3 {
        app.call(
            "POST",
            "/v1/tokens",
            As::Human(&app.a),
            Some(json!({"description": format!("t{i}")})),
        )
        .await
        .expect(201);
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/tokens?limit=2&cursor={c}"),
            None => "/v1/tokens?limit=2".to_owned(),
        };
        let page = app.get(&path, As::Ai(&app.a)).await.expect(200).json();
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        seen.extend(data.iter().map(|t| t["id"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(seen, sorted, "newest first, no duplicates");
    app.get("/v1/tokens?limit=0", As::Ai(&app.a))
        .await
        .expect(400);
    app.get("/v1/tokens?limit=501", As::Ai(&app.a))
        .await
        .expect(400);
    app.get("/v1/tokens?cursor=garbage", As::Ai(&app.a))
        .await
        .expect(400);
});
