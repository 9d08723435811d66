//! Writing a source atomically: stage, fsync, move into place, then commit by renaming the
//! manifest; and recovering from a writer that was killed half-way.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;
use hazardserve_ingest::{batch, workload::Workload, Trace};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{
    catalog::Catalog, io_err, validate_source_name, Manifest, Result, Store, StoreError, TableFile,
    WriteLock,
};

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

/// Schema of the `sources` table (the `source` column comes from the partition path).
pub fn sources_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("adapter", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("time_base", DataType::Utf8, false),
        Field::new("nodes", DataType::Int64, false),
        Field::new("sessions", DataType::Int64, false),
        Field::new("events", DataType::Int64, false),
        Field::new("censored", DataType::Int64, false),
        Field::new("left_truncated", DataType::Int64, false),
        Field::new("requests", DataType::Int64, false),
        Field::new("rejects", DataType::Int64, false),
        Field::new("observation_start", DataType::Float64, false),
        Field::new("observation_end", DataType::Float64, false),
        Field::new("files", DataType::Utf8, false),
        Field::new("options", DataType::Utf8, false),
        Field::new("notes", DataType::Utf8, false),
        Field::new("content_key", DataType::Utf8, false),
        Field::new("schema_version", DataType::Int32, false),
        Field::new(
            "ingested_at",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
    ]))
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

/// Writes `batch` to `path` as zstd Parquet, fsyncs it, and returns its sha256.
pub fn write_parquet(path: &Path, batch: &RecordBatch) -> Result<String> {
    let perr = |e: parquet::errors::ParquetError| StoreError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let file = File::create(path).map_err(io_err(path))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(perr)?;
    w.write(batch).map_err(perr)?;
    let file = w.into_inner().map_err(perr)?;
    file.sync_all().map_err(io_err(path))?;
    sha256_file(path)
}

/// sha256 of a file (hex).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).map_err(io_err(path))?;
    Ok(hazardserve_ingest::input::hex(&h.finalize()))
}

/// Writes `bytes` to `path` atomically (see [`replace_file`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    replace_file(path, |tmp| std::fs::write(tmp, bytes).map_err(io_err(path)))
}

/// Replaces `path` atomically, the one temp-file-then-rename of the crate: `fill` writes the new
/// content to a temporary path beside `path` (`<name>.tmp-<pid>`, which [`recover`] removes if
/// the process dies); the file is then fsynced, renamed over `path`, and the directory fsynced.
/// On any error the temporary file is removed and `path` is left as it was. Errors name `path`
/// (what the caller asked for), not the temporary file.
pub fn replace_file<E: From<StoreError>>(
    path: &Path,
    fill: impl FnOnce(&Path) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let tmp = temp_path(path);
    let _ = std::fs::remove_file(&tmp);
    let done = fill(&tmp).and_then(|()| {
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(path))?;
        std::fs::rename(&tmp, path).map_err(io_err(path))?;
        Ok(sync_dir(parent_dir(path))?)
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// The temporary file of [`replace_file`] for `path`.
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// Whether a file name is a [`replace_file`] temporary (`*.tmp-<digits>`).
fn is_temp_name(name: &str) -> bool {
    name.rsplit_once(".tmp-")
        .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes the entries of `dir` (renames into it, removals) durable.
#[cfg(unix)]
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

/// Directories cannot be opened for fsync here; renames are durable once the files are.
#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> Result<()> {
    Ok(())
}

fn new_txid() -> String {
    let now = chrono::Utc::now();
    format!("{}-{}", now.format("%Y%m%dT%H%M%S%6f"), std::process::id())
}

/// Test hook: `HAZARDSERVE_FAULT=pause-before-commit` makes a writer stop just before its commit
/// point, so a test can kill it there. Only built with the `fault-injection` feature (enabled by
/// the integration tests); otherwise a no-op that never reads the environment.
#[cfg(feature = "fault-injection")]
fn fault_point(name: &str) {
    if std::env::var("HAZARDSERVE_FAULT").is_ok_and(|v| v == name) {
        eprintln!("fault point reached: {name}");
        std::thread::sleep(std::time::Duration::from_secs(120));
    }
}

/// Without the `fault-injection` feature there are no fault points.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
fn fault_point(_name: &str) {}

/// One table of a source to be committed.
pub struct StagedTable<'a> {
    /// Table name.
    pub table: &'a str,
    /// Its rows.
    pub batch: RecordBatch,
}

/// Commits an availability trace as source `rec.source`.
pub fn commit_trace(
    store: &Store,
    lock: &WriteLock,
    rec: &SourceRecord,
    trace: &Trace,
    replace: bool,
) -> Result<IngestOutcome> {
    let tables = vec![
        StagedTable {
            table: "sources",
            batch: sources_batch(rec, &SourceSummary::of_trace(trace))?,
        },
        StagedTable {
            table: "nodes",
            batch: batch::nodes_batch(trace)?,
        },
        StagedTable {
            table: "sessions",
            batch: batch::sessions_batch(trace)?,
        },
        StagedTable {
            table: "rejects",
            batch: batch::rejects_batch(&trace.rejects)?,
        },
    ];
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
        StagedTable {
            table: "sources",
            batch: sources_batch(rec, &SourceSummary::of_workload(workload))?,
        },
        StagedTable {
            table: "requests",
            batch: hazardserve_ingest::workload::requests_batch(workload)?,
        },
        StagedTable {
            table: "rejects",
            batch: batch::rejects_batch(&workload.rejects)?,
        },
    ];
    commit_tables(store, lock, &rec.source, &rec.content_key, tables, replace)
}

