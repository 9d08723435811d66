//! Model selection and the shape verdict (rules in the module docs of `shapes`), and held-out
//! scoring by the integrated Brier score.

use super::error::{validate, ShapeError};
use super::fitting::{check_options, fit_kind};
use super::likelihood::Data;
use super::models::*;
use crate::survival::validate::{
    brier_grid, brier_scores, ibs_horizon, integrated_brier_score, Residual,
};
use crate::survival::Z_95;

/// The shape of a deciding model (rules in the module docs) and the rule in words.
pub(super) fn shape_of(fit: &ModelFit, data: &Data<'_>) -> (HazardShape, String) {
    match &fit.model {
        FittedModel::Exponential { .. } => (HazardShape::Constant, "exponential".into()),
        FittedModel::Weibull { shape, .. } | FittedModel::Gamma { shape, .. } => {
            let name = if fit.kind == ModelKind::Weibull {
                "weibull k"
            } else {
                "gamma α"
            };
            if *shape > 1.0 {
                (HazardShape::Increasing, format!("{name} = {shape:.3} > 1"))
            } else {
                (HazardShape::Decreasing, format!("{name} = {shape:.3} ≤ 1"))
            }
        }
        FittedModel::LogNormal { mu, sigma } => {
            let mode = lognormal_hazard_mode(*mu, *sigma);
            let q90 = data.event_quantile(0.9);
            if mode > q90 {
                (
                    HazardShape::Increasing,
                    format!("lognormal hazard mode {mode:.4e} beyond the event-time p90 {q90:.4e}"),
                )
            } else {
                (
                    HazardShape::Decreasing,
                    format!("lognormal hazard mode {mode:.4e} before the event-time p90 {q90:.4e}"),
                )
            }
        }
        FittedModel::Piecewise { cuts, rates } => piecewise_shape(cuts, rates, data),
        FittedModel::Bathtub {
            shape1,
            scale1,
            shape2,
            scale2,
        } => {
            let t = bathtub_hazard_minimum(*shape1, *scale1, *shape2, *scale2);
            let (q05, q95) = (data.event_quantile(0.05), data.event_quantile(0.95));
            let shape = if t < q05 {
                HazardShape::Increasing
            } else if t > q95 {
                HazardShape::Decreasing
            } else {
                HazardShape::Bathtub
            };
            (
                shape,
                format!(
                    "bathtub hazard minimum at {t:.4e}, event-time p5–p95 [{q05:.4e}, {q95:.4e}]"
                ),
            )
        }
        FittedModel::Capped { cap, change, .. } => (
            HazardShape::Capped,
            format!("cap at {cap:.4e}: a spike of ends after {change:.4e}"),
        ),
    }
}

/// Piecewise rule: bathtub if the lowest rate is interior and both end pieces are higher by
/// more than z se of the log-rate difference; else the sign of the event-weighted slope of
/// ln r̂_k on k.
pub(super) fn piecewise_shape(
    cuts: &[f64],
    rates: &[f64],
    data: &Data<'_>,
) -> (HazardShape, String) {
    let p = rates.len();
    let mut counts = vec![0.0f64; p];
    for &t in &data.event_times {
        if let Some(c) = counts.get_mut(cuts.partition_point(|&c| c < t)) {
            *c += 1.0;
        }
    }
    let Some((m, _)) = rates
        .iter()
        .enumerate()
        .filter(|(k, _)| counts[*k] > 0.0)
        .min_by(|a, b| a.1.total_cmp(b.1))
    else {
        return (HazardShape::Constant, "piecewise without events".into());
    };
    let higher = |a: usize| {
        counts[a] > 0.0
            && (rates[a].ln() - rates[m].ln()) > Z_95 * (1.0 / counts[a] + 1.0 / counts[m]).sqrt()
    };
    if m > 0 && m + 1 < p && higher(0) && higher(p - 1) {
        return (
            HazardShape::Bathtub,
            format!(
                "piecewise rates fall to piece {} of {p} and rise after",
                m + 1
            ),
        );
    }
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (k, (&r, &d)) in rates.iter().zip(&counts).enumerate() {
        if d > 0.0 {
            let (x, y) = (k as f64, r.ln());
            sw += d;
            sx += d * x;
            sy += d * y;
            sxx += d * x * x;
            sxy += d * x * y;
        }
    }
    let slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx);
    if slope > 0.0 {
        (
            HazardShape::Increasing,
            format!("piecewise log-rate slope {slope:.3} > 0"),
        )
    } else if slope < 0.0 {
        (
            HazardShape::Decreasing,
            format!("piecewise log-rate slope {slope:.3} < 0"),
        )
    } else {
        (HazardShape::Constant, "piecewise log-rate slope 0".into())
    }
}

