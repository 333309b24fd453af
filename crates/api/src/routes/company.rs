//! Company configuration (`GET/PATCH /v1/company`) and registration.

use axum::{Json, extract::State, http::StatusCode};
use chrono::{DateTime, Utc};
use domain::{currency::CurrencyCode, entity_type::EntityType, reference::ReferenceFormat};
use serde::{Deserialize, Serialize};

use crate::{
    AppState,
    auth::{Caller, DbConn},
    error::{ApiError, ApiResult},
    gate::Tx,
    json::{ApiJson, double_option},
    views::{Address, email, optional_text, required_text, ts, ts_opt},
};

/// Largest company-supplied Typst snippet, in bytes.
const MAX_TYPST_SNIPPET: usize = render::MAX_SNIPPET_BYTES;
/// Most custom placeholders a company may define.
const MAX_PLACEHOLDERS: usize = 50;

/// A company-level template placeholder definition.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomPlaceholder {
    /// Becomes the `{{key}}` token: a-z, 0-9 and `_`, starting with a letter.
    pub key: String,
    pub label: String,
    /// A value must be given at invoice creation when there is no default.
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub default: Option<String>,
}

/// The company's whole configuration.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompanyConfiguration {
    pub id: String,
    pub name: String,
    pub fiscal_id: String,
    pub email: String,
    pub phone: String,
    pub address: Address,
    pub custom_placeholders: Vec<CustomPlaceholder>,
    pub first_invoice_yearly_number: i64,
    pub first_corrective_invoice_yearly_number: i64,
    pub invoice_reference_format: String,
    pub corrective_invoice_reference_format: String,
    pub proforma_reference_format: String,
    pub is_settled: bool,
    pub created_at: DateTime<Utc>,
    pub currency_code: Option<String>,
    pub footer_invoice_typst: Option<String>,
    pub post_invoice_typst: Option<String>,
    pub friendly_name: Option<String>,
    #[serde(rename = "type")]
    pub company_type: Option<String>,
    pub updated_at: Option<DateTime<Utc>>,
    pub vies_vat_id: Option<String>,
    /// Days from the issue date to the due date (BT-9) unless the recipient has its own;
    /// default 30.
    pub payment_terms_days: i64,
    /// Days after the due date on which an unpaid invoice is reminded; `[]`: no reminders.
    pub reminder_days: Vec<i64>,
    /// BT-34: the company's electronic address, e.g. `{"scheme":"9930","id":"DE987654328"}`
    /// (needed by XRechnung and Peppol).
    pub electronic_address: Option<crate::documents::ElectronicAddressView>,
    /// BG-6: the contact person named on invoices (XRechnung needs one).
    pub contact_name: Option<String>,
}

impl CompanyConfiguration {
    /// The configuration of a stored company; stored values that do not decode are errors.
    pub fn of(c: store::companies::CompanyRow) -> ApiResult<Self> {
        use crate::documents::parse;
        Ok(Self {
            address: c
                .address_json
                .as_deref()
                .map(|a| parse("company address", a))
                .transpose()?
                .unwrap_or_default(),
            custom_placeholders: parse("company placeholders", &c.custom_placeholders_json)?,
            payment_terms_days: c.payment_terms_days,
            reminder_days: parse("company reminder days", &c.reminder_days_json)?,
            electronic_address: c
                .electronic_address_json
                .as_deref()
                .map(|a| parse("company electronic address", a))
                .transpose()?,
            contact_name: c.contact_name,
            id: c.id.into_string(),
            name: c.name,
            fiscal_id: c.fiscal_id,
            email: c.email,
            phone: c.phone,
            first_invoice_yearly_number: c.first_invoice_yearly_number,
            first_corrective_invoice_yearly_number: c.first_corrective_invoice_yearly_number,
            invoice_reference_format: c.invoice_reference_format,
            corrective_invoice_reference_format: c.corrective_invoice_reference_format,
            proforma_reference_format: c.proforma_reference_format,
            is_settled: c.is_settled != 0,
            created_at: ts(c.created_at)?,
            currency_code: c.currency_code,
            footer_invoice_typst: c.footer_invoice_typst,
            post_invoice_typst: c.post_invoice_typst,
            friendly_name: c.friendly_name,
            company_type: c.company_type,
            updated_at: ts_opt(c.updated_at)?,
            vies_vat_id: c.vies_vat_id,
        })
    }
}