/// Commits a set of tables as one source, atomically (see the module docs of `store`).
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
        Ok(m) => Some(m),
        Err(StoreError::NoSuchSource(_)) => None,
        Err(e) => return Err(e),
    };
    if let Some(prev) = &previous {
        // Sources and replay runs share the name space of manifests: never let one replace
        // the other.
        let prev_is_run = prev.files.iter().any(|f| f.table == "runs");
        let new_is_run = tables.iter().any(|t| t.table == "runs");
        if prev_is_run != new_is_run {
            return Err(StoreError::NameTaken(source.to_string()));
        }
        if prev.content_key == content_key && prev.schema_version == batch::SCHEMA_VERSION {
            return Ok(IngestOutcome::Unchanged);
        }
        if !replace {
            return Err(StoreError::Exists(source.to_string()));
        }
    }
    let root = store.root();
    let txid = new_txid();
    let staging = root.join(".staging").join(&txid);
    std::fs::create_dir_all(&staging).map_err(io_err(&staging))?;

    let mut files = Vec::new();
    for t in &tables {
        let staged = staging.join(format!("{}.parquet", t.table));
        let sha256 = write_parquet(&staged, &t.batch)?;
        let rel = format!("{}/source={}/part-{}.parquet", t.table, source, txid);
        files.push((
            staged,
            rel,
            sha256,
            t.batch.num_rows() as u64,
            t.table.to_string(),
        ));
    }
    fault_point("pause-before-commit");
    for (staged, rel, ..) in &files {
        let dest = root.join(rel);
        let dir = dest.parent().unwrap_or(root);
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        std::fs::rename(staged, &dest).map_err(io_err(&dest))?;
        sync_dir(dir)?;
    }
    let manifest = Manifest {
        source: source.to_string(),
        txid: txid.clone(),
        schema_version: batch::SCHEMA_VERSION,
        content_key: content_key.to_string(),
        files: files
            .iter()
            .map(|(_, rel, sha, rows, table)| TableFile {
                table: table.clone(),
                path: rel.clone(),
                sha256: sha.clone(),
                rows: *rows,
            })
            .collect(),
    };
    let body = serde_json::to_vec_pretty(&manifest).map_err(|source| StoreError::Json {
        what: format!(
            "the manifest of {source_name}",
            source_name = manifest.source
        ),
        source,
    })?;
    // The commit point.
    write_atomic(
        &root.join("manifests").join(format!("{source}.json")),
        &body,
    )?;
    if let Some(prev) = &previous {
        for f in &prev.files {
            let _ = std::fs::remove_file(root.join(&f.path));
        }
    }
    let _ = std::fs::remove_dir_all(&staging);
    // Committed: the Parquet files are the truth; a stale catalog file is only a convenience.
    if let Err(e) = Catalog::rebuild_file(store) {
        eprintln!(
            "warning: {source} is stored, but catalog.duckdb could not be rebuilt ({}); run `hazardserve store rebuild`",
            crate::error_chain(&e)
        );
    }
    Ok(IngestOutcome::Committed {
        replaced: previous.is_some(),
    })
}

/// Removes a source (its manifest first, then its files) and rebuilds the catalog.
pub fn remove_source(store: &Store, _lock: &WriteLock, source: &str) -> Result<()> {
    let manifest = store.manifest(source)?;
    let path = store
        .root()
        .join("manifests")
        .join(format!("{source}.json"));
    std::fs::remove_file(&path).map_err(io_err(&path))?;
    sync_dir(&store.root().join("manifests"))?;
    for f in &manifest.files {
        let _ = std::fs::remove_file(store.root().join(&f.path));
    }
    Catalog::rebuild_file(store)
}

/// Removes everything a killed writer may have left: the staging area and table files that no
/// manifest names. Rebuilds the catalog when anything was removed or it is missing.
pub fn recover(store: &Store) -> Result<()> {
    let root = store.root();
    let mut dirty = false;
    let staging = root.join(".staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(io_err(&staging))?;
        dirty = true;
    }
    // Temporary files of atomic writes that never reached their rename.
    for dir in [root.join("manifests"), root.to_path_buf()] {
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                if is_temp_name(&e.file_name().to_string_lossy()) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
    let live: std::collections::HashSet<String> = store
        .manifests()?
        .into_iter()
        .flat_map(|m| m.files.into_iter().map(|f| f.path))
        .collect();
    for table in super::TABLES.iter().map(|t| t.name) {
        let tdir = root.join(table);
        let Ok(parts) = std::fs::read_dir(&tdir) else {
            continue;
        };
        for part in parts.flatten() {
            let pdir = part.path();
            if !pdir.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(&pdir).map_err(io_err(&pdir))?.flatten() {
                let rel = format!(
                    "{}/{}/{}",
                    table,
                    part.file_name().to_string_lossy(),
                    f.file_name().to_string_lossy()
                );
                if !live.contains(&rel) {
                    let _ = std::fs::remove_file(f.path());
                    dirty = true;
                }
            }
            let _ = std::fs::remove_dir(&pdir); // only succeeds when empty
        }
    }
    if dirty || !store.catalog_path().exists() {
        Catalog::rebuild_file(store)?;
    }
    Ok(())
}
