//! Typed settings from `INVOICING_*` environment variables over an optional TOML file.

use std::path::PathBuf;

use serde::Deserialize;

/// Every setting the binary reads; secrets never appear in `Debug`.
#[derive(Clone, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    pub database_url: Option<String>,
    pub http_addr: Option<String>,
    pub data_dir: Option<PathBuf>,
    /// Where receipts and report PDFs keep their bytes: unset for the database,
    /// `s3://bucket/prefix` (credentials from `AWS_*`) or `file:///dir`.
    pub storage_url: Option<String>,
    pub public_url: Option<String>,
    pub log_format: Option<String>,
    pub fx_url: Option<String>,
    pub aeat_mode: Option<String>,
    /// The AEAT SOAP endpoint (default: the mode's official URL).
    pub aeat_endpoint: Option<String>,
    /// PKCS#12 file with the client certificate for the AEAT.
    pub aeat_cert: Option<PathBuf>,
    /// Its password (never shown).
    pub aeat_cert_password: Option<String>,
    /// Extra trusted CA certificates (PEM) for the AEAT endpoint.
    pub aeat_ca: Option<PathBuf>,
    /// Service answering `GET ?nif=...` with `{"confirmed": bool}` for powers of attorney.
    pub aeat_poa_check_url: Option<String>,
    /// Extra roots (PEM) a signed authorization document may chain to.
    pub aeat_signature_trust: Option<PathBuf>,
    /// Whether the shipped Spanish roots are trusted too (default true).
    pub aeat_signature_trust_bundled: Option<bool>,
    /// SMTP connection URL (may carry credentials: never shown).
    pub smtp_url: Option<String>,
    pub mail_from: Option<String>,
    /// Key for signed links (at least 32 characters; never shown). Unset: generated once
    /// into `<data dir>/secret.key`.
    pub secret_key: Option<String>,
    /// Longest a report may take to render, in seconds (default 60).
    pub report_timeout_secs: Option<u64>,
    /// Requests per minute per API token (default 1200; 0: unlimited).
    pub rate_limit_per_minute: Option<u32>,
    /// Report renders a company may have queued or running (default 50).
    pub max_queued_reports: Option<u32>,
    /// Longest a request waits for a render slot before a 503, in seconds (default 20).
    pub render_wait_secs: Option<u64>,
    /// Longest a token lookup is kept in memory on PostgreSQL, in milliseconds (default
    /// 1000; 0: none). PostgreSQL's notifications end it sooner (`store::token_cache`).
    pub token_cache_ms: Option<u64>,
    /// How often the worker looks for due reminders and recurring periods, in seconds
    /// (default 30).
    pub schedule_seconds: Option<u64>,
    /// Percent of the render and snippet slots one company may hold (default 50).
    pub render_company_share_percent: Option<u32>,
    /// PDF renders at once (default two per core).
    pub render_slots: Option<usize>,
    /// Jobs running company Typst snippets at once, each a child process of up to 2 GiB
    /// (default one per core, at least two, at most eight).
    pub snippet_slots: Option<usize>,
    /// Longest a client may take to send a request's headers, in seconds (default 10).
    pub http_header_timeout_secs: Option<u64>,
    /// Longest a connection may stay open without a request under way, in seconds (default 60).
    pub http_idle_timeout_secs: Option<u64>,
    /// Connections served at once per listener; past it new ones get a 503 (default 1024).
    pub http_max_connections: Option<usize>,
    /// Listen address of the MCP server (`invoicing mcp`, or `serve`'s child).
    pub mcp_addr: Option<String>,
    /// Base URL of the HTTP API the MCP server calls.
    pub api_url: Option<String>,
    /// Comma-separated host names the MCP server accepts in `Host` (`*`: any).
    pub mcp_allowed_hosts: Option<String>,
    /// `INVOICING_MCP_ALLOWED_ORIGINS`: browser origins the MCP server accepts.
    pub mcp_allowed_origins: Option<String>,
    /// `INVOICING_MCP_PUBLIC_URL`: the MCP endpoint's public URL, the `resource` MCP clients
    /// get OAuth tokens for (default `http://<INVOICING_MCP_ADDR>/mcp`).
    pub mcp_public_url: Option<String>,
    /// OpenID Connect issuer URL for web sign-in of `oauth` members.
    pub oidc_issuer: Option<String>,
    /// This service's client id at that provider.
    pub oidc_client_id: Option<String>,
    /// Its client secret (never shown).
    pub oidc_client_secret: Option<String>,
    /// Reverse proxies (IP addresses and networks, comma-separated) whose
    /// `Forwarded`/`X-Forwarded-For` headers name the client for sign-in throttling.
    pub trusted_proxies: Option<String>,
    /// Pending AI requests per company (default 500).
    pub ai_pending_max_entries: Option<i64>,
    /// Bytes of pending AI request bodies per company (default 512 MiB).
    pub ai_pending_max_bytes: Option<i64>,
    /// Pending AI requests per token (default 100).
    pub ai_pending_max_entries_per_token: Option<i64>,
    /// Bytes of pending AI request bodies per token (default 128 MiB).
    pub ai_pending_max_bytes_per_token: Option<i64>,
    /// Days a pending AI request waits for review before it expires (default 14).
    pub ai_pending_ttl_days: Option<i64>,
}

