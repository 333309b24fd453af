//! Annulment: an issued invoice of a Spanish issuer cancelled in its VERI*FACTU chain.

use super::{
    AppError, AppResult, Services, Writer,
    invoices::{company, load},
};
use crate::routes::verifactu::AnnulRequest;

/// Cancels the issued invoice `id` in the VERI*FACTU chain (it was issued in error):
/// appends a `RegistroAnulacion` to the issuer's chain, sent to the AEAT by the submission
/// job. The invoice keeps its number; once per invoice.
pub async fn annul(
    svc: Services<'_>,
    tx: &impl Writer,
    company_id: &store::CompanyId,
    id: &str,
    body: AnnulRequest,
) -> AppResult<()> {
    let reason = body
        .reason
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty());
    if reason.as_ref().is_some_and(|r| r.chars().count() > 500) {
        return Err(AppError::invalid("`reason` may be at most 500 characters."));
    }
    let mut conn = tx.conn().await?;
    let invoice = load(&mut conn, company_id, id).await?;
    let company = company(&mut conn, company_id).await?;
    if !company.is_spanish() {
        return Err(AppError::invalid(
            "Only invoices of Spanish issuers (company type ES:...) have VERI*FACTU records to cancel.",
        ));
    }
    if invoice.status != store::invoices::InvoiceStatus::Issued {
        return Err(AppError::invalid(format!(
            "Only issued invoices can be cancelled in the VERI*FACTU chain; this one is `{}`.",
            invoice.status
        )));
    }
    let records = store::verifactu::for_invoice(&mut conn, company_id, id).await?;
    if records.iter().any(|r| r.kind == "anulacion") {
        return Err(AppError::Conflict(
            "The invoice is already cancelled in the VERI*FACTU chain.".into(),
        ));
    }
    let Some(alta) = records.iter().rev().find(|r| r.kind == "alta") else {
        return Err(AppError::invalid(
            "The invoice has no VERI*FACTU registration record to cancel (it was issued before the \
             company was Spanish).",
        ));
    };
    crate::aeat::register_annulment(
        &mut conn,
        svc.aeat_mode,
        &company,
        &invoice,
        alta,
        reason,
        svc.now(),
    )
    .await?;
    Ok(())
}
