//! Pooled curve, hazard shape and shrinkage summary per group of nodes.
//!
//! Evidence rules (applied to everything this summary feeds: `fit` tables and JSON, the TUI,
//! reports): a group with fewer than `min_events` observed ends (default
//! [`DEFAULT_MIN_EVENTS`] = 10) gets the verdict "too few events (n)" and null parametric
//! columns; a Kaplan-Meier median that is not reached is printed as "> t_max"; an estimate at
//! the edge of its search range is flagged in `notes` with what that means.

use serde::Serialize;

use super::load::SourceSessions;
use crate::survival::km::KmFit;
use crate::survival::parametric::hazard_shape_test;
pub use crate::survival::shapes::DEFAULT_MIN_EVENTS;
use crate::survival::shapes::{rank_by_ibs, select_shape, IbsOptions, ShapeOptions, ShapeVerdict};
use crate::survival::shrinkage::{EstimatorChoice, ShrinkageModel, ShrinkageOptions};
use crate::survival::{ConditionalSurvival, SurvivalData, SurvivalError, Z_95};

/// Horizons at which the pooled survival is reported: 1 h, 6 h, 24 h.
pub const HORIZONS_S: [f64; 3] = [3600.0, 21_600.0, 86_400.0];

/// The fit of one group (or the whole source).
#[derive(Debug, Clone, Serialize)]
pub struct GroupFit {
    /// Group value (`all` without `--by`).
    pub group: String,
    /// Nodes in the group.
    pub nodes: usize,
    /// Sessions used.
    pub sessions: usize,
    /// Sessions ended by an event.
    pub events: usize,
    /// Pooled Kaplan-Meier median up-time (seconds; null when S never reaches 0.5).
    pub median_s: Option<f64>,
    /// 95 % interval of the median, low end (seconds; [`median_interval`] of the
    /// pooled curve's band).
    pub median_ci_low_s: Option<f64>,
    /// 95 % interval of the median, high end (seconds; null when the band's upper edge stays
    /// above 0.5).
    pub median_ci_high_s: Option<f64>,
    /// Pooled S(1 h).
    pub s_1h: Option<f64>,
    /// Pooled S(6 h).
    pub s_6h: Option<f64>,
    /// Pooled S(24 h).
    pub s_24h: Option<f64>,
    /// Exponential mean up-time (seconds).
    pub exp_mean_s: Option<f64>,
    /// Weibull shape k.
    pub weibull_shape: Option<f64>,
    /// 95 % CI of k, low end.
    pub weibull_shape_lo: Option<f64>,
    /// 95 % CI of k, high end.
    pub weibull_shape_hi: Option<f64>,
    /// Weibull scale (seconds).
    pub weibull_scale_s: Option<f64>,
    /// Likelihood-ratio p-value of Weibull against exponential.
    pub lr_p_value: Option<f64>,
    /// The hazard-shape verdict: `decreasing`, `increasing`, `constant`, `bathtub` or `capped`;
    /// `too few events (n)` below the minimum; `n/a (no events)`.
    pub verdict: String,
    /// The model that decided the verdict (`exponential`, `weibull`, `lognormal`, `gamma`,
    /// `piecewise`, `bathtub`, `capped`).
    pub shape_model: Option<String>,
    /// AIC of the second-best model minus that of the best (how clearly the best one wins).
    pub aic_gap: Option<f64>,
    /// The deciding model's parameters with 95 % intervals, and the rule that fired.
    pub evidence: Option<String>,
    /// The model with the best held-out integrated Brier score: every model fitted on one half
    /// of the sessions (those at even positions) and scored on the other half.
    pub ibs_model: Option<String>,
    /// The minimum number of events for a verdict.
    pub min_events: usize,
    /// The median as people read it: `1234 s`, or `> 5678 s (not reached)` when the curve
    /// stays above 0.5 up to the last observed time.
    pub median: String,
    /// Estimates at the edge of their search range, and what that means.
    pub notes: Vec<String>,
    /// Shrinkage estimator selected (`beta` or `frailty`; `none` when not fitted).
    pub shrinkage: String,
    /// Beta-process prior strength M, in virtual sessions: how many of a node's own sessions
    /// the pooled curve is worth (small M: nodes follow their own data; large M: the pooled
    /// curve).
    pub m: Option<f64>,
    /// Gamma-frailty variance theta: how much node hazards differ multiplicatively (0: not at
    /// all).
    pub theta: Option<f64>,
    /// The full shape selection (every candidate model), when a verdict was given.
    #[serde(skip)]
    pub shape: Option<ShapeVerdict>,
    /// The pooled curve: (time, survival) steps.
    #[serde(skip)]
    pub curve: Vec<(f64, f64)>,
}

