//! Hazard-prior export: the per-node survival curves a serving system (and the replay engine)
//! loads, as a versioned JSON document. JSON Schema: `docs/priors.schema.json` (draft 2020-12).
//!
//! Size: one concept, the priors document: its types, how each part (pooled, node and cause
//! curves) is built, capped and checked, and its JSON and flat forms, which change together.
//!
//! # Schema, version 1
//!
//! ```text
//! {
//!   "schema_version": 1,
//!   "source": "<trace or store id>",
//!   "generated_by": "hazardserve <version>",
//!   "estimator": "beta" | "frailty" | "none",
//!   "parameters": { "m"?: M, "theta"?: θ̂, "cv_loglik"?: held-out log-likelihood },
//!   "cutoff_s": T,            // the fit used only what was known at T (replay `--before`)
//!   "time_base": "utc" | "relative",   // clock of cutoff_s
//!   "pooled": {
//!     "steps": { "t": [..], "s": [..] },
//!     "counts": { "n": sessions, "events": events },
//!     "tail_rate_per_s": r0,
//!     "parametric": null | { "exp_rate_per_s", "weibull_shape", "weibull_shape_ci": [lo|null, hi|null],
//!                            "weibull_scale_s", "verdict": "decreasing"|"roughly_constant"|"increasing" }
//!   },
//!   "nodes": [ { "node_id", "sessions", "events", "age_at_cutoff_s": a | null,
//!                "steps": { "t", "s" }, "tail_rate_per_s", "frailty_z"? } ],
//!   "causes"?: [ { "cause", "events", "steps": { "t", "s" } } ]   // [`cause_priors`]
//! }
//! ```
//!
//! * **Clock.** Curves are functions of the session age in seconds (time since the node came
//!   up). A curve is the right-continuous step function S(x) = 1 for x < `t[0]`,
//!   S(x) = `s[i]` for `t[i]` ≤ x < `t[i+1]`, continued after the last step by an exponential
//!   tail S(x) = `s[n−1]`·exp(−tail_rate_per_s·(x − `t[n−1]`)), i.e. exactly
//!   [`StepCurve::new(t, s, Some(tail_rate_per_s))`](crate::survival::curve::StepCurve::new).
//!   A consumer asks S(t | a) = S(a + t)/S(a) for a node up for a seconds.
//! * **Training data.** Only what was known at `cutoff_s`: sessions that ended before it keep
//!   their outcome, sessions live at it are censored at it ([`crate::survival::validate::split_at`]).
//!   `age_at_cutoff_s` is the age of the node's live session at the cutoff (the oldest one if
//!   several), `null` when the node was down at the cutoff.
//! * **Pooled curve.** S_pool(t_k) = Π_{j ≤ k}(1 − d0_j/Y0_j) at the pooled event times with
//!   Y0 > d0 ([`crate::survival::shrinkage::PooledHazard`]).
//! * **Node curves.** The shrunk curve of the selected estimator evaluated on the common knot
//!   grid: `beta` — Ŝ_i (Hjort 1990 beta process, c_k = M·S_pool(t_k−)) on its own steps (the
//!   beta-process bin edges); `frailty` — the predictive curve of a new session
//!   S̃_i(t) = (β_i/(β_i + Λ0(t)))^α_i, α_i = 1/θ + D_i, β_i = 1/θ + E_i (Clayton 1978), at the
//!   pooled event times; `none` — the pooled curve for every node. Nodes without sessions get
//!   the prior curve (pooled for `beta`, α = β = 1/θ for `frailty`).
//! * **Capping** (at most `max_points` steps per curve, default 512). If a candidate grid
//!   c_1 < … < c_K (pooled times, or bin edges for `beta`) is longer, knots are placed on an
//!   equal-probability grid of the pooled curve: with Δ = (1 − S_pool(c_K))/P, knot j
//!   (j = 1..P−1) is the first c_k with S_pool(c_k) ≤ 1 − jΔ, duplicates removed, and c_K is
//!   always the last knot. Every curve is then evaluated *exactly* at the knots, so between two
//!   knots it overestimates S by at most the drop of the true curve over that interval
//!   (≤ Δ for the pooled curve). Repeated values are dropped (a step equal to its predecessor,
//!   or to 1 before the first drop), except the last knot, which is always kept so every tail
//!   starts at the last pooled event time.
//! * **Tail.** Pooled: the piecewise-exponential MLE r0 = D_w / X_w over ages ≥ t_w =
//!   (1 − `tail_fraction`)·t_K (last 10 % of pooled time by default), where D_w counts events
//!   with exit age > t_w and X_w = Σ max(0, T − max(e, t_w)) is the exposure there; if D_w or
//!   X_w is 0 the overall exponential MLE D/Σ(T − e) is used (0 without events). `beta` and
//!   `none` nodes use r0 (beyond the node's data the beta process follows the pooled hazard);
//!   `frailty` nodes use the predictive hazard ratio at the last knot,
//!   r0·α_i/(β_i + Λ0(t_K)). `frailty_z` = α_i/β_i = E[Z_i | data] (frailty only).
//!
//! [`Priors::from_json`] checks `schema_version` (1), finite values, unique node ids, and that
//! every step list has t finite, ≥ 0, strictly increasing and s in [0, 1], non-increasing.
//! Unknown fields are ignored on load.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::survival::curve::{ConditionalSurvival, CurveError, StepCurve};
use crate::survival::parametric::{hazard_shape_test, HazardShapeTest, HazardTrend};
use crate::survival::shrinkage::{
    Estimator, EstimatorChoice, PooledHazard, ShrinkageModel, ShrinkageOptions,
};
use crate::survival::validate::{split_at, SurvivalSession};
use crate::survival::SurvivalError;

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// Default cap on the number of steps per curve.
pub const DEFAULT_MAX_POINTS: usize = 512;

