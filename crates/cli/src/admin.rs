//! Operator commands: `admin bootstrap`, `admin company list`, `admin token create`,
//! `admin legal publish`, `admin jobs list|retry`, …

use clap::{Args, Subcommand};
use serde_json::json;

/// What the first company is created with.
#[derive(Debug, Clone, Args)]
pub struct BootstrapArgs {
    /// Legal name of the company.
    #[arg(long, default_value = "Example Company")]
    pub company_name: String,
    /// Tax identifier, checked against the country.
    #[arg(long, default_value = "IE6388047V")]
    pub fiscal_id: String,
    /// ISO 3166-1 alpha-2 country where the company is established.
    #[arg(long, default_value = "IE")]
    pub country: String,
    /// Legal form; the company type becomes `COUNTRY:FORM` (e.g. `ES:SL`).
    #[arg(long, default_value = "LTD")]
    pub legal_form: String,
    /// E-mail of the owner; their user is created if new.
    #[arg(long, default_value = "owner@example.com")]
    pub email: String,
    /// Default ISO 4217 currency of the company.
    #[arg(long, default_value = "EUR")]
    pub currency: String,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Create a company, its owner and their tokens; prints the secrets once.
    Bootstrap(BootstrapArgs),
    /// Companies and their members (to make a new token for one).
    Company {
        #[command(subcommand)]
        command: CompanyCommand,
    },
    /// Token management.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Legal documents users must accept.
    Legal {
        #[command(subcommand)]
        command: LegalCommand,
    },
    /// VERI*FACTU operator actions.
    Verifactu {
        #[command(subcommand)]
        command: VerifactuCommand,
    },
    /// The prepaid points ledger shown on the dashboard.
    Points {
        #[command(subcommand)]
        command: PointsCommand,
    },
    /// Background jobs: what is queued, what died and why; retrying dead ones.
    Jobs {
        #[command(subcommand)]
        command: JobsCommand,
    },
    /// Give an account a new generated password for the web app (printed once;
    /// the person chooses their own at the next sign-in). Ends their web sessions.
    Password {
        /// E-mail of the account, e.g. the owner created by `bootstrap`.
        #[arg(long)]
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum CompanyCommand {
    /// List companies, oldest first, with their members' e-mails.
    List {
        /// Companies listed at most (1 to 1000).
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(i64).range(1..=1000))]
        limit: i64,
        /// Continue after this company id (the `next_after` of the previous page).
        #[arg(long)]
        after: Option<String>,
    },
}

/// Members shown per company by `admin company list`.
const LISTED_MEMBERS: i64 = 20;

