//! The detached CMS `SignedData` of a PDF signature: the digest of the signed bytes against
//! the `messageDigest` attribute, and the signature over the signed attributes with the
//! signer's certificate.

use chrono::{DateTime, Utc};
use cms::signed_data::{EncapsulatedContentInfo, SignerIdentifier, SignerInfo};
use der::{Decode, asn1::OctetString};
use rustls_pki_types::{CertificateDer, SignatureVerificationAlgorithm};
use spki::AlgorithmIdentifierOwned;
use webpki::ring as alg;
use x509_cert::{Certificate, ext::pkix::SubjectKeyIdentifier, time::Time};

use crate::{
    Refusal, oid,
    tlv::{self, tag},
};

/// Certificates a signature may carry (the signer, its CAs, sometimes a few more).
const MAX_CERTIFICATES: usize = 32;

/// The digest of the signed bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DigestAlgorithm {
    Sha256,
    Sha384,
    Sha512,
}

impl DigestAlgorithm {
    fn from_oid(id: &AlgorithmIdentifierOwned) -> Result<Self, Refusal> {
        match id.oid {
            o if o == oid::SHA256 => Ok(Self::Sha256),
            o if o == oid::SHA384 => Ok(Self::Sha384),
            o if o == oid::SHA512 => Ok(Self::Sha512),
            o if o == oid::SHA1 => Err(Refusal::Unsupported("the SHA-1 digest".into())),
            o => Err(Refusal::Unsupported(format!("the digest algorithm {o}"))),
        }
    }

    pub(crate) fn digest(self, parts: &[&[u8]]) -> Vec<u8> {
        fn run<D: sha2::Digest>(parts: &[&[u8]]) -> Vec<u8> {
            let mut d = D::new();
            for p in parts {
                d.update(p);
            }
            d.finalize().to_vec()
        }
        match self {
            Self::Sha256 => run::<sha2::Sha256>(parts),
            Self::Sha384 => run::<sha2::Sha384>(parts),
            Self::Sha512 => run::<sha2::Sha512>(parts),
        }
    }

    /// Its name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::Sha256 => "SHA-256",
            Self::Sha384 => "SHA-384",
            Self::Sha512 => "SHA-512",
        }
    }
}

/// What a valid signature yields: who signed (not yet trusted) and when they say they did.
pub(crate) struct Signed {
    /// The signer's certificate, exactly as carried.
    pub signer: CertificateDer<'static>,
    pub signer_parsed: Certificate,
    /// The other certificates carried (candidate intermediate CAs).
    pub others: Vec<CertificateDer<'static>>,
    pub signing_time: Option<DateTime<Utc>>,
    pub digest: DigestAlgorithm,
}

fn malformed(why: impl Into<String>) -> Refusal {
    Refusal::Malformed(why.into())
}

/// Trims the zero padding PDF writers leave after the CMS structure in `/Contents`.
fn without_padding(contents: &[u8]) -> Result<&[u8], Refusal> {
    let (tlv, rest) = tlv::read(contents).map_err(malformed)?;
    if rest.iter().any(|b| *b != 0) {
        return Err(malformed("bytes follow the CMS structure in /Contents"));
    }
    Ok(tlv.raw)
}

/// The raw pieces of a `SignedData`: encapsulated content info, certificates, signer infos.
struct Raw<'a> {
    encap: &'a [u8],
    certificates: Vec<&'a [u8]>,
    signer_infos: Vec<tlv::Tlv<'a>>,
}

