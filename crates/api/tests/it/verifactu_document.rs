//! The signed authorization document: only a real signature, over the whole file, by a
//! trusted certificate that names the company, puts the authorization in effect.

use pdfsig::testing::{CertSpec, SignOptions, TestCa};
use serde_json::json;

use crate::support::*;
use crate::verifactu::{CIF, authorization_text, fake_signed_pdf, spanish, test_ca};

async fn upload(app: &TestApp, pdf: Vec<u8>) -> Resp {
    app.call_raw(
        "POST",
        "/v1/verifactu/authorization/document",
        As::Human(&app.a),
        Some(pdf),
        "application/pdf",
    )
    .await
}

db_test!(
    only_a_real_trusted_signature_by_the_company_is_accepted,
    |app| {
        spanish(&app).await;
        let text = authorization_text(CIF);
        let options = SignOptions::default();
        let representative = test_ca().issue(CertSpec::representative("12345678Z", CIF));
        let good = representative.sign_pdf(&text, &options);

        let mut tampered = good.clone();
        let at = tampered
            .windows(CIF.len())
            .position(|w| w == CIF.as_bytes())
            .unwrap();
        tampered[at + 1] = b'9';
        let mut appended = good.clone();
        appended.extend_from_slice(b"9 0 obj\n(Autorizo a otro)\nendobj\n%%EOF\n");
        let untrusted = TestCa::root("Unknown Root")
            .issue(CertSpec::representative("12345678Z", CIF))
            .sign_pdf(&text, &options);
        let expired = test_ca()
            .issue(CertSpec::representative("12345678Z", CIF).valid((2010, 1, 1), (2015, 1, 1)))
            .sign_pdf(&text, &options);
        let other_company = test_ca()
            .issue(CertSpec::representative("12345678Z", "A84532506"))
            .sign_pdf(&text, &options);
        let forged = test_ca()
            .issue(CertSpec::representative("00000000T", CIF))
            .impersonating(&representative)
            .sign_pdf(&text, &options);

        let before = app.fingerprint().await;
        for (name, pdf, says) in [
            ("old fake", fake_signed_pdf(CIF), "byte ranges do not cover"),
            (
                "no signature",
                b"%PDF-1.7\n(B12345674)\n%%EOF".to_vec(),
                "no digital signature",
            ),
            ("tampered byte", tampered, "changed after it was signed"),
            ("appended bytes", appended, "were added after signing"),
            ("forged signature", forged, "signature is not valid"),
            ("untrusted CA", untrusted, "is not trusted"),
            ("expired", expired, "had expired"),
            (
                "another NIF",
                other_company,
                "VATES-A84532506, not the company's fiscal id B12345674",
            ),
        ] {
            let r = upload(&app, pdf).await;
            assert_eq!(r.status, 400, "{name}: {}", r.text());
            assert!(r.text().contains(says), "{name}: {}", r.text());
            assert_eq!(app.fingerprint().await, before, "{name}: nothing stored");
        }
        let a = app
            .get("/v1/verifactu/authorization", As::Human(&app.a))
            .await
            .expect(200)
            .json();
        assert_eq!(
            (a["in_effect"].clone(), a["status"].clone()),
            (json!(false), json!("none"))
        );

        // The real thing.
        let a = upload(&app, good).await.expect(200).json();
        assert_eq!(
            (
                a["in_effect"].clone(),
                a["status"].clone(),
                a["method"].clone()
            ),
            (json!(true), json!("in_effect"), json!("document"))
        );
        let note = a["note"].as_str().unwrap();
        assert!(
            note.contains("VATES-B12345674") && note.contains("Invoicing Test Root"),
            "{note}"
        );
        let c = app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
        let d = app
            .draft(&app.a, json!({"recipient_id": c, "lines": one_line(10000)}))
            .await;
        app.issue(&app.a, d["id"].as_str().unwrap()).await;
    }
);

db_test!(
    a_self_employed_signs_with_their_citizen_certificate,
    |app| {
        app.settle(&app.a).await;
        app.call(
            "PATCH",
            "/v1/company",
            As::Human(&app.a),
            Some(json!({"type": "ES:Autonomo", "fiscalId": "12345678Z"})),
        )
        .await
        .expect(200);
        let person = test_ca().issue(CertSpec::person("12345678Z"));
        let pdf = person.sign_pdf(&authorization_text("12345678Z"), &SignOptions::default());
        let a = upload(&app, pdf).await.expect(200).json();
        assert_eq!(a["in_effect"], true);
    }
);
