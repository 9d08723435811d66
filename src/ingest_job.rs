//! One ingest as a library job, shared by `hazardserve ingest`, `ingest-public`, the demo and
//! the ingest benchmark: parse input files with a format ([`parse_inputs`]), describe the
//! source they make ([`source_record`], with its content key), and commit it
//! ([`commit_parsed`]).

use hazardserve_ingest::workload::{self, Workload, WorkloadFormat, WorkloadOptions};
use hazardserve_ingest::{
    self as ingest, Format, IngestError, InputFile, InputFormat, Options, Trace,
};
use sha2::{Digest, Sha256};

use crate::store::{self, IngestOutcome, InputRecord, SourceRecord, Store, StoreError, WriteLock};

/// Why inputs could not be ingested.
#[derive(Debug, thiserror::Error)]
pub enum IngestJobError {
    /// The adapter refused the input.
    #[error(transparent)]
    Parse(#[from] IngestError),
    /// No record at all.
    #[error("{0}: empty input: no records found")]
    Empty(String),
    /// Every record was rejected.
    #[error("{file}: nothing usable: all {count} record(s) were rejected; first: {first}")]
    NothingUsable {
        /// The first input file.
        file: String,
        /// Rejected records.
        count: usize,
        /// The first reject: `file:line: reason`.
        first: String,
    },
    /// The store could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The content key of an ingest: adapter, options and every input's content hash.
pub fn content_key(adapter: &str, options: &serde_json::Value, files: &[InputFile]) -> String {
    let mut h = Sha256::new();
    // A new parser or schema version re-ingests the same files.
    h.update(env!("CARGO_PKG_VERSION").as_bytes());
    h.update(hazardserve_ingest::batch::SCHEMA_VERSION.to_le_bytes());
    h.update(adapter.as_bytes());
    h.update(options.to_string().as_bytes());
    let mut hashes: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.rel.as_str(), f.content_hash.as_str()))
        .collect();
    hashes.sort();
    for (rel, hash) in hashes {
        h.update(rel.as_bytes());
        h.update(hash.as_bytes());
    }
    ingest::input::hex(&h.finalize())
}

/// What a set of inputs parsed into.
pub enum Parsed {
    /// An availability trace.
    Trace(Format, Trace),
    /// An LLM request workload.
    Workload(WorkloadFormat, Workload),
}

impl Parsed {
    /// The adapter's name.
    pub fn adapter(&self) -> &'static str {
        match self {
            Parsed::Trace(f, _) => f.name(),
            Parsed::Workload(f, _) => f.name(),
        }
    }

    /// Notes and rejects, for the report on stderr.
    pub fn notes_and_rejects(&self) -> (&[String], &[ingest::Reject]) {
        match self {
            Parsed::Trace(_, t) => (&t.notes, &t.rejects),
            Parsed::Workload(_, w) => (&w.notes, &w.rejects),
        }
    }

    /// One-line summary of what was parsed.
    pub fn summary(&self) -> String {
        match self {
            Parsed::Trace(f, t) => {
                let events = t.sessions.iter().filter(|s| s.event).count();
                format!(
                    "{} ({}): {} nodes, {} sessions ({} ended, {} censored), {} rejected",
                    f.name(),
                    t.kind.as_str(),
                    t.nodes.len(),
                    t.sessions.len(),
                    events,
                    t.sessions.len() - events,
                    t.rejects.len()
                )
            }
            Parsed::Workload(f, w) => format!(
                "{} (llm-requests): {} requests over {:.0} s, {} rejected",
                f.name(),
                w.requests.len(),
                w.requests.last().map_or(0.0, |r| r.arrival_s),
                w.rejects.len()
            ),
        }
    }
}

/// Parses the inputs (no store involved). `auto` sniffs availability formats first, then
/// request workloads.
pub fn parse_inputs(
    format: InputFormat,
    files: &[InputFile],
    options: &Options,
    wopts: &WorkloadOptions,
) -> Result<Parsed, IngestJobError> {
    let first = files.first().map(|f| f.display()).unwrap_or_default();
    let parsed = match format {
        InputFormat::Trace(f) => Parsed::Trace(f, ingest::parse(f, files, options)?),
        InputFormat::Workload(f) => Parsed::Workload(f, workload::parse(f, files, wopts)?),
        InputFormat::Auto => match ingest::sniff(files) {
            Ok(f) => Parsed::Trace(f, ingest::parse(f, files, options)?),
            Err(IngestError::UnknownFormat(_)) => {
                let Some(f) = files
                    .first()
                    .and_then(|file| WorkloadFormat::ALL.into_iter().find(|f| f.sniff(file)))
                else {
                    return Err(IngestError::UnknownFormat(first).into());
                };
                Parsed::Workload(f, workload::parse(f, files, wopts)?)
            }
            Err(e) => return Err(e.into()),
        },
    };
    let (empty, rejects) = match &parsed {
        Parsed::Trace(_, t) => (t.sessions.is_empty() && t.nodes.is_empty(), &t.rejects),
        Parsed::Workload(_, w) => (w.requests.is_empty(), &w.rejects),
    };
    if empty {
        let Some(r) = rejects.first() else {
            return Err(IngestJobError::Empty(first));
        };
        return Err(IngestJobError::NothingUsable {
            file: first,
            count: rejects.len(),
            first: format!("{}:{}: {}", r.file, r.line, r.reason),
        });
    }
    Ok(parsed)
}

/// The record of source `source` made of `files` as parsed: what [`ingest_parsed`] stores
/// (the input bytes can be dropped once it is made).
pub fn source_record(
    source: &str,
    parsed: &Parsed,
    options: &serde_json::Value,
    files: &[InputFile],
) -> SourceRecord {
    SourceRecord {
        source: source.to_string(),
        adapter: parsed.adapter().to_string(),
        files: files
            .iter()
            .map(|f| InputRecord {
                path: f.display(),
                sha256: f.sha256.clone(),
                bytes: f.bytes.len() as u64,
            })
            .collect(),
        options: options.clone(),
        content_key: content_key(parsed.adapter(), options, files),
    }
}

/// Commits parsed inputs as the source `rec` describes (from [`source_record`]), under the
/// writer lock `lock`; returns what happened.
pub fn commit_parsed(
    store: &Store,
    lock: &WriteLock,
    rec: &SourceRecord,
    parsed: &Parsed,
    replace: bool,
) -> Result<IngestOutcome, StoreError> {
    match parsed {
        Parsed::Trace(_, t) => store::commit_trace(store, lock, rec, t, replace),
        Parsed::Workload(_, w) => store::commit_workload(store, lock, rec, w, replace),
    }
}
