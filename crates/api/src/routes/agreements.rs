//! Legal documents the user must accept (`/v1/agreements`).

use axum::{Json, extract::Path};
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::{
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    views::{ts, ts_opt},
};

/// A current legal document and whether the caller accepted it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Agreement {
    pub id: String,
    /// `terms_of_service`, `privacy_policy` or `data_processing_agreement`.
    pub kind: String,
    pub version: i64,
    pub title: String,
    pub body: String,
    pub published_at: DateTime<Utc>,
    pub accepted: bool,
    pub accepted_at: Option<DateTime<Utc>>,
}

impl TryFrom<store::legal::DocumentRow> for Agreement {
    type Error = ApiError;

    fn try_from(d: store::legal::DocumentRow) -> ApiResult<Self> {
        Ok(Self {
            id: d.id,
            kind: d.kind,
            version: d.version,
            title: d.title,
            body: d.body,
            published_at: ts(d.published_at)?,
            accepted: d.accepted_at.is_some(),
            accepted_at: ts_opt(d.accepted_at)?,
        })
    }
}

/// The current version of each legal document, with the caller's acceptance.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct AgreementList {
    pub data: Vec<Agreement>,
}

/// Lists the current legal documents.
#[utoipa::path(get, path = "/v1/agreements", tag = "agreements",
    responses((status = 200, body = AgreementList), crate::openapi::ReadErrors))]
pub async fn list_agreements(caller: Caller, mut db: DbConn) -> ApiResult<Json<AgreementList>> {
    let docs = store::legal::current(&mut db, &caller.user_id).await?;
    Ok(Json(AgreementList {
        data: docs
            .into_iter()
            .map(Agreement::try_from)
            .collect::<ApiResult<_>>()?,
    }))
}

/// Accepts a current legal document as the calling person (idempotent). Human only.
#[utoipa::path(post, path = "/v1/agreements/{id}/accept", tag = "agreements",
    params(("id" = String, Path, description = "Id of a current legal document")),
    responses((status = 200, body = Agreement), crate::openapi::WriteErrors))]
pub async fn accept_agreement(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<Json<Agreement>> {
    caller.require_human()?;
    let mut conn = tx.conn().await?;
    if !store::legal::accept(&mut conn, &caller.user_id, &id).await? {
        return Err(ApiError::NotFound(format!(
            "No current legal document has id {id}; GET /v1/agreements lists them."
        )));
    }
    let doc = store::legal::current(&mut conn, &caller.user_id)
        .await?
        .into_iter()
        .find(|d| d.id == id)
        .ok_or_else(|| ApiError::not_found("agreement"))?;
    Ok(Json(doc.try_into()?))
}
