//! Verification of a signed PDF (PAdES, or the older `adbe.pkcs7.detached`): bytes, trust
//! roots and a time in, a typed result out. No I/O.
//!
//! [`verify`] checks, in order:
//! 1. the file is a PDF and has a signature dictionary whose `/ByteRange` covers the whole
//!    file except exactly its `/Contents` hex string (so nothing was appended or hidden
//!    after signing);
//! 2. `/Contents` is a detached CMS `SignedData` with one signer, whose `messageDigest`
//!    signed attribute is the SHA-256/384/512 digest of the signed ranges;
//! 3. the signature over the DER of the signed attributes verifies with the public key of
//!    the certificate the SignerIdentifier names (RSA PKCS #1 v1.5, RSA-PSS, ECDSA P-256 or
//!    P-384);
//! 4. that certificate was valid at the signing time (the `signingTime` attribute, never
//!    later than now; now when absent), is meant for signing (key usage, extended key
//!    usage), and chains through the certificates the signature carries to a root of the
//!    [`TrustStore`], every certificate valid at that time.
//!
//! [`Verified::require_nif`] then checks the certificate names a given Spanish NIF.
//!
//! Not checked: revocation (CRL/OCSP need the network) and signature timestamps; the
//! signing time is the signer's own claim.

#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod chain;
mod cms;
pub mod nif;
mod oid;
mod pdf;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod tests;
mod tlv;

use chrono::{DateTime, SecondsFormat, Utc};

pub use chain::{TrustError, TrustStore};
pub use cms::DigestAlgorithm;

/// Why a signed PDF is refused. The text is one sentence meant for the person who uploaded
/// it: what is wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("The document must be a PDF file.")]
    NotPdf,
    #[error(
        "The document carries no digital signature: sign it (PAdES, e.g. with AutoFirma or Adobe) and upload it again."
    )]
    NoSignature,
    #[error(
        "The signature's byte ranges do not cover the whole document ({0}): upload the file exactly as it was signed."
    )]
    RangesDoNotCoverFile(String),
    #[error("The signature cannot be read: {0}.")]
    Malformed(String),
    #[error(
        "The signature uses {0}, which is not supported: sign with RSA or ECDSA (P-256, P-384) and SHA-256, SHA-384 or SHA-512."
    )]
    Unsupported(String),
    #[error(
        "The document was changed after it was signed: its digest does not match the one the signature covers."
    )]
    DigestMismatch,
    #[error("The signature is not valid: it does not verify with the signer's certificate.")]
    BadSignature,
    #[error(
        "The signer's certificate ({subject}, issued by {issuer}) is not trusted ({reason}): sign with a certificate of a Spanish qualified certification authority such as the FNMT, or ask the operator to trust its root (INVOICING_AEAT_SIGNATURE_TRUST)."
    )]
    Untrusted {
        subject: String,
        issuer: String,
        reason: String,
    },
    #[error("The signature was made when {whose} had expired (signing time {}, valid until {}): sign again with a valid certificate.", stamp(.at), stamp(.until))]
    Expired {
        whose: String,
        at: DateTime<Utc>,
        until: DateTime<Utc>,
    },
    #[error("The signature was made before {whose} was valid (signing time {}, valid from {}): sign again with a valid certificate.", stamp(.at), stamp(.from))]
    NotYetValid {
        whose: String,
        at: DateTime<Utc>,
        from: DateTime<Utc>,
    },
    #[error("The signer's certificate ({subject}) is not meant for signing documents: {reason}.")]
    NotForSigning { subject: String, reason: String },
    #[error(
        "The document is signed by {subject}, whose certificate names {found}, not the company's fiscal id {expected}: sign it with the company's certificate or its representative's."
    )]
    OtherNif {
        subject: String,
        found: String,
        expected: String,
    },
}

fn stamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A signature that verified and is trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The signer's common name (or whole subject).
    pub signer: String,
    /// The signer's certificate issuer (RFC 4514).
    pub issuer: String,
    /// The `serialNumber` and `organizationIdentifier` values of the signer's subject.
    pub identifiers: Vec<String>,
    /// The `signingTime` the signer claims, if any.
    pub signing_time: Option<DateTime<Utc>>,
    /// The time the certificates were checked at.
    pub checked_at: DateTime<Utc>,
    /// The digest of the signed bytes.
    pub digest: DigestAlgorithm,
}

impl Verified {
    /// Whether the signer's certificate names `nif` (compared after [`nif::normalize`]).
    pub fn names(&self, nif: &str) -> bool {
        let wanted = nif::normalize(nif);
        !wanted.is_empty()
            && self
                .identifiers
                .iter()
                .any(|id| nif::normalize(id) == wanted)
    }

    /// Refuses a signature whose certificate does not name `nif`.
    pub fn require_nif(&self, nif: &str) -> Result<(), Refusal> {
        if self.names(nif) {
            return Ok(());
        }
        Err(Refusal::OtherNif {
            subject: self.signer.clone(),
            found: if self.identifiers.is_empty() {
                "no fiscal id".into()
            } else {
                self.identifiers.join(", ")
            },
            expected: nif.to_owned(),
        })
    }
}

/// Verifies the signature of `pdf` that covers the whole file, trusting the roots of
/// `trust`, at `now`.
pub fn verify(pdf: &[u8], trust: &TrustStore, now: DateTime<Utc>) -> Result<Verified, Refusal> {
    let located = pdf::locate(pdf)?;
    let signed = cms::check(&located.contents, &located.signed(pdf))?;
    // A signing time in the future is not believed: the certificates are checked now.
    let at = signed.signing_time.map_or(now, |t| t.min(now));
    chain::check(
        &signed.signer,
        &signed.signer_parsed,
        &signed.others,
        trust,
        at,
    )?;
    let tbs = signed.signer_parsed.tbs_certificate();
    Ok(Verified {
        signer: chain::describe(&signed.signer_parsed),
        issuer: tbs.issuer().to_string(),
        identifiers: nif::identifiers(tbs.subject()),
        signing_time: signed.signing_time,
        checked_at: at,
        digest: signed.digest,
    })
}
