//! PDFs of invoices and proformas, rendered with Typst: in process, or in a child process
//! with a memory limit when the document carries company snippets.
//!
//! Issued invoices render only from what was frozen at issue (issuer and
//! recipient snapshots, placeholder values, rates, bank accounts), so the same
//! issued invoice is the same bytes forever; drafts and proformas use live data
//! and carry a DRAFT mark. The ETag is the hash of the document data, checked
//! before rendering, so a client's cached copy costs no render.

use axum::{
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use render::{DocumentKind, DocumentStatus, InvoiceDocument, QrCode};

use super::{entities::PlaceholderValue, invoices::model::ExchangeRateEntry};
use crate::{
    AppState,
    auth::{Caller, DbConn},
    documents,
    error::{ApiError, ApiResult},
};

/// The placeholder values of a draft or proforma, as a document keeps them.
fn placeholders_of(what: &str, stored: &str) -> ApiResult<Vec<document::Placeholder>> {
    let values: Vec<PlaceholderValue> = documents::parse(what, stored)?;
    Ok(values
        .into_iter()
        .map(|v| document::Placeholder {
            key: v.key,
            value: v.value,
        })
        .collect())
}

/// The exchange rates of a draft or proforma, as a document keeps them.
fn rates_of(what: &str, stored: &str) -> ApiResult<Vec<document::ExchangeRate>> {
    let rates: Vec<ExchangeRateEntry> = documents::parse(what, stored)?;
    Ok(documents::rates(&rates))
}

/// A document that cannot be shown: its explicit tax lines do not add up.
fn unshowable(e: document::build::BuildError) -> ApiError {
    ApiError::bad_request(format!("The document cannot be shown: {e}."))
}

/// What a draft invoice would say if it were issued now (without a number, and without the
/// legal check that issuing makes), from the company and recipient as they are.
async fn draft_document(
    db: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    r: &store::invoices::InvoiceRow,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<document::Invoice> {
    let company = super::invoices::company(db, company_id).await?;
    let entity = super::entities::load(db, company_id, &r.recipient_id).await?;
    let seller = documents::seller(&company)?;
    let buyer = documents::buyer(&entity)?;
    let preceding = match &r.corrected_invoice_id {
        Some(id) => {
            let o = super::invoices::load(db, company_id, id).await?;
            Some(documents::preceding(&o, r.correction_reason.as_deref())?)
        }
        None => None,
    };
    let what = format!("invoice {}", r.id);
    let issue = documents::issue_of(
        r,
        &company,
        &seller,
        &buyer,
        placeholders_of(&what, &r.custom_placeholder_values_json)?,
        rates_of(&what, &r.exchange_rates_json)?,
        Some(
            entity
                .payment_terms_days
                .unwrap_or(company.payment_terms_days),
        ),
        preceding,
        now,
    )?;
    document::build::assemble(issue, seller, buyer).map_err(unshowable)
}

/// A proforma as a document (it is never issued: its reference is its own numbering).
async fn proforma_document(
    db: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    p: &store::proformas::ProformaRow,
) -> ApiResult<document::Invoice> {
    let company = super::invoices::company(db, company_id).await?;
    let entity = super::entities::load(db, company_id, &p.recipient_id).await?;
    let seller = documents::seller(&company)?;
    let buyer = documents::buyer(&entity)?;
    let what = format!("proforma {}", p.id);
    let currency = domain::currency::CurrencyCode::parse(&p.currency_code)
        .map_err(|e| documents::corrupt(&what, e))?;
    let presentation = documents::presentation(
        &company,
        &seller,
        &buyer,
        placeholders_of(&what, &p.custom_placeholder_values_json)?,
    )?;
    let issue = document::build::Issue {
        id: p.id.clone(),
        kind: document::InvoiceKind::Ordinary,
        number: p.reference.clone(),
        yearly_number: p.number,
        year: p.year,
        issued_at: store::from_micros(p.created_at)?,
        currency: currency.code().to_owned(),
        minor_digits: currency.minor_units() as u8,
        accounting_currency: None,
        lines: documents::parse(&what, &p.lines_json)?,
        supply_type: documents::supply(&p.supply_type),
        treatment: p.treatment.clone(),
        due_date: None,
        payment_terms_days: None,
        buyer_reference: None,
        order_reference: None,
        notes: None,
        delivery: document::Delivery::default(),
        prepaid: 0,
        bank_accounts: Vec::new(),
        exchange_rates: rates_of(&what, &p.exchange_rates_json)?,
        preceding: None,
        presentation,
    };
    document::build::assemble(issue, seller, buyer).map_err(unshowable)
}

/// The 400 of a document whose company snippet cannot be rendered for it.
fn snippet_refused(e: &render::RenderError) -> ApiError {
    ApiError::bad_request(format!(
        "The company's Typst snippet cannot be rendered for this document: {e}. Fix it with \
         PATCH /v1/company, or in the recipient's template (PATCH /v1/entities/{{id}}) when it \
         is theirs."
    ))
}

/// Renders (unless the client already has it) and answers the PDF. A document with company
/// snippets renders in a child process with a memory limit ([`crate::isolation`]); others
/// in this process. Either way the render waits for a slot of the company's share
/// ([`crate::render_gate`]), and one that carries a snippet for a snippet slot too.
async fn respond(
    state: &AppState,
    company_id: &store::CompanyId,
    doc: InvoiceDocument,
    headers: &HeaderMap,
    filename: &str,
) -> ApiResult<Response> {
    // The serialized document only names this version of it: not kept while the render
    // waits for its turn (a 500-line invoice's is most of a megabyte).
    let etag = {
        let data = serde_json::to_vec(&doc).map_err(|e| ApiError::Internal(e.into()))?;
        format!("\"{}\"", store::hash_bytes(&data))
    };
    if headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == etag || v == "*")
    {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response());
    }
    let pdf = render_pdf(state, company_id, doc).await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/pdf"),
            ),
            (
                header::ETAG,
                HeaderValue::from_str(&etag).map_err(|e| ApiError::Internal(e.into()))?,
            ),
            (
                header::CONTENT_DISPOSITION,
                crate::views::content_disposition(
                    crate::views::Disposition::Inline,
                    &format!("{filename}.pdf"),
                ),
            ),
        ],
        pdf,
    )
        .into_response())
}

