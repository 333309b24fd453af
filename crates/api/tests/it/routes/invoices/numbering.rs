//! The numbers POST /v1/invoices/{id}/issue gives: gapless per year and series, references rendered from the company's format.

use serde_json::json;

use crate::support::*;

db_test!(numbers_are_gapless_per_year_and_series, |app| {
    let customer = settled_with_customer(&app).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"invoiceReferenceFormat": "{year}/{number}", "firstInvoiceYearlyNumber": 7})),
    )
    .await
    .expect(200);
    app.set_time("2026-12-31T23:59:00Z");
    let mut refs = Vec::new();
    for _ in 0..3 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        // A deleted draft never burns a number.
        let throwaway = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(1)}),
            )
            .await;
        app.call(
            "DELETE",
            &format!("/v1/invoices/{}", throwaway["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(204);
        refs.push(app.issue(&app.a, d["id"].as_str().unwrap()).await["reference"].clone());
    }
    app.set_time("2027-01-01T00:00:05Z");
    for _ in 0..2 {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        assert_eq!(d["order_year"], 2027);
        assert_eq!(
            d["order_number"],
            1 + refs.len() as i64 - 3,
            "draft order restarts per year"
        );
        refs.push(app.issue(&app.a, d["id"].as_str().unwrap()).await["reference"].clone());
    }
    assert_eq!(
        refs,
        vec![
            json!("2026/7"),
            json!("2026/8"),
            json!("2026/9"),
            json!("2027/7"),
            json!("2027/8")
        ]
    );
    // Company B numbers independently.
    app.settle(&app.b).await;
    let cb = app.entity(&app.b, irish_customer()).await;
    let d = app
        .draft(&app.b, json!({"recipient_id": cb, "lines": one_line(100)}))
        .await;
    assert_eq!(
        app.issue(&app.b, d["id"].as_str().unwrap()).await["invoice_number"],
        1
    );
});

// The reference is rendered in the database, in the round trip that takes the number: its
// text is bound as data (quotes, semicolons, percent signs and backslashes stay as they
// are), and padding is a minimum width, as the format says, not a truncation.
db_test!(references_keep_any_text_and_outgrow_their_padding, |app| {
    let customer = settled_with_customer(&app).await;
    let format = |f: &str, first: Option<i64>| {
        let mut body = json!({"invoiceReferenceFormat": f});
        if let Some(n) = first {
            body["firstInvoiceYearlyNumber"] = json!(n);
        }
        body
    };
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(format("O'Brien %d; DROP {year}|{number:3}\\", Some(998))),
    )
    .await
    .expect(200);
    app.set_time("2026-05-04T09:00:00Z");
    let issue = async || {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(100)}),
            )
            .await;
        let issued = app.issue(&app.a, d["id"].as_str().unwrap()).await;
        let stored = app
            .get(
                &format!("/v1/invoices/{}", d["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .expect(200)
            .json();
        assert_eq!(
            stored["reference"], issued["reference"],
            "the reference returned is the one stored"
        );
        assert_eq!(stored["invoice_number"], issued["invoice_number"]);
        (
            issued["invoice_number"].as_i64().unwrap(),
            issued["reference"].as_str().unwrap().to_owned(),
        )
    };
    assert_eq!(
        issue().await,
        (998, "O'Brien %d; DROP 2026|998\\".to_owned())
    );
    assert_eq!(
        issue().await,
        (999, "O'Brien %d; DROP 2026|999\\".to_owned())
    );
    assert_eq!(
        issue().await,
        (1000, "O'Brien %d; DROP 2026|1000\\".to_owned())
    );
    // A format that is the number alone, and one padded to the widest allowed.
    for (f, expected) in [
        ("{number}", "1001"),
        ("{number:12}", "000000001002"),
        ("{year}{number:1}", "20261003"),
    ] {
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(format(f, None)),
        )
        .await
        .expect(200);
        assert_eq!(issue().await.1, expected, "format {f}");
    }
});
