//! `hazardserve replay` and `hazardserve compare`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use super::Globals;
use crate::output::{self, human_float, render, Col, OutputFormat};
use crate::replay::{run_grid, summarize, AggregateOptions};
use crate::scenario::config::DEFAULT_CONFIG;
use crate::scenario::results::comparison_rows;
use crate::scenario::{self, RunInfo, ScenarioConfig, SummaryRow};
use crate::store::{Store, WriteLock};

/// `replay` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve replay --write-config > scenario.toml
  hazardserve replay --config scenario.toml
  hazardserve replay --source gce-preemptible --workload azure-conv --windows 10 --rate-scale 0.05
  hazardserve replay --source cbl-preemption-1node --workload azure-conv --policies hazard,fastest,oracle --format json

Policies see survival curves fitted only on what was observed before the first window.")]
pub struct ReplayArgs {
    /// Scenario file (TOML); flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Print a commented default scenario file and exit.
    #[arg(long)]
    pub write_config: bool,
    /// Availability source whose nodes serve ([nodes] source).
    #[arg(long)]
    pub source: Option<String>,
    /// Request workload source ([workload] source).
    #[arg(long)]
    pub workload: Option<String>,
    /// Policies to compare, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    pub policies: Vec<String>,
    /// Number of windows.
    #[arg(long)]
    pub windows: Option<usize>,
    /// Seeds per window.
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Window length, seconds.
    #[arg(long)]
    pub window_length: Option<f64>,
    /// Start of the first window (seconds on the trace clock, or RFC 3339).
    #[arg(long)]
    pub window_start: Option<String>,
    /// Place windows at seeded random starts instead of evenly.
    #[arg(long)]
    pub random_windows: bool,
    /// Hardware preset of every node.
    #[arg(long)]
    pub hardware: Option<String>,
    /// Multiply the workload's arrival rate.
    #[arg(long)]
    pub rate_scale: Option<f64>,
    /// Output-length estimate: exact, lognormal:SIGMA, bucket.
    #[arg(long)]
    pub estimator: Option<String>,
    /// Sample this many nodes of the source.
    #[arg(long)]
    pub sample: Option<usize>,
    /// Print the comparison without storing the run.
    #[arg(long)]
    pub no_save: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

impl ReplayArgs {
    /// The scenario: the file (or defaults) with the flags applied.
    pub fn scenario(&self) -> anyhow::Result<ScenarioConfig> {
        let mut cfg = match &self.config {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("{}: cannot read", p.display()))?;
                ScenarioConfig::from_toml(&text, &p.display().to_string())
                    .map_err(anyhow::Error::msg)?
            }
            None => ScenarioConfig::default(),
        };
        if let Some(s) = &self.source {
            cfg.nodes.source = s.clone();
        }
        if let Some(w) = &self.workload {
            cfg.workload.source = w.clone();
        }
        if !self.policies.is_empty() {
            cfg.replay.policies = self.policies.clone();
        }
        if let Some(n) = self.windows {
            cfg.replay.windows = n;
        }
        if let Some(k) = self.seeds {
            cfg.replay.seeds = k;
        }
        if let Some(l) = self.window_length {
            cfg.replay.window_length_s = l;
        }
        if let Some(s) = &self.window_start {
            cfg.replay.window_start = Some(s.clone());
        }
        if self.random_windows {
            cfg.replay.placement = "random".into();
        }
        if let Some(h) = &self.hardware {
            cfg.hardware.preset = h.clone();
        }
        if let Some(r) = self.rate_scale {
            if !(r.is_finite() && r > 0.0) {
                bail!("--rate-scale must be positive, got {r}");
            }
            cfg.workload.rate_scale = r;
        }
        if let Some(e) = &self.estimator {
            cfg.workload.estimator = e.clone();
        }
        if let Some(n) = self.sample {
            cfg.nodes.sample = n;
        }
        Ok(cfg)
    }
}

fn new_run_id() -> String {
    format!("run-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%3f"))
}

/// Runs a scenario, stores it (unless `save` is false) and returns the run id and rows.
/// `fixed_id` names the run instead of a fresh time-stamped id; such a run is stored again only
/// when its scenario or its input sources changed.
pub fn run_scenario(
    globals: &Globals,
    cfg: &ScenarioConfig,
    save: bool,
    fixed_id: Option<&str>,
) -> anyhow::Result<(String, Vec<SummaryRow>)> {
    let store = Store::open(&globals.store)?;
    let sc = scenario::build(&store, cfg)?;
    let n_runs = sc.grid.specs(&sc.config).len();
    globals.say(format!(
        "replaying {} requests over {} nodes of {}: {} runs ({} policies x {} windows x {} seeds{}), priors fitted before {:.0}",
        sc.workload.requests.len(),
        sc.cluster.nodes.len(),
        cfg.nodes.source,
        n_runs,
        sc.grid.policies.len(),
        sc.grid.windows.len(),
        sc.grid.seeds.len(),
        if sc.grid.params.len() > 1 { " x {default, overlap}" } else { "" },
        sc.cutoff_s
    ));
    let started = std::time::Instant::now();
    let runs = run_grid(&sc.cluster, &sc.workload, &sc.config, &sc.grid)?;
    let simulated: usize = runs.iter().map(|r| r.records.len()).sum();
    let secs = started.elapsed().as_secs_f64();
    globals.say(format!(
        "simulated {simulated} requests in {secs:.2} s ({:.0} requests/s)",
        simulated as f64 / secs.max(1e-9)
    ));
    let summaries = summarize(&runs, &AggregateOptions::default());
    let rows = comparison_rows(&summaries);
    let run_id = fixed_id.map_or_else(new_run_id, str::to_string);
    if save {
        let st = Store::open(&globals.store)?;
        let lock = WriteLock::acquire(&st)?;
        let config_toml = toml::to_string(cfg).unwrap_or_default();
        let key = format!(
            "{}|{}|{}|{}",
            env!("CARGO_PKG_VERSION"),
            config_toml,
            st.manifest(&cfg.nodes.source)?.content_key,
            st.manifest(&cfg.workload.source)?.content_key
        );
        let info = RunInfo {
            run_id: run_id.clone(),
            nodes_source: cfg.nodes.source.clone(),
            workload_source: cfg.workload.source.clone(),
            windows: sc.grid.windows.len(),
            seeds: sc.grid.seeds.clone(),
            cutoff_s: sc.cutoff_s,
            config: config_toml,
        };
        let names: Vec<String> = sc.cluster.nodes.iter().map(|n| n.name.clone()).collect();
        let key = if fixed_id.is_some() {
            key
        } else {
            run_id.clone()
        };
        let outcome = scenario::save_run(&st, &lock, &info, &key, &names, &runs, &rows)?;
        let what = match outcome {
            crate::store::IngestOutcome::Unchanged => "already stored",
            crate::store::IngestOutcome::Committed { .. } => "stored",
        };
        globals.say(format!(
            "{what} as {run_id} (`hazardserve compare {run_id}`)"
        ));
    }
    Ok((run_id, rows))
}

