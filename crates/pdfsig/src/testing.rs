//! Test certificates and really signed PDFs, for this crate's and other crates' tests
//! (feature `testing`): a CA (and intermediate CAs), signer certificates naming a NIF, and a
//! minimal PDF whose signature dictionary holds a detached CMS `SignedData` over its byte
//! ranges. Keys are generated per process and never written anywhere.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use cms::{
    cert::{CertificateChoices, IssuerAndSerialNumber},
    content_info::{CmsVersion, ContentInfo},
    signed_data::{
        CertificateSet, EncapsulatedContentInfo, SignedData, SignerIdentifier, SignerInfo,
        SignerInfos,
    },
};
use der::{
    Any, Decode, Encode,
    asn1::{GeneralizedTime, ObjectIdentifier, OctetString, SetOfVec, UtcTime},
};
pub use rcgen;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, DnValue, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyPair, KeyUsagePurpose, SerialNumber, SigningKey,
};
use spki::AlgorithmIdentifierOwned;
use x509_cert::{Certificate, attr::Attribute, time::Time};

use crate::{DigestAlgorithm, oid};

mod template;
pub use template::Template;

fn next_serial() -> SerialNumber {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    SerialNumber::from_slice(&NEXT.fetch_add(1, Ordering::Relaxed).to_be_bytes())
}

/// A date for certificate validity.
pub type Ymd = (i32, u8, u8);

/// The key type of a certificate.
pub enum KeyKind {
    P256,
    P384,
    /// An RSA key in PKCS #8 PEM (rcgen cannot generate RSA keys with ring).
    Rsa(String),
}

impl KeyKind {
    fn generate(&self) -> KeyPair {
        match self {
            Self::P256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap(),
            Self::P384 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap(),
            Self::Rsa(pem) => {
                KeyPair::from_pem_and_sign_algo(pem, &rcgen::PKCS_RSA_SHA256).unwrap()
            }
        }
    }
}

/// A certification authority that issues test certificates.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    pem: String,
    /// The CA certificates a signature by one of its subjects carries (itself and its
    /// parents, without the root).
    carried: Vec<Vec<u8>>,
}

fn ca_params(name: &str, not_after: Ymd) -> CertificateParams {
    let mut p = CertificateParams::default();
    p.distinguished_name = rcgen::DistinguishedName::new();
    p.distinguished_name.push(DnType::CountryName, "ES");
    p.distinguished_name
        .push(DnType::OrganizationName, "Test Certification Authority");
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    p.not_before = rcgen::date_time_ymd(2000, 1, 1);
    p.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    p.serial_number = Some(next_serial());
    p
}

impl TestCa {
    /// A self-signed root (ECDSA P-256), valid 2000-2100.
    pub fn root(name: &str) -> Self {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = ca_params(name, (2100, 1, 1));
        let cert = params.self_signed(&key).unwrap();
        Self {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
            carried: Vec::new(),
        }
    }

    /// An intermediate CA under this one, valid from 2000 until `not_after`.
    pub fn intermediate(&self, name: &str, not_after: Ymd) -> Self {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = ca_params(name, not_after);
        params.use_authority_key_identifier_extension = true;
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let mut carried = vec![cert.der().to_vec()];
        carried.extend(self.carried.iter().cloned());
        Self {
            issuer: Issuer::new(params, key),
            pem: cert.pem(),
            carried,
        }
    }

    /// Its certificate, PEM (to configure as trusted).
    pub fn pem(&self) -> &str {
        &self.pem
    }

    /// A trust store holding only this CA.
    pub fn trust(&self) -> crate::TrustStore {
        let mut t = crate::TrustStore::new();
        t.add_pem(self.pem.as_bytes()).unwrap();
        t
    }

