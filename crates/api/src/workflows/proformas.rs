//! Proformas: creating one (priced like a draft, with its own reference), changing one,
//! and a draft invoice made from a proforma, both linked, once.

use chrono::Datelike;
use domain::reference::ReferenceFormat;

use super::{
    AppError, AppResult, Services, Writer,
    drafts::{apply_built, line_request, priced_draft, store_new_draft},
    invoices::company,
};
use crate::{
    documents,
    routes::{
        entities::PlaceholderValue,
        invoices::{
            CreateInvoiceRequest, UpdateInvoiceRequest,
            build::{self, DocumentInput},
            model::{ExchangeRateEntry, InvoiceLine, SupplyType},
        },
    },
};

/// What a stored proforma says, decoded from its columns (a column that does not decode
/// is an error).
pub struct Content {
    pub lines: Vec<domain::invoice::Line>,
    pub placeholders: Vec<PlaceholderValue>,
    pub rates: Vec<ExchangeRateEntry>,
}

/// Decodes the proforma's lines, placeholder values and exchange rates.
pub fn content(row: &store::proformas::ProformaRow) -> AppResult<Content> {
    let what = |column: &str| format!("proforma {} {column}", row.id);
    Ok(Content {
        lines: documents::parse(&what("lines"), &row.lines_json)?,
        placeholders: documents::parse(
            &what("placeholder values"),
            &row.custom_placeholder_values_json,
        )?,
        rates: documents::parse(&what("exchange rates"), &row.exchange_rates_json)?,
    })
}

/// Refuses the fields of an invoice request that a proforma does not keep (it is a quote:
/// no bank accounts, due date, references, supply date or notes), naming them, rather than
/// accepting and silently dropping them.
fn refuse_unkept(set: &[(&str, bool)]) -> AppResult<()> {
    let unkept: Vec<String> = set
        .iter()
        .filter(|(_, is_set)| *is_set)
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    if unkept.is_empty() {
        return Ok(());
    }
    Err(AppError::invalid(format!(
        "A proforma does not keep {}: drop {}, and set {} on the invoice made from it \
         (POST /v1/proformas/{{id}}/invoice, then PATCH /v1/invoices/{{id}}).",
        unkept.join(", "),
        if unkept.len() == 1 { "it" } else { "them" },
        if unkept.len() == 1 { "it" } else { "them" },
    )))
}

/// Creates a proforma of the company from `req`, priced like a draft; its reference
/// follows the company's `proformaReferenceFormat` and the year's proforma counter.
pub async fn create(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    req: CreateInvoiceRequest,
) -> AppResult<store::proformas::ProformaRow> {
    refuse_unkept(&[
        ("bank_account_ids", !req.bank_account_ids.is_empty()),
        ("due_date", matches!(req.due_date, Some(Some(_)))),
        ("buyer_reference", req.buyer_reference.is_some()),
        ("order_reference", req.order_reference.is_some()),
        ("delivery_date", req.delivery_date.is_some()),
        ("period_start", req.period_start.is_some()),
        ("period_end", req.period_end.is_some()),
        ("notes", req.notes.is_some()),
    ])?;
    let mut conn = tx.conn().await?;
    let company = company(&mut conn, company_id).await?;
    let built = build::build(
        &mut conn,
        &company,
        DocumentInput {
            recipient_id: req.recipient_id,
            lines: req.lines,
            currency_code: req.currency_code,
            custom_placeholder_values: req.custom_placeholder_values,
            exchange_rates: req.exchange_rates,
            supply_type: req.supply_type,
        },
    )
    .await?;
    let format = ReferenceFormat::parse(&company.proforma_reference_format).map_err(|e| {
        AppError::invalid(format!(
            "The proforma reference format {e}; fix it with PATCH /v1/company."
        ))
    })?;
    let now = svc.now();
    let year = i64::from(now.year());
    let number = store::counters::next(&mut conn, company_id, "proforma", year, 1).await?;
    let mut row = store::proformas::ProformaRow {
        id: store::new_id(),
        company_id: company_id.to_owned(),
        recipient_id: String::new(),
        supply_type: String::new(),
        currency_code: String::new(),
        treatment: None,
        number,
        year,
        reference: format.render(year, number),
        net_total: 0,
        tax_total: 0,
        withholding_total: 0,
        total: 0,
        line_count: 0,
        lines_json: String::new(),
        custom_placeholder_values_json: String::new(),
        exchange_rates_json: String::new(),
        invoice_id: None,
        created_at: now.timestamp_micros(),
        updated_at: None,
    };
    apply_built(&mut row, built)?;
    store::proformas::insert(&mut conn, &row).await?;
    Ok(row)
}

