//! The HTTP side of VERI*FACTU: the AEAT web service over TLS with the
//! company's (or its adviser's) client certificate, and the power-of-attorney
//! checker.
//!
//! The certificate is a PKCS#12 file (`INVOICING_AEAT_CERT`, password in
//! `INVOICING_AEAT_CERT_PASSWORD`), read with the pure-Rust `p12-keystore` and
//! handed to rustls as the client identity; servers are trusted through the
//! Mozilla roots plus an optional extra CA in PEM (`INVOICING_AEAT_CA`, for a
//! test endpoint).

use std::{path::PathBuf, sync::Arc, time::Duration};

use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, pem::PemObject};

/// The AEAT's VERI*FACTU endpoint of its test environment (WSDL `SistemaVerifactuPruebas`).
pub const ENDPOINT_TEST: &str =
    "https://prewww1.aeat.es/wlpl/TIKE-CONT/ws/SistemaFacturacion/VerifactuSOAP";
/// The AEAT's VERI*FACTU production endpoint (WSDL `SistemaVerifactu`).
pub const ENDPOINT_PRODUCTION: &str =
    "https://www1.agenciatributaria.gob.es/wlpl/TIKE-CONT/ws/SistemaFacturacion/VerifactuSOAP";

/// How to reach the AEAT.
#[derive(Clone)]
pub struct AeatSettings {
    /// The SOAP endpoint.
    pub endpoint: String,
    /// PKCS#12 file with the client certificate and its key.
    pub cert: Option<PathBuf>,
    /// Its password (never logged).
    pub cert_password: Option<String>,
    /// Extra trusted CA certificates (PEM).
    pub ca: Option<PathBuf>,
    /// Longest wait for one answer.
    pub timeout: Duration,
}

impl std::fmt::Debug for AeatSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AeatSettings")
            .field("endpoint", &self.endpoint)
            .field("cert", &self.cert)
            .field("cert_password", &self.cert_password.as_ref().map(|_| "***"))
            .field("ca", &self.ca)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A client certificate chain and its private key, ready for rustls.
pub struct Identity {
    /// The certificate first, then its issuers as found in the file.
    pub chain: Vec<CertificateDer<'static>>,
    /// The certificate's private key (PKCS#8).
    pub key: PrivateKeyDer<'static>,
}

/// Reads the client identity from PKCS#12 (`.p12`/`.pfx`) bytes.
pub fn identity_from_pkcs12(der: &[u8], password: &str) -> Result<Identity, String> {
    let store = p12_keystore::KeyStore::from_pkcs12(
        der,
        password,
        p12_keystore::Pkcs12ImportPolicy::Relaxed,
    )
    .map_err(|e| {
        format!(
            "the PKCS#12 certificate cannot be opened ({e}): check INVOICING_AEAT_CERT_PASSWORD \
             and that the file is a .p12/.pfx with the private key"
        )
    })?;
    let (_, chain) = store.private_key_chain().ok_or_else(|| {
        "the PKCS#12 file holds no private key with its certificate: export the certificate \
         together with its private key"
            .to_owned()
    })?;
    if chain.certs().is_empty() {
        return Err(
            "the PKCS#12 file holds a private key without its certificate: export the certificate \
             together with its private key"
                .into(),
        );
    }
    Ok(Identity {
        chain: chain
            .certs()
            .iter()
            .map(|c| CertificateDer::from(c.as_der().to_vec()))
            .collect(),
        key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec())),
    })
}

