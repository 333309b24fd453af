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
//! The cost of a child, a process start and cold font and template caches, is measured in
//! docs/PERFORMANCE.md.

use std::path::Path;
use std::process::Stdio;
use std::sync::LazyLock;
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

/// Children at once: one per core, at least two and at most eight. A child may use up to
/// [`CHILD_MIB`], so a burst of saves or PDFs with snippets cannot fill the machine; the
/// others wait their turn.
static CHILDREN: LazyLock<tokio::sync::Semaphore> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
    tokio::sync::Semaphore::new(cores)
});

/// Does `job` in a child process of `runner` (the `invoicing` executable), or in this process
/// when there is none (the tests of this crate, which have no such executable); `held` (a
/// render budget permit) is kept until the work is over.
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
    let _turn = CHILDREN
        .acquire()
        .await
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("render process: {e}")))?;
    // `ulimit -v` limits the shell, which then becomes the renderer. If the request is
    // dropped (the client left), so is the child: `kill_on_drop`.
    let mut child = tokio::process::Command::new("/bin/sh")
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
        })?;
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
        _ => {
            // Out of memory (`memory allocation of … failed`, then abort) or a crash. What
            // Typst said is logged, never the snippet itself.
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

/// The last line a child wrote on stderr, bounded, for a log or an internal error.
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let line = text.trim().lines().last().unwrap_or("(nothing on stderr)");
    line.chars().take(300).collect()
}
