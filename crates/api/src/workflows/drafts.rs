//! Drafts: creating one from a request (validated and priced on a pooled connection,
//! numbered on the writer), changing and deleting one; and the pieces other workflows
//! make drafts with (corrective invoices, proformas, recurring invoices).

use super::{
    AppError, AppResult, Services, Writer,
    invoices::{company, ensure_draft, load},
};
use crate::{
    auth::Source,
    routes::invoices::{
        CreateInvoiceRequest, UpdateInvoiceRequest,
        build::{self, DocumentInput},
        model::{InvoiceLine, InvoiceLineRequest},
    },
};

/// Creates a draft invoice of the company from `req`, made through `source`; taxes are
/// computed unless explicit tax lines are sent.
///
/// Validated and priced on a pooled connection, so the write transaction (SQLite's single
/// writer) is held only for numbering and storing the draft.
pub async fn create(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    source: Source,
    req: CreateInvoiceRequest,
) -> AppResult<store::invoices::InvoiceRow> {
    let origin = match source {
        Source::Mcp => store::invoices::Origin::Mcp,
        Source::Api => store::invoices::Origin::Api,
    };
    let mut row = {
        let mut db = svc.db.acquire().await?;
        priced_draft(
            &mut db,
            svc,
            company_id,
            req,
            origin,
            store::invoices::Series::Invoice,
        )
        .await?
    };
    // The draft's insert is the transaction's first statement: it carries the `BEGIN`. It
    // is also its last, so it may commit it too.
    let mut tx = tx.writing(true).await?;
    store_new_draft(&mut *tx, svc, &mut row).await?;
    Ok(row)
}

/// Changes the draft `id` with the fields `req` gives (lines replace all lines) and
/// returns it as stored; an issued invoice is a conflict.
pub async fn update(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    req: UpdateInvoiceRequest,
) -> AppResult<store::invoices::InvoiceRow> {
    let mut conn = tx.conn().await?;
    let mut row = load(&mut conn, company_id, id).await?;
    ensure_draft(&row)?;
    let company = company(&mut conn, company_id).await?;
    let current =
        crate::documents::views::invoice(row.clone(), "en", svc.now().timestamp_micros())?;
    let input = DocumentInput {
        recipient_id: req.recipient_id.unwrap_or(current.recipient_id),
        lines: match req.lines {
            Some(lines) => lines,
            None => current.lines.iter().map(line_request).collect(),
        },
        currency_code: Some(req.currency_code.unwrap_or(current.currency_code)),
        custom_placeholder_values: req
            .custom_placeholder_values
            .unwrap_or(current.custom_placeholder_values),
        exchange_rates: req.exchange_rates.unwrap_or(current.exchange_rates),
        supply_type: Some(req.supply_type.unwrap_or(current.supply_type)),
    };
    let built = build::build(&mut conn, &company, input).await?;
    apply_built(&mut row, built)?;
    if let Some(ids) = req.bank_account_ids {
        row.bank_accounts_json = to_json(
            &crate::routes::bank_accounts::snapshot_for_invoice(&mut conn, company_id, &ids)
                .await?,
        )?;
    }
    if let Some(due) = req.due_date {
        row.due_date = due.map(|d| d.timestamp_micros());
    }
    let details = store::invoices::DraftDetails {
        buyer_reference: req.buyer_reference.unwrap_or(current.buyer_reference),
        order_reference: req.order_reference.unwrap_or(current.order_reference),
        delivery_date: req.delivery_date.unwrap_or(current.delivery_date),
        period_start: req.period_start.unwrap_or(current.period_start),
        period_end: req.period_end.unwrap_or(current.period_end),
        notes: req.notes.unwrap_or(current.notes),
    };
    row.details_json = checked_details(details)?
        .encode()
        .map_err(|e| AppError::Internal(e.into()))?;
    store::invoices::update(&mut conn, &row).await?;
    load(&mut conn, company_id, id).await
}

/// Deletes the draft `id`; an issued invoice is a conflict.
pub async fn delete(tx: &impl Writer, company_id: &store::CompanyId, id: &str) -> AppResult<()> {
    let mut conn = tx.conn().await?;
    let row = load(&mut conn, company_id, id).await?;
    ensure_draft(&row)?;
    store::invoices::delete_draft(&mut conn, company_id, &super::invoices::invoice_id(id)?).await?;
    Ok(())
}

/// Deletes every listed draft of the company (ids already bounded and deduplicated);
/// issued invoices and ids that are not the company's are skipped. Returns how many were
/// deleted.
pub async fn delete_many(
    tx: &impl Writer,
    company_id: &store::CompanyId,
    ids: Vec<String>,
) -> AppResult<i64> {
    let mut conn = tx.conn().await?;
    let mut affected = 0;
    for id in ids {
        // A text that cannot be an id is no draft of the company either.
        let Ok(id) = store::InvoiceId::parse(&id) else {
            continue;
        };
        if store::invoices::delete_draft(&mut conn, company_id, &id).await? {
            affected += 1;
        }
    }
    Ok(affected)
}

