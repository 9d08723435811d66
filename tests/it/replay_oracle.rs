//! The clairvoyant oracle, the analytic bound, censored session ends, interruption causes and
//! recovery times, the estimate past its end, move pricing and left-truncated ages.
//!
//! Size: just over 800 lines because the references' property tests (the oracle never beaten
//! on interruptions, the bound never beaten, under both engines, with and without prefix
//! caches) share this file's generators; splitting them would split what they share.

use proptest::prelude::*;

use hazardserve::policy::iteration::EngineKind;
use hazardserve::policy::migration::{assess_move, source_state, MoveQuery};
use hazardserve::policy::{
    build, ClusterView, Explanation, ForecastKind, Foresight, NodeIdx, NodeView, Outcome, Params,
    Policy, PolicyKind, RequestView, RiskModel,
};
use hazardserve::replay::{
    run_grid, simulate, simulate_with, CensoredEnds, Cluster, Grid, LengthEstimator,
    PoissonWorkload, ReplayConfig, RunOutput, RunSpec, SyntheticCluster, UpSession, Window,
    Workload,
};
use hazardserve::survival::curve::{ConditionalSurvival, Exponential};

use super::replay_support::*;

fn total_interruptions(o: &RunOutput) -> u64 {
    o.records.iter().map(|r| u64::from(r.interruptions)).sum()
}

/// A synthetic cluster of fast-failing nodes and a workload busy enough to fill some slots.
fn synthetic(seed: u64, nodes: usize, up_scale_s: f64) -> (Cluster, Workload) {
    synthetic_prompts(seed, nodes, up_scale_s, 1000.0)
}

/// [`synthetic`] with prompts of median `prompt_median` tokens.
fn synthetic_prompts(
    seed: u64,
    nodes: usize,
    up_scale_s: f64,
    prompt_median: f64,
) -> (Cluster, Workload) {
    let cluster = SyntheticCluster {
        nodes,
        up_shape: 0.7,
        up_scale_s,
        down_shape: 1.0,
        down_scale_s: 120.0,
        from_us: 0,
        to_us: us(4.0 * 3600.0),
        slots: 4,
        seed,
    }
    .build();
    let workload = PoissonWorkload {
        rate_per_s: 0.5,
        length_s: 1200.0,
        prompt_median,
        prompt_sigma: 0.6,
        output_median: 300.0,
        output_sigma: 0.6,
        seed: seed ^ 0xABCD,
    }
    .build();
    (cluster, workload)
}

fn windows(n: usize, length_s: f64) -> Vec<Window> {
    (0..n)
        .map(|k| Window::new(us(600.0 + k as f64 * length_s), us(length_s)))
        .collect()
}

/// Checks the two claims on one grid: (1) the oracle's unplanned interruptions summed over the
/// windows where capacity never forced it onto a doomed node are at most every policy's over
/// the same windows; (2) per request, the bound is at most every policy's completion time (so
/// its mean over the requests a policy completed is at most that policy's mean). Returns the
/// number of windows the oracle was forced in.
fn check_grid(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    ws: Vec<Window>,
) -> usize {
    // Every policy the cluster supports (hazard-truth needs generating laws).
    let policies: Vec<PolicyKind> = PolicyKind::ALL
        .into_iter()
        .filter(|&k| cluster.supports(k).is_ok())
        .collect();
    let grid = Grid::new(policies.clone(), ws.clone(), vec![1]);
    let runs = run_grid(cluster, workload, cfg, &grid).expect("grid runs");
    let by = |k: PolicyKind, w: usize| {
        runs.iter()
            .find(|o| o.policy == k && o.window == w)
            .expect("run present")
    };
    let forced: Vec<bool> = (0..ws.len())
        .map(|w| by(PolicyKind::Oracle, w).stats.oracle_forced > 0)
        .collect();
    let oracle_sum: u64 = (0..ws.len())
        .filter(|&w| !forced[w])
        .map(|w| total_interruptions(by(PolicyKind::Oracle, w)))
        .sum();
    for &k in &policies {
        if k == PolicyKind::Bound {
            continue;
        }
        let sum: u64 = (0..ws.len())
            .filter(|&w| !forced[w])
            .map(|w| total_interruptions(by(k, w)))
            .sum();
        assert!(
            oracle_sum <= sum,
            "oracle interrupted {oracle_sum} times, {k} {sum} (forced windows: {forced:?})"
        );
        for w in 0..ws.len() {
            let b = by(PolicyKind::Bound, w);
            let o = by(k, w);
            assert_eq!(b.records.len(), o.records.len());
            let (mut sb, mut so, mut n) = (0.0, 0.0, 0usize);
            for (rb, ro) in b.records.iter().zip(&o.records) {
                if let Some(c) = ro.completion_s {
                    let cb = rb
                        .completion_s
                        .unwrap_or_else(|| panic!("{k} completed a request the bound drops"));
                    assert!(cb <= c + 1e-6, "{k}: bound {cb} > completion {c}");
                    sb += cb;
                    so += c;
                    n += 1;
                }
            }
            if n > 0 {
                assert!(sb / n as f64 <= so / n as f64 + 1e-6);
            }
        }
    }
    forced.iter().filter(|&&f| f).count()
}

