//! A member's name as each company sees it: a name one company gave an account
//! is never shown to another company (issue #27), in answers, lists or mail.

use serde_json::{Value, json};

use crate::{members::add, support::*};

const GIVEN_BY_A: &str = "Name Alpha Gave";

/// A person's token (with its human proof) for the user with `email` in `t`'s company.
async fn person(app: &TestApp, t: &Tenant, email: &str) -> [(&'static str, String); 3] {
    let mut tx = app.db.begin_write().await.unwrap();
    let user = store::users::find_by_email(tx.conn(), email)
        .await
        .unwrap()
        .unwrap();
    let issued = store::tokens::issue(tx.conn(), &t.company_id, &user.id, "standard", "test")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    [
        ("authorization", format!("Bearer {}", issued.token)),
        ("x-human-proof", issued.human_proof.unwrap()),
        ("content-type", "application/json".to_owned()),
    ]
}

async fn member_in(app: &TestApp, t: &Tenant, email: &str) -> Value {
    let list = app
        .get("/v1/members", As::Human(t))
        .await
        .expect(200)
        .json();
    list["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == email)
        .cloned()
        .unwrap_or_else(|| panic!("{email} is not a member: {list}"))
}

db_test!(a_name_one_company_gave_is_never_shown_to_another, |app| {
    for kind in ["password", "oauth"] {
        let email = format!("{kind}.person@example.com");
        let in_a = add(
            &app,
            &app.a,
            json!({"email": email, "kind": kind, "name": GIVEN_BY_A}),
        )
        .await;
        assert_eq!(in_a["name"], GIVEN_BY_A);

        // B adds the same address without a name: it sees none, not A's.
        let in_b = add(&app, &app.b, json!({"email": email, "kind": kind})).await;
        assert!(in_b["name"].is_null(), "{kind}: {in_b}");
        assert!(member_in(&app, &app.b, &email).await["name"].is_null());

        // B's own name for them is what B sees; A keeps seeing its own.
        let path = format!("/v1/members/{email}");
        let named = app
            .call(
                "PATCH",
                &path,
                As::Human(&app.b),
                Some(json!({"name": "Name Beta Gave"})),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(named["name"], "Name Beta Gave");
        assert_eq!(member_in(&app, &app.a, &email).await["name"], GIVEN_BY_A);
        // Clearing B's name shows none again, still not A's.
        let cleared = app
            .call(
                "PATCH",
                &path,
                As::Human(&app.b),
                Some(json!({"name": null})),
            )
            .await
            .expect(200)
            .json();
        assert!(cleared["name"].is_null(), "{cleared}");
    }

    // The mail B's members cause never carries A's name either: not as the
    // greeting of the person B added, nor as the name of who added them.
    let headers = person(&app, &app.b, "password.person@example.com").await;
    let added = app
        .call_with(
            "POST",
            "/v1/members",
            &headers
                .iter()
                .map(|(k, v)| (*k, v.clone()))
                .collect::<Vec<_>>(),
            Some(
                serde_json::to_vec(&json!({"email": "owner@alpha.test", "kind": "oauth"})).unwrap(),
            ),
        )
        .await
        .expect(201);
    assert!(!added.text().contains(GIVEN_BY_A));
    let of_b: Vec<_> = app
        .jobs(None)
        .await
        .into_iter()
        .filter(|j| j.company_id.as_deref() == Some(app.b.company_id.as_str()))
        .collect();
    for job in &of_b {
        assert!(!job.payload.contains(GIVEN_BY_A), "{}", job.payload);
    }
    let notice: Value = of_b
        .iter()
        .filter(|j| j.kind == "email.send")
        .map(|j| serde_json::from_str::<Value>(&j.payload).unwrap())
        .find(|p| p["to"] == "owner@alpha.test")
        .expect("the notice to owner@alpha.test");
    assert_eq!(
        notice["vars"]["inviter_name"], "password.person@example.com",
        "B has no name for the inviter: the address, not A's name"
    );
});
