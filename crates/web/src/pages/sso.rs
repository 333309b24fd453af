//! Sign-in through the company's OpenID Connect provider (docs/WEB.md).

use std::collections::HashMap;

use axum::{
    extract::{Query, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};

use crate::{
    WebState,
    session::{
        SESSION_COOKIE, SESSION_HOURS, cookie, internal, random_token, safe_next, same_secret,
        set_cookie,
    },
};

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
