//! The controls every hazard-versus-blind comparison rests on, run through the same
//! aggregation and tests as the regime map (`aggregate`, `paired`, Benjamini-Hochberg q-values):
//!
//! * an **A/A test**: two statistically identical policies (`random` under two seeds) over a
//!   grid of 60 cells must be flagged different in no more than the nominal false-discovery
//!   rate of cells (and the raw paired t test must reject about 5 % of them);
//! * a **negative control**: a fleet whose nodes all have the same exponential sessions, where
//!   age carries no information, so `hazard`, `memoryless` and `fastest` cannot differ;
//! * a **positive control**: a fleet of nodes that differ strongly in age-dependent risk (half
//!   with a sharply increasing hazard near a typical reclaim age, half with a decreasing one),
//!   a slow tier and long requests (a loss re-prefills the whole context: tens of seconds),
//!   where the hazard term must pay against `fastest`;
//! * the **committed positive control** (`reports/scenarios/two-class-control.toml`, over the
//!   fleet `synth traces --fleet two-class` made, through the real binary): `hazard` with its
//!   fitted curves and `hazard-truth` with the generating laws both beat `fastest`;
//! * the **oracle under overload**: per started request, no policy is interrupted less often
//!   than the oracle, even when requests wait in queues (a count per window would reward a
//!   policy that leaves requests queued and never started).

use hazardserve::policy::PolicyKind;
use hazardserve::replay::stats::bh_q_values;
use hazardserve::replay::{
    aggregate, paired, run_grid_metrics, AggregateOptions, Cluster, Grid, Metric, PoissonWorkload,
    PolicyLabel, ReplayConfig, RunMetrics, SyntheticCluster, Window, Workload,
};
use hazardserve::sweep::FDR;

use super::replay_support::us;
use crate::common::{hs, ok};

/// `n` back-to-back windows of `length_s` seconds starting `from_s` into the trace.
fn windows(n: usize, from_s: f64, length_s: f64) -> Vec<Window> {
    (0..n)
        .map(|k| Window::new(us(from_s + k as f64 * length_s), us(length_s)))
        .collect()
}

/// The runs of seed 2 relabelled as the parameter point `b`, so that `random` (seed 1) and
/// `random --b` (seed 2) are two rows of one comparison.
fn split_seeds(runs: Vec<RunMetrics>) -> Vec<RunMetrics> {
    runs.into_iter()
        .map(|mut r| {
            if r.seed == 2 {
                r.param = 1;
                r.param_label = "b".into();
                r.seed = 1;
            }
            r
        })
        .collect()
}

#[test]
fn aa_identical_policies_are_flagged_within_the_nominal_rate() {
    let cells = 60u64;
    let mut p_values = Vec::new();
    for cell in 0..cells {
        let cluster = SyntheticCluster {
            nodes: 3 + (cell % 5) as usize,
            up_shape: 0.6 + 0.1 * (cell % 4) as f64,
            up_scale_s: 1800.0,
            down_shape: 1.0,
            down_scale_s: 300.0,
            from_us: 0,
            to_us: us(6.0 * 3600.0),
            slots: 2,
            seed: 1000 + cell,
        }
        .build();
        let workload = PoissonWorkload {
            rate_per_s: 0.1 + 0.05 * (cell % 3) as f64,
            length_s: 600.0,
            prompt_median: 800.0,
            prompt_sigma: 0.6,
            output_median: 200.0,
            output_sigma: 0.6,
            seed: 7 + cell,
        }
        .build();
        let grid = Grid::new(
            vec![PolicyKind::Random],
            windows(10, 600.0, 1200.0),
            vec![1, 2],
        );
        let runs = run_grid_metrics(&cluster, &workload, &ReplayConfig::default(), &grid)
            .expect("the A/A grid runs");
        let runs = split_seeds(runs);
        let a = PolicyLabel::new(PolicyKind::Random);
        let b = PolicyLabel::with_param(PolicyKind::Random, "b");
        let v = paired(&runs, &a, &b).expect("both seeds ran");
        let d = v.get(Metric::MeanCompletion).expect("a paired difference");
        p_values.push(d.p_value);
    }
    let tests = p_values.iter().flatten().count();
    assert!(tests >= 50, "only {tests} of {cells} cells had a test");
    // The raw paired t test rejects at its nominal rate: 5 % of 60 is 3; 8 or more rejections
    // has probability below 1 % under a calibrated test.
    let raw = p_values.iter().flatten().filter(|&&p| p < 0.05).count();
    assert!(
        raw <= 7,
        "the paired t test rejected {raw} of {tests} A/A cells"
    );
    // Benjamini-Hochberg over the cells: the share flagged stays within the FDR.
    let q = bh_q_values(&p_values);
    let flagged = q.iter().flatten().filter(|&&q| q < FDR).count();
    assert!(
        (flagged as f64) <= FDR * tests as f64,
        "{flagged} of {tests} identical-policy cells flagged at q < {FDR}"
    );
    eprintln!("A/A: {raw} of {tests} cells with p < 0.05, {flagged} with q < {FDR}");
}

