//! Errors of building and running a scenario. Each variant keeps its cause out of its own
//! message and exposes it as `source()`, so the chain prints every cause once.

use crate::policy::presets::UnknownPreset;
use crate::replay::ReplayError;
use crate::store::StoreError;
use crate::survival::priors::PriorsError;

/// A scenario file that does not parse.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    /// The file (or `default`, or `flags`).
    pub file: String,
    /// What is wrong, with line and key (from the TOML parser).
    pub message: String,
}

/// Why a scenario could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The scenario file does not parse.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A value of the scenario is out of its domain (`[workload] rate_scale must be > 0`).
    #[error("{key} {message}")]
    Invalid {
        /// The dotted key (`workload.rate_scale`).
        key: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A `[[pools]]` entry that is misconfigured: names the pool and the key.
    #[error("pool {pool}: {key} {message}")]
    Pool {
        /// The pool as written in messages: its name and position (`"spot" (pools[0])`).
        pool: String,
        /// The key inside the pool (`sample`, `price_per_node_hour`).
        key: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A preset name that does not exist.
    #[error(transparent)]
    Preset(#[from] UnknownPreset),
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The selection leaves nothing to replay (no node, no request, windows that do not fit).
    #[error("{0}")]
    Empty(String),
    /// Fitting the survival priors failed.
    #[error("fitting the survival priors of {name} before {cutoff}")]
    Priors {
        /// The availability source.
        name: String,
        /// The cutoff, as printed.
        cutoff: String,
        /// Why.
        #[source]
        cause: PriorsError,
    },
    /// The generating laws of `policy.truth` could not be read.
    #[error(transparent)]
    Truth(#[from] crate::survival::truth::TruthError),
    /// The replay engine rejected its inputs.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The scenario could not be written as TOML (for the run's content key).
    #[error("serialising the scenario")]
    Serialize(#[source] toml::ser::Error),
    /// The decision log could not be written.
    #[error("{path}: cannot write the decision log")]
    DecisionLog {
        /// The log's path.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        cause: std::io::Error,
    },
}

impl ScenarioError {
    /// An [`ScenarioError::Invalid`] value.
    pub fn invalid(key: &'static str, message: impl Into<String>) -> ScenarioError {
        ScenarioError::Invalid {
            key,
            message: message.into(),
        }
    }
}