/// Errors of building, loading or using priors.
#[derive(Debug, Error)]
pub enum PriorsError {
    /// The document is not valid JSON or does not have the version-1 shape.
    #[error("priors JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// `schema_version` is missing or not supported by this build.
    #[error("unsupported priors schema_version {found} (this build reads {SCHEMA_VERSION})")]
    Version {
        /// The value found (as JSON text).
        found: String,
    },
    /// A value violates the schema's constraints.
    #[error("invalid priors: {0}")]
    Invalid(String),
    /// The survival fit failed.
    #[error(transparent)]
    Survival(#[from] SurvivalError),
    /// A curve could not be turned into a [`StepCurve`].
    #[error("invalid curve `{scope}`")]
    Curve {
        /// `pooled` or the node id.
        scope: String,
        /// Why.
        source: CurveError,
    },
}

/// Which node curves the priors carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriorsEstimator {
    /// Beta-process shrinkage (Hjort 1990).
    Beta,
    /// Gamma-frailty empirical Bayes (Clayton 1978).
    Frailty,
    /// No shrinkage: every node carries the pooled curve.
    None,
}

impl PriorsEstimator {
    /// The estimator a fitted model selected.
    pub fn from_model(model: &ShrinkageModel) -> PriorsEstimator {
        match model.selected() {
            Estimator::BetaProcess => PriorsEstimator::Beta,
            Estimator::GammaFrailty => PriorsEstimator::Frailty,
        }
    }
}

/// Hyper-parameters of the fit (absent when not applicable or unknown).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct PriorParameters {
    /// Beta-process prior strength M (virtual sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub m: Option<f64>,
    /// Gamma-frailty variance θ̂.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theta: Option<f64>,
    /// Cross-validated held-out log-likelihood of the exported estimator (if CV ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cv_loglik: Option<f64>,
}

/// A step list: S(x) = `s[i]` for `t[i]` ≤ x < `t[i+1]` (1 before `t[0]`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Steps {
    /// Step times (session age, seconds), strictly increasing, ≥ 0.
    pub t: Vec<f64>,
    /// Survival from each step time on, non-increasing, in [0, 1].
    pub s: Vec<f64>,
}

impl Steps {
    /// S(x) by right-continuous step lookup (1 before `t[0]`, and for a missing value).
    pub fn at(&self, x: f64) -> f64 {
        match self.t.partition_point(|&v| v <= x).checked_sub(1) {
            Some(i) => self.s.get(i).copied().unwrap_or(1.0),
            None => 1.0,
        }
    }

    /// The last step time, 0 when empty.
    pub fn last_time(&self) -> f64 {
        self.t.last().copied().unwrap_or(0.0)
    }

