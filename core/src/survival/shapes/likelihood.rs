//! The prepared data of a fit and the cubic-Hermite interpolated likelihood of the smooth
//! models (see the module docs of `shapes`).

use super::error::{validate, ShapeError};
use crate::survival::numeric::{gamma_ln_q, ln_gamma, normal_ln_pdf, normal_ln_sf};

/// Validated data with a few summaries.
pub(super) struct Data<'a> {
    pub(super) t: &'a [f64],
    pub(super) e: Option<&'a [f64]>,
    pub(super) d: &'a [bool],
    /// Number of events D.
    pub(super) n_events: usize,
    /// Sorted event times.
    pub(super) event_times: Vec<f64>,
    /// Σ (T − e).
    pub(super) exposure: f64,
}

impl<'a> Data<'a> {
    pub(super) fn new(
        t: &'a [f64],
        d: &'a [bool],
        e: Option<&'a [f64]>,
    ) -> Result<Data<'a>, ShapeError> {
        validate(t, d, e)?;
        let mut event_times: Vec<f64> = t
            .iter()
            .zip(d)
            .filter(|(_, &x)| x)
            .map(|(&x, _)| x)
            .collect();
        event_times.sort_by(f64::total_cmp);
        let exposure = match e {
            Some(e) => t.iter().zip(e).map(|(t, e)| t - e).sum(),
            None => t.iter().sum(),
        };
        Ok(Data {
            t,
            e,
            d,
            n_events: event_times.len(),
            event_times,
            exposure,
        })
    }

    pub(super) fn entry(&self, i: usize) -> f64 {
        self.e.map_or(0.0, |e| e[i])
    }

    /// Event-time quantile of type 1 (the smallest x_(k) with k/D ≥ q).
    pub(super) fn event_quantile(&self, q: f64) -> f64 {
        let n = self.event_times.len();
        if n == 0 {
            return f64::NAN;
        }
        let k = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
        self.event_times[k - 1]
    }
}

/// Aggregated cubic-Hermite weights on knots in x = ln(t/s) (see the module docs).
pub(super) struct HermiteLik {
    /// Knot positions x_k.
    pub(super) knots: Vec<f64>,
    /// Weights of H_k, H′_k (exits −1, entries +1), ln h_k, (ln h)′_k (events +1).
    pub(super) w: Vec<[f64; 4]>,
    /// Time scale s (median event time): the knots are in ln(t/s).
    pub(super) s: f64,
    /// Number of events D (ℓ in data units = ℓ on the scaled clock − D ln s).
    pub(super) d: f64,
}

impl HermiteLik {
    pub(super) fn new(data: &Data<'_>) -> HermiteLik {
        let s = data.event_quantile(0.5);
        let mut xmin = f64::INFINITY;
        let mut xmax = f64::NEG_INFINITY;
        for i in 0..data.t.len() {
            let x = (data.t[i] / s).ln();
            xmin = xmin.min(x);
            xmax = xmax.max(x);
            let e = data.entry(i);
            if e > 0.0 {
                xmin = xmin.min((e / s).ln());
            }
        }
        if xmax - xmin < 1e-6 {
            xmin -= 0.5;
            xmax += 0.5;
        }
        let k = (((xmax - xmin) / 0.04).ceil() as usize).clamp(32, 512);
        let dx = (xmax - xmin) / k as f64;
        let knots: Vec<f64> = (0..=k).map(|j| xmin + dx * j as f64).collect();
        let mut w = vec![[0.0; 4]; k + 1];
        let mut add = |x: f64, coef: f64, slot: usize| {
            let pos = ((x - xmin) / dx).max(0.0);
            let j = (pos.floor() as usize).min(k - 1);
            let u = (pos - j as f64).clamp(0.0, 1.0);
            let (u2, u3) = (u * u, u * u * u);
            let h00 = 2.0 * u3 - 3.0 * u2 + 1.0;
            let h10 = u3 - 2.0 * u2 + u;
            let h01 = -2.0 * u3 + 3.0 * u2;
            let h11 = u3 - u2;
            w[j][slot] += coef * h00;
            w[j][slot + 1] += coef * dx * h10;
            w[j + 1][slot] += coef * h01;
            w[j + 1][slot + 1] += coef * dx * h11;
        };
        for i in 0..data.t.len() {
            let x = (data.t[i] / s).ln();
            add(x, -1.0, 0);
            if data.d[i] {
                add(x, 1.0, 2);
            }
            let e = data.entry(i);
            if e > 0.0 {
                add((e / s).ln(), 1.0, 0);
            }
        }
        HermiteLik {
            knots,
            w,
            s,
            d: data.n_events as f64,
        }
    }

