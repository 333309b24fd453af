//! E-invoices out: an issued invoice as UBL, CII, XRechnung, Peppol BIS, Factur-X (its CII)
//! or Facturae, written from the document frozen at issue (crate `einvoice`).
//!
//! The service never serves a document its own rules know to be invalid: what the format
//! requires and the invoice lacks is a 400 naming the business rule and the field to set.

use axum::{
    extract::{Path, Query, State},
    http::{HeaderValue, header},
    response::{IntoResponse, Response},
};
use einvoice::Format;
use serde::Deserialize;

use crate::{
    AppState,
    auth::{Caller, DbConn},
    documents,
    error::{ApiError, ApiResult},
    workflows::{AppError, AppResult},
};

/// The query of `GET /v1/invoices/{id}/einvoice`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct EinvoiceQuery {
    /// `ubl`, `cii`, `xrechnung-ubl`, `xrechnung-cii`, `peppol`, `facturx` or `facturae`;
    /// default: the recipient's `einvoice.format`, else `ubl`.
    pub format: Option<String>,
}

/// The format asked for, or the recipient's preferred one, else `ubl`.
async fn format_of(
    db: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    recipient_id: &str,
    asked: Option<&str>,
) -> AppResult<Format> {
    if let Some(name) = asked {
        return name
            .trim()
            .to_ascii_lowercase()
            .parse()
            .map_err(|e: einvoice::UnknownFormat| AppError::invalid(format!("{e}.")));
    }
    let Some(entity) = store::entities::get(db, company_id, recipient_id).await? else {
        return Ok(Format::Ubl);
    };
    let settings: Option<documents::EntityEinvoice> = entity
        .einvoice_json
        .as_deref()
        .map(|t| documents::parse("entity e-invoice settings", t))
        .transpose()?;
    match settings.and_then(|s| s.format) {
        Some(name) => name
            .parse()
            .map_err(|e| documents::corrupt(format!("entity {recipient_id} e-invoice format"), e)),
        None => Ok(Format::Ubl),
    }
}

/// The 400 for a document that cannot be valid in `format`, naming the rule and the field.
fn refused(format: Format, r: einvoice::Refusal) -> AppError {
    AppError::invalid(format!(
        "The invoice cannot be a valid {format} e-invoice: {}: {}. Set {}.",
        r.rule, r.message, r.field
    ))
}

/// The 400 for an invoice whose Factur-X PDF/A-3b cannot be written, saying what to change.
fn not_pdf_a(id: &str, e: &render::RenderError) -> ApiError {
    let fix = match e {
        render::RenderError::PdfA { slot: Some(_), .. } => {
            "Change the company's Typst snippet it names (PATCH /v1/company, or the recipient's \
             template with PATCH /v1/entities/{id})"
        }
        _ => "The character it names cannot be in a PDF/A: correct the invoice without it",
    };
    ApiError::bad_request(format!(
        "The invoice cannot be a valid facturx e-invoice: {e}. {fix}; meanwhile \
         GET /v1/invoices/{id}/pdf serves it as a plain PDF."
    ))
}

/// A Facturae document signed with XAdES-EPES when the service's certificate
/// ([`crate::ApiConfig::facturae_signer`]) names the seller's fiscal id, at the service's
/// time; otherwise as it is. The flag says whether it was signed.
pub(crate) fn facturae_signature(
    state: &AppState,
    doc: &document::Invoice,
    xml: String,
) -> ApiResult<(String, bool)> {
    let Some(signer) = state.config.facturae_signer.as_deref() else {
        return Ok((xml, false));
    };
    let ids = [doc.seller.tax_id.as_deref(), doc.seller.vat_id.as_deref()];
    if !ids.into_iter().flatten().any(|id| signer.names(id)) {
        return Ok((xml, false));
    }
    einvoice::xades::sign_facturae(&xml, signer, state.now())
        .map(|signed| (signed, true))
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("signing Facturae: {e}")))
}

