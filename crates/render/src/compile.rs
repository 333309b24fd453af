//! Compiling a sandbox to PDF on a render thread with a deadline, and naming where errors are.
//!
//! Renders run on a small pool of long-lived threads rather than a new thread each: no thread
//! start per render, and a thread keeps its allocator heap between renders (measured: a
//! quarter fewer page faults, a repeated document 20% faster; see docs/PERFORMANCE.md).
//!
//! Typst cannot be interrupted, so a render that overruns its deadline is abandoned: the
//! caller gets [`RenderError::Timeout`] at once while its thread runs on until Typst
//! finishes by itself, then exits; it never serves another render. At most
//! [`MAX_ABANDONED`] such threads may exist; past that, renders are refused with
//! [`RenderError::Busy`] so runaway snippets cannot take every core.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::Duration;

use typst::diag::SourceDiagnostic;
use typst::foundations::Smart;
use typst::{World, WorldExt};
use typst_layout::PagedDocument;
use typst_pdf::{PdfOptions, PdfStandard, PdfStandards, Timestamp};

use crate::error::RenderError;
use crate::snippet::{self, Prepared};
use crate::world::Sandbox;

/// Most abandoned (timed-out, still running) renders at any time.
pub const MAX_ABANDONED: usize = 2;

/// Stack of the worker thread: deep but bounded nesting in layouts and snippets.
const STACK_BYTES: usize = 16 * 1024 * 1024;

static ABANDONED: AtomicUsize = AtomicUsize::new(0);
static THREADS_STARTED: AtomicUsize = AtomicUsize::new(0);
static RENDERS: AtomicUsize = AtomicUsize::new(0);
/// Weight of the documents rendered since Typst's memo cache was last cleared (see [`weight`]).
static SINCE_CLEAR: AtomicUsize = AtomicUsize::new(0);

/// How much document weight (see [`weight`]) may pass through the memo cache before it is
/// cleared. The cache keeps every layout it made until evicted: measured with massif
/// (`render_bench --profile`), about 0.8 MB per one-page invoice and 15 MB per 500-line
/// invoice. A server going round eleven 500-line invoices peaked at 515 MiB with a 1 MiB
/// budget, 305 MiB with this one (when such an invoice left about 40 MiB). New documents
/// gain little from the cache (a new one-page invoice renders in the same time either
/// way), but clearing after every one-page invoice halved the server's one-page
/// throughput, so it is cleared after about forty one-page invoices, or right after one
/// of the longest.
const CLEAR_AFTER_BYTES: usize = 128 * 1024;

/// Most lines a document may have (`domain::invoice::MAX_LINES`).
const MAX_LINES: usize = 500;

/// What each line of a document weighs at least: its layouts stay in the cache, and are
/// much more than its few dozen bytes of data. A document of [`MAX_LINES`] lines weighs
/// the whole budget by itself.
const WEIGHT_PER_LINE: usize = CLEAR_AFTER_BYTES.div_ceil(MAX_LINES);

/// What a render weighs against [`CLEAR_AFTER_BYTES`]: the size of its data in bytes, or
/// [`WEIGHT_PER_LINE`] per line if that is more. A one-page invoice (about 3 KB of data)
/// weighs its bytes; a 500-line invoice (about 33 KB of data) weighs the whole budget.
pub fn weight(data_bytes: usize, lines: usize) -> usize {
    data_bytes.max(lines.saturating_mul(WEIGHT_PER_LINE))
}

/// Bounds Typst's per-process memo cache after a render of the given [`weight`].
fn evict_memo_cache(weight: usize) {
    let since = SINCE_CLEAR.fetch_add(weight, Ordering::Relaxed) + weight;
    if since >= CLEAR_AFTER_BYTES {
        SINCE_CLEAR.store(0, Ordering::Relaxed);
        typst::comemo::evict(0);
    } else if RENDERS.fetch_add(1, Ordering::Relaxed) % 10 == 9 {
        // Between clears, every tenth render drops what the last few dozen did not use
        // (evicting costs about a millisecond).
        typst::comemo::evict(3);
    }
}

