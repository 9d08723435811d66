//! The per-node statistics pass over one source: each node's own Kaplan-Meier curve, median
//! up-time, current age, node-level Weibull shape and shrinkage weight, plus the pooled curve
//! with its 95 % band, the pooled hazard-shape fit and the priors (shrunk node curves).
//!
//! [`fit_nodes`] is the one place these numbers are computed (the TUI's node and survival
//! screens show them); [`source_priors`] is the priors fit it shares with
//! `hazardserve priors export`.
//!
//! Definitions:
//!
//! * **Node median up-time**: the Kaplan-Meier median of the node's own sessions (left-truncated
//!   sessions of unknown age left out, as `hazardserve fit` does); `None` when S never reaches
//!   one half.
//! * **Current age**: when the node's last session is censored at the end of the node's
//!   observation (the node was still up when the trace ended), its age then: entry age plus
//!   observed duration. `None` when the node was down at the end.
//! * **Shrinkage weight**: with the beta-process estimator (Hjort 1990) the weight of the node's
//!   own data against the pooled curve, `w = n / (n + M)` (n = the node's sessions, M = the
//!   prior strength in virtual sessions chosen by cross-validation); with the gamma-frailty
//!   estimator the posterior mean frailty `z = E[Z | data]` (above 1: riskier than the fleet).
//!   The estimator is the one `hazardserve priors export --shrinkage auto` selects.

use super::load::SourceSessions;
use super::summary::{fit_groups, median_interval, GroupFit};
use crate::survival::km::KmFit;
use crate::survival::parametric::hazard_shape_test;
use crate::survival::priors::{
    fit_priors, Priors, PriorsError, PriorsEstimator, PriorsMeta, PriorsOptions,
};
use crate::survival::shrinkage::{EstimatorChoice, ShrinkageOptions};
use crate::survival::{SurvivalData, SurvivalError, Z_95};

/// A step curve `S(t) = s[i]` for `t[i] <= t < t[i+1]`, 1 before `t[0]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct KmSteps {
    /// Step times, ascending.
    pub t: Vec<f64>,
    /// Survival from each step on.
    pub s: Vec<f64>,
}

impl KmSteps {
    /// The steps of a Kaplan-Meier fit.
    pub fn of_km(km: &KmFit) -> KmSteps {
        KmSteps {
            t: km.timeline().to_vec(),
            s: km.survival_values().to_vec(),
        }
    }

    /// S(x) by step lookup.
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
}

/// The pooled Kaplan-Meier curve of a source with its 95 % log(-log) band.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PooledCurve {
    /// The curve.
    pub km: KmSteps,
    /// Lower 95 % bound at each step.
    pub lo: Vec<f64>,
    /// Upper 95 % bound at each step.
    pub hi: Vec<f64>,
}

impl PooledCurve {
    /// The 95 % interval of the median ([`median_interval`] of the band).
    pub fn median_ci(&self) -> (Option<f64>, Option<f64>) {
        median_interval(&self.km.t, &self.lo, &self.hi)
    }

    /// (lower, upper) 95 % bound at `x` (1, 1 before the first step).
    pub fn band_at(&self, x: f64) -> (f64, f64) {
        match self.km.t.partition_point(|&v| v <= x).checked_sub(1) {
            Some(i) => (
                self.lo.get(i).copied().unwrap_or(1.0),
                self.hi.get(i).copied().unwrap_or(1.0),
            ),
            None => (1.0, 1.0),
        }
    }
}

/// One session of a node as ages: entered at `entry`, left at `exit`, ended by an event or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgeSpan {
    /// Age at the start of observation, seconds.
    pub entry: f64,
    /// Age at the end of observation, seconds.
    pub exit: f64,
    /// Ended by a failure (false: censored).
    pub event: bool,
}

/// The statistics of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeFit {
    /// Node key.
    pub id: String,
    /// Sessions used for the survival fit.
    pub sessions: usize,
    /// Of which ended by an event.
    pub events: usize,
    /// Kaplan-Meier median up-time, seconds (module docs).
    pub median_s: Option<f64>,
    /// Age at the end of observation when still up (module docs).
    pub current_age_s: Option<f64>,
    /// Shrinkage weight `w` or frailty `z` (module docs).
    pub weight: Option<f64>,
    /// The node's own Kaplan-Meier curve.
    pub km: KmSteps,
    /// The node's sessions as ages.
    pub spans: Vec<AgeSpan>,
    /// Node-level Weibull shape with its 95 % CI and verdict, when the node has 3+ events.
    pub weibull: Option<(f64, f64, f64, String)>,
}