#[test]
fn replay_oracle_and_bound_claims_on_synthetic_clusters() {
    let mut forced = 0;
    for seed in 1..=3 {
        let (cluster, workload) = synthetic(seed, 10, 900.0);
        let cfg = ReplayConfig::default();
        forced += check_grid(&cluster, &workload, &cfg, windows(4, 1200.0));
    }
    eprintln!("oracle forced onto a doomed node in {forced} of 12 windows");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// The same claims on property-generated clusters, estimators and censoring rules.
    #[test]
    fn replay_oracle_and_bound_claims_hold(
        seed in 1u64..10_000,
        nodes in 3usize..12,
        up_scale in 200.0f64..3000.0,
        noisy in any::<bool>(),
        exclude in any::<bool>(),
    ) {
        let (mut cluster, workload) = synthetic(seed, nodes, up_scale);
        // Every third session end is censored (an observation gap).
        for n in &mut cluster.nodes {
            for (k, s) in n.sessions.iter_mut().enumerate() {
                if k % 3 == 2 {
                    *s = s.clone().with_end(true, "observation-gap");
                } else {
                    *s = s.clone().with_end(false, "preempted");
                }
            }
        }
        let cfg = ReplayConfig {
            estimator: if noisy { LengthEstimator::Lognormal { sigma: 0.5 } } else { LengthEstimator::Exact },
            censored_ends: if exclude { CensoredEnds::Exclude } else { CensoredEnds::StayUp },
            ..ReplayConfig::default()
        };
        check_grid(&cluster, &workload, &cfg, windows(2, 1200.0));
    }

    /// No policy finishes a request, or gives its first token, before `bound` says it can,
    /// under either engine, on generated clusters with long prompts (chunked past the token
    /// budget) and short ones, exact or estimated lengths: the bound is computed with the
    /// fastest service the engine allows. Under the iteration engine, half the cases give the
    /// requests conversations' prefix blocks ([`conversations`]) with prefix caches on the
    /// nodes: the bound credits every block an earlier arrival brought.
    #[test]
    fn no_request_finishes_before_its_bound_under_either_engine(
        seed in 1u64..10_000,
        nodes in 2usize..8,
        up_scale in 200.0f64..3000.0,
        prompt_median in prop_oneof![Just(300.0), Just(6000.0), 20.0f64..12_000.0],
        iteration in any::<bool>(),
        noisy in any::<bool>(),
        prefixed in any::<bool>(),
    ) {
        let (mut cluster, workload) = synthetic_prompts(seed, nodes, up_scale, prompt_median);
        let workload = if iteration && prefixed { conversations(workload, 64) } else { workload };
        // Mixed tiers: every other node prefills 4x faster and decodes 2x faster.
        for (k, n) in cluster.nodes.iter_mut().enumerate() {
            n.spec.kv_capacity_tokens = 1 << 40;
            if k % 2 == 1 {
                n.spec.prefill_tok_s *= 4.0;
                n.spec.decode_tok_s *= 2.0;
            }
        }
        let cfg = ReplayConfig {
            engine: if iteration { EngineKind::Iteration } else { EngineKind::Simple },
            estimator: if noisy { LengthEstimator::Lognormal { sigma: 0.5 } } else { LengthEstimator::Exact },
            ..ReplayConfig::default()
        };
        let policies: Vec<PolicyKind> = PolicyKind::ALL
            .into_iter()
            .filter(|&k| cluster.supports(k).is_ok())
            .collect();
        let ws = windows(2, 900.0);
        let grid = Grid::new(policies.clone(), ws.clone(), vec![1]);
        let runs = run_grid(&cluster, &workload, &cfg, &grid).expect("grid runs");
        for w in 0..ws.len() {
            let b = runs.iter().find(|o| o.policy == PolicyKind::Bound && o.window == w).unwrap();
            for o in runs.iter().filter(|o| o.window == w && o.policy != PolicyKind::Bound) {
                prop_assert_eq!(b.records.len(), o.records.len());
                for (rb, ro) in b.records.iter().zip(&o.records) {
                    if let Some(c) = ro.completion_s {
                        let cb = rb.completion_s;
                        prop_assert!(cb.is_some_and(|cb| cb <= c + 1e-6),
                            "{}: request {} completed at {} before its bound {:?}", o.policy, ro.id, c, cb);
                    }
                    if let Some(t) = ro.ttft_s {
                        let tb = rb.ttft_s;
                        prop_assert!(tb.is_some_and(|tb| tb <= t + 1e-6),
                            "{}: request {} first token at {} before its bound {:?}", o.policy, ro.id, t, tb);
                    }
                }
            }
        }
    }

    /// The placement's pruning (a node is skipped once a lower bound of its score reaches the
    /// best so far) picks what the exhaustive search picks, with the replay's live forecasts,
    /// under both engines and every forecast mode: a run that prices every candidate (the
    /// decision log on) gives the same records as one that prunes.
    #[test]
    fn pruned_placement_equals_exhaustive_placement_with_forecasts(
        seed in 1u64..10_000,
        nodes in 3usize..9,
        prompt_median in prop_oneof![Just(400.0), Just(5000.0)],
        iteration in any::<bool>(),
        forecast in prop_oneof![
            Just(ForecastKind::Own),
            Just(ForecastKind::Marginal),
            Just(ForecastKind::Stationary),
        ],
        phones in any::<bool>(),
    ) {
        let (mut cluster, workload) = synthetic_prompts(seed, nodes, 1500.0, prompt_median);
        for (k, n) in cluster.nodes.iter_mut().enumerate() {
            n.spec.prefill_tok_s *= [1.0, 3.0, 0.5][k % 3];
            n.spec.decode_tok_s *= [1.0, 0.7, 2.0][k % 3];
            // Phones gain nothing from batching (`service::drains`: the stationary forecast
            // prices them as the marginal one, and bounds them by the unloaded bound): every
            // node under the simple model (one batch slowdown for all), every other one under
            // the iteration model (a step with no fixed share), beside nodes that batch.
            if phones && k % 2 == 0 {
                n.spec.step.fixed_share = 0.0;
            }
        }
        let params = Params {
            forecast,
            ..Params::default()
        };
        let base = ReplayConfig {
            engine: if iteration { EngineKind::Iteration } else { EngineKind::Simple },
            params,
            batch_slowdown: if phones { 1.0 } else { ReplayConfig::default().batch_slowdown },
            ..ReplayConfig::default()
        };
        let policies = [PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Memoryless, PolicyKind::Oracle];
        let grid = Grid::new(policies.to_vec(), windows(1, 900.0), vec![1]);
        let pruned = run_grid(&cluster, &workload, &base, &grid).unwrap();
        let full = ReplayConfig { decision_log: usize::MAX, ..base };
        let exhaustive = run_grid(&cluster, &workload, &full, &grid).unwrap();
        for (a, b) in pruned.iter().zip(&exhaustive) {
            prop_assert_eq!(a.policy, b.policy);
            prop_assert!(!b.decisions.is_empty());
            prop_assert_eq!(&a.records, &b.records, "{}", a.policy);
        }
    }

    /// With every session end censored (no events), no policy is ever interrupted, whatever
    /// the censoring rule.
    #[test]
    fn replay_all_censored_means_no_unplanned_interruptions(
        seed in 1u64..10_000,
        nodes in 2usize..8,
        exclude in any::<bool>(),
    ) {
        let (mut cluster, workload) = synthetic(seed, nodes, 300.0);
        for n in &mut cluster.nodes {
            for s in &mut n.sessions {
                *s = s.clone().with_end(true, "observation-end");
            }
        }
        let cfg = ReplayConfig {
            censored_ends: if exclude { CensoredEnds::Exclude } else { CensoredEnds::StayUp },
            validate: true,
            ..ReplayConfig::default()
        };
        let grid = Grid::new(PolicyKind::ALL.to_vec(), windows(2, 900.0), vec![1]);
        for o in run_grid(&cluster, &workload, &cfg, &grid).unwrap() {
            prop_assert_eq!(total_interruptions(&o), 0, "{}", o.policy);
            prop_assert_eq!(o.stats.node_failures, 0);
        }
    }
}

