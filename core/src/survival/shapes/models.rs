//! The fitted hazard-shape models (every formula), their estimates and the verdict types.

use serde::Serialize;

use super::error::{validate, ShapeError};
use crate::survival::numeric::{gamma_ln_q, ln_gamma, normal_ln_pdf, normal_ln_sf};

/// Default minimum number of events for a verdict.
pub const DEFAULT_MIN_EVENTS: usize = 10;

/// Default number of pieces of the piecewise-constant hazard.
pub const DEFAULT_PIECES: usize = 4;

/// Default parsimony margin: a simpler model within ΔAIC < 4 of a richer one decides (see the
/// module docs, "Selection and verdict", for why 4 and not 2).
pub const DEFAULT_PARSIMONY_MARGIN: f64 = 4.0;

/// Box of every shape parameter (Weibull k, gamma α, lognormal σ, bathtub k₁ ≥ 0.02, k₂ ≤ 50).
pub const SHAPE_BOUNDS: (f64, f64) = (0.02, 50.0);

/// Minimum number of events in a cap window.
pub const CAP_MIN_EVENTS: usize = 5;

/// Minimum ratio ρ̂ / h_W(c) of the cap hazard to the base hazard at the change point.
pub const CAP_MIN_JUMP: f64 = 10.0;

/// The candidate models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Constant hazard.
    Exponential,
    /// Monotone power-law hazard.
    Weibull,
    /// Lognormal lifetime (hazard rises then falls).
    LogNormal,
    /// Gamma lifetime (monotone hazard tending to 1/θ).
    Gamma,
    /// Piecewise-constant hazard with cuts at event-time quantiles.
    Piecewise,
    /// Additive Weibull with a decreasing and an increasing part.
    Bathtub,
    /// Weibull with a sharp cap hazard before a lifetime limit.
    Capped,
}

impl ModelKind {
    /// Every kind, in order of increasing complexity.
    pub const ALL: [ModelKind; 7] = [
        ModelKind::Exponential,
        ModelKind::Weibull,
        ModelKind::LogNormal,
        ModelKind::Gamma,
        ModelKind::Piecewise,
        ModelKind::Bathtub,
        ModelKind::Capped,
    ];

    /// Lower-case name (`exponential`, `weibull`, `lognormal`, `gamma`, `piecewise`,
    /// `bathtub`, `capped`).
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::Exponential => "exponential",
            ModelKind::Weibull => "weibull",
            ModelKind::LogNormal => "lognormal",
            ModelKind::Gamma => "gamma",
            ModelKind::Piecewise => "piecewise",
            ModelKind::Bathtub => "bathtub",
            ModelKind::Capped => "capped",
        }
    }
}

