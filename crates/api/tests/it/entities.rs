//! Entities: validation with checksums, canonical types, isolation, AI gate, deletion rules.

use serde_json::json;

use crate::support::*;

db_test!(entity_lifecycle, |app| {
    let created = app
        .call(
            "POST",
            "/v1/entities",
            As::Human(&app.a),
            Some(json!({
                "name": "Cliente Ejemplo SL", "type": "es-SL", "fiscal_id": "b-1234567-4",
                "vies_vat_id": "ESB12345674",
                "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "es"},
                "template": {"language": "es", "display_currencies": ["usd"]},
                "verifactu": {"id_type": "02"}
            })),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(created["type"], "ES:SL", "one canonical form");
    assert_eq!(created["country"], "ES");
    assert_eq!(created["fiscal_id"], "B12345674", "normalised");
    assert_eq!(
        created["currency_code"], "EUR",
        "defaults to the company's currency"
    );
    assert_eq!(created["address"]["country"], "ES");
    assert_eq!(created["template"]["display_currencies"], json!(["USD"]));
    assert_eq!(created["is_business"], true);
    let id = created["id"].as_str().unwrap();

    let got = app
        .get(&format!("/v1/entities/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(got, created);
    let list = app
        .get("/v1/entities", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"][0]["id"], id);

    let patched = app
        .call("PATCH", &format!("/v1/entities/{id}"), As::Human(&app.a),
            Some(json!({"name": "Cliente Renombrado SL", "currency_code": "usd", "vies_vat_id": null})))
        .await
        .expect(200)
        .json();
    assert_eq!(patched["name"], "Cliente Renombrado SL");
    assert_eq!(patched["currency_code"], "USD");
    assert!(patched["vies_vat_id"].is_null());
    assert_eq!(
        patched["fiscal_id"], "B12345674",
        "untouched fields are kept"
    );

    // An individual without ids is not a business.
    let person = app
        .call(
            "POST",
            "/v1/entities",
            As::Human(&app.a),
            Some(
                json!({"name": "Jane Doe", "type": "IE:Individual", "address": {"country": "IE"}}),
            ),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(person["is_business"], false);

    app.call(
        "DELETE",
        &format!("/v1/entities/{id}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    app.get(&format!("/v1/entities/{id}"), As::Ai(&app.a))
        .await
        .expect(404);
});

db_test!(
    entity_validation_names_the_field_and_writes_nothing,
    |app| {
        let before = app.fingerprint().await;
        let base = json!({"name": "X", "type": "ES:SL", "address": {"country": "ES"}});
        let cases = [
            ("/type", json!("SL"), "type"),
            ("/type", json!("XX:SL"), "type"),
            ("/type", json!("ES:"), "type"),
            ("/address/country", json!("Spain"), "address.country"),
            ("/name", json!("  "), "name"),
            ("/fiscal_id", json!("B12345670"), "fiscal_id"),
            ("/vies_vat_id", json!("DE123"), "vies_vat_id"),
            ("/currency_code", json!("EURO"), "currency_code"),
            ("/email", json!("nope"), "email"),
            (
                "/template",
                json!({"placeholder_values": [{"key": "po", "value": "1"}]}),
                "template.placeholder_values[0].key",
            ),
            ("/verifactu", json!({"id_type": "99"}), "verifactu.id_type"),
        ];
        for (pointer, value, field) in cases {
            let mut body = base.clone();
            let (parent, key) = pointer.rsplit_once('/').unwrap();
            let target = if parent.is_empty() {
                &mut body
            } else {
                body.pointer_mut(parent).unwrap()
            };
            target[key] = value;
            let resp = app
                .call(
                    "POST",
                    "/v1/entities",
                    As::Human(&app.a),
                    Some(body.clone()),
                )
                .await
                .expect(400);
            assert!(resp.text().contains(field), "{body}: {}", resp.text());
        }
        let mut missing = base.clone();
        missing.as_object_mut().unwrap().remove("address");
        let resp = app
            .call("POST", "/v1/entities", As::Human(&app.a), Some(missing))
            .await
            .expect(400);
        assert!(resp.text().contains("address"), "{}", resp.text());
        let resp = app
            .call(
                "POST",
                "/v1/entities",
                As::Human(&app.a),
                Some(json!({"name": "X", "type": "ES:SL", "address": {}})),
            )
            .await
            .expect(400);
        assert!(resp.text().contains("country"), "{}", resp.text());
        assert_eq!(app.fingerprint().await, before);
    }
);

db_test!(entities_are_tenant_scoped, |app| {
    let id = app.entity(&app.a, irish_customer()).await;
    app.get(&format!("/v1/entities/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    app.call(
        "PATCH",
        &format!("/v1/entities/{id}"),
        As::Human(&app.b),
        Some(json!({"name": "mine"})),
    )
    .await
    .expect(404);
    app.call(
        "DELETE",
        &format!("/v1/entities/{id}"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
    let list = app.get("/v1/entities", As::Human(&app.b)).await.json();
    assert_eq!(list["data"], json!([]));
    // B cannot bill A's entity either.
    let resp = app
        .call(
            "POST",
            "/v1/invoices",
            As::Human(&app.b),
            Some(json!({"recipient_id": id, "lines": one_line(100)})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("recipient_id"));
    let got = app
        .get(&format!("/v1/entities/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(got["name"], "Dublin Customer Ltd");
});

db_test!(ai_created_entity_waits_for_approval, |app| {
    let before = app.fingerprint().await;
    let held = app
        .call(
            "POST",
            "/v1/entities",
            As::Mcp(&app.a),
            Some(irish_customer()),
        )
        .await
        .expect(202)
        .json();
    assert_eq!(app.fingerprint().await, before);
    let entry_id = held["auditEntryId"].as_str().unwrap();
    let entry = app
        .call(
            "POST",
            &format!("/v1/ai-audit/{entry_id}/approve"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(entry["status"], "approved");
    assert_eq!(entry["action"], "entities.create");
    let id = entry["resourceId"].as_str().unwrap();
    let e = app
        .get(&format!("/v1/entities/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(e["name"], "Dublin Customer Ltd");
});

db_test!(entity_with_invoices_cannot_be_deleted, |app| {
    app.settle(&app.a).await;
    let id = app.entity(&app.a, irish_customer()).await;
    let draft = app
        .draft(&app.a, json!({"recipient_id": id, "lines": one_line(1000)}))
        .await;
    let resp = app
        .call(
            "DELETE",
            &format!("/v1/entities/{id}"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(resp.text().contains("draft"), "{}", resp.text());
    app.issue(&app.a, draft["id"].as_str().unwrap()).await;
    let resp = app
        .call(
            "DELETE",
            &format!("/v1/entities/{id}"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(resp.text().contains("issued"), "{}", resp.text());
    app.get(&format!("/v1/entities/{id}"), As::Ai(&app.a))
        .await
        .expect(200);
});

db_test!(entity_search, |app| {
    for (name, fiscal) in [
        ("Kunde AG", None),
        ("Cliente 100% Fiable SL", Some("B12345674")),
        ("Other_Name Ltd", None),
    ] {
        let mut body = json!({"name": name, "type": "ES:SL", "address": {"country": "ES"}});
        if let Some(f) = fiscal {
            body["fiscal_id"] = json!(f);
        }
        app.call("POST", "/v1/entities", As::Human(&app.a), Some(body))
            .await
            .expect(201);
    }
    app.call(
        "POST",
        "/v1/entities",
        As::Human(&app.b),
        Some(json!({"name": "Kunde of another company", "type": "ES:SL", "address": {"country": "ES"}})),
    )
    .await
    .expect(201);
    let names = |v: serde_json::Value| -> Vec<String> {
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let found = |q: &str| {
        let path = format!("/v1/entities?q={q}");
        let app = &app;
        async move { names(app.get(&path, As::Human(&app.a)).await.expect(200).json()) }
    };
    assert_eq!(
        found("kunde").await,
        ["Kunde AG"],
        "case-insensitive, own company only"
    );
    assert_eq!(
        found("b1234").await,
        ["Cliente 100% Fiable SL"],
        "by fiscal id"
    );
    assert_eq!(
        found("100%25").await,
        ["Cliente 100% Fiable SL"],
        "`%` is literal"
    );
    assert_eq!(found("r_n").await, ["Other_Name Ltd"]);
    assert_eq!(found("e_a").await, Vec::<String>::new(), "`_` is literal");
    assert_eq!(found("%25").await, ["Cliente 100% Fiable SL"]);
    assert_eq!(found("").await.len(), 3, "an empty search lists everything");
    assert_eq!(found("ltd&limit=1").await, ["Other_Name Ltd"]);
    let long = "x".repeat(201);
    let refused = app
        .get(&format!("/v1/entities?q={long}"), As::Human(&app.a))
        .await
        .expect(400);
    assert!(
        refused.text().contains("`q` is longer than 200"),
        "{}",
        refused.text()
    );
});
