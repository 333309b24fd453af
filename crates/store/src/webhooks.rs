//! Webhooks: endpoints a person registers, the events the service emits to them, and the
//! log of their deliveries (see `docs/WEBHOOKS.md`).
//!
//! Every event goes through [`emit`], on the connection of the transaction that made the
//! change: it writes one delivery row per enabled endpoint of the company that asked for the
//! event, and one `webhook.deliver` job per delivery, in that same transaction (the
//! transactional outbox of [`crate::jobs`]). A rolled-back request, and an AI caller's dry
//! run, therefore never emits; a committed one always does.
//!
//! The signing secret must be read back to sign, so it cannot be stored as a hash like
//! tokens are: it is encrypted with AES-256-GCM under a key derived from the service's secret
//! key ([`SealKey`]). A database dump without `INVOICING_SECRET_KEY` does not reveal it.
//!
//! Targets are checked against server-side request forgery here too ([`check_url`],
//! [`vet_addresses`]): only `http`/`https`, and no loopback, private, link-local or otherwise
//! non-public address unless the operator allows private targets.

use std::net::{IpAddr, SocketAddr};

use aes_gcm::{
    Aes256Gcm, KeyInit as _, Nonce,
    aead::{Aead as _, Key},
};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac as _};
use sha2::{Digest as _, Sha256};
use sqlx::AnyConnection;

/// Every event the service emits, as `events` of an endpoint names them.
pub const EVENTS: &[&str] = &[
    "invoice.created",
    "invoice.issued",
    "invoice.sent",
    "invoice.paid",
    "invoice.overdue",
    "expense.created",
    "report.ready",
    "ai_audit.pending",
    "ai_audit.approved",
    "ai_audit.rejected",
    "ai_audit.failed",
    "verifactu.accepted",
    "verifactu.rejected",
];

/// The job kind that sends one delivery (payload: [`DeliverJob`]).
pub const DELIVER_KIND: &str = "webhook.deliver";
/// Endpoints one company may have.
pub const MAX_ENDPOINTS: i64 = 20;
/// Deliveries of one company waiting to be sent; past it a new delivery is logged as
/// `failed` (and may be re-sent by hand) instead of being queued.
pub const MAX_PENDING: i64 = 10_000;
/// Attempts of one delivery: with the worker's default backoff (30 s doubling, at most an
/// hour between attempts) the last comes about a day after the first.
pub const MAX_ATTEMPTS: i64 = 30;
/// Attempts kept in a delivery's log (the oldest are dropped).
pub const MAX_LOGGED_ATTEMPTS: usize = 50;
/// Longest endpoint URL accepted.
pub const MAX_URL: usize = 2000;
/// The prefix of a signing secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// Payload of a [`DELIVER_KIND`] job.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DeliverJob {
    pub company_id: crate::CompanyId,
    pub delivery_id: String,
}

// ---------------------------------------------------------------------------------------
// Secrets and signatures

/// The key that encrypts signing secrets at rest. Made from a value derived from the
/// service's secret key for this purpose only; never printed.
#[derive(Clone)]
pub struct SealKey([u8; 32]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(..)")
    }
}

/// Why a stored secret could not be read back.
#[derive(Debug, thiserror::Error)]
#[error(
    "the endpoint's signing secret cannot be decrypted (was INVOICING_SECRET_KEY changed?); \
     delete the endpoint and create it again"
)]
pub struct UnsealError;

impl SealKey {
    /// A key from key material (say, `reports::links::derive(key, "webhook-secrets")`).
    pub fn new(material: &[u8]) -> Self {
        Self(Sha256::digest(material).into())
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&Key::<Aes256Gcm>::from(self.0))
    }

    /// Encrypts `secret`: base64 of a random 96-bit nonce followed by the ciphertext and tag.
    pub fn seal(&self, secret: &str) -> String {
        use rand::RngCore as _;
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let sealed = self
            .cipher()
            .encrypt(&Nonce::from(nonce), secret.as_bytes())
            .unwrap_or_else(|_| unreachable!("AES-GCM encrypts any message of this size"));
        let mut out = nonce.to_vec();
        out.extend_from_slice(&sealed);
        STANDARD.encode(out)
    }

    /// Decrypts what [`SealKey::seal`] made; an error when it was sealed under another key
    /// or altered.
    pub fn open(&self, sealed: &str) -> Result<String, UnsealError> {
        let bytes = STANDARD.decode(sealed).map_err(|_| UnsealError)?;
        if bytes.len() < 12 + 16 {
            return Err(UnsealError);
        }
        let (nonce, data) = bytes.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().map_err(|_| UnsealError)?;
        let plain = self
            .cipher()
            .decrypt(&Nonce::from(nonce), data)
            .map_err(|_| UnsealError)?;
        String::from_utf8(plain).map_err(|_| UnsealError)
    }
}

