//! Renders run on long-lived threads that are reused; a thread whose render was abandoned
//! exits once Typst is done and never serves another render.
//!
//! Alone in its own test binary: it counts the process's threads (Linux, `/proc/self/task`).
#![cfg(target_os = "linux")]

mod support;

use std::thread;
use std::time::{Duration, Instant};

use render::*;
use support::*;

/// Threads of this process named `render`: the render crate's threads, and any thread started
/// from one of them without a name of its own (Linux gives it its parent's).
fn render_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.trim_end() == "render")
        .count()
}

/// Waits up to a minute for the count of render threads to fall to `at_most`; returns it.
fn render_threads_down_to(at_most: usize) -> usize {
    let start = Instant::now();
    loop {
        let now = render_threads();
        if now <= at_most || start.elapsed() > Duration::from_secs(60) {
            return now;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The count of render threads once it has not changed for half a second.
fn settled_render_threads() -> usize {
    let mut last = render_threads();
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_millis(500) {
        thread::sleep(Duration::from_millis(20));
        let now = render_threads();
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    last
}

#[test]
fn render_threads_are_reused_and_an_abandoned_one_exits_when_typst_is_done() {
    assert_eq!(render_threads_started(), 0);
    // One caller after another: one thread serves them all.
    for _ in 0..11 {
        assert!(render_invoice(&invoice()).unwrap().starts_with(b"%PDF-"));
    }
    assert_eq!(render_threads_started(), 1);

    // Two callers at once, twice (at least two threads are kept idle): one more thread at
    // most, kept for the next round.
    let concurrent = || {
        thread::scope(|scope| {
            for _ in 0..2 {
                scope.spawn(|| {
                    for _ in 0..5 {
                        assert!(render_invoice(&invoice()).unwrap().starts_with(b"%PDF-"));
                    }
                });
            }
        })
    };
    concurrent();
    concurrent();
    let started = render_threads_started();
    assert!(started <= 2, "{started} render threads started");

    // Threads Typst starts for itself from a render thread (rayon's pool) inherit its name:
    // counted from here on, they do not change. Render threads not kept idle are exiting:
    // the count is taken once it has held still for half a second.
    let pooled = settled_render_threads();
    assert!(pooled >= 1);

    // A render past its deadline: its thread runs on, then exits instead of going back.
    let mut slow = invoice();
    slow.footer_typst = Some("#for i in range(1500) { for j in range(1500) { } }".into());
    let limits = Limits {
        timeout: Duration::from_millis(20),
    };
    assert_eq!(
        render_invoice_with(&slow, &limits),
        Err(RenderError::Timeout(limits.timeout))
    );
    assert_eq!(
        render_threads_down_to(pooled - 1),
        pooled - 1,
        "the abandoned render thread did not exit"
    );

    // The remaining threads (or a new one) still serve renders.
    assert!(render_invoice(&invoice()).unwrap().starts_with(b"%PDF-"));
    assert!(
        render_threads() <= pooled,
        "{} render threads",
        render_threads()
    );
}
