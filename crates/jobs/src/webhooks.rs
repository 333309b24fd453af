//! `webhook.deliver`: sends one delivery to its endpoint, signed per Standard Webhooks.
//!
//! Each attempt POSTs the stored body with `webhook-id` (the message id, the same on every
//! attempt), `webhook-timestamp` (this attempt, Unix seconds) and `webhook-signature`
//! (`v1,` + base64 HMAC-SHA256 over `id.timestamp.body`). A 2xx answer is a success; any
//! other answer, a timeout or a refused address is a failure, retried with the worker's
//! exponential backoff until [`Settings::max_attempts`] (about a day with the default
//! backoff). Every attempt is logged on the delivery (status code or error).
//!
//! Bounded: connect and whole-request timeouts, at most [`Settings::max_response_bytes`] of
//! the answer read, no redirects followed, no proxy. The target is checked against
//! server-side request forgery on every attempt: the URL again, and the addresses its name
//! resolves to *when connecting* (a resolver that refuses non-public addresses), so a name
//! that pointed to a public address at creation and to an internal one now (DNS rebinding)
//! is refused.
//!
//! When a delivery fails for good after at least [`Settings::max_attempts`] failed attempts
//! in a row to its endpoint (no success in between: a long run of failures), the endpoint is
//! disabled and the person who created it gets a mail, in the same transaction.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use store::webhooks::{self as wh, Attempt, DeliverJob, DeliveryRow, EndpointRow};

use crate::{Context, Job, JobError};

/// How deliveries are made (`INVOICING_WEBHOOKS_ALLOW_PRIVATE` sets `allow_private`).
#[derive(Debug, Clone)]
pub struct Settings {
    /// Sends to loopback, private and link-local addresses too (tests, closed networks).
    pub allow_private: bool,
    /// Attempts of one delivery before it fails for good (at most [`wh::MAX_ATTEMPTS`]).
    pub max_attempts: i64,
    /// Longest wait for the connection.
    pub connect_timeout: Duration,
    /// Longest wait for the whole exchange, answer included.
    pub timeout: Duration,
    /// Bytes of an answer read (the rest is ignored).
    pub max_response_bytes: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            allow_private: false,
            max_attempts: wh::MAX_ATTEMPTS,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(15),
            max_response_bytes: 64 * 1024,
        }
    }
}

/// The key that opens stored signing secrets: derived from the service's secret key for
/// this one purpose (the API seals with the same derivation).
pub fn seal_key(key: &reports::links::SecretKey) -> wh::SealKey {
    wh::SealKey::new(reports::links::derive(key, "webhook-secrets").as_bytes())
}

/// Emits `report.ready` for a report whose PDF was just stored in this transaction.
pub(crate) async fn emit_report_ready(
    conn: &mut sqlx::AnyConnection,
    report: &store::reports::ReportRow,
    file_id: &str,
) -> sqlx::Result<()> {
    let data = serde_json::json!({
        "id": report.id,
        "report_type": report.report_type,
        "locale": report.locale,
        "period_start": store::from_micros(report.period_start)?,
        "period_end": store::from_micros(report.period_end)?,
        "status": "ready",
        "file_id": file_id,
    });
    wh::emit(conn, &report.company_id, "report.ready", data).await?;
    Ok(())
}

/// Emits `verifactu.accepted` (also for `accepted_with_errors`) or `verifactu.rejected`
/// for a record whose AEAT answer is being stored in this transaction.
pub(crate) async fn emit_verifactu(
    conn: &mut sqlx::AnyConnection,
    record: &store::verifactu::RecordRow,
    status: &str,
    code: Option<&str>,
    description: Option<&str>,
) -> sqlx::Result<()> {
    let event = if status == store::verifactu::status::REJECTED {
        "verifactu.rejected"
    } else {
        "verifactu.accepted"
    };
    let data = serde_json::json!({
        "invoice_id": record.invoice_id,
        "record_id": record.id,
        "kind": record.kind,
        "status": status,
        "error_code": code,
        "error_description": description,
    });
    wh::emit(conn, &record.company_id, event, data).await?;
    Ok(())
}

/// `webhook.deliver`: one attempt of one delivery.
pub(crate) async fn deliver(ctx: Context, job: Job) -> Result<(), JobError> {
    let p: DeliverJob = job.payload()?;
    let mut conn = ctx.db.pool().acquire().await?;
    let Some(delivery) = wh::get_delivery(&mut conn, &p.company_id, &p.delivery_id).await? else {
        // Its endpoint was deleted with its log.
        return Ok(());
    };
    if delivery.status != "pending" {
        return Ok(());
    }
    let Some(endpoint) = wh::get(&mut conn, &p.company_id, &delivery.endpoint_id).await? else {
        return Ok(());
    };
    if endpoint.enabled != 1 {
        wh::fail_unsent(&mut conn, &delivery, "not sent: the endpoint is disabled").await?;
        return Ok(());
    }
    let secret = match seal_key(&ctx.config.secret_key).open(&endpoint.secret_sealed) {
        Ok(s) => s,
        Err(e) => {
            wh::fail_unsent(&mut conn, &delivery, &e.to_string()).await?;
            return Err(JobError::Permanent(e.to_string()));
        }
    };
    drop(conn);

    let settings = ctx.webhooks.clone();
    let outcome = send(
        &settings,
        &endpoint,
        &delivery,
        &secret,
        ctx.now().timestamp(),
    )
    .await;
    let last = job.attempt >= job.max_attempts.min(settings.max_attempts.max(1));
    let error = outcome.error.as_deref();
    let mut tx = ctx.db.begin_write().await?;
    let failures = wh::record_attempt(
        tx.conn(),
        &delivery,
        &Attempt {
            response_status: outcome.status,
            error,
            last,
        },
    )
    .await?;
    let Some(error) = error else {
        tx.commit().await?;
        tracing::info!(endpoint = %endpoint.id, status = ?outcome.status, "webhook delivered");
        return Ok(());
    };
    if last && failures >= settings.max_attempts {
        disable(&ctx, tx.conn(), &endpoint, failures, error).await?;
    }
    tx.commit().await?;
    if last {
        tracing::warn!(endpoint = %endpoint.id, error, "webhook delivery failed for good");
        Ok(())
    } else {
        Err(JobError::Transient(anyhow::anyhow!(
            "webhook delivery failed: {error}"
        )))
    }
}