    /// Issues a signer certificate.
    pub fn issue(&self, spec: CertSpec) -> TestSigner {
        let key = spec.key.generate();
        let mut p = CertificateParams::default();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name.push(DnType::CountryName, "ES");
        if let Some(serial) = &spec.serial_number {
            p.distinguished_name.push(
                DnType::CustomDnType(vec![2, 5, 4, 5]),
                DnValue::PrintableString(serial.as_str().try_into().unwrap()),
            );
        }
        if let Some(org_id) = &spec.organization_identifier {
            p.distinguished_name
                .push(DnType::CustomDnType(vec![2, 5, 4, 97]), org_id.as_str());
        }
        p.distinguished_name
            .push(DnType::CommonName, spec.common_name.as_str());
        p.key_usages = spec.key_usages;
        p.extended_key_usages = spec.extended_key_usages;
        p.is_ca = spec.is_ca;
        p.not_before =
            rcgen::date_time_ymd(spec.not_before.0, spec.not_before.1, spec.not_before.2);
        p.not_after = rcgen::date_time_ymd(spec.not_after.0, spec.not_after.1, spec.not_after.2);
        p.serial_number = Some(next_serial());
        p.use_authority_key_identifier_extension = true;
        let cert = p.signed_by(&key, &self.issuer).unwrap();
        TestSigner {
            key,
            cert: cert.der().to_vec(),
            cert_pem: cert.pem(),
            chain: self.carried.clone(),
        }
    }
}

/// What a signer certificate says.
pub struct CertSpec {
    pub common_name: String,
    /// Subject `serialNumber`, e.g. `IDCES-12345678Z`.
    pub serial_number: Option<String>,
    /// Subject `organizationIdentifier`, e.g. `VATES-B12345674`.
    pub organization_identifier: Option<String>,
    pub not_before: Ymd,
    pub not_after: Ymd,
    pub key: KeyKind,
    pub key_usages: Vec<KeyUsagePurpose>,
    pub extended_key_usages: Vec<ExtendedKeyUsagePurpose>,
    pub is_ca: IsCa,
}

impl CertSpec {
    /// A citizen certificate (like the FNMT's) for the person with `nif`, valid 2020-2099.
    pub fn person(nif: &str) -> Self {
        Self {
            common_name: format!("APELLIDO APELLIDO NOMBRE - {nif}"),
            serial_number: Some(format!("IDCES-{nif}")),
            organization_identifier: None,
            not_before: (2020, 1, 1),
            not_after: (2099, 1, 1),
            key: KeyKind::P256,
            key_usages: vec![
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::ContentCommitment,
            ],
            extended_key_usages: vec![
                ExtendedKeyUsagePurpose::EmailProtection,
                ExtendedKeyUsagePurpose::ClientAuth,
            ],
            is_ca: IsCa::NoCa,
        }
    }

    /// A legal entity representative's certificate: the person's NIF and the entity's.
    pub fn representative(person_nif: &str, entity_nif: &str) -> Self {
        Self {
            organization_identifier: Some(format!("VATES-{entity_nif}")),
            common_name: format!("{person_nif} NOMBRE APELLIDO (R: {entity_nif})"),
            ..Self::person(person_nif)
        }
    }

    /// The same, valid between two dates.
    pub fn valid(mut self, not_before: Ymd, not_after: Ymd) -> Self {
        self.not_before = not_before;
        self.not_after = not_after;
        self
    }
}

/// A signer: its key and certificate, and the CA certificates it carries.
pub struct TestSigner {
    key: KeyPair,
    cert: Vec<u8>,
    cert_pem: String,
    chain: Vec<Vec<u8>>,
}

/// How [`TestSigner::sign_pdf`] signs.
#[derive(Clone)]
pub struct SignOptions {
    /// The `signingTime` signed attribute (none: the attribute is left out, as in PAdES).
    pub signing_time: Option<DateTime<Utc>>,
    pub digest: DigestAlgorithm,
    /// Carry the CA certificates (not only the signer's).
    pub carry_chain: bool,
    /// Carry the signer's certificate.
    pub carry_signer: bool,
}

impl Default for SignOptions {
    fn default() -> Self {
        Self {
            signing_time: Some(Utc::now()),
            digest: DigestAlgorithm::Sha256,
            carry_chain: true,
            carry_signer: true,
        }
    }
}

impl TestSigner {
    /// Its certificate (DER).
    pub fn cert_der(&self) -> &[u8] {
        &self.cert
    }

    /// Its certificate (PEM).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Another signer's certificate with this signer's key: a signature that cannot verify.
    pub fn impersonating(self, other: &TestSigner) -> TestSigner {
        TestSigner {
            cert: other.cert.clone(),
            cert_pem: other.cert_pem.clone(),
            chain: other.chain.clone(),
            ..self
        }
    }

