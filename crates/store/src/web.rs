//! The web app's sign-in state: sessions (stored by the hash of their cookie),
//! sign-in attempts for throttling, and people's own passwords.

use sqlx::AnyConnection;

/// A live session with the account it belongs to.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub user_id: String,
    pub company_id: Option<String>,
    pub csrf_token: String,
    pub expires_at: i64,
    pub email: String,
    pub user_name: String,
    pub language: String,
    /// 1 while the password is a generated one that must be replaced.
    pub password_change_required: i64,
}

/// A new session.
pub struct NewSession<'a> {
    pub id_hash: &'a str,
    pub user_id: &'a str,
    pub company_id: Option<&'a str>,
    pub csrf_token: &'a str,
    pub now: i64,
    pub expires_at: i64,
}

/// Stores a new session.
pub async fn create_session(conn: &mut AnyConnection, s: &NewSession<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO web_sessions (id_hash, user_id, company_id, csrf_token, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(s.id_hash)
    .bind(s.user_id)
    .bind(s.company_id)
    .bind(s.csrf_token)
    .bind(s.now)
    .bind(s.expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The session with this hash, unless it has expired.
pub async fn get_session(
    conn: &mut AnyConnection,
    id_hash: &str,
    now: i64,
) -> sqlx::Result<Option<SessionRow>> {
    sqlx::query_as::<_, SessionRow>(
        "SELECT s.user_id, s.company_id, s.csrf_token, s.expires_at, u.email, u.name AS user_name, \
         u.language, u.password_change_required \
         FROM web_sessions s JOIN users u ON u.id = s.user_id \
         WHERE s.id_hash = $1 AND s.expires_at > $2",
    )
    .bind(id_hash)
    .bind(now)
    .fetch_optional(conn)
    .await
}

/// Sets the company a session works in.
pub async fn set_session_company(
    conn: &mut AnyConnection,
    id_hash: &str,
    company_id: &crate::CompanyId,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE web_sessions SET company_id = $2 WHERE id_hash = $1")
        .bind(id_hash)
        .bind(company_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Ends a session.
pub async fn delete_session(conn: &mut AnyConnection, id_hash: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM web_sessions WHERE id_hash = $1")
        .bind(id_hash)
        .execute(conn)
        .await?;
    Ok(())
}

/// Ends every session of the user except `keep` (after a password change).
pub async fn delete_other_sessions(
    conn: &mut AnyConnection,
    user_id: &str,
    keep: &str,
) -> sqlx::Result<u64> {
    let done = sqlx::query("DELETE FROM web_sessions WHERE user_id = $1 AND id_hash <> $2")
        .bind(user_id)
        .bind(keep)
        .execute(conn)
        .await?;
    Ok(done.rows_affected())
}

/// An account that can sign in with a password.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PasswordAccount {
    pub user_id: String,
    pub password_hash: String,
}

/// The account with this e-mail and a password, if any.
pub async fn password_account(
    conn: &mut AnyConnection,
    email: &str,
) -> sqlx::Result<Option<PasswordAccount>> {
    sqlx::query_as::<_, PasswordAccount>(
        "SELECT id AS user_id, password_hash FROM users \
         WHERE email = $1 AND password_hash IS NOT NULL",
    )
    .bind(email.trim().to_lowercase())
    .fetch_optional(conn)
    .await
}

/// Stores a password the person chose themselves (the change flag is cleared).
pub async fn set_own_password(
    conn: &mut AnyConnection,
    user_id: &str,
    hash: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $2, password_change_required = 0 WHERE id = $1")
        .bind(user_id)
        .bind(hash)
        .execute(conn)
        .await?;
    Ok(())
}

/// The stored password hash of a user.
pub async fn password_hash(
    conn: &mut AnyConnection,
    user_id: &str,
) -> sqlx::Result<Option<String>> {
    let hash: Option<Option<String>> =
        sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(conn)
            .await?;
    Ok(hash.flatten())
}

/// Sets a generated password (an operator's reset); it must be changed at the next sign-in.
pub async fn set_generated_password(
    conn: &mut AnyConnection,
    user_id: &str,
    hash: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE users SET password_hash = $2, password_change_required = 1 WHERE id = $1")
        .bind(user_id)
        .bind(hash)
        .execute(conn)
        .await?;
    Ok(())
}

/// A company a person may work in through the web app.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WebCompany {
    pub id: crate::CompanyId,
    pub name: String,
    /// `password`, `oauth` or `invited`.
    pub kind: String,
    /// The company's type (`ES:...` for Spanish companies).
    pub company_type: Option<String>,
}

/// The companies where the user is an active, unexpired member, by name.
pub async fn companies_of(
    conn: &mut AnyConnection,
    user_id: &str,
    now: i64,
) -> sqlx::Result<Vec<WebCompany>> {
    sqlx::query_as::<_, WebCompany>(
        "SELECT c.id, c.name, m.kind, c.company_type FROM memberships m JOIN companies c ON c.id = m.company_id \
         WHERE m.user_id = $1 AND m.status = 'active' AND (m.expires_at IS NULL OR m.expires_at > $2) \
         ORDER BY c.name, c.id",
    )
    .bind(user_id)
    .bind(now)
    .fetch_all(conn)
    .await
}

/// Counts one sign-in attempt under `key_hash` before its password is checked,
/// and returns how many the key has in its current window, this one included.
///
/// One statement, so parallel attempts cannot all read the same count: each
/// upsert takes the key's row (PostgreSQL row lock; SQLite's single writer) and
/// sees the others' increments. A window opens at the first attempt after
/// `window_start_after`; attempts refused for being over the limit count too,
/// but never extend the window.
pub async fn reserve_attempt(
    conn: &mut AnyConnection,
    key_hash: &str,
    now: i64,
    window_start_after: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "INSERT INTO web_sign_in_attempts (key_hash, window_start, attempts) VALUES ($1, $2, 1) \
         ON CONFLICT (key_hash) DO UPDATE SET \
         attempts = CASE WHEN web_sign_in_attempts.window_start <= $3 THEN 1 \
                    ELSE web_sign_in_attempts.attempts + 1 END, \
         window_start = CASE WHEN web_sign_in_attempts.window_start <= $3 THEN $2 \
                        ELSE web_sign_in_attempts.window_start END \
         RETURNING attempts",
    )
    .bind(key_hash)
    .bind(now)
    .bind(window_start_after)
    .fetch_one(conn)
    .await
}

/// Gives back an attempt reserved under `key_hash` that did not fail (the
/// password was right, or it could not be checked right now).
pub async fn release_attempt(conn: &mut AnyConnection, key_hash: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE web_sign_in_attempts SET attempts = attempts - 1 \
         WHERE key_hash = $1 AND attempts > 0",
    )
    .bind(key_hash)
    .execute(conn)
    .await?;
    Ok(())
}

/// Forgets the attempts under `key_hash` (after a successful sign-in).
pub async fn clear_attempts(conn: &mut AnyConnection, key_hash: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM web_sign_in_attempts WHERE key_hash = $1")
        .bind(key_hash)
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes expired sessions and sign-in attempt windows opened before `failures_before`.
pub async fn prune(conn: &mut AnyConnection, now: i64, failures_before: i64) -> sqlx::Result<u64> {
    let sessions = sqlx::query("DELETE FROM web_sessions WHERE expires_at <= $1")
        .bind(now)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    let failures = sqlx::query("DELETE FROM web_sign_in_attempts WHERE window_start < $1")
        .bind(failures_before)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    Ok(sessions + failures)
}

/// Who asked for AI audit entries: user id to e-mail and name, for the review page.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Requester {
    pub user_id: String,
    pub email: String,
    pub name: String,
}

/// The e-mail and name of every member of the company (former ones included).
pub async fn requesters(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<Vec<Requester>> {
    sqlx::query_as::<_, Requester>(
        "SELECT u.id AS user_id, u.email, COALESCE(NULLIF(m.display_name, ''), \
         CASE WHEN u.name_company_id IS NULL OR u.name_company_id = m.company_id \
         THEN u.name ELSE '' END) AS name \
         FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.company_id = $1",
    )
    .bind(company_id)
    .fetch_all(conn)
    .await
}
