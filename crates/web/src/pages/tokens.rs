//! API tokens: create (value and human proof shown once), list, revoke.

use axum::{
    extract::{Path, State},
    http::{HeaderMap, Method, StatusCode},
    response::{IntoResponse, Response},
};
use maud::{Markup, html};
use serde_json::{Value, json};

use super::{Ctx, after, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

async fn list(state: &WebState, signed: &SignedIn) -> Result<Vec<Value>, Response> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    // Every active token, page by page (a company has a handful; the cap bounds a runaway).
    for _ in 0..20 {
        let path = match &cursor {
            Some(c) => format!("/v1/tokens?limit=500&cursor={}", enc(c)),
            None => "/v1/tokens?limit=500".to_owned(),
        };
        let page = client::get_json(state, &signed.0, &path).await?;
        if let Some(data) = page.get("data").and_then(Value::as_array) {
            items.extend(data.iter().cloned());
        }
        match page.get("next_cursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    Ok(items)
}

fn body(ctx: &Ctx<'_>, tokens: &[Value], created: Option<&Value>) -> Markup {
    html! {
        @if let Some(t) = created {
            section.card.secret aria-labelledby="new-h" {
                h2 id="new-h" { "Token created: copy it now" }
                p { "This is the only time the token" @if !t["humanProof"].is_null() { " and its human proof are" } @else { " is" } " shown. Store them in your secret manager." }
                label for="new-token" { "Token (send as " code { "Authorization: Bearer …" } ")" }
                div.copy {
                    input id="new-token" readonly value=(s(t, "token"));
                    button type="button" data-copy="new-token" { "Copy token" }
                }
                @if let Some(proof) = t.get("humanProof").and_then(Value::as_str) {
                    label for="new-proof" { "Human proof (send as " code { "X-Human-Proof" } " to act as a person)" }
                    div.copy {
                        input id="new-proof" readonly value=(proof);
                        button type="button" data-copy="new-proof" { "Copy human proof" }
                    }
                }
            }
        }
        section aria-labelledby="create-h" {
            h2 id="create-h" { "Create a token" }
            form.card.inline-form method="post" action="/tokens" {
                (ctx.csrf())
                div {
                    label for="description" { "What it is for" }
                    input id="description" name="description" required maxlength="200" placeholder="e.g. accounting export";
                }
                div {
                    label for="kind" { "Kind" }
                    select id="kind" name="kind" {
                        option value="standard" { "Standard (with a human proof)" }
                        option value="mcp" { "MCP (an AI agent; its changes wait for review)" }
                    }
                }
                button.primary type="submit" { "Create token" }
            }
        }
        section aria-labelledby="list-h" {
            h2 id="list-h" { "Active tokens (" (tokens.len()) ")" }
            @if tokens.is_empty() {
                p.empty { "No active token." }
            } @else {
                div.scroll { table {
                    thead { tr { th scope="col" { "Description" } th scope="col" { "Kind" } th scope="col" { "Acts as" } th scope="col" { "Created" } th scope="col" { span.visually-hidden { "Actions" } } } }
                    tbody {
                        @for t in tokens {
                            tr {
                                td { (s(t, "description")) }
                                td {
                                    (s(t, "kind"))
                                    @if let Some(client) = t.get("oauth_client").and_then(Value::as_str) {
                                        br;
                                        span.muted { "MCP client " (client) ", signed in with OAuth; revoking also ends its sign-in" }
                                    }
                                }
                                td { (s(t, "user_email")) }
                                td { (when(&t["created_at"])) }
                                td {
                                    form method="post" action=(format!("/tokens/{}/revoke", enc(s(t, "id")))) {
                                        (ctx.csrf())
                                        button.danger type="submit" aria-label=(format!("Revoke {}", s(t, "description"))) { "Revoke" }
                                    }
                                }
                            }
                        }
                    }
                } }
            }
        }
    }
}

/// `GET /tokens`.
pub async fn page(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "tokens").await;
    match list(&state, &signed).await {
        Ok(tokens) => layout(&ctx, "API tokens", body(&ctx, &tokens, None)),
        Err(resp) => resp,
    }
}

/// `POST /tokens`: creates a token and shows its secrets on this response only.
pub async fn create(State(state): State<WebState>, headers: HeaderMap, post: Post) -> Response {
    let request = json!({"description": post.field("description"), "kind": post.field("kind")});
    let answer = match client::call(
        &state,
        &post.session,
        Method::POST,
        "/v1/tokens",
        Some(&request),
    )
    .await
    {
        Ok(a) => a,
        Err(resp) => return resp,
    };
    if !answer.ok() {
        return redirect_with(&state, "/tokens", "error", &answer.message());
    }
    let created = answer.json();
    let signed = SignedIn(post.session);
    let ctx = Ctx::new(&state, &signed, &headers, "tokens").await;
    match list(&state, &signed).await {
        Ok(tokens) => {
            let mut resp = super::layout(&ctx, "API tokens", body(&ctx, &tokens, Some(&created)));
            *resp.status_mut() = StatusCode::CREATED;
            resp.into_response()
        }
        Err(resp) => resp,
    }
}

/// `POST /tokens/{id}/revoke`.
pub async fn revoke(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    let path = format!("/v1/tokens/{}", enc(&id));
    after(
        &state,
        "/tokens",
        client::call(&state, &post.session, Method::DELETE, &path, None).await,
        "The token is revoked: requests with it now get 401.",
    )
}
