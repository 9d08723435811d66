//! Comparing groups of sessions (zones, instance types, campaigns): the log-rank test and the
//! restricted mean survival time, with lifelines-0.30.3 conventions (tested against its golden
//! cases in `../shared/survival-golden/cases-v2`).
//!
//! # Log-rank ([`logrank`])
//!
//! Right-censored sessions in `k` groups. At every distinct event time `t` with `n` at risk
//! (`n_j` in group `j`, a session is at risk at `t` while its duration is `>= t`) and `d`
//! events (`d_j` in group `j`), with a weight `w_t`:
//!
//! * observed `O_j = sum_t w_t d_j`, expected `E_j = sum_t w_t n_j d / n`;
//! * covariance `V_jl = sum_t w_t^2 d (n - d) / (n - 1) * n_j / n * (delta_jl - n_l / n)`
//!   (times with `n = 1` add nothing);
//! * statistic `chi2 = Z' V^-1 Z` over the first `k - 1` groups, `Z = O - E`, with `k - 1`
//!   degrees of freedom; the p-value is the chi-square survival function, `Q((k-1)/2, chi2/2)`.
//!
//! Weights ([`Weighting`]): 1 (log-rank), `n` (Wilcoxon / Gehan-Breslow), `sqrt(n)`
//! (Tarone-Ware) or the Peto-Peto survival `prod_{s <= t} (1 - d_s / (n_s + 1))` (Peto).
//! Two groups give the two-sample test; the statistic of a group against an identical copy of
//! itself is 0.
//!
//! # Restricted mean survival time ([`rmst`])
//!
//! `RMST(H) = integral_0^H S(u) du` over the Kaplan-Meier curve (right-continuous steps, the
//! last value carried forward past the last time). Two variances:
//!
//! * `variance`: lifelines' `restricted_mean_survival_time(..., return_variance=True)`, the
//!   variance of `min(T, H)` under the curve, `integral_0^H 2u S(u) du - RMST(H)^2`;
//! * `variance_greenwood`: the variance of the estimator,
//!   `sum_{t_i <= H} A_i^2 d_i / (n_i (n_i - d_i))` with `A_i = integral_{t_i}^H S(u) du`
//!   (a row with `n_i = d_i` adds nothing: `A_i = 0` there), whose square root gives the
//!   interval of an RMST and, summed over two groups, of their difference.

use super::km::KmFit;
use super::numeric::{gamma_q, solve};
use super::SurvivalError;

/// How the log-rank test weighs each event time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weighting {
    /// Every time weighs 1 (the log-rank test).
    LogRank,
    /// The number at risk `n` (Wilcoxon, Gehan-Breslow): early differences count more.
    Wilcoxon,
    /// `sqrt(n)` (Tarone-Ware).
    TaroneWare,
    /// The Peto-Peto survival `prod_{s <= t} (1 - d_s / (n_s + 1))`.
    Peto,
}

impl Weighting {
    /// The name lifelines gives the weighting (`None` for the plain log-rank test).
    pub fn lifelines_name(&self) -> Option<&'static str> {
        match self {
            Weighting::LogRank => None,
            Weighting::Wilcoxon => Some("wilcoxon"),
            Weighting::TaroneWare => Some("tarone-ware"),
            Weighting::Peto => Some("peto"),
        }
    }
}

/// The result of [`logrank`].
#[derive(Debug, Clone, PartialEq)]
pub struct LogRank {
    /// The chi-square statistic.
    pub statistic: f64,
    /// Its p-value (chi-square survival function).
    pub p_value: f64,
    /// Degrees of freedom: groups - 1.
    pub degrees_of_freedom: usize,
    /// Weighted observed events per group.
    pub observed: Vec<f64>,
    /// Weighted expected events per group.
    pub expected: Vec<f64>,
    /// The `k x k` covariance of `observed - expected`.
    pub variance: Vec<Vec<f64>>,
    /// Distinct event times.
    pub n_event_times: usize,
}

/// The log-rank test of `groups` (group index per session, `0..k`) over right-censored
/// sessions (module docs). Errors on empty or mismatched input, a group index out of range,
/// fewer than two groups, or a duration that is not finite. A singular covariance (no event
/// where groups overlap) gives a NaN statistic and p-value.
pub fn logrank(
    durations: &[f64],
    events: &[bool],
    groups: &[usize],
    k: usize,
    weighting: Weighting,
) -> Result<LogRank, SurvivalError> {
    let n = durations.len();
    if n == 0 {
        return Err(SurvivalError::Empty);
    }
    for (what, got) in [("events", events.len()), ("groups", groups.len())] {
        if got != n {
            return Err(SurvivalError::LengthMismatch {
                what,
                expected: n,
                got,
            });
        }
    }
    if k < 2 {
        return Err(SurvivalError::InvalidArgument(format!(
            "a group test needs at least two groups (got {k})"
        )));
    }
    if let Some((i, &g)) = groups.iter().enumerate().find(|(_, &g)| g >= k) {
        return Err(SurvivalError::InvalidArgument(format!(
            "session {i}: group {g} is not below the group count {k}"
        )));
    }
    if let Some((i, &d)) = durations.iter().enumerate().find(|(_, d)| !d.is_finite()) {
        return Err(SurvivalError::InvalidArgument(format!(
            "session {i}: duration {d} is not finite"
        )));
    }
    // By duration (ties in any order: a tie's rows count together), each row packed with
    // its group and event so that the scan reads one array in order.
    let mut rows: Vec<(u64, u64)> = (0..n).map(|i| row(durations, events, groups, i)).collect();
    rows.sort_unstable();
    let mut acc = Accumulated::new(k);
    acc.add_stratum(&rows, weighting);
    Ok(acc.test())
}

