//! The experiment grid: thread-count independence, aggregate keys, bootstrap intervals and the
//! fraction of the fastest-to-oracle gap closed.

use hazardserve::policy::iteration::{EngineKind, StepCoefficients};
use hazardserve::policy::{Params, PolicyKind};
use hazardserve::replay::{
    aggregate, run_grid, run_grid_metrics, summarize, AggregateOptions, CensoredEnds, Grid,
    LengthEstimator, ParamPoint, PoissonWorkload, ReplayConfig, RunOutput, SyntheticCluster,
    Window, METRICS,
};

use super::replay_support::us;

fn inputs() -> (hazardserve::replay::Cluster, hazardserve::replay::Workload) {
    let cluster = SyntheticCluster {
        nodes: 12,
        up_shape: 0.7,
        up_scale_s: 600.0,
        down_shape: 1.0,
        down_scale_s: 120.0,
        from_us: 0,
        to_us: us(4000.0),
        slots: 4,
        seed: 9,
    }
    .build();
    let workload = PoissonWorkload {
        rate_per_s: 3.0,
        length_s: 200.0,
        seed: 4,
        ..PoissonWorkload::default()
    }
    .build();
    (cluster, workload)
}

fn grid() -> Grid {
    Grid::new(
        PolicyKind::ALL.to_vec(),
        vec![
            Window::new(us(500.0), us(300.0)),
            Window::new(us(1500.0), us(300.0)),
            Window::new(us(2500.0), us(300.0)),
        ],
        vec![1, 2],
    )
    .with_params(ParamPoint::hysteresis_sweep(Params::default(), &[0.0, 1.0]))
}

fn cfg() -> ReplayConfig {
    ReplayConfig {
        estimator: LengthEstimator::Lognormal { sigma: 0.5 },
        ..ReplayConfig::default()
    }
}

fn on_threads(n: usize) -> Vec<RunOutput> {
    let (cluster, workload) = inputs();
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build()
        .expect("thread pool")
        .install(|| run_grid(&cluster, &workload, &cfg(), &grid()))
        .expect("grid runs")
}

#[test]
fn replay_one_and_two_threads_give_identical_records() {
    let one = on_threads(1);
    let two = on_threads(2);
    // Every kind: the twelve policies (the routers included) and the analytic `bound` row.
    assert_eq!(one.len(), PolicyKind::ALL.len() * 3 * 2 * 2);
    assert_eq!(PolicyKind::ALL.len(), 13);
    assert!(one
        .iter()
        .any(|r| r.records.iter().any(|x| x.interruptions > 0)));
    for (a, b) in one.iter().zip(&two) {
        assert_eq!(
            (a.policy, a.window, a.seed, a.param),
            (b.policy, b.window, b.seed, b.param)
        );
        assert_eq!(a.records, b.records);
        assert_eq!(a.stats, b.stats);
    }
    let opts = AggregateOptions::default();
    assert_eq!(
        serde_json::to_string(&summarize(&one, &opts)).expect("json"),
        serde_json::to_string(&summarize(&two, &opts)).expect("json")
    );
}

