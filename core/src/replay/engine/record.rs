//! The decision log's inputs ([`crate::replay::input::ReplayConfig::decision_inputs`]):
//! each logged decision's
//! [`DecisionInputs`], and the table of the curves they name.

use std::collections::HashMap;

use crate::policy::record::{recorded, DecisionInputs};
use crate::policy::{ClusterView, Explanation, NodeIdx, Policy, RequestView};
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

impl Recorder {
    /// `policy` places `rv` over `view` (its inputs kept as [`Recorder::pending`] when
    /// `record`).
    pub(super) fn place(
        &mut self,
        record: bool,
        view: ClusterView<'_>,
        rv: &RequestView,
        policy: &mut dyn Policy,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        let (choice, inputs) = recorded(
            view,
            record,
            rv,
            None,
            |c| self.curve_id(c),
            |v| policy.place(v, rv, out),
        );
        self.pending = inputs;
        choice
    }

    /// `policy` checks the migration of `rv` off `from` over `view` (its inputs kept as
    /// [`Recorder::pending`] when `record`).
    pub(super) fn check(
        &mut self,
        record: bool,
        view: ClusterView<'_>,
        rv: &RequestView,
        from: NodeIdx,
        policy: &mut dyn Policy,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        let (choice, inputs) = recorded(
            view,
            record,
            rv,
            Some(from),
            |c| self.curve_id(c),
            |v| policy.check_migration(v, rv, from, out),
        );
        self.pending = inputs;
        choice
    }
}
