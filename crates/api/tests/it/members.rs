//! Company members: adding, listing, changing, deactivating and reactivating,
//! the rules on each, and what a member's status does to their tokens.

use serde_json::{Value, json};

use crate::support::*;

/// Adds `email` to the tenant's company as a person and returns the member.
pub async fn add(app: &TestApp, t: &Tenant, body: Value) -> Value {
    app.call("POST", "/v1/members", As::Human(t), Some(body))
        .await
        .expect(201)
        .json()
}

/// A standard token for the user with `email` in the tenant's company, as an Authorization value.
pub async fn token_for(app: &TestApp, t: &Tenant, email: &str) -> String {
    let mut tx = app.db.begin_write().await.unwrap();
    let user = store::users::find_by_email(tx.conn(), email)
        .await
        .unwrap()
        .unwrap();
    let issued = store::tokens::issue(tx.conn(), &t.company_id, &user.id, "standard", "test")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    format!("Bearer {}", issued.token)
}

pub fn in_an_hour() -> String {
    (chrono::Utc::now() + chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

async fn audit_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM ai_audit_entries")
        .fetch_one(app.db.pool())
        .await
        .unwrap()
}

db_test!(
    adding_a_password_member_writes_it_and_queues_its_mail,
    |app| {
        let m = add(
            &app,
            &app.a,
            json!({"email": "  Ana@Example.COM ", "kind": "password", "language": "es_ES"}),
        )
        .await;
        assert_eq!(m["email"], "ana@example.com");
        assert_eq!(m["kind"], "password");
        assert_eq!(m["status"], "active");
        assert_eq!(m["name"], "ana", "defaults to the local part");
        assert!(m["expiresAt"].is_null());
        assert!(m["memberSince"].is_string());
        // The mail is a job written with the member, sent after commit by a worker.
        let jobs = app.jobs(Some("member.password")).await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].status, "queued");
        assert_eq!(
            jobs[0].company_id.as_deref(),
            Some(app.a.company_id.as_str())
        );
        let payload: Value = serde_json::from_str(&jobs[0].payload).unwrap();
        assert_eq!(payload["language"], "es_ES");
        assert!(payload["issued_hash"].is_null());
        assert!(
            app.password_hash("ana@example.com").await.is_none(),
            "the password is made by the job, not by the request"
        );
        let list = app
            .get("/v1/members", As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        let emails: Vec<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["email"].as_str().unwrap())
            .collect();
        assert_eq!(
            emails,
            ["ana@example.com", "owner@alpha.test"],
            "newest first"
        );
        // A given name is the new account's name.
        let named = add(
        &app,
        &app.a,
        json!({"email": "bo@example.com", "kind": "password", "name": "Bo Diaz", "expiresAt": in_an_hour()}),
    )
    .await;
        assert_eq!(named["name"], "Bo Diaz");
        assert!(named["expiresAt"].is_string());
    }
);

db_test!(
    oauth_members_show_as_invited_until_their_first_sign_in,
    |app| {
        let m = add(
            &app,
            &app.a,
            json!({"email": "olga@example.com", "kind": "oauth"}),
        )
        .await;
        assert_eq!(m["kind"], "invited");
        assert_eq!(m["status"], "active");
        assert!(m["name"].is_null(), "no name until an account exists");
        assert!(app.password_hash("olga@example.com").await.is_none());
        let jobs = app.jobs(Some("email.send")).await;
        assert_eq!(jobs.len(), 1);
        let payload: Value = serde_json::from_str(&jobs[0].payload).unwrap();
        assert_eq!(payload["template"], "member_added");
        assert_eq!(payload["to"], "olga@example.com");
        assert_eq!(payload["language"], "en_US", "the acting user's language");
        assert!(app.jobs(Some("member.password")).await.is_empty());

        // The sign-in flow records the first sign-in: the member becomes oauth.
        let user = {
            let mut conn = app.db.pool().acquire().await.unwrap();
            store::users::find_by_email(&mut conn, "olga@example.com")
                .await
                .unwrap()
                .unwrap()
        };
        let mut tx = app.db.begin_write().await.unwrap();
        store::members::record_oauth_sign_in(tx.conn(), &user.id, "Olga Ruiz")
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let list = app.get("/v1/members", As::Human(&app.a)).await.json();
        assert_eq!(list["data"][0]["kind"], "oauth");
        assert_eq!(list["data"][0]["name"], "Olga Ruiz");
        // Another company adding her afterwards sees an oauth member at once.
        let in_b = add(
            &app,
            &app.b,
            json!({"email": "olga@example.com", "kind": "oauth"}),
        )
        .await;
        assert_eq!(in_b["kind"], "oauth");
        assert_eq!(in_b["name"], "Olga Ruiz");
    }
);

