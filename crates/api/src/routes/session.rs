//! `GET /v1/session`: who is calling, in which company.

use axum::{Json, extract::State};
use serde::Serialize;

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    views::Address,
};

/// The calling user and their active company.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentSession {
    pub id: String,
    pub name: String,
    pub profile_image_url: String,
    pub email: String,
    pub language: String,
    pub company: CompanyInfo,
    pub accessible_companies: Vec<AccessibleCompany>,
    pub tos_agreed: bool,
    pub privacy_policy_agreed: bool,
    pub dpa_agreed: bool,
    pub current_tos_id: Option<String>,
    pub current_privacy_policy_id: Option<String>,
    pub current_dpa_id: Option<String>,
}

/// The active company as shown in the session.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompanyInfo {
    pub id: String,
    pub name: String,
    pub fiscal_id: String,
    pub is_settled: bool,
    pub email: Option<String>,
    pub phone: Option<String>,
    /// Country-prefixed company kind, e.g. `ES:SL`.
    #[serde(rename = "type")]
    pub company_type: Option<String>,
    /// Null until registration is complete.
    pub address: Option<Address>,
}

/// Another company the user can switch into.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessibleCompany {
    pub id: String,
    pub name: String,
    pub fiscal_id: String,
    pub is_settled: bool,
}

/// The current session.
#[utoipa::path(get, path = "/v1/session", tag = "session",
    responses((status = 200, body = CurrentSession), crate::openapi::ReadErrors))]
pub async fn get_session(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
) -> ApiResult<Json<CurrentSession>> {
    let user = store::users::get(&mut db, &caller.user_id)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("token user missing")))?;
    let company = store::companies::get(&mut db, &caller.company_id)
        .await?
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("token company missing")))?;
    let others =
        store::users::other_companies(&mut db, &caller.user_id, &caller.company_id).await?;
    let docs = store::legal::current(&mut db, &caller.user_id).await?;
    let doc = |kind: &str| docs.iter().find(|d| d.kind == kind);
    let agreed = |kind: &str| doc(kind).is_none_or(|d| d.accepted_at.is_some());
    let id_of = |kind: &str| doc(kind).map(|d| d.id.clone());
    let address = if company.is_settled != 0 {
        company
            .address_json
            .as_deref()
            .map(|a| crate::documents::parse("company address", a))
            .transpose()?
    } else {
        None
    };
    // A user without a picture of their own gets one drawn from their id.
    let profile_image_url = if user.profile_image_url.is_empty() {
        crate::routes::avatar::url(&state.config.public_url, &user.id)
    } else {
        user.profile_image_url
    };
    Ok(Json(CurrentSession {
        id: user.id,
        name: user.name,
        profile_image_url,
        email: user.email,
        language: user.language,
        company: CompanyInfo {
            id: company.id.into_string(),
            name: company.name,
            fiscal_id: company.fiscal_id,
            is_settled: company.is_settled != 0,
            email: Some(company.email).filter(|e| !e.is_empty()),
            phone: Some(company.phone).filter(|p| !p.is_empty()),
            company_type: company.company_type,
            address,
        },
        accessible_companies: others
            .into_iter()
            .map(|c| AccessibleCompany {
                id: c.id,
                name: c.name,
                fiscal_id: c.fiscal_id,
                is_settled: c.is_settled != 0,
            })
            .collect(),
        tos_agreed: agreed("terms_of_service"),
        privacy_policy_agreed: agreed("privacy_policy"),
        dpa_agreed: agreed("data_processing_agreement"),
        current_tos_id: id_of("terms_of_service"),
        current_privacy_policy_id: id_of("privacy_policy"),
        current_dpa_id: id_of("data_processing_agreement"),
    }))
}
