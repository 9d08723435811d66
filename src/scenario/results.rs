//! Storing a replay run: `runs` (one row: id, config, seeds, program version), `replay_requests`
//! (every request of every run of the grid, `scored` false for the warm-up's and the drain
//! margin's arrivals) and `replay_summary` (one row per policy with the
//! comparison row as JSON, [`PolicySummary::to_json`]). Each run is committed atomically like a source, partitioned by its id.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array,
};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::policy::PolicyKind;
use crate::replay::{PolicySummary, RunOutput};
use crate::store::tables::{replay_requests_schema, replay_summary_schema, runs_schema};
use crate::store::{commit_tables, StagedTable, Store, StoreError, WriteLock};

/// What `runs` records about a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunInfo {
    /// Run id.
    pub run_id: String,
    /// Availability source.
    pub nodes_source: String,
    /// Workload source.
    pub workload_source: String,
    /// Number of windows.
    pub windows: usize,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Priors cutoff (trace clock, seconds).
    pub cutoff_s: f64,
    /// The full scenario, as TOML.
    pub config: String,
}

/// The rows a comparison shows: every policy of the default parameter point, plus the overlap
/// point's `hazard` (`hazard --overlap`) when the grid has one.
pub(crate) fn comparison_rows(summaries: Vec<PolicySummary>) -> Vec<PolicySummary> {
    summaries
        .into_iter()
        .filter(|s| match s.label.param.as_deref() {
            None => true,
            Some("overlap") => s.label.kind == PolicyKind::Hazard,
            Some(_) => false,
        })
        .collect()
}

fn arrow_err(source: arrow::error::ArrowError) -> StoreError {
    StoreError::Arrow {
        table: "replay".into(),
        source,
    }
}

/// Commits a run: its info, every request record (`requests`: the batches of
/// [`requests_batch`], in any number, read one at a time as the file is written) and the
/// comparison rows. A run whose id exists with the same `content_key` is left as it is; with
/// another key it is replaced.
pub fn save_run<'a>(
    store: &Store,
    lock: &WriteLock,
    info: &RunInfo,
    content_key: &str,
    requests: Box<dyn Iterator<Item = Result<RecordBatch, StoreError>> + 'a>,
    rows: &[PolicySummary],
) -> Result<crate::store::IngestOutcome, StoreError> {
    let id = info.run_id.as_str();
    let s = |v: &str| -> ArrayRef { Arc::new(StringArray::from(vec![v.to_string()])) };
    let runs_batch = RecordBatch::try_new(
        runs_schema(),
        vec![
            s(id),
            s(&chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()),
            s(concat!("hazardserve ", env!("CARGO_PKG_VERSION"))),
            s(&info.nodes_source),
            s(&info.workload_source),
            Arc::new(Int64Array::from(vec![info.windows as i64])),
            s(&format!(
                "[{}]",
                info.seeds
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Arc::new(Float64Array::from(vec![info.cutoff_s])),
            s(&info.config),
        ],
    )
    .map_err(arrow_err)?;
    let summary_batch = RecordBatch::try_new(
        replay_summary_schema(),
        vec![
            Arc::new(StringArray::from(vec![id; rows.len()])),
            Arc::new(Int64Array::from_iter_values(0..rows.len() as i64)),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.label.to_string()),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.to_json().to_string()),
            )),
        ],
    )
    .map_err(arrow_err)?;
    let tables = vec![
        StagedTable::one("runs", runs_batch),
        StagedTable {
            table: "replay_requests",
            schema: replay_requests_schema(),
            batches: requests,
        },
        StagedTable::one("replay_summary", summary_batch),
    ];
    commit_tables(store, lock, id, content_key, tables, true)
}