    /// ℓ on the scaled clock for knot values (H, dH/dx, ln h, d ln h/dx) = `f(x)`; −∞ when any
    /// needed value is not finite.
    pub(super) fn loglik<F: Fn(f64) -> [f64; 4]>(&self, f: F) -> f64 {
        let mut l = 0.0;
        for (&x, w) in self.knots.iter().zip(&self.w) {
            if w.iter().all(|&c| c == 0.0) {
                continue;
            }
            let v = f(x);
            for (c, val) in w.iter().zip(v) {
                if *c != 0.0 {
                    if !val.is_finite() {
                        return f64::NEG_INFINITY;
                    }
                    l += c * val;
                }
            }
        }
        l
    }
}

/// Knot values of the lognormal on the scaled clock, θ = (μ, ln σ).
pub(super) fn lognormal_knot(theta: &[f64], x: f64) -> [f64; 4] {
    let (mu, sigma) = (theta[0], theta[1].exp());
    let z = (x - mu) / sigma;
    let ln_q = normal_ln_sf(z);
    let ln_th = normal_ln_pdf(z) - sigma.ln() - ln_q; // ln(t h(t))
    let th = ln_th.exp();
    [-ln_q, th, ln_th - x, -z / sigma - 1.0 + th]
}

/// Knot values of the gamma on the scaled clock, θ = (ln α, ln θ).
pub(super) fn gamma_knot(theta: &[f64], x: f64) -> [f64; 4] {
    let (a, sc) = (theta[0].exp(), theta[1].exp());
    let y = x.exp() / sc;
    let ln_q = gamma_ln_q(a, y);
    let ln_f = (a - 1.0) * y.ln() - y - sc.ln() - ln_gamma(a);
    let ln_h = ln_f - ln_q;
    let th = (x + ln_h).exp();
    [-ln_q, th, ln_h, (a - 1.0) - y + th]
}

/// Bathtub shapes from the unconstrained parameters: k₁ = 1/(1 + e^{−θ₀}), k₂ = 1 + e^{θ₂}.
pub(super) fn bathtub_shapes(theta: &[f64]) -> (f64, f64) {
    (1.0 / (1.0 + (-theta[0]).exp()), 1.0 + theta[2].exp())
}

/// Knot values of the additive Weibull on the scaled clock,
/// θ = (logit k₁, ln λ₁, ln(k₂ − 1), ln λ₂).
pub(super) fn bathtub_knot(theta: &[f64], x: f64) -> [f64; 4] {
    let (k1, k2) = bathtub_shapes(theta);
    let e1 = k1 * (x - theta[1]);
    let e2 = k2 * (x - theta[3]);
    let (h1, h2) = (e1.exp(), e2.exp());
    // ln(t h) = ln(k1 H1 + k2 H2) by log-sum-exp
    let (a, b) = (k1.ln() + e1, k2.ln() + e2);
    let m = a.max(b);
    let ln_th = m + ((a - m).exp() + (b - m).exp()).ln();
    let p1 = (a - ln_th).exp(); // share of part 1 in t h
    let th = ln_th.exp();
    [h1 + h2, th, ln_th - x, p1 * k1 + (1.0 - p1) * k2 - 1.0]
}
