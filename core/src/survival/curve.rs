//! The one survival-curve abstraction of the crate: [`ConditionalSurvival`].
//!
//! Everything that models a node's up-session length implements it: the Kaplan-Meier fits
//! ([`KmFit`](crate::survival::km::KmFit), [`KmView`](crate::survival::km::KmView)), the pooled
//! hazard and the shrunk node curves of [`shrinkage`](crate::survival::shrinkage), the parametric
//! fits of [`parametric`](crate::survival::parametric), and the curves the scheduler loads from
//! priors or builds from parameters: [`Exponential`], [`Weibull`], [`StepCurve`] and
//! [`LinearCurve`]. The policy asks one question of a node up for `a` seconds: the conditional
//! survival `S(t | a) = S(a + t) / S(a)` (design note "The problem", section Hazard).
//!
//! # Edge answers (the same for every implementation)
//!
//! | input | [`conditional(a, t)`](ConditionalSurvival::conditional) |
//! |---|---|
//! | `t <= 0` or `t` NaN | exactly `1` |
//! | `a < 0` or `a` NaN | `a` is read as `0` |
//! | `a = 0` | `S(t) / S(0)`, i.e. `S(t)` (every curve has `S(0) = 1` except a step curve with a drop at time 0) |
//! | `a` at or past the last knot, `S(a) > 0` | `S(a + t) / S(a)` with the curve's own continuation: `exp(-tail_hazard * t)` for step and linear curves (a Kaplan-Meier curve is flat there: `1`), the closed form for parametric curves |
//! | `S(a) = 0` (the node outlived the curve's support) | the tail: `exp(-tail_hazard * t)`, see [`ConditionalSurvival::tail_hazard`] (`1` for a curve that is flat after its last point, `0` for an infinite tail hazard) |
//!
//! The answer is always in `[0, 1]`, never NaN. Callers that must tell "the curve says nothing
//! at this age" apart (Kaplan-Meier validation against lifelines, where `S(t | a)` is undefined
//! once `S(a) = 0`) use [`ConditionalSurvival::conditional_checked`], which answers `None`
//! there instead. [`ConditionalSurvival::conditional_grid`] writes the same values as
//! [`ConditionalSurvival::conditional`] on a 17-point grid (the policy's hot path).
//!
//! [`survival`](ConditionalSurvival::survival) itself is total too: values in `[0, 1]`,
//! non-increasing, `S(t) = 1` for `t < 0` or NaN, and `S(0) = 1` (except a step curve with a
//! drop at time 0, which is right-continuous there).

/// Number of cells of the Riemann sum that approximates the expected unplanned loss `L_i`.
pub const CELLS: usize = 16;

/// Number of grid points (`CELLS + 1`) at which [`ConditionalSurvival::conditional_grid`]
/// evaluates the curve.
pub const GRID_POINTS: usize = CELLS + 1;

/// A node's up-session survival function, queried conditionally on the node's current uptime.
///
/// Every edge (age 0, ages past the last knot, `S(a) = 0`, non-positive or NaN inputs) has one
/// answer, documented in the [module docs](self) and shared by all implementations.
pub trait ConditionalSurvival: Send + Sync {
    /// Unconditional survival `S(t) = P(session > t)`: in `[0, 1]`, non-increasing, 1 for
    /// `t < 0` or NaN (and at 0, unless a step curve drops at time 0).
    fn survival(&self, t: f64) -> f64;

    /// The hazard per second the curve assumes beyond its support, i.e. where `S` has reached
    /// 0 (and, for step and linear curves, after the last knot): a node that has outlived the
    /// curve gets `S(t | a) = exp(-tail_hazard * t)`. `0` reads the curve as flat there (no
    /// hazard observed: the Kaplan-Meier convention), `f64::INFINITY` as "already gone".
    fn tail_hazard(&self) -> f64;

