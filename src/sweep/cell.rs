//! Running one cell of a sweep and reading the regime map's answer out of it.
//!
//! A cell is one scenario, replayed by the same engine and aggregated by the same code as
//! `hazardserve replay`; what the sweep adds is the cell's verdict: `hazard` paired by window
//! against `fastest`, the best hazard-blind baseline and `uptime` (the age heuristic), the
//! overlap gain (`hazard --overlap` minus `hazard`), and the net effect of planned migration
//! (`hazard` minus `hazard-nomigrate`).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::grid::{value_text, Cell};
use crate::policy::PolicyKind;
use crate::replay::{
    aggregate, paired, run_grid_metrics, window_values, AggregateOptions, GapState, Metric,
    PairedDiff, PolicyLabel, PolicySummary, RunMetrics, Versus,
};
use crate::scenario::{build, ScenarioError};
use crate::store::Store;

/// The metrics the map reports: the design's objective (mean and p99 completion) and the
/// oracle's tested metric (unplanned interruptions).
pub const MAP_METRICS: [Metric; 3] = [
    Metric::MeanCompletion,
    Metric::P99Completion,
    Metric::UnplannedInterruptions,
];

/// The outcome of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellResult {
    /// Grid position.
    pub index: usize,
    /// The cell's key (`axis=value,...`).
    pub key: String,
    /// The axis values by axis key, as text.
    pub axes: Vec<(String, String)>,
    /// The cell's scenario as TOML.
    pub config: String,
    /// The comparison rows (as `compare --format json` prints them).
    pub rows: Vec<PolicySummary>,
    /// `hazard` minus `uptime`, paired by window.
    pub vs_uptime: Option<Versus>,
    /// `hazard --overlap` minus `hazard`, paired by window.
    pub overlap_gain: Option<Versus>,
    /// `hazard` minus `hazard-nomigrate`, paired by window: the net effect of planned migration.
    pub migration_effect: Option<Versus>,
    /// Requests simulated over every run of the cell.
    pub requests: u64,
    /// `hazard`'s value of each of [`MAP_METRICS`] per window (mean over seeds), so that cells
    /// that differ in one axis can be paired by window (see [`super::axis`]).
    pub hazard_windows: BTreeMap<usize, [Option<f64>; MAP_METRICS.len()]>,
}

/// Builds and replays one cell (store inputs are only read).
pub fn run_cell(store: &Store, cell: &Cell) -> Result<CellResult, ScenarioError> {
    let cfg = &cell.config;
    let sc = build(store, cfg)?;
    let runs = run_grid_metrics(&sc.cluster, &sc.workload, &sc.config, &sc.grid)?;
    let opts = AggregateOptions {
        gap_metric: Metric::from_key(&cfg.replay.gap_metric)
            .unwrap_or(crate::replay::DEFAULT_GAP_METRIC),
        ..AggregateOptions::default()
    };
    Ok(result_of(cell, &runs, &opts))
}

/// The cell's result from its runs.
pub fn result_of(cell: &Cell, runs: &[RunMetrics], opts: &AggregateOptions) -> CellResult {
    let rows = aggregate(runs, opts);
    let hazard = PolicyLabel::new(PolicyKind::Hazard);
    let overlap = PolicyLabel::with_param(PolicyKind::Hazard, "overlap");
    CellResult {
        index: cell.index,
        key: cell.key.clone(),
        axes: cell
            .values
            .iter()
            .map(|(k, v)| (k.clone(), value_text(v)))
            .collect(),
        config: toml::to_string(&cell.config).unwrap_or_default(),
        vs_uptime: paired(runs, &hazard, &PolicyLabel::new(PolicyKind::Uptime), opts),
        overlap_gain: paired(runs, &overlap, &hazard, opts),
        migration_effect: paired(
            runs,
            &hazard,
            &PolicyLabel::new(PolicyKind::HazardNomigrate),
            opts,
        ),
        requests: runs.iter().map(|r| r.summary.requests).sum(),
        hazard_windows: window_values(runs, &hazard)
            .into_iter()
            .map(|(w, v)| (w, MAP_METRICS.map(|m| v[m as usize])))
            .collect(),
        rows,
    }
}

/// A paired difference beats the reference (negative) with a CI that excludes 0.
fn beats(d: Option<PairedDiff>) -> bool {
    d.is_some_and(|d| d.direction() == Some(std::cmp::Ordering::Less))
}