fn raw_signed_data(der: &[u8]) -> Result<Raw<'_>, Refusal> {
    let content_info = tlv::single(der, tag::SEQUENCE, "the CMS structure").map_err(malformed)?;
    let parts = tlv::children(content_info.content, 2).map_err(malformed)?;
    let [content_type, content] = parts.as_slice() else {
        return Err(malformed("the CMS structure is incomplete"));
    };
    if content_type.tag != tag::OID || content_type.content != oid::SIGNED_DATA.as_bytes() {
        return Err(malformed("/Contents is not a CMS SignedData"));
    }
    if content.tag != tag::CONTEXT_0 {
        return Err(malformed("the SignedData is missing"));
    }
    let signed_data =
        tlv::single(content.content, tag::SEQUENCE, "the SignedData").map_err(malformed)?;
    // version, digestAlgorithms, encapContentInfo, [0] certificates, [1] crls, signerInfos
    let fields = tlv::children(signed_data.content, 6).map_err(malformed)?;
    let (Some(encap), Some(signer_infos)) = (fields.get(2), fields.last()) else {
        return Err(malformed("the SignedData is incomplete"));
    };
    if encap.tag != tag::SEQUENCE || signer_infos.tag != tag::SET || fields.len() < 4 {
        return Err(malformed("the SignedData is incomplete"));
    }
    let mut certificates = Vec::new();
    if let Some(certs) = fields.iter().find(|f| f.tag == tag::CONTEXT_0) {
        for c in tlv::children(certs.content, MAX_CERTIFICATES).map_err(malformed)? {
            // Other certificate formats (attribute certificates) are not X.509 certificates.
            if c.tag == tag::SEQUENCE {
                certificates.push(c.raw);
            }
        }
    }
    Ok(Raw {
        encap: encap.raw,
        certificates,
        signer_infos: tlv::children(signer_infos.content, 2).map_err(malformed)?,
    })
}

/// The signer's certificate among those carried, as the SignerIdentifier names it.
fn find_signer<'a>(
    sid: &SignerIdentifier,
    certificates: &[&'a [u8]],
) -> Option<(&'a [u8], Certificate)> {
    certificates.iter().find_map(|raw| {
        let cert = Certificate::from_der(raw).ok()?;
        let tbs = cert.tbs_certificate();
        let matches = match sid {
            SignerIdentifier::IssuerAndSerialNumber(isn) => {
                tbs.issuer() == &isn.issuer && tbs.serial_number() == &isn.serial_number
            }
            SignerIdentifier::SubjectKeyIdentifier(ski) => tbs
                .get_extension::<SubjectKeyIdentifier>()
                .ok()
                .flatten()
                .is_some_and(|(_, own)| &own == ski),
        };
        matches.then_some((*raw, cert))
    })
}

/// The single value of a signed attribute; `None` when absent, an error when repeated.
fn attribute<'a>(
    info: &'a SignerInfo,
    id: der::asn1::ObjectIdentifier,
    name: &str,
) -> Result<Option<&'a der::Any>, Refusal> {
    let attrs = info.signed_attrs.iter().flat_map(|a| a.iter());
    let mut found = attrs.filter(|a| a.oid == id);
    match (found.next(), found.next()) {
        (None, _) => Ok(None),
        (Some(a), None) if a.values.len() == 1 => Ok(a.values.get(0)),
        _ => Err(malformed(format!(
            "its {name} attribute is repeated or has several values"
        ))),
    }
}

