//! `hazardserve replay` and `hazardserve compare`.

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use super::args::{Globals, OutputArgs};
use crate::output::{self, Col, OutputFormat};
use crate::replay::{ForecastCalibration, Metric, PolicySummary, METRICS};
use crate::scenario::config::DEFAULT_CONFIG;
use crate::scenario::{self, RunOptions, RunResult, ScenarioConfig};
use crate::store::Store;

/// `replay` arguments.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  hazardserve replay --write-config > scenario.toml
  hazardserve replay --config scenario.toml
  hazardserve replay --source gce-preemptible --workload azure-conv \\
      --windows 10 --rate-scale 0.05
  hazardserve replay --source stunner-80 --workload azure-conv \\
      --hardware phone --model llama-3.2-1b --load 0.6
  hazardserve replay --source cbl-preemption-1node --workload azure-conv \\
      --load 0.6 --policies hazard,fastest,oracle --format json
  hazardserve replay --source gce-preemptible --workload azure-conv \\
      --announced lifetime-cap --windows 2 --rate-scale 0.05 \\
      --policies hazard,least-loaded
  hazardserve replay --source cbl-preemption-4node --workload azure-conv \\
      --engine simple --windows 2 --load 0.6 --policies hazard,fastest
  hazardserve replay --source cbl-preemption-4node --workload azure-conv \\
      --windows 1 --policies hazard --decision-log decisions.jsonl

