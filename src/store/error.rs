//! The store's error type and its result alias.

use std::path::{Path, PathBuf};

use crate::diag::did_you_mean;

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed (the cause is the `source`, not part of the message).
    #[error("{path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// DuckDB failed.
    #[error("DuckDB failed")]
    Duck(#[source] DuckError),
    /// Writing or reading Parquet failed (`message` is the cause; there is no `source`).
    #[error("parquet {path}: {message}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// Building a record batch failed (a bug, not bad input).
    #[error("building the {table} table failed")]
    Arrow {
        /// The table.
        table: String,
        /// What Arrow said.
        source: arrow::error::ArrowError,
    },
    /// Building batches failed.
    #[error(transparent)]
    Ingest(#[from] hazardserve_ingest::IngestError),
    /// Another process holds the writer lock.
    #[error("the store {0} is being written by another process{1}; wait for it to finish. The lock is held by the operating system (flock) and released when that process exits, so removing .lock would not help: it would let two writers in")]
    Locked(PathBuf, String),
    /// No store at the path.
    #[error("no store at {0}: run `hazardserve ingest` or `hazardserve demo` first, or pass --store DIR")]
    Missing(PathBuf),
    /// The store path is a file.
    #[error("--store {0} is a file, not a store directory")]
    NotADirectory(PathBuf),
    /// A non-empty directory without `STORE.json`: the store will not adopt it.
    #[error("{0} is not a hazardserve store and is not empty (it holds {1}); the store never writes into a directory it did not create: pass --store with a new or empty directory")]
    NotAStore(PathBuf, String),
    /// The store path has a character DuckDB reads as a file pattern.
    #[error("the store path {0} contains {1:?}, which DuckDB reads as part of a file pattern; use a path without '*', '?', '[' or '{{'")]
    BadStorePath(PathBuf, char),
    /// A source name that cannot be used as a directory name.
    #[error(
        "invalid source name {0:?}: use letters, digits, '.', '_' and '-' (at most 100 characters)"
    )]
    BadSourceName(String),
    /// A reserved source name.
    #[error("invalid source name {0:?}: {1}")]
    ReservedSourceName(String, &'static str),
    /// A damaged source (its manifest or a file) asked for by name.
    #[error("source {0:?} is damaged: {1}; see `hazardserve store verify`, or `hazardserve store remove --source {0}`")]
    Damaged(String, String),
    /// The name belongs to a source and is asked for a replay run, or the other way round.
    #[error(
        "the name {0:?} is already used by a source or run of the other kind; pick another name"
    )]
    NameTaken(String),
    /// The named source does not exist (with the names of similar sources, if any).
    #[error("no source {0:?} in the store{hint} (see `hazardserve sources`)", hint = did_you_mean(.1))]
    NoSuchSource(String, Vec<String>),
    /// The source exists with other content and `--replace` was not given.
    #[error("source {0:?} already exists with different content; pass --replace to replace it, or --source NAME to ingest under another name")]
    Exists(String),
    /// Encoding a record as JSON failed (a bug, not bad input).
    #[error("encoding {what} as JSON failed")]
    Json {
        /// What was encoded.
        what: String,
        /// What serde_json said.
        source: serde_json::Error,
    },
    /// A manifest or STORE.json is unreadable.
    #[error("{path}: corrupt store metadata: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong (the cause; there is no `source`).
        message: String,
    },
}

impl From<duckdb::Error> for StoreError {
    fn from(e: duckdb::Error) -> Self {
        StoreError::Duck(DuckError(e))
    }
}

/// A DuckDB error, shown by its own message. DuckDB's failures also carry the C API's result
/// code as their `source()` ("Error code 1: Unknown error code"), which adds nothing: it is left
/// out of the chain.
#[derive(Debug)]
pub struct DuckError(pub duckdb::Error);

impl std::fmt::Display for DuckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DuckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            duckdb::Error::DuckDBFailure(..) => None,
            other => other.source(),
        }
    }
}

/// Result alias of the store.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Turns an I/O error on `path` into [`StoreError::Io`].
pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}
