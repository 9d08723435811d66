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
use rayon::prelude::*;

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
    let mut acc = Accumulated::new(k);
    let top = super::km::f64_key(durations[0]) >> 63;
    if durations
        .iter()
        .all(|&d| super::km::f64_key(d) >> 63 == top)
    {
        // Durations of one sign (the common case): each group's exits as one packed key,
        // `(duration key << 1) | event`, placed by a counting sort into its group's
        // segment, each segment sorted, and the segments merged by time in the scan.
        let mut off = vec![0usize; k + 1];
        for &g in groups {
            off[g + 1] += 1;
        }
        for g in 0..k {
            off[g + 1] += off[g];
        }
        let mut keys = vec![0u64; n];
        let mut pos = off.clone();
        for ((&g, &d), &e) in groups.iter().zip(durations).zip(events) {
            keys[pos[g]] = (super::km::f64_key(d) << 1) | u64::from(e);
            pos[g] += 1;
        }
        // The groups' segments are sorted at once, one per core.
        let mut segments: Vec<&mut [u64]> = Vec::with_capacity(k);
        let mut rest = &mut keys[..];
        for g in 0..k {
            let (segment, after) = rest.split_at_mut(off[g + 1] - off[g]);
            segments.push(segment);
            rest = after;
        }
        segments
            .into_par_iter()
            .for_each(|segment| segment.sort_unstable());
        acc.add_segments(&keys, &off, weighting);
        return Ok(acc.test());
    }
    // By duration (ties in any order: a tie's rows count together), each row packed with
    // its group and event so that the scan reads one array in order.
    let mut rows: Vec<(u64, u64)> = (0..n).map(|i| row(durations, events, groups, i)).collect();
    rows.sort_unstable();
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
        let group = |r: &(u64, u64)| (r.1 >> 1) as usize;
        let mut at_risk = vec![0u64; k];
        for r in rows {
            at_risk[group(r)] += 1;
        }
        let mut scan = Scan::new(self, at_risk, weighting);
        let (mut d_j, mut out_j) = (vec![0u64; k], vec![0u64; k]);
        let n = rows.len();
        let mut i = 0;
        while i < n {
            let t = rows[i].0;
            d_j.iter_mut().for_each(|x| *x = 0);
            out_j.iter_mut().for_each(|x| *x = 0);
            while i < n && rows[i].0 == t {
                let g = group(&rows[i]);
                d_j[g] += rows[i].1 & 1;
                out_j[g] += 1;
                i += 1;
            }
            scan.time(&d_j, &out_j);
        }
    }

    /// Adds the sessions of one stratum given per group (`keys[off[g]..off[g + 1]]`: group
    /// `g`'s exits, each `(duration key << 1) | event`, sorted), merged by time as the scan
    /// goes: the same times in the same order as [`Accumulated::add_stratum`].
    fn add_segments(&mut self, keys: &[u64], off: &[usize], weighting: Weighting) {
        let k = self.k;
        if k == 2 {
            return self.add_two_segments(&keys[off[0]..off[1]], &keys[off[1]..off[2]], weighting);
        }
        let at_risk: Vec<u64> = (0..k).map(|g| (off[g + 1] - off[g]) as u64).collect();
        let mut scan = Scan::new(self, at_risk, weighting);

        let mut head: Vec<usize> = off[..k].to_vec();
        let (mut d_j, mut out_j) = (vec![0u64; k], vec![0u64; k]);
        loop {
            let t = (0..k)
                .filter(|&g| head[g] < off[g + 1])
                .map(|g| keys[head[g]] >> 1)
                .min();
            let Some(t) = t else { break };
            for g in 0..k {
                let (mut d, mut out) = (0, 0);
                while head[g] < off[g + 1] && keys[head[g]] >> 1 == t {
                    d += keys[head[g]] & 1;
                    out += 1;
                    head[g] += 1;
                }
                d_j[g] = d;
                out_j[g] = out;
            }
            scan.time(&d_j, &out_j);
        }
    }

    /// [`Accumulated::add_segments`] for two groups (the two-sample test), the sums in
    /// registers: each distinct time adds what [`Scan::time`] adds, term for term in the same
    /// order, so the numbers are the same to the bit (the proptest holds it).
    fn add_two_segments(&mut self, a: &[u64], b: &[u64], weighting: Weighting) {
        let time_of = |run: &[u64], i: usize| run.get(i).map_or(u64::MAX, |&k| k >> 1);
        let (mut n0, mut n1) = (a.len() as u64, b.len() as u64);
        let (mut o0, mut o1) = (self.observed[0], self.observed[1]);
        let (mut x0, mut x1) = (self.expected[0], self.expected[1]);
        let [mut v00, mut v01] = [self.variance[0][0], self.variance[0][1]];
        let [mut v10, mut v11] = [self.variance[1][0], self.variance[1][1]];
        let mut peto = 1.0f64;
        let (mut i, mut j) = (0usize, 0usize);
        loop {
            let t = time_of(a, i).min(time_of(b, j));
            if t == u64::MAX {
                break;
            }
            let (mut d0, mut d1) = (0u64, 0u64);
            let (i0, j0) = (i, j);
            while time_of(a, i) == t {
                d0 += a[i] & 1;
                i += 1;
            }
            while time_of(b, j) == t {
                d1 += b[j] & 1;
                j += 1;
            }
            let d = d0 + d1;
            if d > 0 {
                self.n_event_times += 1;
                let n_t = n0 + n1;
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
                let (na, nb) = (n0 as f64, n1 as f64);
                o0 += w * d0 as f64;
                x0 += w * na * df / nf;
                o1 += w * d1 as f64;
                x1 += w * nb * df / nf;
                if n_t > 1 {
                    let f = w * w * df * (nf - df) / (nf - 1.0) / nf;
                    v00 += f * (na - na * na / nf);
                    v01 += f * (0.0 - na * nb / nf);
                    v10 += f * (0.0 - nb * na / nf);
                    v11 += f * (nb - nb * nb / nf);
                }
            }
            n0 -= (i - i0) as u64;
            n1 -= (j - j0) as u64;
        }
        (self.observed[0], self.observed[1]) = (o0, o1);
        (self.expected[0], self.expected[1]) = (x0, x1);
        (self.variance[0][0], self.variance[0][1]) = (v00, v01);
        (self.variance[1][0], self.variance[1][1]) = (v10, v11);
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

/// One stratum's pass over its distinct times, adding to [`Accumulated`].
struct Scan<'a> {
    acc: &'a mut Accumulated,
    at_risk: Vec<u64>,
    weighting: Weighting,
    peto: f64,
}