    /// Conditional survival `S(t | a) = S(a + t) / S(a)`: the probability that a node up for
    /// `age` seconds is still up `t` seconds from now. In `[0, 1]`, never NaN; edges in the
    /// [module docs](self): `t <= 0` gives 1, a negative age is 0, and when `S(age) = 0` the
    /// answer is the tail `exp(-tail_hazard * t)`.
    fn conditional(&self, age: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        let a = nonneg(age);
        let sa = self.survival(a);
        if sa > 0.0 {
            clamp01(self.survival(a + t) / sa)
        } else {
            tail(self.tail_hazard(), t)
        }
    }

    /// [`Self::conditional`] where it is defined by the curve itself: `None` when `S(age) = 0`
    /// (the ratio is 0/0; [`Self::conditional`] answers the tail there). For Kaplan-Meier
    /// checks against lifelines, which leaves `S(t | a)` undefined past the last event.
    fn conditional_checked(&self, age: f64, t: f64) -> Option<f64> {
        (self.survival(nonneg(age)) > 0.0).then(|| self.conditional(age, t))
    }

    /// The curve as data ([`CurveSpec`]), which rebuilds it bit for bit; `None` for a curve
    /// that is not one of this module's kinds (a fit, a shrunken view).
    fn spec(&self) -> Option<CurveSpec> {
        None
    }

    /// Writes `S(k * step | age)` for `k = 0..=16` into `out` (so `out[0] = 1`), the same values
    /// as [`Self::conditional`].
    ///
    /// This is the only curve call on the policy's hot path (one per `E_i`); implementations
    /// override it to share work between the 17 points (one `exp` and a running product for
    /// [`Exponential`], one binary search and a forward walk for [`StepCurve`]). The default
    /// evaluates `S(age)` once and divides, and uses the tail when `S(age) = 0`.
    fn conditional_grid(&self, age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let age = nonneg(age);
        let step = nonneg(step);
        let sa = self.survival(age);
        out[0] = 1.0;
        if sa > 0.0 {
            let inv = 1.0 / sa;
            for (k, o) in out.iter_mut().enumerate().skip(1) {
                *o = clamp01(self.survival(age + k as f64 * step) * inv);
            }
        } else {
            let rate = self.tail_hazard();
            for (k, o) in out.iter_mut().enumerate().skip(1) {
                *o = tail(rate, k as f64 * step);
            }
        }
    }
}

impl<T: ConditionalSurvival + ?Sized> ConditionalSurvival for &T {
    fn survival(&self, t: f64) -> f64 {
        (**self).survival(t)
    }
    fn tail_hazard(&self) -> f64 {
        (**self).tail_hazard()
    }
    fn conditional(&self, age: f64, t: f64) -> f64 {
        (**self).conditional(age, t)
    }
    fn conditional_checked(&self, age: f64, t: f64) -> Option<f64> {
        (**self).conditional_checked(age, t)
    }
    fn conditional_grid(&self, age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        (**self).conditional_grid(age, step, out)
    }
    fn spec(&self) -> Option<CurveSpec> {
        (**self).spec()
    }
}

/// `exp(-rate * t)` for `t > 0`: 1 for a zero (or negative/NaN) rate, 0 for an infinite one,
/// whatever `t` (so `t = inf` with a flat tail is 1, not NaN).
#[inline]
pub(crate) fn tail(rate: f64, t: f64) -> f64 {
    if t > 0.0 && rate > 0.0 {
        clamp01((-rate * t).exp())
    } else {
        1.0
    }
}

/// Maps NaN and negative values to 0.
#[inline]
pub(crate) fn nonneg(x: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// Clamps into [0, 1], mapping NaN to 0.
#[inline]
pub(crate) fn clamp01(x: f64) -> f64 {
    if x >= 1.0 {
        1.0
    } else if x > 0.0 {
        x
    } else {
        0.0
    }
}

/// Exponential sessions (constant hazard `1 / mean`): `S(t) = exp(-t / mean)`.
///
/// Memoryless: `S(t | a) = exp(-t / mean)` whatever the age. A non-positive or NaN `mean` means
/// the node fails at once (`S(t) = 0` for `t > 0`); an infinite mean means it never fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Exponential {
    /// Mean session length in seconds.
    pub mean: f64,
}

