//! The listing commands: `sources`, `nodes`, `sessions`, `rejects` and `sql`.

use std::io::Write;

use anyhow::{bail, Context};
use arrow::record_batch::RecordBatch;

use super::{ExportFormat, Globals, ListArgs, SessionsArgs, SourceListArgs, SqlArgs};
use crate::output::{render, OutputFormat};
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

fn print(batches: &[RecordBatch], format: OutputFormat) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    render(batches, format, &mut out)?;
    out.flush()?;
    Ok(())
}

/// `hazardserve sources`.
pub fn sources(globals: &Globals, args: ListArgs) -> anyhow::Result<()> {
    print(&named(globals, "sources", &[])?, args.format)
}

/// `hazardserve nodes --source S`.
pub fn nodes(globals: &Globals, args: SourceListArgs) -> anyhow::Result<()> {
    print(&named(globals, "nodes", &[&args.source])?, args.format)
}

/// `hazardserve rejects --source S`.
pub fn rejects(globals: &Globals, args: SourceListArgs) -> anyhow::Result<()> {
    print(&named(globals, "rejects", &[&args.source])?, args.format)
}

/// `hazardserve sessions --source S [--format F] [--out FILE]`.
pub fn sessions(globals: &Globals, args: SessionsArgs) -> anyhow::Result<()> {
    let batches = named(globals, "sessions", &[&args.source])?;
    let text_format = match args.format {
        ExportFormat::Table => Some(OutputFormat::Table),
        ExportFormat::Csv => Some(OutputFormat::Csv),
        ExportFormat::Json => Some(OutputFormat::Json),
        ExportFormat::Parquet => None,
    };
    match (text_format, &args.out) {
        (Some(f), None) => print(&batches, f),
        (Some(f), Some(path)) => {
            let mut buf = Vec::new();
            render(&batches, f, &mut buf)?;
            crate::store::write_atomic(path, &buf)?;
            globals.say(format!("wrote {}", path.display()));
            Ok(())
        }
        (None, None) => bail!("--format parquet needs --out FILE"),
        (None, Some(path)) => {
            let batch = arrow::compute::concat_batches(
                &batches
                    .first()
                    .map(|b| b.schema())
                    .context("the query returned no schema")?,
                &batches,
            )?;
            let tmp = path.with_extension("parquet.tmp");
            crate::store::write_parquet(&tmp, &batch)?;
            std::fs::rename(&tmp, path).with_context(|| format!("{}", path.display()))?;
            globals.say(format!(
                "wrote {} ({} sessions)",
                path.display(),
                batch.num_rows()
            ));
            Ok(())
        }
    }
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
    let batches = store.query()?.query_arrow(sql, &params)?;
    print(&batches, args.format)
}
