//! Sessions of tick and probe sources as interval-censored data: a probe every `r` seconds
//! sees a node up or down, so a session's start lies between the last probe that saw the node
//! down and the first that saw it up, and its end between the last probe that saw it up and the
//! first that saw it down. A session of `d` seconds on the store's clock (first up probe to
//! first down probe) therefore lasted `T` in `(d - r, d + r)`; a censored one at least `d - r`.
//! The Turnbull NPMLE ([`crate::survival::interval`], half-open intervals) on these bounds
//! replaces Kaplan-Meier on the tick times, which treats every end as exact and so shifts each
//! curve by up to a tick.

use crate::survival::interval::{turnbull, Bounds, Turnbull, TurnbullOptions};
use crate::survival::SurvivalError;

use super::SourceSessions;

/// A group's interval-censored fit.
#[derive(Debug, Clone)]
pub struct TickFit {
    /// The probe interval (the largest of the group's sessions), seconds.
    pub resolution_s: f64,
    /// The NPMLE.
    pub fit: Turnbull,
}

impl TickFit {
    /// Median lifetime (mass spread over each Turnbull interval); `None` when not reached.
    pub fn median_s(&self) -> Option<f64> {
        self.fit.quantile_spread(0.5)
    }

    /// `P(T > t)` (mass spread over each Turnbull interval).
    pub fn survival(&self, t: f64) -> f64 {
        self.fit.survival_spread(t)
    }
}

/// The tick width of a group's sessions: the largest `resolution_s` among `rows`, `None` when
/// every time is exact.
fn tick_resolution(data: &SourceSessions, rows: &[usize]) -> Option<f64> {
    let r = rows
        .iter()
        .filter_map(|&i| data.resolution_s.get(i).copied())
        .fold(0.0f64, f64::max);
    (r > 0.0).then_some(r)
}

/// The interval-censored fit of one group (module docs); `None` when the group's times are
/// exact, or when some session has a known entry age (the NPMLE here does not take left
/// truncation; Kaplan-Meier does).
pub(crate) fn group_ticks(
    data: &SourceSessions,
    group: &str,
) -> Result<Option<TickFit>, SurvivalError> {
    let rows = data.group_rows(group);
    let Some(r) = tick_resolution(data, &rows) else {
        return Ok(None);
    };
    if rows.iter().any(|&i| data.sessions[i].entry > 0.0) || rows.is_empty() {
        return Ok(None);
    }
    let (mut lower, mut upper) = (Vec::new(), Vec::new());
    for &i in &rows {
        let s = &data.sessions[i];
        let d = s.end - s.start;
        lower.push((d - r).max(0.0));
        upper.push(if s.event { d + r } else { f64::INFINITY });
    }
    let fit = turnbull(
        &lower,
        &upper,
        Bounds::OpenLower,
        &TurnbullOptions::default(),
    )?;
    Ok(Some(TickFit {
        resolution_s: r,
        fit,
    }))
}
