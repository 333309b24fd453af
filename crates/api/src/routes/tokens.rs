//! API tokens (`/v1/tokens`): created and revoked by people only.

use axum::{
    Json,
    extract::{Path, Query},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::{ShownOnce, Tx},
    json::ApiJson,
    pagination::{ListParams, Page},
    views::{required_text, ts, ts_opt},
};

/// Kind of token: `standard` (with a human proof) or `mcp` (always an AI caller).
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenKind {
    #[default]
    Standard,
    Mcp,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Mcp => "mcp",
        }
    }
}

/// A token as listed: never its value or proof.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TokenView {
    pub id: String,
    pub description: String,
    pub kind: String,
    /// E-mail of the user the token acts as.
    pub user_email: String,
    pub created_at: DateTime<Utc>,
    /// When the token stops working: tokens issued to an MCP client through OAuth
    /// expire after an hour (the client refreshes them); null for tokens made by people.
    pub expires_at: Option<DateTime<Utc>>,
    /// The name the MCP client registered with, for a token issued through OAuth
    /// (revoking the token also ends the client's refresh token).
    pub oauth_client: Option<String>,
}

impl TryFrom<store::tokens::TokenRow> for TokenView {
    type Error = ApiError;

    fn try_from(t: store::tokens::TokenRow) -> ApiResult<Self> {
        Ok(Self {
            id: t.id,
            description: t.description,
            kind: t.kind,
            user_email: t.user_email,
            created_at: ts(t.created_at)?,
            expires_at: ts_opt(t.expires_at)?,
            oauth_client: t.oauth_client,
        })
    }
}

/// Creating a token.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateTokenRequest {
    /// What the token is for, e.g. `accounting export`.
    pub description: String,
    #[serde(default)]
    pub kind: TokenKind,
}

/// A new token: `token` and `humanProof` are shown only in this response.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CreatedToken {
    pub id: String,
    pub description: String,
    pub kind: String,
    pub created_at: DateTime<Utc>,
    /// The bearer token (a UUID).
    pub token: String,
    /// Send as `X-Human-Proof` to act as a person; null for MCP tokens.
    #[serde(rename = "humanProof")]
    pub human_proof: Option<String>,
}

/// Lists the company's active tokens, newest first.
#[utoipa::path(get, path = "/v1/tokens", tag = "tokens", params(ListParams),
    responses((status = 200, body = Page<TokenView>), crate::openapi::ReadErrors))]
pub async fn list_tokens(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<TokenView>>> {
    let limit = params.limit()?;
    let rows = store::tokens::list(
        &mut db,
        &caller.company_id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        TokenView::try_from,
    )?))
}

/// Creates a token for the calling user in the calling company. Human only.
///
/// The answer carries the token and its human proof, shown only here: it is marked
/// [`ShownOnce`], so an `Idempotency-Key` never stores or replays it.
#[utoipa::path(post, path = "/v1/tokens", tag = "tokens", request_body = CreateTokenRequest,
    responses((status = 201, body = CreatedToken), crate::openapi::WriteErrors))]
pub async fn create_token(
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateTokenRequest>,
) -> ApiResult<(StatusCode, ShownOnce, Json<CreatedToken>)> {
    caller.require_human()?;
    let description = required_text("description", &req.description, 200)?;
    let mut conn = tx.conn().await?;
    let issued = store::tokens::issue(
        &mut conn,
        &caller.company_id,
        &caller.user_id,
        req.kind.as_str(),
        &description,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        ShownOnce,
        Json(CreatedToken {
            id: issued.id,
            description,
            kind: req.kind.as_str().to_owned(),
            created_at: ts(issued.created_at)?,
            token: issued.token,
            human_proof: issued.human_proof,
        }),
    ))
}

/// Revokes a token of the company; it stops working at once. Human only.
#[utoipa::path(delete, path = "/v1/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "Token id")),
    responses((status = 204, description = "Revoked"), crate::openapi::WriteErrors))]
pub async fn revoke_token(caller: Caller, tx: Tx, Path(id): Path<String>) -> ApiResult<StatusCode> {
    caller.require_human()?;
    let mut conn = tx.conn().await?;
    if store::tokens::revoke(&mut conn, &caller.company_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::not_found("token"))
    }
}