    /// Its private key, PKCS #8 PEM (for signing with another tool in a test).
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    /// The CA certificates it carries (DER).
    pub fn chain(&self) -> &[Vec<u8>] {
        &self.chain
    }

    /// A minimal PDF whose page says `text`, signed by this signer.
    pub fn sign_pdf(&self, text: &str, options: &SignOptions) -> Vec<u8> {
        let template = Template::new(text);
        let cms = self.cms(&template.signed_bytes(), options);
        template.fill(&cms)
    }

    /// A detached CMS `SignedData` over `content`, as a PDF signer makes it.
    pub fn cms(&self, content: &[u8], options: &SignOptions) -> Vec<u8> {
        let digest_oid = match options.digest {
            DigestAlgorithm::Sha256 => oid::SHA256,
            DigestAlgorithm::Sha384 => oid::SHA384,
            DigestAlgorithm::Sha512 => oid::SHA512,
        };
        let digest = options.digest.digest(&[content]);
        let attr = |id: ObjectIdentifier, value: Any| Attribute {
            oid: id,
            values: SetOfVec::try_from(vec![value]).unwrap(),
        };
        let mut attrs = vec![
            attr(oid::CONTENT_TYPE, Any::encode_from(&oid::DATA).unwrap()),
            attr(
                oid::MESSAGE_DIGEST,
                Any::encode_from(&OctetString::new(digest).unwrap()).unwrap(),
            ),
        ];
        if let Some(t) = options.signing_time {
            let secs = std::time::Duration::from_secs(t.timestamp().try_into().unwrap());
            let time = match UtcTime::from_unix_duration(secs) {
                Ok(u) => Time::UtcTime(u),
                Err(_) => Time::GeneralTime(GeneralizedTime::from_unix_duration(secs).unwrap()),
            };
            attrs.push(attr(oid::SIGNING_TIME, Any::encode_from(&time).unwrap()));
        }
        let signed_attrs = SetOfVec::try_from(attrs).unwrap();
        let signature = self.key.sign(&signed_attrs.to_der().unwrap()).unwrap();
        let signer = Certificate::from_der(&self.cert).unwrap();
        let signature_algorithm = ObjectIdentifier::new_unwrap(match self.key.algorithm() {
            a if a == &rcgen::PKCS_ECDSA_P256_SHA256 => "1.2.840.10045.4.3.2",
            a if a == &rcgen::PKCS_ECDSA_P384_SHA384 => "1.2.840.10045.4.3.3",
            _ => "1.2.840.113549.1.1.11",
        });
        let info = SignerInfo {
            version: CmsVersion::V1,
            sid: SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
                issuer: signer.tbs_certificate().issuer().clone(),
                serial_number: signer.tbs_certificate().serial_number().clone(),
            }),
            digest_alg: AlgorithmIdentifierOwned {
                oid: digest_oid,
                parameters: None,
            },
            signed_attrs: Some(signed_attrs),
            signature_algorithm: AlgorithmIdentifierOwned {
                oid: signature_algorithm,
                parameters: None,
            },
            signature: OctetString::new(signature).unwrap(),
            unsigned_attrs: None,
        };
        let mut certs = Vec::new();
        if options.carry_signer {
            certs.push(CertificateChoices::Certificate(signer));
        }
        if options.carry_chain {
            for c in &self.chain {
                certs.push(CertificateChoices::Certificate(
                    Certificate::from_der(c).unwrap(),
                ));
            }
        }
        let signed_data = SignedData {
            version: CmsVersion::V1,
            digest_algorithms: SetOfVec::try_from(vec![AlgorithmIdentifierOwned {
                oid: digest_oid,
                parameters: None,
            }])
            .unwrap(),
            encap_content_info: EncapsulatedContentInfo {
                econtent_type: oid::DATA,
                econtent: None,
            },
            certificates: Some(CertificateSet(SetOfVec::try_from(certs).unwrap())),
            crls: None,
            signer_infos: SignerInfos(SetOfVec::try_from(vec![info]).unwrap()),
        };
        ContentInfo {
            content_type: oid::SIGNED_DATA,
            content: Any::encode_from(&signed_data).unwrap(),
        }
        .to_der()
        .unwrap()
    }
}
