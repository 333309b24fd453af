//! Sign-in, sign-out, the first-sign-in password change and the company choice.

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
        AnySession, LOGIN_CSRF_COOKIE, SESSION_COOKIE, SESSION_HOURS, check_origin, cookie,
        forbidden_cross_site, internal, random_token, safe_next, same_secret, set_cookie,
    },
};

/// Failed sign-ins allowed per e-mail address in [`WINDOW_MINUTES`].
pub const MAX_FAILURES_PER_EMAIL: i64 = 5;
/// Failed sign-ins allowed per client address in [`WINDOW_MINUTES`].
pub const MAX_FAILURES_PER_CLIENT: i64 = 30;
/// The window failures are counted in.
pub const WINDOW_MINUTES: i64 = 15;
/// Shortest password a person may choose.
pub const MIN_PASSWORD_CHARS: usize = 12;

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
    let token = random_token();
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
    if let Ok(v) = HeaderValue::from_str(&set_cookie(state, LOGIN_CSRF_COOKIE, &token, 3600)) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// `POST /login`: checks the double-submit token, throttles, verifies the password.
pub async fn submit(State(state): State<WebState>, req: Request) -> Response {
    if let Err(resp) = check_origin(&state, req.headers()) {
        return resp;
    }
    let client = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_string());
    let double_submit = cookie(req.headers(), LOGIN_CSRF_COOKIE).map(str::to_owned);
    let fields = match fields(req, &state).await {
        Ok(f) => f,
        Err(resp) => return resp,
    };
    let get = |k: &str| fields.get(k).map_or("", String::as_str);
    match (&double_submit, get("csrf")) {
        (Some(c), f) if same_secret(c, f) => {}
        _ => return forbidden_cross_site(),
    }
    let email = get("email").trim().to_lowercase();
    let next = get("next").to_owned();
    match sign_in(&state, &email, get("password"), client.as_deref()).await {
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
        Ok(SignIn::Refused(status, text)) => login_page(
            &state,
            Some(Flash {
                kind: "error".into(),
                text,
            }),
            Some(&next),
            &email,
            status,
        ),
        Err(resp) => resp,
    }
}

enum SignIn {
    /// Signed in: the new session cookie's value.
    Done(String),
    /// Refused, with what to tell the person.
    Refused(StatusCode, String),
}

async fn sign_in(
    state: &WebState,
    email: &str,
    password: &str,
    client: Option<&str>,
) -> Result<SignIn, Response> {
    let now = store::now_micros();
    let since = now - WINDOW_MINUTES * 60 * 1_000_000;
    let email_key = store::hash_secret(&format!("email:{email}"));
    let client_key = client.map(|c| store::hash_secret(&format!("client:{c}")));
    let mut conn = state.api.db.pool().acquire().await.map_err(internal)?;
    let mut throttled = store::web::count_failures(&mut conn, &email_key, since)
        .await
        .map_err(internal)?
        >= MAX_FAILURES_PER_EMAIL;
    if let Some(key) = &client_key {
        throttled |= store::web::count_failures(&mut conn, key, since)
            .await
            .map_err(internal)?
            >= MAX_FAILURES_PER_CLIENT;
    }
    if throttled {
        return Ok(SignIn::Refused(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "Too many failed sign-ins. Wait {WINDOW_MINUTES} minutes and try again, or ask \
                 an owner of your company for a new password."
            ),
        ));
    }
    let account = store::web::password_account(&mut conn, email)
        .await
        .map_err(internal)?;
    drop(conn);
    // The same argon2 work whether or not the account exists: no enumeration by timing.
    let (hash, user_id) = match &account {
        Some(a) => (a.password_hash.clone(), Some(a.user_id.clone())),
        None => (state.dummy_hash.as_ref().clone(), None),
    };
    let presented = password.to_owned();
    let matches = tokio::task::spawn_blocking(move || store::password::verify(&presented, &hash))
        .await
        .map_err(internal)?;
    let mut tx = state.api.db.begin_write().await.map_err(internal)?;
    let companies = match (&user_id, matches) {
        (Some(id), true) => store::web::companies_of(tx.conn(), id, now)
            .await
            .map_err(internal)?,
        _ => Vec::new(),
    };
    let (Some(user_id), true, false) = (user_id, matches, companies.is_empty()) else {
        store::web::record_failure(tx.conn(), &email_key, now)
            .await
            .map_err(internal)?;
        if let Some(key) = &client_key {
            store::web::record_failure(tx.conn(), key, now)
                .await
                .map_err(internal)?;
        }
        tx.commit().await.map_err(internal)?;
        return Ok(SignIn::Refused(StatusCode::UNAUTHORIZED, WRONG.into()));
    };
    store::web::clear_failures(tx.conn(), &email_key)
        .await
        .map_err(internal)?;
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