#[test]
fn replay_censored_end_stays_up_by_default_or_excludes_the_node() {
    // Node 0 (fast) has a censored end at 10 s; node 1 (slow) is up throughout.
    let mut fast = node("fast", 4, 1000.0, 10.0, &[(-100.0, Some(10.0))]);
    fast.sessions[0] = fast.sessions[0].clone().with_end(true, "observation-gap");
    let cluster = Cluster::new(vec![fast, always_up("slow", 4, 1000.0, 5.0)]);
    let reqs = vec![req(0, 0.0, 500, 200)];
    assert_eq!(ReplayConfig::default().censored_ends, CensoredEnds::StayUp);
    assert_eq!("stay-up".parse::<CensoredEnds>(), Ok(CensoredEnds::StayUp));
    assert_eq!("exclude".parse::<CensoredEnds>(), Ok(CensoredEnds::Exclude));
    assert!("drop".parse::<CensoredEnds>().is_err());
    let cfg = checked();
    let o = run(&cluster, reqs.clone(), &cfg, PolicyKind::Fastest, 100.0);
    // 0.5 s prefill + 20 s decode on the fast node, which stays up past its censored end.
    let r = &o.records[0];
    assert_eq!(r.first_node, Some(0));
    assert_eq!(r.interruptions, 0);
    close(r.completion_s, 20.5);
    assert_eq!(o.stats.node_failures, 0);
    let excl = ReplayConfig {
        censored_ends: CensoredEnds::Exclude,
        ..checked()
    };
    let o = run(&cluster, reqs, &excl, PolicyKind::Fastest, 100.0);
    let r = &o.records[0];
    assert_eq!(
        r.first_node,
        Some(1),
        "the node with a censored end sits out"
    );
    close(r.completion_s, 40.5);
}

