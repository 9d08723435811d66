//! One maximum-likelihood fit per model (see the module docs of `shapes` for each).

use super::error::ShapeError;
use super::likelihood::{
    bathtub_knot, bathtub_shapes, gamma_knot, lognormal_knot, Data, HermiteLik,
};
use super::models::*;
use crate::survival::numeric::{nelder_mead, numeric_derivatives, spd_inverse};
use crate::survival::parametric::weibull_mle;
use crate::survival::Z_95;

/// Candidate cap window widths w as fractions of the cap L.
pub(super) const CAP_WINDOWS: [f64; 6] = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05];

/// Limit of ln(scale / median event time) for the Nelder–Mead models.
pub(super) const LN_SCALE_BOUND: f64 = 30.0;

/// Distance to a box limit (unconstrained scale) under which an estimate is `at_bound`.
pub(super) const AT_BOUND_TOL: f64 = 1e-4;

pub(super) fn param(name: &str, estimate: f64, lo: f64, hi: f64, at_bound: bool) -> ParamEstimate {
    ParamEstimate {
        name: name.to_string(),
        estimate,
        ci_low: lo,
        ci_high: hi,
        at_bound,
    }
}

pub(super) fn model_fit(
    model: FittedModel,
    params: Vec<ParamEstimate>,
    ll: f64,
    p: usize,
) -> ModelFit {
    ModelFit {
        kind: model.kind(),
        model,
        params,
        log_likelihood: ll,
        n_params: p,
        aic: 2.0 * p as f64 - 2.0 * ll,
        delta_aic: 0.0,
    }
}

/// Exponential: λ̂ = D/E, ℓ̂ = D ln λ̂ − D, Wald interval λ̂ exp(±z/√D).
pub(super) fn fit_exponential(data: &Data<'_>) -> ModelFit {
    let d = data.n_events as f64;
    let rate = d / data.exposure;
    let half = Z_95 / d.sqrt();
    model_fit(
        FittedModel::Exponential { rate },
        vec![param(
            "rate",
            rate,
            rate * (-half).exp(),
            rate * half.exp(),
            false,
        )],
        d * rate.ln() - d,
        1,
    )
}

/// Wald interval exp(ln x ± z se) (NaN bounds when se is not finite).
pub(super) fn log_wald(x: f64, var: f64) -> (f64, f64) {
    let se = var.sqrt();
    if se.is_finite() {
        (x * (-Z_95 * se).exp(), x * (Z_95 * se).exp())
    } else {
        (f64::NAN, f64::NAN)
    }
}

pub(super) fn fit_weibull(data: &Data<'_>) -> Result<ModelFit, ShapeError> {
    let rows = (0..data.t.len()).map(|i| (data.t[i], data.entry(i), data.d[i]));
    let w = weibull_mle(rows, SHAPE_BOUNDS).ok_or(ShapeError::NoEvents)?;
    let (k_lo, k_hi) = log_wald(w.k, w.cov[0][0]);
    let (l_lo, l_hi) = log_wald(w.lambda, w.cov[1][1]);
    Ok(model_fit(
        FittedModel::Weibull {
            shape: w.k,
            scale: w.lambda,
        },
        vec![
            param("shape", w.k, k_lo, k_hi, w.at_bound),
            param("scale", w.lambda, l_lo, l_hi, false),
        ],
        w.loglik,
        2,
    ))
}

/// Result of a Nelder–Mead fit on the Hermite likelihood: θ̂, ℓ̂ (scaled clock), covariance.
pub(super) struct SmoothFit {
    pub(super) theta: Vec<f64>,
    pub(super) loglik: f64,
    pub(super) cov: Option<Vec<Vec<f64>>>,
    pub(super) at_bound: Vec<bool>,
}