impl CellResult {
    /// The `hazard` row (default parameters).
    pub fn hazard(&self) -> Option<&PolicySummary> {
        self.rows
            .iter()
            .find(|r| r.label == PolicyLabel::new(PolicyKind::Hazard))
    }

    /// `hazard` minus `fastest`.
    pub fn vs_fastest(&self) -> Option<&Versus> {
        self.hazard()?.vs_fastest.as_ref()
    }

    /// `hazard` minus the best hazard-blind baseline.
    pub fn vs_best_blind(&self) -> Option<&Versus> {
        let h = self.hazard()?;
        // When fastest is itself the best blind baseline the row keeps only vs_fastest.
        h.vs_best_blind.as_ref().or(h.vs_fastest.as_ref())
    }

    /// Whether `hazard` beats both the best hazard-blind baseline and `uptime` on mean or p99
    /// completion with a CI that excludes 0 (the design's objective).
    pub fn pays(&self) -> bool {
        [Metric::MeanCompletion, Metric::P99Completion]
            .into_iter()
            .any(|m| {
                beats(self.vs_best_blind().and_then(|v| v.get(m)))
                    && beats(self.vs_uptime.as_ref().and_then(|v| v.get(m)))
            })
    }

    /// Whether pre-emptive migration pays: `hazard` beats `hazard-nomigrate`, or
    /// `hazard --overlap` beats `hazard`, on mean or p99 completion with a CI that excludes 0.
    pub fn migration_pays(&self) -> bool {
        [Metric::MeanCompletion, Metric::P99Completion]
            .into_iter()
            .any(|m| {
                beats(self.migration_effect.as_ref().and_then(|v| v.get(m)))
                    || beats(self.overlap_gain.as_ref().and_then(|v| v.get(m)))
            })
    }

    /// Planned migrations per window of `hazard` (mean over windows).
    pub fn planned_migrations(&self) -> Option<f64> {
        self.hazard()?.get(Metric::PlannedMigrations).value
    }

    /// `hazard`'s share of the fastest-to-oracle gap closed (`None` = no gap).
    pub fn gap_closed(&self) -> Option<f64> {
        let g = self.hazard()?.gap_closed;
        (g.state == GapState::Measured).then_some(g.value).flatten()
    }

    /// The summary object of `sweep summary --format json`: the axis values by key, `cell`,
    /// `hazard_vs_fastest`, `hazard_vs_best_blind`, `hazard_vs_uptime`, `overlap_gain` and
    /// `migration_effect` (each keyed by [`MAP_METRICS`], each `{diff, ci_low, ci_high}`,
    /// hazard minus the other, negative = hazard better; `null` when the cell lacks the
    /// policies), `best_blind` (its name), `gap_closed` (number or null), `planned_migrations`,
    /// `pays` and `migration_pays`.
    pub fn summary_json(&self) -> Value {
        let mut o = Map::new();
        for (k, v) in &self.axes {
            o.insert(k.clone(), json!(v));
        }
        o.insert("cell".into(), json!(self.key));
        for (name, v) in [
            ("hazard_vs_fastest", self.vs_fastest()),
            ("hazard_vs_best_blind", self.vs_best_blind()),
            ("hazard_vs_uptime", self.vs_uptime.as_ref()),
            ("overlap_gain", self.overlap_gain.as_ref()),
            ("migration_effect", self.migration_effect.as_ref()),
        ] {
            o.insert(name.into(), v.map_or(Value::Null, map_json));
        }
        o.insert(
            "best_blind".into(),
            json!(self.vs_best_blind().map(|v| v.reference.to_string())),
        );
        o.insert("gap_closed".into(), json!(self.gap_closed()));
        o.insert(
            "planned_migrations".into(),
            json!(self.planned_migrations()),
        );
        o.insert("pays".into(), json!(self.pays()));
        o.insert("migration_pays".into(), json!(self.migration_pays()));
        Value::Object(o)
    }
}

/// `{metric: {diff, ci_low, ci_high}}` over [`MAP_METRICS`].
fn map_json(v: &Versus) -> Value {
    let mut o = Map::new();
    for m in MAP_METRICS {
        o.insert(
            m.key().into(),
            v.get(m).map_or(
                Value::Null,
                |d| json!({"diff": d.diff, "ci_low": d.ci_low, "ci_high": d.ci_high}),
            ),
        );
    }
    Value::Object(o)
}
