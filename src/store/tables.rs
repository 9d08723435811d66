//! The store's tables and their canonical schemas, in one place: what ingest writes (sources,
//! nodes, sessions, rejects, requests) and what replay runs write (runs, replay_requests,
//! replay_summary) and what sweeps write (sweeps, sweep_cells). The store knows these
//! schemas; it knows nothing of what produces the rows.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// A table of the store with its canonical schema (without the `source` partition column).
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    /// Table (and directory) name.
    pub name: &'static str,
    /// Its schema.
    pub schema: fn() -> SchemaRef,
}

/// The store schema version that added column `column` of table `table`: 2 for the
/// `requests` table's prefix columns ([`hazardserve_ingest::workload::PREFIX_COLUMNS`]), else 1.
/// A committed file of an older version has no such column, and the views read it as NULL.
pub(crate) fn added_in(table: &str, column: &str) -> u32 {
    if table == "requests" && hazardserve_ingest::workload::PREFIX_COLUMNS.contains(&column) {
        2
    } else {
        1
    }
}

/// Every table the store knows.
pub const TABLES: &[TableDef] = &[
    TableDef {
        name: "sources",
        schema: sources_schema,
    },
    TableDef {
        name: "nodes",
        schema: hazardserve_ingest::batch::nodes_schema,
    },
    TableDef {
        name: "sessions",
        schema: hazardserve_ingest::batch::sessions_schema,
    },
    TableDef {
        name: "rejects",
        schema: hazardserve_ingest::batch::rejects_schema,
    },
    TableDef {
        name: "observations",
        schema: hazardserve_ingest::batch::observations_schema,
    },
    TableDef {
        name: "requests",
        schema: hazardserve_ingest::workload::requests_schema,
    },
    TableDef {
        name: "runs",
        schema: runs_schema,
    },
    TableDef {
        name: "replay_requests",
        schema: replay_requests_schema,
    },
    TableDef {
        name: "replay_summary",
        schema: replay_summary_schema,
    },
    TableDef {
        name: "sweeps",
        schema: sweeps_schema,
    },
    TableDef {
        name: "sweep_cells",
        schema: sweep_cells_schema,
    },
];

/// Schema of `runs`.
pub(crate) fn runs_schema() -> SchemaRef {
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
pub(crate) fn replay_requests_schema() -> SchemaRef {
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
        Field::new("recovery_s", DataType::Float64, false),
        Field::new("interruption_causes", DataType::Utf8, true),
        Field::new("slo_met", DataType::Boolean, false),
        Field::new("dropped", DataType::Utf8, true),
        Field::new("scored", DataType::Boolean, false),
    ]))
}

/// Schema of `replay_summary`.
pub(crate) fn replay_summary_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("run_id", DataType::Utf8, false),
        Field::new("position", DataType::Int64, false),
        Field::new("policy", DataType::Utf8, false),
        Field::new("summary", DataType::Utf8, false),
    ]))
}

/// Schema of `sweeps`: one row per sweep.
pub(crate) fn sweeps_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("sweep_id", DataType::Utf8, false),
        Field::new("created_at", DataType::Utf8, false),
        Field::new("version", DataType::Utf8, false),
        Field::new("cells", DataType::Int64, false),
        Field::new("grid", DataType::Utf8, false),
    ]))
}

/// Schema of `sweep_cells`: one row per cell, its result as JSON.
pub(crate) fn sweep_cells_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("sweep_id", DataType::Utf8, false),
        Field::new("position", DataType::Int64, false),
        Field::new("cell", DataType::Utf8, false),
        Field::new("axes", DataType::Utf8, false),
        Field::new("config", DataType::Utf8, false),
        Field::new("requests", DataType::UInt64, false),
        Field::new("result", DataType::Utf8, false),
    ]))
}

/// Schema of the `sources` table (the `source` column comes from the partition path).
pub(crate) fn sources_schema() -> SchemaRef {
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
