//! `GET /avatars/{id}`: the picture `profileImageUrl` points at for a user without one of
//! their own. Drawn from the id alone (a mirrored 5×5 pattern in a colour of its hash),
//! so it needs no authentication, reads nothing and tells nothing about the user.

use axum::{
    extract::Path,
    http::{StatusCode, header},
    response::{IntoResponse, Response},
};
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::{AppState, error::plain};

/// The avatar route (no authentication).
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(avatar))
}

/// The URL of the generated avatar of user `id` under the service's public URL.
pub fn url(public_url: &str, id: &str) -> String {
    format!("{}/avatars/{id}", public_url.trim_end_matches('/'))
}

/// A generated avatar.
#[utoipa::path(get, path = "/avatars/{id}", tag = "session", security(()),
    params(("id" = String, Path, description = "A user id")),
    responses(
        (status = 200, description = "An SVG picture drawn from the id", body = String, content_type = "image/svg+xml"),
        (status = 404, description = "Not a user id", body = String, content_type = "text/plain")))]
pub async fn avatar(Path(id): Path<String>) -> Response {
    if uuid::Uuid::parse_str(&id).is_err() {
        return plain(StatusCode::NOT_FOUND, "No such avatar.".into());
    }
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=86400"),
            // A picture, never a document that could run anything.
            (header::CONTENT_SECURITY_POLICY, "default-src 'none'"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        svg(&id),
    )
        .into_response()
}

/// The picture of `id`: SHA-256 of the id picks a hue and which cells of the left half
/// (mirrored to the right) are filled.
fn svg(id: &str) -> String {
    let hash = store::hash_secret(id);
    let bits: Vec<u8> = hash
        .as_bytes()
        .iter()
        .map(|c| char::from(*c).to_digit(16).map_or(0, |d| d as u8))
        .collect();
    let hue = (u32::from(bits[0]) << 4 | u32::from(bits[1])) * 360 / 256;
    let mut cells = String::new();
    for row in 0..5u8 {
        for col in 0..3u8 {
            let nibble = bits[usize::from(2 + row * 3 + col)];
            if nibble.is_multiple_of(2) {
                continue;
            }
            for x in [col, 4 - col] {
                cells.push_str(&format!(
                    "<rect x=\"{}\" y=\"{}\" width=\"1\" height=\"1\"/>",
                    x + 1,
                    row + 1
                ));
                if col == 2 {
                    break;
                }
            }
        }
    }
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 7 7\" width=\"70\" \
         height=\"70\" shape-rendering=\"crispEdges\"><rect width=\"7\" height=\"7\" \
         fill=\"#f2f2f2\"/><g fill=\"hsl({hue},55%,45%)\">{cells}</g></svg>\n"
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn avatars_differ_by_id_and_stay_the_same_for_one() {
        let a = "0190c0de-0000-7000-8000-000000000001";
        let b = "0190c0de-0000-7000-8000-000000000002";
        assert_eq!(super::svg(a), super::svg(a));
        assert_ne!(super::svg(a), super::svg(b));
        assert!(super::svg(a).starts_with("<svg "));
    }
}
