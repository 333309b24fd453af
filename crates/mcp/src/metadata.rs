//! OAuth protected-resource metadata (RFC 9728): tells an MCP client which authorization
//! server signs it in for this MCP endpoint (the invoicing service's own, see docs/MCP.md).

use axum::{
    Json, Router,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
    routing::get,
};
use serde_json::json;

/// Where the metadata of the resource `resource` (the MCP endpoint's public URL) is served:
/// the origin, `/.well-known/oauth-protected-resource`, then the resource's path (RFC 9728
/// section 3.1).
pub fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = path.trim_end_matches('/');
    format!("{scheme}://{authority}/.well-known/oauth-protected-resource{path}")
}

/// The metadata routes, at `/.well-known/oauth-protected-resource` and with the resource's
/// path (`…/mcp`), with CORS so that browser-based clients (the Inspector) can read them.
pub fn routes(resource: &str, authorization_server: &str) -> Router {
    let body = json!({
        "resource": resource,
        "authorization_servers": [authorization_server],
        "bearer_methods_supported": ["header"],
        "resource_name": "Invoicing MCP server",
        "resource_documentation": format!("{authorization_server}/api/"),
    });
    let serve = move || {
        let body = body.clone();
        async move { cors(Json(body).into_response()) }
    };
    let preflight = || async { cors(StatusCode::NO_CONTENT.into_response()) };
    Router::new()
        .route(
            "/.well-known/oauth-protected-resource",
            get(serve.clone()).options(preflight),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*path}",
            get(serve).options(preflight),
        )
}

fn cors(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, OPTIONS"),
    );
    h.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type, Authorization, MCP-Protocol-Version"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_url_inserts_the_well_known_path_before_the_resource_path() {
        assert_eq!(
            metadata_url("http://127.0.0.1:8081/mcp"),
            "http://127.0.0.1:8081/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            metadata_url("https://mcp.example.com"),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
    }
}