Policies see survival curves fitted only on what was observed before the first window.
--announced CAUSE declares an end cause planned (known in advance): the curves count only
the other causes, every policy sees those ends coming and the replay drains nodes before them.
hazard-truth runs only where [policy] truth lists the fleet's laws.")]
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
    /// Policies to compare, comma-separated (default: all): hazard, hazard-nomigrate,
    /// memoryless, hazard-pooled, hazard-truth, fastest, least-loaded, random, uptime, oracle,
    /// bound.
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
    /// Model preset ([model] preset: KV bytes per token).
    #[arg(long)]
    pub model: Option<String>,
    /// Service-time model ([hardware] engine): iteration (the default: continuous batching
    /// with chunked prefill, calibrated per preset; `hazardserve presets --fidelity` shows the
    /// measurements) or simple (the ablation: per-request prefill and a batch slowdown).
    #[arg(long, value_name = "ENGINE", value_parser = ["simple", "iteration"])]
    pub engine: Option<String>,
    /// Multiply the workload's arrival rate.
    #[arg(long)]
    pub rate_scale: Option<f64>,
    /// Offered load: scale each window's arrival rate so its offered work is this fraction of
    /// that window's up capacity under the engine served with ([workload] load; replaces
    /// --rate-scale).
    #[arg(long, conflicts_with = "rate_scale")]
    pub load: Option<f64>,
    /// Output-length estimate: exact, lognormal:SIGMA, bucket.
    #[arg(long)]
    pub estimator: Option<String>,
    /// Sample this many nodes of the source.
    #[arg(long)]
    pub sample: Option<usize>,
    /// An end cause announced in advance ([nodes] announced_causes; a literal or a prefix
    /// ending in `*`; repeat or comma-separate): a planned end, drained, not a failure.
    #[arg(long, value_name = "CAUSE", value_delimiter = ',')]
    pub announced: Vec<String>,
    /// The metric "gap closed" is measured on (a metric key; default unplanned_interruptions,
    /// the metric on which the oracle is a tested reference).
    #[arg(long, value_name = "METRIC")]
    pub gap_metric: Option<String>,
    /// Print the comparison without storing the run.
    #[arg(long)]
    pub no_save: bool,
    /// Write each run's first decisions, with everything each read (nodes, curves, the
    /// forecast's answers), as JSON lines to FILE: the Python package's `HazardAwarePolicy`
    /// takes them again (`hazardserve.policy.replay_decision_log`).
    #[arg(long, value_name = "FILE")]
    pub decision_log: Option<PathBuf>,
    /// Decisions logged per run with --decision-log.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 200,
        requires = "decision_log"
    )]
    pub decision_limit: usize,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl ReplayArgs {
    /// The scenario: the file (or defaults) with the flags applied, validated before anything
    /// reads the store (a value from a flag and the same value from the file give the same
    /// error).
    pub fn scenario(&self) -> anyhow::Result<ScenarioConfig> {
        let mut cfg = match &self.config {
            Some(p) => {
                let text = std::fs::read_to_string(p)
                    .with_context(|| format!("{}: cannot read", p.display()))?;
                ScenarioConfig::from_toml(&text, &p.display().to_string())?
            }
            None => ScenarioConfig::default(),
        };
        if let Some(s) = &self.source {
            if !cfg.pools.is_empty() {
                anyhow::bail!(
                    "--source {s}: the scenario lists [[pools]], each with its own source; edit the pools instead"
                );
            }
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
        if let Some(m) = &self.model {
            cfg.model.preset = m.clone();
        }
        if let Some(h) = &self.hardware {
            cfg.hardware.preset = h.clone();
        }
        if let Some(e) = &self.engine {
            cfg.hardware.engine = e.clone();
        }
        if let Some(l) = self.load {
            cfg.workload.load = Some(l);
            cfg.workload.rate_scale = 1.0;
        }
        if let Some(r) = self.rate_scale {
            cfg.workload.load = None;
            cfg.workload.rate_scale = r;
        }
        if let Some(e) = &self.estimator {
            cfg.workload.estimator = e.parse().map_err(|e: crate::replay::UnknownEstimator| {
                crate::scenario::ScenarioError::invalid("workload.estimator", e.to_string())
            })?;
        }
        if let Some(n) = self.sample {
            cfg.nodes.sample = n;
        }
        if !self.announced.is_empty() {
            cfg.nodes.announced_causes = self.announced.clone();
        }
        if let Some(m) = &self.gap_metric {
            cfg.replay.gap_metric = crate::scenario::choices::metric_key::parse(m)
                .map_err(|e| crate::scenario::ScenarioError::invalid("replay.gap_metric", e))?;
        }
        cfg.validate()?;
        Ok(cfg)
    }
}

/// Runs a scenario over the global store, printing progress to stderr.
pub fn run_scenario(
    globals: &Globals,
    cfg: &ScenarioConfig,
    opts: &RunOptions,
) -> anyhow::Result<RunResult> {
    let store = Store::open(&globals.store)?;
    Ok(scenario::run(&store, cfg, opts, &mut |line| {
        globals.say(line)
    })?)
}

/// `hazardserve replay`.
pub fn replay(globals: &Globals, args: ReplayArgs) -> anyhow::Result<()> {
    if args.write_config {
        print!("{DEFAULT_CONFIG}");
        return Ok(());
    }
    let cfg = args.scenario()?;
    let opts = RunOptions {
        save: !args.no_save,
        fixed_id: None,
        decision_log: args.decision_log.clone(),
        decision_limit: args.decision_limit,
    };
    let result = run_scenario(globals, &cfg, &opts)?;
    print_rows(globals, &result.rows, &args.output)
}

/// `compare` arguments.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  hazardserve compare              # the latest run\n  hazardserve compare run-demo --format json"
)]
pub struct CompareArgs {
    /// Run id (default: the latest run).
    pub run: Option<String>,
    /// Output.
    #[command(flatten)]
    pub output: OutputArgs,
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
    print_rows(globals, &rows, &args.output)
}

/// A row's verdict against `fastest` on mean completion, in the sweep's words: `pays` (lower,
/// the paired interval excluding 0), `loses` (higher), `no difference`; `reference` for
/// `fastest` itself, `not a policy` for the bound, `-` where there is no pairing.
pub fn verdict_vs_fastest(r: &PolicySummary) -> &'static str {
    // The bound is no policy: its row is a floor, not a placement to judge.
    if r.label.to_string() == "bound" {
        return "not a policy";
    }
    let Some(versus) = r.vs_fastest.as_ref() else {
        return if r.label.to_string() == "fastest" {
            "reference"
        } else {
            "-"
        };
    };
    match versus
        .get(Metric::MeanCompletion)
        .and_then(|d| d.direction())
    {
        Some(std::cmp::Ordering::Less) => "pays",
        Some(_) => "loses",
        None if versus.get(Metric::MeanCompletion).is_some() => "no difference",
        None => "-",
    }
}

