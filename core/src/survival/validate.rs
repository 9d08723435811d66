//! Out-of-time validation: "is the model any good?"
//!
//! Given a split time T (absolute, or a fraction of the observation span, see [`Split`]):
//!
//! * **training data** = what was known at T. A session that ended at or before T keeps its
//!   outcome (entry age e, exit age e + end − start, event δ). A session live at T
//!   (start ≤ T < end) is censored at T: exit age a = e + T − start, δ = 0. Sessions first
//!   observed after T (start > T) are unseen.
//! * **test cases** = the sessions live at T: age a = e + T − start and residual
//!   r = end − T (> 0) with the session's own event flag δ (δ = 0: still up when observation
//!   stopped).
//!
//! Every estimator predicts the conditional survival Ŝ_j(t) = S(t | a_j) of each test case and
//! is scored against (r_j, δ_j) by three metrics (definitions in [`brier_scores`],
//! [`integrated_brier_score`], [`concordance_index`], [`calibration`]):
//!
//! * the integrated Brier score with inverse-probability-of-censoring weights
//!   (Graf, Schmoor, Sauerbrei & Schumacher 1999; Gerds & Schumacher 2006), lower is better;
//! * Harrell's concordance (Harrell et al. 1982) of the risk 1 − Ŝ_j(h_c), higher is better;
//! * calibration at a few horizons: mean predicted Ŝ_j(h) against the Kaplan–Meier estimate of
//!   the test residuals at h.
//!
//! Estimators compared ([`EstimatorName`]), all fitted on the training data only:
//! node KM, pooled KM, beta-process shrinkage, gamma-frailty shrinkage and the exponential
//! model with the pooled rate (see [`EstimatorName`] for how each predicts).
//!
//! References: Graf, E., Schmoor, C., Sauerbrei, W. & Schumacher, M. (1999). Assessment and
//! comparison of prognostic classification schemes for survival data. *Stat. Med.* 18,
//! 2529–2545. Gerds, T. A. & Schumacher, M. (2006). Consistent estimation of the expected Brier
//! score in general survival models with right-censored event times. *Biom. J.* 48, 1029–1040.
//! Harrell, F. E., Califf, R. M., Pryor, D. B., Lee, K. L. & Rosati, R. A. (1982). Evaluating
//! the yield of medical tests. *JAMA* 247, 2543–2546.
//!
//! Size: over 800 lines because out-of-time validation is one procedure (split, fit every
//! estimator, score with IPCW Brier, concordance and calibration) whose steps share the same
//! censoring weights; its unit tests live in `validate_tests.rs`.

use serde::{Deserialize, Serialize};

use crate::survival::km::{GroupedKm, KmFit, KmView};
use crate::survival::shrinkage::{Estimator, EstimatorChoice, ShrinkageModel, ShrinkageOptions};
use crate::survival::{ConditionalSurvival, SurvivalData, SurvivalError};

// ------------------------------------------------------------------------------------------
// input
// ------------------------------------------------------------------------------------------

/// One up-session of a node, on the absolute clock of the trace (seconds).
///
/// Same convention as the ingest model: `start` is the first instant the session was observed
/// up, `entry` its age at `start` (0 when observed from its beginning, and also 0 for a
/// left-truncated session of unknown age), so the session's (entry, exit) ages are
/// (`entry`, `entry + end − start`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SurvivalSession {
    /// Node index (0-based; the number of nodes is max index + 1).
    pub node: u32,
    /// First observed instant, seconds.
    pub start: f64,
    /// End of the session (failure when `event`, otherwise end of observation), seconds.
    pub end: f64,
    /// True = the node went down at `end`; false = right-censored at `end`.
    pub event: bool,
    /// Age of the session at `start` (left truncation / delayed entry), seconds, ≥ 0.
    pub entry: f64,
}

impl SurvivalSession {
    /// A session observed from its beginning (entry age 0).
    pub fn new(node: u32, start: f64, end: f64, event: bool) -> SurvivalSession {
        SurvivalSession {
            node,
            start,
            end,
            event,
            entry: 0.0,
        }
    }

    /// Sets the age at `start` (left truncation).
    pub fn with_entry(mut self, entry: f64) -> SurvivalSession {
        self.entry = entry;
        self
    }

    /// Age of the session at absolute time `x`: entry + x − start.
    #[inline]
    pub fn age_at(&self, x: f64) -> f64 {
        self.entry + (x - self.start)
    }
}