const RUNNING: u8 = 0;
const FINISHED: u8 = 1;
const GAVE_UP: u8 = 2;

/// The snippets compiled in a sandbox, to map their error positions back.
pub struct Snippets {
    /// Each snippet's file id and its prepared text.
    pub files: Vec<(typst::syntax::FileId, Prepared)>,
}

/// Which PDF standard a render enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standard {
    /// Typst's default PDF (1.7, tagged).
    Plain,
    /// PDF/A-3b: what a Factur-X invoice is.
    PdfA3b,
}

/// How the PDF is written.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// The document's date (and its attachments' modification date).
    pub timestamp: Option<Timestamp>,
    /// The standard the PDF must conform to.
    pub standard: Standard,
}

/// Compiles the sandbox to PDF bytes within `timeout`; `weight` (see [`weight`]) paces the
/// clearing of Typst's memo cache.
pub fn to_pdf(
    world: Sandbox,
    snippets: Snippets,
    weight: usize,
    output: Output,
    timeout: Duration,
) -> Result<Vec<u8>, RenderError> {
    let abandoned = ABANDONED.load(Ordering::SeqCst);
    if abandoned >= MAX_ABANDONED {
        return Err(RenderError::Busy(abandoned));
    }
    let state = Arc::new(AtomicU8::new(RUNNING));
    let (tx, rx) = mpsc::sync_channel(1);
    let worker_state = Arc::clone(&state);
    let worker = run(Box::new(move || {
        // Dropped last, also when Typst panics: settles the abandoned count.
        let _finished = Finished(worker_state);
        let result = compile(&world, &snippets, output);
        evict_memo_cache(weight);
        let _ = tx.send(result);
    }))?;
    match rx.recv_timeout(timeout) {
        Ok(result) => {
            worker.idle();
            result
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            ABANDONED.fetch_add(1, Ordering::SeqCst);
            let gave_up =
                state.compare_exchange(RUNNING, GAVE_UP, Ordering::SeqCst, Ordering::SeqCst);
            if gave_up.is_ok() {
                // Dropping `worker` closes its queue: the thread exits when Typst is done.
                return Err(RenderError::Timeout(timeout));
            }
            // It finished in the meantime: take its result after all.
            ABANDONED.fetch_sub(1, Ordering::SeqCst);
            let result = rx.recv().unwrap_or_else(|_| Err(crashed()));
            worker.idle();
            result
        }
        // Typst panicked and took its thread with it.
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(crashed()),
    }
}

/// How many render threads this process has started: one for each render that found no idle
/// thread (at most [`idle_limit`] are kept), abandoned renders' threads included.
pub fn threads_started() -> usize {
    THREADS_STARTED.load(Ordering::Relaxed)
}

/// A render for a render thread.
type Job = Box<dyn FnOnce() + Send>;

/// A render thread, reached through its queue of jobs; it exits when the queue is dropped.
struct Worker(mpsc::Sender<Job>);

/// Render threads waiting for a job, at most [`idle_limit`] of them.
static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

/// Idle render threads kept: one per core, at least two and at most eight. More renders
/// than that at once start threads that exit after their render. Keeping sixteen served
/// 10% more one-page PDFs a second on two cores but raised the peak RSS by 15-20 MiB, past
/// the 150 MB target (docs/PERFORMANCE.md).
fn idle_limit() -> usize {
    // Asked once: `available_parallelism` reads the cgroup's CPU quota from /proc and /sys,
    // which showed in the profile of every render's end.
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8)))
}