/// Renders a document to PDF bytes: in a child process with a memory limit when it carries
/// company snippets ([`crate::isolation`]), else in this process; either way after a slot
/// of the company's share ([`crate::render_gate`]).
///
/// A document that carries its Factur-X XML (an issued invoice) is the Factur-X PDF
/// ([`render_facturx`]); when PDF/A refuses something in it (a company snippet, a character
/// no embedded font has), it is served as the plain PDF instead: an invoice's PDF is never
/// refused for e-invoice reasons (`GET .../einvoice?format=facturx` says why it is not one).
pub(crate) async fn render_pdf(
    state: &AppState,
    company_id: &store::CompanyId,
    mut doc: InvoiceDocument,
) -> ApiResult<Vec<u8>> {
    // `doc` becomes the plain PDF's document, kept for when PDF/A refuses something; the
    // Factur-X render gets a copy with the XML (moved, not copied: it is the largest part).
    if let Some(xml) = doc.facturx.take() {
        let mut facturx = doc.clone();
        facturx.facturx = Some(xml);
        match render_facturx(state, company_id, facturx).await? {
            Ok(pdf) => return Ok(pdf),
            Err(e) => {
                tracing::warn!(%company_id, error = %e, "the invoice PDF is not a Factur-X PDF/A");
            }
        }
    }
    let snippets = doc.has_snippets();
    render_raw(state, company_id, doc)
        .await?
        .map_err(|e| render_failed(e, snippets))
}

/// The Factur-X PDF of a document that carries its XML: PDF/A-3b with `factur-x.xml`
/// attached, plus the Factur-X XMP ([`einvoice::facturx::add_xmp`], which must come before
/// any signature). The inner error is what PDF/A refuses in the document.
pub(crate) async fn render_facturx(
    state: &AppState,
    company_id: &store::CompanyId,
    doc: InvoiceDocument,
) -> ApiResult<Result<Vec<u8>, render::RenderError>> {
    let snippets = doc.has_snippets();
    match render_raw(state, company_id, doc).await? {
        Ok(pdf) => einvoice::facturx::add_xmp(&pdf)
            .map(Ok)
            .map_err(|e| ApiError::Internal(e.into())),
        Err(e @ render::RenderError::PdfA { .. }) => Ok(Err(e)),
        Err(e) => Err(render_failed(e, snippets)),
    }
}

/// Renders after a slot of the company's share, in a child process when the document has
/// snippets and a runner is configured; the inner error is the renderer's.
async fn render_raw(
    state: &AppState,
    company_id: &store::CompanyId,
    doc: InvoiceDocument,
) -> ApiResult<Result<Vec<u8>, render::RenderError>> {
    let snippets = doc.has_snippets();
    let turns = state
        .renders
        .render(company_id, doc.lines.len(), snippets)
        .await
        .map_err(ApiError::render_busy)?;
    let runner = state.config.snippet_runner.as_deref().filter(|_| snippets);
    let job = render::isolated::Job::Render(Box::new(doc));
    crate::isolation::run(runner, job, turns).await
}

