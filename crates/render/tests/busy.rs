//! Abandoned renders are counted until they finish; past the cap, renders are refused.
//!
//! Alone in its own test binary: the count is per process.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use render::*;
use support::*;

#[test]
fn abandoned_renders_are_counted_until_they_finish() {
    let mut slow = invoice();
    // About a second in a debug build, a fraction of it in release: far above the deadline.
    slow.footer_typst = Some("#for i in range(1500) { for j in range(1500) { } }".into());
    let limits = Limits {
        timeout: Duration::from_millis(20),
    };
    for _ in 0..MAX_ABANDONED {
        assert_eq!(
            render_invoice_with(&slow, &limits),
            Err(RenderError::Timeout(limits.timeout))
        );
    }
    let busy = render_invoice(&invoice()).unwrap_err();
    assert_eq!(busy, RenderError::Busy(MAX_ABANDONED));
    assert!(busy.to_string().contains("try again later"), "{busy}");

    let start = Instant::now();
    loop {
        match render_invoice(&invoice()) {
            Ok(pdf) => break assert!(pdf.starts_with(b"%PDF-")),
            Err(RenderError::Busy(_)) if start.elapsed() < Duration::from_secs(60) => {
                thread::sleep(Duration::from_millis(50));
            }
            Err(err) => panic!("the abandoned renders never finished: {err}"),
        }
    }
}