#[test]
fn replay_interruptions_carry_their_cause_and_recovery_time() {
    // Node 0 is preempted at 5.0005 s while the request decodes; node 1 takes it at once.
    let mut failing = node("failing", 4, 1000.0, 10.0, &[(-100.0, Some(5.0005))]);
    failing.sessions[0] = failing.sessions[0].clone().with_end(false, "preempted");
    let cluster = Cluster::new(vec![failing, always_up("steady", 4, 1000.0, 5.0)]);
    let cfg = checked();
    let o = run(
        &cluster,
        vec![req(0, 0.0, 1000, 100)],
        &cfg,
        PolicyKind::Fastest,
        200.0,
    );
    let r = &o.records[0];
    assert_eq!(r.interruptions, 1);
    assert_eq!(r.interruption_causes, vec!["preempted".to_string()]);
    // 1 s prefill, 4.0005 s of decode: 40 tokens kept; recovery re-prefills 1040 tokens on
    // node 1 at 1000 tok/s plus O_r = 0.1 s and sigma = 2 s.
    let p = Params::default();
    let want = 1.040 + p.recompute_overhead_s + p.stall_penalty_s;
    assert!(
        (r.recovery_s - want).abs() < 1e-5,
        "{} vs {want}",
        r.recovery_s
    );
    // Never recovered: counted to the window end.
    let o = run(
        &cluster,
        vec![req(0, 0.0, 1000, 100)],
        &cfg,
        PolicyKind::Fastest,
        6.0,
    );
    let r = &o.records[0];
    assert_eq!(r.interruptions, 1);
    assert!(
        (r.recovery_s - (6.0 - 5.0005)).abs() < 1e-5,
        "{}",
        r.recovery_s
    );
    // No interruption: nothing.
    let calm = Cluster::new(vec![always_up("steady", 4, 1000.0, 5.0)]);
    let o = run(
        &calm,
        vec![req(0, 0.0, 1000, 100)],
        &cfg,
        PolicyKind::Fastest,
        200.0,
    );
    assert!(o.records[0].interruption_causes.is_empty());
    assert_eq!(o.records[0].recovery_s, 0.0);
}

