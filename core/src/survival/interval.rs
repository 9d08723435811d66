//! Interval-censored sessions: an end known only to lie between two probes. The Turnbull
//! intervals of the data and the nonparametric maximum-likelihood estimate (NPMLE) of the
//! probability on each, as lifelines' `KaplanMeierFitter.fit_interval_censoring` defines them
//! but converged (tested against `cases-v2`'s `interval_*` golden cases).
//!
//! **Data.** Row `i` says `T_i` lies in `[lower_i, upper_i]`; `upper = +inf` is right
//! censoring, `lower = upper` an exactly observed end. With [`Bounds::Closed`] every interval
//! is closed (lifelines). With [`Bounds::OpenLower`] a proper interval is `(lower, upper]`, which
//! is what a probe trace says: the session was seen up at `lower` and first seen down at
//! `upper` (the same as shifting every `lower` up by an infinitesimal; adjacent tick cells then
//! do not share their endpoint).
//!
//! **Turnbull intervals.** Sort the `2n` endpoints (on ties, closed lefts before rights, rights
//! before open lefts); each left endpoint immediately followed by a right endpoint bounds one
//! Turnbull interval. The NPMLE puts all its mass on them (Turnbull 1976), and row `i` covers a
//! contiguous run of them, `a_i ..= b_i`.
//!
//! **NPMLE.** Maximise `l(p) = sum_i ln sum_{j = a_i}^{b_i} p_j` over the simplex by the
//! self-consistency (EM) map `p_j <- p_j / N sum_{i covers j} 1 / D_i` (`D_i` the row's covered
//! mass), accelerated by SQUAREM (Varadhan and Roland 2008; a step that lowers `l` falls back
//! to plain EM), each iteration `O(rows + intervals)` with rows of equal coverage merged. It
//! stops when the Kuhn-Tucker conditions hold to `tol`: `g_j = 1 / N sum_{i covers j} 1 / D_i`
//! is at most `1 + tol` everywhere (equality on the support is automatic at a fixed point), which
//! bounds the log-likelihood's distance to the maximum by `N tol`.
//!
//! **Survival.** Within a Turnbull interval the NPMLE does not say where the mass lies, so the
//! estimate is a pair of curves: [`Turnbull::survival_upper`] puts each interval's mass at its
//! right end, [`Turnbull::survival_lower`] at its left end, each evaluated as `P(T >= t)` (at an
//! exact observation both give `S(t-)`, as lifelines).

use std::cmp::Ordering;

use super::SurvivalError;

/// Whether a proper interval includes its lower end (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bounds {
    /// `[lower, upper]` (lifelines' convention).
    #[default]
    Closed,
    /// `(lower, upper]` when `lower < upper` (probe traces); `[t, t]` for exact ends.
    OpenLower,
}

/// Solver settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnbullOptions {
    /// Kuhn-Tucker tolerance (module docs).
    pub tol: f64,
    /// Iteration cap (one iteration is one SQUAREM cycle of three EM maps).
    pub max_iter: usize,
}

impl Default for TurnbullOptions {
    fn default() -> Self {
        TurnbullOptions {
            tol: 1e-12,
            max_iter: 20_000,
        }
    }
}

/// One Turnbull interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnbullInterval {
    /// Left end.
    pub left: f64,
    /// True when the left end is excluded (an open lower bound).
    pub left_open: bool,
    /// Right end (`+inf` for the right-censored tail).
    pub right: f64,
}

/// A fitted NPMLE.
#[derive(Debug, Clone, PartialEq)]
pub struct Turnbull {
    /// The Turnbull intervals, ascending.
    pub intervals: Vec<TurnbullInterval>,
    /// The probability on each.
    pub probabilities: Vec<f64>,
    /// `l(p)` at the estimate.
    pub log_likelihood: f64,
    /// SQUAREM cycles used.
    pub iterations: usize,
    /// Largest Kuhn-Tucker violation at the estimate (0 when exactly optimal).
    pub kkt_violation: f64,
    /// True when the tolerance was met within the iteration cap.
    pub converged: bool,
    /// The finite distinct endpoints of the data, ascending (the curves' timeline).
    pub timeline: Vec<f64>,
}

