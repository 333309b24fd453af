//! VERI*FACTU cancellation (`RegistroAnulacion`) of an invoice issued in error, and the
//! daily power-of-attorney check.

use std::time::Duration;

use jobs::fake_aeat::FakeAeat;
use serde_json::{Value, json};

use crate::support::*;
use crate::verifactu::{CIF, assert_valid_xml, authorize, records, spanish};

async fn issued(app: &TestApp) -> Value {
    spanish(app).await;
    authorize(app).await;
    let c = app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
    let d = app
        .draft(&app.a, json!({"recipient_id": c, "lines": one_line(10000)}))
        .await;
    app.issue(&app.a, d["id"].as_str().unwrap()).await
}

fn annul_path(invoice: &Value) -> String {
    format!(
        "/v1/invoices/{}/verifactu/annul",
        invoice["id"].as_str().unwrap()
    )
}

db_test!(
    an_invoice_issued_in_error_is_cancelled_in_the_chain_once,
    |app| {
        let inv = issued(&app).await;
        let alta = records(&app, &inv).await.remove(0);
        let r = app
            .call(
                "POST",
                &annul_path(&inv),
                As::Human(&app.a),
                Some(json!({"reason": "sent to the wrong customer"})),
            )
            .await
            .expect(200)
            .json();
        assert!(r["annulled_at"].is_string(), "{r}");
        let data = r["data"].as_array().unwrap();
        assert_eq!(data.len(), 2);
        let an = &data[1];
        assert_eq!(
            (an["kind"].clone(), an["seq"].clone(), an["status"].clone()),
            (json!("anulacion"), json!(2), json!("not_sent"))
        );
        assert_eq!(an["reason"], "sent to the wrong customer");
        assert_eq!(
            an["previous_huella"], alta["huella"],
            "chained after the alta"
        );
        assert!(an["tipo_factura"].is_null() && an["qr_url"].is_null());
        // The hash input of a cancellation (AEAT hash document, section 3.b).
        let input = an["hash_input"].as_str().unwrap();
        let expected_start = format!(
            "IDEmisorFacturaAnulada={CIF}&NumSerieFacturaAnulada={}&FechaExpedicionFacturaAnulada=",
            inv["reference"].as_str().unwrap()
        );
        assert!(input.starts_with(&expected_start), "{input}");
        assert!(
            input.contains(&format!(
                "&Huella={}&FechaHoraHusoGenRegistro=",
                alta["huella"].as_str().unwrap()
            )),
            "{input}"
        );
        assert_eq!(
            an["huella"].as_str().unwrap(),
            store::hash_secret(input).to_uppercase()
        );
        let xml = an["xml"].as_str().unwrap();
        assert!(xml.contains("RegistroAnulacion"), "{xml}");
        assert_valid_xml(xml);

        // Once.
        let before = app.fingerprint().await;
        let r = app
            .call("POST", &annul_path(&inv), As::Human(&app.a), None)
            .await
            .expect(409);
        assert!(r.text().contains("already cancelled"), "{}", r.text());
        assert_eq!(app.fingerprint().await, before);
        // The invoice keeps its number and status.
        let again = app
            .get(
                &format!("/v1/invoices/{}", inv["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(again["reference"], inv["reference"]);
        assert_eq!(again["status"], inv["status"]);
        // The next invoice chains after the cancellation.
        let c = app.entity(&app.a, json!({"name": "Otro SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
        let d = app
            .draft(&app.a, json!({"recipient_id": c, "lines": one_line(500)}))
            .await;
        let next = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        let next_rec = records(&app, &next).await.remove(0);
        assert_eq!(next_rec["seq"], 3);
        assert_eq!(next_rec["previous_huella"], an["huella"]);
    }
);

db_test!(
    only_issued_invoices_of_spanish_issuers_can_be_cancelled,
    |app| {
        spanish(&app).await;
        authorize(&app).await;
        let c = app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
        let draft = app
            .draft(&app.a, json!({"recipient_id": c, "lines": one_line(100)}))
            .await;
        let r = app
            .call("POST", &annul_path(&draft), As::Human(&app.a), None)
            .await
            .expect(400);
        assert!(r.text().contains("issued"), "{}", r.text());
        // Another company's invoice: not found.
        app.settle(&app.b).await;
        app.call("POST", &annul_path(&draft), As::Human(&app.b), None)
            .await
            .expect(404);
        // A non-Spanish issuer has no chain.
        let ie = app.entity(&app.b, irish_customer()).await;
        let d = app
            .draft(&app.b, json!({"recipient_id": ie, "lines": one_line(100)}))
            .await;
        let inv = app.issue(&app.b, d["id"].as_str().unwrap()).await;
        let r = app
            .call("POST", &annul_path(&inv), As::Human(&app.b), None)
            .await
            .expect(400);
        assert!(r.text().contains("Spanish"), "{}", r.text());
        let long = "x".repeat(501);
        let inv_a = {
            let d = app
                .draft(&app.a, json!({"recipient_id": c, "lines": one_line(100)}))
                .await;
            app.issue(&app.a, d["id"].as_str().unwrap()).await
        };
        app.call(
            "POST",
            &annul_path(&inv_a),
            As::Human(&app.a),
            Some(json!({"reason": long})),
        )
        .await
        .expect(400);
    }
);

db_test!(a_cancellation_is_sent_by_the_submission_job, aeat, |app| {
    let fake = FakeAeat::start().await.unwrap();
    let inv = issued(&app).await;
    app.call("POST", &annul_path(&inv), As::Human(&app.a), None)
        .await
        .expect(200);
    let jobs = app.jobs(Some("verifactu.submit")).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    app.aeat_worker(&fake.url(), Duration::from_secs(10))
        .run_until_idle()
        .await
        .unwrap();
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].problems.is_empty(), "{:?}", reqs[0].problems);
    assert_eq!(
        reqs[0]
            .records
            .iter()
            .map(|r| r.anulacion)
            .collect::<Vec<_>>(),
        vec![false, true]
    );
    let rs = records(&app, &inv).await;
    assert!(rs.iter().all(|r| r["status"] == "accepted"), "{rs:?}");
});

/// A power-of-attorney checker over HTTP that confirms `nif` only.
async fn checker(nif: &'static str) -> (String, tokio::task::JoinHandle<()>) {
    use axum::{Json, Router, extract::Query, routing::get};
    let app = Router::new().route(
        "/poa",
        get(
            move |Query(q): Query<std::collections::HashMap<String, String>>| async move {
                Json(json!({"confirmed": q.get("nif").map(String::as_str) == Some(nif)}))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/poa", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, task)
}

async fn run_check(app: &TestApp, checker_url: Option<&str>) {
    let mut conn = app.db.pool().acquire().await.unwrap();
    store::jobs::enqueue(
        &mut conn,
        &store::jobs::NewJob::new("verifactu.check_authorization", json!({})),
    )
    .await
    .unwrap();
    drop(conn);
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = crate::background::context(&app.db, None, dir.path());
    if let Some(url) = checker_url {
        ctx.poa_checker = Some(std::sync::Arc::new(
            jobs::aeat::HttpPowerOfAttorneyChecker::new(url).unwrap(),
        ));
    }
    let worker = jobs::Worker::new(
        ctx,
        jobs::Registry::standard(),
        crate::background::fast_config(),
    );
    assert_eq!(worker.run_until_idle().await.unwrap(), 1);
}

db_test!(
    the_daily_check_puts_a_confirmed_power_of_attorney_in_effect,
    |app| {
        spanish(&app).await;
        app.call(
            "POST",
            "/v1/verifactu/authorization/power-of-attorney",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200);
        let status = || async {
            app.get("/v1/verifactu/authorization", As::Human(&app.a))
                .await
                .expect(200)
                .json()
        };
        // Without a checker: still pending (the operator confirms by command).
        run_check(&app, None).await;
        assert_eq!(status().await["status"], "pending_confirmation");
        // A checker that does not know this NIF: still pending.
        let (other, t1) = checker("A00000000").await;
        run_check(&app, Some(&other)).await;
        assert_eq!(status().await["in_effect"], false);
        // Confirmed: in effect, issuing is allowed.
        let (url, t2) = checker(CIF).await;
        run_check(&app, Some(&url)).await;
        let s = status().await;
        assert_eq!(
            (
                s["status"].clone(),
                s["in_effect"].clone(),
                s["method"].clone()
            ),
            (json!("in_effect"), json!(true), json!("power_of_attorney"))
        );
        let c = app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
        let d = app
            .draft(&app.a, json!({"recipient_id": c, "lines": one_line(100)}))
            .await;
        app.issue(&app.a, d["id"].as_str().unwrap()).await;
        t1.abort();
        t2.abort();
    }
);