impl Exponential {
    /// The exponential with hazard `rate` per second (mean `1 / rate`; rate 0 never fails).
    pub fn from_rate(rate: f64) -> Exponential {
        let mean = if rate > 0.0 {
            1.0 / rate
        } else if rate == 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
        Exponential { mean }
    }

    /// The hazard rate `1 / mean` per second (infinite for a non-positive or NaN mean).
    pub fn rate(&self) -> f64 {
        if self.mean > 0.0 {
            1.0 / self.mean
        } else {
            f64::INFINITY
        }
    }
}

impl ConditionalSurvival for Exponential {
    fn spec(&self) -> Option<CurveSpec> {
        Some(CurveSpec::Exponential { mean_s: self.mean })
    }

    fn survival(&self, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        clamp01((-t * self.rate()).exp())
    }

    /// The constant hazard `1 / mean` (infinite for a non-positive or NaN mean).
    fn tail_hazard(&self) -> f64 {
        self.rate()
    }

    /// Memoryless: `S(t | a) = S(t)` for every age.
    fn conditional(&self, _age: f64, t: f64) -> f64 {
        self.survival(t)
    }

    /// Defined at every age (memoryless) unless the mean is non-positive, where `S(a) = 0` for
    /// `a > 0`.
    fn conditional_checked(&self, age: f64, t: f64) -> Option<f64> {
        (self.rate().is_finite() || nonneg(age) == 0.0).then(|| self.conditional(age, t))
    }

    fn conditional_grid(&self, _age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let q = self.survival(nonneg(step));
        let mut s = 1.0;
        for o in out.iter_mut() {
            *o = s;
            s *= q;
        }
    }
}

/// Weibull sessions: `S(t) = exp(-(t / scale)^shape)`.
///
/// `shape < 1` is a decreasing hazard (laptops and volunteer desktops: the longer idle, the
/// safer), `shape > 1` an increasing one (spot instances reclaimed around a typical age),
/// `shape = 1` the exponential. The conditional is evaluated in cumulative-hazard form,
/// `S(t | a) = exp(H(a) - H(a + t))` with `H(x) = (x / scale)^shape`, which stays accurate at
/// ages where `S(a)` itself underflows. Non-finite or non-positive parameters give `S = 1`
/// (no failure information); use [`Weibull::new`] to reject them instead.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weibull {
    /// Shape `k > 0`.
    pub shape: f64,
    /// Scale `lambda > 0`, seconds.
    pub scale: f64,
}

impl Weibull {
    /// A Weibull curve, or `None` unless both parameters are finite and positive.
    pub fn new(shape: f64, scale: f64) -> Option<Weibull> {
        (shape.is_finite() && shape > 0.0 && scale.is_finite() && scale > 0.0)
            .then_some(Weibull { shape, scale })
    }

    fn valid(&self) -> bool {
        self.shape.is_finite() && self.shape > 0.0 && self.scale.is_finite() && self.scale > 0.0
    }

    /// Cumulative hazard `H(x) = (x / scale)^shape` (0 for invalid parameters).
    #[inline]
    pub fn cumulative_hazard(&self, x: f64) -> f64 {
        if !self.valid() {
            return 0.0;
        }
        let z = nonneg(x) / self.scale;
        let k = self.shape;
        if k == 1.0 {
            z
        } else if k == 2.0 {
            z * z
        } else if k == 0.5 {
            z.sqrt()
        } else {
            z.powf(k)
        }
    }

