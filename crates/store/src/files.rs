//! File storage: receipts and report PDFs.
//!
//! Every file has a row in `files` (company, type, size, SHA-256), written in the
//! request's transaction, so a failed request or an AI caller's dry run leaves no row
//! behind. Where the bytes live depends on `INVOICING_STORAGE_URL`:
//!
//! - unset: in the row itself ([`DbFiles`]): one backup covers everything, and every
//!   server that reaches the database reaches every file;
//! - `s3://bucket/prefix` (or `file:///dir`): in an object store ([`ObjectFiles`]), for
//!   deployments whose files outgrow the database. The object is written *before* the
//!   row, under `prefix/{company_id}/{file_id}`, so a committed row always has its
//!   object; an object whose row never committed (a rolled-back request, a crash), or
//!   whose row was deleted, is an orphan that [`ObjectFiles::sweep_orphans`] removes once
//!   it is older than any transaction could be.
//!
//! Rows remember where their bytes are (`location`), so switching a deployment to an
//! object store keeps serving the files written before the switch.

use std::sync::Arc;

use anyhow::Context as _;
use futures::TryStreamExt as _;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload, path::Path};
use sqlx::AnyConnection;

/// A stored file.
#[derive(Debug, Clone)]
pub struct StoredFile {
    pub id: String,
    pub content_type: String,
    pub size: i64,
    pub sha256: String,
    pub data: Vec<u8>,
}

