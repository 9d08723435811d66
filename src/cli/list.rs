//! The listing commands: `sources`, `nodes`, `sessions`, `rejects` and `sql`.

use anyhow::{bail, Context};
use arrow::record_batch::RecordBatch;

use super::args::{Globals, ListArgs, SessionsArgs, SourceListArgs, SqlArgs};
use crate::named_queries;
use crate::store::Store;

fn named(globals: &Globals, name: &str, source: Option<&str>) -> anyhow::Result<Vec<RecordBatch>> {
    let store = Store::open(&globals.store)?;
    let q = named_queries::get(name).with_context(|| format!("no query named {name}"))?;
    let given: Vec<(String, String)> = source
        .map(|s| ("source".to_string(), s.to_string()))
        .into_iter()
        .collect();
    if let Some(source) = source {
        store.manifest(source)?;
    }
    let (sql, values) = q.bind(&given)?;
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    Ok(store.query()?.query_arrow(&sql, &values)?)
}

/// `hazardserve sources`. The table shows the columns people read first (`--wide`: all, with
/// the observation span of UTC sources as ISO-8601 times); csv, json and parquet have every
/// column as stored.
pub fn sources(globals: &Globals, args: ListArgs) -> anyhow::Result<()> {
    let batches = named(globals, "sources", None)?;
    if args.output.format != crate::output::OutputFormat::Table {
        return args.output.emit(globals, &batches);
    }
    let shown = batches
        .iter()
        .map(|b| sources_table(b, args.output.wide))
        .collect::<anyhow::Result<Vec<_>>>()?;
    args.output.emit(globals, &shown)
}

