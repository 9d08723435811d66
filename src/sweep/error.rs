//! Why a sweep could not be read, run or stored.

use std::path::PathBuf;

use crate::scenario::ScenarioError;
use crate::store::StoreError;

/// Why a sweep could not be read, run or stored.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// The grid file is wrong.
    #[error("{file}: {message}")]
    Grid {
        /// The grid file.
        file: String,
        /// What is wrong, naming the key.
        message: String,
    },
    /// A cell's scenario failed.
    #[error("cell {cell}")]
    Cell {
        /// The cell's key.
        cell: String,
        /// Why.
        #[source]
        source: ScenarioError,
    },
    /// A file could not be read or written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A shard file is not what `sweep merge` needs.
    #[error("{}: {message}", path.display())]
    Shard {
        /// The shard file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// No shard files in the given directories.
    #[error("no shard files (shard-I-of-N.json) in {}", .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "))]
    NoShards(Vec<PathBuf>),
    /// Shards are missing.
    #[error("shards {missing} of {of} are missing (shards are numbered 0 to {of} - 1)")]
    MissingShards {
        /// Shards in all.
        of: usize,
        /// The missing shard numbers.
        missing: String,
    },
    /// No sweep of that id in the store.
    #[error("no sweep {0:?} in the store (`hazardserve sweep list` lists them)")]
    NoSuchSweep(String),
    /// A shard request like `4/3`.
    #[error("--shard {0}: use I/N with 0 <= I < N, e.g. 0/3")]
    BadShard(String),
    /// An axis comparison was asked for something the sweep does not have.
    #[error("{0}")]
    Axis(String),
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}
