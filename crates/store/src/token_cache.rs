//! Token lookups kept in memory on PostgreSQL, for as long as the database confirms nothing
//! they depend on has changed (issue #34).
//!
//! Every request resolves its bearer token ([`crate::tokens::authenticate`]): one statement
//! joining three tables, a third of the statements of a create+issue pair. A process serving
//! PostgreSQL keeps what each token resolved to, and drops all of it as soon as the database
//! says a token, a membership or a company's type changed:
//!
//! - **Triggers** ([`install`], run with the migrations) on `api_tokens`, `memberships` and
//!   `companies` send `NOTIFY invoicing_auth` in the changing transaction, whoever changes them:
//!   this service, another server, the CLI, an older version, an operator in `psql`.
//!   PostgreSQL delivers it when that transaction commits.
//! - **A listener** (one connection a process, started by the first token lookup) empties the
//!   cache on each notification. While it is not listening (not yet connected, lost, the
//!   triggers missing) the cache is off: nothing is read from it or put in it, and what it
//!   held was dropped when the listener stopped.
//! - **In this process**, the store's own changes ([`changed`]: revoking a token, a member's
//!   status or expiry, a company's type) also stop the cache at once for a few seconds, so
//!   the answer to a revocation is never followed by a request the cache lets through before
//!   the notification arrived.
//! - **Every entry is at most [`DEFAULT_TTL`] old** (one second), in case a notification is
//!   held up somewhere no error shows (a half-open connection); expiry times are checked on
//!   every use.
//! - A lookup that read the database while the cache was emptied does not put its answer in
//!   it (an epoch taken before the read must be unchanged after it).
//!
//! SQLite keeps no cache: a lookup there is an in-process read, and another process (the CLI)
//! writing the same file could not tell this one.

use std::{
    collections::HashMap,
    str::FromStr,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use sqlx::Executor;

use crate::tokens::TokenAuth;

/// The channel the triggers notify.
pub const CHANNEL: &str = "invoicing_auth";

/// How long an entry is used at most, notification or not.
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);

/// How long the store's own change of a token, member or company stops the cache in this
/// process: far longer than its transaction takes to commit and its notification to arrive.
const PAUSE_AFTER_CHANGE: Duration = Duration::from_secs(5);

/// Most tokens kept; past it the cache starts empty again. Only tokens that resolved are
/// kept, so a caller cannot fill it with made-up ones.
const MAX_ENTRIES: usize = 4096;

/// The listener's connection, as `pg_stat_activity` shows it.
pub const APPLICATION_NAME: &str = "invoicing token cache";

/// Bumped by every [`changed`] in this process, for every cache of the process.
static LOCAL_EPOCH: AtomicU64 = AtomicU64::new(0);

/// Until when [`changed`] stopped the caches of this process.
static PAUSED_UNTIL: Mutex<Option<Instant>> = Mutex::new(None);

/// Says a token, member or company's type is changing in this process: from now on, for a
/// few seconds, no cache of this process answers or keeps a token. Called by the store
/// functions that make such changes, before their statement; code (a test, a tool) that
/// changes `api_tokens`, `memberships` or `companies.company_type` with its own SQL calls it
/// too. Other processes learn of it through PostgreSQL's notification.
pub fn changed() {
    LOCAL_EPOCH.fetch_add(1, Ordering::SeqCst);
    let until = Instant::now() + PAUSE_AFTER_CHANGE;
    if let Ok(mut paused) = PAUSED_UNTIL.lock() {
        *paused = Some(paused.map_or(until, |p| p.max(until)));
    }
}

fn paused() -> bool {
    PAUSED_UNTIL
        .lock()
        .map_or(true, |p| p.is_some_and(|until| Instant::now() < until))
}

struct Entry {
    auth: TokenAuth,
    stored: Instant,
    local_epoch: u64,
}

/// What a lookup saw before reading the database; its answer is kept only if still the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    local: u64,
    notified: u64,
}