impl std::fmt::Display for ModelKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A fitted model with its parameters in the time unit of the data.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "model")]
pub enum FittedModel {
    /// h(t) = λ, H(t) = λ t.
    Exponential {
        /// Rate λ.
        rate: f64,
    },
    /// h(t) = (k/λ)(t/λ)^{k−1}, H(t) = (t/λ)^k.
    Weibull {
        /// Shape k.
        shape: f64,
        /// Scale λ.
        scale: f64,
    },
    /// ln T ~ N(μ, σ²): H(t) = −ln Q(z), h(t) = φ(z) / (σ t Q(z)), z = (ln t − μ)/σ.
    LogNormal {
        /// Mean μ of ln T.
        mu: f64,
        /// Standard deviation σ of ln T.
        sigma: f64,
    },
    /// T ~ Gamma(α, θ): H(t) = −ln Q(α, t/θ), h(t) = t^{α−1} e^{−t/θ} / (θ^α Γ(α) Q(α, t/θ)).
    Gamma {
        /// Shape α.
        shape: f64,
        /// Scale θ.
        scale: f64,
    },
    /// h(t) = r_k on (c_{k−1}, c_k] (c_0 = 0, c_P = ∞), H(t) = Σ_k r_k |(0, t] ∩ (c_{k−1}, c_k]|.
    Piecewise {
        /// Interior cut points c_1 < … < c_{P−1}.
        cuts: Vec<f64>,
        /// Rates r_1, …, r_P.
        rates: Vec<f64>,
    },
    /// Additive Weibull: H(t) = (t/λ₁)^{k₁} + (t/λ₂)^{k₂}, k₁ < 1 < k₂.
    Bathtub {
        /// Shape k₁ < 1 of the decreasing part.
        shape1: f64,
        /// Scale λ₁ of the decreasing part.
        scale1: f64,
        /// Shape k₂ > 1 of the increasing part.
        shape2: f64,
        /// Scale λ₂ of the increasing part.
        scale2: f64,
    },
    /// h(t) = ρ on the cap window c < t ≤ L, the Weibull (k/λ)(t/λ)^{k−1} elsewhere:
    /// H(t) = (min(t, c)/λ)^k + ρ (min(t, L) − c)₊ + [(t/λ)^k − (L/λ)^k]₊. (Sessions seen
    /// past the cap, e.g. ones whose end was never recorded, return to the base hazard instead
    /// of diluting the spike.)
    Capped {
        /// Weibull shape k of the base hazard.
        shape: f64,
        /// Weibull scale λ of the base hazard.
        scale: f64,
        /// Change point c = L − w.
        change: f64,
        /// Cap hazard ρ after c.
        cap_rate: f64,
        /// The cap (lifetime limit) L.
        cap: f64,
    },
}

impl FittedModel {
    /// The model's kind.
    pub fn kind(&self) -> ModelKind {
        match self {
            FittedModel::Exponential { .. } => ModelKind::Exponential,
            FittedModel::Weibull { .. } => ModelKind::Weibull,
            FittedModel::LogNormal { .. } => ModelKind::LogNormal,
            FittedModel::Gamma { .. } => ModelKind::Gamma,
            FittedModel::Piecewise { .. } => ModelKind::Piecewise,
            FittedModel::Bathtub { .. } => ModelKind::Bathtub,
            FittedModel::Capped { .. } => ModelKind::Capped,
        }
    }

    /// Cumulative hazard H(t) (formulas on the variants); 0 for t ≤ 0 or NaN t.
    pub fn cumulative_hazard(&self, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 0.0;
        }
        match self {
            FittedModel::Exponential { rate } => rate * t,
            FittedModel::Weibull { shape, scale } => (t / scale).powf(*shape),
            FittedModel::LogNormal { mu, sigma } => -normal_ln_sf((t.ln() - mu) / sigma),
            FittedModel::Gamma { shape, scale } => -gamma_ln_q(*shape, t / scale),
            FittedModel::Piecewise { cuts, rates } => {
                let mut h = 0.0;
                let mut lo = 0.0;
                for (k, &r) in rates.iter().enumerate() {
                    let hi = cuts.get(k).copied().unwrap_or(f64::INFINITY);
                    if t <= lo {
                        break;
                    }
                    h += r * (t.min(hi) - lo);
                    lo = hi;
                }
                h
            }
            FittedModel::Bathtub {
                shape1,
                scale1,
                shape2,
                scale2,
            } => (t / scale1).powf(*shape1) + (t / scale2).powf(*shape2),
            FittedModel::Capped {
                shape,
                scale,
                change,
                cap_rate,
                cap,
            } => {
                (t.min(*change) / scale).powf(*shape)
                    + cap_rate * (t.min(*cap) - change).max(0.0)
                    + ((t / scale).powf(*shape) - (cap / scale).powf(*shape)).max(0.0)
            }
        }
    }

    /// Hazard h(t) (formulas on the variants); NaN for t ≤ 0 or NaN t.
    pub fn hazard(&self, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return f64::NAN;
        }
        match self {
            FittedModel::Exponential { rate } => *rate,
            FittedModel::Weibull { shape, scale } => shape / scale * (t / scale).powf(shape - 1.0),
            FittedModel::LogNormal { mu, sigma } => {
                let z = (t.ln() - mu) / sigma;
                (normal_ln_pdf(z) - normal_ln_sf(z)).exp() / (sigma * t)
            }
            FittedModel::Gamma { shape, scale } => {
                let y = t / scale;
                let ln_f = (shape - 1.0) * y.ln() - y - scale.ln() - ln_gamma(*shape);
                (ln_f - gamma_ln_q(*shape, y)).exp()
            }
            FittedModel::Piecewise { cuts, rates } => {
                let k = cuts.partition_point(|&c| c < t);
                rates.get(k).copied().unwrap_or(f64::NAN)
            }
            FittedModel::Bathtub {
                shape1,
                scale1,
                shape2,
                scale2,
            } => {
                shape1 / scale1 * (t / scale1).powf(shape1 - 1.0)
                    + shape2 / scale2 * (t / scale2).powf(shape2 - 1.0)
            }
            FittedModel::Capped {
                shape,
                scale,
                change,
                cap_rate,
                cap,
            } => {
                if t <= *change || t > *cap {
                    shape / scale * (t / scale).powf(shape - 1.0)
                } else {
                    *cap_rate
                }
            }
        }
    }

    /// Survival S(t) = exp(−H(t)).
    pub fn survival(&self, t: f64) -> f64 {
        (-self.cumulative_hazard(t)).exp()
    }

    /// Conditional survival S(a + t) / S(a) = exp(H(a) − H(a + t)) of a subject alive at age a.
    pub fn conditional_survival(&self, a: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        (self.cumulative_hazard(a) - self.cumulative_hazard(a + t))
            .exp()
            .clamp(0.0, 1.0)
    }
}