/// Checks a draft's legal details: lengths, no control characters, a whole period.
pub fn checked_details(
    d: store::invoices::DraftDetails,
) -> AppResult<store::invoices::DraftDetails> {
    let text = |field: &str, v: Option<String>, max: usize, multiline: bool| {
        let v = crate::views::optional_text(field, v, max)?;
        if let Some(t) = &v
            && t.chars()
                .any(|c| c.is_control() && !(multiline && matches!(c, '\n' | '\t')))
        {
            return Err(AppError::invalid(format!(
                "`{field}` must not contain control characters."
            )));
        }
        Ok(v)
    };
    let out = store::invoices::DraftDetails {
        buyer_reference: text("buyer_reference", d.buyer_reference, 200, false)?,
        order_reference: text("order_reference", d.order_reference, 200, false)?,
        notes: text("notes", d.notes, 2000, true)?,
        delivery_date: d.delivery_date,
        period_start: d.period_start,
        period_end: d.period_end,
    };
    match (out.period_start, out.period_end) {
        (Some(a), Some(b)) if a > b => Err(AppError::invalid(
            "`period_start` must not be after `period_end`.",
        )),
        (Some(_), None) | (None, Some(_)) => Err(AppError::invalid(
            "`period_start` and `period_end` go together: give both, or neither.",
        )),
        _ => Ok(out),
    }
}

/// Stores a new draft (from [`priced_draft`]) with the next draft number of the year, in
/// one round trip; inside the write transaction, which holds the year's draft counter.
pub async fn store_new_draft(
    tx: &mut impl store::Writing,
    svc: Services<'_>,
    row: &mut store::invoices::InvoiceRow,
) -> AppResult<()> {
    row.order_year = Some(i64::from(chrono::Datelike::year(&svc.now())));
    let stored = store::invoices::insert_numbered_draft(tx, row).await?;
    row.order_number = Some(stored.order_number);
    store::webhooks::emit_counted(
        tx,
        stored.webhook_endpoints,
        &row.company_id,
        "invoice.created",
        || store::invoice_events::invoice_data(row),
    )
    .await?;
    Ok(())
}

/// Builds a new draft row from a create request, validated and priced but not yet
/// numbered; it only reads, so any connection will do.
pub async fn priced_draft(
    conn: &mut sqlx::AnyConnection,
    svc: Services<'_>,
    company_id: &store::CompanyId,
    req: CreateInvoiceRequest,
    origin: store::invoices::Origin,
    series: store::invoices::Series,
) -> AppResult<store::invoices::InvoiceRow> {
    // The company and the recipient in one read.
    let (company, recipient) =
        store::entities::with_company(conn, company_id, &req.recipient_id).await?;
    let company = company.ok_or_else(|| AppError::not_found("company"))?;
    let recipient = recipient.ok_or_else(|| build::no_such_recipient(&req.recipient_id))?;
    let bank_accounts =
        crate::routes::bank_accounts::snapshot_for_invoice(conn, company_id, &req.bank_account_ids)
            .await?;
    let due_date = req.due_date.flatten().map(|d| d.timestamp_micros());
    let details = store::invoices::DraftDetails {
        buyer_reference: req.buyer_reference,
        order_reference: req.order_reference,
        delivery_date: req.delivery_date,
        period_start: req.period_start,
        period_end: req.period_end,
        notes: req.notes,
    };
    let built = build::build_for(
        &company,
        recipient,
        DocumentInput {
            recipient_id: req.recipient_id,
            lines: req.lines,
            currency_code: req.currency_code,
            custom_placeholder_values: req.custom_placeholder_values,
            exchange_rates: req.exchange_rates,
            supply_type: req.supply_type,
        },
    )?;
    let now = svc.now();
    let mut row = store::invoices::InvoiceRow {
        id: store::new_id(),
        company_id: company_id.to_owned(),
        recipient_id: String::new(),
        series,
        status: store::invoices::InvoiceStatus::Draft,
        origin,
        supply_type: String::new(),
        currency_code: String::new(),
        treatment: None,
        invoice_number: None,
        invoice_year: None,
        reference: None,
        issued_at: None,
        order_number: None,
        order_year: None,
        net_total: 0,
        tax_total: 0,
        withholding_total: 0,
        total: 0,
        line_count: 0,
        lines_json: String::new(),
        custom_placeholder_values_json: String::new(),
        exchange_rates_json: String::new(),
        bank_accounts_json: to_json(&bank_accounts)?,
        issuer_snapshot_json: None,
        recipient_snapshot_json: None,
        corrected_invoice_id: None,
        correction_reason: None,
        proforma_id: None,
        created_at: now.timestamp_micros(),
        updated_at: None,
        due_date,
        paid_minor: 0,
        details_json: String::new(),
        document_json: None,
        recurring_invoice_id: None,
    };
    let details = store::invoices::DraftDetails {
        // The recipient's buyer reference, unless the draft gives its own.
        buyer_reference: match details.buyer_reference {
            Some(given) => Some(given),
            None => entity_buyer_reference(&built.recipient)?,
        },
        ..details
    };
    row.details_json = checked_details(details)?
        .encode()
        .map_err(|e| AppError::Internal(e.into()))?;
    apply_built(&mut row, built)?;
    Ok(row)
}

