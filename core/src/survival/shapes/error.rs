//! Errors of the shape fits, and the input check they share with the smoothed hazard.

/// Errors raised on invalid input (to the shape fits, and to the smoothed hazard as
/// [`super::hazard::HazardError`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeError {
    /// No observation.
    Empty,
    /// A parallel input column has a different length than `durations`.
    LengthMismatch {
        /// Name of the offending column.
        what: &'static str,
        /// Length of `durations`.
        expected: usize,
        /// Length of the offending column.
        got: usize,
    },
    /// A value is NaN, infinite, negative, or an exit is not after its entry.
    InvalidValue {
        /// Row index.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// No observed event: no model (and no hazard estimate) exists.
    NoEvents,
    /// The model cannot be fitted to these data (e.g. no cap spike for the capped model).
    NotApplicable(String),
    /// An option is out of its domain.
    InvalidArgument(String),
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShapeError::Empty => write!(f, "empty input: no observations"),
            ShapeError::LengthMismatch {
                what,
                expected,
                got,
            } => write!(
                f,
                "length mismatch: `{what}` has {got} values, expected {expected}"
            ),
            ShapeError::InvalidValue { index, reason } => {
                write!(f, "invalid value at index {index}: {reason}")
            }
            ShapeError::NoEvents => write!(f, "no events observed: nothing can be estimated"),
            ShapeError::NotApplicable(s) => write!(f, "model not applicable: {s}"),
            ShapeError::InvalidArgument(s) => write!(f, "invalid argument: {s}"),
        }
    }
}

impl std::error::Error for ShapeError {}

/// Checks lengths, finiteness, e_i ≥ 0 and T_i > e_i (T_i > 0 without entries); events may be
/// absent (the caller decides). Shared with [`super::hazard`].
pub(crate) fn validate(
    durations: &[f64],
    events: &[bool],
    entry: Option<&[f64]>,
) -> Result<(), ShapeError> {
    let n = durations.len();
    if n == 0 {
        return Err(ShapeError::Empty);
    }
    if events.len() != n {
        return Err(ShapeError::LengthMismatch {
            what: "events",
            expected: n,
            got: events.len(),
        });
    }
    if let Some(e) = entry {
        if e.len() != n {
            return Err(ShapeError::LengthMismatch {
                what: "entry",
                expected: n,
                got: e.len(),
            });
        }
    }
    for (i, &t) in durations.iter().enumerate() {
        let bad = |reason| Err(ShapeError::InvalidValue { index: i, reason });
        if t.is_nan() {
            return bad("duration is NaN");
        }
        if !t.is_finite() {
            return bad("duration is infinite");
        }
        if t < 0.0 {
            return bad("negative duration");
        }
        let e = entry.map_or(0.0, |e| e[i]);
        if e.is_nan() {
            return bad("entry is NaN");
        }
        if !e.is_finite() {
            return bad("entry is infinite");
        }
        if e < 0.0 {
            return bad("negative entry");
        }
        if t <= e {
            return bad("exit time not after entry (entry 0 without entry times)");
        }
    }
    Ok(())
}