/// Checks every session: finite `start`, `end`, `entry`; `end ≥ start`; `entry ≥ 0`.
fn check_sessions(sessions: &[SurvivalSession]) -> Result<(), SurvivalError> {
    if sessions.is_empty() {
        return Err(SurvivalError::Empty);
    }
    for (i, s) in sessions.iter().enumerate() {
        for (what, v) in [("start", s.start), ("end", s.end), ("entry", s.entry)] {
            if !v.is_finite() {
                return Err(SurvivalError::InvalidArgument(format!(
                    "session {i}: {what} is not finite ({v})"
                )));
            }
        }
        if s.end < s.start {
            return Err(SurvivalError::InvalidValue {
                index: i,
                reason: "session ends before it starts",
            });
        }
        if s.entry < 0.0 {
            return Err(SurvivalError::InvalidValue {
                index: i,
                reason: "negative entry age",
            });
        }
    }
    Ok(())
}

/// Observation span [min start, max end] of the sessions (`None` when empty).
fn observation_span(sessions: &[SurvivalSession]) -> Option<(f64, f64)> {
    let lo = sessions.iter().map(|s| s.start).min_by(f64::total_cmp)?;
    let hi = sessions.iter().map(|s| s.end).max_by(f64::total_cmp)?;
    Some((lo, hi))
}

/// The split time T = lo + f·(hi − lo) for a fraction f ∈ (0, 1) of the observation span
/// [lo, hi] = [`observation_span`].
pub(crate) fn split_time_from_fraction(
    sessions: &[SurvivalSession],
    fraction: f64,
) -> Result<f64, SurvivalError> {
    if !(fraction > 0.0 && fraction < 1.0) {
        return Err(SurvivalError::InvalidArgument(format!(
            "split fraction must be in (0, 1), got {fraction}"
        )));
    }
    check_sessions(sessions)?;
    let (lo, hi) = observation_span(sessions).ok_or(SurvivalError::Empty)?;
    Ok(lo + fraction * (hi - lo))
}

/// Where to split the trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Absolute split time T, seconds on the sessions' clock.
    At(f64),
    /// Fraction f ∈ (0, 1) of the observation span: T = lo + f·(hi − lo).
    Fraction(f64),
}

impl Split {
    /// The absolute split time for these sessions.
    pub fn resolve(&self, sessions: &[SurvivalSession]) -> Result<f64, SurvivalError> {
        match *self {
            Split::At(t) if t.is_finite() => Ok(t),
            Split::At(t) => Err(SurvivalError::InvalidArgument(format!(
                "split time is not finite ({t})"
            ))),
            Split::Fraction(f) => split_time_from_fraction(sessions, f),
        }
    }
}

/// Outcome of a test case after the split: residual time and event flag.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Residual {
    /// Observed residual time r = end − T (seconds).
    pub time: f64,
    /// True = the session ended by an event at `time`; false = censored at `time`.
    pub event: bool,
}

/// A session live at the split time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TestCase {
    /// Index of the session in the input slice.
    pub session: usize,
    /// Node index.
    pub node: u32,
    /// Age a at the split time.
    pub age: f64,
    /// What happened after the split.
    pub residual: Residual,
}

/// Training rows (one per known session, on the age clock) in input order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TrainSet {
    /// Node index of each row.
    pub nodes: Vec<u32>,
    /// Exit ages.
    pub durations: Vec<f64>,
    /// Event flags.
    pub events: Vec<bool>,
    /// Entry ages.
    pub entry: Vec<f64>,
    /// Number of nodes (max node index over all sessions + 1).
    pub n_nodes: usize,
}

impl TrainSet {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.durations.len()
    }

    /// True when no session was known at the split.
    pub fn is_empty(&self) -> bool {
        self.durations.is_empty()
    }

    /// Borrowed [`SurvivalData`]; entry ages are attached only when some is positive.
    pub fn data(&self) -> SurvivalData<'_> {
        let d = SurvivalData::new(&self.durations, &self.events);
        if self.entry.iter().any(|&e| e > 0.0) {
            d.with_entry(&self.entry)
        } else {
            d
        }
    }
}

/// Training rows and test cases for one split time.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitSets {
    /// The split time T.
    pub split_time: f64,
    /// What was known at T.
    pub train: TrainSet,
    /// Sessions live at T (in input order).
    pub test: Vec<TestCase>,
}

/// Splits the sessions at T (see the module docs): ended (end ≤ T) → training row as is;
/// live (start ≤ T < end) → training row censored at age e + T − start and a test case;
/// start > T → unseen.
pub fn split_at(sessions: &[SurvivalSession], t: f64) -> Result<SplitSets, SurvivalError> {
    check_sessions(sessions)?;
    if !t.is_finite() {
        return Err(SurvivalError::InvalidArgument(format!(
            "split time is not finite ({t})"
        )));
    }
    let n_nodes = sessions
        .iter()
        .map(|s| s.node as usize + 1)
        .max()
        .unwrap_or(0);
    let mut train = TrainSet {
        n_nodes,
        ..Default::default()
    };
    let mut test = Vec::new();
    for (i, s) in sessions.iter().enumerate() {
        if s.end <= t {
            train.nodes.push(s.node);
            train.durations.push(s.age_at(s.end));
            train.events.push(s.event);
            train.entry.push(s.entry);
        } else if s.start <= t {
            let age = s.age_at(t);
            train.nodes.push(s.node);
            train.durations.push(age);
            train.events.push(false);
            train.entry.push(s.entry);
            test.push(TestCase {
                session: i,
                node: s.node,
                age,
                residual: Residual {
                    time: s.end - t,
                    event: s.event,
                },
            });
        }
    }
    Ok(SplitSets {
        split_time: t,
        train,
        test,
    })
}

