//! The iteration-level engine ([`hazardserve::policy::iteration`]) in the replay: a long prompt
//! on a busy node lengthens its decoders' inter-token time as the step model says, a prompt
//! within the token budget prefills in one step, a node lost during a prefill or decode under
//! the iteration model is recovered like any other loss, and a full KV cache preempts the
//! newest request, which completes later with its tokens kept (also when the node is lost
//! while it waits); a recovery and a planned recompute move are served alike (their overheads
//! waited, their context prefilled on the destination).

use hazardserve::policy::iteration::{EngineKind, StepCoefficients, StepShape};
use hazardserve::policy::{MoveMethod, Params, PolicyKind};
use hazardserve::replay::{simulate_with, Cluster, Node, ReplayConfig, RunSpec, Window, Workload};

use super::replay_support::*;

fn shape(budget: u32) -> StepShape {
    StepShape {
        fixed_share: 0.8,
        context_per_ktok: 0.02,
        max_batched_tokens: budget,
        lone_discount: 0.0,
        prefill_attention_per_ktok: 0.05,
    }
}

fn iter_node(name: &str, slots: u32, p: f64, d: f64, budget: u32) -> Node {
    let mut n = always_up(name, slots, p, d);
    n.spec.step = shape(budget);
    n
}

fn config(engine: EngineKind) -> ReplayConfig {
    ReplayConfig {
        engine,
        ..checked()
    }
}

/// The iteration engine with the policy constants `params` (validation on).
fn iteration_with(params: Params) -> ReplayConfig {
    ReplayConfig {
        params,
        ..config(EngineKind::Iteration)
    }
}

/// A one-slot node (a move's source) with `sessions`, under the iteration model's shape.
fn one_slot_node(p: f64, d: f64, sessions: &[(f64, Option<f64>)]) -> Node {
    let mut n = node("s", 1, p, d, sessions);
    n.spec.step = shape(2048);
    n
}

/// Four decoders, then a long prompt: while it prefills in chunks of `B - 4` tokens, every step
/// carries one token of each decoder and `x = B - 4` prompt tokens, so each decoder's
/// inter-token time goes from `t(0)` to `t(x)` and its completion moves by `(L / x) (t(x) -
/// t(0))`, and by one step's `t(0)` with five decoders less that with four while the prompt's
/// one output token decodes beside them; its first token comes after `L / x` steps of `t(x)`.
/// Under the simple model the decoders do not see the prompt at all.
#[test]
fn a_long_prompt_lengthens_four_decoders_inter_token_time_as_the_step_model_says() {
    let (p, d, budget, long) = (2_000.0, 25.0, 260u32, 8_192u64);
    let cluster = Cluster::new(vec![iter_node("n0", 8, p, d, budget)]);
    let decoders: Vec<_> = (0..4).map(|k| req(k, 0.0, 16, 400)).collect();
    let mut with = decoders.clone();
    with.push(req(4, 2.0, long, 1));
    let cfg = config(EngineKind::Iteration);
    let alone = run(&cluster, decoders.clone(), &cfg, PolicyKind::Fastest, 600.0);
    let busy = run(&cluster, with.clone(), &cfg, PolicyKind::Fastest, 600.0);
    let c = StepCoefficients::of(p, d, shape(budget)).unwrap();
    let x = f64::from(budget - 4);
    let steps = long as f64 / x;
    // Four decoders holding 416 tokens each read 1,664 context tokens per step.
    let ctx = 4.0 * 416.0;
    let t_x = c.step_s(x, 4, ctx, long as f64);
    let t_0 = c.step_s(0.0, 4, ctx, 0.0);
    let delay = steps * (t_x - t_0) + c.step_s(0.0, 5, ctx + (long + 1) as f64, 0.0) - t_0;
    for k in 0..4 {
        let a = alone.records[k].completion_s.unwrap();
        let b = busy.records[k].completion_s.unwrap();
        assert!(
            ((b - a) - delay).abs() < 1e-4,
            "decoder {k}: delayed {} s, the step model says {delay} s",
            b - a,
        );
    }
    let ttft = busy.records[4].ttft_s.unwrap();
    assert!(
        (ttft - steps * t_x).abs() < 1e-4,
        "ttft {ttft} s, the step model says {} s",
        steps * t_x
    );
    assert!(t_x > t_0 + 0.05);
    // The simple model: prefills never slow the decoders.
    let cfg = config(EngineKind::Simple);
    let alone = run(&cluster, decoders, &cfg, PolicyKind::Fastest, 600.0);
    let busy = run(&cluster, with, &cfg, PolicyKind::Fastest, 600.0);
    for k in 0..4 {
        close(
            busy.records[k].completion_s,
            alone.records[k].completion_s.unwrap(),
        );
    }
}

