//! The purge delay the server runs with. Each case runs in a child process (this test
//! binary again, with one test selected), since mimalloc reads `MIMALLOC_PURGE_DELAY` once
//! per process and the option is process-wide. The children are `#[ignore]`d, so that
//! they run only there.

use std::process::Command;

#[global_allocator]
static ALLOCATOR: allocator::MiMalloc = allocator::MiMalloc;

/// Runs the test `name` of this binary in a child with `env`, and asserts it passed.
fn in_child(name: &str, env: &[(&str, &str)]) {
    let exe = std::env::current_exe().expect("the test binary");
    let mut cmd = Command::new(exe);
    cmd.args([name, "--exact", "--ignored", "--nocapture"])
        .env_remove(allocator::PURGE_DELAY_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("the child runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child {name} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_option_set_is_the_one_mimalloc_reads_as_its_purge_delay() {
    // If the option number were another option's, mimalloc's own reading of
    // MIMALLOC_PURGE_DELAY would not show through it.
    in_child(
        "child_sees_the_environments_purge_delay",
        &[(allocator::PURGE_DELAY_ENV, "37")],
    );
}

#[test]
#[ignore = "run in a child process with the environment it needs"]
fn child_sees_the_environments_purge_delay() {
    assert_eq!(allocator::purge_delay_ms(), 37);
    // And `tune` leaves a delay the operator gave alone.
    assert_eq!(allocator::tune(), allocator::Tuning::FromEnvironment);
    assert_eq!(allocator::purge_delay_ms(), 37);
}

#[test]
fn tune_sets_the_short_purge_delay_when_none_is_given() {
    in_child("child_tunes", &[]);
}

#[test]
#[ignore = "run in a child process with the environment it needs"]
fn child_tunes() {
    // mimalloc's own default (a second in mimalloc 3) until tuned.
    assert_ne!(allocator::purge_delay_ms(), allocator::PURGE_DELAY_MS);
    assert_eq!(allocator::tune(), allocator::Tuning::Set);
    assert_eq!(allocator::purge_delay_ms(), allocator::PURGE_DELAY_MS);
}
