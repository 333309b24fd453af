//! Sign-in sessions and CSRF protection.
//!
//! The session cookie holds 32 random bytes; only their SHA-256 is stored, so a
//! database dump cannot be replayed as a session. Every form carries the
//! session's synchronizer token, compared in constant time; a POST without it,
//! or from another origin, is refused before anything runs. The sign-in form,
//! which has no session yet, carries a token the server signed (HMAC with the
//! service's secret key over a random nonce and an expiry), in a cookie and in
//! the form alike: a made-up pair is refused before any password is hashed.

use axum::{
    extract::{FromRequestParts, OptionalFromRequestParts},
    http::{HeaderMap, Method, StatusCode, header, request::Parts},
    response::{IntoResponse, Redirect, Response},
};
use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use rand::RngCore as _;
use subtle::ConstantTimeEq as _;

use crate::{WebState, pages::error_page};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "invoicing_session";
/// Name of the sign-in form's token cookie.
pub const LOGIN_CSRF_COOKIE: &str = "invoicing_login_csrf";
/// How long a sign-in form's token is good for, in seconds.
pub const LOGIN_FORM_SECS: i64 = 3600;
/// What the sign-in form's tokens are signed for (keeps them apart from other signatures).
const LOGIN_FORM_PURPOSE: &str = "web-sign-in-form";
/// Name of the one-shot message cookie shown after a redirect.
pub const FLASH_COOKIE: &str = "invoicing_flash";
/// How long a session lasts from sign-in (no sliding renewal).
pub const SESSION_HOURS: i64 = 12;

/// 32 random bytes from the OS, base64url.
pub fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A new sign-in form token, `{nonce}.{expires}.{signature}`: a random nonce and
/// an expiry (Unix seconds), signed with the service's secret key.
pub fn login_form_token(state: &WebState) -> String {
    let expires = state.api.now().timestamp() + LOGIN_FORM_SECS;
    let signed = format!("{}.{expires}", random_token());
    let signature = state
        .api
        .config
        .secret_key
        .sign_for(LOGIN_FORM_PURPOSE, &signed);
    format!("{signed}.{signature}")
}

/// Whether a sign-in post carries, in its cookie and in its form alike, a
/// token this service signed that has not expired.
pub fn login_form_token_ok(state: &WebState, cookie: Option<&str>, field: Option<&str>) -> bool {
    let (Some(cookie), Some(field)) = (cookie, field) else {
        return false;
    };
    if !same_secret(cookie, field) {
        return false;
    }
    let Some((signed, signature)) = cookie.rsplit_once('.') else {
        return false;
    };
    let Some(expires) = signed
        .split_once('.')
        .and_then(|(_, e)| e.parse::<i64>().ok())
    else {
        return false;
    };
    let expected = state
        .api
        .config
        .secret_key
        .sign_for(LOGIN_FORM_PURPOSE, signed);
    same_secret(&expected, signature) && state.api.now().timestamp() < expires
}

/// The value of cookie `name` in the request.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax, Path=/, Secure behind HTTPS.
pub fn set_cookie(state: &WebState, name: &str, value: &str, max_age_secs: i64) -> String {
    let secure = if state.secure_cookies { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}")
}

/// Constant-time equality of two secrets.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The `host[:port]` part of a URL.
fn authority(url: &str) -> &str {
    url.split_once("://")
        .map_or("", |(_, rest)| rest.split('/').next().unwrap_or(""))
}

/// Refuses a state-changing request whose `Origin` (or, lacking it, `Referer`)
/// names another site than this one: the `Host` it was sent to, or the public
/// URL (behind a reverse proxy that rewrites `Host`).
pub fn check_origin(state: &WebState, headers: &HeaderMap) -> Result<(), Response> {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let origin = headers
        .get(header::ORIGIN)
        .or_else(|| headers.get(header::REFERER))
        .and_then(|v| v.to_str().ok());
    let Some(origin) = origin else {
        return Ok(());
    };
    let from = authority(origin);
    let public = authority(&state.api.config.public_url);
    let same = |ours: &str| !ours.is_empty() && from.eq_ignore_ascii_case(ours);
    if same(host) || same(public) {
        Ok(())
    } else {
        Err(forbidden_cross_site())
    }
}

/// The answer to a form post that failed the CSRF checks.
pub fn forbidden_cross_site() -> Response {
    error_page(
        StatusCode::FORBIDDEN,
        "Request refused",
        "This form was not sent from this site's own page (its security token is missing or \
         wrong). Reload the page and try again.",
    )
}

/// The signed-in person of a request, with the company they work in.
#[derive(Clone)]
pub struct Session {
    /// Hash of the cookie value (the session's key in the database).
    pub id_hash: String,
    pub row: store::web::SessionRow,
    /// The company, checked to be one the person is still an active member of.
    pub company: Option<store::web::WebCompany>,
}