/// A new signing secret: `whsec_` and the base64 of 32 random bytes.
pub fn new_secret() -> String {
    use rand::RngCore as _;
    let mut key = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut key);
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The `webhook-signature` header of a message (Standard Webhooks): `v1,` and the base64
/// HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the base64-decoded part of the
/// secret after `whsec_`. An error when the secret is not of that form.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &str) -> Result<String, UnsealError> {
    let key = STANDARD
        .decode(secret.strip_prefix(SECRET_PREFIX).ok_or(UnsealError)?)
        .map_err(|_| UnsealError)?;
    let mut mac = <Hmac<Sha256> as hmac::Mac>::new_from_slice(&key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(format!("{msg_id}.{timestamp}.{body}").as_bytes());
    Ok(format!(
        "v1,{}",
        STANDARD.encode(mac.finalize().into_bytes())
    ))
}

// ---------------------------------------------------------------------------------------
// Where deliveries may go

/// Whether an address is one a webhook may be sent to: a public unicast address, not
/// loopback, private (RFC 1918, unique-local), link-local, carrier-grade NAT, unspecified,
/// broadcast, multicast, documentation or benchmarking space. IPv4 inside IPv6 is judged as
/// IPv4.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 192 && b == 0 && c == 0)
                || (a == 198 && (18..20).contains(&b))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
                || first == 0x2001 && v6.segments()[1] == 0x0db8
                || first == 0x0064 && v6.segments()[1] == 0xff9b
                || v6.segments()[..6].iter().all(|s| *s == 0))
        }
    }
}

/// A webhook target URL, parsed and checked: `http` or `https`, a host, no credentials,
/// and (unless `allow_private`) no literal non-public address. Names (`localhost` too) are
/// judged by the addresses they resolve to ([`vet_addresses`]), at creation and again when
/// every delivery connects.
pub fn check_url(raw: &str, allow_private: bool) -> Result<url::Url, String> {
    let raw = raw.trim();
    if raw.len() > MAX_URL {
        return Err(format!("`url` is longer than {MAX_URL} characters."));
    }
    let url = url::Url::parse(raw)
        .map_err(|e| format!("`url` is not an absolute URL ({e}): give an https:// URL."))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`url` must be an http:// or https:// URL, not `{}:`.",
            url.scheme()
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("`url` must not carry a user name or password.".into());
    }
    let Some(host) = url.host() else {
        return Err("`url` has no host.".into());
    };
    if !allow_private {
        let ip = match host {
            url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
            url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
            url::Host::Domain(_) => None,
        };
        if let Some(ip) = ip
            && !is_public(ip)
        {
            return Err(refused(&ip.to_string()));
        }
    }
    Ok(url)
}

fn refused(target: &str) -> String {
    format!(
        "`url` points to {target}, a loopback, private or link-local address: webhooks are only \
         sent to public addresses (an operator may allow private ones with \
         INVOICING_WEBHOOKS_ALLOW_PRIVATE=1)."
    )
}

