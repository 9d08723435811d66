//! Replay invariants under random clusters, traces, workloads and policies (validation mode:
//! the engine checks slots, KV capacity, ledgers and "nothing runs on a down node" after every
//! event), determinism, the no-failure equivalence of the hazard-aware and hazard-blind
//! policies, and the oracle's avoidance of foreseeable unplanned interruptions.

use std::sync::Arc;

use proptest::prelude::*;

use hazardserve::policy::iteration::EngineKind;
use hazardserve::policy::{Params, PolicyKind};
use hazardserve::replay::{
    simulate, simulate_with, Cluster, DropReason, LengthEstimator, Node, NodeSpec, ReplayConfig,
    Request, RunOutput, RunSpec, UpSession, Window, Workload,
};
use hazardserve::rng::SplitMix64;
use hazardserve::survival::curve::Weibull;

use super::replay_support::*;

#[derive(Debug, Clone)]
struct NodeGen {
    slots: u32,
    cap: u64,
    p: f64,
    d: f64,
    offset: f64,
    periods: Vec<(f64, f64)>,
    open_end: bool,
    shape: f64,
    scale: f64,
}

fn node_gen() -> impl Strategy<Value = NodeGen> {
    (
        (0u32..4, 300u64..6000, 100.0f64..3000.0, 5.0f64..60.0),
        (
            -60.0f64..30.0,
            prop::collection::vec((0.5f64..80.0, 0.1f64..40.0), 0..6),
            any::<bool>(),
            0.4f64..2.5,
            5.0f64..300.0,
        ),
    )
        .prop_map(
            |((slots, cap, p, d), (offset, periods, open_end, shape, scale))| NodeGen {
                slots,
                cap,
                p,
                d,
                offset,
                periods,
                open_end,
                shape,
                scale,
            },
        )
}

fn build_node(i: usize, g: &NodeGen) -> Node {
    let mut t = g.offset;
    let mut sessions = Vec::new();
    for (k, &(up, down)) in g.periods.iter().enumerate() {
        let end = if g.open_end && k + 1 == g.periods.len() {
            UpSession::OPEN_END
        } else {
            us(t + up)
        };
        sessions.push(UpSession::new(us(t), end));
        t += up + down;
    }
    Node {
        name: format!("n{i}"),
        spec: NodeSpec {
            slots: g.slots,
            kv_capacity_tokens: g.cap,
            prefill_tok_s: g.p,
            decode_tok_s: g.d,
            bandwidth_bytes_s: 1.25e8,
            step: Default::default(),
        },
        sessions,
        survival: Arc::new(Weibull {
            shape: g.shape,
            scale: g.scale,
        }),
        exp_rate_per_s: 1.0 / g.scale,
        truth: Some(Arc::new(Weibull {
            shape: g.shape,
            scale: g.scale,
        })),
    }
}

fn workload_gen(max: usize) -> impl Strategy<Value = Vec<Request>> {
    prop::collection::vec((0u32..60_000, 0u64..1500, 0u64..200), 0..max).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (ms, p, o))| Request {
                id: i as u64,
                arrival_us: i64::from(ms) * 1000,
                prompt_tokens: p,
                output_tokens: o,
            })
            .collect()
    })
}

#[derive(Debug, Clone)]
struct CfgGen {
    estimator: u8,
    slowdown: bool,
    overlap: bool,
    interval: f64,
    looped: bool,
    scale: f64,
    start: f64,
    length: f64,
    hysteresis: f64,
    /// The iteration engine (else the simple one).
    iteration: bool,
}

fn cfg_gen() -> impl Strategy<Value = CfgGen> {
    (
        (
            0u8..3,
            any::<bool>(),
            any::<bool>(),
            0.5f64..10.0,
            any::<bool>(),
        ),
        (
            0.5f64..3.0,
            -10.0f64..10.0,
            20.0f64..150.0,
            -5.0f64..2.0,
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (estimator, slowdown, overlap, interval, looped),
                (scale, start, length, h, iteration),
            )| {
                CfgGen {
                    estimator,
                    slowdown,
                    overlap,
                    interval,
                    looped,
                    scale,
                    start,
                    length,
                    hysteresis: h,
                    iteration,
                }
            },
        )
}

fn config(g: &CfgGen) -> (ReplayConfig, Window) {
    let params = Params {
        overlap: g.overlap,
        check_interval_s: g.interval,
        // Negative h makes the hazard trigger fire often: exercises planned moves.
        hysteresis_s: g.hysteresis,
        min_remaining_s: 0.0,
        ..Params::default()
    };
    let cfg = ReplayConfig {
        params,
        estimator: match g.estimator {
            0 => LengthEstimator::Exact,
            1 => LengthEstimator::Lognormal { sigma: 0.8 },
            _ => LengthEstimator::Bucket,
        },
        batch_slowdown: if g.slowdown { 0.5 } else { 0.0 },
        rate_scale: g.scale,
        loop_workload: g.looped,
        validate: true,
        engine: if g.iteration {
            EngineKind::Iteration
        } else {
            EngineKind::Simple
        },
        ..ReplayConfig::default()
    };
    (cfg, Window::new(us(g.start), us(g.length)))
}