/// A slow tier (prefill 100 tokens/s, decode 25 tokens/s, two slots: phone-class), so that an
/// unplanned loss, which re-prefills the whole context elsewhere, costs tens of seconds.
const PREFILL_TOK_S: f64 = 100.0;
/// See [`PREFILL_TOK_S`].
const DECODE_TOK_S: f64 = 25.0;

/// A fleet of `nodes` nodes of the slow tier; node `i` is of class `i % 2` and its
/// up-sessions are Weibull(`shape[class]`, `scale[class]`), gaps Weibull(1, 300 s); each node
/// knows its generating law (what a perfect survival model would give).
fn two_class_fleet(nodes: usize, shape: [f64; 2], scale: [f64; 2], seed: u64) -> Cluster {
    let mut out = Vec::with_capacity(nodes);
    for i in 0..nodes {
        let class = i % 2;
        let one = SyntheticCluster {
            nodes: 1,
            up_shape: shape[class],
            up_scale_s: scale[class],
            down_shape: 1.0,
            down_scale_s: 300.0,
            from_us: 0,
            to_us: us(12.0 * 3600.0),
            slots: 2,
            seed: seed * 1000 + i as u64,
        }
        .build();
        let mut node = one.nodes[0].clone();
        node.name = format!("c{class}-{i:02}");
        node.spec.prefill_tok_s = PREFILL_TOK_S;
        node.spec.decode_tok_s = DECODE_TOK_S;
        out.push(node);
    }
    Cluster::new(out)
}

/// Long requests on the slow tier: prompts of about 2,000 tokens (20 s of prefill) and
/// outputs of about 1,000 (40 s of decode), arriving at `rate_per_s` for 30 minutes.
fn long_requests(rate_per_s: f64, seed: u64) -> Workload {
    PoissonWorkload {
        rate_per_s,
        length_s: 1800.0,
        prompt_median: 2000.0,
        prompt_sigma: 0.5,
        output_median: 1000.0,
        output_sigma: 0.4,
        seed,
    }
    .build()
}

/// `policies` over `n` half-hour windows of the controls' fleet (batch slowdown 0.3, one seed).
fn replay_fleet(
    cluster: &Cluster,
    workload: &Workload,
    policies: &[PolicyKind],
    n: usize,
) -> Vec<RunMetrics> {
    let grid = Grid::new(policies.to_vec(), windows(n, 1800.0, 1800.0), vec![1]);
    let cfg = ReplayConfig {
        batch_slowdown: 0.3,
        ..ReplayConfig::default()
    };
    run_grid_metrics(cluster, workload, &cfg, &grid).expect("the control's runs")
}

