//! Fitting survival models to a source in the store: load its up-sessions, split by a node
//! attribute, summarise pooled curves and hazard shapes, validate out of time, export priors,
//! and the per-node statistics pass ([`fit_nodes`]) behind the TUI's node and survival screens.

pub mod causes;
mod load;
mod nodes;
mod priors;
mod summary;
pub mod ticks;

pub use load::{load_sessions, ByColumn, SourceSessions};
pub use nodes::{
    fit_nodes, pooled_curve, source_priors, AgeSpan, KmSteps, NodeFit, NodeFitOptions, PooledCurve,
    SourceNodeFits,
};
pub use priors::{priors_as_of, PriorsExportError};
pub use summary::{
    evidence_parameters, fit_groups, fit_groups_with, group_columns, median_interval, GroupFit,
    DEFAULT_MIN_EVENTS, HORIZONS_S,
};

/// A time argument that is neither a number of seconds nor an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is neither seconds nor an RFC 3339 timestamp (e.g. 2019-03-20T00:00:00Z)")]
pub struct TimeParseError {
    /// The text given.
    pub text: String,
}

/// Parses a time argument: a number of seconds on the source's clock, or (for `utc` sources)
/// an RFC 3339 timestamp such as `2019-03-20T00:00:00Z`.
pub fn parse_time(s: &str) -> Result<f64, TimeParseError> {
    if let Ok(v) = s.trim().parse::<f64>() {
        if v.is_finite() {
            return Ok(v);
        }
    }
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.timestamp() as f64 + t.timestamp_subsec_nanos() as f64 * 1e-9)
        .map_err(|_| TimeParseError {
            text: s.to_string(),
        })
}
