//! Replay engine: hand-computed scenarios for service, queueing, failures, pending requests,
//! planned moves (recompute, transfer, overlapped), batch slowdown and workload shaping.

use hazardserve::policy::{MoveMethod, PolicyKind};
use hazardserve::replay::{
    simulate_with, Cluster, DropReason, LengthEstimator, ReplayConfig, RunSpec, Window, Workload,
};

use super::replay_support::*;

/// Unplanned recovery of a 1040-token context at 1000 tok/s with the default constants:
/// `O_r + c / p + sigma = 0.1 + 1.04 + 2`.
const RECOVERY_1040: f64 = 0.1 + 1.04 + 2.0;

fn scripted_run(
    cluster: &Cluster,
    requests: Vec<hazardserve::replay::Request>,
    cfg: &ReplayConfig,
    policy: &mut Scripted,
    length_s: f64,
) -> hazardserve::replay::RunOutput {
    let spec = RunSpec::new(
        PolicyKind::Hazard,
        Window::new(0, us(length_s)),
        1,
        cfg.params,
    );
    simulate_with(cluster, &Workload::new(requests), cfg, &spec, policy).expect("replay runs")
}

#[test]
fn replay_single_request_prefill_then_decode() {
    let c = Cluster::new(vec![always_up("a", 1, 1000.0, 10.0)]);
    let out = run(
        &c,
        vec![req(7, 0.0, 1000, 50)],
        &checked(),
        PolicyKind::Fastest,
        100.0,
    );
    let r = &out.records[0];
    assert_eq!(r.id, 7);
    close(r.ttft_s, 1.0);
    close(r.completion_s, 6.0);
    assert_eq!(r.generated_tokens, 50);
    assert_eq!(
        (r.first_node, r.final_node, r.nodes_visited),
        (Some(0), Some(0), 1)
    );
    assert!(r.slo_met);
    assert_eq!(r.dropped, None);
    // deadline = 5 * (1000/1000 + 50/10)
    assert!((r.slo_deadline_s - 30.0).abs() < 1e-9);
}

#[test]
fn replay_unplanned_loss_recovers_on_another_node() {
    // Node 0 is faster (fastest picks it) and dies at 3 s; node 1 is up throughout.
    let c = Cluster::new(vec![
        node("fast", 1, 1000.0, 20.0, &[(0.0, Some(3.0)), (100.0, None)]),
        always_up("slow", 1, 1000.0, 10.0),
    ]);
    let out = run(
        &c,
        vec![req(0, 0.0, 1000, 100)],
        &checked(),
        PolicyKind::Fastest,
        50.0,
    );
    let r = &out.records[0];
    // 0-1 s prefill; 1-3 s decode 40 tokens; loss; recovery O_r + 1040/1000 + sigma;
    // 60 tokens at 10 tok/s.
    close(r.completion_s, 3.0 + RECOVERY_1040 + 6.0);
    assert_eq!(r.interruptions, 1);
    assert_eq!(r.recomputed_unplanned_tokens, 1040);
    assert_eq!(r.recomputed_planned_tokens, 0);
    assert_eq!(
        (r.first_node, r.final_node, r.nodes_visited),
        (Some(0), Some(1), 2)
    );
    assert_eq!(r.generated_tokens, 100);
    close(r.ttft_s, 1.0);
    assert_eq!(out.stats.node_failures, 1);
}

#[test]
fn replay_queued_requests_are_replaced_when_their_node_dies() {
    // One slot on node 0 (fast, dies at 1.5 s); the second request queues there and must be
    // re-placed on node 1 when node 0 dies.
    let c = Cluster::new(vec![
        node("fast", 1, 1000.0, 100.0, &[(0.0, Some(1.5))]),
        always_up("slow", 1, 1000.0, 1.0),
    ]);
    let out = run(
        &c,
        vec![req(0, 0.0, 1000, 100), req(1, 0.0, 1000, 100)],
        &checked(),
        PolicyKind::Fastest,
        1000.0,
    );
    let (a, b) = (&out.records[0], &out.records[1]);
    assert_eq!(a.first_node, Some(0));
    assert_eq!(a.interruptions, 1);
    // The queued one never started on node 0: no interruption, no recompute.
    assert_eq!(b.interruptions, 0);
    assert_eq!(b.recomputed_unplanned_tokens, 0);
    assert!(a.completion_s.is_some() && b.completion_s.is_some());
}

