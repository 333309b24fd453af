//! `POST /oauth/register`: dynamic client registration (RFC 7591), public clients only.

use std::net::{IpAddr, SocketAddr};

use axum::{
    Extension, Json,
    body::Bytes,
    extract::{ConnectInfo, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde::Deserialize;
use serde_json::json;

use super::{cors, json_error, redirect_uri_allowed, server_error};
use crate::WebState;

/// Redirect URIs one client may register.
pub const MAX_REDIRECT_URIS: usize = 10;
/// Longest redirect URI, in bytes.
pub const MAX_REDIRECT_URI_LEN: usize = 2000;
/// Longest client name, in characters.
pub const MAX_NAME_CHARS: usize = 100;

const HOUR_MICROS: i64 = 3600 * 1_000_000;

/// The client metadata read (others are ignored, as RFC 7591 allows).
#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    redirect_uris: Vec<String>,
    client_name: Option<String>,
    token_endpoint_auth_method: Option<String>,
    grant_types: Option<Vec<String>>,
    response_types: Option<Vec<String>>,
}

fn invalid(error: &str, description: &str) -> Response {
    json_error(StatusCode::BAD_REQUEST, error, description)
}

/// Checks the metadata; the client's name and redirect URIs, or the error to answer.
fn check(body: &[u8]) -> Result<(String, Vec<String>), Response> {
    let meta: Metadata = serde_json::from_slice(body).map_err(|e| {
        invalid(
            "invalid_client_metadata",
            &format!("The body must be a JSON object of client metadata: {e}."),
        )
    })?;
    if meta.redirect_uris.is_empty() {
        return Err(invalid(
            "invalid_redirect_uri",
            "Give at least one redirect URI in `redirect_uris`.",
        ));
    }
    if meta.redirect_uris.len() > MAX_REDIRECT_URIS {
        return Err(invalid(
            "invalid_redirect_uri",
            &format!("Give at most {MAX_REDIRECT_URIS} redirect URIs."),
        ));
    }
    for uri in &meta.redirect_uris {
        if uri.len() > MAX_REDIRECT_URI_LEN {
            return Err(invalid(
                "invalid_redirect_uri",
                &format!("A redirect URI may have at most {MAX_REDIRECT_URI_LEN} characters."),
            ));
        }
        redirect_uri_allowed(uri).map_err(|why| invalid("invalid_redirect_uri", &why))?;
    }
    if let Some(method) = meta.token_endpoint_auth_method.as_deref()
        && method != "none"
    {
        return Err(invalid(
            "invalid_client_metadata",
            "Only public clients are registered: set `token_endpoint_auth_method` to `none` \
             (PKCE protects the code instead of a client secret).",
        ));
    }
    if let Some(grants) = &meta.grant_types
        && grants
            .iter()
            .any(|g| g != "authorization_code" && g != "refresh_token")
    {
        return Err(invalid(
            "invalid_client_metadata",
            "Only the `authorization_code` and `refresh_token` grant types are supported.",
        ));
    }
    if let Some(types) = &meta.response_types
        && types.iter().any(|t| t != "code")
    {
        return Err(invalid(
            "invalid_client_metadata",
            "Only the `code` response type is supported.",
        ));
    }
    let name = meta.client_name.as_deref().map(str::trim).unwrap_or("");
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(invalid(
            "invalid_client_metadata",
            &format!(
                "`client_name` must have at most {MAX_NAME_CHARS} characters and no control \
                 characters."
            ),
        ));
    }
    let name = if name.is_empty() {
        "Unnamed MCP client"
    } else {
        name
    };
    let mut uris = meta.redirect_uris;
    uris.dedup();
    Ok((name.to_owned(), uris))
}

/// The counter of registrations from one client address (a row of the sign-in attempts
/// table, keyed by a hash like the sign-in's counters).
fn address_key(client: Option<IpAddr>) -> String {
    let client = client.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
    store::hash_secret(&format!("oauth-register:{client}"))
}

/// `POST /oauth/register`.
pub async fn register(
    State(state): State<WebState>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (name, uris) = match check(&body) {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let peer = connect.map(|Extension(ConnectInfo(addr))| addr.ip());
    let key = address_key(state.trusted_proxies.client(peer, &headers));
    let now = state.api.now().timestamp_micros();
    let done = async {
        let mut tx = state.api.db.begin_write().await?;
        // One address first, then everyone: a single caller is stopped at its own share
        // and cannot use up the hour's registrations of every other client.
        let from_here =
            store::web::reserve_attempt(tx.conn(), &key, now, now - HOUR_MICROS).await?;
        let registered = if from_here > store::oauth::REGISTRATIONS_PER_ADDRESS_PER_HOUR {
            store::oauth::Registered::Refused
        } else {
            store::oauth::register(tx.conn(), &name, &uris, now).await?
        };
        tx.commit().await?;
        Ok::<_, sqlx::Error>(registered)
    }
    .await;
    let client = match done {
        Ok(store::oauth::Registered::Client(c)) => c,
        Ok(store::oauth::Registered::Refused) => {
            let mut resp = json_error(
                StatusCode::TOO_MANY_REQUESTS,
                "temporarily_unavailable",
                "Too many clients registered recently; try again in an hour.",
            );
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("3600"));
            return resp;
        }
        Err(e) => return server_error(e),
    };
    tracing::info!(client_id = %client.id, name = %client.name, "OAuth client registered");
    cors(
        (
            StatusCode::CREATED,
            Json(json!({
                "client_id": client.id,
                "client_id_issued_at": client.created_at / 1_000_000,
                "client_name": client.name,
                "redirect_uris": client.redirect_uris,
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
            })),
        )
            .into_response(),
    )
}
