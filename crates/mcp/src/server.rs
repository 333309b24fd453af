//! The MCP service: resources and tools over the API, with the caller's token.

use std::sync::Arc;

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CompleteRequestMethod, CompleteRequestParams,
        CompleteResult, Implementation, ListPromptsRequestMethod, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
};

use crate::{api::ApiClient, auth::BearerToken, resources, tools};

/// What an agent is told when it connects.
const INSTRUCTIONS: &str = "Invoicing service of one company: the company of your API token. \
Read data through resources (JSON): invoicing://company, invoicing://entities (customers and \
suppliers; their `id` is the `recipient_id` or `supplier_id` the tools take), \
invoicing://invoices, invoicing://proformas, invoicing://expenses, invoicing://reports, and the \
templates invoicing://entities/{id}, invoicing://entities/{id}/invoices, \
invoicing://entities/{id}/expenses, invoicing://invoices/{id}, invoicing://invoices/{id}/einvoice \
(an issued invoice as the structured e-invoice its recipient receives, XML), \
invoicing://proformas/{id}, invoicing://expenses/{id}, invoicing://reports/{id}. Money is always an integer in minor units \
of the currency (cents: 150.00 EUR is 15000); dates are RFC 3339. Write tools (create_invoice, \
create_expense, generate_report, delete_report) never act at once: each validates the request, \
holds it in the company's AI review queue and returns an AI audit entry id; a person approves \
or rejects it there, and only an approved request runs. Say so to the user rather than \
retrying. A tool error carries the reason (unknown id, duplicate reference, bad period) and \
means nothing was recorded. Collections return at most 5000 items, newest first, and say when \
they were cut (`truncated`).";

/// The MCP server: stateless, one value shared by every request.
#[derive(Clone)]
pub struct InvoicingMcp {
    api: ApiClient,
    /// Built once; listing and dispatch never rebuild it.
    tools: Arc<Vec<Tool>>,
}

impl InvoicingMcp {
    /// A server that reads and writes through the API client.
    pub fn new(api: ApiClient) -> Self {
        Self {
            api,
            tools: Arc::new(tools::all()),
        }
    }
}

/// The token the auth middleware accepted for this HTTP request.
fn token(ctx: &RequestContext<RoleServer>) -> Result<String, McpError> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<BearerToken>())
        .map(|t| t.0.clone())
        .ok_or_else(|| {
            McpError::invalid_request(
                "No bearer token reached the MCP service: send `Authorization: Bearer <token>`.",
                None,
            )
        })
}

impl ServerHandler for InvoicingMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_resources()
                .enable_tools()
                .build(),
        )
        .with_server_info(
            Implementation::new("invoicing", env!("CARGO_PKG_VERSION"))
                .with_title("Invoicing service")
                .with_description(
                    "Invoices, expenses, entities and reports of your company; every write \
                     waits for a person's approval.",
                ),
        )
        .with_instructions(INSTRUCTIONS)
    }

    // The server declares resources and tools only: methods of capabilities it does not
    // declare answer "method not found" (rmcp's defaults would answer empty lists).
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Err(McpError::method_not_found::<ListPromptsRequestMethod>())
    }

    async fn complete(
        &self,
        _request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        Err(McpError::method_not_found::<CompleteRequestMethod>())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::list()))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            resources::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let token = token(&ctx)?;
        let contents = resources::read(&self.api, &token, &request.uri).await?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let token = token(&ctx)?;
        if self.get_tool(&request.name).is_none() {
            return Err(McpError::invalid_params(
                format!(
                    "Unknown tool `{}`: the tools are {}.",
                    request.name,
                    tools::NAMES.join(", ")
                ),
                None,
            ));
        }
        Ok(
            tools::call(&self.api, &token, &request.name, request.arguments)
                .await
                .into(),
        )
    }
}
