//! The experiment grid: policies x windows x seeds x parameter points, run in parallel with
//! rayon. Every run is independent and owns its random streams (derived from its seed, window
//! and request indices), and results are sorted by (policy, window, seed, parameter point), so
//! the output is identical whatever the thread count.

use rayon::prelude::*;
use serde::Serialize;

use crate::policy::{self, Params, PolicyKind};

use super::compare::{aggregate, PolicySummary};
use super::engine::simulate_unchecked;
use super::input::{validate_params, Cluster, ReplayConfig, ReplayError, Window, Workload};
use super::metrics::{AggregateOptions, RunMetrics};
use super::output::{RunOutput, RunSpec};

/// One point of a parameter grid (e.g. one hysteresis `h`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamPoint {
    /// Label reported with the results (e.g. `h=2`).
    pub label: String,
    /// The policy constants at this point.
    pub params: Params,
    /// The policies run at this point (`None`: all of the grid's). A point that changes only
    /// what some policies read (e.g. `overlap`, which only planned moves use) runs only those;
    /// the comparison pairs the others' rows at the first point, where they are the same.
    pub policies: Option<Vec<PolicyKind>>,
}

impl ParamPoint {
    /// One point per hysteresis value `h`, labelled `h=<value>`, other constants from `base`.
    pub fn hysteresis_sweep(base: Params, hs: &[f64]) -> Vec<ParamPoint> {
        hs.iter()
            .map(|&h| ParamPoint {
                label: format!("h={h}"),
                params: Params {
                    hysteresis_s: h,
                    ..base
                },
                policies: None,
            })
            .collect()
    }
}

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Grid {
    /// Policies.
    pub policies: Vec<PolicyKind>,
    /// Windows of the trace (their index seeds the runs).
    pub windows: Vec<Window>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Parameter points; empty means the single point [`ReplayConfig::params`] (label "").
    pub params: Vec<ParamPoint>,
    /// Arrival-rate scale of each window (`workload.load` offers each window a share of its
    /// own up capacity); empty means [`ReplayConfig::rate_scale`] for every window.
    pub rate_scales: Vec<f64>,
}

impl Grid {
    /// A grid without a parameter sweep.
    pub fn new(policies: Vec<PolicyKind>, windows: Vec<Window>, seeds: Vec<u64>) -> Grid {
        Grid {
            policies,
            windows,
            seeds,
            params: Vec::new(),
            rate_scales: Vec::new(),
        }
    }

    /// The same grid with window `k` replayed at arrival-rate scale `scales[k]` (empty: the
    /// configuration's scale for every window).
    pub fn with_rate_scales(self, scales: Vec<f64>) -> Grid {
        Grid {
            rate_scales: scales,
            ..self
        }
    }

    /// The same grid over the parameter points `points`.
    pub fn with_params(self, points: Vec<ParamPoint>) -> Grid {
        Grid {
            params: points,
            ..self
        }
    }

    /// Every run, in (policy, window, seed, parameter point) order.
    pub fn specs(&self, cfg: &ReplayConfig) -> Vec<RunSpec> {
        let single = [ParamPoint {
            label: String::new(),
            params: cfg.params,
            policies: None,
        }];
        let points: &[ParamPoint] = if self.params.is_empty() {
            &single
        } else {
            &self.params
        };
        let mut out = Vec::with_capacity(
            self.policies.len() * self.windows.len() * self.seeds.len() * points.len(),
        );
        for &policy in &self.policies {
            for (window_index, &window) in self.windows.iter().enumerate() {
                for &seed in &self.seeds {
                    for (param_index, p) in points.iter().enumerate() {
                        if p.policies
                            .as_ref()
                            .is_some_and(|only| !only.contains(&policy))
                        {
                            continue;
                        }
                        out.push(RunSpec {
                            policy,
                            window_index,
                            window,
                            seed,
                            param_index,
                            param_label: p.label.clone(),
                            params: p.params,
                            rate_scale: self.rate_scales.get(window_index).copied(),
                        });
                    }
                }
            }
        }
        out
    }
}

fn rank(k: PolicyKind) -> usize {
    PolicyKind::ALL
        .iter()
        .position(|&x| x == k)
        .unwrap_or(usize::MAX)
}

/// Runs the grid on the current rayon pool and returns every run's output sorted by
/// (policy in [`PolicyKind::ALL`] order, window, seed, parameter point). Inputs are validated
/// once; the first error in that order is returned.
pub fn run_grid(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    grid: &Grid,
) -> Result<Vec<RunOutput>, ReplayError> {
    run_each(cluster, workload, cfg, grid, |o| o)
}

/// [`run_grid`] keeping only each run's metrics (the records are summarised inside the worker
/// and dropped, for grids too large to hold every record).
pub fn run_grid_metrics(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    grid: &Grid,
) -> Result<Vec<RunMetrics>, ReplayError> {
    run_each(cluster, workload, cfg, grid, |o| o.metrics())
}

