//! Kernel-smoothed hazard rate from the Nelson–Aalen increments (Ramlau-Hansen 1983), with
//! Müller–Wang boundary kernels, a least-squares cross-validated bandwidth and pointwise
//! log-scale 95 % confidence intervals.
//!
//! Data: exits T_i > entries e_i ≥ 0 (e_i = 0 without delayed entry), δ_i = 1 for an observed
//! end, 0 for right censoring (not observed, never a failure). Subject i is at risk on
//! (e_i, T_i] only (left truncation).
//!
//! **Increments.** Nelson–Aalen increments at the distinct event times t_1 < … < t_m
//! (d_j events at t_j, risk set Y_j = #{i : e_i < t_j ≤ T_i}):
//!
//!   dĤ_j = d_j / Y_j,   v_j = d_j / Y_j²   (variance increments).
//!
//! **Estimator.** On a smoothing axis z = z(t) with boundaries [z_L, z_R] and bandwidth b
//! (Ramlau-Hansen 1983):
//!
//!   ĝ(z) = (1/b) Σ_j K_z((z − z_j)/b) dĤ_j,   z_j = z(t_j),   ĥ(t) = ĝ(z(t)) · z′(t),
//!
//! with K_z the Epanechnikov kernel K(x) = ¾ (1 − x²) on [−1, 1] for z_L + b ≤ z ≤ z_R − b,
//! and the Müller–Wang boundary kernel (Gasser, Müller & Mammitzsch 1985; Müller & Wang 1994)
//! near the ends: for z = z_L + q b (q ∈ [0, 1))
//!
//!   K_q(x) = 12 / (1 + q)⁴ · (x + 1) · [x (1 − 2q) + (3q² − 2q + 1)/2],   x ∈ [−1, q],
//!
//! and for z = z_R − q b its mirror image K_q(−x), x ∈ [−q, 1]. K_q integrates to 1 and has
//! first moment 0 (bias O(b²) up to the ends); K_1 = K. A boundary kernel takes negative
//! values, so ĥ may be negative near an end: it is reported as 0 there. b ≤ (z_R − z_L)/2
//! always, so the two boundary regions never overlap.
//!
//! **Time scale** ([`TimeScale`]). *Linear*: z = t on [0, t_m] (boundary kernels near 0 and
//! near the last event time; b in time units), ĥ(t) = (1/b) Σ_j K_t((t − t_j)/b) dĤ_j.
//! *Log* (default): z = ln t on [ln t_1, ln t_m], ĥ(t) = ĝ(ln t)/t — the same estimator for
//! the hazard of ln T (a bandwidth proportional to t on the time axis). Session lengths span
//! decades and Weibull-like hazards have curvature ∝ 1/t² near 0 (infinite slope for k < 2),
//! which a single time-axis bandwidth cannot follow: on Weibull k = 1.5 / 0.7 samples the
//! linear axis leaves a boundary bias of about 2 standard errors near the origin (measured),
//! while on the log axis the Weibull hazard ln-density is linear and the relative bias is the
//! same everywhere.
//!
//! **Variance and intervals.** Pointwise variance (Ramlau-Hansen 1983) and 95 % interval on
//! the log scale (z₉₇.₅ = Φ⁻¹(0.975)):
//!
//!   Var ĥ(t) = z′(t)² b⁻² Σ_j K_z((z − z_j)/b)² d_j / Y_j²,
//!   CI = ĥ(t) · exp(± z₉₇.₅ · se(t) / ĥ(t)),   se = √Var ĥ(t)
//!
//! (when ĥ(t) ≤ 0 the interval is [0, z₉₇.₅ · se]).
//!
//! **Bandwidth.** Least-squares cross-validation (Ramlau-Hansen 1983; Patil 1993; Müller &
//! Wang 1994) minimises an unbiased estimate, up to a constant, of the weighted integrated
//! squared error ∫ (ĝ − g)² ω dz. With ω = Y (the at-risk weight, default, [`CvWeight`];
//! Gámiz et al. 2013) the tail where a handful of subjects remain does not dominate
//! (with ω = 1 it does, and pushes b to its maximum):
//!
//!   CV_Y(b) = ∫ ĝ_b(z)² Y(z) dz − 2 Σ_j ĝ_{b,−j}(z_j) d_j,
//!   CV_1(b) = ∫ ĝ_b(z)² dz − 2 Σ_j ĝ_{b,−j}(z_j) dĤ_j,
//!   ĝ_{b,−j}(z_j) = ĝ_b(z_j) − K_{z_j}(0) dĤ_j / b   (the j-th time left out),
//!
//! over [`CV_GRID_DEFAULT`] log-spaced bandwidths in [s/2000, s/2] (s = z_R − z_L), refined
//! by Brent's method between the grid neighbours of the best value. The reported estimate
//! uses b = c · b_CV with the undersmoothing factor c = [`UNDERSMOOTHING_DEFAULT`] = ½ (Hall
//! 1992): at the MISE-optimal b_CV the squared bias is of the order of the variance, so
//! intervals centred on ĥ_{b_CV} under-cover h (measured on censored, left-truncated Weibull
//! k = 1.5 and 0.7 samples, n = 3000: mean pointwise coverage 0.83 / 0.90 at b_CV, 0.96 / 0.96
//! at b_CV/2). Fallback: with fewer than [`MIN_CV_EVENT_TIMES`] distinct event times
//! b = s/2, the widest bandwidth the boundary kernels allow (an almost flat hazard: four
//! points support nothing finer); with a single event time the linear axis is used.
//!
//! References: Ramlau-Hansen, H. (1983). Smoothing counting process intensities by means of
//! kernel functions. *Ann. Statist.* 11, 453–466. Gasser, T., Müller, H.-G. & Mammitzsch, V.
//! (1985). Kernels for nonparametric curve estimation. *J. R. Statist. Soc. B* 47, 238–252.
//! Hall, P. (1992). Effect of bias estimation on coverage accuracy of bootstrap confidence
//! intervals for a probability density. *Ann. Statist.* 20, 675–694. Patil, P. N. (1993). On
//! the least squares cross-validation bandwidth in hazard rate estimation. *Ann. Statist.* 21,
//! 1792–1810. Müller, H.-G. & Wang, J.-L. (1994). Hazard rate estimation under random
//! censoring with varying kernels and bandwidths. *Biometrics* 50, 61–76. Gámiz, M. L.,
//! Janys, L., Martínez-Miranda, M. D. & Nielsen, J. P. (2013). Bandwidth selection in marker
//! dependent kernel hazard estimation. *Comput. Statist. Data Anal.* 68, 155–169.
//!
//! Size: over 800 lines because the estimator is one procedure (increments, kernels, the
//! cross-validated bandwidth and the intervals share the same increments and kernel
//! coefficients), with its unit and property tests.
//!
//! Cost: O(n log n) to build the increments, O(N + n + m) per cross-validation score
//! (N = clamp(8 s/b, 256, 16384) Simpson intervals; window sums from prefix sums of the
//! increments), O(window) per reported point: ~25 ms for 3,000 and ~0.1–0.2 s for 50,000
//! subjects (release build).

