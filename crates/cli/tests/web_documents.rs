//! The web app's documents (#33), black-box on SQLite and PostgreSQL:
//! proformas (written with the invoice's line editor, turned into a draft
//! invoice), recurring invoices (their schedule in words, paused, resumed) and
//! webhook endpoints in the settings (the signing secret shown once, the
//! deliveries sent again). Over plain HTTP as a person's browser sends forms,
//! each flow checks what the person sees and what the API then holds; every
//! new form refuses a post without its CSRF token or from another origin and
//! writes nothing; user text is shown as text. In Chromium
//! (`tests/web/documents.mjs`) the proforma pages are walked at a phone's width.

mod common;

use std::{
    io::{Read, Write},
    net::TcpListener,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use common::{web::*, *};
use serde_json::{Value, json};

/// A customer of the company, by the API; returns its id.
fn customer(server: &Server) -> String {
    let created = api(
        server,
        "POST",
        "/v1/entities",
        Some(
            json!({"name": "Kunde & Söhne AG", "type": "DE:AG", "vies_vat_id": "DE811907980",
            "email": "billing@kunde.example",
            "address": {"lines": ["Hauptstraße 1"], "zipcode": "10115", "city": "Berlin", "country": "DE"}}),
        ),
    );
    created["id"].as_str().expect("id").to_owned()
}

fn count(server: &Server, path: &str) -> usize {
    api(server, "GET", path, None)["data"]
        .as_array()
        .expect("a list")
        .len()
}

/// (concept, quantity, unit price) of each line of a document of the API.
fn lines_of(doc: &Value) -> Vec<(String, String, i64)> {
    doc["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| {
            (
                l["concept"].as_str().expect("concept").to_owned(),
                l["quantity"].to_string(),
                l["unit_price"].as_i64().expect("unit price"),
            )
        })
        .collect()
}

