//! Form posts: the origin and CSRF checks run before a handler sees a field.

use std::collections::HashMap;

use axum::{
    extract::{FromRequest, FromRequestParts, Request},
    http::StatusCode,
    response::Response,
};

use crate::{
    WebState,
    pages::error_page,
    session::{AnySession, Session, SignedIn, check_origin, forbidden_cross_site},
};

/// A urlencoded form post by a signed-in person with a company, CSRF-checked.
pub struct Post {
    pub session: Session,
    pub fields: HashMap<String, String>,
}

/// A form post by a signed-in person in any state (password change, company choice).
pub struct AnyPost {
    pub session: Session,
    pub fields: HashMap<String, String>,
}

impl Post {
    /// A trimmed field, empty when absent.
    pub fn field(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", |v| v.trim())
    }
}

impl AnyPost {
    /// A field as sent (passwords are not trimmed), empty when absent.
    pub fn raw(&self, name: &str) -> &str {
        self.fields.get(name).map_or("", String::as_str)
    }
}

/// Reads a urlencoded body into its fields.
/// A value with the NUL character is refused (no field needs it, and PostgreSQL
/// cannot store it).
pub async fn fields(req: Request, state: &WebState) -> Result<HashMap<String, String>, Response> {
    let fields = axum::Form::<HashMap<String, String>>::from_request(req, state)
        .await
        .map(|f| f.0)
        .map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                return error_page(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "This form is too large",
                    "The form sent more data than this page takes. Shorten what you entered \
                     and send it again.",
                );
            }
            error_page(
                StatusCode::BAD_REQUEST,
                "This form could not be read",
                &format!("The form data was not valid: {e}."),
            )
        })?;
    if fields
        .iter()
        .any(|(k, v)| k.contains('\0') || v.contains('\0'))
    {
        return Err(error_page(
            StatusCode::BAD_REQUEST,
            "This form could not be read",
            "A field contains the NUL character, which no field may contain.",
        ));
    }
    Ok(fields)
}

impl FromRequest<WebState> for Post {
    type Rejection = Response;

    async fn from_request(req: Request, state: &WebState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        check_origin(state, &parts.headers)?;
        let SignedIn(session) = SignedIn::from_request_parts(&mut parts, state).await?;
        let fields = fields(Request::from_parts(parts, body), state).await?;
        if !session.csrf_ok(fields.get("csrf").map(String::as_str)) {
            return Err(forbidden_cross_site());
        }
        Ok(Self { session, fields })
    }
}

impl FromRequest<WebState> for AnyPost {
    type Rejection = Response;

    async fn from_request(req: Request, state: &WebState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        check_origin(state, &parts.headers)?;
        let AnySession(session) = AnySession::from_request_parts(&mut parts, state).await?;
        let fields = fields(Request::from_parts(parts, body), state).await?;
        if !session.csrf_ok(fields.get("csrf").map(String::as_str)) {
            return Err(forbidden_cross_site());
        }
        Ok(Self { session, fields })
    }
}