    /// Checks lengths, finiteness and monotonicity (see the module docs).
    pub fn check(&self, scope: &str) -> Result<(), PriorsError> {
        if self.t.len() != self.s.len() {
            return Err(PriorsError::Invalid(format!(
                "{scope}: {} step times but {} survival values",
                self.t.len(),
                self.s.len()
            )));
        }
        let (mut pt, mut ps) = (f64::NEG_INFINITY, 1.0);
        for (i, (&t, &s)) in self.t.iter().zip(&self.s).enumerate() {
            if !(t.is_finite() && t >= 0.0 && t > pt) {
                return Err(PriorsError::Invalid(format!(
                    "{scope}: step time {i} ({t}) is negative, not finite or not increasing"
                )));
            }
            if !((0.0..=1.0).contains(&s) && s <= ps) {
                return Err(PriorsError::Invalid(format!(
                    "{scope}: survival {i} ({s}) is outside [0, 1] or increases"
                )));
            }
            pt = t;
            ps = s;
        }
        Ok(())
    }
}

/// SurvivalSession and event counts of the training data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Sessions (training rows).
    pub n: u64,
    /// Events among them.
    pub events: u64,
}

/// Pooled parametric fits ([`hazard_shape_test`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParametricPrior {
    /// Exponential MLE rate λ̂ = D / Σ(T − e), per second.
    pub exp_rate_per_s: f64,
    /// Weibull shape k̂.
    pub weibull_shape: f64,
    /// 95 % profile-likelihood interval of k (`null` for an unbounded side).
    pub weibull_shape_ci: [Option<f64>; 2],
    /// Weibull scale λ̂, seconds.
    pub weibull_scale_s: f64,
    /// Hazard verdict (JSON: `decreasing`, `roughly_constant`, `increasing`).
    pub verdict: HazardTrend,
}

impl ParametricPrior {
    /// From a shape test; `None` when a parameter is not finite.
    pub fn from_test(t: &HazardShapeTest) -> Option<ParametricPrior> {
        let fin = |x: f64| x.is_finite().then_some(x);
        let ci = |x: f64| (x.is_finite() && x > 0.0).then_some(x);
        Some(ParametricPrior {
            exp_rate_per_s: fin(t.exponential.rate)?,
            weibull_shape: fin(t.weibull.shape)?,
            weibull_shape_ci: [ci(t.weibull.shape_ci.0), ci(t.weibull.shape_ci.1)],
            weibull_scale_s: fin(t.weibull.scale)?,
            verdict: t.verdict,
        })
    }
}

/// The pooled (fleet) curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledPrior {
    /// Pooled steps.
    pub steps: Steps,
    /// Training counts.
    pub counts: Counts,
    /// Exponential tail hazard after the last step, per second.
    pub tail_rate_per_s: f64,
    /// Parametric fits (`null` when they failed).
    pub parametric: Option<ParametricPrior>,
}

/// One node's curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePrior {
    /// Node key.
    pub node_id: String,
    /// Training sessions of the node.
    pub sessions: u64,
    /// Events among them.
    pub events: u64,
    /// Age of the node's live session at the cutoff, `null` when the node was down.
    pub age_at_cutoff_s: Option<f64>,
    /// Node steps.
    pub steps: Steps,
    /// Exponential tail hazard after the last step, per second.
    pub tail_rate_per_s: f64,
    /// Posterior mean frailty E[Z_i | data] = α_i/β_i (frailty only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frailty_z: Option<f64>,
}

/// The exported priors (schema in the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Priors {
    /// Always [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Free-text id of the data (trace, store source).
    pub source: String,
    /// `hazardserve <version>`.
    pub generated_by: String,
    /// Node-curve estimator.
    pub estimator: PriorsEstimator,
    /// Hyper-parameters.
    pub parameters: PriorParameters,
    /// The fit used only sessions observed before this instant (seconds, `time_base` clock).
    pub cutoff_s: f64,
    /// Clock of `cutoff_s`: `utc` (Unix seconds) or `relative` (seconds from trace start).
    pub time_base: String,
    /// Pooled curve.
    pub pooled: PooledPrior,
    /// Node curves.
    pub nodes: Vec<NodePrior>,
    /// Cause-specific curves of the pooled sessions ([`cause_priors`]), when they end in more
    /// than one way with enough events each; empty otherwise (and absent from the JSON).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<CausePrior>,
    #[serde(skip)]
    index: HashMap<String, usize>,
}

