//! File storage: receipts and other uploaded documents.
//!
//! Files live in the database (`files` table) so that storing one is part of
//! the request's transaction: a request that fails, or an AI caller's dry run,
//! leaves nothing behind, and every server of a deployment sees every file.
//! The [`FileStore`] trait is the seam for an object store (S3) when
//! deployments outgrow that; such a store must write only after commit.

use sqlx::AnyConnection;

/// A stored file.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoredFile {
    pub id: String,
    pub content_type: String,
    pub size: i64,
    pub sha256: String,
    pub data: Vec<u8>,
}

/// Where files are kept; implementations must honour the caller's transaction.
#[allow(async_fn_in_trait)]
pub trait FileStore {
    /// Stores `data` for the company and returns the new file's id.
    async fn put(
        &self,
        conn: &mut AnyConnection,
        company_id: &str,
        content_type: &str,
        data: &[u8],
    ) -> sqlx::Result<String>;
    /// Loads a file of the company.
    async fn get(
        &self,
        conn: &mut AnyConnection,
        company_id: &str,
        id: &str,
    ) -> sqlx::Result<Option<StoredFile>>;
    /// Deletes a file of the company.
    async fn delete(
        &self,
        conn: &mut AnyConnection,
        company_id: &str,
        id: &str,
    ) -> sqlx::Result<()>;
}

/// The default store: a table in the service's own database.
#[derive(Debug, Clone, Copy, Default)]
pub struct DbFiles;

impl FileStore for DbFiles {
    async fn put(
        &self,
        conn: &mut AnyConnection,
        company_id: &str,
        content_type: &str,
        data: &[u8],
    ) -> sqlx::Result<String> {
        let id = crate::new_id();
        sqlx::query(
            "INSERT INTO files (id, company_id, content_type, size, sha256, data, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&id)
        .bind(company_id)
        .bind(content_type)
        .bind(data.len() as i64)
        .bind(crate::hash_bytes(data))
        .bind(data.to_vec())
        .bind(crate::now_micros())
        .execute(conn)
        .await?;
        Ok(id)
    }

    async fn get(
        &self,
        conn: &mut AnyConnection,
        company_id: &str,
        id: &str,
    ) -> sqlx::Result<Option<StoredFile>> {
        sqlx::query_as::<_, StoredFile>(
            "SELECT id, content_type, size, sha256, data FROM files WHERE company_id = $1 AND id = $2",
        )
        .bind(company_id)
        .bind(id)
        .fetch_optional(conn)
        .await
    }

    async fn delete(
        &self,
        conn: &mut AnyConnection,
        company_id: &str,
        id: &str,
    ) -> sqlx::Result<()> {
        sqlx::query("DELETE FROM files WHERE company_id = $1 AND id = $2")
            .bind(company_id)
            .bind(id)
            .execute(conn)
            .await?;
        Ok(())
    }
}