/// One process's token lookups for one database ([`crate::Db`] holds it).
pub struct TokenCache {
    entries: Mutex<HashMap<String, Entry>>,
    /// Whether the listener is listening (and the triggers are there).
    live: AtomicBool,
    /// Bumped by every notification and every stop of the listener.
    notified: AtomicU64,
    ttl: Duration,
    started: AtomicBool,
    /// Tells the listener to stop (the last clone of the `Db` is gone, or it was closed).
    stop: Arc<tokio::sync::Notify>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("live", &self.live.load(Ordering::Relaxed))
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl TokenCache {
    /// A cache whose entries live `ttl` at most; `Duration::ZERO` keeps nothing.
    pub fn new(ttl: Duration) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            live: AtomicBool::new(false),
            notified: AtomicU64::new(0),
            ttl,
            started: AtomicBool::new(false),
            stop: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Whether entries are used now: the listener listens and no change of this process is
    /// under way.
    pub fn is_live(&self) -> bool {
        !self.ttl.is_zero() && self.live.load(Ordering::SeqCst) && !paused()
    }

    /// What `token_hash` resolved to, if kept, fresh, unexpired and the cache is live.
    pub fn get(&self, token_hash: &str) -> Option<TokenAuth> {
        if !self.is_live() {
            return None;
        }
        let local = LOCAL_EPOCH.load(Ordering::SeqCst);
        let entries = self.entries.lock().ok()?;
        let entry = entries.get(token_hash)?;
        let now = crate::now_micros();
        let unexpired = |at: Option<i64>| at.is_none_or(|at| at > now);
        (entry.local_epoch == local
            && entry.stored.elapsed() < self.ttl
            && unexpired(entry.auth.token_expires_at)
            && unexpired(entry.auth.member_expires_at))
        .then(|| entry.auth.clone())
    }

    /// Taken before reading the database; `None` when nothing read now may be kept.
    pub fn stamp(&self) -> Option<Stamp> {
        self.is_live().then(|| Stamp {
            local: LOCAL_EPOCH.load(Ordering::SeqCst),
            notified: self.notified.load(Ordering::SeqCst),
        })
    }

    /// Keeps what `token_hash` resolved to, read after `stamp` was taken, unless anything
    /// changed since.
    pub fn put(&self, token_hash: &str, auth: &TokenAuth, stamp: Stamp) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        // Checked under the lock `forget` takes too: a notification either emptied the
        // cache before this check (and bumped the epoch it fails), or comes after and empties
        // it of this entry as well.
        if Some(stamp) != self.stamp() {
            return;
        }
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(
            token_hash.to_owned(),
            Entry {
                auth: auth.clone(),
                stored: Instant::now(),
                local_epoch: stamp.local,
            },
        );
    }

    /// Drops every entry (a notification, or the listener stopped).
    fn forget(&self) {
        if let Ok(mut entries) = self.entries.lock() {
            self.notified.fetch_add(1, Ordering::SeqCst);
            entries.clear();
        }
    }

    fn go_live(&self, live: bool) {
        if !live {
            self.live.store(false, Ordering::SeqCst);
            self.forget();
        } else {
            self.forget();
            self.live.store(true, Ordering::SeqCst);
        }
    }

    /// Starts the listener once, on PostgreSQL at `url`, unless the cache keeps nothing.
    pub fn start(self: &Arc<Self>, url: &str) {
        if self.ttl.is_zero() || self.started.swap(true, Ordering::SeqCst) {
            return;
        }
        let options = match sqlx::postgres::PgConnectOptions::from_str(url) {
            Ok(options) => options.application_name(APPLICATION_NAME),
            Err(e) => {
                tracing::warn!(error = %e, "token cache off: cannot read the database URL");
                return;
            }
        };
        tokio::spawn(listen(Arc::downgrade(self), self.stop.clone(), options));
    }

    /// Stops the listener (the cache is off from then on).
    pub fn stop(&self) {
        self.stop.notify_one();
        self.go_live(false);
    }
}

impl Drop for TokenCache {
    fn drop(&mut self) {
        self.stop.notify_one();
    }
}

