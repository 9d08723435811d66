//! Running a scenario end to end: build it from the store, replay the grid, compare the
//! policies, and (optionally) store the run.

use super::build::{build, Scenario};
use super::config::ScenarioConfig;
use super::decision_log::DecisionLog;
use super::error::ScenarioError;
use super::results::{comparison_rows, requests_batch, save_run, RequestSpill, RunInfo};
use crate::replay::{aggregate, run_grid_streamed, AggregateOptions, PolicySummary};
use crate::store::{IngestOutcome, Store, WriteLock};

/// How to run a scenario.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Store the run (`runs`, `replay_requests`, `replay_summary`).
    pub save: bool,
    /// Name the run with this id instead of a fresh time-stamped one; such a run is stored
    /// again only when its scenario or its input sources changed.
    pub fixed_id: Option<String>,
    /// Write each run's first `decision_limit` decisions with their inputs to this file
    /// ([`super::decision_log`]).
    pub decision_log: Option<std::path::PathBuf>,
    /// Decisions logged per run (with `decision_log`).
    pub decision_limit: usize,
}

/// What a run produced.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The run id (stored or not).
    pub run_id: String,
    /// The comparison rows.
    pub rows: Vec<PolicySummary>,
    /// Whether the run was stored now, was already stored, or was not saved.
    pub stored: Option<IngestOutcome>,
    /// Requests simulated over all runs of the grid.
    pub simulated_requests: usize,
    /// Wall time of the simulation, seconds.
    pub simulate_s: f64,
}

fn new_run_id() -> String {
    format!("run-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S%3f"))
}

/// One line describing a built scenario (for progress output).
pub(crate) fn describe(sc: &Scenario, cfg: &ScenarioConfig) -> String {
    let n_runs = sc.grid.specs(&sc.config).len();
    format!(
        "replaying {} requests over {} nodes of {}: {} runs ({} policies x {} windows x {} seeds{}), priors fitted before {:.0}",
        sc.workload.requests.len(),
        sc.cluster.nodes.len(),
        cfg.nodes_label(),
        n_runs,
        sc.grid.policies.len(),
        sc.grid.windows.len(),
        sc.grid.seeds.len(),
        if sc.grid.params.len() > 1 { " x {default, overlap}" } else { "" },
        sc.cutoff_s
    )
}

/// The key that decides whether a fixed-id run is stored again: program version, the whole
/// scenario and the content keys of its input sources (every pool's and the workload's).
fn content_key(store: &Store, cfg: &ScenarioConfig, toml: &str) -> Result<String, ScenarioError> {
    let mut key = format!("{}|{}", env!("CARGO_PKG_VERSION"), toml);
    for source in cfg.node_sources() {
        key.push('|');
        key.push_str(&store.manifest(&source)?.content_key);
    }
    key.push('|');
    key.push_str(&store.manifest(&cfg.workload.source)?.content_key);
    Ok(key)
}

/// Runs a scenario over `store`. `say` receives progress lines (the scenario, the
/// simulation speed, build notes, where the run was stored).
pub fn run(
    store: &Store,
    cfg: &ScenarioConfig,
    opts: &RunOptions,
    say: &mut dyn FnMut(String),
) -> Result<RunResult, ScenarioError> {
    let mut sc = build(store, cfg)?;
    let mut log = match &opts.decision_log {
        Some(path) => {
            sc.config.decision_log = opts.decision_limit;
            sc.config.decision_inputs = true;
            Some(DecisionLog::create(path, sc.grid.specs(&sc.config))?)
        }
        None => None,
    };
    for n in &sc.notes {
        say(format!("note: {n}"));
    }
    say(describe(&sc, cfg));
    let started = std::time::Instant::now();
    let run_id = opts.fixed_id.clone().unwrap_or_else(new_run_id);
    let names: Vec<String> = sc.cluster.nodes.iter().map(|n| n.name.clone()).collect();
    // Windows stream through: each window's records are spilled (to be stored) and summarised,
    // then dropped, so memory holds the fleet and one window's requests.
    let mut spill = if opts.save {
        Some(RequestSpill::new()?)
    } else {
        None
    };
    let windows = sc.grid.windows.len();
    let mut done_windows = std::collections::BTreeSet::new();
    let (metrics, simulated) = run_grid_streamed(
        &sc.cluster,
        &sc.workload,
        &sc.config,
        &sc.grid,
        &mut |o| -> Result<(), ScenarioError> {
            if let Some(spill) = spill.as_mut() {
                spill.write(&requests_batch(&run_id, &names, o)?)?;
            }
            if let Some(log) = log.as_mut() {
                log.write(o)?;
            }
            if done_windows.insert(o.window) && windows >= 10 && o.window % 10 == 9 {
                say(format!("window {} of {windows} replayed", o.window + 1));
            }
            Ok(())
        },
    )?;
    let secs = started.elapsed().as_secs_f64();
    if let Some(log) = log.take() {
        let path = log.finish()?;
        say(format!("decision log written to {}", path.display()));
    }
    say(format!(
        "simulated {simulated} requests in {secs:.2} s ({:.0} requests/s)",
        simulated as f64 / secs.max(1e-9)
    ));
    let opts_agg = AggregateOptions {
        gap_metric: cfg.replay.gap_metric,
        ..AggregateOptions::default()
    };
    let rows = comparison_rows(aggregate(&metrics, &opts_agg));
    let mut stored = None;
    if opts.save {
        // Wait for a running writer rather than throw the simulation away.
        let lock = WriteLock::acquire_wait(store)?;
        let config_toml = toml::to_string(cfg).map_err(ScenarioError::Serialize)?;
        let key = match opts.fixed_id {
            Some(_) => content_key(store, cfg, &config_toml)?,
            None => run_id.clone(),
        };
        let info = RunInfo {
            run_id: run_id.clone(),
            nodes_source: cfg.nodes_label(),
            workload_source: cfg.workload.source.clone(),
            windows: sc.grid.windows.len(),
            seeds: sc.grid.seeds.clone(),
            cutoff_s: sc.cutoff_s,
            config: config_toml,
        };
        let requests = match spill.take() {
            Some(s) => Box::new(s.into_batches()?) as Box<dyn Iterator<Item = _>>,
            None => Box::new(std::iter::empty()),
        };
        let outcome = save_run(store, &lock, &info, &key, requests, &rows)?;
        say(format!(
            "{} as {run_id} (`hazardserve compare {run_id}`)",
            match outcome {
                IngestOutcome::Unchanged => "already stored",
                IngestOutcome::Committed { .. } => "stored",
            }
        ));
        stored = Some(outcome);
    }
    Ok(RunResult {
        run_id,
        rows,
        stored,
        simulated_requests: simulated,
        simulate_s: secs,
    })
}
