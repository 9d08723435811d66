//! What the real-data tests of the adapters share: finding `../shared/traces-public`, and
//! skipping honestly when it is absent.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether the tests run under CI (`CI` set to anything but empty, `0` or `false`), where every
/// test must run: a missing prerequisite fails the test instead of skipping it.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Skips the calling test for `reason` (the caller returns right after): under CI this panics;
/// locally it prints `SKIPPED: <test>: <reason>` on the process's standard error, which the test
/// harness does not capture, so every skip shows in the output of `cargo test`.
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    if under_ci() {
        panic!("{test} cannot run: {reason} (CI is set, so nothing may skip)");
    }
    // On a line of its own even when the harness is half-way through a `test ... ok` line.
    let _ = write!(std::io::stderr(), "\nSKIPPED: {test}: {reason}\n");
}

/// The public traces (`$HAZARDSERVE_SHARED/traces-public`, else `../shared/traces-public`
/// beside the checkout), or `None` after [`skip`]ping the test when they are absent.
pub fn traces_public() -> Option<PathBuf> {
    let base = std::env::var_os("HAZARDSERVE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let dir = base.join("traces-public");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!("{} not found", dir.display()));
        None
    }
}

/// The public request workloads (`$HAZARDSERVE_SHARED/workloads-public`, else
/// `../shared/workloads-public` beside the checkout), or `None` after [`skip`]ping the test when
/// they are absent.
#[allow(dead_code)]
pub fn workloads_public() -> Option<PathBuf> {
    let base = std::env::var_os("HAZARDSERVE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let dir = base.join("workloads-public");
    if dir.is_dir() {
        Some(dir)
    } else {
        skip(&format!("{} not found", dir.display()));
        None
    }
}
