//! The canonical Arrow schemas and the conversion of a [`Trace`] into record batches.
//!
//! Schema version [`SCHEMA_VERSION`]. The `source` column is not stored in the files: the store
//! partitions every table by source (hive style, `source=<id>/`) and readers add it back.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int32Array, Int8Array, StringArray,
    TimestampMicrosecondArray, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::record_batch::RecordBatch;

use crate::model::{Reject, TimeBase, Trace};
use crate::Result;

/// Version of the canonical tables' schema; bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// `sessions`: one row per up-session.
pub fn sessions_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node_id", DataType::Utf8, false),
        Field::new("session_index", DataType::Int32, false),
        Field::new("start", DataType::Float64, false),
        Field::new("end", DataType::Float64, false),
        Field::new("start_utc", ts(), true),
        Field::new("end_utc", ts(), true),
        Field::new("duration_s", DataType::Float64, false),
        Field::new("event", DataType::Int8, false),
        Field::new("end_cause", DataType::Utf8, false),
        Field::new("left_truncated", DataType::Boolean, false),
        Field::new("entry_s", DataType::Float64, false),
        Field::new("resolution_s", DataType::Float64, false),
    ]))
}

/// `nodes`: one row per node with its attributes and observation window.
pub fn nodes_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node_id", DataType::Utf8, false),
        Field::new("zone", DataType::Utf8, true),
        Field::new("instance_type", DataType::Utf8, true),
        Field::new("node_group", DataType::Utf8, true),
        Field::new("observed_from", DataType::Float64, false),
        Field::new("observed_to", DataType::Float64, false),
    ]))
}

/// `rejects`: one row per record that could not be used.
pub fn rejects_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("line", DataType::UInt64, false),
        Field::new("raw", DataType::Utf8, false),
        Field::new("reason", DataType::Utf8, false),
    ]))
}

fn utc_micros(t: f64, base: TimeBase) -> Option<i64> {
    match base {
        TimeBase::Utc => Some((t * 1e6).round() as i64),
        TimeBase::Relative => None,
    }
}

/// The `sessions` batch of a trace (sessions must be in canonical order, see
/// [`Trace::canonicalize`], so that `session_index` counts per node).
pub fn sessions_batch(trace: &Trace) -> Result<RecordBatch> {
    let s = &trace.sessions;
    let mut index = Vec::with_capacity(s.len());
    for (i, sess) in s.iter().enumerate() {
        let k = if i > 0 && s[i - 1].node_id == sess.node_id {
            index[i - 1] + 1
        } else {
            0
        };
        index.push(k);
    }
    let tb = trace.time_base;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            s.iter().map(|x| x.node_id.as_str()),
        )),
        Arc::new(Int32Array::from(index)),
        Arc::new(Float64Array::from_iter_values(s.iter().map(|x| x.start))),
        Arc::new(Float64Array::from_iter_values(s.iter().map(|x| x.end))),
        Arc::new(
            TimestampMicrosecondArray::from(
                s.iter()
                    .map(|x| utc_micros(x.start, tb))
                    .collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(
            TimestampMicrosecondArray::from(
                s.iter().map(|x| utc_micros(x.end, tb)).collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(Float64Array::from_iter_values(
            s.iter().map(|x| x.duration_s()),
        )),
        Arc::new(Int8Array::from_iter_values(s.iter().map(|x| x.event as i8))),
        Arc::new(StringArray::from_iter_values(
            s.iter().map(|x| x.end_cause.as_str()),
        )),
        Arc::new(BooleanArray::from(
            s.iter().map(|x| x.left_truncated).collect::<Vec<_>>(),
        )),
        Arc::new(Float64Array::from_iter_values(s.iter().map(|x| x.entry_s))),
        Arc::new(Float64Array::from_iter_values(
            s.iter().map(|x| x.resolution_s),
        )),
    ];
    Ok(RecordBatch::try_new(sessions_schema(), cols)?)
}

/// The `nodes` batch of a trace.
pub fn nodes_batch(trace: &Trace) -> Result<RecordBatch> {
    let n = &trace.nodes;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            n.iter().map(|x| x.node_id.as_str()),
        )),
        Arc::new(StringArray::from(
            n.iter().map(|x| x.zone.as_deref()).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            n.iter()
                .map(|x| x.instance_type.as_deref())
                .collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            n.iter().map(|x| x.group.as_deref()).collect::<Vec<_>>(),
        )),
        Arc::new(Float64Array::from_iter_values(
            n.iter().map(|x| x.observed_from),
        )),
        Arc::new(Float64Array::from_iter_values(
            n.iter().map(|x| x.observed_to),
        )),
    ];
    Ok(RecordBatch::try_new(nodes_schema(), cols)?)
}

/// The `rejects` batch of a list of rejected records.
pub fn rejects_batch(r: &[Reject]) -> Result<RecordBatch> {
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            r.iter().map(|x| x.file.as_str()),
        )),
        Arc::new(UInt64Array::from_iter_values(r.iter().map(|x| x.line))),
        Arc::new(StringArray::from_iter_values(
            r.iter().map(|x| x.raw.as_str()),
        )),
        Arc::new(StringArray::from_iter_values(
            r.iter().map(|x| x.reason.as_str()),
        )),
    ];
    Ok(RecordBatch::try_new(rejects_schema(), cols)?)
}
