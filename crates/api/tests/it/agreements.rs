//! Legal documents: listing, accepting (a person only), new versions.

use crate::support::*;

db_test!(accepting_all_documents_marks_the_session_agreed, |app| {
    let list = app
        .get("/v1/agreements", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    let docs = list["data"].as_array().unwrap();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "data_processing_agreement",
            "privacy_policy",
            "terms_of_service"
        ]
    );
    assert!(docs.iter().all(|d| d["accepted"] == false));

    let tos = docs
        .iter()
        .find(|d| d["kind"] == "terms_of_service")
        .unwrap();
    let id = tos["id"].as_str().unwrap();
    let accepted = app
        .call(
            "POST",
            &format!("/v1/agreements/{id}/accept"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(accepted["accepted"], true);
    let s = app
        .get("/v1/session", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(s["tosAgreed"], true);
    assert_eq!(s["privacyPolicyAgreed"], false);
    assert_eq!(s["currentTosId"], id);
    // Accepting again is harmless; B has accepted nothing.
    app.call(
        "POST",
        &format!("/v1/agreements/{id}/accept"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    let sb = app
        .get("/v1/session", As::Ai(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(sb["tosAgreed"], false);

    app.accept_all_agreements(&app.a).await;
    let s = app
        .get("/v1/session", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(
        (
            s["tosAgreed"].clone(),
            s["privacyPolicyAgreed"].clone(),
            s["dpaAgreed"].clone()
        ),
        (true.into(), true.into(), true.into())
    );

    // A new version must be accepted again.
    let mut tx = app.db.begin_write().await.unwrap();
    let v2 = store::legal::publish(tx.conn(), "terms_of_service", "Terms v2", "New terms")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let s = app
        .get("/v1/session", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(s["tosAgreed"], false);
    assert_eq!(s["currentTosId"], v2.id.as_str());
    assert_eq!(s["dpaAgreed"], true);
});

db_test!(only_a_person_can_accept_and_unknown_ids_are_404, |app| {
    let list = app
        .get("/v1/agreements", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    let id = list["data"][0]["id"].as_str().unwrap().to_owned();
    for who in [As::Ai(&app.a), As::Mcp(&app.a)] {
        let resp = app
            .call("POST", &format!("/v1/agreements/{id}/accept"), who, None)
            .await
            .expect(403);
        assert_eq!(resp.json()["error"], "human_required");
    }
    let unknown = uuid::Uuid::new_v4();
    app.call(
        "POST",
        &format!("/v1/agreements/{unknown}/accept"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(404);
    let s = app
        .get("/v1/session", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(s["tosAgreed"], false);
});
