//! `POST /v1/expenses/import`: a supplier's e-invoice (UBL, CII, XRechnung, Factur-X)
//! becomes an expense, with the file as its receipt.
//!
//! The file is read and checked in full (crates/einvoice) before anything is written;
//! then, in the request's one transaction, the supplier is found by its VAT id or tax
//! id (or created from the seller's data), a second import of the same supplier's
//! invoice is refused naming the expense it already is, the file is stored and the
//! expense written. Any error rolls everything back.

use axum::{
    Json,
    body::Bytes,
    extract::{State, rejection::BytesRejection},
    http::StatusCode,
};
use einvoice::read::{Incoming, ReadError};
use rust_decimal::{Decimal, RoundingStrategy};
use store::files::FileStore;

use super::{
    entities::ThirdPartyAddress,
    expenses::{Expense, MAX_RECEIPT, SOURCE_EINVOICE, load},
    invoices::to_json,
};
use crate::{
    AppState,
    auth::Caller,
    error::{ApiError, ApiResult},
    gate::Tx,
};

/// Imports a supplier's e-invoice as an expense.
///
/// The body is the raw file: UBL 2.1 Invoice or CreditNote, CII D16B, XRechnung (either
/// syntax), or a Factur-X / ZUGFeRD 2.x PDF with its XML embedded; at most 10 MiB. The
/// supplier is the company's entity with the seller's VAT id (BT-31) or tax id (BT-32),
/// else a new entity made from the seller's name and address. A credit note becomes an
/// expense with negative amounts, linked to the expense of the invoice it corrects when
/// that one was imported or recorded. Nothing is written on any error.
#[utoipa::path(post, path = "/v1/expenses/import", tag = "expenses",
    request_body(content = Vec<u8>, content_type = "application/xml",
        description = "The e-invoice file: UBL or CII XML (`application/xml`, `text/xml`), or a Factur-X PDF (`application/pdf`)"),
    responses((status = 201, description = "The expense, with `source: \"einvoice\"` and the file as its receipt", body = Expense),
        (status = 409, description = "This supplier's invoice with this number is already an expense; the message names it", body = String, content_type = "text/plain"),
        crate::openapi::WriteErrors))]
pub async fn import_expense(
    State(state): State<AppState>,
    caller: Caller,
    tx: Tx,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<(StatusCode, Json<Expense>)> {
    let bytes = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge(format!(
                "An e-invoice file may be at most {} MiB.",
                MAX_RECEIPT / (1024 * 1024)
            ))
        } else {
            ApiError::bad_request(format!("The file could not be read: {e}"))
        }
    })?;
    // Reading is CPU work on up to 10 MiB: off the async workers.
    let file = bytes.clone();
    let incoming = tokio::task::spawn_blocking(move || einvoice::read::read(&file))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(refused)?;
    let draft = ExpenseDraft::of(&incoming)?;

    let mut conn = tx.conn().await?;
    let now = state.now();
    let supplier = match find_supplier(&mut conn, &caller.company_id, &incoming).await? {
        Some(s) => s,
        None => {
            create_supplier(
                &mut conn,
                &caller.company_id,
                &incoming,
                &draft.currency,
                now,
            )
            .await?
        }
    };
    if let Some(existing) = store::expenses::find_by_reference(
        &mut conn,
        &caller.company_id,
        &supplier.id,
        &incoming.number,
    )
    .await?
    {
        return Err(already_imported(
            &supplier.name,
            &incoming.number,
            &existing,
        ));
    }
    let corrected_expense_id = match (&incoming.preceding, incoming.credit_note) {
        (Some(preceding), true) => {
            store::expenses::find_by_reference(
                &mut conn,
                &caller.company_id,
                &supplier.id,
                preceding,
            )
            .await?
        }
        _ => None,
    };
    let content_type = if incoming.from_pdf {
        "application/pdf"
    } else {
        "application/xml"
    };
    let receipt = state
        .db
        .files()
        .put(&mut conn, &caller.company_id, content_type, &bytes)
        .await?;
    let row = store::expenses::ExpenseRow {
        id: store::new_id(),
        company_id: caller.company_id.clone(),
        supplier_id: supplier.id.clone(),
        invoice_reference: incoming.number.clone(),
        category: None,
        description: incoming
            .note
            .as_deref()
            .map(|n| n.chars().take(2000).collect()),
        currency_code: draft.currency.clone(),
        exchange_rate: None,
        expense_date: incoming
            .issue_date
            .and_hms_opt(0, 0, 0)
            .map(|d| d.and_utc().timestamp_micros())
            .ok_or_else(|| ApiError::bad_request("The issue date (BT-2) is not a valid day."))?,
        net_total: draft.totals.net,
        tax_total: draft.totals.tax,
        total: draft.totals.total,
        line_count: draft.lines.len() as i64,
        lines_json: to_json(&draft.lines)?,
        receipt_file_id: Some(receipt),
        created_at: now.timestamp_micros(),
        updated_at: None,
        receipt_content_type: None,
        receipt_size: None,
        source: SOURCE_EINVOICE.to_owned(),
        corrected_expense_id,
    };
    if let Err(e) = store::expenses::insert(&mut conn, &row).await {
        if store::is_unique_violation(&e) {
            return Err(ApiError::Conflict(format!(
                "{}'s invoice {} was imported by another request at the same moment.",
                supplier.name, incoming.number
            )));
        }
        return Err(e.into());
    }
    crate::routes::webhooks::emit_expense(&mut conn, &row).await?;
    let stored = load(&mut conn, &caller.company_id, &row.id).await?;
    Ok((StatusCode::CREATED, Json(Expense::of(stored)?)))
}