/// Checks the CMS in `/Contents` against the signed bytes `parts`.
pub(crate) fn check(contents: &[u8], parts: &[&[u8]]) -> Result<Signed, Refusal> {
    let der = without_padding(contents)?;
    let raw = raw_signed_data(der)?;
    let [signer_info_raw] = raw.signer_infos.as_slice() else {
        return Err(malformed(format!(
            "it has {} signers where one is expected",
            raw.signer_infos.len()
        )));
    };
    let encap = EncapsulatedContentInfo::from_der(raw.encap)
        .map_err(|e| malformed(format!("its content info cannot be decoded ({e})")))?;
    if encap.econtent_type != oid::DATA || encap.econtent.is_some() {
        return Err(malformed(
            "it is not a detached signature of the document (ETSI.CAdES.detached or adbe.pkcs7.detached)",
        ));
    }
    let info = SignerInfo::from_der(signer_info_raw.raw)
        .map_err(|e| malformed(format!("its signer information cannot be decoded ({e})")))?;
    let digest = DigestAlgorithm::from_oid(&info.digest_alg)?;

    // The signed attributes: PAdES requires them; the signature covers them, not the content.
    let signed_attrs_raw = tlv::children(signer_info_raw.content, 7)
        .map_err(malformed)?
        .into_iter()
        .find(|f| f.tag == tag::CONTEXT_0)
        .ok_or_else(|| malformed("it has no signed attributes"))?;
    let content_type = attribute(&info, oid::CONTENT_TYPE, "contentType")?
        .and_then(|v| v.decode_as::<der::asn1::ObjectIdentifier>().ok());
    if content_type != Some(oid::DATA) {
        return Err(malformed(
            "its contentType attribute is missing or is not id-data",
        ));
    }
    let message_digest = attribute(&info, oid::MESSAGE_DIGEST, "messageDigest")?
        .ok_or_else(|| malformed("it has no messageDigest attribute"))?
        .decode_as::<OctetString>()
        .map_err(|_| malformed("its messageDigest attribute is not an octet string"))?;
    let signing_time = match attribute(&info, oid::SIGNING_TIME, "signingTime")? {
        None => None,
        Some(v) => {
            let t = v
                .decode_as::<Time>()
                .map_err(|_| malformed("its signingTime attribute is not a time"))?;
            let secs = i64::try_from(t.to_unix_duration().as_secs())
                .map_err(|_| malformed("its signingTime is out of range"))?;
            Some(
                DateTime::from_timestamp(secs, 0)
                    .ok_or_else(|| malformed("its signingTime is out of range"))?,
            )
        }
    };

    if digest.digest(parts) != message_digest.as_bytes() {
        return Err(Refusal::DigestMismatch);
    }

    let (signer_raw, signer_parsed) = find_signer(&info.sid, &raw.certificates)
        .ok_or_else(|| malformed("it does not carry the signer's certificate"))?;
    // The signature is over the DER of the attributes as a SET (tag 0x31 for the [0]).
    let mut message = signed_attrs_raw.raw.to_vec();
    message[0] = tag::SET;
    let signer = CertificateDer::from(signer_raw.to_vec());
    verify_signature(
        &signer,
        &info.signature_algorithm,
        digest,
        &message,
        info.signature.as_bytes(),
    )?;
    let others = raw
        .certificates
        .iter()
        .filter(|c| **c != signer_raw)
        .map(|c| CertificateDer::from(c.to_vec()))
        .collect();
    Ok(Signed {
        signer,
        signer_parsed,
        others,
        signing_time,
        digest,
    })
}

/// RSASSA-PSS parameters (RFC 4055); absent fields mean SHA-1, which is refused.
#[derive(der::Sequence)]
struct PssParams {
    #[asn1(context_specific = "0", tag_mode = "EXPLICIT", optional = "true")]
    hash: Option<AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "1", tag_mode = "EXPLICIT", optional = "true")]
    mask_gen: Option<AlgorithmIdentifierOwned>,
    #[asn1(context_specific = "2", tag_mode = "EXPLICIT", optional = "true")]
    salt_length: Option<u32>,
    #[asn1(context_specific = "3", tag_mode = "EXPLICIT", optional = "true")]
    trailer_field: Option<u32>,
}

type Algs = Vec<&'static dyn SignatureVerificationAlgorithm>;

fn pss(params: Option<&der::Any>) -> Result<Algs, Refusal> {
    let unsupported = || {
        Refusal::Unsupported(
            "RSA-PSS with parameters other than SHA-2, MGF1 with the same hash and a salt as long as the hash".into(),
        )
    };
    let p: PssParams = params
        .ok_or_else(unsupported)?
        .decode_as()
        .map_err(|_| malformed("its RSA-PSS parameters cannot be decoded"))?;
    let hash = DigestAlgorithm::from_oid(p.hash.as_ref().ok_or_else(unsupported)?)?;
    let mgf = p.mask_gen.as_ref().ok_or_else(unsupported)?;
    let mgf_hash = mgf
        .parameters
        .as_ref()
        .and_then(|a| a.decode_as::<AlgorithmIdentifierOwned>().ok())
        .ok_or_else(unsupported)?;
    let salt = match hash {
        DigestAlgorithm::Sha256 => 32,
        DigestAlgorithm::Sha384 => 48,
        DigestAlgorithm::Sha512 => 64,
    };
    if mgf.oid != oid::MGF1
        || DigestAlgorithm::from_oid(&mgf_hash)? != hash
        || p.salt_length != Some(salt)
        || p.trailer_field.is_some_and(|t| t != 1)
    {
        return Err(unsupported());
    }
    Ok(match hash {
        DigestAlgorithm::Sha256 => vec![alg::RSA_PSS_2048_8192_SHA256_LEGACY_KEY],
        DigestAlgorithm::Sha384 => vec![alg::RSA_PSS_2048_8192_SHA384_LEGACY_KEY],
        DigestAlgorithm::Sha512 => vec![alg::RSA_PSS_2048_8192_SHA512_LEGACY_KEY],
    })
}

