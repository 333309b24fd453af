//! Sending invoices: the PDF attached, in the recipient's language, through the jobs
//! table (nothing mailed by a request that fails or an AI caller's dry run), retries and
//! permanent failures visible on the delivery.

use std::time::Duration;

use jobs::testing::{SmtpSink, unused_port};
use serde_json::{Value, json};

use crate::{paid_support::outbox_mails, support::*};

const WAIT: Duration = Duration::from_secs(30);

/// An issued invoice to a customer with `email` and documents in `language`.
async fn issued_to(app: &TestApp, email: Option<&str>, language: Option<&str>) -> Value {
    app.settle(&app.a).await;
    let mut customer = irish_customer();
    if let Some(e) = email {
        customer["email"] = json!(e);
    }
    if let Some(l) = language {
        customer["template"] = json!({"language": l});
    }
    let c = app.entity(&app.a, customer).await;
    let d = app
        .draft(&app.a, json!({"recipient_id": c, "lines": one_line(12345)}))
        .await;
    app.issue(&app.a, d["id"].as_str().unwrap()).await
}

async fn send(app: &TestApp, who: As<'_>, id: &str, body: Value) -> crate::support::Resp {
    app.call("POST", &format!("/v1/invoices/{id}/send"), who, Some(body))
        .await
}

db_test!(
    a_send_mails_the_pdf_by_smtp_in_the_recipients_language,
    |app| {
        let inv = issued_to(&app, Some("cuentas@cliente.example"), Some("es")).await;
        let id = inv["id"].as_str().unwrap();
        let reference = inv["reference"].as_str().unwrap().to_owned();
        let sink = SmtpSink::start().await.unwrap();
        let d = send(
            &app,
            As::Human(&app.a),
            id,
            json!({"cc": ["jefe@cliente.example"], "message": "Gracias por su confianza."}),
        )
        .await
        .expect(201)
        .json();
        assert_eq!(d["kind"], "send");
        assert_eq!(d["status"], "queued");
        assert_eq!(d["to"], json!(["cuentas@cliente.example"]));
        assert_eq!(d["cc"], json!(["jefe@cliente.example"]));
        assert_eq!(
            d["attachments"],
            json!([format!("{reference}.pdf"), format!("{reference}.xml")])
        );
        assert!(
            sink.messages().is_empty(),
            "nothing is sent inside the request"
        );

        let outbox = tempfile::tempdir().unwrap();
        let worker = app.paid_worker(Some(sink.url()), outbox.path());
        worker.run_until_idle().await.unwrap();
        let mails = sink.wait_for(1, WAIT).await;
        assert_eq!(mails.len(), 1);
        let mail = &mails[0];
        let mut rcpt = mail.to.clone();
        rcpt.sort();
        assert_eq!(rcpt, ["cuentas@cliente.example", "jefe@cliente.example"]);
        let subject = mail.header("Subject").unwrap_or_default();
        assert!(
            subject.contains("Factura") || subject.contains("=?utf-8?"),
            "{subject}"
        );
        let text = mail.text();
        assert!(text.contains(&reference), "{text}");
        assert!(text.contains("le envía la factura"), "{text}");
        assert!(text.contains("Gracias por su confianza."), "{text}");
        assert!(mail.data.contains("application/pdf"), "a PDF part");
        assert!(
            mail.data.contains(&format!("{reference}.pdf")),
            "named by its reference"
        );
        // The e-invoice in the recipient's format (none set: UBL) rides along.
        assert!(mail.data.contains("application/xml"), "an XML part");
        assert!(
            mail.data.contains(&format!("{reference}.xml")),
            "named by its reference"
        );

        let list = app.deliveries(id).await;
        assert_eq!(list.len(), 1);
        assert_eq!(list[0]["status"], "sent");
        assert!(list[0]["sent_at"].is_string());
        assert_eq!(list[0]["language"], "es");
        assert!(list[0]["error"].is_null());
        // Running the worker again sends nothing twice.
        worker.run_until_idle().await.unwrap();
        assert_eq!(sink.messages().len(), 1);
    }
);

db_test!(
    without_smtp_the_mail_with_its_pdf_is_an_outbox_file,
    |app| {
        let inv = issued_to(&app, None, None).await;
        let id = inv["id"].as_str().unwrap();
        // No address on the entity and none given: 400, nothing queued.
        let r = send(&app, As::Human(&app.a), id, json!({}))
            .await
            .expect(400);
        assert!(r.text().contains("email"), "{}", r.text());
        send(
            &app,
            As::Human(&app.a),
            id,
            json!({"to": ["not an address"]}),
        )
        .await
        .expect(400);
        assert!(app.deliveries(id).await.is_empty());
        send(
            &app,
            As::Human(&app.a),
            id,
            json!({"to": ["billing@dublin.example"]}),
        )
        .await
        .expect(201);
        let outbox = tempfile::tempdir().unwrap();
        app.paid_worker(None, outbox.path())
            .run_until_idle()
            .await
            .unwrap();
        let mails = outbox_mails(outbox.path());
        assert_eq!(mails.len(), 1);
        let eml = &mails[0];
        assert!(eml.contains("To: billing@dublin.example"), "{eml}");
        assert!(eml.contains("Content-Type: application/pdf"), "{eml}");
        assert!(eml.contains("Invoice "), "English: {eml}");
        // The attachment is the invoice's PDF: the same bytes GET /pdf answers.
        let pdf = app
            .get(&format!("/v1/invoices/{id}/pdf"), As::Human(&app.a))
            .await
            .expect(200)
            .body;
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(&pdf);
        let flat: String = eml.split("\r\n").collect::<Vec<_>>().join("");
        assert!(flat.contains(&b64[..200]), "the PDF is attached");
        assert_eq!(app.deliveries(id).await[0]["status"], "sent");
    }
);