/// One end cause's curve of the pooled sessions: `S_k(t) = exp(-H_k(t))`, with `H_k` the
/// cause-specific Nelson-Aalen cumulative hazard (discrete ties) on the all-cause risk set, i.e.
/// the survival if only this cause ended sessions. The product over all causes is the
/// all-cause curve (up to the Nelson-Aalen / product-limit difference), so a consumer can split
/// a node's hazard into its announced and unannounced parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CausePrior {
    /// The store's `end_cause` (e.g. `preempted`, `lifetime-cap`).
    pub cause: String,
    /// Sessions that ended by this cause before the cutoff.
    pub events: u64,
    /// `S_k` at the cause's event ages (at most `max_points` knots, exact at each).
    pub steps: Steps,
}

/// Metadata of an export.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriorsMeta {
    /// Free-text id of the data.
    pub source: String,
    /// Cutoff (seconds, `time_base` clock).
    pub cutoff_s: f64,
    /// `utc` or `relative`.
    pub time_base: String,
    /// Node key of each node index (missing entries are named by their index).
    pub node_ids: Vec<String>,
}

/// Export options.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorsOptions {
    /// Node-curve estimator (default: the model's selection).
    pub estimator: Option<PriorsEstimator>,
    /// Maximum number of steps per curve (≥ 1, default [`DEFAULT_MAX_POINTS`]).
    pub max_points: usize,
    /// Fraction of the pooled time span (at its end) used for the tail rate (default 0.1).
    pub tail_fraction: f64,
}

impl Default for PriorsOptions {
    fn default() -> Self {
        PriorsOptions {
            estimator: None,
            max_points: DEFAULT_MAX_POINTS,
            tail_fraction: 0.1,
        }
    }
}

/// One flat row of [`Priors::rows`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PriorRow {
    /// `pooled` or `node`.
    pub scope: &'static str,
    /// Node key (`None` for the pooled curve).
    pub node_id: Option<String>,
    /// Step time (session age, seconds).
    pub t: f64,
    /// Survival from `t` on.
    pub s: f64,
}

/// Knots (at most `max_points`) on the candidate grid `cand`: all of it when short enough,
/// otherwise the equal-probability grid of the pooled curve (module docs).
fn select_knots(cand: &[f64], pooled: &PooledHazard, max_points: usize) -> Vec<f64> {
    let k = cand.len();
    if k <= max_points {
        return cand.to_vec();
    }
    let p: Vec<f64> = cand.iter().map(|&c| pooled.survival(c)).collect();
    let delta = (1.0 - p[k - 1]) / max_points as f64;
    let mut out = Vec::with_capacity(max_points);
    let mut idx = 0usize;
    for j in 1..max_points {
        let level = 1.0 - j as f64 * delta;
        idx += p[idx..].partition_point(|&x| x > level);
        if idx >= k - 1 {
            break;
        }
        if out.last() != Some(&cand[idx]) {
            out.push(cand[idx]);
        }
    }
    out.push(cand[k - 1]);
    out
}

/// A curve on the knots, repeated values dropped except at the last knot.
fn steps_on(knots: &[f64], curve: impl Fn(f64) -> f64) -> Steps {
    let mut st = Steps::default();
    let mut prev = 1.0f64;
    for (i, &t) in knots.iter().enumerate() {
        let s = curve(t).clamp(0.0, 1.0).min(prev);
        if s < prev || i + 1 == knots.len() {
            st.t.push(t);
            st.s.push(s);
            prev = s;
        }
    }
    st
}

/// Pooled tail hazard (module docs, "Tail").
fn pooled_tail_rate(model: &ShrinkageModel, fraction: f64) -> f64 {
    let t_last = model.pooled().times.last().copied().unwrap_or(0.0);
    let t_w = (1.0 - fraction.clamp(0.0, 1.0)) * t_last;
    let (mut d_w, mut x_w, mut d, mut x) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let sess = model.sessions();
    for i in 0..sess.n_nodes() {
        let ns = sess.node(i);
        for j in 0..ns.len() {
            let (t, e, ev) = (ns.durations[j], ns.entry_at(j), ns.events[j]);
            x += (t - e).max(0.0);
            d += ev as u8 as f64;
            let lo = e.max(t_w);
            if t > lo {
                x_w += t - lo;
                d_w += ev as u8 as f64;
            }
        }
    }
    if d_w > 0.0 && x_w > 0.0 {
        d_w / x_w
    } else if d > 0.0 && x > 0.0 {
        d / x
    } else {
        0.0
    }
}

