//! The XAdES-EPES signature of a Facturae document, under the "Política de firma de
//! Facturae v3.1".
//!
//! An enveloped XML signature (`ds:Signature`, the last child of `fe:Facturae`) with three
//! references, each canonicalised with exclusive C14N ([`crate::c14n`]) and digested with
//! SHA-256: the document (`URI=""`, enveloped-signature transform), the XAdES signed
//! properties and the key info. The signed properties carry the signing time, the signing
//! certificate (SHA-256 digest, issuer and serial number), the signature policy (its URL,
//! description and SHA-1 hash, as the policy states them), the claimed role `emisor` and
//! the data object format (`text/xml`). The signature is RSA PKCS #1 v1.5 with SHA-256, or
//! ECDSA P-256 with SHA-256, by the key of a PKCS #12 file.
//!
//! Each digest is computed from the document as parsed again after the previous step, so
//! what is digested is what a verifier reads.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, SecondsFormat, Utc};
use der::Decode;
use der::asn1::ObjectIdentifier;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, RsaKeyPair};
use sha2::{Digest, Sha256};

use crate::c14n::{EXC_C14N, canonicalize};

/// The policy's identifier (its URL).
pub const POLICY_URL: &str = "http://www.facturae.es/politica_de_firmas_formato_facturae/politica_de_firma_formato_facturae_v3_1.pdf";
/// The policy's name.
pub const POLICY_DESCRIPTION: &str = "Política de firma de Facturae v3.1";
/// The SHA-1 digest of the policy document, base64, as the policy publishes it.
pub const POLICY_SHA1: &str = "Ohixl6upD6av8N7pEvDABhEL6hM=";

const DS: &str = "http://www.w3.org/2000/09/xmldsig#";
const XADES: &str = "http://uri.etsi.org/01903/v1.3.2#";
const SHA256: &str = "http://www.w3.org/2001/04/xmlenc#sha256";
const SHA1: &str = "http://www.w3.org/2000/09/xmldsig#sha1";
const ENVELOPED: &str = "http://www.w3.org/2000/09/xmldsig#enveloped-signature";
const RSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#rsa-sha256";
const ECDSA_SHA256: &str = "http://www.w3.org/2001/04/xmldsig-more#ecdsa-sha256";
const SIGNED_PROPERTIES_TYPE: &str = "http://uri.etsi.org/01903#SignedProperties";

/// The subject's `serialNumber` (a person's NIF in Spanish certificates).
const SERIAL_NUMBER: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.5");
/// The subject's `organizationIdentifier` (an entity's NIF).
const ORGANIZATION_IDENTIFIER: ObjectIdentifier = ObjectIdentifier::new_unwrap("2.5.4.97");

const SIGNATURE_ID: &str = "Signature";
const DOCUMENT_REF_ID: &str = "Signature-Reference-Document";
const SIGNED_PROPERTIES_ID: &str = "Signature-SignedProperties";
const KEY_INFO_ID: &str = "Signature-KeyInfo";

/// Why a document could not be signed, or a certificate cannot sign.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SignError(String);

fn err(what: impl Into<String>) -> SignError {
    SignError(what.into())
}

enum Key {
    Rsa(RsaKeyPair),
    Ecdsa(EcdsaKeyPair),
}

/// A signing certificate with its private key.
pub struct Signer {
    key: Key,
    cert: Vec<u8>,
    issuer: String,
    serial: String,
    subject: String,
    /// The fiscal identifiers the subject names (`serialNumber`, `organizationIdentifier`),
    /// reduced by [`bare_id`].
    ids: Vec<String>,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("subject", &self.subject)
            .field("issuer", &self.issuer)
            .field("serial", &self.serial)
            .field("key", &"<private>")
            .finish()
    }
}

impl Signer {
    /// The first private key of a PKCS #12 file (`.p12`/`.pfx`) and its certificate.
    pub fn from_pkcs12(der: &[u8], password: &str) -> Result<Self, SignError> {
        let store = p12_keystore::KeyStore::from_pkcs12(
            der,
            password,
            p12_keystore::Pkcs12ImportPolicy::Relaxed,
        )
        .map_err(|e| err(format!("the PKCS#12 file cannot be opened ({e})")))?;
        let (_, chain) = store
            .private_key_chain()
            .ok_or_else(|| err("the PKCS#12 file holds no private key with its certificate"))?;
        let cert = chain
            .certs()
            .first()
            .ok_or_else(|| err("the PKCS#12 file holds a private key without its certificate"))?;
        Self::new(chain.key().as_der(), cert.as_der())
    }

