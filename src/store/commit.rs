//! Writing a source atomically: stage, fsync, journal, move into place, then commit by
//! renaming the manifest; and recovering from a writer that was killed half-way.
//!
//! Size: over 800 lines because the write and its recovery are one protocol: the journal the
//! write records is exactly what recovery reads, and the fault points that the crash tests
//! kill at sit in both.

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
    write_parquet_batches(path, batch.schema(), std::iter::once(Ok(batch.clone()))).map(|(h, _)| h)
}

/// Writes `batches` (all of `schema`) to `path` as zstd Parquet, one at a time, fsyncs it, and
/// returns its sha256 and row count.
pub fn write_parquet_batches(
    path: &Path,
    schema: SchemaRef,
    batches: impl Iterator<Item = Result<RecordBatch>>,
) -> Result<(String, u64)> {
    let perr = |e: parquet::errors::ParquetError| StoreError::Parquet {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    fault_point("write a Parquet file");
    let file = File::create(path).map_err(io_err(path))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    let mut w = ArrowWriter::try_new(file, schema, Some(props)).map_err(perr)?;
    let mut rows = 0u64;
    for batch in batches {
        let batch = batch?;
        rows += batch.num_rows() as u64;
        w.write(&batch).map_err(perr)?;
    }
    let file = w.into_inner().map_err(perr)?;
    fault_point("fsync a Parquet file");
    file.sync_all().map_err(io_err(path))?;
    Ok((sha256_file(path)?, rows))
}

/// Whether `path` looks like a complete Parquet file: at least 12 bytes, starting and ending
/// with the magic `PAR1` (a file cut short by a crash or a full disk lacks the trailing one).
pub fn has_parquet_footer(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let check = || -> std::io::Result<bool> {
        let mut f = File::open(path)?;
        if f.metadata()?.len() < 12 {
            return Ok(false);
        }
        let mut head = [0u8; 4];
        f.read_exact(&mut head)?;
        f.seek(SeekFrom::End(-4))?;
        let mut tail = [0u8; 4];
        f.read_exact(&mut tail)?;
        Ok(&head == b"PAR1" && &tail == b"PAR1")
    };
    check().unwrap_or(false)
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
    fault_point("write a temporary file");
    let done = fill(&tmp).and_then(|()| {
        fault_point("fsync a temporary file");
        File::open(&tmp)
            .and_then(|f| f.sync_all())
            .map_err(io_err(path))?;
        fault_point("rename a temporary file into place");
        std::fs::rename(&tmp, path).map_err(io_err(path))?;
        fault_point("fsync the directory of a renamed file");
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

/// Whether `name` is the [`replace_file`] temporary of the file `of` (`<of>.tmp-<digits>`),
/// or DuckDB's write-ahead log beside it (`<of>.tmp-<digits>.wal`).
fn is_temp_of(name: &str, of: &str) -> bool {
    let Some(rest) = name.strip_prefix(of).and_then(|r| r.strip_prefix(".tmp-")) else {
        return false;
    };
    let pid = rest.strip_suffix(".wal").unwrap_or(rest);
    !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())
}

/// Creates `dir` (and its missing parents inside the store) and makes each new entry durable
/// in its parent, so a crash after the commit cannot lose a directory that a manifest names.
fn create_dir_durable(root: &Path, dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut d = dir;
    while !d.is_dir() && d != root {
        missing.push(d.to_path_buf());
        match d.parent() {
            Some(p) => d = p,
            None => break,
        }
    }
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    for m in missing.iter().rev() {
        sync_dir(parent_dir(m))?;
    }
    Ok(())
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

/// Test hook (only built with the `fault-injection` feature, which the integration tests enable;
/// otherwise a no-op that never reads the environment). `HAZARDSERVE_FAULT` selects:
///
/// - `pause-before-commit`: the writer stops just before its commit point, so a test can kill it
///   there;
/// - `trace`: every fault point a write passes prints `fault point N: <name>` on stderr (N counts
///   from 1), so a test learns how many points a write has;
/// - `kill-at:N`: the process kills itself with SIGKILL at the Nth fault point, as a crash or
///   `kill -9` would, leaving whatever was half-done on disk.
#[cfg(feature = "fault-injection")]
pub(crate) fn fault_point(name: &str) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PASSED: AtomicUsize = AtomicUsize::new(0);
    let Ok(mode) = std::env::var("HAZARDSERVE_FAULT") else {
        return;
    };
    let n = PASSED.fetch_add(1, Ordering::SeqCst) + 1;
    if mode == name {
        eprintln!("fault point reached: {name}");
        std::thread::sleep(std::time::Duration::from_secs(120));
    } else if mode == "trace" {
        eprintln!("fault point {n}: {name}");
    } else if mode
        .strip_prefix("kill-at:")
        .and_then(|k| k.parse::<usize>().ok())
        == Some(n)
    {
        eprintln!("fault point {n}: {name}: killing this process");
        // SAFETY: raise(2) with a valid signal number has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
}

/// Without the `fault-injection` feature there are no fault points.
#[cfg(not(feature = "fault-injection"))]
#[inline(always)]
pub(crate) fn fault_point(_name: &str) {}

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

/// The journal of one write: every file it creates in the table directories and every file it
/// makes obsolete, written (atomically) into its staging directory before any table directory
/// is touched. Recovery deletes only files named here that no manifest names, so the store never
/// deletes a file it did not write.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    /// The source (or run) written.
    source: String,
    /// The transaction id (also the part files' suffix).
    txid: String,
    /// Files (relative to the root) this write moves into the table directories.
    creates: Vec<String>,
    /// Files (relative to the root) deleted once the commit point is passed.
    obsoletes: Vec<String>,
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
        super::TABLES.iter().any(|t| t.name == table)
            && dir.strip_prefix("source=") == Some(self.source.as_str())
            && txid.is_some_and(|t| {
                !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            })
    }
}

fn journal_path(staging: &Path) -> PathBuf {
    staging.join("journal.json")
}

fn write_journal(staging: &Path, journal: &Journal) -> Result<()> {
    let body = serde_json::to_vec_pretty(journal).map_err(|source| StoreError::Json {
        what: "the write journal".into(),
        source,
    })?;
    write_atomic(&journal_path(staging), &body)
}

/// The part files in the store's own naming under `<table>/source=<source>/`, for a source
/// whose manifest is damaged (so its file list cannot be trusted).
fn owned_parts(store: &Store, source: &str) -> Vec<String> {
    let probe = Journal {
        source: source.to_string(),
        txid: String::new(),
        creates: Vec::new(),
        obsoletes: Vec::new(),
    };
    let mut out = Vec::new();
    for t in super::TABLES {
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
fn remove_files(root: &Path, rels: &[String]) -> Result<()> {
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
fn remove_staging(root: &Path, staging: &Path) -> Result<()> {
    fault_point("remove the staging directory");
    std::fs::remove_dir_all(staging).map_err(io_err(staging))?;
    let _ = std::fs::remove_dir(root.join(".staging"));
    sync_dir(root)
}

/// Rebuilds `catalog.duckdb`, turning a failure into a warning: the Parquet files and manifests
/// are the truth, the catalog file only a convenience for people who open it with DuckDB.
fn rebuild_catalog_or_warn(store: &Store, what: &str) {
    fault_point("rebuild the catalog");
    if let Err(e) = Catalog::rebuild_file(store) {
        crate::diag::warn(format!(
            "warning: {what}, but catalog.duckdb could not be rebuilt ({}); run `hazardserve store rebuild`",
            crate::error_chain(&e)
        ));
    }
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
                path: super::manifest::owned_path(t.table, source, &txid),
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

/// Finishes or undoes what a killed writer left, touching only what the store wrote: its own
/// temporary files (`STORE.json.tmp-N`, `catalog.duckdb.tmp-N[.wal]`,
/// `manifests/<source>.json.tmp-N`) and, for each staging directory, the files its journal
/// names that no manifest names (a write killed before its commit point leaves its new files
/// unnamed; one killed after it leaves its obsolete files unnamed). Files it did not write,
/// wherever they are, are never touched. Rebuilds the catalog when anything was removed or it is
/// missing (a failure there is a warning, not an error: the next write retries it).
pub fn recover(store: &Store) -> Result<()> {
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