/// With `max_batched_tokens` at least the prompt, a lone prompt prefills in one step
/// `t = hypot(alpha, beta P) + zeta P^2 / 2`; with a smaller budget, in `P / B` steps of
/// `t(B)`.
#[test]
fn a_prompt_within_the_budget_prefills_in_one_step() {
    let (p, d, prompt) = (1_500.0, 30.0, 300u64);
    for budget in [300u32, 4096, 100] {
        let cluster = Cluster::new(vec![iter_node("n0", 4, p, d, budget)]);
        let out = run(
            &cluster,
            vec![req(0, 1.0, prompt, 5)],
            &config(EngineKind::Iteration),
            PolicyKind::Fastest,
            60.0,
        );
        let c = StepCoefficients::of(p, d, shape(budget)).unwrap();
        let x = f64::from(budget).min(prompt as f64);
        let want = (prompt as f64 / x) * c.step_s(x, 0, 0.0, prompt as f64);
        close(out.records[0].ttft_s, want);
        if budget >= 300 {
            let pr = prompt as f64;
            close(
                out.records[0].ttft_s,
                c.alpha.hypot(pr * c.beta) + c.zeta * pr * pr / 2.0,
            );
        }
        // Five tokens alone, each one step of `t(0, 1, 305)`.
        let done = want + 5.0 * c.step_s(0.0, 1, 305.0, 0.0);
        let got = out.records[0].completion_s.unwrap();
        assert!(
            (got - done).abs() < 1e-5,
            "completion {got} s, model {done} s"
        );
    }
}

/// A node lost while one request prefills and others decode under the iteration model: every
/// request recovers on the other node, keeps the tokens it streamed and completes; the engine's
/// invariants hold after every event (validation on).
#[test]
fn node_loss_under_the_iteration_model_is_recovered() {
    let cluster = Cluster::new(vec![
        {
            let mut n = node("flaky", 4, 800.0, 20.0, &[(-1e6, Some(3.0))]);
            n.spec.step = shape(128);
            n
        },
        iter_node("steady", 4, 800.0, 20.0, 128),
    ]);
    let requests = vec![
        req(0, 0.0, 32, 200),
        req(1, 0.0, 32, 200),
        req(2, 2.5, 4_000, 50),
    ];
    for kind in [PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle] {
        let out = run(
            &cluster,
            requests.clone(),
            &config(EngineKind::Iteration),
            kind,
            600.0,
        );
        for r in &out.records {
            assert!(r.completion_s.is_some(), "{kind:?}: request {} lost", r.id);
            assert_eq!(r.generated_tokens, r.output_tokens);
        }
    }
}

/// A node of 40 KV blocks (640 tokens, a watermark of one block) serving with a free batch (`a = 1`: each
/// of `k` decoders at `d`) and a 128-token budget.
fn kv_node(sessions: &[(f64, Option<f64>)]) -> Node {
    let mut n = node("kv", 4, 1_000.0, 20.0, sessions);
    n.spec.kv_capacity_tokens = 640;
    n.spec.step = StepShape {
        fixed_share: 1.0,
        context_per_ktok: 0.0,
        max_batched_tokens: 128,
        lone_discount: 0.0,
        prefill_attention_per_ktok: 0.0,
    };
    n
}