/// The rustls configuration: Mozilla roots plus `extra_ca_pem`, and the
/// client identity when given.
pub fn tls_config(
    identity: Option<Identity>,
    extra_ca_pem: Option<&[u8]>,
) -> Result<rustls::ClientConfig, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(pem) = extra_ca_pem {
        let mut added = 0;
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert =
                cert.map_err(|e| format!("INVOICING_AEAT_CA is not a valid PEM file: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("INVOICING_AEAT_CA holds an unusable certificate: {e}"))?;
            added += 1;
        }
        if added == 0 {
            return Err("INVOICING_AEAT_CA holds no PEM certificate".into());
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS set-up failed: {e}"))?
    .with_root_certificates(roots);
    match identity {
        Some(id) => builder.with_client_auth_cert(id.chain, id.key).map_err(|e| {
            format!("the certificate's private key cannot be used for TLS client authentication: {e}")
        }),
        None => Ok(builder.with_no_client_auth()),
    }
}

/// Why a request got no answer to read.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// No answer in time.
    #[error("the AEAT did not answer within {0:?}")]
    Timeout(Duration),
    /// Connection, TLS or protocol failure.
    #[error("the AEAT could not be reached: {0}")]
    Network(String),
    /// An HTTP error status without a SOAP body.
    #[error("the AEAT answered HTTP {status}: {body}")]
    Http {
        /// The status code.
        status: u16,
        /// The start of the body.
        body: String,
    },
}

/// A client for the AEAT's VERI*FACTU SOAP service.
#[derive(Debug, Clone)]
pub struct AeatClient {
    http: reqwest::Client,
    endpoint: String,
    timeout: Duration,
}

impl AeatClient {
    /// Builds the client, reading the certificate and CA files now, so a
    /// wrong path or password stops the worker at start with a clear error.
    pub fn new(settings: &AeatSettings) -> Result<Self, String> {
        let identity = match &settings.cert {
            Some(path) => {
                let der = std::fs::read(path).map_err(|e| {
                    format!("cannot read INVOICING_AEAT_CERT {}: {e}", path.display())
                })?;
                Some(identity_from_pkcs12(
                    &der,
                    settings.cert_password.as_deref().unwrap_or_default(),
                )?)
            }
            None if settings.endpoint.starts_with("https:") => {
                return Err(format!(
                    "the AEAT endpoint {} needs a client certificate: set INVOICING_AEAT_CERT \
                     (PKCS#12) and INVOICING_AEAT_CERT_PASSWORD",
                    settings.endpoint
                ));
            }
            None => None,
        };
        let ca =
            match &settings.ca {
                Some(path) => Some(std::fs::read(path).map_err(|e| {
                    format!("cannot read INVOICING_AEAT_CA {}: {e}", path.display())
                })?),
                None => None,
            };
        let tls = tls_config(identity, ca.as_deref())?;
        Self::with_tls(&settings.endpoint, tls, settings.timeout)
    }

    /// A client with a prepared rustls configuration.
    pub fn with_tls(
        endpoint: &str,
        tls: rustls::ClientConfig,
        timeout: Duration,
    ) -> Result<Self, String> {
        url::Url::parse(endpoint)
            .map_err(|e| format!("INVOICING_AEAT_ENDPOINT `{endpoint}` is not a URL: {e}"))?;
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(30)))
            .build()
            .map_err(|e| format!("the HTTP client cannot be built: {e}"))?;
        Ok(Self {
            http,
            endpoint: endpoint.to_owned(),
            timeout,
        })
    }

    /// The endpoint requests go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Posts a SOAP envelope and returns the answer's body. SOAP faults come
    /// with HTTP 500 and are returned as bodies; other error statuses are errors.
    pub async fn send(&self, envelope: String) -> Result<String, SendError> {
        let response = self
            .http
            .post(&self.endpoint)
            .header("Content-Type", "text/xml; charset=utf-8")
            .header("SOAPAction", "\"\"")
            .body(envelope)
            .send()
            .await
            .map_err(|e| self.classify(&e))?;
        let status = response.status();
        let body = response.text().await.map_err(|e| self.classify(&e))?;
        if status.is_success() || (status.as_u16() == 500 && body.contains("Fault")) {
            Ok(body)
        } else {
            Err(SendError::Http {
                status: status.as_u16(),
                body: body.chars().take(300).collect(),
            })
        }
    }

    fn classify(&self, e: &reqwest::Error) -> SendError {
        if e.is_timeout() {
            SendError::Timeout(self.timeout)
        } else {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            SendError::Network(text)
        }
    }
}

/// Asks whether the AEAT has a power of attorney on record for a company.
pub trait PowerOfAttorneyChecker: Send + Sync {
    /// `Ok(true)` once the AEAT confirms the power of attorney for `nif`.
    fn confirmed<'a>(
        &'a self,
        nif: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<bool>> + Send + 'a>>;
}

