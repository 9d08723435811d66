//! The engine's prefix cache, run by hand: a second turn prefills only its suffix, a node's
//! end destroys the cache, finite caches evict, the simple engine refuses a prefix workload.

use std::sync::Arc;

use crate::policy::iteration::EngineKind;
use crate::policy::{Params, PolicyKind};
use crate::replay::prefix::Prefix;
use crate::replay::{
    simulate, Cluster, Node, NodeSpec, ReplayConfig, ReplayError, Request, RunOutput, RunSpec,
    UpSession, Window, Workload,
};
use crate::survival::curve::Exponential;

fn us(s: f64) -> i64 {
    (s * 1e6).round() as i64
}

/// A node with 4 slots and `kv` tokens of KV, up over `sessions` (seconds; `None`: open).
fn node(kv: u64, sessions: &[(f64, Option<f64>)]) -> Node {
    Node {
        name: "n".into(),
        spec: NodeSpec {
            slots: 4,
            kv_capacity_tokens: kv,
            prefill_tok_s: 4000.0,
            decode_tok_s: 40.0,
            bandwidth_bytes_s: 1.25e9,
            step: Default::default(),
        },
        sessions: sessions
            .iter()
            .map(|&(a, b)| UpSession::new(us(a), b.map_or(UpSession::OPEN_END, us)))
            .collect(),
        survival: Arc::new(Exponential {
            mean: f64::INFINITY,
        }),
        exp_rate_per_s: 0.0,
        truth: None,
    }
}

fn req(id: u64, at: f64, prompt: u64, output: u64) -> Request {
    Request {
        id,
        arrival_us: us(at),
        prompt_tokens: prompt,
        output_tokens: output,
    }
}

fn run(nodes: Vec<Node>, w: &Workload, cfg: &ReplayConfig) -> RunOutput {
    let spec = RunSpec::new(
        PolicyKind::Fastest,
        Window::new(0, us(1000.0)),
        1,
        cfg.params,
    );
    simulate(&Cluster::new(nodes), w, cfg, &spec).expect("replay runs")
}

fn cfg() -> ReplayConfig {
    ReplayConfig {
        validate: true,
        params: Params::default(),
        ..ReplayConfig::default()
    }
}

/// Two turns of one conversation: the first's prompt is blocks [1, 2] (1,024 tokens of
/// 512-token blocks), the second's [1, 2, 3, 4] (2,048 tokens), 100 s later.
fn conversation() -> Workload {
    Workload::new(vec![req(0, 0.0, 1024, 20), req(1, 100.0, 2048, 20)]).with_prefixes(vec![
        Prefix::new(512, vec![1, 2]),
        Prefix::new(512, vec![1, 2, 3, 4]),
    ])
}

#[test]
fn a_second_turn_on_the_node_holding_its_prefix_prefills_only_the_suffix() {
    let out = run(
        vec![node(1_000_000, &[(-1.0, None)])],
        &conversation(),
        &cfg(),
    );
    assert_eq!(out.records[0].prefix_hit_tokens, 0);
    assert_eq!(out.records[1].prefix_hit_tokens, 1024);
    // Its first token comes when a lone 1,024-token prompt's would: only the suffix prefills.
    let suffix = Workload::new(vec![req(0, 0.0, 1024, 20)]);
    let alone = run(vec![node(1_000_000, &[(-1.0, None)])], &suffix, &cfg());
    let (a, b) = (
        out.records[1].ttft_s.expect("first token"),
        alone.records[0].ttft_s.expect("first token"),
    );
    assert!(
        (a - b).abs() < 1e-9,
        "second turn {a} s, the suffix alone {b} s"
    );
    // Without the cache it prefills all 2,048 tokens.
    let off = run(
        vec![node(1_000_000, &[(-1.0, None)])],
        &conversation(),
        &ReplayConfig {
            prefix_cache: false,
            ..cfg()
        },
    );
    assert_eq!(off.records[1].prefix_hit_tokens, 0);
    assert!(off.records[1].ttft_s.expect("first token") > a + 1e-3);
}

#[test]
fn a_whole_prompt_cached_still_computes_its_last_token() {
    let w = Workload::new(vec![req(0, 0.0, 1024, 5), req(1, 50.0, 1024, 5)])
        .with_prefixes(vec![Prefix::new(512, vec![1, 2]); 2]);
    let out = run(vec![node(1_000_000, &[(-1.0, None)])], &w, &cfg());
    assert_eq!(out.records[1].prefix_hit_tokens, 1023);
}

