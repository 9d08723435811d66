//! The iteration-level engine ([`hazardserve::policy::iteration`]) in the replay: a long prompt
//! on a busy node lengthens its decoders' inter-token time as the step model says, a prompt
//! within the token budget prefills in one step, and a node lost during a prefill or decode
//! under the iteration model is recovered like any other loss.

use hazardserve::policy::iteration::{EngineKind, StepCoefficients, StepShape};
use hazardserve::policy::PolicyKind;
use hazardserve::replay::{Cluster, Node, ReplayConfig};

use super::replay_support::*;

fn shape(budget: u32) -> StepShape {
    StepShape {
        fixed_share: 0.8,
        context_per_ktok: 0.02,
        max_batched_tokens: budget,
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

/// Four decoders, then a long prompt: while it prefills in chunks of `B - 4` tokens, every step
/// carries one token of each decoder and `x = B - 4` prompt tokens, so each decoder's
/// inter-token time goes from `t(0)` to `t(x) = t(0) + beta x` and its completion moves by
/// `(L / x) beta x = L beta`, and by one step's `gamma + delta (L + 1)` more while the prompt's
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
    let delay = long as f64 * c.beta + c.gamma + c.delta * (long + 1) as f64;
    for k in 0..4 {
        let a = alone.records[k].completion_s.unwrap();
        let b = busy.records[k].completion_s.unwrap();
        assert!(
            ((b - a) - delay).abs() < 1e-4,
            "decoder {k}: delayed {} s, the step model says {delay} s",
            b - a,
        );
    }
    // Four decoders holding 416 tokens each read 1,664 context tokens per step.
    let t_x = c.step_s(x, 4, 4.0 * 416.0);
    let ttft = busy.records[4].ttft_s.unwrap();
    assert!(
        (ttft - steps * t_x).abs() < 1e-4,
        "ttft {ttft} s, the step model says {} s",
        steps * t_x
    );
    assert!(t_x > c.step_s(0.0, 4, 4.0 * 416.0) + 0.05);
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
/// `t = alpha + beta P`; with a smaller budget, in `P / B` steps of `t(B)`.
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
        let want = (prompt as f64 / x) * c.step_s(x, 0, 0.0);
        close(out.records[0].ttft_s, want);
        if budget >= 300 {
            close(out.records[0].ttft_s, c.alpha + prompt as f64 * c.beta);
        }
        // Five tokens alone, each one step of `t(0, 1, 305)`.
        let done = want + 5.0 / (1.0 / c.step_s(0.0, 1, 305.0));
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
