//! E-invoices out (`GET /v1/invoices/{id}/einvoice`): invoices issued through the API in
//! every format, validated by the official rules (the offline kit in ../shared/einvoice),
//! and the answers for drafts, unknown formats and documents a format cannot carry.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::support::*;

const FORMATS: [(&str, &str); 7] = [
    ("ubl", "en16931"),
    ("cii", "en16931"),
    ("xrechnung-ubl", "xrechnung"),
    ("xrechnung-cii", "xrechnung"),
    ("peppol", "peppol"),
    ("facturx", "facturx"),
    ("facturae", "facturae"),
];

/// The kit's script and the Python that runs it; `None` where the kit is not checked out.
pub(crate) fn kit() -> Option<(PathBuf, String)> {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/einvoice/validate");
    // The kit lives beside the repository (../shared/einvoice), not in it: where it is not
    // checked out the validation is skipped with a warning, unless it is required.
    let required = std::env::var("INVOICING_REQUIRE_EINVOICE_KIT").is_ok_and(|v| v == "1");
    if !script.exists() && !required {
        eprintln!(
            "warning: {} is not here: e-invoices are not validated by the official rules",
            script.display()
        );
        return None;
    }
    let python = std::env::var("INVOICING_TEST_PYTHON").ok();
    match python {
        Some(python) if script.exists() => Some((script, python)),
        python => panic!(
            "the e-invoice validation kit is needed: {} exists: {}, INVOICING_TEST_PYTHON: \
             {python:?} (scripts/test sets it)",
            script.display(),
            script.exists()
        ),
    }
}

/// Validates `files` (name, XML or PDF) with `profile` in one kit process; panics with the
/// report on any fatal finding.
pub(crate) fn validate<B: AsRef<[u8]>>(profile: &str, files: &[(String, B)]) {
    let Some((script, python)) = kit() else {
        return;
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let paths: Vec<PathBuf> = files
        .iter()
        .map(|(name, xml)| {
            let p = dir.path().join(name);
            std::fs::write(&p, xml.as_ref()).expect("written");
            p
        })
        .collect();
    let out = std::process::Command::new(python)
        .arg(script)
        .arg("--profile")
        .arg(profile)
        .args(&paths)
        .output()
        .expect("the kit runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{profile}: fatal findings:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, _) in files {
        assert!(
            report.contains(&format!("{name}: 0 fatal")),
            "{profile}: {name} not reported clean:\n{report}"
        );
    }
}

fn german_customer() -> Value {
    json!({
        "name": "Kunde AG", "type": "DE:AG", "vies_vat_id": "DE136695976",
        "address": {"lines": ["Hauptstraße 5"], "city": "Berlin", "zipcode": "10115", "country": "DE"},
        "einvoice": {"format": "xrechnung-cii", "endpoint": {"scheme": "9930", "id": "DE136695976"},
            "buyer_reference": "991-01234-56"}
    })
}

/// The company with what XRechnung and Peppol need (electronic address, contact) and a
/// bank account; returns the account's id.
pub(crate) async fn ready_company(app: &TestApp) -> String {
    app.settle(&app.a).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(
            json!({"electronicAddress": {"scheme": "9935", "id": "IE6388047V"},
            "contactName": "Ana Pérez"}),
        ),
    )
    .await
    .expect(200);
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
    account["id"].as_str().unwrap().to_owned()
}

pub(crate) async fn issued(app: &TestApp, body: Value) -> String {
    let d = app.draft(&app.a, body).await;
    let id = d["id"].as_str().unwrap().to_owned();
    app.issue(&app.a, &id).await;
    id
}

pub(crate) async fn einvoice(app: &TestApp, id: &str, format: Option<&str>) -> Resp {
    let q = format.map(|f| format!("?format={f}")).unwrap_or_default();
    app.get(&format!("/v1/invoices/{id}/einvoice{q}"), As::Human(&app.a))
        .await
}

