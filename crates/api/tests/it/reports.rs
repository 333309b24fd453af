//! Business reports end to end: request, background render, figures in the PDF text,
//! locale formatting, the mailed signed link, failure, crash recovery, isolation, AI gate.

use std::time::Duration;

use serde_json::{Value, json};

use crate::background::{Running, context, fast_config};
use crate::support::*;

/// A quarter of company A, figures by hand (Irish domestic VAT 23%):
/// - 10 Feb: 12,345.67 net to Dublin Customer, VAT 2,839.50 (1,234,567 × 0.23 = 283,950.41)
/// - 20 Mar: 5,000.00 net to a consumer, VAT 1,150.00
/// - 10 Feb: expense 100.00 + 21.00 VAT, category office
/// - 2 Apr: an invoice outside the period (excluded)
///
/// Output VAT 3,989.50, input VAT 21.00, balance 3,968.50; revenue 17,345.67.
async fn quarter(app: &TestApp) {
    app.settle(&app.a).await;
    let dublin = app.entity(&app.a, irish_customer()).await;
    let consumer = app
        .entity(
            &app.a,
            json!({"name": "Pat Consumer", "type": "IE:Individual",
                "address": {"lines": ["3 Lane"], "city": "Cork", "zipcode": "T12", "country": "IE"}}),
        )
        .await;
    let supplier = app
        .entity(
            &app.a,
            json!({"name": "Paper Supplies Ltd", "type": "IE:LTD",
                "address": {"lines": ["4 Dock"], "city": "Dublin", "zipcode": "D01", "country": "IE"}}),
        )
        .await;
    for (when, who, price) in [
        ("2026-02-10T10:00:00Z", &dublin, 1_234_567),
        ("2026-03-20T10:00:00Z", &consumer, 500_000),
        ("2026-04-02T10:00:00Z", &dublin, 999_999),
    ] {
        app.set_time(when);
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": who, "supply_type": "services", "lines": one_line(price)}),
            )
            .await;
        app.issue(&app.a, d["id"].as_str().unwrap()).await;
    }
    app.call(
        "POST",
        "/v1/expenses",
        As::Human(&app.a),
        Some(json!({"supplier_id": supplier, "invoice_reference": "P-1", "category": "office",
            "expense_date": "2026-02-10T00:00:00Z",
            "lines": [{"concept": "Paper", "subtotal": 10000}, {"concept": "VAT", "subtotal": 2100, "is_tax": true}]})),
    )
    .await
    .expect(201);
}

fn period(kind: &str, locales: Value) -> Value {
    json!({"report_type": kind, "period_start": "2026-01-01T00:00:00Z",
        "period_end": "2026-04-01T00:00:00Z", "locales": locales})
}

async fn pdf_text(app: &TestApp, id: &str) -> String {
    let r = app
        .get(&format!("/v1/reports/{id}/pdf"), As::Ai(&app.a))
        .await
        .expect(200);
    assert_eq!(r.content_type(), "application/pdf");
    pdf_text_of(&r.body)
}

db_test!(
    vat_summary_figures_in_spanish_from_spain_and_mexico,
    |app| {
        quarter(&app).await;
        let created = app
            .call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(period("vat_summary", json!(["es_ES", "es-MX", "es_ES"]))),
            )
            .await
            .expect(201)
            .json();
        let reports = created["data"].as_array().unwrap();
        assert_eq!(reports.len(), 2, "duplicates collapse: {created}");
        assert_eq!(reports[0]["locale"], "es-ES");
        assert_eq!(reports[1]["locale"], "es-MX");
        assert!(reports.iter().all(|r| r["status"] == "queued"));

        let outbox = tempfile::tempdir().unwrap();
        // Two renders, then two mails.
        assert_eq!(
            app.worker(None, outbox.path())
                .run_until_idle()
                .await
                .unwrap(),
            4
        );
        let es_id = reports[0]["id"].as_str().unwrap();
        let mx_id = reports[1]["id"].as_str().unwrap();
        let es = app
            .get(&format!("/v1/reports/{es_id}"), As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(es["status"], "ready", "{es}");
        assert_eq!(es["pdf_url"], format!("/v1/reports/{es_id}/pdf"));

        let es = pdf_text(&app, es_id).await;
        let mx = pdf_text(&app, mx_id).await;
        assert!(es.contains("Resumen de IVA"), "{es}");
        assert!(
            es.contains("IVA repercutido") && es.contains("IVA soportado"),
            "{es}"
        );
        // es-ES groups five digits and more, not four (CLDR); es-MX groups with commas.
        assert!(es.contains("17.345,67"), "revenue base, es-ES: {es}");
        assert!(mx.contains("17,345.67"), "revenue base, es-MX: {mx}");
        assert!(es.contains("3989,50"), "output VAT, es-ES: {es}");
        assert!(mx.contains("3,989.50"), "output VAT, es-MX: {mx}");
        assert!(es.contains("3968,50"), "VAT balance: {es}");
        // Both invoices are domestic at 23%: one row, base and VAT summed (2,839.50 + 1,150.00).
        assert!(es.contains("Nacional 23 % 17.345,67 3989,50"), "{es}");
        assert!(es.contains("21,00"), "input VAT: {es}");
        assert!(!es.contains("9999,99"), "April is outside the period: {es}");
        assert!(es.contains("Nacional") && es.contains("23 %"), "{es}");
    }
);

