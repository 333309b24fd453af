//! OAuth 2.1 for MCP clients (migration 0021): registered clients, authorization codes
//! and grants. Codes and refresh tokens are stored only as SHA-256 hashes; the access
//! tokens are ordinary `mcp` API tokens that expire and belong to a grant.

use sqlx::AnyConnection;

/// How long an authorization code can be exchanged, in microseconds (60 s).
pub const CODE_LIFETIME_MICROS: i64 = 60 * 1_000_000;
/// How long an access token works, in seconds (1 h).
pub const ACCESS_TOKEN_SECS: i64 = 3600;
/// How long a refresh token works after it was issued, in microseconds (30 days).
pub const REFRESH_LIFETIME_MICROS: i64 = 30 * 24 * 3600 * 1_000_000;
/// Registrations accepted per hour from everywhere together.
pub const REGISTRATIONS_PER_HOUR: i64 = 1_000;
/// Registrations allowed per client address in an hour, before the global bound: one
/// address cannot use up the hour's registrations of everyone else.
pub const REGISTRATIONS_PER_ADDRESS_PER_HOUR: i64 = 10;
/// Registered clients kept at most (clients never used are dropped after a day).
pub const MAX_CLIENTS: i64 = 10_000;

const HOUR_MICROS: i64 = 3600 * 1_000_000;
const DAY_MICROS: i64 = 24 * HOUR_MICROS;

/// A registered client.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    pub created_at: i64,
}

/// What a registration did.
#[derive(Debug, Clone)]
pub enum Registered {
    /// Stored.
    Client(Client),
    /// Too many registrations in the last hour, or the table is full.
    Refused,
}

/// Registers a public client, within the global bounds. Clients that never got a code
/// and are older than a day are removed first, so abandoned registrations free room.
pub async fn register(
    conn: &mut AnyConnection,
    name: &str,
    redirect_uris: &[String],
    now: i64,
) -> sqlx::Result<Registered> {
    sqlx::query(
        "DELETE FROM oauth_clients WHERE created_at < $1 \
         AND NOT EXISTS (SELECT 1 FROM oauth_codes c WHERE c.client_id = oauth_clients.id) \
         AND NOT EXISTS (SELECT 1 FROM oauth_grants g WHERE g.client_id = oauth_clients.id)",
    )
    .bind(now - DAY_MICROS)
    .execute(&mut *conn)
    .await?;
    let (recent, total): (i64, i64) = sqlx::query_as(
        "SELECT COALESCE(SUM(CASE WHEN created_at > $1 THEN 1 ELSE 0 END), 0), COUNT(*) \
         FROM oauth_clients",
    )
    .bind(now - HOUR_MICROS)
    .fetch_one(&mut *conn)
    .await?;
    if recent >= REGISTRATIONS_PER_HOUR || total >= MAX_CLIENTS {
        return Ok(Registered::Refused);
    }
    let client = Client {
        id: crate::new_id(),
        name: name.to_owned(),
        redirect_uris: redirect_uris.to_vec(),
        created_at: now,
    };
    let uris = serde_json::to_string(&client.redirect_uris)
        .map_err(|e| sqlx::Error::Encode(Box::new(e)))?;
    sqlx::query(
        "INSERT INTO oauth_clients (id, name, redirect_uris, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(&client.id)
    .bind(&client.name)
    .bind(uris)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(Registered::Client(client))
}

/// A registered client by its `client_id`.
pub async fn client(conn: &mut AnyConnection, id: &str) -> sqlx::Result<Option<Client>> {
    let row: Option<(String, String, String, i64)> = sqlx::query_as(
        "SELECT id, name, redirect_uris, created_at FROM oauth_clients WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.map(|(id, name, uris, created_at)| {
        let redirect_uris = serde_json::from_str(&uris).map_err(|e| {
            sqlx::Error::Decode(format!("oauth_clients.redirect_uris of {id}: {e}").into())
        })?;
        Ok(Client {
            id,
            name,
            redirect_uris,
            created_at,
        })
    })
    .transpose()
}