use serde::Serialize;

use super::numeric::minimize_bounded;
use super::Z_95;

/// Fewer distinct event times than this: no cross-validation, bandwidth R/2 (see module docs).
pub const MIN_CV_EVENT_TIMES: usize = 5;

/// Default number of reported grid points over [first event time, last event time].
pub const GRID_POINTS_DEFAULT: usize = 100;

/// Default number of log-spaced candidate bandwidths in [R/2000, R/2] for cross-validation.
pub const CV_GRID_DEFAULT: usize = 40;

/// Default undersmoothing factor: the bandwidth is ½ b_CV (see the module docs, "Intervals").
pub const UNDERSMOOTHING_DEFAULT: f64 = 0.5;

/// Simpson intervals N(β) = clamp(8/β, 256, 16384) (even) of the cross-validation integral on
/// the unit interval: at least 8 per bandwidth down to the smallest candidate 1/2000.
fn cv_intervals(beta: f64) -> usize {
    ((8.0 / beta).ceil() as usize).clamp(256, 16384) & !1
}

/// Smallest candidate bandwidth as a fraction of the last event time R.
const CV_MIN_FRACTION: f64 = 1.0 / 2000.0;

/// Errors raised on invalid input: the shape fits' error type (same checks, same messages).
pub type HazardError = super::shapes::ShapeError;

/// Checks lengths, finiteness, e_i ≥ 0, T_i > e_i (T_i > 0 without entries) and that at least
/// one event is observed.
fn validate(durations: &[f64], events: &[bool], entry: Option<&[f64]>) -> Result<(), HazardError> {
    super::shapes::validate(durations, events, entry)?;
    if !events.iter().any(|&d| d) {
        return Err(HazardError::NoEvents);
    }
    Ok(())
}

/// Nelson–Aalen increments at the distinct event times (see the module docs):
/// dĤ_j = d_j / Y_j, v_j = d_j / Y_j², Y_j = #{i : e_i < t_j ≤ T_i}.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NelsonAalen {
    /// Distinct event times t_1 < … < t_m.
    pub times: Vec<f64>,
    /// Number of events d_j at t_j.
    pub events: Vec<u32>,
    /// Risk set size Y_j = #{i : e_i < t_j ≤ T_i}.
    pub at_risk: Vec<u32>,
    /// Hazard increments dĤ_j = d_j / Y_j.
    pub increments: Vec<f64>,
    /// Variance increments v_j = d_j / Y_j².
    pub variance_increments: Vec<f64>,
    /// Sorted entry times (0 without delayed entry), for Y(t) between event times.
    #[serde(skip)]
    sorted_entries: Vec<f64>,
    /// Sorted exit times.
    #[serde(skip)]
    sorted_exits: Vec<f64>,
}

impl NelsonAalen {
    /// Risk set Y(t) = #{i : e_i < t ≤ T_i} at any time t.
    pub fn at_risk(&self, t: f64) -> usize {
        let entered = self.sorted_entries.partition_point(|&x| x < t);
        let left = self.sorted_exits.partition_point(|&x| x < t);
        entered.saturating_sub(left)
    }

    /// Cumulative hazard Ĥ(t) = Σ_{t_j ≤ t} dĤ_j.
    pub fn cumulative_hazard(&self, t: f64) -> f64 {
        let k = self.times.partition_point(|&x| x <= t);
        self.increments[..k].iter().sum()
    }
}

/// Computes the [`NelsonAalen`] increments with left truncation honoured.
///
/// Y_j = #{e_i < t_j} − #{T_i < t_j} (every subject with T_i < t_j also has e_i < t_j), from
/// two sorted arrays: O(n log n).
pub fn nelson_aalen(
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
) -> Result<NelsonAalen, HazardError> {
    validate(durations, events, entry)?;
    let n = durations.len();
    let mut exits = durations.to_vec();
    exits.sort_by(f64::total_cmp);
    let mut entries: Vec<f64> = match entry {
        Some(e) => e.to_vec(),
        None => vec![0.0; n],
    };
    entries.sort_by(f64::total_cmp);
    let mut ev: Vec<f64> = durations
        .iter()
        .zip(events)
        .filter(|(_, &d)| d)
        .map(|(&t, _)| t)
        .collect();
    ev.sort_by(f64::total_cmp);
    let mut na = NelsonAalen {
        times: Vec::new(),
        events: Vec::new(),
        at_risk: Vec::new(),
        increments: Vec::new(),
        variance_increments: Vec::new(),
        sorted_entries: Vec::new(),
        sorted_exits: Vec::new(),
    };
    let mut i = 0;
    while i < ev.len() {
        let t = ev[i];
        let mut j = i;
        while j < ev.len() && ev[j] == t {
            j += 1;
        }
        let d = (j - i) as f64;
        let entered = entries.partition_point(|&x| x < t);
        let left = exits.partition_point(|&x| x < t);
        // validated input: the subject failing at t has e < t ≤ T, so y ≥ d ≥ 1
        let y = entered.saturating_sub(left).max(j - i) as f64;
        na.times.push(t);
        na.events.push((j - i) as u32);
        na.at_risk.push(y as u32);
        na.increments.push(d / y);
        na.variance_increments.push(d / (y * y));
        i = j;
    }
    na.sorted_entries = entries;
    na.sorted_exits = exits;
    Ok(na)
}

