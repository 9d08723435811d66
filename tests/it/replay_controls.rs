//! The controls every hazard-versus-blind comparison rests on, run through the same
//! aggregation and tests as the regime map (`aggregate`, `paired`, Benjamini-Hochberg q-values):
//!
//! * an **A/A test**: four statistically identical policies (`random` under four seeds) over
//!   400 cells: the paired t test and the gap gate reject at their nominal rate and the
//!   Bonferroni best-of test at most at it (binomial intervals), and the q-values flag no
//!   more than the false-discovery rate of cells;
//! * a **negative control**: a fleet whose nodes all have the same exponential sessions, where
//!   neither age nor per-node rates carry information, so `hazard` and `memoryless` cannot
//!   differ from their hazard-blind twin `hazard-pooled` (the same rule and planned moves,
//!   every node at the fleet's mean rate); once with the generating law and training-cut
//!   rates, once through ingest, fitted curves and training-cut rates (the `equal` fleet of
//!   `synth traces`);
//! * a **positive control**: a fleet of nodes that differ strongly in age-dependent risk (half
//!   with a sharply increasing hazard near a typical reclaim age, half with a decreasing one),
//!   a slow tier and long requests (a loss re-prefills the whole context: tens of seconds),
//!   where the hazard term must pay against `fastest` and against its twin `hazard-pooled`;
//! * the **committed positive control** (`reports/scenarios/two-class-control.toml`, over the
//!   fleet `synth traces --fleet two-class` made, through the real binary): `hazard` with its
//!   fitted curves and `hazard-truth` with the generating laws both beat `fastest`;
//! * the **oracle under overload**: per started request, no policy is interrupted less often
//!   than the oracle, even when requests wait in queues (a count per window would reward a
//!   policy that leaves requests queued and never started).

