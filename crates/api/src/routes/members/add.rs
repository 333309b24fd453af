//! `POST /v1/members`: the request parsed, then the member written with the job that mails them.

use std::collections::BTreeMap;

use store::jobs::{EmailSend, MemberPassword, NewJob, kind};

use super::{AddCompanyUserRequest, CompanyUser, CompanyUserKind, future_expiry};
use crate::{
    auth::Caller,
    error::{ApiError, ApiResult},
    views::{email, optional_text},
};

/// How the new member will sign in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SignIn {
    Password,
    Oauth,
}

/// A valid request to add a member.
#[derive(Debug)]
pub(super) struct NewMember {
    email: String,
    sign_in: SignIn,
    expires_at: Option<i64>,
    language: Option<String>,
    name: Option<String>,
}

impl NewMember {
    /// Checks every field; the error names the one to fix.
    pub(super) fn parse(req: AddCompanyUserRequest, now: i64) -> ApiResult<Self> {
        let sign_in = match req.kind {
            CompanyUserKind::Password => SignIn::Password,
            CompanyUserKind::Oauth => SignIn::Oauth,
            CompanyUserKind::Invited => {
                return Err(ApiError::bad_request(
                    "`kind` cannot be `invited`: that is how an `oauth` member shows until their \
                     first sign-in. Send `password` or `oauth`.",
                ));
            }
        };
        Ok(Self {
            email: email("email", &req.email)?,
            sign_in,
            expires_at: future_expiry(req.expires_at, now)?,
            language: optional_text("language", req.language, 35)?
                .map(|l| language_tag(&l))
                .transpose()?,
            name: optional_text("name", req.name, 200)?,
        })
    }
}

/// A language tag such as `en_US`, `es`, `es-MX` (normalised to `_`), of a language the
/// service has data for: it picks the member's mail and the locale of their reports.
fn language_tag(tag: &str) -> ApiResult<String> {
    let mut parts = tag.split(['_', '-']);
    let primary = parts.next().unwrap_or_default();
    let ok = (2..=3).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_alphabetic())
        && parts
            .all(|p| (2..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()));
    if !ok {
        return Err(ApiError::bad_request(format!(
            "`language` must be a language tag such as `en_US` or `es_ES`, not `{tag}`."
        )));
    }
    reports::supported(tag).map_err(|e| ApiError::bad_request(format!("`language`: {e}.")))?;
    Ok(tag.replace('-', "_"))
}

/// Writes the account (if new), the membership and the mail job, in the request's transaction.
pub(super) async fn add(
    conn: &mut sqlx::AnyConnection,
    caller: &Caller,
    new: &NewMember,
    now: i64,
) -> ApiResult<store::members::MemberRow> {
    let company_id = &caller.company_id;
    store::members::lock_company(conn, company_id).await?;
    let internal = |what: &str| ApiError::Internal(anyhow::anyhow!("{what} of the caller missing"));
    let acting = store::users::get(conn, &caller.user_id)
        .await?
        .ok_or_else(|| internal("user"))?;
    let company = store::companies::get(conn, company_id)
        .await?
        .ok_or_else(|| internal("company"))?;
    if let Some(m) = store::members::get_by_email(conn, company_id, &new.email).await? {
        return Err(already_member(&new.email, &CompanyUser::from_row(m, now)?));
    }
    let language = new.language.clone().unwrap_or(acting.language.clone());
    let local_part = new.email.split('@').next().unwrap_or_default().to_owned();

    let existing = store::users::find_by_email(conn, &new.email).await?;
    let created = existing.is_none();
    let user_id = match existing {
        Some(user) => user.id,
        None => {
            // An oauth invitee's name comes from their identity provider at first sign-in.
            let name = match new.sign_in {
                SignIn::Password => new.name.clone().unwrap_or(local_part.clone()),
                SignIn::Oauth => new.name.clone().unwrap_or_default(),
            };
            // A name this company gave is this company's: no other company is shown it.
            let named_by = new.name.is_some().then_some(company_id.as_str());
            store::users::insert(conn, &new.email, &name, &language, named_by)
                .await
                .map_err(|e| {
                    if store::is_unique_violation(&e) {
                        ApiError::Conflict(format!(
                            "An account for {} was created at this very moment; retry.",
                            new.email
                        ))
                    } else {
                        e.into()
                    }
                })?
        }
    };
    // Someone who already signed in with their identity provider is no longer "invited".
    let signed_in = new.sign_in == SignIn::Oauth
        && !created
        && store::members::has_signed_in_with_oauth(conn, &user_id).await?;
    let stored_kind = match new.sign_in {
        SignIn::Password => "password",
        SignIn::Oauth if signed_in => "oauth",
        SignIn::Oauth => "invited",
    };
    // The account's name belongs to its user; a name given for an existing account is this company's.
    let display_name = if created { None } else { new.name.as_deref() };
    store::members::insert(
        conn,
        company_id,
        &store::members::NewMember {
            user_id: &user_id,
            kind: stored_kind,
            member_since: now,
            expires_at: new.expires_at,
            display_name,
        },
    )
    .await?;

    let job =
        if new.sign_in == SignIn::Password && !store::users::has_password(conn, &user_id).await? {
            NewJob::new(
                kind::MEMBER_PASSWORD,
                MemberPassword {
                    company_id: company_id.clone(),
                    user_id: user_id.clone(),
                    language,
                    invited_by: caller.user_id.clone(),
                    issued_hash: None,
                },
            )
        } else {
            // An account that can already sign in keeps its password: a company
            // must not reset the password a person uses for other companies.
            // The inviter as this company knows them, never a name another company gave.
            let inviter_name = store::members::get_by_user(conn, company_id, &acting.id)
                .await?
                .and_then(|m| m.name())
                .unwrap_or(acting.email.clone());
            let row = store::members::get_by_email(conn, company_id, &new.email).await?;
            let name = match row {
                Some(r) => CompanyUser::from_row(r, now)?.name,
                None => None,
            }
            .unwrap_or(local_part);
            let vars: BTreeMap<String, String> = [
                ("name", name),
                ("company_name", company.name.clone()),
                ("inviter_name", inviter_name),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
            NewJob::new(
                kind::EMAIL_SEND,
                EmailSend {
                    to: new.email.clone(),
                    template: "member_added".into(),
                    language,
                    vars,
                },
            )
        };
    store::jobs::enqueue(conn, &job.for_company(company_id)).await?;

    store::members::get_by_email(conn, company_id, &new.email)
        .await?
        .ok_or_else(|| internal("new member"))
}

/// The 409 for an address that is already a member, saying what to do instead.
fn already_member(address: &str, member: &CompanyUser) -> ApiError {
    use super::CompanyUserStatus::*;
    ApiError::Conflict(match member.status {
        Active => format!("{address} is already an active member of this company."),
        Deactivated => format!(
            "{address} is already a member of this company, deactivated: reactivate them with \
             POST /v1/members/{address}/reactivate."
        ),
        Expired => format!(
            "{address} is already a member of this company whose access expired: extend it with \
             PATCH /v1/members/{address} (`expiresAt`)."
        ),
    })
}