/// Checks an electronic address (BT-34/BT-49): an EAS scheme code and an id.
pub fn electronic_address(
    field: &str,
    a: crate::documents::ElectronicAddressView,
) -> ApiResult<crate::documents::ElectronicAddressView> {
    let scheme = a.scheme.trim().to_ascii_uppercase();
    let known = (scheme.len() == 4 && scheme.bytes().all(|b| b.is_ascii_digit()))
        || (scheme.len() == 2 && scheme.bytes().all(|b| b.is_ascii_uppercase()));
    if !known {
        return Err(ApiError::bad_request(format!(
            "`{field}.scheme` must be a code of the EAS list: four digits (e.g. 9930 for a German \
             VAT id, 0204 for a Leitweg-ID, 0088 for a GLN) or two letters (EM for e-mail)."
        )));
    }
    let id = a.id.trim().to_owned();
    if id.is_empty() || id.chars().count() > 100 || id.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "`{field}.id` must be 1 to 100 characters without control characters."
        )));
    }
    Ok(crate::documents::ElectronicAddressView { scheme, id })
}

/// Checks payment terms in days: 0 (due on issue) to 365.
pub fn payment_terms(field: &str, days: i64) -> ApiResult<i64> {
    if (0..=365).contains(&days) {
        Ok(days)
    } else {
        Err(ApiError::bad_request(format!(
            "`{field}` must be between 0 and 365 days, got {days}."
        )))
    }
}

/// Any subset of the writable configuration fields; absent fields keep their value,
/// `null` clears an optional one. Read-only fields of the GET shape are accepted and ignored,
/// so a GET body can be edited and sent back.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateCompanyRequest {
    pub name: Option<String>,
    pub fiscal_id: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub address: Option<Address>,
    pub custom_placeholders: Option<Vec<CustomPlaceholder>>,
    pub first_invoice_yearly_number: Option<i64>,
    pub first_corrective_invoice_yearly_number: Option<i64>,
    pub invoice_reference_format: Option<String>,
    pub corrective_invoice_reference_format: Option<String>,
    pub proforma_reference_format: Option<String>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub currency_code: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub footer_invoice_typst: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub post_invoice_typst: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub friendly_name: Option<Option<String>>,
    #[serde(rename = "type", default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub company_type: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub vies_vat_id: Option<Option<String>>,
    pub payment_terms_days: Option<i64>,
    pub reminder_days: Option<Vec<i64>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<crate::documents::ElectronicAddressView>)]
    pub electronic_address: Option<Option<crate::documents::ElectronicAddressView>>,
    #[serde(default, deserialize_with = "crate::json::double_option")]
    #[schema(value_type = Option<String>)]
    pub contact_name: Option<Option<String>>,
    /// Read-only; ignored.
    #[schema(value_type = Option<String>)]
    pub id: Option<serde_json::Value>,
    /// Read-only; ignored.
    #[schema(value_type = Option<bool>)]
    pub is_settled: Option<serde_json::Value>,
    /// Read-only; ignored.
    #[schema(value_type = Option<String>)]
    pub created_at: Option<serde_json::Value>,
    /// Read-only; ignored.
    #[schema(value_type = Option<String>)]
    pub updated_at: Option<serde_json::Value>,
}

/// The company's configuration.
#[utoipa::path(get, path = "/v1/company", tag = "company",
    responses((status = 200, body = CompanyConfiguration), crate::openapi::ReadErrors))]
pub async fn get_company(caller: Caller, mut db: DbConn) -> ApiResult<Json<CompanyConfiguration>> {
    let company = load(&mut db, &caller.company_id).await?;
    Ok(Json(CompanyConfiguration::of(company)?))
}

