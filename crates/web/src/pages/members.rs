//! Company members: add, deactivate, reactivate, set when access ends.

use axum::{
    extract::{Path, State},
    http::{HeaderMap, Method},
    response::Response,
};
use maud::html;
use serde_json::{Value, json};

use super::{Ctx, after, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

/// `GET /members`.
pub async fn page(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "members").await;
    let members = match client::get_json(&state, &signed.0, "/v1/members?limit=500").await {
        Ok(v) => v
            .get("data")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        Err(resp) => return resp,
    };
    layout(
        &ctx,
        "Members",
        html! {
            section aria-labelledby="add-h" {
                h2 id="add-h" { "Add a member" }
                form.card.inline-form method="post" action="/members" {
                    (ctx.csrf())
                    div { label for="email" { "E-mail" } input id="email" name="email" type="email" required; }
                    div { label for="name" { "Name (optional)" } input id="name" name="name" maxlength="200"; }
                    div {
                        label for="kind" { "Signs in with" }
                        select id="kind" name="kind" {
                            option value="password" { "A password we e-mail them" }
                            option value="oauth" { "The company's identity provider" }
                        }
                    }
                    div { label for="expires" { "Access ends (optional)" } input id="expires" name="expires" type="date"; }
                    button.primary type="submit" { "Add member" }
                }
            }
            section aria-labelledby="list-h" {
                h2 id="list-h" { "Members (" (members.len()) ")" }
                div.scroll { table {
                    thead { tr {
                        th scope="col" { "E-mail" } th scope="col" { "Name" } th scope="col" { "Signs in with" }
                        th scope="col" { "Status" } th scope="col" { "Member since" } th scope="col" { "Access ends" }
                        th scope="col" { span.visually-hidden { "Actions" } }
                    } }
                    tbody {
                        @for (i, m) in members.iter().enumerate() {
                            @let email = s(m, "email");
                            @let base = format!("/members/{}", enc(email));
                            tr {
                                td { (email) }
                                td { (s(m, "name")) }
                                td { (s(m, "kind")) }
                                td { span class=(format!("status {}", s(m, "status"))) { (s(m, "status")) } }
                                td { (when(&m["memberSince"])) }
                                td {
                                    form.expiry method="post" action=(format!("{base}/expiry")) {
                                        (ctx.csrf())
                                        label.visually-hidden for=(format!("exp-{i}")) { "Access of " (email) " ends on" }
                                        input id=(format!("exp-{i}")) name="expires" type="date"
                                            value=(m.get("expiresAt").and_then(Value::as_str).map(|d| d.get(..10).unwrap_or(d)).unwrap_or(""));
                                        button type="submit" { "Set" }
                                    }
                                }
                                td {
                                    @if s(m, "status") == "deactivated" {
                                        form method="post" action=(format!("{base}/reactivate")) {
                                            (ctx.csrf()) button type="submit" aria-label=(format!("Reactivate {email}")) { "Reactivate" }
                                        }
                                    } @else {
                                        form method="post" action=(format!("{base}/deactivate")) {
                                            (ctx.csrf()) button.danger type="submit" aria-label=(format!("Deactivate {email}")) { "Deactivate" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                } }
            }
        },
    )
}

/// A `YYYY-MM-DD` date field as the end of access (midnight UTC), `null` when empty.
fn expiry(value: &str) -> Result<Value, String> {
    if value.is_empty() {
        return Ok(Value::Null);
    }
    chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .map(|d| json!(format!("{d}T00:00:00Z")))
        .map_err(|_| format!("`{value}` is not a date (YYYY-MM-DD)."))
}

/// `POST /members`.
pub async fn add(State(state): State<WebState>, post: Post) -> Response {
    let expires = match expiry(post.field("expires")) {
        Ok(v) => v,
        Err(e) => return redirect_with(&state, "/members", "error", &e),
    };
    let mut request =
        json!({"email": post.field("email"), "kind": post.field("kind"), "expiresAt": expires});
    if !post.field("name").is_empty() {
        request["name"] = json!(post.field("name"));
    }
    let email = post.field("email");
    let done = if post.field("kind") == "password" {
        format!("{email} is a member; their password is on its way by e-mail.")
    } else {
        format!("{email} is a member; they sign in with the identity provider.")
    };
    let answer = client::call(
        &state,
        &post.session,
        Method::POST,
        "/v1/members",
        Some(&request),
    )
    .await;
    after(&state, "/members", answer, &done)
}

async fn act(
    state: &WebState,
    post: &Post,
    path: String,
    body: Option<Value>,
    done: &str,
) -> Response {
    after(
        state,
        "/members",
        client::call(state, &post.session, Method::POST, &path, body.as_ref()).await,
        done,
    )
}

/// `POST /members/{email}/deactivate`.
pub async fn deactivate(
    State(state): State<WebState>,
    Path(email): Path<String>,
    post: Post,
) -> Response {
    let path = format!("/v1/members/{}/deactivate", enc(&email));
    act(
        &state,
        &post,
        path,
        None,
        &format!("{email} is deactivated; their tokens stop working."),
    )
    .await
}

/// `POST /members/{email}/reactivate`.
pub async fn reactivate(
    State(state): State<WebState>,
    Path(email): Path<String>,
    post: Post,
) -> Response {
    let path = format!("/v1/members/{}/reactivate", enc(&email));
    act(
        &state,
        &post,
        path,
        None,
        &format!("{email} is active again."),
    )
    .await
}

/// `POST /members/{email}/expiry`: sets or clears when access ends.
pub async fn expiry_post(
    State(state): State<WebState>,
    Path(email): Path<String>,
    post: Post,
) -> Response {
    let state = &state;
    let expires = match expiry(post.field("expires")) {
        Ok(v) => v,
        Err(e) => return redirect_with(state, "/members", "error", &e),
    };
    let path = format!("/v1/members/{}", enc(&email));
    let request = json!({"expiresAt": expires});
    after(
        state,
        "/members",
        client::call(state, &post.session, Method::PATCH, &path, Some(&request)).await,
        &format!("Saved when the access of {email} ends."),
    )
}
