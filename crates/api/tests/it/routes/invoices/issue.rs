//! POST /v1/invoices/{id}/issue: the draft-to-issued workflow, its guards, exchange rates, and issuing under contention.

use serde_json::json;

use crate::support::*;

db_test!(draft_then_issue, |app| {
    let customer = settled_with_customer(&app).await;
    app.call("PATCH", "/v1/company", As::Human(&app.a),
        Some(json!({"invoiceReferenceFormat": "INV-{year}-{number:4}", "firstInvoiceYearlyNumber": 42})))
        .await
        .expect(200);
    app.set_time("2026-03-10T10:00:00Z");
    let draft = app
        .draft(&app.a, json!({"recipient_id": customer, "lines": [
            {"concept": "Consulting", "quantity": 1.5, "quantity_unit": "h", "unit_price": 10000},
            {"concept": "Travel", "quantity": 1, "unit_price": 2550}
        ]}))
        .await;
    assert_eq!(draft["status"], "draft");
    assert!(
        draft["invoice_number"].is_null()
            && draft["reference"].is_null()
            && draft["issued_at"].is_null()
    );
    assert_eq!(draft["order_number"], 1);
    assert_eq!(draft["order_year"], 2026);
    assert_eq!(draft["currency_code"], "EUR");
    assert_eq!(draft["supply_type"], "services");
    assert_eq!(draft["lineCount"], 2);
    // Irish issuer, Irish business: domestic VAT 23% per line, total = sum of all lines.
    assert_eq!(draft["treatment"], "domestic");
    assert_eq!(draft["lines"][0]["subtotal"], 15000);
    assert_eq!(draft["lines"][0]["quantity"], 1.5);
    assert_eq!(draft["lines"][0]["tax_lines"][0]["rate"], "23");
    assert_eq!(draft["lines"][0]["tax_lines"][0]["amount"], 3450);
    // 2550 × 23% = 586.5: half-even rounds to the even 586.
    assert_eq!(draft["lines"][1]["tax_lines"][0]["amount"], 586);
    let net = 15000 + 2550;
    assert_eq!(draft["net_total"], net);
    assert_eq!(
        draft["total"],
        draft["net_total"].as_i64().unwrap() + draft["tax_total"].as_i64().unwrap()
    );

    let id = draft["id"].as_str().unwrap();
    let issued = app.issue(&app.a, id).await;
    assert_eq!(issued["status"], "issued");
    assert_eq!(issued["invoice_number"], 42);
    assert_eq!(issued["invoice_year"], 2026);
    assert_eq!(issued["reference"], "INV-2026-0042");
    assert!(issued["order_number"].is_null() && issued["order_year"].is_null());
    assert_eq!(issued["issued_at"], "2026-03-10T10:00:00Z");
    assert_eq!(issued["recipient"]["name"], "Dublin Customer Ltd");
    assert_eq!(issued["issuer"]["name"], "Alpha Trading Ltd");
    assert_eq!(issued["total"], draft["total"]);
    // The snapshots' shape, every field present (null when unset), as callers read them.
    let keys =
        |v: &serde_json::Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(
        keys(&issued["issuer"]),
        [
            "address",
            "contact_name",
            "electronic_address",
            "email",
            "fiscal_id",
            "footer_invoice_typst",
            "id",
            "name",
            "phone",
            "post_invoice_typst",
            "type",
            "vies_vat_id"
        ]
    );
    assert_eq!(
        keys(&issued["recipient"]),
        [
            "address",
            "country",
            "createdAt",
            "currency_code",
            "electronic_address",
            "email",
            "fiscal_id",
            "id",
            "is_business",
            "name",
            "template",
            "type",
            "updatedAt",
            "verifactu",
            "vies_vat_id"
        ]
    );
    assert_eq!(
        keys(&issued["recipient"]["address"]),
        ["city", "country", "lines", "state", "zipcode"]
    );
    assert!(issued["issuer"]["type"].is_string() && issued["recipient"]["createdAt"].is_string());
    // The answer is made from the document just stored, not read back: it must say exactly
    // what reading the invoice says.
    let stored = app
        .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(issued, stored);

    // Issued invoices are immutable and numbered once.
    for (method, body) in [
        ("PATCH", Some(json!({"lines": one_line(1)}))),
        ("DELETE", None),
    ] {
        let resp = app
            .call(
                method,
                &format!("/v1/invoices/{id}"),
                As::Human(&app.a),
                body,
            )
            .await
            .expect(409);
        assert!(resp.content_type().starts_with("text/plain"));
    }
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/issue"),
        As::Human(&app.a),
        None,
    )
    .await
    .expect(409);
    // Snapshots: renaming the customer later does not change the issued invoice.
    app.call(
        "PATCH",
        &format!("/v1/entities/{customer}"),
        As::Human(&app.a),
        Some(json!({"name": "Renamed"})),
    )
    .await
    .expect(200);
    let again = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(again["recipient"]["name"], "Dublin Customer Ltd");
    assert_eq!(again["reference"], "INV-2026-0042");
});