/// Prints comparison rows: JSON as [`PolicySummary::to_json`] objects; CSV flat with
/// `<metric>_ci_lo`/`_ci_hi` columns, the paired difference to `fastest` per metric
/// (`vs_fastest_<metric>` with its interval) and `gap_closed`; a table with `value [lo, hi]`
/// cells for the main metrics, the answer first (completion, interruptions, the verdict
/// against `fastest`), as wide as the terminal unless `--wide`. A gap closed without a gap to
/// close prints as "none".
pub fn print_rows(
    globals: &Globals,
    rows: &[PolicySummary],
    output: &OutputArgs,
) -> anyhow::Result<()> {
    let format = output.format;
    if format == OutputFormat::Json {
        let v: Vec<serde_json::Value> = rows.iter().map(PolicySummary::to_json).collect();
        return output.emit_json(globals, &serde_json::Value::Array(v), rows.len());
    }
    let labels = Col::Str(rows.iter().map(|r| Some(r.label.to_string())).collect());
    if format != OutputFormat::Table {
        let mut owned: Vec<(String, Col)> = vec![
            ("policy".into(), labels),
            (
                "requests".into(),
                Col::F64(rows.iter().map(|r| Some(r.requests as f64)).collect()),
            ),
        ];
        for (m, def) in Metric::ALL.iter().zip(METRICS.iter()) {
            let e = |r: &PolicySummary| r.get(*m);
            owned.push((
                def.key.into(),
                Col::F64(rows.iter().map(|r| e(r).value).collect()),
            ));
            owned.push((
                format!("{}_ci_lo", def.key),
                Col::F64(rows.iter().map(|r| e(r).ci.map(|c| c[0])).collect()),
            ));
            owned.push((
                format!("{}_ci_hi", def.key),
                Col::F64(rows.iter().map(|r| e(r).ci.map(|c| c[1])).collect()),
            ));
        }
        for (m, def) in Metric::ALL.iter().zip(METRICS.iter()) {
            let d = |r: &PolicySummary| r.vs_fastest.as_ref().and_then(|v| v.get(*m));
            owned.push((
                format!("vs_fastest_{}", def.key),
                Col::F64(rows.iter().map(|r| d(r).map(|d| d.diff)).collect()),
            ));
            owned.push((
                format!("vs_fastest_{}_ci_lo", def.key),
                Col::F64(rows.iter().map(|r| d(r).and_then(|d| d.ci_low)).collect()),
            ));
            owned.push((
                format!("vs_fastest_{}_ci_hi", def.key),
                Col::F64(rows.iter().map(|r| d(r).and_then(|d| d.ci_high)).collect()),
            ));
        }
        owned.push((
            "gap_metric".into(),
            Col::Str(
                rows.iter()
                    .map(|r| Some(r.gap_closed.metric.key().to_string()))
                    .collect(),
            ),
        ));
        owned.push((
            "gap_closed".into(),
            Col::F64(rows.iter().map(|r| r.gap_closed.value).collect()),
        ));
        owned.push((
            "gap_closed_ci_lo".into(),
            Col::F64(rows.iter().map(|r| r.gap_closed.ci.map(|c| c[0])).collect()),
        ));
        owned.push((
            "gap_closed_ci_hi".into(),
            Col::F64(rows.iter().map(|r| r.gap_closed.ci.map(|c| c[1])).collect()),
        ));
        type Field = fn(&ForecastCalibration) -> Option<f64>;
        let fields: [(&str, Field); 6] = [
            ("forecast_t_n", |f| Some(f.t_n as f64)),
            ("forecast_t_ratio_median", |f| f.t_ratio_median),
            ("forecast_t_mape", |f| f.t_mape),
            ("forecast_interruption_n", |f| Some(f.interruption_n as f64)),
            ("forecast_interruption_brier", |f| f.interruption_brier),
            ("forecast_interruption_rate", |f| f.interruption_rate),
        ];
        for (name, get) in fields {
            owned.push((
                name.into(),
                Col::F64(
                    rows.iter()
                        .map(|r| r.forecast.as_ref().and_then(get))
                        .collect(),
                ),
            ));
        }
        let cols: Vec<(&str, Col)> = owned.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
        return output.emit(globals, &[output::batch(cols)?]);
    }
    let interval =
        |v: f64, ci: Option<[f64; 2]>| output::interval_text(v, ci.map(|[lo, hi]| (lo, hi)));
    // The columns that answer the question first (the table keeps to the terminal's width;
    // `--wide` shows the rest): completion, interruptions, and the verdict against fastest.
    let mut cols: Vec<(&str, Col)> = vec![("policy", labels)];
    let metric_col = |m: Metric| {
        let cell = |r: &PolicySummary| {
            let e = r.get(m);
            e.value.map(|v| interval(v, e.ci))
        };
        (m.def().title, Col::Str(rows.iter().map(cell).collect()))
    };
    for m in [
        Metric::MeanCompletion,
        Metric::P99Completion,
        Metric::UnplannedInterruptions,
    ] {
        cols.push(metric_col(m));
    }
    cols.push((
        "vs_fastest",
        Col::Str(
            rows.iter()
                .map(|r| Some(verdict_vs_fastest(r).to_string()))
                .collect(),
        ),
    ));
    let diff = |r: &PolicySummary| {
        let d = r.vs_fastest.as_ref()?.get(Metric::MeanCompletion)?;
        Some(interval(
            d.diff,
            d.ci_low.zip(d.ci_high).map(|(a, b)| [a, b]),
        ))
    };
    cols.push((
        "mean_vs_fastest_s",
        Col::Str(rows.iter().map(diff).collect()),
    ));
    for m in [
        Metric::Unfinished,
        Metric::SloAttainment,
        Metric::Recovery,
        Metric::PlannedMigrations,
    ] {
        cols.push(metric_col(m));
    }
    // A priced fleet (`price_per_node_hour`): what each answer costs.
    if rows.iter().any(|r| r.get(Metric::Dollars).value.is_some()) {
        for m in [Metric::Dollars, Metric::GoodputPerDollar] {
            let cell = |r: &PolicySummary| {
                let e = r.get(m);
                e.value.map(|v| interval(v, e.ci))
            };
            cols.push((m.def().title, Col::Str(rows.iter().map(cell).collect())));
        }
    }
    // Prefix caching: the share of prompt tokens read from cache, and the cached state node
    // ends destroyed per window.
    if rows
        .iter()
        .any(|r| r.get(Metric::PrefixHitRate).value.is_some())
    {
        for m in [Metric::PrefixHitRate, Metric::CacheDestroyedTokens] {
            let cell = |r: &PolicySummary| {
                let e = r.get(m);
                e.value.map(|v| interval(v, e.ci))
            };
            cols.push((m.def().title, Col::Str(rows.iter().map(cell).collect())));
        }
    }
    let gap = |r: &PolicySummary| {
        Some(match r.gap_closed.state {
            crate::replay::compare::GapState::NotAPolicy => "-".to_string(),
            _ => r.gap_closed.text(interval),
        })
    };
    // Every row of a run measures the gap on the same metric; name it in the header.
    let gap_title = match rows.first() {
        Some(r) => format!("gap_closed ({})", r.gap_closed.metric.key()),
        None => "gap_closed".to_string(),
    };
    cols.push((&gap_title, Col::Str(rows.iter().map(gap).collect())));
    let forecast = |get: fn(&ForecastCalibration) -> Option<f64>, digits: usize| {
        Col::Str(
            rows.iter()
                .map(|r| {
                    r.forecast
                        .as_ref()
                        .and_then(get)
                        .map(|v| format!("{v:.digits$}"))
                })
                .collect(),
        )
    };
    cols.push(("t_forecast/served", forecast(|f| f.t_ratio_median, 3)));
    cols.push(("interruption_brier", forecast(|f| f.interruption_brier, 4)));
    output.emit(globals, &[output::batch(cols)?])
}
