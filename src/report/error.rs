//! Why a report could not be made.

use std::path::PathBuf;

use crate::store::StoreError;
use crate::survival::SurvivalError;
use crate::sweep::SweepError;

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A plot could not be drawn.
    #[error("drawing a plot: {0}")]
    Plot(String),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A survival fit failed.
    #[error("fitting {source_name}")]
    Fit {
        /// The source.
        source_name: String,
        /// Why.
        #[source]
        source: Box<SurvivalError>,
    },
    /// A source's priors (the trigger's curve) could not be fitted.
    #[error("fitting the priors of {source_name}")]
    Priors {
        /// The source.
        source_name: String,
        /// Why.
        #[source]
        source: Box<crate::fit::PriorsExportError>,
    },
    /// The sweep could not be read.
    #[error(transparent)]
    Sweep(Box<SweepError>),
    /// A file could not be written.
    #[error("{}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A `--where` names an axis the sweep does not have, or matches no cell.
    #[error("sweep {sweep}: {problem}")]
    SweepWhere {
        /// The sweep.
        sweep: String,
        /// What is wrong.
        problem: String,
    },
    /// No run of that id.
    #[error("no run {0:?} in the store (`hazardserve compare` lists the latest)")]
    NoRun(String),
}

impl From<SweepError> for ReportError {
    fn from(e: SweepError) -> Self {
        ReportError::Sweep(Box::new(e))
    }
}