use hazardserve::policy::PolicyKind;
use hazardserve::replay::stats::bh_q_values;
use hazardserve::replay::{
    aggregate, paired, run_grid_metrics, shrunk_exp_rates, AggregateOptions, Cluster, GapState,
    Grid, Metric, PoissonWorkload, PolicyLabel, ReplayConfig, RunMetrics, SyntheticCluster, Window,
    Workload,
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

/// The runs of `random` under seeds `4c + 1` to `4c + 4` relabelled as `fastest`,
/// `least-loaded`, `hazard` and `oracle` (seed 1 each): four statistically identical
/// "policies" that the aggregation compares as it compares real ones.
fn relabel_seeds(runs: Vec<RunMetrics>) -> Vec<RunMetrics> {
    const AS: [PolicyKind; 4] = [
        PolicyKind::Fastest,
        PolicyKind::LeastLoaded,
        PolicyKind::Hazard,
        PolicyKind::Oracle,
    ];
    runs.into_iter()
        .map(|mut r| {
            r.policy = AS[((r.seed - 1) % 4) as usize];
            r.seed = 1;
            r
        })
        .collect()
}

/// The Wilson 95 % interval of `k` successes in `n` trials.
fn wilson(k: usize, n: usize) -> [f64; 2] {
    let (k, n, z) = (k as f64, n as f64, 1.959_963_984_540_054);
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    [centre - half, centre + half]
}

/// The A/A test: four statistically identical policies (`random` under four seeds, labelled
/// as `fastest`, `least-loaded`, `hazard` and `oracle`) over 400 cells, through the same
/// aggregation as every comparison. The rejection rates' 95 % binomial intervals must contain
/// the nominal 5 % for the paired t test (`hazard - fastest`) and the gap gate (a
/// fastest-to-oracle gap claimed), and must not lie above it for the best-of test (`hazard`
/// against the best of `fastest` and `least-loaded`, Bonferroni-corrected for the choice;
/// the percentile bootstrap it replaced rejected 58 of 400, [11 %, 18 %]). The
/// Benjamini-Hochberg q-values flag no more than the false-discovery rate of cells. Mutations
/// that fail it: p-values from a z instead of a t, the gate or the best-of test on a
/// percentile bootstrap (too liberal), cells sharing seeds (not independent trials: 78 of
/// 400).
#[test]
fn aa_identical_policies_are_flagged_within_the_nominal_rate() {
    let cells = 400u64;
    let opts = AggregateOptions {
        gap_metric: Metric::MeanCompletion,
        ..AggregateOptions::default()
    };
    let (mut t_p, mut best_p, mut gaps) = (Vec::new(), Vec::new(), 0usize);
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
            // Seeds of their own per cell: the `random` policy's stream depends on (seed,
            // window) only, so cells sharing seeds would share their luck and the cells'
            // rejections would not be independent trials.
            (1..=4).map(|k| 4 * cell + k).collect(),
        );
        let runs = run_grid_metrics(&cluster, &workload, &ReplayConfig::default(), &grid)
            .expect("the A/A grid runs");
        let relabelled = relabel_seeds(runs);
        let rows = aggregate(&relabelled, &opts);
        let hazard = rows
            .iter()
            .find(|r| r.label == PolicyLabel::new(PolicyKind::Hazard))
            .expect("the hazard row");
        let p = |v: Option<&hazardserve::replay::Versus>| {
            v.and_then(|v| v.get(Metric::MeanCompletion))
                .and_then(|d| d.p_value)
        };
        t_p.push(p(hazard.vs_fastest.as_ref()));
        best_p.push(p(hazard.vs_best_blind.as_ref()));
        if hazard.gap_closed.state != GapState::None {
            gaps += 1;
        }
    }
    let n = cells as usize;
    // The paired t test is exact at its level; the best-of test is Bonferroni-corrected, so
    // at most its level (conservative).
    for (what, p_values, exact) in [("paired t", &t_p, true), ("best-of", &best_p, false)] {
        let tests = p_values.iter().flatten().count();
        assert!(
            tests >= n * 9 / 10,
            "{what}: only {tests} of {n} cells had a test"
        );
        let k = p_values.iter().flatten().filter(|&&p| p < 0.05).count();
        let [lo, hi] = wilson(k, tests);
        eprintln!("A/A {what}: {k} of {tests} rejected, 95 % interval [{lo:.4}, {hi:.4}]");
        assert!(
            lo <= 0.05 && (!exact || 0.05 <= hi),
            "{what}: rejected {k} of {tests} identical-policy cells, [{lo:.4}, {hi:.4}] \
             against the nominal 5 %"
        );
        // Benjamini-Hochberg over the cells: the share flagged stays within the FDR.
        let flagged = bh_q_values(p_values)
            .iter()
            .flatten()
            .filter(|&&q| q < FDR)
            .count();
        assert!(
            (flagged as f64) <= FDR * tests as f64,
            "{what}: {flagged} of {tests} identical-policy cells flagged at q < {FDR}"
        );
    }
    let [lo, hi] = wilson(gaps, n);
    eprintln!("A/A gap gate: {gaps} of {n} claimed a gap, 95 % interval [{lo:.4}, {hi:.4}]");
    assert!(
        lo <= 0.05 && 0.05 <= hi,
        "the gap gate claimed a gap in {gaps} of {n} A/A cells: [{lo:.4}, {hi:.4}]"
    );
}

/// A slow tier (prefill 100 tokens/s, decode 25 tokens/s, two slots: phone-class), so that an
/// unplanned loss, which re-prefills the whole context elsewhere, costs tens of seconds.
const PREFILL_TOK_S: f64 = 100.0;
/// See [`PREFILL_TOK_S`].
const DECODE_TOK_S: f64 = 25.0;

/// A fleet of `nodes` nodes of the slow tier; node `i` is of class `i % 2` and its
/// up-sessions are Weibull(`shape[class]`, `scale[class]`), gaps Weibull(1, 300 s), over 18
/// hours; each node knows its generating law (what a perfect survival model would give), and
/// its exponential rate is fitted before [`TRAINING_CUT_S`] only (no window's failures in it).
pub(crate) fn two_class_fleet(
    nodes: usize,
    shape: [f64; 2],
    scale: [f64; 2],
    seed: u64,
) -> Cluster {
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
            to_us: us(18.0 * 3600.0),
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
    let mut cluster = Cluster::new(out);
    training_cut_rates(&mut cluster, TRAINING_CUT_S);
    cluster
}

