//! What the web app's plain-HTTP tests share: the first sign-in, following a
//! form's redirect, the flash message, the API as the bootstrap person, and
//! the three ways a form post without its CSRF protection is refused.

use serde_json::Value;

use super::{
    Server, WebFixture,
    browser::{Browser, Page},
    human_api,
};

/// Signs in and replaces the generated password; returns the page's CSRF token.
pub fn signed_in(fx: &WebFixture) -> (Browser, String) {
    let mut b = signed_in_with(&fx.server, fx.owner, &fx.password);
    let csrf = Browser::csrf(&b.get("/bank-accounts"));
    (b, csrf)
}

/// Signs `email` in with its generated `password` and replaces it, as a person's first
/// sign-in must.
pub fn signed_in_with(server: &Server, email: &str, password: &str) -> Browser {
    let mut b = Browser::new(&server.base);
    assert_eq!(b.sign_in(email, password).status, 303);
    let csrf = Browser::csrf(&b.get("/password"));
    let new_password = "a long and new passphrase";
    let changed = b.post(
        "/password",
        &[
            ("csrf", &csrf),
            ("current", password),
            ("new", new_password),
            ("confirm", new_password),
        ],
        None,
    );
    assert_eq!(changed.status, 303, "{}", changed.body);
    b
}

/// Follows a form's redirect: the page the person lands on, with its flash message.
pub fn landed(b: &mut Browser, answer: &Page) -> Page {
    assert_eq!(answer.status, 303, "a redirect: {}", answer.body);
    let page = b.get(&answer.location);
    assert_eq!(page.status, 200, "{}: {}", answer.location, page.body);
    page
}

/// The text of the page's flash message.
pub fn flash(page: &Page) -> String {
    let at = page
        .body
        .find("class=\"flash")
        .unwrap_or_else(|| panic!("no flash message in:\n{}", page.body));
    let rest = &page.body[at..];
    let start = rest.find('>').expect("tag end") + 1;
    let end = rest.find("</").expect("flash end");
    rest[start..end].to_owned()
}

/// The API as the bootstrap person; panics unless it answers 2xx.
pub fn api(server: &Server, method: &str, path: &str, body: Option<Value>) -> Value {
    let (status, answer) = human_api(server, method, path, body);
    assert!(
        (200..300).contains(&status),
        "{method} {path}: {status} {answer}"
    );
    answer
}

/// The status the API answers a `GET` of `path`.
pub fn status_of(server: &Server, path: &str) -> u16 {
    human_api(server, "GET", path, None).0
}

/// Posts `fields` without the token, with a wrong one and from another origin:
/// each is refused before anything runs.
pub fn refused_without_token(b: &mut Browser, csrf: &str, path: &str, fields: &[(&str, &str)]) {
    assert_eq!(
        b.post(path, fields, None).status,
        403,
        "{path} without its token"
    );
    let mut wrong = fields.to_vec();
    wrong.push(("csrf", "not-the-token"));
    assert_eq!(
        b.post(path, &wrong, None).status,
        403,
        "{path} with a wrong token"
    );
    let mut with = fields.to_vec();
    with.push(("csrf", csrf));
    assert_eq!(
        b.post(path, &with, Some("http://evil.example")).status,
        403,
        "{path} from another origin"
    );
}