/// The stratified log-rank test: [`logrank`]'s observed, expected and covariance computed
/// within each stratum (`strata`: a stratum index per session; the risk sets, and the Peto
/// weights, never mix strata) and summed before the statistic, as R's `survdiff(... +
/// strata(s))` does. A group difference that only reflects how the groups spread over the
/// strata (zones of different instance types, say) is then not counted. One stratum gives
/// [`logrank`]. Errors as [`logrank`], and on a strata length that differs.
pub fn logrank_stratified(
    durations: &[f64],
    events: &[bool],
    groups: &[usize],
    k: usize,
    strata: &[usize],
    weighting: Weighting,
) -> Result<LogRank, SurvivalError> {
    if strata.len() != durations.len() {
        return Err(SurvivalError::LengthMismatch {
            what: "strata",
            expected: durations.len(),
            got: strata.len(),
        });
    }
    // Validation of the rest, on the whole input.
    logrank(durations, events, groups, k, weighting)?;
    let mut rows: Vec<(usize, (u64, u64))> = (0..durations.len())
        .map(|i| (strata[i], row(durations, events, groups, i)))
        .collect();
    rows.sort_unstable();
    let mut acc = Accumulated::new(k);
    for part in rows.chunk_by(|a, b| a.0 == b.0) {
        let part: Vec<(u64, u64)> = part.iter().map(|r| r.1).collect();
        acc.add_stratum(&part, weighting);
    }
    Ok(acc.test())
}

/// Session `i` as the scan reads it: the order-preserving key of its duration, and its group
/// and event packed as `group << 1 | event`.
#[inline]
fn row(durations: &[f64], events: &[bool], groups: &[usize], i: usize) -> (u64, u64) {
    (
        super::km::f64_key(durations[i]),
        ((groups[i] as u64) << 1) | u64::from(events[i]),
    )
}

/// Observed, expected and covariance summed over strata.
struct Accumulated {
    k: usize,
    observed: Vec<f64>,
    expected: Vec<f64>,
    variance: Vec<Vec<f64>>,
    n_event_times: usize,
}

impl Accumulated {
    fn new(k: usize) -> Accumulated {
        Accumulated {
            k,
            observed: vec![0.0; k],
            expected: vec![0.0; k],
            variance: vec![vec![0.0; k]; k],
            n_event_times: 0,
        }
    }

    /// Adds the sessions `rows` (one stratum, sorted by duration key; [`row`]).
    fn add_stratum(&mut self, rows: &[(u64, u64)], weighting: Weighting) {
        let k = self.k;
        let (observed, expected, variance) =
            (&mut self.observed, &mut self.expected, &mut self.variance);
        let mut n_event_times = 0;
        let n = rows.len();
        let group = |r: &(u64, u64)| (r.1 >> 1) as usize;
        let mut at_risk = vec![0u64; k];
        for r in rows {
            at_risk[group(r)] += 1;
        }
        let mut d_j = vec![0u64; k];
        let mut peto = 1.0;
        let mut i = 0;
        while i < n {
            let t = rows[i].0;
            let mut j = i;
            d_j.iter_mut().for_each(|x| *x = 0);
            while j < n && rows[j].0 == t {
                if rows[j].1 & 1 == 1 {
                    d_j[group(&rows[j])] += 1;
                }
                j += 1;
            }
            let d: u64 = d_j.iter().sum();
            if d > 0 {
                n_event_times += 1;
                let n_t: u64 = at_risk.iter().sum();
                let (nf, df) = (n_t as f64, d as f64);
                let w = match weighting {
                    Weighting::LogRank => 1.0,
                    Weighting::Wilcoxon => nf,
                    Weighting::TaroneWare => nf.sqrt(),
                    Weighting::Peto => {
                        peto *= 1.0 - df / (nf + 1.0);
                        peto
                    }
                };
                for g in 0..k {
                    observed[g] += w * d_j[g] as f64;
                    expected[g] += w * at_risk[g] as f64 * df / nf;
                }
                if n_t > 1 {
                    let f = w * w * df * (nf - df) / (nf - 1.0) / nf;
                    for a in 0..k {
                        let na = at_risk[a] as f64;
                        for b in 0..k {
                            let nb = at_risk[b] as f64;
                            let delta = if a == b { na } else { 0.0 };
                            variance[a][b] += f * (delta - na * nb / nf);
                        }
                    }
                }
            }
            for r in &rows[i..j] {
                at_risk[group(r)] -= 1;
            }
            i = j;
        }
        self.n_event_times += n_event_times;
    }

