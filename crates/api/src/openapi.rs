//! The OpenAPI description and the interactive reference served offline.

use std::collections::BTreeMap;

use axum::Router;
use utoipa::{
    IntoResponses, Modify, OpenApi,
    openapi::{
        ContentBuilder, RefOr, Response, ResponseBuilder, ResponsesBuilder,
        security::{
            ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
        },
    },
};

use crate::AppState;

/// Top-level document; paths come from the route table.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Invoicing service API",
        description = "Multi-company invoicing. Every `/v1` request needs `Authorization: Bearer <token>`. \
Mutating requests without a valid `X-Human-Proof` come from an AI caller: they are validated, held in the \
AI review queue and answered `202 pending_approval` until a person approves them.\n\n\
Errors: 400/401/404/409/413 answer `text/plain` saying what to fix; a 403 that asks for an action answers \
JSON `{error, message, requiresAuthorizationUrl?}`. Lists take `limit` and `cursor` and answer \
`{data, next_cursor}`.",
        version = "1"
    ),
    modifiers(&Security),
    components(schemas(
        crate::error::ActionRequired,
        crate::gate::PendingApproval,
        CorrectionReason
    )),
    tags(
        (name = "session", description = "The calling user and company"),
        (name = "company", description = "Company configuration and registration"),
        (name = "agreements", description = "Legal documents to accept"),
        (name = "tokens", description = "API tokens (human only)"),
        (name = "members", description = "Company members (changes are human only)"),
        (name = "ai-audit", description = "The review queue of AI callers' requests"),
        (name = "entities", description = "Customers and suppliers"),
        (name = "invoices", description = "Invoices, corrective invoices, taxes"),
        (name = "recurring-invoices", description = "Invoices made every week, month, quarter or year"),
        (name = "proformas", description = "Proforma invoices"),
        (name = "expenses", description = "Supplier bills and receipts"),
        (name = "bank-accounts", description = "Bank accounts and balance snapshots"),
        (name = "reports", description = "PDF business reports rendered in the background"),
        (name = "dashboard", description = "Aggregated statistics"),
        (name = "verifactu", description = "Spanish VERI*FACTU records and authorization"),
        (name = "webhooks", description = "Signed event deliveries (changes are human only)"),
        (name = "health", description = "Liveness and readiness")
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("UUID")
                    .description(Some(
                        "An API token; add `X-Human-Proof` to act as a person.",
                    ))
                    .build(),
            ),
        );
        // A person's requests carry the token's human proof as well: declared as a scheme of
        // its own, so the interactive reference can send it ("Authorize" both to act as a
        // person; the bearer token alone acts as an AI caller).
        components.add_security_scheme(
            "human_proof",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-Human-Proof",
                "The human proof shown once with a standard token: with it the request comes \
                 from a person and runs at once; without it a write is held for review.",
            ))),
        );
        let no_scopes = Vec::<String>::new;
        openapi.security = Some(vec![
            SecurityRequirement::new("bearer", no_scopes()),
            SecurityRequirement::new("bearer", no_scopes()).add("human_proof", no_scopes()),
        ]);
    }
}

/// Adds the optional `Idempotency-Key` header (see `gate`) and its `409` answer to every
/// POST that writes.
pub fn document_idempotency(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    for (path, item) in doc.paths.paths.iter_mut() {
        if crate::gate::READ_ONLY_POSTS.contains(&path.as_str()) {
            continue;
        }
        let Some(op) = item.post.as_mut() else {
            continue;
        };
        op.parameters.get_or_insert_with(Vec::new).push(
            ParameterBuilder::new()
                .name("Idempotency-Key")
                .parameter_in(ParameterIn::Header)
                .required(utoipa::openapi::Required::False)
                .description(Some(
                    "Makes the request safe to retry: within 24 hours the same key and body, \
                     from the same caller (the same token, with or without its human proof as \
                     the first time), get the first successful answer again (header \
                     `Idempotent-Replayed: true`) without running twice; the same key with a \
                     different request is a 409. Keys are the caller's own: another token, or \
                     the same token without its proof, never sees the answer. An answer that \
                     carries a secret shown once (a new token and its human proof) is never \
                     kept: the same key and request again is a 409 saying so, and nothing runs \
                     twice. 1 to 255 printable ASCII characters, e.g. a UUID.",
                ))
                .schema(Some(
                    utoipa::openapi::ObjectBuilder::new()
                        .schema_type(utoipa::openapi::schema::Type::String)
                        .max_length(Some(crate::gate::MAX_IDEMPOTENCY_KEY)),
                ))
                .build()
                .into(),
        );
        op.responses
            .responses
            .entry("409".to_owned())
            .or_insert_with(|| {
                text("The Idempotency-Key was already used with a different request, or for this request whose answer carried a secret shown once (or the operation conflicts with the current state)")
                    .build()
                    .into()
            });
    }
}

// Documents `InvoiceVerifactu.reason` (a string checked against these values when a
// request arrives) as the spec's `CorrectionReason`.
/// The legal reason of a corrective invoice (Spanish issuers), `R1` to `R5`.
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
pub enum CorrectionReason {
    R1,
    R2,
    R3,
    R4,
    R5,
}