// ------------------------------------------------------------------------------------------
// metrics
// ------------------------------------------------------------------------------------------

/// Empirical quantile by inverse ECDF ("type 1"): the smallest x_(k) with k/n ≥ q,
/// i.e. x_(⌈q n⌉) of the sorted values (x_(1) for q ≤ 0). `None` when `x` is empty or
/// contains NaN, or q is NaN.
pub(crate) fn empirical_quantile(x: &[f64], q: f64) -> Option<f64> {
    if x.is_empty() || q.is_nan() || x.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = x.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let k = ((q.clamp(0.0, 1.0) * n as f64).ceil() as usize).clamp(1, n);
    Some(v[k - 1])
}

/// Kaplan–Meier estimate Ĝ of the censoring distribution of the test residuals: the
/// product-limit estimator with the roles of event and censoring swapped (δ_j = 0 is the
/// "event"; at a tie an observed event counts as still at risk of censoring).
#[derive(Debug, Clone)]
pub struct CensoringKm {
    fit: KmFit,
}

impl CensoringKm {
    /// Fits Ĝ to the residuals.
    pub fn fit(res: &[Residual]) -> Result<CensoringKm, SurvivalError> {
        let t: Vec<f64> = res.iter().map(|r| r.time).collect();
        let c: Vec<bool> = res.iter().map(|r| !r.event).collect();
        Ok(CensoringKm {
            fit: KmFit::fit(&t, &c)?,
        })
    }

    /// Ĝ(t) (right-continuous; 1 before the first residual).
    pub fn at(&self, t: f64) -> f64 {
        self.fit.survival(t)
    }

    /// Ĝ(t−) = lim_{u↑t} Ĝ(u): the value at the last residual time strictly before t.
    pub fn before(&self, t: f64) -> f64 {
        let v = self.fit.view();
        match v.timeline().partition_point(|&x| x < t).checked_sub(1) {
            Some(k) => v.survival_values()[k],
            None => 1.0,
        }
    }

    /// First residual time at which Ĝ reaches 0 (the largest residual, when it is censored).
    pub fn zero_time(&self) -> Option<f64> {
        let v = self.fit.view();
        let k = v.survival_values().iter().position(|&s| s <= 0.0)?;
        Some(v.timeline()[k])
    }
}

/// Streaming IPCW Brier sums at fixed times.
struct BrierAcc {
    times: Vec<f64>,
    g_t: Vec<f64>,
    sums: Vec<f64>,
    n: usize,
}

impl BrierAcc {
    fn new(g: &CensoringKm, times: &[f64]) -> BrierAcc {
        BrierAcc {
            times: times.to_vec(),
            g_t: times.iter().map(|&t| g.at(t)).collect(),
            sums: vec![0.0; times.len()],
            n: 0,
        }
    }

    /// Adds case (r, δ) with Ĝ(r−) = `g_r` and predictions Ŝ(t_k) = `pred(k)`.
    fn add(&mut self, r: Residual, g_r: f64, pred: impl Fn(usize) -> f64) {
        self.n += 1;
        for (k, &t) in self.times.iter().enumerate() {
            if r.time > t {
                if self.g_t[k] > 0.0 {
                    let e = 1.0 - pred(k);
                    self.sums[k] += e * e / self.g_t[k];
                }
            } else if r.event && g_r > 0.0 {
                let s = pred(k);
                self.sums[k] += s * s / g_r;
            }
        }
    }

    fn finish(self) -> Vec<f64> {
        let n = self.n.max(1) as f64;
        self.sums.into_iter().map(|s| s / n).collect()
    }
}

/// IPCW Brier score at each time t_k (Graf et al. 1999, with Ĝ(r_j−) as in Gerds & Schumacher
/// 2006):
///
///   BS(t) = (1/n) Σ_j [ 1{r_j ≤ t, δ_j = 1} Ŝ_j(t)² / Ĝ(r_j−) + 1{r_j > t} (1 − Ŝ_j(t))² / Ĝ(t) ],
///
/// where Ŝ_j(t) = `pred(j, k)` is the predicted probability that case j survives t_k beyond the
/// split, Ĝ the [`CensoringKm`] of the same residuals; cases censored at r_j ≤ t contribute 0
/// but stay in n. (Ĝ(t) > 0 whenever some r_j > t, and Ĝ(r_j−) > 0 for every event, so no
/// weight is infinite.)
pub fn brier_scores(
    res: &[Residual],
    times: &[f64],
    pred: impl Fn(usize, usize) -> f64,
) -> Result<Vec<f64>, SurvivalError> {
    let g = CensoringKm::fit(res)?;
    let mut acc = BrierAcc::new(&g, times);
    for (j, &r) in res.iter().enumerate() {
        acc.add(r, g.before(r.time), |k| pred(j, k));
    }
    Ok(acc.finish())
}

