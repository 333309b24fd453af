//! The stylesheet and script, embedded in the binary (nothing is loaded from elsewhere).

use axum::{
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};

const CSS: &str = include_str!("../../assets/app.css");
const JS: &str = include_str!("../../assets/app.js");
const FAVICON: &str = include_str!("../../assets/favicon.svg");

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    resp
}

/// `GET /assets/app.css`.
pub async fn css() -> Response {
    asset(CSS, "text/css; charset=utf-8")
}

/// `GET /assets/app.js`.
pub async fn js() -> Response {
    asset(JS, "text/javascript; charset=utf-8")
}

/// `GET /assets/favicon.svg` (and `/favicon.ico`, which browsers ask for unprompted).
pub async fn favicon() -> Response {
    asset(FAVICON, "image/svg+xml")
}