/// [`run_grid_metrics`] one window at a time: every run of a window (all its policies, seeds
/// and parameter points, in parallel) is simulated, handed to `each` in (policy, seed,
/// parameter point) order and dropped before the next window starts, so that memory holds
/// the fleet and one window's records, however many windows there are. Returns every run's
/// metrics in [`run_grid`]'s order and the number of requests simulated.
pub fn run_grid_streamed<E: From<ReplayError>>(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    grid: &Grid,
    each: &mut dyn FnMut(&RunOutput) -> Result<(), E>,
) -> Result<(Vec<RunMetrics>, usize), E> {
    let specs = checked_specs(cluster, workload, cfg, grid)?;
    let mut metrics: Vec<(RunKey, RunMetrics)> = Vec::with_capacity(specs.len());
    let mut simulated = 0usize;
    for w in 0..grid.windows.len() {
        let window: Vec<&RunSpec> = specs.iter().filter(|s| s.window_index == w).collect();
        let results: Vec<Result<(RunKey, RunOutput), ReplayError>> = window
            .par_iter()
            .map(|s| {
                let mut p = policy::build(s.policy, s.params, s.policy_seed());
                let key = (rank(s.policy), s.window_index, s.seed, s.param_index);
                simulate_unchecked(cluster, workload, cfg, s, p.as_mut()).map(|o| (key, o))
            })
            .collect();
        let mut outs = Vec::with_capacity(results.len());
        for r in results {
            outs.push(r?);
        }
        outs.sort_by_key(|(k, _)| *k);
        for (key, o) in outs {
            each(&o)?;
            simulated += o.records.len();
            metrics.push((key, o.metrics()));
        }
    }
    metrics.sort_by_key(|(k, _)| *k);
    Ok((metrics.into_iter().map(|(_, m)| m).collect(), simulated))
}

/// Validates the inputs and the grid once and returns its specs.
fn checked_specs(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    grid: &Grid,
) -> Result<Vec<RunSpec>, ReplayError> {
    cluster.validate()?;
    cfg.validate()?;
    workload.validate()?;
    if !grid.rate_scales.is_empty() && grid.rate_scales.len() != grid.windows.len() {
        return Err(ReplayError::BadConfig(format!(
            "{} rate scales for {} windows",
            grid.rate_scales.len(),
            grid.windows.len()
        )));
    }
    check_disjoint(&grid.windows)?;
    let specs = grid.specs(cfg);
    for s in &specs {
        if let Some(x) = s.rate_scale {
            if !(x.is_finite() && x > 0.0) {
                return Err(ReplayError::BadConfig(format!(
                    "window {}: rate_scale must be finite and positive, got {x}",
                    s.window_index
                )));
            }
        }
        cluster.supports(s.policy)?;
        validate_params(&s.params)?;
        s.window.end_us()?;
    }
    Ok(specs)
}

/// Windows are the units of every paired comparison: two that overlap share requests and node
/// sessions, so their differences are not independent and the intervals would not cover.
/// Overlapping windows are an error.
fn check_disjoint(windows: &[Window]) -> Result<(), ReplayError> {
    let mut spans: Vec<(i64, i64, usize)> = Vec::with_capacity(windows.len());
    for (k, w) in windows.iter().enumerate() {
        spans.push((w.start_us, w.end_us()?, k));
    }
    spans.sort_unstable();
    for pair in spans.windows(2) {
        let ((a0, a1, a), (b0, _, b)) = (pair[0], pair[1]);
        // One microsecond of overlap is the rounding of window starts to the microsecond.
        if b0 < a1 - 1 {
            return Err(ReplayError::BadConfig(format!(
                "windows {a} and {b} overlap ({:.1} s from {:.1} s, and from {:.1} s): paired \
                 comparisons need disjoint windows; use fewer or shorter windows",
                (a1 - a0) as f64 / 1e6,
                a0 as f64 / 1e6,
                b0 as f64 / 1e6
            )));
        }
    }
    Ok(())
}

/// Validates the inputs once, runs every spec of the grid in parallel, keeps `keep` of each
/// output, and returns them in (policy, window, seed, parameter point) order.
fn run_each<T: Send>(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    grid: &Grid,
    keep: impl Fn(RunOutput) -> T + Sync,
) -> Result<Vec<T>, ReplayError> {
    let specs = checked_specs(cluster, workload, cfg, grid)?;
    let results: Vec<Result<(RunKey, T), ReplayError>> = specs
        .par_iter()
        .map(|s| {
            let mut p = policy::build(s.policy, s.params, s.policy_seed());
            let key = (rank(s.policy), s.window_index, s.seed, s.param_index);
            simulate_unchecked(cluster, workload, cfg, s, p.as_mut()).map(|o| (key, keep(o)))
        })
        .collect();
    let mut out = Vec::with_capacity(results.len());
    for r in results {
        out.push(r?);
    }
    out.sort_by_key(|(k, _)| *k);
    Ok(out.into_iter().map(|(_, t)| t).collect())
}

/// Sort key of a run: policy rank, window, seed, parameter point.
type RunKey = (usize, usize, u64, usize);

/// Per-policy aggregates of finished runs ([`aggregate`]).
pub fn summarize(runs: &[RunOutput], opts: &AggregateOptions) -> Vec<PolicySummary> {
    let metrics: Vec<RunMetrics> = runs.iter().map(RunOutput::metrics).collect();
    aggregate(&metrics, opts)
}