impl std::fmt::Debug for Settings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Settings")
            .field(
                "database_url",
                &self.database_url.as_deref().map(store::db::redact_url),
            )
            .field("http_addr", &self.http_addr)
            .field("data_dir", &self.data_dir)
            .field(
                "storage_url",
                &self.storage_url.as_deref().map(store::db::redact_url),
            )
            .field("public_url", &self.public_url)
            .field("fx_url", &self.fx_url)
            .field("aeat_mode", &self.aeat_mode)
            .field("aeat_endpoint", &self.aeat_endpoint)
            .field("aeat_cert", &self.aeat_cert)
            .field(
                "aeat_cert_password",
                &self.aeat_cert_password.as_ref().map(|_| "***"),
            )
            .field("aeat_ca", &self.aeat_ca)
            .field("aeat_poa_check_url", &self.aeat_poa_check_url)
            .field("aeat_signature_trust", &self.aeat_signature_trust)
            .field(
                "aeat_signature_trust_bundled",
                &self.aeat_signature_trust_bundled,
            )
            .field(
                "smtp_url",
                &self.smtp_url.as_deref().map(store::db::redact_url),
            )
            .field("mail_from", &self.mail_from)
            .field("secret_key", &self.secret_key.as_ref().map(|_| "(set)"))
            .field("report_timeout_secs", &self.report_timeout_secs)
            .field("rate_limit_per_minute", &self.rate_limit_per_minute)
            .field("max_queued_reports", &self.max_queued_reports)
            .field("render_wait_secs", &self.render_wait_secs)
            .field("token_cache_ms", &self.token_cache_ms)
            .field("schedule_seconds", &self.schedule_seconds)
            .field(
                "render_company_share_percent",
                &self.render_company_share_percent,
            )
            .field("render_slots", &self.render_slots)
            .field("snippet_slots", &self.snippet_slots)
            .field("http_header_timeout_secs", &self.http_header_timeout_secs)
            .field("http_idle_timeout_secs", &self.http_idle_timeout_secs)
            .field("http_max_connections", &self.http_max_connections)
            .field("mcp_addr", &self.mcp_addr)
            .field("api_url", &self.api_url)
            .field("mcp_allowed_hosts", &self.mcp_allowed_hosts)
            .field("mcp_allowed_origins", &self.mcp_allowed_origins)
            .field("mcp_public_url", &self.mcp_public_url)
            .field("oidc_issuer", &self.oidc_issuer)
            .field("oidc_client_id", &self.oidc_client_id)
            .field(
                "oidc_client_secret",
                &self.oidc_client_secret.as_ref().map(|_| "(set)"),
            )
            .field("trusted_proxies", &self.trusted_proxies)
            .field("ai_pending_max_entries", &self.ai_pending_max_entries)
            .field("ai_pending_max_bytes", &self.ai_pending_max_bytes)
            .field(
                "ai_pending_max_entries_per_token",
                &self.ai_pending_max_entries_per_token,
            )
            .field(
                "ai_pending_max_bytes_per_token",
                &self.ai_pending_max_bytes_per_token,
            )
            .field("ai_pending_ttl_days", &self.ai_pending_ttl_days)
            .finish()
    }
}

