//! VERI*FACTU wiring: authorization, records chained at issue, XML valid against the AEAT XSD.

use pdfsig::testing::{CertSpec, SignOptions, TestCa};
use serde_json::{Value, json};

use crate::support::*;

pub const CIF: &str = "B12345674";

/// The CA every test app trusts for signed authorization documents (with the shipped
/// Spanish roots), one per test process.
pub fn test_ca() -> &'static TestCa {
    static CA: std::sync::LazyLock<TestCa> =
        std::sync::LazyLock::new(|| TestCa::root("Invoicing Test Root"));
    &CA
}

/// The trust store of the test apps: the shipped Spanish roots and [`test_ca`].
pub fn test_trust() -> api::signature_trust::TrustStore {
    api::signature_trust::trust_store(true, Some(("test CA", test_ca().pem().as_bytes()))).unwrap()
}

/// What an authorization document says.
pub fn authorization_text(id: &str) -> String {
    format!("Autorizo a Invoicing a remitir los registros VERI*FACTU de NIF {id}")
}

/// An authorization document really signed (PAdES) by a representative of the entity `id`,
/// with a certificate of the trusted test CA.
pub fn signed_pdf(id: &str) -> Vec<u8> {
    test_ca()
        .issue(CertSpec::representative("12345678Z", id))
        .sign_pdf(&authorization_text(id), &SignOptions::default())
}

/// What the upload used to accept: a PDF with the words of a signature and the fiscal id
/// inside a Flate stream, and no signature at all.
pub fn fake_signed_pdf(id: &str) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(format!("BT (Autorizo VERI*FACTU para NIF {id}) Tj ET").as_bytes())
        .unwrap();
    let stream = z.finish().unwrap();
    let mut pdf = b"%PDF-1.7\n1 0 obj << /Type /Sig /Filter /Adobe.PPKLite /ByteRange [0 10 20 30] /Contents <00> >> endobj\n2 0 obj << /Filter /FlateDecode >>\nstream\n".to_vec();
    pdf.extend_from_slice(&stream);
    pdf.extend_from_slice(b"\nendstream\nendobj\n%%EOF\n");
    pdf
}

pub async fn spanish(app: &TestApp) {
    app.settle(&app.a).await;
    app.call(
        "PATCH",
        "/v1/company",
        As::Human(&app.a),
        Some(json!({"type": "ES:SL", "fiscalId": CIF})),
    )
    .await
    .expect(200);
}

pub async fn authorize(app: &TestApp) {
    let auth = app
        .call_raw(
            "POST",
            "/v1/verifactu/authorization/document",
            As::Human(&app.a),
            Some(signed_pdf(CIF)),
            "application/pdf",
        )
        .await
        .expect(200)
        .json();
    assert_eq!(auth["in_effect"], true);
}

