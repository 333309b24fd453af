//! `GET /oauth/authorize`: the web sign-in, then a consent page; `POST /oauth/authorize`:
//! the person's answer, which sends the browser back to the client with a code.
//!
//! A request whose client is unknown, or whose `redirect_uri` is not one the client
//! registered (exactly), gets an error page: the browser is never sent to an address the
//! client did not register. Every other error goes back to the client as `error=`.

use std::collections::HashMap;

use axum::{
    extract::{Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, Uri, header},
    response::{IntoResponse, Redirect, Response},
};
use maud::html;

use super::{origin_of, pkce_text_ok, resource_ok, with_query};
use crate::{
    WebState,
    forms::AnyPost,
    pages::{bare_page, error_page},
    session::{Session, encode_next, internal, load, random_token},
};

/// Longest `state` echoed back, in bytes.
pub const MAX_STATE_LEN: usize = 1024;

/// A checked authorization request.
struct AuthRequest {
    client: store::oauth::Client,
    redirect_uri: String,
    state: Option<String>,
    code_challenge: String,
    resource: Option<String>,
}

/// The browser goes back to the client with an error (and the request's `state`).
fn back_with_error(redirect_uri: &str, state: Option<&str>, error: &str, why: &str) -> Response {
    let mut params = vec![("error", error), ("error_description", why)];
    if let Some(s) = state {
        params.push(("state", s));
    }
    match with_query(redirect_uri, &params) {
        Some(to) => Redirect::to(&to).into_response(),
        None => bad_request("The client's redirect URI is not a valid URL."),
    }
}

fn bad_request(message: &str) -> Response {
    error_page(
        StatusCode::BAD_REQUEST,
        "This sign-in request cannot be used",
        message,
    )
}

/// Checks the parameters of an authorization request (query or consent form).
async fn check(state: &WebState, p: &HashMap<String, String>) -> Result<AuthRequest, Response> {
    let get = |k: &str| p.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = get("client_id") else {
        return Err(bad_request(
            "The request names no client (`client_id`). Start the connection again from your \
             MCP client.",
        ));
    };
    let client = async {
        let mut conn = state.api.db.pool().acquire().await?;
        store::oauth::client(&mut conn, client_id).await
    }
    .await
    .map_err(internal)?
    .ok_or_else(|| {
        bad_request(
            "This MCP client is not registered here (or its registration was removed). Start \
             the connection again from your MCP client so that it registers.",
        )
    })?;
    let redirect_uri = match get("redirect_uri") {
        Some(uri) if client.redirect_uris.iter().any(|r| r == uri) => uri.to_owned(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        _ => {
            return Err(bad_request(
                "The redirect URI of this request is not one the MCP client registered, so \
                 the service will not send you there.",
            ));
        }
    };
    let st = get("state");
    if st.is_some_and(|s| s.len() > MAX_STATE_LEN) {
        return Err(back_with_error(
            &redirect_uri,
            None,
            "invalid_request",
            "The state parameter is too long.",
        ));
    }
    let fail = |error: &str, why: &str| Err(back_with_error(&redirect_uri, st, error, why));
    if get("response_type") != Some("code") {
        return fail(
            "unsupported_response_type",
            "Only response_type=code is supported.",
        );
    }
    if get("code_challenge_method") != Some("S256") {
        return fail(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256.",
        );
    }
    let Some(challenge) = get("code_challenge").filter(|c| pkce_text_ok(c)) else {
        return fail(
            "invalid_request",
            "code_challenge must be the S256 challenge (43 to 128 characters).",
        );
    };
    let resource = get("resource");
    if !resource_ok(state, resource) {
        return fail(
            "invalid_target",
            "The resource is not this service's MCP endpoint.",
        );
    }
    Ok(AuthRequest {
        redirect_uri: redirect_uri.clone(),
        state: st.map(str::to_owned),
        code_challenge: challenge.to_owned(),
        resource: resource.map(str::to_owned),
        client,
    })
}

/// `GET /oauth/authorize`.
pub async fn start(
    State(state): State<WebState>,
    headers: HeaderMap,
    uri: Uri,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let request = match check(&state, &params).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let here = encode_next(uri.path_and_query().map_or("/", |p| p.as_str()));
    let session = match load(&state, &headers).await {
        Ok(Some(s)) => s,
        Ok(None) => return Redirect::to(&format!("/login?next={here}")).into_response(),
        Err(resp) => return resp,
    };
    if session.row.password_change_required == 1 {
        return Redirect::to(&format!("/password?next={here}")).into_response();
    }
    consent(&state, &session, &request).await
}

/// The consent page: who asks, for which company, and what it means.
async fn consent(state: &WebState, session: &Session, r: &AuthRequest) -> Response {
    let companies = async {
        let mut conn = state.api.db.pool().acquire().await?;
        store::web::companies_of(&mut conn, &session.row.user_id, store::now_micros()).await
    }
    .await;
    let companies = match companies {
        Ok(c) => c,
        Err(e) => return internal(e),
    };
    let chosen = session.company.as_ref().map(|c| c.id.as_str());
    let back_to = origin_of(&r.redirect_uri).unwrap_or_default();
    let mut resp = bare_page(
        state,
        &format!("Allow {} to work in your invoicing?", r.client.name),
        None,
        html! {
            form.card method="post" action="/oauth/authorize" {
                input type="hidden" name="csrf" value=(session.row.csrf_token);
                input type="hidden" name="client_id" value=(r.client.id);
                input type="hidden" name="redirect_uri" value=(r.redirect_uri);
                input type="hidden" name="response_type" value="code";
                input type="hidden" name="code_challenge" value=(r.code_challenge);
                input type="hidden" name="code_challenge_method" value="S256";
                @if let Some(s) = &r.state { input type="hidden" name="state" value=(s); }
                @if let Some(res) = &r.resource { input type="hidden" name="resource" value=(res); }
                p {
                    "The MCP client " strong { (r.client.name) }
                    " (the name is what the client says about itself) asks to act as an AI agent "
                    "as " strong { (session.row.email) } "."
                }
                @if companies.len() == 1 {
                    input type="hidden" name="company" value=(companies[0].id);
                    p { "Company: " strong { (companies[0].name) } }
                } @else {
                    fieldset {
                        legend { "In which company?" }
                        @for (i, c) in companies.iter().enumerate() {
                            div.choice {
                                input type="radio" name="company" id=(format!("company-{i}")) value=(c.id)
                                    checked[chosen == Some(c.id.as_str()) || (chosen.is_none() && i == 0)];
                                label for=(format!("company-{i}")) { (c.name) }
                            }
                        }
                    }
                }
                p {
                    strong { "Every change the agent asks for will wait for your approval" }
                    " in the review queue (invoices, customers, settings: nothing is written "
                    "until a person approves it). It can read the company's data without asking."
                }
                p.muted {
                    "After you answer, your browser goes back to " code { (back_to) } ". "
                    "The access lasts until you revoke it on the API tokens page, or until the \
                     client has not used it for 30 days."
                }
                div.actions {
                    button.primary type="submit" name="decision" value="allow" { "Allow" }
                    " "
                    button type="submit" name="decision" value="deny" { "Deny" }
                }
            }
        },
    );
    // The answer redirects to the client: the page's CSP must allow that form target.
    let csp = format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         object-src 'none'; frame-ancestors 'none'; form-action 'self' {back_to}; base-uri 'none'"
    );
    if let Ok(v) = HeaderValue::from_str(&csp) {
        resp.headers_mut()
            .insert(header::CONTENT_SECURITY_POLICY, v);
    }
    resp
}