/// Resolves the host of a checked URL and returns its addresses, refusing (unless
/// `allow_private`) when any of them is not public: a name that resolves to an internal
/// address is refused however it is written (and, checked again at delivery time, a name
/// whose address changed since creation, DNS rebinding, is refused then).
pub async fn vet_addresses(
    host: &str,
    port: u16,
    allow_private: bool,
) -> Result<Vec<SocketAddr>, String> {
    // `localhost.` is `localhost`: the resolver would not find it, but a connection would.
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.');
    let addrs: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::time::timeout(
            std::time::Duration::from_secs(10),
            tokio::net::lookup_host((host, port)),
        )
        .await
        .map_err(|_| format!("resolving {host} took too long"))?
        .map_err(|e| format!("{host} does not resolve: {e}"))?
        .collect(),
    };
    if addrs.is_empty() {
        return Err(format!("{host} resolves to no address"));
    }
    // The address itself is not named: the message reaches whoever registered the URL,
    // and must not map internal names to internal addresses for them.
    if !allow_private && addrs.iter().any(|a| !is_public(a.ip())) {
        return Err(format!(
            "{host} resolves to a loopback, private or link-local address; webhooks are \
             only sent to public addresses"
        ));
    }
    Ok(addrs)
}

// ---------------------------------------------------------------------------------------
// Endpoints

/// An endpoint as stored (its secret still sealed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EndpointRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub url: String,
    pub description: String,
    /// JSON array of event names; read with [`EndpointRow::event_list`].
    pub events: String,
    pub enabled: i64,
    pub secret_sealed: String,
    pub created_by: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub failing_since: Option<i64>,
    pub consecutive_failures: i64,
    pub disabled_reason: Option<String>,
}

impl EndpointRow {
    /// The events it asked for; stored data that does not decode is an error.
    pub fn event_list(&self) -> sqlx::Result<Vec<String>> {
        decode_events(&self.events)
    }
}

fn decode_events(events: &str) -> sqlx::Result<Vec<String>> {
    serde_json::from_str(events).map_err(|e| {
        sqlx::Error::Decode(format!("a webhook endpoint's stored events do not decode: {e}").into())
    })
}

const ENDPOINT_COLUMNS: &str = "id, company_id, url, description, events, enabled, secret_sealed, \
    created_by, created_at, updated_at, failing_since, consecutive_failures, disabled_reason";

/// What a new endpoint is made of (the secret already sealed).
#[derive(Debug, Clone)]
pub struct NewEndpoint<'a> {
    pub url: &'a str,
    pub description: &'a str,
    pub events: &'a [String],
    pub enabled: bool,
    pub secret_sealed: &'a str,
    pub created_by: &'a str,
}

/// Endpoints of a company (to check [`MAX_ENDPOINTS`]).
pub async fn count(conn: &mut AnyConnection, company_id: &crate::CompanyId) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM webhook_endpoints WHERE company_id = $1")
        .bind(company_id)
        .fetch_one(conn)
        .await
}

