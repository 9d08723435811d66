//! `hazardserve sweep`: run a grid of scenarios (the regime map), shard it, merge shards and
//! summarise a stored sweep.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::args::{Globals, OutputArgs, Verbosity};
use crate::output::{self, human_float, Col, OutputFormat};
use crate::replay::Metric;
use crate::store::{Store, WriteLock};
use crate::sweep::{self, AxisFilter, CellResult, GridFile, Shard, ShardInfo};

/// `sweep` arguments: run a grid, or one of the subcommands.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:
  hazardserve sweep --grid reports/sweeps/regime-map.toml --jobs 2
  hazardserve sweep --grid reports/sweeps/regime-map.toml --dry-run
  hazardserve sweep --grid reports/sweeps/demo.toml \\
      --where hardware.preset=phone
  hazardserve sweep summary
  hazardserve sweep summary --format json > map.json
  # Sharded: one shard per cluster array task (here in a loop), then merge
  for i in 0 1 2; do hazardserve sweep --grid reports/sweeps/demo.toml \\
      --shard $i/3 --out shards/; done
  hazardserve sweep merge shards/

Each cell is one scenario (see `hazardserve replay --write-config`); the grid file's [base]
sets scenario keys for every cell and [axes] lists the values whose product makes the cells.
Store inputs are only read while cells run, so shards can share one store."
)]
pub struct SweepArgs {
    /// A subcommand (summary, merge, list); without one, run the grid.
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// Running a grid.
    #[command(flatten)]
    pub run: SweepRunArgs,
}

/// Running a grid.
#[derive(Debug, Args)]
pub struct SweepRunArgs {
    /// The grid file (TOML with [base] and [axes]).
    #[arg(long, value_name = "FILE")]
    pub grid: Option<PathBuf>,
    /// Cells run at once (0 = one per core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Run only shard I of N (0-based, e.g. 0/3; cells are assigned by a hash of their key).
    #[arg(long, value_name = "I/N", requires = "out")]
    pub shard: Option<String>,
    /// With --shard: write the shard's results into this directory instead of the store.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Store the sweep under this id (default: sweep-<UTC time>).
    #[arg(long)]
    pub id: Option<String>,
    /// Run only the cells whose axis KEY has VALUE (repeatable): a slice of the grid, stored
    /// as a sweep of its own.
    #[arg(long = "where", value_name = "KEY=VALUE", value_parser = AxisFilter::parse_pair)]
    pub where_: Vec<(String, String)>,
    /// List the cells and exit.
    #[arg(long)]
    pub dry_run: bool,
}

/// `sweep` subcommands.
#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// The regime map of a stored sweep (default: the latest): per cell, hazard minus its
    /// hazard-blind twin (hazard-pooled), fastest, the best hazard-blind baseline and uptime,
    /// with paired CIs, and the two verdicts.
    Summary(SummaryArgs),
    /// Commit the shard files under one or more directories into the store as one sweep.
    Merge(MergeArgs),
    /// List the stored sweeps.
    List(ListSweepsArgs),
}

/// `sweep summary` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve sweep summary
  hazardserve sweep summary demo-map --format json
  hazardserve sweep summary demo-map --axis workload.load --within nodes.source

With --axis: one row per value of the axis (and of --within), hazard under the value minus
hazard under the reference, paired by window within each group of cells equal on every other
axis; diff is the mean over those groups with a 95 % bootstrap interval over groups, better
and worse count the groups whose own paired interval excludes 0.