/// `hazardserve replay`.
pub fn replay(globals: &Globals, args: ReplayArgs) -> anyhow::Result<()> {
    if args.write_config {
        print!("{DEFAULT_CONFIG}");
        return Ok(());
    }
    let cfg = args.scenario()?;
    let (_, rows) = run_scenario(globals, &cfg, !args.no_save, None)?;
    print_rows(&rows, args.format)
}

/// `compare` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve compare              # the latest run\n  hazardserve compare run-20261130T120000123 --format json"
)]
pub struct CompareArgs {
    /// Run id (default: the latest run).
    pub run: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

/// `hazardserve compare`.
pub fn compare(globals: &Globals, args: CompareArgs) -> anyhow::Result<()> {
    let store = Store::open(&globals.store)?;
    let run = match args.run {
        Some(r) => r,
        None => scenario::latest_run(&store)?
            .context("no replay runs in the store yet: run `hazardserve replay` (or `hazardserve demo`) first")?,
    };
    let rows = scenario::load_summary(&store, &run)?;
    if rows.is_empty() {
        bail!("no run {run:?} in the store");
    }
    globals.say(format!("run {run}"));
    print_rows(&rows, args.format)
}

/// Prints comparison rows: JSON as the stored objects, CSV flat with `_ci_lo`/`_ci_hi`
/// columns, a table with `value [lo, hi]` cells.
pub fn print_rows(rows: &[SummaryRow], format: OutputFormat) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if format == OutputFormat::Json {
        let v: Vec<&serde_json::Value> = rows.iter().map(|r| &r.summary).collect();
        serde_json::to_writer_pretty(&mut out, &v)?;
        println!();
        return Ok(());
    }
    let get = |r: &SummaryRow, k: &str| r.summary.get(k).and_then(|v| v.as_f64());
    let ci = |r: &SummaryRow, k: &str, i: usize| {
        r.summary
            .get(format!("{k}_ci"))
            .and_then(|v| v.get(i))
            .and_then(|v| v.as_f64())
    };
    let mut cols = vec![(
        "policy",
        Col::Str(rows.iter().map(|r| Some(r.policy.clone())).collect()),
    )];
    if format == OutputFormat::Csv {
        let mut names = Vec::new();
        for k in crate::replay::metrics::METRICS.iter().chain(&["requests"]) {
            names.push((k.to_string(), format!("{k}_ci_lo"), format!("{k}_ci_hi")));
        }
        let mut owned: Vec<(String, Col)> = Vec::new();
        for (k, lo, hi) in names {
            owned.push((
                k.clone(),
                Col::F64(rows.iter().map(|r| get(r, &k)).collect()),
            ));
            if k != "requests" {
                owned.push((lo, Col::F64(rows.iter().map(|r| ci(r, &k, 0)).collect())));
                owned.push((hi, Col::F64(rows.iter().map(|r| ci(r, &k, 1)).collect())));
            }
        }
        let mut all: Vec<(&str, Col)> = cols;
        for (n, c) in &owned {
            all.push((n.as_str(), c.clone()));
        }
        let b = output::batch(all)?;
        render(&[b], format, &mut out)?;
        return Ok(());
    }
    let cell = |r: &SummaryRow, k: &str| -> Option<String> {
        let v = get(r, k)?;
        Some(match (ci(r, k, 0), ci(r, k, 1)) {
            (Some(lo), Some(hi)) => format!(
                "{} [{}, {}]",
                human_float(v),
                human_float(lo),
                human_float(hi)
            ),
            _ => human_float(v),
        })
    };
    for (k, title) in [
        ("mean_completion_s", "mean_s"),
        ("p99_completion_s", "p99_s"),
        ("ttft_p50_s", "ttft_p50_s"),
        ("slo_attainment", "slo"),
        ("goodput_tok_s", "goodput_tok_s"),
        ("unplanned_interruptions", "interrupts"),
        ("planned_migrations", "migrations"),
        ("gap_closed", "gap_closed"),
    ] {
        cols.push((title, Col::Str(rows.iter().map(|r| cell(r, k)).collect())));
    }
    let b = output::batch(cols)?;
    render(&[b], format, &mut out)?;
    Ok(())
}
