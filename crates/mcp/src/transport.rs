//! What the Streamable HTTP transport requires of a request before rmcp sees it.
//!
//! rmcp answers a POST whose body is not JSON with `415 Unsupported Media Type`, which
//! tells a client its `Content-Type` is wrong when the body is. The transport
//! specification asks for `400 Bad Request` with a JSON-RPC error and no id: `-32700`
//! (parse error) for a body that is not JSON, `-32600` (invalid request) for JSON that is
//! not a JSON-RPC message. [`check_body`] reads the body once (bounded), answers those
//! itself, and hands the same bytes on.

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{Method, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};
use rmcp::model::ClientJsonRpcMessage;
use serde_json::json;

/// Largest MCP request body accepted (tool arguments are small; rmcp's own limit is 4 MiB).
pub const MAX_BODY: usize = 1024 * 1024;

/// A JSON-RPC error answer with no id, as `400 Bad Request`.
fn jsonrpc_error(code: i64, message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        format!(
            "{}\n",
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}})
        ),
    )
        .into_response()
}

/// Refuses a POST body that is not a JSON-RPC message with a JSON-RPC error; passes
/// every other request on unchanged.
pub async fn check_body(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let bytes: Bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!(
                    "An MCP request body may be at most {} KiB.\n",
                    MAX_BODY / 1024
                ),
            )
                .into_response();
        }
    };
    let value: serde_json::Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return jsonrpc_error(
                -32700,
                format!("Parse error: the request body is not JSON ({e})."),
            );
        }
    };
    if let Err(e) = serde_json::from_value::<ClientJsonRpcMessage>(value) {
        return jsonrpc_error(
            -32600,
            format!(
                "Invalid request: the body is JSON but not a JSON-RPC 2.0 request, \
                 notification or response an MCP client sends ({e})."
            ),
        );
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
