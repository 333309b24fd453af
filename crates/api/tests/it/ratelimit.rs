//! Per-token rate limiting: 429 with Retry-After past the budget, other tokens unaffected.

use axum::body::Body;
use axum::http::Request;
use tower::ServiceExt;

use crate::support::*;

async fn session(router: &axum::Router, token: &str) -> axum::response::Response {
    router
        .clone()
        .oneshot(
            Request::get("/v1/session")
                .header("authorization", format!("Bearer {token}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap()
}

db_test!(a_token_past_its_budget_gets_429_with_retry_after, |app| {
    let limited = app.with_rate_limit(3);
    for _ in 0..3 {
        assert_eq!(session(&limited, &app.a.token).await.status(), 200);
    }
    let resp = session(&limited, &app.a.token).await;
    assert_eq!(resp.status(), 429);
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
    let body = axum::body::to_bytes(resp.into_body(), 10_000)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&body).contains("Too many requests"));
    // Another token (another company, or the same company's MCP token) has its own budget.
    assert_eq!(session(&limited, &app.b.token).await.status(), 200);
    assert_eq!(session(&limited, &app.a.mcp_token).await.status(), 200);
    // A bad token is still a 401, not a 429.
    let resp = session(&limited, "00000000-0000-0000-0000-000000000000").await;
    assert_eq!(resp.status(), 401);
});
