//! Survival analysis of node up-sessions for hazard-aware scheduling.
//!
//! * [`km`]: Kaplan–Meier product-limit estimator (right censoring, left truncation, ties,
//!   integer weights) with lifelines-0.30.3 conventions, conditional survival, and a grouped
//!   fast path that fits one curve per node from a single counting sort.
//! * [`shrinkage`]: per-node curves that borrow strength from the pooled fleet curve
//!   (beta-process prior, gamma-frailty empirical Bayes, cross-validated selection).
//! * [`parametric`]: censored, left-truncated maximum-likelihood exponential and Weibull fits
//!   and a likelihood-ratio test of "constant hazard".
//! * [`shapes`]: the hazard-shape verdict (decreasing / increasing / constant / bathtub /
//!   capped) by AIC over seven maximum-likelihood models, with its evidence and the minimum
//!   number of events below which no verdict is given.
//! * [`groups`]: comparing groups: the log-rank test (two- and k-group, weighted) and the
//!   restricted mean survival time with its variances.
//! * [`competing`]: competing risks: the Aalen-Johansen cumulative incidence of each end
//!   cause with its interval, and each cause's Nelson-Aalen cumulative hazard.
//! * [`interval`]: interval-censored sessions (ends known only between two probes): the
//!   Turnbull intervals and the nonparametric maximum-likelihood estimate on them.
//! * [`nelson_aalen`]: the Nelson-Aalen cumulative hazard (smoothed or discrete ties) with
//!   its variance and interval.
//! * [`hazard`]: the hazard itself, kernel-smoothed from the Nelson-Aalen increments with
//!   boundary kernels, a cross-validated bandwidth and pointwise confidence intervals.
//! * [`validate`]: out-of-time validation (fit before a split time, score the sessions live at
//!   it: IPCW integrated Brier score, Harrell's C, calibration) of all estimators side by side.
//! * [`priors`]: the versioned JSON export of the pooled and per-node curves that the replay
//!   and a serving system load.
//!
//! * [`curve`]: the one survival-curve abstraction, [`ConditionalSurvival`] (with the
//!   closed-form and tabulated curves the scheduler uses: exponential, Weibull, step, linear).
//!   Every fitted curve implements it, so the scheduler can ask S(t | a) = S(a + t) / S(a) of
//!   any of them, with one documented answer at every edge (see [`curve`]).
//!
//! Time convention: durations and entry times share one clock (the session age);
//! an entry time is the age at which observation began (left truncation, delayed entry).

#![warn(missing_docs)]

pub mod competing;
pub mod curve;
pub mod groups;
pub mod hazard;
pub mod interval;
pub mod km;
pub mod nelson_aalen;
pub mod numeric;
pub mod parametric;
pub mod priors;
pub mod shapes;
pub mod shrinkage;
pub mod truth;
pub mod validate;

use thiserror::Error;

pub use curve::ConditionalSurvival;

/// Two-sided 95 % standard-normal quantile Φ⁻¹(0.975), as used by lifelines (`scipy.stats.norm.ppf`).
pub const Z_95: f64 = 1.959963984540054;