/// Stores a new endpoint and returns it.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    new: &NewEndpoint<'_>,
) -> sqlx::Result<EndpointRow> {
    let id = crate::new_id();
    let now = crate::now_micros();
    let events = serde_json::to_string(new.events)
        .map_err(|e| sqlx::Error::Protocol(format!("events do not encode: {e}")))?;
    sqlx::query(
        "INSERT INTO webhook_endpoints (id, company_id, url, description, events, enabled, \
         secret_sealed, created_by, created_at, updated_at, consecutive_failures) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, 0)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(new.url)
    .bind(new.description)
    .bind(&events)
    .bind(i64::from(new.enabled))
    .bind(new.secret_sealed)
    .bind(new.created_by)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    get(conn, company_id, &id)
        .await?
        .ok_or_else(|| sqlx::Error::RowNotFound)
}

/// One endpoint of the company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<EndpointRow>> {
    sqlx::query_as::<_, EndpointRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Endpoints of the company, newest first, after the keyset cursor `before_id`.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<EndpointRow>> {
    sqlx::query_as::<_, EndpointRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE company_id = $1 \
         AND ($2 IS NULL OR id < $2) ORDER BY id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// What a PATCH changes (`None`: unchanged).
#[derive(Debug, Clone, Default)]
pub struct EndpointChanges {
    pub url: Option<String>,
    pub description: Option<String>,
    pub events: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// Applies `changes`; enabling clears the run of failures and why it was disabled.
/// Returns the endpoint as it is now, or `None` when the company has no such endpoint.
pub async fn update(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    changes: &EndpointChanges,
) -> sqlx::Result<Option<EndpointRow>> {
    let events = changes
        .events
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| sqlx::Error::Protocol(format!("events do not encode: {e}")))?;
    let enabled = changes.enabled.map(i64::from);
    let done = sqlx::query(
        "UPDATE webhook_endpoints SET url = COALESCE($3, url), \
         description = COALESCE($4, description), events = COALESCE($5, events), \
         enabled = COALESCE($6, enabled), updated_at = $7, \
         failing_since = CASE WHEN $6 = 1 THEN NULL ELSE failing_since END, \
         consecutive_failures = CASE WHEN $6 = 1 THEN 0 ELSE consecutive_failures END, \
         disabled_reason = CASE WHEN $6 IS NULL THEN disabled_reason ELSE NULL END \
         WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .bind(changes.url.as_deref())
    .bind(changes.description.as_deref())
    .bind(events.as_deref())
    .bind(enabled)
    .bind(crate::now_micros())
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(None);
    }
    get(conn, company_id, id).await
}

/// Deletes an endpoint and its delivery log; queued jobs of its deliveries find nothing
/// and end. False when the company has no such endpoint.
pub async fn delete(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<bool> {
    sqlx::query("DELETE FROM webhook_deliveries WHERE company_id = $1 AND endpoint_id = $2")
        .bind(company_id)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    let done =
        sqlx::query("DELETE FROM webhook_endpoints WHERE id = $2 AND (company_id = $1) IS TRUE")
            .bind(company_id)
            .bind(id)
            .execute(conn)
            .await?;
    Ok(done.rows_affected() == 1)
}

// ---------------------------------------------------------------------------------------
// Events and deliveries

/// One delivery: an event for an endpoint, and what became of it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub company_id: crate::CompanyId,
    pub endpoint_id: String,
    pub message_id: String,
    pub event_type: String,
    pub payload: String,
    pub status: String,
    pub attempts: i64,
    pub response_status: Option<i64>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub last_attempt_at: Option<i64>,
    pub delivered_at: Option<i64>,
    /// JSON array of [`LoggedAttempt`]; read with [`DeliveryRow::attempt_log`].
    pub attempt_log: String,
}

/// One attempt as the delivery log keeps it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LoggedAttempt {
    /// When it was made (microseconds).
    pub at: i64,
    /// The HTTP status answered, if any answer came.
    pub response_status: Option<i64>,
    /// Why it failed; null for a success.
    pub error: Option<String>,
}

impl DeliveryRow {
    /// The logged attempts, oldest first; stored data that does not decode is an error.
    pub fn attempt_log(&self) -> sqlx::Result<Vec<LoggedAttempt>> {
        serde_json::from_str(&self.attempt_log).map_err(|e| {
            sqlx::Error::Decode(
                format!("a webhook delivery's attempt log does not decode: {e}").into(),
            )
        })
    }
}

const DELIVERY_COLUMNS: &str = "id, company_id, endpoint_id, message_id, event_type, payload, \
    status, attempts, response_status, last_error, created_at, last_attempt_at, delivered_at, \
    attempt_log";

/// Whether the company has an enabled endpoint, as a `BIGINT` expression (1 or 0) whose
/// company id is the parameter `param` (e.g. `$1`). The statements that make the hottest
/// changes (a new draft, an issued invoice) return it, so that an event with no endpoint to
/// go to costs no read while SQLite's writer is held ([`emit_counted`]).
///
/// An `EXISTS`, not a `COUNT(*)`: nothing needs how many (an event is sent to each endpoint
/// [`emit`] reads), and on PostgreSQL a count is an aggregate that each execution of the
/// statement sets up and runs, twice a write (this and the refusal of a write that ends its
/// own transaction), where `EXISTS` stops at the first endpoint found.
pub fn enabled_endpoints(param: &str) -> String {
    format!(
        "CAST(CASE WHEN EXISTS (SELECT 1 FROM webhook_endpoints \
         WHERE company_id = {param} AND enabled = 1) THEN 1 ELSE 0 END AS BIGINT)"
    )
}

/// Companies whose last new draft or issue found enabled endpoints, at most
/// [`REMEMBERED`] of them: their next such write is made the ordinary way at once, rather
/// than sent to end its own transaction and refused for having an event to queue
/// ([`crate::Writing::closing`], [`might_have_endpoints`]). A hint only: a write that
/// assumed no endpoint is refused if there is one, whatever this says.
static WITH_ENDPOINTS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// How many companies [`WITH_ENDPOINTS`] remembers; past that it forgets the oldest.
const REMEMBERED: usize = 1024;

fn with_endpoints() -> std::sync::MutexGuard<'static, Vec<String>> {
    WITH_ENDPOINTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether the company's last new draft or issue in this process found enabled endpoints:
/// its next one is then not sent to end its own transaction.
pub(crate) fn might_have_endpoints(company_id: &str) -> bool {
    with_endpoints().iter().any(|c| c == company_id)
}

/// Remembers whether the company has enabled endpoints, as a write just found (`count`, 0
/// for none).
pub(crate) fn saw_endpoints(company_id: &str, count: i64) {
    let mut known = with_endpoints();
    let at = known.iter().position(|c| c == company_id);
    match (at, count > 0) {
        (Some(i), false) => {
            known.remove(i);
        }
        (None, true) => {
            if known.len() >= REMEMBERED {
                known.remove(0);
            }
            known.push(company_id.to_owned());
        }
        _ => {}
    }
}

/// [`emit`], told by the statement that made the change whether the company had enabled
/// endpoints then, in the same transaction ([`enabled_endpoints`], 0 for none): with none,
/// nothing is read or queued, `data` is not built and `tx` is not used (a transaction that
/// the change ended, [`crate::Writing::closing`], had none).
pub async fn emit_counted(
    tx: &mut impl crate::Writing,
    endpoints: i64,
    company_id: &crate::CompanyId,
    event_type: &str,
    data: impl FnOnce() -> sqlx::Result<serde_json::Value>,
) -> sqlx::Result<usize> {
    if endpoints == 0 {
        return Ok(0);
    }
    emit(tx.conn().await?, company_id, event_type, data()?).await
}

/// Emits `event_type` with `data` for the company, on the connection of the transaction
/// that made the change: one delivery and one job per enabled endpoint of the company that
/// subscribed to the event. The body every endpoint gets is
/// `{"type": event_type, "timestamp": RFC 3339, "data": data}`. Returns how many deliveries
/// were queued. Cheap when the company has no endpoint (one indexed read).
pub async fn emit(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    event_type: &str,
    data: serde_json::Value,
) -> sqlx::Result<usize> {
    debug_assert!(EVENTS.contains(&event_type), "unknown event {event_type}");
    let endpoints: Vec<(String, String)> = sqlx::query_as(
        "SELECT id, events FROM webhook_endpoints WHERE company_id = $1 AND enabled = 1 \
         ORDER BY id",
    )
    .bind(company_id)
    .fetch_all(&mut *conn)
    .await?;
    let mut targets = Vec::new();
    for (id, events) in endpoints {
        if decode_events(&events)?.iter().any(|e| e == event_type) {
            targets.push(id);
        }
    }
    if targets.is_empty() {
        return Ok(0);
    }
    let now = chrono::Utc::now();
    let body = serde_json::json!({
        "type": event_type,
        "timestamp": now.to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        "data": data,
    })
    .to_string();
    let message_id = format!("msg_{}", uuid::Uuid::now_v7().simple());
    let mut pending: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM webhook_deliveries WHERE company_id = $1 AND status = 'pending'",
    )
    .bind(company_id)
    .fetch_one(&mut *conn)
    .await?;
    let mut queued = 0;
    for endpoint_id in targets {
        let id = crate::new_id();
        let full = pending >= MAX_PENDING;
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, company_id, endpoint_id, message_id, event_type, \
             payload, status, attempts, last_error, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $9)",
        )
        .bind(&id)
        .bind(company_id)
        .bind(&endpoint_id)
        .bind(&message_id)
        .bind(event_type)
        .bind(&body)
        .bind(if full { "failed" } else { "pending" })
        .bind(full.then(|| {
            format!(
                "not sent: {MAX_PENDING} deliveries of this company were already waiting; \
                 re-send it once the endpoint answers again"
            )
        }))
        .bind(now.timestamp_micros())
        .execute(&mut *conn)
        .await?;
        if full {
            tracing::warn!(company = %company_id, event = event_type, "webhook queue full; delivery not queued");
            continue;
        }
        enqueue_delivery(conn, company_id, &id).await?;
        pending += 1;
        queued += 1;
    }
    Ok(queued)
}