db_test!(issue_guards, |app| {
    let customer = app.entity(&app.a, irish_customer()).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    let path = format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap());
    let resp = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(403);
    assert_eq!(resp.json()["error"], "company_not_settled");
    app.call(
        "POST",
        "/v1/company/registration",
        As::Human(&app.a),
        Some(registration_body()),
    )
    .await
    .expect(200);
    let resp = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(403);
    assert_eq!(resp.json()["error"], "agreement_required");
    assert!(
        resp.json()["message"]
            .as_str()
            .unwrap()
            .contains("agreements")
    );
    app.accept_all_agreements(&app.a).await;
    // A Spanish issuer without the VERI*FACTU authorization: 403 and the invoice stays a draft.
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"type": "ES:SL", "fiscalId": "B12345674"})),
    )
    .await
    .expect(200);
    let resp = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(403);
    let body = resp.json();
    assert_eq!(body["error"], "verifactu_authorization_required");
    assert!(
        body["requiresAuthorizationUrl"]
            .as_str()
            .unwrap()
            .starts_with('/')
    );
    let still = app
        .get(
            &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(still["status"], "draft");
    assert!(still["invoice_number"].is_null());
    // AI callers get the same guard answer now (validated), nothing queued.
    let resp = app
        .call("POST", &path, As::Ai(&app.a), None)
        .await
        .expect(403);
    assert_eq!(resp.json()["error"], "verifactu_authorization_required");
    // Once the authorization is in effect, issuing works.
    let mut tx = app.db.begin_write().await.unwrap();
    store::companies::set_verifactu_authorization(tx.conn(), &app.a.company_id, "in_effect", true)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    // The draft was priced when the company was Irish: re-pricing it applies Spanish VAT.
    let repriced = app
        .call(
            "PATCH",
            &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(repriced["lines"][0]["tax_lines"][0]["rate"], "21");
    let issued = app
        .call("POST", &path, As::Human(&app.a), None)
        .await
        .expect(200)
        .json();
    assert_eq!(issued["status"], "issued");
});

db_test!(foreign_currency_needs_a_rate, |app| {
    let customer = settled_with_customer(&app).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "currency_code": "USD", "lines": one_line(10000)}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    let resp = app
        .call(
            "POST",
            &format!("/v1/invoices/{id}/issue"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(
        resp.text().contains("USD->EUR"),
        "names the pair: {}",
        resp.text()
    );
    let still = app
        .get(&format!("/v1/invoices/{id}"), As::Ai(&app.a))
        .await
        .json();
    assert_eq!(still["status"], "draft");
    // A supplied rate is frozen as given.
    app.call(
        "PATCH",
        &format!("/v1/invoices/{id}"),
        As::Human(&app.a),
        Some(json!({"exchange_rates": [{"from": "USD", "to": "EUR", "rate": 0.9123}]})),
    )
    .await
    .expect(200);
    let issued = app.issue(&app.a, id).await;
    assert_eq!(
        issued["exchange_rates"],
        json!([{"from": "USD", "to": "EUR", "rate": "0.9123", "date": null, "source": "manual"}])
    );
    // Bad rates are named.
    for rate in [json!(0), json!(-1), json!("abc")] {
        let resp = app.call("POST", "/v1/invoices", As::Human(&app.a), Some(json!({"recipient_id": customer,
            "currency_code": "USD", "lines": one_line(1), "exchange_rates": [{"from": "USD", "to": "EUR", "rate": rate}]})))
            .await
            .expect(400);
        assert!(resp.text().contains("exchange_rates[0]"), "{}", resp.text());
    }
});

db_test!(issuing_one_draft_twice_at_once_issues_it_once, |app| {
    let customer = settled_with_customer(&app).await;
    for round in 0..6 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let path = format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap());
        let calls = (0..16).map(|_| app.call("POST", &path, As::Human(&app.a), None));
        let answers = futures::future::join_all(calls).await;
        let issued: Vec<&_> = answers
            .iter()
            .filter(|r| r.status.as_u16() == 200)
            .collect();
        assert_eq!(issued.len(), 1, "round {round}: exactly one issue succeeds");
        for r in answers.iter().filter(|r| r.status.as_u16() != 200) {
            assert_eq!(r.status.as_u16(), 409, "round {round}: {}", r.text());
        }
        // The number the winner got is the one stored, and no number was burnt.
        let number = issued[0].json()["invoice_number"].clone();
        assert_eq!(number, round + 1);
        let stored = app
            .get(
                &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .json();
        assert_eq!(stored["invoice_number"], number);
    }
});

