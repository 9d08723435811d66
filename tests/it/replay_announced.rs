//! Announced ends (`nodes.announced_causes`): a planned end is priced as a planned hop, not an
//! unplanned loss ([`announced_loss`]), every policy sees it coming and the replay drains the
//! node before it; on GCE, declaring the 24-hour cap announced leaves the preemptions as the
//! only risk the policies' curves price and removes the cap's interruptions.

use std::sync::Arc;

use proptest::prelude::*;

use hazardserve::policy::cost::{
    announced_loss, expected_loss, interruption_probability, node_loss, node_loss_lower_bound,
    UnplannedLoss,
};
use hazardserve::policy::{NodeView, PolicyKind, RiskModel};
use hazardserve::replay::{Cluster, RunOutput, UpSession};
use hazardserve::survival::curve::{ConditionalSurvival, Exponential, StepCurve, Weibull};

use super::replay_support::*;

/// A loss with 2,000 tokens of context, decode from 1 s at 30 tok/s for 3,000 tokens, fallback
/// prefill 1,000 tok/s, `O_r` 0.1 s, stall 2 s, and a KV-transfer route.
fn loss() -> UnplannedLoss {
    UnplannedLoss::new(2000.0, 1.0, 30.0, 3000.0, 1000.0, 0.1, 2.0).with_hop(0.2, 131_072.0, 1.25e9)
}

#[test]
fn an_announced_end_is_priced_as_a_planned_hop_not_a_loss() {
    let u = loss();
    let never = Exponential {
        mean: f64::INFINITY,
    };
    // Announced end at 50 s, the request needs 100 s: the curve of the unannounced causes never
    // fails, so L is the hop just before the end.
    let l = announced_loss(&never, 0.0, Some(50.0), 100.0, &u);
    assert!(
        (l - u.hop_at(50.0)).abs() < 1e-12,
        "{l} vs {}",
        u.hop_at(50.0)
    );
    // The same end read as an unannounced failure (a curve that drops to 0 at 50 s) costs the
    // unplanned loss there, stall included: more than the hop.
    let all_cause = StepCurve::new(vec![0.0, 50.0], vec![1.0, 0.0], None).unwrap();
    let blind = expected_loss(&all_cause, 0.0, 100.0, &u);
    assert!(blind > l + 1.9, "blind {blind} vs announced {l}");
    // An end after the request finishes changes nothing.
    let w = Weibull {
        shape: 0.7,
        scale: 3000.0,
    };
    for r in [100.0, 150.0, 1e9] {
        assert_eq!(
            announced_loss(&w, 30.0, Some(r), 100.0, &u),
            expected_loss(&w, 30.0, 100.0, &u)
        );
    }
    assert_eq!(
        announced_loss(&w, 30.0, None, 100.0, &u),
        expected_loss(&w, 30.0, 100.0, &u)
    );
    // Before the end: the curve's own risk up to it, plus the hop weighted by surviving to it.
    let l = announced_loss(&w, 30.0, Some(40.0), 100.0, &u);
    let parts = expected_loss(&w, 30.0, 40.0, &u) + w.conditional(30.0, 40.0) * u.hop_at(40.0);
    assert!((l - parts).abs() < 1e-12, "{l} vs {parts}");
}

#[test]
fn an_announced_end_is_not_an_interruption_and_the_baseline_ignores_nothing_else() {
    let w = Weibull {
        shape: 0.7,
        scale: 3000.0,
    };
    let node = NodeView {
        age_s: 30.0,
        ..NodeView::new(&w)
    };
    let full = interruption_probability(&node, RiskModel::Hazard, None, 100.0);
    let cut = interruption_probability(&node, RiskModel::Hazard, Some(40.0), 100.0);
    assert!((full - (1.0 - w.conditional(30.0, 100.0))).abs() < 1e-12);
    assert!((cut - (1.0 - w.conditional(30.0, 40.0))).abs() < 1e-12);
    assert!(cut < full);
    // The oracle's reading is unchanged: a known end before T is a loss it must avoid.
    assert_eq!(
        interruption_probability(&node, RiskModel::Oracle, Some(40.0), 100.0),
        1.0
    );
}