/// Builds the priors from a fitted shrinkage model (trained on data known at `meta.cutoff_s`),
/// optional pooled parametric fits and the node ages at the cutoff (`age_at_cutoff[i]` for node
/// index i; missing = down). Exports every node index of the model.
pub(crate) fn build_priors(
    model: &ShrinkageModel,
    parametric: Option<&HazardShapeTest>,
    meta: &PriorsMeta,
    age_at_cutoff: &[Option<f64>],
    opts: &PriorsOptions,
) -> Result<Priors, PriorsError> {
    if opts.max_points == 0 {
        return Err(PriorsError::Invalid("max_points must be >= 1".into()));
    }
    if !(opts.tail_fraction > 0.0 && opts.tail_fraction <= 1.0) {
        return Err(PriorsError::Invalid(format!(
            "tail_fraction must be in (0, 1], got {}",
            opts.tail_fraction
        )));
    }
    let estimator = opts
        .estimator
        .unwrap_or_else(|| PriorsEstimator::from_model(model));
    let pooled = model.pooled();
    let sess = model.sessions();
    let n_nodes = model.n_nodes();

    let tail0 = pooled_tail_rate(model, opts.tail_fraction);
    let pooled_knots = select_knots(&pooled.times, pooled, opts.max_points);
    let pooled_steps = steps_on(&pooled_knots, |t| pooled.survival(t));
    let total_events: u64 = (0..n_nodes)
        .map(|i| sess.node(i).events.iter().filter(|&&e| e).count() as u64)
        .sum();

    let cv = model.cv();
    let parameters = match estimator {
        PriorsEstimator::Beta => PriorParameters {
            m: model.m(),
            theta: None,
            cv_loglik: cv.map(|r| r.best_beta_loglik),
        },
        PriorsEstimator::Frailty => PriorParameters {
            m: None,
            theta: Some(model.theta()),
            cv_loglik: cv.map(|r| r.frailty_loglik),
        },
        PriorsEstimator::None => PriorParameters::default(),
    };
    let m = match (estimator, model.m()) {
        (PriorsEstimator::Beta, None) => {
            return Err(PriorsError::Invalid(
                "beta priors requested but the model has no M (fit with BetaProcess or Auto)"
                    .into(),
            ))
        }
        (_, m) => m.unwrap_or(1.0),
    };
    let node_knots = match estimator {
        PriorsEstimator::Beta => {
            let c = model.beta_curve_with(0, m);
            select_knots(c.times, pooled, opts.max_points)
        }
        _ => pooled_knots.clone(),
    };
    let lam_last = pooled.cumhaz.last().copied().unwrap_or(0.0);

    let mut nodes = Vec::with_capacity(n_nodes);
    for i in 0..n_nodes {
        let ns = sess.node(i);
        let node_id = meta
            .node_ids
            .get(i)
            .cloned()
            .unwrap_or_else(|| i.to_string());
        let (steps, tail, z) = match estimator {
            PriorsEstimator::Beta => {
                let c = model.beta_curve_with(i, m);
                (steps_on(&node_knots, |t| c.survival(t)), tail0, None)
            }
            PriorsEstimator::Frailty => {
                let c = model.frailty_curve(i);
                let ratio = c.shape / (c.rate + lam_last);
                (
                    steps_on(&node_knots, |t| c.survival(t)),
                    tail0 * ratio,
                    Some(c.shape / c.rate),
                )
            }
            PriorsEstimator::None => (pooled_steps.clone(), tail0, None),
        };
        nodes.push(NodePrior {
            node_id,
            sessions: ns.len() as u64,
            events: ns.events.iter().filter(|&&e| e).count() as u64,
            age_at_cutoff_s: age_at_cutoff.get(i).copied().flatten(),
            steps,
            tail_rate_per_s: tail,
            frailty_z: z,
        });
    }
    let mut p = Priors {
        schema_version: SCHEMA_VERSION,
        source: meta.source.clone(),
        generated_by: format!("hazardserve {}", env!("CARGO_PKG_VERSION")),
        estimator,
        parameters,
        cutoff_s: meta.cutoff_s,
        time_base: meta.time_base.clone(),
        pooled: PooledPrior {
            steps: pooled_steps,
            counts: Counts {
                n: sess.n_sessions() as u64,
                events: total_events,
            },
            tail_rate_per_s: tail0,
            parametric: parametric.and_then(ParametricPrior::from_test),
        },
        nodes,
        causes: Vec::new(),
        index: HashMap::new(),
    };
    p.check()?;
    p.rebuild_index();
    Ok(p)
}