#[test]
fn replay_aggregates_have_the_documented_keys_and_intervals() {
    let runs = on_threads(2);
    let opts = AggregateOptions::default();
    let sums = summarize(&runs, &opts);
    assert_eq!(sums.len(), 2 * PolicyKind::ALL.len());
    let keys: Vec<&str> = METRICS.iter().map(|d| d.key).collect();
    for s in &sums {
        let v = s.to_json();
        let o = v.as_object().expect("object");
        assert!(o["policy"].is_string());
        assert!(o["requests"].as_u64().is_some_and(|n| n > 0));
        assert!(o["param"].as_str().is_some_and(|p| p.starts_with("h=")));
        for &k in &keys {
            assert!(o.contains_key(k), "{k} missing");
            // The bound starts no request on a node: it has no rate per started request.
            if k == "interruptions_per_started" && o["kind"] == "bound" {
                assert!(o[k].is_null(), "{v}");
                continue;
            }
            // An unpriced fleet has no cost (`replay_cost` tests a priced one), and a
            // workload without prefix blocks no prefix-cache metrics (`replay_prefix` and
            // `workload_prefix` test them).
            if [
                "dollars",
                "goodput_per_dollar",
                "prefix_hit_rate",
                "prefill_tokens",
                "cache_destroyed_tokens",
                "state_migrations",
            ]
            .contains(&k)
            {
                assert!(o[k].is_null() && !o.contains_key(&format!("{k}_ci")), "{v}");
                continue;
            }
            {
                let ci = o[&format!("{k}_ci")].as_array().expect("ci with 3 windows");
                let (lo, hi) = (ci[0].as_f64().expect("lo"), ci[1].as_f64().expect("hi"));
                let x = o[k].as_f64().expect("value");
                assert!(
                    lo <= x + 1e-9 && x <= hi + 1e-9,
                    "{k}: {x} not in [{lo}, {hi}]"
                );
            }
        }
        // KV preemptions per window (the simple engine never preempts).
        assert_eq!(o["kv_preemptions"].as_f64(), Some(0.0), "{v}");
        for k in o.keys() {
            let base = k.strip_suffix("_ci").unwrap_or(k);
            assert!(
                keys.contains(&base)
                    || [
                        "policy",
                        "kind",
                        "param",
                        "requests",
                        "windows",
                        "interruptions_by_cause",
                        "kv_preemptions",
                        "forecast_fallbacks",
                        "vs_fastest",
                        "gap_metric",
                        "vs_best_blind",
                        "gap_closed",
                        "gap",
                        "forecast",
                    ]
                    .contains(&base),
                "unexpected key {k}"
            );
        }
    }
    let gap = |name: &str| {
        sums.iter()
            .find(|s| s.label.kind.name() == name && s.label.param.as_deref() == Some("h=1"))
            .and_then(|s| s.gap_closed.value)
    };
    if let (Some(f), Some(o)) = (gap("fastest"), gap("oracle")) {
        assert!(f.abs() < 1e-12, "fastest closes none of its own gap: {f}");
        assert!((o - 1.0).abs() < 1e-12, "oracle closes all of it: {o}");
    } else {
        // Three windows rarely pin the gap down: then no row may show a number.
        for s in &sums {
            assert!(s.gap_closed.value.is_none(), "{}", s.label);
            assert!(s.to_json()["gap"].is_string(), "{}", s.label);
        }
    }
    // Order independence and the metrics-only path.
    let mut metrics: Vec<_> = runs.iter().map(RunOutput::metrics).collect();
    metrics.reverse();
    assert_eq!(aggregate(&metrics, &opts), sums);
    let (cluster, workload) = inputs();
    let light = run_grid_metrics(&cluster, &workload, &cfg(), &grid()).expect("runs");
    assert_eq!(aggregate(&light, &opts), sums);
}

#[test]
fn replay_single_window_has_no_intervals() {
    let (cluster, workload) = inputs();
    let g = Grid::new(
        vec![PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle],
        vec![Window::new(us(500.0), us(300.0))],
        vec![1, 2, 3],
    );
    let runs = run_grid(&cluster, &workload, &cfg(), &g).expect("runs");
    let sums = summarize(&runs, &AggregateOptions::default());
    for s in &sums {
        let v = s.to_json();
        let o = v.as_object().expect("object");
        assert!(o.keys().all(|k| !k.ends_with("_ci")), "{o:?}");
        assert!(o["param"].is_null());
        // One window: no interval, so no gap can be shown to exist.
        assert!(o["gap_closed"].is_null() && o["gap"] == "none", "{o:?}");
    }
}

/// `hazard-truth` is `hazard` with each node's curve replaced by its generating law: where
/// the two are the same curve the runs are identical; where they differ the decisions differ;
/// and a cluster without laws refuses the policy instead of running `hazard` under its name.
#[test]
fn hazard_truth_reads_the_generating_law_and_needs_it() {
    use hazardserve::replay::{run_grid, ReplayError};
    use hazardserve::survival::curve::{ConditionalSurvival, Weibull};
    use std::sync::Arc;
    let (mut cluster, workload) = inputs();
    let ws = vec![
        Window::new(us(500.0), us(300.0)),
        Window::new(us(1500.0), us(300.0)),
    ];
    let g = Grid::new(
        vec![PolicyKind::Hazard, PolicyKind::HazardTruth],
        ws.clone(),
        vec![1],
    );
    let cfg = ReplayConfig::default();
    let same = run_grid(&cluster, &workload, &cfg, &g).expect("runs");
    let (h, t): (Vec<_>, Vec<_>) = same.iter().partition(|o| o.policy == PolicyKind::Hazard);
    assert_eq!(h.len(), 2);
    for (a, b) in h.iter().zip(&t) {
        assert_eq!(a.records, b.records, "same curve, same decisions");
    }
    // Fitted curves that say "never fails" against the true Weibull laws: the truth changes
    // where requests go.
    let flat: Arc<dyn ConditionalSurvival> = Arc::new(Weibull {
        shape: 1.0,
        scale: 1e12,
    });
    for n in &mut cluster.nodes {
        n.survival = Arc::clone(&flat);
    }
    let differ = run_grid(&cluster, &workload, &cfg, &g).expect("runs");
    let nodes = |k: PolicyKind| -> Vec<Option<u32>> {
        differ
            .iter()
            .filter(|o| o.policy == k)
            .flat_map(|o| o.records.iter().map(|r| r.final_node))
            .collect()
    };
    assert_ne!(nodes(PolicyKind::Hazard), nodes(PolicyKind::HazardTruth));
    for n in &mut cluster.nodes {
        n.truth = None;
    }
    let err = run_grid(&cluster, &workload, &cfg, &g).unwrap_err();
    assert!(
        matches!(&err, ReplayError::BadNode { reason, .. } if reason.contains("hazard-truth")),
        "{err}"
    );
}