/// Options of [`fit_nodes`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeFitOptions {
    /// Node-level Weibull fits only when the source has at most this many nodes (cost bound).
    pub weibull_max_nodes: usize,
    /// Maximum steps per prior curve.
    pub priors_max_points: usize,
}

impl Default for NodeFitOptions {
    fn default() -> Self {
        NodeFitOptions {
            weibull_max_nodes: 5000,
            priors_max_points: 512,
        }
    }
}

/// Every per-node statistic of a source with the pooled fits they are compared against.
#[derive(Debug, Clone)]
pub struct SourceNodeFits {
    /// One entry per node, in the order of [`SourceSessions::node_ids`].
    pub nodes: Vec<NodeFit>,
    /// Pooled Kaplan-Meier curve with its band (empty without sessions).
    pub pooled: PooledCurve,
    /// The pooled hazard-shape fit ([`fit_groups`] without grouping or shrinkage).
    pub pooled_fit: Option<GroupFit>,
    /// The priors (shrunk node curves, pooled curve), when the fit succeeded.
    pub priors: Option<Priors>,
    /// Why there are no priors.
    pub priors_error: Option<String>,
}

/// Survival-module input of a set of age spans (with entry ages only when any is positive).
fn survival_data<'a>(exit: &'a [f64], event: &'a [bool], entry: &'a [f64]) -> SurvivalData<'a> {
    if entry.iter().any(|&e| e > 0.0) {
        SurvivalData::new(exit, event).with_entry(entry)
    } else {
        SurvivalData::new(exit, event)
    }
}

/// Columns (exit, event, entry) of age spans.
fn span_columns<'a>(spans: impl Iterator<Item = &'a AgeSpan>) -> (Vec<f64>, Vec<bool>, Vec<f64>) {
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for s in spans {
        out.0.push(s.exit);
        out.1.push(s.event);
        out.2.push(s.entry);
    }
    out
}

/// The pooled Kaplan-Meier curve of every session of `data` (ages, with left truncation) and
/// its 95 % band; empty without sessions.
pub fn pooled_curve(data: &SourceSessions) -> Result<PooledCurve, SurvivalError> {
    if data.sessions.is_empty() {
        return Ok(PooledCurve::default());
    }
    let spans: Vec<AgeSpan> = data
        .sessions
        .iter()
        .map(|s| AgeSpan {
            entry: s.entry,
            exit: s.entry + (s.end - s.start),
            event: s.event,
        })
        .collect();
    let (exit, ev, entry) = span_columns(spans.iter());
    let km = KmFit::fit_data(&survival_data(&exit, &ev, &entry))?;
    let (lo, hi) = km.view().confidence_interval(Z_95);
    Ok(PooledCurve {
        km: KmSteps::of_km(&km),
        lo,
        hi,
    })
}

/// Fits the priors of a source as of `before` (default: just after its last session end).
/// `estimator` forces a node-curve estimator (`None`: chosen by cross-validation, as
/// `--shrinkage auto`). `Ok(None)` when there is nothing to fit (no usable sessions and no
/// `before`).
pub fn source_priors(
    data: &SourceSessions,
    before: Option<f64>,
    estimator: Option<PriorsEstimator>,
    max_points: usize,
) -> Result<Option<Priors>, PriorsError> {
    let cutoff = match before {
        Some(t) => t,
        None => {
            data.sessions
                .iter()
                .map(|s| s.end)
                .fold(f64::NEG_INFINITY, f64::max)
                + 1.0
        }
    };
    if !cutoff.is_finite() {
        return Ok(None);
    }
    let meta = PriorsMeta {
        source: data.source.clone(),
        cutoff_s: cutoff,
        time_base: data.time_base.clone(),
        node_ids: data.node_ids.clone(),
    };
    let popts = PriorsOptions {
        estimator,
        max_points,
        ..PriorsOptions::default()
    };
    let sopts = ShrinkageOptions {
        estimator: match estimator {
            Some(PriorsEstimator::Beta) => EstimatorChoice::BetaProcess,
            Some(PriorsEstimator::Frailty) => EstimatorChoice::GammaFrailty,
            Some(PriorsEstimator::None) | None => EstimatorChoice::Auto,
        },
        ..ShrinkageOptions::default()
    };
    let mut priors = fit_priors(&data.sessions, &meta, &sopts, &popts)?;
    // Cause-specific curves, when the sessions end in more than one way.
    priors.causes = crate::survival::priors::cause_priors(
        &data.sessions,
        &data.causes,
        cutoff,
        crate::survival::priors::MIN_CAUSE_EVENTS,
        max_points,
    )?;
    Ok(Some(priors))
}