/// Fits and exports in one go: splits `sessions` at `meta.cutoff_s` (only data known then),
/// fits a [`ShrinkageModel`] (estimator from `opts.estimator` when given: beta → BetaProcess,
/// frailty or none → GammaFrailty; otherwise `shrinkage.estimator`) and the pooled
/// [`hazard_shape_test`] (omitted if it fails or rests on fewer than
/// [`crate::survival::shapes::DEFAULT_MIN_EVENTS`] events), takes each node's age at the cutoff from its
/// live session (the oldest if several), and calls [`build_priors`]. Node index i is named
/// `meta.node_ids[i]`.
pub fn fit_priors(
    sessions: &[SurvivalSession],
    meta: &PriorsMeta,
    shrinkage: &ShrinkageOptions,
    opts: &PriorsOptions,
) -> Result<Priors, PriorsError> {
    let sets = split_at(sessions, meta.cutoff_s)?;
    let n_nodes = sets.train.n_nodes.max(meta.node_ids.len());
    let mut ages: Vec<Option<f64>> = vec![None; n_nodes];
    for c in &sets.test {
        let slot = &mut ages[c.node as usize];
        *slot = Some(slot.map_or(c.age, |x: f64| x.max(c.age)));
    }
    let estimator = match opts.estimator {
        Some(PriorsEstimator::Beta) => EstimatorChoice::BetaProcess,
        Some(_) => EstimatorChoice::GammaFrailty,
        None => shrinkage.estimator,
    };
    let sopts = ShrinkageOptions {
        estimator,
        n_nodes: Some(n_nodes),
        ..shrinkage.clone()
    };
    let data = sets.train.data();
    let model = ShrinkageModel::fit(&sets.train.nodes, &data, &sopts)?;
    // Evidence rule: no parametric summary (and so no verdict) below the minimum of events.
    let n_events: u64 = (0..data.len())
        .filter(|&i| data.events[i])
        .map(|i| data.weight(i))
        .sum();
    let shape = (n_events >= crate::survival::shapes::DEFAULT_MIN_EVENTS as u64)
        .then(|| hazard_shape_test(&data).ok())
        .flatten();
    build_priors(&model, shape.as_ref(), meta, &ages, opts)
}

/// Fewest events a cause needs for its own curve in the priors.
pub const MIN_CAUSE_EVENTS: usize = 10;

/// The cause-specific curves ([`CausePrior`]) of `sessions` known at `cutoff` (sessions that
/// ended before it keep their outcome and cause, sessions live at it are censored at it;
/// entry ages honoured), one per cause with at least `min_events` ends, or none when fewer
/// than two causes qualify. `causes[i]` is the end cause of `sessions[i]` (ignored for censored
/// sessions). Curves longer than `max_points` keep every k-th knot and the last.
pub fn cause_priors(
    sessions: &[SurvivalSession],
    causes: &[String],
    cutoff: f64,
    min_events: usize,
    max_points: usize,
) -> Result<Vec<CausePrior>, PriorsError> {
    let mut labels: Vec<&str> = Vec::new();
    let (mut exit, mut entry, mut codes) = (Vec::new(), Vec::new(), Vec::new());
    for (s, c) in sessions.iter().zip(causes) {
        if s.start >= cutoff || s.end <= s.start {
            continue;
        }
        let ended = s.end <= cutoff;
        let end = if ended { s.end } else { cutoff };
        exit.push(s.entry + (end - s.start));
        entry.push(s.entry);
        codes.push(if ended && s.event {
            match labels.iter().position(|l| *l == c.as_str()) {
                Some(k) => k as u32 + 1,
                None => {
                    labels.push(c.as_str());
                    labels.len() as u32
                }
            }
        } else {
            0
        });
    }
    if exit.is_empty() {
        return Ok(Vec::new());
    }
    let truncated = entry.iter().any(|&e| e > 0.0);
    let fit =
        crate::survival::competing::aalen_johansen(&exit, &codes, truncated.then_some(&entry[..]))?;
    let mut out = Vec::new();
    for k in &fit.causes {
        let events: u64 = k.n_event.iter().map(|&d| u64::from(d)).sum();
        if events < min_events as u64 {
            continue;
        }
        let Some(h) = fit.cause_hazard(k.cause, false) else {
            continue;
        };
        let knots: Vec<usize> = (0..h.timeline.len())
            .filter(|&i| k.n_event[i] > 0 && h.timeline[i] >= 0.0)
            .collect();
        let every = knots.len().div_ceil(max_points.max(1)).max(1);
        let mut keep: Vec<usize> = knots.iter().copied().step_by(every).collect();
        if let (Some(&last), Some(&kept)) = (knots.last(), keep.last()) {
            if kept != last {
                if keep.len() >= max_points.max(1) {
                    keep.pop();
                }
                keep.push(last);
            }
        }
        out.push(CausePrior {
            cause: labels[k.cause as usize - 1].to_string(),
            events,
            steps: Steps {
                t: keep.iter().map(|&i| h.timeline[i]).collect(),
                s: keep
                    .iter()
                    .map(|&i| (-h.cumulative_hazard[i]).exp())
                    .collect(),
            },
        });
    }
    if out.len() < 2 {
        out.clear();
    }
    Ok(out)
}

