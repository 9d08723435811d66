//! Error type of the ingest crate: every variant names the file (and line or record) it is about.

use std::path::PathBuf;

/// Result alias of the ingest crate.
pub type Result<T, E = IngestError> = std::result::Result<T, E>;

/// What can go wrong while reading and parsing a trace.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A file could not be opened or read (the cause is the `source`, not part of the message).
    #[error("{path}: cannot read")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A path, directory or glob matched no file.
    #[error("{0}: no such file, or nothing matched")]
    NoInput(String),
    /// A bad glob pattern.
    #[error("bad glob pattern {pattern:?}: {message}")]
    Glob {
        /// The pattern as given.
        pattern: String,
        /// What the glob parser said.
        message: String,
    },
    /// The inputs held no record at all.
    #[error("{0}: empty input (no records)")]
    Empty(String),
    /// A bad record under `--strict`, or a defect that makes a whole file unusable.
    #[error("{file}:{line}: {reason}")]
    Bad {
        /// The file.
        file: String,
        /// 1-based line (or record) number; 0 when the defect is about the whole file.
        line: u64,
        /// What is wrong.
        reason: String,
    },
    /// The format could not be determined by sniffing.
    #[error("{0}: cannot tell the format; pass --format NAME (see `hazardserve ingest --help`)")]
    UnknownFormat(String),
    /// An option is missing or invalid for this input.
    #[error("{0}")]
    Option(String),
    /// Building the Arrow batches failed (a bug, not bad input).
    #[error("building Arrow batches failed")]
    Arrow(#[from] arrow::error::ArrowError),
}
