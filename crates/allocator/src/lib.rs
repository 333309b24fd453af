//! The service's allocator: mimalloc, with memory that renders free given back to the
//! system within milliseconds instead of a second.
//!
//! mimalloc 3 keeps a freed page committed for `purge_delay` milliseconds (1,000 by
//! default) in case it is needed again, and checks that age only when the thread that owns
//! the page next allocates. A 500-line invoice's render frees some 40 MiB across the render
//! thread and Typst's layout threads; with back-to-back long renders the next one ran
//! before that memory was purged, and the server peaked at 183-212 MiB (8 clients asking
//! for 500-line PDFs, target 150). With [`PURGE_DELAY_MS`] it peaked at 140-149 MiB with
//! the same PDFs a second, one-page and 500-line alike; purging at once (0) peaked no lower
//! and served a tenth fewer one-page PDFs (docs/PERFORMANCE.md).
//!
//! This is the workspace's only crate with `unsafe` (denied, not forbidden, so the two
//! calls below can allow it): setting an option is a C call. [`tune`] must run first in
//! `main`, before any other thread exists (mimalloc's options are not thread safe).

#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use std::ffi::{c_int, c_long};

pub use mimalloc::MiMalloc;

/// How long a freed page stays committed before it is returned, in milliseconds.
pub const PURGE_DELAY_MS: c_long = 2;

/// The environment variable through which mimalloc itself reads the purge delay; when it
/// is set, [`tune`] leaves the delay as given there.
pub const PURGE_DELAY_ENV: &str = "MIMALLOC_PURGE_DELAY";

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (include/mimalloc.h, the 16th
/// option in mimalloc 2 and 3, whose option numbers are part of the ABI). The crate's
/// tests check that this is the option `MIMALLOC_PURGE_DELAY` sets.
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// What [`tune`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tuning {
    /// The purge delay was set to [`PURGE_DELAY_MS`].
    Set,
    /// `MIMALLOC_PURGE_DELAY` was set, so the delay is what it says.
    FromEnvironment,
}

/// Sets mimalloc's purge delay to [`PURGE_DELAY_MS`] unless `MIMALLOC_PURGE_DELAY` is set.
/// Call it first in `main`, while the process has one thread.
pub fn tune() -> Tuning {
    if std::env::var_os(PURGE_DELAY_ENV).is_some() {
        return Tuning::FromEnvironment;
    }
    // SAFETY: `mi_option_set` writes one entry of mimalloc's static option table; the
    // option number is in range (see MI_OPTION_PURGE_DELAY) and `tune` is documented to
    // run before other threads exist, as mimalloc asks.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_DELAY_MS)
    };
    Tuning::Set
}

/// mimalloc's purge delay now, in milliseconds.
pub fn purge_delay_ms() -> c_long {
    // SAFETY: `mi_option_get` reads one entry of mimalloc's static option table (reading
    // the environment the first time); the option number is in range.
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY)
    }
}
