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
    args.output
        .emit(globals, &named(globals, "nodes", &[&args.source])?)
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
    let batches = store.query()?.query_arrow(sql, &params)?;
    globals.detail(format!(
        "query ran in {:.3} s",
        started.elapsed().as_secs_f64()
    ));
    args.output.emit(globals, &batches)
}