/// One parameter estimate with its 95 % Wald interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParamEstimate {
    /// Parameter name (e.g. `shape`, `scale`, `rate_2`).
    pub name: String,
    /// Estimate (time-unit parameters in the unit of the data).
    pub estimate: f64,
    /// Lower 95 % bound (NaN when not available, e.g. a grid-searched change point).
    pub ci_low: f64,
    /// Upper 95 % bound (NaN when not available).
    pub ci_high: f64,
    /// The estimate sits at a limit of the search box (see the module docs): the likelihood
    /// keeps rising past it, so report it as "at search bound".
    pub at_bound: bool,
}

/// A fitted candidate with its likelihood and AIC.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelFit {
    /// Which model.
    pub kind: ModelKind,
    /// The fitted model (formulas on [`FittedModel`]).
    pub model: FittedModel,
    /// Parameter estimates with Wald intervals.
    pub params: Vec<ParamEstimate>,
    /// Maximised log-likelihood ℓ̂ (time unit of the data).
    pub log_likelihood: f64,
    /// Number of free parameters p.
    pub n_params: usize,
    /// AIC = 2p − 2ℓ̂.
    pub aic: f64,
    /// AIC − min AIC over the candidates (0 for the best; 0 until compared).
    pub delta_aic: f64,
}

/// The hazard-shape verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HazardShape {
    /// Hazard falls with age (infant mortality).
    Decreasing,
    /// Hazard rises with age (wear-out).
    Increasing,
    /// Memoryless.
    Constant,
    /// Falls, then rises.
    Bathtub,
    /// A lifetime limit ends the sessions that reach it.
    Capped,
}

impl HazardShape {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            HazardShape::Decreasing => "decreasing",
            HazardShape::Increasing => "increasing",
            HazardShape::Constant => "constant",
            HazardShape::Bathtub => "bathtub",
            HazardShape::Capped => "capped",
        }
    }
}

impl std::fmt::Display for HazardShape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A candidate that was not fitted, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedModel {
    /// Which model.
    pub kind: ModelKind,
    /// Why it was skipped.
    pub reason: String,
}