/// An authorization code to store (its secret only as a hash).
#[derive(Debug)]
pub struct NewCode<'a> {
    pub code_hash: &'a str,
    pub client_id: &'a str,
    pub company_id: &'a str,
    pub user_id: &'a str,
    pub redirect_uri: &'a str,
    pub code_challenge: &'a str,
    pub resource: Option<&'a str>,
    pub now: i64,
}

/// Stores a code valid for [`CODE_LIFETIME_MICROS`]; codes over a day old are dropped.
pub async fn insert_code(conn: &mut AnyConnection, code: &NewCode<'_>) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM oauth_codes WHERE created_at < $1")
        .bind(code.now - DAY_MICROS)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO oauth_codes (code_hash, client_id, company_id, user_id, redirect_uri, \
         code_challenge, resource, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(code.code_hash)
    .bind(code.client_id)
    .bind(code.company_id)
    .bind(code.user_id)
    .bind(code.redirect_uri)
    .bind(code.code_challenge)
    .bind(code.resource)
    .bind(code.now)
    .bind(code.now + CODE_LIFETIME_MICROS)
    .execute(conn)
    .await?;
    Ok(())
}

/// A code taken for exchange.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CodeRow {
    pub code_hash: String,
    pub client_id: String,
    pub company_id: crate::CompanyId,
    pub user_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub resource: Option<String>,
    pub expires_at: i64,
}

/// What presenting a code found.
#[derive(Debug)]
pub enum Taken {
    /// First use, now spent: the caller checks client, redirect URI and verifier.
    Fresh(CodeRow),
    /// No such code, or it expired.
    Invalid,
    /// Used before: what its first exchange issued is revoked now.
    Reused,
}

/// Spends a code: it can be exchanged once, whatever the outcome of that exchange.
pub async fn take_code(conn: &mut AnyConnection, code_hash: &str, now: i64) -> sqlx::Result<Taken> {
    let row: Option<(Option<i64>, Option<String>)> =
        sqlx::query_as("SELECT used_at, grant_id FROM oauth_codes WHERE code_hash = $1")
            .bind(code_hash)
            .fetch_optional(&mut *conn)
            .await?;
    match row {
        None => return Ok(Taken::Invalid),
        Some((Some(_), grant)) => {
            if let Some(grant) = grant {
                revoke_grant(conn, &grant, now).await?;
            }
            return Ok(Taken::Reused);
        }
        Some((None, _)) => {}
    }
    let spent =
        sqlx::query("UPDATE oauth_codes SET used_at = $2 WHERE code_hash = $1 AND used_at IS NULL")
            .bind(code_hash)
            .bind(now)
            .execute(&mut *conn)
            .await?;
    if spent.rows_affected() != 1 {
        return Ok(Taken::Reused);
    }
    let code = sqlx::query_as::<_, CodeRow>(
        "SELECT code_hash, client_id, company_id, user_id, redirect_uri, code_challenge, \
         resource, expires_at FROM oauth_codes WHERE code_hash = $1",
    )
    .bind(code_hash)
    .fetch_one(conn)
    .await?;
    if code.expires_at <= now {
        return Ok(Taken::Invalid);
    }
    Ok(Taken::Fresh(code))
}

/// Secrets just issued: the only moment they exist in clear.
#[derive(Debug, Clone)]
pub struct Issued {
    pub access_token: String,
    pub refresh_token: String,
    pub token_id: String,
    pub grant_id: String,
}

fn refresh_secret() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!(
        "rt_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    )
}

/// An expiring `mcp` token of the grant, named after the client.
async fn access_token(
    conn: &mut AnyConnection,
    grant_id: &str,
    company_id: &crate::CompanyId,
    user_id: &str,
    client_name: &str,
    now: i64,
) -> sqlx::Result<(String, String)> {
    let token = uuid::Uuid::new_v4().to_string();
    let id = crate::new_id();
    sqlx::query(
        "INSERT INTO api_tokens (id, company_id, user_id, kind, description, token_hash, \
         proof_hash, created_at, expires_at, oauth_grant_id) \
         VALUES ($1, $2, $3, 'mcp', $4, $5, NULL, $6, $7, $8)",
    )
    .bind(&id)
    .bind(company_id)
    .bind(user_id)
    .bind(format!("OAuth: {client_name}"))
    .bind(crate::hash_secret(&token))
    .bind(now)
    .bind(now + ACCESS_TOKEN_SECS * 1_000_000)
    .bind(grant_id)
    .execute(conn)
    .await?;
    Ok((id, token))
}