/// The `einvoice.buyer_reference` of an entity, copied into its new drafts.
fn entity_buyer_reference(e: &store::entities::EntityRow) -> AppResult<Option<String>> {
    Ok(e.einvoice_json
        .as_deref()
        .map(|t| {
            crate::documents::parse::<crate::documents::EntityEinvoice>(
                "entity e-invoice settings",
                t,
            )
        })
        .transpose()?
        .and_then(|s| s.buyer_reference))
}

/// The columns of a stored row that hold a priced document (a draft invoice, a
/// proforma), for [`apply_built`] to fill.
pub struct PricedColumns<'a> {
    pub recipient_id: &'a mut String,
    pub supply_type: &'a mut String,
    pub currency_code: &'a mut String,
    pub treatment: &'a mut Option<String>,
    pub net_total: &'a mut i64,
    pub tax_total: &'a mut i64,
    pub withholding_total: &'a mut i64,
    pub total: &'a mut i64,
    pub line_count: &'a mut i64,
    pub lines_json: &'a mut String,
    pub custom_placeholder_values_json: &'a mut String,
    pub exchange_rates_json: &'a mut String,
}

/// A row that stores a priced document.
pub trait Priced {
    /// Its priced document's columns.
    fn priced_columns(&mut self) -> PricedColumns<'_>;
}

/// Implements [`Priced`] for rows that name the priced columns alike (an invoice and a
/// proforma row list the same twelve).
macro_rules! priced_rows {
    ($($row:ty),+) => {$(
        impl Priced for $row {
            fn priced_columns(&mut self) -> PricedColumns<'_> {
                PricedColumns {
                    recipient_id: &mut self.recipient_id,
                    supply_type: &mut self.supply_type,
                    currency_code: &mut self.currency_code,
                    treatment: &mut self.treatment,
                    net_total: &mut self.net_total,
                    tax_total: &mut self.tax_total,
                    withholding_total: &mut self.withholding_total,
                    total: &mut self.total,
                    line_count: &mut self.line_count,
                    lines_json: &mut self.lines_json,
                    custom_placeholder_values_json: &mut self.custom_placeholder_values_json,
                    exchange_rates_json: &mut self.exchange_rates_json,
                }
            }
        }
    )+};
}

priced_rows!(store::invoices::InvoiceRow, store::proformas::ProformaRow);

/// Copies a priced document into the row that stores it (a draft invoice, a proforma):
/// the one encoding of [`build::Built`] in columns.
pub fn apply_built(row: &mut impl Priced, b: build::Built) -> AppResult<()> {
    let c = row.priced_columns();
    *c.lines_json = to_json(&b.lines)?;
    *c.custom_placeholder_values_json = to_json(&b.placeholders)?;
    *c.exchange_rates_json = to_json(&b.rates)?;
    *c.recipient_id = b.recipient.id;
    *c.supply_type = b.supply_type.as_str().into();
    *c.currency_code = b.currency_code;
    *c.treatment = b.treatment;
    *c.net_total = b.totals.net;
    *c.tax_total = b.totals.tax;
    *c.withholding_total = b.totals.withholding;
    *c.total = b.totals.total;
    *c.line_count = b.lines.len() as i64;
    Ok(())
}

/// Serialises a value stored as a JSON column.
pub fn to_json<T: serde::Serialize>(v: &T) -> AppResult<String> {
    serde_json::to_string(v).map_err(|e| AppError::Internal(e.into()))
}

/// The request line that reproduces a stored line.
pub fn line_request(l: &InvoiceLine) -> InvoiceLineRequest {
    InvoiceLineRequest {
        concept: l.concept.clone(),
        quantity: Some(l.quantity),
        quantity_unit: l.quantity_unit.clone(),
        unit_price: Some(l.unit_price),
        unit_unit: l.unit_unit.clone(),
        is_tax: l.is_tax,
        tax_amount: if l.is_tax { l.tax_amount } else { None },
        subtotal: Some(l.subtotal),
    }
}
