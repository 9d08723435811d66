//! Running one cell of a sweep and reading the regime map's answer out of it.
//!
//! A cell is one scenario, replayed by the same engine and aggregated by the same code as
//! `hazardserve replay`; what the sweep adds is the cell's verdict: `hazard` paired by window
//! against `fastest`, the best hazard-blind baseline and `uptime` (the age heuristic), the
//! overlap gain (`hazard --overlap` minus `hazard`), and the net effect of planned migration
//! (`hazard` minus `hazard-nomigrate`).
//!
//! Two verdicts are declared before the data are seen, each on mean completion
//! ([`VERDICT_METRIC`]) and each its own false-discovery family across the cells of a map
//! (Benjamini-Hochberg q-values, [`assign_q_values`]), so that a verdict names what pays:
//!
//! * **the hazard term** ([`CellResult::hazard_term`]): `hazard` against `hazard-pooled`, its
//!   hazard-blind twin: the same forecast, exposure pricing and planned migration, with every
//!   node at the fleet's mean exponential rate. (`fastest` is not the twin: under the
//!   iteration engine `hazard`'s planned moves also take requests off loaded nodes, which
//!   `fastest` never does, so `hazard - fastest` mixes that in.) A cell where the oracle
//!   cannot be told apart from `fastest` on interruptions has *nothing to win* (this takes
//!   precedence: there, any difference is not the hazard model's); otherwise the term *pays*
//!   when `hazard` is lower with q < [`FDR`], *loses* when higher, else *no difference*.
//! * **the load forecast** ([`CellResult::load_forecast`]): `fastest` against the cell's
//!   declared `replay.reference` (e.g. `least-loaded`): whether pricing each node's queue,
//!   prefill and batching pays, with or without hazards.
//!
//! A cell's `opportunity_s` is the seconds at stake per window: the interruption gap
//! `fastest - oracle` times `fastest`'s mean unplanned loss per interruption. `hazard` against
//! the reference (`hazard_vs_reference`) is kept as a pairing: it is the sum of the two.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use super::grid::{value_text, Cell};
use crate::policy::PolicyKind;
use crate::replay::{
    aggregate, paired, run_grid_metrics, window_values, AggregateOptions, GapState, Metric,
    PairedDiff, PolicyLabel, PolicySummary, RunMetrics, Versus,
};
use crate::scenario::build::{build_with, BuildCache};
use crate::scenario::ScenarioError;
use crate::store::Store;

/// The metrics the map reports: the design's objective (mean and p99 completion), the
/// oracle's tested metric (unplanned interruptions) and what a fleet's answer costs (goodput
/// per dollar: undefined, so without a p-value, in cells whose fleet has no price). Each
/// pairing and metric is its own false-discovery family.
pub const MAP_METRICS: [Metric; 4] = [
    Metric::MeanCompletion,
    Metric::P99Completion,
    Metric::UnplannedInterruptions,
    Metric::GoodputPerDollar,
];

/// The metric of the declared verdict: mean completion, the design's objective.
pub const VERDICT_METRIC: Metric = Metric::MeanCompletion;

/// The false-discovery rate the map's verdicts are controlled at.
pub const FDR: f64 = 0.05;

