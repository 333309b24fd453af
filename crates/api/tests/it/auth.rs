//! Authentication exactly as the spec says: every 401 case, human vs AI callers.

use serde_json::json;

use crate::support::*;

#[track_caller]
fn assert_401(resp: Resp) {
    let resp = resp.expect(401);
    assert!(
        resp.content_type().starts_with("text/plain"),
        "{}",
        resp.content_type()
    );
    assert_eq!(resp.headers.get("www-authenticate").unwrap(), "Bearer");
    assert!(!resp.text().is_empty());
}

async fn with_proof(app: &TestApp, token: &str, proof: &str) -> Resp {
    app.call_with(
        "GET",
        "/v1/session",
        &[
            ("authorization", format!("Bearer {token}")),
            ("x-human-proof", proof.to_owned()),
        ],
        None,
    )
    .await
}

db_test!(every_401_case, |app| {
    assert_401(app.get("/v1/session", As::Anonymous).await);
    assert_401(
        app.get("/v1/session", As::Header("Basic dXNlcjpwYXNz"))
            .await,
    );
    assert_401(
        app.get("/v1/session", As::Header("Bearer not-a-uuid"))
            .await,
    );
    assert_401(app.get("/v1/session", As::Header("Bearer")).await);
    let unknown = format!("Bearer {}", uuid::Uuid::new_v4());
    assert_401(app.get("/v1/session", As::Header(&unknown)).await);
    // Mutating routes too, before anything else is looked at.
    assert_401(
        app.call(
            "PATCH",
            "/v1/company",
            As::Header(&unknown),
            Some(serde_json::json!({})),
        )
        .await,
    );
    // A wrong proof is a 401, not a silent downgrade to an AI caller; the message speaks of
    // the caller's kind of token only.
    let wrong = with_proof(&app, &app.a.token, "hp_wrong").await;
    assert!(!wrong.text().contains("MCP"), "{}", wrong.text());
    assert!(wrong.text().contains("human proof"), "{}", wrong.text());
    assert_401(wrong);
    // Company B's proof does not work with company A's token.
    assert_401(with_proof(&app, &app.a.token, &app.b.proof).await);
    // MCP tokens have no proof at all.
    let mcp = with_proof(&app, &app.a.mcp_token, &app.a.proof).await;
    assert!(mcp.text().contains("MCP token"), "{}", mcp.text());
    assert_401(mcp);
    // The right proof works.
    with_proof(&app, &app.a.token, &app.a.proof)
        .await
        .expect(200);
});

db_test!(revoked_token_is_401_on_next_request, |app| {
    let created = app
        .call(
            "POST",
            "/v1/tokens",
            As::Human(&app.a),
            Some(json!({"description": "temp"})),
        )
        .await
        .expect(201)
        .json();
    let token = created["token"].as_str().unwrap();
    let header = format!("Bearer {token}");
    app.get("/v1/session", As::Header(&header))
        .await
        .expect(200);
    let id = created["id"].as_str().unwrap();
    app.call(
        "DELETE",
        &format!("/v1/tokens/{id}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    app.get("/v1/session", As::Header(&header))
        .await
        .expect(401);
});

db_test!(every_response_has_a_request_id, |app| {
    for resp in [
        app.get("/v1/session", As::Ai(&app.a)).await,
        app.get("/v1/session", As::Anonymous).await,
        app.get("/healthz", As::Anonymous).await,
        app.get("/nope", As::Anonymous).await,
    ] {
        let id = resp.headers.get("x-request-id").expect("x-request-id");
        assert!(uuid::Uuid::parse_str(id.to_str().unwrap()).is_ok());
    }
});

db_test!(tokens_read_as_ai_and_human_alike, |app| {
    // Reads are never held: AI and MCP callers read directly.
    for who in [As::Ai(&app.a), As::Mcp(&app.a), As::Human(&app.a)] {
        let s = app.get("/v1/session", who).await.expect(200).json();
        assert_eq!(s["company"]["id"], app.a.company_id.as_str());
    }
});