impl Priors {
    /// The curve of end cause `cause`, when the priors carry one.
    pub fn cause_curve(&self, cause: &str) -> Option<&CausePrior> {
        self.causes.iter().find(|c| c.cause == cause)
    }

    /// Checks the schema constraints (module docs).
    pub fn check(&self) -> Result<(), PriorsError> {
        if self.schema_version != SCHEMA_VERSION {
            return Err(PriorsError::Version {
                found: self.schema_version.to_string(),
            });
        }
        if self.time_base != "utc" && self.time_base != "relative" {
            return Err(PriorsError::Invalid(format!(
                "time_base must be `utc` or `relative`, got `{}`",
                self.time_base
            )));
        }
        let finite = |what: &str, x: f64| {
            if x.is_finite() {
                Ok(())
            } else {
                Err(PriorsError::Invalid(format!("{what} is not finite ({x})")))
            }
        };
        let rate = |what: &str, x: f64| {
            if x.is_finite() && x >= 0.0 {
                Ok(())
            } else {
                Err(PriorsError::Invalid(format!(
                    "{what} must be finite and >= 0 ({x})"
                )))
            }
        };
        finite("cutoff_s", self.cutoff_s)?;
        for (w, v) in [
            ("parameters.m", self.parameters.m),
            ("parameters.theta", self.parameters.theta),
            ("parameters.cv_loglik", self.parameters.cv_loglik),
        ] {
            if let Some(v) = v {
                finite(w, v)?;
            }
        }
        self.pooled.steps.check("pooled")?;
        rate("pooled.tail_rate_per_s", self.pooled.tail_rate_per_s)?;
        if let Some(p) = &self.pooled.parametric {
            rate("parametric.exp_rate_per_s", p.exp_rate_per_s)?;
            finite("parametric.weibull_shape", p.weibull_shape)?;
            finite("parametric.weibull_scale_s", p.weibull_scale_s)?;
            for v in p.weibull_shape_ci.iter().flatten() {
                finite("parametric.weibull_shape_ci", *v)?;
            }
        }
        for c in &self.causes {
            c.steps.check(&format!("causes.{}", c.cause))?;
        }
        let mut seen = HashMap::with_capacity(self.nodes.len());
        for n in &self.nodes {
            if seen.insert(n.node_id.as_str(), ()).is_some() {
                return Err(PriorsError::Invalid(format!(
                    "duplicate node_id `{}`",
                    n.node_id
                )));
            }
            n.steps.check(&n.node_id)?;
            rate("tail_rate_per_s", n.tail_rate_per_s)?;
            if let Some(a) = n.age_at_cutoff_s {
                rate("age_at_cutoff_s", a)?;
            }
            if let Some(z) = n.frailty_z {
                rate("frailty_z", z)?;
            }
        }
        Ok(())
    }