/// Changes the proforma `id` with the fields `req` gives (lines replace all lines; its
/// reference stays) and returns it as stored.
pub async fn update(
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    req: UpdateInvoiceRequest,
) -> AppResult<store::proformas::ProformaRow> {
    refuse_unkept(&[
        (
            "bank_account_ids",
            req.bank_account_ids.as_ref().is_some_and(|v| !v.is_empty()),
        ),
        ("due_date", matches!(req.due_date, Some(Some(_)))),
        (
            "buyer_reference",
            matches!(req.buyer_reference, Some(Some(_))),
        ),
        (
            "order_reference",
            matches!(req.order_reference, Some(Some(_))),
        ),
        ("delivery_date", matches!(req.delivery_date, Some(Some(_)))),
        ("period_start", matches!(req.period_start, Some(Some(_)))),
        ("period_end", matches!(req.period_end, Some(Some(_)))),
        ("notes", matches!(req.notes, Some(Some(_)))),
    ])?;
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, company_id, id).await?;
    let company = company(&mut conn, company_id).await?;
    let current = content(&row)?;
    let input = DocumentInput {
        recipient_id: req.recipient_id.unwrap_or_else(|| row.recipient_id.clone()),
        lines: match req.lines {
            Some(lines) => lines,
            None => current
                .lines
                .into_iter()
                .map(|l| line_request(&InvoiceLine::from_domain(l, "en")))
                .collect(),
        },
        currency_code: Some(
            req.currency_code
                .unwrap_or_else(|| row.currency_code.clone()),
        ),
        custom_placeholder_values: req
            .custom_placeholder_values
            .unwrap_or(current.placeholders),
        exchange_rates: req.exchange_rates.unwrap_or(current.rates),
        supply_type: Some(
            req.supply_type
                .unwrap_or_else(|| SupplyType::parse(&row.supply_type)),
        ),
    };
    let built = build::build(&mut conn, &company, input).await?;
    apply_built(&mut row, built)?;
    store::proformas::update(&mut conn, &row).await?;
    load(&mut conn, company_id, id).await
}

/// The proforma `id` of the company `company_id` (404 otherwise).
pub async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    id: &str,
) -> AppResult<store::proformas::ProformaRow> {
    store::proformas::get(conn, company_id, id)
        .await?
        .ok_or_else(|| AppError::not_found("proforma"))
}

/// Makes a draft invoice from the proforma `id` and links both; a proforma already
/// invoiced is a conflict.
pub async fn to_invoice(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
) -> AppResult<store::invoices::InvoiceRow> {
    let mut conn = tx.conn().await?;
    let mut proforma = load(&mut conn, company_id, id).await?;
    if let Some(invoice_id) = &proforma.invoice_id {
        return Err(AppError::Conflict(format!(
            "Proforma {} was already turned into invoice {invoice_id}.",
            proforma.reference
        )));
    }
    let current = content(&proforma)?;
    let req = CreateInvoiceRequest {
        recipient_id: proforma.recipient_id.clone(),
        lines: current
            .lines
            .into_iter()
            .map(|l| line_request(&InvoiceLine::from_domain(l, "en")))
            .collect(),
        bank_account_ids: Vec::new(),
        currency_code: Some(proforma.currency_code.clone()),
        custom_placeholder_values: current.placeholders,
        exchange_rates: current.rates,
        supply_type: Some(SupplyType::parse(&proforma.supply_type)),
        due_date: None,
        buyer_reference: None,
        order_reference: None,
        delivery_date: None,
        period_start: None,
        period_end: None,
        notes: None,
    };
    let mut invoice = priced_draft(
        &mut conn,
        svc,
        company_id,
        req,
        store::invoices::Origin::Proforma,
        store::invoices::Series::Invoice,
    )
    .await?;
    invoice.proforma_id = Some(proforma.id.clone());
    store_new_draft(&mut *conn, svc, &mut invoice).await?;
    proforma.invoice_id = Some(invoice.id.clone());
    store::proformas::update(&mut conn, &proforma).await?;
    Ok(invoice)
}

/// Deletes the proforma `id` of the company; a draft invoice made from it stays.
pub async fn delete(tx: &impl Writer, company_id: &store::CompanyId, id: &str) -> AppResult<()> {
    let mut conn = tx.conn().await?;
    if store::proformas::delete(&mut conn, company_id, id).await? {
        Ok(())
    } else {
        Err(AppError::not_found("proforma"))
    }
}

/// Deletes every listed proforma of the company (ids already bounded and deduplicated);
/// ids that are not the company's are skipped. Returns how many were deleted.
pub async fn delete_many(
    tx: &impl Writer,
    company_id: &store::CompanyId,
    ids: Vec<String>,
) -> AppResult<i64> {
    let mut conn = tx.conn().await?;
    let mut affected = 0;
    for id in ids {
        if store::proformas::delete(&mut conn, company_id, &id).await? {
            affected += 1;
        }
    }
    Ok(affected)
}