#[test]
fn replay_pending_until_a_node_comes_up_or_dropped_at_window_end() {
    let c = Cluster::new(vec![node("late", 1, 1000.0, 10.0, &[(10.0, None)])]);
    let out = run(
        &c,
        vec![req(0, 0.0, 1000, 50)],
        &checked(),
        PolicyKind::Hazard,
        100.0,
    );
    close(out.records[0].completion_s, 16.0);
    assert_eq!(out.stats.pending_entries, 1);
    let out = run(
        &c,
        vec![req(0, 0.0, 1000, 50)],
        &checked(),
        PolicyKind::Hazard,
        5.0,
    );
    let r = &out.records[0];
    assert_eq!(r.dropped, Some(DropReason::WindowEnd));
    assert_eq!(r.completion_s, None);
    assert_eq!(r.first_node, None);
    assert!(!r.slo_met);
    assert_eq!(
        serde_json::to_value(r.dropped).expect("json"),
        serde_json::json!("window-end")
    );
}

#[test]
fn replay_fifo_queue_serialises_one_slot() {
    let c = Cluster::new(vec![always_up("a", 1, 1000.0, 10.0)]);
    let reqs = (0..3).map(|i| req(i, 0.0, 1000, 10)).collect();
    let out = run(&c, reqs, &checked(), PolicyKind::LeastLoaded, 100.0);
    let done: Vec<f64> = out.records.iter().filter_map(|r| r.completion_s).collect();
    assert_eq!(done.len(), 3);
    for (got, want) in done.iter().zip([2.0, 4.0, 6.0]) {
        assert!((got - want).abs() < 2e-6, "{done:?}");
    }
}

#[test]
fn replay_kv_capacity_limits_concurrency() {
    let mut n = always_up("a", 4, 1000.0, 10.0);
    n.spec.kv_capacity_tokens = 2500; // two requests of 1010 tokens fit, not three
    let c = Cluster::new(vec![n]);
    let reqs = (0..4).map(|i| req(i, 0.0, 1000, 10)).collect();
    let out = run(&c, reqs, &checked(), PolicyKind::Fastest, 100.0);
    let done: Vec<f64> = out.records.iter().filter_map(|r| r.completion_s).collect();
    for (got, want) in done.iter().zip([2.0, 2.0, 4.0, 4.0]) {
        assert!((got - want).abs() < 2e-6, "{done:?}");
    }
}

#[test]
fn replay_request_too_large_for_any_node_waits_then_drops() {
    let mut n = always_up("a", 4, 1000.0, 10.0);
    n.spec.kv_capacity_tokens = 100;
    let c = Cluster::new(vec![n]);
    let out = run(
        &c,
        vec![req(0, 0.0, 1000, 10)],
        &checked(),
        PolicyKind::Fastest,
        50.0,
    );
    assert_eq!(out.records[0].dropped, Some(DropReason::WindowEnd));
}

#[test]
fn replay_batch_slowdown_divides_decode_rate() {
    let c = Cluster::new(vec![always_up("a", 2, 1000.0, 10.0)]);
    let cfg = ReplayConfig {
        batch_slowdown: 1.0,
        ..checked()
    };
    // Alone for 1 s (10 tokens), together at 5 tok/s each until the first finishes at 3 s
    // (10 more), then the second alone at 10 tok/s: it has 10 of 20 at 3 s, done at 4 s.
    let out = run(
        &c,
        vec![req(0, 0.0, 0, 20), req(1, 1.0, 0, 20)],
        &cfg,
        PolicyKind::Fastest,
        100.0,
    );
    close(out.records[0].completion_s, 3.0);
    close(out.records[1].completion_s, 3.0);
    assert!(out.stats.stale_events > 0);
}

