//! Signed, expiring download links: a report's PDF opens in a browser without a bearer
//! token when the link carries a valid signature that has not expired.
//!
//! The signature is HMAC-SHA256 with the server's secret key over `report:{id}:{expires}`,
//! in unpadded URL-safe base64. A deleted report answers 404 whatever the signature.

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// How long a mailed link works.
pub const LINK_DAYS: i64 = 7;

/// The server's secret for signed links; never printed.
#[derive(Clone)]
pub struct SecretKey(Arc<[u8]>);

impl SecretKey {
    /// Wraps key bytes (at least 32 are expected).
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Self(Arc::from(bytes.into()))
    }
}

impl SecretKey {
    /// HMAC-SHA256 of `message` for another use than download links (say,
    /// the web sign-in form's token), unpadded URL-safe base64. `purpose` keeps
    /// the uses apart: what is signed is `purpose:{purpose}:{message}`, which no
    /// download link (`report:...`) can equal.
    pub fn sign_for(&self, purpose: &str, message: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(format!("purpose:{purpose}:{message}").as_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }
}

impl Default for SecretKey {
    /// A random key for this process: links it signs stop working when the process ends.
    fn default() -> Self {
        use rand::RngCore as _;
        let mut bytes = vec![0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self::new(bytes)
    }
}

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(..)")
    }
}

fn mac(key: &SecretKey, report_id: &str, expires: i64) -> Hmac<Sha256> {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key.0)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("report:{report_id}:{expires}").as_bytes());
    mac
}

/// The signature of a link to `report_id` valid until `expires` (Unix seconds).
pub fn sign(key: &SecretKey, report_id: &str, expires: i64) -> String {
    URL_SAFE_NO_PAD.encode(mac(key, report_id, expires).finalize().into_bytes())
}

/// A value derived from the key for one purpose: HMAC-SHA256 over `derive:{label}` (never
/// the form of a link's message), in unpadded URL-safe base64. Processes that share the
/// key compute the same value; it reveals nothing of the key.
pub fn derive(key: &SecretKey, label: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key.0)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("derive:{label}").as_bytes());
    URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// Why a signed link is refused.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    #[error("this download link is not valid; open the report from the app or ask for a new link")]
    BadSignature,
    #[error(
        "this download link expired; generate the report again or download it with an API token"
    )]
    Expired,
}

/// Checks a link's signature (in constant time) and its expiry against `now` (Unix seconds).
pub fn verify(
    key: &SecretKey,
    report_id: &str,
    expires: i64,
    signature: &str,
    now: i64,
) -> Result<(), LinkError> {
    let given = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| LinkError::BadSignature)?;
    let expected = mac(key, report_id, expires).finalize().into_bytes();
    if !bool::from(expected[..].ct_eq(&given)) {
        return Err(LinkError::BadSignature);
    }
    if now >= expires {
        return Err(LinkError::Expired);
    }
    Ok(())
}

/// The full link: `{public_url}/v1/reports/{id}/pdf?expires=..&signature=..`.
pub fn url(key: &SecretKey, public_url: &str, report_id: &str, expires: i64) -> String {
    format!(
        "{}/v1/reports/{report_id}/pdf?expires={expires}&signature={}",
        public_url.trim_end_matches('/'),
        sign(key, report_id, expires)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_works_until_it_expires_and_only_for_its_report() {
        let key = SecretKey::new(vec![7u8; 32]);
        let sig = sign(&key, "r1", 1_000);
        assert_eq!(verify(&key, "r1", 1_000, &sig, 999), Ok(()));
        assert_eq!(
            verify(&key, "r1", 1_000, &sig, 1_000),
            Err(LinkError::Expired)
        );
        assert_eq!(
            verify(&key, "r2", 1_000, &sig, 10),
            Err(LinkError::BadSignature)
        );
        // Moving the expiry breaks the signature.
        assert_eq!(
            verify(&key, "r1", 9_999, &sig, 10),
            Err(LinkError::BadSignature)
        );
        let other = SecretKey::new(vec![8u8; 32]);
        assert_eq!(
            verify(&other, "r1", 1_000, &sig, 10),
            Err(LinkError::BadSignature)
        );
        assert_eq!(
            verify(&key, "r1", 1_000, "%%%", 10),
            Err(LinkError::BadSignature)
        );
        assert!(
            url(&key, "https://x.test/", "r1", 5)
                .starts_with("https://x.test/v1/reports/r1/pdf?expires=5&signature=")
        );
    }
}
