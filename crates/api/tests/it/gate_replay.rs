//! Issue #27, idempotent replay and secrets at rest: a stored answer belongs to the
//! caller (token and person/AI), answers that carry a secret shown once are never stored,
//! and no token or human proof is anywhere in the database.

use serde_json::{Value, json};

use crate::support::*;

fn keyed(token: &str, proof: Option<&str>, key: &str) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("authorization", format!("Bearer {token}")),
        ("content-type", "application/json".to_owned()),
        ("idempotency-key", key.to_owned()),
    ];
    if let Some(p) = proof {
        h.push(("x-human-proof", p.to_owned()));
    }
    h
}

/// A POST with `Idempotency-Key`, as the tenant's person (`human`) or the same token
/// without its proof (an AI caller).
async fn post(app: &TestApp, t: &Tenant, human: bool, key: &str, path: &str, body: &Value) -> Resp {
    let proof = human.then_some(t.proof.as_str());
    app.call_with(
        "POST",
        path,
        &keyed(&t.token, proof, key),
        Some(serde_json::to_vec(body).unwrap()),
    )
    .await
}

async fn token_count(app: &TestApp) -> usize {
    app.get("/v1/tokens", As::Human(&app.a))
        .await
        .expect(200)
        .json()["data"]
        .as_array()
        .unwrap()
        .len()
}

db_test!(an_ai_caller_cannot_replay_a_persons_token_creation, |app| {
    let body = json!({"description": "deploy"});
    let before = token_count(&app).await;
    let created = post(&app, &app.a, true, "tok-1", "/v1/tokens", &body)
        .await
        .expect(201)
        .json();
    let token = created["token"].as_str().unwrap().to_owned();
    let proof = created["humanProof"].as_str().unwrap().to_owned();

    // The attack: the person's key and body, sent by the same token without its proof
    // (an AI caller). It runs as what it is, and the handler refuses it.
    let stolen = post(&app, &app.a, false, "tok-1", "/v1/tokens", &body)
        .await
        .expect(403);
    assert!(stolen.headers.get("idempotent-replayed").is_none());
    assert_eq!(stolen.json()["error"], "human_required");
    assert!(!stolen.text().contains(&token) && !stolen.text().contains(&proof));

    // The person's own retry: the answer carried secrets shown once, so it was not kept:
    // a clear 409, and the token is not created twice.
    let again = post(&app, &app.a, true, "tok-1", "/v1/tokens", &body)
        .await
        .expect(409);
    assert!(again.content_type().starts_with("text/plain"));
    assert!(again.text().contains("shown only once"), "{}", again.text());
    assert!(!again.text().contains(&token) && !again.text().contains(&proof));
    assert_eq!(token_count(&app).await, before + 1);
    // Another request with that key is the usual 409 for a reused key.
    let other = post(
        &app,
        &app.a,
        true,
        "tok-1",
        "/v1/tokens",
        &json!({"description": "other"}),
    )
    .await
    .expect(409);
    assert!(
        other.text().contains("different request"),
        "{}",
        other.text()
    );
    // The stolen proof was never needed: the new token works as a person only with it.
    app.call_with(
        "POST",
        "/v1/entities",
        &keyed(&token, Some(&proof), "with-new-token"),
        Some(serde_json::to_vec(&irish_customer()).unwrap()),
    )
    .await
    .expect(201);
});

db_test!(
    idempotency_keys_belong_to_the_calling_token_and_kind,
    |app| {
        let body = irish_customer();
        let first = post(&app, &app.a, true, "k", "/v1/entities", &body)
            .await
            .expect(201);
        // The same token without its proof is another caller: held, not the person's answer.
        let ai = post(&app, &app.a, false, "k", "/v1/entities", &body)
            .await
            .expect(202);
        assert!(ai.headers.get("idempotent-replayed").is_none());
        // Another token of the company (its MCP token) has its own keys too.
        let mcp = app
            .call_with(
                "POST",
                "/v1/entities",
                &keyed(&app.a.mcp_token, None, "k"),
                Some(serde_json::to_vec(&body).unwrap()),
            )
            .await
            .expect(202);
        assert!(mcp.headers.get("idempotent-replayed").is_none());
        assert_ne!(mcp.json()["auditEntryId"], ai.json()["auditEntryId"]);
        // Each caller's own retry still gets its own answer again.
        let again = post(&app, &app.a, true, "k", "/v1/entities", &body)
            .await
            .expect(201);
        assert_eq!(again.headers["idempotent-replayed"], "true");
        assert_eq!(again.body, first.body);
        let ai_again = post(&app, &app.a, false, "k", "/v1/entities", &body)
            .await
            .expect(202);
        assert_eq!(ai_again.headers["idempotent-replayed"], "true");
        assert_eq!(ai_again.body, ai.body);
    }
);

/// Every byte the database keeps: on SQLite the database file and its write-ahead log as
/// they are on disk; on PostgreSQL every text-like and bytea column of every table.
async fn everything_stored(app: &TestApp) -> Vec<u8> {
    match app.engine {
        Engine::Sqlite => {
            let path = app.url.trim_start_matches("sqlite://").to_owned();
            let mut bytes = std::fs::read(&path).expect("the database file");
            if let Ok(wal) = std::fs::read(format!("{path}-wal")) {
                bytes.extend(wal);
            }
            bytes
        }
        Engine::Postgres => {
            use sqlx::{Connection, Row};
            let mut conn = sqlx::PgConnection::connect(&app.url).await.unwrap();
            let columns = sqlx::query(
                "SELECT table_name::text, column_name::text, data_type::text \
                 FROM information_schema.columns WHERE table_schema = 'public' \
                 AND data_type IN ('text', 'character varying', 'bytea', 'json', 'jsonb')",
            )
            .fetch_all(&mut conn)
            .await
            .unwrap();
            assert!(columns.len() > 20, "the scan sees the schema");
            let mut bytes = Vec::new();
            for c in columns {
                let (table, column, kind): (String, String, String) =
                    (c.get(0), c.get(1), c.get(2));
                let expr = if kind == "bytea" {
                    format!("\"{column}\"")
                } else {
                    format!("convert_to(\"{column}\"::text, 'UTF8')")
                };
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT {expr} FROM \"{table}\" WHERE \"{column}\" IS NOT NULL"
                )))
                .fetch_all(&mut conn)
                .await
                .unwrap();
                for r in rows {
                    bytes.extend(r.get::<Vec<u8>, _>(0));
                    bytes.push(b'\n');
                }
            }
            bytes
        }
    }
}

fn occurs(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

db_test!(no_token_or_human_proof_is_kept_in_the_database, |app| {
    // The bootstrapped owner's tokens, and tokens created by a person with a key.
    let mut secrets = vec![
        app.a.token.clone(),
        app.a.proof.clone(),
        app.a.mcp_token.clone(),
    ];
    for (i, kind) in ["standard", "mcp"].into_iter().enumerate() {
        let created = post(
            &app,
            &app.a,
            true,
            &format!("secret-{i}"),
            "/v1/tokens",
            &json!({"description": "kept?", "kind": kind}),
        )
        .await
        .expect(201)
        .json();
        secrets.push(created["token"].as_str().unwrap().to_owned());
        if let Some(proof) = created["humanProof"].as_str() {
            secrets.push(proof.to_owned());
        }
    }
    assert_eq!(secrets.len(), 6);
    let stored = everything_stored(&app).await;
    assert!(occurs(&stored, "Alpha Ltd"), "the scan reads the data");
    for secret in &secrets {
        assert!(
            !occurs(&stored, secret),
            "a secret is kept in clear in the database"
        );
    }
});
