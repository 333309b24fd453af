//! Versioned legal documents and who accepted which.

use sqlx::AnyConnection;

/// The three kinds of legal document a user must accept.
pub const KINDS: [&str; 3] = [
    "terms_of_service",
    "privacy_policy",
    "data_processing_agreement",
];

/// A published legal document, with whether a given user accepted it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DocumentRow {
    pub id: String,
    pub kind: String,
    pub version: i64,
    pub title: String,
    pub body: String,
    pub published_at: i64,
    pub is_current: i64,
    pub accepted_at: Option<i64>,
}

/// The current document of each kind, with the user's acceptance.
pub async fn current(conn: &mut AnyConnection, user_id: &str) -> sqlx::Result<Vec<DocumentRow>> {
    sqlx::query_as::<_, DocumentRow>(
        "SELECT d.id, d.kind, d.version, d.title, d.body, d.published_at, d.is_current, a.accepted_at \
         FROM legal_documents d LEFT JOIN agreement_acceptances a ON a.document_id = d.id AND a.user_id = $1 \
         WHERE d.is_current = 1 ORDER BY d.kind",
    )
    .bind(user_id)
    .fetch_all(conn)
    .await
}

/// Records that the user accepted a current document; false when no current document has that id.
/// Accepting twice keeps the first acceptance time.
pub async fn accept(
    conn: &mut AnyConnection,
    user_id: &str,
    document_id: &str,
) -> sqlx::Result<bool> {
    let current: Option<String> =
        sqlx::query_scalar("SELECT id FROM legal_documents WHERE id = $1 AND is_current = 1")
            .bind(document_id)
            .fetch_optional(&mut *conn)
            .await?;
    if current.is_none() {
        return Ok(false);
    }
    sqlx::query(
        "INSERT INTO agreement_acceptances (user_id, document_id, accepted_at) VALUES ($1, $2, $3) \
         ON CONFLICT (user_id, document_id) DO NOTHING",
    )
    .bind(user_id)
    .bind(document_id)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(true)
}

/// Publishes a new version of a kind of document and makes it the current one.
pub async fn publish(
    conn: &mut AnyConnection,
    kind: &str,
    title: &str,
    body: &str,
) -> sqlx::Result<DocumentRow> {
    let version: i64 = sqlx::query_scalar(
        "SELECT COALESCE(MAX(version), 0) + 1 FROM legal_documents WHERE kind = $1",
    )
    .bind(kind)
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query("UPDATE legal_documents SET is_current = 0 WHERE kind = $1 AND is_current = 1")
        .bind(kind)
        .execute(&mut *conn)
        .await?;
    let id = crate::new_id();
    let now = crate::now_micros();
    sqlx::query(
        "INSERT INTO legal_documents (id, kind, version, title, body, published_at, is_current) \
         VALUES ($1, $2, $3, $4, $5, $6, 1)",
    )
    .bind(&id)
    .bind(kind)
    .bind(version)
    .bind(title)
    .bind(body)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(DocumentRow {
        id,
        kind: kind.to_owned(),
        version,
        title: title.to_owned(),
        body: body.to_owned(),
        published_at: now,
        is_current: 1,
        accepted_at: None,
    })
}
