//! LLM request workloads: adapters that turn public request traces into [`Request`] rows.
//!
//! Arrival times are seconds from the start of the trace (the first request of a trace with
//! absolute timestamps arrives at its offset from the first timestamp; the absolute start is
//! kept in [`Workload::start_utc`]).

pub mod azure_llm;
pub mod lengths_csv;
pub mod mooncake;
pub mod qwen_bailian;

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, ListArray, StringArray};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
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
    /// The prompt's prefix blocks in order, as content ids: equal ids at the same position of
    /// two prompts are the same tokens (empty when the trace has none).
    pub prefix_blocks: Vec<i64>,
    /// Tokens per prefix block (0 when the trace has no prefix blocks).
    pub block_tokens: u32,
    /// The conversation the request is a turn of, where the trace says.
    pub conversation_id: Option<String>,
}

impl Request {
    /// A request without prefix data or conversation.
    pub fn plain(arrival_s: f64, prompt_tokens: u32, output_tokens: u32, file: String) -> Request {
        Request {
            arrival_s,
            prompt_tokens,
            output_tokens,
            file,
            prefix_blocks: Vec::new(),
            block_tokens: 0,
            conversation_id: None,
        }
    }

    /// The same request with the prompt's prefix `blocks` of `block_tokens` tokens each (a
    /// block size of 0 when there are none).
    pub fn with_prefix(self, blocks: Vec<i64>, block_tokens: u32) -> Request {
        Request {
            block_tokens: if blocks.is_empty() { 0 } else { block_tokens },
            prefix_blocks: blocks,
            ..self
        }
    }
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
    /// Qwen-Bailian JSON lines: `chat_id`, `parent_chat_id`, `timestamp` (s), `input_length`,
    /// `output_length`, `type`, `turn`, `hash_ids`.
    QwenBailian,
    /// Any CSV with arrival times (or a rate), prompt and output token columns.
    LengthsCsv,
}

impl WorkloadFormat {
    /// Every workload format, in sniffing order (Qwen-Bailian lines carry Mooncake's keys
    /// too, so they are asked first).
    pub const ALL: [WorkloadFormat; 4] = [
        WorkloadFormat::AzureLlm,
        WorkloadFormat::QwenBailian,
        WorkloadFormat::Mooncake,
        WorkloadFormat::LengthsCsv,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadFormat::AzureLlm => "azure-llm",
            WorkloadFormat::Mooncake => "mooncake",
            WorkloadFormat::QwenBailian => "qwen-bailian",
            WorkloadFormat::LengthsCsv => "lengths-csv",
        }
    }

    /// What the files look like (one line, for `--help`).
    pub fn about(self) -> &'static str {
        match self {
            WorkloadFormat::AzureLlm => "Azure LLM inference trace 2023 (requests)",
            WorkloadFormat::Mooncake => "Mooncake JSON lines (requests, 512-token prefix blocks)",
            WorkloadFormat::QwenBailian => {
                "Qwen-Bailian JSON lines (conversations, 16-token prefix blocks)"
            }
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
            WorkloadFormat::QwenBailian => qwen_bailian::sniff(file),
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
        WorkloadFormat::QwenBailian => qwen_bailian::parse(files, options),
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
        Field::new(
            "prefix_blocks",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
            false,
        ),
        Field::new("block_tokens", DataType::Int32, false),
        Field::new("conversation_id", DataType::Utf8, true),
    ]))
}

/// The columns of the `requests` table added with schema version 2 (prefix data): a source
/// ingested before has none of them ([`crate::batch::SCHEMA_VERSION`]).
pub const PREFIX_COLUMNS: [&str; 3] = ["prefix_blocks", "block_tokens", "conversation_id"];

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
        Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
            r.iter()
                .map(|x| Some(x.prefix_blocks.iter().map(|&b| Some(b)))),
        )),
        Arc::new(Int32Array::from_iter_values(
            r.iter()
                .map(|x| i32::try_from(x.block_tokens).unwrap_or(i32::MAX)),
        )),
        Arc::new(StringArray::from_iter(
            r.iter().map(|x| x.conversation_id.as_deref()),
        )),
    ];
    Ok(RecordBatch::try_new(requests_schema(), cols)?)
}

/// The workload of JSON lines of `T` in `files`, read in order: each non-blank line parsed and
/// handed to `each` with its file, the file's display name and the line number, which answers
/// the request it makes or why the line is wrong. A line that is not valid UTF-8 or not a `T`
/// is rejected (`"not a {what} request: ..."`), as is one `each` finds wrong (its reason).
pub(crate) fn json_lines<T: serde::de::DeserializeOwned>(
    files: &[InputFile],
    options: &WorkloadOptions,
    what: &str,
    mut each: impl FnMut(&InputFile, &str, u64, T) -> std::result::Result<Request, String>,
) -> Result<Workload> {
    let mut rejects = Rejects::new(options.strict);
    let mut requests = Vec::new();
    for f in files {
        let name = f.display();
        for row in f.lines() {
            let line = match row.text() {
                Ok(line) => line,
                Err(reason) => {
                    rejects.reject(&name, row.number, &row.lossy(), reason)?;
                    continue;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let outcome = serde_json::from_str::<T>(line)
                .map_err(|e| {
                    // serde's own position counts lines of this one line: keep its column.
                    let msg = e.to_string();
                    let msg = msg
                        .rsplit_once(" at line ")
                        .map_or(msg.as_str(), |(m, _)| m);
                    format!("not a {what} request: {msg} (column {})", e.column())
                })
                .and_then(|t| each(f, &name, row.number, t));
            match outcome {
                Ok(request) => requests.push(request),
                Err(reason) => rejects.reject(&name, row.number, line, reason)?,
            }
        }
    }
    Ok(Workload {
        requests,
        rejects: rejects.into_vec(),
        notes: Vec::new(),
        start_utc: None,
    })
}

/// Whether `blocks` prefix blocks of `block_tokens` tokens fit a prompt of `prompt` tokens:
/// at most as many as the prompt fills (its last block may be partial).
pub(crate) fn prefix_fits(
    blocks: usize,
    block_tokens: u32,
    prompt: u32,
) -> std::result::Result<(), String> {
    let filled = u64::from(prompt).div_ceil(u64::from(block_tokens.max(1)));
    if blocks as u64 > filled {
        Err(format!(
            "{blocks} prefix blocks of {block_tokens} tokens are longer than the prompt of \
             {prompt} tokens ({filled} blocks)"
        ))
    } else {
        Ok(())
    }
}

/// Parses a non-negative token count field.
pub(crate) fn tokens(field: &str) -> std::result::Result<u32, String> {
    let f = field.trim();
    f.parse::<u32>()
        .map_err(|_| format!("token count {f:?} is not an integer in 0..=4294967295"))
}
