//! The XAdES-EPES signature of Facturae, verified independently by `xmlsec1` with the
//! signer's certificate trusted; a tampered document fails; the signed document still
//! validates against the Facturae 3.2.2 schema (the kit).

mod common;

use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use einvoice::xades::{Signer, sign_facturae};
use einvoice::{Format, xml};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl is required (scripts/test installs it)");
    assert!(out.status.success(), "openssl {args:?}: {out:?}");
}

fn der_of(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

/// A self-signed certificate naming `org_id`, with an `algorithm` key, and its signer.
fn signer(dir: &Path, algorithm: &[&str], org_id: &str) -> Signer {
    let mut args = vec!["req", "-x509", "-newkey"];
    args.extend_from_slice(algorithm);
    let subject = format!("/C=ES/O=Test/organizationIdentifier={org_id}/CN=Test signer");
    args.extend_from_slice(&[
        "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "3650", "-subj", &subject,
    ]);
    openssl(dir, &args);
    let key = std::fs::read_to_string(dir.join("key.pem")).unwrap();
    let cert = std::fs::read_to_string(dir.join("cert.pem")).unwrap();
    Signer::new(&der_of(&key), &der_of(&cert)).expect("a signer")
}

fn verifies(dir: &Path, xml: &str) -> (bool, String) {
    std::fs::write(dir.join("signed.xml"), xml).unwrap();
    let out = Command::new("xmlsec1")
        .current_dir(dir)
        .args([
            "--verify",
            "--trusted-pem",
            "cert.pem",
            "--id-attr:Id",
            "http://uri.etsi.org/01903/v1.3.2#:SignedProperties",
            "--id-attr:Id",
            "http://www.w3.org/2000/09/xmldsig#:KeyInfo",
            "signed.xml",
        ])
        .output()
        .expect("xmlsec1 is required (scripts/test installs it)");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_signed_facturae_verifies_and_a_tampered_one_does_not() {
    let (_, doc) = common::cases().into_iter().next().unwrap();
    let unsigned = xml(&doc, Format::Facturae).unwrap();
    let dir = common::scratch("xades");
    let mut files = Vec::new();
    for (name, algorithm) in [
        ("rsa", &["rsa:2048"][..]),
        ("p256", &["ec", "-pkeyopt", "ec_paramgen_curve:P-256"][..]),
    ] {
        let sub = dir.join(name);
        std::fs::create_dir_all(&sub).unwrap();
        let signer = signer(&sub, algorithm, "VATES-B12345674");
        assert!(signer.names("ESB12345674") && signer.names("B-12345674"));
        assert!(!signer.names("B87654321"));
        let time = chrono::DateTime::parse_from_rfc3339("2026-03-10T10:00:00Z")
            .unwrap()
            .to_utc();
        let signed = sign_facturae(&unsigned, &signer, time).unwrap();
        assert!(signed.contains("<xades:SigningTime>2026-03-10T10:00:00Z</xades:SigningTime>"));
        assert!(signed.contains("<ds:DigestValue>Ohixl6upD6av8N7pEvDABhEL6hM=</ds:DigestValue>"));
        assert!(
            signed.ends_with("</ds:Signature></fe:Facturae>")
                || signed.contains("</ds:Signature></fe:Facturae>")
        );
        let (ok, report) = verifies(&sub, &signed);
        assert!(ok, "{name}: xmlsec1 refuses it:\n{report}\n{signed}");
        for (from, to) in [
            ("<InvoicesCount>1<", "<InvoicesCount>2<"),
            ("<xades:ClaimedRole>emisor<", "<xades:ClaimedRole>tercero<"),
        ] {
            assert!(signed.contains(from), "{from}");
            let (ok, _) = verifies(&sub, &signed.replacen(from, to, 1));
            assert!(!ok, "{name}: tampered ({from}) and still verified");
        }
        let path = dir.join(format!("signed-{name}.xml"));
        std::fs::write(&path, &signed).unwrap();
        files.push(path);
    }
    if let Some((ok, report)) = common::validate("facturae", &files) {
        assert!(ok, "the signed Facturae is not valid:\n{report}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