impl<'a> Scan<'a> {
    fn new(acc: &'a mut Accumulated, at_risk: Vec<u64>, weighting: Weighting) -> Scan<'a> {
        Scan {
            acc,
            at_risk,
            weighting,
            peto: 1.0,
        }
    }

    /// One distinct time: `d_j[g]` events and `out_j[g]` exits (events and censorings) in
    /// group `g`.
    fn time(&mut self, d_j: &[u64], out_j: &[u64]) {
        let k = self.acc.k;
        let at_risk = &mut self.at_risk;
        let d: u64 = d_j.iter().sum();
        if d > 0 {
            self.acc.n_event_times += 1;
            let n_t: u64 = at_risk.iter().sum();
            let (nf, df) = (n_t as f64, d as f64);
            let w = match self.weighting {
                Weighting::LogRank => 1.0,
                Weighting::Wilcoxon => nf,
                Weighting::TaroneWare => nf.sqrt(),
                Weighting::Peto => {
                    self.peto *= 1.0 - df / (nf + 1.0);
                    self.peto
                }
            };
            for g in 0..k {
                self.acc.observed[g] += w * d_j[g] as f64;
                self.acc.expected[g] += w * at_risk[g] as f64 * df / nf;
            }
            if n_t > 1 {
                let f = w * w * df * (nf - df) / (nf - 1.0) / nf;
                for (a, row) in self.acc.variance.iter_mut().enumerate() {
                    let na = at_risk[a] as f64;
                    for (b, v) in row.iter_mut().enumerate() {
                        let nb = at_risk[b] as f64;
                        let delta = if a == b { na } else { 0.0 };
                        *v += f * (delta - na * nb / nf);
                    }
                }
            }
        }
        for (r, o) in at_risk.iter_mut().zip(out_j) {
            *r -= o;
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The one-sign fast path (per-group segments merged in the scan) gives the row
        /// scan's numbers to the bit: the stratified test with one stratum takes the rows.
        #[test]
        fn the_segmented_scan_is_the_row_scan(
            rows in proptest::collection::vec((0u32..40, any::<bool>(), 0usize..6), 2..300),
            k in 2usize..4,
            weighting in prop_oneof![
                Just(Weighting::LogRank),
                Just(Weighting::Wilcoxon),
                Just(Weighting::TaroneWare),
                Just(Weighting::Peto),
            ],
        ) {
            // Two groups take the two-group scan, more the general one.
            let d: Vec<f64> = rows.iter().map(|r| f64::from(r.0) / 4.0).collect();
            let e: Vec<bool> = rows.iter().map(|r| r.1).collect();
            let g: Vec<usize> = rows.iter().map(|r| r.2 % k).collect();
            let fast = logrank(&d, &e, &g, k, weighting);
            let slow = logrank_stratified(&d, &e, &g, k, &vec![0; d.len()], weighting);
            match (fast, slow) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(a.statistic.to_bits(), b.statistic.to_bits());
                    prop_assert_eq!(a.observed, b.observed);
                    prop_assert_eq!(a.expected, b.expected);
                    prop_assert_eq!(a.variance, b.variance);
                    prop_assert_eq!(a.n_event_times, b.n_event_times);
                }
                (a, b) => prop_assert_eq!(a.is_err(), b.is_err()),
            }
        }
    }

    /// Durations of both signs take the row scan, with the same answer as their shift.
    #[test]
    fn durations_of_both_signs_are_ordered_as_numbers() {
        let d = [-3.0, -1.0, 0.0, 2.0, 5.0, -2.0];
        let e = [true, true, false, true, true, true];
        let g = [0, 1, 0, 1, 0, 1];
        let shifted: Vec<f64> = d.iter().map(|x| x + 10.0).collect();
        let a = logrank(&d, &e, &g, 2, Weighting::LogRank).expect("test");
        let b = logrank(&shifted, &e, &g, 2, Weighting::LogRank).expect("test");
        assert_eq!(a.observed, b.observed);
        assert_eq!(a.expected, b.expected);
        assert_eq!(a.statistic.to_bits(), b.statistic.to_bits());
    }
}