impl Session {
    /// The API caller this person acts as: a human, in the session's company.
    pub fn caller(&self) -> Option<api::auth::Caller> {
        let company = self.company.as_ref()?;
        Some(api::auth::Caller {
            company_id: company.id.clone(),
            user_id: self.row.user_id.clone(),
            token_id: format!("web-session:{}", &self.id_hash[..12]),
            kind: api::auth::CallerKind::Human,
            source: api::auth::Source::Api,
            language: api::auth::language_of(company.company_type.as_deref()),
        })
    }

    /// Whether `presented` is this session's CSRF token.
    pub fn csrf_ok(&self, presented: Option<&str>) -> bool {
        presented.is_some_and(|p| same_secret(p, &self.row.csrf_token))
    }
}

/// Loads the session named by the request's cookie, if it is live.
pub async fn load(state: &WebState, headers: &HeaderMap) -> Result<Option<Session>, Response> {
    let Some(value) = cookie(headers, SESSION_COOKIE) else {
        return Ok(None);
    };
    let id_hash = store::hash_secret(value);
    let now = store::now_micros();
    let mut conn = state.api.db.pool().acquire().await.map_err(internal)?;
    let Some(row) = store::web::get_session(&mut conn, &id_hash, now)
        .await
        .map_err(internal)?
    else {
        return Ok(None);
    };
    let companies = store::web::companies_of(&mut conn, &row.user_id, now)
        .await
        .map_err(internal)?;
    let company = row
        .company_id
        .as_ref()
        .and_then(|id| companies.iter().find(|c| &c.id == id).cloned());
    if companies.is_empty() {
        // No company left to work in: the session is over.
        store::web::delete_session(&mut conn, &id_hash)
            .await
            .map_err(internal)?;
        return Ok(None);
    }
    Ok(Some(Session {
        id_hash,
        row,
        company,
    }))
}

/// A 500 page for an unexpected failure (logged, never shown in detail).
pub fn internal(e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "web request failed");
    error_page(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "The service could not complete this page. Try again; if it keeps failing, the \
         operator's logs say why.",
    )
}

/// A signed-in person with a company, whose password needs no change: what
/// every page but sign-in needs. Anything else is redirected to the step missing.
/// On a POST the CSRF token is checked here too (see [`Form`](crate::forms)).
pub struct SignedIn(pub Session);

impl FromRequestParts<WebState> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, Response> {
        let session = load(state, &parts.headers).await?;
        let Some(session) = session else {
            if parts.method == Method::GET {
                let next = parts.uri.path_and_query().map_or("/", |p| p.as_str());
                return Err(
                    Redirect::to(&format!("/login?next={}", encode_next(next))).into_response()
                );
            }
            return Err(Redirect::to("/login").into_response());
        };
        if session.row.password_change_required == 1 {
            return Err(Redirect::to("/password").into_response());
        }
        if session.company.is_none() {
            return Err(Redirect::to("/companies").into_response());
        }
        Ok(Self(session))
    }
}

/// A live session in any state (for the password and company pages).
pub struct AnySession(pub Session);

impl FromRequestParts<WebState> for AnySession {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &WebState) -> Result<Self, Response> {
        match load(state, &parts.headers).await? {
            Some(s) => Ok(Self(s)),
            None => Err(Redirect::to("/login").into_response()),
        }
    }
}

impl OptionalFromRequestParts<WebState> for AnySession {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &WebState,
    ) -> Result<Option<Self>, Response> {
        Ok(load(state, &parts.headers).await?.map(Self))
    }
}

/// Percent-encodes a local path for the `next` parameter.
pub fn encode_next(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The local path to go to after sign-in: `/`, or a path that starts with one
/// `/` followed by neither `/` nor `\\` and has no control characters, also once
/// percent-decoded (browsers drop tabs and newlines, so `/\t/evil.example`
/// would lead to another host). Anything else becomes `/`. Characters outside
/// ASCII are percent-encoded, so the result is always a valid `Location`.
pub fn safe_next(next: Option<&str>) -> String {
    let Some(next) = next else {
        return "/".to_owned();
    };
    let decoded = percent_decode(next);
    let local = |p: &[u8]| {
        p == b"/"
            || (p.first() == Some(&b'/') && !matches!(p.get(1), None | Some(b'/') | Some(b'\\')))
    };
    let clean = |p: &[u8]| !p.iter().any(|b| b.is_ascii_control());
    if !(local(next.as_bytes()) && local(&decoded) && clean(next.as_bytes()) && clean(&decoded)) {
        return "/".to_owned();
    }
    next.bytes()
        .map(|b| {
            if b.is_ascii_graphic() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `%XX` sequences decoded to bytes (others left as they are), repeatedly, so
/// `%2509` is seen as the tab it becomes after two decodings.
fn percent_decode(s: &str) -> Vec<u8> {
    let mut current = s.as_bytes().to_vec();
    for _ in 0..4 {
        let mut out = Vec::with_capacity(current.len());
        let mut i = 0;
        while i < current.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            match (current[i], current.get(i + 1), current.get(i + 2)) {
                (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                    let (h, l) = (hex(h).unwrap_or(0), hex(l).unwrap_or(0));
                    out.push((h * 16 + l) as u8);
                    i += 3;
                }
                (b, _, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        if out == current {
            break;
        }
        current = out;
    }
    current
}
