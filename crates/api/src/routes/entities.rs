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
    views::{email, optional_text, required_text, ts, ts_opt},
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
    /// Days from issue to due date on invoices to this entity (overrides the company's
    /// `paymentTermsDays`).
    #[serde(default)]
    pub payment_terms_days: Option<i64>,
    /// E-invoice settings: the format the entity receives, its electronic address (BT-49) and
    /// the buyer reference (BT-10) copied into new drafts.
    #[serde(default)]
    pub einvoice: Option<crate::documents::EntityEinvoice>,
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
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<i64>)]
    pub payment_terms_days: Option<Option<i64>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<crate::documents::EntityEinvoice>)]
    pub einvoice: Option<Option<crate::documents::EntityEinvoice>>,
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
    /// Days from issue to due date on invoices to this entity; `null`: the company's.
    pub payment_terms_days: Option<i64>,
    /// E-invoice settings, if any.
    pub einvoice: Option<crate::documents::EntityEinvoice>,
}

impl Entity {
    /// The view of a stored entity; stored values that do not decode are errors.
    pub fn of(e: store::entities::EntityRow) -> ApiResult<Self> {
        use crate::documents::parse;
        let ty = EntityType::parse(&e.entity_type)
            .map_err(|err| crate::documents::corrupt("entity type", err))?;
        let is_business =
            domain::tax::is_business(e.fiscal_id.is_some(), e.vies_vat_id.is_some(), &ty);
        Ok(Self {
            address: parse("entity address", &e.address_json)?,
            template: e
                .template_json
                .as_deref()
                .map(|t| parse("entity template", t))
                .transpose()?,
            verifactu: e
                .verifactu_json
                .as_deref()
                .map(|t| parse("entity VERI*FACTU settings", t))
                .transpose()?,
            einvoice: e
                .einvoice_json
                .as_deref()
                .map(|t| parse("entity e-invoice settings", t))
                .transpose()?,
            payment_terms_days: e.payment_terms_days,
            id: e.id,
            name: e.name,
            entity_type: e.entity_type,
            country: e.country,
            fiscal_id: e.fiscal_id,
            vies_vat_id: e.vies_vat_id,
            currency_code: e.currency_code,
            email: e.email,
            is_business,
            created_at: ts(e.created_at)?,
            updated_at: ts_opt(e.updated_at)?,
        })
    }
}

/// Longest search text of the entity list.
const MAX_SEARCH: usize = 200;

/// Query parameters of the entity list: a page, and optionally a search.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EntityListParams {
    /// Page size, 1 to 500 (default 50).
    pub limit: Option<i64>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
    /// Only entities whose name or fiscal id contains this text (ignoring the
    /// case of ASCII letters; at most 200 characters).
    pub q: Option<String>,
}

/// Lists the company's entities, newest first, optionally those matching `q`.
#[utoipa::path(get, path = "/v1/entities", tag = "entities", params(EntityListParams),
    responses((status = 200, body = Page<Entity>), crate::openapi::ReadErrors))]
pub async fn list_entities(
    caller: Caller,
    mut db: DbConn,
    Query(params): Query<EntityListParams>,
) -> ApiResult<Json<Page<Entity>>> {
    let page = ListParams {
        limit: params.limit,
        cursor: params.cursor,
    };
    let limit = page.limit()?;
    let after = page.after()?;
    let q = params.q.as_deref().map(str::trim).unwrap_or("");
    if q.chars().count() > MAX_SEARCH {
        return Err(ApiError::bad_request(format!(
            "`q` is longer than {MAX_SEARCH} characters; search for a shorter part of the name."
        )));
    }
    let rows = if q.is_empty() {
        store::entities::list(&mut db, &caller.company_id, after.as_deref(), limit + 1).await?
    } else {
        store::entities::search(&mut db, &caller.company_id, q, after.as_deref(), limit + 1).await?
    };
    Ok(Json(Page::try_from_rows(
        rows,
        limit,
        |r| &r.id,
        Entity::of,
    )?))
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
    check_template_snippets(&state, &caller, req.template.as_ref()).await?;
    let mut conn = tx.conn().await?;
    let now = state.now().timestamp_micros();
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
        payment_terms_days: None,
        einvoice_json: None,
    };
    apply(&mut conn, &caller.company_id, &mut row, req).await?;
    store::entities::insert(&mut conn, &row).await?;
    Ok((StatusCode::CREATED, Json(Entity::of(row)?)))
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
    Ok(Json(Entity::of(
        load(&mut db, &caller.company_id, &id).await?,
    )?))
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
    check_template_snippets(&state, &caller, req.template.as_ref()).await?;
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, &caller.company_id, &id).await?;
    let current = Entity::of(row.clone())?;
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
        payment_terms_days: req.payment_terms_days.unwrap_or(current.payment_terms_days),
        einvoice: req.einvoice.unwrap_or(current.einvoice),
    };
    apply(&mut conn, &caller.company_id, &mut row, merged).await?;
    store::entities::update(&mut conn, &row).await?;
    Ok(Json(Entity::of(
        load(&mut conn, &caller.company_id, &id).await?,
    )?))
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
    company_id: &store::CompanyId,
    id: &str,
) -> ApiResult<store::entities::EntityRow> {
    store::entities::get(conn, company_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found("entity"))
}

/// Validates a full entity description and writes it into `row`.
async fn apply(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
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
    row.payment_terms_days = req
        .payment_terms_days
        .map(|d| super::company::payment_terms("payment_terms_days", d))
        .transpose()?;
    row.einvoice_json = req
        .einvoice
        .map(einvoice_settings)
        .transpose()?
        .map(|e| serde_json::to_string(&e).map_err(|e| ApiError::Internal(e.into())))
        .transpose()?;
    Ok(())
}

/// Checks an entity's e-invoice settings.
fn einvoice_settings(
    e: crate::documents::EntityEinvoice,
) -> ApiResult<crate::documents::EntityEinvoice> {
    let format = e
        .format
        .map(|f| f.trim().to_ascii_lowercase())
        .filter(|f| !f.is_empty());
    if let Some(f) = &format
        && !crate::documents::EINVOICE_FORMATS.contains(&f.as_str())
    {
        return Err(ApiError::bad_request(format!(
            "`einvoice.format` must be one of {}, got `{f}`.",
            crate::documents::EINVOICE_FORMATS.join(", ")
        )));
    }
    Ok(crate::documents::EntityEinvoice {
        format,
        endpoint: e
            .endpoint
            .map(|a| super::company::electronic_address("einvoice.endpoint", a))
            .transpose()?,
        buyer_reference: optional_text("einvoice.buyer_reference", e.buyer_reference, 200)?,
    })
}

/// Checks the Typst snippets of a template given in a request the way the company's are
/// ([`super::company::check_snippets`]), before the write transaction begins: a check takes
/// a child process and up to seconds.
async fn check_template_snippets(
    state: &AppState,
    caller: &Caller,
    t: Option<&EntityTemplate>,
) -> ApiResult<()> {
    let Some(t) = t else { return Ok(()) };
    super::company::check_snippets(
        state,
        &caller.company_id,
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
        crate::documents::parse("company placeholders", &company.custom_placeholders_json)?;
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
