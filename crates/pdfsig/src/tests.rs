//! End-to-end checks of [`crate::verify`] on really signed PDFs.

use chrono::{Datelike, Duration, TimeZone, Utc};
use rcgen::{ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose};

use crate::{
    DigestAlgorithm, Refusal, TrustStore,
    testing::{CertSpec, KeyKind, SignOptions, Template, TestCa},
    verify,
};

const TEXT: &str = "Autorizo a Invoicing a remitir mis registros VERI*FACTU. NIF B12345674";

fn now() -> chrono::DateTime<Utc> {
    Utc::now()
}

#[test]
fn a_citizen_signature_verifies_and_names_its_nif() {
    let ca = TestCa::root("Test Root");
    let signer = ca.issue(CertSpec::person("12345678Z"));
    let time = Utc.with_ymd_and_hms(2025, 3, 1, 10, 0, 0).unwrap();
    let pdf = signer.sign_pdf(
        TEXT,
        &SignOptions {
            signing_time: Some(time),
            ..SignOptions::default()
        },
    );
    let v = verify(&pdf, &ca.trust(), now()).unwrap();
    assert_eq!(v.identifiers, ["IDCES-12345678Z"]);
    assert_eq!(
        (v.signing_time, v.checked_at, v.digest),
        (Some(time), time, DigestAlgorithm::Sha256)
    );
    assert!(v.signer.contains("12345678Z"), "{}", v.signer);
    assert!(v.require_nif("12345678z").is_ok());
    let other = v.require_nif("B12345674").unwrap_err();
    assert!(
        matches!(&other, Refusal::OtherNif { found, .. } if found == "IDCES-12345678Z"),
        "{other:?}"
    );
    assert!(other.to_string().contains("B12345674"));
}

#[test]
fn a_representative_signs_for_the_entity_through_an_intermediate_ca() {
    let root = TestCa::root("Test Root");
    let sub = root.intermediate("Test Representatives CA", (2090, 1, 1));
    let mut spec = CertSpec::representative("12345678Z", "B12345674");
    spec.key = KeyKind::P384;
    let signer = sub.issue(spec);
    for digest in [
        DigestAlgorithm::Sha256,
        DigestAlgorithm::Sha384,
        DigestAlgorithm::Sha512,
    ] {
        let pdf = signer.sign_pdf(
            TEXT,
            &SignOptions {
                digest,
                signing_time: None,
                ..SignOptions::default()
            },
        );
        let at = now();
        let v = verify(&pdf, &root.trust(), at).unwrap();
        assert_eq!(
            (v.digest, v.checked_at),
            (digest, at),
            "no signingTime: checked now"
        );
        assert!(v.require_nif("B12345674").is_ok() && v.require_nif("12345678Z").is_ok());
    }
    // Without the intermediate in the signature, there is no chain.
    let bare = signer.sign_pdf(
        TEXT,
        &SignOptions {
            carry_chain: false,
            ..SignOptions::default()
        },
    );
    assert!(matches!(
        verify(&bare, &root.trust(), now()),
        Err(Refusal::Untrusted { .. })
    ));
}

fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command is required by this test");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn rsa_key(dir: &std::path::Path) -> String {
    openssl(
        dir,
        &[
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
            "key.pem",
        ],
    );
    std::fs::read_to_string(dir.join("key.pem")).unwrap()
}

