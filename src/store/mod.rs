//! The embedded store: Parquet files (the source of truth) plus a DuckDB catalog over them.
//!
//! Layout of a store directory:
//!
//! ```text
//! STORE.json                                   store format version
//! manifests/<source>.json                      commit record of one source (see [`Manifest`])
//! <table>/source=<source>/part-<txid>.parquet  one file per table and source (zstd, hive-partitioned)
//! catalog.duckdb                               views over the committed files, for SQL users
//! .lock                                        writer lock
//! .staging/                                    files being written (never read)
//! ```
//!
//! A source becomes visible when its manifest is renamed into `manifests/`: that rename is the
//! commit point, so a source appears completely or not at all. Readers only look at files named
//! by a manifest; writers remove anything else (left by a killed writer) when they take the lock.

mod catalog;
mod commit;
mod lock;
mod manifest;
pub mod tables;
mod verify;

use std::path::{Path, PathBuf};

pub use catalog::Catalog;
pub use commit::{
    commit_tables, commit_trace, commit_workload, remove_source, replace_file, sha256_file,
    write_atomic, write_parquet, IngestOutcome, InputRecord, SourceRecord, SourceSummary,
    StagedTable,
};
pub use lock::WriteLock;
pub use manifest::{Manifest, TableFile};
pub use tables::{TableDef, TABLES};
pub use verify::{verify, VerifyReport};

/// Version of the store layout written in `STORE.json`.
pub const STORE_VERSION: u32 = 1;

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
    #[error("the store {0} is locked by another writer{1}; wait for it to finish (or remove the stale .lock file if no hazardserve process is running)")]
    Locked(PathBuf, String),
    /// No store at the path.
    #[error("no store at {0}: run `hazardserve ingest` or `hazardserve demo` first, or pass --store DIR")]
    Missing(PathBuf),
    /// A source name that cannot be used as a directory name.
    #[error(
        "invalid source name {0:?}: use letters, digits, '.', '_' and '-' (at most 100 characters)"
    )]
    BadSourceName(String),
    /// The name belongs to a source and is asked for a replay run, or the other way round.
    #[error(
        "the name {0:?} is already used by a source or run of the other kind; pick another name"
    )]
    NameTaken(String),
    /// The named source does not exist.
    #[error("no source {0:?} in the store (see `hazardserve sources`)")]
    NoSuchSource(String),
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

pub(crate) fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A store directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Opens an existing store for reading.
    pub fn open(root: &Path) -> Result<Store> {
        if !root.join("STORE.json").is_file() {
            return Err(StoreError::Missing(root.to_path_buf()));
        }
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// Opens a store, creating an empty one when the directory has none.
    pub fn open_or_create(root: &Path) -> Result<Store> {
        std::fs::create_dir_all(root.join("manifests")).map_err(io_err(root))?;
        let marker = root.join("STORE.json");
        if !marker.is_file() {
            let body = serde_json::json!({ "store_version": STORE_VERSION, "schema_version": hazardserve_ingest::batch::SCHEMA_VERSION });
            commit::write_atomic(&marker, body.to_string().as_bytes())?;
        }
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// The store directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of the DuckDB catalog file.
    pub fn catalog_path(&self) -> PathBuf {
        self.root.join("catalog.duckdb")
    }

    /// Every committed manifest, sorted by source name.
    pub fn manifests(&self) -> Result<Vec<Manifest>> {
        manifest::read_all(&self.root.join("manifests"))
    }

    /// The manifest of one source.
    pub fn manifest(&self, source: &str) -> Result<Manifest> {
        let path = self.root.join("manifests").join(format!("{source}.json"));
        if !path.is_file() {
            return Err(StoreError::NoSuchSource(source.to_string()));
        }
        Manifest::read(&path)
    }

    /// An in-memory DuckDB connection with one view per table over the committed files.
    pub fn query(&self) -> Result<Catalog> {
        Catalog::in_memory(self)
    }
}

/// Checks a source name: it becomes a directory name and a SQL string.
pub fn validate_source_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadSourceName(name.to_string()))
    }
}
