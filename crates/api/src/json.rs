//! JSON request bodies that fail with a 400 naming the offending field.

use axum::{
    body::Bytes,
    extract::{FromRequest, Request},
};
use serde::de::DeserializeOwned;

use crate::error::ApiError;

/// Largest JSON body accepted, in bytes (1 MiB); larger ones get a 413.
pub const MAX_JSON_BODY: usize = 1024 * 1024;

/// A JSON body parsed into `T`; the error says which field is wrong and why.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(ct) = req.headers().get(axum::http::header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
            if !ct.starts_with("application/json") && !ct.contains("+json") {
                return Err(ApiError::bad_request(format!(
                    "The request body must be JSON (Content-Type: application/json), not `{ct}`."
                )));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge(format!(
                    "The request body is larger than {} KiB.",
                    MAX_JSON_BODY / 1024
                ))
            } else {
                ApiError::bad_request(format!("The request body could not be read: {e}"))
            }
        })?;
        parse(&bytes).map(ApiJson)
    }
}

/// Parses JSON bytes (an empty body counts as `{}`), naming the failing field: a 400.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    decode(bytes).map_err(ApiError::bad_request)
}

/// Parses JSON bytes as [`parse`] does; the error is the message saying what to fix, for
/// callers outside HTTP (the workflows answer it as invalid input).
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        bytes
    };
    reject_nul(bytes)?;
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let msg = inner.to_string();
        // serde_json appends " at line L column C"; the field path is clearer.
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
        if inner.is_syntax() || inner.is_eof() {
            format!("The request body is not valid JSON: {msg}.")
        } else if path == "." {
            format!("Invalid request body: {msg}.")
        } else {
            format!("Invalid field `{path}`: {msg}.")
        }
    })
}

/// Refuses text with the NUL character (`\u0000`): PostgreSQL cannot store it
/// in text columns, and no invoice field needs it. Cheap: the JSON is walked
/// only when the raw bytes contain the escape.
fn reject_nul(bytes: &[u8]) -> Result<(), String> {
    const ESCAPE: &[u8] = b"\\u0000";
    if !bytes.windows(ESCAPE.len()).any(|w| w == ESCAPE) {
        return Ok(());
    }
    fn find(v: &serde_json::Value, path: &mut Vec<String>) -> bool {
        match v {
            serde_json::Value::String(s) => s.contains('\0'),
            serde_json::Value::Array(items) => items.iter().enumerate().any(|(i, item)| {
                path.push(format!("[{i}]"));
                let found = find(item, path);
                if !found {
                    path.pop();
                }
                found
            }),
            serde_json::Value::Object(map) => map.iter().any(|(k, item)| {
                path.push(if path.is_empty() {
                    k.clone()
                } else {
                    format!(".{k}")
                });
                let found = k.contains('\0') || find(item, path);
                if !found {
                    path.pop();
                }
                found
            }),
            _ => false,
        }
    }
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) else {
        return Ok(()); // the typed parse reports the syntax error
    };
    let mut path = Vec::new();
    if find(&value, &mut path) {
        let at = if path.is_empty() {
            ".".to_owned()
        } else {
            path.concat()
        };
        return Err(format!(
            "Invalid field `{at}`: text may not contain the NUL character (\\u0000)."
        ));
    }
    Ok(())
}

/// Deserializes a field that may be absent (outer `None`) or explicitly null (`Some(None)`).
pub fn double_option<'de, D, T>(de: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    serde::Deserialize::deserialize(de).map(Some)
}