/// A checker that asks an HTTP service: `GET <url>?nif=<NIF>` answering JSON
/// `{"confirmed": true|false}` (`INVOICING_AEAT_POA_CHECK_URL`).
#[derive(Debug, Clone)]
pub struct HttpPowerOfAttorneyChecker {
    http: reqwest::Client,
    url: url::Url,
}

impl HttpPowerOfAttorneyChecker {
    /// A checker over `url` (plain HTTP or HTTPS with the Mozilla roots).
    pub fn new(url: &str) -> Result<Self, String> {
        let url = url::Url::parse(url)
            .map_err(|e| format!("INVOICING_AEAT_POA_CHECK_URL `{url}` is not a URL: {e}"))?;
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls_config(None, None)?)
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| format!("the HTTP client cannot be built: {e}"))?;
        Ok(Self { http, url })
    }
}

impl PowerOfAttorneyChecker for HttpPowerOfAttorneyChecker {
    fn confirmed<'a>(
        &'a self,
        nif: &'a str,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = anyhow::Result<bool>> + Send + 'a>>
    {
        Box::pin(async move {
            let mut url = self.url.clone();
            url.query_pairs_mut().append_pair("nif", nif);
            let response = self.http.get(url).send().await?;
            let status = response.status();
            let body = response.text().await?;
            if !status.is_success() {
                anyhow::bail!(
                    "the power-of-attorney checker answered HTTP {status}: {}",
                    body.chars().take(200).collect::<String>()
                );
            }
            let v: serde_json::Value = serde_json::from_str(&body).map_err(|e| {
                anyhow::anyhow!("the power-of-attorney checker did not answer JSON: {e}")
            })?;
            v["confirmed"].as_bool().ok_or_else(|| {
                anyhow::anyhow!(
                    "the power-of-attorney checker's JSON lacks a boolean `confirmed`: {body}"
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate and key in a PKCS#12 made here (never committed).
    fn pkcs12(password: &str) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["B12345674.test".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let chain = p12_keystore::PrivateKeyChain::new(
            "client-key",
            p12_keystore::PrivateKey::from_der(&key.serialize_der()).unwrap(),
            [p12_keystore::Certificate::from_der(cert.der()).unwrap()],
        );
        let mut store = p12_keystore::KeyStore::new();
        store.add_entry(
            "client",
            p12_keystore::KeyStoreEntry::PrivateKeyChain(chain),
        );
        store.writer(password).write().unwrap()
    }

    #[test]
    fn a_pkcs12_identity_becomes_a_tls_client_identity() {
        let der = pkcs12("s3cret");
        let id = identity_from_pkcs12(&der, "s3cret").unwrap();
        assert_eq!(id.chain.len(), 1);
        let config = tls_config(Some(id), None).unwrap();
        assert!(config.client_auth_cert_resolver.has_certs());
        let wrong = identity_from_pkcs12(&der, "wrong").err().unwrap();
        assert!(wrong.contains("INVOICING_AEAT_CERT_PASSWORD"), "{wrong}");
        assert!(identity_from_pkcs12(b"not a p12", "x").is_err());
    }

    #[test]
    fn the_client_reads_its_files_at_start() {
        let dir = tempfile_dir();
        let p12 = dir.join("cert.p12");
        std::fs::write(&p12, pkcs12("pw")).unwrap();
        let mut settings = AeatSettings {
            endpoint: ENDPOINT_TEST.into(),
            cert: Some(p12),
            cert_password: Some("pw".into()),
            ca: None,
            timeout: Duration::from_secs(5),
        };
        AeatClient::new(&settings).unwrap();
        assert!(!format!("{settings:?}").contains("pw\""));
        settings.ca = Some(dir.join("missing.pem"));
        let e = AeatClient::new(&settings).unwrap_err();
        assert!(e.contains("INVOICING_AEAT_CA"), "{e}");
        let bad_ca = dir.join("bad.pem");
        std::fs::write(&bad_ca, "not pem").unwrap();
        settings.ca = Some(bad_ca);
        assert!(AeatClient::new(&settings).is_err());
        settings.ca = None;
        settings.cert = None;
        let e = AeatClient::new(&settings).unwrap_err();
        assert!(e.contains("INVOICING_AEAT_CERT"), "{e}");
        settings.endpoint = "http://127.0.0.1:9/fake".into();
        AeatClient::new(&settings).unwrap();
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("aeat-test-{}", store::new_id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