db_test!(every_report_type_has_its_figures, |app| {
    quarter(&app).await;
    let mut ids = Vec::new();
    for kind in [
        "business_overview",
        "profit_loss",
        "client_revenue",
        "expense_supplier",
    ] {
        let r = app
            .call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(period(kind, json!(["en"]))),
            )
            .await
            .expect(201)
            .json();
        ids.push(r["data"][0]["id"].as_str().unwrap().to_owned());
    }
    let outbox = tempfile::tempdir().unwrap();
    app.worker(None, outbox.path())
        .run_until_idle()
        .await
        .unwrap();
    let overview = pdf_text(&app, &ids[0]).await;
    assert!(overview.contains("Business overview"), "{overview}");
    // Revenue 17,345.67, expenses 100.00, result 17,245.67; two invoices; top customer first.
    for s in ["17,345.67", "100.00", "17,245.67", "Top customers"] {
        assert!(overview.contains(s), "{s} in {overview}");
    }
    let dublin = overview.find("Dublin Customer Ltd").expect("top customer");
    let pat = overview.find("Pat Consumer").expect("second customer");
    assert!(dublin < pat, "largest customer first");

    let pl = pdf_text(&app, &ids[1]).await;
    // February: 12,345.67 - 100.00; March: 5,000.00; January: nothing.
    for s in ["12,245.67", "5,000.00", "office"] {
        assert!(pl.contains(s), "{s} in {pl}");
    }
    let clients = pdf_text(&app, &ids[2]).await;
    // Dublin: 12,345.67 + 2,839.50 = 15,185.17; Pat: 5,000.00 + 1,150.00 = 6,150.00; total 21,335.17.
    for s in ["15,185.17", "6,150.00", "21,335.17"] {
        assert!(clients.contains(s), "{s} in {clients}");
    }
    let suppliers = pdf_text(&app, &ids[3]).await;
    for s in ["Paper Supplies Ltd", "121.00", "office"] {
        assert!(suppliers.contains(s), "{s} in {suppliers}");
    }
});

