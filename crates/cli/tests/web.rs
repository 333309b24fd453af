//! The web app, black-box, on SQLite and PostgreSQL: sign-in, sessions, CSRF
//! and throttling over plain HTTP, then the whole flow in a real browser
//! (`tests/web/e2e.mjs`, Debian's Chromium driven by playwright-core): an
//! invoice an agent asked for through MCP is approved, listed, downloaded as
//! PDF and issued; a token is created and revoked; a cross-site post is refused.
//! The review queue in the reader's language; the screenshots docs/WEB.md shows
//! (`tests/web/docs.mjs`, written to docs/web/ with INVOICING_UPDATE_DOCS_SCREENSHOTS=1).

mod common;

use std::{collections::HashMap, process::Command};

use common::{browser::Browser, *};
use serde_json::{Value, json};

const MCP_AGENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/web/mcp_agent.py");
const OWNER: &str = "owner@example.com";

fn sign_in_sessions_csrf_and_throttling(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp", "--email", OWNER]);
    let mut b = Browser::new(&server.base);

    // Nothing without a session; the page asked for is kept for after sign-in.
    let page = b.get("/review");
    assert_eq!(
        (page.status, page.location.as_str()),
        (303, "/login?next=/review")
    );
    assert_eq!(b.get("/").location, "/login");

    let password = admin_password(&db, OWNER);

    // Wrong password and unknown account read the same: no user enumeration.
    let wrong = b.sign_in(OWNER, "not-the-password");
    assert_eq!(wrong.status, 401, "{}", wrong.body);
    assert!(
        wrong.body.contains("Wrong e-mail or password."),
        "{}",
        wrong.body
    );
    let unknown = b.sign_in("nobody@example.com", "whatever-it-is");
    assert_eq!(unknown.status, 401);
    assert!(unknown.body.contains("Wrong e-mail or password."));
    assert!(!b.cookies.contains_key("invoicing_session"));

    // The sign-in form needs its signed token in the cookie as well as in the form.
    let form = b.get("/login");
    let csrf = Browser::csrf(&form);
    b.cookies.remove("invoicing_login_csrf");
    let forged = b.post(
        "/login",
        &[("csrf", &csrf), ("email", OWNER), ("password", &password)],
        None,
    );
    assert_eq!(forged.status, 403, "{}", forged.body);

    // Signing in: an HttpOnly, SameSite cookie; the generated password must be replaced first.
    let ok = b.sign_in(OWNER, &password);
    assert_eq!(
        (ok.status, ok.location.as_str()),
        (303, "/review"),
        "{}",
        ok.body
    );
    let cookie = ok
        .set_cookies
        .iter()
        .find(|c| c.starts_with("invoicing_session="))
        .expect("session cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert_eq!(b.get("/review").location, "/password");
    assert_eq!(b.get("/tokens").location, "/password");
    let form = b.get("/password");
    let csrf = Browser::csrf(&form);
    let short = b.post(
        "/password",
        &[
            ("csrf", &csrf),
            ("current", &password),
            ("new", "short"),
            ("confirm", "short"),
        ],
        None,
    );
    assert_eq!(short.status, 400);
    assert!(
        short.body.contains("at least 12 characters"),
        "{}",
        short.body
    );
    let new_password = "a long and new passphrase";
    let wrong_current = b.post(
        "/password",
        &[
            ("csrf", &csrf),
            ("current", "nope"),
            ("new", new_password),
            ("confirm", new_password),
        ],
        None,
    );
    assert_eq!(wrong_current.status, 400);
    assert!(wrong_current.body.contains("current password is wrong"));
    let changed = b.post(
        "/password",
        &[
            ("csrf", &csrf),
            ("current", &password),
            ("new", new_password),
            ("confirm", new_password),
        ],
        None,
    );
    assert_eq!(
        (changed.status, changed.location.as_str()),
        (303, "/review")
    );
    let review = b.get("/review");
    assert_eq!(review.status, 200);
    assert!(review.body.contains("Review queue") && review.body.contains("Nothing is waiting"));
    let csp = agent()
        .get(format!("{}/review", server.base))
        .call()
        .expect("GET");
    assert!(csp.headers().get("content-security-policy").is_some());

    // Every form post needs the session's CSRF token and this site's origin.
    let csrf = Browser::csrf(&review);
    let before = human_api(&server, "GET", "/v1/tokens", None).1["data"]
        .as_array()
        .map_or(0, Vec::len);
    let none = b.post(
        "/tokens",
        &[("description", "no token"), ("kind", "standard")],
        None,
    );
    assert_eq!(none.status, 403, "{}", none.body);
    let bad = b.post(
        "/tokens",
        &[("csrf", "forged"), ("description", "bad token")],
        None,
    );
    assert_eq!(bad.status, 403);
    let cross = b.post(
        "/tokens",
        &[
            ("csrf", &csrf),
            ("description", "cross-site"),
            ("kind", "standard"),
        ],
        Some("http://evil.example"),
    );
    assert_eq!(cross.status, 403);
    let after = human_api(&server, "GET", "/v1/tokens", None).1["data"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(before, after, "a refused post changes nothing");
    let made = b.post(
        "/tokens",
        &[
            ("csrf", &csrf),
            ("description", "from the web"),
            ("kind", "mcp"),
        ],
        Some(&server.base),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    assert!(made.body.contains("Token created: copy it now"));
    let listed = human_api(&server, "GET", "/v1/tokens", None).1;
    assert!(
        listed["data"]
            .as_array()
            .expect("tokens")
            .iter()
            .any(|t| t["description"] == "from the web" && t["kind"] == "mcp"),
        "{listed}"
    );

    // Signing out ends the session on the server, not just in the browser.
    let stolen = b.cookies.clone();
    let out = b.post("/logout", &[("csrf", &csrf)], None);
    assert_eq!((out.status, out.location.as_str()), (303, "/login"));
    b.cookies = stolen;
    assert_eq!(
        b.get("/review").status,
        303,
        "the old cookie no longer works"
    );

    // The old generated password no longer signs in; the chosen one does.
    assert_eq!(b.sign_in(OWNER, &password).status, 401);
    assert_eq!(b.sign_in(OWNER, new_password).status, 303);
    assert_eq!(
        b.get("/login").location,
        "/review",
        "signed in, the sign-in page moves on"
    );
    b.cookies.clear();

    // Failed sign-ins are throttled per account, even for the right password.
    for _ in 0..5 {
        assert_eq!(b.sign_in(OWNER, "guessing-wrong").status, 401);
    }
    let throttled = b.sign_in(OWNER, new_password);
    assert_eq!(throttled.status, 429, "{}", throttled.body);
    assert!(throttled.body.contains("Too many failed sign-ins"));

    // A deactivated member's session stops at once.
    let mut clerk = Browser::new(&server.base);
    let (status, _) = human_api(
        &server,
        "POST",
        "/v1/members",
        Some(json!({"email": "clerk@example.com", "kind": "password"})),
    );
    assert_eq!(status, 201);
    let clerk_password = admin_password(&db, "clerk@example.com");
    assert_eq!(
        clerk.sign_in("clerk@example.com", &clerk_password).status,
        303
    );
    assert_eq!(clerk.get("/password").status, 200);
    let (status, _) = human_api(
        &server,
        "POST",
        "/v1/members/clerk%40example.com/deactivate",
        None,
    );
    assert_eq!(status, 200);
    assert_eq!(clerk.get("/password").location, "/login");
}

/// Issue #27: the review page never loads a large held body; it shows its type and size
/// and a download link that serves the bytes as sent.
fn review_page_shows_large_bodies_by_size(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp", "--email", OWNER]);
    let mut b = Browser::new(&server.base);
    let password = admin_password(&db, OWNER);
    assert_eq!(b.sign_in(OWNER, &password).status, 303);
    let form = b.get("/password");
    let csrf = Browser::csrf(&form);
    let new_password = "a long and new passphrase";
    let changed = b.post(
        "/password",
        &[
            ("csrf", &csrf),
            ("current", &password),
            ("new", new_password),
            ("confirm", new_password),
        ],
        None,
    );
    assert_eq!(changed.status, 303, "{}", changed.body);

    let (status, supplier) = human_api(
        &server,
        "POST",
        "/v1/entities",
        Some(json!({"name": "Paper Supplier SL", "type": "ES:SL", "address": {"country": "ES"}})),
    );
    assert_eq!(status, 201, "{supplier}");
    let (status, expense) = human_api(
        &server,
        "POST",
        "/v1/expenses",
        Some(
            json!({"supplier_id": supplier["id"], "invoice_reference": "P-1",
            "lines": [{"concept": "Paper", "subtotal": 1200}]}),
        ),
    );
    assert_eq!(status, 201, "{expense}");
    // An agent (the owner's token without its proof) uploads a 3 MiB receipt: held.
    let mut pdf = b"%PDF-1.7\n".to_vec();
    pdf.extend(std::iter::repeat_n(b'q', 3 * 1024 * 1024 - pdf.len()));
    let token = server.bootstrap.as_ref().expect("bootstrap")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let mut resp = agent()
        .put(format!(
            "{}/v1/expenses/{}/receipt",
            server.base,
            expense["id"].as_str().expect("id")
        ))
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/pdf")
        .send(&pdf[..])
        .expect("PUT");
    assert_eq!(resp.status().as_u16(), 202);
    let held: Value =
        serde_json::from_str(&resp.body_mut().read_to_string().expect("body")).expect("JSON");
    let id = held["auditEntryId"].as_str().expect("entry id").to_owned();

    let review = b.get("/review");
    assert_eq!(review.status, 200);
    assert!(
        review.body.len() < 200_000,
        "the page carries the body: {} bytes",
        review.body.len()
    );
    assert!(
        review.body.contains("application/pdf") && review.body.contains("3.0 MiB"),
        "type and size are shown"
    );
    let link = format!("/review/{id}/body");
    assert!(review.body.contains(&link), "a download link");
    let download = b.get(&link);
    assert_eq!(download.status, 200);
    assert!(
        download.body.as_bytes() == pdf.as_slice(),
        "the bytes as sent"
    );
    assert!(server.stop().success());
}

/// Signs `email` in with the password `admin password` sets and replaces it.
fn signed_in_as(server: &Server, db: &TestDb, email: &str) -> Browser {
    common::web::signed_in_with(server, email, &admin_password(db, email))
}

/// Issue #33: the review queue writes amounts, days and times as the reader's
/// language does (the reports' formats), and keeps the fields in the order sent.
fn review_values_follow_the_persons_language(db: TestDb) {
    let server = Server::start(&db, &["serve", "--bootstrap", "--no-mcp", "--email", OWNER]);
    let (status, settled) = human_api(
        &server,
        "POST",
        "/v1/company/registration",
        Some(
            json!({"name": "Example Company Ltd", "fiscal_id": "IE6388047V",
            "email": "billing@example.com", "phone": "+353 1 555 0100", "address": {"lines": ["1 Main Street"], "zipcode": "D02 X285", "city": "Dublin", "country": "IE"}}),
        ),
    );
    assert_eq!(status, 200, "{settled}");
    let (status, member) = human_api(
        &server,
        "POST",
        "/v1/members",
        Some(
            json!({"email": "ana@example.com", "kind": "password", "language": "es_ES", "name": "Ana Ejemplo"}),
        ),
    );
    assert_eq!(status, 201, "{member}");
    let (status, customer) = human_api(
        &server,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Example Customer Ltd", "type": "IE:LTD", "currency_code": "EUR",
            "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(status, 201, "{customer}");
    // An agent (the owner's token without its proof) asks for an invoice: held for review.
    let token = server.bootstrap.as_ref().expect("bootstrap")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let body = json!({"recipient_id": customer["id"],
        "lines": [{"concept": "Consulting", "quantity": 10, "unit_price": 100_000}],
        "period_start": "2026-03-01", "period_end": "2026-03-31"});
    // Written by hand so the fields go in an order that is not alphabetical.
    let raw = format!(
        r#"{{"recipient_id": {}, "lines": {}, "period_start": "2026-03-01", "period_end": "2026-03-31"}}"#,
        body["recipient_id"], body["lines"]
    );
    let mut resp = agent()
        .post(format!("{}/v1/invoices", server.base))
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(raw.as_bytes())
        .expect("POST");
    assert_eq!(resp.status().as_u16(), 202, "held for review");
    let held: Value =
        serde_json::from_str(&resp.body_mut().read_to_string().expect("body")).expect("JSON");
    let entry = held["auditEntryId"].as_str().expect("entry id").to_owned();
    // When it was asked, as the API says it (`2026-01-31T14:05:09.123Z`).
    let (status, audit) = human_api(&server, "GET", &format!("/v1/ai-audit/{entry}"), None);
    assert_eq!(status, 200, "{audit}");
    let created = audit["createdAt"].as_str().expect("createdAt");
    let number =
        |range: std::ops::Range<usize>| -> usize { created[range].parse().expect("a date") };
    let (year, month, day, minute) = (number(0..4), number(5..7), number(8..10), &created[11..16]);
    let es_months = [
        "ene", "feb", "mar", "abr", "may", "jun", "jul", "ago", "sept", "oct", "nov", "dic",
    ];
    let en_months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let asked_es = format!("{day} {} {year}, {minute} UTC", es_months[month - 1]);
    let asked_en = format!("{} {day}, {year}, {minute} UTC", en_months[month - 1]);

    // 10 × 1,000.00 EUR with Irish VAT at 23 %: 12,300.00 EUR.
    let mut ana = signed_in_as(&server, &db, "ana@example.com");
    let es = ana.get("/review");
    let card = card_of(&es.body, &entry);
    assert!(
        card.contains("<strong>12.300,00 EUR</strong>"),
        "the total the Spanish way: {card}"
    );
    assert!(
        card.contains("1000,00 EUR"),
        "a unit price the Spanish way: {card}"
    );
    assert!(
        !card.contains("12,300.00") && !card.contains("1,000.00"),
        "{card}"
    );
    assert!(
        card.contains(">1 mar 2026</time>") && card.contains(">31 mar 2026</time>"),
        "{card}"
    );
    assert!(
        card.contains(&asked_es),
        "when it was asked, the Spanish way ({asked_es}): {card}"
    );
    let at = |k: &str| card.find(k).unwrap_or_else(|| panic!("{k} in {card}"));
    assert!(
        at(">Recipient<") < at(">Lines<") && at(">Lines<") < at(">Period start<"),
        "{card}"
    );
    assert!(
        at(">Period start<") < at(">Period end<"),
        "the order sent: {card}"
    );

    let mut owner = signed_in_as(&server, &db, OWNER);
    let en = owner.get("/review").body;
    let card = card_of(&en, &entry);
    assert!(
        card.contains("<strong>12,300.00 EUR</strong>"),
        "the total the English way: {card}"
    );
    assert!(card.contains("1,000.00 EUR"), "{card}");
    assert!(
        card.contains(">Mar 1, 2026</time>") && card.contains(">Mar 31, 2026</time>"),
        "{card}"
    );
    assert!(
        card.contains(&asked_en),
        "when it was asked, the English way ({asked_en}): {card}"
    );

    // Approved, the history says when in the reader's language too.
    let csrf = Browser::csrf(&es);
    let approved = ana.post(
        &format!("/review/{entry}/approve"),
        &[("csrf", &csrf)],
        None,
    );
    assert_eq!(approved.status, 303, "{}", approved.body);
    let history = ana.get("/review").body;
    let history = &history[history.find("id=\"history-h\"").expect("history")..];
    assert!(history.contains(&asked_es), "{history}");
    assert!(history.contains("Open invoice"), "{history}");
    assert!(server.stop().success());
}

/// The pending card of audit entry `id` on the review page.
fn card_of<'p>(page: &'p str, id: &str) -> &'p str {
    let start = page
        .find(&format!("id=\"entry-{id}\""))
        .unwrap_or_else(|| panic!("no card for {id} in:\n{page}"));
    let rest = &page[start..];
    &rest[..rest.find("</article>").unwrap_or(rest.len())]
}

#[test]
fn web_review_values_follow_the_persons_language_on_sqlite() {
    review_values_follow_the_persons_language(TestDb::sqlite());
}

#[test]
fn web_review_values_follow_the_persons_language_on_postgres() {
    review_values_follow_the_persons_language(TestDb::postgres());
}

#[test]
fn web_review_page_shows_large_bodies_by_size_on_sqlite() {
    review_page_shows_large_bodies_by_size(TestDb::sqlite());
}

#[test]
fn web_review_page_shows_large_bodies_by_size_on_postgres() {
    review_page_shows_large_bodies_by_size(TestDb::postgres());
}

#[test]
fn web_sign_in_sessions_csrf_and_throttling_on_sqlite() {
    sign_in_sessions_csrf_and_throttling(TestDb::sqlite());
}

#[test]
fn web_sign_in_sessions_csrf_and_throttling_on_postgres() {
    sign_in_sessions_csrf_and_throttling(TestDb::postgres());
}

fn in_a_browser(db: TestDb, name: &str) {
    let fx = WebFixture::start(&db);
    let boot = fx.server.bootstrap.clone().expect("bootstrap");
    let (status, customer) = human_api(
        &fx.server,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Browser Customer Ltd", "type": "IE:LTD", "fiscal_id": "IE6388047V", "address": {"lines": ["2 Quay St"], "city": "Dublin", "zipcode": "D01 F5P2", "country": "IE"}}),
        ),
    );
    assert_eq!(status, 201, "{customer}");
    let concept = "Agent-drafted consulting";
    let out = Command::new(python())
        .arg(MCP_AGENT)
        .arg(
            json!({"mcp": fx.server.mcp_url(), "token": boot["mcp_token"], "recipient_id": customer["id"], "concept": concept})
                .to_string(),
        )
        .output()
        .expect("run the MCP agent");
    assert!(
        out.status.success(),
        "the MCP agent failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    fx.run_script(
        "e2e.mjs",
        name,
        json!({"customer": "Browser Customer Ltd", "concept": concept}),
    );
}

/// The screenshots docs/WEB.md shows (`tests/web/docs.mjs`: demo data, six pages at
/// 1280x800). Every run saves them with the other screenshots; with
/// `INVOICING_UPDATE_DOCS_SCREENSHOTS=1` the SQLite run (one writer, so the two
/// engines never race) also writes them to docs/web/, which nothing else touches.
fn docs_screenshots(db: TestDb, name: &str, writes_docs: bool) {
    let fx = WebFixture::start(&db);
    let docs = (writes_docs
        && std::env::var("INVOICING_UPDATE_DOCS_SCREENSHOTS").as_deref() == Ok("1"))
    .then_some(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/web"));
    fx.run_script("docs.mjs", name, json!({"docsScreenshots": docs}));
}

#[test]
fn web_docs_screenshots_on_sqlite() {
    docs_screenshots(TestDb::sqlite(), "docs-sqlite", true);
}

#[test]
fn web_docs_screenshots_on_postgres() {
    docs_screenshots(TestDb::postgres(), "docs-postgres", false);
}

#[test]
fn web_in_a_browser_on_sqlite() {
    in_a_browser(TestDb::sqlite(), "sqlite");
}

#[test]
fn web_in_a_browser_on_postgres() {
    in_a_browser(TestDb::postgres(), "postgres");
}

/// A stand-in OpenID Connect provider: discovery, an authorization endpoint that
/// signs in whoever `email` names at once, and a token endpoint that checks the
/// PKCE verifier and answers an ID token signed with the client secret (HS256).
struct FakeProvider {
    base: String,
    email: std::sync::Arc<std::sync::Mutex<String>>,
    /// Sign ID tokens with another key than the client secret (a forged token).
    forge: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

const CLIENT_ID: &str = "invoicing-test";
const CLIENT_SECRET: &str = "a-client-secret-for-tests-only-0123456789";

impl FakeProvider {
    fn start() -> Self {
        use std::sync::{Arc, Mutex};

        use axum::{
            Form, Json, Router,
            extract::{Query, State},
            http::{StatusCode, header},
            response::IntoResponse,
            routing::{get, post},
        };

        /// What an authorization code was issued for: (nonce, PKCE challenge, e-mail).
        type Grant = (String, String, String);
        #[derive(Clone)]
        struct P {
            base: String,
            email: Arc<Mutex<String>>,
            forge: Arc<std::sync::atomic::AtomicBool>,
            codes: Arc<Mutex<HashMap<String, Grant>>>,
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let email = Arc::new(Mutex::new(String::new()));
        let forge = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let p = P {
            base: base.clone(),
            email: email.clone(),
            forge: forge.clone(),
            codes: Arc::default(),
        };
        async fn discovery(State(p): State<P>) -> Json<Value> {
            Json(json!({
                "issuer": p.base,
                "authorization_endpoint": format!("{}/authorize", p.base),
                "token_endpoint": format!("{}/token", p.base),
                "jwks_uri": format!("{}/jwks", p.base),
            }))
        }
        async fn authorize(
            State(p): State<P>,
            Query(q): Query<HashMap<String, String>>,
        ) -> axum::response::Response {
            if q.get("client_id").map(String::as_str) != Some(CLIENT_ID)
                || q.get("code_challenge_method").map(String::as_str) != Some("S256")
                || q.get("response_type").map(String::as_str) != Some("code")
            {
                return (StatusCode::BAD_REQUEST, "bad authorization request").into_response();
            }
            let code = uuid::Uuid::new_v4().to_string();
            let email = p.email.lock().expect("lock").clone();
            p.codes.lock().expect("lock").insert(
                code.clone(),
                (q["nonce"].clone(), q["code_challenge"].clone(), email),
            );
            let to = format!("{}?code={code}&state={}", q["redirect_uri"], q["state"]);
            (StatusCode::FOUND, [(header::LOCATION, to)]).into_response()
        }
        async fn token(
            State(p): State<P>,
            Form(f): Form<HashMap<String, String>>,
        ) -> axum::response::Response {
            use base64::Engine as _;
            use sha2::Digest as _;
            let Some((nonce, challenge, email)) = p.codes.lock().expect("lock").remove(&f["code"])
            else {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_grant"})),
                )
                    .into_response();
            };
            let verifier = f.get("code_verifier").cloned().unwrap_or_default();
            let computed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if computed != challenge {
                return (
                    StatusCode::BAD_REQUEST,
                    Json(json!({"error": "invalid_grant", "error_description": "PKCE"})),
                )
                    .into_response();
            }
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_secs();
            let claims = json!({
                "iss": p.base, "aud": CLIENT_ID, "sub": format!("sub-{email}"), "email": email,
                "email_verified": true, "name": "Single Sign-On Person", "nonce": nonce,
                "iat": now, "exp": now + 300,
            });
            let id_token = jsonwebtoken::encode(
                &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
                &claims,
                &jsonwebtoken::EncodingKey::from_secret(
                    if p.forge.load(std::sync::atomic::Ordering::SeqCst) {
                        b"not-the-client-secret".as_slice()
                    } else {
                        CLIENT_SECRET.as_bytes()
                    },
                ),
            )
            .expect("sign");
            Json(json!({"access_token": "x", "token_type": "Bearer", "id_token": id_token}))
                .into_response()
        }
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(p);
        std::thread::spawn(move || {
            block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                axum::serve(listener, app).await.expect("serve");
            });
        });
        Self { base, email, forge }
    }

    fn sign_in_as(&self, email: &str) {
        *self.email.lock().expect("lock") = email.to_owned();
    }
}

/// Starts a sign-in at the service, lets the provider answer, and returns the
/// callback path the browser is sent back to.
fn through_provider(b: &mut Browser, provider: &FakeProvider) -> String {
    let start = b.get("/login/oidc?next=/invoices");
    assert_eq!(start.status, 303, "{}", start.body);
    assert!(
        start
            .location
            .starts_with(&format!("{}/authorize?", provider.base)),
        "{}",
        start.location
    );
    let mut answer = b.agent.get(&start.location).call().expect("provider");
    assert_eq!(
        answer.status().as_u16(),
        302,
        "{}",
        answer.body_mut().read_to_string().unwrap_or_default()
    );
    let back = answer.headers()["location"]
        .to_str()
        .expect("location")
        .to_owned();
    back.strip_prefix(&b.base)
        .expect("back to the service")
        .to_owned()
}

fn oidc_sign_in(db: TestDb) {
    let provider = FakeProvider::start();
    let mut cmd = db.command(&["serve", "--bootstrap", "--no-mcp", "--email", OWNER]);
    cmd.env("INVOICING_OIDC_ISSUER", &provider.base)
        .env("INVOICING_OIDC_CLIENT_ID", CLIENT_ID)
        .env("INVOICING_OIDC_CLIENT_SECRET", CLIENT_SECRET);
    let server = Server::start_command(cmd);
    let (status, member) = human_api(
        &server,
        "POST",
        "/v1/members",
        Some(json!({"email": "sso@example.com", "kind": "oauth"})),
    );
    assert_eq!(status, 201, "{member}");
    assert_eq!(member["kind"], "invited");

    // The sign-in page offers the provider; the round trip signs the member in.
    let mut b = Browser::new(&server.base);
    assert!(
        b.get("/login")
            .body
            .contains("Sign in with your identity provider")
    );
    provider.sign_in_as("sso@example.com");
    let callback = through_provider(&mut b, &provider);
    let done = b.get(&callback);
    assert_eq!(
        (done.status, done.location.as_str()),
        (303, "/invoices"),
        "{}",
        done.body
    );
    assert_eq!(b.get("/invoices").status, 200);
    let members = human_api(&server, "GET", "/v1/members", None).1;
    let sso = members["data"]
        .as_array()
        .expect("members")
        .iter()
        .find(|m| m["email"] == "sso@example.com")
        .expect("the member")
        .clone();
    assert_eq!(
        sso["kind"], "oauth",
        "the first sign-in turns `invited` into `oauth`: {sso}"
    );
    assert_eq!(sso["name"], "Single Sign-On Person");

    // The same answer cannot be used twice (the flow cookie is gone).
    let replay = b.get(&callback);
    assert_eq!(replay.status, 400, "{}", replay.body);

    // An answer whose state is not this browser's is refused.
    let mut c = Browser::new(&server.base);
    let callback = through_provider(&mut c, &provider);
    let (path, _) = callback.split_once("&state=").expect("state");
    let forged = c.get(&format!("{path}&state=forged"));
    assert_eq!(forged.status, 400);
    assert!(forged.body.contains("state mismatch"), "{}", forged.body);
    assert!(!c.cookies.contains_key("invoicing_session"));

    // An ID token not signed with the client's key is refused.
    provider
        .forge
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let mut e = Browser::new(&server.base);
    let callback = through_provider(&mut e, &provider);
    let bad = e.get(&callback);
    assert_eq!(bad.status, 401, "{}", bad.body);
    assert!(bad.body.contains("ID token is not valid"), "{}", bad.body);
    assert!(!e.cookies.contains_key("invoicing_session"));
    provider
        .forge
        .store(false, std::sync::atomic::Ordering::SeqCst);

    // Someone no company added, and a password member, are not let in this way.
    for email in ["stranger@example.com", OWNER] {
        provider.sign_in_as(email);
        let mut d = Browser::new(&server.base);
        let callback = through_provider(&mut d, &provider);
        let refused = d.get(&callback);
        assert_eq!(refused.status, 403, "{email}: {}", refused.body);
        assert!(
            refused.body.contains("No company has added"),
            "{}",
            refused.body
        );
        assert!(!d.cookies.contains_key("invoicing_session"));
    }
}

#[test]
fn web_oidc_sign_in_on_sqlite() {
    oidc_sign_in(TestDb::sqlite());
}

#[test]
fn web_oidc_sign_in_on_postgres() {
    oidc_sign_in(TestDb::postgres());
}

/// Behind a reverse proxy the public URL is HTTPS and `Host` may be rewritten:
/// cookies are `Secure`, and a form sent from the public origin is accepted.
/// With the proxy trusted, failed sign-ins count per forwarded client address.
fn behind_a_proxy(db: TestDb) {
    let mut cmd = db.command(&["serve", "--bootstrap", "--no-mcp", "--email", OWNER]);
    cmd.env("INVOICING_PUBLIC_URL", "https://invoicing.example")
        .env("INVOICING_TRUSTED_PROXIES", "127.0.0.0/8, ::1");
    let server = Server::start_command(cmd);
    let password = admin_password(&db, OWNER);
    let mut guesser = Browser::new(&server.base);
    guesser.forwarded_for = Some("203.0.113.5".into());
    for _ in 0..5 {
        assert_eq!(guesser.sign_in(OWNER, "guessing-wrong").status, 401);
    }
    assert_eq!(guesser.sign_in(OWNER, &password).status, 429);
    let mut colleague = Browser::new(&server.base);
    colleague.forwarded_for = Some("203.0.113.6".into());
    assert_eq!(colleague.sign_in(OWNER, &password).status, 303);
    let mut b = Browser::new(&server.base);
    let form = b.get("/login");
    let csrf = Browser::csrf(&form);
    let ok = b.post(
        "/login",
        &[("csrf", &csrf), ("email", OWNER), ("password", &password)],
        Some("https://invoicing.example"),
    );
    assert_eq!(ok.status, 303, "{}", ok.body);
    let cookie = ok
        .set_cookies
        .iter()
        .find(|c| c.starts_with("invoicing_session="))
        .expect("session cookie");
    assert!(cookie.contains("; Secure"), "{cookie}");
    let form = b.get("/password");
    let csrf = Browser::csrf(&form);
    let elsewhere = b.post(
        "/password",
        &[
            ("csrf", &csrf),
            ("current", &password),
            ("new", "x"),
            ("confirm", "x"),
        ],
        Some("https://invoicing.example.evil.test"),
    );
    assert_eq!(elsewhere.status, 403);
}

#[test]
fn web_behind_a_proxy_uses_the_public_url_on_sqlite() {
    behind_a_proxy(TestDb::sqlite());
}

#[test]
fn web_behind_a_proxy_uses_the_public_url_on_postgres() {
    behind_a_proxy(TestDb::postgres());
}
