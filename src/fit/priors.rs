//! Hazard priors of a stored source as of a cutoff: the function behind `priors export` and
//! anything else that needs a source's per-node curves fitted on its past only.

use super::load::load_sessions;
use crate::store::{Store, StoreError};
use crate::survival::priors::{
    fit_priors, Priors, PriorsError, PriorsEstimator, PriorsMeta, PriorsOptions,
};
use crate::survival::shrinkage::{EstimatorChoice, ShrinkageOptions};

/// Why priors could not be fitted.
#[derive(Debug, thiserror::Error)]
pub enum PriorsExportError {
    /// The store could not be read (or has no such source).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The source has no session a fit could use.
    #[error("source {0} has no usable sessions")]
    NoSessions(String),
    /// The fit failed.
    #[error("fitting the priors of {name}")]
    Fit {
        /// The source.
        name: String,
        /// Why.
        #[source]
        cause: PriorsError,
    },
}

/// Fits the priors of `source` on what was observed before `before` (default: just after the
/// end of its last session). `estimator` fixes the node-curve estimator (default: chosen by
/// cross-validation); curves keep at most `max_points` steps. Left-truncated sessions of
/// unknown age are left out (they bias lifetimes short).
pub fn priors_as_of(
    store: &Store,
    source: &str,
    before: Option<f64>,
    estimator: Option<PriorsEstimator>,
    max_points: usize,
) -> Result<Priors, PriorsExportError> {
    let data = load_sessions(store, source, None, false)?;
    let cutoff = match before {
        Some(t) => t,
        None => {
            data.sessions
                .iter()
                .map(|s| s.end)
                .fold(f64::NEG_INFINITY, f64::max)
                + 1.0
        }
    };
    if !cutoff.is_finite() {
        return Err(PriorsExportError::NoSessions(source.to_string()));
    }
    let meta = PriorsMeta {
        source: source.to_string(),
        cutoff_s: cutoff,
        time_base: data.time_base.clone(),
        node_ids: data.node_ids.clone(),
    };
    let popts = PriorsOptions {
        estimator,
        max_points,
        ..PriorsOptions::default()
    };
    let sopts = ShrinkageOptions {
        estimator: match estimator {
            Some(PriorsEstimator::Beta) => EstimatorChoice::BetaProcess,
            Some(PriorsEstimator::Frailty) => EstimatorChoice::GammaFrailty,
            _ => EstimatorChoice::Auto,
        },
        ..ShrinkageOptions::default()
    };
    fit_priors(&data.sessions, &meta, &sopts, &popts).map_err(|cause| PriorsExportError::Fit {
        name: source.to_string(),
        cause,
    })
}
