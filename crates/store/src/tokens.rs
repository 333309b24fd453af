//! API tokens: stored only as SHA-256 hashes.

use sqlx::AnyConnection;

/// What a presented token resolves to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenAuth {
    pub token_id: String,
    pub company_id: crate::CompanyId,
    pub user_id: String,
    pub kind: String,
    pub proof_hash: Option<String>,
    /// The company's type (`ES:...` for Spanish companies), for the caller's language.
    pub company_type: Option<String>,
    /// When the token stops working (tokens issued through OAuth), in microseconds.
    pub token_expires_at: Option<i64>,
    /// When the membership behind it ends, in microseconds.
    pub member_expires_at: Option<i64>,
}

/// Resolves a token hash to its token, only while the token is not revoked nor expired
/// (tokens issued through OAuth expire) and its user is an active, unexpired member of
/// the token's company.
pub async fn authenticate(
    conn: &mut AnyConnection,
    token_hash: &str,
) -> sqlx::Result<Option<TokenAuth>> {
    sqlx::query_as::<_, TokenAuth>(
        "SELECT t.id AS token_id, t.company_id, t.user_id, t.kind, t.proof_hash, c.company_type, \
         t.expires_at AS token_expires_at, m.expires_at AS member_expires_at \
         FROM api_tokens t JOIN memberships m ON m.company_id = t.company_id AND m.user_id = t.user_id \
         JOIN companies c ON c.id = t.company_id \
         WHERE t.token_hash = $1 AND t.revoked_at IS NULL AND m.status = 'active' \
         AND (m.expires_at IS NULL OR m.expires_at > $2) \
         AND (t.expires_at IS NULL OR t.expires_at > $2)",
    )
    .bind(token_hash)
    .bind(crate::now_micros())
    .fetch_optional(conn)
    .await
}

/// A token as listed (never its value or proof).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenRow {
    pub id: String,
    pub user_id: String,
    pub user_email: String,
    pub kind: String,
    pub description: String,
    pub created_at: i64,
    /// When the token stops working (tokens issued through OAuth); `None`: never.
    pub expires_at: Option<i64>,
    /// The name of the OAuth client the token was issued to, if it was.
    pub oauth_client: Option<String>,
}