/// The `replay_requests` rows of one run of run `run_id` (node indices named by `node_names`).
pub fn requests_batch(
    run_id: &str,
    node_names: &[String],
    r: &RunOutput,
) -> Result<RecordBatch, StoreError> {
    let id = run_id;
    let n = r.records.len();
    let name = |i: Option<u32>| i.and_then(|i| node_names.get(i as usize).cloned());
    let mut policy = Vec::with_capacity(n);
    let mut param = Vec::with_capacity(n);
    let mut window = Vec::with_capacity(n);
    let mut seed = Vec::with_capacity(n);
    let mut recs = Vec::with_capacity(n);
    let mut scored = Vec::with_capacity(n);
    {
        for rec in &r.records {
            scored.push(crate::replay::metrics::is_scored(rec.arrival_s, r.scored_s));
            policy.push(r.policy.name());
            param.push(if r.param_label.is_empty() {
                "default"
            } else {
                r.param_label.as_str()
            });
            window.push(r.window as i64);
            seed.push(r.seed);
            recs.push(rec);
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![id; n])),
        Arc::new(StringArray::from(policy)),
        Arc::new(StringArray::from(param)),
        Arc::new(Int64Array::from(window)),
        Arc::new(UInt64Array::from(seed)),
        Arc::new(UInt64Array::from_iter_values(
            recs.iter().map(|r| r.request),
        )),
        Arc::new(UInt64Array::from_iter_values(recs.iter().map(|r| r.id))),
        Arc::new(Float64Array::from_iter_values(
            recs.iter().map(|r| r.arrival_s),
        )),
        Arc::new(UInt64Array::from_iter_values(
            recs.iter().map(|r| r.prompt_tokens),
        )),
        Arc::new(UInt64Array::from_iter_values(
            recs.iter().map(|r| r.output_tokens),
        )),
        Arc::new(UInt64Array::from_iter_values(
            recs.iter().map(|r| r.est_output_tokens),
        )),
        Arc::new(StringArray::from(
            recs.iter().map(|r| name(r.first_node)).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            recs.iter().map(|r| name(r.final_node)).collect::<Vec<_>>(),
        )),
        Arc::new(UInt32Array::from_iter_values(
            recs.iter().map(|r| r.nodes_visited),
        )),
        Arc::new(Float64Array::from(
            recs.iter().map(|r| r.ttft_s).collect::<Vec<_>>(),
        )),
        Arc::new(Float64Array::from(
            recs.iter().map(|r| r.completion_s).collect::<Vec<_>>(),
        )),
        Arc::new(UInt64Array::from_iter_values(
            recs.iter().map(|r| r.recomputed_unplanned_tokens),
        )),
        Arc::new(UInt64Array::from_iter_values(
            recs.iter().map(|r| r.recomputed_planned_tokens),
        )),
        Arc::new(Float64Array::from_iter_values(
            recs.iter().map(|r| r.kv_bytes_moved),
        )),
        Arc::new(UInt32Array::from_iter_values(
            recs.iter().map(|r| r.interruptions),
        )),
        Arc::new(UInt32Array::from_iter_values(
            recs.iter().map(|r| r.planned_migrations),
        )),
        Arc::new(Float64Array::from_iter_values(
            recs.iter().map(|r| r.recovery_s),
        )),
        Arc::new(StringArray::from(
            recs.iter()
                .map(|r| {
                    (!r.interruption_causes.is_empty()).then(|| r.interruption_causes.join(","))
                })
                .collect::<Vec<_>>(),
        )),
        Arc::new(BooleanArray::from(
            recs.iter().map(|r| r.slo_met).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            recs.iter()
                .map(|r| r.dropped.as_ref().map(|d| d.as_str().to_string()))
                .collect::<Vec<_>>(),
        )),
        Arc::new(BooleanArray::from(scored)),
    ];
    RecordBatch::try_new(replay_requests_schema(), cols).map_err(arrow_err)
}

/// The request rows of a run while it is simulated, spilled to an anonymous temporary Parquet
/// file (outside the store) one run at a time, so that a replay holds one window's records at
/// most; [`RequestSpill::into_batches`] reads them back, a batch at a time, as the store's
/// file is written.
pub struct RequestSpill {
    writer: parquet::arrow::ArrowWriter<std::fs::File>,
}

/// Rows per row group of the spill (what it buffers before writing).
const SPILL_ROW_GROUP: usize = 65_536;

fn spill_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Parquet {
        path: std::env::temp_dir().join("(replay spill)"),
        message: e.to_string(),
    }
}

impl RequestSpill {
    /// An empty spill.
    pub fn new() -> Result<RequestSpill, StoreError> {
        let file = tempfile::tempfile().map_err(spill_err)?;
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(SPILL_ROW_GROUP))
            .build();
        let writer =
            parquet::arrow::ArrowWriter::try_new(file, replay_requests_schema(), Some(props))
                .map_err(spill_err)?;
        Ok(RequestSpill { writer })
    }

    /// Appends one batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), StoreError> {
        self.writer.write(batch).map_err(spill_err)
    }

    /// Every spilled row, as batches read one at a time.
    pub fn into_batches(
        self,
    ) -> Result<impl Iterator<Item = Result<RecordBatch, StoreError>>, StoreError> {
        let file = self.writer.into_inner().map_err(spill_err)?;
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(spill_err)?
            .with_batch_size(8_192)
            .build()
            .map_err(spill_err)?;
        Ok(reader.map(|b| b.map_err(arrow_err)))
    }
}

/// The most recent run id in the store, if any.
pub fn latest_run(store: &Store) -> Result<Option<String>, StoreError> {
    let cat = store.query()?;
    let mut stmt = cat.connection().prepare(crate::queries::LATEST_RUN.sql)?;
    let mut rows = stmt.query([])?;
    Ok(match rows.next()? {
        Some(r) => Some(r.get(0)?),
        None => None,
    })
}

/// The comparison rows of a stored run, in their order.
pub fn load_summary(store: &Store, run_id: &str) -> Result<Vec<PolicySummary>, StoreError> {
    let cat = store.query()?;
    let mut stmt = cat.connection().prepare(crate::queries::RUN_SUMMARY.sql)?;
    let rows = stmt.query_map([run_id], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for row in rows {
        let text = row?;
        let corrupt = |message: String| StoreError::Corrupt {
            path: "replay_summary".into(),
            message,
        };
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        out.push(PolicySummary::from_json(&value).map_err(|e| corrupt(e.to_string()))?);
    }
    Ok(out)
}