#[test]
fn replay_oracle_moves_just_before_a_known_end_that_hazard_cannot_see() {
    // Node 0 is faster but dies at 30.0005 s; every request outlives that. The oracle places
    // on node 0 only what finishes in time or moves it before the end: no interruption.
    let cluster = Cluster::new(vec![
        node("doomed", 4, 2000.0, 20.0, &[(-100.0, Some(30.0005))]),
        always_up("steady", 8, 1000.0, 10.0),
    ]);
    let reqs: Vec<_> = (0..6).map(|i| req(i, i as f64, 1000, 800)).collect();
    let cfg = checked();
    let oracle = run(&cluster, reqs.clone(), &cfg, PolicyKind::Oracle, 400.0);
    let fastest = run(&cluster, reqs.clone(), &cfg, PolicyKind::Fastest, 400.0);
    let bound = run(&cluster, reqs, &cfg, PolicyKind::Bound, 400.0);
    assert_eq!(total_interruptions(&oracle), 0);
    assert!(total_interruptions(&fastest) > 0);
    assert_eq!(oracle.stats.oracle_forced, 0);
    for (b, o) in bound.records.iter().zip(&oracle.records) {
        assert!(b.completion_s.unwrap() <= o.completion_s.unwrap() + 1e-6);
        // Unloaded on the fastest rates: 1000/2000 + 800/20 = 40.5 s.
        close(b.completion_s, 40.5);
    }
}

#[test]
fn replay_bound_counts_time_when_no_node_is_up() {
    // One node, down on [10, 30) s: a request arriving at 5 s needing 0.5 + 10 s of service
    // waits out the 20 s gap.
    let cluster = Cluster::new(vec![node(
        "only",
        1,
        2000.0,
        20.0,
        &[(-10.0, Some(10.0)), (30.0, None)],
    )]);
    let cfg = checked();
    let o = run(
        &cluster,
        vec![req(0, 5.0, 1000, 200)],
        &cfg,
        PolicyKind::Bound,
        100.0,
    );
    close(o.records[0].completion_s, 30.5);
    close(o.records[0].ttft_s, 0.5);
    // Past the window end: dropped.
    let o = run(
        &cluster,
        vec![req(0, 5.0, 1000, 200)],
        &cfg,
        PolicyKind::Bound,
        20.0,
    );
    assert!(o.records[0].completion_s.is_none());
    assert!(o.records[0].dropped.is_some());
}

struct Truth(Vec<Option<f64>>);

impl Foresight for Truth {
    fn remaining_up(&self, node: NodeIdx) -> Option<f64> {
        self.0.get(node).copied().flatten()
    }
}

fn view_node(curve: &dyn ConditionalSurvival, decode: f64, prefill: f64, bw: f64) -> NodeView<'_> {
    NodeView {
        decode_tok_s: decode,
        prefill_tok_s: prefill,
        bandwidth_bytes_s: bw,
        slots: 4,
        kv_capacity_tokens: 1_000_000,
        ..NodeView::new(curve)
    }
}

