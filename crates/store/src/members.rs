//! Company members: memberships joined with their accounts.
//!
//! A membership's stored `status` is `active` or `deactivated`; `expired` is
//! not stored but read from `expires_at`, so expiry needs no job. Token
//! authentication (`tokens::authenticate`) applies the same rule.

use sqlx::AnyConnection;

/// A member of a company as listed.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemberRow {
    pub user_id: String,
    pub email: String,
    /// The account's name as this company may see it: empty until an invited
    /// account has signed in, and empty when another company gave the name.
    pub account_name: String,
    /// The company's name for the member, if set.
    pub display_name: Option<String>,
    /// `oauth`, `password` or `invited`.
    pub kind: String,
    /// Stored status: `active` or `deactivated`.
    pub status: String,
    pub member_since: i64,
    pub expires_at: Option<i64>,
}

impl MemberRow {
    /// The name this company shows for the member: its own, else the account's
    /// (never one another company gave); `None` when there is neither.
    pub fn name(&self) -> Option<String> {
        self.display_name
            .clone()
            .filter(|n| !n.is_empty())
            .or_else(|| Some(self.account_name.clone()).filter(|n| !n.is_empty()))
    }
}

/// An account's name is shown to a company only when no company gave it (the
/// person's own, from their identity provider) or this company did.
const SELECT: &str = "SELECT m.user_id, u.email, \
    CASE WHEN u.name_company_id IS NULL OR u.name_company_id = m.company_id THEN u.name \
    ELSE '' END AS account_name, m.display_name, m.kind, \
    m.status, m.member_since, m.expires_at FROM memberships m JOIN users u ON u.id = m.user_id \
    WHERE m.company_id = $1";

/// Members of the company, newest account first, after the keyset cursor `before_user`.
pub async fn list(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    before_user: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<MemberRow>> {
    sqlx::query_as::<_, MemberRow>(sqlx::AssertSqlSafe(format!(
        "{SELECT} AND ($2 IS NULL OR m.user_id < $2) ORDER BY m.user_id DESC LIMIT CAST($3 AS BIGINT)"
    )))
    .bind(company_id)
    .bind(before_user)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// The member of the company with this e-mail address (compared lower-case).
pub async fn get_by_email(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    email: &str,
) -> sqlx::Result<Option<MemberRow>> {
    sqlx::query_as::<_, MemberRow>(sqlx::AssertSqlSafe(format!("{SELECT} AND u.email = $2")))
        .bind(company_id)
        .bind(email.trim().to_lowercase())
        .fetch_optional(conn)
        .await
}

/// The member of the company with this user id.
pub async fn get_by_user(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
) -> sqlx::Result<Option<MemberRow>> {
    sqlx::query_as::<_, MemberRow>(sqlx::AssertSqlSafe(format!("{SELECT} AND m.user_id = $2")))
        .bind(company_id)
        .bind(user_id)
        .fetch_optional(conn)
        .await
}

/// A membership to write.
#[derive(Debug, Clone)]
pub struct NewMember<'a> {
    pub user_id: &'a str,
    pub kind: &'a str,
    pub member_since: i64,
    pub expires_at: Option<i64>,
    pub display_name: Option<&'a str>,
}

/// Admits a user into the company as an active member.
pub async fn insert(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    m: &NewMember<'_>,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO memberships (company_id, user_id, kind, status, member_since, expires_at, display_name) \
         VALUES ($1, $2, $3, 'active', $4, $5, $6)",
    )
    .bind(company_id)
    .bind(m.user_id)
    .bind(m.kind)
    .bind(m.member_since)
    .bind(m.expires_at)
    .bind(m.display_name)
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets a member's expiry and company display name.
pub async fn update(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
    expires_at: Option<i64>,
    display_name: Option<&str>,
) -> sqlx::Result<()> {
    crate::token_cache::changed();
    sqlx::query(
        "UPDATE memberships SET expires_at = $3, display_name = $4 \
         WHERE company_id = $1 AND user_id = $2",
    )
    .bind(company_id)
    .bind(user_id)
    .bind(expires_at)
    .bind(display_name)
    .execute(conn)
    .await?;
    Ok(())
}

/// Sets a member's stored status (`active` or `deactivated`); `member_since` is untouched.
pub async fn set_status(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    user_id: &str,
    status: &str,
) -> sqlx::Result<()> {
    crate::token_cache::changed();
    sqlx::query("UPDATE memberships SET status = $3 WHERE company_id = $1 AND user_id = $2")
        .bind(company_id)
        .bind(user_id)
        .bind(status)
        .execute(conn)
        .await?;
    Ok(())
}

/// How many members other than `except_user` are active and unexpired at `now`.
pub async fn count_other_active(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
    except_user: &str,
    now: i64,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM memberships WHERE company_id = $1 AND user_id <> $2 \
         AND status = 'active' AND (expires_at IS NULL OR expires_at > $3)",
    )
    .bind(company_id)
    .bind(except_user)
    .bind(now)
    .fetch_one(conn)
    .await
}

/// Whether the user has ever signed in with an identity provider (an `oauth` membership anywhere).
pub async fn has_signed_in_with_oauth(
    conn: &mut AnyConnection,
    user_id: &str,
) -> sqlx::Result<bool> {
    let n: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM memberships WHERE user_id = $1 AND kind = 'oauth'",
    )
    .bind(user_id)
    .fetch_one(conn)
    .await?;
    Ok(n > 0)
}

/// Records a user's first sign-in with an identity provider: their `invited`
/// memberships become `oauth` (called by the sign-in flow).
pub async fn record_oauth_sign_in(
    conn: &mut AnyConnection,
    user_id: &str,
    name: &str,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE memberships SET kind = 'oauth' WHERE user_id = $1 AND kind = 'invited'")
        .bind(user_id)
        .execute(&mut *conn)
        .await?;
    // The provider's name is the person's own: every company of theirs may see it.
    sqlx::query("UPDATE users SET name = $2, name_company_id = NULL WHERE id = $1 AND name = ''")
        .bind(user_id)
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}

/// Takes the company's row lock until the transaction ends, so concurrent
/// member changes of one company run one after the other (the "last active
/// member" check must not race). SQLite has a single writer already.
///
/// It assigns a column no foreign key refers to: assigning `id`, even to itself, makes
/// SQLite search every table that refers to companies for the company's rows, twice,
/// while its one writer is held (see `companies::update`).
pub async fn lock_company(
    conn: &mut AnyConnection,
    company_id: &crate::CompanyId,
) -> sqlx::Result<bool> {
    let done = sqlx::query("UPDATE companies SET updated_at = updated_at WHERE id = $1")
        .bind(company_id)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}
