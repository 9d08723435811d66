//! The commit record of one source: which Parquet file holds each of its tables.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::{io_err, Result, StoreError};
use super::tables::TABLES;

/// One table's file of a source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableFile {
    /// Table name (`sources`, `nodes`, `sessions`, `rejects`, ...).
    pub table: String,
    /// Path relative to the store root.
    pub path: String,
    /// sha256 of the file (hex).
    pub sha256: String,
    /// Number of rows.
    pub rows: u64,
    /// Size in bytes (absent in manifests written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}

/// The commit record of one source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Source name.
    pub source: String,
    /// Transaction id that wrote it (also part of the file names).
    pub txid: String,
    /// Canonical schema version of the files.
    pub schema_version: u32,
    /// Key of the ingested content (adapter, options and input content hashes): equal keys mean
    /// re-ingesting would change nothing.
    pub content_key: String,
    /// The files, one per table.
    pub files: Vec<TableFile>,
}

impl Manifest {
    /// Reads a manifest file.
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path).map_err(io_err(path))?;
        serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    /// The file of `table`, if this source has one.
    pub fn file(&self, table: &str) -> Option<&TableFile> {
        self.files.iter().find(|f| f.table == table)
    }

    /// Checks that the manifest names only files the store writes for this source:
    /// `<table>/source=<source>/part-<txid>.parquet` with a known table (never an absolute
    /// path or one with `..`, which `root.join` would follow out of the store).
    pub fn check_paths(&self) -> std::result::Result<(), String> {
        for f in &self.files {
            let want = owned_path(&f.table, &self.source, &self.txid);
            if f.path != want {
                return Err(format!(
                    "table {} names {:?}, not the store's own {:?}",
                    f.table, f.path, want
                ));
            }
            if !TABLES.iter().any(|t| t.name == f.table) {
                return Err(format!("unknown table {:?}", f.table));
            }
        }
        Ok(())
    }
}

/// The path (relative to the store root) of the file of `table` that transaction `txid`
/// writes for `source`.
pub(crate) fn owned_path(table: &str, source: &str, txid: &str) -> String {
    format!("{table}/source={source}/part-{txid}.parquet")
}

/// A manifest file that cannot be used: unreadable, not a manifest, or naming files the store
/// does not own. Its source is left out of every view until it is removed or replaced.
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedManifest {
    /// The file.
    pub path: PathBuf,
    /// The source name its file name gives.
    pub source: String,
    /// What is wrong.
    pub problem: String,
}

/// The manifests of a store: the sound ones, sorted by source, and the damaged ones.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Sound manifests.
    pub manifests: Vec<Manifest>,
    /// Damaged manifest files.
    pub damaged: Vec<DamagedManifest>,
}

/// Reads every `*.json` in `dir`. One damaged file does not hide the others: it is reported in
/// [`Scan::damaged`].
pub(crate) fn scan(dir: &Path) -> Result<Scan> {
    let mut out = Scan::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io_err(dir)(e)),
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    for p in paths {
        let source = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let damaged = |problem: String| DamagedManifest {
            path: p.clone(),
            source: source.clone(),
            problem,
        };
        match Manifest::read(&p) {
            Ok(m) if m.source != source => out.damaged.push(damaged(format!(
                "names source {:?}, but its file name says {source:?}",
                m.source
            ))),
            Ok(m) => match m.check_paths() {
                Ok(()) => out.manifests.push(m),
                Err(e) => out.damaged.push(damaged(e)),
            },
            Err(StoreError::Corrupt { message, .. }) => out
                .damaged
                .push(damaged(format!("not a manifest: {message}"))),
            Err(StoreError::Io { source: e, .. }) => {
                out.damaged.push(damaged(format!("unreadable: {e}")))
            }
            Err(e) => return Err(e),
        }
    }
    out.manifests.sort_by(|a, b| a.source.cmp(&b.source));
    Ok(out)
}