/// Changes the configuration; every field is checked before anything is written.
#[utoipa::path(patch, path = "/v1/company", tag = "company", request_body = UpdateCompanyRequest,
    responses((status = 200, body = CompanyConfiguration), crate::openapi::WriteErrors))]
pub async fn update_company(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<UpdateCompanyRequest>,
) -> ApiResult<Json<CompanyConfiguration>> {
    // Snippets are checked before the write transaction begins: a check runs a child process
    // for up to seconds, and must not hold SQLite's single writer meanwhile.
    check_snippets(
        &state,
        &caller.company_id,
        [
            (
                "footerInvoiceTypst",
                render::SnippetSlot::Footer,
                req.footer_invoice_typst.as_ref().and_then(Option::as_deref),
            ),
            (
                "postInvoiceTypst",
                render::SnippetSlot::Post,
                req.post_invoice_typst.as_ref().and_then(Option::as_deref),
            ),
        ],
    )
    .await?;
    let mut conn = tx.conn().await?;
    let mut c = load(&mut conn, &caller.company_id).await?;
    if let Some(v) = req.name {
        c.name = required_text("name", &v, 200)?;
    }
    if let Some(v) = req.email {
        c.email = email("email", &v)?;
    }
    if let Some(v) = req.phone {
        c.phone = required_text("phone", &v, 40)?;
    }
    if let Some(v) = req.address {
        let current: Option<Address> = c
            .address_json
            .as_deref()
            .map(|a| crate::documents::parse("company address", a))
            .transpose()?;
        // Sending back the unchanged (possibly still incomplete) address is not an edit.
        if current.as_ref() != Some(&v) {
            c.address_json = Some(json(&v.validated("address")?)?);
        }
    }
    if let Some(v) = req.company_type {
        c.company_type = v.map(|t| parse_type("type", &t)).transpose()?;
    }
    if let Some(v) = req.fiscal_id {
        c.fiscal_id = fiscal_id("fiscalId", &v, &c)?;
    }
    if let Some(v) = req.vies_vat_id {
        c.vies_vat_id = optional_text("viesVatId", v, 20)?
            .map(|id| {
                domain::fiscal::validate_vat_id(&id)
                    .map(|n| n.to_string())
                    .map_err(|e| ApiError::bad_request(format!("`viesVatId`: {e}.")))
            })
            .transpose()?;
    }
    if let Some(v) = req.custom_placeholders {
        c.custom_placeholders_json = json(&placeholders(v)?)?;
    }
    for (field, value, target) in [
        (
            "firstInvoiceYearlyNumber",
            req.first_invoice_yearly_number,
            &mut c.first_invoice_yearly_number,
        ),
        (
            "firstCorrectiveInvoiceYearlyNumber",
            req.first_corrective_invoice_yearly_number,
            &mut c.first_corrective_invoice_yearly_number,
        ),
    ] {
        if let Some(n) = value {
            if !(1..=999_999_999).contains(&n) {
                return Err(ApiError::bad_request(format!(
                    "`{field}` must be between 1 and 999999999, got {n}."
                )));
            }
            *target = n;
        }
    }
    for (field, value, target) in [
        (
            "invoiceReferenceFormat",
            req.invoice_reference_format,
            &mut c.invoice_reference_format,
        ),
        (
            "correctiveInvoiceReferenceFormat",
            req.corrective_invoice_reference_format,
            &mut c.corrective_invoice_reference_format,
        ),
        (
            "proformaReferenceFormat",
            req.proforma_reference_format,
            &mut c.proforma_reference_format,
        ),
    ] {
        if let Some(f) = value {
            ReferenceFormat::parse(&f)
                .map_err(|e| ApiError::bad_request(format!("`{field}` {e}.")))?;
            *target = f;
        }
    }
    if let Some(v) = req.currency_code {
        c.currency_code = v
            .filter(|s| !s.trim().is_empty())
            .map(|code| {
                CurrencyCode::parse(&code)
                    .map(|c| c.code().to_owned())
                    .map_err(|e| ApiError::bad_request(format!("`currencyCode`: {e}.")))
            })
            .transpose()?;
    }
    // Checked above.
    for (value, target) in [
        (req.footer_invoice_typst, &mut c.footer_invoice_typst),
        (req.post_invoice_typst, &mut c.post_invoice_typst),
    ] {
        if let Some(v) = value {
            *target = v.filter(|s| !s.trim().is_empty());
        }
    }
    if let Some(v) = req.friendly_name {
        c.friendly_name = optional_text("friendlyName", v, 100)?;
    }
    if let Some(v) = req.payment_terms_days {
        c.payment_terms_days = payment_terms("paymentTermsDays", v)?;
    }
    if let Some(mut days) = req.reminder_days {
        days.sort_unstable();
        days.dedup();
        if days.len() > 10 || days.iter().any(|d| !(1..=365).contains(d)) {
            return Err(ApiError::bad_request(
                "`reminderDays` takes at most 10 days, each between 1 and 365 (days after the \
                 due date).",
            ));
        }
        c.reminder_days_json = json(&days)?;
    }
    if let Some(v) = req.electronic_address {
        c.electronic_address_json = v
            .map(|a| electronic_address("electronicAddress", a).and_then(|a| json(&a)))
            .transpose()?;
    }
    if let Some(v) = req.contact_name {
        c.contact_name = optional_text("contactName", v, 100)?;
    }
    store::companies::update(&mut conn, &c).await?;
    let fresh = load(&mut conn, &caller.company_id).await?;
    Ok(Json(CompanyConfiguration::of(fresh)?))
}