#[test]
fn replay_rate_scale_and_looping_fill_the_window() {
    let c = Cluster::new(vec![always_up("a", 64, 1e6, 1e6)]);
    let cfg = ReplayConfig {
        rate_scale: 2.0,
        loop_workload: true,
        ..checked()
    };
    // Scaled arrivals 0, 0.5, 1.0 s; period 1.5 s; copies at 0, 1.5, ..., 9.0 s in a 10 s window.
    let reqs = vec![req(10, 0.0, 1, 1), req(11, 1.0, 1, 1), req(12, 2.0, 1, 1)];
    let out = run(&c, reqs, &cfg, PolicyKind::Fastest, 10.0);
    assert_eq!(out.records.len(), 20);
    assert_eq!(out.records[3].copy, 1);
    assert!((out.records[3].arrival_s - 1.5).abs() < 1e-9);
    assert_eq!(out.records[19].id, 11);
    assert_eq!(out.records[19].copy, 6);
    assert!((out.records[19].arrival_s - 9.5).abs() < 1e-9);
    let ids: Vec<u64> = out.records.iter().map(|r| r.request).collect();
    assert_eq!(ids, (0..20).collect::<Vec<u64>>());
}

#[test]
fn replay_estimators() {
    let c = Cluster::new(vec![always_up("a", 64, 1e6, 1e6)]);
    let reqs = vec![
        req(0, 0.0, 100, 10),
        req(1, 0.0, 120, 30),
        req(2, 0.0, 1000, 5),
        req(3, 0.0, 0, 7),
    ];
    let cfg = |e| ReplayConfig {
        estimator: e,
        ..checked()
    };
    let ests = |e, seed| {
        let spec = RunSpec::new(
            PolicyKind::Fastest,
            Window::new(0, us(10.0)),
            seed,
            cfg(e).params,
        );
        hazardserve::replay::simulate(&c, &Workload::new(reqs.clone()), &cfg(e), &spec)
            .expect("runs")
            .records
            .iter()
            .map(|r| r.est_output_tokens)
            .collect::<Vec<u64>>()
    };
    assert_eq!(ests(LengthEstimator::Exact, 1), vec![10, 30, 5, 7]);
    // Bucket: the posterior median of the bucket's mean, `mean e^{-s^2/2}`, `s^2` the pooled
    // within-bucket log-variance (one degree of freedom: ln 10 and ln 30 in bucket 7),
    // `s^2 = (ln 3)^2 / 2 = 0.603`: 20 -> 14.8, 5 -> 3.7, 7 -> 5.2.
    assert_eq!(ests(LengthEstimator::Bucket, 1), vec![15, 15, 4, 5]);
    let ln = "lognormal:0.5".parse::<LengthEstimator>().expect("parses");
    assert_eq!(ln, LengthEstimator::Lognormal { sigma: 0.5 });
    assert_eq!("lognormal".parse::<LengthEstimator>().expect("parses"), ln);
    assert!("lognormal:x".parse::<LengthEstimator>().is_err());
    assert!("oracle".parse::<LengthEstimator>().is_err());
    let a = ests(ln, 1);
    assert_eq!(a, ests(ln, 1), "seeded per request");
    assert_ne!(a, ests(ln, 2), "different seeds, different noise");
    assert_ne!(a, vec![10, 30, 5, 7]);
}

#[test]
fn replay_node_age_comes_from_the_trace_start_of_the_session() {
    use hazardserve::policy::{ClusterView, Explanation, NodeIdx, Policy, RequestView};
    struct Ages(Vec<(f64, f64)>);
    impl Policy for Ages {
        fn kind(&self) -> PolicyKind {
            PolicyKind::Fastest
        }
        fn place(
            &mut self,
            view: &ClusterView<'_>,
            _req: &RequestView,
            out: &mut Explanation,
        ) -> Option<NodeIdx> {
            *out = Explanation::default();
            self.0.push((view.nodes[0].age_s, view.nodes[1].age_s));
            Some(0)
        }
        fn check_migration(
            &mut self,
            _: &ClusterView<'_>,
            _: &RequestView,
            _: NodeIdx,
            _: &mut Explanation,
        ) -> Option<NodeIdx> {
            None
        }
    }
    // Window starts at 1000 s; node 0's session began at 900 s, node 1's at 1010 s.
    let c = Cluster::new(vec![
        node("old", 8, 1000.0, 10.0, &[(900.0, None)]),
        node("new", 8, 1000.0, 10.0, &[(1010.0, None)]),
    ]);
    let cfg = checked();
    let spec = RunSpec::new(
        PolicyKind::Fastest,
        Window::new(us(1000.0), us(100.0)),
        1,
        cfg.params,
    );
    let mut p = Ages(Vec::new());
    simulate_with(
        &c,
        &Workload::new(vec![req(0, 5.0, 10, 10), req(1, 30.0, 10, 10)]),
        &cfg,
        &spec,
        &mut p,
    )
    .expect("runs");
    assert_eq!(p.0, vec![(105.0, 0.0), (130.0, 20.0)]);
}