/// `GET /password`: choose a new password (required after a mailed one).
pub async fn password_form(
    State(state): State<WebState>,
    AnySession(session): AnySession,
    headers: HeaderMap,
) -> Response {
    password_page(&state, &session, take_flash(&headers), StatusCode::OK)
}

fn password_page(
    state: &WebState,
    session: &crate::session::Session,
    flash: Option<Flash>,
    status: StatusCode,
) -> Response {
    let required = session.row.password_change_required == 1;
    let mut resp = bare_page(
        state,
        "Choose your password",
        flash,
        html! {
            @if required {
                p { "You signed in with a generated password. Choose one of your own to go on." }
            }
            form.card method="post" action="/password" {
                input type="hidden" name="csrf" value=(session.row.csrf_token);
                input type="text" name="username" value=(session.row.email) autocomplete="username" hidden;
                label for="current" { "Current password" }
                input id="current" name="current" type="password" autocomplete="current-password" required;
                label for="new" { "New password (at least " (MIN_PASSWORD_CHARS) " characters)" }
                input id="new" name="new" type="password" autocomplete="new-password" minlength=(MIN_PASSWORD_CHARS) required;
                label for="confirm" { "New password again" }
                input id="confirm" name="confirm" type="password" autocomplete="new-password" required;
                button type="submit" { "Save password" }
            }
            @if !required { p { a href="/review" { "Back" } } }
        },
    );
    *resp.status_mut() = status;
    resp
}

/// `POST /password`: checks the current password and stores the new one;
/// other sessions of the account end.
pub async fn password_submit(State(state): State<WebState>, post: AnyPost) -> Response {
    let session = &post.session;
    let refuse = |text: String| {
        password_page(
            &state,
            session,
            Some(Flash {
                kind: "error".into(),
                text,
            }),
            StatusCode::BAD_REQUEST,
        )
    };
    let (current, new, confirm) = (post.raw("current"), post.raw("new"), post.raw("confirm"));
    if new.chars().count() < MIN_PASSWORD_CHARS {
        return refuse(format!(
            "The new password must have at least {MIN_PASSWORD_CHARS} characters."
        ));
    }
    if new != confirm {
        return refuse("The two new passwords differ.".into());
    }
    if new == current {
        return refuse("Choose a password different from the current one.".into());
    }
    let stored = async {
        let mut conn = state.api.db.pool().acquire().await?;
        store::web::password_hash(&mut conn, &session.row.user_id).await
    }
    .await;
    let stored = match stored {
        Ok(Some(h)) => h,
        Ok(None) => return refuse("This account signs in without a password.".into()),
        Err(e) => return internal(e),
    };
    let (presented, new_owned) = (current.to_owned(), new.to_owned());
    let checked = tokio::task::spawn_blocking(move || {
        if store::password::verify(&presented, &stored) {
            store::password::hash(&new_owned).map(Some)
        } else {
            Ok(None)
        }
    })
    .await;
    let hash = match checked {
        Ok(Ok(Some(h))) => h,
        Ok(Ok(None)) => return refuse("The current password is wrong.".into()),
        Ok(Err(e)) => return internal(e),
        Err(e) => return internal(e),
    };
    let saved = async {
        let mut tx = state.api.db.begin_write().await?;
        store::web::set_own_password(tx.conn(), &session.row.user_id, &hash).await?;
        store::web::delete_other_sessions(tx.conn(), &session.row.user_id, &session.id_hash)
            .await?;
        tx.commit().await
    }
    .await;
    if let Err(e) = saved {
        return internal(e);
    }
    let to = if session.company.is_some() {
        "/review"
    } else {
        "/companies"
    };
    redirect_with(&state, to, "ok", "Your password is saved.")
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
        if companies.iter().any(|c| c.id == wanted) {
            store::web::set_session_company(&mut conn, &post.session.id_hash, &wanted).await?;
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

/// Name of the cookie that carries an OpenID Connect sign-in in progress.
pub const OIDC_COOKIE: &str = "invoicing_oidc";

/// What the browser keeps between leaving for the provider and coming back.
#[derive(serde::Serialize, serde::Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    next: String,
}

/// `GET /login/oidc`: off to the identity provider, with state, nonce and PKCE.
pub async fn oidc_start(
    State(state): State<WebState>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let Some(oidc) = state.oidc.clone() else {
        return super::error_page(
            StatusCode::NOT_FOUND,
            "No identity provider",
            "This service has no identity provider configured; sign in with your e-mail and password.",
        );
    };
    let pending = Pending {
        state: random_token(),
        nonce: random_token(),
        verifier: random_token(),
        next: safe_next(q.get("next").map(String::as_str)),
    };
    let url = match oidc
        .authorize_url(
            &state.oidc_redirect_uri(),
            &pending.state,
            &pending.nonce,
            &pending.verifier,
        )
        .await
    {
        Ok(u) => u,
        Err(e) => {
            tracing::error!(error = %e, "OpenID Connect discovery failed");
            return super::error_page(
                StatusCode::BAD_GATEWAY,
                "The identity provider is not reachable",
                "Signing in through the identity provider is not possible right now. Try again \
                 later or sign in with a password; the operator's logs say why.",
            );
        }
    };
    let value = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        serde_json::to_vec(&pending).unwrap_or_default(),
    );
    let mut resp = Redirect::to(&url).into_response();
    if let Ok(v) = HeaderValue::from_str(&set_cookie(&state, OIDC_COOKIE, &value, 600)) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    resp
}

