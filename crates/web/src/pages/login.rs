//! Sign-in, sign-out and the company choice.

use std::{collections::HashMap, net::SocketAddr};

use axum::{
    extract::{ConnectInfo, Query, Request, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use maud::html;

use super::{Flash, bare_page, redirect_with, take_flash};
use crate::{
    WebState,
    forms::{AnyPost, fields},
    session::{
        AnySession, LOGIN_CSRF_COOKIE, LOGIN_FORM_SECS, SESSION_COOKIE, SESSION_HOURS,
        check_origin, cookie, forbidden_cross_site, internal, login_form_token,
        login_form_token_ok, random_token, safe_next, set_cookie,
    },
    throttle::{Attempt, WINDOW_MINUTES},
};

/// Largest sign-in form body: a token, an e-mail, a password and a path fit
/// many times over, and nothing bigger is read before the checks.
pub const MAX_SIGN_IN_BODY: usize = 16 * 1024;
/// What a `503` from a busy password check tells the browser to wait, in seconds.
pub const RETRY_AFTER_SECS: u32 = 5;

const WRONG: &str = "Wrong e-mail or password.";

/// `GET /login`.
pub async fn form(
    State(state): State<WebState>,
    session: Option<AnySession>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if session.is_some() {
        return Redirect::to("/review").into_response();
    }
    login_page(
        &state,
        take_flash(&headers),
        q.get("next").map(String::as_str),
        "",
        StatusCode::OK,
    )
}

fn login_page(
    state: &WebState,
    flash: Option<Flash>,
    next: Option<&str>,
    email: &str,
    status: StatusCode,
) -> Response {
    let token = login_form_token(state);
    let next = safe_next(next);
    let mut resp = bare_page(
        state,
        "Sign in",
        flash,
        html! {
            form.card method="post" action="/login" {
                input type="hidden" name="csrf" value=(token);
                input type="hidden" name="next" value=(next);
                label for="email" { "E-mail" }
                input id="email" name="email" type="email" autocomplete="username" required autofocus value=(email);
                label for="password" { "Password" }
                input id="password" name="password" type="password" autocomplete="current-password" required;
                button type="submit" { "Sign in" }
            }
            @if state.oidc.is_some() {
                p { a.button href=(format!("/login/oidc?next={}", crate::session::encode_next(&next))) { "Sign in with your identity provider" } }
            }
            p.muted {
                "New members get their first password by e-mail. Lost it? Ask an owner of your "
                "company to add you again, or the operator to run "
                code { "invoicing admin password --email you@example.com" } "."
            }
        },
    );
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(&set_cookie(
        state,
        LOGIN_CSRF_COOKIE,
        &token,
        LOGIN_FORM_SECS,
    )) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// `POST /login`: checks the signed form token, counts the attempt, then (in a
/// turn of the process's hash gate) verifies the password.
pub async fn submit(State(state): State<WebState>, req: Request) -> Response {
    if let Err(resp) = check_origin(&state, req.headers()) {
        return resp;
    }
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let client = state.trusted_proxies.client(peer, req.headers());
    let form_cookie = cookie(req.headers(), LOGIN_CSRF_COOKIE).map(str::to_owned);
    let fields = match fields(req, &state).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let get = |k: &str| fields.get(k).map_or("", String::as_str);
    // Before anything is counted or hashed: only a form this service handed out.
    if !login_form_token_ok(
        &state,
        form_cookie.as_deref(),
        fields.get("csrf").map(String::as_str),
    ) {
        return forbidden_cross_site();
    }
    let email = get("email").trim().to_lowercase();
    let next = get("next").to_owned();
    let refused = |status: StatusCode, text: String| {
        login_page(
            &state,
            Some(Flash::error(&text)),
            Some(&next),
            &email,
            status,
        )
    };
    match sign_in(
        &state,
        &email,
        get("password"),
        Attempt::new(&email, client),
    )
    .await
    {
        Ok(SignIn::Done(cookie_value)) => {
            let mut resp = Redirect::to(&safe_next(Some(&next))).into_response();
            let max_age = SESSION_HOURS * 3600;
            for v in [
                set_cookie(&state, SESSION_COOKIE, &cookie_value, max_age),
                set_cookie(&state, LOGIN_CSRF_COOKIE, "", 0),
            ] {
                if let Ok(v) = HeaderValue::from_str(&v) {
                    resp.headers_mut().append(header::SET_COOKIE, v);
                }
            }
            resp
        }
        Ok(SignIn::Throttled) => refused(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many failed sign-ins. Wait {WINDOW_MINUTES} minutes and try again, or ask \
                 an owner of your company for a new password."
            ),
        ),
        Ok(SignIn::Wrong) => refused(StatusCode::UNAUTHORIZED, WRONG.into()),
        Ok(SignIn::Busy) => busy(refused(
            StatusCode::SERVICE_UNAVAILABLE,
            "The service is checking many passwords right now. Try again in a few seconds.".into(),
        )),
        Err(resp) => resp,
    }
}

/// Adds `Retry-After` to a `503` for a password check the service had no room for.
pub fn busy(mut resp: Response) -> Response {
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    resp
}

enum SignIn {
    /// Signed in: the new session cookie's value.
    Done(String),
    /// Too many failures for this e-mail (from this client, or from everywhere).
    Throttled,
    /// Wrong e-mail or password (or no company to work in).
    Wrong,
    /// No turn to check the password came in time; the attempt was given back.
    Busy,
}

async fn sign_in(
    state: &WebState,
    email: &str,
    password: &str,
    attempt: Attempt,
) -> Result<SignIn, Response> {
    // Counted first, atomically: parallel guesses get at most the limit checked.
    if !attempt.reserve(state).await.map_err(internal)? {
        return Ok(SignIn::Throttled);
    }
    let now = store::now_micros();
    let mut conn = state.api.db.pool().acquire().await.map_err(internal)?;
    let account = store::web::password_account(&mut conn, email)
        .await
        .map_err(internal)?;
    drop(conn);
    // The same argon2 work whether or not the account exists: no enumeration by timing.
    let (hash, user_id) = match &account {
        Some(a) => (a.password_hash.as_str(), Some(a.user_id.clone())),
        None => (state.dummy_hash.as_str(), None),
    };
    let matches = match state.hash_gate.verify(password, hash).await {
        Ok(m) => m,
        Err(store::password::GateError::Busy) => {
            let mut tx = state.api.db.begin_write().await.map_err(internal)?;
            attempt.release(tx.conn()).await.map_err(internal)?;
            tx.commit().await.map_err(internal)?;
            return Ok(SignIn::Busy);
        }
        Err(e) => return Err(internal(e)),
    };
    let (Some(user_id), true) = (user_id, matches) else {
        return Ok(SignIn::Wrong);
    };
    let mut tx = state.api.db.begin_write().await.map_err(internal)?;
    let companies = store::web::companies_of(tx.conn(), &user_id, now)
        .await
        .map_err(internal)?;
    if companies.is_empty() {
        return Ok(SignIn::Wrong);
    }
    attempt.succeeded(tx.conn()).await.map_err(internal)?;
    let value = random_token();
    let company = (companies.len() == 1).then(|| companies[0].id.as_str());
    store::web::create_session(
        tx.conn(),
        &store::web::NewSession {
            id_hash: &store::hash_secret(&value),
            user_id: &user_id,
            company_id: company,
            csrf_token: &random_token(),
            now,
            expires_at: now + SESSION_HOURS * 3600 * 1_000_000,
        },
    )
    .await
    .map_err(internal)?;
    tx.commit().await.map_err(internal)?;
    tracing::info!(%user_id, "web sign-in");
    Ok(SignIn::Done(value))
}

/// `POST /logout`: ends the session (CSRF-checked, so no one can sign you out from elsewhere).
pub async fn logout(State(state): State<WebState>, post: AnyPost) -> Response {
    let done = async {
        let mut conn = state.api.db.pool().acquire().await?;
        store::web::delete_session(&mut conn, &post.session.id_hash).await
    }
    .await;
    if let Err(e) = done {
        return internal(e);
    }
    let mut resp = redirect_with(&state, "/login", "ok", "You are signed out.");
    if let Ok(v) = HeaderValue::from_str(&set_cookie(&state, SESSION_COOKIE, "", 0)) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// `GET /companies`: a member of several companies picks one.
pub async fn companies_form(
    State(state): State<WebState>,
    AnySession(session): AnySession,
    headers: HeaderMap,
) -> Response {
    let companies = async {
        let mut conn = state.api.db.pool().acquire().await?;
        store::web::companies_of(&mut conn, &session.row.user_id, store::now_micros()).await
    }
    .await;
    let companies = match companies {
        Ok(c) => c,
        Err(e) => return internal(e),
    };
    bare_page(
        &state,
        "Choose a company",
        take_flash(&headers),
        html! {
            form.card method="post" action="/companies" {
                input type="hidden" name="csrf" value=(session.row.csrf_token);
                fieldset {
                    legend { "Companies you are a member of" }
                    @for (i, c) in companies.iter().enumerate() {
                        div.choice {
                            input type="radio" name="company" id=(format!("company-{i}")) value=(c.id)
                                checked[session.company.as_ref().map(|x| &x.id) == Some(&c.id) || i == 0];
                            label for=(format!("company-{i}")) { (c.name) }
                        }
                    }
                }
                button type="submit" { "Continue" }
            }
        },
    )
}

/// `POST /companies`: sets the session's company (only one the person belongs to).
pub async fn companies_submit(State(state): State<WebState>, post: AnyPost) -> Response {
    let wanted = post.raw("company").to_owned();
    let done = async {
        let mut conn = state.api.db.pool().acquire().await?;
        let companies =
            store::web::companies_of(&mut conn, &post.session.row.user_id, store::now_micros())
                .await?;
        if let Some(c) = companies.iter().find(|c| c.id == wanted) {
            store::web::set_session_company(&mut conn, &post.session.id_hash, &c.id).await?;
            Ok::<_, sqlx::Error>(true)
        } else {
            Ok(false)
        }
    }
    .await;
    match done {
        Ok(true) => Redirect::to("/review").into_response(),
        Ok(false) => redirect_with(
            &state,
            "/companies",
            "error",
            "Choose one of the companies listed.",
        ),
        Err(e) => internal(e),
    }
}
