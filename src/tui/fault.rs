//! Test hooks of the TUI (only with the `fault-injection` feature).

/// Test hook: `HAZARDSERVE_FAULT=tui-panic` panics right after the first frame;
/// `HAZARDSERVE_FAULT=tui-loader-panic` panics in the loader while it reads the store.
/// Only with the `fault-injection` feature (enabled by the integration tests) and in the
/// `hazardserve-faults` binary; otherwise always false, without reading the environment.
#[cfg(feature = "fault-injection")]
pub(crate) fn fault(name: &str) -> bool {
    crate::store::files::fault_mode().is_some_and(|v| v == name)
}

/// Without the `fault-injection` feature no fault is ever injected.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn fault(_name: &str) -> bool {
    false
}
