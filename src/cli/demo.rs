//! `hazardserve demo`: the main job on the bundled samples.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use hazardserve_ingest::adapters::{fta, gce_operations, tick_json};
use hazardserve_ingest::workload::WorkloadFormat;
use hazardserve_ingest::{InputFormat, Options, Polarity};

use super::args::{Globals, ListArgs, OutputArgs};
use super::ingest::{ingest_parsed, read_inputs, report_parse};
use super::list;
use crate::ingest_job::{parse_inputs, source_record, Parsed};
use crate::store::IngestOutcome;
use crate::synth;

/// `demo` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  cargo run --release -- demo\n  hazardserve --store /tmp/demo-store demo"
)]
pub struct DemoArgs {
    /// Directory of the sample traces (default: traces/samples of this checkout, regenerated
    /// into the store directory when not found).
    #[arg(long)]
    pub samples: Option<PathBuf>,
}

/// Finds the bundled samples, or regenerates them (deterministically) under the store.
fn samples_dir(globals: &Globals, given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        return Ok(p);
    }
    for candidate in [
        PathBuf::from("traces/samples"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/samples"),
    ] {
        if candidate.join("fta/event_trace.tab").is_file() {
            return Ok(candidate);
        }
    }
    let dir = globals.store.join("samples");
    synth::write_samples(&dir, synth::DEFAULT_SEED)?;
    globals.say(format!(
        "bundled samples not found; regenerated them in {}",
        dir.display()
    ));
    Ok(dir)
}

/// The sample sources the demo ingests: (source, directory under the samples, format, polarity).
const SAMPLE_SOURCES: &[(&str, &str, InputFormat, Option<Polarity>)] = &[
    (
        "sample-spot",
        "tick-json",
        InputFormat::Trace(tick_json::FORMAT),
        Some(Polarity::Available),
    ),
    ("sample-hpc", "fta", InputFormat::Trace(fta::FORMAT), None),
    (
        "sample-gce",
        "gce-operations",
        InputFormat::Trace(gce_operations::FORMAT),
        None,
    ),
    (
        "sample-requests",
        "workload",
        InputFormat::Workload(WorkloadFormat::LengthsCsv),
        None,
    ),
];

/// Runs the demo.
pub fn run(globals: &Globals, args: DemoArgs) -> anyhow::Result<()> {
    crate::store::Store::check_writable(&globals.store)?;
    let dir = samples_dir(globals, args.samples)?;
    for (source, sub, format, polarity) in SAMPLE_SOURCES {
        let path = dir.join(sub).to_string_lossy().into_owned();
        let files = read_inputs(globals, std::slice::from_ref(&path))?;
        let options = Options {
            polarity: *polarity,
            ..Options::default()
        };
        let parsed = parse_inputs(*format, &files, &options, &Default::default())?;
        report_parse(globals, &parsed);
        let opts = match &parsed {
            Parsed::Trace(..) => serde_json::to_value(&options),
            Parsed::Workload(..) => {
                serde_json::to_value(hazardserve_ingest::workload::WorkloadOptions::default())
            }
        }
        .context("encoding the ingest options")?;
        let rec = source_record(source, &parsed, &opts, &files);
        drop(files);
        let outcome = ingest_parsed(globals, &rec, &parsed, true)?;
        let what = match outcome {
            IngestOutcome::Unchanged => "already in the store",
            IngestOutcome::Committed { .. } => "ingested",
        };
        globals.say(format!(
            "{source}: {what}: {} from {path}",
            parsed.summary()
        ));
    }
    globals.say(format!("store: {}", globals.store.display()));
    list::sources(
        globals,
        ListArgs {
            output: OutputArgs::table(),
        },
    )?;
    // Fit: what hazard shape do the sample spot nodes have?
    let store = crate::store::Store::open(&globals.store)?;
    let data = crate::fit::load_sessions(&store, "sample-spot", None, false)?;
    for g in crate::fit::fit_groups(&data, None)? {
        println!(
            "\nsample-spot survival: {} sessions, median up-time {}, Weibull shape {} (95% CI {} to {}): {} hazard",
            g.sessions,
            g.median_s.map_or("not reached".into(), |m| format!("{:.0} s", m)),
            g.weibull_shape.map_or("-".into(), crate::output::human_float),
            g.weibull_shape_lo.map_or("-".into(), crate::output::human_float),
            g.weibull_shape_hi.map_or("-".into(), crate::output::human_float),
            g.verdict
        );
    }
    // Replay the sample workload over the sample spot nodes with every policy.
    let cfg = crate::scenario::ScenarioConfig::default();
    println!(
        "\nreplay of sample-requests over sample-spot ({} windows, every policy):",
        cfg.replay.windows
    );
    let opts = crate::scenario::RunOptions {
        save: true,
        fixed_id: Some("run-demo".into()),
        ..Default::default()
    };
    let result = super::replay_cmd::run_scenario(globals, &cfg, &opts)?;
    let run = result.run_id;
    super::replay_cmd::print_rows(globals, &result.rows, &OutputArgs::table())?;
    let (pays, cells) = demo_sweep(globals)?;
    let answer = answer(&result.rows, pays, cells);
    let store = globals.store.display();
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        println!("\n{answer}");
        println!(
            "\nOpening the TUI on {store} (q quits; `hazardserve --store {store} tui` reopens it)."
        );
        return crate::tui::run(&globals.store, Some(run));
    }
    println!(
        "\nNext: `hazardserve --store {store} tui` to inspect everything, `hazardserve --store {store} compare {run}`, `hazardserve --store {store} sweep summary {DEMO_SWEEP}`, `hazardserve --store {store} fit --source sample-gce`."
    );
    // The demo ends with its answer.
    println!("\n{answer}");
    Ok(())
}

