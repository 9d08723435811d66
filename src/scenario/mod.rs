//! A replay scenario: which nodes of which availability source, on which hardware, serving which
//! workload, under which policy parameters and windows. [`config`] is the TOML file
//! (`hazardserve replay --config`) and its validation ([`template`] the commented default),
//! [`pools`] a fleet's `[[pools]]`,
//! [`conversations`] a workload's conversations and the gap between their turns,
//! [`hardware`] the explicit figures and node attributes they and `[hardware]` use, [`build`] turns it into the replay
//! engine's inputs using the store (survival priors fitted only on what was observed before the
//! first window), [`run`] replays and compares, [`results`] stores a run's per-request records
//! and comparison rows, and [`error`] says what went wrong.

pub mod build;
pub mod choices;
pub mod config;
pub mod conversations;
pub mod decision_log;
pub mod error;
pub mod explain;
pub mod hardware;
pub mod pools;
pub mod results;
pub mod run;
pub mod template;

pub use build::{build, pool_membership, Scenario};
pub use config::{CurveReading, PoolConfig, ScenarioConfig, TailModel};
pub use error::{ConfigError, ScenarioError};
pub use results::{latest_run, load_summary, save_run, RunInfo};
pub use run::{run, RunOptions, RunResult};