db_test!(
    the_mailed_link_works_without_a_token_until_expiry_or_deletion,
    |app| {
        quarter(&app).await;
        let created = app
            .call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(period("business_overview", Value::Null)),
            )
            .await
            .expect(201)
            .json();
        // No locales: the requester's language.
        assert_eq!(created["data"].as_array().unwrap().len(), 1);
        let id = created["data"][0]["id"].as_str().unwrap().to_owned();
        let dir = tempfile::tempdir().unwrap();
        let outbox = dir.path().join("outbox");
        app.worker(None, &outbox).run_until_idle().await.unwrap();
        let mails: Vec<_> = std::fs::read_dir(&outbox)
            .unwrap()
            .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
            .collect();
        assert_eq!(mails.len(), 1, "exactly one mail");
        let mail = mails[0]
            .replace("=\r\n", "")
            .replace("=\n", "")
            .replace("=3D", "=");
        assert!(mail.contains("To: owner@alpha.test"), "{mail}");
        let start = mail
            .find(&format!("/v1/reports/{id}/pdf?expires="))
            .expect("link in the mail");
        let link: String = mail[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '<')
            .collect();
        // The jobs table keeps no link (a link is a credential).
        assert!(!app.everything().await.contains("signature="));

        let r = app.get(&link, As::Anonymous).await.expect(200);
        assert_eq!(r.content_type(), "application/pdf");
        assert!(pdf_text_of(&r.body).contains("Business overview"));
        // A tampered signature, a tampered expiry, no signature at all.
        let tampered = format!("{}A", &link[..link.len() - 1]);
        let tampered = if tampered == link {
            format!("{}B", &link[..link.len() - 1])
        } else {
            tampered
        };
        let r = app.get(&tampered, As::Anonymous).await.expect(403);
        assert_eq!(r.json()["error"], "link_invalid");
        let later = link.replacen("expires=", "expires=9", 1);
        app.get(&later, As::Anonymous).await.expect(403);
        app.get(&format!("/v1/reports/{id}/pdf"), As::Anonymous)
            .await
            .expect(401);
        // Another company's token does not see it, even with the link's path.
        app.get(&format!("/v1/reports/{id}/pdf"), As::Ai(&app.b))
            .await
            .expect(404);
        // Expired: eight days after the worker made it, by the service's clock (the worker
        // reads the same clock as the API; a worker on the system clock would have made a
        // link that is still valid then).
        let made = app.now();
        let expires: i64 = link
            .split("expires=")
            .nth(1)
            .and_then(|s| s.split('&').next())
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(expires, made.timestamp() + 7 * 24 * 3600, "{link}");
        app.set_time(&(made + chrono::Duration::days(8)).to_rfc3339());
        let r = app.get(&link, As::Anonymous).await.expect(403);
        assert_eq!(r.json()["error"], "link_expired");
        app.set_time(&made.to_rfc3339());
        app.get(&link, As::Anonymous).await.expect(200);
        // Deleted: the link is refused and the PDF is gone.
        let files = |app: &TestApp| {
            let db = app.db.clone();
            async move {
                sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM files")
                    .fetch_one(db.pool())
                    .await
                    .unwrap()
            }
        };
        assert_eq!(files(&app).await, 1);
        app.call(
            "DELETE",
            &format!("/v1/reports/{id}"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(204);
        app.get(&link, As::Anonymous).await.expect(404);
        assert_eq!(files(&app).await, 0);
        app.get(&format!("/v1/reports/{id}"), As::Ai(&app.a))
            .await
            .expect(404);
    }
);

db_test!(bad_requests_name_what_to_fix_and_write_nothing, |app| {
    let before = app.fingerprint().await;
    let cases = [
        (
            json!({"report_type": "business_overview", "period_start": "2026-02-01T00:00:00Z", "period_end": "2026-02-01T00:00:00Z"}),
            "period_end",
        ),
        (
            json!({"report_type": "business_overview", "period_start": "2000-01-01T00:00:00Z", "period_end": "2026-02-01T00:00:00Z"}),
            "ten years",
        ),
        (
            json!({"report_type": "sales", "period_start": "2026-01-01T00:00:00Z", "period_end": "2026-02-01T00:00:00Z"}),
            "report_type",
        ),
        (
            json!({"report_type": "vat_summary", "period_start": "January", "period_end": "2026-02-01T00:00:00Z"}),
            "period_start",
        ),
        (
            json!({"report_type": "vat_summary", "period_start": "2026-01-01T00:00:00Z", "period_end": "2026-02-01T00:00:00Z", "locales": ["not a locale"]}),
            "not a locale",
        ),
        (
            json!({"report_type": "vat_summary", "period_start": "2026-01-01T00:00:00Z", "period_end": "2026-02-01T00:00:00Z",
                "locales": ["en","es","de","fr","it","pt","nl","da","sv","fi","pl"]}),
            "at most 10",
        ),
    ];
    for (body, needle) in cases {
        for who in [As::Human(&app.a), As::Ai(&app.a)] {
            let r = app
                .call("POST", "/v1/reports", who, Some(body.clone()))
                .await
                .expect(400);
            assert!(r.text().contains(needle), "{needle} in {}", r.text());
        }
    }
    assert_eq!(app.fingerprint().await, before);
});

db_test!(an_ai_caller_gets_202_and_nothing_until_approved, |app| {
    let before = app.fingerprint().await;
    let r = app
        .call(
            "POST",
            "/v1/reports",
            As::Mcp(&app.a),
            Some(period("client_revenue", json!(["en", "es"]))),
        )
        .await
        .expect(202)
        .json();
    assert_eq!(r["error"], "pending_approval");
    assert_eq!(app.fingerprint().await, before, "no report, no job");
    let entry = r["auditEntryId"].as_str().unwrap();
    app.call(
        "POST",
        &format!("/v1/ai-audit/{entry}/approve"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(200);
    let list = app
        .get("/v1/reports", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    assert_eq!(app.jobs(Some("report.render")).await.len(), 2);
    // Deleting is gated too.
    let id = list["data"][0]["id"].as_str().unwrap();
    app.call(
        "DELETE",
        &format!("/v1/reports/{id}"),
        As::Mcp(&app.a),
        None,
    )
    .await
    .expect(202);
    app.get(&format!("/v1/reports/{id}"), As::Ai(&app.a))
        .await
        .expect(200);
});

db_test!(another_company_never_sees_a_report, |app| {
    let created = app
        .call(
            "POST",
            "/v1/reports",
            As::Human(&app.a),
            Some(period("vat_summary", json!(["en"]))),
        )
        .await
        .expect(201)
        .json();
    let id = created["data"][0]["id"].as_str().unwrap();
    let outbox = tempfile::tempdir().unwrap();
    app.worker(None, outbox.path())
        .run_until_idle()
        .await
        .unwrap();
    for path in [format!("/v1/reports/{id}"), format!("/v1/reports/{id}/pdf")] {
        app.get(&path, As::Human(&app.b)).await.expect(404);
    }
    app.call(
        "DELETE",
        &format!("/v1/reports/{id}"),
        As::Human(&app.b),
        None,
    )
    .await
    .expect(404);
    let list = app
        .get("/v1/reports", As::Human(&app.b))
        .await
        .expect(200)
        .json();
    assert_eq!(list["data"], json!([]));
    // And an empty period renders (a report with nothing to show says so).
    let text = pdf_text(&app, id).await;
    assert!(text.contains("No invoices were issued"), "{text}");
});

db_test!(
    a_failing_render_marks_the_report_failed_and_keeps_the_error,
    |app| {
        let created = app
            .call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(period("business_overview", json!(["en"]))),
            )
            .await
            .expect(201)
            .json();
        let id = created["data"][0]["id"].as_str().unwrap();
        let outbox = tempfile::tempdir().unwrap();
        // A render budget of zero: every render times out.
        let mut ctx = context(&app.db, None, outbox.path());
        let mut config = (*ctx.config).clone();
        config.report_timeout = Duration::ZERO;
        ctx.config = std::sync::Arc::new(config);
        jobs::Worker::new(ctx, jobs::Registry::standard(), fast_config())
            .run_until_idle()
            .await
            .unwrap();
        let r = app
            .get(&format!("/v1/reports/{id}"), As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(r["status"], "failed", "{r}");
        assert!(r["error"].as_str().unwrap().contains("took longer"), "{r}");
        assert_eq!(r["pdf_url"], Value::Null);
        let pdf = app
            .get(&format!("/v1/reports/{id}/pdf"), As::Ai(&app.a))
            .await
            .expect(409);
        assert!(pdf.text().contains("failed"), "{}", pdf.text());
        assert!(
            app.jobs(Some("report.mail")).await.is_empty(),
            "no mail for a failed report"
        );
    }
);

db_test!(
    a_killed_workers_job_is_run_again_and_yields_one_report,
    |app| {
        let created = app
            .call(
                "POST",
                "/v1/reports",
                As::Human(&app.a),
                Some(period("profit_loss", json!(["en"]))),
            )
            .await
            .expect(201)
            .json();
        let id = created["data"][0]["id"].as_str().unwrap();
        // A worker claims the job with a one-second lease, marks the report rendering and dies.
        let lease = store::now_micros() + 1_000_000;
        let job = store::jobs::claim(&app.db, "ghost", &["report.render"], lease)
            .await
            .unwrap()
            .expect("the job");
        assert_eq!(job.attempts, 1);
        let mut conn = app.db.pool().acquire().await.unwrap();
        assert!(
            store::reports::start(&mut conn, id, store::now_micros())
                .await
                .unwrap()
        );
        drop(conn);
        tokio::time::sleep(Duration::from_millis(1_100)).await;
        // Another worker takes it over after the lease ran out; a third finds nothing left.
        let outbox = tempfile::tempdir().unwrap();
        let running = Running::spawn(app.worker(None, outbox.path()));
        let jobs = app
            .wait_for_jobs("report.mail", "the mail job", |j| {
                j.len() == 1 && j[0].status == "done"
            })
            .await;
        running.stop().await;
        assert_eq!(jobs.len(), 1);
        assert_eq!(
            app.worker(None, outbox.path())
                .run_until_idle()
                .await
                .unwrap(),
            0
        );
        let render = app.jobs(Some("report.render")).await;
        assert_eq!((render[0].status.as_str(), render[0].attempts), ("done", 2));
        let files: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM files")
            .fetch_one(app.db.pool())
            .await
            .unwrap();
        assert_eq!(files, 1, "exactly one PDF");
        let r = app
            .get(&format!("/v1/reports/{id}"), As::Ai(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(r["status"], "ready");
        // Running the finished job's work again changes nothing.
        let mut conn = app.db.pool().acquire().await.unwrap();
        store::jobs::enqueue(
            &mut conn,
            &store::reports::render_job(id, &app.a.company_id),
        )
        .await
        .unwrap();
        drop(conn);
        app.worker(None, outbox.path())
            .run_until_idle()
            .await
            .unwrap();
        let files: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM files")
            .fetch_one(app.db.pool())
            .await
            .unwrap();
        assert_eq!(files, 1);
        assert_eq!(app.jobs(Some("report.mail")).await.len(), 1, "one mail");
    }
);