/// The 400 for a file that cannot be imported, naming the rule it breaks.
fn refused(e: ReadError) -> ApiError {
    ApiError::bad_request(format!(
        "The e-invoice cannot be imported: {} (rule {}). Nothing was recorded.",
        e.message, e.rule
    ))
}

fn already_imported(supplier: &str, number: &str, existing: &str) -> ApiError {
    ApiError::Conflict(format!(
        "{supplier}'s invoice {number} is already recorded as expense {existing} \
         (GET /v1/expenses/{existing}); each supplier invoice is recorded once."
    ))
}

/// The expense's lines and totals, in minor units, computed before anything is written.
struct ExpenseDraft {
    currency: String,
    lines: Vec<domain::invoice::Line>,
    totals: domain::invoice::Totals,
}

impl ExpenseDraft {
    /// The file's lines, document allowances (negative) and charges, then one tax line per
    /// VAT breakdown entry that has tax; a credit note's amounts negated.
    fn of(doc: &Incoming) -> ApiResult<Self> {
        let currency = domain::currency::CurrencyCode::parse(&doc.currency).map_err(|e| {
            refused(ReadError {
                rule: "BR-CL-04".into(),
                message: format!("the currency (BT-5) {}: {e}", doc.currency),
            })
        })?;
        let digits = currency.minor_units();
        let sign = if doc.credit_note { -1 } else { 1 };
        let minor = |amount: Decimal, what: &str| -> ApiResult<i64> {
            exact_minor(amount, digits)
                .map(|m| m * sign)
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "The e-invoice cannot be imported: {what} {amount} has more decimals than \
                         {} allows, or is too large. Nothing was recorded.",
                        currency.code()
                    ))
                })
        };
        let mut inputs = Vec::new();
        for l in &doc.lines {
            let subtotal = minor(l.net_amount, &format!("line {}'s net amount", l.id))?;
            let quantity = l
                .quantity
                .round_dp_with_strategy(6, RoundingStrategy::MidpointNearestEven)
                .normalize();
            let unit_price = match l.unit_price {
                Some(p) => rounded_minor(p, digits).map(|m| m * sign),
                None => Some(subtotal),
            }
            .ok_or_else(|| {
                ApiError::bad_request(format!(
                    "The e-invoice cannot be imported: line {}'s price is too large. Nothing \
                     was recorded.",
                    l.id
                ))
            })?;
            inputs.push(domain::invoice::LineInput {
                concept: clip(&l.name, domain::invoice::MAX_CONCEPT),
                quantity,
                quantity_unit: l.unit_code.clone(),
                unit_price,
                unit_unit: None,
                is_tax: false,
                tax_amount: None,
                subtotal: Some(subtotal),
            });
        }
        for (list, label, sign_of) in [
            (&doc.allowances, "Allowance", -1),
            (&doc.charges, "Charge", 1),
        ] {
            for a in list {
                let amount = minor(a.amount, label)? * sign_of;
                inputs.push(domain::invoice::LineInput {
                    concept: match &a.reason {
                        Some(r) => clip(&format!("{label}: {r}"), domain::invoice::MAX_CONCEPT),
                        None => label.to_owned(),
                    },
                    quantity: Decimal::ONE,
                    quantity_unit: None,
                    unit_price: amount,
                    unit_unit: None,
                    is_tax: false,
                    tax_amount: None,
                    subtotal: Some(amount),
                });
            }
        }
        for v in doc.vat.iter().filter(|v| !v.tax.is_zero()) {
            let amount = minor(v.tax, "a VAT amount (BT-117)")?;
            let rate = v
                .rate
                .map(|r| format!(" {}%", r.normalize()))
                .unwrap_or_default();
            inputs.push(domain::invoice::LineInput {
                concept: format!("VAT{rate} ({})", v.category),
                quantity: Decimal::ONE,
                quantity_unit: None,
                unit_price: amount,
                unit_unit: None,
                is_tax: true,
                tax_amount: Some(amount),
                subtotal: Some(amount),
            });
        }
        let (lines, totals) = domain::invoice::compute(&inputs, None).map_err(|e| {
            ApiError::bad_request(format!(
                "The e-invoice cannot be imported as an expense: {e}. Nothing was recorded."
            ))
        })?;
        // The sums were checked in the file (BR-CO-10 to BR-CO-15); the expense must say the same.
        let stated = minor(doc.totals.with_vat, "the total with VAT (BT-112)")?;
        if totals.total != stated {
            return Err(ApiError::Internal(anyhow::anyhow!(
                "imported expense total {} differs from the file's BT-112 {stated}",
                totals.total
            )));
        }
        Ok(Self {
            currency: currency.code().to_owned(),
            lines,
            totals,
        })
    }
}

