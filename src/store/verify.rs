//! `hazardserve store verify`: re-checks every committed file against its manifest.

use std::fs::File;

use parquet::file::reader::{FileReader, SerializedFileReader};

use super::dir::Store;
use super::error::Result;
use super::files::sha256_file;
use super::tables::{added_in, TABLES};

/// What `verify` found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct VerifyReport {
    /// Sources checked.
    pub sources: usize,
    /// Files checked.
    pub files: usize,
    /// Rows checked.
    pub rows: u64,
    /// Every problem found, one sentence each (empty = the store is sound).
    pub problems: Vec<String>,
    /// Harmless findings worth telling (e.g. leftovers of an interrupted writer).
    pub notes: Vec<String>,
}

/// Checks hashes, row counts and schemas of every committed file.
pub fn verify(store: &Store) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let scan = store.scan()?;
    for d in &scan.damaged {
        report.sources += 1;
        report.problems.push(format!(
            "{}: {} (source {} is left out of every view; `hazardserve store remove --source {}` removes it)",
            d.path.display(),
            d.problem,
            d.source,
            d.source
        ));
    }
    for m in scan.manifests {
        report.sources += 1;
        for f in &m.files {
            report.files += 1;
            let path = store.root().join(&f.path);
            if !path.is_file() {
                report.problems.push(format!(
                    "{}: missing (source {}, table {})",
                    f.path, m.source, f.table
                ));
                continue;
            }
            if let Some(want) = f.bytes {
                let got = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                if got != want {
                    report.problems.push(format!(
                        "{}: {got} bytes, the manifest says {want} (source {})",
                        f.path, m.source
                    ));
                }
            }
            let sha = sha256_file(&path)?;
            if sha != f.sha256 {
                report.problems.push(format!(
                    "{}: sha256 {} differs from the manifest's {}",
                    f.path, sha, f.sha256
                ));
            }
            let reader = File::open(&path)
                .map_err(|e| e.to_string())
                .and_then(|file| SerializedFileReader::new(file).map_err(|e| e.to_string()));
            let reader = match reader {
                Ok(r) => r,
                Err(e) => {
                    report
                        .problems
                        .push(format!("{}: unreadable Parquet: {e}", f.path));
                    continue;
                }
            };
            let rows = reader.metadata().file_metadata().num_rows() as u64;
            report.rows += rows;
            if rows != f.rows {
                report.problems.push(format!(
                    "{}: {} rows, the manifest says {}",
                    f.path, rows, f.rows
                ));
            }
            if let Some(def) = TABLES.iter().find(|t| t.name == f.table) {
                // The canonical schema as the source's version wrote it.
                let want = (def.schema)();
                let want = arrow::datatypes::Schema::new(
                    want.fields()
                        .iter()
                        .filter(|c| added_in(def.name, c.name()) <= m.schema_version)
                        .cloned()
                        .collect::<Vec<_>>(),
                );
                let got = parquet::arrow::parquet_to_arrow_schema(
                    reader.metadata().file_metadata().schema_descr(),
                    reader.metadata().file_metadata().key_value_metadata(),
                );
                match got {
                    Ok(got) => {
                        let names = |s: &arrow::datatypes::Schema| -> Vec<(String, arrow::datatypes::DataType)> {
                            s.fields()
                                .iter()
                                .map(|f| (f.name().clone(), f.data_type().clone()))
                                .collect()
                        };
                        if names(&got) != names(&want) {
                            report.problems.push(format!(
                                "{}: schema differs from the canonical {} schema",
                                f.path, f.table
                            ));
                        }
                    }
                    Err(e) => report.problems.push(format!("{}: bad schema: {e}", f.path)),
                }
            }
        }
    }
    if store.root().join(".staging").exists() {
        report.notes.push(
            ".staging: left by an interrupted writer (harmless; the next writer removes it)".into(),
        );
    }
    Ok(report)
}
