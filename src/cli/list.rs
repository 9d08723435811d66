//! The listing commands: `sources`, `nodes`, `sessions`, `rejects` and `sql`.

use anyhow::{bail, Context};
use arrow::record_batch::RecordBatch;

use super::{Globals, ListArgs, SessionsArgs, SourceListArgs, SqlArgs};
use crate::queries;
use crate::store::Store;

fn named(globals: &Globals, name: &str, params: &[&str]) -> anyhow::Result<Vec<RecordBatch>> {
    let store = Store::open(&globals.store)?;
    let q = queries::get(name).with_context(|| format!("no query named {name}"))?;
    if let Some(source) = params.first() {
        store.manifest(source)?;
    }
    Ok(store.query()?.query_arrow(q.sql, params)?)
}

/// `hazardserve sources`.
pub fn sources(globals: &Globals, args: ListArgs) -> anyhow::Result<()> {
    args.output.emit(globals, &named(globals, "sources", &[])?)
}

/// `hazardserve nodes --source S`.
pub fn nodes(globals: &Globals, args: SourceListArgs) -> anyhow::Result<()> {
    let batches = named(globals, "nodes", &[&args.source])?;
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
        .emit(globals, &named(globals, "rejects", &[&args.source])?)
}

/// `hazardserve sessions --source S [--format F] [--out FILE]`.
pub fn sessions(globals: &Globals, args: SessionsArgs) -> anyhow::Result<()> {
    args.output
        .emit(globals, &named(globals, "sessions", &[&args.source])?)
}

/// `hazardserve sql`.
pub fn sql(globals: &Globals, args: SqlArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let params: Vec<&str> = args.params.iter().map(String::as_str).collect();
    let sql = match (&args.sql, &args.query) {
        (Some(sql), None) => sql.as_str(),
        (None, Some(name)) => {
            let q = queries::get(name).with_context(|| {
                let names: Vec<&str> = queries::QUERIES.iter().map(|q| q.name).collect();
                format!(
                    "no query named {name:?}; named queries: {}",
                    names.join(", ")
                )
            })?;
            if q.params != params.len() {
                bail!(
                    "query {name} takes {} --param value(s), got {}",
                    q.params,
                    params.len()
                );
            }
            q.sql
        }
        _ => bail!("give SQL text or --query NAME"),
    };
    let started = std::time::Instant::now();
    crate::store::is_read_only_statement(sql).map_err(anyhow::Error::msg)?;
    let catalog = store.query()?;
    catalog.lock_down()?;
    let batches = catalog.query_arrow(sql, &params)?;
    globals.detail(format!(
        "query ran in {:.3} s",
        started.elapsed().as_secs_f64()
    ));
    args.output.emit(globals, &batches)
}
