//! The issued invoice's one stored document: invoices issued before documents existed get
//! theirs from their snapshot columns (and read exactly as before), and a document that does
//! not decode is an error, never an empty invoice.

use serde_json::{Value, json};

use crate::support::*;

async fn exec(app: &TestApp, sql: &str, binds: &[Option<String>], id: &str) {
    let mut conn = app.db.pool().acquire().await.unwrap();
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
    for b in binds {
        q = q.bind(b.clone());
    }
    q.bind(id.to_owned()).execute(&mut *conn).await.unwrap();
}

async fn get(app: &TestApp, path: &str) -> Resp {
    app.call("GET", path, As::Human(&app.a), None).await
}

/// Rewrites an issued invoice into the form every invoice had before documents existed:
/// no document, and its content in the snapshot columns, as issuing used to write them.
async fn make_legacy(app: &TestApp, view: &Value) {
    let mut issuer = view["issuer"].clone();
    let mut recipient = view["recipient"].clone();
    for new in ["contact_name", "electronic_address"] {
        issuer.as_object_mut().unwrap().remove(new);
    }
    recipient
        .as_object_mut()
        .unwrap()
        .remove("electronic_address");
    // The lines as they were stored: the view's, with the quantity a decimal string.
    let mut lines = view["lines"].clone();
    for l in lines.as_array_mut().unwrap() {
        l["quantity"] = json!(l["quantity"].to_string());
    }
    let text = |v: &Value| Some(v.to_string());
    exec(
        app,
        "UPDATE invoices SET document_json = NULL, issuer_snapshot_json = $1, \
         recipient_snapshot_json = $2, lines_json = $3, custom_placeholder_values_json = $4, \
         exchange_rates_json = $5, bank_accounts_json = $6 WHERE id = $7",
        &[
            text(&issuer),
            text(&recipient),
            text(&lines),
            text(&view["custom_placeholder_values"]),
            text(&view["exchange_rates"]),
            text(&view["bank_accounts"]),
        ],
        view["id"].as_str().unwrap(),
    )
    .await;
}

db_test!(
    invoices_issued_before_documents_read_the_same_after_the_migration,
    |app| {
        app.settle(&app.a).await;
        let account = app
            .call(
                "POST",
                "/v1/bank-accounts",
                As::Human(&app.a),
                Some(json!({"name": "Main", "iban": "IE29AIBK93115212345678", "bic": "AIBKIE2D"})),
            )
            .await
            .expect(201)
            .json();
        let customer = app.entity(&app.a, irish_customer()).await;
        let d = app
        .draft(&app.a, json!({"recipient_id": customer, "bank_account_ids": [account["id"]],
            "lines": [{"concept": "Consulting", "quantity": 1.5, "quantity_unit": "h", "unit_price": 10000}],
            "currency_code": "USD", "exchange_rates": [{"from": "USD", "to": "EUR", "rate": "0.9"}],
            "due_date": "2026-12-31"}))
        .await;
        let original = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        let correction = app
            .call(
                "POST",
                &format!("/v1/invoices/{}/correct", original["id"].as_str().unwrap()),
                As::Human(&app.a),
                Some(json!({})),
            )
            .await
            .expect(201)
            .json();
        let mut before = Vec::new();
        for v in [&original, &correction] {
            let id = v["id"].as_str().unwrap();
            let view = get(&app, &format!("/v1/invoices/{id}"))
                .await
                .expect(200)
                .json();
            let pdf = get(&app, &format!("/v1/invoices/{id}/pdf"))
                .await
                .expect(200)
                .body;
            make_legacy(&app, &view).await;
            before.push((id.to_owned(), view, pdf));
        }
        // Without a document, an issued invoice cannot be read: an error, not an empty invoice.
        get(&app, &format!("/v1/invoices/{}", before[0].0))
            .await
            .expect(500);

        let done = api::documents::legacy::backfill(&app.db).await.unwrap();
        assert_eq!((done.done, done.failed), (2, 0), "{:?}", done.errors);
        for (id, view, pdf) in &before {
            let after = get(&app, &format!("/v1/invoices/{id}"))
                .await
                .expect(200)
                .json();
            assert_eq!(
                &after, view,
                "invoice {id} reads differently after the migration"
            );
            let again = get(&app, &format!("/v1/invoices/{id}/pdf"))
                .await
                .expect(200)
                .body;
            // Payment terms were never printed before documents: the correction, whose due date
            // comes from them, now states them; the original, with its own due date, does not.
            if *id == before[0].0 {
                assert!(&again == pdf, "invoice {id}: the PDF changed");
            }
        }
        // A second run finds nothing to do.
        let done = api::documents::legacy::backfill(&app.db).await.unwrap();
        assert_eq!((done.done, done.failed), (0, 0));
    }
);

