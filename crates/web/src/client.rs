//! Calls into the `/v1` API in process, as the signed-in person.

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, Method, Request, StatusCode, header},
    response::Response,
};
use http_body_util::BodyExt as _;
use serde_json::Value;

use crate::{
    WebState,
    session::{Session, internal},
};

/// Largest API answer the web app reads (a PDF of a long invoice fits).
const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// What the API answered.
pub struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub bytes: Bytes,
}

impl Answer {
    /// Whether the API accepted the request (2xx).
    pub fn ok(&self) -> bool {
        self.status.is_success()
    }

    /// The body as JSON (`null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// What went wrong, in the API's words: its `message`, else its text.
    pub fn message(&self) -> String {
        match self.json().get("message").and_then(Value::as_str) {
            Some(m) => m.to_owned(),
            None => {
                let text = String::from_utf8_lossy(&self.bytes).trim().to_owned();
                if text.is_empty() {
                    format!("The request failed ({}).", self.status)
                } else {
                    text
                }
            }
        }
    }
}

/// Sends a request with an optional JSON body.
pub async fn call(
    state: &WebState,
    session: &Session,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Answer, Response> {
    let (content_type, bytes) = match body {
        Some(v) => ("application/json", Bytes::from(v.to_string())),
        None => ("application/json", Bytes::new()),
    };
    call_raw(state, session, method, path, content_type, bytes).await
}

/// Sends a request with a raw body of the given type.
pub async fn call_raw(
    state: &WebState,
    session: &Session,
    method: Method,
    path: &str,
    content_type: &str,
    bytes: Bytes,
) -> Result<Answer, Response> {
    let caller = session
        .caller()
        .ok_or_else(|| internal("a page called the API before a company was chosen"))?;
    let mut builder = Request::builder().method(method).uri(path);
    if !bytes.is_empty() {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    let req = builder.body(Body::from(bytes)).map_err(internal)?;
    let resp = api::call_as(&state.api, caller, req)
        .await
        .map_err(|e| internal(format!("{e:?}")))?;
    let (parts, body) = resp.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_ANSWER);
    let bytes = limited.collect().await.map_err(internal)?.to_bytes();
    Ok(Answer {
        status: parts.status,
        headers: parts.headers,
        bytes,
    })
}

/// GETs JSON, turning any failure into an error page.
pub async fn get_json(state: &WebState, session: &Session, path: &str) -> Result<Value, Response> {
    let answer = call(state, session, Method::GET, path, None).await?;
    if answer.ok() {
        Ok(answer.json())
    } else {
        Err(crate::pages::error_page(
            answer.status,
            "Not available",
            &answer.message(),
        ))
    }
}

/// Percent-encodes a path segment or query value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One page of an API list: its rows and the cursor of the next page, if there is one.
pub struct ListPage {
    pub rows: Vec<Value>,
    pub next: Option<String>,
}

/// `GET path` (a list path with its `limit` and filters), at `cursor` when one is given:
/// the list pages' one way to read a page of rows. A refusal is the error page.
pub async fn list_page(
    state: &WebState,
    session: &Session,
    path: &str,
    cursor: &str,
) -> Result<ListPage, Response> {
    let path = if cursor.is_empty() {
        path.to_owned()
    } else {
        format!("{path}&cursor={}", enc(cursor))
    };
    let page = get_json(state, session, &path).await?;
    Ok(ListPage {
        rows: page["data"].as_array().cloned().unwrap_or_default(),
        next: page["next_cursor"].as_str().map(str::to_owned),
    })
}