#[test]
fn oracle_gain_counts_the_planned_cost_once() {
    // T_i = 100 / 10 = 10 s; the source ends in R_i = 9 s; staying costs
    // T_i + U_i(R_i) = 10 + (1000 + 90) / 1000 = 11.09 s (O_r = sigma = 0). Moving now by
    // recompute (the link is too slow for a transfer) costs C = 1 s and T_j = 10 s: a gain of
    // 0.09 s, smaller than C, so the old `risk_gain - dT` (which subtracts C twice) refused it.
    let c = Exponential { mean: 1e12 };
    let nodes = [
        view_node(&c, 10.0, 1000.0, 1e3),
        view_node(&c, 10.0, 1000.0, 1e3),
    ];
    let truth = Truth(vec![Some(9.0), None]);
    let view = ClusterView::new(&nodes).with_foresight(&truth);
    let params = Params {
        recompute_overhead_s: 0.0,
        stall_penalty_s: 0.0,
        max_hops: 0,
        ..Params::default()
    };
    let req = RequestView {
        node: Some(0),
        resident_tokens: 1000,
        ..RequestView::new(1, 1000, 100)
    };
    let mut oracle = build(PolicyKind::Oracle, params, 0);
    let mut out = Explanation::recording();
    assert_eq!(oracle.check_migration(&view, &req, 0, &mut out), Some(1));
    assert_eq!(out.outcome, Outcome::Migrate);
    assert!((out.e - 11.09).abs() < 1e-9, "{}", out.e);
    assert!((out.c_planned - 1.0).abs() < 1e-9);
    let gain = out.e - (out.c_planned + out.t_j + out.l_j);
    assert!(gain > 0.0 && gain < out.c_planned, "{gain}");
    // No hysteresis, no min_remaining, no max_hops (max_hops = 0 above).
}

#[test]
fn a_request_past_its_estimate_still_sees_risk_and_can_migrate() {
    // Estimated 100 tokens, 300 done: the plain estimate's remainder is 0.
    let req = RequestView {
        node: Some(0),
        resident_tokens: 1300,
        done_tokens: 300,
        ..RequestView::new(1, 1000, 100).with_sigma(0.5)
    };
    assert_eq!(req.remaining_est(), 0);
    let rem = req.remaining_expected();
    assert!(rem > 10.0, "E[L - done | L > done] = {rem}");
    // Closed form agrees with a numerical integral of the log-normal tail.
    let (mu, s, d) = (100f64.ln(), 0.5f64, 300f64);
    let mut num = 0.0;
    let mut den = 0.0;
    let n = 200_000;
    for k in 0..n {
        let z = -8.0 + 16.0 * (k as f64 + 0.5) / n as f64;
        let l = (mu + s * z).exp();
        let w = (-0.5 * z * z).exp();
        if l > d {
            num += w * (l - d);
            den += w;
        }
    }
    assert!(
        (rem - num / den).abs() / rem < 1e-3,
        "{rem} vs {}",
        num / den
    );
    // Exact estimates: still 1 token past the end.
    let exact = RequestView {
        est_sigma: 0.0,
        ..req
    };
    assert_eq!(exact.remaining_expected(), 1.0);
    // A risky source and a safe destination: hazard migrates it.
    let risky = Exponential { mean: 5.0 };
    let safe = Exponential { mean: 1e12 };
    let nodes = [
        view_node(&risky, 10.0, 5000.0, 1.25e9),
        view_node(&safe, 10.0, 5000.0, 1.25e9),
    ];
    let params = Params {
        min_remaining_s: 1.0,
        hysteresis_s: 0.5,
        ..Params::default()
    };
    let mut hazard = build(PolicyKind::Hazard, params, 0);
    let mut out = Explanation::default();
    let d = hazard.check_migration(&ClusterView::new(&nodes), &req, 0, &mut out);
    assert!(out.l > 0.0, "the source's risk is visible: {}", out.l);
    assert_eq!(d, Some(1), "{:?}", out.outcome);
}