impl Turnbull {
    /// `P(T >= t)` with each interval's mass at its right end.
    pub fn survival_upper(&self, t: f64) -> f64 {
        self.tail(t, |iv| iv.right)
    }

    /// `P(T >= t)` with each interval's mass at its left end.
    pub fn survival_lower(&self, t: f64) -> f64 {
        self.tail(t, |iv| iv.left)
    }

    fn tail(&self, t: f64, at: impl Fn(&TurnbullInterval) -> f64) -> f64 {
        self.intervals
            .iter()
            .zip(&self.probabilities)
            .filter(|(iv, _)| at(iv) >= t)
            .map(|(_, p)| p)
            .sum::<f64>()
            .min(1.0)
    }

    /// Both curves on [`Turnbull::timeline`]: `(upper, lower)`.
    pub fn curves(&self) -> (Vec<f64>, Vec<f64>) {
        let mut upper = Vec::with_capacity(self.timeline.len());
        let mut lower = Vec::with_capacity(self.timeline.len());
        // Suffix sums over intervals sorted by each end (both ends ascend with the index).
        let m = self.intervals.len();
        let mut suffix = vec![0.0; m + 1];
        for j in (0..m).rev() {
            suffix[j] = suffix[j + 1] + self.probabilities[j];
        }
        for &t in &self.timeline {
            let ju = self.intervals.partition_point(|iv| iv.right < t);
            let jl = self.intervals.partition_point(|iv| iv.left < t);
            upper.push(suffix[ju].min(1.0));
            lower.push(suffix[jl].min(1.0));
        }
        (upper, lower)
    }

    /// `P(T > t)` with each interval's mass spread uniformly over it (a point mass is a
    /// step; the mass of an interval to `+inf` stays beyond every `t`): one curve between
    /// [`Turnbull::survival_lower`] and [`Turnbull::survival_upper`], continuous inside the
    /// intervals.
    pub fn survival_spread(&self, t: f64) -> f64 {
        let mut s = 1.0;
        for (iv, &p) in self.intervals.iter().zip(&self.probabilities) {
            if t < iv.left {
                break;
            }
            let gone = if t >= iv.right {
                1.0
            } else if iv.right.is_finite() && iv.right > iv.left {
                (t - iv.left) / (iv.right - iv.left)
            } else {
                0.0
            };
            s -= p * gone;
        }
        s.clamp(0.0, 1.0)
    }

    /// The `q`-quantile of survival on [`Turnbull::survival_spread`]: the first `t` with
    /// `P(T > t) <= q` (interpolated inside an interval); `None` when the curve stays above.
    pub fn quantile_spread(&self, q: f64) -> Option<f64> {
        let target = 1.0 - q;
        let mut f = 0.0;
        for (iv, &p) in self.intervals.iter().zip(&self.probabilities) {
            if f + p >= target - super::km::THRESHOLD_TOL && p > 0.0 {
                if !iv.right.is_finite() {
                    return None;
                }
                let frac = ((target - f) / p).clamp(0.0, 1.0);
                return Some(iv.left + frac * (iv.right - iv.left));
            }
            f += p;
        }
        None
    }

    /// First timeline time where the curve (`upper` or lower) is at most `q` (+1e-12).
    pub fn quantile(&self, q: f64, upper: bool) -> Option<f64> {
        let (u, l) = self.curves();
        let s = if upper { u } else { l };
        let i = s.iter().position(|&x| x <= q + super::km::THRESHOLD_TOL)?;
        Some(self.timeline[i])
    }
}

/// An endpoint's sort key: value, then 0 = closed left, 1 = right, 2 = open left.
#[derive(Debug, Clone, Copy)]
struct Key(f64, u8);

