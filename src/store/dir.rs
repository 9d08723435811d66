//! The store directory: opening or creating it, its manifests, and what is readable in it.

use std::path::{Path, PathBuf};

use super::error::{io_err, Result, StoreError};
use super::files::{has_parquet_footer, write_atomic};
use super::manifest::{self, Manifest, Scan, TableFile};
use crate::diag::similar_names;

/// Version of the store layout written in `STORE.json`.
pub const STORE_VERSION: u32 = 1;

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
            write_atomic(&marker, body.to_string().as_bytes())?;
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
        if !has_parquet_footer(&path) {
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
}
