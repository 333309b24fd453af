//! `POST /v1/expenses/import`: suppliers' e-invoices become expenses.

use einvoice::testing::{cii, facturx_pdf, ubl};
use serde_json::{Value, json};

use crate::support::*;

const PATH: &str = "/v1/expenses/import";

async fn import(app: &TestApp, who: As<'_>, file: &[u8], content_type: &str) -> Resp {
    app.call_raw("POST", PATH, who, Some(file.to_vec()), content_type)
        .await
}

async fn count(app: &TestApp, table: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT COUNT(*) FROM {table}")))
        .fetch_one(app.db.pool())
        .await
        .unwrap();
    n
}

db_test!(
    an_e_invoice_becomes_an_expense_with_its_supplier_and_the_file_as_receipt,
    |app| {
        let file = ubl("Invoice", "R-2026-17", "345.10");
        let expense = import(&app, As::Human(&app.a), file.as_bytes(), "application/xml")
            .await
            .expect(201)
            .json();
        assert_eq!(expense["source"], "einvoice");
        assert_eq!(expense["invoice_reference"], "R-2026-17");
        assert_eq!(expense["expense_date"], "2026-10-05T00:00:00Z");
        assert_eq!(expense["currency_code"], "EUR");
        assert_eq!(expense["net_total"], 29000, "{expense}");
        assert_eq!(expense["tax_total"], 5510, "{expense}");
        assert_eq!(expense["total"], 34510, "{expense}");
        assert_eq!(expense["description"], "Thanks & regards");
        assert_eq!(expense["corrected_expense_id"], Value::Null);
        let lines = expense["lines"].as_array().unwrap();
        let concepts: Vec<&str> = lines
            .iter()
            .map(|l| l["concept"].as_str().unwrap())
            .collect();
        assert_eq!(
            concepts,
            ["Consulting", "Cables", "Allowance: Discount", "VAT 19% (S)"]
        );
        assert_eq!(lines[0]["quantity"], 2.5);
        assert_eq!(lines[0]["unit_price"], 10000);
        assert_eq!(lines[1]["unit_price"], 500, "price per base quantity");
        assert_eq!(lines[2]["subtotal"], -1000);
        assert_eq!(lines[3]["is_tax"], true);

        // The supplier was made from the seller's data, ids as given.
        let id = expense["id"].as_str().unwrap();
        let supplier_id = expense["supplier_id"].as_str().unwrap();
        let supplier = app
            .get(&format!("/v1/entities/{supplier_id}"), As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(supplier["name"], "Lieferant GmbH");
        assert_eq!(supplier["vies_vat_id"], "DE123456789", "{supplier}");
        assert_eq!(supplier["address"]["city"], "Berlin");
        assert_eq!(supplier["address"]["country"], "DE");
        assert_eq!(supplier["email"], "billing@lieferant.example");

        // The file is the receipt, byte for byte.
        let receipt = app
            .get(&format!("/v1/expenses/{id}/receipt"), As::Human(&app.a))
            .await
            .expect(200);
        assert_eq!(receipt.body, file.as_bytes());
        assert_eq!(receipt.content_type(), "application/xml");

        // The same supplier and number again: 409 naming the expense, nothing written.
        let (expenses, files) = (count(&app, "expenses").await, count(&app, "files").await);
        let again = import(&app, As::Human(&app.a), file.as_bytes(), "text/xml")
            .await
            .expect(409)
            .text();
        assert!(again.contains(id), "{again}");
        assert_eq!(count(&app, "expenses").await, expenses);
        assert_eq!(
            count(&app, "files").await,
            files,
            "no receipt stored for the refused file"
        );

        // Another invoice of the same seller reuses the supplier; its credit note is negative
        // and linked to the invoice it corrects (BT-25 `INV-1`).
        let inv1 = import(
            &app,
            As::Human(&app.a),
            ubl("Invoice", "INV-1", "345.10").as_bytes(),
            "application/xml",
        )
        .await
        .expect(201)
        .json();
        assert_eq!(inv1["supplier_id"], supplier_id);
        let credit = import(
            &app,
            As::Human(&app.a),
            ubl("CreditNote", "CN-4", "345.10").as_bytes(),
            "application/xml",
        )
        .await
        .expect(201)
        .json();
        assert_eq!(credit["supplier_id"], supplier_id);
        assert_eq!(credit["total"], -34510, "{credit}");
        assert_eq!(credit["tax_total"], -5510);
        assert_eq!(credit["corrected_expense_id"], inv1["id"]);

        // A seller the company already has (by VAT id, compared without spaces) is matched.
        let existing = app
        .entity(
            &app.a,
            json!({"name": "Fournisseur", "type": "FR:SARL", "vies_vat_id": "FR 40303265045",
                   "address": {"lines": ["1 rue de Rivoli"], "city": "Paris", "zipcode": "75001", "country": "FR"}}),
        )
        .await;
        let from_pdf = import(
            &app,
            As::Human(&app.a),
            &facturx_pdf(&cii("C-77", "380", "360.00")),
            "application/pdf",
        )
        .await
        .expect(201)
        .json();
        assert_eq!(from_pdf["supplier_id"], existing.as_str());
        assert_eq!(from_pdf["total"], 36000);
        let receipt = app
            .get(
                &format!("/v1/expenses/{}/receipt", from_pdf["id"].as_str().unwrap()),
                As::Human(&app.a),
            )
            .await
            .expect(200);
        assert_eq!(receipt.content_type(), "application/pdf");
        // The XML of the same invoice is the same invoice.
        let same = import(
            &app,
            As::Human(&app.a),
            cii("C-77", "380", "360.00").as_bytes(),
            "application/xml",
        )
        .await
        .expect(409)
        .text();
        assert!(same.contains(from_pdf["id"].as_str().unwrap()), "{same}");

        // The other company sees none of it, and importing there makes its own supplier.
        let theirs = app
            .get("/v1/expenses", As::Human(&app.b))
            .await
            .expect(200)
            .json();
        assert_eq!(theirs["data"].as_array().unwrap().len(), 0);
        let b = import(&app, As::Human(&app.b), file.as_bytes(), "application/xml")
            .await
            .expect(201)
            .json();
        assert_ne!(b["supplier_id"], supplier_id);
    }
);

db_test!(
    a_file_that_cannot_be_imported_is_refused_naming_the_rule_and_nothing_is_written,
    |app| {
        let entities = count(&app, "entities").await;
        let laughs = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2">&lol2;</Invoice>"#;
        let external = r#"<?xml version="1.0"?>
<!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<Invoice xmlns="urn:oasis:names:specification:ubl:schema:xsd:Invoice-2"><ID>&xxe;</ID></Invoice>"#;
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            (
                "wrong total",
                ubl("Invoice", "R-1", "345.11").into_bytes(),
                "BR-CO-15",
            ),
            (
                "no BT-1",
                ubl("Invoice", "", "345.10").into_bytes(),
                "BR-02",
            ),
            (
                "a PDF without XML",
                b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n%%EOF\n".to_vec(),
                "FX-EMBED",
            ),
            (
                "XML of another kind",
                b"<Order xmlns=\"urn:oasis:names:specification:ubl:schema:xsd:Order-2\"/>".to_vec(),
                "SYNTAX",
            ),
            ("not XML", b"hello".to_vec(), "XML"),
            ("billion laughs", laughs.as_bytes().to_vec(), "DTD"),
            ("external entity", external.as_bytes().to_vec(), "DTD"),
            (
                "a currency that is not one",
                ubl("Invoice", "R-2", "345.10")
                    .replace(">EUR<", ">EURO<")
                    .into_bytes(),
                "BR-CL-04",
            ),
        ];
        for (what, file, rule) in cases {
            let text = import(&app, As::Human(&app.a), &file, "application/xml")
                .await
                .expect(400)
                .text();
            assert!(text.contains(rule), "{what}: {text}");
            assert!(text.contains("Nothing was recorded"), "{what}: {text}");
        }
        let too_big = vec![b' '; 10 * 1024 * 1024 + 1];
        import(&app, As::Human(&app.a), &too_big, "application/xml")
            .await
            .expect(413);
        assert_eq!(count(&app, "expenses").await, 0);
        assert_eq!(count(&app, "files").await, 0);
        assert_eq!(
            count(&app, "entities").await,
            entities,
            "no supplier was created"
        );
    }
);

