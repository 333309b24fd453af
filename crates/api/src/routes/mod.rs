//! One module per resource; [`v1`] is the route table of `/v1`.

pub mod agreements;
pub mod audit;
pub mod company;
pub mod entities;
pub mod health;
pub mod invoices;
pub mod members;
pub mod proformas;
pub mod session;
pub mod taxes;
pub mod tokens;

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
}