// Issuing reads the draft before its write transaction and stores it only if it is still
// that draft. A change that lands in between (here made by another connection that holds
// the writer, so the issue must wait for it) is not overwritten with the old content: the
// issue is refused, nothing is numbered, and issuing again issues the draft as it is now.
db_test!(
    a_draft_changed_while_being_issued_is_not_issued_as_it_was,
    |app| {
        let customer = settled_with_customer(&app).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let id = d["id"].as_str().unwrap().to_owned();
        assert!(d["due_date"].is_null());

        let other = store::Db::connect(&app.url).await.unwrap();
        let mut held = other.begin_write().await.unwrap();
        let due = chrono::Utc::now().timestamp_micros() + 30 * 86_400_000_000;
        sqlx::query("UPDATE invoices SET due_date = $1, updated_at = $2 WHERE id = $3")
            .bind(due)
            .bind(chrono::Utc::now().timestamp_micros())
            .bind(&id)
            .execute(held.conn())
            .await
            .unwrap();
        // The issue reads the draft as committed (without the change), then waits for the
        // writer; the change is committed while it waits.
        let path = format!("/v1/invoices/{id}/issue");
        let (issue, ()) = futures::join!(app.call("POST", &path, As::Human(&app.a), None), async {
            tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
            held.commit().await.unwrap();
        });
        assert_eq!(issue.status.as_u16(), 409, "{}", issue.text());
        assert!(
            issue.text().contains("changed while it was being issued"),
            "{}",
            issue.text()
        );

        let stored = app
            .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
            .await
            .json();
        assert_eq!(stored["status"], "draft");
        assert!(
            stored["due_date"].is_string(),
            "the change is kept: {stored}"
        );
        let issued = app.issue(&app.a, &id).await;
        assert_eq!(
            issued["invoice_number"], 1,
            "no number was used by the refused issue"
        );
        assert_eq!(issued["due_date"], stored["due_date"]);
        other.close().await;
    }
);