db_test!(
    an_ai_callers_import_waits_for_a_person_and_then_runs,
    |app| {
        let file = facturx_pdf(&cii("C-9", "380", "360.00"));
        let held = import(&app, As::Ai(&app.a), &file, "application/pdf")
            .await
            .expect(202)
            .json();
        assert_eq!(
            count(&app, "expenses").await,
            0,
            "the dry run wrote nothing"
        );
        let entry = held["auditEntryId"].as_str().unwrap();
        // A broken file is refused at once, not queued.
        import(
            &app,
            As::Ai(&app.a),
            ubl("Invoice", "R-1", "1.00").as_bytes(),
            "application/xml",
        )
        .await
        .expect(400);
        let approved = app
            .call(
                "POST",
                &format!("/v1/ai-audit/{entry}/approve"),
                As::Human(&app.a),
                None,
            )
            .await
            .expect(200)
            .json();
        assert_eq!(approved["status"], "approved", "{approved}");
        let id = approved["resourceId"].as_str().expect("the expense id");
        let expense = app
            .get(&format!("/v1/expenses/{id}"), As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(expense["source"], "einvoice");
        assert_eq!(expense["invoice_reference"], "C-9");
        let receipt = app
            .get(&format!("/v1/expenses/{id}/receipt"), As::Human(&app.a))
            .await
            .expect(200);
        assert_eq!(
            receipt.body, file,
            "the file was kept once and imported as sent"
        );
    }
);

/// The official examples of the validation kit, where it is checked out beside the repository.
fn kit(name: &str) -> Option<Vec<u8>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/einvoice/examples")
        .join(name);
    let bytes = std::fs::read(&path).ok();
    if bytes.is_none() {
        eprintln!("skipped: {} is not here", path.display());
    }
    bytes
}

db_test!(the_official_examples_import, |app| {
    // The CEN example in UBL, then the same invoice in CII and inside a Factur-X PDF: one
    // expense, the others refused as the same supplier's same invoice.
    for (name, status, who) in [
        ("ubl-tc434-example1.xml", 201, &app.a),
        ("CII_example1.xml", 409, &app.a),
        ("CII_example1.xml", 201, &app.b),
        ("facturx-en16931.pdf", 409, &app.b),
        ("ubl-tc434-creditnote1.xml", 201, &app.a),
        ("BIS3_Invoice_negativ.XML", 201, &app.a),
        ("ubl-inv-br-de-1-test.xml", 201, &app.a),
        ("cii-br-de-10-test.xml", 201, &app.a),
    ] {
        let Some(file) = kit(name) else { continue };
        let resp = import(&app, As::Human(who), &file, "application/xml").await;
        assert_eq!(resp.status.as_u16(), status, "{name}: {}", resp.text());
    }
});