#[test]
fn a_nodes_end_destroys_its_cache_and_the_next_turn_prefills_everything() {
    // Up for the first turn, down from 50 s to 60 s: the second turn finds a cold node.
    let nodes = vec![node(1_000_000, &[(-1.0, Some(50.0)), (60.0, None)])];
    let out = run(nodes, &conversation(), &cfg());
    assert_eq!(out.records[1].prefix_hit_tokens, 0);
    assert_eq!(out.stats.cache_destroyed_tokens, 1024);
    assert_eq!(out.stats.cache_destroyed_blocks, 2);
    let cold = run(
        vec![node(1_000_000, &[(-1.0, None)])],
        &Workload::new(vec![req(0, 0.0, 2048, 20)]),
        &cfg(),
    );
    let (a, b) = (
        out.records[1].ttft_s.expect("first token"),
        cold.records[0].ttft_s.expect("first token"),
    );
    assert!(
        (a - b).abs() < 1e-9,
        "second turn {a} s, a cold 2,048-token prompt {b} s"
    );
}

#[test]
fn a_full_node_evicts_the_cache_before_it_preempts_anything() {
    // 4,096 tokens of KV (256 blocks): the first turn's blocks (64) stay cached after it
    // completes, then a stranger's 4,000-token prompt (252 blocks with its output) needs the
    // room: the cache is evicted, nobody preempted, and the second turn misses.
    let w = Workload::new(vec![
        req(0, 0.0, 1024, 20),
        req(2, 30.0, 4000, 20),
        req(1, 100.0, 2048, 20),
    ])
    .with_prefixes(vec![
        Prefix::new(512, vec![1, 2]),
        Prefix::new(512, vec![9, 8, 7, 6, 5, 4]),
        Prefix::new(512, vec![1, 2, 3, 4]),
    ]);
    let out = run(vec![node(4096, &[(-1.0, None)])], &w, &cfg());
    assert_eq!(out.stats.kv_preemptions, 0);
    assert!(out.stats.cache_evicted_tokens >= 1024);
    assert_eq!(out.records[2].prefix_hit_tokens, 0);
    // With room for both, it hits.
    let roomy = run(vec![node(1_000_000, &[(-1.0, None)])], &w, &cfg());
    assert_eq!(roomy.records[2].prefix_hit_tokens, 1024);
    assert_eq!(roomy.stats.cache_evicted_tokens, 0);
    // A stranger that leaves room for both (3,000 tokens: 189 blocks and the cache's 64)
    // evicts none of the first turn's blocks (a completed request's blocks are counted once,
    // as cache): the second turn hits, and only the stranger's own blocks make room for it.
    let mut w = w;
    w.requests[1].prompt_tokens = 3000;
    let fits = run(vec![node(4096, &[(-1.0, None)])], &w, &cfg());
    assert_eq!(fits.records[2].prefix_hit_tokens, 1024);
    assert!(fits.stats.cache_evicted_tokens <= 3000);
}

#[test]
fn the_simple_engine_refuses_a_prefix_workload_unless_told_to_replay_it_statelessly() {
    let simple = ReplayConfig {
        engine: EngineKind::Simple,
        ..cfg()
    };
    let spec = RunSpec::new(
        PolicyKind::Fastest,
        Window::new(0, us(1000.0)),
        1,
        simple.params,
    );
    let cluster = Cluster::new(vec![node(1_000_000, &[(-1.0, None)])]);
    let err = simulate(&cluster, &conversation(), &simple, &spec).expect_err("no cache");
    assert!(matches!(err, ReplayError::NoPrefixCache));
    assert!(err.to_string().contains("prefix_cache = false"), "{err}");
    let stateless = ReplayConfig {
        prefix_cache: false,
        ..simple
    };
    let out = simulate(&cluster, &conversation(), &stateless, &spec).expect("stateless");
    assert_eq!(out.records[1].prefix_hit_tokens, 0);
}

#[test]
fn a_prefix_longer_than_its_prompt_is_rejected() {
    let w =
        Workload::new(vec![req(0, 0.0, 512, 5)]).with_prefixes(vec![Prefix::new(512, vec![1, 2])]);
    let spec = RunSpec::new(
        PolicyKind::Fastest,
        Window::new(0, us(10.0)),
        1,
        cfg().params,
    );
    let cluster = Cluster::new(vec![node(1_000_000, &[(-1.0, None)])]);
    let err = simulate(&cluster, &w, &cfg(), &spec).expect_err("does not fit");
    assert!(err.to_string().contains("do not fit its prompt"), "{err}");
}