/// Maximises ℓ(θ) over the box from the best of `starts`: Nelder–Mead from the two best
/// starts, Newton polish on the numerical Hessian, Wald covariance.
pub(super) fn fit_smooth<F: Fn(&[f64]) -> f64>(
    ll: &F,
    starts: &[Vec<f64>],
    lo: &[f64],
    hi: &[f64],
) -> Option<SmoothFit> {
    let neg = |x: &[f64]| -ll(x);
    let mut scored: Vec<(f64, &Vec<f64>)> = starts.iter().map(|s| (neg(s), s)).collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best: Option<(Vec<f64>, f64)> = None;
    for (_, s) in scored.iter().take(2) {
        let (x, fx) = nelder_mead(&neg, s, 0.3, lo, hi, 4000);
        if best.as_ref().is_none_or(|b| fx < b.1) {
            best = Some((x, fx));
        }
    }
    let (mut theta, mut fbest) = best?;
    if !fbest.is_finite() {
        return None;
    }
    let n = theta.len();
    let h = 1e-4;
    // Newton polish (free coordinates only)
    for _ in 0..6 {
        let (g, hess) = numeric_derivatives(ll, &theta, h);
        let neg_h: Vec<Vec<f64>> = hess
            .iter()
            .map(|r| r.iter().map(|v| -v).collect())
            .collect();
        let Some(inv) = spd_inverse(&neg_h) else {
            break;
        };
        let step: Vec<f64> = (0..n)
            .map(|i| (0..n).map(|j| inv[i][j] * g[j]).sum::<f64>())
            .collect();
        let cand: Vec<f64> = (0..n)
            .map(|i| (theta[i] + step[i]).clamp(lo[i], hi[i]))
            .collect();
        let fc = neg(&cand);
        if fc < fbest {
            let gain = fbest - fc;
            theta = cand;
            fbest = fc;
            if gain < 1e-10 {
                break;
            }
        } else {
            break;
        }
    }
    let at_bound: Vec<bool> = (0..n)
        .map(|i| (theta[i] - lo[i]).abs() < AT_BOUND_TOL || (hi[i] - theta[i]).abs() < AT_BOUND_TOL)
        .collect();
    let (_, hess) = numeric_derivatives(ll, &theta, 1e-3);
    let neg_h: Vec<Vec<f64>> = hess
        .iter()
        .map(|r| r.iter().map(|v| -v).collect())
        .collect();
    Some(SmoothFit {
        theta,
        loglik: -fbest,
        cov: spd_inverse(&neg_h),
        at_bound,
    })
}

/// Standard error of θ_i from the covariance (NaN when singular).
pub(super) fn se_of(cov: &Option<Vec<Vec<f64>>>, i: usize) -> f64 {
    cov.as_ref().map_or(f64::NAN, |c| c[i][i].max(0.0).sqrt())
}

/// Interval g(θ ± z se) for an increasing map g (NaN bounds for a NaN se).
pub(super) fn mapped_ci(theta: f64, se: f64, g: impl Fn(f64) -> f64) -> (f64, f64) {
    if se.is_finite() {
        (g(theta - Z_95 * se), g(theta + Z_95 * se))
    } else {
        (f64::NAN, f64::NAN)
    }
}

