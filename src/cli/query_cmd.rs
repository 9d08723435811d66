//! `hazardserve query`: the named SQL analyses of `queries/` (or a SQL file) with bound
//! parameters.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::args::{Globals, OutputArgs};
use super::list::{run_sql, unknown_query};
use crate::named_queries::{self, Param};
use crate::output::{self, Col};
use crate::store::Store;

/// `query` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve query --list
  hazardserve query availability --param source=cbl-preemption-4node --param k=2
  hazardserve query session_quantiles --param by=instance_type --format csv
  hazardserve query churn --param source=stunner-80
  hazardserve query slowest_requests --param policy=fastest --param limit=5
  hazardserve query --file queries/churn.sql --param source=gce-preemptible

Parameters are bound by DuckDB, never pasted into the SQL text. In a SQL file
a parameter is written $name; a header line `-- Param name = default: about`
gives it a default.")]
pub struct QueryArgs {
    /// The named query (see --list).
    #[arg(required_unless_present_any = ["list", "file"], conflicts_with_all = ["list", "file"])]
    pub name: Option<String>,
    /// List the named queries: purpose, parameters and output columns.
    #[arg(long)]
    pub list: bool,
    /// Run the SQL in this file instead (read-only, parameters written $name).
    #[arg(long, value_name = "FILE", conflicts_with = "list")]
    pub file: Option<PathBuf>,
    /// A parameter, KEY=VALUE (repeatable).
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `query`.
pub fn run(globals: &Globals, args: QueryArgs) -> anyhow::Result<()> {
    if args.list {
        return list(globals, &args.output);
    }
    let given = named_queries::parse_params(&args.params)?;
    let (sql, values) = match (&args.name, &args.file) {
        (Some(name), _) => named_queries::get(name)
            .with_context(|| unknown_query(name))?
            .bind(&given)?,
        (None, Some(file)) => {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let mut params = named_queries::doc_of(&text).params;
            // Parameters a file does not declare are declared by giving them.
            for (k, _) in &given {
                if !params.iter().any(|p| p.name == *k) {
                    params.push(Param {
                        name: k.clone(),
                        default: None,
                        about: String::new(),
                    });
                }
            }
            named_queries::bind_sql(&file.display().to_string(), &text, &params, &given)?
        }
        (None, None) => anyhow::bail!("give a query name, --file FILE or --list"),
    };
    let store = Store::open(&globals.store)?;
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    run_sql(globals, &store, &sql, &values, &args.output)
}

/// `query --list`: one row per named query.
fn list(globals: &Globals, out: &OutputArgs) -> anyhow::Result<()> {
    let docs: Vec<(&str, named_queries::QueryDoc)> = named_queries::QUERIES
        .iter()
        .map(|q| (q.name, q.doc()))
        .collect();
    let params = |d: &named_queries::QueryDoc| {
        d.params
            .iter()
            .map(|p| match &p.default {
                Some(v) if v.is_empty() => format!("{}=''", p.name),
                Some(v) => format!("{}={v}", p.name),
                None => p.name.clone(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let batch = output::batch(vec![
        (
            "name",
            Col::Str(docs.iter().map(|(n, _)| Some(n.to_string())).collect()),
        ),
        (
            "params",
            Col::Str(docs.iter().map(|(_, d)| Some(params(d))).collect()),
        ),
        (
            "purpose",
            Col::Str(docs.iter().map(|(_, d)| Some(d.purpose.clone())).collect()),
        ),
        (
            "columns",
            Col::Str(
                docs.iter()
                    .map(|(_, d)| Some(d.columns.join(", ")))
                    .collect(),
            ),
        ),
    ])?;
    if out.format == output::OutputFormat::Table && out.out.is_none() {
        // The table would be far too wide: one block per query.
        use std::io::Write;
        let mut w = std::io::stdout().lock();
        for (name, d) in &docs {
            writeln!(w, "{name}")?;
            writeln!(w, "  {}", d.purpose)?;
            for p in &d.params {
                let default = match &p.default {
                    Some(v) if v.is_empty() => " (default '')".to_string(),
                    Some(v) => format!(" (default {v})"),
                    None => " (required)".to_string(),
                };
                writeln!(w, "  --param {}=...{default}: {}", p.name, p.about)?;
            }
            writeln!(w, "  columns: {}", d.columns.join(", "))?;
        }
        return Ok(());
    }
    out.emit(globals, &[batch])
}