/// Integrated Brier score by the trapezoidal rule over the (ascending) times:
/// IBS = (1 / (t_K − t_0)) Σ_k (t_{k+1} − t_k)(BS(t_k) + BS(t_{k+1}))/2.
/// `None` with fewer than two times, mismatched lengths, or t_K ≤ t_0.
pub fn integrated_brier_score(times: &[f64], bs: &[f64]) -> Option<f64> {
    if times.len() < 2 || times.len() != bs.len() {
        return None;
    }
    let span = times[times.len() - 1] - times[0];
    if span.is_nan() || span <= 0.0 {
        return None;
    }
    let area: f64 = times
        .windows(2)
        .zip(bs.windows(2))
        .map(|(t, b)| (t[1] - t[0]) * 0.5 * (b[0] + b[1]))
        .sum();
    Some(area / span)
}

/// 95 % percentile-bootstrap intervals of the IBS and of Harrell's C: the test cases are drawn
/// with replacement `resamples` times, and each resample is scored afresh (its own censoring
/// curve Ĝ, its own comparable pairs) with the cases' predictions `on_grid` (per case, Ŝ at
/// each `grid` time) and risks. Resamples without a score (no comparable pair, a degenerate
/// Ĝ) are left out; fewer than 20 scored resamples, or fewer than two cases, give `None`.
fn bootstrap_scores(
    res: &[Residual],
    grid: &[f64],
    on_grid: &[Vec<f64>],
    risk: &[f64],
    resamples: usize,
    seed: u64,
) -> (Option<[f64; 2]>, Option<[f64; 2]>) {
    let n = res.len();
    if n < 2 || resamples == 0 {
        return (None, None);
    }
    let mut rng = crate::rng::Rng::new(seed);
    let (mut ibs, mut conc) = (Vec::with_capacity(resamples), Vec::with_capacity(resamples));
    let mut idx = vec![0usize; n];
    for _ in 0..resamples {
        for i in idx.iter_mut() {
            *i = (rng.uniform() * n as f64) as usize % n;
        }
        let r: Vec<Residual> = idx.iter().map(|&i| res[i]).collect();
        if !grid.is_empty() {
            if let Ok(bs) = brier_scores(&r, grid, |j, k| on_grid[idx[j]][k]) {
                ibs.extend(integrated_brier_score(grid, &bs));
            }
        }
        let rk: Vec<f64> = idx.iter().map(|&i| risk[i]).collect();
        if let Ok(Some(c)) = concordance_index(&r, &rk) {
            conc.push(c);
        }
    }
    let interval = |mut v: Vec<f64>| {
        if v.len() < 20 {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
        Some([at(0.025), at(0.975)])
    };
    (interval(ibs), interval(conc))
}

/// The uniform grid t_k = τ·k/K, k = 0..=K (K = `intervals` ≥ 1) on which the IBS is integrated.
pub fn brier_grid(horizon: f64, intervals: usize) -> Vec<f64> {
    let k = intervals.max(1);
    (0..=k)
        .map(|i| {
            if i == k {
                horizon
            } else {
                horizon * i as f64 / k as f64
            }
        })
        .collect()
}

/// Default IBS horizon τ: the `quantile` (e.g. 0.9) [`empirical_quantile`] of all observed
/// residuals r_j (events and censored). If Ĝ(τ) = 0 (τ at or past the time where the
/// censoring KM reaches 0, e.g. administrative censoring at the trace end), τ is lowered to the
/// largest residual strictly before that time. `None` when no positive such time exists.
pub(crate) fn ibs_horizon(res: &[Residual], quantile: f64) -> Result<Option<f64>, SurvivalError> {
    let r: Vec<f64> = res.iter().map(|x| x.time).collect();
    let Some(mut tau) = empirical_quantile(&r, quantile) else {
        return Ok(None);
    };
    let g = CensoringKm::fit(res)?;
    if let Some(z) = g.zero_time() {
        if tau >= z {
            match r.iter().copied().filter(|&x| x < z).max_by(f64::total_cmp) {
                Some(x) => tau = x,
                None => return Ok(None),
            }
        }
    }
    Ok((tau > 0.0).then_some(tau))
}

/// Harrell's concordance index of risk scores (higher risk = expected to fail sooner).
///
/// A pair (i, j) is comparable when δ_i = 1 and r_i < r_j, or δ_i = 1, δ_j = 0 and r_i = r_j
/// (a case censored at the event time survived at least as long). It is concordant when
/// risk_i > risk_j, tied when risk_i = risk_j (counts ½), discordant otherwise:
///
///   C = (#concordant + ½ #tied) / #comparable.
///
/// Pairs of two events at the same time are not comparable. O(n log n) (Fenwick tree over risk
/// ranks). `Ok(None)` when no pair is comparable; error on length mismatch or NaN risk.
pub fn concordance_index(res: &[Residual], risk: &[f64]) -> Result<Option<f64>, SurvivalError> {
    if res.len() != risk.len() {
        return Err(SurvivalError::LengthMismatch {
            what: "risk",
            expected: res.len(),
            got: risk.len(),
        });
    }
    if let Some(i) = risk.iter().position(|r| r.is_nan()) {
        return Err(SurvivalError::InvalidValue {
            index: i,
            reason: "NaN risk score",
        });
    }
    if let Some(i) = res.iter().position(|r| r.time.is_nan()) {
        return Err(SurvivalError::NanDuration { index: i });
    }
    let n = res.len();
    // risk ranks (1-based, equal risks share a rank)
    let mut sorted: Vec<f64> = risk.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.dedup_by(|a, b| a == b);
    let rank = |x: f64| sorted.partition_point(|&y| y < x) + 1;
    let m = sorted.len();
    let mut tree = vec![0u64; m + 1];
    let add = |tree: &mut Vec<u64>, mut i: usize| {
        while i <= m {
            tree[i] += 1;
            i += i & i.wrapping_neg();
        }
    };
    let prefix = |tree: &Vec<u64>, mut i: usize| {
        let mut s = 0u64;
        while i > 0 {
            s += tree[i];
            i -= i & i.wrapping_neg();
        }
        s
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| res[b].time.total_cmp(&res[a].time));
    let (mut conc, mut tied, mut total) = (0u64, 0u64, 0u64);
    let mut inserted = 0u64;
    let mut i = 0;
    while i < n {
        let t = res[order[i]].time;
        let mut j = i;
        while j < n && res[order[j]].time == t {
            j += 1;
        }
        let group = &order[i..j];
        for &c in group.iter().filter(|&&c| !res[c].event) {
            add(&mut tree, rank(risk[c]));
            inserted += 1;
        }
        for &e in group.iter().filter(|&&e| res[e].event) {
            let rk = rank(risk[e]);
            let below = prefix(&tree, rk - 1);
            let at = prefix(&tree, rk) - below;
            conc += below;
            tied += at;
            total += inserted;
        }
        for &e in group.iter().filter(|&&e| res[e].event) {
            add(&mut tree, rank(risk[e]));
            inserted += 1;
        }
        i = j;
    }
    if total == 0 {
        return Ok(None);
    }
    Ok(Some((conc as f64 + 0.5 * tied as f64) / total as f64))
}

/// Calibration at one horizon.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CalibrationPoint {
    /// Horizon h after the split, seconds.
    pub horizon_s: f64,
    /// Mean predicted conditional survival (1/n) Σ_j Ŝ_j(h).
    pub predicted: f64,
    /// Kaplan–Meier estimate at h of the test residuals (r_j, δ_j): the observed fraction
    /// still up h after the split.
    pub observed: f64,
}

