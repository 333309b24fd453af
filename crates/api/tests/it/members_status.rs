//! Member status over time: deactivation and reactivation, expiry, the last
//! active member rule, changes with PATCH, and the list's pages.

use serde_json::json;

use crate::{
    members::{add, in_an_hour, token_for},
    support::*,
};

db_test!(deactivated_members_lose_access_until_reactivated, |app| {
    let m = add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let since = m["memberSince"].clone();
    let ana = token_for(&app, &app.a, "ana@example.com").await;
    app.get("/v1/session", As::Header(&ana)).await.expect(200);

    let off = app
        .call(
            "POST",
            "/v1/members/ana@example.com/deactivate",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(off["status"], "deactivated");
    assert_eq!(off["memberSince"], since);
    app.get("/v1/session", As::Header(&ana)).await.expect(401);
    // Deactivating again changes nothing.
    app.call(
        "POST",
        "/v1/members/ana@example.com/deactivate",
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);

    let on = app
        .call(
            "POST",
            "/v1/members/ana@example.com/reactivate",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(on["status"], "active");
    assert_eq!(on["memberSince"], since, "memberSince survives");
    app.get("/v1/session", As::Header(&ana)).await.expect(200);
});

db_test!(expired_members_lose_access_until_extended, |app| {
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password", "expiresAt": in_an_hour()}),
    )
    .await;
    let ana = token_for(&app, &app.a, "ana@example.com").await;
    app.get("/v1/session", As::Header(&ana)).await.expect(200);
    // Time passes: the expiry is in the past now (no job needed to notice).
    sqlx::query("UPDATE memberships SET expires_at = $1 WHERE expires_at IS NOT NULL")
        .bind(store::now_micros() - 1_000_000)
        .execute(app.db.pool())
        .await
        .unwrap();
    // Said to this process as the store's own changes say it (other processes hear of it
    // from PostgreSQL: tests/it/token_cache.rs).
    store::token_cache::changed();
    let list = app.get("/v1/members", As::Human(&app.a)).await.json();
    assert_eq!(list["data"][0]["status"], "expired");
    app.get("/v1/session", As::Header(&ana)).await.expect(401);
    // Expired members do not count as the active ones that keep a company reachable.
    let resp = app
        .call(
            "POST",
            "/v1/members/owner@alpha.test/deactivate",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(resp.text().contains("last active member"));

    let renewed = app
        .call(
            "PATCH",
            "/v1/members/ana@example.com",
            As::Human(&app.a),
            Some(json!({"expiresAt": null})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(renewed["status"], "active");
    assert!(renewed["expiresAt"].is_null());
    app.get("/v1/session", As::Header(&ana)).await.expect(200);
});

db_test!(the_last_active_member_cannot_be_deactivated, |app| {
    let before = app.fingerprint().await;
    let owner = "/v1/members/owner@alpha.test";
    let resp = app
        .call(
            "POST",
            &format!("{owner}/deactivate"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(resp.content_type().starts_with("text/plain"));
    assert!(
        resp.text().contains("last active member"),
        "{}",
        resp.text()
    );
    let resp = app
        .call(
            "PATCH",
            owner,
            As::Human(&app.a),
            Some(json!({"expiresAt": in_an_hour()})),
        )
        .await
        .expect(400);
    assert!(
        resp.text().contains("last active member"),
        "{}",
        resp.text()
    );
    // A name change is fine.
    app.call(
        "PATCH",
        owner,
        As::Human(&app.a),
        Some(json!({"name": "The Owner"})),
    )
    .await
    .expect(200);
    assert_ne!(app.fingerprint().await, before);

    // With a second active member, either one may be deactivated (not the acting owner
    // here: their own token would stop working).
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let off = app
        .call(
            "POST",
            "/v1/members/ana@example.com/deactivate",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(off["status"], "deactivated");
    // Now the owner is the last active member again.
    app.call(
        "POST",
        &format!("{owner}/deactivate"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(400);
});

db_test!(patching_a_member_changes_only_this_companys_view, |app| {
    add(
        &app,
        &app.a,
        json!({"email": "ana@example.com", "kind": "password"}),
    )
    .await;
    let at = in_an_hour();
    let m = app
        .call(
            "PATCH",
            "/v1/members/ANA%40example.com",
            As::Human(&app.a),
            Some(json!({"name": "Ana García", "expiresAt": at})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(m["name"], "Ana García");
    assert_eq!(
        m["expiresAt"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .unwrap(),
        at.parse::<chrono::DateTime<chrono::Utc>>().unwrap()
    );
    assert_eq!(m["status"], "active");
    // Only the expiry: the name stays.
    let m = app
        .call(
            "PATCH",
            "/v1/members/ana@example.com",
            As::Human(&app.a),
            Some(json!({"expiresAt": null})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(m["name"], "Ana García");
    assert!(m["expiresAt"].is_null());
    // Clearing the name shows the account's own again.
    let m = app
        .call(
            "PATCH",
            "/v1/members/ana@example.com",
            As::Human(&app.a),
            Some(json!({"name": null})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(m["name"], "ana");
    app.call(
        "PATCH",
        "/v1/members/nobody@example.com",
        As::Human(&app.a),
        Some(json!({"name": "x"})),
    )
    .await
    .expect(404);
});

db_test!(member_list_pages_with_a_cursor, |app| {
    for i in 0..3 {
        add(
            &app,
            &app.a,
            json!({"email": format!("m{i}@example.com"), "kind": "oauth"}),
        )
        .await;
    }
    let mut seen = Vec::new();
    let mut path = "/v1/members?limit=2".to_owned();
    loop {
        let page = app.get(&path, As::Ai(&app.a)).await.expect(200).json();
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        seen.extend(data.iter().map(|m| m["email"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(c) => path = format!("/v1/members?limit=2&cursor={c}"),
            None => break,
        }
    }
    assert_eq!(
        seen,
        [
            "m2@example.com",
            "m1@example.com",
            "m0@example.com",
            "owner@alpha.test"
        ]
    );
    app.get("/v1/members?limit=0", As::Ai(&app.a))
        .await
        .expect(400);
    app.get("/v1/members?cursor=zzz", As::Ai(&app.a))
        .await
        .expect(400);
});