/// An issued invoice's e-invoice in its recipient's format (else UBL): what a send attaches.
pub(crate) async fn recipient_xml(
    db: &mut sqlx::AnyConnection,
    invoice: &store::invoices::InvoiceRow,
) -> AppResult<(Format, String)> {
    let format = format_of(db, &invoice.company_id, &invoice.recipient_id, None).await?;
    let doc = documents::of_row(invoice)?;
    let xml = einvoice::xml(&doc, format).map_err(|r| refused(format, r))?;
    Ok((format, xml))
}

/// The issued invoice as an e-invoice: XML, or for `facturx` the Factur-X PDF.
#[utoipa::path(get, path = "/v1/invoices/{id}/einvoice", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), EinvoiceQuery),
    responses(
        (status = 200, description = "The e-invoice: `application/xml`, or for `facturx` the \
            Factur-X PDF (`application/pdf`, PDF/A-3b with the EN 16931 CII attached as \
            `factur-x.xml`, the same bytes as `GET /v1/invoices/{id}/pdf`). `X-Einvoice-Format` \
            names the format; for `facturae`, `X-Invoicing-Signature` says whether it is signed \
            (`xades-epes`: the service's certificate names the seller) or not (`none`).",
            content_type = "application/xml", body = String),
        (status = 400, description = "An unknown format, or an invoice that cannot be valid in \
            that format: the message names the business rule and the field to set (for \
            `facturx`, also what PDF/A-3 refuses, such as a company snippet).",
            body = String, content_type = "text/plain"),
        (status = 409, description = "The invoice is a draft: issue it first."),
        crate::openapi::ReadErrors))]
pub async fn invoice_einvoice(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    Query(q): Query<EinvoiceQuery>,
) -> ApiResult<Response> {
    let row = super::invoices::load(&mut db, &caller.company_id, &id).await?;
    let asked = q.format.as_deref().filter(|f| !f.trim().is_empty());
    if let Some(name) = asked {
        // An unknown format is the caller's error whatever the invoice's state.
        format_of(&mut db, &caller.company_id, &row.recipient_id, Some(name)).await?;
    }
    if row.status != store::invoices::InvoiceStatus::Issued {
        return Err(ApiError::Conflict(format!(
            "Invoice {id} is a draft: an e-invoice exists only for an issued invoice \
             (POST /v1/invoices/{id}/issue)."
        )));
    }
    let format = format_of(&mut db, &caller.company_id, &row.recipient_id, asked).await?;
    let doc = documents::of_row(&row)?;
    let xml = einvoice::xml(&doc, format).map_err(|r| refused(format, r))?;
    // For Facturae: whether it was signed.
    let mut signed = None;
    let (body, content_type, extension) = if format == Format::Facturx {
        let view = super::pdf::invoice_render_input(&mut db, &caller.company_id, &row).await?;
        db.release();
        let pdf = super::pdf::render_facturx(&state, &caller.company_id, view)
            .await?
            .map_err(|e| not_pdf_a(&id, &e))?;
        (pdf, "application/pdf", "pdf")
    } else {
        db.release();
        let xml = if format == Format::Facturae {
            let (xml, is_signed) = facturae_signature(&state, &doc, xml)?;
            signed = Some(is_signed);
            xml
        } else {
            xml
        };
        (xml.into_bytes(), "application/xml", "xml")
    };
    let filename = format!("{}-{}.{extension}", doc.number, format.name());
    let mut response = (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
            (
                header::CONTENT_DISPOSITION,
                crate::views::content_disposition(crate::views::Disposition::Attachment, &filename),
            ),
        ],
        body,
    )
        .into_response();
    response
        .headers_mut()
        .insert("x-einvoice-format", HeaderValue::from_static(format.name()));
    if let Some(signed) = signed {
        let (signature, flag) = if signed {
            ("xades-epes", "true")
        } else {
            ("none", "false")
        };
        let headers = response.headers_mut();
        headers.insert("x-invoicing-signature", HeaderValue::from_static(signature));
        headers.insert("x-facturae-signed", HeaderValue::from_static(flag));
    }
    Ok(response)
}