/// How the bandwidth was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BandwidthMethod {
    /// Passed by the caller (capped at half the smoothing range).
    Fixed,
    /// Least-squares cross-validation, minimum inside the candidate range.
    CrossValidated,
    /// Least-squares cross-validation, minimum at an end of the candidate range (the score was
    /// still falling there: treat the bandwidth with care).
    CrossValidatedAtGridEdge,
    /// Fewer than [`MIN_CV_EVENT_TIMES`] distinct event times: half the smoothing range.
    Fallback,
}

/// The clock on which the kernel smooths (see the module docs, "Time scale").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TimeScale {
    /// z = t on [0, t_m]: boundary kernels near 0 and near the last event time; bandwidth in
    /// time units.
    Linear,
    /// z = ln t on [ln t_1, ln t_m] (default): ĥ(t) = ĝ(ln t) / t, where ĝ smooths the same
    /// increments placed at ln t_j; boundary kernels near the first and last event times;
    /// bandwidth in log-time units (a bandwidth proportional to t on the time axis).
    Log,
}

/// Weight ω of the integrated squared error ∫ (ĝ − g)² ω dz that cross-validation minimises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CvWeight {
    /// ω = Y, the risk set (default): CV = ∫ ĝ² Y dz − 2 Σ_j ĝ_{−j}(z_j) d_j.
    AtRisk,
    /// ω = 1: CV = ∫ ĝ² dz − 2 Σ_j ĝ_{−j}(z_j) dĤ_j.
    Uniform,
}

/// Options of [`smoothed_hazard`].
#[derive(Debug, Clone, PartialEq)]
pub struct HazardOptions {
    /// Fixed bandwidth b > 0 in units of the smoothing axis (time units for
    /// [`TimeScale::Linear`], log-time units for [`TimeScale::Log`]); `None` = cross-validated.
    /// Values above half the smoothing range are capped there.
    pub bandwidth: Option<f64>,
    /// Number of reported points, evenly spaced over [first event, last event] (≥ 1).
    pub grid_points: usize,
    /// Number of log-spaced candidate bandwidths for cross-validation (≥ 2).
    pub cv_candidates: usize,
    /// Weight of the cross-validated squared error (default [`CvWeight::AtRisk`]).
    pub cv_weight: CvWeight,
    /// Smoothing clock (default [`TimeScale::Log`]).
    pub scale: TimeScale,
    /// Undersmoothing factor c ∈ (0, 1] applied to the cross-validated bandwidth:
    /// b = c · b_CV (default [`UNDERSMOOTHING_DEFAULT`] = ½; 1 reports the plain CV estimate).
    /// Not applied to a fixed or fallback bandwidth.
    pub undersmoothing: f64,
}

impl Default for HazardOptions {
    /// Log time scale, ½ × the cross-validated (at-risk weighted) bandwidth,
    /// [`GRID_POINTS_DEFAULT`] points, [`CV_GRID_DEFAULT`] candidates.
    fn default() -> Self {
        HazardOptions {
            bandwidth: None,
            grid_points: GRID_POINTS_DEFAULT,
            cv_candidates: CV_GRID_DEFAULT,
            cv_weight: CvWeight::AtRisk,
            scale: TimeScale::Log,
            undersmoothing: UNDERSMOOTHING_DEFAULT,
        }
    }
}

/// One point of the smoothed hazard with its pointwise 95 % log-scale interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HazardPoint {
    /// Time t.
    pub t: f64,
    /// ĥ(t) (0 where the boundary kernel makes the estimate negative).
    pub hazard: f64,
    /// Lower 95 % bound ĥ exp(−z se/ĥ) (0 when ĥ ≤ 0).
    pub ci_low: f64,
    /// Upper 95 % bound ĥ exp(z se/ĥ) (z se when ĥ ≤ 0).
    pub ci_high: f64,
}

/// The smoothing axis z(t) with its boundaries [lo, hi].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Axis {
    scale: TimeScale,
    lo: f64,
    hi: f64,
}

impl Axis {
    /// Axis for event times t_1 ≤ t_m (t_1 > 0); the log axis needs t_1 < t_m.
    fn new(scale: TimeScale, t1: f64, tm: f64) -> Axis {
        match scale {
            TimeScale::Linear => Axis {
                scale,
                lo: 0.0,
                hi: tm,
            },
            TimeScale::Log => Axis {
                scale,
                lo: t1.ln(),
                hi: tm.ln(),
            },
        }
    }

    /// z(t) (ln 0 = −∞ on the log axis).
    fn z(&self, t: f64) -> f64 {
        match self.scale {
            TimeScale::Linear => t,
            TimeScale::Log => t.ln(),
        }
    }

    /// dz/dt: ĥ(t) = ĝ(z(t)) · dz/dt.
    fn jacobian(&self, t: f64) -> f64 {
        match self.scale {
            TimeScale::Linear => 1.0,
            TimeScale::Log => 1.0 / t,
        }
    }

    fn span(&self) -> f64 {
        self.hi - self.lo
    }
}

/// A kernel-smoothed hazard (see the module docs for the estimator).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SmoothedHazard {
    /// Bandwidth b used, in units of the smoothing axis [`scale`](Self::scale).
    pub bandwidth: f64,
    /// How b was chosen.
    pub bandwidth_method: BandwidthMethod,
    /// The cross-validated bandwidth b_CV before undersmoothing (`None` for a fixed or
    /// fallback bandwidth).
    pub cv_bandwidth: Option<f64>,
    /// The smoothing clock used (the linear one when the log axis was asked for but all events
    /// share one time).
    pub scale: TimeScale,
    /// ĥ and its interval on the reporting grid over [`t_min`](Self::t_min), [`t_max`](Self::t_max).
    pub points: Vec<HazardPoint>,
    /// Number of observed events Σ d_j.
    pub events: usize,
    /// First event time t_1.
    pub t_min: f64,
    /// Last event time t_m (the right boundary of the estimate).
    pub t_max: f64,
    #[serde(skip)]
    axis: Axis,
    /// Event positions z_j on the axis.
    #[serde(skip)]
    zs: Vec<f64>,
    #[serde(skip)]
    dh: Vec<f64>,
    #[serde(skip)]
    dv: Vec<f64>,
}

impl SmoothedHazard {
    /// ĥ(t) where defined (clamped at 0 where a boundary kernel makes it negative): on
    /// [0, t_m] for the linear scale, [t_1, t_m] for the log scale; NaN elsewhere and for NaN t.
    pub fn at(&self, t: f64) -> f64 {
        self.point_at(t).map_or(f64::NAN, |p| p.hazard)
    }