#[test]
fn the_bound_credits_every_prefix_an_earlier_arrival_brought() {
    let c = cfg();
    let spec = RunSpec::new(PolicyKind::Bound, Window::new(0, us(1000.0)), 1, c.params);
    let cluster = Cluster::new(vec![node(1_000_000, &[(-1.0, None)])]);
    let out = simulate(&cluster, &conversation(), &c, &spec).expect("bound");
    assert_eq!(out.records[1].prefix_hit_tokens, 1024);
    let engine = run(vec![node(1_000_000, &[(-1.0, None)])], &conversation(), &c);
    for (b, e) in out.records.iter().zip(&engine.records) {
        let (b, e) = (
            b.completion_s.expect("bound"),
            e.completion_s.expect("engine"),
        );
        assert!(b <= e + 1e-9, "bound {b} s above the engine's {e} s");
    }
}

/// A risky node (mean session 100 s) holds a conversation's state; a safe one comes up at
/// 20 s; the next turn is due 200 s after the first; the risky node ends at 150 s. Replayed
/// by `hazard`.
fn idle_case(idle_migration: bool) -> RunOutput {
    idle_case_of(PolicyKind::Hazard, idle_migration)
}

/// [`idle_case`] replayed by `kind`.
fn idle_case_of(kind: PolicyKind, idle_migration: bool) -> RunOutput {
    use crate::policy::retained::ReuseGap;
    let mut risky = node(1_000_000, &[(-1.0, Some(150.0))]);
    risky.survival = Arc::new(Exponential { mean: 100.0 });
    let mut safe = node(1_000_000, &[(20.0, None)]);
    safe.survival = Arc::new(Exponential { mean: 1e9 });
    let first: Vec<u64> = (0..32).collect();
    let second: Vec<u64> = (0..40).collect();
    let w = Workload::new(vec![req(0, 0.0, 16_384, 20), req(1, 200.0, 20_000, 20)])
        .with_prefixes(vec![Prefix::new(512, first), Prefix::new(512, second)])
        .with_conversations(vec![Some(7), Some(7)])
        .with_reuse(ReuseGap::from_steps(&[200.0], &[0.0]));
    let c = ReplayConfig {
        params: Params {
            idle_migration,
            ..Params::default()
        },
        ..cfg()
    };
    let spec = RunSpec::new(kind, Window::new(0, us(1000.0)), 1, c.params);
    simulate(&Cluster::new(vec![risky, safe]), &w, &c, &spec).expect("replay runs")
}

#[test]
fn an_idle_state_migration_moves_the_blocks_and_the_next_turn_hits_on_the_destination() {
    let moved = idle_case(true);
    assert_eq!(moved.stats.state_migrations, 1);
    assert_eq!(moved.records[0].first_node, Some(0));
    assert_eq!(moved.records[1].first_node, Some(1));
    assert_eq!(moved.records[1].prefix_hit_tokens, 16_384);
    // The risky node's end destroyed its copy.
    assert!(moved.stats.cache_destroyed_tokens >= 16_384);
    // Without the migration the next turn finds nothing.
    let kept = idle_case(false);
    assert_eq!(kept.stats.state_migrations, 0);
    assert_eq!(kept.records[1].prefix_hit_tokens, 0);
    let (a, b) = (
        moved.records[1].ttft_s.expect("first token"),
        kept.records[1].ttft_s.expect("first token"),
    );
    assert!(a < b, "with the state moved {a} s, without {b} s");
}

/// The oracle knows the risky node ends (150 s) before the next turn (200 s): the state,
/// idle on the risky node when the safe one comes up (20 s), is copied there then, and the
/// next turn hits on it; without idle migration it finds nothing.
#[test]
fn the_oracle_copies_a_doomed_idle_state_where_it_survives_until_the_next_turn() {
    let moved = idle_case_of(PolicyKind::Oracle, true);
    assert_eq!(moved.records[0].first_node, Some(0));
    assert_eq!(moved.stats.state_migrations, 1);
    assert_eq!(moved.records[1].first_node, Some(1));
    assert_eq!(moved.records[1].prefix_hit_tokens, 16_384);
    let kept = idle_case_of(PolicyKind::Oracle, false);
    assert_eq!(kept.stats.state_migrations, 0);
    assert_eq!(kept.records[1].prefix_hit_tokens, 0);
}
