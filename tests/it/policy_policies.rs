//! Each policy behind the one `Policy` trait: feasibility, the baselines, the oracle, the
//! explanation record, and properties of the cost model.

use proptest::prelude::*;

use hazardserve::policy::cost::{expected_loss, placement_cost, UnplannedLoss};
use hazardserve::policy::migration::{crossover, planned_cost, Crossover, MoveMethod};
use hazardserve::policy::policies::Decision;
use hazardserve::policy::{
    build, ClusterView, Explanation, Foresight, NodeView, Outcome, Params, PolicyKind, RequestView,
    RiskModel,
};
use hazardserve::rng::SplitMix64;
use hazardserve::survival::curve::{ConditionalSurvival, Exponential, Weibull};

fn node(curve: &dyn ConditionalSurvival, decode: f64, prefill: f64) -> NodeView<'_> {
    NodeView {
        decode_tok_s: decode,
        prefill_tok_s: prefill,
        bandwidth_bytes_s: 1.25e9,
        slots: 4,
        kv_capacity_tokens: 100_000,
        ..NodeView::new(curve)
    }
}

fn place(
    kind: PolicyKind,
    nodes: &[NodeView<'_>],
    req: &RequestView,
) -> (Option<usize>, Explanation) {
    let mut p = build(kind, Params::default(), 42);
    let mut out = Explanation::default();
    let d = p.place(&ClusterView::new(nodes), req, &mut out);
    (d, out)
}

#[test]
fn names_round_trip() {
    for k in PolicyKind::ALL {
        assert_eq!(k.name().parse::<PolicyKind>(), Ok(k));
        assert_eq!(
            serde_json::to_value(k).unwrap(),
            serde_json::json!(k.name())
        );
    }
    assert!("hazard-aware".parse::<PolicyKind>().is_err());
}

#[test]
fn infeasible_nodes_are_never_chosen() {
    let c = Exponential { mean: 1e9 };
    let req = RequestView::new(1, 1000, 500);
    let down = NodeView {
        up: false,
        ..node(&c, 500.0, 1e5)
    };
    let full = NodeView {
        slots_used: 4,
        ..node(&c, 500.0, 1e5)
    };
    let no_kv = NodeView {
        kv_used_tokens: 99_000,
        ..node(&c, 500.0, 1e5)
    };
    let ok = node(&c, 10.0, 100.0);
    for k in PolicyKind::ALL {
        if k.routes_all() {
            // A router sends to any up node (a full one queues it), never to a down one.
            let (d, out) = place(k, &[down, full, no_kv, ok], &req);
            assert!(matches!(d, Some(1..=3)), "{k}: {d:?}");
            assert_eq!(out.feasible, 3, "{k}");
            let (d, out) = place(k, &[down], &req);
            assert_eq!(d, None, "{k}");
            assert_eq!(out.outcome, Outcome::NoFeasibleNode);
            continue;
        }
        let (d, out) = place(k, &[down, full, no_kv, ok], &req);
        assert_eq!(d, Some(3), "{k}");
        assert_eq!(out.feasible, 1);
        assert_eq!(out.outcome, Outcome::Placed);
        assert!(out.e.is_finite() && out.t > 0.0);
        let (d, out) = place(k, &[down, full, no_kv], &req);
        assert_eq!(d, None);
        assert_eq!(out.outcome, Outcome::NoFeasibleNode);
    }
}

#[test]
fn fastest_least_loaded_uptime() {
    let c = Exponential { mean: 600.0 };
    let req = RequestView::new(1, 1000, 500);
    let slow = NodeView {
        age_s: 9000.0,
        ..node(&c, 10.0, 1000.0)
    };
    let fast_busy = NodeView {
        slots_used: 3,
        queue_wait_s: 1.0,
        ..node(&c, 100.0, 1000.0)
    };
    let idle = NodeView {
        age_s: 10.0,
        ..node(&c, 20.0, 1000.0)
    };
    let nodes = [slow, fast_busy, idle];
    assert_eq!(place(PolicyKind::Fastest, &nodes, &req).0, Some(1));
    assert_eq!(place(PolicyKind::LeastLoaded, &nodes, &req).0, Some(0));
    assert_eq!(place(PolicyKind::Uptime, &nodes, &req).0, Some(0));
    assert_eq!(place(PolicyKind::Hazard, &nodes, &req).0, Some(1));
    // `uptime` is load-aware: the oldest node among those that can start the request soonest,
    // so an older node with a queue loses to a younger one that starts at once.
    let old_queued = NodeView {
        age_s: 1e6,
        queue_wait_s: 2.0,
        ..node(&c, 10.0, 1000.0)
    };
    assert_eq!(
        place(PolicyKind::Uptime, &[old_queued, slow], &req).0,
        Some(1)
    );
    assert_eq!(place(PolicyKind::Uptime, &[old_queued], &req).0, Some(0));
}

#[test]
fn random_is_seeded_and_covers_the_feasible_nodes() {
    let c = Exponential { mean: 600.0 };
    let nodes = [
        node(&c, 10.0, 100.0),
        NodeView {
            up: false,
            ..node(&c, 10.0, 100.0)
        },
        node(&c, 10.0, 100.0),
        node(&c, 10.0, 100.0),
    ];
    let req = RequestView::new(1, 100, 10);
    let run = |seed| {
        let mut p = build(PolicyKind::Random, Params::default(), seed);
        let mut out = Explanation::default();
        (0..300)
            .map(|_| p.place(&ClusterView::new(&nodes), &req, &mut out).unwrap())
            .collect::<Vec<_>>()
    };
    let a = run(7);
    assert_eq!(a, run(7));
    assert_ne!(a, run(8));
    let mut counts = [0; 4];
    for i in a {
        counts[i] += 1;
    }
    assert_eq!(counts[1], 0);
    assert!(
        counts[0] > 70 && counts[2] > 70 && counts[3] > 70,
        "{counts:?}"
    );
    // SplitMix64 reference value (seed 0): 0xE220A8397B1DCDAF.
    assert_eq!(SplitMix64::new(0).next_u64(), 0xE220_A839_7B1D_CDAF);
}

struct Truth(Vec<Option<f64>>);
impl Foresight for Truth {
    fn remaining_up(&self, node: usize) -> Option<f64> {
        self.0.get(node).copied().flatten()
    }
}

#[test]
fn oracle_places_away_from_a_known_failure_and_moves_before_it() {
    // Identical nodes, identical curves: only the oracle knows node 0 dies in 5 s (unless the
    // end is announced).
    let c = Exponential { mean: 3600.0 };
    let nodes = [node(&c, 20.0, 2000.0), node(&c, 20.0, 2000.0)];
    let truth = Truth(vec![Some(5.0), Some(1e6)]);
    let view = ClusterView::new(&nodes).with_foresight(&truth);
    let req = RequestView::new(1, 2000, 400);
    let mut oracle = build(PolicyKind::Oracle, Params::default(), 0);
    let mut out = Explanation::default();
    assert_eq!(oracle.place(&view, &req, &mut out), Some(1));
    assert!(out.l == 0.0);
    let mut hazard = build(PolicyKind::Hazard, Params::default(), 0);
    assert_eq!(
        hazard.place(&ClusterView::new(&nodes), &req, &mut out),
        Some(0),
        "tie: the index decides"
    );
    // Given the same end as an announced one (the replay shows other policies only those),
    // hazard prices the hop it forces and places away from it too.
    assert_eq!(hazard.place(&view, &req, &mut out), Some(1));
    // Running on node 0 with 20 s left: move now (recompute 2000/2000 + O_r) beats losing it.
    let running = RequestView {
        node: Some(0),
        resident_tokens: 2000,
        ..req
    };
    assert_eq!(
        oracle.check_migration(&view, &running, 0, &mut out),
        Some(1)
    );
    assert_eq!(out.decision, Decision::Migrate);
    assert_eq!(out.outcome, Outcome::Migrate);
    // No known failure before completion: stay.
    let safe = Truth(vec![Some(1e6), Some(1e6)]);
    let view2 = ClusterView::new(&nodes).with_foresight(&safe);
    assert_eq!(oracle.check_migration(&view2, &running, 0, &mut out), None);
    assert_eq!(out.outcome, Outcome::Stay);
}

#[test]
fn baselines_and_nomigrate_never_migrate() {
    let risky = Exponential { mean: 5.0 };
    let safe = Exponential { mean: 1e9 };
    let nodes = [node(&risky, 20.0, 5000.0), node(&safe, 40.0, 5000.0)];
    let req = RequestView {
        node: Some(0),
        resident_tokens: 1000,
        ..RequestView::new(3, 1000, 1000)
    };
    for k in PolicyKind::ALL {
        let mut p = build(
            k,
            Params {
                kv_bytes_per_token: 131_072.0,
                ..Params::default()
            },
            0,
        );
        let mut out = Explanation::default();
        let d = p.check_migration(&ClusterView::new(&nodes), &req, 0, &mut out);
        if k == PolicyKind::Hazard || k == PolicyKind::HazardTruth {
            // hazard-truth reads the curve the view carries (the engine gives it the law).
            assert_eq!(d, Some(1));
        } else if matches!(
            k,
            PolicyKind::Memoryless | PolicyKind::HazardPooled | PolicyKind::Oracle
        ) {
            // No ML rates (so no mean rate either) and no foresight given: none sees any risk.
            assert_eq!(d, None, "{k}");
        } else {
            assert_eq!(d, None, "{k}");
            assert_eq!(out.outcome, Outcome::MigrationDisabled);
        }
    }
}

#[test]
fn memoryless_reads_the_ml_rate() {
    let c = Weibull {
        shape: 0.5,
        scale: 3600.0,
    };
    let a = NodeView {
        exp_rate_per_s: 1.0 / 60.0,
        ..node(&c, 20.0, 2000.0)
    };
    let b = NodeView {
        exp_rate_per_s: 1.0 / 6000.0,
        ..node(&c, 20.0, 2000.0)
    };
    let req = RequestView::new(1, 2000, 400);
    assert_eq!(place(PolicyKind::Memoryless, &[a, b], &req).0, Some(1));
    assert_eq!(place(PolicyKind::Memoryless, &[b, a], &req).0, Some(0));
}

#[test]
fn explanation_records_candidates_and_serialises() {
    let c = Exponential { mean: 600.0 };
    let nodes = [
        node(&c, 10.0, 1000.0),
        node(&c, 20.0, 1000.0),
        node(&c, 30.0, 1000.0),
    ];
    let req = RequestView::new(9, 1000, 500);
    let mut p = build(PolicyKind::Hazard, Params::default(), 0);
    let mut out = Explanation::recording();
    assert_eq!(p.place(&ClusterView::new(&nodes), &req, &mut out), Some(2));
    assert_eq!(out.candidates.len(), 3);
    let best = out
        .candidates
        .iter()
        .map(|c| c.e)
        .fold(f64::INFINITY, f64::min);
    assert_eq!(best, out.e);
    assert_eq!(out.request, 9);
    let direct = placement_cost(
        &nodes[2],
        2,
        &req,
        1000.0,
        &Params::default(),
        RiskModel::Hazard,
        None,
    );
    assert_eq!(
        direct.e, out.e,
        "placement prices exactly as placement_cost"
    );
    let v = serde_json::to_value(&out).unwrap();
    assert_eq!(v["policy"], "hazard");
    assert_eq!(v["outcome"], "placed");
    assert!(v["c_planned"].is_null());
    assert_eq!(v["candidates"].as_array().unwrap().len(), 3);
    // Reuse keeps the buffer and clears it.
    let cap = out.candidates.capacity();
    p.place(&ClusterView::new(&nodes[..1]), &req, &mut out);
    assert_eq!(out.candidates.len(), 1);
    assert!(out.candidates.capacity() >= cap);
}

#[test]
fn pruned_placement_equals_exhaustive_placement() {
    let curves: Vec<Weibull> = (0..40)
        .map(|i| Weibull {
            shape: 0.4 + 0.1 * (i % 30) as f64,
            scale: 600.0 + 97.0 * i as f64,
        })
        .collect();
    let nodes: Vec<NodeView<'_>> = curves
        .iter()
        .enumerate()
        .map(|(i, c)| NodeView {
            age_s: (i * 137 % 5000) as f64,
            queue_wait_s: (i % 7) as f64,
            ..node(
                c,
                10.0 + (i % 9) as f64 * 7.0,
                500.0 + (i % 5) as f64 * 900.0,
            )
        })
        .collect();
    let req = RequestView::new(1, 3000, 800);
    let mut p = build(PolicyKind::Hazard, Params::default(), 0);
    let mut quick = Explanation::default();
    let mut full = Explanation::recording();
    let a = p.place(&ClusterView::new(&nodes), &req, &mut quick);
    let b = p.place(&ClusterView::new(&nodes), &req, &mut full);
    assert_eq!(a, b);
    assert_eq!(quick.e, full.e);
}

#[test]
fn pruned_migration_equals_exhaustive_migration() {
    let curves: Vec<Weibull> = (0..60)
        .map(|i| Weibull {
            shape: 0.5 + 0.1 * (i % 25) as f64,
            scale: 300.0 + 211.0 * i as f64,
        })
        .collect();
    let mut nodes: Vec<NodeView<'_>> = curves
        .iter()
        .enumerate()
        .map(|(i, c)| NodeView {
            age_s: (i * 613 % 9000) as f64,
            queue_wait_s: (i % 3) as f64,
            bandwidth_bytes_s: [12.5e6, 1.25e8, 1.25e9, 1.25e10][i % 4],
            ..node(
                c,
                15.0 + (i % 7) as f64 * 9.0,
                250.0 + (i % 6) as f64 * 1500.0,
            )
        })
        .collect();
    let risky = Exponential { mean: 40.0 };
    nodes[3] = NodeView {
        survival: &risky,
        ..nodes[3]
    };
    let req = RequestView {
        id: 5,
        prompt_tokens: 2500,
        done_tokens: 300,
        est_output_tokens: 1500,
        node: Some(3),
        resident_tokens: 2800,
        planned_hops: 0,
        est_sigma: 0.0,
        recovering: false,
        conversation: None,
    };
    let mut fired = 0;
    for overlap in [false, true] {
        for h in [0.0, 0.5, 1.0, 3.0] {
            let params = Params {
                overlap,
                hysteresis_s: h,
                ..Params::default()
            };
            let mut p = build(PolicyKind::Hazard, params, 0);
            let mut quick = Explanation::default();
            let mut full = Explanation::recording();
            let a = p.check_migration(&ClusterView::new(&nodes), &req, 3, &mut quick);
            let b = p.check_migration(&ClusterView::new(&nodes), &req, 3, &mut full);
            assert_eq!(a, b, "overlap {overlap} h {h}");
            if a.is_some() {
                fired += 1;
                assert_eq!(quick.risk_gain, full.risk_gain);
                let best = full
                    .candidates
                    .iter()
                    .filter(|c| c.risk_gain > h && c.dt < h)
                    .map(|c| c.risk_gain)
                    .fold(f64::NEG_INFINITY, f64::max);
                assert_eq!(best, full.risk_gain);
            }
        }
    }
    assert!(fired >= 2, "the scenario should exercise moves: {fired}");
}

proptest! {
    #[test]
    fn loss_is_bounded_by_failure_probability_times_u(
        mean in 1.0f64..1e6, age in 0.0f64..1e5, w in 0.0f64..30.0, d in 0.0f64..200.0,
        rem in 0.0f64..4000.0, c in 1.0f64..32000.0, p in 10.0f64..20000.0,
    ) {
        let u = UnplannedLoss::new(c, w, d, rem, p, 0.1, 2.0);
        let horizon = w + if d > 0.0 { rem / d } else { 0.0 } + 1.0;
        for curve in [&Exponential { mean } as &dyn ConditionalSurvival, &Weibull { shape: 0.3 + mean % 4.0, scale: mean }] {
            let l = expected_loss(curve, age, horizon, &u);
            let fail = 1.0 - curve.conditional(age, horizon);
            prop_assert!(l >= 0.0);
            prop_assert!(l >= fail * u.at(0.0) - 1e-9 * u.at(horizon));
            prop_assert!(l <= fail * u.at(horizon) + 1e-9 * u.at(horizon));
        }
    }

    #[test]
    fn crossover_classification_matches_the_costs(
        ot in 0.0f64..1.0, or in 0.0f64..1.0, kv in 1.0f64..2e6, b in 1e6f64..1e12,
        p in 1.0f64..1e5, ctx in 1.0f64..1e6,
    ) {
        let pc = planned_cost(ctx, kv, b, b, p, ot, or);
        let strictly = pc.transfer_s < pc.recompute_s;
        let near = (pc.transfer_s - pc.recompute_s).abs() <= 1e-9 * pc.transfer_s.max(pc.recompute_s);
        let predicted = match crossover(ot, or, kv, b, p) {
            Crossover::TransferAlways => true,
            Crossover::TransferNever | Crossover::Tie => false,
            Crossover::TransferAbove(s) => ctx > s,
            Crossover::TransferBelow(s) => ctx < s,
        };
        if !near {
            prop_assert_eq!(strictly, predicted);
            prop_assert_eq!(pc.method == MoveMethod::Transfer, predicted);
        }
    }
}

proptest! {
    /// A view that lists its up nodes (`ClusterView::with_active`, as the replay passes it)
    /// decides exactly as the full view: same placement, same migration target, same
    /// candidates priced.
    #[test]
    fn listing_the_up_nodes_changes_no_decision(
        seed in 0u64..1_000_000, n in 1usize..24, from_pick in 0usize..24,
    ) {
        let mut rng = hazardserve::rng::Rng::new(seed);
        let curves: Vec<Weibull> = (0..n)
            .map(|_| Weibull { shape: 0.4 + 3.0 * rng.uniform(), scale: 60.0 + 6000.0 * rng.uniform() })
            .collect();
        let nodes: Vec<NodeView<'_>> = curves
            .iter()
            .map(|c| NodeView {
                up: rng.uniform() < 0.6,
                age_s: 5000.0 * rng.uniform(),
                slots_used: (rng.uniform() * 5.0) as u32,
                queue_wait_s: 30.0 * rng.uniform(),
                ..node(c, 20.0 + 400.0 * rng.uniform(), 500.0 + 1e4 * rng.uniform())
            })
            .collect();
        let active: Vec<usize> = (0..n).filter(|&i| nodes[i].up).collect();
        let req = RequestView::new(7, 2000, 800);
        for kind in PolicyKind::ALL {
            if matches!(kind, PolicyKind::Oracle) {
                continue;
            }
            let decide = |listed: bool| {
                let mut p = build(kind, Params::default(), seed);
                let mut view = ClusterView::new(&nodes);
                if listed {
                    view = view.with_active(&active);
                }
                let mut out = Explanation { record_candidates: true, ..Explanation::default() };
                let placed = p.place(&view, &req, &mut out);
                let priced = out.candidates.len();
                let moved = active.get(from_pick % active.len().max(1)).and_then(|&from| {
                    let mut out = Explanation::default();
                    let req = RequestView { node: Some(from), done_tokens: 100, ..req };
                    p.check_migration(&view, &req, from, &mut out)
                });
                (placed, priced, moved)
            };
            prop_assert_eq!(decide(false), decide(true), "{}", kind.name());
        }
    }
}
