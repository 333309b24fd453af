//! The web app's money pages (#33), black-box on SQLite and PostgreSQL: in
//! Chromium (`tests/web/money.mjs`: the flows as a person clicks them, and the
//! pages at a phone's width), and over plain HTTP as a person's browser sends
//! forms: bank accounts with their
//! balance snapshots, reports (asked for, made by the worker, the list refreshing
//! itself in the browser, downloaded,
//! deleted), and deleting a draft invoice or an expense. Each flow checks
//! what the person sees and what the API then answers; every new form
//! refuses a post without its CSRF token or from another origin and writes
//! nothing; user text is shown as text.

mod common;

use std::{
    process::{Child, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use common::{web::*, *};
use serde_json::{Value, json};

/// `invoicing worker`, started once the browser script creates the file `signal`
/// (so the page is first seen with its report still waiting), stopped on drop.
struct WorkerOnSignal {
    signal: std::path::PathBuf,
    child: Arc<Mutex<Option<Child>>>,
    done: Arc<AtomicBool>,
}

impl WorkerOnSignal {
    fn new(db: &TestDb) -> Self {
        let signal = db.dir.path().join("start-the-worker");
        let child = Arc::new(Mutex::new(None));
        let done = Arc::new(AtomicBool::new(false));
        let mut cmd = db.command(&["worker"]);
        cmd.stdout(Stdio::null()).stderr(Stdio::inherit());
        let (wait_for, started, stop) = (signal.clone(), child.clone(), done.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(300);
            while !stop.load(Ordering::SeqCst) && Instant::now() < deadline {
                if wait_for.exists() {
                    let mut slot = started.lock().expect("lock");
                    // Checked again under the lock: a test that ended meanwhile starts nothing.
                    if !stop.load(Ordering::SeqCst) {
                        *slot = Some(cmd.spawn().expect("spawn the worker"));
                    }
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        Self {
            signal,
            child,
            done,
        }
    }
}

impl Drop for WorkerOnSignal {
    fn drop(&mut self) {
        self.done.store(true, Ordering::SeqCst);
        if let Some(mut child) = self.child.lock().map(|mut c| c.take()).unwrap_or(None) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn money_in_a_browser(db: TestDb, name: &str) {
    // No worker in `serve`: the script sees its report waiting, then starts one
    // and watches the page turn it ready by itself.
    let fx = WebFixture::start_with(&db, &["--no-worker"], &[]);
    let worker = WorkerOnSignal::new(&db);
    fx.run_script(
        "money.mjs",
        name,
        json!({"startWorker": worker.signal.display().to_string()}),
    );
    drop(worker);
}

#[test]
fn web_money_pages_in_a_browser_on_sqlite() {
    money_in_a_browser(TestDb::sqlite(), "money-sqlite");
}

#[test]
fn web_money_pages_in_a_browser_on_postgres() {
    money_in_a_browser(TestDb::postgres(), "money-postgres");
}

fn bank_accounts(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);

    let empty = b.get("/bank-accounts");
    assert!(empty.body.contains("No bank account yet"), "{}", empty.body);
    for link in ["href=\"/bank-accounts\"", "href=\"/reports\""] {
        assert!(empty.body.contains(link), "the nav links to {link}");
    }

    // Refused forms write nothing.
    let name = "<b>Main</b> & Co";
    let account = [
        ("name", name),
        ("bank_name", "Commerzbank"),
        ("iban", "de89 3704 0044 0532 0130 00"),
    ];
    refused_without_token(&mut b, &csrf, "/bank-accounts", &account);
    let listed = api(server, "GET", "/v1/bank-accounts", None);
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(0), "{listed}");

    // An IBAN the API refuses: the form comes back with what was typed and the API's words.
    let bad = b.post(
        "/bank-accounts",
        &[
            ("csrf", &csrf),
            ("name", "Typo account"),
            ("iban", "DE89 3704 0044 0532 0130 01"),
        ],
        None,
    );
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body.contains("`iban`"),
        "the API's message: {}",
        bad.body
    );
    assert!(bad.body.contains("value=\"Typo account\""), "{}", bad.body);

    // Created: the API stores the IBAN in its electronic form; the first account is the default.
    let created = b.post(
        "/bank-accounts",
        &[
            ("csrf", &csrf),
            ("name", name),
            ("bank_name", "Commerzbank"),
            ("iban", "de89 3704 0044 0532 0130 00"),
            ("currency_code", "eur"),
        ],
        None,
    );
    let page = landed(&mut b, &created);
    assert_eq!(flash(&page), "&lt;b&gt;Main&lt;/b&gt; &amp; Co is saved.");
    let id = created.location.rsplit('/').next().expect("id").to_owned();
    let stored = api(server, "GET", &format!("/v1/bank-accounts/{id}"), None);
    assert_eq!(stored["account"]["name"], name);
    assert_eq!(stored["account"]["iban"], "DE89370400440532013000");
    assert_eq!(stored["account"]["currency_code"], "EUR");
    assert_eq!(stored["account"]["is_main"], true);

    // The list: name as text, the IBAN in groups of four, no balance yet.
    let list = b.get("/bank-accounts");
    assert!(
        !list.body.contains("<b>Main"),
        "user text is text: {}",
        list.body
    );
    assert!(list.body.contains("&lt;b&gt;Main&lt;/b&gt; &amp; Co"));
    assert!(
        list.body.contains("DE89 3704 0044 0532 0130 00"),
        "{}",
        list.body
    );
    assert!(list.body.contains("none yet"), "{}", list.body);

    // Balances: typed in the account's currency, negative ones too; the latest by day shows.
    let snapshots = format!("/bank-accounts/{id}/snapshots");
    refused_without_token(&mut b, &csrf, &snapshots, &[("balance", "1")]);
    let recorded = b.post(
        &snapshots,
        &[
            ("csrf", &csrf),
            ("balance", "1,234.50"),
            ("as_of_date", "2026-10-31"),
            ("note", "<i>October</i> statement"),
        ],
        None,
    );
    let page = landed(&mut b, &recorded);
    assert_eq!(flash(&page), "The balance is recorded.");
    assert!(page.body.contains("&lt;i&gt;October&lt;/i&gt; statement"));
    assert!(!page.body.contains("<i>October"), "{}", page.body);
    let recorded = b.post(
        &snapshots,
        &[
            ("csrf", &csrf),
            ("balance", "-80,5"),
            ("as_of_date", "2026-11-30"),
        ],
        None,
    );
    assert_eq!(recorded.status, 303, "{}", recorded.body);
    let wrong = b.post(&snapshots, &[("csrf", &csrf), ("balance", "lots")], None);
    let page = landed(&mut b, &wrong);
    assert!(flash(&page).contains("not “lots”"), "{}", flash(&page));
    let detail = api(server, "GET", &format!("/v1/bank-accounts/{id}"), None);
    let balances: Vec<i64> = detail["snapshots"]
        .as_array()
        .expect("snapshots")
        .iter()
        .map(|s| s["balance_minor"].as_i64().expect("balance"))
        .collect();
    assert_eq!(balances, [-8050, 123_450], "newest first: {detail}");
    assert_eq!(detail["account"]["current_balance_minor"], -8050);
    let list = b.get("/bank-accounts");
    assert!(list.body.contains("-80.50 EUR"), "{}", list.body);
    assert!(list.body.contains("on 2026-11-30"), "{}", list.body);
    let page = b.get(&format!("/bank-accounts/{id}"));
    assert!(page.body.contains("1,234.50 EUR"), "{}", page.body);
    assert!(
        page.body.contains("Delete balance of 2026-11-30"),
        "{}",
        page.body
    );

    // Deleting a balance: the one of November goes, October's is the latest again.
    let newest = detail["snapshots"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let delete_snapshot = format!("/bank-accounts/{id}/snapshots/{newest}/delete");
    refused_without_token(&mut b, &csrf, &delete_snapshot, &[]);
    let deleted = b.post(&delete_snapshot, &[("csrf", &csrf)], None);
    let page = landed(&mut b, &deleted);
    assert_eq!(flash(&page), "The balance is deleted.");
    let detail = api(server, "GET", &format!("/v1/bank-accounts/{id}"), None);
    assert_eq!(
        detail["snapshots"].as_array().map(Vec::len),
        Some(1),
        "{detail}"
    );
    assert_eq!(detail["account"]["current_balance_minor"], 123_450);
    // Again: the API's 404, in words, on the account's page.
    let again = b.post(&delete_snapshot, &[("csrf", &csrf)], None);
    let page = landed(&mut b, &again);
    assert!(page.body.contains("flash error"), "{}", page.body);

    // Editing: an emptied IBAN is cleared, a BIC is set.
    let account_page = format!("/bank-accounts/{id}");
    refused_without_token(&mut b, &csrf, &account_page, &[("name", "Changed")]);
    let saved = b.post(
        &account_page,
        &[
            ("csrf", &csrf),
            ("name", "Operating"),
            ("bank_name", "Commerzbank"),
            ("iban", ""),
            ("bic", "cobadeffxxx"),
            ("currency_code", "EUR"),
        ],
        None,
    );
    let page = landed(&mut b, &saved);
    assert_eq!(flash(&page), "Changes saved.");
    let edited = api(server, "GET", &format!("/v1/bank-accounts/{id}"), None);
    assert_eq!(edited["account"]["name"], "Operating");
    assert!(edited["account"]["iban"].is_null(), "{edited}");
    assert_eq!(edited["account"]["bic"], "COBADEFFXXX");
    // A refused edit keeps what was typed.
    let refused = b.post(
        &account_page,
        &[("csrf", &csrf), ("name", "Operating"), ("bic", "NOT A BIC")],
        None,
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("`bic`"), "{}", refused.body);
    assert!(
        refused.body.contains("value=\"NOT A BIC\""),
        "{}",
        refused.body
    );

    // A second account made the default takes it from the first.
    let second = b.post(
        "/bank-accounts",
        &[
            ("csrf", &csrf),
            ("name", "Dollar account"),
            ("currency_code", "USD"),
            ("is_main", "1"),
        ],
        None,
    );
    assert_eq!(second.status, 303, "{}", second.body);
    let second_id = second.location.rsplit('/').next().expect("id").to_owned();
    let first = api(server, "GET", &format!("/v1/bank-accounts/{id}"), None);
    assert_eq!(first["account"]["is_main"], false, "{first}");
    let dollars = api(
        server,
        "GET",
        &format!("/v1/bank-accounts/{second_id}"),
        None,
    );
    assert_eq!(dollars["account"]["is_main"], true);

    // Deleting asks first, then deletes the account and its balances.
    let confirm = b.get(&format!("/bank-accounts/{second_id}/delete"));
    assert_eq!(confirm.status, 200, "{}", confirm.body);
    assert!(
        confirm.body.contains("Delete Dollar account"),
        "{}",
        confirm.body
    );
    assert!(confirm.body.contains("default account"), "{}", confirm.body);
    let delete = format!("/bank-accounts/{second_id}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(
        status_of(server, &format!("/v1/bank-accounts/{second_id}")),
        200
    );
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(deleted.location, "/bank-accounts");
    let page = landed(&mut b, &deleted);
    assert_eq!(flash(&page), "The bank account is deleted.");
    assert_eq!(
        status_of(server, &format!("/v1/bank-accounts/{second_id}")),
        404
    );
    let first = api(server, "GET", &format!("/v1/bank-accounts/{id}"), None);
    assert_eq!(first["account"]["is_main"], true, "the default again");
    // An unknown account is an HTML page with the API's words.
    let missing = b.get("/bank-accounts/no-such-account");
    assert_eq!(missing.status, 404, "{}", missing.body);
    assert!(missing.body.contains("<html"), "{}", missing.body);
}

#[test]
fn web_bank_accounts_and_balances_on_sqlite() {
    bank_accounts(TestDb::sqlite());
}

#[test]
fn web_bank_accounts_and_balances_on_postgres() {
    bank_accounts(TestDb::postgres());
}

/// Waits until every report of the company is ready (the worker of `serve` renders them).
fn all_ready(server: &Server) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let page = api(server, "GET", "/v1/reports", None);
        let rows = page["data"].as_array().cloned().expect("reports");
        if rows.iter().all(|r| r["status"] == "ready") {
            return rows;
        }
        assert!(
            rows.iter().all(|r| r["status"] != "failed"),
            "a report failed: {page}"
        );
        assert!(Instant::now() < deadline, "not ready within 120 s: {page}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn reports(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);

    let empty = b.get("/reports");
    assert!(empty.body.contains("No report yet."), "{}", empty.body);
    let request = [
        ("report_type", "vat_summary"),
        ("period_start", "2026-01-01"),
        ("period_end", "2026-03-31"),
        ("locales", "en, es_ES"),
    ];
    refused_without_token(&mut b, &csrf, "/reports", &request);
    let none = api(server, "GET", "/v1/reports", None);
    assert_eq!(none["data"].as_array().map(Vec::len), Some(0), "{none}");

    // What the API refuses is shown in its words, user text as text.
    let backwards = b.post(
        "/reports",
        &[
            ("csrf", &csrf),
            ("report_type", "vat_summary"),
            ("period_start", "2026-03-01"),
            ("period_end", "2026-01-31"),
        ],
        None,
    );
    let page = landed(&mut b, &backwards);
    assert!(
        flash(&page).contains("`period_end` must be after `period_start`"),
        "{}",
        flash(&page)
    );
    let odd = b.post(
        "/reports",
        &[
            ("csrf", &csrf),
            ("report_type", "vat_summary"),
            ("period_start", "2026-01-01"),
            ("period_end", "2026-01-31"),
            ("locales", "<script>alert(1)</script>"),
        ],
        None,
    );
    let page = landed(&mut b, &odd);
    assert!(flash(&page).contains("`locales`"), "{}", flash(&page));
    assert!(!page.body.contains("<script>alert"), "{}", page.body);
    let none = api(server, "GET", "/v1/reports", None);
    assert_eq!(none["data"].as_array().map(Vec::len), Some(0), "{none}");

    // Asked for in two languages: two reports over the first quarter (the last day included).
    let asked = b.post(
        "/reports",
        &[
            ("csrf", &csrf),
            ("report_type", "vat_summary"),
            ("period_start", "2026-01-01"),
            ("period_end", "2026-03-31"),
            ("locales", "en, es_ES"),
        ],
        None,
    );
    assert_eq!(asked.location, "/reports");
    let page = landed(&mut b, &asked);
    assert_eq!(
        flash(&page),
        "2 reports are asked for (one per language); they are made in the background."
    );
    assert!(page.body.contains("VAT summary"), "{}", page.body);
    assert!(
        page.body.contains("2026-01-01 – 2026-03-31"),
        "{}",
        page.body
    );
    let rows = all_ready(server);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let mut locales: Vec<&str> = rows
        .iter()
        .map(|r| r["locale"].as_str().expect("locale"))
        .collect();
    locales.sort_unstable();
    assert_eq!(locales, ["en", "es-ES"]);
    for r in &rows {
        assert_eq!(r["report_type"], "vat_summary");
        assert_eq!(r["period_start"], "2026-01-01T00:00:00Z");
        assert_eq!(
            r["period_end"], "2026-04-01T00:00:00Z",
            "the API's end is exclusive"
        );
    }

    // Ready: the list says so and the PDF downloads as an attachment.
    let page = b.get("/reports");
    assert!(page.body.contains(">Ready<"), "{}", page.body);
    let id = rows[0]["id"].as_str().expect("id").to_owned();
    let link = format!("/reports/{id}/pdf");
    assert!(
        page.body.contains(&format!("href=\"{link}\"")),
        "{}",
        page.body
    );
    let mut resp = b
        .agent
        .get(format!("{}{link}", server.base))
        .header("Cookie", b.cookie_header())
        .call()
        .expect("GET the PDF");
    assert_eq!(resp.status().as_u16(), 200);
    let disposition = resp
        .headers()
        .get("content-disposition")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(disposition.starts_with("attachment;"), "{disposition}");
    assert!(disposition.contains("vat_summary-"), "{disposition}");
    let pdf = resp.body_mut().read_to_vec().expect("PDF");
    assert!(pdf.starts_with(b"%PDF"), "a PDF");
    let text = pdf_text(&pdf);
    assert!(!text.trim().is_empty(), "the PDF has text");

    // Deleting: the report goes, and so does its PDF.
    let delete = format!("/reports/{id}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(status_of(server, &format!("/v1/reports/{id}")), 200);
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    let page = landed(&mut b, &deleted);
    assert_eq!(flash(&page), "The report is deleted.");
    assert_eq!(status_of(server, &format!("/v1/reports/{id}")), 404);
    let gone = b.get(&link);
    assert_eq!(gone.status, 404, "{}", gone.body);
    assert!(gone.body.contains("<h1>No PDF</h1>"), "{}", gone.body);
    let left = api(server, "GET", "/v1/reports", None);
    assert_eq!(left["data"].as_array().map(Vec::len), Some(1), "{left}");
}

#[test]
fn web_reports_asked_for_downloaded_and_deleted_on_sqlite() {
    reports(TestDb::sqlite());
}

#[test]
fn web_reports_asked_for_downloaded_and_deleted_on_postgres() {
    reports(TestDb::postgres());
}

fn deleting_drafts_and_expenses(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    let customer = api(
        server,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Kunde AG", "type": "DE:AG", "vies_vat_id": "DE811907980",
            "email": "billing@kunde.example",
            "address": {"lines": ["Hauptstraße 1"], "zipcode": "10115", "city": "Berlin", "country": "DE"}}),
        ),
    );
    let customer_id = customer["id"].as_str().expect("id").to_owned();
    let draft = |concept: &str| {
        api(
            server,
            "POST",
            "/v1/invoices",
            Some(json!({"recipient_id": customer_id, "lines": [{"concept": concept, "unit_price": 10000}]})),
        )["id"]
            .as_str()
            .expect("id")
            .to_owned()
    };

    // A draft's page offers the delete; the form is CSRF-checked.
    let inv = draft("Consulting");
    let page = b.get(&format!("/invoices/{inv}"));
    assert!(page.body.contains("Delete draft"), "{}", page.body);
    let delete = format!("/invoices/{inv}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(
        status_of(server, &format!("/v1/invoices/{inv}")),
        200,
        "still there"
    );
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(deleted.location, "/invoices");
    let page = landed(&mut b, &deleted);
    assert_eq!(flash(&page), "The draft is deleted.");
    assert_eq!(status_of(server, &format!("/v1/invoices/{inv}")), 404);

    // An issued invoice offers no delete, and a forged post shows the API's refusal.
    let issued = draft("Design");
    accept_agreements(
        &server.base,
        &Company::from_bootstrap(server.bootstrap.as_ref().expect("bootstrap")),
    );
    api(
        server,
        "POST",
        &format!("/v1/invoices/{issued}/issue"),
        None,
    );
    let page = b.get(&format!("/invoices/{issued}"));
    assert!(!page.body.contains("Delete draft"), "{}", page.body);
    let refused = b.post(
        &format!("/invoices/{issued}/delete"),
        &[("csrf", &csrf)],
        None,
    );
    assert_eq!(refused.location, format!("/invoices/{issued}"));
    let page = landed(&mut b, &refused);
    assert!(page.body.contains("flash error"), "{}", page.body);
    let still = api(server, "GET", &format!("/v1/invoices/{issued}"), None);
    assert_eq!(still["status"], "issued");

    // An expense's page offers the delete too.
    let expense = api(
        server,
        "POST",
        "/v1/expenses",
        Some(
            json!({"supplier_id": customer_id, "invoice_reference": "<b>R-9</b>",
            "lines": [{"concept": "Paper", "subtotal": 1000}]}),
        ),
    );
    let exp = expense["id"].as_str().expect("id").to_owned();
    let page = b.get(&format!("/expenses/{exp}"));
    assert!(page.body.contains("Delete expense"), "{}", page.body);
    assert!(
        !page.body.contains("<b>R-9"),
        "user text as text: {}",
        page.body
    );
    let delete = format!("/expenses/{exp}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(
        status_of(server, &format!("/v1/expenses/{exp}")),
        200,
        "still there"
    );
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(deleted.location, "/expenses");
    let page = landed(&mut b, &deleted);
    assert_eq!(flash(&page), "The expense is deleted.");
    assert!(page.body.contains("No expense yet."), "{}", page.body);
    assert_eq!(status_of(server, &format!("/v1/expenses/{exp}")), 404);
    // Deleted already: the API's 404 in words, on the expense's address.
    let again = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(again.location, format!("/expenses/{exp}"));
}

#[test]
fn web_deletes_a_draft_invoice_and_an_expense_on_sqlite() {
    deleting_drafts_and_expenses(TestDb::sqlite());
}

#[test]
fn web_deletes_a_draft_invoice_and_an_expense_on_postgres() {
    deleting_drafts_and_expenses(TestDb::postgres());
}
