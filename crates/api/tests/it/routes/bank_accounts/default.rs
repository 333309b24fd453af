//! /v1/bank-accounts and their balance snapshots: create, update, delete and the one-default-account invariant, also under concurrent switches.
// Amounts are written as euros_cents (100_00 is 100.00), which reads better here.
#![allow(clippy::inconsistent_digit_grouping)]

use serde_json::json;

use crate::support::*;

const IBAN: &str = "ES91 2100 0418 4502 0005 1332";

const IBAN2: &str = "DE89370400440532013000";

db_test!(bank_accounts_and_the_default_invariant, |app| {
    let first = app
        .call(
            "POST",
            "/v1/bank-accounts",
            As::Human(&app.a),
            Some(json!({"name": "Main", "iban": IBAN, "bic": "CAIXESBBXXX", "is_main": false})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(
        first["is_main"], true,
        "the first account is always the default"
    );
    assert_eq!(first["iban"], "ES9121000418450200051332");
    assert_eq!(first["currency_code"], "EUR");
    assert!(first["current_balance_minor"].is_null());
    let second = app
        .call(
            "POST",
            "/v1/bank-accounts",
            As::Human(&app.a),
            Some(json!({"name": "USD", "iban": IBAN2, "currency_code": "usd", "is_main": true})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(second["is_main"], true);
    let a1 = app
        .get(
            &format!("/v1/bank-accounts/{}", first["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(
        a1["account"]["is_main"], false,
        "making another default unsets the old one"
    );
    // Un-defaulting the default is refused; there is always one.
    app.call(
        "PATCH",
        &format!("/v1/bank-accounts/{}", second["id"].as_str().unwrap()),
        As::Human(&app.a),
        Some(json!({"is_main": false})),
    )
    .await
    .expect(400);
    // Bad input names the field and writes nothing.
    let before = app.fingerprint().await;
    for (body, field) in [
        (
            json!({"name": "X", "iban": "ES91 2100 0418 4502 0005 1333"}),
            "iban",
        ),
        (json!({"name": "X", "bic": "NOTABIC"}), "bic"),
        (
            json!({"name": "X", "currency_code": "EURO"}),
            "currency_code",
        ),
        (json!({"name": ""}), "name"),
    ] {
        let r = app
            .call("POST", "/v1/bank-accounts", As::Human(&app.a), Some(body))
            .await
            .expect(400);
        assert!(r.text().contains(field), "{}", r.text());
    }
    assert_eq!(app.fingerprint().await, before);
    // Snapshots: the latest by as_of_date is the current balance; listed newest first.
    let id = first["id"].as_str().unwrap();
    for (date, balance) in [
        ("2026-01-31T00:00:00Z", 100_00),
        ("2026-03-31T00:00:00Z", -50_00),
        ("2026-02-28T00:00:00Z", 70_00),
    ] {
        app.call(
            "POST",
            &format!("/v1/bank-accounts/{id}/snapshots"),
            As::Human(&app.a),
            Some(json!({"balance_minor": balance, "as_of_date": date})),
        )
        .await
        .expect(201);
    }
    let detail = app
        .get(&format!("/v1/bank-accounts/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(detail["account"]["current_balance_minor"], -5000);
    assert_eq!(detail["account"]["balance_as_of"], "2026-03-31T00:00:00Z");
    let balances: Vec<i64> = detail["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["balance_minor"].as_i64().unwrap())
        .collect();
    assert_eq!(balances, vec![-5000, 7000, 10000]);
    let sid = detail["snapshots"][0]["id"].as_str().unwrap();
    app.call(
        "DELETE",
        &format!("/v1/bank-accounts/{id}/snapshots/{sid}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let detail = app
        .get(&format!("/v1/bank-accounts/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(detail["account"]["current_balance_minor"], 7000);
    // Isolation and the AI gate.
    app.get(&format!("/v1/bank-accounts/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    app.call(
        "DELETE",
        &format!("/v1/bank-accounts/{id}"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
    app.call(
        "POST",
        &format!("/v1/bank-accounts/{id}/snapshots"),
        As::Human(&app.b),
        Some(json!({"balance_minor": 1})),
    )
    .await
    .expect(404);
    app.call(
        "POST",
        "/v1/bank-accounts",
        As::Ai(&app.a),
        Some(json!({"name": "Agent"})),
    )
    .await
    .expect(202);
    // Deleting the default promotes the oldest remaining account.
    app.call(
        "DELETE",
        &format!("/v1/bank-accounts/{}", second["id"].as_str().unwrap()),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let a1 = app
        .get(&format!("/v1/bank-accounts/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(a1["account"]["is_main"], true);
});

db_test!(default_account_survives_concurrent_switches, |app| {
    let mut ids = Vec::new();
    for i in 0..4 {
        let a = app
            .call(
                "POST",
                "/v1/bank-accounts",
                As::Human(&app.a),
                Some(json!({"name": format!("A{i}")})),
            )
            .await
            .expect(201)
            .json();
        ids.push(a["id"].as_str().unwrap().to_owned());
    }
    let paths: Vec<String> = ids
        .iter()
        .map(|id| format!("/v1/bank-accounts/{id}"))
        .collect();
    let calls = paths.iter().map(|p| {
        app.call(
            "PATCH",
            p,
            As::Human(&app.a),
            Some(json!({"is_main": true})),
        )
    });
    for r in futures::future::join_all(calls).await {
        assert_eq!(r.status.as_u16(), 200, "{}", r.text());
    }
    let list = app.get("/v1/bank-accounts", As::Ai(&app.a)).await.json();
    let mains = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["is_main"] == true)
        .count();
    assert_eq!(mains, 1);
});
