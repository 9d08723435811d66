//! Writing a source atomically: stage, fsync, journal, move into place, then commit by
//! renaming the manifest (the journal and the recovery that reads it are in `journal.rs`).

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use hazardserve_ingest::{batch, workload::Workload, Trace};
use serde::{Deserialize, Serialize};

use super::catalog::rebuild_catalog_or_warn;
use super::dir::Store;
use super::error::{io_err, Result, StoreError};
use super::files::{
    create_dir_durable, fault_point, new_txid, parent_dir, sha256_file, sync_dir, write_atomic,
    write_parquet_batches,
};
use super::journal::{owned_parts, remove_files, remove_staging, write_journal, Journal};
use super::lock::WriteLock;
use super::manifest::{owned_path, Manifest, TableFile};
use super::names::validate_source_name;
use super::tables::sources_schema;

/// Provenance of one input file, kept in the `sources` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRecord {
    /// Path as read.
    pub path: String,
    /// sha256 of the file on disk.
    pub sha256: String,
    /// Size on disk in bytes.
    pub bytes: u64,
}

/// Everything the `sources` table records about one ingest besides the trace itself.
#[derive(Debug, Clone)]
pub struct SourceRecord {
    /// Source name.
    pub source: String,
    /// Adapter (format) name.
    pub adapter: String,
    /// The input files.
    pub files: Vec<InputRecord>,
    /// The options used, as JSON (polarity, threshold, gap, ...).
    pub options: serde_json::Value,
    /// Key of the content: equal keys mean re-ingesting changes nothing.
    pub content_key: String,
}

/// What an ingest did to the store.
#[derive(Debug, Clone, PartialEq)]
pub enum IngestOutcome {
    /// The source was written (`replaced` = an older version was replaced).
    Committed {
        /// Whether a previous version of the source was replaced.
        replaced: bool,
    },
    /// The source already holds exactly this content; nothing was written.
    Unchanged,
}

/// The counts and span that the `sources` row records, whatever the kind of source.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceSummary {
    /// `spot-obtainability`, `spot-lifetime`, `volunteer`, `mobile`, `hpc` or `llm-requests`.
    pub kind: String,
    /// `utc` or `relative`.
    pub time_base: String,
    /// Number of nodes.
    pub nodes: i64,
    /// Number of up-sessions.
    pub sessions: i64,
    /// Sessions ended by an event.
    pub events: i64,
    /// Right-censored sessions.
    pub censored: i64,
    /// Left-truncated sessions.
    pub left_truncated: i64,
    /// Number of LLM requests (workload sources).
    pub requests: i64,
    /// Rejected records.
    pub rejects: i64,
    /// Start of observation (seconds, see `time_base`).
    pub observation_start: f64,
    /// End of observation.
    pub observation_end: f64,
    /// Notes made while parsing.
    pub notes: Vec<String>,
}

impl SourceSummary {
    /// The summary of an availability trace.
    pub fn of_trace(trace: &Trace) -> SourceSummary {
        let count = |f: &dyn Fn(&hazardserve_ingest::Session) -> bool| {
            trace.sessions.iter().filter(|s| f(s)).count() as i64
        };
        SourceSummary {
            kind: trace.kind.as_str().to_string(),
            time_base: trace.time_base.as_str().to_string(),
            nodes: trace.nodes.len() as i64,
            sessions: trace.sessions.len() as i64,
            events: count(&|x| x.event),
            censored: count(&|x| !x.event),
            left_truncated: count(&|x| x.left_truncated),
            requests: 0,
            rejects: trace.rejects.len() as i64,
            observation_start: trace.observation_start(),
            observation_end: trace.observation_end(),
            notes: trace.notes.clone(),
        }
    }

    /// The summary of an LLM request workload.
    pub fn of_workload(w: &Workload) -> SourceSummary {
        let start = w.start_utc.unwrap_or(0.0);
        let last = w.requests.last().map_or(0.0, |r| r.arrival_s);
        SourceSummary {
            kind: "llm-requests".into(),
            time_base: if w.start_utc.is_some() {
                "utc"
            } else {
                "relative"
            }
            .into(),
            requests: w.requests.len() as i64,
            rejects: w.rejects.len() as i64,
            observation_start: start,
            observation_end: start + last,
            notes: w.notes.clone(),
            ..SourceSummary::default()
        }
    }
}