#[test]
fn move_pricing_covers_the_move_and_the_source_during_a_transfer() {
    let risky = Exponential { mean: 20.0 };
    let safe = Exponential { mean: 1e12 };
    let req = RequestView {
        node: Some(0),
        resident_tokens: 4000,
        ..RequestView::new(1, 4000, 400)
    };
    let slow_link = 1.25e7; // a transfer of 4000 x 512 KiB takes ~168 s: recompute wins.
    let fast_link = 1.25e9; // ~1.9 s: transfer wins.
    let price = |src: &NodeView<'_>, dst: &NodeView<'_>| {
        let params = Params::default();
        let s = source_state(
            src,
            &req,
            dst.prefill_tok_s,
            &params,
            RiskModel::Hazard,
            None,
        );
        assess_move(&MoveQuery {
            src,
            source: &s,
            dst,
            dst_fallback_prefill: src.prefill_tok_s,
            params: &params,
            model: RiskModel::Hazard,
            src_remaining_up: None,
            dst_remaining_up: None,
            prune: None,
        })
    };
    // A risky source and a safe destination: a KV transfer carries the source's risk for C.
    let src = view_node(&risky, 20.0, 1000.0, fast_link);
    let dst = view_node(&safe, 20.0, 1000.0, fast_link);
    let a = price(&src, &dst);
    assert_eq!(a.mv.method, hazardserve::policy::MoveMethod::Transfer);
    assert!(a.l_j > 0.0, "source risk during the transfer: {}", a.l_j);
    // A recompute frees the source at once: no source risk.
    let src = view_node(&risky, 20.0, 1e6, slow_link);
    let dst = view_node(&safe, 20.0, 1e6, slow_link);
    let a = price(&src, &dst);
    assert_eq!(a.mv.method, hazardserve::policy::MoveMethod::Recompute);
    assert!(a.l_j < 1e-9, "{}", a.l_j);
    // A risky destination: its loss runs over C + T_j, so a longer move costs more risk.
    let src = view_node(&safe, 20.0, 1000.0, fast_link);
    let dst_fast = view_node(&risky, 20.0, 1000.0, fast_link);
    let dst_slow = view_node(&risky, 20.0, 1000.0, fast_link / 4.0);
    let quick = price(&src, &dst_fast);
    let slow = price(&src, &dst_slow);
    assert!(slow.mv.cost_s > quick.mv.cost_s);
    assert!(slow.l_j > quick.l_j, "{} vs {}", slow.l_j, quick.l_j);
}

/// Records the ages the policy is shown at each placement.
struct AgeProbe(Vec<f64>);

impl Policy for AgeProbe {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Fastest
    }
    fn place(
        &mut self,
        view: &ClusterView<'_>,
        _: &RequestView,
        _: &mut Explanation,
    ) -> Option<NodeIdx> {
        self.0.push(view.nodes[0].age_s);
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

#[test]
fn replay_left_truncated_age_counts_from_the_trace_start_plus_entry() {
    // The session was already up when the trace began at -50 s, with a known age of 100 s.
    let mut n = node("old", 4, 1000.0, 10.0, &[(-50.0, None)]);
    n.sessions[0] = UpSession::new(us(-50.0), UpSession::OPEN_END).with_truncation(true, 100.0);
    assert!(n.sessions[0].left_truncated);
    let cluster = Cluster::new(vec![n]);
    let cfg = checked();
    let spec = RunSpec::new(
        PolicyKind::Fastest,
        Window::new(0, us(100.0)),
        1,
        cfg.params,
    );
    let mut probe = AgeProbe(Vec::new());
    let w = Workload::new(vec![req(0, 10.0, 100, 10)]);
    simulate_with(&cluster, &w, &cfg, &spec, &mut probe).unwrap();
    assert!((probe.0[0] - 160.0).abs() < 1e-9, "{:?}", probe.0);
    // Bound runs through `simulate` too.
    let spec = RunSpec::new(PolicyKind::Bound, Window::new(0, us(100.0)), 1, cfg.params);
    let o = simulate(&cluster, &w, &cfg, &spec).unwrap();
    assert_eq!(o.policy, PolicyKind::Bound);
}

#[test]
fn replay_oracle_and_bound_claims_on_the_stored_demo_scenario() {
    // The scenario `compare` replays on the demo store (sample traces and workload).
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = crate::common::hs(&store);
    c.arg("demo").arg("--samples").arg(crate::common::samples());
    crate::common::ok(c);
    let cfg = hazardserve::scenario::ScenarioConfig::default();
    let sc = hazardserve::scenario::build(&hazardserve::store::Store::open(&store).unwrap(), &cfg)
        .expect("demo scenario builds");
    let forced = check_grid(
        &sc.cluster,
        &sc.workload,
        &sc.config,
        sc.grid.windows.clone(),
    );
    eprintln!(
        "demo scenario: oracle forced onto a doomed node in {forced} of {} windows",
        sc.grid.windows.len()
    );
}

/// Every scenario stored in `reports/scenarios/` (the book's), on the real public traces:
/// the oracle has the fewest unplanned interruptions over the windows it was not forced in,
/// and no request finishes before its bound.
#[test]
fn replay_oracle_and_bound_claims_on_every_stored_scenario() {
    let Some(traces) = crate::common::shared("traces-public") else {
        return;
    };
    let Some(workloads) = crate::common::shared("workloads-public") else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenario in {}", dir.display());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let cfg =
            hazardserve::scenario::ScenarioConfig::from_toml(&text, &file.display().to_string())
                .expect("stored scenario parses");
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        // Every source the scenario's pools read (its `[nodes]` source without pools).
        let sources = cfg.node_sources();
        if sources == ["two-class"] {
            crate::common::ingest_control_fleet(&store);
        } else {
            let mut c = crate::common::hs(&store);
            c.args(["-q", "ingest-public"])
                .arg(&traces)
                .args(["--only", &sources.join(",")]);
            crate::common::ok(c);
        }
        // The workloads the stored scenarios use, as the book ingests them.
        if cfg.workload.source == "long-output" {
            crate::common::ingest_long_output(&store, tmp.path());
        } else {
            let csv = match cfg.workload.source.as_str() {
                "azure-conv" => "azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv",
                "azure-code" => "azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv",
                other => panic!("{}: no known public workload {other:?}", file.display()),
            };
            crate::common::ingest(
                &store,
                "azure-llm",
                &cfg.workload.source,
                &workloads.join(csv),
            );
        }
        let sc =
            hazardserve::scenario::build(&hazardserve::store::Store::open(&store).unwrap(), &cfg)
                .expect("stored scenario builds");
        let forced = check_grid(
            &sc.cluster,
            &sc.workload,
            &sc.config,
            sc.grid.windows.clone(),
        );
        eprintln!(
            "{}: oracle forced onto a doomed node in {forced} of {} windows",
            file.display(),
            sc.grid.windows.len()
        );
    }
}

