//! Error type of the ingest crate: every variant names the file (and line or record) it is about.

use std::path::PathBuf;

/// Result alias of the ingest crate.
pub type Result<T, E = IngestError> = std::result::Result<T, E>;

/// What can go wrong while reading and parsing a trace.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A file could not be opened or read, or is not a regular file (the cause is the `source`,
    /// not part of the message).
    #[error("{path}: cannot read")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A gzip stream (a `.gz` file, a `.tgz` archive or a `.gz` member) is corrupt or truncated
    /// (the cause is the `source`).
    #[error("{path}: not a valid gzip stream (corrupt or truncated)")]
    Decompress {
        /// The file.
        path: PathBuf,
        /// What the decoder said.
        source: std::io::Error,
    },
    /// A tar archive is corrupt or truncated (the cause is the `source`).
    #[error("{path}: not a valid tar archive (corrupt or truncated)")]
    Archive {
        /// The archive.
        path: PathBuf,
        /// What the tar reader said.
        source: std::io::Error,
    },
    /// A compressed file decompresses to more than the configured cap
    /// ([`crate::input::ReadOptions::max_decompressed_bytes`]).
    #[error("{}: {}", path.display(), crate::input::too_large_reason(*limit))]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap in bytes.
        limit: u64,
    },
    /// Two inputs of one source would give the same node keys (e.g. `d1/x.json` and
    /// `d2/x.json` given as two file arguments, or `x.json` beside `x.json.gz`): refused rather
    /// than merging two nodes into one.
    #[error(
        "{first} and {second} both give the node key `{key}`: one source cannot hold two inputs \
         with the same path below the ingested directory (compression suffix aside); pass their \
         common parent directory, rename one, or ingest them as separate sources"
    )]
    DuplicateKey {
        /// The shared key (the inputs' [`crate::InputFile::stem_key`]).
        key: String,
        /// The first input giving it.
        first: String,
        /// The second input giving it.
        second: String,
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