/// Signatures made by OpenSSL (`openssl cms -sign`, detached, its own signed attributes):
/// RSA PKCS #1 v1.5 and RSA-PSS, so the verifier is checked against another implementation.
#[test]
fn openssl_rsa_and_rsa_pss_signatures_verify() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::root("Test Root");
    let mut spec = CertSpec::person("12345678Z");
    spec.key = KeyKind::Rsa(rsa_key(dir.path()));
    let signer = ca.issue(spec);
    std::fs::write(dir.path().join("cert.pem"), signer.cert_pem()).unwrap();
    // Our own builder with the RSA key too.
    let own = signer.sign_pdf(TEXT, &SignOptions::default());
    assert!(verify(&own, &ca.trust(), now()).is_ok());
    for (name, extra) in [
        ("pkcs1", vec!["-md", "sha384"]),
        (
            "pss",
            vec![
                "-md",
                "sha256",
                "-keyopt",
                "rsa_padding_mode:pss",
                "-keyopt",
                "rsa_pss_saltlen:32",
            ],
        ),
    ] {
        let template = Template::new(TEXT);
        std::fs::write(dir.path().join("content.bin"), template.signed_bytes()).unwrap();
        let out = format!("{name}.der");
        let mut args = vec![
            "cms",
            "-sign",
            "-binary",
            "-in",
            "content.bin",
            "-signer",
            "cert.pem",
            "-inkey",
            "key.pem",
            "-outform",
            "DER",
            "-out",
            &out,
        ];
        args.extend(extra);
        openssl(dir.path(), &args);
        let pdf = template.fill(&std::fs::read(dir.path().join(&out)).unwrap());
        let v = verify(&pdf, &ca.trust(), now()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(v.signing_time.is_some(), "openssl adds signingTime");
        // And a changed byte is caught.
        let mut tampered = pdf.clone();
        let at = tampered.windows(4).position(|w| w == b"NIF ").unwrap();
        tampered[at] = b'X';
        assert_eq!(
            verify(&tampered, &ca.trust(), now()).unwrap_err(),
            Refusal::DigestMismatch
        );
    }
}

#[test]
fn changes_after_signing_are_refused() {
    let ca = TestCa::root("Test Root");
    let signer = ca.issue(CertSpec::person("12345678Z"));
    let pdf = signer.sign_pdf(TEXT, &SignOptions::default());
    let trust = ca.trust();
    assert!(verify(&pdf, &trust, now()).is_ok());

    let mut tampered = pdf.clone();
    let at = tampered.windows(9).position(|w| w == b"B12345674").unwrap();
    tampered[at] = b'A';
    assert_eq!(
        verify(&tampered, &trust, now()).unwrap_err(),
        Refusal::DigestMismatch
    );

    // An incremental update appended after signing.
    let mut appended = pdf.clone();
    appended.extend_from_slice(b"8 0 obj\n(B99999999)\nendobj\n%%EOF\n");
    assert!(matches!(
        verify(&appended, &trust, now()).unwrap_err(),
        Refusal::RangesDoNotCoverFile(r) if r.contains("were added after signing")
    ));

    // The signature is somebody else's key over the same certificate.
    let thief = ca
        .issue(CertSpec::person("00000000T"))
        .impersonating(&signer);
    let forged = thief.sign_pdf(TEXT, &SignOptions::default());
    assert_eq!(
        verify(&forged, &trust, now()).unwrap_err(),
        Refusal::BadSignature
    );

    // The old check's fake: the right words, no CMS.
    let fake = b"%PDF-1.7\n1 0 obj << /Type /Sig /ByteRange [0 10 20 30] /Contents <00> >> endobj\n(B12345674)\n%%EOF\n";
    assert!(matches!(
        verify(fake, &trust, now()).unwrap_err(),
        Refusal::RangesDoNotCoverFile(_)
    ));
}

