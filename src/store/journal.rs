//! The write journal: what a write creates and makes obsolete, recorded before any table
//! directory is touched, and the recovery that reads it after a writer was killed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::catalog::rebuild_catalog_or_warn;
use super::dir::Store;
use super::error::{io_err, Result, StoreError};
use super::files::{fault_point, is_temp_of, parent_dir, sync_dir, write_atomic};
use super::tables::TABLES;

/// The journal of one write: every file it creates in the table directories and every file it
/// makes obsolete, written (atomically) into its staging directory before any table directory
/// is touched. Recovery deletes only files named here that no manifest names, so the store never
/// deletes a file it did not write.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Journal {
    /// The source (or run) written.
    pub(super) source: String,
    /// The transaction id (also the part files' suffix).
    pub(super) txid: String,
    /// Files (relative to the root) this write moves into the table directories.
    pub(super) creates: Vec<String>,
    /// Files (relative to the root) deleted once the commit point is passed.
    pub(super) obsoletes: Vec<String>,
}

impl Journal {
    /// Whether `rel` is a part file of this journal's source, by the store's own naming:
    /// `<table>/source=<source>/part-<txid>.parquet` with a known table.
    fn owns(&self, rel: &str) -> bool {
        let mut parts = rel.split('/');
        let (Some(table), Some(dir), Some(file), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return false;
        };
        let txid = file
            .strip_prefix("part-")
            .and_then(|f| f.strip_suffix(".parquet"));
        TABLES.iter().any(|t| t.name == table)
            && dir.strip_prefix("source=") == Some(self.source.as_str())
            && txid.is_some_and(|t| {
                !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    }
}

pub(super) fn journal_path(staging: &Path) -> PathBuf {
    staging.join("journal.json")
}

pub(super) fn write_journal(staging: &Path, journal: &Journal) -> Result<()> {
    let body = serde_json::to_vec_pretty(journal).map_err(|source| StoreError::Json {
        what: "the write journal".into(),
        source,
    })?;
    write_atomic(&journal_path(staging), &body)
}

/// The part files in the store's own naming under `<table>/source=<source>/`, for a source
/// whose manifest is damaged (so its file list cannot be trusted).
pub(super) fn owned_parts(store: &Store, source: &str) -> Vec<String> {
    let probe = Journal {
        source: source.to_string(),
        txid: String::new(),
        creates: Vec::new(),
        obsoletes: Vec::new(),
    };
    let mut out = Vec::new();
    for t in TABLES {
        let dir = store.root().join(t.name).join(format!("source={source}"));
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let rel = format!(
                "{}/source={source}/{}",
                t.name,
                e.file_name().to_string_lossy()
            );
            if probe.owns(&rel) && e.path().is_file() {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

/// Deletes the files `rels` (relative to the root) and then their directories when empty,
/// making the removals durable.
pub(super) fn remove_files(root: &Path, rels: &[String]) -> Result<()> {
    let mut dirs = std::collections::BTreeSet::new();
    for rel in rels {
        let path = root.join(rel);
        fault_point("delete an obsolete file");
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(&path)(e)),
        }
        dirs.insert(parent_dir(&path).to_path_buf());
    }
    for d in dirs {
        if !d.is_dir() {
            continue;
        }
        sync_dir(&d)?;
        if std::fs::remove_dir(&d).is_ok() {
            // only succeeds when empty
            sync_dir(parent_dir(&d))?;
        }
    }
    Ok(())
}

/// Removes a finished write's staging directory, and `.staging` itself once empty.
pub(super) fn remove_staging(root: &Path, staging: &Path) -> Result<()> {
    fault_point("remove the staging directory");
    std::fs::remove_dir_all(staging).map_err(io_err(staging))?;
    let _ = std::fs::remove_dir(root.join(".staging"));
    sync_dir(root)
}

/// Finishes or undoes what a killed writer left, touching only what the store wrote: its own
/// temporary files (`STORE.json.tmp-N`, `catalog.duckdb.tmp-N[.wal]`,
/// `manifests/<source>.json.tmp-N`) and, for each staging directory, the files its journal
/// names that no manifest names (a write killed before its commit point leaves its new files
/// unnamed; one killed after it leaves its obsolete files unnamed). Files it did not write,
/// wherever they are, are never touched. Rebuilds the catalog when anything was removed or it is
/// missing (a failure there is a warning, not an error: the next write retries it).
pub(super) fn recover(store: &Store) -> Result<()> {
    let root = store.root();
    let mut dirty = false;
    let remove_temps = |dir: &Path, of: &dyn Fn(&str) -> bool| {
        if let Ok(entries) = std::fs::read_dir(dir) {
            for e in entries.flatten() {
                if of(&e.file_name().to_string_lossy()) && e.path().is_file() {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    };
    remove_temps(root, &|n| {
        is_temp_of(n, "STORE.json") || is_temp_of(n, "catalog.duckdb")
    });
    remove_temps(&root.join("manifests"), &|n| {
        n.split_once(".json.tmp-")
            .is_some_and(|(stem, _)| is_temp_of(n, &format!("{stem}.json")))
    });
    let staging_root = root.join(".staging");
    if let Ok(entries) = std::fs::read_dir(&staging_root) {
        let scan = store.scan()?;
        let live: std::collections::HashSet<&str> = scan
            .manifests
            .iter()
            .flat_map(|m| m.files.iter().map(|f| f.path.as_str()))
            .collect();
        for e in entries.flatten() {
            let dir = e.path();
            if !dir.is_dir() {
                continue;
            }
            let journal: Option<Journal> = std::fs::read(journal_path(&dir))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok());
            if let Some(j) = journal {
                // A damaged manifest of the journal's source may name any of its files: keep
                // them for `store verify` to report and `store remove` to clear.
                let guarded = scan.damaged.iter().any(|d| d.source == j.source);
                let unnamed: Vec<String> = j
                    .creates
                    .iter()
                    .chain(&j.obsoletes)
                    .filter(|rel| j.owns(rel) && !live.contains(rel.as_str()) && !guarded)
                    .cloned()
                    .collect();
                remove_files(root, &unnamed)?;
            }
            // The staging directory holds only what this store's writer put there.
            std::fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
            dirty = true;
        }
        let _ = std::fs::remove_dir(&staging_root);
        sync_dir(root)?;
    }
    if dirty || !store.catalog_path().exists() {
        rebuild_catalog_or_warn(store, "the store is recovered");
    }
    Ok(())
}