/// Queues the job that sends a delivery.
async fn enqueue_delivery(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    delivery_id: &str,
) -> sqlx::Result<()> {
    let job = crate::jobs::NewJob {
        max_attempts: MAX_ATTEMPTS,
        ..crate::jobs::NewJob::new(
            DELIVER_KIND,
            DeliverJob {
                company_id: company_id.to_owned(),
                delivery_id: delivery_id.to_owned(),
            },
        )
        .for_company(company_id)
    };
    crate::jobs::enqueue(conn, &job).await?;
    Ok(())
}

/// Deliveries of one endpoint of the company, newest first, after the cursor `before_id`.
pub async fn list_deliveries(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    endpoint_id: &str,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as::<_, DeliveryRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE company_id = $1 \
         AND endpoint_id = $2 AND ($3 IS NULL OR id < $3) ORDER BY id DESC LIMIT CAST($4 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(endpoint_id)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// One delivery of the company.
pub async fn get_delivery(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<DeliveryRow>> {
    sqlx::query_as::<_, DeliveryRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {DELIVERY_COLUMNS} FROM webhook_deliveries WHERE id = $2 AND (company_id = $1) IS TRUE"
    )))
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

/// Sends a delivery again (same message id and body): pending once more, with a new job.
/// False when it is pending and a job of it is queued or running (that job will send it);
/// a pending delivery whose job is gone (parked after its workers kept dying) may be sent.
pub async fn resend(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    delivery_id: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE webhook_deliveries SET status = 'pending', last_error = NULL \
         WHERE id = $2 AND (company_id = $1) IS TRUE AND (status <> 'pending' OR NOT EXISTS ( \
           SELECT 1 FROM jobs WHERE kind = $3 AND company_id = $1 \
           AND status IN ('queued', 'running') AND payload LIKE $4))",
    )
    .bind(company_id)
    .bind(delivery_id)
    .bind(DELIVER_KIND)
    .bind(format!("%\"delivery_id\":\"{delivery_id}\"%"))
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    enqueue_delivery(conn, company_id, delivery_id).await?;
    Ok(true)
}