/// Reads the whole number in the environment variable `name` into `slot`, if set.
fn number<T: std::str::FromStr>(slot: &mut Option<T>, name: &str) -> anyhow::Result<()> {
    if let Some(v) = std::env::var(name).ok().filter(|v| !v.is_empty()) {
        *slot = Some(
            v.trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("{name} must be a whole number, got `{v}`"))?,
        );
    }
    Ok(())
}

impl Settings {
    /// Reads the TOML file named by `--config`/`INVOICING_CONFIG` (if any), then lets
    /// each `INVOICING_*` variable override it.
    pub fn load(config_file: Option<&std::path::Path>) -> anyhow::Result<Self> {
        let mut s = match config_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    anyhow::anyhow!("cannot read the config file {}: {e}", path.display())
                })?;
                toml::from_str(&text).map_err(|e| {
                    anyhow::anyhow!("the config file {} is not valid: {e}", path.display())
                })?
            }
            None => Settings::default(),
        };
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if let Some(v) = env("INVOICING_DATABASE_URL") {
            s.database_url = Some(v);
        }
        if let Some(v) = env("INVOICING_HTTP_ADDR") {
            s.http_addr = Some(v);
        }
        if let Some(v) = env("INVOICING_DATA_DIR") {
            s.data_dir = Some(v.into());
        }
        if let Some(v) = env("INVOICING_STORAGE_URL") {
            s.storage_url = Some(v);
        }
        if let Some(v) = env("INVOICING_PUBLIC_URL") {
            s.public_url = Some(v);
        }
        if let Some(v) = env("INVOICING_LOG_FORMAT") {
            s.log_format = Some(v);
        }
        if let Some(v) = env("INVOICING_AEAT_MODE") {
            s.aeat_mode = Some(v);
        }
        if let Some(v) = env("INVOICING_AEAT_ENDPOINT") {
            s.aeat_endpoint = Some(v);
        }
        if let Some(v) = env("INVOICING_AEAT_CERT") {
            s.aeat_cert = Some(v.into());
        }
        if let Some(v) = env("INVOICING_AEAT_CERT_PASSWORD") {
            s.aeat_cert_password = Some(v);
        }
        if let Some(v) = env("INVOICING_AEAT_CA") {
            s.aeat_ca = Some(v.into());
        }
        if let Some(v) = env("INVOICING_AEAT_POA_CHECK_URL") {
            s.aeat_poa_check_url = Some(v);
        }
        if let Some(v) = env("INVOICING_AEAT_SIGNATURE_TRUST") {
            s.aeat_signature_trust = Some(v.into());
        }
        if let Some(v) = env("INVOICING_AEAT_SIGNATURE_TRUST_BUNDLED") {
            s.aeat_signature_trust_bundled = Some(match v.as_str() {
                "true" | "1" => true,
                "false" | "0" => false,
                _ => anyhow::bail!("INVOICING_AEAT_SIGNATURE_TRUST_BUNDLED must be true or false"),
            });
        }
        if let Some(v) = env("INVOICING_SMTP_URL") {
            s.smtp_url = Some(v);
        }
        if let Some(v) = env("INVOICING_MAIL_FROM") {
            s.mail_from = Some(v);
        }
        if let Some(v) = env("INVOICING_RATE_LIMIT_PER_MINUTE") {
            s.rate_limit_per_minute = Some(v.parse().map_err(|_| {
                anyhow::anyhow!(
                    "INVOICING_RATE_LIMIT_PER_MINUTE must be a whole number (0: unlimited)"
                )
            })?);
        }
        if let Some(v) = env("INVOICING_SECRET_KEY") {
            s.secret_key = Some(v);
        }
        if let Some(v) = env("INVOICING_REPORT_TIMEOUT_SECS") {
            s.report_timeout_secs = Some(v.parse().map_err(|_| {
                anyhow::anyhow!("INVOICING_REPORT_TIMEOUT_SECS must be a whole number of seconds")
            })?);
        }
        number(&mut s.max_queued_reports, "INVOICING_MAX_QUEUED_REPORTS")?;
        number(&mut s.render_wait_secs, "INVOICING_RENDER_WAIT_SECS")?;
        number(&mut s.token_cache_ms, "INVOICING_TOKEN_CACHE_MS")?;
        number(&mut s.schedule_seconds, "INVOICING_SCHEDULE_SECONDS")?;
        number(
            &mut s.render_company_share_percent,
            "INVOICING_RENDER_COMPANY_SHARE_PERCENT",
        )?;
        number(&mut s.render_slots, "INVOICING_RENDER_SLOTS")?;
        number(&mut s.snippet_slots, "INVOICING_SNIPPET_SLOTS")?;
        number(
            &mut s.http_header_timeout_secs,
            "INVOICING_HTTP_HEADER_TIMEOUT_SECS",
        )?;
        number(
            &mut s.http_idle_timeout_secs,
            "INVOICING_HTTP_IDLE_TIMEOUT_SECS",
        )?;
        number(
            &mut s.http_max_connections,
            "INVOICING_HTTP_MAX_CONNECTIONS",
        )?;
        if let Some(v) = env("INVOICING_MCP_ADDR") {
            s.mcp_addr = Some(v);
        }
        if let Some(v) = env("INVOICING_API_URL") {
            s.api_url = Some(v);
        }
        if let Some(v) = env("INVOICING_MCP_ALLOWED_HOSTS") {
            s.mcp_allowed_hosts = Some(v);
        }
        if let Some(v) = env("INVOICING_MCP_ALLOWED_ORIGINS") {
            s.mcp_allowed_origins = Some(v);
        }
        if let Some(v) = env("INVOICING_MCP_PUBLIC_URL") {
            s.mcp_public_url = Some(v);
        }
        if let Some(v) = env("INVOICING_OIDC_ISSUER") {
            s.oidc_issuer = Some(v);
        }
        if let Some(v) = env("INVOICING_OIDC_CLIENT_ID") {
            s.oidc_client_id = Some(v);
        }
        if let Some(v) = env("INVOICING_OIDC_CLIENT_SECRET") {
            s.oidc_client_secret = Some(v);
        }
        if let Some(v) = env("INVOICING_TRUSTED_PROXIES") {
            s.trusted_proxies = Some(v);
        }
        let whole = |name: &str, v: String| -> anyhow::Result<i64> {
            v.trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("{name} must be a whole number, got `{v}`"))
        };
        for (name, field) in [
            (
                "INVOICING_AI_PENDING_MAX_ENTRIES",
                &mut s.ai_pending_max_entries,
            ),
            (
                "INVOICING_AI_PENDING_MAX_BYTES",
                &mut s.ai_pending_max_bytes,
            ),
            (
                "INVOICING_AI_PENDING_MAX_ENTRIES_PER_TOKEN",
                &mut s.ai_pending_max_entries_per_token,
            ),
            (
                "INVOICING_AI_PENDING_MAX_BYTES_PER_TOKEN",
                &mut s.ai_pending_max_bytes_per_token,
            ),
            ("INVOICING_AI_PENDING_TTL_DAYS", &mut s.ai_pending_ttl_days),
        ] {
            if let Some(v) = env(name) {
                *field = Some(whole(name, v)?);
            }
        }
        if let Ok(v) = std::env::var("INVOICING_FX_URL") {
            // An empty value is meaningful: never fetch rates.
            s.fx_url = Some(v);
        }
        Ok(s)
    }

    /// What one company may hold of shared resources (`INVOICING_MAX_QUEUED_REPORTS`,
    /// `INVOICING_RENDER_*`, `INVOICING_SNIPPET_SLOTS`).
    pub fn limits(&self) -> anyhow::Result<api::Limits> {
        let mut limits = api::Limits::default();
        if let Some(n) = self.max_queued_reports {
            anyhow::ensure!(n >= 1, "INVOICING_MAX_QUEUED_REPORTS must be at least 1");
            limits.max_queued_reports = i64::from(n);
        }
        if let Some(secs) = self.render_wait_secs {
            limits.render.wait = std::time::Duration::from_secs(secs);
        }
        if let Some(p) = self.render_company_share_percent {
            anyhow::ensure!(
                (1..=100).contains(&p),
                "INVOICING_RENDER_COMPANY_SHARE_PERCENT must be between 1 and 100"
            );
            limits.render.company_share_percent = p;
        }
        if let Some(n) = self.render_slots {
            anyhow::ensure!(n >= 1, "INVOICING_RENDER_SLOTS must be at least 1");
            limits.render.renders = n;
        }
        if let Some(n) = self.snippet_slots {
            anyhow::ensure!(n >= 1, "INVOICING_SNIPPET_SLOTS must be at least 1");
            limits.render.snippet_slots = n;
        }
        Ok(limits)
    }

    /// Timeouts and the connection cap of the HTTP listeners (`INVOICING_HTTP_*`).
    pub fn http_limits(&self) -> anyhow::Result<crate::http::HttpLimits> {
        let d = crate::http::HttpLimits::default();
        let secs = |v: Option<u64>, name: &str, default: std::time::Duration| match v {
            Some(0) => anyhow::bail!("{name} must be at least 1 second"),
            Some(n) => Ok(std::time::Duration::from_secs(n)),
            None => Ok(default),
        };
        let max_connections = match self.http_max_connections {
            Some(0) => anyhow::bail!("INVOICING_HTTP_MAX_CONNECTIONS must be at least 1"),
            Some(n) => n,
            None => d.max_connections,
        };
        Ok(crate::http::HttpLimits {
            header_timeout: secs(
                self.http_header_timeout_secs,
                "INVOICING_HTTP_HEADER_TIMEOUT_SECS",
                d.header_timeout,
            )?,
            idle_timeout: secs(
                self.http_idle_timeout_secs,
                "INVOICING_HTTP_IDLE_TIMEOUT_SECS",
                d.idle_timeout,
            )?,
            max_connections,
        })
    }

    /// Web sign-in through an OpenID Connect provider: all three settings, or none.
    pub fn oidc(&self) -> anyhow::Result<Option<web::oidc::OidcConfig>> {
        match (
            &self.oidc_issuer,
            &self.oidc_client_id,
            &self.oidc_client_secret,
        ) {
            (None, None, None) => Ok(None),
            (Some(issuer), Some(client_id), Some(client_secret)) => {
                if !issuer.starts_with("https://") && !issuer.starts_with("http://") {
                    anyhow::bail!("INVOICING_OIDC_ISSUER must be a URL, got `{issuer}`");
                }
                Ok(Some(web::oidc::OidcConfig {
                    issuer: issuer.clone(),
                    client_id: client_id.clone(),
                    client_secret: client_secret.clone(),
                }))
            }
            _ => anyhow::bail!(
                "OpenID Connect sign-in needs all of INVOICING_OIDC_ISSUER, \
                 INVOICING_OIDC_CLIENT_ID and INVOICING_OIDC_CLIENT_SECRET"
            ),
        }
    }

    /// The reverse proxies trusted to name the client (default: none, so the
    /// client is the TCP peer and forwarding headers are ignored).
    pub fn trusted_proxies(&self) -> anyhow::Result<web::client_ip::TrustedProxies> {
        web::client_ip::TrustedProxies::parse(self.trusted_proxies.as_deref().unwrap_or(""))
            .map_err(|e| anyhow::anyhow!("INVOICING_TRUSTED_PROXIES: {e}"))
    }

    /// The data directory (default `./data`).
    pub fn data_dir(&self) -> PathBuf {
        self.data_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from("./data"))
    }

    /// How long a token lookup may be kept in memory (`INVOICING_TOKEN_CACHE_MS`); `None`:
    /// the store's default.
    pub fn token_cache(&self) -> anyhow::Result<Option<std::time::Duration>> {
        match self.token_cache_ms {
            Some(ms) if ms > 60_000 => anyhow::bail!(
                "INVOICING_TOKEN_CACHE_MS must be at most 60000 (a minute); it bounds how long a \
                 revoked token may still work if PostgreSQL's notifications stop arriving unseen"
            ),
            ms => Ok(ms.map(std::time::Duration::from_millis)),
        }
    }

    /// The database URL (default: SQLite file `invoicing.db` in the data directory).
    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| {
            format!(
                "sqlite://{}",
                self.data_dir().join("invoicing.db").display()
            )
        })
    }

    /// The HTTP listen address (default `127.0.0.1:8080`).
    pub fn http_addr(&self) -> String {
        self.http_addr
            .clone()
            .unwrap_or_else(|| "127.0.0.1:8080".to_owned())
    }

    /// The MCP listen address (default `127.0.0.1:8081`).
    pub fn mcp_addr(&self) -> String {
        self.mcp_addr
            .clone()
            .unwrap_or_else(|| "127.0.0.1:8081".to_owned())
    }

    /// The API base URL the MCP server calls (default `http://127.0.0.1:8080`).
    pub fn api_url(&self) -> String {
        self.api_url
            .clone()
            .unwrap_or_else(|| "http://127.0.0.1:8080".to_owned())
    }

    /// The MCP server's settings.
    pub fn mcp(&self) -> mcp::McpConfig {
        mcp::McpConfig {
            api_url: self.api_url(),
            allowed_hosts: mcp::McpConfig::parse_allowed_hosts(self.mcp_allowed_hosts.as_deref()),
            allowed_origins: mcp::McpConfig::parse_allowed_origins(
                self.mcp_allowed_origins.as_deref(),
            ),
            source_proof: None,
            resource_url: None,
            // `serve` hands its child its own public URL; `invoicing mcp` alone takes the
            // setting, else the API's URL (what the API calls itself by default).
            authorization_server: Some(
                self.public_url
                    .clone()
                    .unwrap_or_else(|| self.api_url())
                    .trim_end_matches('/')
                    .to_owned(),
            ),
        }
    }

    /// The MCP endpoint's public URL: the setting, else `http://<address>/mcp` of the
    /// address the MCP server listens on (`bound`, or the configured one); `None` when that
    /// address is not known in advance (port 0).
    pub fn mcp_public_url(&self, bound: Option<std::net::SocketAddr>) -> Option<String> {
        if let Some(url) = &self.mcp_public_url {
            return Some(url.trim_end_matches('/').to_owned());
        }
        let addr = match bound {
            Some(b) => b,
            None => self.mcp_addr().parse::<std::net::SocketAddr>().ok()?,
        };
        (addr.port() != 0).then(|| format!("{}/mcp", crate::mcp_process::api_url_for(addr)))
    }

    /// The daily exchange-rate feed (ECB format; empty disables fetching).
    pub fn fx_url(&self) -> String {
        self.fx_url.clone().unwrap_or_else(|| {
            "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml".to_owned()
        })
    }

    /// Where mail goes: SMTP when `smtp_url` is set, else `.eml` files in `<data dir>/outbox`.
    pub fn mail(&self) -> jobs::MailConfig {
        jobs::MailConfig {
            smtp_url: self.smtp_url.clone().filter(|u| !u.is_empty()),
            outbox_dir: self.data_dir().join("outbox"),
            from: self
                .mail_from
                .clone()
                .unwrap_or_else(|| "Invoicing <no-reply@localhost>".to_owned()),
        }
    }

    /// The VERI*FACTU mode (`INVOICING_AEAT_MODE`).
    pub fn aeat_mode(&self) -> anyhow::Result<api::aeat::Mode> {
        api::aeat::Mode::parse(self.aeat_mode.as_deref().unwrap_or_default())
            .map_err(|e| anyhow::anyhow!(e))
    }

    /// How the worker reaches the AEAT; `None` in mode `disabled` (nothing is sent).
    /// The certificate Facturae documents are signed with: the AEAT's PKCS#12
    /// (`INVOICING_AEAT_CERT`, `INVOICING_AEAT_CERT_PASSWORD`), read now so that a wrong
    /// path or password stops the server at start.
    pub fn facturae_signer(
        &self,
    ) -> anyhow::Result<Option<std::sync::Arc<einvoice::xades::Signer>>> {
        let Some(path) = &self.aeat_cert else {
            return Ok(None);
        };
        let der = std::fs::read(path).map_err(|e| {
            anyhow::anyhow!("cannot read INVOICING_AEAT_CERT {}: {e}", path.display())
        })?;
        let signer = einvoice::xades::Signer::from_pkcs12(
            &der,
            self.aeat_cert_password.as_deref().unwrap_or_default(),
        )
        .map_err(|e| {
            anyhow::anyhow!(
                "INVOICING_AEAT_CERT cannot sign Facturae: {e}; check \
                 INVOICING_AEAT_CERT_PASSWORD and that the file holds the private key"
            )
        })?;
        Ok(Some(std::sync::Arc::new(signer)))
    }

    pub fn aeat(&self) -> anyhow::Result<Option<jobs::aeat::AeatSettings>> {
        let endpoint = match (self.aeat_mode()?, &self.aeat_endpoint) {
            (api::aeat::Mode::Disabled, _) => return Ok(None),
            (_, Some(e)) => e.clone(),
            (api::aeat::Mode::Test, None) => jobs::aeat::ENDPOINT_TEST.to_owned(),
            (api::aeat::Mode::Production, None) => jobs::aeat::ENDPOINT_PRODUCTION.to_owned(),
        };
        Ok(Some(jobs::aeat::AeatSettings {
            endpoint,
            cert: self.aeat_cert.clone(),
            cert_password: self.aeat_cert_password.clone(),
            ca: self.aeat_ca.clone(),
            timeout: std::time::Duration::from_secs(60),
        }))
    }

    /// The roots a signed VERI*FACTU authorization document must chain to: the shipped
    /// Spanish roots (unless `aeat_signature_trust_bundled` is false) plus the PEM file
    /// `aeat_signature_trust`. A missing or invalid file stops the start.
    pub fn signature_trust(&self) -> anyhow::Result<api::signature_trust::TrustStore> {
        let extra = match &self.aeat_signature_trust {
            None => None,
            Some(path) => Some((
                path.display().to_string(),
                std::fs::read(path).map_err(|e| {
                    anyhow::anyhow!(
                        "cannot read INVOICING_AEAT_SIGNATURE_TRUST {}: {e}",
                        path.display()
                    )
                })?,
            )),
        };
        api::signature_trust::trust_store(
            self.aeat_signature_trust_bundled.unwrap_or(true),
            extra
                .as_ref()
                .map(|(name, pem)| (name.as_str(), pem.as_slice())),
        )
        .map_err(|e| anyhow::anyhow!(e))
    }

    /// The public base URL (default derived from the listen address).
    pub fn public_url(&self, bound: &str) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"))
            .trim_end_matches('/')
            .to_owned()
    }

    /// Requests per minute per API token; `None` when unlimited (setting 0).
    pub fn rate_limit_per_minute(&self) -> Option<u32> {
        match self.rate_limit_per_minute {
            Some(0) => None,
            Some(n) => Some(n),
            None => Some(1200),
        }
    }

    /// Whether webhooks may go to loopback, private and link-local addresses
    /// (`INVOICING_WEBHOOKS_ALLOW_PRIVATE=1`, read from the environment only; off by default).
    pub fn webhooks_allow_private(&self) -> bool {
        std::env::var("INVOICING_WEBHOOKS_ALLOW_PRIVATE")
            .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes"))
    }

    /// Caps on the AI review queue and how long its entries wait
    /// (`INVOICING_AI_PENDING_*`; each at least 1).
    pub fn ai_queue(&self) -> anyhow::Result<api::gate::QueueLimits> {
        let defaults = api::gate::QueueLimits::default();
        let pick = |name: &str, value: Option<i64>, default: i64| -> anyhow::Result<i64> {
            match value {
                None => Ok(default),
                Some(n) if n >= 1 => Ok(n),
                Some(n) => anyhow::bail!("{name} must be at least 1, got {n}"),
            }
        };
        Ok(api::gate::QueueLimits {
            max_entries: pick(
                "INVOICING_AI_PENDING_MAX_ENTRIES",
                self.ai_pending_max_entries,
                defaults.max_entries,
            )?,
            max_bytes: pick(
                "INVOICING_AI_PENDING_MAX_BYTES",
                self.ai_pending_max_bytes,
                defaults.max_bytes,
            )?,
            max_entries_per_token: pick(
                "INVOICING_AI_PENDING_MAX_ENTRIES_PER_TOKEN",
                self.ai_pending_max_entries_per_token,
                defaults.max_entries_per_token,
            )?,
            max_bytes_per_token: pick(
                "INVOICING_AI_PENDING_MAX_BYTES_PER_TOKEN",
                self.ai_pending_max_bytes_per_token,
                defaults.max_bytes_per_token,
            )?,
            ttl_days: pick(
                "INVOICING_AI_PENDING_TTL_DAYS",
                self.ai_pending_ttl_days,
                defaults.ttl_days,
            )?,
        })
    }

    /// How often the worker looks for due reminders and recurring periods (default 30 s,
    /// at least 1 s).
    pub fn schedule_interval(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.schedule_seconds.unwrap_or(30).max(1))
    }

    /// Longest a report may take to render (default 60 s).
    pub fn report_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.report_timeout_secs.unwrap_or(60))
    }

    /// The key that signs download links: `secret_key`, else the one in
    /// `<data dir>/secret.key`, made (readable by the owner only) on first use.
    pub fn secret_key(&self) -> anyhow::Result<reports::links::SecretKey> {
        if let Some(key) = self.existing_secret_key()? {
            return Ok(key);
        }
        let path = self.secret_key_file();
        store::private::create_dir_all(&self.data_dir())?;
        let key: String = {
            use rand::RngCore as _;
            let mut bytes = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut bytes);
            store::hex_lower(&bytes)
        };
        match store::private::file_options()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                std::io::Write::write_all(&mut file, key.as_bytes())?;
                tracing::info!(path = %path.display(), "generated the secret key for signed links");
                Ok(reports::links::SecretKey::new(key.into_bytes()))
            }
            // Another process made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path)?;
                Ok(reports::links::SecretKey::new(
                    text.trim().as_bytes().to_vec(),
                ))
            }
            Err(e) => Err(anyhow::anyhow!("cannot write {}: {e}", path.display())),
        }
    }

    fn secret_key_file(&self) -> PathBuf {
        self.data_dir().join("secret.key")
    }

    /// The secret key if there is one (`secret_key`, or `<data dir>/secret.key`), never
    /// making one: for `invoicing mcp`, which owns no data.
    pub fn existing_secret_key(&self) -> anyhow::Result<Option<reports::links::SecretKey>> {
        if let Some(key) = &self.secret_key {
            anyhow::ensure!(
                key.len() >= 32,
                "INVOICING_SECRET_KEY must be at least 32 characters (for example `openssl rand -hex 32`)"
            );
            return Ok(Some(reports::links::SecretKey::new(
                key.as_bytes().to_vec(),
            )));
        }
        let path = self.secret_key_file();
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                let key = text.trim();
                anyhow::ensure!(
                    key.len() >= 32,
                    "{} is too short; delete it to make a new one (mailed links stop working)",
                    path.display()
                );
                Ok(Some(reports::links::SecretKey::new(
                    key.as_bytes().to_vec(),
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_trust_adds_a_pem_file_or_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let shipped = Settings::default().signature_trust().unwrap().len();
        assert!(shipped >= 4, "the Spanish roots ship");
        // A file of extra roots: here, one of the shipped roots again, on its own.
        let pem = api::signature_trust::SPANISH_ROOTS_PEM;
        let first = &pem[..pem.find("-----END CERTIFICATE-----").unwrap() + 26];
        let file = dir.path().join("roots.pem");
        std::fs::write(&file, first).unwrap();
        let only = Settings {
            aeat_signature_trust: Some(file.clone()),
            aeat_signature_trust_bundled: Some(false),
            ..Settings::default()
        };
        assert_eq!(only.signature_trust().unwrap().len(), 1);
        for (settings, says) in [
            (
                Settings {
                    aeat_signature_trust: Some(dir.path().join("missing.pem")),
                    ..Settings::default()
                },
                "cannot read INVOICING_AEAT_SIGNATURE_TRUST",
            ),
            (
                Settings {
                    aeat_signature_trust_bundled: Some(false),
                    ..Settings::default()
                },
                "no root is trusted",
            ),
        ] {
            let err = settings.signature_trust().unwrap_err().to_string();
            assert!(err.contains(says), "{err}");
        }
        std::fs::write(&file, "not a certificate").unwrap();
        let err = Settings {
            aeat_signature_trust: Some(file),
            ..Settings::default()
        }
        .signature_trust()
        .unwrap_err()
        .to_string();
        assert!(err.contains("holds no certificate"), "{err}");
    }
}
