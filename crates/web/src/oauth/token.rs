//! `POST /oauth/token`: the authorization-code and refresh-token grants (RFC 6749),
//! answering errors as RFC 6749 JSON (the one exception to the service's plain-text 400s).

use std::collections::HashMap;

use axum::{
    Form, Json,
    extract::{State, rejection::FormRejection},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

use super::{cors, json_error, pkce_ok, server_error};
use crate::WebState;

fn invalid_grant(why: &str) -> Response {
    json_error(StatusCode::BAD_REQUEST, "invalid_grant", why)
}

fn invalid_request(why: &str) -> Response {
    json_error(StatusCode::BAD_REQUEST, "invalid_request", why)
}

/// `POST /oauth/token` (form-urlencoded, as RFC 6749 says).
pub async fn token(
    State(state): State<WebState>,
    form: Result<Form<HashMap<String, String>>, FormRejection>,
) -> Response {
    let fields = match form {
        Ok(Form(f)) => f,
        Err(e) => {
            return invalid_request(&format!(
                "The body must be application/x-www-form-urlencoded fields: {e}."
            ));
        }
    };
    let get = |k: &str| fields.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let Some(client_id) = get("client_id") else {
        return json_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "Send the client_id this client registered with.",
        );
    };
    let now = state.api.now().timestamp_micros();
    let issued = match get("grant_type") {
        Some("authorization_code") => code_grant(&state, &fields, client_id, now).await,
        Some("refresh_token") => {
            let Some(refresh) = get("refresh_token") else {
                return invalid_request("Send the refresh_token.");
            };
            refresh_grant(&state, refresh, client_id, now).await
        }
        Some(_) => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "Use grant_type authorization_code or refresh_token.",
            );
        }
        None => return invalid_request("Send a grant_type."),
    };
    match issued {
        Ok(i) => {
            tracing::info!(token_id = %i.token_id, grant_id = %i.grant_id, "OAuth token issued");
            let mut resp = cors(
                Json(json!({
                    "access_token": i.access_token,
                    "token_type": "Bearer",
                    "expires_in": store::oauth::ACCESS_TOKEN_SECS,
                    "refresh_token": i.refresh_token,
                }))
                .into_response(),
            );
            resp.headers_mut()
                .insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
            resp
        }
        Err(resp) => resp,
    }
}

/// Exchanges a code: once, by its client, with its redirect URI and PKCE verifier. The
/// code is spent whatever the outcome; presenting it again revokes what it issued.
async fn code_grant(
    state: &WebState,
    fields: &HashMap<String, String>,
    client_id: &str,
    now: i64,
) -> Result<store::oauth::Issued, Response> {
    let get = |k: &str| fields.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let (Some(code), Some(verifier)) = (get("code"), get("code_verifier")) else {
        return Err(invalid_request(
            "Send the code and the PKCE code_verifier (PKCE is required).",
        ));
    };
    let mut tx = state.api.db.begin_write().await.map_err(server_error)?;
    let taken = store::oauth::take_code(tx.conn(), &store::hash_secret(code), now)
        .await
        .map_err(server_error)?;
    let refusal = match taken {
        store::oauth::Taken::Fresh(row) => {
            let why = if row.client_id != client_id {
                Some("The code was issued to another client.")
            } else if get("redirect_uri").is_some_and(|r| r != row.redirect_uri) {
                Some("The redirect_uri differs from the one of the authorization request.")
            } else if !pkce_ok(verifier, &row.code_challenge) {
                Some("The code_verifier does not match the code_challenge.")
            } else if get("resource")
                .zip(row.resource.as_deref())
                .is_some_and(|(a, b)| a.trim_end_matches('/') != b.trim_end_matches('/'))
            {
                Some("The resource differs from the one of the authorization request.")
            } else {
                None
            };
            match why {
                Some(why) => why,
                None => {
                    let client = store::oauth::client(tx.conn(), client_id)
                        .await
                        .map_err(server_error)?;
                    let name = client.map_or_else(|| "MCP client".to_owned(), |c| c.name);
                    let issued = store::oauth::grant(tx.conn(), &row, &name, now)
                        .await
                        .map_err(server_error)?;
                    tx.commit().await.map_err(server_error)?;
                    return Ok(issued);
                }
            }
        }
        store::oauth::Taken::Invalid => "The code is unknown or expired (codes last 60 seconds).",
        store::oauth::Taken::Reused => {
            tracing::warn!(
                client_id,
                "an OAuth code was presented twice: what it issued is revoked"
            );
            "The code was already used; the tokens issued for it are revoked now."
        }
    };
    // The spent code (and a revocation) stays spent.
    tx.commit().await.map_err(server_error)?;
    Err(invalid_grant(refusal))
}

/// Rotates a refresh token: a new access token and a new refresh token.
async fn refresh_grant(
    state: &WebState,
    refresh: &str,
    client_id: &str,
    now: i64,
) -> Result<store::oauth::Issued, Response> {
    let mut tx = state.api.db.begin_write().await.map_err(server_error)?;
    let issued = store::oauth::refresh(tx.conn(), &store::hash_secret(refresh), client_id, now)
        .await
        .map_err(server_error)?;
    tx.commit().await.map_err(server_error)?;
    issued.ok_or_else(|| {
        invalid_grant(
            "The refresh token is unknown, expired, revoked or of another client: sign in again.",
        )
    })
}
