//! Trust: the configured roots, and the signer's chain to one of them at the signing time.

use chrono::{DateTime, Utc};
use rustls_pki_types::{
    CertificateDer, SignatureVerificationAlgorithm, TrustAnchor, UnixTime, pem::PemObject,
};
use webpki::{ExtendedKeyUsageValidator, KeyPurposeId, KeyPurposeIdIter, KeyUsage, ring as alg};
use x509_cert::{Certificate, ext::pkix::KeyUsage as KeyUsageExt, time::Time};

use crate::{Refusal, oid};

/// Algorithms accepted for the certificates of a chain (no SHA-1, RSA of 2048 bits or more).
const CHAIN_ALGORITHMS: &[&dyn SignatureVerificationAlgorithm] = &[
    alg::RSA_PKCS1_2048_8192_SHA256,
    alg::RSA_PKCS1_2048_8192_SHA384,
    alg::RSA_PKCS1_2048_8192_SHA512,
    alg::RSA_PKCS1_2048_8192_SHA256_ABSENT_PARAMS,
    alg::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS,
    alg::RSA_PKCS1_2048_8192_SHA512_ABSENT_PARAMS,
    alg::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
    alg::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
    alg::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
    alg::ECDSA_P256_SHA256,
    alg::ECDSA_P256_SHA384,
    alg::ECDSA_P384_SHA256,
    alg::ECDSA_P384_SHA384,
    alg::ED25519,
];

/// Why a trust store could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustError {
    #[error("it is not PEM ({0})")]
    Pem(String),
    #[error("it holds no certificate")]
    Empty,
    #[error("certificate {0} cannot be used as a root ({1})")]
    Unusable(usize, String),
}

/// The root certificates a signer's chain must end at.
#[derive(Clone, Default)]
pub struct TrustStore {
    roots: Vec<CertificateDer<'static>>,
    subjects: Vec<String>,
}

impl std::fmt::Debug for TrustStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrustStore")
            .field("roots", &self.subjects)
            .finish()
    }
}

impl TrustStore {
    /// A store that trusts nothing (every signature is refused as untrusted).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every certificate of a PEM text (`-----BEGIN CERTIFICATE-----` blocks); returns
    /// how many. Refuses a text without certificates, or one that cannot be a root.
    pub fn add_pem(&mut self, pem: &[u8]) -> Result<usize, TrustError> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| TrustError::Pem(e.to_string()))?;
        if certs.is_empty() {
            return Err(TrustError::Empty);
        }
        let n = certs.len();
        for (i, cert) in certs.into_iter().enumerate() {
            self.add_der(cert)
                .map_err(|e| TrustError::Unusable(i + 1, e))?;
        }
        Ok(n)
    }

    fn add_der(&mut self, cert: CertificateDer<'static>) -> Result<(), String> {
        webpki::anchor_from_trusted_cert(&cert).map_err(|e| e.to_string())?;
        let parsed = <Certificate as der::Decode>::from_der(&cert).map_err(|e| e.to_string())?;
        if !self.roots.contains(&cert) {
            self.subjects
                .push(parsed.tbs_certificate().subject().to_string());
            self.roots.push(cert);
        }
        Ok(())
    }

    /// How many roots it holds.
    pub fn len(&self) -> usize {
        self.roots.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty()
    }

    /// The roots' subjects (RFC 4514), for logs.
    pub fn subjects(&self) -> &[String] {
        &self.subjects
    }

    /// The roots' SHA-256 fingerprints, upper-case hex pairs joined by `:` (as `openssl x509
    /// -fingerprint -sha256` prints them).
    pub fn fingerprints(&self) -> Vec<String> {
        use sha2::Digest as _;
        self.roots
            .iter()
            .map(|r| {
                sha2::Sha256::digest(r.as_ref())
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect::<Vec<_>>()
                    .join(":")
            })
            .collect()
    }
}

/// A certificate's common name, or its whole subject when it has none.
pub(crate) fn describe(cert: &Certificate) -> String {
    let subject = cert.tbs_certificate().subject();
    subject
        .iter()
        .find(|a| a.oid == oid::COMMON_NAME)
        .and_then(|a| crate::nif::text(&a.value))
        .unwrap_or_else(|| subject.to_string())
}

