//! Exchange rates fetched at issue from a daily feed (a local stand-in for the ECB), cached per day.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::json;

use crate::support::*;

const FEED: &str = "<?xml version='1.0' encoding='UTF-8'?><gesmes:Envelope><Cube>\
    <Cube time='2026-11-20'><Cube currency='USD' rate='1.0500'/><Cube currency='GBP' rate='0.8400'/></Cube>\
    </Cube></gesmes:Envelope>";

/// A customer in the United States, invoiced in dollars.
fn us_client() -> serde_json::Value {
    json!({"name": "US Client", "type": "US:Inc", "address": {"lines": ["1 Main St"],
        "city": "Springfield", "zipcode": "62701", "state": "IL", "country": "US"},
        "currency_code": "USD"})
}

/// Serves `status` and `body` as the feed on a free loopback port and counts the requests.
async fn serve_feed(status: u16, body: &'static str) -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let status = axum::http::StatusCode::from_u16(status).unwrap();
    let app = axum::Router::new().route(
        "/eurofxref-daily.xml",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { (status, body) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/eurofxref-daily.xml"), hits)
}

async fn fetched_at_issue(engine: Engine) {
    let (url, hits) = serve_feed(200, FEED).await;
    let app = TestApp::with_fx(engine, url).await;
    app.settle(&app.a).await;
    let customer = app
        .entity(&app.a, {
            let mut c = us_client();
            c["template"] = json!({"display_currencies": ["GBP"]});
            c
        })
        .await;
    app.set_time("2026-11-21T10:00:00Z");
    for _ in 0..2 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(10000)}),
            )
            .await;
        assert_eq!(
            d["currency_code"], "USD",
            "defaults to the recipient's currency"
        );
        let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        let rates = issued["exchange_rates"].as_array().unwrap();
        let eur = rates
            .iter()
            .find(|r| r["to"] == "EUR")
            .expect("USD->EUR frozen");
        assert_eq!(eur["rate"], "0.952381"); // 1 / 1.05, six decimals
        assert_eq!(eur["source"], "ecb");
        assert_eq!(eur["date"], "2026-11-20");
        let gbp = rates
            .iter()
            .find(|r| r["to"] == "GBP")
            .expect("the template's display currency");
        assert_eq!(gbp["rate"], "0.8"); // 0.84 / 1.05
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "the feed is read once per day"
    );
    // A currency the feed does not list: the issue fails naming the pair.
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "currency_code": "JPY", "lines": one_line(100)}),
        )
        .await;
    let resp = app
        .call(
            "POST",
            &format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(resp.text().contains("JPY->EUR"), "{}", resp.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_fetched_at_issue_sqlite() {
    fetched_at_issue(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rates_fetched_at_issue_postgres() {
    fetched_at_issue(Engine::Postgres).await;
}

async fn feed_down(engine: Engine) {
    // A feed that is down.
    let (url, hits) = serve_feed(503, "down").await;
    let app = TestApp::with_fx(engine, url).await;
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, us_client()).await;
    for _ in 0..3 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(10000)}),
            )
            .await;
        let resp = app
            .call(
                "POST",
                &format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap()),
                As::Human(&app.a),
                None,
            )
            .await
            .expect(400);
        assert!(
            resp.text().contains("USD->EUR") && resp.text().contains("exchange_rates"),
            "says which rate to supply: {}",
            resp.text()
        );
    }
    // Bulk issue is refused the same way.
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(10000)}),
        )
        .await;
    let resp = app
        .call(
            "POST",
            "/v1/invoices/bulk/issue",
            As::Human(&app.a),
            Some(json!({"ids": [d["id"]]})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("USD->EUR"), "{}", resp.text());
    // The feed was asked once: the next issues did not wait for it again.
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    // A rate supplied in the draft still issues while the feed is down.
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(10000),
                "exchange_rates": [{"from": "USD", "to": "EUR", "rate": "0.95"}]}),
        )
        .await;
    let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
    assert_eq!(issued["exchange_rates"][0]["rate"], "0.95");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_that_is_down_is_not_asked_again_for_every_issue_sqlite() {
    feed_down(Engine::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_that_is_down_is_not_asked_again_for_every_issue_postgres() {
    feed_down(Engine::Postgres).await;
}

/// Serves the feed on a free loopback port, answering only once `open` says so; counts the
/// requests.
async fn serve_held_feed() -> (String, Arc<AtomicUsize>, tokio::sync::watch::Sender<bool>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let (open, opened) = tokio::sync::watch::channel(false);
    let app = axum::Router::new().route(
        "/eurofxref-daily.xml",
        axum::routing::get(move || {
            counter.fetch_add(1, Ordering::SeqCst);
            let mut opened = opened.clone();
            async move {
                let _ = opened.wait_for(|o| *o).await;
                FEED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/eurofxref-daily.xml"), hits, open)
}

/// Issues waiting for a slow exchange-rate feed hold no database connection, and wait for
/// one fetch rather than each fetching: more of one company's foreign-currency issues than
/// the pool has connections (8 on SQLite, 16 on PostgreSQL) wait for a feed that does not
/// answer, and another company still reads and writes. Once the feed answers, every issue
/// succeeds, from one request to the feed. With `bulk`, the drafts are issued by one bulk
/// issue, whose rates are fetched before its write transaction (on SQLite, the one writer).
async fn a_slow_feed_holds_no_connection(engine: Engine, bulk: bool) {
    let (url, hits, open) = serve_held_feed().await;
    let app = TestApp::with_fx(engine, url).await;
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, us_client()).await;
    let b_customer = app.entity(&app.b, irish_customer()).await;
    let mut drafts = Vec::new();
    for _ in 0..20 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(10000)}),
            )
            .await;
        drafts.push(d["id"].as_str().unwrap().to_owned());
    }
    let paths: Vec<String> = drafts
        .iter()
        .map(|id| format!("/v1/invoices/{id}/issue"))
        .collect();
    let bulk_body = json!({ "ids": drafts });
    let issues = async {
        if bulk {
            vec![
                app.call(
                    "POST",
                    "/v1/invoices/bulk/issue",
                    As::Human(&app.a),
                    Some(bulk_body.clone()),
                )
                .await,
            ]
        } else {
            futures::future::join_all(
                paths
                    .iter()
                    .map(|path| app.call("POST", path, As::Human(&app.a), None)),
            )
            .await
        }
    };
    // The feed answers once company B was served. An issue that held a connection while it
    // waited would keep B waiting until the fetch gave up (5 s), and the issues would fail.
    let other = async {
        let served = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            // Once the feed is asked, give every issue the time to reach it.
            while hits.load(Ordering::SeqCst) == 0 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            app.call("GET", "/v1/invoices", As::Human(&app.b), None)
                .await
                .expect(200);
            app.draft(
                &app.b,
                json!({"recipient_id": b_customer, "lines": one_line(500)}),
            )
            .await;
        })
        .await;
        open.send_replace(true);
        served
    };
    let (issued, served) = tokio::join!(issues, other);
    assert!(
        served.is_ok(),
        "the issues never reached the feed, or company B was not served"
    );
    for r in &issued {
        assert_eq!(r.status, 200, "{}", r.text());
    }
    if bulk {
        assert_eq!(issued[0].json()["affected"], 20, "{}", issued[0].text());
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        1,
        "issues waiting at once share one fetch"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_feed_holds_no_connection_sqlite() {
    a_slow_feed_holds_no_connection(Engine::Sqlite, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_feed_holds_no_connection_postgres() {
    a_slow_feed_holds_no_connection(Engine::Postgres, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_feed_holds_no_writer_in_a_bulk_issue_sqlite() {
    a_slow_feed_holds_no_connection(Engine::Sqlite, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_feed_holds_no_writer_in_a_bulk_issue_postgres() {
    a_slow_feed_holds_no_connection(Engine::Postgres, true).await;
}