/// `workload.load` offers each window a share of its own up capacity: a window with twice the
/// nodes up gets twice the arrival rate, and a window with no node up gets none.
#[test]
fn offered_load_is_per_window() {
    use super::replay_support::{node, req};
    use hazardserve::scenario::build::offered_load;
    let nodes = vec![
        node("a", 2, 1000.0, 10.0, &[(0.0, Some(2000.0))]),
        node("b", 2, 1000.0, 10.0, &[(1000.0, Some(4000.0))]),
    ];
    let windows = [
        Window::new(0, us(1000.0)),
        Window::new(us(1000.0), us(1000.0)),
        Window::new(us(2500.0), us(500.0)),
        Window::new(us(5000.0), us(1000.0)),
    ];
    let requests = vec![req(0, 0.0, 1000, 90), req(1, 9.0, 1000, 90)];
    let l = offered_load(
        &nodes,
        &windows,
        &requests,
        0.0,
        EngineKind::Simple,
        CensoredEnds::StayUp,
    );
    // Service time of a request: 1 s prefill + 9 s decode = 10 s; 2 slots per node.
    let expect = [0.2, 0.4, 0.2, 0.0];
    for (got, want) in l.window_capacity_req_s.iter().zip(expect) {
        assert!((got - want).abs() < 1e-12, "{:?}", l.window_capacity_req_s);
    }
    assert!((l.capacity_req_s - 0.2).abs() < 1e-12);
    // Two arrivals over a loop period of 9 + 9 s.
    assert!((l.base_rate_req_s - 2.0 / 18.0).abs() < 1e-12);
    // A censored end is not a failure: a node whose session's end is censored at 500 s is up
    // for the whole first window as the replay plays it (stay up), and sits it out under
    // `exclude`.
    let mut censored = nodes.clone();
    censored[0].sessions[0] = censored[0].sessions[0]
        .clone()
        .with_end(true, "observation-end");
    censored[0].sessions[0].end_us = us(500.0);
    let stay = offered_load(
        &censored,
        &windows[..1],
        &requests,
        0.0,
        EngineKind::Simple,
        CensoredEnds::StayUp,
    );
    assert!(
        (stay.window_capacity_req_s[0] - 0.2).abs() < 1e-12,
        "{stay:?}"
    );
    let out = offered_load(
        &censored,
        &windows[..1],
        &requests,
        0.0,
        EngineKind::Simple,
        CensoredEnds::Exclude,
    );
    assert_eq!(out.window_capacity_req_s[0], 0.0, "{out:?}");
    let scales = l.window_scales(0.5);
    assert!((scales[1] / scales[0] - 2.0).abs() < 1e-12, "{scales:?}");
    assert!((scales[0] - 0.5 * 0.2 / (2.0 / 18.0)).abs() < 1e-12);
    assert_eq!(scales[3], 0.0);
    // The iteration model: the node's steps are shared, a request takes its 1,000 prefill
    // tokens' compute and attention and 90 (alpha / 2 + gamma) of decode steps beside the
    // other slot's decoder.
    let it = offered_load(
        &nodes,
        &windows,
        &requests,
        0.0,
        EngineKind::Iteration,
        CensoredEnds::StayUp,
    );
    let c = StepCoefficients::of(1000.0, 10.0, nodes[0].spec.step).unwrap();
    let tau = c.prefill_work_s(1000.0) + 90.0 * (c.alpha / 2.0 + c.gamma);
    let expect = [1.0 / tau, 2.0 / tau, 1.0 / tau, 0.0];
    for (got, want) in it.window_capacity_req_s.iter().zip(expect) {
        assert!((got - want).abs() < 1e-12, "{:?}", it.window_capacity_req_s);
    }
}

