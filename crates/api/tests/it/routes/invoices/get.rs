//! GET /v1/invoices/{id}: found by id at any size, scoped to the caller's company; the AI gate on its writes.

use serde_json::json;

use crate::support::*;

db_test!(
    a_draft_is_found_by_its_id_however_many_drafts_its_company_has,
    |app| {
        // A company with thousands of drafts, just made (the database's statistics have
        // not caught up, as for a new company or one importing its backlog).
        let customer = settled_with_customer(&app).await;
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let id = d["id"].as_str().unwrap().to_owned();
        let mut conn = app.db.pool().acquire().await.unwrap();
        sqlx::query(
            "WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) \
             INSERT INTO invoices (id, company_id, recipient_id, series, status, origin, supply_type, \
             currency_code, net_total, tax_total, withholding_total, total, line_count, lines_json, created_at) \
             SELECT id || '-' || i, company_id, recipient_id, series, status, origin, supply_type, \
             currency_code, net_total, tax_total, withholding_total, total, line_count, lines_json, created_at \
             FROM invoices, n WHERE id = $1",
        )
        .bind(&id)
        .execute(&mut *conn)
        .await
        .unwrap();

        // Issuing, bulk issuing and deleting find the draft through the primary key, not by
        // reading the company's drafts (which, under the counter lock, serialised issuing at
        // a few milliseconds each).
        let explain = match app.engine {
            Engine::Sqlite => "EXPLAIN QUERY PLAN",
            Engine::Postgres => "EXPLAIN",
        };
        let sql = format!(
            "{explain} UPDATE invoices SET status = status WHERE {}",
            store::invoices::DRAFT_BY_ID
        );
        let plan: Vec<String> = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&app.a.company_id)
            .bind(&id)
            .fetch_all(&mut *conn)
            .await
            .unwrap()
            .iter()
            .map(|row| {
                use sqlx::Row;
                let last = row.len() - 1;
                row.try_get::<String, _>(last).unwrap()
            })
            .collect();
        let plan = plan.join("\n");
        match app.engine {
            Engine::Sqlite => assert!(
                plan.contains("(id=?)") && !plan.contains("status=?"),
                "{plan}"
            ),
            Engine::Postgres => assert!(
                plan.contains("invoices_pkey") && !plan.contains("Index Cond: ((company_id"),
                "{plan}"
            ),
        }
        drop(conn);

        // And it is issued, once, with the first number.
        let issued = app.issue(&app.a, &id).await;
        assert_eq!(issued["invoice_number"], 1);
        app.call(
            "POST",
            &format!("/v1/invoices/{id}/issue"),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(409);
    }
);

db_test!(invoice_isolation_and_ai_gate, |app| {
    let customer = settled_with_customer(&app).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    app.get(&format!("/v1/invoices/{id}"), As::Human(&app.b))
        .await
        .expect(404);
    for (m, p) in [
        ("PATCH", format!("/v1/invoices/{id}")),
        ("DELETE", format!("/v1/invoices/{id}")),
        ("POST", format!("/v1/invoices/{id}/issue")),
    ] {
        app.call(
            m,
            &p,
            As::Human(&app.b),
            if m == "PATCH" { Some(json!({})) } else { None },
        )
        .await
        .expect(404);
    }
    assert_eq!(
        app.get("/v1/invoices", As::Human(&app.b)).await.json()["data"],
        json!([])
    );
    // AI: create is held, approved, and then exists with origin mcp.
    let before = app.fingerprint().await;
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
    assert_eq!(app.fingerprint().await, before);
    let entry = app
        .call(
            "POST",
            &format!(
                "/v1/ai-audit/{}/approve",
                held["auditEntryId"].as_str().unwrap()
            ),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    let created = app
        .get(
            &format!("/v1/invoices/{}", entry["resourceId"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(created["origin"], "mcp");
    assert_eq!(created["status"], "draft");
    // AI issue is held too; validation errors (bad lines) answer now.
    app.call(
        "POST",
        &format!("/v1/invoices/{id}/issue"),
        As::Ai(&app.a),
        None,
    )
    .await
    .expect(202);
    let resp = app
        .call(
            "POST",
            "/v1/invoices",
            As::Ai(&app.a),
            Some(json!({"recipient_id": customer, "lines": []})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("lines"));
});
