//! The placement scan at scale: a placement's first pass visits only the up nodes with a free
//! slot (a full node cannot admit), so on a busy fleet of 1,000 nodes (1.2 requests per second
//! per node, ~85 % of its capacity: most nodes full) a placement visits a small part of the
//! fleet, while on a light one it visits most of it. (Past saturation every node is full and
//! the queueing pass visits every up node.) The engine's validation mode checks after every
//! event that its free list is exactly the up nodes with a free slot (the property tests).

use hazardserve::policy::{
    build, ClusterView, Explanation, NodeIdx, Policy, PolicyKind, RequestView,
};
use hazardserve::replay::{
    simulate, simulate_with, PoissonWorkload, ReplayConfig, RunSpec, SyntheticCluster, Window,
};

const HOUR_US: i64 = 3_600_000_000;

/// A policy that counts the nodes each placement visits and those it is shown full, then lets
/// the standard policy decide.
struct Counting {
    inner: Box<dyn Policy>,
    placements: u64,
    visited: u64,
    shown_full: u64,
    nodes: usize,
}

impl Policy for Counting {
    fn kind(&self) -> PolicyKind {
        self.inner.kind()
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        for (_, n) in view.candidates() {
            self.visited += 1;
            if !(n.up && n.slots_used < n.slots) {
                self.shown_full += 1;
            }
        }
        self.placements += 1;
        self.nodes = view.nodes.len();
        self.inner.place(view, req, out)
    }

    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        self.inner.check_migration(view, req, from, out)
    }
}

/// Mean nodes visited per placement on 1,000 synthetic nodes (8 slots, ~5 s of service per
/// request, the simple engine) at `per_node` requests per second per node, and the count of
/// full nodes shown; the run equals the plain policy's.
fn visits(kind: PolicyKind, per_node: f64) -> (f64, u64) {
    let nodes = 1_000;
    let cluster = SyntheticCluster {
        nodes,
        to_us: 12 * HOUR_US,
        ..SyntheticCluster::default()
    }
    .build();
    let workload = PoissonWorkload {
        rate_per_s: nodes as f64 * per_node,
        length_s: 60.0,
        ..PoissonWorkload::default()
    }
    .build();
    let window = Window::new(6 * HOUR_US, 60_000_000);
    // The simple engine, at whose capacity the rates are chosen (the scan is the placement's,
    // the same under either engine; the iteration engine serves fewer requests per node).
    let cfg = crate::replay_support::simple(ReplayConfig::default());
    let spec = RunSpec::new(kind, window, 1, cfg.params);
    let mut p = Counting {
        inner: build(kind, spec.params, spec.policy_seed()),
        placements: 0,
        visited: 0,
        shown_full: 0,
        nodes: 0,
    };
    let counted = simulate_with(&cluster, &workload, &cfg, &spec, &mut p).expect("replay runs");
    let plain = simulate(&cluster, &workload, &cfg, &spec).expect("replay runs");
    assert_eq!(
        counted.records, plain.records,
        "{kind}: counting changed the run"
    );
    assert_eq!(p.nodes, nodes);
    assert!(p.placements > 0);
    (p.visited as f64 / p.placements as f64, p.shown_full)
}

#[test]
fn a_placement_on_a_busy_fleet_visits_only_the_free_nodes() {
    for kind in [PolicyKind::Fastest, PolicyKind::Hazard] {
        let (busy, full) = visits(kind, 1.2);
        let (light, light_full) = visits(kind, 0.3);
        assert_eq!(
            full + light_full,
            0,
            "{kind}: a placement was shown a full node"
        );
        assert!(
            busy < 250.0,
            "{kind}: a busy placement visited {busy:.0} of 1,000 nodes"
        );
        assert!(
            light > 2.0 * busy,
            "{kind}: light {light:.0} vs busy {busy:.0} nodes per placement"
        );
    }
}
