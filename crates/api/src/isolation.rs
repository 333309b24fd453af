//! Company Typst snippets run in child processes with a memory limit.
//!
//! A snippet is Typst code a company wrote. Typst bounds its time (the render deadline) but
//! not its memory, and Rust cannot bound one thread's allocations: `#range(1000000000)`
//! asks for 16 GB and would abort the server, for every tenant. So whatever runs a snippet,
//! the check when it is saved and every PDF that carries one, runs in a child process of the
//! `invoicing` executable ([`crate::ApiConfig::snippet_runner`], command `render-job`) under
//! an address-space limit of [`CHILD_MIB`], killed past [`CHILD_TIMEOUT`]. The protocol
//! (a JSON job on stdin, the PDF or the error on stdout) is `render::isolated`.
//!
//! PDFs without snippets render in this process: nothing in them is code a company wrote.
//! A child costs a process start and cold font and template caches; one is started ahead of
//! each job so that cost is mostly paid before anyone waits (measured in docs/PERFORMANCE.md).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use render::RenderError;
use render::isolated::{EXIT_BAD_JOB, EXIT_OK, EXIT_REFUSED, Job};
use tokio::io::AsyncWriteExt;

use crate::error::{ApiError, ApiResult};

/// Most memory a child may use, as an address-space limit: far above what a render needs (the
/// process and its fonts take about 500 MiB of address space, a 500-line invoice some tens
/// of MiB more), far below what would starve the machine.
pub(crate) const CHILD_MIB: u64 = 2 * 1024;

/// Longest a child may take, its start included; the render deadline inside it
/// ([`render::Limits`], ten seconds) ends a looping snippet first.
const CHILD_TIMEOUT: Duration = Duration::from_secs(20);

/// Does `job` in a child process of `runner` (the `invoicing` executable), or in this process
/// when there is none (the tests of this crate, which have no such executable); `held` (the
/// caller's slots of [`crate::render_gate`]: a snippet slot whenever the job runs company
/// code, which is what bounds the children alive at once) is kept until the work is over.
///
/// The outer error is this server failing (no process could be started); the inner one is
/// the render's verdict, [`RenderError::Exhausted`] when the child ran out of memory.
pub(crate) async fn run(
    runner: Option<&Path>,
    job: Job,
    held: impl Send + 'static,
) -> ApiResult<Result<Vec<u8>, RenderError>> {
    let Some(exe) = runner else {
        return tokio::task::spawn_blocking(move || {
            // Kept until the render ends, even if the client has gone.
            let _held = held;
            job.run()
        })
        .await
        .map_err(|e| ApiError::Internal(e.into()));
    };
    let input = serde_json::to_vec(&job).map_err(|e| ApiError::Internal(e.into()))?;
    let _held = held;
    let mut child = take_spare_or_start(exe)?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("the render process has no stdin")))?;
    let write = async move {
        // A child that died early closes its end; its exit status says why.
        let _ = stdin.write_all(&input).await;
    };
    let both = async { tokio::join!(write, child.wait_with_output()).1 };
    let output = match tokio::time::timeout(CHILD_TIMEOUT, both).await {
        Ok(output) => {
            output.map_err(|e| ApiError::Internal(anyhow::anyhow!("render process: {e}")))?
        }
        // Dropping the future killed the child.
        Err(_) => return Ok(Err(RenderError::Timeout(CHILD_TIMEOUT))),
    };
    let code = output.status.code();
    match code.and_then(|c| u8::try_from(c).ok()) {
        Some(EXIT_OK) => Ok(Ok(output.stdout)),
        Some(EXIT_REFUSED) => Ok(Err(render::isolated::decode_refusal(&output.stdout))),
        Some(EXIT_BAD_JOB) => Err(ApiError::Internal(anyhow::anyhow!(
            "the render process could not take its job: {}",
            last_line(&output.stderr)
        ))),
        Some(other) => Err(ApiError::Internal(anyhow::anyhow!(
            "the render process ended with status {other}: {}",
            last_line(&output.stderr)
        ))),
        None => {
            // Ended by a signal: out of memory (`memory allocation of … failed`, then an
            // abort) or a crash. What it said is logged, never the snippet itself.
            tracing::warn!(
                status = %output.status,
                stderr = %last_line(&output.stderr),
                "a render process with company snippets ended abnormally"
            );
            Ok(Err(RenderError::Exhausted {
                limit_mib: CHILD_MIB,
            }))
        }
    }
}

/// The child started ahead of the next job (see [`take_spare_or_start`]).
static SPARE: std::sync::Mutex<Option<tokio::process::Child>> = std::sync::Mutex::new(None);

/// A child for a job: the spare one if it is still alive, else a new one; and a new spare
/// is started for the next job. A child warms itself up (fonts, templates, a sample render:
/// `render::isolated::prepare`) before it reads its job, so with a spare the job does not
/// wait for that (measured in docs/PERFORMANCE.md). Each child still does one job and exits:
/// nothing of one company's render is left for the next.
///
/// The spare's pipes belong to the runtime it was started on; a server has one.
fn take_spare_or_start(exe: &Path) -> ApiResult<tokio::process::Child> {
    let spare = SPARE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        // Still waiting for its job (one that died is dropped, which reaps it).
        .and_then(alive);
    let child = match spare {
        Some(child) => child,
        None => start(exe)?,
    };
    match start(exe) {
        Ok(next) => {
            let mut slot = SPARE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            // Another job may have put one there meanwhile; the extra one is killed.
            if slot.is_none() {
                *slot = Some(next);
            }
        }
        Err(e) => tracing::warn!(error = %e, "cannot start a spare render process"),
    }
    Ok(child)
}

/// The child, if it has not exited.
fn alive(mut child: tokio::process::Child) -> Option<tokio::process::Child> {
    matches!(child.try_wait(), Ok(None)).then_some(child)
}

/// Starts a child under the address-space limit. If it is dropped (the request was, say the
/// client left), it is killed: `kill_on_drop`.
fn start(exe: &Path) -> ApiResult<tokio::process::Child> {
    // `ulimit -v` limits the shell, which then becomes the renderer.
    tokio::process::Command::new("/bin/sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {} && exec \"$0\" render-job",
            CHILD_MIB * 1024
        ))
        .arg(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            ApiError::Internal(anyhow::anyhow!(
                "cannot start the render process {}: {e}",
                exe.display()
            ))
        })
}

/// The last line a child wrote on stderr, bounded, for a log or an internal error.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text.trim().lines().last().unwrap_or("(nothing on stderr)");
    line.chars().take(300).collect()
}