fn to_utc(t: Time) -> DateTime<Utc> {
    i64::try_from(t.to_unix_duration().as_secs())
        .ok()
        .and_then(|s| DateTime::from_timestamp(s, 0))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

fn unix(t: DateTime<Utc>) -> UnixTime {
    UnixTime::since_unix_epoch(std::time::Duration::from_secs(
        u64::try_from(t.timestamp()).unwrap_or(0),
    ))
}

/// Extended key usages that allow signing documents; a certificate without the extension
/// is not restricted. Applies to every certificate of the chain (EKU chaining).
struct SigningPurposes;

impl ExtendedKeyUsageValidator for SigningPurposes {
    fn validate(&self, iter: KeyPurposeIdIter<'_, '_>) -> Result<(), webpki::Error> {
        let mut present = Vec::new();
        for id in iter {
            let id = id?;
            if oid::eku::SIGNING
                .iter()
                .any(|ok| KeyPurposeId::new(ok) == id)
            {
                return Ok(());
            }
            present.push(id.to_decoded_oid());
        }
        if present.is_empty() {
            return Ok(());
        }
        Err(webpki::Error::RequiredEkuNotFoundContext(
            webpki::RequiredEkuNotFoundContext {
                required: KeyUsage::required(oid::eku::EMAIL_PROTECTION),
                present,
            },
        ))
    }
}

/// Checks the signer's certificate at `at`: valid then, meant for signing, and chained
/// through `intermediates` to a root of `trust`.
pub(crate) fn check(
    signer: &CertificateDer<'_>,
    parsed: &Certificate,
    intermediates: &[CertificateDer<'_>],
    trust: &TrustStore,
    at: DateTime<Utc>,
) -> Result<(), Refusal> {
    let subject = describe(parsed);
    let validity = parsed.tbs_certificate().validity();
    let (from, until) = (to_utc(validity.not_before), to_utc(validity.not_after));
    if at > until {
        return Err(Refusal::Expired {
            whose: format!("the signer's certificate ({subject})"),
            at,
            until,
        });
    }
    if at < from {
        return Err(Refusal::NotYetValid {
            whose: format!("the signer's certificate ({subject})"),
            at,
            from,
        });
    }
    let usage = parsed
        .tbs_certificate()
        .get_extension::<KeyUsageExt>()
        .map_err(|e| Refusal::Malformed(format!("the signer's key usage cannot be read ({e})")))?;
    if let Some((_, ku)) = usage
        && !(ku.digital_signature() || ku.non_repudiation())
    {
        return Err(Refusal::NotForSigning {
            subject,
            reason: "its key usage allows neither digital signatures nor non-repudiation".into(),
        });
    }

    let anchors: Vec<TrustAnchor<'_>> = trust
        .roots
        .iter()
        .filter_map(|r| webpki::anchor_from_trusted_cert(r).ok())
        .collect();
    let ee = webpki::EndEntityCert::try_from(signer).map_err(|e| {
        Refusal::Malformed(format!("the signer's certificate cannot be used ({e})"))
    })?;
    let issuer = parsed.tbs_certificate().issuer().to_string();
    match ee.verify_for_usage(
        CHAIN_ALGORITHMS,
        &anchors,
        intermediates,
        unix(at),
        SigningPurposes,
        None,
        None,
    ) {
        Ok(_) => Ok(()),
        Err(webpki::Error::CertExpired { not_after, .. }) => Err(Refusal::Expired {
            whose: "a CA certificate of the signer's chain".into(),
            at,
            until: DateTime::from_timestamp(
                i64::try_from(not_after.as_secs()).unwrap_or(i64::MAX),
                0,
            )
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
        }),
        Err(webpki::Error::CertNotValidYet { not_before, .. }) => Err(Refusal::NotYetValid {
            whose: "a CA certificate of the signer's chain".into(),
            at,
            from: DateTime::from_timestamp(
                i64::try_from(not_before.as_secs()).unwrap_or(i64::MAX),
                0,
            )
            .unwrap_or(DateTime::<Utc>::MAX_UTC),
        }),
        Err(webpki::Error::RequiredEkuNotFoundContext(_)) => Err(Refusal::NotForSigning {
            subject,
            reason: "its extended key usage (or its CA's) does not allow signing documents".into(),
        }),
        Err(webpki::Error::CaUsedAsEndEntity) => Err(Refusal::NotForSigning {
            subject,
            reason: "it is a CA certificate".into(),
        }),
        Err(e) => Err(Refusal::Untrusted {
            subject,
            issuer,
            reason: match e {
                webpki::Error::UnknownIssuer => "no chain to a trusted root".into(),
                other => format!("{other:?}"),
            },
        }),
    }
}
