//! One module per resource; [`v1`] is the route table of `/v1`.

pub mod agreements;
pub mod audit;
pub mod avatar;
pub mod bank_accounts;
pub mod company;
pub mod dashboard;
pub mod einvoice;
pub mod entities;
pub mod expense_import;
pub mod expenses;
pub mod health;
pub mod invoices;
pub mod members;
pub mod pdf;
pub mod proformas;
pub mod reports;
pub mod session;
pub mod taxes;
pub mod tokens;
pub mod verifactu;
pub mod webhooks;

use utoipa_axum::{router::OpenApiRouter, routes};

use crate::AppState;

/// Every `/v1` route with its OpenAPI operation (auth and gate are added by the caller).
pub fn v1() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(session::get_session))
        .routes(routes!(company::get_company, company::update_company))
        .routes(routes!(company::complete_registration))
        .routes(routes!(agreements::list_agreements))
        .routes(routes!(agreements::accept_agreement))
        .routes(routes!(tokens::list_tokens, tokens::create_token))
        .routes(routes!(tokens::revoke_token))
        .routes(routes!(audit::list_entries))
        .routes(routes!(audit::get_entry))
        .routes(routes!(audit::get_body))
        .routes(routes!(audit::approve_entry))
        .routes(routes!(audit::reject_entry))
        .routes(routes!(members::list_members, members::add_member))
        .routes(routes!(members::update_member))
        .routes(routes!(members::deactivate_member))
        .routes(routes!(members::reactivate_member))
        .routes(routes!(entities::list_entities, entities::create_entity))
        .routes(routes!(
            entities::get_entity,
            entities::update_entity,
            entities::delete_entity
        ))
        .routes(routes!(taxes::prefill))
        .routes(routes!(invoices::list_invoices, invoices::create_invoice))
        .routes(routes!(
            invoices::get_invoice,
            invoices::update_invoice,
            invoices::delete_invoice
        ))
        .routes(routes!(invoices::issue::issue_invoice))
        .routes(routes!(invoices::issue::bulk_issue))
        .routes(routes!(invoices::issue::bulk_delete))
        .routes(routes!(
            invoices::corrections::create_correction,
            invoices::corrections::list_corrections
        ))
        .routes(routes!(invoices::corrections::correct_invoice))
        .routes(routes!(
            proformas::list_proformas,
            proformas::create_proforma
        ))
        .routes(routes!(
            proformas::get_proforma,
            proformas::update_proforma,
            proformas::delete_proforma
        ))
        .routes(routes!(proformas::invoice_proforma))
        .routes(routes!(proformas::bulk_delete_proformas))
        .routes(routes!(
            invoices::payments::create_payment,
            invoices::payments::list_payments
        ))
        .routes(routes!(invoices::payments::delete_payment))
        .routes(routes!(invoices::send::send_invoice))
        .routes(routes!(invoices::send::list_deliveries))
        .routes(routes!(
            invoices::recurring::list_recurring,
            invoices::recurring::create_recurring
        ))
        .routes(routes!(
            invoices::recurring::get_recurring,
            invoices::recurring::update_recurring,
            invoices::recurring::delete_recurring
        ))
        .routes(routes!(
            bank_accounts::list_accounts,
            bank_accounts::create_account
        ))
        .routes(routes!(
            bank_accounts::get_account,
            bank_accounts::update_account,
            bank_accounts::delete_account
        ))
        .routes(routes!(bank_accounts::create_snapshot))
        .routes(routes!(bank_accounts::delete_snapshot))
        .routes(routes!(expenses::list_expenses, expenses::create_expense))
        .routes(routes!(
            expenses::get_expense,
            expenses::update_expense,
            expenses::delete_expense
        ))
        .routes(routes!(expenses::bulk_delete_expenses))
        .merge(
            // Receipts and imported e-invoices are the bodies larger than the 1 MiB JSON limit.
            OpenApiRouter::new()
                .routes(routes!(expenses::put_receipt, expenses::get_receipt))
                .routes(routes!(expense_import::import_expense))
                .layer(axum::extract::DefaultBodyLimit::max(expenses::MAX_RECEIPT)),
        )
        .routes(routes!(dashboard::get_dashboard))
        .routes(routes!(pdf::invoice_pdf))
        .routes(routes!(einvoice::invoice_einvoice))
        .routes(routes!(pdf::proforma_pdf))
        .routes(routes!(reports::list_reports, reports::create_report))
        .routes(routes!(reports::get_report, reports::delete_report))
        .routes(routes!(reports::report_pdf))
        .routes(routes!(verifactu::invoice_records))
        .routes(routes!(verifactu::annul_invoice))
        .routes(routes!(verifactu::get_authorization))
        .routes(routes!(verifactu::declare_power_of_attorney))
        .routes(routes!(webhooks::list_webhooks, webhooks::create_webhook))
        .routes(routes!(
            webhooks::get_webhook,
            webhooks::update_webhook,
            webhooks::delete_webhook
        ))
        .routes(routes!(webhooks::list_webhook_deliveries))
        .routes(routes!(webhooks::retry_webhook_delivery))
        .merge(
            OpenApiRouter::new()
                .routes(routes!(verifactu::upload_document))
                .layer(axum::extract::DefaultBodyLimit::max(expenses::MAX_RECEIPT)),
        )
}