/// The 95 % interval of a Kaplan-Meier median from the curve's pointwise band at step times `t`:
/// the first times the lower and the upper bound reach 0.5 (the median of each band edge, as
/// lifelines' `median_survival_times` of the confidence interval); `None` where that edge stays
/// above 0.5.
pub fn median_interval(t: &[f64], lo: &[f64], hi: &[f64]) -> (Option<f64>, Option<f64>) {
    let first = |v: &[f64]| {
        v.iter()
            .position(|&x| x <= 0.5)
            .and_then(|i| t.get(i).copied())
    };
    (first(lo), first(hi))
}

/// Ages at exit, events and ages at entry of a set of sessions (survival-module input).
fn columns(
    sessions: &[crate::survival::validate::SurvivalSession],
) -> (Vec<f64>, Vec<bool>, Vec<f64>) {
    let exit = sessions
        .iter()
        .map(|s| s.entry + (s.end - s.start))
        .collect();
    let event = sessions.iter().map(|s| s.event).collect();
    let entry = sessions.iter().map(|s| s.entry).collect();
    (exit, event, entry)
}

/// Ages at exit, events and ages at entry of the sessions of one group, leaving out sessions
/// that ended the instant they were seen (exit = entry; no continuous model or smoother uses
/// them).
pub fn group_columns(data: &SourceSessions, group: &str) -> (Vec<f64>, Vec<bool>, Vec<f64>) {
    let sessions: Vec<_> = data
        .sessions
        .iter()
        .filter(|s| {
            data.node_groups
                .get(s.node as usize)
                .is_some_and(|g| g == group)
        })
        .filter(|s| s.end > s.start)
        .copied()
        .collect();
    columns(&sessions)
}

/// The deciding model's parameters with their 95 % intervals, as the evidence column prints
/// them (`shape 0.4388 [0.4063, 0.474], scale ...`; `(at search bound)` marks an estimate at the
/// edge of its search range); `None` without a deciding model.
pub fn evidence_parameters(v: &ShapeVerdict) -> Option<String> {
    let model = v
        .deciding_model
        .and_then(|k| v.models.iter().find(|m| m.kind == k))?;
    let params: Vec<String> = model
        .params
        .iter()
        .map(|p| {
            let ci = if p.ci_low.is_finite() && p.ci_high.is_finite() {
                format!(" [{}, {}]", num(p.ci_low), num(p.ci_high))
            } else {
                String::new()
            };
            let bound = if p.at_bound { " (at search bound)" } else { "" };
            format!("{} {}{ci}{bound}", p.name, num(p.estimate))
        })
        .collect();
    Some(params.join(", "))
}

/// [`fit_groups_with`] at the default minimum of events ([`DEFAULT_MIN_EVENTS`]).
pub fn fit_groups(
    data: &SourceSessions,
    shrinkage: Option<EstimatorChoice>,
) -> Result<Vec<GroupFit>, SurvivalError> {
    fit_groups_with(data, shrinkage, DEFAULT_MIN_EVENTS)
}

/// The Weibull shape search range of [`hazard_shape_test`]'s profile likelihood (an estimate
/// at either end means the likelihood keeps rising past it).
const WEIBULL_K_EDGES: (f64, f64) = (1.01e-3, 0.99e3);