/// Calibration at each horizon h_k: predicted = (1/n) Σ_j `pred(j, k)`, observed = KM of the
/// residuals at h_k (right-continuous; flat after the last residual).
pub fn calibration(
    res: &[Residual],
    horizons: &[f64],
    pred: impl Fn(usize, usize) -> f64,
) -> Result<Vec<CalibrationPoint>, SurvivalError> {
    let km = residual_km(res)?;
    let n = res.len() as f64;
    Ok(horizons
        .iter()
        .enumerate()
        .map(|(k, &h)| CalibrationPoint {
            horizon_s: h,
            predicted: (0..res.len()).map(|j| pred(j, k)).sum::<f64>() / n,
            observed: km.survival(h),
        })
        .collect())
}

fn residual_km(res: &[Residual]) -> Result<KmFit, SurvivalError> {
    let t: Vec<f64> = res.iter().map(|r| r.time).collect();
    let e: Vec<bool> = res.iter().map(|r| r.event).collect();
    KmFit::fit(&t, &e)
}

// ------------------------------------------------------------------------------------------
// estimators
// ------------------------------------------------------------------------------------------

/// The estimators compared by [`validate`]; each predicts Ŝ_j(t) = S(t | a_j) for a test case of
/// node i and age a_j (every prediction is clamped to [0, 1]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EstimatorName {
    /// Per-node Kaplan–Meier S_i(a+t)/S_i(a), used when the node's curve extends beyond a
    /// (its last timeline time > a) and S_i(a) > 0; otherwise the pooled KM.
    #[serde(rename = "node_km")]
    NodeKm,
    /// Pooled Kaplan–Meier S(a+t)/S(a) (0 for t > 0 when S(a) = 0; flat after the last time).
    #[serde(rename = "pooled_km")]
    PooledKm,
    /// Beta-process shrinkage Ŝ_i(a+t)/Ŝ_i(a), M chosen by cross-validation (or fixed).
    #[serde(rename = "beta")]
    Beta,
    /// Gamma-frailty shrinkage, live-session form (the session is in the fit, censored at a):
    /// (β_i / (β_i + Λ0(a+t) − Λ0(a)))^α_i.
    #[serde(rename = "frailty")]
    Frailty,
    /// Exponential with the pooled maximum-likelihood rate λ̂ = D / Σ (T − e): exp(−λ̂ t).
    #[serde(rename = "exponential")]
    Exponential,
}