/// Hands `job` to an idle render thread, or to a new one if none is idle (or the idle one
/// is gone), and returns that thread's handle.
fn run(job: Job) -> Result<Worker, RenderError> {
    let idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner).pop();
    let job = match idle {
        Some(worker) => match worker.0.send(job) {
            Ok(()) => return Ok(worker),
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    let (jobs, queue) = mpsc::channel::<Job>();
    thread::Builder::new()
        .name("render".into())
        .stack_size(STACK_BYTES)
        .spawn(move || {
            while let Ok(job) = queue.recv() {
                job();
            }
        })
        .map_err(|err| RenderError::Internal(format!("cannot start a render thread: {err}")))?;
    THREADS_STARTED.fetch_add(1, Ordering::Relaxed);
    let worker = Worker(jobs);
    worker
        .0
        .send(job)
        .map_err(|_| RenderError::Internal("a new render thread is gone".into()))?;
    Ok(worker)
}

impl Worker {
    /// Puts the thread back among the idle ones, or lets it exit if enough are idle.
    fn idle(self) {
        let mut idle = IDLE.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < idle_limit() {
            idle.push(self);
        }
    }
}

/// Marks a worker finished; if its caller had already given up, it is no longer abandoned.
struct Finished(Arc<AtomicU8>);

impl Drop for Finished {
    fn drop(&mut self) {
        let state = self
            .0
            .compare_exchange(RUNNING, FINISHED, Ordering::SeqCst, Ordering::SeqCst);
        if state.is_err() {
            ABANDONED.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

fn crashed() -> RenderError {
    RenderError::Internal("Typst panicked while rendering".into())
}

fn compile(world: &Sandbox, snippets: &Snippets, output: Output) -> Result<Vec<u8>, RenderError> {
    let document = typst::compile::<PagedDocument>(world)
        .output
        .map_err(|errors| locate(world, snippets, &errors))?;
    let standards = match output.standard {
        Standard::Plain => PdfStandards::default(),
        Standard::PdfA3b => PdfStandards::new(&[PdfStandard::A_3b])
            .map_err(|e| RenderError::Internal(format!("PDF/A-3b: {}", e.message())))?,
    };
    let options = PdfOptions {
        timestamp: output.timestamp,
        creator: Smart::Custom(None),
        standards,
        ..PdfOptions::default()
    };
    typst_pdf::pdf(&document, &options).map_err(|errors| match output.standard {
        Standard::Plain => {
            let messages: Vec<String> = errors.iter().map(message).collect();
            RenderError::Export(messages.join("; "))
        }
        // Export errors under PDF/A are what the standard forbids: say where, so that a
        // company can fix its snippet.
        Standard::PdfA3b => {
            let located = locate(world, snippets, &errors);
            let slot = match &located {
                RenderError::Snippet { slot, .. } => Some(*slot),
                _ => None,
            };
            RenderError::PdfA {
                slot,
                message: located.to_string(),
            }
        }
    })
}

/// Turns the first error into one that names its file, line and column.
fn locate(world: &Sandbox, snippets: &Snippets, errors: &[SourceDiagnostic]) -> RenderError {
    let Some(first) = errors.first() else {
        return RenderError::Internal("compilation failed without a message".into());
    };
    let mut text = message(first);
    if errors.len() > 1 {
        text.push_str(&format!(" (and {} more errors)", errors.len() - 1));
    }
    let id = first.span.id();
    let range = world.range(first.span);
    if let (Some(id), Some(range)) = (id, range.clone())
        && let Some((_, prepared)) = snippets.files.iter().find(|(file, _)| *file == id)
    {
        return prepared.error_at(range.start, text);
    }
    let file = id.map_or_else(
        || "(unknown)".into(),
        |id| id.vpath().get_with_slash().to_owned(),
    );
    let position = id
        .zip(range)
        .and_then(|(id, range)| Some((world.source(id).ok()?, range)))
        .map(|(source, range)| snippet::line_column(source.text(), range.start));
    RenderError::Template {
        file,
        line: position.map(|p| p.0),
        column: position.map(|p| p.1),
        message: text,
    }
}

fn message(diag: &SourceDiagnostic) -> String {
    let mut text = diag.message.to_string();
    // Hints about CLI flags (`--root`) mean nothing to a company writing a snippet.
    for hint in diag.hints.iter().filter(|h| !h.v.contains("--")) {
        text.push_str(&format!(" (hint: {})", hint.v));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_documents_weigh_their_data_and_the_longest_fill_the_budget() {
        assert_eq!(weight(3_300, 1), 3_300);
        assert_eq!(weight(4_000, 10), 4_000);
        assert!(weight(33_000, MAX_LINES) >= CLEAR_AFTER_BYTES);
        assert!(weight(27_000, 400) < CLEAR_AFTER_BYTES);
    }
}