/// Fits every group of `data`: pooled KM; with at least `min_events` events, the hazard-shape
/// verdict ([`select_shape`]) and the Weibull fit with its likelihood-ratio test; and (unless
/// `shrinkage` is `None`) the per-node shrinkage hyper-parameters. See the module docs for
/// the evidence rules.
pub fn fit_groups_with(
    data: &SourceSessions,
    shrinkage: Option<EstimatorChoice>,
    min_events: usize,
) -> Result<Vec<GroupFit>, SurvivalError> {
    let mut out = Vec::new();
    for group in data.groups() {
        let in_group: Vec<bool> = data.node_groups.iter().map(|g| *g == group).collect();
        let sessions: Vec<_> = data
            .sessions
            .iter()
            .filter(|s| in_group[s.node as usize])
            .copied()
            .collect();
        let nodes = in_group.iter().filter(|&&b| b).count();
        let events = sessions.iter().filter(|s| s.event).count();
        let mut fit = GroupFit {
            group: group.clone(),
            nodes,
            sessions: sessions.len(),
            events,
            median_s: None,
            median_ci_low_s: None,
            median_ci_high_s: None,
            s_1h: None,
            s_6h: None,
            s_24h: None,
            exp_mean_s: None,
            weibull_shape: None,
            weibull_shape_lo: None,
            weibull_shape_hi: None,
            weibull_scale_s: None,
            lr_p_value: None,
            verdict: "n/a (no events)".into(),
            shape_model: None,
            aic_gap: None,
            evidence: None,
            ibs_model: None,
            min_events,
            median: "n/a".into(),
            notes: Vec::new(),
            shrinkage: "none".into(),
            m: None,
            theta: None,
            shape: None,
            curve: Vec::new(),
        };
        if sessions.is_empty() {
            out.push(fit);
            continue;
        }
        let (exit, event, entry) = columns(&sessions);
        let truncated = entry.iter().any(|&e| e > 0.0);
        let sd = if truncated {
            SurvivalData::new(&exit, &event).with_entry(&entry)
        } else {
            SurvivalData::new(&exit, &event)
        };
        let km = KmFit::fit_data(&sd)?;
        fit.median_s = km.median();
        let (band_lo, band_hi) = km.view().confidence_interval(Z_95);
        (fit.median_ci_low_s, fit.median_ci_high_s) =
            median_interval(km.timeline(), &band_lo, &band_hi);
        let d = crate::output::duration_text;
        fit.median = match (fit.median_s, fit.median_ci_low_s, fit.median_ci_high_s) {
            (Some(m), Some(lo), Some(hi)) => format!("{} [{}, {}]", d(m), d(lo), d(hi)),
            (Some(m), Some(lo), None) => format!("{} [{}, not reached]", d(m), d(lo)),
            (Some(m), _, _) => d(m),
            (None, _, _) => format!(
                "> {} (not reached)",
                d(km.timeline().last().copied().unwrap_or(0.0))
            ),
        };
        fit.s_1h = Some(km.survival(HORIZONS_S[0]));
        fit.s_6h = Some(km.survival(HORIZONS_S[1]));
        fit.s_24h = Some(km.survival(HORIZONS_S[2]));
        fit.curve = km
            .timeline()
            .iter()
            .copied()
            .zip(km.survival_values().iter().copied())
            .collect();
        // Continuous models give zero probability to an event at age 0: sessions that ended
        // the instant they were seen carry no information for them.
        let positive: Vec<usize> = (0..exit.len()).filter(|&i| exit[i] > 0.0).collect();
        let (pexit, pevent, pentry): (Vec<f64>, Vec<bool>, Vec<f64>) = (
            positive.iter().map(|&i| exit[i]).collect(),
            positive.iter().map(|&i| event[i]).collect(),
            positive.iter().map(|&i| entry[i]).collect(),
        );
        let psd = if truncated {
            SurvivalData::new(&pexit, &pevent).with_entry(&pentry)
        } else {
            SurvivalData::new(&pexit, &pevent)
        };
        if events > 0 && events < min_events {
            fit.verdict = format!("too few events ({events})");
            fit.evidence = Some(format!(
                "{events} observed end(s); a verdict needs at least {min_events} (--min-events)"
            ));
        } else if events > 0 {
            if let Ok(shape) = hazard_shape_test(&psd) {
                fit.exp_mean_s = Some(shape.exponential.mean());
                fit.weibull_shape = Some(shape.weibull.shape);
                fit.weibull_shape_lo = Some(shape.weibull.shape_ci.0);
                fit.weibull_shape_hi = Some(shape.weibull.shape_ci.1);
                fit.weibull_scale_s = Some(shape.weibull.scale);
                fit.lr_p_value = Some(shape.p_value);
                let k = shape.weibull.shape;
                if k <= WEIBULL_K_EDGES.0 || k >= WEIBULL_K_EDGES.1 {
                    fit.notes.push(format!(
                        "weibull_shape {k:.3} is at the edge of its search range: the likelihood keeps rising past it, so no Weibull describes these data (see the verdict's model)"
                    ));
                }
            }
            let opts = ShapeOptions {
                min_events,
                ..ShapeOptions::default()
            };
            let entry_opt = truncated.then_some(pentry.as_slice());
            match select_shape(&pexit, &pevent, entry_opt, &opts) {
                Ok(v) => {
                    fit.verdict = match (v.verdict, v.too_few_events) {
                        (Some(shape), _) => shape.to_string(),
                        (None, Some(n)) => format!("too few events ({n})"),
                        (None, None) => "n/a (no verdict)".into(),
                    };
                    fit.shape_model = v.deciding_model.map(|m| m.as_str().to_string());
                    fit.aic_gap = v.aic_gap_to_next;
                    if let Some(model) = v
                        .deciding_model
                        .and_then(|k| v.models.iter().find(|m| m.kind == k))
                    {
                        for p in model.params.iter().filter(|p| p.at_bound) {
                            fit.notes.push(format!(
                                "{} {} of the {} model is at the edge of its search range (the likelihood keeps rising past it)",
                                p.name,
                                num(p.estimate),
                                model.kind.as_str()
                            ));
                        }
                        fit.evidence = Some(format!(
                            "{}; {}",
                            evidence_parameters(&v).unwrap_or_default(),
                            v.reason
                        ));
                    } else {
                        fit.evidence = Some(v.reason.clone());
                    }
                    fit.shape = Some(v);
                    fit.ibs_model = held_out_ibs_best(&pexit, &pevent, entry_opt, &opts);
                }
                Err(e) => fit.verdict = format!("n/a ({e})"),
            }
            if let Some(choice) = shrinkage {
                let groups: Vec<u32> = sessions.iter().map(|s| s.node).collect();
                let opts = ShrinkageOptions {
                    estimator: choice,
                    n_nodes: Some(data.node_ids.len()),
                    ..ShrinkageOptions::default()
                };
                if let Ok(model) = ShrinkageModel::fit(&groups, &sd, &opts) {
                    let sum = model.summary();
                    fit.shrinkage = match sum.selected {
                        crate::survival::shrinkage::Estimator::BetaProcess => "beta",
                        crate::survival::shrinkage::Estimator::GammaFrailty => "frailty",
                    }
                    .into();
                    fit.m = sum.m;
                    fit.theta = Some(sum.theta);
                    fit.notes.extend(bound_notes(sum.m, sum.theta, &opts));
                }
            }
        }
        out.push(fit);
    }
    Ok(out)
}