proptest! {
    /// The cheap lower bound placement prunes with stays below the announced loss, for every
    /// model, age, horizon and announced end.
    #[test]
    fn the_lower_bound_holds_with_announced_ends(
        age in 0.0f64..5000.0,
        horizon in 0.1f64..2000.0,
        r in proptest::option::of(0.0f64..3000.0),
        extra in 0.0f64..50.0,
        shape in 0.3f64..3.0,
        scale in 50.0f64..5000.0,
        model in prop_oneof![Just(RiskModel::Hazard), Just(RiskModel::Memoryless)],
    ) {
        let w = Weibull { shape, scale };
        let node = NodeView { age_s: age, exp_rate_per_s: 1.0 / scale, ..NodeView::new(&w) };
        let u = loss();
        let l = node_loss(&node, model, r, extra, horizon, &u);
        let lb = node_loss_lower_bound(&node, model, r, extra, horizon, &u);
        prop_assert!(lb <= l * (1.0 + 1e-12) + 1e-12, "lb {} > L {}", lb, l);
        prop_assert!(l.is_finite() && l >= 0.0);
    }
}

/// Node 0 is up from before the window until 100 s, when its session ends by `lifetime-cap`
/// (announced or not); node 1 is always up.
fn capped(announced: bool) -> Cluster {
    let mut a = node("capped", 4, 2000.0, 30.0, &[]);
    a.sessions = vec![UpSession::new(us(-10.0), us(100.0))
        .with_end(false, "lifetime-cap")
        .with_announced(announced)];
    a.survival = Arc::new(Exponential {
        mean: f64::INFINITY,
    });
    Cluster::new(vec![a, always_up("spare", 8, 2000.0, 30.0)])
}

/// Four requests of 300 s of decoding, arriving in the first 4 s: two land on the capped node
/// under every policy that balances load.
fn long_requests() -> Vec<hazardserve::replay::Request> {
    (0..4).map(|i| req(i, i as f64, 500, 9000)).collect()
}

fn cap_losses(o: &RunOutput) -> usize {
    o.records
        .iter()
        .flat_map(|r| &r.interruption_causes)
        .filter(|c| c.as_str() == "lifetime-cap")
        .count()
}

#[test]
fn the_replay_drains_a_node_before_its_announced_end_for_every_policy() {
    let cfg = checked();
    for kind in [
        PolicyKind::LeastLoaded,
        PolicyKind::Hazard,
        PolicyKind::HazardNomigrate,
        PolicyKind::Fastest,
        PolicyKind::Random,
    ] {
        let blind = run(&capped(false), long_requests(), &cfg, kind, 1000.0);
        let told = run(&capped(true), long_requests(), &cfg, kind, 1000.0);
        let on = |o: &RunOutput| o.records.iter().filter(|r| r.first_node == Some(0)).count();
        assert!(
            on(&blind) > 0,
            "{kind}: the capped node serves when its end is unknown"
        );
        assert_eq!(
            cap_losses(&blind),
            on(&blind),
            "{kind}: unannounced cap ends are losses"
        );
        assert_eq!(cap_losses(&told), 0, "{kind}: an announced end is drained");
        if kind == PolicyKind::Hazard || kind == PolicyKind::HazardNomigrate {
            // The cost-based policies price the hop the end will force: the capped node is
            // no longer free, so the spare takes the requests it has room for.
            assert!(
                on(&told) < on(&blind),
                "{kind}: {} vs {}",
                on(&told),
                on(&blind)
            );
        }
        let on_capped = on(&told);
        assert_eq!(told.stats.drained as usize, on_capped, "{kind}");
        assert_eq!(told.stats.drain_missed, 0, "{kind}");
        assert!(
            told.records
                .iter()
                .all(|r| r.completion_s.is_some() && r.interruptions == 0),
            "{kind}: every request completes without an interruption"
        );
        let moves: u32 = told.records.iter().map(|r| r.planned_migrations).sum();
        assert_eq!(moves as usize, on_capped, "{kind}: one planned move each");
    }
}

#[test]
fn a_drain_without_room_is_lost_at_the_end_and_counted() {
    // The spare node has one slot, taken by a request that arrived first.
    let mut cluster = capped(true);
    cluster.nodes[1].spec.slots = 1;
    let cfg = checked();
    let reqs = vec![req(0, 0.0, 500, 9000), req(1, 1.0, 500, 9000)];
    let o = run(&cluster, reqs, &cfg, PolicyKind::LeastLoaded, 1000.0);
    assert_eq!(o.stats.drain_missed, 1, "{:?}", o.stats);
    assert_eq!(cap_losses(&o), 1);
}

#[test]
fn a_request_expected_to_finish_before_the_announced_end_stays() {
    // 60 tokens of decoding (2 s) starting well before the end: never moved.
    let cfg = checked();
    let o = run(
        &capped(true),
        vec![req(0, 0.0, 500, 60), req(1, 0.1, 500, 60)],
        &cfg,
        PolicyKind::LeastLoaded,
        1000.0,
    );
    assert_eq!(o.stats.drained, 0);
    assert!(o.records.iter().all(|r| r.planned_migrations == 0));
}