impl EstimatorName {
    /// All estimators, in report order.
    pub const ALL: [EstimatorName; 5] = [
        EstimatorName::NodeKm,
        EstimatorName::PooledKm,
        EstimatorName::Beta,
        EstimatorName::Frailty,
        EstimatorName::Exponential,
    ];

    /// Stable name (`node_km`, `pooled_km`, `beta`, `frailty`, `exponential`).
    pub fn as_str(self) -> &'static str {
        match self {
            EstimatorName::NodeKm => "node_km",
            EstimatorName::PooledKm => "pooled_km",
            EstimatorName::Beta => "beta",
            EstimatorName::Frailty => "frailty",
            EstimatorName::Exponential => "exponential",
        }
    }
}

/// Options of [`validate`].
#[derive(Debug, Clone, PartialEq)]
pub struct ValidateOptions {
    /// IBS horizon τ in seconds (default: [`ibs_horizon`] with `ibs_quantile`).
    pub ibs_horizon: Option<f64>,
    /// Quantile of the observed residuals used for the default τ (default 0.9).
    pub ibs_quantile: f64,
    /// Number K of grid intervals on [0, τ] (default 100, i.e. 101 points).
    pub grid_intervals: usize,
    /// Calibration horizons in seconds (e.g. 3600, 21600, 86400); default: the
    /// `calibration_quantiles` of the observed residuals.
    pub calibration_horizons: Option<Vec<f64>>,
    /// Residual quantiles used when `calibration_horizons` is `None` (default 0.25, 0.5, 0.75).
    pub calibration_quantiles: Vec<f64>,
    /// Horizon h_c of the concordance risk score 1 − Ŝ_j(h_c), seconds (default: the median
    /// observed residual).
    pub concordance_horizon: Option<f64>,
    /// Shrinkage settings. Its `estimator` field is ignored: the model is fitted with
    /// `Auto` so that both the beta-process and the frailty curves are available.
    pub shrinkage: ShrinkageOptions,
    /// Bootstrap resamples of the test cases for the intervals of IBS and C (default 1000;
    /// 0: no intervals).
    pub resamples: usize,
    /// Seed of the bootstrap.
    pub seed: u64,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            ibs_horizon: None,
            ibs_quantile: 0.9,
            grid_intervals: 100,
            calibration_horizons: None,
            calibration_quantiles: vec![0.25, 0.5, 0.75],
            concordance_horizon: None,
            shrinkage: ShrinkageOptions::default(),
            resamples: 1000,
            seed: 20_240_601,
        }
    }
}

/// One estimator's scores.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationRow {
    /// Estimator.
    pub estimator: EstimatorName,
    /// Number of test cases scored.
    pub n_test: usize,
    /// Integrated IPCW Brier score on [0, τ] (lower is better; `None` without a horizon).
    pub ibs: Option<f64>,
    /// Harrell's C of 1 − Ŝ_j(h_c) (`None` without comparable pairs).
    pub concordance: Option<f64>,
    /// 95 % percentile-bootstrap interval of `ibs` ([`bootstrap_scores`]; `None` with fewer
    /// than two test cases or no usable resample).
    pub ibs_ci: Option<[f64; 2]>,
    /// 95 % percentile-bootstrap interval of `concordance` (as `ibs_ci`).
    pub concordance_ci: Option<[f64; 2]>,
    /// Calibration at the report's horizons.
    pub calibration: Vec<CalibrationPoint>,
}

/// Shrinkage hyper-parameters of the training fit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ShrinkageHyperparams {
    /// Estimator the cross-validation would select (`BetaProcess` or `GammaFrailty`).
    pub selected: Estimator,
    /// Beta-process prior strength M.
    pub m: Option<f64>,
    /// Frailty variance θ̂.
    pub theta: f64,
}