/// A full KV cache preempts the newest request, which completes later with its tokens kept.
/// A (160 + 200 tokens) prefills in 1.25 steps of `t(128)`; B (the same, arriving at 0.1 s)
/// prefills beside it in `160 / 127` steps of `t(127)` while A gains `160 / 127` tokens. Both
/// then decode at about 20 tokens/s; they hold 11 + 11 of the 40 blocks, so the 19th block they
/// need overflows the cache: A's block 21, when A reaches 320 tokens. B, the newest, is
/// preempted with its 158 whole tokens (an interruption it is not), waits at the queue's
/// front until A completes 2 s later, then prefills its 318 tokens again and decodes only the
/// 42 it lacks. The simple model reserves each request's whole context instead and never
/// preempts.
#[test]
fn a_full_kv_cache_preempts_the_newest_request_which_completes_later_with_its_tokens_kept() {
    let cluster = Cluster::new(vec![kv_node(&[(-1e6, None)])]);
    let requests = vec![req(0, 0.0, 160, 200), req(1, 0.1, 160, 200)];
    let out = run(
        &cluster,
        requests.clone(),
        &config(EngineKind::Iteration),
        PolicyKind::Fastest,
        600.0,
    );
    let c = StepCoefficients::of(1_000.0, 20.0, cluster.nodes[0].spec.step).unwrap();
    // One and two decoders, each at about 20 tokens/s (the step's compute adds 0.08 %).
    let (r1, r2) = (
        1.0 / c.step_s(0.0, 1, 0.0, 0.0),
        1.0 / c.step_s(0.0, 2, 0.0, 0.0),
    );
    assert!((r2 / 20.0 - 1.0).abs() < 1e-3 && (r1 / 20.0 - 1.0).abs() < 1e-3);
    let t1 = 1.25 * c.step_s(128.0, 0, 0.0, 160.0);
    let t2 = t1 + 160.0 / 127.0 * c.step_s(127.0, 1, 0.0, 160.0);
    let a2 = 160.0 / 127.0;
    let t3 = t2 + (320.0 - (160.0 + a2)) / r2;
    let kept = ((t3 - t2) * r2).floor();
    assert_eq!(kept, 158.0);
    let t4 = t3 + 40.0 / r1;
    let t5 = t4 + (160.0 + kept) / 128.0 * c.step_s(128.0, 0, 0.0, 160.0 + kept);
    let t6 = t5 + (200.0 - kept) / r1;
    let (a, b) = (&out.records[0], &out.records[1]);
    assert_eq!((a.kv_preemptions, b.kv_preemptions), (0, 1));
    assert_eq!(out.stats.kv_preemptions, 1);
    assert_eq!((a.interruptions, b.interruptions), (0, 0));
    assert_eq!(b.generated_tokens, 200);
    let near = |x: Option<f64>, want: f64, what: &str| {
        let x = x.expect("a time");
        assert!((x - want).abs() < 1e-4, "{what}: {x} s, expected {want} s");
    };
    near(a.completion_s, t4, "A completes");
    near(b.ttft_s, t2 - 0.1, "B's first token");
    near(b.completion_s.map(|x| x + 0.1), t6, "B completes");
    let summary = hazardserve::replay::RunSummary::from_records(&out.records, 600.0);
    assert_eq!(summary.kv_preemptions, 1.0);
    // The simple model: B waits for A's reservation instead.
    let simple = run(
        &cluster,
        requests,
        &config(EngineKind::Simple),
        PolicyKind::Fastest,
        600.0,
    );
    assert_eq!(simple.stats.kv_preemptions, 0);
    assert!(simple.records.iter().all(|r| r.kv_preemptions == 0));
    assert!(simple.records[1].ttft_s.unwrap() > simple.records[0].completion_s.unwrap() - 0.1);
}

