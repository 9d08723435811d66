//! Pooled curve, hazard shape and shrinkage summary per group of nodes.

use serde::Serialize;

use super::SourceSessions;
use crate::survival::km::KmFit;
use crate::survival::parametric::hazard_shape_test;
use crate::survival::shrinkage::{EstimatorChoice, ShrinkageModel, ShrinkageOptions};
use crate::survival::{ConditionalSurvival, SurvivalData, SurvivalError};

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
    /// `decreasing`, `roughly constant` or `increasing` hazard.
    pub verdict: String,
    /// Shrinkage estimator selected (`beta` or `frailty`; `none` when not fitted).
    pub shrinkage: String,
    /// Beta-process M (virtual sessions).
    pub m: Option<f64>,
    /// Gamma-frailty variance theta.
    pub theta: Option<f64>,
    /// The pooled curve: (time, survival) steps.
    #[serde(skip)]
    pub curve: Vec<(f64, f64)>,
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

/// Fits every group of `data`: pooled KM, exponential and Weibull with the likelihood-ratio
/// verdict, and (unless `shrinkage` is `None`) the per-node shrinkage hyper-parameters.
pub fn fit_groups(
    data: &SourceSessions,
    shrinkage: Option<EstimatorChoice>,
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
            shrinkage: "none".into(),
            m: None,
            theta: None,
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
        if events > 0 {
            if let Ok(shape) = hazard_shape_test(&psd) {
                fit.exp_mean_s = Some(shape.exponential.mean());
                fit.weibull_shape = Some(shape.weibull.shape);
                fit.weibull_shape_lo = Some(shape.weibull.shape_ci.0);
                fit.weibull_shape_hi = Some(shape.weibull.shape_ci.1);
                fit.weibull_scale_s = Some(shape.weibull.scale);
                fit.lr_p_value = Some(shape.p_value);
                fit.verdict = shape.verdict.to_string();
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
                }
            }
        }
        out.push(fit);
    }
    Ok(out)
}
