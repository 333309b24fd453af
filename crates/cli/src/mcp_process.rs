//! `invoicing mcp`, and the MCP child process `serve` starts and looks after.
//!
//! `serve` runs the MCP server as a separate process (it is a client of the
//! API, so it gets the API's actual bound address) with its standard input
//! on a pipe: the child stops when that pipe closes, so it never outlives
//! `serve`, not even when `serve` is killed. A child that exits on its own
//! (for instance because its port is taken) is logged and started again with
//! a growing delay (1 s up to 60 s); the API keeps serving meanwhile, so a
//! broken MCP setup never stops the API from starting.

use std::{
    net::SocketAddr,
    path::PathBuf,
    process::Stdio,
    time::{Duration, Instant},
};

use tokio::{process::Command, sync::watch};

use crate::{config::Settings, stopped};

/// Hidden flag of `invoicing mcp`: stop when standard input closes.
pub const EXIT_WITH_PARENT_FLAG: &str = "--exit-with-parent";

/// How `serve` hands its MCP child the proof of `x-invoicing-source: mcp`
/// (`api::auth::mcp_source_proof` of its secret key). Internal, not a setting.
const SOURCE_PROOF_ENV: &str = "INVOICING_MCP_SOURCE_PROOF";

/// How long the child gets to finish in-flight requests before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);
/// Longest delay between two restarts of a failing child.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Runs the MCP server until SIGTERM/Ctrl-C (or, as `serve`'s child, until stdin closes).
pub async fn run(settings: &Settings, exit_with_parent: bool) -> anyhow::Result<()> {
    let mut config = settings.mcp();
    config.source_proof = source_proof(settings)?;
    let addr = settings.mcp_addr();
    let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| {
        anyhow::anyhow!(
            "the MCP server cannot listen on {addr}: {e} (set INVOICING_MCP_ADDR to a free \
             address, or start `serve --no-mcp`)"
        )
    })?;
    let bound = listener.local_addr()?;
    config.resource_url = settings.mcp_public_url(Some(bound));
    let hosts = match &config.allowed_hosts {
        Some(h) => h.join(","),
        None => "any".to_owned(),
    };
    let mut stop = crate::shutdown_channel();
    let shutdown = async move {
        if exit_with_parent {
            let mut parent_gone = parent_gone();
            tokio::select! {
                _ = stop.wait_for(|s| *s) => {},
                _ = parent_gone.changed() => {
                    tracing::info!("serve has stopped: stopping the MCP server");
                },
            }
        } else {
            let _ = stop.wait_for(|s| *s).await;
        }
    };
    tracing::info!(
        api = %config.api_url,
        allowed_hosts = %hosts,
        "MCP server listening at http://{bound}/mcp"
    );
    let app = mcp::router(&config)?;
    crate::http::serve(listener, app, settings.http_limits()?, shutdown)
        .await
        .map_err(|e| anyhow::anyhow!("the MCP server failed: {e}"))?;
    tracing::info!("MCP server stopped");
    Ok(())
}

/// The proof this MCP server sends with `x-invoicing-source: mcp`: the one `serve` handed
/// down, else derived from the secret key (`INVOICING_SECRET_KEY`, or the key file in
/// the data directory). Without a key the API does not believe the mark: entries of
/// standard tokens made through this server are recorded as source `api`.
fn source_proof(settings: &Settings) -> anyhow::Result<Option<mcp::api::SourceProof>> {
    let proof = match std::env::var(SOURCE_PROOF_ENV)
        .ok()
        .filter(|v| !v.is_empty())
    {
        Some(handed_down) => handed_down,
        None => match settings.existing_secret_key()? {
            Some(key) => api::auth::mcp_source_proof(&key),
            None => {
                tracing::warn!(
                    "no secret key (set INVOICING_SECRET_KEY to the API's): the API will \
                     record AI requests made through this MCP server as source `api`"
                );
                return Ok(None);
            }
        },
    };
    mcp::api::SourceProof::new(&proof)
        .map(Some)
        .ok_or_else(|| anyhow::anyhow!("{SOURCE_PROOF_ENV} is not a valid header value"))
}