/// The outcome of one attempt to send a delivery.
#[derive(Debug, Clone)]
pub struct Attempt<'a> {
    /// The HTTP status answered, if any answer came.
    pub response_status: Option<i64>,
    /// Why it failed; `None` for a 2xx answer.
    pub error: Option<&'a str>,
    /// Whether no attempt follows (the delivery becomes `failed`).
    pub last: bool,
}

/// Records an attempt on the delivery and on its endpoint's run of failures. Returns how
/// many attempts to the endpoint have failed in a row now (0 when this one succeeded).
pub async fn record_attempt(
    conn: &mut AnyConnection,
    delivery: &DeliveryRow,
    attempt: &Attempt<'_>,
) -> sqlx::Result<i64> {
    let now = crate::now_micros();
    let status = match (attempt.error, attempt.last) {
        (None, _) => "succeeded",
        (Some(_), true) => "failed",
        (Some(_), false) => "pending",
    };
    // The log as stored now (not as the caller read it: a re-send may have run meanwhile).
    let stored: Option<String> = sqlx::query_scalar(
        "SELECT attempt_log FROM webhook_deliveries WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&delivery.company_id)
    .bind(&delivery.id)
    .fetch_optional(&mut *conn)
    .await?;
    let mut log = DeliveryRow {
        attempt_log: stored.unwrap_or_else(|| "[]".into()),
        ..delivery.clone()
    }
    .attempt_log()?;
    log.push(LoggedAttempt {
        at: now,
        response_status: attempt.response_status,
        error: attempt.error.map(str::to_owned),
    });
    let skip = log.len().saturating_sub(MAX_LOGGED_ATTEMPTS);
    let log = serde_json::to_string(&log[skip..])
        .map_err(|e| sqlx::Error::Protocol(format!("the attempt log does not encode: {e}")))?;
    sqlx::query(
        "UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1, \
         response_status = $4, last_error = $5, last_attempt_at = $6, \
         delivered_at = CASE WHEN $3 = 'succeeded' THEN $6 ELSE delivered_at END, \
         attempt_log = $7 WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(&delivery.company_id)
    .bind(&delivery.id)
    .bind(status)
    .bind(attempt.response_status)
    .bind(attempt.error)
    .bind(now)
    .bind(log)
    .execute(&mut *conn)
    .await?;
    if attempt.error.is_none() {
        sqlx::query(
            "UPDATE webhook_endpoints SET failing_since = NULL, consecutive_failures = 0 \
             WHERE id = $2 AND (company_id = $1) IS TRUE",
        )
        .bind(&delivery.company_id)
        .bind(&delivery.endpoint_id)
        .execute(conn)
        .await?;
        return Ok(0);
    }
    let failures: Option<i64> = sqlx::query_scalar(
        "UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $3), \
         consecutive_failures = consecutive_failures + 1 \
         WHERE id = $2 AND (company_id = $1) IS TRUE RETURNING consecutive_failures",
    )
    .bind(&delivery.company_id)
    .bind(&delivery.endpoint_id)
    .bind(now)
    .fetch_optional(conn)
    .await?;
    Ok(failures.unwrap_or(0))
}

/// Marks a pending delivery failed without an attempt (its endpoint is disabled, or its
/// secret unreadable).
pub async fn fail_unsent(
    conn: &mut AnyConnection,
    delivery: &DeliveryRow,
    error: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE webhook_deliveries SET status = 'failed', last_error = $3 \
         WHERE id = $2 AND (company_id = $1) IS TRUE AND status = 'pending'",
    )
    .bind(&delivery.company_id)
    .bind(&delivery.id)
    .bind(error)
    .execute(conn)
    .await?;
    Ok(())
}

/// Disables an enabled endpoint, saying why; false when it was not enabled (so whoever
/// disabled it first is the one who tells its owner).
pub async fn disable(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
    reason: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE webhook_endpoints SET enabled = 0, disabled_reason = $3, updated_at = $4 \
         WHERE id = $2 AND (company_id = $1) IS TRUE AND enabled = 1",
    )
    .bind(company_id)
    .bind(id)
    .bind(reason)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Deletes finished deliveries created before `before` (the daily prune); returns how many.
pub async fn prune(conn: &mut AnyConnection, before: i64) -> sqlx::Result<u64> {
    let done =
        sqlx::query("DELETE FROM webhook_deliveries WHERE status <> 'pending' AND created_at < $1")
            .bind(before)
            .execute(conn)
            .await?;
    Ok(done.rows_affected())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_only_with_its_key() {
        let key = SealKey::new(b"one key");
        let secret = new_secret();
        let sealed = key.seal(&secret);
        assert!(!sealed.contains(&secret[6..]));
        assert_eq!(key.open(&sealed).unwrap(), secret);
        assert!(SealKey::new(b"another key").open(&sealed).is_err());
        assert_ne!(key.seal(&secret), sealed, "a fresh nonce each time");
    }

    #[test]
    fn signs_like_the_standard_webhooks_example() {
        // The example of the Standard Webhooks specification's reference libraries.
        let sig = sign(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        )
        .unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn refuses_internal_targets() {
        for bad in [
            "http://127.0.0.1/x",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "ftp://example.com/",
            "file:///etc/passwd",
            "https://user:pw@example.com/",
            "not a url",
        ] {
            assert!(check_url(bad, false).is_err(), "{bad}");
        }
        assert!(check_url("https://example.com/hooks", false).is_ok());
        assert!(check_url("https://93.184.216.34/hooks", false).is_ok());
        assert!(check_url("http://127.0.0.1:9/x", true).is_ok());
        assert!(check_url("ftp://127.0.0.1/", true).is_err());
    }

    #[tokio::test]
    async fn names_are_judged_by_their_addresses() {
        let err = vet_addresses("localhost", 80, false).await.unwrap_err();
        assert!(err.contains("loopback, private or link-local"), "{err}");
        assert!(vet_addresses("localhost.", 80, false).await.is_err());
        assert!(vet_addresses("localhost", 80, true).await.is_ok());
        assert!(vet_addresses("[::1]", 80, false).await.is_err());
        assert!(vet_addresses("93.184.216.34", 443, false).await.is_ok());
    }
}