/// Completes the company's registration.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteCompanyRegistrationRequest {
    pub name: String,
    pub fiscal_id: String,
    pub email: String,
    pub phone: String,
    pub address: Address,
    /// Country-prefixed company kind, e.g. `ES:SL`.
    #[serde(rename = "type", default)]
    pub company_type: Option<String>,
}

/// The company after registration.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Company {
    pub id: String,
    pub name: String,
    pub fiscal_id: String,
    pub email: String,
    pub phone: String,
    pub is_settled: bool,
}

/// Completes registration: sets the legal data and address and marks the company settled.
#[utoipa::path(post, path = "/v1/company/registration", tag = "company",
    request_body = CompleteCompanyRegistrationRequest,
    responses((status = 200, body = Company), crate::openapi::WriteErrors))]
pub async fn complete_registration(
    caller: Caller,
    tx: Tx,
    ApiJson(req): ApiJson<CompleteCompanyRegistrationRequest>,
) -> ApiResult<(StatusCode, Json<Company>)> {
    let mut conn = tx.conn().await?;
    let mut c = load(&mut conn, &caller.company_id).await?;
    c.name = required_text("name", &req.name, 200)?;
    c.email = email("email", &req.email)?;
    c.phone = required_text("phone", &req.phone, 40)?;
    let address = req.address.validated("address")?;
    c.address_json = Some(json(&address)?);
    if let Some(t) = req.company_type.filter(|t| !t.trim().is_empty()) {
        c.company_type = Some(parse_type("type", &t)?);
    }
    if c.company_type.is_none() {
        return Err(ApiError::bad_request(
            "`type` is required (country and legal form, e.g. `ES:SL`, `DE:GmbH`).",
        ));
    }
    c.fiscal_id = fiscal_id("fiscal_id", &req.fiscal_id, &c)?;
    c.is_settled = 1;
    store::companies::update(&mut conn, &c).await?;
    Ok((
        StatusCode::OK,
        Json(Company {
            id: c.id.into_string(),
            name: c.name,
            fiscal_id: c.fiscal_id,
            email: c.email,
            phone: c.phone,
            is_settled: c.is_settled != 0,
        }),
    ))
}

