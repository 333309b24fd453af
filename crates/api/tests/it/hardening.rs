//! Attacks of issue #27 on what reaches headers, locales and database connections: reference
//! formats that broke every PDF download, locales without data, killed connections.

use serde_json::json;

use crate::support::*;

/// Percent-decodes an RFC 8187 value (`UTF-8''...`).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

db_test!(
    reference_formats_with_control_characters_or_quotes_are_refused,
    |app| {
        let before = app.fingerprint().await;
        for (field, bad) in [
            ("invoiceReferenceFormat", "INV-{number}\r\nX-Evil: 1"),
            ("invoiceReferenceFormat", "INV-\"{number}\""),
            ("correctiveInvoiceReferenceFormat", "R-{number}\n"),
            ("proformaReferenceFormat", "P-{number}\u{7}"),
        ] {
            let r = app
                .call(
                    "PATCH",
                    "/v1/company",
                    As::Human(&app.a),
                    Some(json!({ field: bad })),
                )
                .await
                .expect(400);
            assert!(r.text().contains(field), "{}", r.text());
            assert!(r.text().contains("may not contain"), "{}", r.text());
        }
        assert_eq!(app.fingerprint().await, before);
    }
);

db_test!(
    a_non_ascii_reference_downloads_under_a_name_that_decodes_back_to_it,
    |app| {
        app.settle(&app.a).await;
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"invoiceReferenceFormat": "Factura Nº {year}/{number:3} – Ñandú"})),
        )
        .await
        .expect(200);
        let customer = app.entity(&app.a, irish_customer()).await;
        let draft = app
            .draft(
                &app.a,
                json!({"recipient_id": customer, "lines": one_line(1000)}),
            )
            .await;
        let id = draft["id"].as_str().unwrap();
        let issued = app.issue(&app.a, id).await;
        let reference = issued["reference"].as_str().unwrap().to_owned();
        assert!(reference.contains("Ñandú"), "{reference}");

        let pdf = app
            .get(&format!("/v1/invoices/{id}/pdf"), As::Human(&app.a))
            .await
            .expect(200);
        assert_eq!(pdf.content_type(), "application/pdf");
        let disposition = pdf.headers["content-disposition"].to_str().unwrap();
        let (fallback, exact) = disposition
            .strip_prefix("inline; filename=\"")
            .and_then(|rest| rest.split_once("\"; filename*=UTF-8''"))
            .unwrap_or_else(|| panic!("{disposition}"));
        assert_eq!(percent_decode(exact), format!("{reference}.pdf"));
        assert!(
            fallback.chars().all(|c| c == ' ' || c.is_ascii_graphic()) && !fallback.contains('/'),
            "{fallback}"
        );
    }
);

db_test!(
    report_locales_without_data_are_refused_with_the_list,
    |app| {
        let before = app.fingerprint().await;
        for locales in [json!(["zz"]), json!(["en", "qaa-ES"])] {
            let r = app
                .call(
                    "POST",
                    "/v1/reports",
                    As::Human(&app.a),
                    Some(json!({"report_type": "vat_summary",
                    "period_start": "2026-01-01T00:00:00Z",
                    "period_end": "2026-04-01T00:00:00Z", "locales": locales})),
                )
                .await
                .expect(400);
            let text = r.text();
            assert!(
                text.contains("`locales`") && text.contains("no number and date formats"),
                "{text}"
            );
            assert!(
                text.contains(" es, ") && text.contains(" en, "),
                "the list: {text}"
            );
        }
        // A member's language is a locale too (mail, and their reports by default).
        let r = app
            .call(
                "POST",
                "/v1/members",
                As::Human(&app.a),
                Some(json!({"email": "zed@alpha.test", "kind": "password", "language": "zz"})),
            )
            .await
            .expect(400);
        assert!(r.text().contains("`language`"), "{}", r.text());
        assert_eq!(app.fingerprint().await, before);
        // Locales with data are still fine.
        app.call(
            "POST",
            "/v1/members",
            As::Human(&app.a),
            Some(json!({"email": "ana@alpha.test", "kind": "password", "language": "es_MX"})),
        )
        .await
        .expect(201);
    }
);

/// Database connections killed under the service (a failover, an operator's
/// `pg_terminate_backend`): the next requests succeed on fresh connections or answer 503
/// with `Retry-After`, never 500. PostgreSQL only: SQLite has no connections to lose.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_database_connections_answer_503_or_succeed_never_500() {
    use sqlx::Connection as _;
    let app = TestApp::new(Engine::Postgres).await;
    app.settle(&app.a).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    for round in 0..3 {
        // Several connections open and idle in the pool.
        let warm: Vec<_> = (0..8)
            .map(|_| app.get("/v1/entities", As::Human(&app.a)))
            .collect();
        for r in futures::future::join_all(warm).await {
            r.expect(200);
        }
        let mut admin = sqlx::PgConnection::connect(&app.url).await.unwrap();
        let killed: Vec<(bool,)> = sqlx::query_as(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_all(&mut admin)
        .await
        .unwrap();
        assert!(!killed.is_empty(), "round {round}: no connection to kill");
        admin.close().await.unwrap();

        let answers = [
            app.get("/v1/session", As::Human(&app.a)).await,
            app.get(&format!("/v1/entities/{customer}"), As::Human(&app.a))
                .await,
            app.call(
                "POST",
                "/v1/entities",
                As::Human(&app.a),
                Some(irish_customer()),
            )
            .await,
        ];
        for r in answers {
            match r.status.as_u16() {
                200 | 201 => {}
                503 => assert!(r.headers.contains_key("retry-after"), "{}", r.text()),
                other => panic!("round {round}: {other} {}", r.text()),
            }
        }
        // And the service is whole again.
        app.get("/v1/session", As::Human(&app.a)).await.expect(200);
    }
}