db_test!(authorization_lifts_the_issue_block, |app| {
    spanish(&app).await;
    let a = app
        .get("/v1/verifactu/authorization", As::Ai(&app.a))
        .await
        .expect(200)
        .json();
    assert_eq!(
        (
            a["required"].clone(),
            a["in_effect"].clone(),
            a["status"].clone()
        ),
        (json!(true), json!(false), json!("none"))
    );
    let before = app.fingerprint().await;
    for (bytes, why) in [
        (b"not a pdf".to_vec(), "PDF"),
        (b"%PDF-1.7\n(B12345674)\n%%EOF".to_vec(), "signature"),
        (fake_signed_pdf(CIF), "byte ranges"),
        (signed_pdf("A00000000"), CIF),
    ] {
        let r = app
            .call_raw(
                "POST",
                "/v1/verifactu/authorization/document",
                As::Human(&app.a),
                Some(bytes),
                "application/pdf",
            )
            .await
            .expect(400);
        assert!(r.text().contains(why), "{}", r.text());
    }
    let r = app
        .call_raw(
            "POST",
            "/v1/verifactu/authorization/document",
            As::Ai(&app.a),
            Some(signed_pdf(CIF)),
            "application/pdf",
        )
        .await
        .expect(403);
    assert_eq!(r.json()["error"], "human_required");
    assert_eq!(app.fingerprint().await, before);
    // A declared power of attorney waits for confirmation: still blocked.
    let poa = app
        .call(
            "POST",
            "/v1/verifactu/authorization/power-of-attorney",
            As::Human(&app.a),
            None,
        )
        .await
        .expect(200)
        .json();
    assert_eq!(
        (poa["status"].clone(), poa["in_effect"].clone()),
        (json!("pending_confirmation"), json!(false))
    );
    let c = app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
    let d = app
        .draft(&app.a, json!({"recipient_id": c, "lines": one_line(10000)}))
        .await;
    let r = app
        .call(
            "POST",
            &format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(403);
    assert_eq!(r.json()["error"], "verifactu_authorization_required");
    authorize(&app).await;
    app.issue(&app.a, d["id"].as_str().unwrap()).await;
    // B (Irish) needs nothing.
    let b = app
        .get("/v1/verifactu/authorization", As::Ai(&app.b))
        .await
        .json();
    assert_eq!(b["required"], false);
});

pub async fn records(app: &TestApp, invoice: &Value) -> Vec<Value> {
    let r = app
        .get(
            &format!("/v1/invoices/{}/verifactu", invoice["id"].as_str().unwrap()),
            As::Ai(&app.a),
        )
        .await
        .expect(200)
        .json();
    r["data"].as_array().unwrap().clone()
}

/// Validates XML against the AEAT's SuministroLR.xsd (bundled with the verifactu crate) with xmllint.
pub fn assert_valid_xml(xml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/../verifactu/xsd");
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap().replace(
            "http://www.w3.org/TR/xmldsig-core/xmldsig-core-schema.xsd",
            "xmldsig-core-schema.xsd",
        );
        std::fs::write(dir.path().join(path.file_name().unwrap()), text).unwrap();
    }
    let file = dir.path().join("record.xml");
    std::fs::write(&file, xml).unwrap();
    let out = std::process::Command::new("xmllint")
        .args(["--noout", "--nonet", "--schema"])
        .arg(dir.path().join("SuministroLR.xsd"))
        .arg(&file)
        .output()
        .expect("xmllint is required (scripts/test installs libxml2-utils)");
    assert!(
        out.status.success(),
        "XSD validation failed: {}\n{xml}",
        String::from_utf8_lossy(&out.stderr)
    );
}