fn two_nodes() -> Cluster {
    Cluster::new(vec![
        always_up("a", 2, 1000.0, 10.0),
        always_up("b", 2, 1000.0, 10.0),
    ])
}

#[test]
fn replay_planned_recompute_move() {
    let mut p = Scripted::new(vec![0, 1]);
    p.from = 0;
    p.to = 1;
    p.cost_s = 1.5;
    p.method = MoveMethod::Recompute;
    let out = scripted_run(
        &two_nodes(),
        vec![req(0, 0.0, 1000, 100)],
        &checked(),
        &mut p,
        100.0,
    );
    let r = &out.records[0];
    // Check at 5 s (40 tokens done), pause 1.5 s, 60 tokens at 10 tok/s.
    close(r.completion_s, 5.0 + 1.5 + 6.0);
    assert_eq!(r.planned_migrations, 1);
    assert_eq!(r.recomputed_planned_tokens, 1040);
    assert_eq!(r.kv_bytes_moved, 0.0);
    assert_eq!(
        (r.first_node, r.final_node, r.nodes_visited),
        (Some(0), Some(1), 2)
    );
    assert_eq!(r.interruptions, 0);
}

#[test]
fn replay_planned_transfer_move_and_source_failure_during_it() {
    let mut p = Scripted::new(vec![0, 1]);
    p.from = 0;
    p.to = 1;
    p.cost_s = 0.5;
    p.method = MoveMethod::Transfer;
    let cfg = checked();
    let out = scripted_run(
        &two_nodes(),
        vec![req(0, 0.0, 1000, 100)],
        &cfg,
        &mut p,
        100.0,
    );
    let r = &out.records[0];
    close(r.completion_s, 5.0 + 0.5 + 6.0);
    assert_eq!(r.kv_bytes_moved, 1040.0 * cfg.params.kv_bytes_per_token);
    assert_eq!(r.recomputed_planned_tokens, 0);

    // The source dies 0.2 s into the transfer: the move fails as an unplanned loss.
    let c = Cluster::new(vec![
        node("a", 2, 1000.0, 10.0, &[(0.0, Some(5.2)), (500.0, None)]),
        always_up("b", 2, 1000.0, 10.0),
    ]);
    let mut p = Scripted::new(vec![0, 1]);
    p.from = 0;
    p.to = 1;
    p.cost_s = 0.5;
    p.method = MoveMethod::Transfer;
    let out = scripted_run(&c, vec![req(0, 0.0, 1000, 100)], &cfg, &mut p, 100.0);
    let r = &out.records[0];
    assert_eq!(r.interruptions, 1);
    assert_eq!(r.planned_migrations, 1);
    assert_eq!(r.recomputed_unplanned_tokens, 1040);
    close(r.completion_s, 5.2 + RECOVERY_1040 + 6.0);
}