db_test!(a_stored_document_that_does_not_decode_is_an_error, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": customer, "lines": one_line(100)}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    app.issue(&app.a, id).await;
    exec(
        &app,
        "UPDATE invoices SET document_json = $1 WHERE id = $2",
        &[Some("{\"version\":\"1\",\"kind\":\"ordinary\"".into())],
        id,
    )
    .await;
    for path in [
        format!("/v1/invoices/{id}"),
        format!("/v1/invoices/{id}/pdf"),
        "/v1/invoices".to_owned(),
    ] {
        let r = get(&app, &path).await.expect(500);
        assert!(
            !r.text().contains("version"),
            "internals must not show: {}",
            r.text()
        );
    }
    // A legacy row whose snapshot does not decode is counted, not silently migrated.
    exec(
        &app,
        "UPDATE invoices SET document_json = NULL, issuer_snapshot_json = $1 WHERE id = $2",
        &[Some("not json".into())],
        id,
    )
    .await;
    let done = api::documents::legacy::backfill(&app.db).await.unwrap();
    assert_eq!((done.done, done.failed), (0, 1));
});

// What issuing stores beside the document (reference, number, year, issue time) is part of
// the issued invoice: a row without one of them is corrupt, an error on every reader, never
// an invoice numbered 0 of 1970 (api::documents::of_row).
db_test!(
    an_issued_row_without_its_number_or_date_is_an_error,
    |app| {
        app.settle(&app.a).await;
        let customer = app.entity(&app.a, irish_customer()).await;
        // (The number cannot be taken away: a CHECK of the table ties it to the status.)
        for column in ["reference", "invoice_year", "issued_at"] {
            let d = app
                .draft(
                    &app.a,
                    json!({"recipient_id": customer, "lines": one_line(100)}),
                )
                .await;
            let id = d["id"].as_str().unwrap();
            app.issue(&app.a, id).await;
            get(&app, &format!("/v1/invoices/{id}/einvoice?format=ubl"))
                .await
                .expect(200);
            exec(
                &app,
                &format!("UPDATE invoices SET {column} = NULL WHERE id = $1"),
                &[],
                id,
            )
            .await;
            for path in [
                format!("/v1/invoices/{id}"),
                format!("/v1/invoices/{id}/pdf"),
                format!("/v1/invoices/{id}/einvoice?format=ubl"),
            ] {
                let r = get(&app, &path).await.expect(500);
                assert!(
                    !r.text().contains(column),
                    "internals must not show: {}",
                    r.text()
                );
            }
        }
    }
);

// A stored time is microseconds since 1970; one outside what a date can be (only a damaged
// row holds one) is an error on every reader, never silently 1 January 1970
// (store::from_micros).
db_test!(a_stored_time_out_of_range_is_an_error, |app| {
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    get(&app, &format!("/v1/entities/{customer}"))
        .await
        .expect(200);
    exec(
        &app,
        "UPDATE entities SET created_at = 9223372036854775807 WHERE id = $1",
        &[],
        &customer,
    )
    .await;
    get(&app, &format!("/v1/entities/{customer}"))
        .await
        .expect(500);
    get(&app, "/v1/entities").await.expect(500);

    let mut second = irish_customer();
    second["name"] = json!("Second Customer Ltd");
    let other = app.entity(&app.a, second).await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": other, "lines": one_line(100)}),
        )
        .await;
    let id = d["id"].as_str().unwrap();
    app.issue(&app.a, id).await;
    exec(
        &app,
        "UPDATE invoices SET issued_at = -9223372036854775807 WHERE id = $1",
        &[],
        id,
    )
    .await;
    for path in [
        format!("/v1/invoices/{id}"),
        format!("/v1/invoices/{id}/pdf"),
    ] {
        let r = get(&app, &path).await.expect(500);
        assert!(!r.text().contains("1970"), "{}", r.text());
    }
});