/// The node is lost while the preempted request waits at its queue's front: the request
/// holding KV there is interrupted, the preempted one (holding none) is re-placed without an
/// interruption, keeps its tokens, and both complete on a node that comes up later; the
/// engine's invariants hold after every event.
#[test]
fn node_loss_during_a_kv_preemption_is_handled() {
    let cluster = Cluster::new(vec![kv_node(&[(-1e6, Some(9.0))]), {
        let mut n = kv_node(&[(9.5, None)]);
        n.name = "later".into();
        n
    }]);
    let requests = vec![req(0, 0.0, 160, 200), req(1, 0.1, 160, 200)];
    for kind in [PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle] {
        let out = run(
            &cluster,
            requests.clone(),
            &config(EngineKind::Iteration),
            kind,
            600.0,
        );
        let (a, b) = (&out.records[0], &out.records[1]);
        if kind == PolicyKind::Oracle {
            // The oracle sees the end coming and may move or hold requests to avoid it: it
            // must still serve both.
            assert!(a.completion_s.is_some() && b.completion_s.is_some());
            continue;
        }
        assert_eq!(b.kv_preemptions, 1, "{kind:?}");
        assert_eq!((a.interruptions, b.interruptions), (1, 0), "{kind:?}");
        for r in [a, b] {
            assert!(r.completion_s.is_some(), "{kind:?}: request {} lost", r.id);
            assert_eq!(r.generated_tokens, r.output_tokens);
            assert_eq!(r.final_node, Some(1));
        }
        // B kept its 158 tokens: it prefills them again on the later node and decodes the 42
        // it lacks, no more.
        assert!(
            b.completion_s.unwrap() + 0.1 < 9.5 + 200.0 / 20.0,
            "{kind:?}"
        );
    }
}

/// The same context recovered after a node loss and moved by recompute onto a node with four
/// decoders delays those decoders equally: both wait out the recompute overhead (no GPU work)
/// and then prefill the context in the destination's steps. X (a 2,000-token prompt) runs
/// alone on node 0 (one slot); four short decoders run on node 1. At 10 s X leaves node 0:
/// lost with the node in one run, moved by recompute at the 10 s check in the other (stall
/// penalty 0, recompute overhead 0.5 s in both). The decoders finish before X, so X's own
/// remaining tokens do not matter.
#[test]
fn a_recovery_and_a_recompute_move_delay_the_destinations_decoders_equally() {
    let cfg = iteration_with(Params {
        stall_penalty_s: 0.0,
        recompute_overhead_s: 0.5,
        check_interval_s: 10.0,
        ..Params::default()
    });
    let (p, d) = (2_000.0, 25.0);
    let dest = || iter_node("d", 8, p, d, 2048);
    let mut requests = vec![req(0, 0.0, 2_000, 2_000)];
    requests.extend((1..=4).map(|k| req(k, 0.1 * k as f64, 16, 300)));
    let go = |source: Node, mut policy: Scripted| {
        let cluster = Cluster::new(vec![source, dest()]);
        let spec = RunSpec::new(PolicyKind::Hazard, Window::new(0, us(600.0)), 1, cfg.params);
        let w = Workload::new(requests.clone());
        simulate_with(&cluster, &w, &cfg, &spec, &mut policy).expect("replay runs")
    };
    let one_slot = |sessions: &[(f64, Option<f64>)]| one_slot_node(p, d, sessions);
    // Recovery: node 0 is lost at 10 s; X is placed on node 1.
    let lost = go(
        one_slot(&[(-1e6, Some(10.0)), (1e5, None)]),
        Scripted::new(vec![0, 1]),
    );
    // Planned move: node 0 stays up; the 10 s check moves X to node 1 by recompute.
    let mut mover = Scripted::new(vec![0, 1]);
    mover.from = 0;
    mover.to = 1;
    mover.method = MoveMethod::Recompute;
    mover.cost_s = 1.0;
    let moved = go(one_slot(&[(-1e6, None)]), mover);
    // Baseline: X stays on node 0.
    let stays = go(one_slot(&[(-1e6, None)]), Scripted::new(vec![0, 1]));
    let x = (&lost.records[0], &moved.records[0]);
    assert_eq!((x.0.interruptions, x.0.final_node), (1, Some(1)));
    assert_eq!((x.1.planned_migrations, x.1.final_node), (1, Some(1)));
    for k in 1..=4 {
        let (a, b, c) = (
            lost.records[k].completion_s.unwrap(),
            moved.records[k].completion_s.unwrap(),
            stays.records[k].completion_s.unwrap(),
        );
        assert_eq!(lost.records[k].final_node, Some(1));
        assert!(
            (a - b).abs() < 2e-6,
            "decoder {k}: {a} s after the recovery, {b} s after the move"
        );
        // X's re-prefill (about 2,230 tokens at up to 2,000 tokens/s) and its decoding
        // beside them delay them by more than a second.
        assert!(a > c + 1.0, "decoder {k}: {a} s, {c} s without X");
        assert!(a < x.0.completion_s.unwrap());
    }
}

