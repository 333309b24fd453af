//! Users and their memberships in companies.

use sqlx::AnyConnection;

/// A user account.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: String,
    pub email: String,
    pub name: String,
    pub language: String,
    pub profile_image_url: String,
    pub created_at: i64,
}

const COLUMNS: &str = "id, email, name, language, profile_image_url, created_at";

/// Loads a user by id.
pub async fn get(conn: &mut AnyConnection, user_id: &str) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as::<_, UserRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM users WHERE id = $1"
    )))
    .bind(user_id)
    .fetch_optional(conn)
    .await
}

/// Loads a user by e-mail address (compared case-insensitively; stored lower-case).
pub async fn find_by_email(conn: &mut AnyConnection, email: &str) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as::<_, UserRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM users WHERE email = $1"
    )))
    .bind(email.trim().to_lowercase())
    .fetch_optional(conn)
    .await
}

/// Creates a user and returns its id. `named_by` is the company that gave the
/// name, if one did: only that company is shown it (see `members`).
pub async fn insert(
    conn: &mut AnyConnection,
    email: &str,
    name: &str,
    language: &str,
    named_by: Option<&str>,
) -> sqlx::Result<String> {
    let id = crate::new_id();
    sqlx::query(
        "INSERT INTO users (id, email, name, language, created_at, name_company_id) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(email.trim().to_lowercase())
    .bind(name)
    .bind(language)
    .bind(crate::now_micros())
    .bind(named_by)
    .execute(conn)
    .await?;
    Ok(id)
}

/// Admits a user into a company.
pub async fn add_membership(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
    kind: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO memberships (company_id, user_id, kind, status, member_since) \
         VALUES ($1, $2, $3, 'active', $4)",
    )
    .bind(company_id)
    .bind(user_id)
    .bind(kind)
    .bind(crate::now_micros())
    .execute(conn)
    .await?;
    Ok(())
}

/// A company the user can act in, as listed in the session.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AccessibleCompanyRow {
    pub id: String,
    pub name: String,
    pub fiscal_id: String,
    /// 1 once registration is complete (flags are 0/1 on both engines).
    pub is_settled: i64,
}

/// The companies where the user has an active, unexpired membership, except `except_company`.
pub async fn other_companies(
    conn: &mut AnyConnection,
    user_id: &str,
    except_company: &str,
) -> sqlx::Result<Vec<AccessibleCompanyRow>> {
    sqlx::query_as::<_, AccessibleCompanyRow>(
        "SELECT c.id, c.name, c.fiscal_id, c.is_settled FROM memberships m \
         JOIN companies c ON c.id = m.company_id \
         WHERE m.user_id = $1 AND m.company_id <> $2 AND m.status = 'active' \
         AND (m.expires_at IS NULL OR m.expires_at > $3) ORDER BY c.name, c.id",
    )
    .bind(user_id)
    .bind(except_company)
    .bind(crate::now_micros())
    .fetch_all(conn)
    .await
}

/// The status of the user's membership in the company, if any.
pub async fn membership_status(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT status FROM memberships WHERE company_id = $1 AND user_id = $2")
        .bind(company_id)
        .bind(user_id)
        .fetch_optional(conn)
        .await
}

/// Whether the user has a password (only its argon2 hash is ever stored).
pub async fn has_password(conn: &mut AnyConnection, user_id: &str) -> sqlx::Result<bool> {
    let hash: Option<Option<String>> =
        sqlx::query_scalar("SELECT password_hash FROM users WHERE id = $1")
            .bind(user_id)
            .fetch_optional(conn)
            .await?;
    Ok(hash.flatten().is_some())
}

/// Stores a generated password's hash only while the current one is `expected`
/// (`None`: no password yet); false when someone else changed it meanwhile.
/// The person must choose their own password at the next web sign-in.
pub async fn replace_password_hash(
    conn: &mut AnyConnection,
    user_id: &str,
    expected: Option<&str>,
    new_hash: &str,
) -> sqlx::Result<bool> {
    let done = sqlx::query(
        "UPDATE users SET password_hash = $3, password_change_required = 1 WHERE id = $1 \
         AND ((password_hash IS NULL AND $2 IS NULL) OR password_hash = $2)",
    )
    .bind(user_id)
    .bind(expected)
    .bind(new_hash)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