pub(super) fn fit_lognormal(
    data: &Data<'_>,
    hl: &HermiteLik,
    weib: Option<&ModelFit>,
) -> Option<ModelFit> {
    let ll = |th: &[f64]| hl.loglik(|x| lognormal_knot(th, x));
    let logs: Vec<f64> = data.event_times.iter().map(|&t| (t / hl.s).ln()).collect();
    let mean = logs.iter().sum::<f64>() / logs.len() as f64;
    let sd = (logs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / logs.len() as f64)
        .sqrt()
        .clamp(0.05, 10.0);
    let mut starts = vec![vec![mean, sd.ln()], vec![mean + 0.5 * sd, sd.ln()]];
    if let Some(FittedModel::Weibull { shape, scale }) = weib.map(|w| &w.model) {
        // ln T of a Weibull: mean ln λ − γ/k, sd π/(k√6)
        let sd_w = (std::f64::consts::PI / (shape * 6f64.sqrt())).clamp(0.05, 10.0);
        starts.push(vec![(scale / hl.s).ln() - 0.5772 / shape, sd_w.ln()]);
    }
    let lo = [-LN_SCALE_BOUND, SHAPE_BOUNDS.0.ln()];
    let hi = [LN_SCALE_BOUND, SHAPE_BOUNDS.1.ln()];
    let f = fit_smooth(&ll, &starts, &lo, &hi)?;
    let s = hl.s;
    let mu = f.theta[0] + s.ln();
    let sigma = f.theta[1].exp();
    let (m_lo, m_hi) = mapped_ci(f.theta[0], se_of(&f.cov, 0), |v| v + s.ln());
    let (s_lo, s_hi) = mapped_ci(f.theta[1], se_of(&f.cov, 1), f64::exp);
    Some(model_fit(
        FittedModel::LogNormal { mu, sigma },
        vec![
            param("mu", mu, m_lo, m_hi, f.at_bound[0]),
            param("sigma", sigma, s_lo, s_hi, f.at_bound[1]),
        ],
        f.loglik - hl.d * s.ln(),
        2,
    ))
}

pub(super) fn fit_gamma(
    data: &Data<'_>,
    hl: &HermiteLik,
    weib: Option<&ModelFit>,
) -> Option<ModelFit> {
    let ll = |th: &[f64]| hl.loglik(|x| gamma_knot(th, x));
    let s = hl.s;
    let ev: Vec<f64> = data.event_times.iter().map(|&t| t / s).collect();
    let mean = ev.iter().sum::<f64>() / ev.len() as f64;
    let var = ev.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / ev.len() as f64;
    let mut starts = vec![vec![0.0, (data.exposure / s / data.n_events as f64).ln()]];
    if var > 0.0 && mean > 0.0 {
        let a = (mean * mean / var).clamp(0.05, 40.0);
        starts.push(vec![a.ln(), (var / mean).ln()]);
    }
    if let Some(FittedModel::Weibull { shape, scale }) = weib.map(|w| &w.model) {
        let a = (shape * shape).clamp(0.05, 40.0);
        starts.push(vec![a.ln(), (scale / s / a).ln()]);
    }
    let lo = [SHAPE_BOUNDS.0.ln(), -LN_SCALE_BOUND];
    let hi = [SHAPE_BOUNDS.1.ln(), LN_SCALE_BOUND];
    let f = fit_smooth(&ll, &starts, &lo, &hi)?;
    let shape = f.theta[0].exp();
    let scale = f.theta[1].exp() * s;
    let (a_lo, a_hi) = mapped_ci(f.theta[0], se_of(&f.cov, 0), f64::exp);
    let (t_lo, t_hi) = mapped_ci(f.theta[1], se_of(&f.cov, 1), |v| v.exp() * s);
    Some(model_fit(
        FittedModel::Gamma { shape, scale },
        vec![
            param("shape", shape, a_lo, a_hi, f.at_bound[0]),
            param("scale", scale, t_lo, t_hi, f.at_bound[1]),
        ],
        f.loglik - hl.d * s.ln(),
        2,
    ))
}