/// The pairings of a cell, by their `sweep summary` names. The two verdicts read
/// `hazard_vs_pooled` (the hazard term: hazard minus hazard-pooled) and `fastest_vs_reference`
/// (the load forecast: fastest minus the declared reference). Besides these and `hazard`'s
/// other pairings: what the twin's exposure pricing and planned moves do beyond `fastest`
/// (`pooled_vs_fastest`), the check of
/// the shared forecast (`fastest_vs_least_loaded`: fastest minus least-loaded, which a
/// correct load model keeps from being worse), the memoryless ablation
/// (`memoryless_vs_fastest`) and the ceiling of a perfect survival model
/// (`truth_vs_fastest`: hazard-truth minus fastest, on fleets whose laws are known).
pub const PAIRINGS: [&str; 12] = [
    "hazard_vs_reference",
    "hazard_vs_pooled",
    "hazard_vs_fastest",
    "pooled_vs_fastest",
    "fastest_vs_reference",
    "hazard_vs_best_blind",
    "hazard_vs_uptime",
    "overlap_gain",
    "migration_effect",
    "fastest_vs_least_loaded",
    "memoryless_vs_fastest",
    "truth_vs_fastest",
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
    /// `hazard` minus `hazard-pooled`, paired by window: the hazard term.
    pub vs_pooled: Option<Versus>,
    /// `hazard` minus `hazard --no-retained`, paired by window: what the retained-state term
    /// `R_i` buys (cells with `replay.include_ablations` and prefix caching).
    pub retained_effect: Option<Versus>,
    /// `hazard` minus `hazard --no-idle`, paired by window: what idle-state migration buys.
    pub idle_effect: Option<Versus>,
    /// The declared reference of the verdict (`replay.reference`).
    pub reference: String,
    /// `hazard` minus the declared reference.
    pub vs_reference: Option<Versus>,
    /// Benjamini-Hochberg q-values over the map's cells, by `pairing.metric_key`
    /// ([`assign_q_values`]); empty until assigned.
    pub q_values: BTreeMap<String, f64>,
    /// Requests simulated over every run of the cell.
    pub requests: u64,
    /// `hazard`'s value of each of [`MAP_METRICS`] per window (mean over seeds), so that cells
    /// that differ in one axis can be paired by window (see [`super::axis`]).
    pub hazard_windows: BTreeMap<usize, [Option<f64>; MAP_METRICS.len()]>,
}

/// Builds and replays one cell (store inputs are only read).
pub fn run_cell(store: &Store, cell: &Cell) -> Result<CellResult, ScenarioError> {
    run_cell_with(store, cell, &BuildCache::default())
}

/// [`run_cell`] reusing the sessions, requests and priors that earlier cells of the same store
/// put in `cache`.
pub(crate) fn run_cell_with(
    store: &Store,
    cell: &Cell,
    cache: &BuildCache,
) -> Result<CellResult, ScenarioError> {
    let cfg = &cell.config;
    let sc = build_with(store, cfg, cache)?;
    let runs = run_grid_metrics(&sc.cluster, &sc.workload, &sc.config, &sc.grid)?;
    let opts = AggregateOptions {
        gap_metric: cfg.replay.gap_metric,
        ..AggregateOptions::default()
    };
    Ok(result_of(cell, &runs, &opts))
}

/// The cell's result from its runs.
fn result_of(cell: &Cell, runs: &[RunMetrics], opts: &AggregateOptions) -> CellResult {
    let rows = aggregate(runs, opts);
    let hazard = PolicyLabel::new(PolicyKind::Hazard);
    let reference = cell.config.replay.reference.clone();
    let vs_reference = match reference.as_str() {
        "best-blind" => rows
            .iter()
            .find(|r| r.label == hazard)
            .and_then(|r| r.vs_best_blind.clone()),
        name => name
            .parse::<PolicyKind>()
            .ok()
            .and_then(|k| paired(runs, &hazard, &PolicyLabel::new(k))),
    };
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
        vs_uptime: paired(runs, &hazard, &PolicyLabel::new(PolicyKind::Uptime)),
        overlap_gain: paired(runs, &overlap, &hazard),
        migration_effect: paired(
            runs,
            &hazard,
            &PolicyLabel::new(PolicyKind::HazardNomigrate),
        ),
        vs_pooled: paired(runs, &hazard, &PolicyLabel::new(PolicyKind::HazardPooled)),
        retained_effect: paired(
            runs,
            &hazard,
            &PolicyLabel::with_param(PolicyKind::Hazard, "no-retained"),
        ),
        idle_effect: paired(
            runs,
            &hazard,
            &PolicyLabel::with_param(PolicyKind::Hazard, "no-idle"),
        ),
        reference,
        vs_reference,
        q_values: BTreeMap::new(),
        requests: runs.iter().map(|r| r.summary.requests).sum(),
        hazard_windows: window_values(runs, &hazard)
            .into_iter()
            .map(|(w, v)| (w, MAP_METRICS.map(|m| v[m as usize])))
            .collect(),
        rows,
    }
}

