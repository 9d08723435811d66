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
mod dir;
mod error;
pub(crate) mod files;
mod journal;
mod lock;
mod manifest;
mod names;
pub mod tables;
mod verify;

pub use catalog::{is_read_only_statement, Catalog};
pub use commit::{
    commit_tables, commit_trace, commit_workload, remove_source, IngestOutcome, InputRecord,
    SourceRecord, SourceSummary, StagedTable,
};
pub use dir::{LeftOut, Store, STORE_VERSION};
pub(crate) use error::io_err;
pub use error::{DuckError, Result, StoreError};
pub use files::{replace_file, sha256_file, write_atomic, write_parquet};
pub use lock::WriteLock;
pub use manifest::{DamagedManifest, Manifest, Scan, TableFile};
pub use names::validate_source_name;
pub use tables::{TableDef, TABLES};
pub use verify::{verify, VerifyReport};