    fn rebuild_index(&mut self) {
        self.index = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.node_id.clone(), i))
            .collect();
    }

    /// Compact JSON (errors when a constraint is violated, e.g. a non-finite value, which JSON
    /// cannot represent).
    pub fn to_json(&self) -> Result<String, PriorsError> {
        self.check()?;
        Ok(serde_json::to_string(self)?)
    }

    /// Indented JSON (same checks as [`Priors::to_json`]).
    pub fn to_json_pretty(&self) -> Result<String, PriorsError> {
        self.check()?;
        Ok(serde_json::to_string_pretty(self)?)
    }

    /// Parses and validates a priors document: `schema_version` must be 1 (checked first, so a
    /// newer document fails with [`PriorsError::Version`]), then the shape and the constraints of
    /// [`Priors::check`].
    pub fn from_json(text: &str) -> Result<Priors, PriorsError> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        match v.get("schema_version") {
            Some(x) if x.as_u64() == Some(SCHEMA_VERSION as u64) => {}
            Some(x) => {
                return Err(PriorsError::Version {
                    found: x.to_string(),
                })
            }
            None => {
                return Err(PriorsError::Version {
                    found: "(missing)".into(),
                })
            }
        }
        let mut p: Priors = serde_json::from_value(v)?;
        p.check()?;
        p.rebuild_index();
        Ok(p)
    }

    /// The node entry with this id.
    pub fn node(&self, node_id: &str) -> Option<&NodePrior> {
        match self.index.get(node_id).and_then(|&i| self.nodes.get(i)) {
            Some(n) if n.node_id == node_id => Some(n),
            _ => self.nodes.iter().find(|n| n.node_id == node_id),
        }
    }

    /// The pooled curve as a [`StepCurve`].
    pub fn try_pooled_curve(&self) -> Result<StepCurve, PriorsError> {
        StepCurve::new(
            self.pooled.steps.t.clone(),
            self.pooled.steps.s.clone(),
            Some(self.pooled.tail_rate_per_s),
        )
        .map_err(|source| PriorsError::Curve {
            scope: "pooled".into(),
            source,
        })
    }

    /// The curve of `node_id` as a [`StepCurve`] (the pooled curve for an unknown node).
    pub fn try_node_curve(&self, node_id: &str) -> Result<StepCurve, PriorsError> {
        match self.node(node_id) {
            Some(n) => StepCurve::new(
                n.steps.t.clone(),
                n.steps.s.clone(),
                Some(n.tail_rate_per_s),
            )
            .map_err(|source| PriorsError::Curve {
                scope: n.node_id.clone(),
                source,
            }),
            None => self.try_pooled_curve(),
        }
    }

    /// The loader the replay uses: the node's [`StepCurve`], the pooled curve for an unknown
    /// node. Priors from [`Priors::from_json`] or [`build_priors`] are valid, so this cannot
    /// fail for them; for a hand-edited invalid curve it falls back to the pooled curve, and
    /// then to the exponential with the pooled tail rate (or to S = 1 when that is invalid too).
    pub fn node_curve(&self, node_id: &str) -> StepCurve {
        self.try_node_curve(node_id)
            .or_else(|_| self.try_pooled_curve())
            .unwrap_or_else(|_| self.fallback_curve())
    }

    /// The pooled curve (falls back like [`Priors::node_curve`]).
    pub fn pooled_curve(&self) -> StepCurve {
        self.try_pooled_curve()
            .unwrap_or_else(|_| self.fallback_curve())
    }

    /// Last resort for invalid hand-edited priors: the exponential with the pooled tail rate,
    /// or S = 1 when that rate is invalid too.
    fn fallback_curve(&self) -> StepCurve {
        let rate = self.pooled.tail_rate_per_s;
        let rate = (rate.is_finite() && rate >= 0.0).then_some(rate);
        match StepCurve::new(Vec::new(), Vec::new(), rate) {
            Ok(c) => c,
            Err(_) => match StepCurve::new(Vec::new(), Vec::new(), None) {
                Ok(c) => c,
                Err(_) => unreachable!("an empty step curve without tail is always valid"),
            },
        }
    }

    /// Flat rows {scope, node_id, t, s} for a columnar (Parquet) export: the pooled steps first,
    /// then every node's steps in `nodes` order. Tail rates are not included.
    pub fn rows(&self) -> Vec<PriorRow> {
        let n =
            self.pooled.steps.t.len() + self.nodes.iter().map(|n| n.steps.t.len()).sum::<usize>();
        let mut out = Vec::with_capacity(n);
        for (&t, &s) in self.pooled.steps.t.iter().zip(&self.pooled.steps.s) {
            out.push(PriorRow {
                scope: "pooled",
                node_id: None,
                t,
                s,
            });
        }
        for node in &self.nodes {
            for (&t, &s) in node.steps.t.iter().zip(&node.steps.s) {
                out.push(PriorRow {
                    scope: "node",
                    node_id: Some(node.node_id.clone()),
                    t,
                    s,
                });
            }
        }
        out
    }
}

#[cfg(test)]
#[path = "priors_tests.rs"]
mod tests;