    /// `chi2 = Z' V^-1 Z` over the first `k - 1` groups, with its p-value.
    fn test(self) -> LogRank {
        let Accumulated {
            k,
            observed,
            expected,
            variance,
            n_event_times,
        } = self;
        let z: Vec<f64> = (0..k - 1).map(|g| observed[g] - expected[g]).collect();
        let reduced: Vec<Vec<f64>> = variance[..k - 1]
            .iter()
            .map(|row| row[..k - 1].to_vec())
            .collect();
        let statistic = match solve(reduced, z.clone()) {
            Some(x) => z.iter().zip(&x).map(|(a, b)| a * b).sum::<f64>(),
            None => f64::NAN,
        };
        let dof = k - 1;
        let p_value = if statistic.is_nan() {
            f64::NAN
        } else {
            gamma_q(dof as f64 / 2.0, statistic.max(0.0) / 2.0)
        };
        LogRank {
            statistic,
            p_value,
            degrees_of_freedom: dof,
            observed,
            expected,
            variance,
            n_event_times,
        }
    }
}

/// The restricted mean survival time of a curve to one horizon (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rmst {
    /// The horizon `H`.
    pub horizon: f64,
    /// `integral_0^H S(u) du`.
    pub rmst: f64,
    /// lifelines' variance: of `min(T, H)` under the curve.
    pub variance: f64,
    /// The Greenwood variance of the estimator.
    pub variance_greenwood: f64,
}

/// [`Rmst`] of the Kaplan-Meier curve of right-censored sessions at each of `horizons`
/// (non-negative; durations from 0). Errors as [`KmFit::fit`], and on a negative or
/// non-finite horizon.
pub fn rmst(
    durations: &[f64],
    events: &[bool],
    horizons: &[f64],
) -> Result<Vec<Rmst>, SurvivalError> {
    if let Some(h) = horizons.iter().find(|h| !(h.is_finite() && **h >= 0.0)) {
        return Err(SurvivalError::InvalidArgument(format!(
            "an RMST horizon must be finite and non-negative (got {h})"
        )));
    }
    let fit = KmFit::fit(durations, events)?;
    let view = fit.view();
    let (time, surv) = (view.timeline(), view.survival_values());
    let (n_at_risk, n_event) = (view.n_at_risk(), view.n_event());
    // Steps: S = 1 before the first time, surv[i] on [time[i], time[i + 1]), the last value
    // past the last time. `below[i]` = integral_0^{time[i]} S (durations start at 0).
    let mut below = Vec::with_capacity(time.len());
    let mut acc = 0.0;
    for (i, &t) in time.iter().enumerate() {
        let (from, s) = if i == 0 {
            (0.0, 1.0)
        } else {
            (time[i - 1], surv[i - 1])
        };
        if t > from {
            acc += s * (t - from);
        }
        below.push(acc);
    }
    Ok(horizons
        .iter()
        .map(|&h| {
            let area = integral(time, surv, h, |a, b| b - a);
            let second = integral(time, surv, h, |a, b| b * b - a * a);
            // A_i = integral_{t_i}^H S = RMST(H) - integral_0^{t_i} S, for event times t_i <= H.
            let mut greenwood = 0.0;
            for (i, &t) in time.iter().enumerate() {
                if t > h {
                    break;
                }
                let (ni, di) = (f64::from(n_at_risk[i]), f64::from(n_event[i]));
                if di == 0.0 || ni <= di {
                    continue;
                }
                let tail = area - below[i];
                greenwood += tail * tail * di / (ni * (ni - di));
            }
            Rmst {
                horizon: h,
                rmst: area,
                variance: second - area * area,
                variance_greenwood: greenwood,
            }
        })
        .collect())
}

/// `sum over the steps of S` of `S * f(a, b)` for each step `[a, b)` clipped to `[0, h]`: with
/// `f = b - a` the area under the curve, with `f = b^2 - a^2` the integral of `2u S(u)`.
fn integral(time: &[f64], surv: &[f64], h: f64, f: impl Fn(f64, f64) -> f64) -> f64 {
    let mut sum = 0.0;
    let (mut lo, mut s) = (0.0f64, 1.0);
    for (&t, &v) in time.iter().zip(surv) {
        let hi = t.min(h);
        if hi > lo {
            sum += s * f(lo, hi);
        }
        if t >= h {
            return sum;
        }
        lo = lo.max(t);
        s = v;
    }
    if h > lo {
        sum += s * f(lo, h);
    }
    sum
}
