//! Corrective invoices of an issued invoice: a draft, or created and issued at once.

use super::{
    AppError, AppResult, Services, Writer,
    drafts::{priced_draft, store_new_draft, to_json},
    invoices::{company, load},
    issue,
};
use crate::routes::{
    entities::PlaceholderValue,
    invoices::{
        CreateInvoiceRequest,
        corrections::CreateCorrectiveInvoiceRequest,
        model::{ExchangeRateEntry, InvoiceLineRequest, SupplyType},
    },
};

/// Creates a corrective draft of the issued invoice `id`.
pub async fn draft(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    req: CreateCorrectiveInvoiceRequest,
) -> AppResult<store::invoices::InvoiceRow> {
    let mut conn = tx.conn().await?;
    let mut row = corrective_draft(&mut conn, svc, company_id, id, req).await?;
    store_new_draft(&mut *conn, svc, &mut row).await?;
    Ok(row)
}

/// Creates a corrective invoice of the issued invoice `id` and issues it, as the user
/// `user_id`, in one step.
pub async fn correct_and_issue(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    user_id: &str,
    id: &str,
    req: CreateCorrectiveInvoiceRequest,
) -> AppResult<store::invoices::InvoiceRow> {
    // Checked before the write transaction, in the order the answers are due: the invoice
    // (404, 409), then whether the company may issue.
    let company = {
        let mut db = svc.db.acquire().await?;
        ensure_issued(&load(&mut db, company_id, id).await?)?;
        issue::issuing_company(&mut db, company_id, user_id).await?
    };
    let mut conn = tx.conn().await?;
    let mut row = corrective_draft(&mut conn, svc, company_id, id, req).await?;
    store_new_draft(&mut *conn, svc, &mut row).await?;
    issue::issue_draft(&mut conn, svc, company, None, row).await
}

/// Only issued invoices can be corrected (409 otherwise).
fn ensure_issued(original: &store::invoices::InvoiceRow) -> AppResult<()> {
    if original.status == store::invoices::InvoiceStatus::Issued {
        Ok(())
    } else {
        Err(AppError::Conflict(
            "Only issued invoices can be corrected; edit or delete the draft instead.".into(),
        ))
    }
}

async fn corrective_draft(
    conn: &mut sqlx::AnyConnection,
    svc: Services<'_>,
    company_id: &store::CompanyId,
    id: &str,
    req: CreateCorrectiveInvoiceRequest,
) -> AppResult<store::invoices::InvoiceRow> {
    let original = load(conn, company_id, id).await?;
    ensure_issued(&original)?;
    let doc = crate::documents::of_row(&original)?;
    let company = company(conn, company_id).await?;
    let spanish = company.is_spanish();
    let reason = match (spanish, req.verifactu) {
        (false, _) => None,
        (true, None) => Some("R1".to_owned()),
        (true, Some(v)) if ["R1", "R2", "R3", "R4", "R5"].contains(&v.reason.as_str()) => {
            Some(v.reason)
        }
        (true, Some(v)) => {
            return Err(AppError::invalid(format!(
                "`verifactu.reason` must be one of R1, R2, R3, R4, R5, got `{}`.",
                v.reason
            )));
        }
    };
    let placeholders = if req.custom_placeholder_values.is_empty() {
        doc.presentation
            .placeholders
            .iter()
            .map(|p| PlaceholderValue {
                key: p.key.clone(),
                value: p.value.clone(),
            })
            .collect()
    } else {
        req.custom_placeholder_values
    };
    let rates = if req.exchange_rates.is_empty() {
        doc.exchange_rates
            .iter()
            .map(|r| ExchangeRateEntry {
                from: r.from.clone(),
                to: r.to.clone(),
                rate: r.rate,
                date: r.date.map(|d| d.to_string()),
                source: r.source.clone(),
            })
            .collect()
    } else {
        req.exchange_rates
    };
    let supply = req
        .supply_type
        .unwrap_or(SupplyType::parse(&original.supply_type));
    let reversal = req.lines.is_empty();
    let draft_req = CreateInvoiceRequest {
        recipient_id: original.recipient_id.clone(),
        // A placeholder line keeps `build` happy for a reversal; its lines are replaced below.
        lines: if reversal {
            vec![InvoiceLineRequest {
                concept: "reversal".into(),
                quantity: None,
                quantity_unit: None,
                unit_price: None,
                unit_unit: None,
                is_tax: false,
                tax_amount: None,
                subtotal: None,
            }]
        } else {
            req.lines
        },
        bank_account_ids: Vec::new(),
        currency_code: Some(original.currency_code.clone()),
        custom_placeholder_values: placeholders,
        exchange_rates: rates,
        supply_type: Some(supply),
        due_date: None,
        // A corrective invoice names the buyer's references of the invoice it corrects.
        buyer_reference: doc.buyer_reference.clone(),
        order_reference: doc.order_reference.clone(),
        delivery_date: doc.delivery.date,
        period_start: doc.delivery.period_start,
        period_end: doc.delivery.period_end,
        notes: None,
    };
    let mut row = priced_draft(
        conn,
        svc,
        company_id,
        draft_req,
        store::invoices::Origin::Correction,
        store::invoices::Series::Corrective,
    )
    .await?;
    if reversal {
        let original_lines: Vec<domain::invoice::Line> =
            doc.lines.iter().map(document::Line::to_domain).collect();
        let lines = domain::invoice::reversed(&original_lines);
        let totals =
            domain::invoice::totals(&lines).map_err(|e| AppError::invalid(format!("{e}.")))?;
        row.lines_json = to_json(&lines)?;
        row.line_count = lines.len() as i64;
        row.net_total = totals.net;
        row.tax_total = totals.tax;
        row.withholding_total = totals.withholding;
        row.total = totals.total;
        row.treatment = original.treatment.clone();
        row.supply_type = original.supply_type.clone();
    }
    row.bank_accounts_json = to_json(&doc.payment.accounts)?;
    row.corrected_invoice_id = Some(original.id);
    row.correction_reason = reason;
    Ok(row)
}
