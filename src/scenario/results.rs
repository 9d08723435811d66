//! Storing a replay run: `runs` (one row: id, config, seeds, program version), `replay_requests`
//! (every request of every run of the grid) and `replay_summary` (one row per policy with the
//! comparison as JSON). Each run is committed atomically like a source, partitioned by its id.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use serde::{Deserialize, Serialize};

use crate::replay::{PolicySummary, RunOutput};
use crate::store::{commit_tables, StagedTable, Store, StoreError, WriteLock};

/// Schema of `runs`.
pub fn runs_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("run_id", DataType::Utf8, false),
        Field::new("created_at", DataType::Utf8, false),
        Field::new("version", DataType::Utf8, false),
        Field::new("nodes_source", DataType::Utf8, false),
        Field::new("workload_source", DataType::Utf8, false),
        Field::new("windows", DataType::Int64, false),
        Field::new("seeds", DataType::Utf8, false),
        Field::new("cutoff_s", DataType::Float64, false),
        Field::new("config", DataType::Utf8, false),
    ]))
}

/// Schema of `replay_requests`.
pub fn replay_requests_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("run_id", DataType::Utf8, false),
        Field::new("policy", DataType::Utf8, false),
        Field::new("param", DataType::Utf8, false),
        Field::new("window", DataType::Int64, false),
        Field::new("seed", DataType::UInt64, false),
        Field::new("request", DataType::UInt64, false),
        Field::new("request_id", DataType::UInt64, false),
        Field::new("arrival_s", DataType::Float64, false),
        Field::new("prompt_tokens", DataType::UInt64, false),
        Field::new("output_tokens", DataType::UInt64, false),
        Field::new("est_output_tokens", DataType::UInt64, false),
        Field::new("first_node", DataType::Utf8, true),
        Field::new("final_node", DataType::Utf8, true),
        Field::new("nodes_visited", DataType::UInt32, false),
        Field::new("ttft_s", DataType::Float64, true),
        Field::new("completion_s", DataType::Float64, true),
        Field::new("recomputed_unplanned_tokens", DataType::UInt64, false),
        Field::new("recomputed_planned_tokens", DataType::UInt64, false),
        Field::new("kv_bytes_moved", DataType::Float64, false),
        Field::new("interruptions", DataType::UInt32, false),
        Field::new("planned_migrations", DataType::UInt32, false),
        Field::new("slo_met", DataType::Boolean, false),
        Field::new("dropped", DataType::Utf8, true),
    ]))
}

/// Schema of `replay_summary`.
pub fn replay_summary_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("run_id", DataType::Utf8, false),
        Field::new("position", DataType::Int64, false),
        Field::new("policy", DataType::Utf8, false),
        Field::new("summary", DataType::Utf8, false),
    ]))
}

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

/// One policy row of a comparison: the display name (`hazard --overlap` for the overlap run of
/// `hazard`) and the summary.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryRow {
    /// Display name.
    pub policy: String,
    /// The summary with the documented keys (as JSON).
    pub summary: serde_json::Value,
}

/// The comparison rows of a grid's summaries: every policy of the default parameter point, plus
/// `hazard --overlap` from the overlap point when there is one.
pub fn comparison_rows(summaries: &[PolicySummary]) -> Vec<SummaryRow> {
    summaries
        .iter()
        .filter_map(|s| {
            let name = match s.param.as_deref() {
                None | Some("default") => s.policy.clone(),
                Some("overlap") if s.policy == "hazard" => "hazard --overlap".to_string(),
                Some(_) => return None,
            };
            let mut v = serde_json::to_value(s).ok()?;
            if let Some(o) = v.as_object_mut() {
                o.remove("param");
                o.insert("policy".into(), serde_json::Value::String(name.clone()));
            }
            Some(SummaryRow {
                policy: name,
                summary: v,
            })
        })
        .collect()
}

fn arrow_err(e: arrow::error::ArrowError) -> StoreError {
    StoreError::Parquet {
        path: "replay".into(),
        message: e.to_string(),
    }
}

/// Commits a run: its info, every request record (node indices named by `node_names`) and the
/// comparison rows. A run whose id exists with the same `content_key` is left as it is; with
/// another key it is replaced.
pub fn save_run(
    store: &Store,
    lock: &WriteLock,
    info: &RunInfo,
    content_key: &str,
    node_names: &[String],
    runs: &[RunOutput],
    rows: &[SummaryRow],
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
            s(&serde_json::to_string(&info.seeds).unwrap_or_default()),
            Arc::new(Float64Array::from(vec![info.cutoff_s])),
            s(&info.config),
        ],
    )
    .map_err(arrow_err)?;

    let n: usize = runs.iter().map(|r| r.records.len()).sum();
    let name = |i: Option<u32>| i.and_then(|i| node_names.get(i as usize).cloned());
    let mut policy = Vec::with_capacity(n);
    let mut param = Vec::with_capacity(n);
    let mut window = Vec::with_capacity(n);
    let mut seed = Vec::with_capacity(n);
    let mut recs = Vec::with_capacity(n);
    for r in runs {
        for rec in &r.records {
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
        Arc::new(BooleanArray::from(
            recs.iter().map(|r| r.slo_met).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            recs.iter()
                .map(|r| r.dropped.as_ref().map(|d| d.as_str().to_string()))
                .collect::<Vec<_>>(),
        )),
    ];
    let requests_batch = RecordBatch::try_new(replay_requests_schema(), cols).map_err(arrow_err)?;

    let summary_batch = RecordBatch::try_new(
        replay_summary_schema(),
        vec![
            Arc::new(StringArray::from(vec![id; rows.len()])),
            Arc::new(Int64Array::from_iter_values(0..rows.len() as i64)),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.policy.as_str()),
            )),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.summary.to_string()),
            )),
        ],
    )
    .map_err(arrow_err)?;
    let tables = vec![
        StagedTable {
            table: "runs",
            batch: runs_batch,
        },
        StagedTable {
            table: "replay_requests",
            batch: requests_batch,
        },
        StagedTable {
            table: "replay_summary",
            batch: summary_batch,
        },
    ];
    commit_tables(store, lock, id, content_key, tables, true)
}

/// The most recent run id in the store, if any.
pub fn latest_run(store: &Store) -> Result<Option<String>, StoreError> {
    let cat = store.query()?;
    let mut stmt = cat
        .connection()
        .prepare("SELECT run_id FROM runs ORDER BY created_at DESC, run_id DESC LIMIT 1")?;
    let mut rows = stmt.query([])?;
    Ok(match rows.next()? {
        Some(r) => Some(r.get(0)?),
        None => None,
    })
}

/// The comparison rows of a stored run, in their order.
pub fn load_summary(store: &Store, run_id: &str) -> Result<Vec<SummaryRow>, StoreError> {
    let cat = store.query()?;
    let mut stmt = cat
        .connection()
        .prepare("SELECT policy, summary FROM replay_summary WHERE run_id = ? ORDER BY position")?;
    let rows = stmt.query_map([run_id], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (policy, text) = row?;
        let summary = serde_json::from_str(&text).map_err(|e| StoreError::Corrupt {
            path: "replay_summary".into(),
            message: e.to_string(),
        })?;
        out.push(SummaryRow { policy, summary });
    }
    Ok(out)
}
