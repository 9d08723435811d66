//! The cost of a run: every node billed at its pool's price while it is up (as the replay
//! plays it), and goodput per dollar, checked against figures computed by hand.

use hazardserve::policy::PolicyKind;
use hazardserve::replay::{
    aggregate, AggregateOptions, Cluster, Metric, Pool, ReplayConfig, RunMetrics,
};

use crate::replay_support::{always_up, node, req, run};

/// Two pools: `spot` (2 $/h) with node `s0` up for the first half hour of the hour-long
/// window and `s1` up from 15 min to 45 min, and `on-demand` (3 $/h) with one node up
/// throughout.
fn two_pool_cluster() -> Cluster {
    Cluster::new(vec![
        node("s0", 4, 5_000.0, 50.0, &[(0.0, Some(1_800.0))]),
        node("s1", 4, 5_000.0, 50.0, &[(900.0, Some(2_700.0))]),
        always_up("od", 4, 5_000.0, 50.0),
    ])
    .with_pools(
        vec![
            Pool {
                name: "spot".into(),
                price_per_node_hour: 2.0,
            },
            Pool {
                name: "on-demand".into(),
                price_per_node_hour: 3.0,
            },
        ],
        vec![0, 0, 1],
    )
}

#[test]
fn dollars_and_goodput_per_dollar_equal_the_hand_figures() {
    let cluster = two_pool_cluster();
    // Spot: (0.5 h + 0.5 h) x 2 $/h = 2 $; on-demand: 1 h x 3 $/h = 3 $; 5 $ in all.
    let by_hand = 2.0 * (0.5 + 0.5) + 3.0;
    let requests: Vec<_> = (0..20)
        .map(|k| req(k, 10.0 + 150.0 * k as f64, 200, 100))
        .collect();
    let cfg = ReplayConfig::default();
    for policy in [
        PolicyKind::LeastLoaded,
        PolicyKind::Hazard,
        PolicyKind::Bound,
    ] {
        let out = run(&cluster, requests.clone(), &cfg, policy, 3_600.0);
        assert!((out.cost.dollars - by_hand).abs() < 1e-9, "{:?}", out.cost);
        assert_eq!(out.cost.per_pool[0], ("spot".to_string(), 2.0));
        assert_eq!(out.cost.per_pool[1], ("on-demand".to_string(), 3.0));
        let s = out.summary();
        assert_eq!(s.get(Metric::Dollars), Some(by_hand));
        let good: u64 = out
            .records
            .iter()
            .filter(|r| r.slo_met)
            .map(|r| r.output_tokens)
            .sum();
        assert!(good > 0, "{policy:?} met no SLO");
        let gpd = s
            .get(Metric::GoodputPerDollar)
            .expect("defined when priced");
        assert!((gpd - good as f64 / by_hand).abs() < 1e-9, "{gpd}");
        assert_eq!(s.dollars_by_pool.get("spot"), Some(&2.0));
    }
}

#[test]
fn the_scored_span_is_what_is_billed() {
    // Warm-up 600 s, drain 600 s: the billed span is [600, 3000) s. Spot: s0 up 600..1800
    // (1/3 h), s1 up 900..2700 (1/2 h); on-demand 2/3 h.
    let cluster = two_pool_cluster();
    let cfg = ReplayConfig {
        warmup_s: 600.0,
        drain_s: 600.0,
        ..ReplayConfig::default()
    };
    let out = run(
        &cluster,
        vec![req(0, 700.0, 10, 10)],
        &cfg,
        PolicyKind::Fastest,
        3_600.0,
    );
    let by_hand = 2.0 * (1.0 / 3.0 + 0.5) + 3.0 * (2.0 / 3.0);
    assert!((out.cost.dollars - by_hand).abs() < 1e-9, "{:?}", out.cost);
}

/// Billing follows the replay's censored-end rule over the whole window: a censored end in the
/// warm-up keeps the node up (stay up), so it is billed for the whole scored span; under
/// `exclude` the node sits the window out and is billed nothing.
#[test]
fn a_censored_end_in_the_warm_up_is_billed_as_the_replay_plays_it() {
    use hazardserve::replay::CensoredEnds;
    let mut s0 = node("s0", 4, 5_000.0, 50.0, &[(0.0, Some(300.0))]);
    s0.sessions[0] = s0.sessions[0].clone().with_end(true, "observation-end");
    let cluster = Cluster::new(vec![s0]).with_pools(
        vec![Pool {
            name: "spot".into(),
            price_per_node_hour: 2.0,
        }],
        vec![0],
    );
    for (mode, by_hand) in [
        (CensoredEnds::StayUp, 2.0 * 2_400.0 / 3_600.0),
        (CensoredEnds::Exclude, 0.0),
    ] {
        let cfg = ReplayConfig {
            warmup_s: 600.0,
            drain_s: 600.0,
            censored_ends: mode,
            ..ReplayConfig::default()
        };
        let out = run(
            &cluster,
            vec![req(0, 700.0, 10, 10)],
            &cfg,
            PolicyKind::Fastest,
            3_600.0,
        );
        assert!(
            (out.cost.dollars - by_hand).abs() < 1e-9,
            "{mode:?}: {:?} against {by_hand}",
            out.cost
        );
    }
}

#[test]
fn an_unpriced_fleet_has_no_cost_metrics_and_the_mean_is_per_window() {
    let cluster = Cluster::new(vec![always_up("a", 2, 1_000.0, 20.0)]);
    let out = run(
        &cluster,
        vec![req(0, 1.0, 10, 10)],
        &ReplayConfig::default(),
        PolicyKind::Fastest,
        600.0,
    );
    let s = out.summary();
    assert_eq!(s.get(Metric::Dollars), None);
    assert_eq!(s.get(Metric::GoodputPerDollar), None);
    assert!(s.dollars_by_pool.is_empty());
    // Priced: two windows of the same policy give the mean of their dollars, with the pool split.
    let cluster = two_pool_cluster();
    let runs: Vec<RunMetrics> = [1_800.0, 3_600.0]
        .iter()
        .enumerate()
        .map(|(w, &len)| {
            let mut m = run(
                &cluster,
                vec![req(0, 1.0, 10, 10)],
                &ReplayConfig::default(),
                PolicyKind::Fastest,
                len,
            )
            .metrics();
            m.window = w;
            m
        })
        .collect();
    let rows = aggregate(&runs, &AggregateOptions::default());
    // Window 1 (half an hour): spot 2 x (0.5 + 0.25), on-demand 1.5 = 3 $; window 2: 5 $.
    let d = rows[0].get(Metric::Dollars).value.expect("a mean");
    assert!((d - 4.0).abs() < 1e-9, "{d}");
    assert!((rows[0].dollars_by_pool["on-demand"] - 2.25).abs() < 1e-9);
}

#[test]
fn a_negative_price_is_rejected() {
    let cluster = Cluster::new(vec![always_up("a", 2, 1_000.0, 20.0)]).with_pools(
        vec![Pool {
            name: "bad".into(),
            price_per_node_hour: -1.0,
        }],
        vec![0],
    );
    let e = cluster.validate().unwrap_err().to_string();
    assert!(
        e.contains("pool bad") && e.contains("price_per_node_hour"),
        "{e}"
    );
}
