//! A replay scenario: which nodes of which availability source, on which hardware, serving which
//! workload, under which policy parameters and windows. [`config`] is the TOML file
//! (`hazardserve replay --config`), [`build`] turns it into the replay engine's inputs using
//! the store (survival priors fitted only on what was observed before the first window), and
//! [`results`] stores a run's per-request records and per-policy summary.

pub mod build;
pub mod config;
pub mod explain;
pub mod results;

pub use build::{build, Scenario};
pub use config::ScenarioConfig;
pub use results::{latest_run, load_summary, save_run, RunInfo, SummaryRow};