/// `GET /login/oidc/callback`: checks the state, exchanges the code, checks the ID
/// token, and signs in the member with that e-mail; an `invited` member becomes `oauth`.
pub async fn oidc_callback(
    State(state): State<WebState>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let refuse = |status: StatusCode, text: &str| {
        let mut resp = super::error_page(status, "Sign-in not completed", text);
        if let Ok(v) = HeaderValue::from_str(&set_cookie(&state, OIDC_COOKIE, "", 0)) {
            resp.headers_mut().append(header::SET_COOKIE, v);
        }
        resp
    };
    let Some(oidc) = state.oidc.clone() else {
        return refuse(
            StatusCode::NOT_FOUND,
            "This service has no identity provider configured.",
        );
    };
    if let Some(err) = q.get("error") {
        let detail = q.get("error_description").map_or("", String::as_str);
        return refuse(
            StatusCode::UNAUTHORIZED,
            &format!(
                "The identity provider did not sign you in ({err}{}{detail}).",
                if detail.is_empty() { "" } else { ": " }
            ),
        );
    }
    let pending: Option<Pending> = cookie(&headers, OIDC_COOKIE)
        .and_then(|v| {
            base64::Engine::decode(&base64::engine::general_purpose::URL_SAFE_NO_PAD, v).ok()
        })
        .and_then(|b| serde_json::from_slice(&b).ok());
    let (Some(pending), Some(code), Some(returned)) = (pending, q.get("code"), q.get("state"))
    else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "This sign-in was not started here, took longer than 10 minutes or was started in \
             another browser. Start again from the sign-in page.",
        );
    };
    if !same_secret(returned, &pending.state) {
        return refuse(
            StatusCode::BAD_REQUEST,
            "The answer of the identity provider does not belong to this sign-in (state \
             mismatch). Start again from the sign-in page.",
        );
    }
    let claims = match oidc
        .finish(
            code,
            &state.oidc_redirect_uri(),
            &pending.verifier,
            &pending.nonce,
        )
        .await
    {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(error = %e, "OpenID Connect sign-in refused");
            return refuse(
                StatusCode::UNAUTHORIZED,
                &format!("The identity provider's answer could not be accepted: {e}."),
            );
        }
    };
    let email = match (&claims.email, claims.email_verified) {
        (Some(e), Some(true) | None) => e.trim().to_lowercase(),
        _ => {
            return refuse(
                StatusCode::FORBIDDEN,
                "The identity provider did not give a verified e-mail address for your account.",
            );
        }
    };
    let now = store::now_micros();
    let signed = async {
        let mut tx = state.api.db.begin_write().await?;
        let Some(user) = store::users::find_by_email(tx.conn(), &email).await? else {
            return Ok(None);
        };
        let companies: Vec<_> = store::web::companies_of(tx.conn(), &user.id, now)
            .await?
            .into_iter()
            .filter(|c| c.kind == "oauth" || c.kind == "invited")
            .collect();
        if companies.is_empty() {
            return Ok(None);
        }
        let name = claims.name.clone().unwrap_or_default();
        store::members::record_oauth_sign_in(tx.conn(), &user.id, name.trim()).await?;
        let value = random_token();
        store::web::create_session(
            tx.conn(),
            &store::web::NewSession {
                id_hash: &store::hash_secret(&value),
                user_id: &user.id,
                company_id: (companies.len() == 1).then(|| companies[0].id.as_str()),
                csrf_token: &random_token(),
                now,
                expires_at: now + SESSION_HOURS * 3600 * 1_000_000,
            },
        )
        .await?;
        tx.commit().await?;
        Ok::<_, sqlx::Error>(Some((user.id, value)))
    }
    .await;
    match signed {
        Ok(Some((user_id, value))) => {
            tracing::info!(%user_id, "web sign-in through the identity provider");
            let mut resp = Redirect::to(&safe_next(Some(&pending.next))).into_response();
            for v in [
                set_cookie(&state, SESSION_COOKIE, &value, SESSION_HOURS * 3600),
                set_cookie(&state, OIDC_COOKIE, "", 0),
            ] {
                if let Ok(v) = HeaderValue::from_str(&v) {
                    resp.headers_mut().append(header::SET_COOKIE, v);
                }
            }
            resp
        }
        Ok(None) => refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "No company has added {email} as a member who signs in with the identity \
                 provider. Ask an owner of your company to add you (Members, \"The company's \
                 identity provider\")."
            ),
        ),
        Err(e) => internal(e),
    }
}
