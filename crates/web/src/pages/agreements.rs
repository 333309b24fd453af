//! The legal documents a person must accept (before issuing, for instance).

use axum::{
    extract::{Path, State},
    http::{HeaderMap, Method},
    response::Response,
};
use maud::html;

use super::{Ctx, layout, redirect_with, s, when};
use crate::{
    WebState,
    client::{self, enc},
    forms::Post,
    session::SignedIn,
};

/// `GET /agreements`.
pub async fn page(State(state): State<WebState>, signed: SignedIn, headers: HeaderMap) -> Response {
    let ctx = Ctx::new(&state, &signed, &headers, "").await;
    let docs = match client::get_json(&state, &signed.0, "/v1/agreements").await {
        Ok(v) => v["data"].as_array().cloned().unwrap_or_default(),
        Err(resp) => return resp,
    };
    layout(
        &ctx,
        "Legal documents",
        html! {
            p.lead { "Invoices can be issued once you have accepted the current version of each document." }
            @if docs.is_empty() { p.empty { "There is nothing to accept." } }
            @for d in &docs {
                article.card {
                    h2 { (s(d, "title")) " " span.muted { "(version " (d["version"]) ")" } }
                    details {
                        summary { "Read the document" }
                        div.document { @for para in s(d, "body").split("\n\n") { p { (para) } } }
                    }
                    @if d["accepted"].as_bool() == Some(true) {
                        p { span.status.approved { "accepted" } " " span.muted { (when(&d["accepted_at"])) } }
                    } @else {
                        form method="post" action=(format!("/agreements/{}/accept", enc(s(d, "id")))) {
                            (ctx.csrf())
                            button.primary type="submit" aria-label=(format!("Accept {}", s(d, "title"))) { "Accept" }
                        }
                    }
                }
            }
        },
    )
}

/// `POST /agreements/{id}/accept`.
pub async fn accept(State(state): State<WebState>, Path(id): Path<String>, post: Post) -> Response {
    let path = format!("/v1/agreements/{}/accept", enc(&id));
    match client::call(&state, &post.session, Method::POST, &path, None).await {
        Ok(a) if a.ok() => redirect_with(
            &state,
            "/agreements",
            "ok",
            &format!("Accepted: {}.", s(&a.json(), "title")),
        ),
        Ok(a) => redirect_with(&state, "/agreements", "error", &a.message()),
        Err(resp) => resp,
    }
}

/// Whether the person still has a current document to accept.
pub async fn pending(state: &WebState, session: &crate::session::Session) -> bool {
    match client::get_json(state, session, "/v1/agreements").await {
        Ok(v) => v["data"]
            .as_array()
            .is_some_and(|docs| docs.iter().any(|d| d["accepted"].as_bool() != Some(true))),
        Err(_) => false,
    }
}