fn sources_batch(rec: &SourceRecord, sum: &SourceSummary) -> Result<RecordBatch> {
    let s = |v: String| -> ArrayRef { Arc::new(StringArray::from(vec![v])) };
    let i = |v: i64| -> ArrayRef { Arc::new(Int64Array::from(vec![v])) };
    let f = |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v])) };
    let now = chrono::Utc::now().timestamp_micros();
    let cols: Vec<ArrayRef> = vec![
        s(rec.adapter.clone()),
        s(sum.kind.clone()),
        s(sum.time_base.clone()),
        i(sum.nodes),
        i(sum.sessions),
        i(sum.events),
        i(sum.censored),
        i(sum.left_truncated),
        i(sum.requests),
        i(sum.rejects),
        f(sum.observation_start),
        f(sum.observation_end),
        s(json(&rec.files, "the input files")?),
        s(rec.options.to_string()),
        s(json(&sum.notes, "the notes")?),
        s(rec.content_key.clone()),
        Arc::new(Int32Array::from(vec![batch::SCHEMA_VERSION as i32])),
        Arc::new(TimestampMicrosecondArray::from(vec![now]).with_timezone("UTC")),
    ];
    RecordBatch::try_new(sources_schema(), cols).map_err(|source| StoreError::Arrow {
        table: "sources".into(),
        source,
    })
}

fn json<T: Serialize + ?Sized>(v: &T, what: &str) -> Result<String> {
    serde_json::to_string(v).map_err(|source| StoreError::Json {
        what: what.into(),
        source,
    })
}

/// One table of a source to be committed.
pub struct StagedTable<'a> {
    /// Table name.
    pub table: &'a str,
    /// The schema of its rows.
    pub schema: SchemaRef,
    /// Its rows, as batches built one at a time while the file is written (a large table is
    /// never held whole beside the data it is built from).
    pub batches: Box<dyn Iterator<Item = Result<RecordBatch>> + 'a>,
}

impl<'a> StagedTable<'a> {
    /// A table of one batch.
    pub fn one(table: &'a str, batch: RecordBatch) -> Self {
        StagedTable {
            table,
            schema: batch.schema(),
            batches: Box::new(std::iter::once(Ok(batch))),
        }
    }
}

/// Commits an availability trace as source `rec.source`.
pub fn commit_trace(
    store: &Store,
    lock: &WriteLock,
    rec: &SourceRecord,
    trace: &Trace,
    replace: bool,
) -> Result<IngestOutcome> {
    let sessions = batch::sessions_batches(trace, batch::SESSION_BATCH_ROWS)
        .map(|b| b.map_err(StoreError::from));
    let mut tables = vec![
        StagedTable::one(
            "sources",
            sources_batch(rec, &SourceSummary::of_trace(trace))?,
        ),
        StagedTable::one("nodes", batch::nodes_batch(trace)?),
        StagedTable {
            table: "sessions",
            schema: batch::sessions_schema(),
            batches: Box::new(sessions),
        },
        StagedTable::one("rejects", batch::rejects_batch(&trace.rejects)?),
    ];
    // Count series keep their raw samples, so any threshold k is a query.
    if !trace.observations.is_empty() {
        tables.push(StagedTable::one(
            "observations",
            batch::observations_batch(trace)?,
        ));
    }
    commit_tables(store, lock, &rec.source, &rec.content_key, tables, replace)
}

/// Commits an LLM request workload as source `rec.source` (tables `sources`, `requests`, `rejects`).
pub fn commit_workload(
    store: &Store,
    lock: &WriteLock,
    rec: &SourceRecord,
    workload: &Workload,
    replace: bool,
) -> Result<IngestOutcome> {
    let tables = vec![
        StagedTable::one(
            "sources",
            sources_batch(rec, &SourceSummary::of_workload(workload))?,
        ),
        StagedTable::one(
            "requests",
            hazardserve_ingest::workload::requests_batch(workload)?,
        ),
        StagedTable::one("rejects", batch::rejects_batch(&workload.rejects)?),
    ];
    commit_tables(store, lock, &rec.source, &rec.content_key, tables, replace)
}

