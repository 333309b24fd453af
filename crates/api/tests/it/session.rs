//! `GET /v1/session`: the spec's CurrentSession, exactly.

use std::collections::BTreeSet;

use crate::support::*;

db_test!(session_has_exactly_the_spec_fields, |app| {
    let s = app
        .get("/v1/session", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    let keys: BTreeSet<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
    let expected: BTreeSet<&str> = [
        "id",
        "name",
        "profileImageUrl",
        "email",
        "language",
        "company",
        "accessibleCompanies",
        "tosAgreed",
        "privacyPolicyAgreed",
        "dpaAgreed",
        "currentTosId",
        "currentPrivacyPolicyId",
        "currentDpaId",
    ]
    .into_iter()
    .collect();
    assert_eq!(keys, expected);
    assert_eq!(s["id"], app.a.user_id.as_str());
    assert_eq!(s["email"], "owner@alpha.test");
    assert_eq!(s["company"]["id"], app.a.company_id.as_str());
    assert_eq!(s["company"]["name"], "Alpha Ltd");
    assert_eq!(s["company"]["isSettled"], false);
    assert!(
        s["company"]["address"].is_null(),
        "no address before registration"
    );
    assert_eq!(s["tosAgreed"], false);
    assert!(s["currentTosId"].is_string());
    assert_eq!(s["accessibleCompanies"], serde_json::json!([]));
});

db_test!(
    accessible_companies_lists_the_users_other_companies,
    |app| {
        // The owner of A also owns a third company: it is listed, B is not.
        let third = bootstrap(&app.db, "Gamma Ltd", "owner@alpha.test").await;
        assert_eq!(third.user_id, app.a.user_id);
        let s = app
            .get("/v1/session", As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        let others = s["accessibleCompanies"].as_array().unwrap();
        assert_eq!(others.len(), 1);
        assert_eq!(others[0]["id"], third.company_id.as_str());
        assert_eq!(others[0]["name"], "Gamma Ltd");
        assert_eq!(others[0]["fiscalId"], "IE6388047V");
        assert_eq!(others[0]["isSettled"], false);
        // A token cannot switch company: the third company's token sees the third company.
        let s3 = app
            .get("/v1/session", As::Ai(&third))
            .await
            .expect(200)
            .json();
        assert_eq!(s3["company"]["id"], third.company_id.as_str());
    }
);

db_test!(profile_image_url_is_a_picture_for_everyone, |app| {
    let s = app
        .get("/v1/session", As::Human(&app.a))
        .await
        .expect(200)
        .json();
    let url = s["profileImageUrl"].as_str().unwrap();
    let id = s["id"].as_str().unwrap();
    assert_eq!(url, format!("http://invoicing.test/avatars/{id}"));
    // The picture is served without a token (an <img> sends none).
    let path = url.strip_prefix("http://invoicing.test").unwrap();
    let picture = app.get(path, As::Anonymous).await.expect(200);
    assert_eq!(picture.content_type(), "image/svg+xml");
    assert!(picture.text().starts_with("<svg "), "{}", picture.text());
    assert_eq!(
        picture.headers.get("content-security-policy").unwrap(),
        "default-src 'none'"
    );
    // Another user's picture differs; what is not a user id is not found.
    let other = app
        .get("/v1/session", As::Human(&app.b))
        .await
        .expect(200)
        .json();
    let other_path = format!("/avatars/{}", other["id"].as_str().unwrap());
    let other_picture = app.get(&other_path, As::Anonymous).await.expect(200);
    assert_ne!(other_picture.text(), picture.text());
    app.get("/avatars/not-an-id", As::Anonymous)
        .await
        .expect(404);
});