db_test!(
    bad_member_requests_are_400_naming_the_field_and_write_nothing,
    |app| {
        add(
            &app,
            &app.a,
            json!({"email": "ana@example.com", "kind": "password"}),
        )
        .await;
        let before = app.fingerprint().await;
        let past = "2001-01-01T00:00:00Z";
        let cases = [
            (
                json!({"email": "x@example.com", "kind": "invited"}),
                "`kind`",
            ),
            (
                json!({"email": "not-an-email", "kind": "password"}),
                "`email`",
            ),
            (json!({"email": "x@example.com"}), "`kind`"),
            (json!({"email": "x@example.com", "kind": "root"}), "`kind`"),
            (
                json!({"email": "x@example.com", "kind": "password", "expiresAt": past}),
                "`expiresAt`",
            ),
            (
                json!({"email": "x@example.com", "kind": "password", "expiresAt": "soon"}),
                "`expiresAt`",
            ),
            (
                json!({"email": "x@example.com", "kind": "password", "language": "english please"}),
                "`language`",
            ),
            (
                json!({"email": "x@example.com", "kind": "password", "role": "admin"}),
                "`role`",
            ),
        ];
        for (body, field) in cases {
            let resp = app
                .call("POST", "/v1/members", As::Human(&app.a), Some(body.clone()))
                .await
                .expect(400);
            assert!(resp.content_type().starts_with("text/plain"));
            assert!(resp.text().contains(field), "{body}: {}", resp.text());
        }
        let path = "/v1/members/ana@example.com";
        for (body, field) in [
            (json!({"expiresAt": past}), "`expiresAt`"),
            (json!({"nickname": "A"}), "`nickname`"),
            (json!({}), "Nothing to change"),
            (json!({"name": "x".repeat(201)}), "`name`"),
        ] {
            let resp = app
                .call("PATCH", path, As::Human(&app.a), Some(body.clone()))
                .await
                .expect(400);
            assert!(resp.text().contains(field), "{body}: {}", resp.text());
        }
        for action in ["deactivate", "reactivate"] {
            let resp = app
                .call(
                    "POST",
                    &format!("/v1/members/not-an-email/{action}"),
                    As::Human(&app.a),
                    None,
                )
                .await
                .expect(400);
            assert!(resp.text().contains("e-mail"));
        }
        assert_eq!(app.fingerprint().await, before, "nothing written");
    }
);

db_test!(adding_an_existing_member_is_a_conflict, |app| {
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let before = app.fingerprint().await;
    for email in ["owner@alpha.test", "ANA@example.com"] {
        let resp = app
            .call(
                "POST",
                "/v1/members",
                As::Human(&app.a),
                Some(json!({"email": email, "kind": "oauth"})),
            )
            .await
            .expect(409);
        assert!(resp.content_type().starts_with("text/plain"));
        assert!(
            resp.text().contains("already an active member"),
            "{}",
            resp.text()
        );
    }
    assert_eq!(
        app.fingerprint().await,
        before,
        "no second membership, no second mail"
    );
    app.call(
        "POST",
        "/v1/members/ana@example.com/deactivate",
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    let resp = app
        .call(
            "POST",
            "/v1/members",
            As::Human(&app.a),
            Some(json!({"email": "ana@example.com", "kind": "password"})),
        )
        .await
        .expect(409);
    assert!(resp.text().contains("reactivate"), "{}", resp.text());
    assert_eq!(app.jobs(Some("member.password")).await.len(), 1);
});

db_test!(member_writes_are_human_only, |app| {
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let before = app.fingerprint().await;
    let audit_before = audit_count(&app).await;
    for who in [As::Ai(&app.a), As::Mcp(&app.a)] {
        let calls = [
            (
                "POST",
                "/v1/members",
                Some(json!({"email": "eve@example.com", "kind": "password"})),
            ),
            (
                "PATCH",
                "/v1/members/ana@example.com",
                Some(json!({"name": "Eve"})),
            ),
            ("POST", "/v1/members/ana@example.com/deactivate", None),
            ("POST", "/v1/members/ana@example.com/reactivate", None),
        ];
        for (method, path, body) in calls {
            let resp = app.call(method, path, who, body).await.expect(403);
            assert_eq!(resp.json()["error"], "human_required", "{method} {path}");
        }
        // Reading is allowed.
        app.get("/v1/members", who).await.expect(200);
    }
    assert_eq!(
        app.fingerprint().await,
        before,
        "nothing written, no mail queued"
    );
    assert_eq!(
        audit_count(&app).await,
        audit_before,
        "refused, not queued for review"
    );
});

db_test!(members_are_scoped_to_their_company, |app| {
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let b_list = app
        .get("/v1/members", As::Human(&app.b))
        .await
        .expect(200)
        .json();
    let text = b_list.to_string();
    assert!(!text.contains("ana@example.com") && !text.contains("owner@alpha.test"));
    assert_eq!(b_list["data"].as_array().unwrap().len(), 1);
    let before = app.fingerprint().await;
    let path = "/v1/members/ana@example.com";
    app.call("PATCH", path, As::Human(&app.b), Some(json!({"name": "x"})))
        .await
        .expect(404);
    for action in ["deactivate", "reactivate"] {
        app.call("POST", &format!("{path}/{action}"), As::Human(&app.b), None)
            .await
            .expect(404);
        app.call(
            "POST",
            &format!("/v1/members/nobody@example.com/{action}"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(404);
    }
    assert_eq!(app.fingerprint().await, before);
    // B may add the same person to B: a membership of its own, A's untouched.
    let in_b = add(
        &app,
        &app.b,
        json!({"email": "ana@example.com", "kind": "password", "name": "Ana (B)"}),
    )
    .await;
    assert_eq!(
        in_b["name"], "Ana (B)",
        "B's name for her, not her account's"
    );
    let in_a = app.get("/v1/members", As::Human(&app.a)).await.json();
    assert_eq!(in_a["data"][0]["name"], "ana");
});
