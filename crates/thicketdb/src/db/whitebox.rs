//! Crash points for the process-level crash tests (feature `whitebox`):
//! with `THICKET_ABORT_AT=<point>:<n>` in its environment, a process built
//! with the feature aborts (`std::process::abort`, as abrupt as a SIGKILL:
//! no destructor runs, nothing more is written) when it passes the named
//! point for the n-th time. A test so stops a `thicket compact` mid-merge
//! on every run instead of killing it after a guessed delay.
//!
//! Points: `merge_checkpoint`, after a journaled merge's checkpoint is in
//! the MANIFEST (`lsm/compact.rs`).
//!
//! Without the feature the points compile to nothing. The CLI's tests turn
//! it on through a dev-dependency, so binaries a `cargo test` builds carry
//! it (reading the variable once per process); `cargo build` and
//! `cargo install` leave it out.

#[cfg(feature = "whitebox")]
pub(crate) fn crash_point(name: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;

    static TARGET: OnceLock<Option<(String, u64)>> = OnceLock::new();
    static PASSES: AtomicU64 = AtomicU64::new(0);
    let target = TARGET.get_or_init(|| {
        let spec = std::env::var("THICKET_ABORT_AT").ok()?;
        let (point, n) = spec.rsplit_once(':')?;
        Some((point.to_string(), n.parse().ok()?))
    });
    if let Some((point, n)) = target {
        if point == name && PASSES.fetch_add(1, Ordering::Relaxed) + 1 == *n {
            eprintln!("THICKET_ABORT_AT: aborting at {name} #{n}");
            std::process::abort();
        }
    }
}

#[cfg(not(feature = "whitebox"))]
#[inline(always)]
pub(crate) fn crash_point(_name: &str) {}