impl Key {
    fn cmp(&self, o: &Key) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// The NPMLE of interval-censored data (module docs). `upper[i]` may be `+inf` (right
/// censored). Errors: empty input, mismatched lengths, NaN or infinite lower bounds, NaN
/// upper bounds, `upper < lower`.
pub fn turnbull(
    lower: &[f64],
    upper: &[f64],
    bounds: Bounds,
    opts: &TurnbullOptions,
) -> Result<Turnbull, SurvivalError> {
    let n = lower.len();
    if upper.len() != n {
        return Err(SurvivalError::LengthMismatch {
            what: "upper",
            expected: n,
            got: upper.len(),
        });
    }
    if n == 0 {
        return Err(SurvivalError::Empty);
    }
    let mut lefts = Vec::with_capacity(n);
    let mut rights = Vec::with_capacity(n);
    for i in 0..n {
        let (l, r) = (lower[i], upper[i]);
        if !l.is_finite() {
            return Err(SurvivalError::NonFinite {
                what: "lower bound",
                index: i,
                value: l,
            });
        }
        if r.is_nan() || r == f64::NEG_INFINITY {
            return Err(SurvivalError::NonFinite {
                what: "upper bound",
                index: i,
                value: r,
            });
        }
        if r < l {
            return Err(SurvivalError::InvalidValue {
                index: i,
                reason: "the upper bound is below the lower bound",
            });
        }
        let tag = if bounds == Bounds::OpenLower && l < r {
            2
        } else {
            0
        };
        lefts.push(Key(l, tag));
        rights.push(Key(r, 1));
    }
    // Turnbull intervals: a left endpoint immediately followed by a right one.
    let mut ends: Vec<(Key, bool)> = lefts
        .iter()
        .map(|&k| (k, true))
        .chain(rights.iter().map(|&k| (k, false)))
        .collect();
    ends.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut iv_left: Vec<Key> = Vec::new();
    let mut iv_right: Vec<Key> = Vec::new();
    for w in ends.windows(2) {
        if w[0].1 && !w[1].1 {
            iv_left.push(w[0].0);
            iv_right.push(w[1].0);
        }
    }
    let m = iv_left.len();
    // Each row's covered run a..=b, rows of equal coverage merged with a count.
    let mut runs: Vec<(u32, u32)> = Vec::with_capacity(n);
    for i in 0..n {
        let a = iv_left.partition_point(|k| k.cmp(&lefts[i]) == Ordering::Less);
        let b = iv_right.partition_point(|k| k.cmp(&rights[i]) != Ordering::Greater);
        // Every row covers at least one Turnbull interval (the one its left end opens or
        // a later one before its right end).
        debug_assert!(a < b, "row {i} covers no Turnbull interval");
        runs.push((a as u32, (b.max(a + 1) - 1) as u32));
    }
    runs.sort_unstable();
    let mut rows: Vec<(usize, usize, f64)> = Vec::new();
    for &(a, b) in &runs {
        match rows.last_mut() {
            Some(r) if r.0 == a as usize && r.1 == b as usize => r.2 += 1.0,
            _ => rows.push((a as usize, b as usize, 1.0)),
        }
    }
    let total = n as f64;
    let mut solver = Em {
        rows,
        m,
        total,
        prefix: vec![0.0; m + 1],
        diff: vec![0.0; m + 1],
        scratch: Vec::new(),
    };
    let mut p = vec![1.0 / m as f64; m];
    let mut iterations = 0;
    let mut converged = false;
    let mut g = vec![0.0; m];
    let (mut p1, mut p2, mut pn) = (vec![0.0; m], vec![0.0; m], vec![0.0; m]);
    while iterations < opts.max_iter {
        solver.gradient(&p, &mut g);
        if kkt(&g) <= opts.tol {
            converged = true;
            break;
        }
        iterations += 1;
        solver.em(&p, &mut p1);
        solver.em(&p1, &mut p2);
        let (mut rr, mut vv) = (0.0, 0.0);
        for j in 0..m {
            let r = p1[j] - p[j];
            let v = p2[j] - p1[j] - r;
            rr += r * r;
            vv += v * v;
        }
        let mut next_ll = f64::NEG_INFINITY;
        if vv > 0.0 {
            let alpha = -(rr / vv).sqrt().max(1.0);
            let mut sum = 0.0;
            for j in 0..m {
                let r = p1[j] - p[j];
                let v = p2[j] - p1[j] - r;
                let x = (p[j] - 2.0 * alpha * r + alpha * alpha * v).max(0.0);
                pn[j] = x;
                sum += x;
            }
            if sum > 0.0 && sum.is_finite() {
                pn.iter_mut().for_each(|x| *x /= sum);
                solver.em(&pn, &mut p1);
                std::mem::swap(&mut pn, &mut p1);
                next_ll = solver.loglik(&pn);
            }
        }
        let ll2 = solver.loglik(&p2);
        if next_ll.is_finite() && next_ll >= ll2 {
            std::mem::swap(&mut p, &mut pn);
        } else {
            std::mem::swap(&mut p, &mut p2);
        }
    }
    if !converged && m <= MAX_POLISH {
        converged = polish(&mut solver, &mut p, opts.tol);
    }
    solver.gradient(&p, &mut g);
    let kkt_violation = kkt(&g);
    let log_likelihood = solver.loglik(&p);
    let mut timeline: Vec<f64> = lower
        .iter()
        .chain(upper)
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    timeline.sort_unstable_by(f64::total_cmp);
    timeline.dedup();
    Ok(Turnbull {
        intervals: iv_left
            .iter()
            .zip(&iv_right)
            .map(|(l, r)| TurnbullInterval {
                left: l.0,
                left_open: l.1 == 2,
                right: r.0,
            })
            .collect(),
        probabilities: p,
        log_likelihood,
        iterations,
        kkt_violation,
        converged,
        timeline,
    })
}

/// Largest number of Turnbull intervals the Newton polish works on (a dense solve on the support).
const MAX_POLISH: usize = 2_000;
/// Largest support the Newton polish solves on.
const MAX_SUPPORT: usize = 400;

/// Finishes where EM crawls (flat directions, masses decaying to 0): an active-set Newton
/// method on the support `{j: p_j > 0}`. Each step maximises the quadratic model of `l` on the
/// support subject to `sum p = 1` (a bordered linear system), shortened to stay non-negative
/// (the variable that blocks leaves the support) and halved until `l` does not fall; when the
/// step vanishes, the interval with the largest `g_j > 1 + tol` joins the support, until none
/// does. Returns whether the Kuhn-Tucker tolerance was met.
fn polish(solver: &mut Em, p: &mut [f64], tol: f64) -> bool {
    let m = p.len();
    let top = p.iter().fold(0.0f64, |a, &b| a.max(b));
    for x in p.iter_mut() {
        if *x < 1e-9 * top {
            *x = 0.0;
        }
    }
    let sum: f64 = p.iter().sum();
    p.iter_mut().for_each(|x| *x /= sum);
    let mut g = vec![0.0; m];
    for _ in 0..200 {
        let support: Vec<usize> = (0..m).filter(|&j| p[j] > 0.0).collect();
        let k = support.len();
        if k > MAX_SUPPORT {
            return false;
        }
        // Gradient (N g_j) and information sum_i w_i / D_i^2 on the support.
        let mut grad = vec![0.0; k];
        let mut info = vec![vec![0.0; k]; k];
        solver.fill_prefix(p);
        for &(a, b, w) in &solver.rows {
            let d = solver.mass(p, a, b);
            let (sa, sb) = (
                support.partition_point(|&j| j < a),
                support.partition_point(|&j| j <= b),
            );
            if d <= 0.0 || sa == sb {
                continue;
            }
            let (x, y) = (w / d, w / (d * d));
            for (gr, row) in grad[sa..sb].iter_mut().zip(&mut info[sa..sb]) {
                *gr += x;
                row[sa..sb].iter_mut().for_each(|v| *v += y);
            }
        }
        // [info 1; 1' 0] [delta; lambda] = [grad; 0]
        let mut a = info;
        for row in a.iter_mut() {
            row.push(1.0);
        }
        let mut last = vec![1.0; k];
        last.push(0.0);
        a.push(last);
        let mut rhs = grad;
        rhs.push(0.0);
        let Some(sol) = super::numeric::solve(a, rhs) else {
            return false;
        };
        let delta = &sol[..k];
        let size = delta.iter().fold(0.0f64, |s, d| s.max(d.abs()));
        let ll0 = solver.loglik(p);
        let mut moved = false;
        if size > 1e-15 {
            // Longest step in [0, 1] keeping the support non-negative.
            let (mut t, mut block) = (1.0f64, None);
            for (r, &j) in support.iter().enumerate() {
                if delta[r] < 0.0 && -p[j] / delta[r] < t {
                    t = -p[j] / delta[r];
                    block = Some(j);
                }
            }
            let base: Vec<f64> = p.to_vec();
            for _ in 0..40 {
                for (r, &j) in support.iter().enumerate() {
                    p[j] = (base[j] + t * delta[r]).max(0.0);
                }
                if let Some(j) = block {
                    p[j] = 0.0;
                }
                let s: f64 = p.iter().sum();
                p.iter_mut().for_each(|x| *x /= s);
                if solver.loglik(p) >= ll0 - 1e-15 * ll0.abs() {
                    moved = true;
                    break;
                }
                t *= 0.5;
                block = None;
            }
            if !moved {
                p.copy_from_slice(&base);
            }
        }
        if moved && size > 1e-13 {
            continue;
        }
        solver.gradient(p, &mut g);
        if kkt(&g) <= tol {
            return true;
        }
        // The most violated interval off the support joins it.
        let Some(j) = (0..m)
            .filter(|&j| p[j] == 0.0)
            .max_by(|&x, &y| g[x].total_cmp(&g[y]))
            .filter(|&j| g[j] > 1.0 + tol)
        else {
            return kkt(&g) <= tol;
        };
        // Enter with a small mass so that it is on the support.
        p[j] = 1e-12;
        let s: f64 = p.iter().sum();
        p.iter_mut().for_each(|x| *x /= s);
    }
    solver.gradient(p, &mut g);
    kkt(&g) <= tol
}

/// The Kuhn-Tucker violation `max_j g_j - 1`. Since `sum_j p_j g_j = 1` at every `p`, it bounds
/// the log-likelihood gap to the maximum: `l(p*) - l(p) <= N (max_j g_j - 1)`.
fn kkt(g: &[f64]) -> f64 {
    g.iter().map(|&gj| gj - 1.0).fold(0.0, f64::max)
}

/// The EM map on merged rows `(a, b, count)`.
struct Em {
    rows: Vec<(usize, usize, f64)>,
    m: usize,
    total: f64,
    prefix: Vec<f64>,
    diff: Vec<f64>,
    scratch: Vec<f64>,
}

impl Em {
    fn fill_prefix(&mut self, p: &[f64]) {
        let mut run = 0.0;
        self.prefix[0] = 0.0;
        for (slot, &pj) in self.prefix[1..].iter_mut().zip(&p[..self.m]) {
            run += pj;
            *slot = run;
        }
    }

