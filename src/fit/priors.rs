//! Hazard priors of a stored source as of a cutoff: the function behind `priors export`,
//! `trigger --source` and anything else that needs a source's per-node curves fitted on its
//! past only.

use super::load::load_sessions;
use super::nodes::source_priors;
use crate::store::{Store, StoreError};
use crate::survival::priors::{Priors, PriorsError, PriorsEstimator};

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

/// Loads `source` from the store and fits its priors with [`source_priors`] (left-truncated
/// sessions of unknown age left out: they bias lifetimes short).
pub fn priors_as_of(
    store: &Store,
    source: &str,
    before: Option<f64>,
    estimator: Option<PriorsEstimator>,
    max_points: usize,
) -> Result<Priors, PriorsExportError> {
    let data = load_sessions(store, source, None, false)?;
    source_priors(&data, before, estimator, max_points)
        .map_err(|cause| PriorsExportError::Fit {
            name: source.to_string(),
            cause,
        })?
        .ok_or_else(|| PriorsExportError::NoSessions(source.to_string()))
}
