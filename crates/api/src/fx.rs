//! Exchange rates: frozen as supplied, otherwise fetched at issue from a daily
//! reference-rate feed in the ECB's XML format, cached per day.

use std::{
    collections::HashMap,
    str::FromStr,
    sync::Mutex,
    time::{Duration, Instant},
};

use chrono::NaiveDate;
use rust_decimal::Decimal;

/// Reference rates of one day: units of each currency per 1 EUR.
#[derive(Debug, Clone)]
struct DailyRates {
    date: NaiveDate,
    per_eur: HashMap<String, Decimal>,
}

/// How long a failed fetch is not retried: issues that need a rate in the meantime fail at
/// once (asking for the rate in the draft) instead of each waiting for the feed again.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(60);

/// Fetches and caches daily reference rates.
#[derive(Debug)]
pub struct RateProvider {
    url: String,
    cache: Mutex<Option<(NaiveDate, DailyRates)>>,
    /// When the last fetch failed, if it did.
    failed_at: Mutex<Option<Instant>>,
    /// Held while the feed is fetched: requests that miss the cache at once wait for the one
    /// fetch under way instead of each fetching (for up to [`FETCH_TIMEOUT`]).
    fetching: tokio::sync::Mutex<()>,
}

/// The longest a fetch of the feed may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// What the provider knows of a day's rates without asking the feed.
enum Known {
    Rates(DailyRates),
    /// The last fetch failed less than [`RETRY_AFTER_FAILURE`] ago.
    Failed,
    Unknown,
}

/// A rate found for a pair, with the day it applies to.
#[derive(Debug, Clone, PartialEq)]
pub struct Quote {
    pub rate: Decimal,
    pub date: NaiveDate,
}

impl RateProvider {
    /// A provider reading `url`; an empty url never finds a rate.
    pub fn new(url: String) -> Self {
        Self {
            url,
            cache: Mutex::new(None),
            failed_at: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        }
    }

    /// The rate converting 1 `from` into `to`, as of `today`'s feed, or `None`
    /// when the feed cannot be reached or does not list a currency.
    pub async fn quote(&self, from: &str, to: &str, today: NaiveDate) -> Option<Quote> {
        if from == to {
            return Some(Quote {
                rate: Decimal::ONE,
                date: today,
            });
        }
        let rates = self.rates(today).await?;
        let per = |c: &str| {
            if c == "EUR" {
                Some(Decimal::ONE)
            } else {
                rates.per_eur.get(c).copied()
            }
        };
        let (f, t) = (per(from)?, per(to)?);
        if f.is_zero() {
            return None;
        }
        Some(Quote {
            rate: (t / f).round_dp(6).normalize(),
            date: rates.date,
        })
    }

    /// Whether a quote for `today` would wait for the feed: it is configured, today's rates
    /// are not cached and the last failure is not recent. A caller holding a database
    /// connection gives it back first.
    pub fn would_fetch(&self, today: NaiveDate) -> bool {
        !self.url.is_empty() && matches!(self.known(today), Known::Unknown)
    }

    /// What is known of `today`'s rates without fetching.
    fn known(&self, today: NaiveDate) -> Known {
        if let Ok(cache) = self.cache.lock()
            && let Some((day, rates)) = cache.as_ref()
            && *day == today
        {
            return Known::Rates(rates.clone());
        }
        if let Ok(failed) = self.failed_at.lock()
            && failed.is_some_and(|at| at.elapsed() < RETRY_AFTER_FAILURE)
        {
            return Known::Failed;
        }
        Known::Unknown
    }

    async fn rates(&self, today: NaiveDate) -> Option<DailyRates> {
        if self.url.is_empty() {
            return None;
        }
        match self.known(today) {
            Known::Rates(rates) => return Some(rates),
            Known::Failed => return None,
            Known::Unknown => {}
        }
        let _fetching = self.fetching.lock().await;
        // The fetch this one waited for may have answered.
        match self.known(today) {
            Known::Rates(rates) => return Some(rates),
            Known::Failed => return None,
            Known::Unknown => {}
        }
        let url = self.url.clone();
        let rates = tokio::task::spawn_blocking(move || fetch(&url))
            .await
            .ok()
            .flatten()
            .and_then(|body| parse_ecb(&body));
        match &rates {
            Some(rates) => {
                if let Ok(mut cache) = self.cache.lock() {
                    *cache = Some((today, rates.clone()));
                }
            }
            None => {
                if let Ok(mut failed) = self.failed_at.lock() {
                    *failed = Some(Instant::now());
                }
            }
        }
        rates
    }
}

fn fetch(url: &str) -> Option<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(FETCH_TIMEOUT))
        .build()
        .into();
    match agent.get(url).call() {
        Ok(mut resp) => resp.body_mut().read_to_string().ok(),
        Err(e) => {
            tracing::warn!(error = %e, "exchange-rate feed unreachable");
            None
        }
    }
}

/// Reads `<Cube time='…'>` and every `<Cube currency='…' rate='…'/>` of an ECB feed.
fn parse_ecb(xml: &str) -> Option<DailyRates> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let start = tag.find(&format!("{name}="))? + name.len() + 1;
        let quote = tag[start..].chars().next()?;
        let rest = &tag[start + 1..];
        Some(rest[..rest.find(quote)?].to_owned())
    };
    let mut date = None;
    let mut per_eur = HashMap::new();
    for tag in xml.split('<').filter(|t| t.starts_with("Cube")) {
        if let Some(t) = attr(tag, "time") {
            date = NaiveDate::parse_from_str(&t, "%Y-%m-%d").ok();
        }
        if let (Some(c), Some(r)) = (attr(tag, "currency"), attr(tag, "rate"))
            && let Ok(rate) = Decimal::from_str(&r)
        {
            per_eur.insert(c.to_ascii_uppercase(), rate);
        }
    }
    (!per_eur.is_empty()).then(|| DailyRates {
        date: date.unwrap_or_default(),
        per_eur,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_ecb_feed() {
        let xml = "<gesmes:Envelope><Cube><Cube time='2026-11-20'>\
            <Cube currency='USD' rate='1.0500'/><Cube currency='JPY' rate='160.00'/></Cube></Cube></gesmes:Envelope>";
        let r = parse_ecb(xml).unwrap();
        assert_eq!(r.date, NaiveDate::from_ymd_opt(2026, 11, 20).unwrap());
        assert_eq!(r.per_eur["USD"], Decimal::from_str("1.05").unwrap());
        assert!(parse_ecb("<html>nope</html>").is_none());
    }
}