    /// The covered mass of a run, summed directly when short (no prefix cancellation).
    fn mass(&self, p: &[f64], a: usize, b: usize) -> f64 {
        if b - a < 8 {
            p[a..=b].iter().sum()
        } else {
            self.prefix[b + 1] - self.prefix[a]
        }
    }

    /// `g_j = 1 / N sum_{i covers j} 1 / D_i`.
    fn gradient(&mut self, p: &[f64], g: &mut [f64]) {
        self.fill_prefix(p);
        self.diff.iter_mut().for_each(|x| *x = 0.0);
        for k in 0..self.rows.len() {
            let (a, b, w) = self.rows[k];
            let d = self.mass(p, a, b);
            let x = if d > 0.0 { w / d } else { 0.0 };
            self.diff[a] += x;
            self.diff[b + 1] -= x;
        }
        let mut run = 0.0;
        for (gj, &dj) in g[..self.m].iter_mut().zip(&self.diff) {
            run += dj;
            *gj = run / self.total;
        }
    }

    fn em(&mut self, p: &[f64], out: &mut [f64]) {
        let mut g = std::mem::take(&mut self.scratch);
        g.resize(self.m, 0.0);
        self.gradient(p, &mut g);
        let mut sum = 0.0;
        for j in 0..self.m {
            out[j] = p[j] * g[j];
            sum += out[j];
        }
        if sum > 0.0 {
            out.iter_mut().for_each(|x| *x /= sum);
        }
        self.scratch = g;
    }

    fn loglik(&mut self, p: &[f64]) -> f64 {
        self.fill_prefix(p);
        self.rows
            .iter()
            .map(|&(a, b, w)| w * self.mass(p, a, b).ln())
            .sum()
    }
}