/// A number in 4 significant digits (seconds and rates of very different sizes).
fn num(x: f64) -> String {
    if x != 0.0 && (x.abs() >= 1e5 || x.abs() < 1e-2) {
        format!("{x:.3e}")
    } else {
        format!("{}", (x * 1e4).round() / 1e4)
    }
}

/// Notes for shrinkage hyper-parameters at the edge of their search range.
fn bound_notes(m: Option<f64>, theta: f64, opts: &ShrinkageOptions) -> Vec<String> {
    let mut out = Vec::new();
    let near = |x: f64, edge: f64| (x / edge - 1.0).abs() < 1e-6;
    if let Some(m) = m {
        let grid = crate::survival::shrinkage::default_m_grid();
        if let (Some(&lo), Some(&hi)) = (grid.first(), grid.last()) {
            if near(m, lo) {
                out.push(format!(
                    "m {m} is the smallest M searched: the pooled curve is worth almost nothing next to a node's own sessions (nodes differ strongly, or the cross-validation is flat)"
                ));
            } else if near(m, hi) {
                out.push(format!(
                    "m {m} is the largest M searched: nodes are indistinguishable from the pooled curve (each node gets the pooled curve)"
                ));
            }
        }
    }
    let (tlo, thi) = opts.theta_bounds;
    if near(theta, tlo) {
        out.push(format!(
            "theta {theta} is the smallest frailty variance searched: no detectable difference between nodes"
        ));
    } else if near(theta, thi) {
        out.push(format!(
            "theta {theta} is the largest frailty variance searched: node hazards differ more than the model can express"
        ));
    }
    out
}

/// The model with the best integrated Brier score on held-out data: the sessions are split
/// into alternate halves (even and odd positions in load order); every model
/// is fitted on the first half and scored on the second (IPCW integrated Brier score, lower is
/// better). `None` when a half has too few events or nothing could be scored.
fn held_out_ibs_best(
    exit: &[f64],
    event: &[bool],
    entry: Option<&[f64]>,
    opts: &ShapeOptions,
) -> Option<String> {
    let half = |parity: usize| -> (Vec<f64>, Vec<bool>, Option<Vec<f64>>) {
        let idx: Vec<usize> = (0..exit.len()).filter(|i| i % 2 == parity).collect();
        (
            idx.iter().map(|&i| exit[i]).collect(),
            idx.iter().map(|&i| event[i]).collect(),
            entry.map(|e| idx.iter().map(|&i| e[i]).collect()),
        )
    };
    let (tx, td, te) = half(0);
    let (sx, sd, se) = half(1);
    let train = select_shape(&tx, &td, te.as_deref(), opts).ok()?;
    if train.models.is_empty() || !sd.iter().any(|&d| d) {
        return None;
    }
    let ranked = rank_by_ibs(
        &train.models,
        &sx,
        &sd,
        se.as_deref(),
        &IbsOptions::default(),
    )
    .ok()?;
    ranked.first().map(|(k, _)| k.as_str().to_string())
}