db_test!(drafts_ai_callers_and_other_companies_send_nothing, |app| {
    let inv = issued_to(&app, Some("ap@dublin.example"), None).await;
    let id = inv["id"].as_str().unwrap();
    let c = inv["recipient_id"].as_str().unwrap();
    let draft = app
        .draft(&app.a, json!({"recipient_id": c, "lines": one_line(100)}))
        .await;
    let r = send(
        &app,
        As::Human(&app.a),
        draft["id"].as_str().unwrap(),
        json!({}),
    )
    .await
    .expect(409);
    assert!(r.text().contains("issue it first"), "{}", r.text());
    send(&app, As::Human(&app.b), id, json!({}))
        .await
        .expect(404);
    app.get(&format!("/v1/invoices/{id}/deliveries"), As::Human(&app.b))
        .await
        .expect(404);

    // An AI caller's send is held: its dry run wrote no delivery and queued no job.
    let before = app.fingerprint().await;
    let held = send(&app, As::Mcp(&app.a), id, json!({}))
        .await
        .expect(202)
        .json();
    assert_eq!(app.fingerprint().await, before);
    let outbox = tempfile::tempdir().unwrap();
    let worker = app.paid_worker(None, outbox.path());
    worker.run_until_idle().await.unwrap();
    assert!(outbox_mails(outbox.path()).is_empty());
    // Approved by a person, it is queued and mailed.
    app.call(
        "POST",
        &format!(
            "/v1/ai-audit/{}/approve",
            held["auditEntryId"].as_str().unwrap()
        ),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    worker.run_until_idle().await.unwrap();
    assert_eq!(outbox_mails(outbox.path()).len(), 1);
    assert_eq!(app.deliveries(id).await[0]["status"], "sent");
});

db_test!(
    a_refused_address_fails_for_good_and_an_outage_is_retried,
    |app| {
        let inv = issued_to(&app, Some("gone@dublin.example"), None).await;
        let id = inv["id"].as_str().unwrap();
        let sink = SmtpSink::start().await.unwrap();
        sink.reject("gone@dublin.example");
        send(&app, As::Human(&app.a), id, json!({}))
            .await
            .expect(201);
        let outbox = tempfile::tempdir().unwrap();
        app.paid_worker(Some(sink.url()), outbox.path())
            .run_until_idle()
            .await
            .unwrap();
        let list = app.deliveries(id).await;
        assert_eq!(list[0]["status"], "failed");
        let error = list[0]["error"].as_str().unwrap_or_default();
        assert!(error.contains("refused"), "{error}");
        assert!(sink.messages().is_empty());

        // The mail server is down: the try fails, the delivery stays queued with the error,
        // and the next try (once the server is back) sends it.
        let port = unused_port().unwrap();
        send(
            &app,
            As::Human(&app.a),
            id,
            json!({"to": ["ap@dublin.example"]}),
        )
        .await
        .expect(201);
        let down = app.paid_worker(Some(format!("smtp://127.0.0.1:{port}")), outbox.path());
        down.run_until_idle().await.unwrap();
        let list = app.deliveries(id).await;
        assert_eq!(list[1]["status"], "queued");
        assert!(list[1]["error"].is_string(), "{}", list[1]);
        let back = SmtpSink::start_on(port).await.unwrap();
        let worker = app.paid_worker(Some(back.url()), outbox.path());
        let until = tokio::time::Instant::now() + WAIT;
        while app.deliveries(id).await[1]["status"] == "queued"
            && tokio::time::Instant::now() < until
        {
            worker.run_until_idle().await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let list = app.deliveries(id).await;
        assert_eq!(list[1]["status"], "sent", "{}", list[1]);
        assert!(list[1]["error"].is_null());
        assert_eq!(back.messages().len(), 1);
    }
);

db_test!(a_company_with_a_full_mail_queue_gets_429, |app| {
    let inv = issued_to(&app, Some("ap@dublin.example"), None).await;
    let id = inv["id"].as_str().unwrap();
    // Fill the company's queue up to the cap, as a burst of sends would.
    let mut tx = app.db.begin_write().await.unwrap();
    for _ in 0..api::routes::invoices::send::MAX_QUEUED_PER_COMPANY {
        sqlx::query(
            "INSERT INTO deliveries (id, company_id, invoice_id, kind, step, status, to_json, \
             cc_json, message, attachments_json, language, error, created_at, sent_at) \
             VALUES ($1, $2, $3, 'send', NULL, 'queued', '[]', '[]', NULL, '[]', 'en', NULL, 0, NULL)",
        )
        .bind(uuid::Uuid::now_v7().to_string())
        .bind(&app.a.company_id)
        .bind(id)
        .execute(tx.conn())
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    let r = send(&app, As::Human(&app.a), id, json!({}))
        .await
        .expect(429);
    assert!(r.headers.contains_key("retry-after"));
    assert!(r.text().contains("waiting"), "{}", r.text());
    // Another company is not affected.
    app.settle(&app.b).await;
    let mut customer = irish_customer();
    customer["email"] = json!("ap@b-customer.example");
    let c = app.entity(&app.b, customer).await;
    let d = app
        .draft(&app.b, json!({"recipient_id": c, "lines": one_line(100)}))
        .await;
    let issued = app.issue(&app.b, d["id"].as_str().unwrap()).await;
    send(
        &app,
        As::Human(&app.b),
        issued["id"].as_str().unwrap(),
        json!({}),
    )
    .await
    .expect(201);
});