    /// Density `f(t) = (k / lambda) (t / lambda)^(k-1) exp(-(t / lambda)^k)` (0 if invalid).
    pub fn density(&self, t: f64) -> f64 {
        if !self.valid() || t.is_nan() || t < 0.0 {
            return 0.0;
        }
        let z = t / self.scale;
        (self.shape / self.scale) * z.powf(self.shape - 1.0) * (-z.powf(self.shape)).exp()
    }
}

impl ConditionalSurvival for Weibull {
    fn spec(&self) -> Option<CurveSpec> {
        Some(CurveSpec::Weibull {
            shape: self.shape,
            scale_s: self.scale,
        })
    }

    fn survival(&self, t: f64) -> f64 {
        clamp01((-self.cumulative_hazard(t)).exp())
    }

    /// The limit of the hazard `k t^(k-1) / lambda^k` as `t -> inf`: 0 for `k < 1`, `1 / lambda`
    /// for `k = 1`, infinite for `k > 1` (0 for invalid parameters, where `S = 1`). Never used
    /// by [`ConditionalSurvival::conditional`], which is exact at every age.
    fn tail_hazard(&self) -> f64 {
        if !self.valid() || self.shape < 1.0 {
            0.0
        } else if self.shape == 1.0 {
            1.0 / self.scale
        } else {
            f64::INFINITY
        }
    }

    /// `exp(H(a) - H(a + t))`: exact even where `S(a)` underflows to 0.
    fn conditional(&self, age: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        let a = nonneg(age);
        clamp01((self.cumulative_hazard(a) - self.cumulative_hazard(a + t)).exp())
    }

    /// Always defined: `S(a) > 0` at every finite age (the conditional is computed from the
    /// cumulative hazard, so an underflowing `S(a)` does not matter).
    fn conditional_checked(&self, age: f64, t: f64) -> Option<f64> {
        Some(self.conditional(age, t))
    }

    fn conditional_grid(&self, age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let a = nonneg(age);
        let step = nonneg(step);
        let h0 = self.cumulative_hazard(a);
        out[0] = 1.0;
        for (k, o) in out.iter_mut().enumerate().skip(1) {
            *o = clamp01((h0 - self.cumulative_hazard(a + k as f64 * step)).exp());
        }
    }
}

/// Why a [`StepCurve`] could not be built.
#[derive(Debug, Clone, PartialEq)]
pub enum CurveError {
    /// `times` and `survival` differ in length.
    LengthMismatch {
        /// Number of times.
        times: usize,
        /// Number of survival values.
        survival: usize,
    },
    /// A time is negative or not finite, or times are not strictly increasing (index given).
    BadTime(usize),
    /// A survival value is outside [0, 1] or larger than its predecessor (index given).
    BadSurvival(usize),
    /// The tail rate is negative or not finite.
    BadTailRate,
}

impl std::fmt::Display for CurveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CurveError::LengthMismatch { times, survival } => {
                write!(f, "{times} times but {survival} survival values")
            }
            CurveError::BadTime(i) => {
                write!(f, "time {i} is negative, not finite or not increasing")
            }
            CurveError::BadSurvival(i) => {
                write!(f, "survival {i} is outside [0, 1] or increases")
            }
            CurveError::BadTailRate => write!(f, "tail rate must be finite and non-negative"),
        }
    }
}

impl std::error::Error for CurveError {}

/// A right-continuous step survival function (e.g. a Kaplan-Meier estimate).
///
/// `S(t) = 1` for `t < times[0]`, `S(t) = survival[i]` for `times[i] <= t < times[i + 1]`.
/// After the last point the curve is flat, unless a tail hazard `rate` is given, in which case
/// `S(t) = survival[n-1] * exp(-rate (t - times[n-1]))`. For ages at or beyond the last point
/// (and for ages where the curve has already reached 0) the conditional is the tail's:
/// `S(t | a) = exp(-rate t)`, or 1 without a tail (flat: no observed hazard there).
#[derive(Debug, Clone, PartialEq)]
pub struct StepCurve {
    times: Vec<f64>,
    survival: Vec<f64>,
    tail_rate: f64,
}

