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
//! by a manifest.
//!
//! Ownership. The store only ever deletes files it wrote: a writer records every file it is about
//! to create or make obsolete in a journal (`.staging/<txid>/journal.json`) before touching the
//! table directories, and recovery (when the next writer takes the lock) deletes only journaled
//! files that no manifest names, plus its own temporary files. A non-empty directory that is not
//! a store is refused, never adopted.
//!
//! Degraded, not wedged. A damaged manifest, or a source with a missing or truncated file, is left
//! out of every view (with a warning naming it) while every other source stays readable;
//! `store verify` names the damage, `store remove` removes such a source.

mod catalog;
mod commit;
mod lock;
mod manifest;
pub mod tables;
mod verify;

use std::path::{Path, PathBuf};

pub use catalog::{is_read_only_statement, Catalog};
pub use commit::{
    commit_tables, commit_trace, commit_workload, remove_source, replace_file, sha256_file,
    write_atomic, write_parquet, IngestOutcome, InputRecord, SourceRecord, SourceSummary,
    StagedTable,
};
pub use lock::WriteLock;
pub use manifest::{DamagedManifest, Manifest, Scan, TableFile};
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

/// A source left out of the views: its name and why.
pub type LeftOut = (String, String);

/// Checks a store path before anything is read or written: not a file, and free of the
/// characters DuckDB's file reader treats as a pattern.
fn check_root(root: &Path) -> Result<()> {
    if root.is_file() {
        return Err(StoreError::NotADirectory(root.to_path_buf()));
    }
    let abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    if let Some(c) = abs
        .to_string_lossy()
        .chars()
        .find(|c| matches!(c, '*' | '?' | '[' | '{'))
    {
        return Err(StoreError::BadStorePath(root.to_path_buf(), c));
    }
    Ok(())
}

impl Store {
    /// Opens an existing store for reading.
    pub fn open(root: &Path) -> Result<Store> {
        check_root(root)?;
        if !root.join("STORE.json").is_file() {
            return Err(StoreError::Missing(root.to_path_buf()));
        }
        Ok(Store {
            root: root.to_path_buf(),
        })
    }

    /// Checks that `root` can hold a store (see [`Store::open_or_create`]) without creating
    /// anything: writers call it before parsing their input, so a bad `--store` fails at once.
    pub fn check_writable(root: &Path) -> Result<()> {
        check_root(root)?;
        if root.join("STORE.json").is_file() {
            return Ok(());
        }
        let entries = match std::fs::read_dir(root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_err(root)(e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if names.is_empty() {
            return Ok(());
        }
        names.sort();
        let n = names.len();
        let mut shown: Vec<String> = names.into_iter().take(3).collect();
        if n > 3 {
            shown.push(format!("and {} more", n - 3));
        }
        Err(StoreError::NotAStore(root.to_path_buf(), shown.join(", ")))
    }

    /// Opens a store, creating one when the directory is new or empty. A non-empty directory
    /// without `STORE.json` is refused ([`StoreError::NotAStore`]): nothing in it is touched.
    pub fn open_or_create(root: &Path) -> Result<Store> {
        Store::check_writable(root)?;
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

    /// Every manifest: the sound ones and the damaged ones.
    pub fn scan(&self) -> Result<Scan> {
        manifest::scan(&self.root.join("manifests"))
    }

    /// Every sound manifest, sorted by source (damaged ones are in [`Store::scan`]).
    pub fn manifests(&self) -> Result<Vec<Manifest>> {
        Ok(self.scan()?.manifests)
    }

    /// The sound manifests whose files are all present with their recorded size (a cheap
    /// check; `store verify` hashes them), and the sources left out with the reason.
    pub fn readable(&self) -> Result<(Vec<Manifest>, Vec<LeftOut>)> {
        let scan = self.scan()?;
        let mut left_out: Vec<(String, String)> = scan
            .damaged
            .into_iter()
            .map(|d| (d.source, format!("{}: {}", d.path.display(), d.problem)))
            .collect();
        let mut ok = Vec::new();
        for m in scan.manifests {
            match m.files.iter().find_map(|f| self.file_problem(f)) {
                Some(problem) => left_out.push((m.source.clone(), problem)),
                None => ok.push(m),
            }
        }
        Ok((ok, left_out))
    }

    /// What is wrong with a committed file at a glance (missing, wrong size, not Parquet).
    pub(crate) fn file_problem(&self, f: &TableFile) -> Option<String> {
        let path = self.root.join(&f.path);
        let meta = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            Ok(_) => return Some(format!("{} is not a file", f.path)),
            Err(e) => return Some(format!("{}: {e}", f.path)),
        };
        if let Some(want) = f.bytes {
            if meta.len() != want {
                return Some(format!(
                    "{}: {} bytes, the manifest says {want}",
                    f.path,
                    meta.len()
                ));
            }
        }
        if !commit::has_parquet_footer(&path) {
            return Some(format!("{}: not a complete Parquet file", f.path));
        }
        None
    }

    /// Up to three source names close to `name` ([`similar_names`] among the stored sources).
    pub fn similar_sources(&self, name: &str) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.root.join("manifests")) else {
            return Vec::new();
        };
        let names: Vec<String> = entries
            .flatten()
            .filter_map(|e| Some(e.file_name().to_str()?.strip_suffix(".json")?.to_string()))
            .collect();
        similar_names(name, names.iter().map(String::as_str))
    }

