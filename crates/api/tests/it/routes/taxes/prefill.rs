//! POST /v1/taxes/prefill: computes, writes nothing, answers AI callers directly.

use serde_json::json;

use crate::support::*;

db_test!(tax_prefill_writes_nothing_and_answers_ai_directly, |app| {
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"type": "ES:SL", "fiscalId": "B12345674",
        "viesVatId": "ESB12345674"})),
    )
    .await
    .expect(200);
    let de = app
        .entity(
            &app.a,
            json!({"name": "Kunde GmbH", "type": "DE:GmbH", "vies_vat_id": "DE136695976",
        "address": {"lines": ["Hauptstraße 5"], "city": "Berlin", "zipcode": "10115", "country": "DE"}}),
        )
        .await;
    let us = app
        .entity(
            &app.a,
            json!({"name": "Client Inc", "type": "US:Inc", "fiscal_id": "12-3456789",
        "address": {"lines": ["1 Main St"], "city": "Springfield", "zipcode": "62701", "state": "IL", "country": "US"}}),
        )
        .await;
    let before = app.fingerprint().await;
    let cases = [
        (&de, "services", "reverse_charge", 0),
        (&de, "goods", "intra_eu_exempt", 0),
        (&us, "goods", "export_exempt", 0),
        (&us, "services", "not_subject", 0),
    ];
    for (to, supply, treatment, tax) in cases {
        let p = app
            .call(
                "POST",
                "/v1/taxes/prefill",
                As::Ai(&app.a),
                Some(json!({"recipient_id": to, "supply_type": supply, "lines": one_line(10000)})),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(p["treatment"], treatment, "{supply} to {to}");
        assert_eq!(p["tax_total"], tax);
        assert!(
            p["legal_mention"].is_string(),
            "{treatment} has a legal mention"
        );
    }
    assert_eq!(app.fingerprint().await, before);
    let resp = app
        .call(
            "POST",
            "/v1/taxes/prefill",
            As::Ai(&app.a),
            Some(json!({"recipient_id": uuid::Uuid::new_v4().to_string(), "lines": one_line(1)})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("recipient_id"));
});
