//! Webhooks: a receiver on 127.0.0.1 checks every signature and the events of invoices,
//! expenses, AI audit entries and reports; retries, re-sends and disabling; SSRF refusals at
//! creation and at delivery; isolation between companies; AI callers refused on writes; the
//! secret shown once; the Python snippet of docs/WEBHOOKS.md run against a real delivery.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    body::Bytes,
    extract::State,
    http::{HeaderMap, StatusCode},
    routing::post,
};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac as _};
use jobs::{Registry, Worker};
use serde_json::{Value, json};

use crate::background::{context, fast_config};
use crate::support::*;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Got {
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Got {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
    pub(crate) fn event(&self) -> String {
        self.json()["type"].as_str().unwrap().to_owned()
    }
}

/// A webhook receiver on 127.0.0.1: keeps every request, answers the queued statuses
/// first and 200 after them.
#[derive(Clone, Default)]
pub(crate) struct Receiver {
    got: Arc<Mutex<Vec<Got>>>,
    answers: Arc<Mutex<VecDeque<u16>>>,
    pub(crate) url: String,
}

impl Receiver {
    pub(crate) async fn start() -> Self {
        let mut r = Self::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        r.url = format!(
            "http://127.0.0.1:{}/hook",
            listener.local_addr().unwrap().port()
        );
        let app = axum::Router::new()
            .route("/hook", post(receive))
            .with_state(r.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        r
    }

    fn answer(&self, statuses: &[u16]) {
        self.answers.lock().unwrap().extend(statuses);
    }

    pub(crate) fn got(&self) -> Vec<Got> {
        self.got.lock().unwrap().clone()
    }

    pub(crate) fn events(&self) -> Vec<String> {
        self.got().iter().map(Got::event).collect()
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let headers = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    r.got.lock().unwrap().push(Got {
        headers,
        body: body.to_vec(),
    });
    let status = r.answers.lock().unwrap().pop_front().unwrap_or(200);
    StatusCode::from_u16(status).unwrap()
}

/// Checks a delivery as a receiver must: the Standard Webhooks signature, computed here
/// with the secret, over `id.timestamp.body`, and a timestamp close to `now` (the
/// service's clock when it was sent: the worker signs with the clock tests set).
pub(crate) fn verify(secret: &str, got: &Got, now: chrono::DateTime<chrono::Utc>) {
    let id = &got.headers["webhook-id"];
    let timestamp = &got.headers["webhook-timestamp"];
    assert!(id.starts_with("msg_"), "{id}");
    let ts: i64 = timestamp.parse().unwrap();
    assert!(
        (now.timestamp() - ts).abs() < 300,
        "fresh timestamp: {ts}, now {now}"
    );
    let key = STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap())
        .unwrap();
    let mut mac = <Hmac<sha2::Sha256> as hmac::Mac>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(&got.body);
    let expected = format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()));
    let signatures = &got.headers["webhook-signature"];
    assert!(
        signatures.split(' ').any(|s| s == expected),
        "bad signature {signatures}, expected {expected}"
    );
    assert_eq!(got.headers["content-type"], "application/json");
    let body = got.json();
    assert!(
        body["timestamp"]
            .as_str()
            .unwrap()
            .parse::<chrono::DateTime<chrono::Utc>>()
            .is_ok()
    );
    assert!(body["data"].is_object());
}

/// A worker that delivers webhooks (to 127.0.0.1 when `allow_private`), giving up on a
/// delivery after `attempts`.
fn hook_worker(app: &TestApp, dir: &std::path::Path, allow_private: bool, attempts: i64) -> Worker {
    let mut ctx = context(&app.db, None, dir).with_clock(app.state.clock.clone());
    ctx.webhooks = Arc::new(jobs::webhooks::Settings {
        allow_private,
        max_attempts: attempts,
        ..jobs::webhooks::Settings::default()
    });
    Worker::new(ctx, Registry::standard(), fast_config())
}