/// The verdict with its evidence (see the module docs for the rules).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShapeVerdict {
    /// The shape, `None` with too few events.
    pub verdict: Option<HazardShape>,
    /// `Some(D)` when the D observed events are fewer than `min_events`.
    pub too_few_events: Option<usize>,
    /// Number of observed events D.
    pub events: usize,
    /// The AIC-best model.
    pub best_model: Option<ModelKind>,
    /// The model whose shape gave the verdict (the best model after the parsimony rule).
    pub deciding_model: Option<ModelKind>,
    /// AIC of the second-best model minus AIC of the best.
    pub aic_gap_to_next: Option<f64>,
    /// The rule that fired, in words.
    pub reason: String,
    /// Every fitted candidate, by increasing AIC.
    pub models: Vec<ModelFit>,
    /// Candidates that could not be fitted.
    pub skipped: Vec<SkippedModel>,
}

/// Options of [`select_shape`] and [`fit_model`].
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeOptions {
    /// Fewer events than this: no verdict (default [`DEFAULT_MIN_EVENTS`]).
    pub min_events: usize,
    /// A simpler model within this ΔAIC of a richer one decides (default
    /// [`DEFAULT_PARSIMONY_MARGIN`] = 4; 2 is the customary "substantial support" margin).
    pub parsimony_margin: f64,
    /// Number of pieces of the piecewise model (≥ 2, default [`DEFAULT_PIECES`]).
    pub pieces: usize,
    /// Known lifetime limit L for the capped model (default: the largest event time).
    pub cap: Option<f64>,
    /// Candidates to fit (default: all of [`ModelKind::ALL`]; the exponential is always fitted).
    pub models: Vec<ModelKind>,
}

impl Default for ShapeOptions {
    /// The documented defaults, every model.
    fn default() -> Self {
        ShapeOptions {
            min_events: DEFAULT_MIN_EVENTS,
            parsimony_margin: DEFAULT_PARSIMONY_MARGIN,
            pieces: DEFAULT_PIECES,
            cap: None,
            models: ModelKind::ALL.to_vec(),
        }
    }
}

/// Exact log-likelihood ℓ = Σ δ_i ln h(T_i) − Σ [H(T_i) − H(e_i)] of a fitted model on data
/// (held-out likelihood, or a check of the interpolated fit).
pub fn log_likelihood(
    model: &FittedModel,
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
) -> Result<f64, ShapeError> {
    validate(durations, events, entry)?;
    let mut ll = 0.0;
    for (i, (&t, &d)) in durations.iter().zip(events).enumerate() {
        if d {
            ll += model.hazard(t).ln();
        }
        ll -= model.cumulative_hazard(t) - model.cumulative_hazard(entry.map_or(0.0, |e| e[i]));
    }
    Ok(ll)
}

/// Mode of the lognormal hazard: t* = exp(μ + σ z*) with z* the root of
/// φ(z)/Q(z) − z = σ (the inverse Mills ratio minus z falls from ∞ to 0), by bisection.
pub fn lognormal_hazard_mode(mu: f64, sigma: f64) -> f64 {
    let g = |z: f64| (normal_ln_pdf(z) - normal_ln_sf(z)).exp() - z - sigma;
    let (mut a, mut b) = (-60.0, 1e4);
    for _ in 0..200 {
        let m = 0.5 * (a + b);
        if g(m) > 0.0 {
            a = m;
        } else {
            b = m;
        }
    }
    (mu + sigma * 0.5 * (a + b)).exp()
}

/// Minimum of the additive Weibull hazard: t* = [a₁(1−k₁) / (a₂(k₂−1))]^{1/(k₂−k₁)},
/// a_i = k_i / λ_i^{k_i} (in logs).
pub fn bathtub_hazard_minimum(shape1: f64, scale1: f64, shape2: f64, scale2: f64) -> f64 {
    let ln_a1 = shape1.ln() - shape1 * scale1.ln();
    let ln_a2 = shape2.ln() - shape2 * scale2.ln();
    ((ln_a1 + (1.0 - shape1).ln() - ln_a2 - (shape2 - 1.0).ln()) / (shape2 - shape1)).exp()
}