    /// A signer from a PKCS #8 private key (RSA or ECDSA P-256) and its certificate (DER).
    pub fn new(pkcs8: &[u8], cert: &[u8]) -> Result<Self, SignError> {
        let key = match RsaKeyPair::from_pkcs8(pkcs8) {
            Ok(key) => Key::Rsa(key),
            Err(_) => EcdsaKeyPair::from_pkcs8(
                &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
                pkcs8,
                &SystemRandom::new(),
            )
            .map(Key::Ecdsa)
            .map_err(|_| err("the private key is neither RSA nor ECDSA P-256"))?,
        };
        let parsed = x509_cert::Certificate::from_der(cert)
            .map_err(|e| err(format!("the certificate cannot be read ({e})")))?;
        let tbs = parsed.tbs_certificate();
        let ids = tbs
            .subject()
            .iter()
            .filter(|a| a.oid == SERIAL_NUMBER || a.oid == ORGANIZATION_IDENTIFIER)
            .filter_map(|a| std::str::from_utf8(a.value.value()).ok())
            .map(bare_id)
            .collect();
        Ok(Self {
            key,
            cert: cert.to_vec(),
            issuer: tbs.issuer().to_string(),
            serial: decimal(tbs.serial_number().as_bytes()),
            subject: tbs.subject().to_string(),
            ids,
        })
    }

    /// The certificate's subject (RFC 4514), for logs.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Whether the certificate names the fiscal id `tax_id` (in its subject's
    /// `serialNumber` or `organizationIdentifier`, e.g. `IDCES-12345678Z`, `VATES-B12345674`).
    pub fn names(&self, tax_id: &str) -> bool {
        let wanted = bare_id(tax_id);
        !wanted.is_empty() && self.ids.contains(&wanted)
    }

    fn algorithm(&self) -> &'static str {
        match self.key {
            Key::Rsa(_) => RSA_SHA256,
            Key::Ecdsa(_) => ECDSA_SHA256,
        }
    }

    fn sign(&self, message: &[u8]) -> Result<Vec<u8>, SignError> {
        let rng = SystemRandom::new();
        match &self.key {
            Key::Rsa(key) => {
                let mut out = vec![0; key.public().modulus_len()];
                key.sign(&signature::RSA_PKCS1_SHA256, &rng, message, &mut out)
                    .map_err(|_| err("the RSA signature failed"))?;
                Ok(out)
            }
            Key::Ecdsa(key) => key
                .sign(&rng, message)
                .map(|s| s.as_ref().to_vec())
                .map_err(|_| err("the ECDSA signature failed")),
        }
    }
}

/// A fiscal identifier without an ETSI semantics prefix (`IDCES-`, `VATES-`...), separators
/// or a leading two-letter country code, in upper case: `VATES-B12345674` and `ESB12345674`
/// are both `B12345674`.
fn bare_id(id: &str) -> String {
    let upper = id.trim().to_ascii_uppercase();
    let b = upper.as_bytes();
    let unprefixed = if b.len() > 6 && b[..5].iter().all(u8::is_ascii_uppercase) && b[5] == b'-' {
        &upper[6..]
    } else {
        &upper[..]
    };
    let compact: String = unprefixed
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    let cb = compact.as_bytes();
    if cb.len() > 4
        && cb[..2].iter().all(u8::is_ascii_alphabetic)
        && cb[2..].iter().any(u8::is_ascii_digit)
    {
        // `ESB12345674`: drop the country code only when what follows looks like an id
        // (Spanish CIFs start with a letter too, so `B1234...` stays as it is).
        let rest = &compact[2..];
        if rest.len() >= 8 {
            return rest.to_owned();
        }
    }
    compact
}