/// Stores a new token by its hashes and returns its id.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
    kind: &str,
    description: &str,
    token_hash: &str,
    proof_hash: Option<&str>,
) -> sqlx::Result<String> {
    let id = crate::new_id();
    sqlx::query(
        "INSERT INTO api_tokens (id, company_id, user_id, kind, description, token_hash, proof_hash, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(user_id)
    .bind(kind)
    .bind(description)
    .bind(token_hash)
    .bind(proof_hash)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(id)
}

// Expired tokens are not listed: they no longer work and cannot be revoked usefully
// (an OAuth client that refreshed has a newer one, listed).
const LIST: &str = "SELECT t.id, t.user_id, u.email AS user_email, t.kind, t.description, t.created_at, \
    t.expires_at, oc.name AS oauth_client \
    FROM api_tokens t JOIN users u ON u.id = t.user_id \
    LEFT JOIN oauth_grants og ON og.id = t.oauth_grant_id \
    LEFT JOIN oauth_clients oc ON oc.id = og.client_id \
    WHERE t.company_id = $1 AND t.revoked_at IS NULL";

/// Active tokens of a company, newest first, after the keyset cursor `before_id`.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_id: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<TokenRow>> {
    sqlx::query_as::<_, TokenRow>(sqlx::AssertSqlSafe(format!(
        "{LIST} AND ($2 IS NULL OR t.id < $2) AND (t.expires_at IS NULL OR t.expires_at > $4) \
         ORDER BY t.id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_id)
    .bind(limit)
    .bind(crate::now_micros())
    .fetch_all(conn)
    .await
}

/// One active token of a company.
pub async fn get(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    token_id: &str,
) -> sqlx::Result<Option<TokenRow>> {
    sqlx::query_as::<_, TokenRow>(sqlx::AssertSqlSafe(format!("{LIST} AND t.id = $2")))
        .bind(company_id)
        .bind(token_id)
        .fetch_optional(conn)
        .await
}

/// The company a token belongs to, revoked or not (for an operator who has only its id).
pub async fn company_of(
    conn: &mut AnyConnection,
    token_id: &str,
) -> sqlx::Result<Option<crate::CompanyId>> {
    let row: Option<(crate::CompanyId,)> =
        sqlx::query_as("SELECT company_id FROM api_tokens WHERE id = $1")
            .bind(token_id)
            .fetch_optional(conn)
            .await?;
    Ok(row.map(|(company,)| company))
}

/// Revokes a token of the company; false when there is no such active token. A token
/// issued through OAuth takes its grant with it: the refresh token and every other
/// access token of that grant stop working too.
pub async fn revoke(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    token_id: &str,
) -> sqlx::Result<bool> {
    let now = crate::now_micros();
    crate::token_cache::changed();
    let done = sqlx::query(
        "UPDATE api_tokens SET revoked_at = $3 WHERE id = $2 AND (company_id = $1) IS TRUE AND revoked_at IS NULL",
    )
    .bind(company_id)
    .bind(token_id)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    if done.rows_affected() != 1 {
        return Ok(false);
    }
    let grant: Option<(Option<String>,)> = sqlx::query_as(
        "SELECT oauth_grant_id FROM api_tokens WHERE id = $2 AND (company_id = $1) IS TRUE",
    )
    .bind(company_id)
    .bind(token_id)
    .fetch_optional(&mut *conn)
    .await?;
    if let Some((Some(grant),)) = grant {
        crate::oauth::revoke_grant(conn, &grant, now).await?;
    }
    Ok(true)
}

/// A token just created: the only moment its secrets exist in clear.
#[derive(Debug, Clone)]
pub struct IssuedToken {
    pub id: String,
    pub token: String,
    pub human_proof: Option<String>,
    pub created_at: i64,
}

/// Creates a token of `kind` (`standard` gets a human proof, `mcp` none) and
/// returns its secrets once; only their hashes are stored.
pub async fn issue(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
    kind: &str,
    description: &str,
) -> sqlx::Result<IssuedToken> {
    use base64::Engine;
    use rand::RngCore;
    let token = uuid::Uuid::new_v4().to_string();
    let human_proof = (kind == "standard").then(|| {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        format!(
            "hp_{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        )
    });
    let proof_hash = human_proof.as_deref().map(crate::hash_secret);
    let id = insert(
        conn,
        company_id,
        user_id,
        kind,
        description,
        &crate::hash_secret(&token),
        proof_hash.as_deref(),
    )
    .await?;
    Ok(IssuedToken {
        id,
        token,
        human_proof,
        created_at: crate::now_micros(),
    })
}

/// Why a token can no longer act, if it cannot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Not revoked, and its user is an active, unexpired member of its company.
    Active,
    /// Revoked (or never a token of this company).
    Revoked,
    /// Its user is no longer an active member of the company (deactivated, expired or removed).
    MemberInactive,
}

/// Whether a token of the company could still authenticate at `now`: the same conditions
/// as [`authenticate`], by id (for replaying what the token asked for earlier), except
/// expiry: an OAuth access token lasts an hour, and what it asked for stays approvable
/// after that (revoking the token, or its grant, is what withdraws it).
pub async fn standing(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    token_id: &str,
    now: i64,
) -> sqlx::Result<Standing> {
    let row: Option<(Option<i64>, Option<String>, Option<i64>)> = sqlx::query_as(
        "SELECT t.revoked_at, m.status, m.expires_at FROM api_tokens t \
         LEFT JOIN memberships m ON m.company_id = t.company_id AND m.user_id = t.user_id \
         WHERE t.company_id = $1 AND t.id = $2",
    )
    .bind(company_id)
    .bind(token_id)
    .fetch_optional(conn)
    .await?;
    Ok(match row {
        None | Some((Some(_), _, _)) => Standing::Revoked,
        Some((None, Some(status), expires))
            if status == "active" && expires.is_none_or(|e| e > now) =>
        {
            Standing::Active
        }
        Some((None, _, _)) => Standing::MemberInactive,
    })
}