    /// The manifest of one source.
    pub fn manifest(&self, source: &str) -> Result<Manifest> {
        let path = self.root.join("manifests").join(format!("{source}.json"));
        // A name is never a path: `../x` must not reach outside `manifests/`.
        let plain =
            !source.is_empty() && !source.contains(['/', '\\']) && source != "." && source != "..";
        if !plain || !path.is_file() {
            return Err(StoreError::NoSuchSource(
                source.to_string(),
                self.similar_sources(source),
            ));
        }
        let m = Manifest::read(&path).map_err(|e| match e {
            StoreError::Corrupt { message, .. } => {
                StoreError::Damaged(source.to_string(), format!("its manifest: {message}"))
            }
            StoreError::Io { source: e, .. } => StoreError::Damaged(
                source.to_string(),
                format!("its manifest is unreadable: {e}"),
            ),
            e => e,
        })?;
        if m.source != source {
            return Err(StoreError::Damaged(
                source.to_string(),
                format!("its manifest names source {:?}", m.source),
            ));
        }
        m.check_paths()
            .map_err(|e| StoreError::Damaged(source.to_string(), e))?;
        Ok(m)
    }

    /// An in-memory DuckDB connection with one view per table over the committed files.
    pub fn query(&self) -> Result<Catalog> {
        Catalog::in_memory(self)
    }
}

/// Up to three of `candidates` close to `name`: names that start with it (or that it starts
/// with), or within two edits of it (case-insensitive), closest first.
pub fn similar_names<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut near: Vec<(usize, String)> = candidates
        .into_iter()
        .filter_map(|n| {
            let l = n.to_lowercase();
            let d = edit_distance(&lower, &l);
            let prefix = !lower.is_empty() && (l.starts_with(&lower) || lower.starts_with(&l));
            (prefix || d <= 2).then(|| (if prefix { 0 } else { d }, n.to_string()))
        })
        .collect();
    near.sort();
    near.dedup();
    near.into_iter().take(3).map(|(_, n)| n).collect()
}

/// `"; did you mean a, b?"` for similar names, or nothing.
pub fn did_you_mean(names: &[String]) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", names.join(", "))
    }
}

/// Levenshtein distance between two strings (by characters).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Checks a source name: it becomes a directory name (`source=<name>`, read back by Hive-style
/// readers) and a SQL string. Reserved: names containing `.tmp-` (the store's temporary files)
/// and Hive's `__HIVE_DEFAULT_PARTITION__` (read back as NULL), in any case.
pub fn validate_source_name(name: &str) -> Result<()> {
    let lower = name.to_ascii_lowercase();
    if lower.contains(".tmp-") {
        return Err(StoreError::ReservedSourceName(
            name.to_string(),
            "names containing \".tmp-\" are reserved for the store's temporary files",
        ));
    }
    if lower.contains("__hive_default_partition__") {
        return Err(StoreError::ReservedSourceName(
            name.to_string(),
            "Hive-style readers (DuckDB, polars, pyarrow) read __HIVE_DEFAULT_PARTITION__ back as NULL",
        ));
    }
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