#[test]
fn replay_overlapped_move_pays_only_the_catch_up() {
    let mut p = Scripted::new(vec![0, 1]);
    p.from = 0;
    p.to = 1;
    p.cost_s = 0.12;
    p.method = MoveMethod::Recompute;
    p.window_s = 2.0;
    let cfg = checked();
    let out = scripted_run(
        &two_nodes(),
        vec![req(0, 0.0, 1000, 100)],
        &cfg,
        &mut p,
        100.0,
    );
    let r = &out.records[0];
    // Window 5-7 s: the source decodes 20 more tokens; catch-up = min(O_t + 20 kv/B,
    // O_r + 20/p) = 0.1 + 0.02 s (recompute); then 40 tokens at 10 tok/s.
    close(r.completion_s, 7.0 + 0.12 + 4.0);
    assert_eq!(r.planned_migrations, 1);
    // Bulk context (1040 tokens) shipped during the window (transfer is cheaper at 10 Gbit/s),
    // the 20-token catch-up recomputed.
    assert_eq!(r.kv_bytes_moved, 1040.0 * cfg.params.kv_bytes_per_token);
    assert_eq!(r.recomputed_planned_tokens, 20);
    assert_eq!(r.final_node, Some(1));
}

#[test]
fn replay_overlapped_move_cancelled_when_request_finishes_first() {
    let mut p = Scripted::new(vec![0, 1]);
    p.from = 0;
    p.to = 1;
    p.cost_s = 0.1;
    p.window_s = 50.0;
    let out = scripted_run(
        &two_nodes(),
        vec![req(0, 0.0, 1000, 100)],
        &checked(),
        &mut p,
        100.0,
    );
    let r = &out.records[0];
    close(r.completion_s, 11.0);
    assert_eq!(r.planned_migrations, 0);
    assert_eq!(r.final_node, Some(0));
}

#[test]
fn replay_move_to_a_full_or_down_node_is_refused() {
    let c = Cluster::new(vec![
        always_up("a", 2, 1000.0, 10.0),
        node("down", 2, 1000.0, 10.0, &[(500.0, None)]),
    ]);
    let mut p = Scripted::new(vec![0]);
    p.from = 0;
    p.to = 1;
    p.cost_s = 1.0;
    let out = scripted_run(&c, vec![req(0, 0.0, 1000, 100)], &checked(), &mut p, 100.0);
    assert_eq!(out.records[0].planned_migrations, 0);
    assert_eq!(out.stats.moves_refused, 1);
    close(out.records[0].completion_s, 11.0);
}

#[test]
fn replay_rejects_bad_inputs() {
    use hazardserve::replay::{simulate, ReplayError, UpSession};
    let ok = Cluster::new(vec![always_up("a", 1, 1000.0, 10.0)]);
    let w = Workload::new(vec![req(0, 0.0, 1, 1)]);
    let cfg = ReplayConfig::default();
    let spec = RunSpec::new(PolicyKind::Fastest, Window::new(0, us(10.0)), 1, cfg.params);
    let mut bad = ok.clone();
    bad.nodes[0].sessions = vec![UpSession::new(10, 5)];
    assert!(matches!(
        simulate(&bad, &w, &cfg, &spec),
        Err(ReplayError::BadSession { .. })
    ));
    let mut bad = ok.clone();
    bad.nodes[0].sessions = vec![UpSession::new(0, 10), UpSession::new(5, 20)];
    assert!(simulate(&bad, &w, &cfg, &spec).is_err());
    let mut bad = ok.clone();
    bad.nodes[0].spec.decode_tok_s = f64::NAN;
    assert!(matches!(
        simulate(&bad, &w, &cfg, &spec),
        Err(ReplayError::BadNode { .. })
    ));
    assert!(matches!(
        simulate(&Cluster::default(), &w, &cfg, &spec),
        Err(ReplayError::NoNodes)
    ));
    let neg = Workload::new(vec![req(0, -1.0, 1, 1)]);
    assert!(matches!(
        simulate(&ok, &neg, &cfg, &spec),
        Err(ReplayError::BadRequest { .. })
    ));
    let empty = RunSpec::new(PolicyKind::Fastest, Window::new(0, 0), 1, cfg.params);
    assert!(matches!(
        simulate(&ok, &w, &cfg, &empty),
        Err(ReplayError::BadWindow { .. })
    ));
    let bad_cfg = ReplayConfig {
        rate_scale: 0.0,
        ..cfg
    };
    assert!(matches!(
        simulate(&ok, &w, &bad_cfg, &spec),
        Err(ReplayError::BadConfig(_))
    ));
}