/// Result of [`validate`]: settings and one row per estimator.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ValidationReport {
    /// Split time T (absolute seconds).
    pub split_time_s: f64,
    /// Number of input sessions.
    pub n_sessions: usize,
    /// Training rows (sessions known at T).
    pub n_train: usize,
    /// Test cases (sessions live at T).
    pub n_test: usize,
    /// Test cases whose residual ended by an event.
    pub n_test_events: usize,
    /// IBS horizon τ (seconds).
    pub ibs_horizon_s: Option<f64>,
    /// Number of IBS grid intervals K.
    pub grid_intervals: usize,
    /// Concordance horizon h_c (seconds).
    pub concordance_horizon_s: f64,
    /// Shrinkage hyper-parameters.
    pub shrinkage: ShrinkageHyperparams,
    /// One row per estimator, in [`EstimatorName::ALL`] order.
    pub rows: Vec<ValidationRow>,
}

/// The predicted S(a+t)/S(a) a curve is scored with, given S(a) = `sa`: the curve's
/// [`ConditionalSurvival::conditional_checked`] (evaluated with `sa` computed once), with an
/// undefined value (S(a) = 0) scored as 0 for t > 0: in validation a curve that says the session
/// should already be over predicts its end, rather than the scheduler's tail
/// ([`ConditionalSurvival::conditional`]).
#[inline]
fn ratio(curve: &impl ConditionalSurvival, sa: f64, a: f64, t: f64) -> f64 {
    if t <= 0.0 {
        return 1.0;
    }
    if sa > 0.0 {
        (curve.survival(a + t) / sa).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// Fits every estimator on the data known at the split and scores it on the sessions live at
/// the split (module docs). Errors: invalid sessions, no session live at T, no event in the
/// training data, or invalid options.
pub fn validate(
    sessions: &[SurvivalSession],
    split: Split,
    opts: &ValidateOptions,
) -> Result<ValidationReport, SurvivalError> {
    let t_split = split.resolve(sessions)?;
    let sets = split_at(sessions, t_split)?;
    validate_split(&sets, sessions.len(), opts)
}

/// [`validate`] on an already computed split (`n_sessions` is only reported).
fn validate_split(
    sets: &SplitSets,
    n_sessions: usize,
    opts: &ValidateOptions,
) -> Result<ValidationReport, SurvivalError> {
    let test = &sets.test;
    if test.is_empty() {
        return Err(SurvivalError::InvalidArgument(format!(
            "no session is live at the split time {}",
            sets.split_time
        )));
    }
    if sets.train.is_empty() {
        return Err(SurvivalError::Empty);
    }
    let res: Vec<Residual> = test.iter().map(|c| c.residual).collect();
    let r_times: Vec<f64> = res.iter().map(|r| r.time).collect();

    // horizons
    let tau = match opts.ibs_horizon {
        Some(h) if h.is_finite() && h > 0.0 => Some(h),
        Some(h) => {
            return Err(SurvivalError::InvalidArgument(format!(
                "IBS horizon must be positive and finite, got {h}"
            )))
        }
        None => ibs_horizon(&res, opts.ibs_quantile)?,
    };
    let grid = tau.map_or_else(Vec::new, |t| brier_grid(t, opts.grid_intervals));
    let calib: Vec<f64> = match &opts.calibration_horizons {
        Some(h) => h.clone(),
        None => opts
            .calibration_quantiles
            .iter()
            .filter_map(|&q| empirical_quantile(&r_times, q))
            .collect(),
    };
    if let Some(h) = calib.iter().find(|h| !(h.is_finite() && **h >= 0.0)) {
        return Err(SurvivalError::InvalidArgument(format!(
            "calibration horizon must be finite and >= 0, got {h}"
        )));
    }
    let h_c = match opts.concordance_horizon {
        Some(h) if h.is_finite() && h > 0.0 => h,
        Some(h) => {
            return Err(SurvivalError::InvalidArgument(format!(
                "concordance horizon must be positive and finite, got {h}"
            )))
        }
        None => empirical_quantile(&r_times, 0.5).ok_or(SurvivalError::Empty)?,
    };
    // all evaluation times: grid ++ calibration ++ [h_c]
    let mut times = grid.clone();
    times.extend_from_slice(&calib);
    times.push(h_c);
    let (n_grid, n_cal) = (grid.len(), calib.len());

    // fits
    let train = &sets.train;
    let data = train.data();
    let pooled = KmFit::fit_data(&data)?;
    let grouped = GroupedKm::fit(&train.nodes, &data, Some(train.n_nodes))?;
    let shrink_opts = ShrinkageOptions {
        estimator: EstimatorChoice::Auto,
        n_nodes: Some(train.n_nodes),
        ..opts.shrinkage.clone()
    };
    let model = ShrinkageModel::fit(&train.nodes, &data, &shrink_opts)?;
    let exp_rate = {
        let d = train.events.iter().filter(|&&e| e).count() as f64;
        let exposure: f64 = train
            .durations
            .iter()
            .zip(&train.entry)
            .map(|(&t, &e)| t - e)
            .sum();
        if exposure > 0.0 {
            d / exposure
        } else {
            0.0
        }
    };
    let g = CensoringKm::fit(&res)?;
    let g_minus: Vec<f64> = res.iter().map(|r| g.before(r.time)).collect();

    let km_res = residual_km(&res)?;
    let pooled_view = pooled.view();
    let mut rows = Vec::with_capacity(EstimatorName::ALL.len());
    let mut buf = vec![0.0; times.len()];
    for est in EstimatorName::ALL {
        let mut brier = BrierAcc::new(&g, &grid);
        let mut cal_sum = vec![0.0; n_cal];
        let mut risk = Vec::with_capacity(test.len());
        // Each case's predictions on the IBS grid, for the bootstrap.
        let mut on_grid: Vec<Vec<f64>> = Vec::with_capacity(test.len());
        let mut beta_cache: Option<(u32, crate::survival::shrinkage::BetaNodeCurve<'_>)> = None;
        for (j, case) in test.iter().enumerate() {
            let a = case.age;
            match est {
                EstimatorName::NodeKm => {
                    let view: Option<KmView<'_>> = grouped.group(case.node as usize).filter(|v| {
                        v.timeline().last().is_some_and(|&x| x > a) && v.survival(a) > 0.0
                    });
                    let v = view.unwrap_or(pooled_view);
                    let sa = v.survival(a);
                    for (o, &t) in buf.iter_mut().zip(&times) {
                        *o = ratio(&v, sa, a, t);
                    }
                }
                EstimatorName::PooledKm => {
                    let sa = pooled_view.survival(a);
                    for (o, &t) in buf.iter_mut().zip(&times) {
                        *o = ratio(&pooled_view, sa, a, t);
                    }
                }
                EstimatorName::Beta => {
                    if beta_cache.as_ref().is_none_or(|(n, _)| *n != case.node) {
                        beta_cache = model.beta_curve(case.node as usize).map(|c| (case.node, c));
                    }
                    match &beta_cache {
                        Some((_, c)) => {
                            let sa = c.survival(a);
                            for (o, &t) in buf.iter_mut().zip(&times) {
                                *o = ratio(c, sa, a, t);
                            }
                        }
                        None => buf.fill(f64::NAN),
                    }
                }
                EstimatorName::Frailty => {
                    let c = model.frailty_curve(case.node as usize);
                    for (o, &t) in buf.iter_mut().zip(&times) {
                        *o = if t <= 0.0 {
                            1.0
                        } else {
                            c.conditional_live(a, t).clamp(0.0, 1.0)
                        };
                    }
                }
                EstimatorName::Exponential => {
                    for (o, &t) in buf.iter_mut().zip(&times) {
                        *o = if t <= 0.0 { 1.0 } else { (-exp_rate * t).exp() };
                    }
                }
            }
            brier.add(case.residual, g_minus[j], |k| buf[k]);
            on_grid.push(buf[..n_grid].to_vec());
            for (s, &p) in cal_sum.iter_mut().zip(&buf[n_grid..n_grid + n_cal]) {
                *s += p;
            }
            risk.push(1.0 - buf[n_grid + n_cal]);
        }
        if risk.iter().any(|r| r.is_nan()) {
            // the estimator is unavailable (beta without M): no row
            continue;
        }
        let bs = brier.finish();
        let n = test.len() as f64;
        let (ibs_ci, concordance_ci) =
            bootstrap_scores(&res, &grid, &on_grid, &risk, opts.resamples, opts.seed);
        rows.push(ValidationRow {
            estimator: est,
            n_test: test.len(),
            ibs: integrated_brier_score(&grid, &bs),
            concordance: concordance_index(&res, &risk)?,
            ibs_ci,
            concordance_ci,
            calibration: calib
                .iter()
                .zip(&cal_sum)
                .map(|(&h, &s)| CalibrationPoint {
                    horizon_s: h,
                    predicted: s / n,
                    observed: km_res.survival(h),
                })
                .collect(),
        });
    }
    Ok(ValidationReport {
        split_time_s: sets.split_time,
        n_sessions,
        n_train: train.len(),
        n_test: test.len(),
        n_test_events: res.iter().filter(|r| r.event).count(),
        ibs_horizon_s: tau,
        grid_intervals: opts.grid_intervals.max(1),
        concordance_horizon_s: h_c,
        shrinkage: ShrinkageHyperparams {
            selected: model.selected(),
            m: model.m(),
            theta: model.theta(),
        },
        rows,
    })
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