/// The demo's grid (`reports/sweeps/demo.toml`).
const DEMO_GRID: &str = include_str!("../../reports/sweeps/demo.toml");

/// The id the demo stores its sweep under.
const DEMO_SWEEP: &str = "demo-map";

/// The demo's answer in one sentence, in the verdict words: in how many of the map's cells the
/// hazard term (`hazard` against its hazard-blind twin `hazard-pooled`) pays, and the replay's
/// `hazard` against `fastest`.
fn answer(rows: &[crate::replay::PolicySummary], pays: usize, cells: usize) -> String {
    use crate::replay::Metric;
    let hazard = rows.iter().find(|r| r.label.to_string() == "hazard");
    let versus = hazard.map_or("-", super::replay_cmd::verdict_vs_fastest);
    let diff = hazard
        .and_then(|r| r.vs_fastest.as_ref()?.get(Metric::MeanCompletion))
        .map(|d| {
            let ci = d.ci_low.zip(d.ci_high);
            format!(" ({} s)", crate::output::interval_text(d.diff, ci))
        })
        .unwrap_or_default();
    format!(
        "Answer: on the sample fleet the hazard term (hazard against its hazard-blind twin \
         hazard-pooled) pays in {pays} of the map's {cells} cells; in the replay, hazard \
         against fastest: {versus} in mean completion{diff}."
    )
}

/// Runs the demo's small regime map and stores it as [`DEMO_SWEEP`]; returns the cells where
/// the hazard term pays and the cells.
fn demo_sweep(globals: &Globals) -> anyhow::Result<(usize, usize)> {
    use crate::sweep::{self, GridFile};
    let grid = GridFile::parse(DEMO_GRID, "reports/sweeps/demo.toml", Path::new("."))?;
    let cells = grid.cells()?;
    println!(
        "\nregime map of the samples ({} cells: nodes x hardware x load, 4 windows each):",
        cells.len()
    );
    let store = crate::store::Store::open(&globals.store)?;
    let (results, reused) = sweep::run_or_reuse(&store, DEMO_SWEEP, DEMO_GRID, &cells, 0, &|_| {})?;
    if reused {
        globals.say(format!("{DEMO_SWEEP}: already in the store"));
    }
    let pays = results.iter().filter(|r| r.pays()).count();
    let load = results.iter().filter(|r| r.load_forecast_pays()).count();
    let nothing = results
        .iter()
        .filter(|r| r.hazard_term() == "nothing to win")
        .count();
    println!(
        "stored as {DEMO_SWEEP}: the hazard term (hazard vs its twin hazard-pooled) pays in {pays} of {n} cells \
         ({nothing} with nothing to win); the load forecast (fastest vs the reference) pays in \
         {load} of {n} (`hazardserve sweep summary {DEMO_SWEEP}`, or the TUI's Sweep screen)",
        n = results.len()
    );
    Ok((pays, results.len()))
}