db_test!(every_format_of_every_kind_of_invoice_validates, |app| {
    let account = ready_company(&app).await;
    let mut irish = irish_customer();
    irish["einvoice"] = json!({"endpoint": {"scheme": "9935", "id": "IE9825613N"},
        "buyer_reference": "IE-DEPT-4"});
    let irish = app.entity(&app.a, irish).await;
    let german = app.entity(&app.a, german_customer()).await;
    let us = app
        .entity(
            &app.a,
            json!({"name": "Client Inc", "type": "US:Inc", "fiscal_id": "12-3456789",
                "address": {"lines": ["1 Main St"], "city": "Springfield", "zipcode": "62701",
                    "state": "IL", "country": "US"},
                "currency_code": "EUR",
                "einvoice": {"endpoint": {"scheme": "0060", "id": "123456789"}, "buyer_reference": "US-77"}}),
        )
        .await;
    app.set_time("2026-03-10T10:00:00Z");
    let accounts = json!([account]);
    let mut cases: Vec<(&str, String)> = Vec::new();
    cases.push((
        "domestic",
        issued(
            &app,
            json!({"recipient_id": irish, "bank_account_ids": accounts,
                "lines": [{"concept": "Consulting", "quantity": "7.5", "quantity_unit": "h", "unit_price": 12000},
                          {"concept": "Travel & <expenses>", "unit_price": 4599}],
                "order_reference": "PO-4711", "notes": "Thank you.", "period_start": "2026-02-01",
                "period_end": "2026-02-28", "due_date": "2026-04-15"}),
        )
        .await,
    ));
    cases.push((
        "multi-rate",
        issued(
            &app,
            json!({"recipient_id": irish, "bank_account_ids": accounts,
                "lines": [{"concept": "Paper", "subtotal": 10000},
                          {"concept": "VAT 23%", "subtotal": 2300, "is_tax": true},
                          {"concept": "Newspaper", "subtotal": 5000},
                          {"concept": "VAT 9%", "subtotal": 450, "is_tax": true}]}),
        )
        .await,
    ));
    cases.push((
        "reverse-charge",
        issued(
            &app,
            json!({"recipient_id": german, "bank_account_ids": accounts, "lines": one_line(250000)}),
        )
        .await,
    ));
    cases.push((
        "intra-eu-goods",
        issued(
            &app,
            json!({"recipient_id": german, "bank_account_ids": accounts, "supply_type": "goods",
                "delivery_date": "2026-03-09", "lines": one_line(99900)}),
        )
        .await,
    ));
    cases.push((
        "export",
        issued(
            &app,
            json!({"recipient_id": us, "bank_account_ids": accounts, "supply_type": "goods",
                "lines": one_line(480000)}),
        )
        .await,
    ));
    cases.push((
        "outside-scope",
        issued(
            &app,
            json!({"recipient_id": us, "bank_account_ids": accounts, "lines": one_line(75000)}),
        )
        .await,
    ));
    cases.push((
        "foreign-currency",
        issued(
            &app,
            json!({"recipient_id": irish, "bank_account_ids": accounts, "currency_code": "USD",
                "exchange_rates": [{"from": "USD", "to": "EUR", "rate": "0.9123"}],
                "lines": one_line(33333)}),
        )
        .await,
    ));
    let long: Vec<Value> = (1..=80)
        .map(|n| {
            json!({"concept": format!("Item {n}"), "quantity": format!("{}.{}", n % 5 + 1, n % 10),
            "unit_price": 999 + n * 13})
        })
        .collect();
    cases.push((
        "long",
        issued(
            &app,
            json!({"recipient_id": irish, "bank_account_ids": accounts, "lines": long}),
        )
        .await,
    ));
    let original = cases[0].1.clone();
    let credit = app
        .call(
            "POST",
            &format!("/v1/invoices/{original}/correct"),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    cases.push(("credit-note", credit["id"].as_str().unwrap().to_owned()));

    for (format, profile) in FORMATS {
        let mut files = Vec::new();
        for (name, id) in &cases {
            let r = einvoice(&app, id, Some(format)).await.expect(200);
            // Factur-X is the PDF with its XML embedded; the others are XML.
            let (content_type, extension) = if format == "facturx" {
                ("application/pdf", "pdf")
            } else {
                ("application/xml", "xml")
            };
            assert_eq!(r.content_type(), content_type, "{format} {name}");
            let disposition = r.headers["content-disposition"]
                .to_str()
                .unwrap()
                .to_owned();
            assert!(
                disposition.starts_with("attachment;")
                    && disposition.contains(&format!("-{format}.{extension}")),
                "{disposition}"
            );
            if format == "ubl" {
                // Each case is the VAT case it is named after.
                let expected = match *name {
                    "reverse-charge" => "<cbc:ID>AE</cbc:ID>",
                    "intra-eu-goods" => "<cbc:ID>K</cbc:ID>",
                    "export" => "<cbc:ID>G</cbc:ID>",
                    "outside-scope" => "<cbc:ID>O</cbc:ID>",
                    "foreign-currency" => "<cbc:TaxCurrencyCode>EUR</cbc:TaxCurrencyCode>",
                    "multi-rate" => "<cbc:Percent>9</cbc:Percent>",
                    _ => "<cbc:ID>S</cbc:ID>",
                };
                assert!(r.text().contains(expected), "{name}: {}", r.text());
            }
            files.push((format!("{name}.{extension}"), r.body));
        }
        validate(profile, &files);
    }

    // The credit note is a CreditNote with positive amounts naming the corrected invoice.
    let reference = app
        .get(&format!("/v1/invoices/{original}"), As::Human(&app.a))
        .await
        .expect(200)
        .json()["reference"]
        .as_str()
        .unwrap()
        .to_owned();
    let credit_id = &cases.last().unwrap().1;
    let ubl = einvoice(&app, credit_id, Some("ubl"))
        .await
        .expect(200)
        .text();
    assert!(ubl.contains("<CreditNote "), "{ubl}");
    assert!(
        ubl.contains(&format!("<cbc:ID>{reference}</cbc:ID>")),
        "{ubl}"
    );
    assert!(!ubl.contains(">-"), "{ubl}");
    // The file name carries the reference.
    let credit_ref = credit["reference"].as_str().unwrap();
    let r = einvoice(&app, credit_id, Some("cii")).await.expect(200);
    assert!(
        r.headers["content-disposition"]
            .to_str()
            .unwrap()
            .contains(credit_ref),
        "{:?}",
        r.headers
    );
});

db_test!(the_format_defaults_to_the_recipients_then_ubl, |app| {
    let account = ready_company(&app).await;
    let german = app.entity(&app.a, german_customer()).await;
    let irish = app.entity(&app.a, irish_customer()).await;
    let to_german = issued(
        &app,
        json!({"recipient_id": german, "bank_account_ids": [account], "lines": one_line(10000)}),
    )
    .await;
    let r = einvoice(&app, &to_german, None).await.expect(200);
    assert_eq!(r.headers["x-einvoice-format"], "xrechnung-cii");
    assert!(r.text().contains("xrechnung_3.0"), "{}", r.text());
    assert!(r.text().contains("<ram:BuyerReference>991-01234-56<"));
    validate("xrechnung", &[("default.xml".into(), r.text())]);

    let to_irish = issued(
        &app,
        json!({"recipient_id": irish, "lines": one_line(10000)}),
    )
    .await;
    let r = einvoice(&app, &to_irish, None).await.expect(200);
    assert_eq!(r.headers["x-einvoice-format"], "ubl");
    assert!(r.text().contains("<Invoice "), "{}", r.text());
    // An explicit format wins over the recipient's, in any case.
    let r = einvoice(&app, &to_german, Some("UBL")).await.expect(200);
    assert_eq!(r.headers["x-einvoice-format"], "ubl");
    // Facturae says it is unsigned.
    let r = einvoice(&app, &to_irish, Some("facturae"))
        .await
        .expect(200);
    assert_eq!(r.headers["x-facturae-signed"], "false");
});

db_test!(
    drafts_unknown_formats_and_invalid_documents_are_refused,
    |app| {
        app.settle(&app.a).await;
        let irish = app.entity(&app.a, irish_customer()).await;
        let draft = app
            .draft(
                &app.a,
                json!({"recipient_id": irish, "lines": one_line(10000)}),
            )
            .await;
        let draft_id = draft["id"].as_str().unwrap();
        let r = einvoice(&app, draft_id, Some("ubl")).await.expect(409);
        assert!(r.text().contains("draft"), "{}", r.text());

        let r = einvoice(&app, draft_id, Some("zugferd")).await.expect(400);
        for (name, _) in FORMATS {
            assert!(r.text().contains(name), "{}", r.text());
        }

        // Nothing set for XRechnung or Peppol: each refusal names its rule and the field.
        app.issue(&app.a, draft_id).await;
        let r = einvoice(&app, draft_id, Some("xrechnung-ubl"))
            .await
            .expect(400);
        assert!(
            r.text().contains("BR-DE-15") && r.text().contains("buyer_reference"),
            "{}",
            r.text()
        );
        let r = einvoice(&app, draft_id, Some("peppol")).await.expect(400);
        assert!(
            r.text().contains("PEPPOL-EN16931-R020") && r.text().contains("electronicAddress"),
            "{}",
            r.text()
        );
        // UBL needs none of them.
        einvoice(&app, draft_id, Some("ubl")).await.expect(200);

        // Another company's invoice is not found, whatever the format.
        app.get(
            &format!("/v1/invoices/{draft_id}/einvoice?format=ubl"),
            As::Human(&app.b),
        )
        .await
        .expect(404);
        einvoice(&app, "no-such-invoice", Some("ubl"))
            .await
            .expect(404);
    }
);

db_test!(
    an_exported_invoice_imports_into_another_company_to_the_cent,
    |app| {
        // Issue #31's round trip: every importable format this service writes, exported by one
        // company and imported by another, is the same invoice to the cent.
        let account = ready_company(&app).await;
        app.settle(&app.b).await;
        let german = app.entity(&app.a, german_customer()).await;
        let lines = json!([
            {"concept": "Consulting", "quantity": 2.5, "unit_price": 12000},
            {"concept": "Licence", "quantity": 3, "unit_price": 4999},
            {"concept": "Travel", "unit_price": 8750}
        ]);
        let id = issued(
            &app,
            json!({"recipient_id": german, "bank_account_ids": [account], "lines": lines}),
        )
        .await;
        let invoice = app
            .get(&format!("/v1/invoices/{id}"), As::Human(&app.a))
            .await
            .expect(200)
            .json();
        let credit = app
            .call(
                "POST",
                &format!("/v1/invoices/{id}/correct"),
                As::Human(&app.a),
                Some(json!({})),
            )
            .await
            .expect(201)
            .json();
        let mut supplier = None;
        for doc in [&invoice, &credit] {
            let doc_id = doc["id"].as_str().unwrap();
            for format in [
                "ubl",
                "cii",
                "xrechnung-ubl",
                "xrechnung-cii",
                "peppol",
                "facturx",
            ] {
                let file = einvoice(&app, doc_id, Some(format)).await.expect(200);
                // Factur-X is imported as the PDF it is, from its embedded XML.
                let content_type = file.content_type();
                let expense = app
                    .call_raw(
                        "POST",
                        "/v1/expenses/import",
                        As::Human(&app.b),
                        Some(file.body),
                        &content_type,
                    )
                    .await
                    .expect(201)
                    .json();
                let what = format!("{format} of {}", doc["reference"]);
                assert_eq!(expense["invoice_reference"], doc["reference"], "{what}");
                assert_eq!(expense["currency_code"], doc["currency_code"], "{what}");
                assert_eq!(expense["net_total"], doc["net_total"], "{what}: {expense}");
                assert_eq!(expense["tax_total"], doc["tax_total"], "{what}: {expense}");
                assert_eq!(expense["total"], doc["total"], "{what}: {expense}");
                // One supplier for every file: the exporting company, found by its VAT id.
                let s = expense["supplier_id"].as_str().unwrap().to_owned();
                assert_eq!(supplier.get_or_insert_with(|| s.clone()), &s, "{what}");
                app.call(
                    "DELETE",
                    &format!("/v1/expenses/{}", expense["id"].as_str().unwrap()),
                    As::Human(&app.b),
                    None,
                )
                .await
                .expect(204);
            }
        }
        let supplier = app
            .get(
                &format!("/v1/entities/{}", supplier.unwrap()),
                As::Human(&app.b),
            )
            .await
            .expect(200)
            .json();
        let company = app
            .get("/v1/company", As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(supplier["name"], company["name"], "{supplier}");
    }
);