#[derive(Debug, Subcommand)]
pub enum VerifactuCommand {
    /// Record that a company's authorization is in effect after a manual check.
    Authorize {
        #[arg(long, value_parser = company_id)]
        company: store::CompanyId,
        #[arg(long, value_parser = ["document", "power_of_attorney"])]
        method: String,
        /// What was checked, kept with the authorization.
        #[arg(long, default_value = "checked manually by an operator")]
        note: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum PointsCommand {
    /// Credit points bought with a currency (one point per minor unit).
    TopUp {
        #[arg(long, value_parser = company_id)]
        company: store::CompanyId,
        /// Points to credit (positive).
        #[arg(long)]
        amount: i64,
        /// ISO 4217 currency the deposit was paid in.
        #[arg(long, default_value = "EUR")]
        currency: String,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum JobsCommand {
    /// List jobs, oldest first (payloads are not shown).
    List {
        #[arg(long, value_parser = ["queued", "running", "done", "dead"])]
        status: Option<String>,
        /// Only jobs of this kind, e.g. `email.send`.
        #[arg(long)]
        kind: Option<String>,
    },
    /// Queue a dead job again with a fresh set of attempts.
    Retry {
        /// Job id.
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token for a member of a company; prints its value (and, for a standard
    /// token, its human proof) once.
    Create {
        /// Company id (`invoicing admin company list`); may be left out when the database
        /// has only one company.
        #[arg(long, value_parser = company_id)]
        company: Option<store::CompanyId>,
        /// E-mail of a member of that company.
        #[arg(long)]
        user: String,
        /// `standard` (with a human proof) or `mcp`.
        #[arg(long, default_value = "standard", value_parser = ["standard", "mcp"])]
        kind: String,
        /// What the token is for.
        #[arg(long, default_value = "created by admin")]
        description: String,
    },
    /// Revoke a token by its id (as `DELETE /v1/tokens/{id}` does): it stops working at once
    /// on every server, and a token issued through OAuth takes its grant with it.
    Revoke {
        /// Token id (`GET /v1/tokens`, the web app's token page, or `token create`'s `id`).
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum LegalCommand {
    /// Publish a new version of a legal document; users must accept it again.
    Publish {
        #[arg(long, value_parser = ["terms_of_service", "privacy_policy", "data_processing_agreement"])]
        kind: String,
        #[arg(long)]
        title: String,
        /// File with the document's text (Markdown or plain text).
        #[arg(long)]
        file: std::path::PathBuf,
    },
}

/// Runs an admin command and prints its JSON result.
pub async fn run(db: &store::Db, command: AdminCommand) -> anyhow::Result<()> {
    let out = match command {
        AdminCommand::Bootstrap(args) => serde_json::to_value(bootstrap(db, &args).await?)?,
        AdminCommand::Token {
            command:
                TokenCommand::Create {
                    company,
                    user,
                    kind,
                    description,
                },
        } => {
            let mut tx = db.begin_write().await?;
            let conn = tx.conn();
            let company = match company {
                Some(id) => id,
                None => only_company(conn).await?,
            };
            store::companies::get(conn, &company)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no company has id {company}"))?;
            let member = store::users::find_by_email(conn, &user)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no user has e-mail {user}"))?;
            if store::users::membership_status(conn, &company, &member.id)
                .await?
                .is_none()
            {
                anyhow::bail!("{user} is not a member of company {company}");
            }
            let issued =
                store::tokens::issue(conn, &company, &member.id, &kind, &description).await?;
            tx.commit().await?;
            json!({
                "id": issued.id, "token": issued.token, "human_proof": issued.human_proof,
                "kind": kind, "company_id": company, "user_id": member.id,
            })
        }
        AdminCommand::Token {
            command: TokenCommand::Revoke { id },
        } => {
            let mut tx = db.begin_write().await?;
            let conn = tx.conn();
            let Some(company) = store::tokens::company_of(conn, &id).await? else {
                anyhow::bail!("no token has id {id}");
            };
            if !store::tokens::revoke(conn, &company, &id).await? {
                anyhow::bail!("token {id} is already revoked");
            }
            tx.commit().await?;
            json!({ "revoked": id, "company_id": company })
        }
        AdminCommand::Legal {
            command: LegalCommand::Publish { kind, title, file },
        } => {
            let body = std::fs::read_to_string(&file)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
            if body.trim().is_empty() {
                anyhow::bail!("{} is empty", file.display());
            }
            let mut tx = db.begin_write().await?;
            let doc = store::legal::publish(tx.conn(), &kind, title.trim(), &body).await?;
            tx.commit().await?;
            json!({"id": doc.id, "kind": doc.kind, "version": doc.version, "title": doc.title})
        }
        AdminCommand::Verifactu {
            command:
                VerifactuCommand::Authorize {
                    company,
                    method,
                    note,
                },
        } => {
            let mut tx = db.begin_write().await?;
            store::companies::get(tx.conn(), &company)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no company has id {company}"))?;
            let operator = std::env::var("USER").unwrap_or_else(|_| "operator".into());
            store::verifactu::set_authorization(
                tx.conn(),
                &company,
                "in_effect",
                true,
                &method,
                Some(&note),
                Some(&format!("admin:{operator}")),
            )
            .await?;
            tx.commit().await?;
            tracing::info!(%company, %method, "VERI*FACTU authorization recorded by an operator");
            json!({"company_id": company, "status": "in_effect", "method": method, "note": note})
        }
        AdminCommand::Points {
            command:
                PointsCommand::TopUp {
                    company,
                    amount,
                    currency,
                    note,
                },
        } => {
            if amount <= 0 {
                anyhow::bail!("--amount must be positive");
            }
            let currency = domain::currency::CurrencyCode::parse(&currency)
                .map_err(|e| anyhow::anyhow!("--currency: {e}"))?;
            let mut tx = db.begin_write().await?;
            store::companies::get(tx.conn(), &company)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no company has id {company}"))?;
            store::payments::add_points(
                tx.conn(),
                &company,
                amount,
                currency.code(),
                note.as_deref(),
            )
            .await?;
            let (balance, _) = store::dashboard::points(tx.conn(), &company).await?;
            tx.commit().await?;
            json!({"company_id": company, "points_balance": balance, "currency": currency.code()})
        }
        AdminCommand::Company {
            command: CompanyCommand::List { limit, after },
        } => company_list(db, limit, after.as_deref()).await?,
        AdminCommand::Jobs { command } => jobs(db, command).await?,
        AdminCommand::Password { email } => {
            let password = store::password::generate();
            // Its own process, but hashed through the same bound as everywhere else.
            let hash = store::password::HashGate::shared().hash(&password).await?;
            let mut tx = db.begin_write().await?;
            let user = store::users::find_by_email(tx.conn(), &email)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no user has e-mail {email}"))?;
            store::web::set_generated_password(tx.conn(), &user.id, &hash).await?;
            store::web::delete_other_sessions(tx.conn(), &user.id, "").await?;
            tx.commit().await?;
            json!({"email": user.email, "password": password, "change_required": true})
        }
    };
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// A `--company` value: an id, not any text (a bad one is refused by clap, saying why).
fn company_id(text: &str) -> Result<store::CompanyId, String> {
    store::CompanyId::parse(text).map_err(|e| e.to_string())
}

/// The id of the database's only company, for commands that may leave `--company` out.
async fn only_company(conn: &mut store::Conn) -> anyhow::Result<store::CompanyId> {
    let companies = store::companies::list(conn, None, 2).await?;
    match companies.as_slice() {
        [only] => Ok(only.id.clone()),
        [] => anyhow::bail!(
            "the database has no company yet: create one with `invoicing serve --bootstrap` \
             or `invoicing admin bootstrap`"
        ),
        _ => anyhow::bail!(
            "the database has several companies: say which with --company (ids from \
             `invoicing admin company list`)"
        ),
    }
}

async fn company_list(
    db: &store::Db,
    limit: i64,
    after: Option<&str>,
) -> anyhow::Result<serde_json::Value> {
    let mut conn = db.pool().acquire().await?;
    // One more than asked tells whether there is a next page.
    let mut companies = store::companies::list(&mut conn, after, limit + 1).await?;
    let more = companies.len() as i64 > limit;
    companies.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    let mut data = Vec::with_capacity(companies.len());
    for c in &companies {
        let members = store::members::list(&mut conn, &c.id, None, LISTED_MEMBERS).await?;
        data.push(json!({
            "id": c.id,
            "name": c.name,
            "fiscal_id": c.fiscal_id,
            "registered": c.is_settled != 0,
            "created_at": store::from_micros(c.created_at)?.to_rfc3339(),
            "members": members.iter().map(|m| json!({
                "email": m.email, "kind": m.kind, "status": m.status,
            })).collect::<Vec<_>>(),
        }));
    }
    let next_after = if more {
        companies.last().map(|c| c.id.clone())
    } else {
        None
    };
    Ok(json!({"data": data, "next_after": next_after}))
}

async fn jobs(db: &store::Db, command: JobsCommand) -> anyhow::Result<serde_json::Value> {
    let mut conn = db.pool().acquire().await?;
    match command {
        JobsCommand::List { status, kind } => {
            let rows = store::jobs::list(&mut conn, kind.as_deref(), status.as_deref()).await?;
            Ok(json!({"data": rows.iter().map(job_view).collect::<Vec<_>>()}))
        }
        JobsCommand::Retry { id } => {
            if !store::jobs::retry_dead(&mut conn, &id).await? {
                match store::jobs::get(&mut conn, &id).await? {
                    None => anyhow::bail!("no job has id {id}"),
                    Some(job) => anyhow::bail!(
                        "job {id} is {}, not dead: only dead jobs are retried",
                        job.status
                    ),
                }
            }
            let job = store::jobs::get(&mut conn, &id)
                .await?
                .ok_or_else(|| anyhow::anyhow!("job {id} vanished"))?;
            Ok(job_view(&job))
        }
    }
}

/// A job for operators: no payload (it holds personal data, and the password
/// job holds the hash it issued).
fn job_view(j: &store::jobs::JobRow) -> serde_json::Value {
    // A damaged time shows as its stored number, marked, rather than hiding the job.
    let ts = |m: i64| {
        store::from_micros(m).map_or_else(|_| format!("{m} (out of range)"), |t| t.to_rfc3339())
    };
    json!({
        "id": j.id, "kind": j.kind, "status": j.status, "attempts": j.attempts,
        "max_attempts": j.max_attempts, "run_at": ts(j.run_at), "last_error": j.last_error,
        "company_id": j.company_id, "created_at": ts(j.created_at),
        "finished_at": j.finished_at.map(ts),
    })
}

/// Validates the arguments and creates the first company with its tokens.
pub async fn bootstrap(
    db: &store::Db,
    args: &BootstrapArgs,
) -> anyhow::Result<store::bootstrap::Bootstrapped> {
    let country = domain::country::CountryCode::parse(&args.country)
        .map_err(|e| anyhow::anyhow!("--country: {e}"))?;
    let company_type = domain::entity_type::EntityType::new(country, &args.legal_form)
        .map_err(|e| anyhow::anyhow!("--legal-form: {e}"))?;
    let fiscal_id = domain::fiscal::validate_fiscal_id(country, &args.fiscal_id)
        .map_err(|e| anyhow::anyhow!("--fiscal-id: {e}"))?;
    let currency = domain::currency::CurrencyCode::parse(&args.currency)
        .map_err(|e| anyhow::anyhow!("--currency: {e}"))?;
    let name = args.company_name.trim();
    if name.is_empty() {
        anyhow::bail!("--company-name must not be empty");
    }
    let email = args.email.trim().to_lowercase();
    if !email.contains('@') {
        anyhow::bail!("--email must be an e-mail address");
    }
    let mut tx = db.begin_write().await?;
    let out = store::bootstrap::bootstrap(
        tx.conn(),
        &store::bootstrap::BootstrapRequest {
            company_name: name,
            fiscal_id: &fiscal_id,
            company_type: &company_type.canonical(),
            country: country.as_str(),
            email: &email,
            currency_code: currency.code(),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(out)
}