impl StepCurve {
    /// A step curve from jump times (seconds, strictly increasing, finite, `>= 0`), the survival
    /// value from each time on (non-increasing, in [0, 1]) and an optional exponential tail
    /// hazard per second.
    pub fn new(
        times: Vec<f64>,
        survival: Vec<f64>,
        tail_rate: Option<f64>,
    ) -> Result<StepCurve, CurveError> {
        if times.len() != survival.len() {
            return Err(CurveError::LengthMismatch {
                times: times.len(),
                survival: survival.len(),
            });
        }
        let mut prev_t = f64::NEG_INFINITY;
        let mut prev_s = 1.0;
        for (i, (&t, &s)) in times.iter().zip(&survival).enumerate() {
            if !(t.is_finite() && t >= 0.0 && t > prev_t) {
                return Err(CurveError::BadTime(i));
            }
            if !((0.0..=1.0).contains(&s) && s <= prev_s) {
                return Err(CurveError::BadSurvival(i));
            }
            prev_t = t;
            prev_s = s;
        }
        let tail_rate = match tail_rate {
            None => 0.0,
            Some(r) if r.is_finite() && r >= 0.0 => r,
            Some(_) => return Err(CurveError::BadTailRate),
        };
        Ok(StepCurve {
            times,
            survival,
            tail_rate,
        })
    }

    /// Jump times, seconds.
    pub fn times(&self) -> &[f64] {
        &self.times
    }

    /// Survival value from each jump time on.
    pub fn values(&self) -> &[f64] {
        &self.survival
    }

    /// Exponential tail hazard per second after the last point (0 = flat).
    pub fn tail_rate(&self) -> f64 {
        self.tail_rate
    }

    /// Index of the first jump time strictly greater than `t` (so the value at `t` is
    /// `survival[idx - 1]`, or 1 when `idx = 0`).
    #[inline]
    fn upper(&self, t: f64) -> usize {
        self.times.partition_point(|&x| x <= t)
    }

    #[inline]
    fn value_at(&self, idx: usize, t: f64) -> f64 {
        let n = self.times.len();
        if idx < n || self.tail_rate == 0.0 {
            if idx == 0 {
                1.0
            } else {
                self.survival[idx - 1]
            }
        } else if n == 0 {
            // No knot: the tail starts at age 0 (the exponential with the tail rate).
            (-self.tail_rate * t).exp()
        } else {
            self.survival[n - 1] * (-self.tail_rate * (t - self.times[n - 1])).exp()
        }
    }

    /// True when the curve carries no information at `age`: at or past the last point, or
    /// already at 0.
    #[inline]
    fn past_support(&self, idx: usize) -> bool {
        let n = self.times.len();
        idx >= n || (idx > 0 && self.survival[idx - 1] <= 0.0)
    }
}

impl ConditionalSurvival for StepCurve {
    fn spec(&self) -> Option<CurveSpec> {
        Some(CurveSpec::of_steps(self, false))
    }

    fn survival(&self, t: f64) -> f64 {
        if t >= 0.0 {
            self.value_at(self.upper(t), t)
        } else {
            // Before the origin (or NaN): 1, even when the curve drops at time 0.
            1.0
        }
    }

    /// The exponential tail rate after the last knot (0 without a tail: flat).
    fn tail_hazard(&self) -> f64 {
        self.tail_rate
    }

    fn conditional(&self, age: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        let a = nonneg(age);
        let ia = self.upper(a);
        if self.past_support(ia) {
            return tail(self.tail_rate, t);
        }
        let sa = self.value_at(ia, a);
        let x = a + t;
        clamp01(self.value_at(self.upper(x), x) / sa)
    }