    /// ĥ(t) with its 95 % interval where defined (see [`at`](Self::at)); `None` elsewhere.
    pub fn point_at(&self, t: f64) -> Option<HazardPoint> {
        if !(t >= 0.0 && t <= self.t_max) {
            return None;
        }
        let z = self.axis.z(t);
        if !(z >= self.axis.lo && z <= self.axis.hi) {
            return None;
        }
        let (g, v) = estimate(&self.zs, &self.dh, &self.dv, self.bandwidth, &self.axis, z);
        let j = self.axis.jacobian(t);
        Some(make_point(t, g * j, v * j * j))
    }
}

/// Builds a reported point from ĥ and Var ĥ (log-scale interval, see the module docs).
fn make_point(t: f64, h: f64, v: f64) -> HazardPoint {
    let se = v.max(0.0).sqrt();
    if h > 0.0 {
        let f = (Z_95 * se / h).exp();
        HazardPoint {
            t,
            hazard: h,
            ci_low: h / f,
            ci_high: h * f,
        }
    } else {
        HazardPoint {
            t,
            hazard: 0.0,
            ci_low: 0.0,
            ci_high: Z_95 * se,
        }
    }
}

/// Coefficients (c0, c1, c2) of the kernel used at z, K_z(x) = c0 + c1 x + c2 x² on its
/// support: Epanechnikov inside, Müller–Wang K_q near lo (z = lo + q b) and K_q(−x) near hi
/// (z = hi − q b). Needs b ≤ (hi − lo)/2.
fn kernel_coeffs(z: f64, b: f64, lo: f64, hi: f64) -> [f64; 3] {
    if z < lo + b {
        boundary_coeffs(((z - lo) / b).max(0.0))
    } else if z > hi - b {
        let [c0, c1, c2] = boundary_coeffs(((hi - z) / b).max(0.0));
        [c0, -c1, c2]
    } else {
        [0.75, 0.0, -0.75]
    }
}

/// K_q(x) = 12/(1+q)⁴ (x+1)[x(1−2q) + (3q²−2q+1)/2] expanded in powers of x.
fn boundary_coeffs(q: f64) -> [f64; 3] {
    let a = 12.0 / (1.0 + q).powi(4);
    let alpha = 1.0 - 2.0 * q;
    let c = 0.5 * (3.0 * q * q - 2.0 * q + 1.0);
    [a * c, a * (alpha + c), a * alpha]
}

/// Exact windowed sums on the axis: (ĝ(z), Var ĝ(z)).
fn estimate(zs: &[f64], dh: &[f64], dv: &[f64], b: f64, axis: &Axis, z: f64) -> (f64, f64) {
    let [c0, c1, c2] = kernel_coeffs(z, b, axis.lo, axis.hi);
    let lo = zs.partition_point(|&x| x < z - b);
    let hi = zs.partition_point(|&x| x <= z + b);
    let (mut g, mut v) = (0.0, 0.0);
    for j in lo..hi {
        let x = (z - zs[j]) / b;
        let k = c0 + x * (c1 + c2 * x);
        g += k * dh[j];
        v += k * k * dv[j];
    }
    (g / b, v / (b * b))
}

/// Prefix sums of w, w u, w u² over the increments on the unit coordinate
/// u = (z − lo)/(hi − lo) ∈ [0, 1], so a kernel sum over any window costs two binary searches
/// (the kernels are quadratics), and the sorted entries and exits on the same coordinate for
/// the risk set Y(u).
struct PrefixSums {
    u: Vec<f64>,
    w: Vec<f64>,
    d: Vec<f64>,
    p0: Vec<f64>,
    p1: Vec<f64>,
    p2: Vec<f64>,
    entries: Vec<f64>,
    exits: Vec<f64>,
}

impl PrefixSums {
    fn new(na: &NelsonAalen, axis: &Axis) -> PrefixSums {
        let span = axis.span();
        let unit = |t: f64| (axis.z(t) - axis.lo) / span;
        let m = na.times.len();
        let u: Vec<f64> = na.times.iter().map(|&t| unit(t)).collect();
        let (mut p0, mut p1, mut p2) = (
            Vec::with_capacity(m + 1),
            Vec::with_capacity(m + 1),
            Vec::with_capacity(m + 1),
        );
        let (mut s0, mut s1, mut s2) = (0.0, 0.0, 0.0);
        p0.push(0.0);
        p1.push(0.0);
        p2.push(0.0);
        for (&x, &w) in u.iter().zip(&na.increments) {
            s0 += w;
            s1 += w * x;
            s2 += w * x * x;
            p0.push(s0);
            p1.push(s1);
            p2.push(s2);
        }
        PrefixSums {
            u,
            w: na.increments.clone(),
            d: na.events.iter().map(|&d| d as f64).collect(),
            p0,
            p1,
            p2,
            entries: na.sorted_entries.iter().map(|&e| unit(e)).collect(),
            exits: na.sorted_exits.iter().map(|&t| unit(t)).collect(),
        }
    }

    /// g(u) = (1/β) Σ K_u((u − u_j)/β) w_j on the unit interval, and K_u(0) (the tests check
    /// the prefix sums against the direct sums with it).
    #[cfg(test)]
    fn eval(&self, u: f64, beta: f64) -> (f64, f64) {
        let lo = self.u.partition_point(|&x| x < u - beta);
        let hi = self.u.partition_point(|&x| x <= u + beta);
        self.window_sum(u, beta, lo, hi)
    }

    /// g(u) from the prefix sums over the window lo..hi (the u_j in [u − β, u + β]), and K_u(0).
    fn window_sum(&self, u: f64, beta: f64, lo: usize, hi: usize) -> (f64, f64) {
        let [c0, c1, c2] = kernel_coeffs(u, beta, 0.0, 1.0);
        let w0 = self.p0[hi] - self.p0[lo];
        let w1 = self.p1[hi] - self.p1[lo];
        let w2 = self.p2[hi] - self.p2[lo];
        let sx = (u * w0 - w1) / beta;
        let sxx = (u * u * w0 - 2.0 * u * w1 + w2) / (beta * beta);
        ((c0 * w0 + c1 * sx + c2 * sxx) / beta, c0)
    }