/// `POST /oauth/authorize`: Allow issues a code for the chosen company; Deny tells the
/// client `access_denied`. The form is CSRF-checked like every form of the web app.
pub async fn decide(State(state): State<WebState>, post: AnyPost) -> Response {
    let request = match check(&state, &post.fields).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let session = &post.session;
    if session.row.password_change_required == 1 {
        return Redirect::to("/password").into_response();
    }
    let st = request.state.as_deref();
    if post.raw("decision") != "allow" {
        tracing::info!(client_id = %request.client.id, "OAuth authorization denied");
        return back_with_error(
            &request.redirect_uri,
            st,
            "access_denied",
            "The person denied the request.",
        );
    }
    let wanted = post.raw("company").to_owned();
    let code = random_token();
    let now = state.api.now().timestamp_micros();
    let done = async {
        let mut tx = state.api.db.begin_write().await?;
        let companies = store::web::companies_of(tx.conn(), &session.row.user_id, now).await?;
        if !companies.iter().any(|c| c.id == wanted) {
            return Ok(false);
        }
        store::oauth::insert_code(
            tx.conn(),
            &store::oauth::NewCode {
                code_hash: &store::hash_secret(&code),
                client_id: &request.client.id,
                company_id: &wanted,
                user_id: &session.row.user_id,
                redirect_uri: &request.redirect_uri,
                code_challenge: &request.code_challenge,
                resource: request.resource.as_deref(),
                now,
            },
        )
        .await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(true)
    }
    .await;
    match done {
        Ok(true) => {}
        Ok(false) => return bad_request("Choose one of the companies listed and try again."),
        Err(e) => return internal(e),
    }
    tracing::info!(client_id = %request.client.id, company_id = %wanted, "OAuth authorization allowed");
    let mut params = vec![("code", code.as_str())];
    if let Some(s) = st {
        params.push(("state", s));
    }
    match with_query(&request.redirect_uri, &params) {
        Some(to) => Redirect::to(&to).into_response(),
        None => bad_request("The client's redirect URI is not a valid URL."),
    }
}
