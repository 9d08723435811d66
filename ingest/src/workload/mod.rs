//! LLM request workloads: adapters that turn public request traces into [`Request`] rows.
//!
//! Arrival times are seconds from the start of the trace (the first request of a trace with
//! absolute timestamps arrives at its offset from the first timestamp; the absolute start is
//! kept in [`Workload::start_utc`]).

pub mod azure_llm;
pub mod lengths_csv;
pub mod mooncake;

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;

use crate::{IngestError, InputFile, Reject, Rejects, Result};

/// One LLM request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Arrival, seconds from the trace start.
    pub arrival_s: f64,
    /// Prompt (context) tokens.
    pub prompt_tokens: u32,
    /// Generated (output) tokens.
    pub output_tokens: u32,
    /// The file it came from (its `rel` name), for multi-file workloads.
    pub file: String,
}

/// A parsed workload.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// Requests sorted by arrival.
    pub requests: Vec<Request>,
    /// Records that could not be used.
    pub rejects: Vec<Reject>,
    /// Notes for the user.
    pub notes: Vec<String>,
    /// Unix time of the first request when the trace has absolute timestamps.
    pub start_utc: Option<f64>,
}

/// A request-trace format (`hazardserve ingest --format NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadFormat {
    /// Azure LLM inference trace 2023: `TIMESTAMP,ContextTokens,GeneratedTokens`.
    AzureLlm,
    /// Mooncake JSON lines: `timestamp` (ms), `input_length`, `output_length`, `hash_ids`.
    Mooncake,
    /// Any CSV with arrival times (or a rate), prompt and output token columns.
    LengthsCsv,
}

impl WorkloadFormat {
    /// Every workload format, in sniffing order.
    pub const ALL: [WorkloadFormat; 3] = [
        WorkloadFormat::AzureLlm,
        WorkloadFormat::Mooncake,
        WorkloadFormat::LengthsCsv,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadFormat::AzureLlm => "azure-llm",
            WorkloadFormat::Mooncake => "mooncake",
            WorkloadFormat::LengthsCsv => "lengths-csv",
        }
    }

    /// What the files look like (one line, for `--help`).
    pub fn about(self) -> &'static str {
        match self {
            WorkloadFormat::AzureLlm => "Azure LLM inference trace 2023 (requests)",
            WorkloadFormat::Mooncake => "Mooncake JSON lines (requests)",
            WorkloadFormat::LengthsCsv => {
                "Any CSV of request arrivals and token lengths (requests)"
            }
        }
    }

    /// Whether `file` looks like this format.
    pub fn sniff(self, file: &InputFile) -> bool {
        match self {
            WorkloadFormat::AzureLlm => azure_llm::sniff(file),
            WorkloadFormat::Mooncake => mooncake::sniff(file),
            WorkloadFormat::LengthsCsv => lengths_csv::sniff(file),
        }
    }
}

/// Decides the workload format of a set of files (`--format auto` after no availability format
/// claimed them): the first format that claims the first readable file. Defective inputs
/// ([`InputFile::defect`]) are skipped, so a corrupt first file does not hide the format of the
/// others. `None` when no readable file is claimed.
pub fn sniff(files: &[InputFile]) -> Option<WorkloadFormat> {
    let first = files.iter().find(|f| f.defect.is_none())?;
    WorkloadFormat::ALL.into_iter().find(|f| f.sniff(first))
}

/// Column and arrival options of `lengths-csv` (ignored by the other formats).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct WorkloadOptions {
    /// Arrival-time column (default: auto-detect `arrival_time_ns`, `arrival_s`, `timestamp`...).
    pub arrival_col: Option<String>,
    /// Unit of the arrival column: `s`, `ms`, `us` or `ns` (default from the column name, else s).
    pub arrival_unit: Option<String>,
    /// Prompt-token column (default: auto-detect `input_toks`, `num_prefill_tokens`, ...).
    pub prompt_col: Option<String>,
    /// Output-token column (default: auto-detect `output_toks`, `num_decode_tokens`, ...).
    pub output_col: Option<String>,
    /// Poisson arrival rate (requests/s) for CSVs without arrival times.
    pub rate: Option<f64>,
    /// Seed of the synthetic arrivals.
    pub seed: u64,
    /// Stop at the first bad record.
    pub strict: bool,
}

/// Parses the files of one workload and sorts the requests by arrival (stable). Defective
/// inputs ([`InputFile::defect`]) become whole-file rejects (record 0), or the error under
/// `strict` or when every input is defective.
pub fn parse(
    format: WorkloadFormat,
    files: &[InputFile],
    options: &WorkloadOptions,
) -> Result<Workload> {
    if files.is_empty() {
        return Err(IngestError::Empty("no input files".into()));
    }
    let run = |files: &[InputFile]| match format {
        WorkloadFormat::AzureLlm => azure_llm::parse(files, options),
        WorkloadFormat::Mooncake => mooncake::parse(files, options),
        WorkloadFormat::LengthsCsv => lengths_csv::parse(files, options),
    };
    if let Some(e) = crate::adapters::strict_defect(files, options.strict, |p| run(p).err()) {
        return Err(e);
    }
    let mut defects = Rejects::new(options.strict);
    let good = crate::adapters::readable_inputs(files, &mut defects)?;
    let mut w = run(&good)?;
    let mut rejects = defects.into_vec();
    rejects.append(&mut w.rejects);
    w.rejects = rejects;
    w.requests
        .sort_by(|a, b| a.arrival_s.total_cmp(&b.arrival_s));
    w.notes.extend(crate::input::duplicate_notes(files));
    Ok(w)
}

/// Schema of the `requests` table (the `source` column comes from the partition path).
pub fn requests_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("request_id", DataType::Int64, false),
        Field::new("arrival_s", DataType::Float64, false),
        Field::new("prompt_tokens", DataType::Int64, false),
        Field::new("output_tokens", DataType::Int64, false),
        Field::new("file", DataType::Utf8, false),
    ]))
}

/// The `requests` batch of a workload.
pub fn requests_batch(w: &Workload) -> Result<RecordBatch> {
    let r = &w.requests;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(0..r.len() as i64)),
        Arc::new(Float64Array::from_iter_values(
            r.iter().map(|x| x.arrival_s),
        )),
        Arc::new(Int64Array::from_iter_values(
            r.iter().map(|x| x.prompt_tokens as i64),
        )),
        Arc::new(Int64Array::from_iter_values(
            r.iter().map(|x| x.output_tokens as i64),
        )),
        Arc::new(StringArray::from_iter_values(
            r.iter().map(|x| x.file.as_str()),
        )),
    ];
    Ok(RecordBatch::try_new(requests_schema(), cols)?)
}

/// Parses a non-negative token count field.
pub(crate) fn tokens(field: &str) -> std::result::Result<u32, String> {
    let f = field.trim();
    f.parse::<u32>()
        .map_err(|_| format!("token count {f:?} is not an integer in 0..=4294967295"))
}