/// Where files are kept; implementations must honour the caller's transaction: after a
/// rollback, [`FileStore::get`] finds nothing.
#[allow(async_fn_in_trait)]
pub trait FileStore {
    /// Stores `data` for the company and returns the new file's id.
    async fn put(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        content_type: &str,
        data: &[u8],
    ) -> anyhow::Result<String>;
    /// Loads a file of the company.
    async fn get(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<Option<StoredFile>>;
    /// Deletes a file of the company.
    async fn delete(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<()>;
}

/// Where a row's bytes are (`files.location`).
const IN_ROW: &str = "db";
const IN_OBJECT_STORE: &str = "object";

#[derive(sqlx::FromRow)]
struct FileRow {
    id: String,
    content_type: String,
    size: i64,
    sha256: String,
    data: Vec<u8>,
    location: String,
}

async fn insert_row(
    conn: &mut AnyConnection,
    id: &str,
    company_id: &crate::CompanyId,
    content_type: &str,
    data: &[u8],
    location: &str,
) -> sqlx::Result<()> {
    let stored: &[u8] = if location == IN_ROW { data } else { &[] };
    sqlx::query(
        "INSERT INTO files (id, company_id, content_type, size, sha256, data, location, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(id)
    .bind(company_id)
    .bind(content_type)
    .bind(data.len() as i64)
    .bind(crate::hash_bytes(data))
    .bind(stored.to_vec())
    .bind(location)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}

async fn load_row(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<Option<FileRow>> {
    sqlx::query_as::<_, FileRow>(
        "SELECT id, content_type, size, sha256, data, location FROM files \
         WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(id)
    .fetch_optional(conn)
    .await
}

async fn delete_row(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    id: &str,
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM files WHERE id = $2 AND (company_id = $1) IS TRUE")
        .bind(company_id)
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

/// The default store: the bytes in the row, in the service's own database.
#[derive(Debug, Clone, Copy, Default)]
pub struct DbFiles;

impl FileStore for DbFiles {
    async fn put(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        content_type: &str,
        data: &[u8],
    ) -> anyhow::Result<String> {
        let id = crate::new_id();
        insert_row(conn, &id, company_id, content_type, data, IN_ROW).await?;
        Ok(id)
    }

    async fn get(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<Option<StoredFile>> {
        match load_row(conn, company_id, id).await? {
            Some(row) if row.location == IN_ROW => Ok(Some(row.into_file(None))),
            Some(row) => anyhow::bail!(
                "file {} is kept in an object store, but INVOICING_STORAGE_URL is not set",
                row.id
            ),
            None => Ok(None),
        }
    }

    async fn delete(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<()> {
        Ok(delete_row(conn, company_id, id).await?)
    }
}

impl FileRow {
    fn into_file(self, data: Option<Vec<u8>>) -> StoredFile {
        StoredFile {
            id: self.id,
            content_type: self.content_type,
            size: self.size,
            sha256: self.sha256,
            data: data.unwrap_or(self.data),
        }
    }
}

/// Files in an object store (S3 or a compatible server, or a local directory).
#[derive(Clone)]
pub struct ObjectFiles {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    /// The storage URL, for messages (any password in it redacted).
    url: String,
}

impl std::fmt::Debug for ObjectFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectFiles")
            .field("url", &self.url)
            .finish()
    }
}

/// What [`ObjectFiles::sweep_orphans`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sweep {
    /// Objects looked at.
    pub seen: u64,
    /// Objects deleted because no row names them.
    pub deleted: u64,
}

impl ObjectFiles {
    /// Opens the store an `INVOICING_STORAGE_URL` names: `s3://bucket[/prefix]` (credentials,
    /// region and endpoint from the usual `AWS_*` variables, e.g. `AWS_ENDPOINT_URL` and
    /// `AWS_ALLOW_HTTP=true` for a local S3-compatible server) or `file:///absolute/dir`.
    pub fn open(url: &str) -> anyhow::Result<Self> {
        let parsed = url::Url::parse(url).with_context(|| {
            format!("INVOICING_STORAGE_URL `{url}` is not a URL (expected s3://bucket/prefix)")
        })?;
        let (store, prefix): (Arc<dyn ObjectStore>, &str) = match parsed.scheme() {
            "s3" => {
                let bucket = parsed.host_str().filter(|b| !b.is_empty()).with_context(|| {
                    format!("INVOICING_STORAGE_URL `{url}` names no bucket (expected s3://bucket/prefix)")
                })?;
                // reqwest is built without a bundled TLS provider; the service uses ring.
                let _ = rustls::crypto::ring::default_provider().install_default();
                let s3 = object_store::aws::AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()
                    .with_context(|| format!("cannot configure the object store `{url}`"))?;
                (Arc::new(s3), parsed.path())
            }
            "file" => {
                let dir = parsed.to_file_path().ok().with_context(|| {
                    format!("INVOICING_STORAGE_URL `{url}` is not an absolute file:// path")
                })?;
                crate::private::create_dir_all(&dir).with_context(|| {
                    format!("cannot create the storage directory {}", dir.display())
                })?;
                let fs = object_store::local::LocalFileSystem::new_with_prefix(&dir).with_context(
                    || format!("cannot open the storage directory {}", dir.display()),
                )?;
                (Arc::new(fs), "")
            }
            other => anyhow::bail!(
                "INVOICING_STORAGE_URL `{url}`: unsupported scheme `{other}` (use s3:// or file://)"
            ),
        };
        Ok(Self::new(store, prefix, url))
    }

    /// Files under `prefix` of any object store (tests use an in-memory one).
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str, url: &str) -> Self {
        Self {
            store,
            prefix: Path::from(prefix.trim_matches('/')),
            url: crate::db::redact_url(url),
        }
    }

    fn location(&self, company_id: &crate::CompanyId, id: &str) -> Path {
        self.prefix.clone().join(company_id.as_str()).join(id)
    }

    /// Writes, reads back and deletes a probe object, so a wrong bucket, endpoint or
    /// credential stops the service at start with a message instead of failing uploads.
    pub async fn check(&self) -> anyhow::Result<()> {
        let probe = self.prefix.clone().join(".probe").join(crate::new_id());
        let what = || format!("the object store {} is not usable", self.url);
        self.store
            .put(&probe, PutPayload::from_static(b"probe"))
            .await
            .with_context(what)?;
        let back = self.store.get(&probe).await.with_context(what)?;
        back.bytes().await.with_context(what)?;
        self.store.delete(&probe).await.with_context(what)?;
        Ok(())
    }

    /// Deletes objects older than `older_than_micros` that no `files` row names. Only
    /// objects under this store's prefix whose names have the `{company}/{file}` shape
    /// are considered.
    pub async fn sweep_orphans(
        &self,
        conn: &mut AnyConnection,
        older_than_micros: i64,
    ) -> anyhow::Result<Sweep> {
        let prefix = (!self.prefix.as_ref().is_empty()).then_some(&self.prefix);
        // Streamed page by page: the bucket may hold more objects than fit in memory.
        let mut listing = self.store.list(prefix);
        let mut sweep = Sweep::default();
        let skip = self.prefix.parts().count();
        while let Some(meta) = listing
            .try_next()
            .await
            .with_context(|| format!("cannot list the object store {}", self.url))?
        {
            let parts: Vec<_> = meta.location.parts().skip(skip).collect();
            let [company, file] = parts.as_slice() else {
                continue;
            };
            if company.as_ref().starts_with('.') {
                continue;
            }
            sweep.seen += 1;
            if meta.last_modified.timestamp_micros() >= older_than_micros {
                continue;
            }
            let row: Option<(String,)> =
                sqlx::query_as("SELECT id FROM files WHERE id = $2 AND (company_id = $1) IS TRUE")
                    .bind(company.as_ref())
                    .bind(file.as_ref())
                    .fetch_optional(&mut *conn)
                    .await?;
            if row.is_none() {
                match self.store.delete(&meta.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => sweep.deleted += 1,
                    Err(e) => return Err(e).context("cannot delete an orphaned object"),
                }
            }
        }
        Ok(sweep)
    }
}

impl FileStore for ObjectFiles {
    async fn put(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        content_type: &str,
        data: &[u8],
    ) -> anyhow::Result<String> {
        let id = crate::new_id();
        // The object first: a row that commits always has its bytes.
        self.store
            .put(
                &self.location(company_id, &id),
                PutPayload::from(bytes::Bytes::copy_from_slice(data)),
            )
            .await
            .with_context(|| format!("cannot write file {id} to the object store {}", self.url))?;
        insert_row(conn, &id, company_id, content_type, data, IN_OBJECT_STORE).await?;
        Ok(id)
    }

    async fn get(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<Option<StoredFile>> {
        let Some(row) = load_row(conn, company_id, id).await? else {
            return Ok(None);
        };
        if row.location == IN_ROW {
            return Ok(Some(row.into_file(None)));
        }
        let what = || format!("cannot read file {id} from the object store {}", self.url);
        let data = self
            .store
            .get(&self.location(company_id, id))
            .await
            .with_context(what)?
            .bytes()
            .await
            .with_context(what)?
            .to_vec();
        // The row's digest is the file's identity: bytes changed behind the service's
        // back are refused rather than served as the company's receipt.
        if data.len() as i64 != row.size || crate::hash_bytes(&data) != row.sha256 {
            anyhow::bail!(
                "file {id} in the object store {} does not match its recorded size and SHA-256",
                self.url
            );
        }
        Ok(Some(row.into_file(Some(data))))
    }

    async fn delete(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<()> {
        // Only the row: the transaction may still roll back. The object becomes an
        // orphan that the daily sweep removes.
        Ok(delete_row(conn, company_id, id).await?)
    }
}

/// The store a deployment uses: [`DbFiles`] or [`ObjectFiles`].
#[derive(Debug, Clone, Default)]
pub enum Files {
    /// Bytes in the database.
    #[default]
    Database,
    /// Bytes in an object store.
    Object(ObjectFiles),
}

impl Files {
    /// The store for an `INVOICING_STORAGE_URL`, `None` meaning the database.
    pub fn open(url: Option<&str>) -> anyhow::Result<Self> {
        match url {
            None | Some("") => Ok(Self::Database),
            Some(url) => Ok(Self::Object(ObjectFiles::open(url)?)),
        }
    }

    /// Where the bytes go, for logs: `database` or the storage URL.
    pub fn describe(&self) -> &str {
        match self {
            Self::Database => "database",
            Self::Object(o) => &o.url,
        }
    }
}

impl FileStore for Files {
    async fn put(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        content_type: &str,
        data: &[u8],
    ) -> anyhow::Result<String> {
        match self {
            Self::Database => DbFiles.put(conn, company_id, content_type, data).await,
            Self::Object(o) => o.put(conn, company_id, content_type, data).await,
        }
    }

    async fn get(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<Option<StoredFile>> {
        match self {
            Self::Database => DbFiles.get(conn, company_id, id).await,
            Self::Object(o) => o.get(conn, company_id, id).await,
        }
    }

    async fn delete(
        &self,
        conn: &mut AnyConnection,
        company_id: &crate::CompanyId,
        id: &str,
    ) -> anyhow::Result<()> {
        match self {
            Self::Database => DbFiles.delete(conn, company_id, id).await,
            Self::Object(o) => o.delete(conn, company_id, id).await,
        }
    }
}