/// A big-endian unsigned integer in decimal.
fn decimal(bytes: &[u8]) -> String {
    let mut digits: Vec<u8> = vec![0];
    for &byte in bytes {
        let mut carry = u32::from(byte);
        for d in digits.iter_mut() {
            let v = u32::from(*d) * 256 + carry;
            *d = (v % 10) as u8;
            carry = v / 10;
        }
        while carry > 0 {
            digits.push((carry % 10) as u8);
            carry /= 10;
        }
    }
    while digits.len() > 1 && digits.last() == Some(&0) {
        digits.pop();
    }
    digits.iter().rev().map(|d| char::from(b'0' + d)).collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn digest(bytes: &[u8]) -> String {
    BASE64.encode(Sha256::digest(bytes))
}

fn reference(
    id: Option<&str>,
    uri: &str,
    kind: Option<&str>,
    enveloped: bool,
    value: &str,
) -> String {
    let id = id.map(|i| format!(" Id=\"{i}\"")).unwrap_or_default();
    let kind = kind.map(|t| format!(" Type=\"{t}\"")).unwrap_or_default();
    let envelope = if enveloped {
        format!("<ds:Transform Algorithm=\"{ENVELOPED}\"/>")
    } else {
        String::new()
    };
    format!(
        "<ds:Reference{id}{kind} URI=\"{uri}\"><ds:Transforms>{envelope}\
         <ds:Transform Algorithm=\"{EXC_C14N}\"/></ds:Transforms>\
         <ds:DigestMethod Algorithm=\"{SHA256}\"/><ds:DigestValue>{value}</ds:DigestValue>\
         </ds:Reference>"
    )
}

fn signed_info(algorithm: &str, digests: [&str; 3]) -> String {
    format!(
        "<ds:SignedInfo><ds:CanonicalizationMethod Algorithm=\"{EXC_C14N}\"/>\
         <ds:SignatureMethod Algorithm=\"{algorithm}\"/>{}{}{}</ds:SignedInfo>",
        reference(Some(DOCUMENT_REF_ID), "", None, true, digests[0]),
        reference(
            None,
            &format!("#{SIGNED_PROPERTIES_ID}"),
            Some(SIGNED_PROPERTIES_TYPE),
            false,
            digests[1]
        ),
        reference(None, &format!("#{KEY_INFO_ID}"), None, false, digests[2]),
    )
}

fn signed_properties(signer: &Signer, signing_time: DateTime<Utc>) -> String {
    format!(
        "<xades:SignedProperties Id=\"{SIGNED_PROPERTIES_ID}\"><xades:SignedSignatureProperties>\
         <xades:SigningTime>{time}</xades:SigningTime>\
         <xades:SigningCertificate><xades:Cert><xades:CertDigest>\
         <ds:DigestMethod Algorithm=\"{SHA256}\"/><ds:DigestValue>{cert_digest}</ds:DigestValue>\
         </xades:CertDigest><xades:IssuerSerial><ds:X509IssuerName>{issuer}</ds:X509IssuerName>\
         <ds:X509SerialNumber>{serial}</ds:X509SerialNumber></xades:IssuerSerial></xades:Cert>\
         </xades:SigningCertificate>\
         <xades:SignaturePolicyIdentifier><xades:SignaturePolicyId><xades:SigPolicyId>\
         <xades:Identifier>{POLICY_URL}</xades:Identifier>\
         <xades:Description>{POLICY_DESCRIPTION}</xades:Description></xades:SigPolicyId>\
         <xades:SigPolicyHash><ds:DigestMethod Algorithm=\"{SHA1}\"/>\
         <ds:DigestValue>{POLICY_SHA1}</ds:DigestValue></xades:SigPolicyHash>\
         </xades:SignaturePolicyId></xades:SignaturePolicyIdentifier>\
         <xades:SignerRole><xades:ClaimedRoles><xades:ClaimedRole>emisor</xades:ClaimedRole>\
         </xades:ClaimedRoles></xades:SignerRole></xades:SignedSignatureProperties>\
         <xades:SignedDataObjectProperties>\
         <xades:DataObjectFormat ObjectReference=\"#{DOCUMENT_REF_ID}\">\
         <xades:Description>Factura electrónica</xades:Description>\
         <xades:MimeType>text/xml</xades:MimeType></xades:DataObjectFormat>\
         </xades:SignedDataObjectProperties></xades:SignedProperties>",
        time = signing_time.to_rfc3339_opts(SecondsFormat::Secs, true),
        cert_digest = digest(&signer.cert),
        issuer = escape(&signer.issuer),
        serial = signer.serial,
    )
}

/// `xml` with the signature as the last child of its document element.
fn with_signature(
    xml: &str,
    end: usize,
    signed_info: &str,
    value: &str,
    key_info: &str,
    properties: &str,
) -> String {
    let signature = format!(
        "<ds:Signature xmlns:ds=\"{DS}\" Id=\"{SIGNATURE_ID}\">{signed_info}\
         <ds:SignatureValue Id=\"Signature-SignatureValue\">{value}</ds:SignatureValue>{key_info}\
         <ds:Object><xades:QualifyingProperties xmlns:xades=\"{XADES}\" Target=\"#{SIGNATURE_ID}\">\
         {properties}</xades:QualifyingProperties></ds:Object></ds:Signature>"
    );
    let mut out = String::with_capacity(xml.len() + signature.len());
    out.push_str(&xml[..end]);
    out.push_str(&signature);
    out.push_str(&xml[end..]);
    out
}

/// The canonical form of the element with `Id="id"` in `xml`, or of the whole document
/// without the signature when `id` is `None`.
fn canonical(xml: &str, id: Option<&str>) -> Result<String, SignError> {
    let doc = roxmltree::Document::parse(xml)
        .map_err(|e| err(format!("the signed document does not parse ({e})")))?;
    let signature = doc
        .descendants()
        .find(|n| n.tag_name().namespace() == Some(DS) && n.tag_name().name() == "Signature")
        .ok_or_else(|| err("the signature is missing"))?;
    Ok(match id {
        None => canonicalize(xml, doc.root(), Some(signature.id())),
        Some(id) => {
            let apex = signature
                .descendants()
                .find(|n| n.attribute("Id") == Some(id))
                .ok_or_else(|| err(format!("no element {id}")))?;
            canonicalize(xml, apex, None)
        }
    })
}

/// The Facturae document `xml` signed by `signer` at `signing_time` (XAdES-EPES).
pub fn sign_facturae(
    xml: &str,
    signer: &Signer,
    signing_time: DateTime<Utc>,
) -> Result<String, SignError> {
    let end = xml
        .rfind("</fe:Facturae>")
        .ok_or_else(|| err("not a Facturae document"))?;
    let key_info = format!(
        "<ds:KeyInfo Id=\"{KEY_INFO_ID}\"><ds:X509Data><ds:X509Certificate>{}\
         </ds:X509Certificate></ds:X509Data></ds:KeyInfo>",
        BASE64.encode(&signer.cert)
    );
    let properties = signed_properties(signer, signing_time);
    let algorithm = signer.algorithm();
    // The referenced parts, digested as a verifier will read them.
    let draft = with_signature(
        xml,
        end,
        &signed_info(algorithm, ["", "", ""]),
        "",
        &key_info,
        &properties,
    );
    let document = digest(canonical(&draft, None)?.as_bytes());
    let props = digest(canonical(&draft, Some(SIGNED_PROPERTIES_ID))?.as_bytes());
    let key = digest(canonical(&draft, Some(KEY_INFO_ID))?.as_bytes());
    let info = signed_info(algorithm, [&document, &props, &key]);
    // SignedInfo as it will be read: with its digests, inside the document.
    let unsigned = with_signature(xml, end, &info, "", &key_info, &properties);
    let doc = roxmltree::Document::parse(&unsigned)
        .map_err(|e| err(format!("the signed document does not parse ({e})")))?;
    let info_node = doc
        .descendants()
        .find(|n| n.tag_name().namespace() == Some(DS) && n.tag_name().name() == "SignedInfo")
        .ok_or_else(|| err("no SignedInfo"))?;
    let value = signer.sign(canonicalize(&unsigned, info_node, None).as_bytes())?;
    Ok(with_signature(
        xml,
        end,
        &info,
        &BASE64.encode(value),
        &key_info,
        &properties,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_numbers_are_written_in_decimal() {
        assert_eq!(decimal(&[]), "0");
        assert_eq!(decimal(&[0]), "0");
        assert_eq!(decimal(&[1, 0]), "256");
        assert_eq!(decimal(&[0x01, 0xE2, 0x40]), "123456");
        assert_eq!(
            decimal(&[0xFF; 16]),
            "340282366920938463463374607431768211455"
        );
    }

    #[test]
    fn fiscal_ids_compare_without_prefixes_and_separators() {
        assert_eq!(bare_id("VATES-B12345674"), "B12345674");
        assert_eq!(bare_id("IDCES-12345678Z"), "12345678Z");
        assert_eq!(bare_id("ESB12345674"), "B12345674");
        assert_eq!(bare_id("B-1234567.4"), "B12345674");
        assert_eq!(bare_id("IE6388047V"), "6388047V");
        assert_eq!(bare_id("VATIE-IE6388047V"), "6388047V");
        assert_eq!(bare_id(" 12345678z "), "12345678Z");
    }
}
