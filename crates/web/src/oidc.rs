//! Sign-in through an OpenID Connect provider: the authorization code flow with
//! PKCE, `state` and `nonce`, and the ID token checked against the provider's
//! keys (its JWKS for RS/ES/PS algorithms, the client secret for HS ones), its
//! issuer, audience and expiry. Configured by `INVOICING_OIDC_ISSUER`,
//! `INVOICING_OIDC_CLIENT_ID` and `INVOICING_OIDC_CLIENT_SECRET`.

use std::time::Duration;

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, DecodingKey, Validation, jwk::JwkSet};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use tokio::sync::OnceCell;

/// Where the provider is and who this service is to it.
#[derive(Clone)]
pub struct OidcConfig {
    /// The issuer URL; `<issuer>/.well-known/openid-configuration` describes it.
    pub issuer: String,
    pub client_id: String,
    /// Never logged.
    pub client_secret: String,
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &"(set)")
            .finish()
    }
}

/// The endpoints of the provider's discovery document.
#[derive(Debug, Clone, Deserialize)]
struct Discovery {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: Option<String>,
}

/// What the ID token says about the person.
#[derive(Debug, Clone, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub email: Option<String>,
    pub email_verified: Option<bool>,
    pub name: Option<String>,
    pub nonce: Option<String>,
}

/// A configured provider; discovery is fetched on first use and kept.
pub struct Oidc {
    config: OidcConfig,
    http: reqwest::Client,
    discovery: OnceCell<Discovery>,
}

/// The PKCE challenge of a verifier (S256).
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

fn enc(s: &str) -> String {
    crate::client::enc(s)
}

impl Oidc {
    /// A provider client; the HTTP client verifies TLS with the Mozilla roots.
    pub fn new(config: OidcConfig) -> anyhow::Result<Self> {
        let tls = jobs::aeat::tls_config(None, None).map_err(|e| anyhow::anyhow!(e))?;
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .timeout(Duration::from_secs(15))
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self {
            config,
            http,
            discovery: OnceCell::new(),
        })
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, url: &str) -> Result<T, String> {
        let bytes = self
            .http
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| e.to_string())?
            .bytes()
            .await
            .map_err(|e| e.to_string())?;
        serde_json::from_slice(&bytes).map_err(|e| format!("not the expected JSON: {e}"))
    }

    async fn discovery(&self) -> Result<&Discovery, String> {
        self.discovery
            .get_or_try_init(|| async {
                let url = format!(
                    "{}/.well-known/openid-configuration",
                    self.config.issuer.trim_end_matches('/')
                );
                let d: Discovery = self
                    .get_json(&url)
                    .await
                    .map_err(|e| format!("the identity provider's discovery at {url}: {e}"))?;
                if d.issuer.trim_end_matches('/') != self.config.issuer.trim_end_matches('/') {
                    return Err(format!(
                        "the discovery document names issuer `{}`, not the configured `{}`",
                        d.issuer, self.config.issuer
                    ));
                }
                Ok(d)
            })
            .await
    }

    /// The provider's sign-in page for this flow.
    pub async fn authorize_url(
        &self,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        verifier: &str,
    ) -> Result<String, String> {
        let d = self.discovery().await?;
        let sep = if d.authorization_endpoint.contains('?') {
            '&'
        } else {
            '?'
        };
        Ok(format!(
            "{}{sep}response_type=code&scope=openid%20email%20profile&client_id={}&redirect_uri={}\
             &state={}&nonce={}&code_challenge={}&code_challenge_method=S256",
            d.authorization_endpoint,
            enc(&self.config.client_id),
            enc(redirect_uri),
            enc(state),
            enc(nonce),
            enc(&challenge(verifier)),
        ))
    }

    /// Exchanges the code for tokens and returns the checked claims of the ID token.
    pub async fn finish(
        &self,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
        nonce: &str,
    ) -> Result<Claims, String> {
        let d = self.discovery().await?;
        #[derive(Deserialize)]
        struct Tokens {
            id_token: String,
        }
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", self.config.client_id.as_str()),
            ("code_verifier", verifier),
        ]
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&");
        let bytes = self
            .http
            .post(&d.token_endpoint)
            .basic_auth(&self.config.client_id, Some(&self.config.client_secret))
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .body(form)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .map_err(|e| format!("the identity provider refused the code: {e}"))?
            .bytes()
            .await
            .map_err(|e| format!("the identity provider's token answer was cut: {e}"))?;
        let tokens: Tokens = serde_json::from_slice(&bytes)
            .map_err(|e| format!("the identity provider's token answer is not valid: {e}"))?;
        let claims = self.verify(d, &tokens.id_token).await?;
        match &claims.nonce {
            Some(n) if crate::session::same_secret(n, nonce) => Ok(claims),
            _ => Err("the ID token does not carry this sign-in's nonce".into()),
        }
    }

    async fn verify(&self, d: &Discovery, token: &str) -> Result<Claims, String> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| format!("the ID token is malformed: {e}"))?;
        let key = match header.alg {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                DecodingKey::from_secret(self.config.client_secret.as_bytes())
            }
            _ => {
                let uri = d
                    .jwks_uri
                    .as_deref()
                    .ok_or("the provider publishes no keys (jwks_uri)")?;
                let set: JwkSet = self
                    .get_json(uri)
                    .await
                    .map_err(|e| format!("the provider's keys (JWKS): {e}"))?;
                let jwk = match &header.kid {
                    Some(kid) => set.find(kid),
                    None => set.keys.first(),
                }
                .ok_or("no key of the provider matches the ID token")?;
                DecodingKey::from_jwk(jwk).map_err(|e| format!("unusable provider key: {e}"))?
            }
        };
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[d.issuer.as_str()]);
        validation.set_audience(&[self.config.client_id.as_str()]);
        validation.leeway = 60;
        jsonwebtoken::decode::<Claims>(token, &key, &validation)
            .map(|t| t.claims)
            .map_err(|e| format!("the ID token is not valid: {e}"))
    }
}