/// Assigns every cell's q-values: per pairing and metric of [`MAP_METRICS`], the
/// Benjamini-Hochberg adjustment of the p-values of all `cells` (the family is the map).
pub fn assign_q_values(cells: &mut [CellResult]) {
    for name in PAIRINGS {
        for m in MAP_METRICS {
            let p: Vec<Option<f64>> = cells
                .iter()
                .map(|c| {
                    c.pairing(name)
                        .and_then(|v| v.get(m))
                        .and_then(|d| d.p_value)
                })
                .collect();
            let key = format!("{name}.{}", m.key());
            for (c, q) in cells.iter_mut().zip(crate::replay::stats::bh_q_values(&p)) {
                match q {
                    Some(q) => c.q_values.insert(key.clone(), q),
                    None => c.q_values.remove(&key),
                };
            }
        }
    }
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

    /// The row of policy `k` (default parameters).
    fn row(&self, k: PolicyKind) -> Option<&PolicySummary> {
        self.rows.iter().find(|r| r.label == PolicyLabel::new(k))
    }

    /// The pairing named `name` (one of [`PAIRINGS`]).
    pub fn pairing(&self, name: &str) -> Option<Cow<'_, Versus>> {
        let borrowed = match name {
            "hazard_vs_reference" => self.vs_reference.as_ref(),
            "hazard_vs_fastest" => self.vs_fastest(),
            "hazard_vs_best_blind" => self.vs_best_blind(),
            "hazard_vs_uptime" => self.vs_uptime.as_ref(),
            "overlap_gain" => self.overlap_gain.as_ref(),
            "migration_effect" => self.migration_effect.as_ref(),
            "memoryless_vs_fastest" => self.row(PolicyKind::Memoryless)?.vs_fastest.as_ref(),
            "pooled_vs_fastest" => self.row(PolicyKind::HazardPooled)?.vs_fastest.as_ref(),
            "hazard_vs_pooled" => self.vs_pooled.as_ref(),
            "truth_vs_fastest" => self.row(PolicyKind::HazardTruth)?.vs_fastest.as_ref(),
            "fastest_vs_reference" => return self.fastest_vs_reference(),
            "fastest_vs_least_loaded" => {
                // least-loaded's row holds least-loaded minus fastest: negate it.
                let v = self.row(PolicyKind::LeastLoaded)?.vs_fastest.as_ref()?;
                return Some(Cow::Owned(Versus {
                    reference: PolicyLabel::new(PolicyKind::LeastLoaded),
                    diffs: v.diffs.map(|d| d.map(PairedDiff::negated)),
                }));
            }
            _ => None,
        };
        borrowed.map(Cow::Borrowed)
    }

    /// `fastest` minus the declared reference (`None` when the reference is `fastest` itself,
    /// or `best-blind` and `fastest` is the best hazard-blind baseline).
    fn fastest_vs_reference(&self) -> Option<Cow<'_, Versus>> {
        let fastest = self.row(PolicyKind::Fastest)?;
        match self.reference.as_str() {
            "best-blind" => fastest.vs_best_blind.as_ref().map(Cow::Borrowed),
            name => {
                let k = name.parse::<PolicyKind>().ok()?;
                if k == PolicyKind::Fastest {
                    return None;
                }
                // The reference's row holds reference minus fastest: negate it.
                let v = self.row(k)?.vs_fastest.as_ref()?;
                Some(Cow::Owned(Versus {
                    reference: PolicyLabel::new(k),
                    diffs: v.diffs.map(|d| d.map(PairedDiff::negated)),
                }))
            }
        }
    }

    /// The q-value of pairing `name` on `m`: the assigned one, else (a cell on its own) its
    /// p-value.
    pub fn q_value(&self, name: &str, m: Metric) -> Option<f64> {
        self.q_values
            .get(&format!("{name}.{}", m.key()))
            .copied()
            .or_else(|| self.pairing(name)?.get(m)?.p_value)
    }

    /// Whether pairing `name` is lower (negative) on `m` with q < [`FDR`].
    fn lower(&self, name: &str, m: Metric) -> bool {
        let d = self.pairing(name).and_then(|v| v.get(m));
        d.is_some_and(|d| d.diff < 0.0) && self.q_value(name, m).is_some_and(|q| q < FDR)
    }

    /// Whether the hazard term pays ([`Self::hazard_term`] is `pays`): `hazard` beats
    /// `hazard-pooled` on mean completion with q < [`FDR`] in a cell with something to win.
    pub fn pays(&self) -> bool {
        self.hazard_term() == "pays"
    }

    /// Whether the load forecast pays ([`Self::load_forecast`] is `pays`).
    pub fn load_forecast_pays(&self) -> bool {
        self.load_forecast() == "pays"
    }

    /// Whether pre-emptive migration pays: `hazard` beats `hazard-nomigrate`, or
    /// `hazard --overlap` beats `hazard`, on mean completion with q < [`FDR`].
    pub fn migration_pays(&self) -> bool {
        self.lower("migration_effect", VERDICT_METRIC) || self.lower("overlap_gain", VERDICT_METRIC)
    }

    /// The seconds at stake per window: `(I_fastest - I_oracle) * R_fastest / I_fastest`
    /// (unplanned interruptions per window `I`, recovery time per window `R`: the mean
    /// unplanned loss per interruption); 0 when `fastest` is never interrupted.
    pub fn opportunity_s(&self) -> Option<f64> {
        let row = |k: PolicyKind| self.rows.iter().find(|r| r.label == PolicyLabel::new(k));
        let (f, o) = (row(PolicyKind::Fastest)?, row(PolicyKind::Oracle)?);
        let i_f = f.get(Metric::UnplannedInterruptions).value?;
        let i_o = o.get(Metric::UnplannedInterruptions).value?;
        if i_f.is_nan() || i_f <= 0.0 {
            return Some(0.0);
        }
        let loss = f.get(Metric::Recovery).value? / i_f;
        Some((i_f - i_o).max(0.0) * loss)
    }

    /// Whether the oracle has fewer interruptions than `fastest` with an interval that
    /// excludes 0: there is something for a hazard model to win.
    pub fn has_opportunity(&self) -> bool {
        self.opportunity() == Some(true)
    }

    /// [`Self::has_opportunity`], or `None` when the cell did not run the oracle and
    /// `fastest` (nothing can be said of the opportunity).
    fn opportunity(&self) -> Option<bool> {
        let d = self
            .row(PolicyKind::Oracle)?
            .vs_fastest
            .as_ref()?
            .get(Metric::UnplannedInterruptions)?;
        Some(d.direction() == Some(std::cmp::Ordering::Less))
    }

    /// The hazard term's verdict in words: `nothing to win` when the oracle cannot be told
    /// apart from `fastest` on interruptions ([`Self::has_opportunity`]; this takes
    /// precedence, in cells that ran the oracle), else `pays` (`hazard` lower than its twin
    /// `hazard-pooled` on mean completion with q < [`FDR`]), `loses` (higher), `no difference`
    /// (also when there is no test), or `-` when the cell lacks either policy.
    pub fn hazard_term(&self) -> &'static str {
        if self.opportunity() == Some(false) {
            return "nothing to win";
        }
        if self.vs_pooled.is_none() {
            return "-";
        }
        self.words("hazard_vs_pooled")
    }

    /// The load forecast's verdict in words: `pays` (`fastest` lower than the declared
    /// reference on mean completion with q < [`FDR`]), `loses`, `no difference`,
    /// `reference` when `fastest` is the reference (or the best hazard-blind baseline, the
    /// reference being `best-blind`), or `-` when the cell lacks either policy.
    pub fn load_forecast(&self) -> &'static str {
        if self.pairing("fastest_vs_reference").is_some() {
            return self.words("fastest_vs_reference");
        }
        let fastest = self.row(PolicyKind::Fastest);
        let is_reference = match self.reference.as_str() {
            "best-blind" => fastest.is_some_and(|f| f.vs_best_blind.is_none()),
            name => name.parse::<PolicyKind>() == Ok(PolicyKind::Fastest),
        };
        if is_reference && fastest.is_some() {
            "reference"
        } else {
            "-"
        }
    }

    /// `pays`, `loses` or `no difference` for pairing `name` on [`VERDICT_METRIC`].
    fn words(&self, name: &str) -> &'static str {
        let d = self.pairing(name).and_then(|v| v.get(VERDICT_METRIC));
        let significant = self.q_value(name, VERDICT_METRIC).is_some_and(|q| q < FDR);
        match d {
            Some(d) if significant && d.diff < 0.0 => "pays",
            Some(d) if significant && d.diff > 0.0 => "loses",
            _ => "no difference",
        }
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

    /// `hazard`'s share of the gap in words when it is not a number: `none` (no gap, or no
    /// `hazard` row) or `imprecise` (see [`GapState::Imprecise`]); the number as text otherwise.
    pub fn gap_closed_text(&self, number: impl Fn(f64) -> String) -> String {
        self.hazard()
            .map_or("none".into(), |h| h.gap_closed.text(|v, _| number(v)))
    }

    /// The summary object of `sweep summary --format json`: the axis values by key, `cell`,
    /// `hazard_vs_pooled` (the hazard term), `hazard_vs_fastest`, `pooled_vs_fastest`,
    /// `hazard_vs_best_blind`, `hazard_vs_uptime`, `overlap_gain`,
    /// `migration_effect`, `fastest_vs_least_loaded`, `memoryless_vs_fastest` and
    /// `truth_vs_fastest` (each keyed by [`MAP_METRICS`], each `{diff, ci_low, ci_high}`, the
    /// first named policy minus the second, negative = the first better; `null` when the cell
    /// lacks the policies), `best_blind` (its name), `gap_closed` (number or null), `planned_migrations`,
    /// `pays` (the hazard term pays), `load_forecast_pays` and `migration_pays`; `reference`
    /// (the declared one), `hazard_vs_reference` and `fastest_vs_reference`, a `p_value` and
    /// `q_value` beside every paired difference, `opportunity_s`, and the two verdicts in words,
    /// `hazard_term` and `load_forecast`.
    pub fn summary_json(&self) -> Value {
        let mut o = Map::new();
        for (k, v) in &self.axes {
            o.insert(k.clone(), json!(v));
        }
        o.insert("cell".into(), json!(self.key));
        o.insert("reference".into(), json!(self.reference));
        for name in PAIRINGS {
            let v = self.pairing(name);
            o.insert(
                name.into(),
                v.map_or(Value::Null, |v| map_json(&v, |m| self.q_value(name, m))),
            );
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
        o.insert("opportunity_s".into(), json!(self.opportunity_s()));
        o.insert("pays".into(), json!(self.pays()));
        o.insert(
            "load_forecast_pays".into(),
            json!(self.load_forecast_pays()),
        );
        o.insert("migration_pays".into(), json!(self.migration_pays()));
        o.insert("hazard_term".into(), json!(self.hazard_term()));
        o.insert("load_forecast".into(), json!(self.load_forecast()));
        Value::Object(o)
    }
}