/// The controls' training cut (s): every node's `exp_rate_per_s` is fitted on the sessions
/// that ended before it ([`training_cut_rates`]) and the windows start at it.
pub(crate) const TRAINING_CUT_S: f64 = 7200.0;

/// Long requests on the slow tier: prompts of about 2,000 tokens (20 s of prefill) and
/// outputs of about 1,000 (40 s of decode), arriving at `rate_per_s` for 30 minutes.
pub(crate) fn long_requests(rate_per_s: f64, seed: u64) -> Workload {
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

/// `policies` over `n` half-hour windows of the controls' fleet from [`TRAINING_CUT_S`] on
/// (batch slowdown 0.3, one seed).
pub(crate) fn replay_fleet(
    cluster: &Cluster,
    workload: &Workload,
    policies: &[PolicyKind],
    n: usize,
) -> Vec<RunMetrics> {
    let grid = Grid::new(
        policies.to_vec(),
        windows(n, TRAINING_CUT_S, 1800.0),
        vec![1],
    );
    let cfg = ReplayConfig {
        batch_slowdown: 0.3,
        ..ReplayConfig::default()
    };
    run_grid_metrics(cluster, workload, &cfg, &grid).expect("the control's runs")
}

pub(crate) fn vs(runs: &[RunMetrics], a: PolicyKind, b: PolicyKind, m: Metric) -> (f64, f64, f64) {
    let v = paired(runs, &PolicyLabel::new(a), &PolicyLabel::new(b)).expect("both ran");
    let d = v.get(m).expect("a difference");
    (
        d.diff,
        d.ci_low.expect("an interval"),
        d.ci_high.expect("an interval"),
    )
}

/// Each node's `exp_rate_per_s` refitted from the sessions that ended before `cut_s` only
/// (the scenario builder's rule, [`shrunk_exp_rates`]), so that no rate carries the failures
/// of the windows replayed after the cut.
fn training_cut_rates(cluster: &mut Cluster, cut_s: f64) {
    let cut = us(cut_s);
    let (events, exposure): (Vec<f64>, Vec<f64>) = cluster
        .nodes
        .iter()
        .map(|n| {
            n.sessions
                .iter()
                .filter(|s| s.end_us <= cut)
                .fold((0.0, 0.0), |(d, e), s| {
                    let ended = if s.end_censored() { 0.0 } else { 1.0 };
                    (d + ended, e + (s.end_us - s.start_us) as f64 / 1e6)
                })
        })
        .unzip();
    let rates = shrunk_exp_rates(&events, &exposure, 1.0 / 1800.0);
    for (n, r) in cluster.nodes.iter_mut().zip(rates) {
        n.exp_rate_per_s = r;
    }
}

/// The negative control with the generating law: every node has exponential sessions of the
/// same mean and the same speed, so neither age nor per-node rates say anything, and
/// `hazard` (the law itself) and `memoryless` (rates fitted on the two hours before the
/// windows) cannot differ from their hazard-blind twin `hazard-pooled`, nor from each other.
/// Mutation that fails it: rates fitted on the whole trace, the windows' own failures
/// included (`memoryless` then finishes 0.34 s sooner than `hazard`, [0.12, 0.56]: it has
/// seen which nodes will fail).
#[test]
fn negative_control_equal_exponential_sessions_show_no_difference() {
    let cluster = two_class_fleet(12, [1.0, 1.0], [1200.0, 1200.0], 3);
    let workload = long_requests(0.05, 11);
    let grid = Grid::new(
        vec![
            PolicyKind::Hazard,
            PolicyKind::Memoryless,
            PolicyKind::HazardPooled,
        ],
        windows(20, TRAINING_CUT_S, 1800.0),
        vec![1],
    );
    let cfg = ReplayConfig {
        batch_slowdown: 0.3,
        ..ReplayConfig::default()
    };
    let runs = run_grid_metrics(&cluster, &workload, &cfg, &grid).expect("the control's runs");
    for (a, b) in [
        (PolicyKind::Hazard, PolicyKind::HazardPooled),
        (PolicyKind::Memoryless, PolicyKind::HazardPooled),
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
        &[
            PolicyKind::Hazard,
            PolicyKind::HazardPooled,
            PolicyKind::Fastest,
            PolicyKind::Oracle,
        ],
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
    // Against its twin (the same rule and planned moves, blind to which node is riskier).
    for m in [Metric::MeanCompletion, Metric::UnplannedInterruptions] {
        let (d, lo, hi) = vs(&runs, PolicyKind::Hazard, PolicyKind::HazardPooled, m);
        eprintln!(
            "positive control: hazard - hazard-pooled on {}: {d} [{lo}, {hi}]",
            m.key()
        );
        assert!(
            d < 0.0 && hi < 0.0,
            "the hazard term must pay against its twin on {}: {d} [{lo}, {hi}]",
            m.key()
        );
    }
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

/// A store holding the `equal` fleet (`synth traces --fleet equal`: every node exponential,
/// the same mean) and the long-output workload, both ingested by the binary, and the scenario
/// (TOML) that serves long outputs on phones at 60 % load, 30 windows of 25 minutes, with
/// output-length estimator `estimator` and `policies` (curves and rates fitted on the training
/// part only).
fn equal_fleet(estimator: &str, policies: &[&str]) -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let fleet = tmp.path().join("equal");
    let mut c = hs(&store);
    c.args([
        "-q", "synth", "traces", "--fleet", "equal", "--source", "equal",
    ])
    .args(["--days", "3", "--out"])
    .arg(&fleet);
    ok(c);
    let mut c = hs(&store);
    c.args(["-q", "ingest", "--format", "fta", "--fta-censored-tail"])
        .args(["--source", "equal"])
        .arg(fleet.join("event_trace.tab"));
    ok(c);
    crate::common::ingest_long_output(&store, tmp.path());
    let policies: Vec<String> = policies.iter().map(|p| format!("\"{p}\"")).collect();
    let scenario = format!(
        "[nodes]\nsource = \"equal\"\n[hardware]\npreset = \"phone\"\nlink = \"10gbe\"\n\
         [model]\npreset = \"llama-3.2-1b\"\n[workload]\nsource = \"long-output\"\n\
         load = 0.6\nestimator = \"{estimator}\"\n[replay]\nwindows = 30\nseeds = 1\n\
         window_length_s = 1500\npolicies = [{}]\n",
        policies.join(", ")
    );
    (tmp, scenario)
}

/// The `compare --format json` rows of `policies` replayed by the binary over the `equal`
/// fleet ([`equal_fleet`]).
fn equal_fleet_rows(estimator: &str, policies: &[&str]) -> Vec<serde_json::Value> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let (tmp, text) = equal_fleet(estimator, policies);
    let store = tmp.path().join("store");
    let scenario = tmp.path().join("equal.toml");
    std::fs::write(&scenario, text).unwrap();
    let mut c = hs(&store);
    c.current_dir(root)
        .args(["-q", "replay", "--config"])
        .arg(&scenario);
    ok(c);
    let mut c = hs(&store);
    c.args(["compare", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    v.as_array().unwrap().clone()
}

/// The negative control through the whole pipeline: the `equal` fleet ([`equal_fleet`]),
/// ingested by the binary, built as `replay` builds it (survival curves and per-node rates
/// fitted on the training part only) and replayed with exact lengths. Age and rates carry
/// nothing, so neither `hazard` nor `memoryless` may differ from their hazard-blind twin
/// `hazard-pooled` on mean completion or interruptions: no p-value below 0.05 / 4 (Bonferroni
/// over the four comparisons, a familywise 5 %). Mutations that fail it: rates fitted on the
/// whole trace (the windows' own failures leak into `exp_rate`); `fastest` as the twin under
/// the iteration engine (`hazard - fastest` is -5.1 s [-8.3, -1.9], p 0.003 here: `hazard`'s
/// planned moves also take requests off loaded nodes, which `fastest` never does).
#[test]
fn negative_control_through_ingest_and_fitted_curves_shows_no_difference() {
    let (tmp, text) = equal_fleet("exact", &["hazard", "memoryless", "hazard-pooled"]);
    let store = hazardserve::store::Store::open(&tmp.path().join("store")).unwrap();
    let config = hazardserve::scenario::ScenarioConfig::from_toml(&text, "equal.toml").unwrap();
    let sc = hazardserve::scenario::build(&store, &config).expect("the control builds");
    let runs = run_grid_metrics(&sc.cluster, &sc.workload, &sc.config, &sc.grid)
        .expect("the control's runs");
    for p in [PolicyKind::Hazard, PolicyKind::Memoryless] {
        let v = paired(
            &runs,
            &PolicyLabel::new(p),
            &PolicyLabel::new(PolicyKind::HazardPooled),
        )
        .expect("both ran");
        for m in [Metric::MeanCompletion, Metric::UnplannedInterruptions] {
            let d = v.get(m).expect("a difference");
            // No spread is no test: then there must be no difference at all.
            let p_value = match d.p_value {
                Some(p) => p,
                None => {
                    assert_eq!(
                        d.diff,
                        0.0,
                        "{p} - hazard-pooled on {} without spread",
                        m.key()
                    );
                    1.0
                }
            };
            eprintln!(
                "negative control (pipeline): {p} - hazard-pooled on {}: {} [{:?}, {:?}], p {p_value}",
                m.key(),
                d.diff,
                d.ci_low,
                d.ci_high
            );
            assert!(
                p_value >= 0.05 / 4.0,
                "{p} - hazard-pooled on {}: {d:?}, p = {p_value} on equal exponential nodes",
                m.key()
            );
        }
    }
}

/// The decision rule under estimated lengths ([`hazardserve::policy::band`]) on the same null
/// fleet with `lognormal:0.5` estimates: every cost-based placement ranks by a forecast whose
/// error is tied, so `fastest` is not worse than `least-loaded` and `hazard-nomigrate` does
/// not differ from `fastest`. Mutation that fails it: the plain argmin of noisy forecasts
/// (`cv` forced to 0): `fastest` then finishes 6.6 s later than `least-loaded` here.
#[test]
fn with_estimated_lengths_the_forecast_is_not_worse_than_least_loaded_on_the_null_fleet() {
    let rows = equal_fleet_rows(
        "lognormal:0.5",
        &["hazard-nomigrate", "fastest", "least-loaded"],
    );
    let vs_fastest = |p: &str| {
        let d = &rows
            .iter()
            .find(|r| r["policy"] == p)
            .unwrap_or_else(|| panic!("{p} missing"))["vs_fastest"]["mean_completion_s"];
        (
            d["diff"].as_f64().unwrap(),
            d["ci_low"].as_f64().unwrap(),
            d["ci_high"].as_f64().unwrap(),
        )
    };
    // least-loaded minus fastest: not below 0 with an interval that excludes it.
    let (d, lo, hi) = vs_fastest("least-loaded");
    eprintln!("estimates: least-loaded - fastest {d} [{lo}, {hi}]");
    assert!(
        hi >= 0.0,
        "fastest is worse than least-loaded: {d} [{lo}, {hi}]"
    );
    let (d, lo, hi) = vs_fastest("hazard-nomigrate");
    eprintln!("estimates: hazard-nomigrate - fastest {d} [{lo}, {hi}]");
    assert!(
        lo <= 0.0 && 0.0 <= hi,
        "hazard-nomigrate - fastest {d} [{lo}, {hi}]"
    );
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
