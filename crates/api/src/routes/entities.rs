//! Entities (`/v1/entities`): customers and suppliers of the company.

use axum::{
    Json,
    extract::{Path, Query, State},
    http::StatusCode,
};
use chrono::{DateTime, Utc};
use domain::{currency::CurrencyCode, entity_type::EntityType};
use serde::{Deserialize, Serialize};

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::ApiJson,
    pagination::{ListParams, Page},
    views::{email, optional_text, required_text, ts},
};

/// Postal address of an entity; only the country is mandatory.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThirdPartyAddress {
    #[serde(default)]
    pub lines: Vec<String>,
    #[serde(default)]
    pub zipcode: Option<String>,
    #[serde(default)]
    pub city: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    /// ISO 3166-1 alpha-2 country code (mandatory).
    pub country: String,
}

/// A per-recipient placeholder value.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlaceholderValue {
    pub key: String,
    pub value: String,
}

/// Per-recipient overrides of the company's invoice template.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityTemplate {
    /// Language of documents to this entity (`en`, `es`, `es_ES`, ...).
    #[serde(default)]
    pub language: Option<String>,
    /// Typst snippet replacing the company footer on this entity's invoices. Checked when
    /// saved like the company's (at most 16 KiB; one that does not compile is a 400 naming
    /// the line); it runs in a memory-limited child process.
    #[serde(default)]
    pub footer_typst: Option<String>,
    /// Typst snippet replacing the company post-invoice block; checked like `footer_typst`.
    #[serde(default)]
    pub post_typst: Option<String>,
    /// Values of company placeholders for this entity (used when an invoice gives none).
    #[serde(default)]
    pub placeholder_values: Vec<PlaceholderValue>,
    /// Extra currencies the template shows totals in; their rates are frozen at issue.
    #[serde(default)]
    pub display_currencies: Vec<String>,
}

/// How the entity is identified to the Spanish tax authority (VERI*FACTU).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityVerifactu {
    /// AEAT IDType for a recipient without a Spanish NIF: `02` (VAT id), `03` passport,
    /// `04` official id of the country, `05` residence certificate, `06` other, `07` not registered.
    #[serde(default)]
    pub id_type: Option<String>,
}

/// Creating (or, in PATCH, changing) an entity.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateEntityRequest {
    pub name: String,
    /// Country of incorporation and legal form: `ES:SL`, `DE:GmbH`, `US:Inc` (`-` also accepted).
    #[serde(rename = "type")]
    pub entity_type: String,
    pub address: ThirdPartyAddress,
    #[serde(default)]
    pub currency_code: Option<String>,
    #[serde(default)]
    pub fiscal_id: Option<String>,
    #[serde(default)]
    pub vies_vat_id: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub template: Option<EntityTemplate>,
    #[serde(default)]
    pub verifactu: Option<EntityVerifactu>,
}

/// Changing an entity: any subset of the create fields.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateEntityRequest {
    pub name: Option<String>,
    #[serde(rename = "type")]
    pub entity_type: Option<String>,
    pub address: Option<ThirdPartyAddress>,
    pub currency_code: Option<String>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub fiscal_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub vies_vat_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub email: Option<Option<String>>,
    pub template: Option<EntityTemplate>,
    pub verifactu: Option<EntityVerifactu>,
}

/// An entity.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Entity {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub entity_type: String,
    /// Country of incorporation (from `type`); decides how documents are taxed.
    pub country: String,
    pub fiscal_id: Option<String>,
    pub vies_vat_id: Option<String>,
    pub currency_code: String,
    pub email: Option<String>,
    pub address: ThirdPartyAddress,
    pub template: Option<EntityTemplate>,
    pub verifactu: Option<EntityVerifactu>,
    /// Counts as a business for tax: has a fiscal id, a VIES VAT id or a non-individual legal form.
    pub is_business: bool,
    #[serde(rename = "createdAt")]
    pub created_at: DateTime<Utc>,
    #[serde(rename = "updatedAt")]
    pub updated_at: Option<DateTime<Utc>>,
}

impl From<store::entities::EntityRow> for Entity {
    fn from(e: store::entities::EntityRow) -> Self {
        let is_business = EntityType::parse(&e.entity_type).is_ok_and(|t| {
            domain::tax::is_business(e.fiscal_id.is_some(), e.vies_vat_id.is_some(), &t)
        });
        Self {
            address: serde_json::from_str(&e.address_json).unwrap_or_default(),
            template: e
                .template_json
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok()),
            verifactu: e
                .verifactu_json
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok()),
            id: e.id,
            name: e.name,
            entity_type: e.entity_type,
            country: e.country,
            fiscal_id: e.fiscal_id,
            vies_vat_id: e.vies_vat_id,
            currency_code: e.currency_code,
            email: e.email,
            is_business,
            created_at: ts(e.created_at),
            updated_at: e.updated_at.map(ts),
        }
    }
}