    fn conditional_grid(&self, age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let a = nonneg(age);
        let step = nonneg(step);
        let ia = self.upper(a);
        out[0] = 1.0;
        if self.past_support(ia) {
            let q = (-self.tail_rate * step).exp();
            let mut s = 1.0;
            for o in out.iter_mut().skip(1) {
                s *= q;
                *o = clamp01(s);
            }
            return;
        }
        let inv = 1.0 / self.value_at(ia, a);
        let n = self.times.len();
        let mut idx = ia;
        for (k, o) in out.iter_mut().enumerate().skip(1) {
            let x = a + k as f64 * step;
            // Walk forward a few points, then fall back to a binary search on the rest.
            let mut hops = 0;
            while idx < n && self.times[idx] <= x && hops < 8 {
                idx += 1;
                hops += 1;
            }
            if idx < n && self.times[idx] <= x {
                idx += self.times[idx..].partition_point(|&y| y <= x);
            }
            *o = clamp01(self.value_at(idx, x) * inv);
        }
    }
}

/// A step curve read as piecewise linear: `S` falls linearly from one knot's value to the next
/// (from `S(0) = 1` to the first knot), then follows the step curve's exponential tail.
///
/// A Kaplan-Meier step curve has zero hazard between observed failures, so a request whose
/// horizon falls between two knots sees no risk at all; spreading each drop over the interval
/// before it gives every horizon the hazard the data imply there (the usual linear smoothing
/// of a KM curve). Values at the knots are unchanged.
#[derive(Debug, Clone, PartialEq)]
pub struct LinearCurve {
    steps: StepCurve,
    /// `(intercept, slope)` of S on the segment ending at each knot (from the previous knot, or
    /// from (0, 1)): `S(t) = intercept + slope * t` there.
    lines: Vec<(f64, f64)>,
}

impl LinearCurve {
    /// The linear reading of `steps`.
    pub fn new(steps: StepCurve) -> LinearCurve {
        let (times, values) = (steps.times(), steps.values());
        let lines = (0..times.len())
            .map(|i| {
                let (t0, s0) = if i == 0 {
                    (0.0, 1.0)
                } else {
                    (times[i - 1], values[i - 1])
                };
                let slope = if times[i] > t0 {
                    (values[i] - s0) / (times[i] - t0)
                } else {
                    0.0
                };
                (s0 - slope * t0, slope)
            })
            .collect();
        LinearCurve { steps, lines }
    }

    /// S(t) given `i`, the index of the first knot at or after `t`.
    #[inline]
    fn value(&self, i: usize, t: f64) -> f64 {
        match self.lines.get(i) {
            Some(&(b, m)) => clamp01(b + m * t),
            None => self.steps.survival(t),
        }
    }
}

impl ConditionalSurvival for LinearCurve {
    fn spec(&self) -> Option<CurveSpec> {
        Some(CurveSpec::of_steps(&self.steps, true))
    }

    fn survival(&self, t: f64) -> f64 {
        let t = nonneg(t);
        self.value(self.steps.times().partition_point(|&x| x < t), t)
    }

    /// The step curve's exponential tail rate (0 without a tail: flat).
    fn tail_hazard(&self) -> f64 {
        self.steps.tail_rate()
    }

    fn conditional(&self, age: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        let a = nonneg(age);
        let sa = self.survival(a);
        if sa > 0.0 {
            clamp01(self.survival(a + t) / sa)
        } else {
            // Past the curve's support: the tail hazard (flat without one).
            tail(self.steps.tail_rate(), t)
        }
    }

    /// One binary search for the age, then a forward walk over the knots for the 16 points.
    fn conditional_grid(&self, age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let a = nonneg(age);
        let step = nonneg(step);
        let times = self.steps.times();
        let n = times.len();
        let mut i = times.partition_point(|&x| x < a);
        let sa = self.value(i, a);
        out[0] = 1.0;
        if sa <= 0.0 {
            let rate = self.steps.tail_rate();
            for (k, o) in out.iter_mut().enumerate().skip(1) {
                *o = tail(rate, k as f64 * step);
            }
            return;
        }
        let inv = 1.0 / sa;
        let lines = &self.lines[..n];
        for (k, o) in out.iter_mut().enumerate().skip(1) {
            let t = a + k as f64 * step;
            while i < n && times[i] < t {
                i += 1;
            }
            let s = if i < n {
                let (b, m) = lines[i];
                b + m * t
            } else {
                self.steps.survival(t)
            };
            *o = clamp01(s * inv);
        }
    }
}