/// An overlapped move whose window generates no token has nothing to recompute at the
/// cut-over: it is a pause (the recompute overhead), not a prefill of 0 tokens, which no step
/// would ever serve and which would hold every later prefill on the destination. X is moved
/// from node 0 to node 1 with a 1-microsecond window (its catch-up, 0 tokens, is cheaper to
/// recompute than to transfer); Y arrives on node 1 afterwards. Both complete.
#[test]
fn an_overlapped_move_with_nothing_to_catch_up_does_not_stall_the_destination() {
    let cfg = iteration_with(Params {
        check_interval_s: 5.0,
        transfer_overhead_s: 0.2,
        recompute_overhead_s: 0.1,
        ..Params::default()
    });
    let (p, d) = (2_000.0, 25.0);
    // Node 0 ends at 6 s, after the move, so that Y is served on node 1.
    let source = one_slot_node(p, d, &[(-1e6, Some(6.0)), (1e5, None)]);
    let cluster = Cluster::new(vec![source, iter_node("d", 8, p, d, 2048)]);
    let requests = vec![req(0, 0.0, 200, 400), req(1, 20.0, 300, 10)];
    let mut mover = Scripted::new(vec![0, 1]);
    mover.from = 0;
    mover.to = 1;
    mover.method = MoveMethod::Recompute;
    mover.cost_s = 0.1;
    mover.window_s = 1e-6;
    let spec = RunSpec::new(PolicyKind::Hazard, Window::new(0, us(300.0)), 1, cfg.params);
    let out = simulate_with(&cluster, &Workload::new(requests), &cfg, &spec, &mut mover)
        .expect("replay runs");
    let (x, y) = (&out.records[0], &out.records[1]);
    assert_eq!((x.planned_migrations, x.final_node), (1, Some(1)), "{x:?}");
    assert!(
        x.completion_s.is_some(),
        "the moved request never completes: {x:?}"
    );
    assert_eq!(y.final_node, Some(1));
    assert!(
        y.completion_s.is_some(),
        "node 1's later prefill never ends: {y:?}"
    );
}