/// Errors raised on invalid survival input.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum SurvivalError {
    /// No observation (or every weight is zero).
    #[error("empty input: no observations")]
    Empty,
    /// Two parallel input columns have different lengths.
    #[error("length mismatch: `{what}` has {got} values, expected {expected}")]
    LengthMismatch {
        /// Name of the offending column.
        what: &'static str,
        /// Length of `durations`.
        expected: usize,
        /// Length of the offending column.
        got: usize,
    },
    /// A duration is NaN.
    #[error("duration at index {index} is NaN")]
    NanDuration {
        /// Row index.
        index: usize,
    },
    /// A duration or entry time is ±∞ (or an entry time is NaN).
    #[error("{what} at index {index} is not finite ({value})")]
    NonFinite {
        /// `"duration"` or `"entry"`.
        what: &'static str,
        /// Row index.
        index: usize,
        /// The offending value.
        value: f64,
    },
    /// Entry (delayed-entry age) later than the exit age.
    #[error("entry {entry} > duration {duration} at index {index}")]
    EntryAfterDuration {
        /// Row index.
        index: usize,
        /// Entry time.
        entry: f64,
        /// Duration (exit time on the same clock).
        duration: f64,
    },
    /// A group id is not below the declared number of groups.
    #[error("group id {group} at index {index} is out of range (number of groups {n_groups})")]
    GroupOutOfRange {
        /// Row index.
        index: usize,
        /// The offending group id.
        group: u32,
        /// Declared number of groups.
        n_groups: usize,
    },
    /// A value outside the domain of a model (e.g. a non-positive event time for a Weibull fit).
    #[error("invalid value at index {index}: {reason}")]
    InvalidValue {
        /// Row index.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// The data contain no event, so the requested estimate does not exist.
    #[error("no events observed: {0}")]
    NoEvents(&'static str),
    /// An option or argument is out of its domain.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

/// Borrowed survival data: one row per subject (session).
///
/// `durations[i]` is the exit age, `events[i]` is `true` for an observed event (failure) and
/// `false` for right censoring, `entry[i]` (optional) the age at which observation began
/// (left truncation; `entry[i] <= durations[i]`), `weights[i]` (optional) an integer
/// replication count (weight `w` is identical to `w` copies of the row; weight 0 drops the row).
#[derive(Debug, Clone, Copy)]
pub struct SurvivalData<'a> {
    /// Exit ages T_i.
    pub durations: &'a [f64],
    /// Event indicators δ_i (true = event observed, false = censored).
    pub events: &'a [bool],
    /// Optional entry ages e_i (delayed entry).
    pub entry: Option<&'a [f64]>,
    /// Optional integer case weights w_i.
    pub weights: Option<&'a [u32]>,
}

impl<'a> SurvivalData<'a> {
    /// Right-censored data without entry times or weights.
    pub fn new(durations: &'a [f64], events: &'a [bool]) -> Self {
        SurvivalData {
            durations,
            events,
            entry: None,
            weights: None,
        }
    }

    /// Adds entry (left-truncation) times.
    pub fn with_entry(mut self, entry: &'a [f64]) -> Self {
        self.entry = Some(entry);
        self
    }

    /// Adds integer case weights.
    pub fn with_weights(mut self, weights: &'a [u32]) -> Self {
        self.weights = Some(weights);
        self
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.durations.len()
    }

    /// True when there is no row.
    pub fn is_empty(&self) -> bool {
        self.durations.is_empty()
    }

    /// Weight of row `i` (1 without weights).
    #[inline]
    pub fn weight(&self, i: usize) -> u64 {
        match self.weights {
            Some(w) => w[i] as u64,
            None => 1,
        }
    }

    /// Checks lengths, NaN/∞ values, `entry <= duration` and non-emptiness.
    pub fn validate(&self) -> Result<(), SurvivalError> {
        let n = self.durations.len();
        if self.events.len() != n {
            return Err(SurvivalError::LengthMismatch {
                what: "events",
                expected: n,
                got: self.events.len(),
            });
        }
        if let Some(e) = self.entry {
            if e.len() != n {
                return Err(SurvivalError::LengthMismatch {
                    what: "entry",
                    expected: n,
                    got: e.len(),
                });
            }
        }
        if let Some(w) = self.weights {
            if w.len() != n {
                return Err(SurvivalError::LengthMismatch {
                    what: "weights",
                    expected: n,
                    got: w.len(),
                });
            }
            let total: u64 = w.iter().map(|&x| x as u64).sum();
            if total == 0 {
                return Err(SurvivalError::Empty);
            }
            if total > u32::MAX as u64 {
                return Err(SurvivalError::InvalidArgument(format!(
                    "total weight {total} exceeds 2^32 - 1"
                )));
            }
        } else if n > u32::MAX as usize {
            return Err(SurvivalError::InvalidArgument(format!(
                "{n} rows exceed 2^32 - 1"
            )));
        }
        if n == 0 {
            return Err(SurvivalError::Empty);
        }
        for (i, &t) in self.durations.iter().enumerate() {
            if !t.is_finite() {
                if t.is_nan() {
                    return Err(SurvivalError::NanDuration { index: i });
                }
                return Err(SurvivalError::NonFinite {
                    what: "duration",
                    index: i,
                    value: t,
                });
            }
        }
        if let Some(e) = self.entry {
            for (i, (&x, &t)) in e.iter().zip(self.durations).enumerate() {
                if !x.is_finite() {
                    return Err(SurvivalError::NonFinite {
                        what: "entry",
                        index: i,
                        value: x,
                    });
                }
                if x > t {
                    return Err(SurvivalError::EntryAfterDuration {
                        index: i,
                        entry: x,
                        duration: t,
                    });
                }
            }
        }
        Ok(())
    }
}