/// A curve whose reading past its last knot follows a fitted Weibull: up to `last_t` it is the
/// inner curve; after it, `S(t) = S(last_t) · exp(-(H(t) - H(last_t)))` with the Weibull
/// cumulative hazard `H(x) = (x / scale)^shape`, and a node older than the curve's support
/// (`S(age) = 0`) gets the Weibull conditional `S(t | a) = exp(-(H(a + t) - H(a)))`.
///
/// With a decreasing hazard (shape < 1) the oldest nodes are the safest; an exponential tail at
/// the pooled average rate charges them the average hazard instead (on phone traces about twice
/// the interruptions of the step reading, the regime map's motivating case).
#[derive(Debug, Clone, PartialEq)]
pub struct WeibullTail<C> {
    inner: C,
    last_t: f64,
    last_s: f64,
    shape: f64,
    scale: f64,
}

impl<C: ConditionalSurvival> WeibullTail<C> {
    /// `inner` read as itself up to `last_t` (its last knot) and as the Weibull (`shape`,
    /// `scale` seconds, both finite and positive) after it; `None` for invalid parameters.
    pub fn new(inner: C, last_t: f64, shape: f64, scale: f64) -> Option<WeibullTail<C>> {
        if !(shape.is_finite() && shape > 0.0 && scale.is_finite() && scale > 0.0) {
            return None;
        }
        let last_t = nonneg(last_t);
        let last_s = inner.survival(last_t);
        Some(WeibullTail {
            inner,
            last_t,
            last_s,
            shape,
            scale,
        })
    }

    #[inline]
    fn cum_hazard(&self, x: f64) -> f64 {
        (nonneg(x) / self.scale).powf(self.shape)
    }
}

impl<C: ConditionalSurvival> ConditionalSurvival for WeibullTail<C> {
    fn spec(&self) -> Option<CurveSpec> {
        CurveSpec::of_tail(self)
    }

    fn survival(&self, t: f64) -> f64 {
        if t.is_nan() || t <= self.last_t {
            self.inner.survival(t)
        } else {
            clamp01(self.last_s * (self.cum_hazard(self.last_t) - self.cum_hazard(t)).exp())
        }
    }

    /// The Weibull hazard at the last knot (the tail is not exponential; [`Self::conditional`]
    /// uses the Weibull itself).
    fn tail_hazard(&self) -> f64 {
        let x = self.last_t.max(f64::MIN_POSITIVE);
        self.shape / self.scale * (x / self.scale).powf(self.shape - 1.0)
    }

    fn conditional(&self, age: f64, t: f64) -> f64 {
        if t.is_nan() || t <= 0.0 {
            return 1.0;
        }
        let a = nonneg(age);
        let sa = self.survival(a);
        if sa > 0.0 {
            clamp01(self.survival(a + t) / sa)
        } else {
            clamp01((self.cum_hazard(a) - self.cum_hazard(a + t)).exp())
        }
    }

    fn conditional_grid(&self, age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        let step = nonneg(step);
        out[0] = 1.0;
        for (k, o) in out.iter_mut().enumerate().skip(1) {
            *o = self.conditional(age, k as f64 * step);
        }
    }
}

#[cfg(test)]
pub(crate) use tests::assert_edges;

#[cfg(test)]
#[path = "curve_tests.rs"]
pub(crate) mod tests;

#[path = "spec.rs"]
mod spec;
pub use spec::CurveSpec;