    /// CV score on the unit interval ((hi − lo) · CV(b), b = β (hi − lo)): Simpson's rule for
    /// ∫ g² ω with N = `intervals` (even) intervals, plus the leave-one-out sum.
    /// The integration points increase, so the kernel windows and the risk set are tracked by
    /// moving pointers: O(N + n + m) per score.
    fn cv(&self, beta: f64, weight: CvWeight, intervals: usize) -> f64 {
        let n = intervals;
        let step = 1.0 / n as f64;
        let mut integral = 0.0;
        let (mut lo, mut hi, mut entered, mut left) = (0usize, 0usize, 0usize, 0usize);
        for i in 0..=n {
            let u = if i == n { 1.0 } else { i as f64 * step };
            while lo < self.u.len() && self.u[lo] < u - beta {
                lo += 1;
            }
            while hi < self.u.len() && self.u[hi] <= u + beta {
                hi += 1;
            }
            let g = self.window_sum(u, beta, lo, hi.max(lo)).0;
            let simpson = if i == 0 || i == n {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            let omega = match weight {
                CvWeight::AtRisk => {
                    while entered < self.entries.len() && self.entries[entered] < u {
                        entered += 1;
                    }
                    while left < self.exits.len() && self.exits[left] < u {
                        left += 1;
                    }
                    entered.saturating_sub(left) as f64
                }
                CvWeight::Uniform => 1.0,
            };
            integral += simpson * g * g * omega;
        }
        integral *= step / 3.0;
        let mut cross = 0.0;
        let (mut lo, mut hi) = (0usize, 0usize);
        for ((&u, &w), &d) in self.u.iter().zip(&self.w).zip(&self.d) {
            while lo < self.u.len() && self.u[lo] < u - beta {
                lo += 1;
            }
            while hi < self.u.len() && self.u[hi] <= u + beta {
                hi += 1;
            }
            let (g, k0) = self.window_sum(u, beta, lo, hi);
            let loo = g - k0 * w / beta;
            cross += match weight {
                CvWeight::AtRisk => loo * d,
                CvWeight::Uniform => loo * w,
            };
        }
        integral - 2.0 * cross
    }
}

/// The least-squares cross-validation score CV_ω(b) of the module docs on the axis `scale`
/// (bandwidth in units of that axis, score in the unscaled formula's unit). `NaN` for b ≤ 0,
/// NaN b, b above half the smoothing range, or a log axis with a single event time.
#[cfg(test)]
fn cv_score(na: &NelsonAalen, bandwidth: f64, weight: CvWeight, scale: TimeScale) -> f64 {
    let (Some(&t1), Some(&tm)) = (na.times.first(), na.times.last()) else {
        return f64::NAN;
    };
    let axis = Axis::new(scale, t1, tm);
    let span = axis.span();
    if !(span > 0.0 && bandwidth > 0.0 && bandwidth <= 0.5 * span) {
        return f64::NAN;
    }
    let beta = bandwidth / span;
    PrefixSums::new(na, &axis).cv(beta, weight, cv_intervals(beta)) / span
}

/// Cross-validated scaled bandwidth β = b/R: the best of `k` log-spaced values in
/// [1/2000, 1/2], refined by Brent on ln β between its grid neighbours. Returns (β, at edge).
fn select_bandwidth(ps: &PrefixSums, k: usize, weight: CvWeight) -> (f64, bool) {
    let (lo, hi) = (CV_MIN_FRACTION.ln(), 0.5f64.ln());
    let k = k.max(2);
    let grid: Vec<f64> = (0..k)
        .map(|i| lo + (hi - lo) * i as f64 / (k - 1) as f64)
        .collect();
    let scores: Vec<f64> = grid
        .iter()
        .map(|&l| ps.cv(l.exp(), weight, cv_intervals(l.exp())))
        .collect();
    let mut best = 0;
    for (i, s) in scores.iter().enumerate() {
        if s.total_cmp(&scores[best]).is_lt() {
            best = i;
        }
    }
    let a = grid[best.saturating_sub(1)];
    let b = grid[(best + 1).min(k - 1)];
    // one integration grid for the whole refinement, so the score is continuous in β there
    let intervals = cv_intervals(a.exp());
    let (l, f) = minimize_bounded(|l| ps.cv(l.exp(), weight, intervals), a, b, 1e-6, 80);
    let at_best = ps.cv(grid[best].exp(), weight, intervals);
    let l = if f <= at_best { l } else { grid[best] };
    let edge = (l - lo).abs() < 1e-3 || (hi - l).abs() < 1e-3;
    (l.exp(), edge)
}

/// Kernel-smoothed hazard with cross-validated (or fixed) bandwidth and pointwise 95 %
/// log-scale intervals, evaluated on `opts.grid_points` evenly spaced points over
/// [first event time, last event time] (formulas in the module docs).
///
/// Errors: empty input, length mismatch, NaN/∞/negative values, an exit not after its entry
/// ([`HazardError::InvalidValue`]), no event, or a non-positive / NaN fixed bandwidth or zero
/// grid points ([`HazardError::InvalidArgument`]).
pub fn smoothed_hazard(
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
    opts: &HazardOptions,
) -> Result<SmoothedHazard, HazardError> {
    if opts.grid_points == 0 {
        return Err(HazardError::InvalidArgument(
            "grid_points must be at least 1".into(),
        ));
    }
    if !(opts.undersmoothing > 0.0 && opts.undersmoothing <= 1.0) {
        return Err(HazardError::InvalidArgument(format!(
            "undersmoothing must be in (0, 1], got {}",
            opts.undersmoothing
        )));
    }
    if let Some(b) = opts.bandwidth {
        if !(b > 0.0 && b.is_finite()) {
            return Err(HazardError::InvalidArgument(format!(
                "bandwidth must be positive and finite, got {b}"
            )));
        }
    }
    let na = nelson_aalen(durations, events, entry)?;
    let m = na.times.len();
    let (Some(&t_min), Some(&t_max)) = (na.times.first(), na.times.last()) else {
        return Err(HazardError::NoEvents);
    };
    let scale = if m < 2 { TimeScale::Linear } else { opts.scale };
    let axis = Axis::new(scale, t_min, t_max);
    let half = 0.5 * axis.span();
    let mut cv_bandwidth = None;
    let (bandwidth, bandwidth_method) = match opts.bandwidth {
        Some(b) => (b.min(half), BandwidthMethod::Fixed),
        None if m < MIN_CV_EVENT_TIMES => (half, BandwidthMethod::Fallback),
        None => {
            let ps = PrefixSums::new(&na, &axis);
            let (beta, edge) = select_bandwidth(&ps, opts.cv_candidates, opts.cv_weight);
            let method = if edge {
                BandwidthMethod::CrossValidatedAtGridEdge
            } else {
                BandwidthMethod::CrossValidated
            };
            let b_cv = (beta * axis.span()).min(half);
            cv_bandwidth = Some(b_cv);
            (opts.undersmoothing * b_cv, method)
        }
    };
    let zs: Vec<f64> = na.times.iter().map(|&t| axis.z(t)).collect();
    let g = opts.grid_points;
    let points = (0..g)
        .map(|i| {
            let t = if g == 1 {
                t_min
            } else if i == g - 1 {
                t_max
            } else {
                t_min + (t_max - t_min) * i as f64 / (g - 1) as f64
            };
            let z = axis.z(t).clamp(axis.lo, axis.hi);
            let (gz, v) = estimate(
                &zs,
                &na.increments,
                &na.variance_increments,
                bandwidth,
                &axis,
                z,
            );
            let j = axis.jacobian(t);
            make_point(t, gz * j, v * j * j)
        })
        .collect();
    let events_total = na.events.iter().map(|&d| d as usize).sum();
    Ok(SmoothedHazard {
        bandwidth,
        bandwidth_method,
        cv_bandwidth,
        scale,
        points,
        events: events_total,
        t_min,
        t_max,
        axis,
        zs,
        dh: na.increments,
        dv: na.variance_increments,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// SplitMix64 (Steele, Lea & Flood 2014): deterministic test sampling.
    struct SplitMix64(u64);

    impl SplitMix64 {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform on (0, 1).
        fn uniform(&mut self) -> f64 {
            ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn exp(&mut self, mean: f64) -> f64 {
            -mean * self.uniform().ln()
        }
        fn weibull(&mut self, k: f64, lambda: f64) -> f64 {
            lambda * (-self.uniform().ln()).powf(1.0 / k)
        }
    }

    /// Weibull(k, λ) lifetimes, a third of them entering late (uniform on (0, 300), kept only
    /// when still alive), censored by an independent exponential after entry.
    fn weibull_sample(
        seed: u64,
        n: usize,
        k: f64,
        lambda: f64,
        cens_mean: f64,
    ) -> (Vec<f64>, Vec<bool>, Vec<f64>) {
        let mut rng = SplitMix64(seed);
        let (mut t, mut d, mut e) = (Vec::new(), Vec::new(), Vec::new());
        while t.len() < n {
            let x = rng.weibull(k, lambda);
            let entry = if rng.uniform() < 1.0 / 3.0 {
                300.0 * rng.uniform()
            } else {
                0.0
            };
            if x <= entry {
                continue;
            }
            let c = entry + rng.exp(cens_mean);
            t.push(x.min(c));
            d.push(x <= c);
            e.push(entry);
        }
        (t, d, e)
    }

    fn quantile(v: &[f64], q: f64) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)]
    }

    /// Numerically integrates x^p K(x) over the support of the kernel used at t.
    fn kernel_moment(t: f64, b: f64, r: f64, p: i32) -> f64 {
        let [c0, c1, c2] = kernel_coeffs(t, b, 0.0, r);
        let (lo, hi) = if t < b {
            (-1.0, t / b)
        } else if t > r - b {
            (-(r - t) / b, 1.0)
        } else {
            (-1.0, 1.0)
        };
        let n = 20000;
        let h = (hi - lo) / n as f64;
        (0..=n)
            .map(|i| {
                let x = lo + h * i as f64;
                let w = if i == 0 || i == n { 0.5 } else { 1.0 };
                w * x.powi(p) * (c0 + c1 * x + c2 * x * x)
            })
            .sum::<f64>()
            * h
    }

    #[test]
    fn boundary_kernels_have_unit_mass_and_zero_mean() {
        for &t in &[0.0, 0.1, 0.37, 0.5, 0.99, 1.0, 2.0, 9.0, 9.5, 9.9, 10.0] {
            let m0 = kernel_moment(t, 1.0, 10.0, 0);
            let m1 = kernel_moment(t, 1.0, 10.0, 1);
            assert!((m0 - 1.0).abs() < 1e-6, "t={t}: mass {m0}");
            assert!(m1.abs() < 1e-6, "t={t}: first moment {m1}");
        }
        // q = 1 is the Epanechnikov kernel
        assert_eq!(boundary_coeffs(1.0), [0.75, 0.0, -0.75]);
    }

    #[test]
    fn nelson_aalen_with_ties_and_truncation() {
        // subjects: (entry, exit, event)
        let e = [0.0, 0.0, 2.5, 0.0, 1.0];
        let t = [1.0, 3.0, 3.0, 2.0, 4.0];
        let d = [true, true, true, false, true];
        let na = nelson_aalen(&t, &d, Some(&e)).unwrap();
        assert_eq!(na.times, vec![1.0, 3.0, 4.0]);
        assert_eq!(na.events, vec![1, 2, 1]);
        // at 1: subjects 0,1,3 (entry 0 < 1 ≤ T); subject 4 enters at 1 (not < 1), 2 at 2.5
        // at 3: subjects 1, 2, 4; at 4: subject 4
        assert_eq!(na.at_risk, vec![3, 3, 1]);
        assert!((na.increments[1] - 2.0 / 3.0).abs() < 1e-15);
        assert!((na.variance_increments[1] - 2.0 / 9.0).abs() < 1e-15);
        assert!((na.cumulative_hazard(3.5) - (1.0 / 3.0 + 2.0 / 3.0)).abs() < 1e-15);
    }

    #[test]
    fn rejects_invalid_input() {
        let ok = HazardOptions::default();
        assert_eq!(
            smoothed_hazard(&[], &[], None, &ok).unwrap_err(),
            HazardError::Empty
        );
        assert!(matches!(
            smoothed_hazard(&[1.0], &[true, false], None, &ok),
            Err(HazardError::LengthMismatch { .. })
        ));
        assert!(matches!(
            smoothed_hazard(&[1.0, f64::NAN], &[true, false], None, &ok),
            Err(HazardError::InvalidValue { index: 1, .. })
        ));
        assert!(matches!(
            smoothed_hazard(&[1.0, -2.0], &[true, false], None, &ok),
            Err(HazardError::InvalidValue { index: 1, .. })
        ));
        assert!(matches!(
            smoothed_hazard(&[1.0, 2.0], &[true, false], Some(&[0.5, 2.0]), &ok),
            Err(HazardError::InvalidValue { index: 1, .. })
        ));
        assert!(matches!(
            smoothed_hazard(&[0.0], &[true], None, &ok),
            Err(HazardError::InvalidValue { index: 0, .. })
        ));
        assert_eq!(
            smoothed_hazard(&[1.0, 2.0], &[false, false], None, &ok).unwrap_err(),
            HazardError::NoEvents
        );
        let bad = HazardOptions {
            bandwidth: Some(-1.0),
            ..HazardOptions::default()
        };
        assert!(matches!(
            smoothed_hazard(&[1.0], &[true], None, &bad),
            Err(HazardError::InvalidArgument(_))
        ));
        assert!(HazardError::NoEvents.to_string().contains("no events"));
    }

    #[test]
    fn few_events_fall_back_to_half_range() {
        let t = [1.0, 2.0, 3.0, 4.0, 5.0];
        let d = [true, false, true, true, false];
        let s = smoothed_hazard(&t, &d, None, &HazardOptions::default()).unwrap();
        assert_eq!(s.bandwidth_method, BandwidthMethod::Fallback);
        assert_eq!(s.scale, TimeScale::Log);
        assert_eq!(s.bandwidth, 0.5 * 4f64.ln());
        assert!(s.at(0.5).is_nan());
        let lin = HazardOptions {
            scale: TimeScale::Linear,
            ..HazardOptions::default()
        };
        let s = smoothed_hazard(&t, &d, None, &lin).unwrap();
        assert_eq!(s.bandwidth, 2.0);
        assert!(s.at(0.5) > 0.0);
        assert_eq!(s.events, 3);
        assert_eq!(s.points.len(), GRID_POINTS_DEFAULT);
        assert_eq!((s.t_min, s.t_max), (1.0, 4.0));
        assert!(s.at(5.0).is_nan() && s.at(-1.0).is_nan() && s.at(f64::NAN).is_nan());
        for p in &s.points {
            assert!(p.hazard >= 0.0 && p.ci_low <= p.hazard && p.hazard <= p.ci_high);
        }
    }

    #[test]
    fn fixed_bandwidth_is_used_and_capped() {
        let (t, d, e) = weibull_sample(3, 500, 1.0, 1000.0, 3000.0);
        let o = HazardOptions {
            bandwidth: Some(200.0),
            scale: TimeScale::Linear,
            ..HazardOptions::default()
        };
        let s = smoothed_hazard(&t, &d, Some(&e), &o).unwrap();
        assert_eq!(s.bandwidth, 200.0);
        assert_eq!(s.bandwidth_method, BandwidthMethod::Fixed);
        let o = HazardOptions {
            bandwidth: Some(1e12),
            ..o
        };
        let s = smoothed_hazard(&t, &d, Some(&e), &o).unwrap();
        assert_eq!(s.bandwidth, 0.5 * s.t_max);
        let o = HazardOptions {
            bandwidth: Some(1e12),
            ..HazardOptions::default()
        };
        let s = smoothed_hazard(&t, &d, Some(&e), &o).unwrap();
        assert_eq!(s.bandwidth, 0.5 * (s.t_max.ln() - s.t_min.ln()));
        // a single distinct event time cannot be smoothed on the log axis
        let s =
            smoothed_hazard(&[2.0, 3.0], &[true, false], None, &HazardOptions::default()).unwrap();
        assert_eq!(s.scale, TimeScale::Linear);
    }

    #[test]
    fn constant_hazard_is_recovered() {
        // exponential with rate 1e-3: the smoothed hazard is near 1e-3 in the bulk
        let (t, d, e) = weibull_sample(11, 4000, 1.0, 1000.0, 4000.0);
        let s = smoothed_hazard(&t, &d, Some(&e), &HazardOptions::default()).unwrap();
        let ev: Vec<f64> = t.iter().zip(&d).filter(|p| *p.1).map(|p| *p.0).collect();
        let (lo, hi) = (quantile(&ev, 0.05), quantile(&ev, 0.8));
        for p in s.points.iter().filter(|p| p.t >= lo && p.t <= hi) {
            assert!((p.hazard - 1e-3).abs() < 3e-4, "{p:?}");
        }
    }

    #[test]
    fn prefix_sum_cv_matches_direct_sums() {
        let (t, d, e) = weibull_sample(5, 800, 1.5, 1000.0, 3000.0);
        let na = nelson_aalen(&t, &d, Some(&e)).unwrap();
        let r = *na.times.last().unwrap();
        for scale in [TimeScale::Linear, TimeScale::Log] {
            let axis = Axis::new(scale, na.times[0], r);
            let span = axis.span();
            let zs: Vec<f64> = na.times.iter().map(|&t| axis.z(t)).collect();
            let ps = PrefixSums::new(&na, &axis);
            for &b in &[0.01 * span, 0.1 * span, 0.4 * span] {
                for &u in &[0.0, 0.003, 0.05, 0.3, 0.5, 0.97, 1.0] {
                    let (g, _) = ps.eval(u, b / span);
                    let z = axis.lo + u * span;
                    let (h, _) =
                        estimate(&zs, &na.increments, &na.variance_increments, b, &axis, z);
                    assert!(
                        (g / span - h).abs() <= 1e-9 * h.abs().max(1e-6),
                        "{scale:?} {u} {b}: {g} {h}"
                    );
                }
            }
            assert!(cv_score(&na, 0.1 * span, CvWeight::AtRisk, scale).is_finite());
            assert!(cv_score(&na, 0.1 * span, CvWeight::Uniform, scale).is_finite());
            assert!(cv_score(&na, 0.6 * span, CvWeight::AtRisk, scale).is_nan());
        }
        for &x in &[0.5, 100.0, 1000.0, r] {
            let direct = (0..t.len()).filter(|&i| e[i] < x && x <= t[i]).count();
            assert_eq!(na.at_risk(x), direct);
        }
    }

    /// Coverage of the analytic Weibull hazard by the pointwise CI over the central 90 % of
    /// the event times (5th to 95th percentile).
    fn golden_coverage(seed: u64, k: f64, cens_mean: f64) -> (f64, f64, SmoothedHazard) {
        let lambda = 1000.0;
        let (t, d, e) = weibull_sample(seed, 3000, k, lambda, cens_mean);
        let censored = d.iter().filter(|&&x| !x).count() as f64 / d.len() as f64;
        let s = smoothed_hazard(&t, &d, Some(&e), &HazardOptions::default()).unwrap();
        let ev: Vec<f64> = t.iter().zip(&d).filter(|p| *p.1).map(|p| *p.0).collect();
        let (lo, hi) = (quantile(&ev, 0.05), quantile(&ev, 0.95));
        let inside: Vec<&HazardPoint> =
            s.points.iter().filter(|p| p.t >= lo && p.t <= hi).collect();
        let covered = inside
            .iter()
            .filter(|p| {
                let h = k / lambda * (p.t / lambda).powf(k - 1.0);
                p.ci_low <= h && h <= p.ci_high
            })
            .count();
        (covered as f64 / inside.len() as f64, censored, s)
    }

    /// Golden test over 10 simulated data sets (n = 3000, λ = 1000, ~25 % exponential
    /// censoring, a third of the subjects entering late): the analytic hazard is inside the
    /// pointwise interval at ≥ 90 % of the grid points of the central 90 % of the event times
    /// in at least 8 of the 10 data sets, and at ≥ 93 % of them on average. (Pointwise
    /// intervals have errors correlated over a bandwidth, so a fraction covered per data set
    /// varies: measured over seeds 1..=40, 35/40 (k = 1.5) and 34/40 (k = 0.7) data sets reach
    /// 90 %, mean coverage 0.96.)
    fn golden(k: f64, cens_mean: f64) {
        let mut pass = 0;
        let mut total = 0.0;
        for seed in 1..=10 {
            let (cov, cens, s) = golden_coverage(seed, k, cens_mean);
            assert!((0.18..0.32).contains(&cens), "censoring {cens}");
            assert_eq!(s.bandwidth_method, BandwidthMethod::CrossValidated);
            if cov >= 0.9 {
                pass += 1;
            }
            total += cov;
        }
        assert!(
            pass >= 8,
            "k = {k}: {pass}/10 data sets reach 90 % coverage"
        );
        assert!(
            total / 10.0 >= 0.93,
            "k = {k}: mean coverage {}",
            total / 10.0
        );
    }

    #[test]
    fn golden_weibull_increasing_hazard_within_ci() {
        golden(1.5, 2600.0);
    }

    #[test]
    fn golden_weibull_decreasing_hazard_within_ci() {
        golden(0.7, 3500.0);
    }

    proptest! {
        // no failure persistence: the tests must not write files next to the sources
        #![proptest_config(ProptestConfig {
            cases: 48,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// Any valid censored, truncated sample gives a finite, non-negative estimate with
        /// ordered intervals, on the requested grid, and `at` agrees with the grid.
        #[test]
        fn estimate_is_well_formed(seed in 0u64..1_000_000, n in 1usize..300, k in 0.3f64..4.0) {
            let (t, d, e) = weibull_sample(seed, n, k, 50.0, 150.0);
            match smoothed_hazard(&t, &d, Some(&e), &HazardOptions { grid_points: 17, ..HazardOptions::default() }) {
                Err(err) => prop_assert_eq!(err, HazardError::NoEvents),
                Ok(s) => {
                    prop_assert_eq!(s.points.len(), 17);
                    // The default axis is log time: the bandwidth is in log units, so it is not
                    // bounded by a fraction of t_max (n = 2, k = 0.3 gives t_max below it).
                    prop_assert!(s.bandwidth.is_finite() && s.bandwidth > 0.0);
                    for p in &s.points {
                        prop_assert!(p.hazard.is_finite() && p.hazard >= 0.0);
                        prop_assert!(p.ci_low <= p.hazard && p.hazard <= p.ci_high);
                        prop_assert!(p.t >= s.t_min && p.t <= s.t_max);
                        let a = s.at(p.t);
                        prop_assert!((a - p.hazard).abs() <= 1e-12 * p.hazard.max(1e-300));
                    }
                }
            }
        }

        /// Scaling time by c scales the hazard by 1/c (the estimator is scale-equivariant).
        #[test]
        fn time_scale_equivariance(seed in 0u64..1_000_000, c in 0.01f64..100.0) {
            let (t, d, e) = weibull_sample(seed, 120, 1.3, 50.0, 150.0);
            prop_assume!(d.iter().any(|&x| x));
            let o = HazardOptions { grid_points: 9, ..HazardOptions::default() };
            let a = smoothed_hazard(&t, &d, Some(&e), &o).unwrap();
            let ts: Vec<f64> = t.iter().map(|x| x * c).collect();
            let es: Vec<f64> = e.iter().map(|x| x * c).collect();
            let b = smoothed_hazard(&ts, &d, Some(&es), &o).unwrap();
            prop_assert_eq!(a.bandwidth_method, b.bandwidth_method);
            // the log axis only shifts: same bandwidth; the linear axis would scale it by c
            prop_assert_eq!(a.scale, TimeScale::Log);
            let (ba, bb) = (a.cv_bandwidth.unwrap_or(a.bandwidth), b.cv_bandwidth.unwrap_or(b.bandwidth));
            if (bb / ba - 1.0).abs() >= 1e-4 {
                // rounding may flip the grid search between two near-tied minima of CV, each
                // refined on its own integration grid: then both bandwidths score the same on
                // the unscaled data, to the accuracy of that integration (~1e-4 relative;
                // seed 866025, c = 85.37 ties at 3.7e-5)
                let na = nelson_aalen(&t, &d, Some(&e)).unwrap();
                let (sa, sb) = (
                    cv_score(&na, ba, CvWeight::AtRisk, TimeScale::Log),
                    cv_score(&na, bb, CvWeight::AtRisk, TimeScale::Log),
                );
                prop_assert!((sa - sb).abs() <= 1e-4 * sa.abs(), "{} {}: CV {} {}", ba, bb, sa, sb);
            } else {
                for (p, q) in a.points.iter().zip(&b.points) {
                    prop_assert!((q.hazard * c - p.hazard).abs() <= 1e-3 * p.hazard.max(1e-12));
                }
            }
        }
    }
}