/// Runs the worker (retries come back after a fraction of a second) until `done` holds.
pub(crate) async fn drive(worker: &Worker, what: &str, done: impl Fn() -> bool) {
    for _ in 0..400 {
        worker.run_until_idle().await.unwrap();
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

/// Creates an endpoint as a person; returns (id, secret).
pub(crate) async fn endpoint(
    app: &TestApp,
    t: &Tenant,
    url: &str,
    events: &[&str],
) -> (String, String) {
    let created = app
        .call(
            "POST",
            "/v1/webhooks",
            As::Human(t),
            Some(json!({"url": url, "events": events, "description": "test receiver"})),
        )
        .await
        .expect(201)
        .json();
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(STANDARD.decode(&secret[6..]).unwrap().len(), 32);
    (created["id"].as_str().unwrap().to_owned(), secret)
}

async fn deliveries(app: &TestApp, t: &Tenant, endpoint: &str) -> Vec<Value> {
    app.get(&format!("/v1/webhooks/{endpoint}/deliveries"), As::Human(t))
        .await
        .expect(200)
        .json()["data"]
        .as_array()
        .unwrap()
        .clone()
}

/// A draft for the Irish customer, as a person.
async fn draft(app: &TestApp, t: &Tenant, price: i64) -> String {
    let customer = app.entity(t, irish_customer()).await;
    app.draft(
        t,
        json!({"recipient_id": customer, "lines": one_line(price)}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

db_test!(every_event_is_signed_and_typed, |app| {
    let rx = Receiver::start().await;
    let all = [
        "invoice.created",
        "invoice.issued",
        "invoice.paid",
        "expense.created",
        "report.ready",
        "ai_audit.pending",
        "ai_audit.approved",
        "ai_audit.rejected",
        "ai_audit.failed",
    ];
    let (hook, secret) = endpoint(&app, &app.a, &rx.url, &all).await;
    app.settle(&app.a).await;

    // Invoices: created, issued, paid (a partial payment does not settle it).
    let id = draft(&app, &app.a, 10_000).await;
    let issued = app.issue(&app.a, &id).await;
    let total = issued["total"].as_i64().unwrap();
    let pay = |amount: i64| {
        let app = &app;
        let path = format!("/v1/invoices/{id}/payments");
        async move {
            app.call(
                "POST",
                &path,
                As::Human(&app.a),
                Some(json!({"amount_minor": amount})),
            )
            .await
            .expect(201);
        }
    };
    pay(100).await;
    pay(total - 100).await;

    // An expense.
    let supplier = app
        .entity(
            &app.a,
            json!({"name": "Paper Ltd", "type": "IE:LTD",
            "address": {"lines": ["4 Dock"], "city": "Dublin", "zipcode": "D01", "country": "IE"}}),
        )
        .await;
    app.call(
        "POST",
        "/v1/expenses",
        As::Human(&app.a),
        Some(json!({"supplier_id": supplier, "invoice_reference": "P-1",
            "lines": [{"concept": "Paper", "subtotal": 10000}]})),
    )
    .await
    .expect(201);

    // An AI caller's invoice: held (pending), the dry run emits nothing of the invoice;
    // approved, it emits the invoice's creation and the approval.
    let customer = app.entity(&app.a, irish_customer()).await;
    let held = app
        .call(
            "POST",
            "/v1/invoices",
            As::Mcp(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(500)})),
        )
        .await
        .expect(202)
        .json();
    let entry = held["auditEntryId"].as_str().unwrap().to_owned();
    let queued: Vec<String> = deliveries(&app, &app.a, &hook)
        .await
        .iter()
        .map(|d| d["event_type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        queued.iter().filter(|e| *e == "invoice.created").count(),
        1,
        "{queued:?}"
    );
    assert_eq!(queued[0], "ai_audit.pending", "{queued:?}");
    app.call(
        "POST",
        &format!("/v1/ai-audit/{entry}/approve"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    // Another held and rejected; one held whose replay fails (its draft is gone): failed.
    let patch = app
        .call(
            "PATCH",
            "/v1/company",
            As::Ai(&app.a),
            Some(json!({"friendlyName": "Agent"})),
        )
        .await
        .expect(202)
        .json();
    let rejected = patch["auditEntryId"].as_str().unwrap().to_owned();
    app.call(
        "POST",
        &format!("/v1/ai-audit/{rejected}/reject"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    let doomed = draft(&app, &app.a, 700).await;
    let del = app
        .call(
            "DELETE",
            &format!("/v1/invoices/{doomed}"),
            As::Ai(&app.a),
            None,
        )
        .await
        .expect(202)
        .json();
    app.call(
        "DELETE",
        &format!("/v1/invoices/{doomed}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    let failed = del["auditEntryId"].as_str().unwrap().to_owned();
    let outcome = app
        .call(
            "POST",
            &format!("/v1/ai-audit/{failed}/approve"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(outcome["status"], "failed");

    // A report: rendered by the worker, then ready.
    app.call(
        "POST",
        "/v1/reports",
        As::Human(&app.a),
        Some(
            json!({"report_type": "vat_summary", "period_start": "2026-01-01T00:00:00Z",
            "period_end": "2026-04-01T00:00:00Z", "locales": ["en"]}),
        ),
    )
    .await
    .expect(201);

    let dir = tempfile::tempdir().unwrap();
    let worker = hook_worker(&app, dir.path(), true, 3);
    drive(&worker, "every event", || {
        rx.events().contains(&"report.ready".to_owned()) && rx.got().len() >= 13
    })
    .await;

    let got = rx.got();
    for g in &got {
        verify(&secret, g, app.now());
    }
    let mut events = rx.events();
    events.sort();
    let mut expected = vec![
        "invoice.created", // the person's draft
        "invoice.created", // the customer's draft for the AI request... approved
        "invoice.created", // the doomed draft
        "invoice.issued",
        "invoice.paid",
        "expense.created",
        "ai_audit.pending",
        "ai_audit.pending",
        "ai_audit.pending",
        "ai_audit.approved",
        "ai_audit.rejected",
        "ai_audit.failed",
        "report.ready",
    ];
    expected.sort();
    assert_eq!(events, expected);

    let by_type = |t: &str| got.iter().find(|g| g.event() == t).unwrap().json();
    let paid = by_type("invoice.paid");
    assert_eq!(paid["data"]["id"], id.as_str());
    assert_eq!(paid["data"]["paid_minor"], total);
    assert_eq!(paid["data"]["status"], "issued");
    let issued_event = by_type("invoice.issued");
    assert_eq!(issued_event["data"]["reference"], issued["reference"]);
    assert_eq!(by_type("ai_audit.approved")["data"]["id"], entry.as_str());
    assert_eq!(by_type("ai_audit.approved")["data"]["status"], "approved");
    assert_eq!(
        by_type("ai_audit.rejected")["data"]["id"],
        rejected.as_str()
    );
    assert_eq!(by_type("ai_audit.failed")["data"]["id"], failed.as_str());
    assert!(
        by_type("ai_audit.failed")["data"]["errorMessage"]
            .as_str()
            .is_some()
    );
    assert_eq!(
        by_type("report.ready")["data"]["report_type"],
        "vat_summary"
    );

    // The log: every delivery succeeded on its first attempt, with the receiver's 200, and
    // carries the webhook-id the receiver saw.
    let log = deliveries(&app, &app.a, &hook).await;
    assert_eq!(log.len(), 13);
    for d in &log {
        assert_eq!(d["status"], "succeeded", "{d}");
        assert_eq!(d["attempts"], 1);
        assert_eq!(d["response_status"], 200);
        assert!(got.iter().any(
            |g| g.headers["webhook-id"] == d["message_id"].as_str().unwrap()
                && g.json() == d["payload"]
        ));
    }
});

db_test!(a_failed_delivery_is_retried_and_can_be_sent_again, |app| {
    let rx = Receiver::start().await;
    let (hook, secret) = endpoint(&app, &app.a, &rx.url, &["invoice.created"]).await;
    rx.answer(&[500, 503]);
    draft(&app, &app.a, 100).await;
    let log = deliveries(&app, &app.a, &hook).await;
    let delivery = log[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(log[0]["status"], "pending");
    // Pending: it will be sent by itself, not again by hand.
    let retry = format!("/v1/webhooks/{hook}/deliveries/{delivery}/retry");
    app.call("POST", &retry, As::Human(&app.a), None)
        .await
        .expect(409);

    let dir = tempfile::tempdir().unwrap();
    let worker = hook_worker(&app, dir.path(), true, 5);
    drive(&worker, "the third attempt", || rx.got().len() >= 3).await;
    let log = deliveries(&app, &app.a, &hook).await;
    assert_eq!(log[0]["status"], "succeeded", "{}", log[0]);
    assert_eq!(log[0]["attempts"], 3);
    assert_eq!(log[0]["response_status"], 200);
    let codes: Vec<&Value> = log[0]["attempt_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["response_status"])
        .collect();
    assert_eq!(codes, [&json!(500), &json!(503), &json!(200)]);
    assert!(
        log[0]["attempt_log"][0]["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 500")
    );
    assert!(log[0]["attempt_log"][2]["error"].is_null());
    let got = rx.got();
    assert_eq!(got.len(), 3);
    for g in &got {
        verify(&secret, g, app.now());
        assert_eq!(
            g.headers["webhook-id"], got[0].headers["webhook-id"],
            "same message"
        );
        assert_eq!(g.body, got[0].body, "same body");
    }

    // Sent again by hand: the same message, with a new run of attempts.
    let again = app
        .call("POST", &retry, As::Human(&app.a), None)
        .await
        .expect(200)
        .json();
    assert_eq!(again["status"], "pending");
    drive(&worker, "the re-send", || rx.got().len() >= 4).await;
    let got = rx.got();
    verify(&secret, &got[3], app.now());
    assert_eq!(got[3].headers["webhook-id"], got[0].headers["webhook-id"]);
    assert_eq!(
        deliveries(&app, &app.a, &hook).await[0]["status"],
        "succeeded"
    );
    // Another company's delivery id, or another endpoint's: 404.
    app.call("POST", &retry, As::Human(&app.b), None)
        .await
        .expect(404);
});

db_test!(
    a_long_run_of_failures_disables_the_endpoint_and_mails_its_owner,
    |app| {
        let rx = Receiver::start().await;
        let (hook, _) = endpoint(&app, &app.a, &rx.url, &["invoice.created"]).await;
        rx.answer(&[500; 3]);
        draft(&app, &app.a, 100).await;
        let dir = tempfile::tempdir().unwrap();
        let worker = hook_worker(&app, dir.path(), true, 3);
        drive(&worker, "three failed attempts", || rx.got().len() >= 3).await;
        worker.run_until_idle().await.unwrap();
        let log = deliveries(&app, &app.a, &hook).await;
        assert_eq!(log[0]["status"], "failed");
        assert_eq!(log[0]["attempts"], 3);
        assert_eq!(log[0]["response_status"], 500);
        assert!(log[0]["last_error"].as_str().unwrap().contains("HTTP 500"));
        let ep = app
            .get(&format!("/v1/webhooks/{hook}"), As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(ep["enabled"], false);
        assert_eq!(ep["consecutive_failures"], 3);
        assert!(
            ep["disabled_reason"]
                .as_str()
                .unwrap()
                .contains("3 attempts")
        );
        // The owner is told, by mail (sent by the same worker).
        let mails = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect::<Vec<_>>();
        assert_eq!(mails.len(), 1, "one mail");
        assert!(mails[0].contains("owner@alpha.test"));
        assert!(mails[0].contains("disabled"));

        // Disabled: new events are not queued for it; re-sending is refused until it is enabled.
        draft(&app, &app.a, 100).await;
        assert_eq!(deliveries(&app, &app.a, &hook).await.len(), 1);
        let delivery = log[0]["id"].as_str().unwrap();
        let retry = format!("/v1/webhooks/{hook}/deliveries/{delivery}/retry");
        app.call("POST", &retry, As::Human(&app.a), None)
            .await
            .expect(409);
        let ep = app
            .call(
                "PATCH",
                &format!("/v1/webhooks/{hook}"),
                As::Human(&app.a),
                Some(json!({"enabled": true})),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(ep["enabled"], true);
        assert_eq!(ep["consecutive_failures"], 0);
        assert!(ep["disabled_reason"].is_null());
        app.call("POST", &retry, As::Human(&app.a), None)
            .await
            .expect(200);
        drive(&worker, "the re-send", || rx.got().len() >= 4).await;
        worker.run_until_idle().await.unwrap();
        assert_eq!(
            deliveries(&app, &app.a, &hook).await[0]["status"],
            "succeeded"
        );
    }
);

db_test!(
    private_targets_are_refused_at_creation_and_at_delivery,
    |app| {
        // A service as deployed: private targets not allowed.
        let strict = api::app(api::AppState::new(
            app.db.clone(),
            api::ApiConfig {
                public_url: "http://invoicing.test".into(),
                secret_key: test_secret(),
                ..api::ApiConfig::default()
            },
        ));
        let create = |url: &'static str| {
            let strict = strict.clone();
            let t = app.a.clone();
            async move {
                use tower::ServiceExt;
                let req = axum::http::Request::post("/v1/webhooks")
                    .header("authorization", format!("Bearer {}", t.token))
                    .header("x-human-proof", &t.proof)
                    .header("content-type", "application/json")
                    .body(axum::body::Body::from(
                        json!({"url": url, "events": ["invoice.created"]}).to_string(),
                    ))
                    .unwrap();
                let resp = strict.oneshot(req).await.unwrap();
                let status = resp.status().as_u16();
                let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                    .await
                    .unwrap();
                (status, String::from_utf8_lossy(&body).into_owned())
            }
        };
        let before = app.fingerprint().await;
        for url in [
            "http://127.0.0.1:8080/hook",
            "http://localhost/hook",
            "http://localhost./hook",
            "http://10.0.0.1/hook",
            "http://192.168.1.20/hook",
            "http://172.20.0.1/hook",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/hook",
            "http://[fe80::1]/hook",
            "http://[::ffff:10.0.0.1]/hook",
            "http://0.0.0.0/hook",
            "ftp://example.com/hook",
            "file:///etc/passwd",
            "https://user:secret@example.com/hook",
        ] {
            let (status, body) = create(url).await;
            assert_eq!(status, 400, "{url}: {body}");
        }
        let (status, body) = create("http://127.0.0.1:8080/hook").await;
        assert!(
            body.contains("INVOICING_WEBHOOKS_ALLOW_PRIVATE"),
            "{status} {body}"
        );
        assert_eq!(app.fingerprint().await, before, "nothing written");
        // A public address is accepted.
        let (status, body) = create("https://93.184.216.34/hook").await;
        assert_eq!(status, 201, "{body}");

        // At delivery time: endpoints that became internal (here: created where private targets
        // were allowed) are refused by a worker that does not allow them, by literal address and
        // by the address a name resolves to when connecting.
        let rx = Receiver::start().await;
        let by_name = rx.url.replace("127.0.0.1", "localhost");
        let (literal, _) = endpoint(&app, &app.a, &rx.url, &["invoice.created"]).await;
        let (named, _) = endpoint(&app, &app.a, &by_name, &["invoice.created"]).await;
        draft(&app, &app.a, 100).await;
        let dir = tempfile::tempdir().unwrap();
        let strict_worker = hook_worker(&app, dir.path(), false, 1);
        strict_worker.run_until_idle().await.unwrap();
        assert!(rx.got().is_empty(), "nothing reached the internal address");
        for hook in [&literal, &named] {
            let log = deliveries(&app, &app.a, hook).await;
            assert_eq!(log[0]["status"], "failed", "{}", log[0]);
            let error = log[0]["last_error"].as_str().unwrap();
            assert!(error.contains("loopback, private or link-local"), "{error}");
            assert!(log[0]["response_status"].is_null());
        }
        // With one attempt allowed, that was the whole run of failures: both are disabled. Enabled
        // again and re-sent, through a worker that allows private targets, they arrive.
        for hook in [&literal, &named] {
            let path = format!("/v1/webhooks/{hook}");
            let ep = app.get(&path, As::Human(&app.a)).await.expect(200).json();
            assert_eq!(ep["enabled"], false);
            app.call(
                "PATCH",
                &path,
                As::Human(&app.a),
                Some(json!({"enabled": true})),
            )
            .await
            .expect(200);
            let d = deliveries(&app, &app.a, hook).await[0]["id"]
                .as_str()
                .unwrap()
                .to_owned();
            app.call(
                "POST",
                &format!("/v1/webhooks/{hook}/deliveries/{d}/retry"),
                As::Human(&app.a),
                None,
            )
            .await
            .expect(200);
        }
        let open = hook_worker(&app, dir.path(), true, 1);
        drive(&open, "both deliveries", || rx.got().len() >= 2).await;
    }
);

db_test!(companies_never_see_each_others_webhooks, |app| {
    let rx_a = Receiver::start().await;
    let rx_b = Receiver::start().await;
    let (hook_a, secret_a) = endpoint(&app, &app.a, &rx_a.url, &["invoice.created"]).await;
    let (hook_b, secret_b) = endpoint(&app, &app.b, &rx_b.url, &["invoice.created"]).await;
    // B cannot read, change, delete or list the deliveries of A's endpoint.
    let path = format!("/v1/webhooks/{hook_a}");
    app.get(&path, As::Human(&app.b)).await.expect(404);
    app.get(&format!("{path}/deliveries"), As::Human(&app.b))
        .await
        .expect(404);
    app.call(
        "PATCH",
        &path,
        As::Human(&app.b),
        Some(json!({"enabled": false})),
    )
    .await
    .expect(404);
    app.call("DELETE", &path, As::Human(&app.b), None)
        .await
        .expect(404);
    let list_b = app
        .get("/v1/webhooks", As::Human(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(list_b["data"].as_array().unwrap().len(), 1);
    assert_eq!(list_b["data"][0]["id"], hook_b.as_str());

    // Each company's events go to its own endpoint only.
    let a_draft = draft(&app, &app.a, 100).await;
    let b_draft = draft(&app, &app.b, 200).await;
    let dir = tempfile::tempdir().unwrap();
    let worker = hook_worker(&app, dir.path(), true, 3);
    drive(&worker, "both deliveries", || {
        rx_a.got().len() == 1 && rx_b.got().len() == 1
    })
    .await;
    assert_eq!(rx_a.got()[0].json()["data"]["id"], a_draft.as_str());
    assert_eq!(rx_b.got()[0].json()["data"]["id"], b_draft.as_str());
    verify(&secret_a, &rx_a.got()[0], app.now());
    verify(&secret_b, &rx_b.got()[0], app.now());
    assert_ne!(secret_a, secret_b);
    let d = deliveries(&app, &app.a, &hook_a).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    app.call(
        "POST",
        &format!("/v1/webhooks/{hook_b}/deliveries/{d}/retry"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
});

db_test!(ai_callers_read_webhooks_but_never_change_them, |app| {
    let rx = Receiver::start().await;
    let (hook, _) = endpoint(&app, &app.a, &rx.url, &["invoice.created"]).await;
    draft(&app, &app.a, 100).await;
    let delivery = deliveries(&app, &app.a, &hook).await[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = app.everything().await;
    for who in [As::Ai(&app.a), As::Mcp(&app.a)] {
        for (method, path, body) in [
            (
                "POST",
                "/v1/webhooks".to_owned(),
                Some(json!({"url": rx.url, "events": ["invoice.paid"]})),
            ),
            (
                "PATCH",
                format!("/v1/webhooks/{hook}"),
                Some(json!({"enabled": false})),
            ),
            ("DELETE", format!("/v1/webhooks/{hook}"), None),
            (
                "POST",
                format!("/v1/webhooks/{hook}/deliveries/{delivery}/retry"),
                None,
            ),
        ] {
            let resp = app.call(method, &path, who, body).await.expect(403);
            assert_eq!(resp.json()["error"], "human_required", "{method} {path}");
        }
        let list = app.get("/v1/webhooks", who).await.expect(200).json();
        assert_eq!(list["data"][0]["id"], hook.as_str());
        app.get(&format!("/v1/webhooks/{hook}/deliveries"), who)
            .await
            .expect(200);
    }
    assert_eq!(
        app.everything().await,
        before,
        "nothing written, nothing queued for review"
    );
});

db_test!(the_secret_is_shown_once_and_kept_encrypted, |app| {
    let rx = Receiver::start().await;
    let body = json!({"url": rx.url, "events": ["invoice.created", "ai_audit.pending"]});
    let created = app
        .call_with(
            "POST",
            "/v1/webhooks",
            &[
                ("authorization", format!("Bearer {}", app.a.token)),
                ("x-human-proof", app.a.proof.clone()),
                ("content-type", "application/json".into()),
                ("idempotency-key", "hook-1".into()),
            ],
            Some(body.to_string().into_bytes()),
        )
        .await
        .expect(201)
        .json();
    let secret = created["secret"].as_str().unwrap();
    let id = created["id"].as_str().unwrap();
    assert_eq!(created["enabled"], true);
    let shown = app
        .get(&format!("/v1/webhooks/{id}"), As::Human(&app.a))
        .await
        .expect(200);
    assert!(shown.json().get("secret").is_none());
    assert!(!shown.text().contains(&secret[6..]));
    let list = app.get("/v1/webhooks", As::Human(&app.a)).await.expect(200);
    assert!(!list.text().contains(&secret[6..]));
    // The same idempotent request again is not answered with the secret.
    let again = app
        .call_with(
            "POST",
            "/v1/webhooks",
            &[
                ("authorization", format!("Bearer {}", app.a.token)),
                ("x-human-proof", app.a.proof.clone()),
                ("content-type", "application/json".into()),
                ("idempotency-key", "hook-1".into()),
            ],
            Some(body.to_string().into_bytes()),
        )
        .await
        .expect(409);
    assert!(!again.text().contains(&secret[6..]));
    // Not in the database in clear, nor base64-decoded.
    let everything = app.everything().await;
    assert!(!everything.contains(&secret[6..]));
    assert_eq!(
        app.get("/v1/webhooks", As::Human(&app.a)).await.json()["data"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
});

db_test!(bad_webhook_requests_are_refused_with_what_to_fix, |app| {
    let before = app.fingerprint().await;
    for (body, says) in [
        (
            json!({"url": "https://example.com/h", "events": ["invoice.exploded"]}),
            "invoice.exploded",
        ),
        (
            json!({"url": "https://example.com/h", "events": []}),
            "at least one",
        ),
        (
            json!({"url": "example.com/h", "events": ["invoice.paid"]}),
            "URL",
        ),
        (
            json!({"url": "https://example.com/h", "events": ["invoice.paid"], "secret": "x"}),
            "secret",
        ),
    ] {
        let r = app
            .call(
                "POST",
                "/v1/webhooks",
                As::Human(&app.a),
                Some(body.clone()),
            )
            .await
            .expect(400);
        assert!(r.text().contains(says), "{body}: {}", r.text());
    }
    assert_eq!(app.fingerprint().await, before);
    let (id, _) = endpoint(&app, &app.a, "https://example.com/h", &["invoice.paid"]).await;
    app.call(
        "PATCH",
        &format!("/v1/webhooks/{id}"),
        As::Human(&app.a),
        Some(json!({"events": ["nope"]})),
    )
    .await
    .expect(400);
    let changed = app
        .call(
            "PATCH",
            &format!("/v1/webhooks/{id}"),
            As::Human(&app.a),
            Some(json!({"events": ["report.ready", "report.ready"], "description": "reports"})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(changed["events"], json!(["report.ready"]));
    assert_eq!(changed["description"], "reports");
    assert_eq!(changed["url"], "https://example.com/h");
    // At most 20 endpoints per company.
    for _ in 1..20 {
        endpoint(&app, &app.a, "https://example.com/h", &["invoice.paid"]).await;
    }
    let r = app
        .call(
            "POST",
            "/v1/webhooks",
            As::Human(&app.a),
            Some(json!({"url": "https://example.com/h", "events": ["invoice.paid"]})),
        )
        .await
        .expect(400);
    assert!(r.text().contains("at most 20"), "{}", r.text());
    app.call(
        "DELETE",
        &format!("/v1/webhooks/{id}"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(204);
    app.get(&format!("/v1/webhooks/{id}"), As::Human(&app.a))
        .await
        .expect(404);
});

/// The Python of docs/WEBHOOKS.md's "Verifying a delivery", as written there.
fn doc_snippet() -> String {
    let doc = include_str!("../../../../docs/WEBHOOKS.md");
    let section = doc
        .split("## Verifying a delivery")
        .nth(1)
        .expect("the section");
    let code = section.split("```python\n").nth(1).expect("a python block");
    code.split("```").next().unwrap().to_owned()
}

fn python() -> String {
    std::env::var("INVOICING_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Runs the snippet on a delivery; true when it accepts it.
fn python_accepts(secret: &str, got: &Got) -> bool {
    let program = format!(
        "import base64, hashlib, hmac, json, sys\n\
         given = json.load(sys.stdin)\n\
         secret, headers, body = given['secret'], given['headers'], base64.b64decode(given['body'])\n\
         {}",
        doc_snippet()
    );
    let input =
        json!({"secret": secret, "headers": got.headers, "body": STANDARD.encode(&got.body)});
    let mut child = std::process::Command::new(python())
        .args(["-c", &program])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python (INVOICING_TEST_PYTHON)");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    child.wait().unwrap().success()
}

db_test!(
    the_documented_python_check_verifies_a_real_delivery,
    |app| {
        assert_eq!(
            doc_snippet().trim().lines().count(),
            3,
            "three lines, as the doc says"
        );
        let rx = Receiver::start().await;
        let (_, secret) = endpoint(&app, &app.a, &rx.url, &["invoice.created"]).await;
        draft(&app, &app.a, 100).await;
        let dir = tempfile::tempdir().unwrap();
        let worker = hook_worker(&app, dir.path(), true, 3);
        drive(&worker, "the delivery", || !rx.got().is_empty()).await;
        let got = rx.got().remove(0);
        assert!(
            python_accepts(&secret, &got),
            "the snippet accepts a real delivery"
        );
        let mut tampered = got.clone();
        tampered.body = tampered
            .body
            .replace_first(b"invoice.created", b"invoice.paid!!!");
        assert!(
            !python_accepts(&secret, &tampered),
            "and refuses a changed body"
        );
        let (_, other) = endpoint(&app, &app.a, &rx.url, &["invoice.created"]).await;
        assert!(
            !python_accepts(&other, &got),
            "and another endpoint's secret"
        );
    }
);

trait ReplaceFirst {
    fn replace_first(&self, from: &[u8], to: &[u8]) -> Vec<u8>;
}

impl ReplaceFirst for Vec<u8> {
    fn replace_first(&self, from: &[u8], to: &[u8]) -> Vec<u8> {
        let at = self
            .windows(from.len())
            .position(|w| w == from)
            .expect("present");
        [&self[..at], to, &self[at + from.len()..]].concat()
    }
}

db_test!(verifactu_answers_are_events, aeat, |app| {
    use jobs::fake_aeat::{Answer, FakeAeat};
    let fake = FakeAeat::start().await.unwrap();
    crate::verifactu::spanish(&app).await;
    crate::verifactu::authorize(&app).await;
    let rx = Receiver::start().await;
    let (_, secret) = endpoint(
        &app,
        &app.a,
        &rx.url,
        &["verifactu.accepted", "verifactu.rejected"],
    )
    .await;
    let customer = app
        .entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506",
            "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}}))
        .await;
    let mut ids = Vec::new();
    for price in [10_000, 20_000] {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(price)}),
            )
            .await;
        ids.push(
            app.issue(&app.a, d["id"].as_str().unwrap()).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    fake.push(Answer::Reject {
        positions: vec![1],
        code: 1189,
        description: "El bloque Destinatarios tiene que estar cumplimentado.".into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = context(&app.db, None, dir.path()).with_clock(app.state.clock.clone());
    ctx.aeat = Some(Arc::new(
        jobs::aeat::AeatClient::new(&jobs::aeat::AeatSettings {
            endpoint: fake.url(),
            cert: None,
            cert_password: None,
            ca: None,
            timeout: Duration::from_secs(10),
        })
        .unwrap(),
    ));
    ctx.webhooks = Arc::new(jobs::webhooks::Settings {
        allow_private: true,
        ..jobs::webhooks::Settings::default()
    });
    let worker = Worker::new(ctx, Registry::standard(), fast_config());
    drive(&worker, "both answers", || rx.got().len() >= 2).await;
    let got = rx.got();
    for g in &got {
        verify(&secret, g, app.now());
    }
    let of = |invoice: &str| {
        got.iter()
            .map(Got::json)
            .find(|b| b["data"]["invoice_id"] == invoice)
            .unwrap()
    };
    let accepted = of(&ids[0]);
    assert_eq!(accepted["type"], "verifactu.accepted");
    assert_eq!(accepted["data"]["status"], "accepted");
    let rejected = of(&ids[1]);
    assert_eq!(rejected["type"], "verifactu.rejected");
    assert_eq!(rejected["data"]["error_code"], "1189");
});

db_test!(a_rolled_back_request_emits_nothing, |app| {
    let rx = Receiver::start().await;
    let (hook, _) = endpoint(&app, &app.a, &rx.url, &["invoice.issued"]).await;
    app.settle(&app.a).await;
    // Two drafts issued in one request: the first would issue, the second cannot (its
    // recipient has no address), so the request fails and nothing of it is kept.
    let good = draft(&app, &app.a, 100).await;
    let bare = app
        .entity(
            &app.a,
            json!({"name": "Bare GmbH", "type": "DE:GmbH", "address": {"country": "DE"}}),
        )
        .await;
    let bad = app
        .draft(
            &app.a,
            json!({"recipient_id": bare, "lines": one_line(100)}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = app.jobs(Some("webhook.deliver")).await.len();
    app.call(
        "POST",
        "/v1/invoices/bulk/issue",
        As::Human(&app.a),
        Some(json!({"ids": [good, bad]})),
    )
    .await
    .expect(400);
    assert!(deliveries(&app, &app.a, &hook).await.is_empty());
    assert_eq!(app.jobs(Some("webhook.deliver")).await.len(), before);
    // The same issue that commits emits.
    app.issue(&app.a, &good).await;
    let log = deliveries(&app, &app.a, &hook).await;
    assert_eq!(log.len(), 1);
    assert_eq!(log[0]["payload"]["data"]["id"], good.as_str());
});

// A draft made and an invoice issued queue their events only while the endpoint is enabled:
// the statements that store them also ask whether the company has enabled endpoints, and
// nothing is queued when there are none (store::webhooks::emit_counted).
db_test!(a_disabled_endpoint_is_sent_no_invoice_events, |app| {
    let rx = Receiver::start().await;
    let (hook, _) = endpoint(
        &app,
        &app.a,
        &rx.url,
        &["invoice.created", "invoice.issued"],
    )
    .await;
    app.settle(&app.a).await;
    // Sets the endpoint's `enabled`.
    let enable = |enabled: bool| {
        let (app, hook) = (&app, &hook);
        async move {
            app.call(
                "PATCH",
                &format!("/v1/webhooks/{hook}"),
                As::Human(&app.a),
                Some(json!({ "enabled": enabled })),
            )
            .await
            .expect(200);
        }
    };
    // Sets the endpoint's `enabled`, then makes a draft and issues it; returns the invoice.
    let draft_and_issue_with = |enabled: bool, price: i64| {
        let (app, enable) = (&app, &enable);
        async move {
            enable(enabled).await;
            let id = draft(app, &app.a, price).await;
            app.issue(&app.a, &id).await;
            id
        }
    };
    draft_and_issue_with(false, 100).await;
    assert!(deliveries(&app, &app.a, &hook).await.is_empty());

    let heard = draft_and_issue_with(true, 200).await;
    let got = deliveries(&app, &app.a, &hook).await;
    let mut events: Vec<&str> = got
        .iter()
        .map(|d| d["event_type"].as_str().unwrap())
        .collect();
    events.sort_unstable();
    assert_eq!(events, ["invoice.created", "invoice.issued"]);
    // Both are the second invoice's: nothing of the first was kept for later.
    let dir = tempfile::tempdir().unwrap();
    let worker = hook_worker(&app, dir.path(), true, 3);
    drive(&worker, "both deliveries", || rx.got().len() >= 2).await;
    for body in rx.got() {
        assert_eq!(body.json()["data"]["id"], heard.as_str());
    }

    // A draft made while the endpoint is disabled and issued once it is enabled again: its
    // issue is told. (With no endpoint at its last write, the company's issue is sent to end
    // its own transaction, store::Writing::closing; it is refused for the endpoint, and
    // made again the ordinary way, which queues the event.)
    enable(false).await;
    let late = draft(&app, &app.a, 300).await;
    enable(true).await;
    app.issue(&app.a, &late).await;
    let told: Vec<String> = deliveries(&app, &app.a, &hook)
        .await
        .iter()
        .filter(|d| d["payload"]["data"]["id"] == late.as_str())
        .map(|d| d["event_type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(told, ["invoice.issued"]);
});

// An `ai_audit.*` event tells the entry as of the service's clock, the one that stamped
// it: with the clock a year back, an entry held "now" is pending in its event, not expired
// by the system's time (routes::webhooks::emit_audit once read the system clock).
db_test!(
    ai_audit_events_tell_the_entry_on_the_services_clock,
    |app| {
        let rx = Receiver::start().await;
        let (hook, _) = endpoint(&app, &app.a, &rx.url, &["ai_audit.pending"]).await;
        app.settle(&app.a).await;
        let year_ago = (chrono::Utc::now() - chrono::Duration::days(365)).to_rfc3339();
        app.set_time(&year_ago);
        app.call(
            "PATCH",
            "/v1/company",
            As::Ai(&app.a),
            Some(json!({"friendlyName": "Agent"})),
        )
        .await
        .expect(202);
        let log = deliveries(&app, &app.a, &hook).await;
        assert_eq!(log.len(), 1, "{log:?}");
        let entry = &log[0]["payload"]["data"];
        assert_eq!(entry["status"], "pending", "{entry}");
        let created: chrono::DateTime<chrono::Utc> =
            entry["createdAt"].as_str().unwrap().parse().unwrap();
        let expected: chrono::DateTime<chrono::Utc> = year_ago.parse().unwrap();
        assert!((created - expected).num_seconds().abs() < 5, "{entry}");
    }
);