/// Fits every candidate of `opts.models` (plus the exponential), ranks them by AIC and gives
/// the hazard-shape verdict (rules in the module docs).
///
/// With fewer than `opts.min_events` events: `verdict: None`, `too_few_events: Some(D)`, no
/// models. Errors: invalid input (empty, length mismatch, NaN/∞/negative, exit not after
/// entry), no event at all ([`ShapeError::NoEvents`]), invalid options.
pub fn select_shape(
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
    opts: &ShapeOptions,
) -> Result<ShapeVerdict, ShapeError> {
    check_options(opts)?;
    let data = Data::new(durations, events, entry)?;
    if data.n_events == 0 {
        return Err(ShapeError::NoEvents);
    }
    if data.n_events < opts.min_events {
        return Ok(ShapeVerdict {
            verdict: None,
            too_few_events: Some(data.n_events),
            events: data.n_events,
            best_model: None,
            deciding_model: None,
            aic_gap_to_next: None,
            reason: format!(
                "{} events, fewer than the {} needed for a verdict",
                data.n_events, opts.min_events
            ),
            models: Vec::new(),
            skipped: Vec::new(),
        });
    }
    let mut kinds = vec![ModelKind::Exponential];
    for &k in &opts.models {
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let mut hl = None;
    let mut weib = None;
    let mut models = Vec::new();
    let mut skipped = Vec::new();
    for kind in kinds {
        match fit_kind(kind, &data, opts, &mut hl, &mut weib) {
            Ok(f) if f.log_likelihood.is_finite() => models.push(f),
            Ok(_) => skipped.push(SkippedModel {
                kind,
                reason: "the maximised log-likelihood is not finite".into(),
            }),
            Err(e) => skipped.push(SkippedModel {
                kind,
                reason: e.to_string(),
            }),
        }
    }
    if models.is_empty() {
        // unreachable in practice: the exponential always fits when D > 0
        return Err(ShapeError::NotApplicable("no model could be fitted".into()));
    }
    models.sort_by(|a, b| a.aic.total_cmp(&b.aic).then(a.n_params.cmp(&b.n_params)));
    let best_aic = models.first().map_or(f64::NAN, |m| m.aic);
    for m in &mut models {
        m.delta_aic = m.aic - best_aic;
    }
    let aic_gap_to_next = models.get(1).map(|m| m.delta_aic);
    // parsimony: step down to a simpler model within the margin
    let mut deciding = 0;
    loop {
        let cur = &models[deciding];
        let simpler = models
            .iter()
            .enumerate()
            .filter(|(_, m)| m.n_params < cur.n_params)
            .min_by(|a, b| a.1.aic.total_cmp(&b.1.aic));
        match simpler {
            Some((j, m)) if m.aic - cur.aic < opts.parsimony_margin => deciding = j,
            _ => break,
        }
    }
    let (shape, rule) = shape_of(&models[deciding], &data);
    let best = &models[0];
    let reason = if deciding == 0 {
        format!(
            "{} is AIC-best (ΔAIC to next {}): {rule}",
            best.kind,
            aic_gap_to_next.map_or("n/a".into(), |g| format!("{g:.2}"))
        )
    } else {
        format!(
            "{} is AIC-best but the simpler {} is within ΔAIC {:.2} < {} (parsimony): {rule}",
            best.kind, models[deciding].kind, models[deciding].delta_aic, opts.parsimony_margin
        )
    };
    Ok(ShapeVerdict {
        verdict: Some(shape),
        too_few_events: None,
        events: data.n_events,
        best_model: Some(best.kind),
        deciding_model: Some(models[deciding].kind),
        aic_gap_to_next,
        reason,
        models,
        skipped,
    })
}

/// Options of [`held_out_ibs`].
#[derive(Debug, Clone, PartialEq)]
pub struct IbsOptions {
    /// Horizon τ on the residual clock; `None` = the 90th percentile of the residuals r_i,
    /// lowered below the time where the censoring Kaplan–Meier reaches 0.
    pub horizon: Option<f64>,
    /// Number of trapezoid intervals on [0, τ] (≥ 1).
    pub intervals: usize,
}

impl Default for IbsOptions {
    /// Default horizon, 50 intervals.
    fn default() -> Self {
        IbsOptions {
            horizon: None,
            intervals: 50,
        }
    }
}

/// Held-out IPCW integrated Brier score of a fitted model (lower is better), scored by the
/// crate's one Brier score: on the residual clock r_i = T_i − e_i with predictions
/// Ŝ_i(τ) = S(e_i + τ)/S(e_i) (conditional on being alive at entry),
///
///   BS(τ) = (1/n) Σ_i [ 1{r_i ≤ τ, δ_i = 1} Ŝ_i(τ)² / Ĝ(r_i−) + 1{r_i > τ} (1 − Ŝ_i(τ))² / Ĝ(τ) ],
///   IBS = (1/τ_max) ∫₀^{τ_max} BS(τ) dτ
///
/// ([`brier_scores`], Graf et al. 1999, Ĝ the Kaplan–Meier of the censoring distribution of
/// the r_i; on the [`brier_grid`] of `intervals` equal steps, integrated by
/// [`integrated_brier_score`]). τ_max is the option's horizon or [`ibs_horizon`] at the 90th
/// percentile. Errors: invalid input, or no positive horizon.
pub fn held_out_ibs(
    model: &FittedModel,
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
    opts: &IbsOptions,
) -> Result<f64, ShapeError> {
    validate(durations, events, entry)?;
    if opts.intervals == 0 {
        return Err(ShapeError::InvalidArgument(
            "intervals must be at least 1".into(),
        ));
    }
    let invalid = |e: crate::survival::SurvivalError| ShapeError::InvalidArgument(e.to_string());
    let n = durations.len();
    let ent = |i: usize| entry.map_or(0.0, |e| e[i]);
    let res: Vec<Residual> = (0..n)
        .map(|i| Residual {
            time: durations[i] - ent(i),
            event: events[i],
        })
        .collect();
    let tau = match opts.horizon {
        Some(h) => h,
        None => ibs_horizon(&res, 0.9).map_err(invalid)?.unwrap_or(0.0),
    };
    if !(tau > 0.0 && tau.is_finite()) {
        return Err(ShapeError::InvalidArgument(format!(
            "the Brier horizon must be positive and finite, got {tau}"
        )));
    }
    let grid = brier_grid(tau, opts.intervals);
    // Predictions of subjects without delayed entry are shared.
    let s0: Vec<f64> = grid.iter().map(|&t| model.survival(t)).collect();
    let h_entry: Vec<f64> = (0..n).map(|i| model.cumulative_hazard(ent(i))).collect();
    let bs = brier_scores(&res, &grid, |i, k| {
        let e = ent(i);
        if e > 0.0 {
            (h_entry[i] - model.cumulative_hazard(e + grid[k])).exp()
        } else {
            s0[k]
        }
    })
    .map_err(invalid)?;
    integrated_brier_score(&grid, &bs).ok_or_else(|| {
        ShapeError::InvalidArgument(format!("no Brier score over the horizon {tau}"))
    })
}

/// Held-out IBS of every model of a verdict, best first (models whose score fails are left
/// out): choose by held-out IBS instead of AIC.
pub fn rank_by_ibs(
    models: &[ModelFit],
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
    opts: &IbsOptions,
) -> Result<Vec<(ModelKind, f64)>, ShapeError> {
    validate(durations, events, entry)?;
    let mut out: Vec<(ModelKind, f64)> = models
        .iter()
        .filter_map(|m| {
            held_out_ibs(&m.model, durations, events, entry, opts)
                .ok()
                .map(|s| (m.kind, s))
        })
        .collect();
    out.sort_by(|a, b| a.1.total_cmp(&b.1));
    Ok(out)
}