/// Makes the generated document valid OpenAPI 3.1 and says what the derive cannot:
/// every response gets a description, binary bodies (PDFs, receipts, held request bodies)
/// are binary strings rather than arrays of integers, and the corrective endpoints answer a
/// `CorrectiveInvoice` (an `Invoice` whose `corrected_invoice_id` is always set).
/// The test suite runs `openapi-spec-validator` on the result (tests/it/docs.rs).
pub fn complete(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{
        KnownFormat, ObjectBuilder, Schema, SchemaFormat, path::Operation, schema::Type,
    };
    fn binary(content_type: &str) -> RefOr<Schema> {
        RefOr::T(Schema::Object(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
                .content_media_type(content_type)
                .build(),
        ))
    }
    fn is_binary(content_type: &str) -> bool {
        !content_type.starts_with("application/json") && !content_type.starts_with("text/")
    }
    fn fix(op: &mut Operation, corrective: bool) {
        for (status, response) in op.responses.responses.iter_mut() {
            let RefOr::T(response) = response else {
                continue;
            };
            if response.description.trim().is_empty() {
                response.description = match status.as_str() {
                    "200" => "OK",
                    "201" => "Created",
                    "204" => "Done; no content",
                    _ => "See the operation's description",
                }
                .to_owned();
            }
            for (content_type, content) in response.content.iter_mut() {
                let RefOr::T(content) = content else {
                    continue;
                };
                if is_binary(content_type) {
                    content.schema = Some(binary(content_type));
                } else if corrective && status == "201" {
                    content.schema = Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                        "CorrectiveInvoice",
                    )));
                }
            }
        }
        if let Some(RefOr::T(body)) = op.request_body.as_mut() {
            for (content_type, content) in body.content.iter_mut() {
                if let RefOr::T(content) = content
                    && is_binary(content_type)
                {
                    content.schema = Some(binary(content_type));
                }
            }
        }
    }
    for (path, item) in doc.paths.paths.iter_mut() {
        let corrective = path.ends_with("/corrections") || path.ends_with("/correct");
        for op in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            fix(op, corrective);
        }
    }
    let components = doc.components.get_or_insert_with(Default::default);
    if let Some(RefOr::T(Schema::Object(invoice))) = components.schemas.get("Invoice") {
        let mut corrective = invoice.clone();
        corrective.description = Some(
            "An invoice that corrects an issued one (returned by the correction endpoints): \
             `corrected_invoice_id` names the invoice it corrects."
                .to_owned(),
        );
        corrective.properties.insert(
            "corrected_invoice_id".to_owned(),
            RefOr::T(Schema::Object(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .description(Some("The invoice this one corrects."))
                    .build(),
            )),
        );
        if !corrective
            .required
            .iter()
            .any(|r| r == "corrected_invoice_id")
        {
            corrective.required.push("corrected_invoice_id".to_owned());
        }
        components.schemas.insert(
            "CorrectiveInvoice".to_owned(),
            RefOr::T(Schema::Object(corrective)),
        );
    }
}

/// Serves `/openapi.json` and the Swagger UI at `/api/` (assets vendored in the binary).
pub fn docs(openapi: utoipa::openapi::OpenApi) -> Router<AppState> {
    Router::new().merge(utoipa_swagger_ui::SwaggerUi::new("/api").url("/openapi.json", openapi))
}

fn text(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        "text/plain",
        ContentBuilder::new()
            .schema(Some(
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String),
            ))
            .build(),
    )
}

fn action_required(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        "application/json",
        ContentBuilder::new()
            .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                "ActionRequired",
            ))))
            .build(),
    )
}

/// Errors any authenticated read can answer.
pub struct ReadErrors;

impl IntoResponses for ReadErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        ResponsesBuilder::new()
            .response("400", text("Bad query parameters; the text says which."))
            .response("401", text("Token missing, malformed, unknown or revoked."))
            .response(
                "429",
                text("Too many requests with this token; wait the `Retry-After` seconds."),
            )
            .response(
                "404",
                text("Not found, or not visible to the caller's company."),
            )
            .build()
            .into()
    }
}

/// Errors any mutating request can answer, including the AI review queue's 202.
pub struct WriteErrors;

impl IntoResponses for WriteErrors {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        ResponsesBuilder::new()
            .response(
                "202",
                ResponseBuilder::new()
                    .description("Held for review: the caller is an AI (no valid X-Human-Proof).")
                    .content(
                        "application/json",
                        ContentBuilder::new()
                            .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
                                "PendingApproval",
                            ))))
                            .build(),
                    ),
            )
            .response(
                "400",
                text("Invalid request; the text names the field and what to fix."),
            )
            .response(
                "401",
                text("Token missing, malformed, unknown or revoked, or a wrong X-Human-Proof."),
            )
            .response(
                "429",
                text("Too many requests with this token, or (AI callers) the review queue is full for this token or company until a person approves or rejects pending requests; wait the `Retry-After` seconds."),
            )
            .response(
                "403",
                action_required("An action is required first (e.g. human_required)."),
            )
            .response(
                "404",
                text("Not found, or not visible to the caller's company."),
            )
            .response("413", text("The request body is too large."))
            .build()
            .into()
    }
}
