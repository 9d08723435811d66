//! Positive controls that isolate one signal each, and the mutation that must fail each:
//!
//! * **age only**: every node follows the same increasing-hazard law (Weibull k = 6, the same
//!   scale, so the same mean), so per-node rates carry no signal and only a node's age says
//!   when it will go. `hazard` (conditional on age) must beat `memoryless` (per-node rates),
//!   its hazard-blind twin `hazard-pooled` and `fastest` on interruptions and on mean
//!   completion. Mutation: the policy given
//!   each node's *unconditional* curve ([`AgeBlind`]: `S(t | a) = S(t)`) must not beat
//!   `memoryless` (asserted: the control can fail).
//! * **per-node rates only**: exponential sessions (no age signal), half the nodes with a mean
//!   session ten times shorter than the other half. `memoryless` must beat `fastest` and
//!   `hazard-pooled` (the same rule with every node at the fleet's mean rate). Mutation: each
//!   node given the rate of a node of the other class (rates assigned to the wrong nodes)
//!   must not beat `hazard-pooled` (asserted).

use std::sync::Arc;

use hazardserve::policy::PolicyKind;
use hazardserve::replay::Metric;
use hazardserve::survival::curve::{ConditionalSurvival, GRID_POINTS};

use super::replay_controls::{long_requests, replay_fleet, two_class_fleet, vs};

/// A curve read without the node's age: `S(t | a) = S(t | 0)` (the mutation the age control
/// must fail under).
struct AgeBlind(Arc<dyn ConditionalSurvival>);

impl ConditionalSurvival for AgeBlind {
    fn survival(&self, t: f64) -> f64 {
        self.0.survival(t)
    }
    fn tail_hazard(&self) -> f64 {
        self.0.tail_hazard()
    }
    fn conditional(&self, _age: f64, t: f64) -> f64 {
        self.0.conditional(0.0, t)
    }
    fn conditional_grid(&self, _age: f64, step: f64, out: &mut [f64; GRID_POINTS]) {
        self.0.conditional_grid(0.0, step, out);
    }
}

/// `a - b` on `m` is below 0 with an interval that excludes 0.
fn beats(
    runs: &[hazardserve::replay::RunMetrics],
    a: PolicyKind,
    b: PolicyKind,
    m: Metric,
) -> bool {
    let (d, lo, hi) = vs(runs, a, b, m);
    eprintln!("{a} - {b} on {}: {d} [{lo}, {hi}]", m.key());
    d < 0.0 && hi < 0.0
}

const POLICIES: [PolicyKind; 4] = [
    PolicyKind::Hazard,
    PolicyKind::Memoryless,
    PolicyKind::HazardPooled,
    PolicyKind::Fastest,
];

#[test]
fn age_control_hazard_beats_memoryless_and_fastest_when_only_age_carries_signal() {
    let cluster = two_class_fleet(12, [6.0, 6.0], [1200.0, 1200.0], 7);
    let workload = long_requests(0.05, 17);
    let runs = replay_fleet(&cluster, &workload, &POLICIES, 30);
    for m in [Metric::UnplannedInterruptions, Metric::MeanCompletion] {
        for b in [
            PolicyKind::Memoryless,
            PolicyKind::HazardPooled,
            PolicyKind::Fastest,
        ] {
            assert!(
                beats(&runs, PolicyKind::Hazard, b, m),
                "age control: hazard must beat {b} on {}",
                m.key()
            );
        }
    }
    // The mutation: the same fleet, each curve read without the node's age.
    let mut blind = cluster.clone();
    for n in &mut blind.nodes {
        n.survival = Arc::new(AgeBlind(Arc::clone(&n.survival)));
    }
    let runs = replay_fleet(&blind, &workload, &POLICIES, 30);
    assert!(
        !beats(
            &runs,
            PolicyKind::Hazard,
            PolicyKind::Memoryless,
            Metric::UnplannedInterruptions
        ),
        "age control: an age-blind hazard still beat memoryless, so the control cannot fail"
    );
}

#[test]
fn rate_control_memoryless_beats_fastest_when_only_per_node_rates_carry_signal() {
    // Exponential sessions: class 0 a mean of 10 minutes, class 1 of 100.
    let cluster = two_class_fleet(12, [1.0, 1.0], [600.0, 6000.0], 9);
    let workload = long_requests(0.05, 19);
    let runs = replay_fleet(&cluster, &workload, &POLICIES, 30);
    for m in [Metric::UnplannedInterruptions, Metric::MeanCompletion] {
        for b in [PolicyKind::HazardPooled, PolicyKind::Fastest] {
            assert!(
                beats(&runs, PolicyKind::Memoryless, b, m),
                "rate control: memoryless must beat {b} on {}",
                m.key()
            );
        }
    }
    // The mutation: each node told the rate of its neighbour of the other class.
    let mut wrong = cluster.clone();
    for (i, n) in wrong.nodes.iter_mut().enumerate() {
        n.exp_rate_per_s = cluster.nodes[i ^ 1].exp_rate_per_s;
    }
    let runs = replay_fleet(&wrong, &workload, &POLICIES, 30);
    assert!(
        !beats(
            &runs,
            PolicyKind::Memoryless,
            PolicyKind::HazardPooled,
            Metric::UnplannedInterruptions
        ),
        "rate control: memoryless with the rates swapped between classes still beat its twin, so the control cannot fail"
    );
}