fn check_records(out: &RunOutput) -> Result<(), TestCaseError> {
    for (k, r) in out.records.iter().enumerate() {
        prop_assert_eq!(r.request, k as u64);
        match r.completion_s {
            Some(c) => {
                prop_assert_eq!(r.dropped, None);
                prop_assert_eq!(r.generated_tokens, r.output_tokens);
                prop_assert!(c >= 0.0);
                prop_assert!(r.ttft_s.is_some_and(|t| t <= c + 1e-9));
                // `bound` is analytic: no node holds its requests.
                if out.policy != PolicyKind::Bound {
                    prop_assert!(r.final_node.is_some());
                    prop_assert!(r.nodes_visited >= 1);
                }
            }
            None => {
                prop_assert_eq!(r.dropped, Some(DropReason::WindowEnd));
                prop_assert!(r.generated_tokens <= r.output_tokens);
                prop_assert!(!r.slo_met);
            }
        }
        // A stint starts with the request, each planned move, each unplanned loss and, under
        // the iteration engine, each restart after a KV preemption.
        prop_assert!(
            r.planned_migrations + r.interruptions + r.kv_preemptions + 1 >= r.nodes_visited
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every request completes exactly once (the engine errors on a second completion) or is
    /// dropped with a reason; completed requests generated exactly their output; slots, KV
    /// capacity and "no request on a down node" hold at every event (validation mode); the
    /// same inputs and seed give identical outputs.
    #[test]
    fn replay_invariants_hold_for_every_policy(
        gens in prop::collection::vec(node_gen(), 1..5),
        reqs in workload_gen(30),
        cg in cfg_gen(),
        policy in 0usize..12,
        seed in 0u64..1000,
    ) {
        let cluster = Cluster::new(gens.iter().enumerate().map(|(i, g)| build_node(i, g)).collect());
        let (cfg, window) = config(&cg);
        let w = Workload::new(reqs);
        let go = || -> RunOutput {
            if policy < PolicyKind::ALL.len() {
                let spec = RunSpec::new(PolicyKind::ALL[policy], window, seed, cfg.params);
                simulate(&cluster, &w, &cfg, &spec).unwrap_or_else(|e| panic!("{e}"))
            } else {
                let spec = RunSpec::new(PolicyKind::Hazard, window, seed, cfg.params);
                let mut chaos = Chaos { rng: SplitMix64::new(seed) };
                simulate_with(&cluster, &w, &cfg, &spec, &mut chaos).unwrap_or_else(|e| panic!("{e}"))
            }
        };
        let a = go();
        check_records(&a)?;
        let b = go();
        prop_assert_eq!(a, b);
    }

    /// Planned moves of every kind (recompute, transfer, overlapped; to down, full or missing
    /// nodes) interleaved with failures keep every invariant: a chaotic policy on nodes that
    /// fail and return often.
    #[test]
    fn replay_random_moves_keep_invariants(
        nodes in prop::collection::vec(
            (1u32..4, prop::collection::vec((2.0f64..40.0, 0.1f64..8.0), 1..12)),
            2..5,
        ),
        reqs in prop::collection::vec((0u32..80_000, 0u64..2000, 20u64..300), 1..40),
        interval in 0.3f64..3.0,
        slowdown in any::<bool>(),
        seed in 0u64..10_000,
    ) {
        let cluster = Cluster::new(
            nodes
                .iter()
                .enumerate()
                .map(|(i, (slots, periods))| {
                    let mut t = -5.0;
                    let mut sessions = Vec::new();
                    for &(up, down) in periods {
                        sessions.push((t, Some(t + up)));
                        t += up + down;
                    }
                    sessions.push((t, None));
                    node(&format!("n{i}"), *slots, 500.0 + 400.0 * i as f64, 10.0 + 5.0 * i as f64, &sessions)
                })
                .collect(),
        );
        let w = Workload::new(
            reqs.iter()
                .enumerate()
                .map(|(i, &(ms, p, o))| req(i as u64, f64::from(ms) / 1000.0, p, o))
                .collect(),
        );
        let cfg = ReplayConfig {
            params: Params { check_interval_s: interval, ..Params::default() },
            batch_slowdown: if slowdown { 0.4 } else { 0.0 },
            ..checked()
        };
        let spec = RunSpec::new(PolicyKind::Hazard, Window::new(0, us(120.0)), seed, cfg.params);
        let go = || {
            let mut chaos = Chaos { rng: SplitMix64::new(seed) };
            simulate_with(&cluster, &w, &cfg, &spec, &mut chaos).unwrap_or_else(|e| panic!("{e}"))
        };
        let a = go();
        check_records(&a)?;
        prop_assert_eq!(a, go());
    }

    /// With a trace where no node ever fails (and curves fitted to it: no hazard), `hazard`,
    /// `memoryless` and `fastest` make the same decisions: identical per-request records.
    #[test]
    fn replay_no_failures_hazard_memoryless_fastest_agree(
        speeds in prop::collection::vec((1u32..4, 200.0f64..3000.0, 5.0f64..50.0), 1..5),
        reqs in workload_gen(40),
        slowdown in any::<bool>(),
        seed in 0u64..100,
    ) {
        let cluster = Cluster::new(
            speeds
                .iter()
                .enumerate()
                .map(|(i, &(slots, p, d))| always_up(&format!("n{i}"), slots, p, d))
                .collect(),
        );
        let cfg = ReplayConfig {
            batch_slowdown: if slowdown { 0.3 } else { 0.0 },
            estimator: LengthEstimator::Lognormal { sigma: 0.5 },
            ..checked()
        };
        let w = Workload::new(reqs);
        let window = Window::new(0, us(200.0));
        let records = |k: PolicyKind| {
            let spec = RunSpec::new(k, window, seed, cfg.params);
            simulate(&cluster, &w, &cfg, &spec).unwrap_or_else(|e| panic!("{e}")).records
        };
        let f = records(PolicyKind::Fastest);
        prop_assert_eq!(&records(PolicyKind::Hazard), &f);
        prop_assert_eq!(&records(PolicyKind::Memoryless), &f);
    }

    /// The oracle suffers no unplanned interruption it could have avoided. Precisely: node 0
    /// fails mid-window (possibly mid-request) and node 1, as fast, is up throughout with a slot
    /// and KV room for every request; estimates are exact, so the oracle knows each request's
    /// service time and each node's remaining session, and no request it places is ever
    /// interrupted. (`fastest`, hazard-blind, picks node 0 on ties and is interrupted.)
    #[test]
    fn replay_oracle_avoids_foreseeable_interruptions(
        fail_ms in 1_000u32..50_000,
        back in prop::option::of(1_000u32..40_000),
        slots0 in 1u32..4,
        reqs in workload_gen(25),
    ) {
        // Failures at x.5 ms never coincide with service boundaries (whole ms at these rates).
        let fail = f64::from(fail_ms) / 1000.0 + 0.0005;
        let mut sessions = vec![(-100.0, Some(fail))];
        if let Some(b) = back {
            sessions.push((fail + f64::from(b) / 1000.0, None));
        }
        // Prompts at 1000 tok/s and outputs at 10 tok/s take whole milliseconds.
        let n = reqs.len().max(1) as u32;
        let cluster = Cluster::new(vec![
            node("failing", slots0, 1000.0, 10.0, &sessions),
            always_up("steady", n, 1000.0, 10.0),
        ]);
        let cfg = checked();
        let w = Workload::new(reqs);
        let window = Window::new(0, us(300.0));
        let spec = RunSpec::new(PolicyKind::Oracle, window, 1, cfg.params);
        let out = simulate(&cluster, &w, &cfg, &spec).unwrap_or_else(|e| panic!("{e}"));
        for r in &out.records {
            prop_assert_eq!(r.interruptions, 0, "request {:?}", r);
            prop_assert!(r.completion_s.is_some());
        }
    }
}

#[test]
fn replay_oracle_beats_fastest_on_a_failing_fast_node() {
    // The sanity side of the oracle property: the same scenario interrupts `fastest`.
    let cluster = Cluster::new(vec![
        node("failing", 4, 1000.0, 10.0, &[(-100.0, Some(5.0005))]),
        always_up("steady", 4, 1000.0, 10.0),
    ]);
    let reqs: Vec<Request> = (0..4).map(|i| req(i, 0.0, 500, 100)).collect();
    let cfg = checked();
    let fastest = run(&cluster, reqs.clone(), &cfg, PolicyKind::Fastest, 100.0);
    let oracle = run(&cluster, reqs, &cfg, PolicyKind::Oracle, 100.0);
    let count = |o: &RunOutput| o.records.iter().map(|r| r.interruptions).sum::<u32>();
    assert!(count(&fastest) > 0);
    assert_eq!(count(&oracle), 0);
    let mean = |o: &RunOutput| {
        o.records.iter().filter_map(|r| r.completion_s).sum::<f64>() / o.records.len() as f64
    };
    assert!(mean(&oracle) < mean(&fastest));
}
