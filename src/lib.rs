//! hazardserve: does scheduling LLM requests by each node's conditional hazard beat
//! hazard-blind scheduling on unreliable nodes, and how close does it get to an oracle?
//!
//! The library has one module per stage:
//!
//! - [`ingest`] (the `hazardserve-ingest` crate): format adapters, pure parsing of availability
//!   and request traces into canonical Arrow batches;
//! - [`store`]: the embedded store (Parquet files plus a DuckDB catalog), atomic commits;
//! - [`queries`]: the program's own SQL statements against the store, as typed rows;
//! - [`named_queries`]: the documented SQL analyses users run by name (`hazardserve query`);
//! - [`public`]: the catalogue of public traces and how each is ingested;
//! - [`ingest_job`]: one ingest (parse, describe, commit), shared by every front end;
//! - [`survival`]: Kaplan-Meier, shrinkage, parametric fits, validation and hazard priors;
//! - [`fit`]: survival of a stored source (loading its sessions, fitting groups);
//! - [`policy`]: the cost model and every scheduling policy;
//! - [`replay`]: the discrete-event simulator and its metrics;
//! - [`scenario`]: replay inputs built from the store, and stored runs;
//! - [`sweep`]: grids of scenarios (the regime map), sharded runs and their summary;
//! - [`synth`]: generators of sample traces and workloads;
//! - [`rng`]: the small seeded random number generator every stage shares;
//! - [`diag`]: messages at one verbosity and the shared error helpers;
//! - [`output`]: the one output path (table, CSV, JSON, Parquet) of the command line;
//! - [`report`]: the Markdown + HTML report with SVG plots.
//!
//! [`survival`], [`policy`], [`replay`], [`rng`] and [`diag`] are the `hazardserve-core` crate
//! (the pure stack: it links no storage, so the Python extension can use it), re-exported here
//! under the same paths.
//!
//! The command line (`cli`) and the terminal UI (`tui`) are the binary's, not public API: the
//! binary enters through [`cli_main`]. `tui` is reachable only so that the TUI's tests can drive
//! it; it is hidden from the documentation and may change at any time.

mod cli;
pub mod fit;
pub mod ingest_job;
pub mod named_queries;
pub mod output;
pub mod public;
pub mod queries;
pub mod report;
pub mod scenario;
pub mod store;
pub mod sweep;
pub mod synth;
#[doc(hidden)]
pub mod tui;

pub use hazardserve_ingest as ingest;
// The pure stack (the `hazardserve-core` crate), under the paths it always had.
pub use hazardserve_core::{diag, policy, replay, rng, survival};

/// Switches on the test-only fault points (`HAZARDSERVE_FAULT`) for this process: called by
/// the `hazardserve-faults` binary before [`cli_main`]. Only with the `fault-injection`
/// feature; the `hazardserve` binary never calls it, so its fault points stay off.
#[cfg(feature = "fault-injection")]
#[doc(hidden)]
pub fn enable_fault_injection() {
    store::files::enable_fault_injection();
}

/// The `hazardserve` command: parses the process's arguments, runs the command, prints any
/// error with its causes (each once) on standard error, and returns the exit status.
pub fn cli_main() -> std::process::ExitCode {
    cli::main()
}
