//! Token lookups kept in memory (on PostgreSQL, `store::token_cache`) never outlive a
//! revocation: made by another process writing the database, or while the server's listener
//! is lost. (Revocations through this server are covered by `tokens` and `members_status`,
//! whose servers keep lookups too.)

use std::time::{Duration, Instant};

use axum::Router;
use serde_json::json;
use tower::ServiceExt;

use crate::support::*;

/// A new standard token of company A: (id, token).
async fn new_token(app: &TestApp) -> (String, String) {
    let created = app
        .call(
            "POST",
            "/v1/tokens",
            As::Human(&app.a),
            Some(json!({"description": "kept in memory"})),
        )
        .await
        .expect(201)
        .json();
    (
        created["id"].as_str().unwrap().to_owned(),
        created["token"].as_str().unwrap().to_owned(),
    )
}

/// The status of `GET /v1/session` with `token` on `server`.
async fn session(server: &Router, token: &str) -> u16 {
    let req = axum::http::Request::get("/v1/session")
        .header("authorization", format!("Bearer {token}"))
        .body(axum::body::Body::empty())
        .unwrap();
    server.clone().oneshot(req).await.unwrap().status().as_u16()
}

/// Revokes a token as another process would: its own SQL, nothing said to this one.
async fn revoke_by_sql(app: &TestApp, id: &str) {
    let other = store::Db::connect(&app.url).await.unwrap();
    let done = sqlx::query("UPDATE api_tokens SET revoked_at = $2 WHERE id = $1")
        .bind(id)
        .bind(store::now_micros())
        .execute(other.pool())
        .await
        .unwrap();
    assert_eq!(done.rows_affected(), 1);
    other.close().await;
}

/// Waits (ten seconds at most) until `token` is refused on `server`.
async fn refused_soon(server: &Router, token: &str, what: &str) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        match session(server, token).await {
            401 => return,
            200 if Instant::now() < give_up => tokio::time::sleep(Duration::from_millis(20)).await,
            other => panic!("{what}: the revoked token still answers {other}"),
        }
    }
}

/// Waits (ten seconds at most) until `db` answers token lookups from memory.
async fn cache_live(db: &store::Db) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while !db.token_cache_live() {
        assert!(Instant::now() < give_up, "the token cache never came on");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

db_test!(
    tokens_revoked_elsewhere_stop_working_on_a_running_server,
    |app| {
        let postgres = app.engine == Engine::Postgres;
        // The server under test keeps what a token resolved to for a minute: only PostgreSQL's
        // notification, or its listener's loss, can end an entry before the test does.
        let (db, server) = app.second_server(Duration::from_secs(60)).await;
        let (id1, t1) = new_token(&app).await;
        let (id2, t2) = new_token(&app).await;
        let (id3, t3) = new_token(&app).await;
        assert_eq!(session(&server, &t1).await, 200);
        if postgres {
            cache_live(&db).await;
        }
        for t in [&t1, &t2, &t3] {
            assert_eq!(session(&server, t).await, 200);
            // SQLite keeps nothing: another process writing the file could not tell it.
            assert_eq!(db.token_cached(t), postgres, "kept in memory");
        }

        // Another process (the CLI, an older version, an operator in psql) revokes a token.
        revoke_by_sql(&app, &id1).await;
        refused_soon(&server, &t1, "revoked by another process").await;
        assert_eq!(session(&server, &t2).await, 200, "the others still work");

        if postgres {
            // What ended it is the trigger's notification: with the trigger off, the server
            // keeps answering from memory.
            assert_eq!(session(&server, &t2).await, 200);
            assert!(db.token_cached(&t2));
            sqlx::query("ALTER TABLE api_tokens DISABLE TRIGGER invoicing_auth_tokens")
                .execute(app.db.pool())
                .await
                .unwrap();
            revoke_by_sql(&app, &id2).await;
            assert_eq!(session(&server, &t2).await, 200, "kept, nobody said");
            sqlx::query("ALTER TABLE api_tokens ENABLE TRIGGER invoicing_auth_tokens")
                .execute(app.db.pool())
                .await
                .unwrap();

            // The listener's connection is lost (a failover, an operator's
            // pg_terminate_backend): what the cache held goes with it, so a revocation made
            // while nobody listened is not missed.
            assert_eq!(session(&server, &t3).await, 200);
            assert!(db.token_cached(&t3));
            // One statement: the listeners are gone (it waits for that) before the revocation
            // commits, and a new one waits a tenth of a second before connecting again, so
            // nobody hears this revocation's notification.
            let revoked = sqlx::query(
            "WITH killed AS (SELECT pg_terminate_backend(pid, 5000) AS gone FROM pg_stat_activity \
             WHERE datname = current_database() AND application_name = $1) \
             UPDATE api_tokens SET revoked_at = $3 WHERE id = $2 \
             AND (SELECT COUNT(*) FROM killed WHERE gone) > 0",
        )
        .bind(store::token_cache::APPLICATION_NAME)
        .bind(&id3)
        .bind(store::now_micros())
        .execute(app.db.pool())
        .await
        .unwrap();
            assert_eq!(revoked.rows_affected(), 1, "no listener to kill");
            // Once it listens again (it is off for a tenth of a second at least, and this
            // looks every 20 ms), what it held before is gone: both are refused.
            let give_up = Instant::now() + Duration::from_secs(10);
            while db.token_cache_live() {
                assert!(
                    Instant::now() < give_up,
                    "the listener's loss went unnoticed"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            cache_live(&db).await;
            assert_eq!(
                session(&server, &t3).await,
                401,
                "revoked while nobody listened"
            );
            assert_eq!(
                session(&server, &t2).await,
                401,
                "revoked unannounced before"
            );
            let owner = app.a.token.clone();
            assert_eq!(session(&server, &owner).await, 200);
            assert!(db.token_cached(&owner));
        } else {
            revoke_by_sql(&app, &id2).await;
            revoke_by_sql(&app, &id3).await;
            assert_eq!(session(&server, &t2).await, 401);
            assert_eq!(session(&server, &t3).await, 401);
        }
        db.close().await;
    }
);

db_test!(
    a_company_edit_that_keeps_its_type_leaves_the_token_cache_on,
    |app| {
        let postgres = app.engine == Engine::Postgres;
        let (db, server) = app.second_server(Duration::from_secs(60)).await;
        let owner = app.a.token.clone();
        assert_eq!(session(&server, &owner).await, 200);
        if postgres {
            // Also waits out the pause of the set-up's own changes.
            cache_live(&db).await;
        }
        // Settings its callers' language does not depend on: the caches of the process
        // (whose pause would hold for every company) keep answering.
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"paymentTermsDays": 45, "friendlyName": "Kept"})),
        )
        .await
        .expect(200);
        assert_eq!(
            db.token_cache_live(),
            postgres,
            "an edit that keeps the company's type stopped the token cache"
        );
        assert_eq!(session(&server, &owner).await, 200);
        assert_eq!(db.token_cached(&owner), postgres, "kept in memory");
        // Its type sets its callers' language, which a cached lookup carries: every cache of
        // the process stops before it is written, until the notification has surely come.
        let changed = app
            .call(
                "PATCH",
                "/v1/company",
                As::Human(&app.a),
                Some(json!({"type": "DE:GmbH"})),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(changed["type"], "DE:GmbH");
        assert!(!db.token_cache_live(), "a change of type left the cache on");
        assert!(!db.token_cached(&owner));
        db.close().await;
    }
);
