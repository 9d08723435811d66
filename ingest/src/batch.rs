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

/// Version of the canonical tables' schema; bumped on any change. 2: the `requests` table's
/// prefix blocks, block size and conversation id (a store reads a version-1 source's requests
/// with those columns NULL).
pub const SCHEMA_VERSION: u32 = 2;

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
    sessions_rows(trace, 0..trace.sessions.len())
}

/// Rows per batch of [`sessions_batches`]: a batch of this many sessions takes about 90 MB.
pub const SESSION_BATCH_ROWS: usize = 1 << 20;

/// The `sessions` table of a trace as batches of at most `rows` rows each (at least one
/// batch, possibly empty), built one at a time as the iterator is drained: a writer that
/// writes each batch before asking for the next holds one batch, not the whole table, beside
/// the trace. The concatenation equals [`sessions_batch`].
pub fn sessions_batches(
    trace: &Trace,
    rows: usize,
) -> impl Iterator<Item = Result<RecordBatch>> + '_ {
    let n = trace.sessions.len();
    let rows = rows.max(1);
    let chunks = n.div_ceil(rows).max(1);
    (0..chunks).map(move |c| sessions_rows(trace, c * rows..((c + 1) * rows).min(n)))
}

/// The `sessions` rows `range` of a trace.
fn sessions_rows(trace: &Trace, range: std::ops::Range<usize>) -> Result<RecordBatch> {
    let all = &trace.sessions;
    // `session_index` continues from the rows before the range.
    let mut k = 0i32;
    if range.start > 0 {
        let node = &all[range.start].node_id;
        let mut i = range.start;
        while i > 0 && all[i - 1].node_id == *node {
            k += 1;
            i -= 1;
        }
    }
    let s = &all[range.clone()];
    let mut index = Vec::with_capacity(s.len());
    for (i, sess) in s.iter().enumerate() {
        if i > 0 {
            k = if s[i - 1].node_id == sess.node_id {
                k + 1
            } else {
                0
            };
        }
        index.push(k);
    }
    let tb = trace.time_base;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(s.iter().map(|x| &*x.node_id))),
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
            s.iter().map(|x| &*x.end_cause),
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
        Arc::new(StringArray::from_iter_values(n.iter().map(|x| &*x.node_id))),
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

/// Schema of `observations`: the raw samples of count series (k-of-N probes).
pub fn observations_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("node_id", DataType::Utf8, false),
        Field::new("t", DataType::Float64, false),
        Field::new("count", DataType::UInt64, false),
        Field::new("of", DataType::UInt64, true),
        Field::new("dt", DataType::Float64, false),
    ]))
}

/// The `observations` batch of a trace.
pub fn observations_batch(trace: &Trace) -> Result<RecordBatch> {
    let o = &trace.observations;
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter_values(
            o.iter().map(|x| x.node_id.as_str()),
        )),
        Arc::new(Float64Array::from_iter_values(o.iter().map(|x| x.t))),
        Arc::new(UInt64Array::from_iter_values(o.iter().map(|x| x.count))),
        Arc::new(UInt64Array::from(
            o.iter().map(|x| x.of).collect::<Vec<_>>(),
        )),
        Arc::new(Float64Array::from_iter_values(o.iter().map(|x| x.dt))),
    ];
    Ok(RecordBatch::try_new(observations_schema(), cols)?)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Kind, Session};

    fn trace() -> Trace {
        let mut t = Trace::empty(Kind::Volunteer, TimeBase::Relative);
        for (node, n) in [("a", 3), ("b", 1), ("c", 4)] {
            for i in 0..n {
                t.sessions.push(Session {
                    node_id: node.into(),
                    start: f64::from(i) * 10.0,
                    end: f64::from(i) * 10.0 + 5.0,
                    event: i % 2 == 0,
                    end_cause: crate::model::end_cause(if i % 2 == 0 {
                        "preempted"
                    } else {
                        "failure:7"
                    }),
                    left_truncated: i == 0,
                    entry_s: 0.0,
                    resolution_s: 0.0,
                });
            }
        }
        t
    }

    #[test]
    fn sessions_batches_concatenate_to_the_single_batch_at_any_size() {
        let t = trace();
        let whole = sessions_batch(&t).unwrap();
        let idx = |b: &RecordBatch| {
            b.column(1)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap()
                .values()
                .to_vec()
        };
        assert_eq!(idx(&whole), vec![0, 1, 2, 0, 0, 1, 2, 3]);
        for rows in [1, 2, 3, 5, 8, 100] {
            let parts: Vec<RecordBatch> =
                sessions_batches(&t, rows).collect::<Result<_>>().unwrap();
            assert_eq!(parts.len(), 8usize.div_ceil(rows));
            assert!(parts.iter().all(|p| p.num_rows() <= rows));
            let joined = arrow::compute::concat_batches(&sessions_schema(), &parts).unwrap();
            assert_eq!(joined, whole, "rows per batch {rows}");
        }
        let empty = Trace::empty(Kind::Volunteer, TimeBase::Relative);
        let parts: Vec<_> = sessions_batches(&empty, 4).collect();
        assert_eq!(parts.len(), 1);
        assert_eq!(parts[0].as_ref().unwrap().num_rows(), 0);
    }
}