/// The answer for a render that failed (`snippets`: the document carries company snippets).
fn render_failed(e: render::RenderError, snippets: bool) -> ApiError {
    match e {
        render::RenderError::Snippet { .. }
        | render::RenderError::SnippetTooLarge { .. }
        | render::RenderError::Exhausted { .. } => snippet_refused(&e),
        // A document renders in well under a second: past the deadline with a snippet,
        // the snippet is why, and trying again would not help.
        render::RenderError::Timeout(_) if snippets => snippet_refused(&e),
        render::RenderError::Timeout(_) | render::RenderError::Busy(_) => ApiError::Unavailable(
            format!("The PDF could not be rendered now ({e}); try again shortly."),
        ),
        other => ApiError::Internal(anyhow::anyhow!("render: {other}")),
    }
}

/// What the PDF of an invoice shows: an issued invoice as frozen (with its VERI*FACTU QR
/// code and its Factur-X XML), a draft as it would be issued, dated by its creation.
pub(crate) async fn invoice_render_input(
    db: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    r: &store::invoices::InvoiceRow,
) -> ApiResult<InvoiceDocument> {
    let issued = r.status == store::invoices::InvoiceStatus::Issued;
    let doc = if issued {
        documents::of_row(r)?
    } else {
        // Dated by its creation, as drafts always were: the same draft is the same bytes
        // (and the same ETag) until it changes.
        let created = store::from_micros(r.created_at)?;
        draft_document(db, company_id, r, created).await?
    };
    let qr = if issued {
        store::verifactu::for_invoice(db, company_id, &r.id)
            .await?
            .into_iter()
            .find_map(|rec| rec.qr_url)
            .and_then(|url| verifactu::qr::qr_svg(&url, 120).ok())
            .map(|svg| QrCode {
                svg,
                caption: "VERI*FACTU".into(),
            })
    } else {
        None
    };
    // An issued invoice is the Factur-X hybrid when its document can be a valid Factur-X
    // (the same refusals as `GET .../einvoice?format=facturx`, which names the rule).
    let facturx = if issued {
        einvoice::xml(&doc, einvoice::Format::Facturx).ok()
    } else {
        None
    };
    let mut view = documents::views::render(
        &doc,
        if r.series == store::invoices::Series::Corrective {
            DocumentKind::CorrectiveInvoice
        } else {
            DocumentKind::Invoice
        },
        if issued {
            DocumentStatus::Issued
        } else {
            DocumentStatus::Draft
        },
        qr,
    );
    view.facturx = facturx;
    Ok(view)
}

/// The invoice as a PDF. An issued invoice's is the Factur-X hybrid (PDF/A-3b with its
/// EN 16931 CII attached as `factur-x.xml`), byte-identical on every request; when the
/// invoice cannot be a valid Factur-X (see `GET /v1/invoices/{id}/einvoice?format=facturx`),
/// it is the plain PDF. Drafts carry a DRAFT mark and are plain PDFs.
#[utoipa::path(get, path = "/v1/invoices/{id}/pdf", tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, description = "The PDF (of an issued invoice: Factur-X, PDF/A-3b)", content_type = "application/pdf", body = Vec<u8>),
        (status = 304, description = "Not modified (If-None-Match matched the ETag)"),
        crate::openapi::ReadErrors))]
pub async fn invoice_pdf(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let r = super::invoices::load(&mut db, &caller.company_id, &id).await?;
    let doc = invoice_render_input(&mut db, &caller.company_id, &r).await?;
    let name = r
        .reference
        .clone()
        .unwrap_or_else(|| format!("draft-{}", r.id));
    // Back to the pool before waiting for a render: a PDF must not hold a connection
    // other requests need while it queues for the render budget, nor the stored row (its
    // lines and document, read into `doc` already).
    db.release();
    drop(r);
    respond(&state, &caller.company_id, doc, &headers, &name).await
}

/// The proforma as a PDF.
#[utoipa::path(get, path = "/v1/proformas/{id}/pdf", tag = "proformas",
    params(("id" = String, Path, description = "Proforma id")),
    responses((status = 200, description = "The PDF", content_type = "application/pdf", body = Vec<u8>),
        (status = 304, description = "Not modified (If-None-Match matched the ETag)"),
        crate::openapi::ReadErrors))]
pub async fn proforma_pdf(
    State(state): State<AppState>,
    caller: Caller,
    mut db: DbConn,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let p = store::proformas::get(&mut db, &caller.company_id, &id)
        .await?
        .ok_or_else(|| ApiError::not_found("proforma"))?;
    let doc = proforma_document(&mut db, &caller.company_id, &p).await?;
    let doc = documents::views::render(&doc, DocumentKind::Proforma, DocumentStatus::Issued, None);
    db.release();
    respond(&state, &caller.company_id, doc, &headers, &p.reference).await
}
