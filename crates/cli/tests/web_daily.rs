//! The web app for daily work (customers, writing and issuing invoices,
//! payments, sending), black-box on SQLite and PostgreSQL: in Chromium
//! (`tests/web/daily.mjs`), and over plain HTTP for what a browser hides:
//! every new form refuses a post without its CSRF token or from another
//! origin and writes nothing, user text is escaped, unknown pages are HTML
//! while unknown API paths keep the API's plain-text answer.

mod common;

use common::{web::signed_in, *};
use serde_json::json;

fn daily_work_in_a_browser(db: TestDb, name: &str) {
    let fx = WebFixture::start(&db);
    fx.run_script("daily.mjs", name, json!({}));
}

#[test]
fn web_daily_work_in_a_browser_on_sqlite() {
    daily_work_in_a_browser(TestDb::sqlite(), "daily-sqlite");
}

#[test]
fn web_daily_work_in_a_browser_on_postgres() {
    daily_work_in_a_browser(TestDb::postgres(), "daily-postgres");
}

fn count(server: &Server, path: &str) -> usize {
    let (status, page) = human_api(server, "GET", path, None);
    assert_eq!(status, 200, "{page}");
    page["data"].as_array().expect("a list").len()
}

fn forms_csrf_and_escaping(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    let evil = "<script>alert(1)</script> & Co";
    let customer = [
        ("name", evil),
        ("type", "IE:LTD"),
        ("country", "IE"),
        ("lines", "1 Quay St\n<img src=x onerror=alert(1)>"),
    ];

    // Without the token, with a wrong one, or from another origin: refused, nothing written.
    let mut no_token: Vec<(&str, &str)> = customer.to_vec();
    let refused = b.post("/entities", &no_token, None);
    assert_eq!(refused.status, 403, "{}", refused.body);
    no_token.push(("csrf", "not-the-token"));
    assert_eq!(b.post("/entities", &no_token, None).status, 403);
    let mut with_token: Vec<(&str, &str)> = customer.to_vec();
    with_token.push(("csrf", &csrf));
    let cross = b.post("/entities", &with_token, Some("http://evil.example"));
    assert_eq!(cross.status, 403);
    assert_eq!(count(server, "/v1/entities"), 0, "nothing was created");

    // With it: created, and shown escaped everywhere.
    let created = b.post("/entities", &with_token, None);
    assert_eq!(created.status, 303, "{}", created.body);
    let (_, list) = human_api(server, "GET", "/v1/entities", None);
    let id = list["data"][0]["id"].as_str().expect("id").to_owned();
    assert_eq!(list["data"][0]["name"], evil, "stored as typed");
    for path in [
        "/entities".to_owned(),
        format!("/entities/{id}"),
        format!("/entities/{id}/delete"),
        "/entities?q=%3Cscript%3E".to_owned(),
        format!("/invoices/new?recipient={id}"),
    ] {
        let page = b.get(&path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert!(
            !page.body.contains("<script>alert") && !page.body.contains("<img src=x"),
            "{path} shows user text as text: {}",
            page.body
        );
        assert!(
            page.body.contains("&lt;script&gt;"),
            "{path}: {}",
            page.body
        );
    }

    // Every other new form is CSRF-checked the same way.
    let (status, draft) = human_api(
        server,
        "POST",
        "/v1/invoices",
        Some(json!({"recipient_id": id, "lines": [{"concept": "Work", "unit_price": 1000}]})),
    );
    assert_eq!(status, 201, "{draft}");
    let inv = draft["id"].as_str().expect("id").to_owned();
    let forms: Vec<(String, Vec<(&str, &str)>)> = vec![
        (format!("/entities/{id}"), customer.to_vec()),
        (format!("/entities/{id}/delete"), vec![]),
        (
            "/invoices/new".into(),
            vec![("recipient_id", &id), ("concept_0", "X")],
        ),
        (
            "/invoices/preview".into(),
            vec![("recipient_id", &id), ("concept_0", "X")],
        ),
        (
            format!("/invoices/{inv}/edit"),
            vec![("recipient_id", &id), ("concept_0", "Y")],
        ),
        (format!("/invoices/{inv}/issue"), vec![]),
        (format!("/invoices/{inv}/payments"), vec![("amount", "1")]),
        (format!("/invoices/{inv}/send"), vec![]),
        (format!("/invoices/{inv}/correct"), vec![]),
    ];
    for (path, fields) in &forms {
        assert_eq!(
            b.post(path, fields, None).status,
            403,
            "{path} without its token"
        );
        let mut with: Vec<(&str, &str)> = fields.clone();
        with.push(("csrf", &csrf));
        assert_eq!(
            b.post(path, &with, Some("http://evil.example")).status,
            403,
            "{path} from another origin"
        );
    }
    assert_eq!(count(server, "/v1/entities"), 1, "not deleted");
    assert_eq!(count(server, "/v1/invoices"), 1, "no new draft");
    let (_, still) = human_api(server, "GET", &format!("/v1/invoices/{inv}"), None);
    assert_eq!(still["status"], "draft", "not issued");
    assert_eq!(still["lines"][0]["concept"], "Work", "not changed");

    // The expense forms: the urlencoded ones and the multipart uploads alike.
    let (status, expense) = human_api(
        server,
        "POST",
        "/v1/expenses",
        Some(
            json!({"supplier_id": id, "invoice_reference": "<b>R-1</b>", "category": "office",
            "lines": [{"concept": "Paper", "subtotal": 1000}]}),
        ),
    );
    assert_eq!(status, 201, "{expense}");
    let exp = expense["id"].as_str().expect("id").to_owned();
    let expense_form = vec![
        ("supplier_id", id.as_str()),
        ("invoice_reference", "R-2"),
        ("net", "5"),
    ];
    for path in ["/expenses".to_owned(), format!("/expenses/{exp}")] {
        assert_eq!(
            b.post(&path, &expense_form, None).status,
            403,
            "{path} without its token"
        );
        let mut with = expense_form.clone();
        with.push(("csrf", &csrf));
        assert_eq!(
            b.post(&path, &with, Some("http://evil.example")).status,
            403,
            "{path} from another origin"
        );
    }
    let pdf: &[u8] = b"%PDF-1.4\n%%EOF\n";
    for path in [
        format!("/expenses/{exp}/receipt"),
        "/expenses/import".to_owned(),
    ] {
        let none = b.post_multipart(&path, &[], ("file", pdf), None);
        assert_eq!(none.status, 403, "{path} without its token: {}", none.body);
        let wrong = b.post_multipart(&path, &[("csrf", "not-the-token")], ("file", pdf), None);
        assert_eq!(wrong.status, 403, "{path} with a wrong token");
        let cross = b.post_multipart(
            &path,
            &[("csrf", &csrf)],
            ("file", pdf),
            Some("http://evil.example"),
        );
        assert_eq!(cross.status, 403, "{path} from another origin");
    }
    assert_eq!(count(server, "/v1/expenses"), 1, "no new expense");
    let (_, still) = human_api(server, "GET", &format!("/v1/expenses/{exp}"), None);
    assert!(still["receipt"].is_null(), "no receipt stored: {still}");
    assert_eq!(still["invoice_reference"], "<b>R-1</b>", "not changed");
    // With the token the upload is stored; the pages show user text as text.
    let stored = b.post_multipart(
        &format!("/expenses/{exp}/receipt"),
        &[("csrf", &csrf)],
        ("file", pdf),
        None,
    );
    assert_eq!(stored.status, 303, "{}", stored.body);
    let (_, with_receipt) = human_api(server, "GET", &format!("/v1/expenses/{exp}"), None);
    assert_eq!(with_receipt["receipt"]["content_type"], "application/pdf");
    for path in [
        "/expenses".to_owned(),
        "/expenses/new".to_owned(),
        format!("/expenses/{exp}"),
    ] {
        let page = b.get(&path);
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        assert!(
            !page.body.contains("<script>alert") && !page.body.contains("<b>R-1"),
            "{path} shows user text as text: {}",
            page.body
        );
    }

    // An emptied category is cleared on an edit; the description left empty stays empty.
    let edited = b.post(
        &format!("/expenses/{exp}"),
        &[
            ("csrf", &csrf),
            ("supplier_id", &id),
            ("invoice_reference", "R-1"),
            ("category", ""),
            ("net", "10"),
        ],
        None,
    );
    assert_eq!(edited.status, 303, "{}", edited.body);
    let (_, cleared) = human_api(server, "GET", &format!("/v1/expenses/{exp}"), None);
    assert!(cleared["category"].is_null(), "{cleared}");
    assert_eq!(cleared["invoice_reference"], "R-1");
    assert_eq!(cleared["total"], 1000);

    // Amounts are read in the supplier's currency when the form names none: 1000 JPY is 1000.
    let (status, yen) = human_api(
        server,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Tokyo KK", "type": "JP:KK", "currency_code": "JPY",
            "address": {"country": "JP"}}),
        ),
    );
    assert_eq!(status, 201, "{yen}");
    let yen_id = yen["id"].as_str().expect("id");
    let recorded = b.post(
        "/expenses",
        &[
            ("csrf", &csrf),
            ("supplier_id", yen_id),
            ("invoice_reference", "T-1"),
            ("net", "1000"),
        ],
        None,
    );
    assert_eq!(recorded.status, 303, "{}", recorded.body);
    let (_, listed) = human_api(
        server,
        "GET",
        &format!("/v1/expenses?supplier_id={yen_id}"),
        None,
    );
    assert_eq!(listed["data"][0]["currency_code"], "JPY", "{listed}");
    assert_eq!(listed["data"][0]["total"], 1000, "{listed}");

    // The tax preview answers a fragment, escaped too.
    let preview = b.post(
        "/invoices/preview",
        &[
            ("csrf", &csrf),
            ("recipient_id", &id),
            ("concept_0", "<b>Design</b>"),
            ("price_0", "10"),
        ],
        None,
    );
    assert_eq!(preview.status, 200, "{}", preview.body);
    assert!(
        preview.body.contains("&lt;b&gt;Design&lt;/b&gt;"),
        "{}",
        preview.body
    );
    assert!(preview.body.contains("10.00 EUR"), "{}", preview.body);

    // Unknown pages are HTML for people; unknown API paths keep the API's answer.
    let missing = b.get("/no-such-page");
    assert_eq!(missing.status, 404);
    assert!(
        missing.body.contains("<h1>Page not found</h1>"),
        "{}",
        missing.body
    );
    let mut api = agent()
        .get(format!("{}/v1/no-such-route", server.base))
        .call()
        .expect("GET");
    assert_eq!(api.status().as_u16(), 404);
    let text = api.body_mut().read_to_string().expect("body");
    assert!(text.starts_with("No such route."), "{text}");
}

#[test]
fn web_new_forms_check_csrf_and_escape_on_sqlite() {
    forms_csrf_and_escaping(TestDb::sqlite());
}

#[test]
fn web_new_forms_check_csrf_and_escape_on_postgres() {
    forms_csrf_and_escaping(TestDb::postgres());
}