/// Lists the company's entities, newest first.
#[utoipa::path(get, path = "/v1/entities", tag = "entities", params(ListParams),
    responses((status = 200, body = Page<Entity>), crate::openapi::ReadErrors))]
pub async fn list_entities(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<Entity>>> {
    let limit = params.limit()?;
    let rows = store::entities::list(
        &mut db,
        &caller.company_id,
        params.after()?.as_deref(),
        limit + 1,
    )
    .await?;
    Ok(Json(Page::from_rows(rows, limit, |r| &r.id, Entity::from)))
}

/// Creates an entity.
#[utoipa::path(post, path = "/v1/entities", tag = "entities", request_body = CreateEntityRequest,
    responses((status = 201, body = Entity), crate::openapi::WriteErrors))]
pub async fn create_entity(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CreateEntityRequest>,
) -> ApiResult<(StatusCode, Json<Entity>)> {
    check_template_snippets(&state, req.template.as_ref()).await?;
    let mut conn = tx.conn().await?;
    let now = store::now_micros();
    let mut row = store::entities::EntityRow {
        id: store::new_id(),
        company_id: caller.company_id.clone(),
        name: String::new(),
        entity_type: String::new(),
        country: String::new(),
        fiscal_id: None,
        vies_vat_id: None,
        currency_code: String::new(),
        email: None,
        language: None,
        address_json: String::new(),
        template_json: None,
        verifactu_json: None,
        created_at: now,
        updated_at: None,
    };
    apply(&mut conn, &caller.company_id, &mut row, req).await?;
    store::entities::insert(&mut conn, &row).await?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// One entity.
#[utoipa::path(get, path = "/v1/entities/{id}", tag = "entities",
    params(("id" = String, Path, description = "Entity id")),
    responses((status = 200, body = Entity), crate::openapi::ReadErrors))]
pub async fn get_entity(
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
) -> ApiResult<Json<Entity>> {
    Ok(Json(load(&mut db, &caller.company_id, &id).await?.into()))
}

/// Changes an entity; every field is checked before anything is written.
#[utoipa::path(patch, path = "/v1/entities/{id}", tag = "entities", request_body = UpdateEntityRequest,
    params(("id" = String, Path, description = "Entity id")),
    responses((status = 200, body = Entity), crate::openapi::WriteErrors))]
pub async fn update_entity(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
    ApiJson(req): ApiJson<UpdateEntityRequest>,
) -> ApiResult<Json<Entity>> {
    check_template_snippets(&state, req.template.as_ref()).await?;
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    let current = Entity::from(row.clone());
    let merged = CreateEntityRequest {
        name: req.name.unwrap_or(current.name),
        entity_type: req.entity_type.unwrap_or(current.entity_type),
        address: req.address.unwrap_or(current.address),
        currency_code: Some(req.currency_code.unwrap_or(current.currency_code)),
        fiscal_id: req.fiscal_id.unwrap_or(current.fiscal_id),
        vies_vat_id: req.vies_vat_id.unwrap_or(current.vies_vat_id),
        email: req.email.unwrap_or(current.email),
        template: req.template.or(current.template),
        verifactu: req.verifactu.or(current.verifactu),
    };
    apply(&mut conn, &caller.company_id, &mut row, merged).await?;
    store::entities::update(&mut conn, &row).await?;
    Ok(Json(load(&mut conn, &caller.company_id, &id).await?.into()))
}

/// Deletes an entity that no document names.
#[utoipa::path(delete, path = "/v1/entities/{id}", tag = "entities",
    params(("id" = String, Path, description = "Entity id")),
    responses((status = 204, description = "Deleted"), crate::openapi::WriteErrors))]