JSON: one object per cell with the axis values by key, the declared reference,
hazard_vs_reference, hazard_vs_pooled (the hazard term: hazard minus its twin
hazard-pooled), hazard_vs_fastest, pooled_vs_fastest, hazard_vs_best_blind, hazard_vs_uptime,
overlap_gain, migration_effect, fastest_vs_least_loaded, memoryless_vs_fastest and
truth_vs_fastest (hazard-truth, on fleets with known laws) (each keyed by
mean_completion_s, p99_completion_s and unplanned_interruptions, each {diff, ci_low,
ci_high, p_value, q_value}: the first named policy minus the second, paired by window,
negative = the first better; q-values are Benjamini-Hochberg over the sweep's cells),
gap_closed (number, or null when there is no gap or its interval is imprecise), planned_migrations,
opportunity_s, pays, migration_pays, and the two verdicts in words, hazard_term and
load_forecast.")]
pub struct SummaryArgs {
    /// The sweep id (default: the latest).
    pub sweep: Option<String>,
    /// Compare the values of this axis instead: `hazard` under each value minus `hazard` under
    /// the reference value, paired by window in cells equal on every other axis.
    #[arg(long, value_name = "AXIS")]
    pub axis: Option<String>,
    /// With --axis: one row per value of this other axis (where does each value win?).
    #[arg(long, value_name = "AXIS", requires = "axis")]
    pub within: Option<String>,
    /// With --axis: the value the others are compared with (default: the axis's first value).
    #[arg(long, value_name = "VALUE", requires = "axis")]
    pub reference: Option<String>,
    /// With --axis: mean_completion_s, p99_completion_s or unplanned_interruptions.
    #[arg(long, default_value = "mean_completion_s", requires = "axis")]
    pub metric: String,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `sweep merge` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Example:
  hazardserve sweep merge shards/")]
pub struct MergeArgs {
    /// Directories holding shard files (shard-I-of-N.parquet and .json).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Store the sweep under this id (default: sweep-<UTC time>).
    #[arg(long)]
    pub id: Option<String>,
}

fn new_sweep_id() -> String {
    format!("sweep-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%3f"))
}

/// `hazardserve sweep`.
pub fn sweep(globals: &Globals, args: SweepArgs) -> anyhow::Result<()> {
    match args.command {
        Some(SweepCommand::Summary(a)) => summary(globals, a),
        Some(SweepCommand::Merge(a)) => merge(globals, a),
        Some(SweepCommand::List(a)) => list(globals, a),
        None => run(globals, args.run),
    }
}

fn run(globals: &Globals, args: SweepRunArgs) -> anyhow::Result<()> {
    let path = args.grid.context(
        "give a grid file (--grid FILE) or a subcommand; see `hazardserve sweep --help`",
    )?;
    let shard: Option<Shard> = args.shard.as_deref().map(str::parse).transpose()?;
    if args.out.is_some() && shard.is_none() {
        anyhow::bail!("--out writes a shard's results: give --shard I/N too");
    }
    let grid = GridFile::read(&path)?;
    let all = grid.cells()?;
    let n_all = all.len();
    let filter = AxisFilter(args.where_);
    let all = filter
        .apply(all, |c| {
            c.values
                .iter()
                .map(|(k, v)| (k.clone(), sweep::grid::value_text(v)))
                .collect()
        })
        .map_err(|e| anyhow::anyhow!("{}: --where: {e}", path.display()))?;
    // A slice is a sweep of its own: its filter is part of its grid text (so of its content
    // key, and shards of different slices do not merge), and its cells are the grid's.
    let grid_text = if filter.is_empty() {
        grid.text.clone()
    } else {
        format!("{}\n# --where {}\n", grid.text, filter.text())
    };
    let grid_cells = all.len();
    let cells = sweep::shard_cells(all, shard);
    if args.dry_run {
        let mut out = std::io::stdout().lock();
        for c in &cells {
            writeln!(out, "{}", c.key)?;
        }
        return Ok(());
    }
    let store = Store::open(&globals.store)?;
    let key = match shard {
        Some(_) => None,
        None => {
            // Fail before hours of work, not after.
            Store::check_writable(&globals.store)?;
            let key = sweep::content_key(&store, &grid_text, sweep::grid_sources(&cells))?;
            if let Some(id) = &args.id {
                if sweep::is_stored(&store, id, &key) {
                    globals.say(format!(
                        "sweep {id} of this grid over these inputs is already in the store (`hazardserve sweep summary {id}`)"
                    ));
                    return Ok(());
                }
            }
            Some(key)
        }
    };
    globals.say(format!(
        "sweep {}: {} of {} cells{}",
        path.display(),
        cells.len(),
        n_all,
        shard.map_or(String::new(), |s| format!(
            " (shard {}/{})",
            s.index, s.count
        ))
    ));
    let bar =
        (std::io::stderr().is_terminal() && globals.verbosity() != Verbosity::Quiet).then(|| {
            let b = indicatif::ProgressBar::new(cells.len() as u64);
            b.set_style(
                indicatif::ProgressStyle::with_template(
                    "cells {bar:40} {pos}/{len} [{elapsed_precise}, ETA {eta}]",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            b
        });
    let quiet_log = bar.is_none() && globals.verbosity() != Verbosity::Quiet;
    let total = cells.len();
    let started = std::time::Instant::now();
    let progress = |done: usize| {
        if let Some(b) = &bar {
            b.set_position(done as u64);
        } else if quiet_log {
            crate::diag::say(format!(
                "cells {done}/{total} ({:.0} s)",
                started.elapsed().as_secs_f64()
            ));
        }
    };
    let results = sweep::run_cells(&store, &cells, args.jobs, &progress)?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let secs = started.elapsed().as_secs_f64();
    let requests: u64 = results.iter().map(|r| r.requests).sum();
    globals.say(format!(
        "{} cells in {secs:.1} s ({:.1} cells/min, {requests} requests simulated)",
        results.len(),
        results.len() as f64 * 60.0 / secs.max(1e-9)
    ));
    if let (Some(s), Some(dir)) = (shard, &args.out) {
        let info = ShardInfo {
            version: env!("CARGO_PKG_VERSION").into(),
            grid: grid_text.clone(),
            shard: s.index,
            of: s.count,
            grid_cells,
            cells: results.iter().map(|r| r.key.clone()).collect(),
        };
        let file = sweep::write_shard(dir, &info, &results)?;
        globals.say(format!(
            "wrote {} (merge the shards with `hazardserve sweep merge {}`)",
            file.display(),
            dir.display()
        ));
        return Ok(());
    }
    store_sweep(globals, &store, args.id, key, &grid_text, &results)
}

fn store_sweep(
    globals: &Globals,
    store: &Store,
    id: Option<String>,
    key: Option<String>,
    grid_text: &str,
    results: &[CellResult],
) -> anyhow::Result<()> {
    let id = id.unwrap_or_else(new_sweep_id);
    crate::store::validate_source_name(&id)?;
    // Without a content key (inputs no longer in the store) the sweep is always stored anew.
    let key = key.unwrap_or_else(|| {
        format!(
            "{id}|{}",
            chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
        )
    });
    let lock = WriteLock::acquire_wait(store)?;
    sweep::save_sweep(store, &lock, &id, &key, grid_text, results)?;
    globals.say(format!("stored as {id} (`hazardserve sweep summary {id}`)"));
    Ok(())
}

fn merge(globals: &Globals, args: MergeArgs) -> anyhow::Result<()> {
    let (grid_text, cells) = sweep::read_shards(&args.dirs)?;
    let store = Store::open_or_create(&globals.store)?;
    globals.say(format!("merging {} cells", cells.len()));
    let sources = sweep::result_sources(&cells);
    let key = sweep::content_key(&store, &grid_text, sources.iter().map(String::as_str)).ok();
    store_sweep(globals, &store, args.id, key, &grid_text, &cells)
}

/// `sweep list` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve sweep list\n  hazardserve sweep list --format json"
)]
pub struct ListSweepsArgs {
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

fn list(globals: &Globals, args: ListSweepsArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let rows = sweep::list_sweeps(&store)?;
    globals.say(format!(
        "{} sweep(s) (`hazardserve sweep summary ID` shows one)",
        rows.len()
    ));
    let batch = arrow::record_batch::RecordBatch::try_from_iter([
        (
            "sweep_id",
            std::sync::Arc::new(arrow::array::StringArray::from_iter_values(
                rows.iter().map(|r| r.sweep_id.as_str()),
            )) as arrow::array::ArrayRef,
        ),
        (
            "created_at",
            std::sync::Arc::new(arrow::array::StringArray::from_iter_values(
                rows.iter().map(|r| r.created_at.as_str()),
            )),
        ),
        (
            "cells",
            std::sync::Arc::new(arrow::array::Int64Array::from_iter_values(
                rows.iter().map(|r| r.cells),
            )),
        ),
    ])?;
    args.output.emit(globals, &[batch])
}

fn summary(globals: &Globals, args: SummaryArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let id = match args.sweep {
        Some(s) => s,
        None => sweep::latest_sweep(&store)?
            .context("no sweeps in the store yet: run `hazardserve sweep --grid FILE` first")?,
    };
    let cells = sweep::load_sweep(&store, &id)?;
    globals.say(format!("sweep {id}: {} cells", cells.len()));
    match &args.axis {
        Some(axis) => {
            let metric = Metric::from_key(&args.metric).with_context(|| {
                format!(
                    "--metric {}: use one of {}",
                    args.metric,
                    sweep::MAP_METRICS.map(|m| m.key()).join(", ")
                )
            })?;
            let rows = sweep::compare_axis(
                &cells,
                axis,
                args.within.as_deref(),
                args.reference.as_deref(),
                metric,
            )?;
            print_axis(globals, &rows, args.within.as_deref(), metric, &args.output)
        }
        None => print_summary(globals, &cells, &args.output),
    }
}

/// Prints an axis comparison: JSON objects `{within, value, reference, contexts, diff, ci_low,
/// ci_high, better, worse}`; CSV the same columns; a table with `diff [lo, hi]`.
fn print_axis(
    globals: &Globals,
    rows: &[sweep::AxisRow],
    within: Option<&str>,
    metric: Metric,
    output: &OutputArgs,
) -> anyhow::Result<()> {
    let format = output.format;
    let diff = |r: &sweep::AxisRow| r.diff;
    let mut cols: Vec<(String, Col)> = Vec::new();
    if let Some(w) = within {
        cols.push((
            w.to_string(),
            Col::Str(rows.iter().map(|r| Some(r.within.clone())).collect()),
        ));
    }
    cols.push((
        "value".into(),
        Col::Str(rows.iter().map(|r| Some(r.value.clone())).collect()),
    ));
    cols.push((
        "reference".into(),
        Col::Str(rows.iter().map(|r| Some(r.reference.clone())).collect()),
    ));
    cols.push((
        "contexts".into(),
        Col::I64(rows.iter().map(|r| Some(r.contexts as i64)).collect()),
    ));
    let key = format!("hazard_diff_{}", metric.key());
    if format == OutputFormat::Table {
        cols.push((
            key,
            Col::Str(
                rows.iter()
                    .map(|r| {
                        Some(diff(r).map_or("-".into(), |d| {
                            output::interval_text(d.diff, d.ci_low.zip(d.ci_high))
                        }))
                    })
                    .collect(),
            ),
        ));
    } else {
        cols.push((
            key,
            Col::F64(rows.iter().map(|r| diff(r).map(|d| d.diff)).collect()),
        ));
        cols.push((
            "ci_low".into(),
            Col::F64(
                rows.iter()
                    .map(|r| diff(r).and_then(|d| d.ci_low))
                    .collect(),
            ),
        ));
        cols.push((
            "ci_high".into(),
            Col::F64(
                rows.iter()
                    .map(|r| diff(r).and_then(|d| d.ci_high))
                    .collect(),
            ),
        ));
    }
    cols.push((
        "better".into(),
        Col::I64(rows.iter().map(|r| Some(r.better as i64)).collect()),
    ));
    cols.push((
        "worse".into(),
        Col::I64(rows.iter().map(|r| Some(r.worse as i64)).collect()),
    ));
    let cols: Vec<(&str, Col)> = cols.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    output.emit(globals, &[output::batch(cols)?])
}

/// Prints the regime map: JSON as [`CellResult::summary_json`] objects; CSV flat (one column
/// per axis, then `<comparison>_<metric>` with `_ci_lo`/`_ci_hi` and the q-value `_q`,
/// `opportunity_s`); a table with the two verdicts and the hazard term's difference first,
/// then the declared reference, its q-value, the opportunity and `diff [lo, hi]` cells on mean
/// completion and interruptions. A gap closed without a gap prints as "none".
fn print_summary(
    globals: &Globals,
    cells: &[CellResult],
    output: &OutputArgs,
) -> anyhow::Result<()> {
    let format = output.format;
    if format == OutputFormat::Json {
        let v: Vec<serde_json::Value> = cells.iter().map(CellResult::summary_json).collect();
        return output.emit_json(globals, &serde_json::Value::Array(v), cells.len());
    }
    let axes: Vec<String> = cells
        .first()
        .map(|c| c.axes.iter().map(|(k, _)| k.clone()).collect())
        .unwrap_or_default();
    let mut cols: Vec<(String, Col)> = Vec::new();
    for (i, a) in axes.iter().enumerate() {
        cols.push((
            a.clone(),
            Col::Str(
                cells
                    .iter()
                    .map(|c| c.axes.get(i).map(|x| x.1.clone()))
                    .collect(),
            ),
        ));
    }
    // (column prefix, pairing name of `CellResult::pairing`).
    let comparisons: [(&str, &str); 11] = [
        ("vs_reference", "hazard_vs_reference"),
        ("vs_pooled", "hazard_vs_pooled"),
        ("vs_fastest", "hazard_vs_fastest"),
        ("pooled_vs_fastest", "pooled_vs_fastest"),
        ("vs_best_blind", "hazard_vs_best_blind"),
        ("vs_uptime", "hazard_vs_uptime"),
        ("overlap_gain", "overlap_gain"),
        ("migration_effect", "migration_effect"),
        ("fastest_vs_least_loaded", "fastest_vs_least_loaded"),
        ("memoryless_vs_fastest", "memoryless_vs_fastest"),
        ("truth_vs_fastest", "truth_vs_fastest"),
    ];
    let interval =
        |d: crate::replay::PairedDiff| output::interval_text(d.diff, d.ci_low.zip(d.ci_high));
    if format == OutputFormat::Csv || format == OutputFormat::Parquet {
        for (name, pairing) in comparisons {
            for m in sweep::MAP_METRICS {
                let d = |c: &CellResult| c.pairing(pairing).and_then(|v| v.get(m));
                let key = format!("{name}_{}", m.key());
                cols.push((
                    key.clone(),
                    Col::F64(cells.iter().map(|c| d(c).map(|d| d.diff)).collect()),
                ));
                cols.push((
                    format!("{key}_ci_lo"),
                    Col::F64(cells.iter().map(|c| d(c).and_then(|d| d.ci_low)).collect()),
                ));
                cols.push((
                    format!("{key}_ci_hi"),
                    Col::F64(cells.iter().map(|c| d(c).and_then(|d| d.ci_high)).collect()),
                ));
                cols.push((
                    format!("{key}_q"),
                    Col::F64(cells.iter().map(|c| c.q_value(pairing, m)).collect()),
                ));
            }
        }
        cols.push((
            "opportunity_s".into(),
            Col::F64(cells.iter().map(CellResult::opportunity_s).collect()),
        ));
        cols.push((
            "gap_closed".into(),
            Col::F64(cells.iter().map(CellResult::gap_closed).collect()),
        ));
    } else {
        cols.push((
            "reference".into(),
            Col::Str(cells.iter().map(|c| Some(c.reference.clone())).collect()),
        ));
        cols.push((
            "q (vs_reference mean)".into(),
            Col::Str(
                cells
                    .iter()
                    .map(|c| {
                        c.q_value("hazard_vs_reference", sweep::VERDICT_METRIC)
                            .map(|q| format!("{q:.3}"))
                    })
                    .collect(),
            ),
        ));
        cols.push((
            "opportunity_s".into(),
            Col::Str(
                cells
                    .iter()
                    .map(|c| c.opportunity_s().map(human_float))
                    .collect(),
            ),
        ));
        // hazard against the reference, its twin, fastest, the twin against fastest, the best
        // blind baseline and uptime.
        for (name, pairing) in comparisons.into_iter().take(6) {
            for m in [Metric::MeanCompletion, Metric::UnplannedInterruptions] {
                let short = if m == Metric::MeanCompletion {
                    "mean_s"
                } else {
                    "interrupts"
                };
                cols.push((
                    format!("{name} {short}"),
                    Col::Str(
                        cells
                            .iter()
                            .map(|c| c.pairing(pairing).and_then(|v| v.get(m)).map(interval))
                            .collect(),
                    ),
                ));
            }
        }
        cols.push((
            "gap_closed".into(),
            Col::Str(
                cells
                    .iter()
                    .map(|c| Some(c.gap_closed_text(human_float)))
                    .collect(),
            ),
        ));
    }
    cols.push((
        "planned_migrations".into(),
        Col::F64(cells.iter().map(CellResult::planned_migrations).collect()),
    ));
    cols.push((
        "pays".into(),
        Col::Bool(cells.iter().map(|c| Some(c.pays())).collect()),
    ));
    cols.push((
        "load_forecast_pays".into(),
        Col::Bool(cells.iter().map(|c| Some(c.load_forecast_pays())).collect()),
    ));
    cols.push((
        "migration_pays".into(),
        Col::Bool(cells.iter().map(|c| Some(c.migration_pays())).collect()),
    ));
    for (name, words) in [
        (
            "hazard_term",
            CellResult::hazard_term as fn(&CellResult) -> &'static str,
        ),
        ("load_forecast", CellResult::load_forecast),
    ] {
        cols.push((
            name.into(),
            Col::Str(cells.iter().map(|c| Some(words(c).to_string())).collect()),
        ));
    }
    let cols: Vec<(&str, Col)> = cols.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    // As a table, the answer first: after the axes, the two verdicts and the hazard term's
    // difference (`hazard` minus its twin `hazard-pooled`).
    let lead: Vec<&str> = axes
        .iter()
        .map(String::as_str)
        .chain(["hazard_term", "load_forecast", "vs_pooled mean_s"])
        .collect();
    output.emit_lead(globals, output::batch(cols)?, &lead)
}