/// A grid's per-window rate scale replaces the configuration's for that window only, and a
/// list that does not match the windows is refused.
#[test]
fn a_windows_rate_scale_replaces_the_configs() {
    let (cluster, workload) = inputs();
    // Two disjoint windows (overlapping windows are refused, below).
    let windows = vec![
        Window::new(us(500.0), us(300.0)),
        Window::new(us(800.0), us(300.0)),
    ];
    let g = Grid::new(vec![PolicyKind::LeastLoaded], windows.clone(), vec![1])
        .with_rate_scales(vec![1.0, 0.5]);
    let runs = run_grid(&cluster, &workload, &cfg(), &g).unwrap();
    let plain = run_grid(
        &cluster,
        &workload,
        &cfg(),
        &Grid::new(vec![PolicyKind::LeastLoaded], windows.clone(), vec![1]),
    )
    .unwrap();
    // Window 0 at the configuration's own scale (1) is the plain run.
    assert_eq!(runs[0].records.len(), plain[0].records.len());
    // Half the rate over a 300-s window of a 200-s workload (not looped): the arrivals spread
    // over 400 s and only those before 300 s are kept, where the plain run keeps every one.
    let half = runs[1].records.len();
    assert!(
        half < plain[1].records.len(),
        "{half} vs {}",
        plain[1].records.len()
    );
    assert!(runs[1]
        .records
        .iter()
        .all(|r| r.arrival_s >= 0.0 && r.arrival_s < 300.0));
    let bad = Grid::new(vec![PolicyKind::LeastLoaded], windows.clone(), vec![1])
        .with_rate_scales(vec![1.0]);
    let e = run_grid(&cluster, &workload, &cfg(), &bad).unwrap_err();
    assert!(e.to_string().contains("1 rate scales for 2 windows"), "{e}");
    let bad = Grid::new(vec![PolicyKind::LeastLoaded], windows, vec![1])
        .with_rate_scales(vec![1.0, f64::NAN]);
    let e = run_grid(&cluster, &workload, &cfg(), &bad).unwrap_err();
    assert!(e.to_string().contains("window 1: rate_scale"), "{e}");
    // Windows that overlap are an error, naming both.
    let overlapping = vec![
        Window::new(us(500.0), us(300.0)),
        Window::new(us(700.0), us(300.0)),
    ];
    let bad = Grid::new(vec![PolicyKind::LeastLoaded], overlapping, vec![1]);
    let e = run_grid(&cluster, &workload, &cfg(), &bad).unwrap_err();
    assert!(e.to_string().contains("windows 0 and 1 overlap"), "{e}");
}

/// `hazard-pooled` is `memoryless` on the same fleet with every node told the fleet's mean
/// rate (identical per-request records, both engines), and it is not `memoryless` on the
/// fleet as it is (the nodes' rates differ, so the twin must not read them). Mutation that
/// fails it: `hazard-pooled` reading each node's own rate.
#[test]
fn the_twin_prices_every_node_at_the_fleet_s_mean_rate() {
    use hazardserve::replay::{simulate, RunSpec};
    let (mut cluster, workload) = inputs();
    for (i, n) in cluster.nodes.iter_mut().enumerate() {
        // Rates a hundredfold apart: node-specific risk the twin must not see.
        n.exp_rate_per_s = if i % 2 == 0 { 1.0 / 60.0 } else { 1.0 / 6000.0 };
    }
    let mean = cluster.twin_rate_per_s();
    assert!((mean - (1.0 / 60.0 + 1.0 / 6000.0) / 2.0).abs() < 1e-15);
    let mut flat = cluster.clone();
    for n in &mut flat.nodes {
        n.exp_rate_per_s = mean;
    }
    for engine in [EngineKind::Simple, EngineKind::Iteration] {
        let cfg = ReplayConfig {
            engine,
            ..ReplayConfig::default()
        };
        let window = Window::new(us(600.0), us(2400.0));
        let records = |c: &hazardserve::replay::Cluster, k: PolicyKind| {
            let spec = RunSpec::new(k, window, 1, cfg.params);
            simulate(c, &workload, &cfg, &spec)
                .unwrap_or_else(|e| panic!("{e}"))
                .records
        };
        let twin = records(&cluster, PolicyKind::HazardPooled);
        assert_eq!(twin, records(&flat, PolicyKind::Memoryless), "{engine:?}");
        assert_ne!(
            twin,
            records(&cluster, PolicyKind::Memoryless),
            "{engine:?}: memoryless reads the nodes' own rates, which differ"
        );
    }
}