/// Commits a set of tables as one source, atomically (see the module docs of `store`):
/// stage and fsync every file, journal what will be created and made obsolete, move the files
/// into their partition directories, rename the manifest into place (the commit point), then
/// delete the obsolete files and the staging directory. A replaced source whose manifest is
/// damaged is replaced whole (its own part files are the obsolete ones).
pub fn commit_tables(
    store: &Store,
    _lock: &WriteLock,
    source: &str,
    content_key: &str,
    tables: Vec<StagedTable>,
    replace: bool,
) -> Result<IngestOutcome> {
    validate_source_name(source)?;
    let previous = match store.manifest(source) {
        Ok(m) => Some(Ok(m)),
        Err(StoreError::NoSuchSource(..)) => None,
        Err(StoreError::Damaged(_, why)) => Some(Err(why)),
        Err(e) => return Err(e),
    };
    let mut obsoletes = Vec::new();
    match &previous {
        None => {}
        Some(Ok(prev)) => {
            // Sources, replay runs and sweeps share the name space of manifests: never let
            // one kind replace another.
            let kind =
                |has: &dyn Fn(&str) -> bool| ["runs", "sweep_cells"].into_iter().find(|t| has(t));
            let prev_kind = kind(&|t| prev.files.iter().any(|f| f.table == t));
            let new_kind = kind(&|t| tables.iter().any(|x| x.table == t));
            if prev_kind != new_kind {
                return Err(StoreError::NameTaken(source.to_string()));
            }
            if prev.content_key == content_key
                && prev.schema_version == batch::SCHEMA_VERSION
                && files_intact(store, prev)?
            {
                return Ok(IngestOutcome::Unchanged);
            }
            if !replace {
                return Err(StoreError::Exists(source.to_string()));
            }
            obsoletes = prev.files.iter().map(|f| f.path.clone()).collect();
        }
        Some(Err(why)) => {
            if !replace {
                return Err(StoreError::Damaged(source.to_string(), why.clone()));
            }
            obsoletes = owned_parts(store, source);
        }
    }
    let root = store.root();
    let txid = new_txid();
    let staging = root.join(".staging").join(&txid);
    fault_point("create the staging directory");
    create_dir_durable(root, &staging)?;

    let mut files = Vec::new();
    for t in tables {
        let staged = staging.join(format!("{}.parquet", t.table));
        let (sha256, rows) = write_parquet_batches(&staged, t.schema, t.batches)?;
        let bytes = std::fs::metadata(&staged).map_err(io_err(&staged))?.len();
        files.push((
            staged,
            TableFile {
                table: t.table.to_string(),
                path: owned_path(t.table, source, &txid),
                sha256,
                rows,
                bytes: Some(bytes),
            },
        ));
    }
    let journal = Journal {
        source: source.to_string(),
        txid: txid.clone(),
        creates: files.iter().map(|(_, f)| f.path.clone()).collect(),
        obsoletes: obsoletes.clone(),
    };
    write_journal(&staging, &journal)?;
    fault_point("pause-before-commit");
    for (staged, f) in &files {
        let dest = root.join(&f.path);
        let dir = parent_dir(&dest).to_path_buf();
        fault_point("create a partition directory");
        create_dir_durable(root, &dir)?;
        fault_point("move a file into its partition");
        std::fs::rename(staged, &dest).map_err(io_err(&dest))?;
        fault_point("fsync a partition directory");
        sync_dir(&dir)?;
    }
    let manifest = Manifest {
        source: source.to_string(),
        txid: txid.clone(),
        schema_version: batch::SCHEMA_VERSION,
        content_key: content_key.to_string(),
        files: files.into_iter().map(|(_, f)| f).collect(),
    };
    let body = serde_json::to_vec_pretty(&manifest).map_err(|e| StoreError::Json {
        what: format!("the manifest of {source}"),
        source: e,
    })?;
    // The commit point.
    write_atomic(
        &root.join("manifests").join(format!("{source}.json")),
        &body,
    )?;
    fault_point("committed");
    remove_files(root, &obsoletes)?;
    remove_staging(root, &staging)?;
    rebuild_catalog_or_warn(store, &format!("{source} is stored"));
    Ok(IngestOutcome::Committed {
        replaced: previous.is_some(),
    })
}

/// Whether every file of `m` is present, of its recorded size, a complete Parquet file and of
/// its recorded sha256 (so "unchanged" is never said of a source whose files are gone).
fn files_intact(store: &Store, m: &Manifest) -> Result<bool> {
    for f in &m.files {
        if store.file_problem(f).is_some() {
            return Ok(false);
        }
        if sha256_file(&store.root().join(&f.path))? != f.sha256 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Removes a source or run: journals its files, deletes its manifest (the commit point), then
/// its files, and rebuilds the catalog. Works on a damaged source too: its own part files
/// (`<table>/source=<name>/part-*.parquet`) are removed.
pub fn remove_source(store: &Store, _lock: &WriteLock, source: &str) -> Result<()> {
    let files = match store.manifest(source) {
        Ok(m) => m.files.into_iter().map(|f| f.path).collect(),
        Err(StoreError::Damaged(..)) => owned_parts(store, source),
        Err(e) => return Err(e),
    };
    let root = store.root();
    let txid = new_txid();
    let staging = root.join(".staging").join(&txid);
    fault_point("create the staging directory");
    create_dir_durable(root, &staging)?;
    write_journal(
        &staging,
        &Journal {
            source: source.to_string(),
            txid,
            creates: Vec::new(),
            obsoletes: files.clone(),
        },
    )?;
    let path = root.join("manifests").join(format!("{source}.json"));
    fault_point("delete a manifest");
    std::fs::remove_file(&path).map_err(io_err(&path))?;
    sync_dir(&root.join("manifests"))?;
    remove_files(root, &files)?;
    remove_staging(root, &staging)?;
    rebuild_catalog_or_warn(store, &format!("{source} is removed"));
    Ok(())
}