/// The per-node statistics pass (module docs): every node's curve, median, current age,
/// Weibull shape and shrinkage weight, the pooled curve with its band, the pooled hazard shape
/// and the priors (`priors export --shrinkage auto`). A failed priors fit is reported in
/// [`SourceNodeFits::priors_error`], not as an error.
pub fn fit_nodes(
    data: &SourceSessions,
    opts: &NodeFitOptions,
) -> Result<SourceNodeFits, SurvivalError> {
    let n = data.node_ids.len();
    let (obs_start, obs_end) = data.observation;
    let span_len = (obs_end - obs_start).max(1e-9);

    // Per-node sessions as ages, and each node's last session (end, event, age at exit).
    let mut spans: Vec<Vec<AgeSpan>> = vec![Vec::new(); n];
    let mut last_end: Vec<Option<(f64, bool, f64)>> = vec![None; n];
    for s in &data.sessions {
        let i = s.node as usize;
        let exit = s.entry + (s.end - s.start);
        if let Some(v) = spans.get_mut(i) {
            v.push(AgeSpan {
                entry: s.entry,
                exit,
                event: s.event,
            });
        }
        if let Some(slot) = last_end.get_mut(i) {
            if slot.is_none_or(|(e, _, _)| s.end >= e) {
                *slot = Some((s.end, s.event, exit));
            }
        }
    }

    // Pooled curve with its band, and the pooled hazard shape.
    let pooled_fit = fit_groups(data, None)?.into_iter().next();
    let pooled = pooled_curve(data)?;

    // Priors: the shrunk node curves (as `priors export --shrinkage auto` fits them).
    let (priors, priors_error) = if data.sessions.is_empty() {
        (None, Some("no usable sessions".to_string()))
    } else {
        match source_priors(data, None, None, opts.priors_max_points) {
            Ok(Some(p)) => (Some(p), None),
            Ok(None) => (None, Some("no usable sessions".to_string())),
            Err(e) => (None, Some(e.to_string())),
        }
    };

    let node_level_weibull = n <= opts.weibull_max_nodes;
    let tol = (1e-3 * span_len).max(1.0);
    let mut nodes = Vec::with_capacity(n);
    for (i, id) in data.node_ids.iter().enumerate() {
        let sp = spans.get(i).cloned().unwrap_or_default();
        let events = sp.iter().filter(|s| s.event).count();
        let (km, median_s, weibull) = if sp.is_empty() {
            (KmSteps::default(), None, None)
        } else {
            let (exit, ev, entry) = span_columns(sp.iter());
            let sd = survival_data(&exit, &ev, &entry);
            match KmFit::fit_data(&sd) {
                Ok(km) => {
                    let w = if node_level_weibull
                        && events >= crate::survival::shapes::DEFAULT_MIN_EVENTS
                    {
                        hazard_shape_test(&sd).ok().map(|t| {
                            (
                                t.weibull.shape,
                                t.weibull.shape_ci.0,
                                t.weibull.shape_ci.1,
                                t.verdict.to_string(),
                            )
                        })
                    } else {
                        None
                    };
                    (KmSteps::of_km(&km), km.median(), w)
                }
                Err(_) => (KmSteps::default(), None, None),
            }
        };
        let observed_to = data.node_observed.get(i).map_or(obs_end, |o| o.1);
        let current_age_s = match last_end.get(i).copied().flatten() {
            Some((end, false, exit)) if end >= observed_to - tol => Some(exit),
            _ => None,
        };
        let weight = priors.as_ref().and_then(|p| match p.estimator {
            PriorsEstimator::Beta => p
                .parameters
                .m
                .map(|m| sp.len() as f64 / (sp.len() as f64 + m).max(1e-12)),
            PriorsEstimator::Frailty => p.node(id).and_then(|nd| nd.frailty_z),
            PriorsEstimator::None => None,
        });
        nodes.push(NodeFit {
            id: id.clone(),
            sessions: sp.len(),
            events,
            median_s,
            current_age_s,
            weight,
            km,
            spans: sp,
            weibull,
        });
    }
    Ok(SourceNodeFits {
        nodes,
        pooled,
        pooled_fit,
        priors,
        priors_error,
    })
}
