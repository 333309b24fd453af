//! POST /v1/invoices (and the other ways a draft is made): draft numbers, placeholders, writes refused while another writer holds the database.

use serde_json::json;

use crate::support::*;

// Drafts made at once each get their own draft number, with none skipped: on SQLite the
// number is taken and stored in one round trip (store::invoices::insert_numbered_draft),
// on PostgreSQL by a statement that commits just before the draft's
// (store::counters::next_ahead); neither reads the counter after another writer moved it.
db_test!(drafts_made_at_once_get_distinct_gapless_numbers, |app| {
    let customer = settled_with_customer(&app).await;
    let body = json!({"recipient_id": customer, "lines": one_line(100)});
    let calls = (0..16).map(|_| {
        app.call(
            "POST",
            "/v1/invoices",
            As::Human(&app.a),
            Some(body.clone()),
        )
    });
    let mut numbers: Vec<i64> = futures::future::join_all(calls)
        .await
        .iter()
        .map(|r| {
            assert_eq!(r.status.as_u16(), 201, "{}", r.text());
            r.json()["order_number"].as_i64().unwrap()
        })
        .collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=16).collect::<Vec<i64>>());
    let next = app.draft(&app.a, body).await;
    assert_eq!(next["order_number"], 17);
});

// A person's draft that fails to be stored: nothing of it is kept, and on PostgreSQL its
// number, taken ahead of its transaction so that a company's drafts do not wait for each
// other's commits, stays used (draft numbers order drafts; the law's invoice numbers are
// taken inside the issue's transaction and never skip). On SQLite the number is taken inside
// the transaction and given back. The failure is made by a trigger that refuses the draft
// with a marked note, after the request's checks passed.
db_test!(
    a_failed_drafts_number_is_left_unused_on_postgres_only,
    |app| {
        let customer = settled_with_customer(&app).await;
        let refuse: &[&'static str] = match app.engine {
            Engine::Postgres => &[
                "CREATE FUNCTION refuse_marked_draft() RETURNS trigger LANGUAGE plpgsql AS $$ \
             BEGIN IF NEW.details_json LIKE '%refuse-this-draft%' THEN \
             RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$",
                "CREATE TRIGGER refuse_marked_draft BEFORE INSERT ON invoices \
             FOR EACH ROW EXECUTE FUNCTION refuse_marked_draft()",
            ],
            Engine::Sqlite => &[
                "CREATE TRIGGER refuse_marked_draft BEFORE INSERT ON invoices \
             WHEN NEW.details_json LIKE '%refuse-this-draft%' \
             BEGIN SELECT RAISE(ABORT, 'refused by the test'); END",
            ],
        };
        for &sql in refuse {
            sqlx::query(sql).execute(app.db.pool()).await.unwrap();
        }
        let body = json!({"recipient_id": customer, "lines": one_line(100)});
        assert_eq!(app.draft(&app.a, body.clone()).await["order_number"], 1);
        let mut marked = body.clone();
        marked["notes"] = json!("refuse-this-draft");
        let failed = app
            .call("POST", "/v1/invoices", As::Human(&app.a), Some(marked))
            .await;
        assert!(failed.status.is_server_error(), "{}", failed.text());
        let next = app.draft(&app.a, body).await;
        let expected = match app.engine {
            Engine::Postgres => 3,
            Engine::Sqlite => 2,
        };
        assert_eq!(next["order_number"], expected);
        let (drafts,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM invoices WHERE company_id = $1")
                .bind(app.a.company_id.as_str())
                .fetch_one(app.db.pool())
                .await
                .unwrap();
        assert_eq!(drafts, 2, "the failed draft was stored");
    }
);

// Drafts made by hand, by correcting an invoice and from a proforma share one draft
// numbering (one counter).
db_test!(every_kind_of_draft_takes_the_next_draft_number, |app| {
    let customer = settled_with_customer(&app).await;
    let body = json!({"recipient_id": customer, "lines": one_line(100)});
    let first = app.draft(&app.a, body.clone()).await;
    assert_eq!(first["order_number"], 1);
    let oid = first["id"].as_str().unwrap().to_owned();
    app.issue(&app.a, &oid).await;
    let correction = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/corrections"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(correction["order_number"], 2);
    let proforma = app
        .call(
            "POST",
            "/v1/proformas",
            As::Human(&app.a),
            Some(body.clone()),
        )
        .await
        .expect(201)
        .json();
    let from_proforma = app
        .call(
            "POST",
            &format!("/v1/proformas/{}/invoice", proforma["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(201)
        .json();
    assert_eq!(from_proforma["order_number"], 3);
    assert_eq!(from_proforma["order_year"], first["order_year"]);
    // Correcting and issuing in one step uses a number too, then gives it up on issue.
    let corrected = app
        .call(
            "POST",
            &format!("/v1/invoices/{oid}/correct"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    assert_eq!(corrected["status"], "issued");
    assert!(corrected["order_number"].is_null());
    assert_eq!(app.draft(&app.a, body).await["order_number"], 5);
    // Another company's drafts are numbered on their own.
    app.settle(&app.b).await;
    let theirs = app.entity(&app.b, irish_customer()).await;
    let b = app
        .draft(
            &app.b,
            json!({"recipient_id": theirs, "lines": one_line(100)}),
        )
        .await;
    assert_eq!(b["order_number"], 1);
});

db_test!(placeholders_required_unknown_and_frozen, |app| {
    let customer = settled_with_customer(&app).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"customPlaceholders": [
            {"key": "po_number", "label": "PO number", "required": true},
            {"key": "project", "label": "Project", "required": false, "default": "General"}
        ]})),
    )
    .await
    .expect(200);
    let before = app.fingerprint().await;
    let resp = app
        .call(
            "POST",
            "/v1/invoices",
            As::Human(&app.a),
            Some(json!({"recipient_id": customer, "lines": one_line(100)})),
        )
        .await
        .expect(400);
    assert!(resp.text().contains("po_number"), "{}", resp.text());
    let resp = app.call("POST", "/v1/invoices", As::Human(&app.a), Some(json!({"recipient_id": customer,
        "lines": one_line(100), "custom_placeholder_values": [{"key": "po_number", "value": "1"}, {"key": "nope", "value": "x"}]})))
        .await
        .expect(400);
    assert!(resp.text().contains("nope"), "{}", resp.text());
    assert_eq!(app.fingerprint().await, before);
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100),
        "custom_placeholder_values": [{"key": "po_number", "value": "PO-77"}]}),
        )
        .await;
    assert_eq!(
        d["custom_placeholder_values"],
        json!([
        {"key": "po_number", "value": "PO-77"}, {"key": "project", "value": "General"}])
    );
    let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
    // Changing the company default after issue does not touch the issued invoice.
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"customPlaceholders": [
            {"key": "po_number", "label": "PO number", "required": true},
            {"key": "project", "label": "Project", "default": "Other"}
        ]})),
    )
    .await
    .expect(200);
    let again = app
        .get(
            &format!("/v1/invoices/{}", issued["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .json();
    assert_eq!(again["custom_placeholder_values"][1]["value"], "General");
});

db_test!(
    refused_writes_are_answered_while_another_writer_holds_the_database,
    |app| {
        let customer = settled_with_customer(&app).await;
        let issued = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let issued_id = issued["id"].as_str().unwrap().to_owned();
        app.issue(&app.a, &issued_id).await;

        // Another process holds the writer: on SQLite the database's one write lock, on
        // PostgreSQL a lock that lets invoices be read but not written.
        let other = store::Db::connect(&app.url).await.unwrap();
        let mut held = other.begin_write().await.unwrap();
        if app.engine == Engine::Postgres {
            use sqlx::Executor;
            held.conn()
                .execute("LOCK TABLE invoices IN EXCLUSIVE MODE")
                .await
                .unwrap();
        }

        // Requests refused before they write are answered now, not after the writer is
        // free (on SQLite they used to wait for the lock and fail with a 500).
        let no_recipient = app
            .call(
                "POST",
                "/v1/invoices",
                As::Human(&app.a),
                Some(json!({"recipient_id": "no-such-entity", "lines": one_line(100)})),
            )
            .await;
        assert_eq!(no_recipient.status.as_u16(), 400, "{}", no_recipient.text());
        let again = app
            .call(
                "POST",
                &format!("/v1/invoices/{issued_id}/issue"),
                As::Human(&app.a),
                None,
            )
            .await;
        assert_eq!(again.status.as_u16(), 409, "{}", again.text());
        let unknown = app
            .call(
                "POST",
                "/v1/invoices/no-such-invoice/issue",
                As::Human(&app.a),
                None,
            )
            .await;
        assert_eq!(unknown.status.as_u16(), 404, "{}", unknown.text());

        held.rollback().await.unwrap();
        // Once the writer is free, writing works as before.
        app.draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    }
);