pub(super) fn fit_bathtub(
    data: &Data<'_>,
    hl: &HermiteLik,
    weib: Option<&ModelFit>,
) -> Option<ModelFit> {
    let ll = |th: &[f64]| hl.loglik(|x| bathtub_knot(th, x));
    let s = hl.s;
    let logit = |p: f64| (p / (1.0 - p)).ln();
    let q = |p: f64| (data.event_quantile(p) / s).ln();
    let mut starts = Vec::new();
    for &k1 in &[0.4, 0.7] {
        for &l1 in &[q(0.5) + 1.0, q(0.5) + 4.0] {
            for &k2 in &[2.0f64, 5.0] {
                for &l2 in &[q(0.75), q(0.95), q(1.0) + 0.5] {
                    starts.push(vec![logit(k1), l1, (k2 - 1.0).ln(), l2]);
                }
            }
        }
    }
    if let Some(FittedModel::Weibull { shape, scale }) = weib.map(|w| &w.model) {
        let l = (scale / s).ln();
        // close to the Weibull: the other part negligible
        if *shape > 1.0 {
            starts.push(vec![logit(0.5), l + 8.0, (shape - 1.0).max(0.05).ln(), l]);
        } else {
            starts.push(vec![logit(shape.min(0.95)), l, 2f64.ln(), q(1.0) + 3.0]);
        }
    }
    let lo = [
        logit(SHAPE_BOUNDS.0),
        -LN_SCALE_BOUND,
        (SHAPE_BOUNDS.0).ln(),
        -LN_SCALE_BOUND,
    ];
    let hi = [
        logit(1.0 - SHAPE_BOUNDS.0),
        LN_SCALE_BOUND,
        (SHAPE_BOUNDS.1 - 1.0).ln(),
        LN_SCALE_BOUND,
    ];
    let f = fit_smooth(&ll, &starts, &lo, &hi)?;
    let (k1, k2) = bathtub_shapes(&f.theta);
    let (l1, l2) = (f.theta[1].exp() * s, f.theta[3].exp() * s);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    let (k1_lo, k1_hi) = mapped_ci(f.theta[0], se_of(&f.cov, 0), sig);
    let (l1_lo, l1_hi) = mapped_ci(f.theta[1], se_of(&f.cov, 1), |v| v.exp() * s);
    let (k2_lo, k2_hi) = mapped_ci(f.theta[2], se_of(&f.cov, 2), |v| 1.0 + v.exp());
    let (l2_lo, l2_hi) = mapped_ci(f.theta[3], se_of(&f.cov, 3), |v| v.exp() * s);
    Some(model_fit(
        FittedModel::Bathtub {
            shape1: k1,
            scale1: l1,
            shape2: k2,
            scale2: l2,
        },
        vec![
            param("shape1", k1, k1_lo, k1_hi, f.at_bound[0]),
            param("scale1", l1, l1_lo, l1_hi, f.at_bound[1]),
            param("shape2", k2, k2_lo, k2_hi, f.at_bound[2]),
            param("scale2", l2, l2_lo, l2_hi, f.at_bound[3]),
        ],
        f.loglik - hl.d * s.ln(),
        4,
    ))
}

/// Piecewise-constant hazard: cuts at the event-time quantiles j/P (duplicates dropped),
/// r̂_k = d_k / E_k with E_k the exposure in (c_{k−1}, c_k], ℓ̂ = Σ_k d_k (ln r̂_k − 1),
/// Wald interval r̂_k exp(±z/√d_k) (for d_k = 0: [0, −ln(0.025)/E_k]).
pub(super) fn fit_piecewise(data: &Data<'_>, pieces: usize) -> Result<ModelFit, ShapeError> {
    let mut cuts: Vec<f64> = (1..pieces)
        .map(|j| data.event_quantile(j as f64 / pieces as f64))
        .collect();
    cuts.dedup();
    let last = data.event_times.last().copied().unwrap_or(0.0);
    cuts.retain(|&c| c > 0.0 && c < last);
    if cuts.is_empty() {
        return Err(ShapeError::NotApplicable(
            "all event-time quantiles coincide: one piece is the exponential".into(),
        ));
    }
    let p = cuts.len() + 1;
    let mut events = vec![0.0; p];
    let mut exposure = vec![0.0; p];
    for i in 0..data.t.len() {
        let (t, e) = (data.t[i], data.entry(i));
        if data.d[i] {
            events[cuts.partition_point(|&c| c < t)] += 1.0;
        }
        let mut lo = 0.0;
        for (k, ex) in exposure.iter_mut().enumerate() {
            let hi = cuts.get(k).copied().unwrap_or(f64::INFINITY);
            let a = e.max(lo);
            let b = t.min(hi);
            if b > a {
                *ex += b - a;
            }
            lo = hi;
        }
    }
    let mut rates = Vec::with_capacity(p);
    let mut params = Vec::with_capacity(p);
    let mut ll = 0.0;
    for k in 0..p {
        let (dk, ek) = (events[k], exposure[k]);
        let r = if ek > 0.0 { dk / ek } else { 0.0 };
        rates.push(r);
        let (lo, hi) = if dk > 0.0 {
            let half = Z_95 / dk.sqrt();
            ll += dk * (r.ln() - 1.0);
            (r * (-half).exp(), r * half.exp())
        } else {
            (
                0.0,
                if ek > 0.0 {
                    -(0.025f64).ln() / ek
                } else {
                    f64::NAN
                },
            )
        };
        params.push(param(&format!("rate_{}", k + 1), r, lo, hi, false));
    }
    Ok(model_fit(
        FittedModel::Piecewise { cuts, rates },
        params,
        ll,
        p,
    ))
}