// Many of a company's issues at once, while its counter's row is held by another
// transaction (on PostgreSQL; SQLite has one writer, and its issues run one by one): every
// issue answers its own number, consecutive and gapless, references and rollups are right,
// and on PostgreSQL the issues that waited were made together, several in one transaction
// (the invoices share the transaction id that wrote them).
db_test!(
    a_companys_issues_waiting_for_its_counter_are_made_together,
    |app| {
        let c1 = settled_with_customer(&app).await;
        let c2 = app.entity(&app.a, json!({"name": "US Co", "type": "US:Inc", "address": {"lines": ["1 Main St"],
        "city": "Springfield", "zipcode": "62701", "state": "IL", "country": "US"}, "currency_code": "USD"})).await;
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"invoiceReferenceFormat": "A-{year}-{number:3}"})),
        )
        .await
        .expect(200);
        app.set_time("2026-06-01T10:00:00Z");
        let first = app
            .draft(&app.a, json!({"recipient_id": c1, "lines": one_line(100)}))
            .await;
        app.issue(&app.a, first["id"].as_str().unwrap()).await;
        const N: usize = 12;
        let mut ids = Vec::new();
        for i in 0..N {
            let body = if i % 3 == 0 {
                json!({"recipient_id": c2, "currency_code": "USD", "lines": one_line(1000 + i as i64),
                "exchange_rates": [{"from": "USD", "to": "EUR", "rate": "0.9"}]})
            } else {
                json!({"recipient_id": c1, "lines": one_line(500 + i as i64)})
            };
            let d = app.draft(&app.a, body).await;
            ids.push(d["id"].as_str().unwrap().to_owned());
        }

        // PostgreSQL: another transaction holds the company's counter until two issues wait for
        // it in PostgreSQL and the others had time to queue behind them in the server.
        let held = match app.engine {
            Engine::Postgres => {
                let other = store::Db::connect(&app.url).await.unwrap();
                let mut tx = other.begin_write().await.unwrap();
                sqlx::query(
                    "SELECT next_number FROM document_counters \
                 WHERE company_id = $1 AND series = 'invoice' FOR UPDATE",
                )
                .bind(app.a.company_id.as_str())
                .execute(tx.conn())
                .await
                .unwrap();
                Some((other, tx))
            }
            Engine::Sqlite => None,
        };
        let paths: Vec<String> = ids
            .iter()
            .map(|id| format!("/v1/invoices/{id}/issue"))
            .collect();
        let calls = futures::future::join_all(
            paths
                .iter()
                .map(|path| app.call("POST", path, As::Human(&app.a), None)),
        );
        let release = async {
            let Some((other, tx)) = held else {
                return;
            };
            // A bound on the wait, not a timing assertion: the check below says what happened.
            for _ in 0..600 {
                let (waiting,): (i64,) = sqlx::query_as(
                    "SELECT COUNT(*) FROM pg_stat_activity \
                 WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .fetch_one(other.pool())
                .await
                .unwrap();
                if waiting >= 2 {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
            tx.commit().await.unwrap();
        };
        let (answers, ()) = futures::join!(calls, release);

        let mut numbers = Vec::new();
        for (id, answer) in ids.iter().zip(answers) {
            let issued = answer.expect(200).json();
            let number = issued["invoice_number"].as_i64().unwrap();
            assert_eq!(issued["reference"], format!("A-2026-{number:03}"));
            let stored = app
                .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
                .await
                .expect(200)
                .json();
            assert_eq!(
                stored["invoice_number"], number,
                "the number answered is stored"
            );
            assert_eq!(stored["reference"], issued["reference"]);
            numbers.push(number);
        }
        numbers.sort_unstable();
        assert_eq!(numbers, (2..=N as i64 + 1).collect::<Vec<_>>());

        // The rollups are what a rebuild from the invoices makes.
        let rollups = async || {
            let mut out = Vec::new();
            for table in [
                "dashboard_daily_revenue",
                "dashboard_customer_revenue",
                "dashboard_unpaid_due",
            ] {
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT * FROM {table} WHERE company_id = $1"
                )))
                .bind(app.a.company_id.as_str())
                .fetch_all(app.db.pool())
                .await
                .unwrap();
                let mut rows: Vec<String> = rows.iter().map(row_text).collect();
                rows.sort();
                out.push((table, rows));
            }
            out
        };
        let written = rollups().await;
        assert_eq!(written[0].1.len(), 2, "a day row per currency: {written:?}");
        assert_eq!(written[1].1.len(), 2, "a row per customer: {written:?}");
        assert_eq!(written[2].1.len(), 1, "one due day: {written:?}");
        let mut tx = app.db.begin_write().await.unwrap();
        store::dashboard::rebuild(tx.conn(), &app.a.company_id)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(written, rollups().await);
        let d = app
            .get("/v1/dashboard", As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(d["invoice_counts"]["issued"], N as i64 + 1);

        if app.engine == Engine::Postgres {
            let (transactions,): (i64,) = sqlx::query_as(
                "SELECT COUNT(DISTINCT CAST(xmin AS TEXT)) FROM invoices \
             WHERE company_id = $1 AND invoice_number > 1",
            )
            .bind(app.a.company_id.as_str())
            .fetch_one(app.db.pool())
            .await
            .unwrap();
            assert!(
                transactions < N as i64,
                "{N} issues that waited were made in {transactions} transactions"
            );
        }
    }
);
