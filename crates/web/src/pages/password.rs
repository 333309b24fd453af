//! Choosing one's own password: required after a generated one, possible any time.
//! The new password must pass [`crate::password_policy`].

use std::collections::HashMap;

use axum::{
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::Response,
};
use maud::html;

use super::{Flash, bare_page, login::busy, redirect_with, take_flash};
use crate::{
    WebState, forms::AnyPost, password_policy::MIN_CHARS as MIN_PASSWORD_CHARS,
    session::AnySession, session::internal, session::safe_next,
};

/// `GET /password`: choose a new password (required after a mailed one).
/// `next` (a local path, as the sign-in takes it) is where the person goes once the
/// password is saved: a forced change keeps the page asked for before sign-in.
pub async fn password_form(
    State(state): State<WebState>,
    AnySession(session): AnySession,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let next = q.get("next").map(String::as_str);
    password_page(&state, &session, next, take_flash(&headers), StatusCode::OK)
}

fn password_page(
    state: &WebState,
    session: &crate::session::Session,
    next: Option<&str>,
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
                @if let Some(next) = next { input type="hidden" name="next" value=(safe_next(Some(next))); }
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
    let next = post.fields.get("next").map(String::as_str);
    let refuse = |text: String| {
        password_page(
            &state,
            session,
            next,
            Some(Flash::error(&text)),
            StatusCode::BAD_REQUEST,
        )
    };
    let (current, new, confirm) = (post.raw("current"), post.raw("new"), post.raw("confirm"));
    if new != confirm {
        return refuse("The two new passwords differ.".into());
    }
    if new == current {
        return refuse("Choose a password different from the current one.".into());
    }
    let looked_up = async {
        let mut conn = state.api.db.pool().acquire().await?;
        let stored = store::web::password_hash(&mut conn, &session.row.user_id).await?;
        let companies =
            store::web::companies_of(&mut conn, &session.row.user_id, store::now_micros()).await?;
        Ok::<_, sqlx::Error>((stored, companies))
    }
    .await;
    let (stored, companies) = match looked_up {
        Ok((Some(h), companies)) => (h, companies),
        Ok((None, _)) => return refuse("This account signs in without a password.".into()),
        Err(e) => return internal(e),
    };
    let names: Vec<&str> = companies.iter().map(|c| c.name.as_str()).collect();
    if let Err(why) = crate::password_policy::check(new, &session.row.email, &names) {
        return refuse(why);
    }
    let hash = match state
        .hash_gate
        .verify_then_hash(current, &stored, new)
        .await
    {
        Ok(Some(h)) => h,
        Ok(None) => return refuse("The current password is wrong.".into()),
        Err(store::password::GateError::Busy) => {
            return busy(password_page(
                &state,
                session,
                next,
                Some(Flash::error(
                    "The service is checking many passwords right now. Try again in a few \
                     seconds.",
                )),
                StatusCode::SERVICE_UNAVAILABLE,
            ));
        }
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
    let to = match next {
        Some(next) => safe_next(Some(next)),
        None if session.company.is_some() => "/review".to_owned(),
        None => "/companies".to_owned(),
    };
    redirect_with(&state, &to, "ok", "Your password is saved.")
}