/// Capped model (see the module docs): best qualifying window by likelihood.
pub(super) fn fit_capped(data: &Data<'_>, cap: Option<f64>) -> Result<ModelFit, ShapeError> {
    let l_cap = match cap {
        Some(c) => {
            if !(c > 0.0 && c.is_finite()) {
                return Err(ShapeError::InvalidArgument(format!(
                    "cap must be positive and finite, got {c}"
                )));
            }
            c
        }
        None => data
            .event_times
            .last()
            .copied()
            .ok_or(ShapeError::NoEvents)?,
    };
    let min_events = CAP_MIN_EVENTS.max((0.01 * data.n_events as f64).ceil() as usize);
    let mut best: Option<(f64, ModelFit)> = None;
    let mut why = String::from("no window before the cap holds enough events");
    for (wi, &frac) in CAP_WINDOWS.iter().enumerate() {
        let c = l_cap * (1.0 - frac);
        let mut d_cap = 0usize;
        let mut e_cap = 0.0;
        for i in 0..data.t.len() {
            let t = data.t[i];
            let (lo, hi) = (data.entry(i).max(c), t.min(l_cap));
            if hi > lo {
                e_cap += hi - lo;
            }
            if data.d[i] && t > c && t <= l_cap {
                d_cap += 1;
            }
        }
        if d_cap < min_events || e_cap.is_nan() || e_cap <= 0.0 {
            continue;
        }
        let rows = (0..data.t.len())
            .filter(|&i| data.entry(i) < c)
            .map(|i| (data.t[i].min(c), data.entry(i), data.d[i] && data.t[i] <= c));
        let Some(w) = weibull_mle(rows, SHAPE_BOUNDS) else {
            continue;
        };
        let rho = d_cap as f64 / e_cap;
        let base_at_c = w.k / w.lambda * (c / w.lambda).powf(w.k - 1.0);
        let needed = CAP_MIN_JUMP * base_at_c;
        if needed.is_nan() || rho.is_nan() || rho < needed {
            why = format!(
                "the cap hazard {rho:.3e} is less than {CAP_MIN_JUMP} x the base hazard {base_at_c:.3e} before the cap"
            );
            continue;
        }
        // Exposure past the cap returns to the base hazard (its events, if a given cap has
        // any after it, too).
        let mut tail_ll = 0.0;
        for i in 0..data.t.len() {
            let t = data.t[i];
            if t > l_cap {
                let from = data.entry(i).max(l_cap);
                tail_ll -= (t / w.lambda).powf(w.k) - (from / w.lambda).powf(w.k);
                if data.d[i] {
                    tail_ll += (w.k / w.lambda).ln() + (w.k - 1.0) * (t / w.lambda).ln();
                }
            }
        }
        let ll = w.loglik + d_cap as f64 * (rho.ln() - 1.0) + tail_ll;
        if best.as_ref().is_some_and(|b| b.0 >= ll) {
            continue;
        }
        let (k_lo, k_hi) = log_wald(w.k, w.cov[0][0]);
        let (l_lo, l_hi) = log_wald(w.lambda, w.cov[1][1]);
        let (r_lo, r_hi) = log_wald(rho, 1.0 / d_cap as f64);
        let edge = wi == 0 || wi == CAP_WINDOWS.len() - 1;
        let fit = model_fit(
            FittedModel::Capped {
                shape: w.k,
                scale: w.lambda,
                change: c,
                cap_rate: rho,
                cap: l_cap,
            },
            vec![
                param("shape", w.k, k_lo, k_hi, w.at_bound),
                param("scale", w.lambda, l_lo, l_hi, false),
                param("cap_rate", rho, r_lo, r_hi, false),
                param("change", c, f64::NAN, f64::NAN, edge),
            ],
            ll,
            4,
        );
        best = Some((ll, fit));
    }
    best.map(|b| b.1).ok_or(ShapeError::NotApplicable(why))
}