/// `{metric: {diff, ci_low, ci_high, p_value, q_value}}` over [`MAP_METRICS`].
fn map_json(v: &Versus, q: impl Fn(Metric) -> Option<f64>) -> Value {
    let mut o = Map::new();
    for m in MAP_METRICS {
        o.insert(
            m.key().into(),
            v.get(m).map_or(Value::Null, |d| {
                json!({
                    "diff": d.diff,
                    "ci_low": d.ci_low,
                    "ci_high": d.ci_high,
                    "p_value": d.p_value,
                    "q_value": q(m),
                })
            }),
        );
    }
    Value::Object(o)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::metrics::RunSummary;

    const NOISE: [f64; 6] = [0.3, -0.2, 0.1, -0.4, 0.25, -0.05];

    /// A run of `policy` in window `w`: mean completion `mean_s` and `interruptions`, each
    /// with the window's noise (shifted by `shift` so that policies differ in spread).
    fn run(
        policy: PolicyKind,
        w: usize,
        mean_s: f64,
        interruptions: f64,
        shift: usize,
    ) -> RunMetrics {
        let e = NOISE[(w + shift) % NOISE.len()];
        let mut values = [None; crate::replay::metrics::N_METRICS];
        values[Metric::MeanCompletion as usize] = Some(mean_s + e);
        values[Metric::UnplannedInterruptions as usize] = Some(interruptions + e.abs() * 10.0);
        values[Metric::Recovery as usize] = Some(interruptions * 2.0);
        RunMetrics {
            policy,
            window: w,
            seed: 1,
            param: 0,
            param_label: String::new(),
            summary: RunSummary {
                requests: 10,
                values,
                interruptions_by_cause: BTreeMap::new(),
                calibration: Default::default(),
                dollars_by_pool: BTreeMap::new(),
                good_tokens: 0.0,
                kv_preemptions: 0.0,
                forecast_fallbacks: 0.0,
                prefix: [None; 2],
            },
        }
    }

    /// A cell of 6 windows: (policy, mean completion, interruptions) per policy.
    fn cell(reference: &str, policies: &[(PolicyKind, f64, f64)]) -> CellResult {
        let runs: Vec<RunMetrics> = (0..6)
            .flat_map(|w| {
                policies
                    .iter()
                    .enumerate()
                    .map(move |(k, &(p, m, i))| run(p, w, m, i, k))
            })
            .collect();
        CellResult {
            index: 0,
            key: "c".into(),
            axes: Vec::new(),
            config: String::new(),
            rows: aggregate(&runs, &AggregateOptions::default()),
            vs_uptime: None,
            overlap_gain: None,
            migration_effect: None,
            vs_pooled: paired(
                &runs,
                &PolicyLabel::new(Hazard),
                &PolicyLabel::new(HazardPooled),
            ),
            retained_effect: None,
            idle_effect: None,
            reference: reference.into(),
            vs_reference: None,
            q_values: BTreeMap::new(),
            requests: 0,
            hazard_windows: BTreeMap::new(),
        }
    }

    use PolicyKind::{Fastest, Hazard, HazardPooled, LeastLoaded, Oracle};

    /// What each state term buys is `hazard` minus its ablation, paired by window: 1 s for
    /// the retained-state term (an interval below 0), nothing for idle-state migration (an
    /// interval that holds 0); a cell without ablations has neither.
    #[test]
    fn each_ablation_is_paired_with_hazard() {
        let points = [
            (Hazard, "", 9.0),
            (Hazard, "no-retained", 10.0),
            (Hazard, "no-idle", 9.0),
            (Fastest, "", 10.0),
        ];
        let runs: Vec<RunMetrics> = (0..6)
            .flat_map(|w| {
                points
                    .iter()
                    .enumerate()
                    .map(move |(k, &(p, label, m))| RunMetrics {
                        param: usize::from(!label.is_empty()) * k,
                        param_label: label.to_string(),
                        ..run(p, w, m, 1.0, k)
                    })
            })
            .collect();
        let cell = Cell {
            index: 0,
            key: "c".into(),
            values: Vec::new(),
            config: crate::scenario::ScenarioConfig::default(),
        };
        let c = result_of(&cell, &runs, &AggregateOptions::default());
        let effect = |v: &Option<Versus>| {
            let d = v
                .as_ref()
                .and_then(|v| v.get(Metric::MeanCompletion))
                .expect("paired");
            (d.diff, d.ci_low.expect("low"), d.ci_high.expect("high"))
        };
        let (diff, low, high) = effect(&c.retained_effect);
        assert!(
            (diff + 1.0).abs() < 1e-9 && high < 0.0,
            "{diff} [{low}, {high}]"
        );
        let (diff, low, high) = effect(&c.idle_effect);
        assert!(
            diff.abs() < 1e-9 && low < 0.0 && high > 0.0,
            "{diff} [{low}, {high}]"
        );
        let plain: Vec<RunMetrics> = runs
            .into_iter()
            .filter(|r| r.param_label.is_empty())
            .collect();
        let c = result_of(&cell, &plain, &AggregateOptions::default());
        assert!(c.retained_effect.is_none() && c.idle_effect.is_none());
    }

    #[test]
    fn the_two_verdicts_name_what_pays() {
        // hazard 1 s ahead of fastest, fastest 2 s ahead of least-loaded, and the oracle
        // avoids interruptions fastest suffers: both pay.
        let c = cell(
            "least-loaded",
            &[
                (Fastest, 10.0, 20.0),
                (HazardPooled, 10.0, 20.0),
                (Hazard, 9.0, 15.0),
                (LeastLoaded, 12.0, 20.0),
                (Oracle, 9.0, 2.0),
            ],
        );
        assert_eq!((c.hazard_term(), c.load_forecast()), ("pays", "pays"));
        assert!(c.pays() && c.load_forecast_pays());
        // The same differences where the oracle cannot beat fastest on interruptions: the
        // hazard term has nothing to win, whatever hazard's completion says (precedence).
        let c = cell(
            "least-loaded",
            &[
                (Fastest, 10.0, 20.0),
                (HazardPooled, 10.0, 20.0),
                (Hazard, 9.0, 20.0),
                (LeastLoaded, 12.0, 20.0),
                (Oracle, 9.0, 20.0),
            ],
        );
        assert_eq!(
            (c.hazard_term(), c.load_forecast()),
            ("nothing to win", "pays")
        );
        assert!(!c.pays());
        // hazard behind fastest, fastest behind least-loaded: both lose; against hazard's
        // old verdict (hazard vs least-loaded) these would cancel.
        let c = cell(
            "least-loaded",
            &[
                (Fastest, 10.0, 20.0),
                (HazardPooled, 10.0, 20.0),
                (Hazard, 11.0, 15.0),
                (LeastLoaded, 9.0, 20.0),
                (Oracle, 9.0, 2.0),
            ],
        );
        assert_eq!((c.hazard_term(), c.load_forecast()), ("loses", "loses"));
        // Within noise: no difference; fastest as the reference: no load verdict.
        let c = cell(
            "fastest",
            &[
                (Fastest, 10.0, 20.0),
                (HazardPooled, 10.0, 20.0),
                (Hazard, 10.0, 15.0),
                (Oracle, 9.0, 2.0),
            ],
        );
        assert_eq!(
            (c.hazard_term(), c.load_forecast()),
            ("no difference", "reference")
        );
        // Without the oracle nothing is known of the opportunity: the words of the test.
        let without = cell(
            "least-loaded",
            &[
                (Fastest, 10.0, 20.0),
                (HazardPooled, 10.0, 20.0),
                (Hazard, 9.0, 20.0),
                (LeastLoaded, 12.0, 20.0),
            ],
        );
        assert_eq!(
            (without.hazard_term(), without.load_forecast()),
            ("pays", "pays")
        );
        // hazard 1 s ahead of fastest, but so is its twin: what pays is the twin's exposure
        // pricing and planned moves, not the hazard term.
        let c2 = cell(
            "least-loaded",
            &[
                (Fastest, 10.0, 20.0),
                (HazardPooled, 9.0, 15.0),
                (Hazard, 9.0, 15.0),
                (LeastLoaded, 12.0, 20.0),
                (Oracle, 9.0, 2.0),
            ],
        );
        assert_eq!(c2.hazard_term(), "no difference");
        assert!(c2.lower("hazard_vs_fastest", VERDICT_METRIC));
        assert!(c2.lower("pooled_vs_fastest", VERDICT_METRIC));
        // Without the twin the term is not measured.
        let c3 = cell(
            "least-loaded",
            &[
                (Fastest, 10.0, 20.0),
                (Hazard, 9.0, 15.0),
                (Oracle, 9.0, 2.0),
            ],
        );
        assert_eq!(c3.hazard_term(), "-");
        let json = c.summary_json();
        assert_eq!(json["hazard_term"], "no difference");
        assert!(json["hazard_vs_pooled"].is_object());
        assert_eq!(json["load_forecast"], "reference");
        assert!(json["fastest_vs_reference"].is_null());
    }
}