/// The `sources` table for people: narrow (source, kind, nodes, sessions, requests, censored
/// share as a percentage, span in days) unless `wide`; in both, observation times of UTC
/// sources as ISO-8601.
fn sources_table(b: &RecordBatch, wide: bool) -> anyhow::Result<RecordBatch> {
    use arrow::array::{Array, ArrayRef, Float64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let f64s = |name: &str| -> anyhow::Result<Float64Array> {
        let c = b
            .column_by_name(name)
            .with_context(|| format!("sources: no column {name}"))?;
        let c = arrow::compute::cast(c, &DataType::Float64)?;
        c.as_any()
            .downcast_ref::<Float64Array>()
            .cloned()
            .context("a float column")
    };
    let texts = |name: &str| -> anyhow::Result<StringArray> {
        let c = b
            .column_by_name(name)
            .with_context(|| format!("sources: no column {name}"))?;
        let c = arrow::compute::cast(c, &DataType::Utf8)?;
        c.as_any()
            .downcast_ref::<StringArray>()
            .cloned()
            .context("a text column")
    };
    let base = texts("time_base")?;
    let instant = |name: &str| -> anyhow::Result<ArrayRef> {
        let v = f64s(name)?;
        let out: StringArray = (0..v.len())
            .map(|i| (!v.is_null(i)).then(|| crate::output::clock_time(v.value(i), base.value(i))))
            .collect();
        Ok(Arc::new(out))
    };
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    if wide {
        for (f, c) in b.schema().fields().iter().zip(b.columns()) {
            if f.name() == "observation_start" || f.name() == "observation_end" {
                fields.push(Field::new(f.name(), DataType::Utf8, true));
                cols.push(instant(f.name())?);
            } else {
                fields.push(f.as_ref().clone());
                cols.push(c.clone());
            }
        }
    } else {
        for name in ["source", "kind", "nodes", "sessions", "requests"] {
            let c = b
                .column_by_name(name)
                .with_context(|| format!("sources: no column {name}"))?;
            fields.push(Field::new(name, c.data_type().clone(), true));
            cols.push(c.clone());
        }
        let share = f64s("censored_share")?;
        let pct: StringArray = (0..share.len())
            .map(|i| (!share.is_null(i)).then(|| format!("{:.1}%", 100.0 * share.value(i))))
            .collect();
        fields.push(Field::new("censored", DataType::Utf8, true));
        cols.push(Arc::new(pct));
        let days = f64s("span_days")?;
        fields.push(Field::new("days", DataType::Float64, true));
        cols.push(Arc::new(days));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// `hazardserve nodes --source S`.
pub fn nodes(globals: &Globals, args: SourceListArgs) -> anyhow::Result<()> {
    let batches = named(globals, "nodes", Some(&args.source))?;
    let store = Store::open(&globals.store)?;
    let medians = node_medians(&store, &args.source)?;
    let out = batches
        .iter()
        .map(|b| with_km_median(b, &medians))
        .collect::<anyhow::Result<Vec<_>>>()?;
    args.output.emit(globals, &out)
}

/// Each node's Kaplan-Meier median up-time (censored sessions count as "still up", never as
/// ends; left-truncated sessions enter at their age): `Ok(m)` when the curve reaches 0.5, else
/// `Err(t_max)`, the last time the curve was observed (the median is beyond it).
fn node_medians(
    store: &Store,
    source: &str,
) -> anyhow::Result<std::collections::HashMap<String, Result<f64, f64>>> {
    use crate::survival::km::KmFit;
    use crate::survival::SurvivalData;
    let data = crate::fit::load_sessions(store, source, None, true)?;
    let mut per_node: Vec<(Vec<f64>, Vec<bool>, Vec<f64>)> =
        vec![Default::default(); data.node_ids.len()];
    for s in &data.sessions {
        if let Some(n) = per_node.get_mut(s.node as usize) {
            n.0.push(s.entry + (s.end - s.start));
            n.1.push(s.event);
            n.2.push(s.entry);
        }
    }
    let mut out = std::collections::HashMap::new();
    for (id, (exit, event, entry)) in data.node_ids.iter().zip(per_node) {
        if exit.is_empty() {
            continue;
        }
        let sd = SurvivalData::new(&exit, &event).with_entry(&entry);
        let Ok(km) = KmFit::fit_data(&sd) else {
            continue;
        };
        let t_max = exit.iter().copied().fold(0.0, f64::max);
        out.insert(id.clone(), km.median().ok_or(t_max));
    }
    Ok(out)
}

/// Replaces the `median_up_s` column of the `nodes` query by the Kaplan-Meier median (null when
/// not reached) and adds `median_up`, which says "> t_max s (not reached)" in that case.
fn with_km_median(
    b: &RecordBatch,
    medians: &std::collections::HashMap<String, Result<f64, f64>>,
) -> anyhow::Result<RecordBatch> {
    use arrow::array::{Array, ArrayRef, Float64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let ids = b
        .column_by_name("node_id")
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .context("the nodes query has no text node_id column")?;
    let km: Vec<Option<Result<f64, f64>>> = (0..ids.len())
        .map(|i| {
            if ids.is_null(i) {
                None
            } else {
                medians.get(ids.value(i)).copied()
            }
        })
        .collect();
    let median: Float64Array = km.iter().map(|m| m.and_then(|r| r.ok())).collect();
    let text: StringArray = km
        .iter()
        .map(|m| {
            m.map(|r| match r {
                Ok(v) => format!("{v:.0} s"),
                Err(t) => format!("> {t:.0} s (not reached)"),
            })
        })
        .collect();
    let mut fields = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        if f.name() == "median_up_s" {
            fields.push(Field::new("median_up_s", DataType::Float64, true));
            cols.push(Arc::new(median.clone()));
            fields.push(Field::new("median_up", DataType::Utf8, true));
            cols.push(Arc::new(text.clone()));
        } else {
            fields.push(f.as_ref().clone());
            cols.push(c.clone());
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// `hazardserve rejects --source S`.
pub fn rejects(globals: &Globals, args: SourceListArgs) -> anyhow::Result<()> {
    args.output
        .emit(globals, &named(globals, "rejects", Some(&args.source))?)
}

/// `hazardserve sessions --source S [--format F] [--out FILE]`.
pub fn sessions(globals: &Globals, args: SessionsArgs) -> anyhow::Result<()> {
    args.output
        .emit(globals, &named(globals, "sessions", Some(&args.source))?)
}

/// `hazardserve sql`.
pub fn sql(globals: &Globals, args: SqlArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let (sql, values): (String, Vec<String>) = match (&args.sql, &args.query) {
        (Some(sql), None) => (sql.clone(), args.params.clone()),
        (None, Some(name)) => {
            let q = named_queries::get(name).with_context(|| unknown_query(name))?;
            // Values in the declared order, or KEY=VALUE pairs.
            let doc = q.doc();
            let given: Vec<(String, String)> = if args.params.iter().all(|p| p.contains('=')) {
                named_queries::parse_params(&args.params)?
            } else {
                if args.params.len() > doc.params.len() {
                    bail!(
                        "query {name} takes {} parameter(s) ({}), got {} values",
                        doc.params.len(),
                        doc.params
                            .iter()
                            .map(|p| p.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        args.params.len()
                    );
                }
                doc.params
                    .iter()
                    .map(|p| p.name.clone())
                    .zip(args.params.iter().cloned())
                    .collect()
            };
            q.bind(&given)?
        }
        _ => bail!("give SQL text or --query NAME"),
    };
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    run_sql(globals, &store, &sql, &values, &args.output)
}

/// "no query named X" with the names there are.
pub fn unknown_query(name: &str) -> String {
    let names: Vec<&str> = named_queries::QUERIES.iter().map(|q| q.name).collect();
    let near = crate::diag::similar_names(name, names.iter().copied());
    format!(
        "no query named {name:?}{}; named queries: {} (`hazardserve query --list` describes them)",
        crate::diag::did_you_mean(&near),
        names.join(", ")
    )
}

/// Runs a read-only statement with bound values and prints the result.
pub fn run_sql(
    globals: &Globals,
    store: &Store,
    sql: &str,
    values: &[&str],
    output: &super::args::OutputArgs,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    crate::store::is_read_only_statement(sql).map_err(anyhow::Error::msg)?;
    let catalog = store.query()?;
    catalog.lock_down()?;
    let batches = catalog.query_arrow(sql, values)?;
    globals.detail(format!(
        "query ran in {:.3} s",
        started.elapsed().as_secs_f64()
    ));
    output.emit(globals, &batches)
}
