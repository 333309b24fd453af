//! The object identifiers this crate reads.

use der::asn1::ObjectIdentifier as Oid;

/// `id-signedData` (RFC 5652).
pub const SIGNED_DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.2");
/// `id-data`: the content type of a detached PDF signature.
pub const DATA: Oid = Oid::new_unwrap("1.2.840.113549.1.7.1");
/// Signed attribute `contentType`.
pub const CONTENT_TYPE: Oid = Oid::new_unwrap("1.2.840.113549.1.9.3");
/// Signed attribute `messageDigest`.
pub const MESSAGE_DIGEST: Oid = Oid::new_unwrap("1.2.840.113549.1.9.4");
/// Signed attribute `signingTime`.
pub const SIGNING_TIME: Oid = Oid::new_unwrap("1.2.840.113549.1.9.5");

/// SHA-2 digests (NIST).
pub const SHA256: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.1");
pub const SHA384: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.2");
pub const SHA512: Oid = Oid::new_unwrap("2.16.840.1.101.3.4.2.3");
pub const SHA1: Oid = Oid::new_unwrap("1.3.14.3.2.26");

/// RSA (PKCS #1).
pub const RSA_ENCRYPTION: Oid = Oid::new_unwrap("1.2.840.113549.1.1.1");
pub const SHA256_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.11");
pub const SHA384_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.12");
pub const SHA512_WITH_RSA: Oid = Oid::new_unwrap("1.2.840.113549.1.1.13");
pub const RSASSA_PSS: Oid = Oid::new_unwrap("1.2.840.113549.1.1.10");
pub const MGF1: Oid = Oid::new_unwrap("1.2.840.113549.1.1.8");

/// ECDSA (RFC 5758); `id-ecPublicKey` is also seen as a CMS signature algorithm.
pub const EC_PUBLIC_KEY: Oid = Oid::new_unwrap("1.2.840.10045.2.1");
pub const ECDSA_SHA256: Oid = Oid::new_unwrap("1.2.840.10045.4.3.2");
pub const ECDSA_SHA384: Oid = Oid::new_unwrap("1.2.840.10045.4.3.3");
pub const ECDSA_SHA512: Oid = Oid::new_unwrap("1.2.840.10045.4.3.4");

/// Subject attributes that carry a person's or an entity's identifier (ETSI EN 319 412-1).
pub const SERIAL_NUMBER: Oid = Oid::new_unwrap("2.5.4.5");
pub const ORGANIZATION_IDENTIFIER: Oid = Oid::new_unwrap("2.5.4.97");
pub const COMMON_NAME: Oid = Oid::new_unwrap("2.5.4.3");

/// DER contents (no tag, no length) of the extended key usages that allow signing documents.
pub mod eku {
    /// `anyExtendedKeyUsage` 2.5.29.37.0.
    pub const ANY: &[u8] = &[0x55, 0x1d, 0x25, 0x00];
    /// `id-kp-clientAuth` 1.3.6.1.5.5.7.3.2 (Spanish citizen certificates carry it).
    pub const CLIENT_AUTH: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x02];
    /// `id-kp-emailProtection` 1.3.6.1.5.5.7.3.4 (S/MIME and document signing).
    pub const EMAIL_PROTECTION: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x04];
    /// `id-kp-documentSigning` 1.3.6.1.5.5.7.3.36 (RFC 9336).
    pub const DOCUMENT_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x24];
    /// Microsoft document signing 1.3.6.1.4.1.311.10.3.12.
    pub const MS_DOCUMENT_SIGNING: &[u8] =
        &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x0a, 0x03, 0x0c];
    /// Adobe Authentic Documents Trust 1.2.840.113583.1.1.5.
    pub const ADOBE_AUTHENTIC_DOCUMENTS: &[u8] =
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x2f, 0x01, 0x01, 0x05];
    /// All of them.
    pub const SIGNING: &[&[u8]] = &[
        ANY,
        CLIENT_AUTH,
        EMAIL_PROTECTION,
        DOCUMENT_SIGNING,
        MS_DOCUMENT_SIGNING,
        ADOBE_AUTHENTIC_DOCUMENTS,
    ];
}