/// The verification algorithms a CMS signature algorithm may mean (ECDSA: either curve).
fn algorithms(sig: &AlgorithmIdentifierOwned, digest: DigestAlgorithm) -> Result<Algs, Refusal> {
    let rsa = |d| -> Algs {
        match d {
            DigestAlgorithm::Sha256 => vec![alg::RSA_PKCS1_2048_8192_SHA256],
            DigestAlgorithm::Sha384 => vec![alg::RSA_PKCS1_2048_8192_SHA384],
            DigestAlgorithm::Sha512 => vec![alg::RSA_PKCS1_2048_8192_SHA512],
        }
    };
    let ecdsa = |d| -> Result<Algs, Refusal> {
        match d {
            DigestAlgorithm::Sha256 => Ok(vec![alg::ECDSA_P256_SHA256, alg::ECDSA_P384_SHA256]),
            DigestAlgorithm::Sha384 => Ok(vec![alg::ECDSA_P256_SHA384, alg::ECDSA_P384_SHA384]),
            DigestAlgorithm::Sha512 => Err(Refusal::Unsupported("ECDSA with SHA-512".into())),
        }
    };
    match sig.oid {
        o if o == oid::RSA_ENCRYPTION => Ok(rsa(digest)),
        o if o == oid::SHA256_WITH_RSA => Ok(rsa(DigestAlgorithm::Sha256)),
        o if o == oid::SHA384_WITH_RSA => Ok(rsa(DigestAlgorithm::Sha384)),
        o if o == oid::SHA512_WITH_RSA => Ok(rsa(DigestAlgorithm::Sha512)),
        o if o == oid::RSASSA_PSS => pss(sig.parameters.as_ref()),
        o if o == oid::EC_PUBLIC_KEY => ecdsa(digest),
        o if o == oid::ECDSA_SHA256 => ecdsa(DigestAlgorithm::Sha256),
        o if o == oid::ECDSA_SHA384 => ecdsa(DigestAlgorithm::Sha384),
        o if o == oid::ECDSA_SHA512 => ecdsa(DigestAlgorithm::Sha512),
        o => Err(Refusal::Unsupported(format!("the signature algorithm {o}"))),
    }
}

fn verify_signature(
    signer: &CertificateDer<'_>,
    sig_alg: &AlgorithmIdentifierOwned,
    digest: DigestAlgorithm,
    message: &[u8],
    signature: &[u8],
) -> Result<(), Refusal> {
    let ee = webpki::EndEntityCert::try_from(signer).map_err(|e| {
        Refusal::Malformed(format!("the signer's certificate cannot be used ({e})"))
    })?;
    for a in algorithms(sig_alg, digest)? {
        match ee.verify_signature(a, message, signature) {
            Ok(()) => return Ok(()),
            // The other curve, or a key of another type: try the next one.
            Err(webpki::Error::UnsupportedSignatureAlgorithmForPublicKeyContext(_)) => continue,
            Err(_) => return Err(Refusal::BadSignature),
        }
    }
    Err(Refusal::Unsupported(format!(
        "a signature algorithm ({}) that does not fit the signer's key (RSA of 2048 bits or more, ECDSA P-256 or P-384)",
        sig_alg.oid
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_eku_constants_are_the_oids_they_name() {
        for (bytes, dotted) in [
            (oid::eku::ANY, "2.5.29.37.0"),
            (oid::eku::CLIENT_AUTH, "1.3.6.1.5.5.7.3.2"),
            (oid::eku::EMAIL_PROTECTION, "1.3.6.1.5.5.7.3.4"),
            (oid::eku::DOCUMENT_SIGNING, "1.3.6.1.5.5.7.3.36"),
            (oid::eku::MS_DOCUMENT_SIGNING, "1.3.6.1.4.1.311.10.3.12"),
            (oid::eku::ADOBE_AUTHENTIC_DOCUMENTS, "1.2.840.113583.1.1.5"),
        ] {
            assert_eq!(
                bytes,
                der::asn1::ObjectIdentifier::new_unwrap(dotted).as_bytes(),
                "{dotted}"
            );
        }
    }

    #[test]
    fn padding_must_be_zeros() {
        assert!(without_padding(&[0x30, 0x00, 0, 0, 0]).is_ok());
        assert!(without_padding(&[0x30, 0x00, 0, 1]).is_err());
    }
}