/// The listener: connects, listens, checks the triggers are there, then empties the cache on
/// every notification; on any failure the cache goes off and it starts over after a pause.
async fn listen(
    cache: std::sync::Weak<TokenCache>,
    stop: Arc<tokio::sync::Notify>,
    options: sqlx::postgres::PgConnectOptions,
) {
    let mut pause = Duration::from_millis(100);
    loop {
        let outcome = tokio::select! {
            _ = stop.notified() => return,
            outcome = listen_once(&cache, &options) => outcome,
        };
        let Some(cache) = cache.upgrade() else { return };
        cache.go_live(false);
        drop(cache);
        match outcome {
            Ok(()) => pause = Duration::from_millis(100),
            Err(e) => {
                tracing::warn!(error = %e, "token cache off: its listener stopped; trying again");
                pause = (pause * 2).min(Duration::from_secs(30));
            }
        }
        tokio::select! {
            _ = stop.notified() => return,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

/// One connection's life: `Ok` when it was lost after listening, `Err` when it could not
/// start.
async fn listen_once(
    cache: &std::sync::Weak<TokenCache>,
    options: &sqlx::postgres::PgConnectOptions,
) -> anyhow::Result<()> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .max_lifetime(None)
        .idle_timeout(None)
        .connect_with(options.clone())
        .await?;
    let mut listener = sqlx::postgres::PgListener::connect_with(&pool).await?;
    listener.listen(CHANNEL).await?;
    // Listening first, then checking: a trigger created in between notifies this listener.
    let (installed,): (i64,) = sqlx::query_as(TRIGGERS_PRESENT)
        .fetch_one(&mut listener)
        .await?;
    if installed != TRIGGERS.len() as i64 {
        anyhow::bail!(
            "{installed} of the {} triggers that announce token changes are in the database \
             (`invoicing migrate` installs them)",
            TRIGGERS.len()
        );
    }
    let Some(live) = cache.upgrade() else {
        return Ok(());
    };
    live.go_live(true);
    drop(live);
    tracing::info!("token cache on: PostgreSQL notifies changes of tokens and members");
    loop {
        match listener.try_recv().await {
            Ok(Some(_)) => {
                let Some(cache) = cache.upgrade() else {
                    return Ok(());
                };
                cache.forget();
            }
            Ok(None) => {
                tracing::warn!("token cache off: its listener's connection was lost");
                return Ok(());
            }
            Err(e) => {
                tracing::warn!(error = %e, "token cache off: its listener failed");
                return Ok(());
            }
        }
    }
}

/// The triggers [`install`] makes: (name, table, when it fires). A company's type only
/// sets its callers' language; the statement that changes it also writes every other
/// column of the company, hence the row trigger that fires only when it differs.
const TRIGGERS: [(&str, &str, &str); 3] = [
    (
        "invoicing_auth_tokens",
        "api_tokens",
        "AFTER UPDATE OR DELETE ON api_tokens FOR EACH STATEMENT",
    ),
    (
        "invoicing_auth_memberships",
        "memberships",
        "AFTER UPDATE OR DELETE ON memberships FOR EACH STATEMENT",
    ),
    (
        "invoicing_auth_companies",
        "companies",
        "AFTER UPDATE OF company_type ON companies FOR EACH ROW \
         WHEN (OLD.company_type IS DISTINCT FROM NEW.company_type)",
    ),
];

const TRIGGERS_PRESENT: &str = "SELECT COUNT(*) FROM pg_trigger t \
     WHERE NOT t.tgisinternal AND t.tgenabled <> 'D' AND ( \
        (t.tgname = 'invoicing_auth_tokens' AND t.tgrelid = to_regclass('api_tokens')) \
     OR (t.tgname = 'invoicing_auth_memberships' AND t.tgrelid = to_regclass('memberships')) \
     OR (t.tgname = 'invoicing_auth_companies' AND t.tgrelid = to_regclass('companies')))";

/// Makes the triggers that notify [`CHANNEL`] when tokens, memberships or a company's type
/// change, where they are missing (PostgreSQL; run after the migrations). Several processes
/// may run it at once: it takes an advisory lock.
///
/// They are not a migration: migrations are one SQL text for both engines, and SQLite has
/// neither `NOTIFY` nor functions in triggers.
pub async fn install(pool: &sqlx::AnyPool) -> sqlx::Result<()> {
    let mut conn = pool.acquire().await?;
    let (present,): (i64,) = sqlx::query_as(TRIGGERS_PRESENT)
        .fetch_one(&mut *conn)
        .await?;
    if present == TRIGGERS.len() as i64 {
        return Ok(());
    }
    conn.execute("BEGIN").await?;
    let made = async {
        // Any fixed number: one installer at a time.
        conn.execute("SELECT pg_advisory_xact_lock(7267051234)")
            .await?;
        conn.execute(
            "CREATE OR REPLACE FUNCTION invoicing_auth_changed() RETURNS trigger \
             LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('invoicing_auth', ''); \
             RETURN NULL; END $$",
        )
        .await?;
        for (name, table, when) in TRIGGERS {
            conn.execute(sqlx::AssertSqlSafe(format!(
                "DROP TRIGGER IF EXISTS {name} ON {table}"
            )))
            .await?;
            conn.execute(sqlx::AssertSqlSafe(format!(
                "CREATE TRIGGER {name} {when} EXECUTE FUNCTION invoicing_auth_changed()"
            )))
            .await?;
        }
        sqlx::Result::Ok(())
    }
    .await;
    match made {
        Ok(()) => conn.execute("COMMIT").await.map(drop),
        Err(e) => {
            let _ = conn.execute("ROLLBACK").await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(member_expires_at: Option<i64>) -> TokenAuth {
        TokenAuth {
            token_id: "t".into(),
            company_id: crate::CompanyId::generate(),
            user_id: "u".into(),
            kind: "standard".into(),
            proof_hash: None,
            company_type: None,
            token_expires_at: None,
            member_expires_at,
        }
    }

    fn live(ttl: Duration) -> TokenCache {
        let cache = TokenCache::new(ttl);
        cache.go_live(true);
        cache
    }

    #[test]
    fn keeps_only_while_live_and_unchanged() {
        let cache = TokenCache::new(Duration::from_secs(60));
        assert!(cache.stamp().is_none(), "off until the listener listens");
        cache.go_live(true);
        let stamp = cache.stamp().unwrap();
        cache.put("h", &auth(None), stamp);
        assert_eq!(cache.get("h").unwrap().token_id, "t");
        assert!(cache.get("other").is_none());

        // A notification empties it, and a lookup that read before it keeps nothing.
        let before = cache.stamp().unwrap();
        cache.forget();
        assert!(cache.get("h").is_none());
        cache.put("h", &auth(None), before);
        assert!(cache.get("h").is_none(), "read before the notification");

        // The listener stopping turns it off and empties it.
        let stamp = cache.stamp().unwrap();
        cache.put("h", &auth(None), stamp);
        cache.go_live(false);
        assert!(cache.get("h").is_none() && cache.stamp().is_none());
    }

    #[test]
    fn expiry_and_age_are_checked_on_every_use() {
        let cache = live(Duration::from_secs(60));
        let past = crate::now_micros() - 1;
        cache.put("h", &auth(Some(past)), cache.stamp().unwrap());
        assert!(cache.get("h").is_none(), "the membership has ended");
        let mut token_ended = auth(None);
        token_ended.token_expires_at = Some(past);
        cache.put("h", &token_ended, cache.stamp().unwrap());
        assert!(cache.get("h").is_none(), "the token has expired");
        let future = crate::now_micros() + 60_000_000;
        cache.put("h", &auth(Some(future)), cache.stamp().unwrap());
        assert!(cache.get("h").is_some());

        let young = live(Duration::from_millis(30));
        young.put("h", &auth(None), young.stamp().unwrap());
        assert!(young.get("h").is_some());
        std::thread::sleep(Duration::from_millis(40));
        assert!(young.get("h").is_none(), "older than its time to live");

        let none = live(Duration::ZERO);
        assert!(
            none.stamp().is_none() && !none.is_live(),
            "zero keeps nothing"
        );
    }

    #[test]
    fn a_change_in_this_process_stops_every_cache_at_once() {
        let cache = live(Duration::from_secs(60));
        cache.put("h", &auth(None), cache.stamp().unwrap());
        let before = cache.stamp().unwrap();
        changed();
        assert!(cache.get("h").is_none());
        assert!(!cache.is_live() && cache.stamp().is_none(), "paused");
        cache.put("h", &auth(None), before);
        // Over the pause, entries stored before the change are still not used.
        *PAUSED_UNTIL.lock().unwrap() = None;
        assert!(cache.is_live());
        assert!(cache.get("h").is_none(), "stored before the change");
    }

    #[test]
    fn bounded() {
        let cache = live(Duration::from_secs(60));
        for i in 0..=MAX_ENTRIES {
            cache.put(&i.to_string(), &auth(None), cache.stamp().unwrap());
        }
        assert!(cache.entries.lock().unwrap().len() <= MAX_ENTRIES);
    }
}
