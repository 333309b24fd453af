//! The `invoicing` binary: `serve`, `mcp`, `worker`, `migrate` and operator commands under `admin`.
//!
//! Operator commands print JSON on stdout; every error goes to stderr with a
//! non-zero exit status.
#![forbid(unsafe_code)]
// Nothing outside tests may panic on bad data: errors are returned, never unwrapped.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod admin;
mod config;
mod http;
mod mcp_process;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// mimalloc returns freed memory to the system and keeps allocation cheap across the
/// runtime's threads; measured against glibc malloc in docs/PERFORMANCE.md. Tuned first
/// thing in `main` ([`allocator::tune`]).
#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

/// Multi-company invoicing service.
#[derive(Debug, Parser)]
#[command(name = "invoicing", version, about)]
struct Cli {
    /// TOML file with settings (environment variables `INVOICING_*` override it).
    #[arg(long, global = true, env = "INVOICING_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the HTTP API, the background worker and the MCP server (migrating the database first).
    Serve {
        /// On an empty database, create a first company and print its tokens as JSON.
        #[arg(long)]
        bootstrap: bool,
        /// Do not run background jobs in this process (run `invoicing worker` elsewhere).
        #[arg(long)]
        no_worker: bool,
        /// Do not start the MCP server child process (run `invoicing mcp` elsewhere).
        #[arg(long)]
        no_mcp: bool,
        #[command(flatten)]
        company: admin::BootstrapArgs,
    },
    /// Run background jobs only (mail, and later reports and tax submissions).
    Worker {
        /// Jobs run at once by this process.
        #[arg(long, default_value_t = 2)]
        concurrency: usize,
    },
    /// Run the MCP server alone (streamable HTTP at /mcp), a client of the HTTP API.
    Mcp {
        /// Stop when standard input closes (set by `serve` for its child).
        #[arg(long, hide = true)]
        exit_with_parent: bool,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Do one render job read as JSON from standard input: check a company Typst snippet or
    /// render a document that carries one. Run by `serve` in a child process with a memory
    /// limit; exit statuses and output are those of `render::isolated`.
    #[command(hide = true)]
    RenderJob,
    /// Operator commands; each prints JSON on stdout.
    Admin {
        #[command(subcommand)]
        command: admin::AdminCommand,
    },
}

fn main() -> std::process::ExitCode {
    // Before any other thread exists: freed render memory goes back within milliseconds.
    allocator::tune();
    let cli = Cli::parse();
    // The data directory holds every company's books, the link-signing key and mails with
    // generated passwords: whatever this process creates (the database and its `-wal` and
    // `-shm`, outbox mails, objects of a `file://` store) is readable by its user only.
    #[cfg(unix)]
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    name_this_process(&cli.command);
    if let Command::RenderJob = cli.command {
        // Gets warm while the server has no job for it yet (it starts a spare child ahead of
        // each job); a job that is already waiting does not wait for this.
        std::thread::spawn(render::isolated::prepare);
        let status = render::isolated::serve(std::io::stdin().lock(), std::io::stdout().lock());
        return std::process::ExitCode::from(status);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Names the child processes `serve` starts from `/proc/self/exe` (which `ps` would show as
/// `exe`): `invoicing-mcp` and `invoicing-typst`. The name is the main thread's, set before any
/// other thread starts, so every thread started after inherits it.
fn name_this_process(command: &Command) {
    #[cfg(target_os = "linux")]
    {
        let name: &std::ffi::CStr = match command {
            Command::Mcp { .. } => c"invoicing-mcp",
            Command::RenderJob => c"invoicing-typst",
            _ => return,
        };
        // Only a name for people reading `ps`: nothing depends on it.
        let _ = nix::sys::prctl::set_name(name);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// This very executable, for the child processes it starts (snippet renders, the MCP
/// server). On Linux it is named through `/proc/<pid>/exe`, which stays this process's file
/// even when the binary is replaced on disk by an upgrade, so children always speak its
/// protocol and run its version.
pub(crate) fn own_executable() -> std::io::Result<std::path::PathBuf> {
    let own = std::path::PathBuf::from(format!("/proc/{}/exe", std::process::id()));
    if own.exists() {
        return Ok(own);
    }
    std::env::current_exe()
}

/// The executable that runs company Typst snippets in child processes: this very one.
fn snippet_runner() -> anyhow::Result<std::path::PathBuf> {
    own_executable().map_err(|e| {
        anyhow::anyhow!("cannot find this executable to run company Typst snippets: {e}")
    })
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let settings = config::Settings::load(cli.config.as_deref())?;
    init_logging(&settings);
    if let Command::Mcp { exit_with_parent } = cli.command {
        // The MCP server owns no data: it never opens the database.
        return mcp_process::run(&settings, exit_with_parent).await;
    }
    let mut db = store::Db::connect(&settings.database_url()).await?;
    if let Some(ttl) = settings.token_cache()? {
        db = db.with_token_cache_ttl(ttl);
    }
    db.migrate().await?;
    // Invoices issued before documents existed get theirs now, once (a no-op query after).
    let backfilled = api::documents::legacy::backfill(&db).await?;
    let db = match settings.storage_url.as_deref() {
        // Admin commands and migrations never touch file bytes: no need to reach the store.
        Some(url) if matches!(cli.command, Command::Serve { .. } | Command::Worker { .. }) => {
            let files = store::files::ObjectFiles::open(url)?;
            files.check().await?;
            let files = store::files::Files::Object(files);
            tracing::info!(
                storage = files.describe(),
                "files are kept in the object store"
            );
            db.with_files(files)
        }
        _ => db,
    };
    match cli.command {
        Command::Migrate => {
            if backfilled.failed > 0 {
                anyhow::bail!(
                    "{} issued invoice(s) could not be given a document: their stored snapshot \
                     data does not decode ({}); repair those rows and run `invoicing migrate` \
                     again",
                    backfilled.failed,
                    backfilled.errors.join("; ")
                );
            }
            tracing::info!("database migrated");
            Ok(())
        }
        Command::Admin { command } => admin::run(&db, command).await,
        Command::Mcp { .. } | Command::RenderJob => Ok(()),
        Command::Serve {
            bootstrap,
            no_worker,
            no_mcp,
            company,
        } => {
            let options = ServeOptions {
                bootstrap: bootstrap.then_some(company),
                with_worker: !no_worker,
                with_mcp: !no_mcp,
                config_file: cli.config.clone(),
            };
            serve(settings, db, options).await
        }
        Command::Worker { concurrency } => {
            let public_url = settings.public_url(&settings.http_addr());
            let state = api_state(&settings, &db, public_url.clone())?;
            let worker = worker(&settings, &db, public_url, concurrency, state)?;
            worker.run(stopped(shutdown_channel())).await;
            db.close().await;
            Ok(())
        }
    }
}

fn init_logging(settings: &config::Settings) {
    let spec = std::env::var("INVOICING_LOG").unwrap_or_else(|_| "info,sqlx=warn".to_owned());
    // rmcp logs every stateless MCP request at info: quiet unless asked for by name.
    let spec = if spec.contains("rmcp") {
        spec
    } else {
        format!("{spec},rmcp=warn")
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&spec)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn,rmcp=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if settings.log_format.as_deref() == Some("json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// A worker over the standard job kinds, mailing as the settings say.
fn worker(
    settings: &config::Settings,
    db: &store::Db,
    public_url: String,
    concurrency: usize,
    state: api::AppState,
) -> anyhow::Result<jobs::Worker> {
    let mailer = jobs::Mailer::new(&settings.mail())?;
    tracing::info!(mail = %mailer.describe(), "mail goes to");
    let mut ctx = jobs::Context::new(
        db.clone(),
        std::sync::Arc::new(mailer),
        std::sync::Arc::new(jobs::JobsConfig {
            public_url,
            secret_key: settings.secret_key()?,
            report_timeout: settings.report_timeout(),
        }),
    );
    if let Some(aeat) = settings.aeat()? {
        let client = jobs::aeat::AeatClient::new(&aeat).map_err(|e| anyhow::anyhow!(e))?;
        tracing::info!(endpoint = %aeat.endpoint, "VERI*FACTU records go to");
        ctx.aeat = Some(std::sync::Arc::new(client));
    }
    ctx.webhooks = std::sync::Arc::new(jobs::webhooks::Settings {
        allow_private: settings.webhooks_allow_private(),
        ..jobs::webhooks::Settings::default()
    });
    if let Some(url) = settings.aeat_poa_check_url.as_deref() {
        let checker =
            jobs::aeat::HttpPowerOfAttorneyChecker::new(url).map_err(|e| anyhow::anyhow!(e))?;
        ctx.poa_checker = Some(std::sync::Arc::new(checker));
    }
    // One clock for the API's workflows and the worker's.
    let ctx = ctx
        .with_clock(state.clock.clone())
        .with_invoicing(std::sync::Arc::new(ApiInvoicing(state)));
    Ok(jobs::Worker::new(
        ctx,
        jobs::Registry::standard(),
        jobs::WorkerConfig {
            concurrency,
            getting_paid_interval: settings.schedule_interval(),
            ..jobs::WorkerConfig::default()
        },
    ))
}

/// The API's invoice logic as the worker uses it: invoice attachments (PDFs) and the
/// drafts of recurring invoices (`api::routes::invoices::{send, recurring}`).
struct ApiInvoicing(api::AppState);

impl jobs::invoicing::Invoicing for ApiInvoicing {
    fn attachment_names(&self, invoice: &store::invoices::InvoiceRow) -> Vec<String> {
        api::routes::invoices::send::attachments(invoice)
    }

    fn attachment<'a>(
        &'a self,
        company_id: &'a store::CompanyId,
        invoice_id: &'a str,
        name: &'a str,
    ) -> jobs::invoicing::BoxFuture<'a, anyhow::Result<jobs::mail::MailAttachment>> {
        Box::pin(async move {
            let (content_type, bytes) =
                api::routes::invoices::send::attachment(&self.0, company_id, invoice_id, name)
                    .await
                    .map_err(|e| anyhow::anyhow!("{name} of invoice {invoice_id}: {e}"))?;
            Ok(jobs::mail::MailAttachment {
                name: name.to_owned(),
                content_type,
                bytes,
            })
        })
    }

    fn run_recurring(
        &self,
        now: jobs::invoicing::Now,
    ) -> jobs::invoicing::BoxFuture<'_, anyhow::Result<usize>> {
        Box::pin(api::workflows::recurring::run_due(self.0.services(), now))
    }
}

/// The API's state over `db` as the settings say.
fn api_state(
    settings: &config::Settings,
    db: &store::Db,
    public_url: String,
) -> anyhow::Result<api::AppState> {
    Ok(api::AppState::new(
        db.clone(),
        api::ApiConfig {
            public_url,
            fx_url: settings.fx_url(),
            aeat_mode: settings.aeat_mode()?,
            secret_key: settings.secret_key()?,
            rate_limit_per_minute: settings.rate_limit_per_minute(),
            snippet_runner: Some(snippet_runner()?),
            limits: settings.limits()?,
            signature_trust: settings.signature_trust()?,
            ai_queue: settings.ai_queue()?,
            webhooks_allow_private: settings.webhooks_allow_private(),
            facturae_signer: settings.facturae_signer()?,
        },
    ))
}

/// What `serve` runs besides the API.
struct ServeOptions {
    bootstrap: Option<admin::BootstrapArgs>,
    with_worker: bool,
    with_mcp: bool,
    /// The `--config` file, passed on to the MCP child.
    config_file: Option<PathBuf>,
}

async fn serve(
    settings: config::Settings,
    db: store::Db,
    options: ServeOptions,
) -> anyhow::Result<()> {
    let options_asked_bootstrap = options.bootstrap.is_some();
    let ServeOptions {
        bootstrap,
        with_worker,
        with_mcp,
        config_file,
    } = options;
    let bootstrap_file = settings.data_dir().join(BOOTSTRAP_FILE);
    let mut created = false;
    if let Some(args) = bootstrap {
        let mut conn = db.pool().acquire().await?;
        let exists = store::companies::any_exists(&mut conn).await?;
        drop(conn);
        if !exists {
            let out = admin::bootstrap(&db, &args).await?;
            let json = serde_json::to_string_pretty(&out)?;
            write_private(&bootstrap_file, &format!("{json}\n"))?;
            println!("{json}");
            created = true;
            tracing::info!(
                company = %out.company_id,
                "created the first company; its token, human proof and MCP token are in {} \
                 (readable by you only; the database keeps only their hashes)",
                bootstrap_file.display()
            );
        }
    }
    if !created {
        // Said on every start, so the way back to a working token is never lost.
        if bootstrap_file.exists() {
            tracing::info!(
                "the first company's token, human proof and MCP token are in {} (written \
                 when --bootstrap created the company; --bootstrap does nothing more once a \
                 company exists)",
                bootstrap_file.display()
            );
        } else if options_asked_bootstrap {
            tracing::warn!(
                "--bootstrap: the database already has a company and {} is gone; make a new \
                 token with `invoicing admin company list` and `invoicing admin token create \
                 --company ID --user EMAIL` (README.md, \"Lost the first token?\")",
                bootstrap_file.display()
            );
        }
    }
    let http_limits = settings.http_limits()?;
    let addr = settings.http_addr();
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    let bound_addr = listener.local_addr()?;
    let bound = bound_addr.to_string();
    let signature_trust = settings.signature_trust()?;
    tracing::info!(
        roots = signature_trust.len(),
        "roots trusted for signed VERI*FACTU authorization documents"
    );
    let secret_key = settings.secret_key()?;
    let mcp_source_proof = api::auth::mcp_source_proof(&secret_key);
    let state = api::AppState::new(
        db.clone(),
        api::ApiConfig {
            public_url: settings.public_url(&bound),
            fx_url: settings.fx_url(),
            aeat_mode: settings.aeat_mode()?,
            secret_key,
            rate_limit_per_minute: settings.rate_limit_per_minute(),
            snippet_runner: Some(snippet_runner()?),
            limits: settings.limits()?,
            signature_trust,
            ai_queue: settings.ai_queue()?,
            webhooks_allow_private: settings.webhooks_allow_private(),
            facturae_signer: settings.facturae_signer()?,
        },
    );
    // The web app for people shares the API's state; its pages call the API in process.
    let web = web::router(
        web::WebState::new(state.clone(), settings.oidc()?)?
            .with_trusted_proxies(settings.trusted_proxies()?)
            .with_oauth(web::oauth::Settings {
                mcp_resource: settings.mcp_public_url(None),
            }),
    );
    let worker_state = state.clone();
    let app = api::app(state).merge(web);
    let stop = shutdown_channel();
    let worker = if with_worker {
        let w = worker(&settings, &db, settings.public_url(&bound), 2, worker_state)?;
        Some(tokio::spawn(w.run(stopped(stop.clone()))))
    } else {
        None
    };
    tracing::info!(
        "listening on http://{bound} (web app at http://{bound}/, API reference at http://{bound}/api/)"
    );
    // Started after the line above, so the first "listening on" in the logs is the API's.
    let mcp = with_mcp.then(|| {
        mcp_process::supervise(
            mcp_process::api_url_for(bound_addr),
            settings.public_url(&bound),
            config_file,
            mcp_source_proof,
            stop.clone(),
        )
    });
    // Client addresses reach the handlers (the web sign-in throttles per address).
    http::serve(listener, app, http_limits, stopped(stop)).await?;
    if let Some(w) = worker {
        // The worker finishes (or releases) its running jobs before the pool closes.
        let _ = w.await;
    }
    if let Some(m) = mcp {
        let _ = m.await;
    }
    db.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Where `serve --bootstrap` writes the first company's secrets, in the data directory.
const BOOTSTRAP_FILE: &str = "bootstrap.json";

/// Writes `text` to `path` readable by its owner only (0600), whole or not at all: the
/// bytes go to a temporary file that then takes the name.
fn write_private(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let dir = path
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{} has no directory", path.display()))?;
    store::private::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let temporary = dir.join(format!(".{BOOTSTRAP_FILE}.tmp"));
    let context = |e: std::io::Error| anyhow::anyhow!("cannot write {}: {e}", temporary.display());
    // A leftover of a crash may have other modes: start afresh.
    match std::fs::remove_file(&temporary) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(context(e)),
        _ => {}
    }
    let mut file = store::private::file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temporary)
        .map_err(context)?;
    file.write_all(text.as_bytes()).map_err(context)?;
    file.sync_all().map_err(context)?;
    drop(file);
    std::fs::rename(&temporary, path)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    Ok(())
}

/// A flag set once SIGTERM or Ctrl-C arrives, shared by the server and the worker.
fn shutdown_channel() -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = tx.send(true);
    });
    rx
}

/// Resolves once the shutdown flag is set.
async fn stopped(mut stop: tokio::sync::watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Resolves on SIGTERM or Ctrl-C, so in-flight requests and jobs can finish.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
    tracing::info!("shutting down: finishing in-flight requests and jobs");
}