fn vs(runs: &[RunMetrics], a: PolicyKind, b: PolicyKind, m: Metric) -> (f64, f64, f64) {
    let v = paired(runs, &PolicyLabel::new(a), &PolicyLabel::new(b)).expect("both ran");
    let d = v.get(m).expect("a difference");
    (
        d.diff,
        d.ci_low.expect("an interval"),
        d.ci_high.expect("an interval"),
    )
}

#[test]
fn negative_control_equal_exponential_sessions_show_no_difference() {
    // Every node: exponential sessions of the same mean, the same speed. Age says nothing.
    let cluster = two_class_fleet(12, [1.0, 1.0], [1200.0, 1200.0], 3);
    let workload = long_requests(0.05, 11);
    let runs = replay_fleet(
        &cluster,
        &workload,
        &[
            PolicyKind::Hazard,
            PolicyKind::Memoryless,
            PolicyKind::Fastest,
        ],
        20,
    );
    for (a, b) in [
        (PolicyKind::Hazard, PolicyKind::Fastest),
        (PolicyKind::Memoryless, PolicyKind::Fastest),
        (PolicyKind::Hazard, PolicyKind::Memoryless),
    ] {
        for m in [Metric::MeanCompletion, Metric::UnplannedInterruptions] {
            let (d, lo, hi) = vs(&runs, a, b, m);
            eprintln!(
                "negative control: {a} - {b} on {}: {d} [{lo}, {hi}]",
                m.key()
            );
            assert!(
                lo <= 0.0 && 0.0 <= hi,
                "{a} - {b} on {}: {d} [{lo}, {hi}] excludes 0 on equal exponential nodes",
                m.key()
            );
        }
    }
}

#[test]
fn positive_control_hazard_pays_on_a_mixed_risk_fleet() {
    // Class 0: sessions end sharply near 20 minutes (Weibull k = 6); class 1: a decreasing
    // hazard (k = 0.5) with the same scale. A request takes about a minute on the slow tier and
    // a loss costs a re-prefill of its whole context, so a request placed on a class-0 node
    // near its reclaim age is likely lost, and the loss is dear.
    let cluster = two_class_fleet(12, [6.0, 0.5], [1200.0, 1200.0], 5);
    let workload = long_requests(0.05, 13);
    let runs = replay_fleet(
        &cluster,
        &workload,
        &[PolicyKind::Hazard, PolicyKind::Fastest, PolicyKind::Oracle],
        30,
    );
    let rows = aggregate(&runs, &AggregateOptions::default());
    let hazard = rows
        .iter()
        .find(|r| r.label == PolicyLabel::new(PolicyKind::Hazard))
        .expect("a hazard row");
    let d = hazard
        .vs_fastest
        .as_ref()
        .and_then(|v| v.get(Metric::MeanCompletion))
        .expect("hazard - fastest");
    let i = hazard
        .vs_fastest
        .as_ref()
        .and_then(|v| v.get(Metric::UnplannedInterruptions))
        .expect("hazard - fastest");
    eprintln!(
        "positive control: hazard - fastest mean completion {} [{:?}, {:?}], interruptions {} [{:?}, {:?}]",
        d.diff, d.ci_low, d.ci_high, i.diff, i.ci_low, i.ci_high
    );
    assert!(
        d.diff < 0.0 && d.ci_high.is_some_and(|hi| hi < 0.0),
        "the hazard term must pay here: {d:?}"
    );
    assert!(
        i.diff < 0.0 && i.ci_high.is_some_and(|hi| hi < 0.0),
        "and it pays by avoiding interruptions: {i:?}"
    );
}

