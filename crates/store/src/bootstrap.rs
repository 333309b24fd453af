//! Creating the first company, its owner and their tokens in one step.

use sqlx::AnyConnection;

/// What `invoicing admin bootstrap` is asked to create.
#[derive(Debug, Clone)]
pub struct BootstrapRequest<'a> {
    pub company_name: &'a str,
    pub fiscal_id: &'a str,
    /// Company type in canonical `CC:LegalForm` form.
    pub company_type: &'a str,
    pub country: &'a str,
    pub email: &'a str,
    pub currency_code: &'a str,
}

/// The ids and secrets of a bootstrap (secrets shown once).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Bootstrapped {
    pub company_id: crate::CompanyId,
    pub user_id: String,
    pub token: String,
    pub human_proof: String,
    pub mcp_token: String,
}

/// Creates a company, its owner (reusing an existing user with that e-mail),
/// a standard token with its human proof and an MCP token.
pub async fn bootstrap(
    conn: &mut AnyConnection,
    req: &BootstrapRequest<'_>,
) -> anyhow::Result<Bootstrapped> {
    let company_id = crate::companies::insert(
        conn,
        &crate::companies::NewCompany {
            name: req.company_name,
            fiscal_id: req.fiscal_id,
            email: req.email,
            company_type: Some(req.company_type),
            currency_code: Some(req.currency_code),
        },
    )
    .await?;
    let address = serde_json::json!({
        "lines": [], "zipcode": "", "city": "", "country": req.country, "state": null
    });
    sqlx::query("UPDATE companies SET address_json = $2 WHERE id = $1")
        .bind(&company_id)
        .bind(address.to_string())
        .execute(&mut *conn)
        .await?;
    let user_id = match crate::users::find_by_email(conn, req.email).await? {
        Some(user) => user.id,
        None => {
            let local = req.email.split('@').next().unwrap_or(req.email);
            crate::users::insert(conn, req.email, local, "en_US", None).await?
        }
    };
    crate::users::add_membership(conn, &company_id, &user_id, "password").await?;
    let standard =
        crate::tokens::issue(conn, &company_id, &user_id, "standard", "bootstrap").await?;
    let mcp = crate::tokens::issue(conn, &company_id, &user_id, "mcp", "bootstrap (MCP)").await?;
    Ok(Bootstrapped {
        company_id,
        user_id,
        token: standard.token,
        human_proof: standard.human_proof.unwrap_or_default(),
        mcp_token: mcp.token,
    })
}