/// Disables the endpoint and mails the person who created it (once: only whoever flips it).
async fn disable(
    ctx: &Context,
    conn: &mut sqlx::AnyConnection,
    endpoint: &EndpointRow,
    failures: i64,
    error: &str,
) -> Result<(), JobError> {
    let reason = format!("{failures} attempts in a row failed; the last: {error}");
    if !wh::disable(conn, &endpoint.company_id, &endpoint.id, &reason).await? {
        return Ok(());
    }
    tracing::warn!(endpoint = %endpoint.id, failures, "webhook endpoint disabled");
    let Some(user) = store::users::get(conn, &endpoint.created_by).await? else {
        return Ok(());
    };
    let company = store::companies::get(conn, &endpoint.company_id)
        .await?
        .map(|c| c.name)
        .unwrap_or_default();
    let vars: BTreeMap<String, String> = [
        (
            "name",
            crate::handlers::display_name(&user.name, &user.email),
        ),
        ("company_name", company),
        ("url", endpoint.url.clone()),
        ("failures", failures.to_string()),
        ("error", error.to_owned()),
        ("endpoint_id", endpoint.id.clone()),
        ("sign_in_url", ctx.config.public_url.clone()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mail = store::jobs::NewJob::new(
        store::jobs::kind::EMAIL_SEND,
        store::jobs::EmailSend {
            to: user.email,
            template: "webhook_disabled".into(),
            language: user.language,
            vars,
        },
    )
    .for_company(&endpoint.company_id);
    store::jobs::enqueue(conn, &mail).await?;
    Ok(())
}

/// What one attempt got.
struct Sent {
    status: Option<i64>,
    error: Option<String>,
}

/// Sends the delivery once; never fails, the outcome says what happened.
async fn send(
    settings: &Settings,
    endpoint: &EndpointRow,
    delivery: &DeliveryRow,
    secret: &str,
    timestamp: i64,
) -> Sent {
    let failed = |error: String| Sent {
        status: None,
        error: Some(error),
    };
    // Checked again at every attempt: the rule may have changed since creation.
    let url = match wh::check_url(&endpoint.url, settings.allow_private) {
        Ok(u) => u,
        Err(e) => return failed(e),
    };
    let client = match client(settings) {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let signature = match wh::sign(secret, &delivery.message_id, timestamp, &delivery.payload) {
        Ok(s) => s,
        Err(e) => return failed(e.to_string()),
    };
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("user-agent", "invoicing-webhooks/1")
        .header("webhook-id", &delivery.message_id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(delivery.payload.clone())
        .send()
        .await;
    let mut response = match response {
        Ok(r) => r,
        Err(e) => return failed(describe(&e)),
    };
    let status = i64::from(response.status().as_u16());
    // Read (a bounded part of) the answer so the connection ends cleanly, and keep its
    // start for the log of a failure.
    let mut body = Vec::new();
    while body.len() < settings.max_response_bytes {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    if response.status().is_success() {
        return Sent {
            status: Some(status),
            error: None,
        };
    }
    let text: String = String::from_utf8_lossy(&body).chars().take(200).collect();
    Sent {
        status: Some(status),
        error: Some(format!("HTTP {status}: {}", text.trim())),
    }
}

/// The error of a request, with its causes (where the resolver's refusal is).
fn describe(e: &reqwest::Error) -> String {
    let mut out = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "could not connect".to_owned()
    } else {
        "the request failed".to_owned()
    };
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// A client that follows no redirect, uses no proxy, and resolves names through
/// [`Vetting`].
fn client(settings: &Settings) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(crate::aeat::tls_config(None, None)?)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .connect_timeout(settings.connect_timeout)
        .timeout(settings.timeout)
        .dns_resolver(Arc::new(Vetting {
            allow_private: settings.allow_private,
        }))
        .build()
        .map_err(|e| format!("the HTTP client cannot be built: {e}"))
}

/// Resolves names when connecting and refuses non-public addresses (unless allowed).
struct Vetting {
    allow_private: bool,
}

impl reqwest::dns::Resolve for Vetting {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs = wh::vet_addresses(&host, 0, allow_private)
                .await
                .map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { e.into() })?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}