/// Creates the grant of an exchanged code with its first access and refresh tokens.
pub async fn grant(
    conn: &mut AnyConnection,
    code: &CodeRow,
    client_name: &str,
    now: i64,
) -> sqlx::Result<Issued> {
    let grant_id = crate::new_id();
    let refresh_token = refresh_secret();
    sqlx::query(
        "INSERT INTO oauth_grants (id, client_id, company_id, user_id, refresh_hash, \
         refresh_expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&grant_id)
    .bind(&code.client_id)
    .bind(&code.company_id)
    .bind(&code.user_id)
    .bind(crate::hash_secret(&refresh_token))
    .bind(now + REFRESH_LIFETIME_MICROS)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE oauth_codes SET grant_id = $2 WHERE code_hash = $1")
        .bind(&code.code_hash)
        .bind(&grant_id)
        .execute(&mut *conn)
        .await?;
    let (token_id, access_token) = access_token(
        conn,
        &grant_id,
        &code.company_id,
        &code.user_id,
        client_name,
        now,
    )
    .await?;
    Ok(Issued {
        access_token,
        refresh_token,
        token_id,
        grant_id,
    })
}

/// Exchanges a refresh token of `client_id` for a new access token and a new refresh
/// token (the old one stops working); `None` when it is unknown, expired, revoked, of
/// another client, or its person is no longer an active member of the company.
pub async fn refresh(
    conn: &mut AnyConnection,
    refresh_hash: &str,
    client_id: &str,
    now: i64,
) -> sqlx::Result<Option<Issued>> {
    let row: Option<(String, crate::CompanyId, String, String)> = sqlx::query_as(
        "SELECT g.id, g.company_id, g.user_id, c.name FROM oauth_grants g \
         JOIN oauth_clients c ON c.id = g.client_id \
         JOIN memberships m ON m.company_id = g.company_id AND m.user_id = g.user_id \
         WHERE g.refresh_hash = $1 AND g.client_id = $2 AND g.revoked_at IS NULL \
         AND g.refresh_expires_at > $3 AND m.status = 'active' \
         AND (m.expires_at IS NULL OR m.expires_at > $3)",
    )
    .bind(refresh_hash)
    .bind(client_id)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((grant_id, company_id, user_id, client_name)) = row else {
        return Ok(None);
    };
    let refresh_token = refresh_secret();
    let rotated = sqlx::query(
        "UPDATE oauth_grants SET refresh_hash = $3, refresh_expires_at = $4 \
         WHERE id = $1 AND refresh_hash = $2 AND revoked_at IS NULL",
    )
    .bind(&grant_id)
    .bind(refresh_hash)
    .bind(crate::hash_secret(&refresh_token))
    .bind(now + REFRESH_LIFETIME_MICROS)
    .execute(&mut *conn)
    .await?;
    if rotated.rows_affected() != 1 {
        return Ok(None);
    }
    let (token_id, access_token) =
        access_token(conn, &grant_id, &company_id, &user_id, &client_name, now).await?;
    Ok(Some(Issued {
        access_token,
        refresh_token,
        token_id,
        grant_id,
    }))
}

/// Ends a grant: its refresh token and every access token it issued stop working.
pub async fn revoke_grant(conn: &mut AnyConnection, grant_id: &str, now: i64) -> sqlx::Result<()> {
    crate::token_cache::changed();
    sqlx::query("UPDATE oauth_grants SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
        .bind(grant_id)
        .bind(now)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE api_tokens SET revoked_at = $2 WHERE oauth_grant_id = $1 AND revoked_at IS NULL",
    )
    .bind(grant_id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}