/// GCE preemptible VMs, preempted vs the 24-hour cap: with `lifetime-cap` announced the
/// policies' curves price only preemptions (a node near 24 h is not "about to fail") and the
/// replay drains every cap end it can; without, the cap's ends are interruptions.
#[test]
fn gce_cap_announced_leaves_preemptions_as_the_only_risk() {
    use hazardserve::scenario::{self, ScenarioConfig};
    use hazardserve::store::Store;
    let Some(traces) = crate::common::shared("traces-public") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = crate::common::hs(&store);
    c.args(["-q", "ingest-public"])
        .arg(&traces)
        .args(["--only", "gce-preemptible"]);
    crate::common::ok(c);
    // Reasoning-length outputs (minutes each), so that requests are in flight when a VM ends.
    crate::common::ingest_long_output(&store, tmp.path());
    let toml = |announced: &str| {
        format!(
            r#"
[nodes]
source = "gce-preemptible"
{announced}
[workload]
source = "long-output"
# A quarter of the windows' up capacity: a censored end keeps its VM up to the window's end
# (as the replay plays it), which about doubles GCE's capacity in these windows, and the cap
# lands on many VMs at once; drains need room.
load = 0.25
loop_workload = true
# The subject is the cap's drains, not the engine: the simple engine with the `own` forecast
# keeps two 24-hour windows of minutes-long requests within a test's time.
[hardware]
engine = "simple"
[policy]
forecast = "own"
[replay]
policies = ["hazard", "least-loaded"]
# Two days in the week the cap ends most (early April 2019).
windows = 2
window_length_s = 86400
window_start = "2019-04-01T00:00:00Z"
"#
        )
    };
    let st = Store::open(&store).unwrap();
    let build = |announced: &str| {
        let cfg = ScenarioConfig::from_toml(&toml(announced), "test").expect("parses");
        scenario::build(&st, &cfg).expect("builds")
    };
    let blind = build("");
    let told = build(r#"announced_causes = ["lifetime-cap"]"#);
    // The curves: a VM 24 h old is about to be capped (the cap lands within the next hour)
    // under the all-cause curve, not under the preemption curve; before the cap the two agree.
    let s = |sc: &scenario::Scenario, age_h: f64| {
        let n = &sc.cluster.nodes[0];
        n.survival.conditional(age_h * 3600.0, 3600.0)
    };
    assert!(
        s(&blind, 24.0) < 0.3,
        "all-cause S(1 h | 24 h) = {}",
        s(&blind, 24.0)
    );
    assert!(
        s(&told, 24.0) > 0.9,
        "preemption-only S(1 h | 24 h) = {}",
        s(&told, 24.0)
    );
    for age_h in [0.0, 2.0, 12.0] {
        assert!(
            (s(&blind, age_h) - s(&told, age_h)).abs() < 0.01,
            "age {age_h} h"
        );
    }
    assert!(told
        .cluster
        .nodes
        .iter()
        .flat_map(|n| &n.sessions)
        .all(|s| s.announced == (&*s.end_cause == "lifetime-cap")));
    // The replay: the cap's interruptions go (up to the drains no node had room for), the
    // preemptions stay.
    let runs = |sc: &scenario::Scenario| {
        hazardserve::replay::run_grid(&sc.cluster, &sc.workload, &sc.config, &sc.grid)
            .expect("runs")
    };
    let (b, t) = (runs(&blind), runs(&told));
    let count = |o: &[RunOutput], cause: &str| -> usize {
        o.iter()
            .flat_map(|o| &o.records)
            .flat_map(|r| &r.interruption_causes)
            .filter(|c| c.as_str() == cause)
            .count()
    };
    let (cap_b, cap_t) = (count(&b, "lifetime-cap"), count(&t, "lifetime-cap"));
    let missed: u64 = t.iter().map(|o| o.stats.drain_missed).sum();
    let drained: u64 = t.iter().map(|o| o.stats.drained).sum();
    eprintln!(
        "GCE: lifetime-cap interruptions {cap_b} unannounced, {cap_t} announced ({drained} drained, {missed} without room); preempted {} / {}",
        count(&b, "preempted"),
        count(&t, "preempted")
    );
    assert!(
        cap_b >= 10,
        "the windows hold cap ends with requests on them ({cap_b})"
    );
    assert!(drained > 0);
    assert!(
        cap_t as u64 <= missed && cap_t * 10 <= cap_b,
        "announced: {cap_t} cap interruptions, {missed} drains without room, {cap_b} unannounced"
    );
}