/// Changes once standard input reaches its end (the parent closed the pipe or died).
///
/// A plain thread, not a runtime blocking task, so an exit for another reason
/// never waits on the blocked read.
fn parent_gone() -> watch::Receiver<()> {
    let (tx, rx) = watch::channel(());
    std::thread::spawn(move || {
        use std::io::Read;
        let mut sink = [0u8; 256];
        let mut stdin = std::io::stdin();
        loop {
            match stdin.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = tx.send(());
    });
    rx
}

/// The URL the child reaches the API at: the bound address, loopback if bound to all interfaces.
pub fn api_url_for(bound: SocketAddr) -> String {
    let ip = match bound.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("http://{}", SocketAddr::new(ip, bound.port()))
}

/// Starts the MCP child and keeps it running until `stop` is set; then closes
/// its stdin, waits up to [`STOP_GRACE`] and kills it if needed.
pub fn supervise(
    api_url: String,
    public_url: String,
    config_file: Option<PathBuf>,
    source_proof: String,
    stop: watch::Receiver<bool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let exe = match crate::own_executable() {
            Ok(exe) => exe,
            Err(e) => {
                tracing::error!(
                    "cannot find the invoicing binary to start the MCP server ({e}); MCP is \
                     not available: run `invoicing mcp` separately"
                );
                return;
            }
        };
        let mut backoff = Duration::from_secs(1);
        loop {
            let mut cmd = Command::new(&exe);
            // `ps` shows `invoicing mcp …`, not `/proc/<pid>/exe mcp …`.
            #[cfg(unix)]
            cmd.arg0("invoicing");
            if let Some(file) = &config_file {
                cmd.arg("--config").arg(file);
            }
            cmd.arg("mcp")
                .arg(EXIT_WITH_PARENT_FLAG)
                .env("INVOICING_API_URL", &api_url)
                // The authorization server the child names to MCP clients: this service.
                .env("INVOICING_PUBLIC_URL", &public_url)
                .env(SOURCE_PROOF_ENV, &source_proof)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .kill_on_drop(true);
            let mut child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(
                        "cannot start the MCP server ({e}); MCP is not available: run \
                         `invoicing mcp` separately"
                    );
                    return;
                }
            };
            // Held here: `Child::wait` would close a stdin left in `child`, and
            // the child stops when its stdin closes.
            let stdin = child.stdin.take();
            let started = Instant::now();
            tracing::info!(pid = child.id(), api = %api_url, "MCP server started as a child process");
            tokio::select! {
                status = child.wait() => {
                    if *stop.borrow() {
                        return;
                    }
                    if started.elapsed() > MAX_BACKOFF {
                        backoff = Duration::from_secs(1);
                    }
                    let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
                    tracing::error!(
                        %status,
                        "the MCP server exited (its error is logged above); the API keeps \
                         running; restarting MCP in {} s (`serve --no-mcp` turns it off)",
                        backoff.as_secs()
                    );
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {},
                        () = stopped(stop.clone()) => return,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
                () = stopped(stop.clone()) => {
                    // End of stdin tells the child to finish its requests and exit.
                    drop(stdin);
                    match tokio::time::timeout(STOP_GRACE, child.wait()).await {
                        Ok(_) => tracing::info!("MCP server child stopped"),
                        Err(_) => {
                            tracing::warn!("MCP server child did not stop in time: killing it");
                            let _ = child.kill().await;
                        }
                    }
                    return;
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_reaches_the_api_on_loopback_when_bound_to_all_interfaces() {
        assert_eq!(
            api_url_for("0.0.0.0:8080".parse().unwrap()),
            "http://127.0.0.1:8080"
        );
        assert_eq!(api_url_for("[::]:80".parse().unwrap()), "http://[::1]:80");
        assert_eq!(
            api_url_for("10.1.2.3:9000".parse().unwrap()),
            "http://10.1.2.3:9000"
        );
    }
}