#[test]
fn oracle_is_never_out_interrupted_per_started_request_under_overload() {
    // Four slow nodes with short, decreasing-hazard sessions and three times the arrivals they
    // can serve: most requests wait in queues and many never start.
    let cluster = SyntheticCluster {
        nodes: 4,
        up_shape: 0.5,
        up_scale_s: 900.0,
        down_shape: 1.0,
        down_scale_s: 300.0,
        from_us: 0,
        to_us: us(8.0 * 3600.0),
        slots: 2,
        seed: 17,
    }
    .build();
    let workload = long_requests(0.4, 19);
    let mut policies: Vec<PolicyKind> = PolicyKind::ALL.to_vec();
    policies.retain(|&k| k != PolicyKind::Bound);
    let grid = Grid::new(policies.clone(), windows(8, 1800.0, 1800.0), vec![1]);
    let runs = run_grid_metrics(&cluster, &workload, &ReplayConfig::default(), &grid)
        .expect("overloaded runs");
    let rows = aggregate(&runs, &AggregateOptions::default());
    let rate = |k: PolicyKind| {
        rows.iter()
            .find(|r| r.label == PolicyLabel::new(k))
            .and_then(|r| r.get(Metric::InterruptionsPerStarted).value)
            .expect("a rate")
    };
    let unfinished = rows
        .iter()
        .find(|r| r.label == PolicyLabel::new(PolicyKind::Fastest))
        .and_then(|r| r.get(Metric::Unfinished).value)
        .expect("unfinished");
    assert!(unfinished > 10.0, "the cluster is overloaded: {unfinished}");
    let oracle = rate(PolicyKind::Oracle);
    for k in policies {
        let r = rate(k);
        eprintln!("overload: {k} {r:.4} interruptions per started request");
        assert!(
            oracle <= r + 1e-12,
            "oracle {oracle} interruptions per started request, {k} {r}"
        );
    }
}

/// The two classes of the controls' fleet really differ in age-dependent risk.
#[test]
fn two_class_fleet_keeps_each_node_s_law() {
    let c = two_class_fleet(4, [6.0, 0.5], [1200.0, 1200.0], 1);
    let (s0, s1) = (&c.nodes[0].survival, &c.nodes[1].survival);
    // Young, the sharp law has lost almost nothing and the decreasing one half; past the
    // scale the order reverses.
    assert!(s0.survival(600.0) > 0.95 && s1.survival(600.0) < 0.6);
    assert!(s0.survival(1500.0) < 0.05 && s1.survival(1500.0) > 0.3);
    assert_eq!(c.nodes[2].spec.prefill_tok_s, PREFILL_TOK_S);
}

/// The committed positive control, end to end: ingest the committed two-class fleet and the
/// long-output workload, replay the committed scenario from the repository root (its
/// `policy.truth` is a relative path), and read `compare --format json`.
#[test]
fn the_committed_positive_control_pays_with_fitted_curves_and_with_the_true_laws() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    crate::common::ingest_control_fleet(&store);
    crate::common::ingest_long_output(&store, tmp.path());
    let mut c = hs(&store);
    c.current_dir(root).args([
        "-q",
        "replay",
        "--config",
        "reports/scenarios/two-class-control.toml",
    ]);
    ok(c);
    let mut c = hs(&store);
    c.args(["compare", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let rows = v.as_array().unwrap();
    let vs_fastest = |p: &str| {
        let r = rows
            .iter()
            .find(|r| r["policy"] == p)
            .unwrap_or_else(|| panic!("{p} missing: {v}"));
        let d = &r["vs_fastest"]["mean_completion_s"];
        (
            d["diff"].as_f64().unwrap(),
            d["ci_low"].as_f64().unwrap(),
            d["ci_high"].as_f64().unwrap(),
        )
    };
    for p in ["hazard", "hazard-truth"] {
        let (d, lo, hi) = vs_fastest(p);
        assert!(
            d < 0.0 && hi < 0.0,
            "{p} - fastest on mean completion: {d} [{lo}, {hi}] (the control must pay)"
        );
    }
    // The oracle is the reference of both: never beaten on interruptions.
    let interruptions = |p: &str| {
        rows.iter().find(|r| r["policy"] == p).unwrap()["unplanned_interruptions"]
            .as_f64()
            .unwrap()
    };
    for p in ["hazard", "hazard-truth", "fastest"] {
        assert!(
            interruptions("oracle") <= interruptions(p),
            "{p} beat the oracle"
        );
    }
}