pub async fn delete_entity(
    caller: Caller,
    tx: Tx,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let mut conn = tx.conn().await?;
    load(&mut conn, &caller.company_id, &id).await?;
    let (drafts, issued, proformas) =
        store::entities::usage(&mut conn, &caller.company_id, &id).await?;
    if issued > 0 {
        return Err(ApiError::bad_request(format!(
            "This entity has {issued} issued invoice(s), which must be kept unchanged by law; it cannot be deleted."
        )));
    }
    if drafts > 0 || proformas > 0 {
        return Err(ApiError::bad_request(format!(
            "This entity is named by {drafts} draft invoice(s) and {proformas} proforma(s); delete them first."
        )));
    }
    store::entities::delete(&mut conn, &caller.company_id, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

pub(crate) async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &str,
    id: &str,
) -> ApiResult<store::entities::EntityRow> {
    store::entities::get(conn, company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("entity"))
}

/// Validates a full entity description and writes it into `row`.
async fn apply(
    conn: &mut sqlx::AnyConnection,
    company_id: &str,
    row: &mut store::entities::EntityRow,
    req: CreateEntityRequest,
) -> ApiResult<()> {
    row.name = required_text("name", &req.name, 200)?;
    let ty = EntityType::parse(&req.entity_type).map_err(|e| {
        ApiError::bad_request(format!(
            "`type`: {e}. Give the country of incorporation and the legal form, e.g. `ES:SL`, `DE:GmbH`, `US:Inc`."
        ))
    })?;
    row.entity_type = ty.canonical();
    row.country = ty.country().to_string();
    let mut address = req.address;
    address.country = domain::country::CountryCode::parse(&address.country)
        .map_err(|e| ApiError::bad_request(format!("`address.country`: {e}.")))?
        .to_string();
    address.lines = address
        .lines
        .iter()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    if address.lines.len() > 5 || address.lines.iter().any(|l| l.chars().count() > 200) {
        return Err(ApiError::bad_request(
            "`address.lines` takes at most 5 lines of at most 200 characters.",
        ));
    }
    address.zipcode = optional_text("address.zipcode", address.zipcode, 20)?;
    address.city = optional_text("address.city", address.city, 100)?;
    address.state = optional_text("address.state", address.state, 100)?;
    row.address_json = serde_json::to_string(&address).map_err(|e| ApiError::Internal(e.into()))?;
    row.fiscal_id = optional_text("fiscal_id", req.fiscal_id, 40)?
        .map(|id| {
            domain::fiscal::validate_fiscal_id(ty.country(), &id)
                .map_err(|e| ApiError::bad_request(format!("`fiscal_id`: {e}.")))
        })
        .transpose()?;
    row.vies_vat_id = optional_text("vies_vat_id", req.vies_vat_id, 20)?
        .map(|id| {
            domain::fiscal::validate_vat_id(&id)
                .map(|v| v.to_string())
                .map_err(|e| ApiError::bad_request(format!("`vies_vat_id`: {e}.")))
        })
        .transpose()?;
    row.email = req
        .email
        .filter(|e| !e.trim().is_empty())
        .map(|e| email("email", &e))
        .transpose()?;
    let company = store::companies::get(conn, company_id)
        .await?
        .ok_or_else(|| ApiError::not_found("company"))?;
    row.currency_code = match req.currency_code.filter(|c| !c.trim().is_empty()) {
        Some(c) => CurrencyCode::parse(&c)
            .map_err(|e| ApiError::bad_request(format!("`currency_code`: {e}.")))?
            .code()
            .to_owned(),
        None => company
            .currency_code
            .clone()
            .unwrap_or_else(|| "EUR".into()),
    };
    row.template_json = req
        .template
        .map(|t| template(&company, t))
        .transpose()?
        .map(|t| serde_json::to_string(&t).map_err(|e| ApiError::Internal(e.into())))
        .transpose()?;
    if let Some(v) = &req.verifactu
        && let Some(id_type) = &v.id_type
        && !["02", "03", "04", "05", "06", "07"].contains(&id_type.as_str())
    {
        return Err(ApiError::bad_request(
            "`verifactu.id_type` must be one of 02, 03, 04, 05, 06, 07 (AEAT IDType).",
        ));
    }
    row.verifactu_json = req
        .verifactu
        .map(|v| serde_json::to_string(&v).map_err(|e| ApiError::Internal(e.into())))
        .transpose()?;
    row.language = None;
    Ok(())
}

/// Checks the Typst snippets of a template given in a request the way the company's are
/// ([`super::company::check_snippets`]), before the write transaction begins: a check takes
/// a child process and up to seconds.
async fn check_template_snippets(state: &AppState, t: Option<&EntityTemplate>) -> ApiResult<()> {
    let Some(t) = t else { return Ok(()) };
    super::company::check_snippets(
        state,
        [
            (
                "template.footer_typst",
                render::SnippetSlot::Footer,
                t.footer_typst.as_deref(),
            ),
            (
                "template.post_typst",
                render::SnippetSlot::Post,
                t.post_typst.as_deref(),
            ),
        ],
    )
    .await
}

fn template(
    company: &store::companies::CompanyRow,
    mut t: EntityTemplate,
) -> ApiResult<EntityTemplate> {
    let defined: Vec<super::company::CustomPlaceholder> =
        serde_json::from_str(&company.custom_placeholders_json).unwrap_or_default();
    for (i, v) in t.placeholder_values.iter().enumerate() {
        if !defined.iter().any(|d| d.key == v.key) {
            return Err(ApiError::bad_request(format!(
                "`template.placeholder_values[{i}].key` `{}` is not a placeholder of the company; define it \
                 in PATCH /v1/company customPlaceholders first.",
                v.key
            )));
        }
    }
    t.language = optional_text("template.language", t.language, 10)?;
    t.display_currencies = t
        .display_currencies
        .iter()
        .map(|c| {
            CurrencyCode::parse(c)
                .map(|c| c.code().to_owned())
                .map_err(|e| ApiError::bad_request(format!("`template.display_currencies`: {e}.")))
        })
        .collect::<ApiResult<_>>()?;
    Ok(t)
}
