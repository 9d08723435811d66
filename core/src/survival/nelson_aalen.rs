//! The Nelson-Aalen cumulative hazard with its variance and 95 % interval, on the
//! Kaplan-Meier event table ([`super::km`]: right censoring, left truncation, ties), with
//! lifelines-0.30.3 conventions (tested against `cases-v2`'s `na_*` golden cases).
//!
//! At each time `t_i` with `n_i` at risk (entrants at `t_i` excluded, as for the product-limit
//! estimator) and `d_i` events:
//!
//! * **smoothed** (lifelines' default, `nelson_aalen_smoothing=True`): a tie of `d` events
//!   among `n` adds `sum_{j<d} 1 / (n - j)` to `H`, with variance `sum_{j<d} 1 / (n - j)^2`
//!   (the ties broken one at a time);
//! * **discrete** (R's and scikit-survival's): `d / n`, with variance `(n - d) d / n^3`.
//!
//! The interval is `H exp(+-z sqrt(V) / H)` (log-transformed), `[0, 0]` while `H = 0`. A row
//! whose risk set is empty adds nothing (lifelines' smoothed estimator adds a spurious
//! harmonic sum there; its discrete one and this one do not).

use super::km::KmFit;
use super::{SurvivalData, SurvivalError, Z_95};

/// A fitted Nelson-Aalen curve: one row per time of the Kaplan-Meier event table.
#[derive(Debug, Clone, PartialEq)]
pub struct NelsonAalen {
    /// Distinct times (ascending).
    pub timeline: Vec<f64>,
    /// At risk for the hazard at each time.
    pub n_at_risk: Vec<u32>,
    /// Events at each time.
    pub n_event: Vec<u32>,
    /// Cumulative hazard `H(t)`.
    pub cumulative_hazard: Vec<f64>,
    /// Its variance.
    pub variance: Vec<f64>,
}

impl NelsonAalen {
    /// The 95 % interval at every time, `(lower, upper)` (module docs), computed when asked
    /// (as Kaplan-Meier's).
    pub fn interval(&self) -> (Vec<f64>, Vec<f64>) {
        self.cumulative_hazard
            .iter()
            .zip(&self.variance)
            .map(|(&h, &v)| {
                if h > 0.0 {
                    let f = (Z_95 * v.sqrt() / h).exp();
                    (h / f, h * f)
                } else {
                    (0.0, 0.0)
                }
            })
            .unzip()
    }
}

/// The Nelson-Aalen estimate of `data` (module docs); `smoothed` chooses the tie rule.
/// Errors as [`KmFit::fit_data`].
pub fn nelson_aalen(data: &SurvivalData<'_>, smoothed: bool) -> Result<NelsonAalen, SurvivalError> {
    let (timeline, n_at_risk, n_event, _) = KmFit::fit_data(data)?.into_columns();
    Ok(from_counts(timeline, n_at_risk, n_event, smoothed))
}

/// The Nelson-Aalen estimate from an event table: distinct times, the number at risk and the
/// number of events at each (module docs). Shared with the cause-specific hazards of
/// [`super::competing`], whose risk set is the all-cause one. The columns are moved in, not
/// copied.
pub(crate) fn from_counts(
    timeline: Vec<f64>,
    n_at_risk: Vec<u32>,
    n_event: Vec<u32>,
    smoothed: bool,
) -> NelsonAalen {
    let rows = n_at_risk.len();
    let (mut h, mut v) = (0.0, 0.0);
    let (mut cumulative_hazard, mut variance) =
        (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for i in 0..rows {
        let (n, d) = (f64::from(n_at_risk[i]), f64::from(n_event[i]));
        if d > 0.0 && n > 0.0 {
            if smoothed {
                for j in 0..n_event[i] {
                    let k = n - f64::from(j);
                    h += 1.0 / k;
                    v += 1.0 / (k * k);
                }
            } else {
                h += d / n;
                v += (n - d) * d / (n * n * n);
            }
        }
        cumulative_hazard.push(h);
        variance.push(v);
    }
    NelsonAalen {
        timeline,
        n_at_risk,
        n_event,
        cumulative_hazard,
        variance,
    }
}