/// A request lost to its node's end is placed again as the engine will serve it: its `T` at
/// the re-placement includes the stall penalty and the recompute overhead the engine makes
/// it wait before the re-prefill, so that (exact lengths, nothing else running) it finishes
/// exactly `T` after the re-placement, under both engines. Pricing the recovery as a fresh
/// prefill (the view not saying it recovers) misses `sigma + O_r` = 2.1 s and fails.
#[test]
fn a_recovering_request_is_priced_with_the_wait_the_engine_charges() {
    for engine in [EngineKind::Simple, EngineKind::Iteration] {
        // `a` (fast) ends at 5 s, mid-decode; `b` takes the recovery.
        let mut a = node("a", 2, 4_000.0, 40.0, &[(-1e6, Some(5.0))]);
        let mut b = always_up("b", 2, 2_000.0, 20.0);
        a.spec.step = shape(2048);
        b.spec.step = shape(2048);
        let cluster = Cluster::new(vec![a, b]);
        let params = Params {
            check_interval_s: 0.0,
            ..Params::default()
        };
        let cfg = ReplayConfig {
            decision_log: 100,
            estimator: hazardserve::replay::LengthEstimator::Exact,
            params,
            ..config(engine)
        };
        let out = run(
            &cluster,
            vec![req(0, 0.0, 3_000, 400)],
            &cfg,
            PolicyKind::Fastest,
            600.0,
        );
        let rec = &out.records[0];
        assert_eq!(rec.interruptions, 1, "{engine:?}: lost once");
        let placements: Vec<_> = out
            .decisions
            .iter()
            .filter(|d| d.explanation.chosen.is_some() && !d.queueing)
            .collect();
        let again = placements.last().expect("a re-placement");
        assert_eq!(again.time_us, us(5.0), "{engine:?}");
        assert_eq!(again.explanation.chosen, Some(1));
        let finish = rec.completion_s.expect("finishes");
        let t = again.explanation.t;
        assert!(
            (finish - 5.0 - t).abs() <= 1e-5,
            "{engine:?}: T at re-placement {t} s, served in {} s",
            finish - 5.0
        );
        assert!(t > params.stall_penalty_s + params.recompute_overhead_s);
    }
}

/// An empty context (a prompt of no tokens, nothing generated yet) prefills in no time under
/// the iteration model, fresh and after a node loss (the recovery waits out its stall, then
/// has nothing to prefill), and holds no later prompt behind it. Mutation that fails it: a
/// prefill of no tokens left at the rate the step model gives it (0), which never ends and
/// stalls every later prompt on the node.
#[test]
fn an_empty_prompt_prefills_at_once_fresh_and_after_a_loss() {
    let cfg = config(EngineKind::Iteration);
    let cluster = Cluster::new(vec![iter_node("n0", 4, 1_000.0, 10.0, 2048)]);
    let out = run(
        &cluster,
        vec![req(0, 0.0, 0, 10), req(1, 0.5, 100, 10)],
        &cfg,
        PolicyKind::Fastest,
        60.0,
    );
    for r in &out.records {
        assert!(r.completion_s.is_some(), "{r:?}");
    }
    assert_eq!(out.records[0].ttft_s, Some(0.0), "{:?}", out.records[0]);
    assert!(
        out.records[1].completion_s.unwrap() < 5.0,
        "{:?}",
        out.records[1]
    );
    // Placed on node 0 and lost 50 ms into its decode, before its first token: it recovers
    // on node 1 with an empty context.
    let cluster = Cluster::new(vec![
        one_slot_node(1_000.0, 10.0, &[(-100.0, Some(0.05))]),
        iter_node("steady", 4, 1_000.0, 10.0, 2048),
    ]);
    let spec = RunSpec::new(PolicyKind::Fastest, Window::new(0, us(60.0)), 1, cfg.params);
    let w = Workload::new(vec![req(0, 0.0, 0, 10)]);
    let out = simulate_with(&cluster, &w, &cfg, &spec, &mut Scripted::new(vec![0, 1]))
        .expect("replay runs");
    let r = &out.records[0];
    assert_eq!((r.first_node, r.final_node), (Some(0), Some(1)), "{r:?}");
    assert_eq!(r.interruptions, 1, "{r:?}");
    let wait = cfg.params.stall_penalty_s + cfg.params.recompute_overhead_s;
    let done = r.completion_s.expect("the recovered request completes");
    assert!(done > 0.05 + wait && done < 0.05 + wait + 5.0, "{r:?}");
}
