//! Connecting, migrating and opening write transactions on either engine.

use std::{str::FromStr, sync::Arc, time::Duration};

use sqlx::{
    Any, AnyPool, Executor, Transaction,
    any::{AnyConnectOptions, AnyPoolOptions},
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Which database engine a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Embedded SQLite file (single writer).
    Sqlite,
    /// PostgreSQL server (many writers, row locks).
    Postgres,
}

/// A connection pool plus what is needed to open write transactions safely.
#[derive(Clone)]
pub struct Db {
    pool: AnyPool,
    backend: Backend,
    /// SQLite allows one writer at a time; writers queue here instead of
    /// spinning on `SQLITE_BUSY`. PostgreSQL needs no such gate.
    write_gate: Option<Arc<Semaphore>>,
    /// Where receipts and report PDFs keep their bytes.
    files: crate::files::Files,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("backend", &self.backend)
            .field("files", &self.files.describe())
            .finish()
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Db {
    /// Connects to `url` (`sqlite://path` or `postgres://...`), creating a SQLite file if needed.
    pub async fn connect(url: &str) -> anyhow::Result<Self> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else {
            anyhow::bail!(
                "INVOICING_DATABASE_URL must start with sqlite:// or postgres://, got `{}`",
                redact_url(url)
            );
        };
        let url = match backend {
            Backend::Sqlite => prepare_sqlite_url(url)?,
            Backend::Postgres => url.to_owned(),
        };
        let options = AnyConnectOptions::from_str(&url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(match backend {
                Backend::Sqlite => 8,
                Backend::Postgres => 16,
            })
            .acquire_timeout(Duration::from_secs(30))
            // sqlx would ping every connection it hands out: one more round trip (or, on
            // SQLite, hand-off to the connection's thread) per request. A SQLite
            // connection is a file handle that cannot go stale. A PostgreSQL one can (a
            // server restart, a proxy's idle timeout), but only after sitting idle, so
            // only a connection idle for a second or more is pinged first; a dead one
            // is dropped and another taken.
            .test_before_acquire(false)
            .before_acquire(move |conn, meta| {
                Box::pin(async move {
                    if backend == Backend::Postgres && meta.idle_for >= Duration::from_secs(1) {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .after_connect(move |conn, _meta| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // WAL lets readers run beside the one writer; NORMAL sync
                        // is durable across application crashes in WAL mode.
                        conn.execute("PRAGMA journal_mode = WAL").await?;
                        conn.execute("PRAGMA synchronous = NORMAL").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                        conn.execute("PRAGMA busy_timeout = 10000").await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await
            .map_err(|e| anyhow::anyhow!("cannot open the database {}: {e}", redact_url(&url)))?;
        Ok(Self {
            pool,
            backend,
            write_gate: (backend == Backend::Sqlite).then(|| Arc::new(Semaphore::new(1))),
            files: crate::files::Files::Database,
        })
    }

    /// The same database keeping file bytes in `files` (an object store, say).
    pub fn with_files(mut self, files: crate::files::Files) -> Self {
        self.files = files;
        self
    }

    /// Where receipts and report PDFs keep their bytes.
    pub fn files(&self) -> &crate::files::Files {
        &self.files
    }

    /// Applies pending migrations (safe to run from several processes at once).
    pub async fn migrate(&self) -> anyhow::Result<()> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|e| anyhow::anyhow!("migrating the database failed: {e}"))
    }

    /// The engine behind this pool.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The pool, for reads outside a transaction.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Opens a transaction that will write.
    ///
    /// On SQLite it waits for the in-process writer gate and starts with
    /// `BEGIN IMMEDIATE`, so a read-then-write transaction never fails to
    /// upgrade its lock; on PostgreSQL it is a plain `BEGIN`.
    pub async fn begin_write(&self) -> sqlx::Result<WriteTx> {
        let permit = match &self.write_gate {
            Some(gate) => Some(
                gate.clone()
                    .acquire_owned()
                    .await
                    .map_err(|_| sqlx::Error::PoolClosed)?,
            ),
            None => None,
        };
        let tx = match self.backend {
            Backend::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await?,
            Backend::Postgres => self.pool.begin().await?,
        };
        Ok(WriteTx {
            tx,
            _permit: permit,
        })
    }

    /// Closes every connection of the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// A write transaction; dropping it without [`WriteTx::commit`] rolls it back.
pub struct WriteTx {
    tx: Transaction<'static, Any>,
    _permit: Option<OwnedSemaphorePermit>,
}

impl WriteTx {
    /// Makes the transaction's changes durable.
    pub async fn commit(self) -> sqlx::Result<()> {
        self.tx.commit().await
    }

    /// Undoes the transaction's changes.
    pub async fn rollback(self) -> sqlx::Result<()> {
        self.tx.rollback().await
    }

    /// The connection the transaction runs on.
    pub fn conn(&mut self) -> &mut sqlx::AnyConnection {
        &mut self.tx
    }
}

/// Makes sure the directory of a SQLite file exists and the file is created on first use.
fn prepare_sqlite_url(url: &str) -> anyhow::Result<String> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() || path == ":memory:" {
        anyhow::bail!("an in-memory SQLite database is not supported; give a file path");
    }
    if let Some(parent) = std::path::Path::new(path).parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(|e| {
            anyhow::anyhow!(
                "cannot create the database directory {}: {e}",
                parent.display()
            )
        })?;
    }
    let query = if query.split('&').any(|p| p.starts_with("mode=")) {
        query.to_owned()
    } else if query.is_empty() {
        "mode=rwc".to_owned()
    } else {
        format!("{query}&mode=rwc")
    };
    Ok(format!("sqlite://{path}?{query}"))
}

/// Hides a password in a database URL before it reaches a message or a log.
pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let creds = &url[scheme_end + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme_end + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact_url("postgres://u:secret@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(redact_url("postgres://h/db"), "postgres://h/db");
    }
}
