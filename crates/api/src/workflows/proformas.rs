//! Proformas into invoices: a draft invoice made from a proforma, both linked, once.

use super::{
    AppError, AppResult, Services, Writer,
    drafts::{line_request, priced_draft, store_new_draft},
};
use crate::{
    documents,
    routes::invoices::{CreateInvoiceRequest, model::InvoiceLine},
};

/// The proforma `id` of the company `company_id` (404 otherwise).
pub async fn load(
    conn: &mut sqlx::AnyConnection,
    company_id: &str,
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
    company_id: &str,
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
    let what = |column: &str| format!("proforma {} {column}", proforma.id);
    let lines: Vec<domain::invoice::Line> = documents::parse(&what("lines"), &proforma.lines_json)?;
    let req = CreateInvoiceRequest {
        recipient_id: proforma.recipient_id.clone(),
        lines: lines
            .into_iter()
            .map(|l| line_request(&InvoiceLine::from_domain(l, "en")))
            .collect(),
        bank_account_ids: Vec::new(),
        currency_code: Some(proforma.currency_code.clone()),
        custom_placeholder_values: documents::parse(
            &what("placeholder values"),
            &proforma.custom_placeholder_values_json,
        )?,
        exchange_rates: documents::parse(&what("exchange rates"), &proforma.exchange_rates_json)?,
        supply_type: Some(crate::routes::invoices::model::SupplyType::parse(
            &proforma.supply_type,
        )),
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
        "proforma",
        store::invoices::Series::Invoice,
    )
    .await?;
    invoice.proforma_id = Some(proforma.id.clone());
    store_new_draft(&mut conn, svc, &mut invoice).await?;
    proforma.invoice_id = Some(invoice.id.clone());
    store::proformas::update(&mut conn, &proforma).await?;
    Ok(invoice)
}