fn proformas(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    let cust = customer(server);

    let empty = b.get("/proformas");
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert!(empty.body.contains("No proforma yet"), "{}", empty.body);
    for link in ["href=\"/proformas\"", "href=\"/recurring\""] {
        assert!(empty.body.contains(link), "the nav links to {link}");
    }
    let form = b.get("/proformas/new");
    assert!(form.body.contains("Kunde &amp; Söhne AG"), "{}", form.body);
    assert!(
        form.body.contains("data-preview=\"/invoices/preview\""),
        "the invoice's live preview: {}",
        form.body
    );

    // Refused posts write nothing.
    let typed = [
        ("recipient_id", cust.as_str()),
        ("supply_type", "services"),
        ("concept_0", "Design <b>work</b>"),
        ("quantity_0", "2"),
        ("unit_0", "h"),
        ("price_0", "150.00"),
        ("concept_1", "Hosting"),
        ("price_1", "20"),
    ];
    refused_without_token(&mut b, &csrf, "/proformas/new", &typed);
    assert_eq!(count(server, "/v1/proformas"), 0, "nothing was created");

    // A price that is not an amount: the form comes back with what was typed.
    let mut bad = typed.to_vec();
    bad[5] = ("price_0", "lots");
    bad.push(("csrf", &csrf));
    let refused = b.post("/proformas/new", &bad, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("(“lots”)"), "{}", refused.body);
    assert!(
        refused
            .body
            .contains("value=\"Design &lt;b&gt;work&lt;/b&gt;\""),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"lots\""), "{}", refused.body);
    assert_eq!(count(server, "/v1/proformas"), 0);

    // The preview without JavaScript: the API's taxes of the lines typed.
    let mut preview = typed.to_vec();
    preview.push(("csrf", &csrf));
    preview.push(("action", "preview"));
    let shown = b.post("/proformas/new", &preview, None);
    assert_eq!(shown.status, 200, "{}", shown.body);
    assert!(shown.body.contains("Tax preview"), "{}", shown.body);
    assert!(shown.body.contains("320.00 EUR"), "the net: {}", shown.body);

    // Created: the proforma's page, its lines as typed, the text as text.
    let mut with = typed.to_vec();
    with.push(("csrf", &csrf));
    let created = b.post("/proformas/new", &with, None);
    let page = landed(&mut b, &created);
    assert_eq!(flash(&page), "Proforma created.");
    let id = created.location.rsplit('/').next().expect("id").to_owned();
    let stored = api(server, "GET", &format!("/v1/proformas/{id}"), None);
    assert_eq!(stored["recipient_id"], cust.as_str());
    assert_eq!(
        lines_of(&stored),
        [
            ("Design <b>work</b>".to_owned(), "2".to_owned(), 15000),
            ("Hosting".to_owned(), "1".to_owned(), 2000),
        ]
    );
    let reference = stored["reference"].as_str().expect("reference").to_owned();
    assert!(
        page.body.contains(&format!("Proforma {reference}")),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("Design &lt;b&gt;work&lt;/b&gt;"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<b>work"), "{}", page.body);
    let list = b.get("/proformas");
    assert!(list.body.contains(&reference), "{}", list.body);
    assert!(list.body.contains("Kunde &amp; Söhne AG"), "{}", list.body);

    // Its PDF downloads as an attachment.
    let mut resp = b
        .agent
        .get(format!("{}/proformas/{id}/pdf", server.base))
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
    let pdf = resp.body_mut().read_to_vec().expect("PDF");
    assert!(pdf.starts_with(b"%PDF"), "a PDF");

    // Edited: the form shows the stored lines; the first is removed, a price changed.
    let edit = format!("/proformas/{id}/edit");
    let form = b.get(&edit);
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains("value=\"150.00\""), "{}", form.body);
    let changed = [
        ("recipient_id", cust.as_str()),
        ("concept_0", "Design <b>work</b>"),
        ("quantity_0", "2"),
        ("price_0", "150.00"),
        ("remove_0", "on"),
        ("concept_1", "Hosting"),
        ("quantity_1", "3"),
        ("price_1", "25,5"),
    ];
    refused_without_token(&mut b, &csrf, &edit, &changed);
    let mut with = changed.to_vec();
    with.push(("csrf", &csrf));
    let saved = b.post(&edit, &with, None);
    let page = landed(&mut b, &saved);
    assert_eq!(flash(&page), "Proforma saved.");
    let stored = api(server, "GET", &format!("/v1/proformas/{id}"), None);
    assert_eq!(
        lines_of(&stored),
        [("Hosting".to_owned(), "3".to_owned(), 2550)]
    );
    assert_eq!(
        stored["reference"],
        reference.as_str(),
        "the reference stays"
    );
    // A customer the API does not know: its words, and the form as typed.
    let mut unknown = changed.to_vec();
    unknown[0] = ("recipient_id", "no-such-customer");
    unknown.push(("csrf", &csrf));
    let refused = b.post(&edit, &unknown, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("flash error"), "{}", refused.body);
    assert!(refused.body.contains("value=\"25,5\""), "{}", refused.body);
    let still = api(server, "GET", &format!("/v1/proformas/{id}"), None);
    assert_eq!(still["recipient_id"], cust.as_str());

    // Turned into an invoice: the person lands on the new draft, with the proforma's lines.
    let to_invoice = format!("/proformas/{id}/invoice");
    refused_without_token(&mut b, &csrf, &to_invoice, &[]);
    assert!(
        api(server, "GET", &format!("/v1/proformas/{id}"), None)["invoice_id"].is_null(),
        "not invoiced by a refused post"
    );
    let invoiced = b.post(&to_invoice, &[("csrf", &csrf)], None);
    assert!(
        invoiced.location.starts_with("/invoices/"),
        "{}",
        invoiced.location
    );
    let page = landed(&mut b, &invoiced);
    assert_eq!(
        flash(&page),
        "A draft invoice is made from the proforma. Check it, then issue it."
    );
    let inv = invoiced.location.rsplit('/').next().expect("id").to_owned();
    let invoice = api(server, "GET", &format!("/v1/invoices/{inv}"), None);
    assert_eq!(invoice["status"], "draft");
    assert_eq!(invoice["recipient_id"], cust.as_str());
    assert_eq!(lines_of(&invoice), lines_of(&stored));
    let linked = api(server, "GET", &format!("/v1/proformas/{id}"), None);
    assert_eq!(linked["invoice_id"], inv.as_str());
    let page = b.get(&format!("/proformas/{id}"));
    assert!(!page.body.contains("Turn into an invoice"), "{}", page.body);
    assert!(
        page.body.contains(&format!("href=\"/invoices/{inv}\"")),
        "{}",
        page.body
    );
    // Once only: a forged second post shows the API's refusal.
    let again = b.post(&to_invoice, &[("csrf", &csrf)], None);
    assert_eq!(again.location, format!("/proformas/{id}"));
    let page = landed(&mut b, &again);
    assert!(
        flash(&page).contains("already turned into invoice"),
        "{}",
        flash(&page)
    );

    // Deleted after its confirmation: the invoice made from it stays.
    let page = b.get(&format!("/proformas/{id}"));
    assert!(page.body.contains("Delete proforma…"), "{}", page.body);
    let delete = format!("/proformas/{id}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(status_of(server, &format!("/v1/proformas/{id}")), 200);
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(deleted.location, "/proformas");
    let page = landed(&mut b, &deleted);
    assert_eq!(flash(&page), "The proforma is deleted.");
    assert_eq!(status_of(server, &format!("/v1/proformas/{id}")), 404);
    assert_eq!(status_of(server, &format!("/v1/invoices/{inv}")), 200);
    // Deleted already: the API's 404 in words, on the list.
    let again = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(again.location, "/proformas");
    let page = landed(&mut b, &again);
    assert!(page.body.contains("flash error"), "{}", page.body);
    let gone = b.get(&format!("/proformas/{id}"));
    assert_eq!(gone.status, 404, "an HTML page: {}", gone.body);
}

#[test]
fn web_proformas_written_edited_invoiced_and_deleted_on_sqlite() {
    proformas(TestDb::sqlite());
}

#[test]
fn web_proformas_written_edited_invoiced_and_deleted_on_postgres() {
    proformas(TestDb::postgres());
}

fn recurring(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    let cust = customer(server);

    let empty = b.get("/recurring");
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert!(
        empty.body.contains("No recurring invoice yet"),
        "{}",
        empty.body
    );

    // A start years ahead: the worker makes nothing while the test runs.
    let typed = [
        ("recipient_id", cust.as_str()),
        ("frequency", "monthly"),
        ("interval", "1"),
        ("start_date", "2031-01-15"),
        ("concept_0", "Hosting <i>plan</i>"),
        ("price_0", "49.00"),
        ("buyer_reference", "PO <1>"),
    ];
    refused_without_token(&mut b, &csrf, "/recurring/new", &typed);
    assert_eq!(count(server, "/v1/recurring-invoices"), 0);

    // Mailing without issuing: the API's words, and the form as typed.
    let mut bad = typed.to_vec();
    bad.push(("auto_send", "1"));
    bad.push(("csrf", &csrf));
    let refused = b.post("/recurring/new", &bad, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("set `auto_issue` too"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("value=\"2031-01-15\""),
        "{}",
        refused.body
    );
    assert!(
        refused
            .body
            .contains("value=\"Hosting &lt;i&gt;plan&lt;/i&gt;\""),
        "{}",
        refused.body
    );
    assert!(
        refused
            .body
            .contains("name=\"auto_send\" type=\"checkbox\" value=\"1\" checked"),
        "{}",
        refused.body
    );
    // An interval that is not a number: said before the API is asked.
    let mut bad = typed.to_vec();
    bad[2] = ("interval", "two");
    bad.push(("csrf", &csrf));
    let refused = b.post("/recurring/new", &bad, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("not “two”"), "{}", refused.body);
    assert!(refused.body.contains("value=\"two\""), "{}", refused.body);
    assert_eq!(count(server, "/v1/recurring-invoices"), 0);

    // Created: the page says when the next invoice comes and what it will be.
    let mut with = typed.to_vec();
    with.push(("csrf", &csrf));
    let created = b.post("/recurring/new", &with, None);
    let page = landed(&mut b, &created);
    assert_eq!(flash(&page), "Recurring invoice created.");
    let id = created.location.rsplit('/').next().expect("id").to_owned();
    assert!(
        page.body
            .contains("On 2031-01-15 it makes a draft invoice for Kunde &amp; Söhne AG (1 line, "),
        "{}",
        page.body
    );
    assert!(
        page.body.contains("with taxes), then again every month."),
        "{}",
        page.body
    );
    assert!(page.body.contains("PO &lt;1&gt;"), "{}", page.body);
    let stored = api(server, "GET", &format!("/v1/recurring-invoices/{id}"), None);
    assert_eq!(stored["frequency"], "monthly");
    assert_eq!(stored["interval"], 1);
    assert_eq!(stored["start_date"], "2031-01-15");
    assert_eq!(stored["next_run_date"], "2031-01-15");
    assert_eq!(stored["status"], "active");
    assert_eq!(stored["auto_issue"], false);
    assert_eq!(stored["buyer_reference"], "PO <1>");
    assert_eq!(stored["recipient_id"], cust.as_str());
    assert!(
        stored.get("currency_code").is_none(),
        "the customer's: {stored}"
    );
    assert_eq!(stored["lines"][0]["concept"], "Hosting <i>plan</i>");
    assert_eq!(stored["lines"][0]["unit_price"], 4900);
    let list = b.get("/recurring");
    assert!(list.body.contains("Every month"), "{}", list.body);
    assert!(list.body.contains("2031-01-15"), "{}", list.body);

    // Edited: the form shows what is stored; the schedule and the price change,
    // the emptied buyer reference goes.
    let edit = format!("/recurring/{id}/edit");
    let form = b.get(&edit);
    assert_eq!(form.status, 200, "{}", form.body);
    assert!(form.body.contains("value=\"49.00\""), "{}", form.body);
    assert!(
        form.body.contains("<option value=\"monthly\" selected>"),
        "{}",
        form.body
    );
    let changed = [
        ("recipient_id", cust.as_str()),
        ("frequency", "quarterly"),
        ("interval", "2"),
        ("start_date", "2031-01-15"),
        ("end_date", "2032-12-31"),
        ("auto_issue", "1"),
        ("auto_send", "1"),
        ("concept_0", "Hosting <i>plan</i>"),
        ("price_0", "59"),
        ("buyer_reference", ""),
    ];
    refused_without_token(&mut b, &csrf, &edit, &changed);
    let mut with = changed.to_vec();
    with.push(("csrf", &csrf));
    let saved = b.post(&edit, &with, None);
    let page = landed(&mut b, &saved);
    assert_eq!(flash(&page), "Recurring invoice saved.");
    assert!(
        page.body
            .contains("it issues an invoice and mails it to Kunde &amp; Söhne AG"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("then again every 2 quarters until 2032-12-31."),
        "{}",
        page.body
    );
    let stored = api(server, "GET", &format!("/v1/recurring-invoices/{id}"), None);
    assert_eq!(stored["frequency"], "quarterly");
    assert_eq!(stored["interval"], 2);
    assert_eq!(stored["end_date"], "2032-12-31");
    assert_eq!(stored["auto_issue"], true);
    assert_eq!(stored["auto_send"], true);
    assert_eq!(stored["lines"][0]["unit_price"], 5900);
    assert!(stored.get("buyer_reference").is_none(), "{stored}");

    // Paused and resumed from its page.
    let pause = format!("/recurring/{id}/pause");
    let resume = format!("/recurring/{id}/resume");
    refused_without_token(&mut b, &csrf, &pause, &[]);
    assert_eq!(
        api(server, "GET", &format!("/v1/recurring-invoices/{id}"), None)["status"],
        "active"
    );
    let paused = b.post(&pause, &[("csrf", &csrf)], None);
    let page = landed(&mut b, &paused);
    assert_eq!(
        flash(&page),
        "Paused: no invoice is made until you resume it."
    );
    assert!(
        page.body
            .contains("Paused: it makes nothing until you resume it."),
        "{}",
        page.body
    );
    assert!(page.body.contains(">Resume</button>"), "{}", page.body);
    assert_eq!(
        api(server, "GET", &format!("/v1/recurring-invoices/{id}"), None)["status"],
        "paused"
    );
    refused_without_token(&mut b, &csrf, &resume, &[]);
    let resumed = b.post(&resume, &[("csrf", &csrf)], None);
    let page = landed(&mut b, &resumed);
    assert_eq!(
        flash(&page),
        "Resumed: the next invoice is made on 2031-01-15."
    );
    assert_eq!(
        api(server, "GET", &format!("/v1/recurring-invoices/{id}"), None)["status"],
        "active"
    );

    // Deleted after its confirmation.
    assert!(
        page.body.contains("Delete recurring invoice…"),
        "{}",
        page.body
    );
    let delete = format!("/recurring/{id}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(
        status_of(server, &format!("/v1/recurring-invoices/{id}")),
        200
    );
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(deleted.location, "/recurring");
    let page = landed(&mut b, &deleted);
    assert_eq!(
        flash(&page),
        "The recurring invoice is deleted; the invoices it made stay."
    );
    assert_eq!(
        status_of(server, &format!("/v1/recurring-invoices/{id}")),
        404
    );
    assert_eq!(count(server, "/v1/recurring-invoices"), 0);
}

#[test]
fn web_recurring_invoices_created_edited_paused_and_deleted_on_sqlite() {
    recurring(TestDb::sqlite());
}

#[test]
fn web_recurring_invoices_created_edited_paused_and_deleted_on_postgres() {
    recurring(TestDb::postgres());
}

/// A stand-in receiving system on 127.0.0.1: answers every POST `204` and
/// keeps each one's `webhook-id`.
fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!(
        "http://{}/hooks/invoicing",
        listener.local_addr().expect("address")
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut request = Vec::new();
            let mut chunk = [0u8; 4096];
            // Up to the end of the headers, then the body they announce.
            let head = loop {
                let Ok(n) = conn.read(&mut chunk) else {
                    break String::new();
                };
                if n == 0 {
                    break String::new();
                }
                request.extend_from_slice(&chunk[..n]);
                if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                    let length = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse::<usize>().ok())
                        .unwrap_or(0);
                    while request.len() < end + 4 + length {
                        match conn.read(&mut chunk) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => request.extend_from_slice(&chunk[..n]),
                        }
                    }
                    break head;
                }
            };
            if let Some(id) = head
                .lines()
                .find_map(|l| l.strip_prefix("webhook-id:"))
                .map(|v| v.trim().to_owned())
            {
                kept.lock().expect("lock").push(id);
            }
            let _ = conn.write_all(
                b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    (url, seen)
}

/// Waits until the endpoint's newest delivery is `status`; returns it.
fn newest_delivery(server: &Server, endpoint: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let log = api(
            server,
            "GET",
            &format!("/v1/webhooks/{endpoint}/deliveries"),
            None,
        );
        if let Some(d) = log["data"].as_array().and_then(|d| d.first())
            && d["status"] == status
        {
            return d.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {status} delivery within 90 s: {log}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn webhooks(db: TestDb) {
    let fx = WebFixture::start_with_env(&db, &[("INVOICING_WEBHOOKS_ALLOW_PRIVATE", "1")]);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    let (url, seen) = receiver();
    let cust = customer(server);

    let settings = b.get("/settings");
    assert!(
        settings.body.contains("href=\"/settings/webhooks\""),
        "{}",
        settings.body
    );
    let empty = b.get("/settings/webhooks");
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert!(
        empty.body.contains("No webhook endpoint yet."),
        "{}",
        empty.body
    );
    assert!(
        empty.body.contains("name=\"ev_ai_audit.pending\""),
        "every event can be chosen: {}",
        empty.body
    );

    let typed = [
        ("url", url.as_str()),
        ("description", "<i>Accounting</i> & more"),
        ("ev_invoice.created", "1"),
        ("ev_invoice.paid", "1"),
    ];
    refused_without_token(&mut b, &csrf, "/settings/webhooks", &typed);
    assert_eq!(count(server, "/v1/webhooks"), 0, "nothing was created");

    // A URL the API refuses: its words, and the form as typed.
    let mut bad = typed.to_vec();
    bad[0] = ("url", "ftp://files.example/in");
    bad.push(("csrf", &csrf));
    let refused = b.post("/settings/webhooks", &bad, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("must be an http:// or https:// URL"),
        "{}",
        refused.body
    );
    assert!(
        refused.body.contains("value=\"ftp://files.example/in\""),
        "{}",
        refused.body
    );
    assert!(
        refused
            .body
            .contains("name=\"ev_invoice.paid\" type=\"checkbox\" value=\"1\" checked"),
        "{}",
        refused.body
    );
    assert!(!refused.body.contains("whsec_"), "{}", refused.body);
    assert_eq!(count(server, "/v1/webhooks"), 0);

    // Created: the signing secret is on this answer, with its copy button, and never again.
    let mut with = typed.to_vec();
    with.push(("csrf", &csrf));
    let created = b.post("/settings/webhooks", &with, None);
    assert_eq!(created.status, 201, "{}", created.body);
    let at = created.body.find("whsec_").expect("the secret is shown");
    let secret = &created.body[at..];
    let secret = secret[..secret.find('"').expect("end")].to_owned();
    assert!(secret.len() > 20, "{secret}");
    assert!(
        created.body.contains("data-copy=\"new-secret\""),
        "{}",
        created.body
    );
    let listed = api(server, "GET", "/v1/webhooks", None);
    let endpoint = listed["data"][0].clone();
    let id = endpoint["id"].as_str().expect("id").to_owned();
    assert_eq!(endpoint["url"], url.as_str());
    assert_eq!(endpoint["description"], "<i>Accounting</i> & more");
    assert_eq!(
        endpoint["events"],
        json!(["invoice.created", "invoice.paid"])
    );
    assert_eq!(endpoint["enabled"], true);
    let list = b.get("/settings/webhooks");
    assert!(!list.body.contains(&secret), "shown once: {}", list.body);
    assert!(!list.body.contains("whsec_"), "{}", list.body);
    assert!(
        list.body
            .contains("&lt;i&gt;Accounting&lt;/i&gt; &amp; more"),
        "{}",
        list.body
    );
    assert!(!list.body.contains("<i>Accounting"), "{}", list.body);
    let page_path = format!("/settings/webhooks/{id}");
    let page = b.get(&page_path);
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(!page.body.contains("whsec_"), "{}", page.body);
    assert!(page.body.contains("Nothing sent yet"), "{}", page.body);

    // An event: the receiver gets it; the page lists the delivery with its answer.
    api(
        server,
        "POST",
        "/v1/invoices",
        Some(json!({"recipient_id": cust, "lines": [{"concept": "Work", "unit_price": 1000}]})),
    );
    let delivery = newest_delivery(server, &id, "succeeded");
    let delivery_id = delivery["id"].as_str().expect("id").to_owned();
    assert_eq!(delivery["event_type"], "invoice.created");
    assert_eq!(seen.lock().expect("lock").len(), 1);
    let page = b.get(&page_path);
    assert!(page.body.contains("invoice.created"), "{}", page.body);
    assert!(page.body.contains(">succeeded<"), "{}", page.body);
    assert!(page.body.contains("HTTP 204"), "{}", page.body);
    assert!(page.body.contains(">Retry</button>"), "{}", page.body);

    // Sent again: the same webhook-id reaches the receiver a second time.
    let retry = format!("/settings/webhooks/{id}/deliveries/{delivery_id}/retry");
    refused_without_token(&mut b, &csrf, &retry, &[]);
    let retried = b.post(&retry, &[("csrf", &csrf)], None);
    assert_eq!(retried.location, page_path);
    let page = landed(&mut b, &retried);
    assert!(flash(&page).starts_with("Queued again"), "{}", flash(&page));
    let deadline = Instant::now() + Duration::from_secs(90);
    while seen.lock().expect("lock").len() < 2 {
        assert!(Instant::now() < deadline, "not sent again within 90 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    let ids = seen.lock().expect("lock").clone();
    assert_eq!(ids[0], ids[1], "the same message: {ids:?}");
    newest_delivery(server, &id, "succeeded");

    // Disabled from the list: nothing is sent, and a retry shows the API's refusal.
    let disable = format!("/settings/webhooks/{id}/disable");
    refused_without_token(&mut b, &csrf, &disable, &[]);
    assert_eq!(
        api(server, "GET", &format!("/v1/webhooks/{id}"), None)["enabled"],
        true
    );
    let disabled = b.post(&disable, &[("csrf", &csrf), ("back", "list")], None);
    assert_eq!(disabled.location, "/settings/webhooks");
    let page = landed(&mut b, &disabled);
    assert_eq!(
        flash(&page),
        "Disabled: nothing is sent to the endpoint until you enable it."
    );
    assert!(page.body.contains(">disabled<"), "{}", page.body);
    assert!(page.body.contains(">Enable</button>"), "{}", page.body);
    assert_eq!(
        api(server, "GET", &format!("/v1/webhooks/{id}"), None)["enabled"],
        false
    );
    let refused = b.post(&retry, &[("csrf", &csrf)], None);
    let page = landed(&mut b, &refused);
    assert!(
        page.body.contains("flash error") && flash(&page).contains("The endpoint is disabled"),
        "{}",
        page.body
    );
    let enable = format!("/settings/webhooks/{id}/enable");
    refused_without_token(&mut b, &csrf, &enable, &[]);
    let enabled = b.post(&enable, &[("csrf", &csrf)], None);
    assert_eq!(enabled.location, page_path);
    let page = landed(&mut b, &enabled);
    assert_eq!(
        flash(&page),
        "Enabled: the endpoint receives its events again."
    );
    assert_eq!(
        api(server, "GET", &format!("/v1/webhooks/{id}"), None)["enabled"],
        true
    );

    // Changed: a refused URL keeps what was typed; then other events are saved.
    refused_without_token(&mut b, &csrf, &page_path, &typed);
    let refused = b.post(
        &page_path,
        &[
            ("csrf", &csrf),
            ("url", "not a url"),
            ("description", "typed"),
            ("ev_report.ready", "1"),
        ],
        None,
    );
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(
        refused.body.contains("value=\"not a url\""),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("flash error"), "{}", refused.body);
    let saved = b.post(
        &page_path,
        &[
            ("csrf", &csrf),
            ("url", &url),
            ("description", "Reports"),
            ("ev_report.ready", "1"),
        ],
        None,
    );
    let page = landed(&mut b, &saved);
    assert_eq!(flash(&page), "Changes saved.");
    let changed = api(server, "GET", &format!("/v1/webhooks/{id}"), None);
    assert_eq!(changed["events"], json!(["report.ready"]));
    assert_eq!(changed["description"], "Reports");

    // Deleted after its confirmation, with its log.
    assert!(page.body.contains("Delete endpoint…"), "{}", page.body);
    let delete = format!("/settings/webhooks/{id}/delete");
    refused_without_token(&mut b, &csrf, &delete, &[]);
    assert_eq!(status_of(server, &format!("/v1/webhooks/{id}")), 200);
    let deleted = b.post(&delete, &[("csrf", &csrf)], None);
    assert_eq!(deleted.location, "/settings/webhooks");
    let page = landed(&mut b, &deleted);
    assert_eq!(
        flash(&page),
        "The endpoint is deleted with its delivery log."
    );
    assert_eq!(status_of(server, &format!("/v1/webhooks/{id}")), 404);
    assert!(
        page.body.contains("No webhook endpoint yet."),
        "{}",
        page.body
    );
}

#[test]
fn web_webhook_endpoints_secret_once_retried_disabled_and_deleted_on_sqlite() {
    webhooks(TestDb::sqlite());
}

#[test]
fn web_webhook_endpoints_secret_once_retried_disabled_and_deleted_on_postgres() {
    webhooks(TestDb::postgres());
}

fn proformas_in_a_browser(db: TestDb, name: &str) {
    let fx = WebFixture::start(&db);
    fx.run_script("documents.mjs", name, json!({}));
}

#[test]
fn web_proforma_pages_in_a_browser_on_sqlite() {
    proformas_in_a_browser(TestDb::sqlite(), "documents-sqlite");
}

#[test]
fn web_proforma_pages_in_a_browser_on_postgres() {
    proformas_in_a_browser(TestDb::postgres(), "documents-postgres");
}

/// The company's custom placeholders in the document form: one field each, labelled, a
/// required one refused empty with the form kept, the values stored on the draft and
/// shown again when it is edited.
fn placeholder_values(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    let cust = customer(server);
    api(
        server,
        "PATCH",
        "/v1/company",
        Some(json!({"customPlaceholders": [
            {"key": "po_number", "label": "Purchase order <no.>", "required": true},
            {"key": "project", "label": "Project", "default": "General"}
        ]})),
    );
    let form = b.get("/invoices/new");
    assert!(
        form.body.contains("Purchase order &lt;no.&gt; (required)"),
        "{}",
        form.body
    );
    assert!(form.body.contains("name=\"phv_project\""), "{}", form.body);
    let typed = [
        ("csrf", csrf.as_str()),
        ("recipient_id", cust.as_str()),
        ("supply_type", "services"),
        ("concept_0", "Design"),
        ("price_0", "100"),
        ("phv_po_number", ""),
        ("phv_project", "Apollo"),
    ];
    let refused = b.post("/invoices/new", &typed, None);
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("is required"), "{}", refused.body);
    assert!(
        refused.body.contains("value=\"Apollo\""),
        "kept: {}",
        refused.body
    );
    assert_eq!(count(server, "/v1/invoices"), 0);

    let mut with = typed.to_vec();
    with[5] = ("phv_po_number", "PO-4711");
    let created = b.post("/invoices/new", &with, None);
    let page = landed(&mut b, &created);
    assert_eq!(flash(&page), "Draft created.");
    let id = created.location.rsplit('/').next().expect("id").to_owned();
    let stored = api(server, "GET", &format!("/v1/invoices/{id}"), None);
    assert_eq!(
        stored["custom_placeholder_values"],
        json!([{"key": "po_number", "value": "PO-4711"}, {"key": "project", "value": "Apollo"}])
    );
    let edit = b.get(&format!("/invoices/{id}/edit"));
    assert!(edit.body.contains("value=\"PO-4711\""), "{}", edit.body);
    // Emptied on an edit, the optional one falls back to the company's default.
    let mut changed = with.to_vec();
    changed[5] = ("phv_po_number", "PO-4712");
    changed[6] = ("phv_project", "");
    let saved = b.post(&format!("/invoices/{id}/edit"), &changed, None);
    assert_eq!(flash(&landed(&mut b, &saved)), "Draft saved.");
    let stored = api(server, "GET", &format!("/v1/invoices/{id}"), None);
    assert_eq!(
        stored["custom_placeholder_values"],
        json!([{"key": "po_number", "value": "PO-4712"}, {"key": "project", "value": "General"}])
    );
}

#[test]
fn web_placeholder_values_written_on_documents_on_sqlite() {
    placeholder_values(TestDb::sqlite());
}

#[test]
fn web_placeholder_values_written_on_documents_on_postgres() {
    placeholder_values(TestDb::postgres());
}

/// A company with more customers than the document form's picker lists: the form offers
/// a search, a customer found by it can be chosen, and a draft's customer outside the
/// first 500 is still its selected option when the draft is edited.
fn customer_search(db: TestDb) {
    let fx = WebFixture::start(&db);
    let server = &fx.server;
    let (mut b, csrf) = signed_in(&fx);
    // Created first, so the newest-first list's 500 are all fillers.
    let target = api(
        server,
        "POST",
        "/v1/entities",
        Some(json!({"name": "Zeta Kunde GmbH", "type": "DE:GmbH", "vies_vat_id": "DE811907980",
            "address": {"lines": ["Hauptstraße 1"], "zipcode": "10115", "city": "Berlin", "country": "DE"}})),
    )["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for i in 0..500 {
        api(
            server,
            "POST",
            "/v1/entities",
            Some(
                json!({"name": format!("Filler {i:03}"), "type": "DE:GmbH", "address": {"country": "DE"}}),
            ),
        );
    }
    let form = b.get("/invoices/new");
    assert_eq!(form.status, 200);
    assert!(!form.body.contains("Zeta Kunde"), "not among the first 500");
    assert!(form.body.contains("Find a customer"), "{}", form.body);

    let found = b.post(
        "/invoices/new",
        &[
            ("csrf", csrf.as_str()),
            ("action", "find"),
            ("customer_q", "zeta"),
            ("concept_0", "Design"),
            ("price_0", "100"),
        ],
        None,
    );
    assert_eq!(found.status, 200, "{}", found.body);
    assert!(
        found.body.contains(&format!("value=\"{target}\"")),
        "{}",
        found.body
    );
    assert!(!found.body.contains("Filler 001"), "only the matches");
    assert!(
        found.body.contains("value=\"Design\""),
        "the lines typed stay"
    );

    let created = b.post(
        "/invoices/new",
        &[
            ("csrf", csrf.as_str()),
            ("customer_q", "zeta"),
            ("recipient_id", target.as_str()),
            ("supply_type", "services"),
            ("concept_0", "Design"),
            ("price_0", "100"),
        ],
        None,
    );
    let page = landed(&mut b, &created);
    assert_eq!(flash(&page), "Draft created.");
    let id = created.location.rsplit('/').next().expect("id").to_owned();
    let stored = api(server, "GET", &format!("/v1/invoices/{id}"), None);
    assert_eq!(stored["recipient_id"], target.as_str());
    let edit = b.get(&format!("/invoices/{id}/edit"));
    assert!(
        edit.body.contains(&format!("value=\"{target}\" selected")),
        "the draft's customer stays chosen: {}",
        edit.body
    );
}

#[test]
fn web_customers_beyond_the_picker_are_found_on_sqlite() {
    customer_search(TestDb::sqlite());
}

#[test]
fn web_customers_beyond_the_picker_are_found_on_postgres() {
    customer_search(TestDb::postgres());
}

/// A recurring invoice's page lists the invoices it made, each linked (the worker makes
/// the first period's draft on its next pass).
fn recurring_made(db: TestDb) {
    let fx = WebFixture::start_with_env(&db, &[("INVOICING_SCHEDULE_SECONDS", "1")]);
    let server = &fx.server;
    let (mut b, _) = signed_in(&fx);
    let cust = customer(server);
    let today = today_utc();
    // Paused at first, so the page is seen before anything is made.
    let r = api(
        server,
        "POST",
        "/v1/recurring-invoices",
        Some(
            json!({"recipient_id": cust, "lines": [{"concept": "Hosting", "unit_price": 5900}],
            "frequency": "monthly", "start_date": today, "status": "paused"}),
        ),
    );
    let id = r["id"].as_str().expect("id").to_owned();
    let before = b.get(&format!("/recurring/{id}"));
    assert!(before.body.contains("Invoices it made"), "{}", before.body);
    assert!(before.body.contains("None yet."), "{}", before.body);
    api(
        server,
        "PATCH",
        &format!("/v1/recurring-invoices/{id}"),
        Some(json!({"status": "active", "start_date": today})),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let made = loop {
        let list = api(
            server,
            "GET",
            &format!("/v1/invoices?recurring_invoice_id={id}"),
            None,
        );
        if let Some(first) = list["data"].as_array().and_then(|d| d.first()) {
            break first["id"].as_str().expect("id").to_owned();
        }
        assert!(Instant::now() < deadline, "the worker made no draft");
        std::thread::sleep(Duration::from_millis(200));
    };
    let after = b.get(&format!("/recurring/{id}"));
    assert!(
        after.body.contains(&format!("href=\"/invoices/{made}\"")),
        "{}",
        after.body
    );
    assert!(!after.body.contains("None yet."), "{}", after.body);
    assert!(after.body.contains("status draft"), "{}", after.body);
}

/// Today's date (UTC) as `YYYY-MM-DD`, from the system clock (days to a civil date).
fn today_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[test]
fn web_recurring_invoice_lists_what_it_made_on_sqlite() {
    recurring_made(TestDb::sqlite());
}

#[test]
fn web_recurring_invoice_lists_what_it_made_on_postgres() {
    recurring_made(TestDb::postgres());
}