db_test!(issued_invoices_are_chained_records, |app| {
    spanish(&app).await;
    authorize(&app).await;
    let es = app.entity(&app.a, json!({"name": "Cliente SA", "type": "ES:SA", "fiscal_id": "A84532506", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}})).await;
    let de = app.entity(&app.a, json!({"name": "Kunde GmbH", "type": "DE:GmbH", "vies_vat_id": "DE136695976", "address": {"lines": ["Hauptstraße 5"], "city": "Berlin", "zipcode": "10115", "country": "DE"}})).await;
    let mut issued = Vec::new();
    for (to, supply) in [(&es, "services"), (&de, "services"), (&de, "goods")] {
        let d = app
            .draft(
                &app.a,
                json!({"recipient_id": to, "supply_type": supply, "lines": one_line(10000)}),
            )
            .await;
        issued.push(app.issue(&app.a, d["id"].as_str().unwrap()).await);
    }
    let corrective = app
        .call(
            "POST",
            &format!("/v1/invoices/{}/correct", issued[0]["id"].as_str().unwrap()),
            As::Human(&app.a),
            Some(json!({})),
        )
        .await
        .expect(201)
        .json();
    issued.push(corrective);
    let mut previous: Option<String> = None;
    for (i, inv) in issued.iter().enumerate() {
        let rs = records(&app, inv).await;
        assert_eq!(rs.len(), 1, "one record per issued invoice");
        let r = &rs[0];
        assert_eq!(r["seq"], i as i64 + 1);
        assert_eq!(r["kind"], "alta");
        assert_eq!(
            r["status"], "not_sent",
            "mode disabled: built and chained, not sent"
        );
        let huella = r["huella"].as_str().unwrap();
        let input = r["hash_input"].as_str().unwrap();
        assert_eq!(
            huella,
            store::hash_secret(input).to_uppercase(),
            "huella = SHA-256 of the hash input"
        );
        assert!(
            input.starts_with(&format!(
                "IDEmisorFactura={CIF}&NumSerieFactura={}&",
                inv["reference"].as_str().unwrap()
            )),
            "{input}"
        );
        assert!(
            input.contains("&TipoHuella=01") || input.contains("&Huella="),
            "{input}"
        );
        assert_eq!(
            r["previous_huella"].as_str().map(str::to_owned),
            previous,
            "linked to the previous record"
        );
        match &previous {
            Some(p) => assert!(input.contains(&format!("&Huella={p}&")), "{input}"),
            None => assert!(input.contains("&Huella=&"), "{input}"),
        }
        let qr = r["qr_url"].as_str().unwrap();
        assert!(
            qr.contains(&format!("nif={CIF}")) && qr.contains("numserie="),
            "{qr}"
        );
        assert!(
            r["generated_at"].as_str().unwrap().ends_with("+01:00")
                || r["generated_at"].as_str().unwrap().ends_with("+02:00")
        );
        assert_valid_xml(r["xml"].as_str().unwrap());
        previous = Some(huella.to_owned());
    }
    let last = &records(&app, &issued[3]).await[0];
    assert_eq!(last["tipo_factura"], "R1");
    let xml = last["xml"].as_str().unwrap();
    assert!(
        xml.contains("TipoRectificativa>I<") && xml.contains("FacturasRectificadas"),
        "{xml}"
    );
    let reverse_charge = records(&app, &issued[1]).await[0]["xml"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reverse_charge.contains("N2"),
        "intra-EU services are not subject in Spain: {reverse_charge}"
    );
    assert!(
        records(&app, &issued[2]).await[0]["xml"]
            .as_str()
            .unwrap()
            .contains("E5")
    );
    // Another company sees nothing.
    app.get(
        &format!(
            "/v1/invoices/{}/verifactu",
            issued[0]["id"].as_str().unwrap()
        ),
        As::Ai(&app.b),
    )
    .await
    .expect(404);
});

db_test!(a_record_that_cannot_be_built_keeps_the_draft, |app| {
    spanish(&app).await;
    authorize(&app).await;
    let no_nif = app
        .entity(
            &app.a,
            json!({"name": "Consumidor", "type": "ES:Particular", "address": {"lines": ["Calle Mayor 1"], "city": "Madrid", "zipcode": "28013", "country": "ES"}}),
        )
        .await;
    let d = app
        .draft(
            &app.a,
            json!({"recipient_id": no_nif, "lines": one_line(10000)}),
        )
        .await;
    let before = app.fingerprint().await;
    let r = app
        .call(
            "POST",
            &format!("/v1/invoices/{}/issue", d["id"].as_str().unwrap()),
            As::Human(&app.a),
            None,
        )
        .await
        .expect(400);
    assert!(
        r.text().contains("VERI*FACTU") && r.text().contains("NIF"),
        "{}",
        r.text()
    );
    assert_eq!(
        app.fingerprint().await,
        before,
        "no number taken, nothing chained"
    );
    // Non-Spanish issuers get no records.
    app.settle(&app.b).await;
    let c = app.entity(&app.b, irish_customer()).await;
    let d = app
        .draft(&app.b, json!({"recipient_id": c, "lines": one_line(100)}))
        .await;
    let inv = app.issue(&app.b, d["id"].as_str().unwrap()).await;
    let r = app
        .get(
            &format!("/v1/invoices/{}/verifactu", inv["id"].as_str().unwrap()),
            As::Ai(&app.b),
        )
        .await
        .expect(200)
        .json();
    assert_eq!(r["data"], json!([]));
});
