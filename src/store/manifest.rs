//! The commit record of one source: which Parquet file holds each of its tables.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{io_err, Result, StoreError};

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
}

/// Reads every `*.json` in `dir`, sorted by source.
pub fn read_all(dir: &Path) -> Result<Vec<Manifest>> {
    let mut out = Vec::new();
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
        out.push(Manifest::read(&p)?);
    }
    out.sort_by(|a, b| a.source.cmp(&b.source));
    Ok(out)
}
