//! One module per resource; [`v1`] is the route table of `/v1`.

pub mod agreements;
pub mod audit;
pub mod company;
pub mod health;
pub mod session;
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
}