#[test]
fn trust_and_validity_are_checked_at_the_signing_time() {
    let ca = TestCa::root("Test Root");
    let stranger = TestCa::root("Someone Else's Root");
    let trust = ca.trust();
    let untrusted = stranger
        .issue(CertSpec::person("12345678Z"))
        .sign_pdf(TEXT, &SignOptions::default());
    let err = verify(&untrusted, &trust, now()).unwrap_err();
    assert!(
        matches!(&err, Refusal::Untrusted { issuer, .. } if issuer.contains("Someone Else's Root")),
        "{err:?}"
    );
    assert!(matches!(
        verify(&untrusted, &TrustStore::new(), now()).unwrap_err(),
        Refusal::Untrusted { .. }
    ));

    let old = ca.issue(CertSpec::person("12345678Z").valid((2010, 1, 1), (2015, 1, 1)));
    let late = old.sign_pdf(TEXT, &SignOptions::default());
    let err = verify(&late, &trust, now()).unwrap_err();
    assert!(
        matches!(&err, Refusal::Expired { whose, .. } if whose.contains("signer's")),
        "{err:?}"
    );
    assert!(err.to_string().contains("valid until 2015-01-01"), "{err}");
    // Signed while it was valid: accepted (the signing time is the signer's claim).
    let then = Utc.with_ymd_and_hms(2012, 6, 1, 0, 0, 0).unwrap();
    let timely = old.sign_pdf(
        TEXT,
        &SignOptions {
            signing_time: Some(then),
            ..SignOptions::default()
        },
    );
    assert_eq!(verify(&timely, &trust, now()).unwrap().checked_at, then);

    // A signing time in the future is not believed: the certificate is checked now.
    let next_year = now().year() + 1;
    let future =
        ca.issue(CertSpec::person("12345678Z").valid((next_year, 1, 1), (next_year + 5, 1, 1)));
    let claims_future = future.sign_pdf(
        TEXT,
        &SignOptions {
            signing_time: Some(now() + Duration::days(800)),
            ..SignOptions::default()
        },
    );
    assert!(matches!(
        verify(&claims_future, &trust, now()).unwrap_err(),
        Refusal::NotYetValid { .. }
    ));

    // An intermediate CA that had expired.
    let lapsed = ca.intermediate("Lapsed CA", (2016, 1, 1));
    let pdf = lapsed
        .issue(CertSpec::person("12345678Z"))
        .sign_pdf(TEXT, &SignOptions::default());
    let err = verify(&pdf, &trust, now()).unwrap_err();
    assert!(
        matches!(&err, Refusal::Expired { whose, .. } if whose.contains("CA certificate")),
        "{err:?}"
    );
}

#[test]
fn certificates_not_meant_for_signing_are_refused() {
    let ca = TestCa::root("Test Root");
    let trust = ca.trust();
    let mut tls = CertSpec::person("12345678Z");
    tls.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let mut encipher = CertSpec::person("12345678Z");
    encipher.key_usages = vec![KeyUsagePurpose::KeyEncipherment];
    let mut ca_cert = CertSpec::person("12345678Z");
    ca_cert.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_cert.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    for spec in [tls, encipher, ca_cert] {
        let pdf = ca.issue(spec).sign_pdf(TEXT, &SignOptions::default());
        let err = verify(&pdf, &trust, now()).unwrap_err();
        assert!(matches!(err, Refusal::NotForSigning { .. }), "{err:?}");
    }
}

#[test]
fn a_signature_must_carry_its_signer_and_be_one() {
    let ca = TestCa::root("Test Root");
    let signer = ca.issue(CertSpec::person("12345678Z"));
    let pdf = signer.sign_pdf(
        TEXT,
        &SignOptions {
            carry_signer: false,
            ..SignOptions::default()
        },
    );
    assert!(matches!(
        verify(&pdf, &ca.trust(), now()).unwrap_err(),
        Refusal::Malformed(m) if m.contains("signer's certificate")
    ));
    // Garbage where the CMS should be.
    let template = Template::new(TEXT);
    let garbage = template.fill(&[0x30, 0x03, 0x02, 0x01, 0x01]);
    assert!(matches!(
        verify(&garbage, &ca.trust(), now()).unwrap_err(),
        Refusal::Malformed(_)
    ));
    assert_eq!(
        verify(b"not a pdf", &ca.trust(), now()).unwrap_err(),
        Refusal::NotPdf
    );
}

#[test]
fn trust_stores_read_pem_and_refuse_nonsense() {
    let ca = TestCa::root("Test Root");
    let mut t = TrustStore::new();
    let two = format!("{}{}", ca.pem(), TestCa::root("Other").pem());
    assert_eq!(t.add_pem(two.as_bytes()), Ok(2));
    assert_eq!(t.len(), 2);
    assert!(t.subjects()[0].contains("Test Root"));
    assert_eq!(
        t.add_pem(ca.pem().as_bytes()),
        Ok(1),
        "a duplicate is counted, not added twice"
    );
    assert_eq!(t.len(), 2);
    assert!(t.add_pem(b"hello").is_err());
    assert!(
        t.add_pem(b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
            .is_err()
    );
}
