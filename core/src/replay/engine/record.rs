//! The decision log's inputs ([`crate::replay::input::ReplayConfig::decision_inputs`]):
//! each logged decision's
//! [`DecisionInputs`], and the table of the curves they name.

use std::collections::HashMap;

use crate::policy::record::DecisionInputs;
use crate::survival::curve::{ConditionalSurvival, CurveSpec};

/// The inputs of the decision being logged and the run's curve table.
#[derive(Default)]
pub(super) struct Recorder {
    /// The inputs of the last decision, until [`super::Sim::log_decision`] takes them.
    pub(super) pending: Option<DecisionInputs>,
    /// Each curve named so far ([`ConditionalSurvival::spec`]; `None`: the curve has none).
    pub(super) curves: Vec<Option<CurveSpec>>,
    /// A curve's index in `curves` by its address (the fleet's curves live for the run).
    index: HashMap<usize, usize>,
}

impl Recorder {
    /// The index of curve `c` in the table, adding it on first sight.
    pub(super) fn curve_id(&mut self, c: &dyn ConditionalSurvival) -> usize {
        let addr = c as *const dyn ConditionalSurvival as *const () as usize;
        let next = self.curves.len();
        let id = *self.index.entry(addr).or_insert(next);
        if id == next {
            self.curves.push(c.spec());
        }
        id
    }
}