/// Fits one model (see the module docs for each fit). Errors: invalid input, no events,
/// [`ShapeError::NotApplicable`] (capped without a spike, piecewise with one piece, a smooth
/// model whose likelihood is not finite anywhere it was searched).
pub fn fit_model(
    kind: ModelKind,
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
    opts: &ShapeOptions,
) -> Result<ModelFit, ShapeError> {
    check_options(opts)?;
    let data = Data::new(durations, events, entry)?;
    if data.n_events == 0 {
        return Err(ShapeError::NoEvents);
    }
    let mut hl = None;
    let mut weib = None;
    fit_kind(kind, &data, opts, &mut hl, &mut weib)
}

pub(super) fn check_options(opts: &ShapeOptions) -> Result<(), ShapeError> {
    if opts.pieces < 2 {
        return Err(ShapeError::InvalidArgument(format!(
            "pieces must be at least 2, got {}",
            opts.pieces
        )));
    }
    if let Some(c) = opts.cap {
        if !(c > 0.0 && c.is_finite()) {
            return Err(ShapeError::InvalidArgument(format!(
                "cap must be positive and finite, got {c}"
            )));
        }
    }
    if !(opts.parsimony_margin >= 0.0 && opts.parsimony_margin.is_finite()) {
        return Err(ShapeError::InvalidArgument(format!(
            "parsimony_margin must be finite and non-negative, got {}",
            opts.parsimony_margin
        )));
    }
    Ok(())
}

/// Fits `kind`, sharing the Hermite weights and the Weibull fit (a start for the others).
pub(super) fn fit_kind(
    kind: ModelKind,
    data: &Data<'_>,
    opts: &ShapeOptions,
    hl: &mut Option<HermiteLik>,
    weib: &mut Option<ModelFit>,
) -> Result<ModelFit, ShapeError> {
    let needs_weibull = matches!(
        kind,
        ModelKind::LogNormal | ModelKind::Gamma | ModelKind::Bathtub
    );
    if needs_weibull && weib.is_none() {
        *weib = fit_weibull(data).ok();
    }
    let not_finite = || {
        ShapeError::NotApplicable(format!(
            "the {kind} likelihood is not finite anywhere in the search box"
        ))
    };
    match kind {
        ModelKind::Exponential => Ok(fit_exponential(data)),
        ModelKind::Weibull => {
            if weib.is_none() {
                *weib = Some(fit_weibull(data)?);
            }
            weib.clone().ok_or(ShapeError::NoEvents)
        }
        ModelKind::Piecewise => fit_piecewise(data, opts.pieces),
        ModelKind::Capped => fit_capped(data, opts.cap),
        ModelKind::LogNormal | ModelKind::Gamma | ModelKind::Bathtub => {
            let h = hl.get_or_insert_with(|| HermiteLik::new(data));
            let fit = match kind {
                ModelKind::LogNormal => fit_lognormal(data, h, weib.as_ref()),
                ModelKind::Gamma => fit_gamma(data, h, weib.as_ref()),
                _ => fit_bathtub(data, h, weib.as_ref()),
            };
            fit.ok_or_else(not_finite)
        }
    }
}
