//! Facturae signed with XAdES-EPES ("Política de firma de Facturae v3.1") by the service's
//! certificate when it names the company's fiscal id, unsigned otherwise; checked
//! independently with `xmlsec1`, and against the Facturae XSD by the kit.

use std::process::Command;
use std::sync::Arc;

use base64::Engine as _;
use pdfsig::testing::{CertSpec, KeyKind, TestCa};
use serde_json::json;

use crate::einvoice::{einvoice, issued, ready_company, validate};
use crate::support::*;

/// The DER inside a PEM text.
fn pem_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

/// A 2048-bit RSA key (PKCS #8 PEM) made by OpenSSL, as FNMT certificates are RSA.
fn rsa_key() -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(dir.path().join("key.pem"))
        .output()
        .expect("openssl is required (scripts/test installs it)");
    assert!(out.status.success(), "{out:?}");
    std::fs::read_to_string(dir.path().join("key.pem")).unwrap()
}

/// A certificate from `ca` for a representative of the entity `fiscal_id`, and its signer.
fn signer(ca: &TestCa, fiscal_id: &str, key: KeyKind) -> Arc<einvoice::xades::Signer> {
    let mut spec = CertSpec::representative("12345678Z", fiscal_id);
    spec.key = key;
    let cert = ca.issue(spec);
    let signer =
        einvoice::xades::Signer::new(&pem_der(&cert.key_pem()), cert.cert_der()).expect("a signer");
    Arc::new(signer)
}

/// Whether `xmlsec1` verifies the signature of `xml` with the certificates of `ca` trusted.
fn xmlsec_verifies(ca: &TestCa, xml: &[u8]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.path().join("signed.xml"), xml).unwrap();
    let out = Command::new("xmlsec1")
        .arg("--verify")
        .arg("--trusted-pem")
        .arg(dir.path().join("ca.pem"))
        .args([
            "--id-attr:Id",
            "http://uri.etsi.org/01903/v1.3.2#:SignedProperties",
            "--id-attr:Id",
            "http://www.w3.org/2000/09/xmldsig#:KeyInfo",
        ])
        .arg(dir.path().join("signed.xml"))
        .output()
        .expect("xmlsec1 is required (scripts/test installs it)");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), report)
}

db_test!(facturae_is_signed_with_the_companys_certificate, |app| {
    let mut app = app;
    let account = ready_company(&app).await;
    let customer = app.entity(&app.a, irish_customer()).await;
    let id = issued(
        &app,
        json!({"recipient_id": customer, "bank_account_ids": [account],
            "lines": [{"concept": "Consultoría & <análisis>", "quantity": "2.5", "unit_price": 12000}]}),
    )
    .await;
    // Without a certificate: unsigned, and said so.
    let plain = einvoice(&app, &id, Some("facturae")).await.expect(200);
    assert_eq!(plain.headers["x-invoicing-signature"], "none");
    assert_eq!(plain.headers["x-facturae-signed"], "false");
    assert!(!plain.text().contains("ds:Signature"), "{}", plain.text());

    let ca = TestCa::root("Facturae Test Root");
    // A certificate of another company: not this company's signature, so unsigned.
    app.router = app.with_facturae_signer(signer(&ca, "B12345674", KeyKind::P256));
    let r = einvoice(&app, &id, Some("facturae")).await.expect(200);
    assert_eq!(r.headers["x-invoicing-signature"], "none");
    assert!(
        r.body == plain.body,
        "another company's certificate signed it"
    );

    let mut files = Vec::new();
    for (name, key) in [("rsa", KeyKind::Rsa(rsa_key())), ("p256", KeyKind::P256)] {
        // The company's own certificate (its fiscal id is IE6388047V).
        app.router = app.with_facturae_signer(signer(&ca, "IE6388047V", key));
        let r = einvoice(&app, &id, Some("facturae")).await.expect(200);
        assert_eq!(r.headers["x-invoicing-signature"], "xades-epes", "{name}");
        assert_eq!(r.headers["x-facturae-signed"], "true", "{name}");
        let xml = r.text();
        // XAdES-EPES under the Facturae policy, enveloped, as the last child.
        for expected in [
            "<xades:SigPolicyId><xades:Identifier>http://www.facturae.es/politica_de_firmas_formato_facturae/politica_de_firma_formato_facturae_v3_1.pdf</xades:Identifier>",
            "<ds:DigestValue>Ohixl6upD6av8N7pEvDABhEL6hM=</ds:DigestValue>",
            "Algorithm=\"http://www.w3.org/2000/09/xmldsig#enveloped-signature\"",
            "<xades:ClaimedRole>emisor</xades:ClaimedRole>",
            "</ds:Signature></fe:Facturae>",
        ] {
            assert!(xml.contains(expected), "{name}: {expected}:\n{xml}");
        }
        // The document itself is unchanged around the signature.
        let start = xml.find("<ds:Signature ").unwrap();
        let end = xml.find("</ds:Signature>").unwrap() + "</ds:Signature>".len();
        assert_eq!(
            format!("{}{}", &xml[..start], &xml[end..]),
            plain.text(),
            "{name}"
        );
        // An independent verifier accepts it, chained to the CA.
        let (ok, report) = xmlsec_verifies(&ca, &r.body);
        assert!(ok, "{name}: xmlsec1 does not verify it:\n{report}\n{xml}");
        // A tampered document fails: an amount, or the signing time.
        for (from, to) in [
            (">300.00<", ">3000.00<"),
            ("<xades:SigningTime>20", "<xades:SigningTime>19"),
        ] {
            assert!(xml.contains(from), "{name}: {from}:\n{xml}");
            let tampered = xml.replacen(from, to, 1);
            let (ok, report) = xmlsec_verifies(&ca, tampered.as_bytes());
            assert!(
                !ok,
                "{name}: a tampered document verifies ({from}):\n{report}"
            );
        }
        // Another CA's trust: refused.
        let (ok, _) = xmlsec_verifies(&TestCa::root("Other Root"), &r.body);
        assert!(!ok, "{name}: verified without its CA");
        files.push((format!("signed-{name}.xml"), r.body));
    }
    // The signed documents still validate against the Facturae 3.2.2 schema (and xmldsig).
    validate("facturae", &files);
});