/// Checks the snippets a request gives, named by their fields, before they are saved: one
/// longer than [`render::MAX_SNIPPET_BYTES`] or that does not compile ([`check_snippet`]) is
/// a 400 that names the field. Blank ones are not rendered, so not compiled. Also used for
/// the snippets of entity templates. Each check takes one of `company_id`'s snippet slots
/// ([`crate::render_gate`]), an AI caller's dry run too: one company saving looping snippets
/// cannot take every slot.
pub(crate) async fn check_snippets(
    state: &AppState,
    company_id: &store::CompanyId,
    snippets: [(&str, render::SnippetSlot, Option<&str>); 2],
) -> ApiResult<()> {
    for (field, slot, snippet) in snippets {
        let Some(snippet) = snippet else { continue };
        if snippet.len() > MAX_TYPST_SNIPPET {
            return Err(ApiError::bad_request(format!(
                "`{field}` must be at most {} KiB.",
                MAX_TYPST_SNIPPET / 1024
            )));
        }
        if !snippet.trim().is_empty() {
            check_snippet(state, company_id, field, slot, snippet).await?;
        }
    }
    Ok(())
}

/// Compiles a company snippet in the slot it will be used in, refusing it with a 400 that
/// says why (in a child process with a memory limit: [`crate::isolation`]).
async fn check_snippet(
    state: &AppState,
    company_id: &store::CompanyId,
    field: &str,
    slot: render::SnippetSlot,
    snippet: &str,
) -> ApiResult<()> {
    let job = render::isolated::Job::Check {
        slot,
        snippet: snippet.to_owned(),
    };
    let turn = state
        .renders
        .snippet(company_id)
        .await
        .map_err(ApiError::render_busy)?;
    crate::isolation::run(state.config.snippet_runner.as_deref(), job, turn)
        .await?
        .map(drop)
        .map_err(|e| match e {
            // Every issued invoice is a Factur-X PDF/A-3b: a snippet must stay within PDF/A.
            render::RenderError::PdfA { .. } => {
                ApiError::bad_request(format!("`{field}` cannot be used in an invoice: {e}."))
            }
            e => ApiError::bad_request(format!("`{field}` does not compile: {e}.")),
        })
}

async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
) -> ApiResult<store::companies::CompanyRow> {
    store::companies::get(conn, company_id)
        .await?
        .ok_or_else(|| ApiError::not_found("company"))
}

fn json<T: Serialize>(v: &T) -> ApiResult<String> {
    serde_json::to_string(v).map_err(|e| ApiError::Internal(e.into()))
}

fn parse_type(field: &str, value: &str) -> ApiResult<String> {
    EntityType::parse(value)
        .map(|t| t.canonical())
        .map_err(|e| ApiError::bad_request(format!("`{field}`: {e}.")))
}

/// Checks a fiscal id against the company's country (from its type, else its address).
fn fiscal_id(field: &str, value: &str, c: &store::companies::CompanyRow) -> ApiResult<String> {
    let country = c
        .company_type
        .as_deref()
        .and_then(|t| EntityType::parse(t).ok())
        .map(|t| t.country())
        .or_else(|| {
            // An address that does not decode is not a country: checked as any text below
            // (and reported by every reader of the address).
            c.address_json
                .as_deref()
                .and_then(|a| crate::documents::parse::<Address>("company address", a).ok())
                .and_then(|a| domain::country::CountryCode::parse(&a.country).ok())
        });
    match country {
        Some(country) => domain::fiscal::validate_fiscal_id(country, value)
            .map_err(|e| ApiError::bad_request(format!("`{field}`: {e}."))),
        None => Ok(required_text(field, value, 32)?),
    }
}

fn placeholders(list: Vec<CustomPlaceholder>) -> ApiResult<Vec<CustomPlaceholder>> {
    if list.len() > MAX_PLACEHOLDERS {
        return Err(ApiError::bad_request(format!(
            "`customPlaceholders` takes at most {MAX_PLACEHOLDERS} entries."
        )));
    }
    domain::placeholder::validate_keys(list.iter().map(|p| p.key.as_str()))
        .map_err(|e| ApiError::bad_request(format!("`customPlaceholders`: key {e}.")))?;
    list.into_iter()
        .enumerate()
        .map(|(i, p)| {
            Ok(CustomPlaceholder {
                label: required_text(&format!("customPlaceholders[{i}].label"), &p.label, 100)?,
                default: optional_text(
                    &format!("customPlaceholders[{i}].default"),
                    p.default,
                    500,
                )?,
                ..p
            })
        })
        .collect()
}
