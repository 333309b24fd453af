//! Requests per token, so one runaway agent cannot starve its company or the server.
//!
//! A token bucket per API token, in this process: `per_minute` requests refill evenly
//! over a minute, and a token may burst up to `per_minute` at once. Past that the API
//! answers `429` with `Retry-After` (whole seconds). With several servers behind a load
//! balancer each keeps its own buckets, so the effective limit is per server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Buckets kept before full (idle) ones are dropped.
const MAX_BUCKETS: usize = 100_000;

/// The limiter shared by every request of the process.
#[derive(Debug)]
pub struct RateLimiter {
    per_minute: u32,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl RateLimiter {
    /// A limiter allowing `per_minute` requests per token (at least 1).
    pub fn new(per_minute: u32) -> Self {
        Self {
            per_minute: per_minute.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request of `key`'s budget at `now`; `Err` carries how long to wait.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let capacity = f64::from(self.per_minute);
        let per_sec = capacity / 60.0;
        let mut buckets = self
            .buckets
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if buckets.len() >= MAX_BUCKETS && !buckets.contains_key(key) {
            buckets.retain(|_, b| {
                b.tokens + now.saturating_duration_since(b.at).as_secs_f64() * per_sec < capacity
            });
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let elapsed = now.saturating_duration_since(bucket.at).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * per_sec).min(capacity);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_sec))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_bursts_to_its_limit_then_waits_for_the_refill() {
        let limiter = RateLimiter::new(60);
        let t0 = Instant::now();
        for _ in 0..60 {
            assert!(limiter.check("a", t0).is_ok());
        }
        let wait = limiter.check("a", t0).unwrap_err();
        assert!(
            wait <= Duration::from_secs(1) && wait > Duration::ZERO,
            "{wait:?}"
        );
        // Another token has its own budget.
        assert!(limiter.check("b", t0).is_ok());
        // One request per second comes back.
        assert!(
            limiter
                .check("a", t0 + Duration::from_millis(1_001))
                .is_ok()
        );
        assert!(
            limiter
                .check("a", t0 + Duration::from_millis(1_002))
                .is_err()
        );
    }
}