/// The oracle's end checks follow a request's rate: A alone on node `x` would finish at
/// 28.1 s, before `x`'s known end at 30 s, so no check is due when it starts decoding; B
/// joins at 10 s and, while both decode at half the rate, slows A past the end (30.1 s). The
/// oracle re-checks A when its end moves and moves it off `x` in time: no interruption, under
/// both engines (each decoder at `d / k`: batch slowdown 1, or a step with no fixed share).
#[test]
fn the_oracle_moves_a_request_a_later_co_decoder_slows_past_its_nodes_end() {
    for engine in [EngineKind::Simple, EngineKind::Iteration] {
        let mut x = node("x", 4, 1000.0, 10.0, &[(-100.0, Some(30.0)), (200.0, None)]);
        let mut y = always_up("y", 4, 1000.0, 2.0);
        for n in [&mut x, &mut y] {
            n.spec.step.fixed_share = 0.0;
            n.spec.step.prefill_attention_per_ktok = 0.0;
        }
        let cluster = Cluster::new(vec![x, y]);
        let reqs = vec![req(0, 0.0, 100, 280), req(1, 10.0, 100, 20)];
        let cfg = ReplayConfig {
            engine,
            batch_slowdown: 1.0,
            ..checked()
        };
        let out = run(&cluster, reqs, &cfg, PolicyKind::Oracle, 400.0);
        let (a, b) = (&out.records[0], &out.records[1]);
        assert_eq!(b.final_node, Some(0), "{engine:?}: B is served on x");
        assert_eq!(a.first_node, Some(0), "{engine:?}");
        assert_eq!(
            (a.interruptions, b.interruptions),
            (0, 0),
            "{engine:?}: the oracle lost A at x's end"
        );
        assert_eq!(a.planned_migrations, 1, "{engine:?}: {a:?}");
        assert_eq!(a.final_node, Some(1), "{engine:?}");
        assert!(a.completion_s.is_some());
        // Without B, A stays on x and finishes there before the end.
        let alone = run(
            &cluster,
            vec![req(0, 0.0, 100, 280)],
            &cfg,
            PolicyKind::Oracle,
            400.0,
        );
        let a = &alone.records[0];
        assert_eq!((a.planned_migrations, a.final_node), (0, Some(0)));
        assert!(a.completion_s.is_some_and(|c| c < 30.0), "{a:?}");
    }
}