/// An amount in minor units when it has no more decimals than the currency (else `None`).
fn exact_minor(amount: Decimal, digits: u32) -> Option<i64> {
    let scaled = amount.checked_mul(Decimal::from(10i64.checked_pow(digits)?))?;
    if scaled.fract().is_zero() {
        i64::try_from(scaled.trunc()).ok()
    } else {
        None
    }
}

/// A unit price in minor units, rounded half to even (unit prices may have more decimals).
fn rounded_minor(amount: Decimal, digits: u32) -> Option<i64> {
    let scaled = amount.checked_mul(Decimal::from(10i64.checked_pow(digits)?))?;
    i64::try_from(scaled.round_dp_with_strategy(0, RoundingStrategy::MidpointNearestEven)).ok()
}

fn clip(text: &str, max: usize) -> String {
    text.chars().take(max).collect()
}

/// The supplier by the seller's VAT id, else its tax id.
async fn find_supplier(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    doc: &Incoming,
) -> ApiResult<Option<store::entities::EntityRow>> {
    let vat = doc
        .seller
        .vat_id
        .as_deref()
        .map(store::entities::normalize_id);
    let tax = doc
        .seller
        .tax_id
        .as_deref()
        .map(store::entities::normalize_id);
    if vat.is_none() && tax.is_none() {
        return Ok(None);
    }
    Ok(store::entities::find_by_tax_ids(conn, company_id, vat.as_deref(), tax.as_deref()).await?)
}

/// A new entity from the seller's name, address and ids, as the file gives them (a third
/// party's id is never refused for its check digit).
async fn create_supplier(
    conn: &mut sqlx::AnyConnection,
    company_id: &store::CompanyId,
    doc: &Incoming,
    currency: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> ApiResult<store::entities::EntityRow> {
    let seller = &doc.seller;
    let country = domain::country::CountryCode::parse(&seller.country).map_err(|e| {
        refused(ReadError {
            rule: "BR-CL-14".into(),
            message: format!("the seller's country (BT-40) {}: {e}", seller.country),
        })
    })?;
    let address = ThirdPartyAddress {
        lines: seller
            .address_lines
            .iter()
            .take(5)
            .map(|l| clip(l, 200))
            .collect(),
        zipcode: seller.postcode.as_deref().map(|z| clip(z, 20)),
        city: seller.city.as_deref().map(|c| clip(c, 100)),
        state: seller.subdivision.as_deref().map(|s| clip(s, 100)),
        country: country.to_string(),
    };
    let row = store::entities::EntityRow {
        id: store::new_id(),
        company_id: company_id.to_owned(),
        name: clip(&seller.name, 200),
        entity_type: format!("{country}:Business"),
        country: country.to_string(),
        fiscal_id: seller.tax_id.as_deref().map(|t| clip(t.trim(), 40)),
        vies_vat_id: seller
            .vat_id
            .as_deref()
            .map(|v| clip(&store::entities::normalize_id(v), 20)),
        currency_code: currency.to_owned(),
        email: seller
            .email
            .as_deref()
            .and_then(|e| crate::views::email("email", e).ok()),
        language: None,
        address_json: serde_json::to_string(&address).map_err(|e| ApiError::Internal(e.into()))?,
        template_json: None,
        verifactu_json: None,
        created_at: now.timestamp_micros(),
        updated_at: None,
        payment_terms_days: None,
        einvoice_json: None,
    };
    store::entities::insert(conn, &row).await?;
    Ok(row)
}
