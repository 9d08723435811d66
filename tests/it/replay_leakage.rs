//! No leakage: policies other than the oracle see only the present. Two traces that differ
//! only in the future of the sessions running at the window start (their end times and what
//! follows) must produce identical decisions, numbers included, up to the first instant at
//! which the traces differ; the oracle, which reads the future, must not.

use std::sync::Arc;

use hazardserve::policy::PolicyKind;
use hazardserve::replay::{
    simulate, Cluster, LoggedDecision, Node, NodeSpec, ReplayConfig, RunSpec, UpSession, Window,
    Workload,
};
use hazardserve::survival::curve::Weibull;

use super::replay_support::*;

fn trace(first_end: f64, second_end: f64, comeback: f64) -> Cluster {
    let spec = |p: f64, d: f64| NodeSpec {
        slots: 4,
        kv_capacity_tokens: 1_000_000,
        prefill_tok_s: p,
        decode_tok_s: d,
        bandwidth_bytes_s: 1.25e9,
        step: Default::default(),
    };
    let mk = |name: &str, s: NodeSpec, sessions: Vec<UpSession>, shape: f64, scale: f64| Node {
        name: name.into(),
        spec: s,
        sessions,
        survival: Arc::new(Weibull { shape, scale }),
        exp_rate_per_s: 1.0 / scale,
        truth: Some(Arc::new(Weibull { shape, scale })),
    };
    Cluster::new(vec![
        // Up since 400 s (before the window): its end and everything after differ.
        mk(
            "fast",
            spec(2000.0, 30.0),
            vec![
                UpSession::new(us(400.0), us(first_end)),
                UpSession::new(us(comeback), UpSession::OPEN_END),
            ],
            0.7,
            3000.0,
        ),
        // Up since 990 s: its end differs.
        mk(
            "mid",
            spec(1500.0, 25.0),
            vec![UpSession::new(us(990.0), us(second_end))],
            1.5,
            900.0,
        ),
        // Identical in both traces, including a session starting inside the window.
        mk(
            "steady",
            spec(1000.0, 20.0),
            vec![
                UpSession::new(us(0.0), us(1050.0)),
                UpSession::new(us(1060.0), UpSession::OPEN_END),
            ],
            1.0,
            5000.0,
        ),
    ])
}

fn decisions(cluster: &Cluster, policy: PolicyKind) -> Vec<LoggedDecision> {
    let cfg = ReplayConfig {
        decision_log: 100_000,
        ..checked()
    };
    // Requests every 2 s for 150 s, each 300 s or more of decoding: the oracle's foresight
    // matters (in trace b the two first nodes fail before such a request would finish).
    let reqs = (0..75)
        .map(|i| req(i, 2.0 * i as f64, 1000, 9000))
        .collect();
    let spec = RunSpec::new(policy, Window::new(us(1000.0), us(600.0)), 3, cfg.params);
    simulate(cluster, &Workload::new(reqs), &cfg, &spec)
        .expect("replay runs")
        .decisions
}

/// The decisions strictly before `t_us`, as JSON (NaN-safe comparison).
fn before(d: &[LoggedDecision], t_us: i64) -> Vec<serde_json::Value> {
    d.iter()
        .filter(|x| x.time_us < t_us)
        .map(|x| serde_json::to_value(x).expect("serialises"))
        .collect()
}

#[test]
fn replay_future_of_running_sessions_changes_nothing_a_policy_saw() {
    let a = trace(1500.0, 2000.0, 1700.0);
    let b = trace(1200.0, 1250.0, 1300.0);
    // The traces first differ at 1200 s (node 0's session ends in trace b).
    let cut = us(1200.0);
    for kind in PolicyKind::ALL {
        // The oracle reads the future by design; `bound` is not a policy (no decisions, and it
        // reads the whole timeline by definition).
        if kind == PolicyKind::Oracle || kind == PolicyKind::Bound {
            continue;
        }
        let da = decisions(&a, kind);
        let db = decisions(&b, kind);
        let (ea, eb) = (before(&da, cut), before(&db, cut));
        assert!(
            ea.len() >= 75,
            "{kind}: {} decisions before the cut",
            ea.len()
        );
        assert_eq!(ea, eb, "{kind} saw the future");
        if kind == PolicyKind::Hazard {
            // The first placement priced every node with its curve (non-trivial E).
            let first = &da[0].explanation;
            assert_eq!(first.candidates.len(), 3);
            assert!(first.candidates.iter().all(|c| c.l > 0.0));
            // Migration checks were made and logged too.
            assert!(da.iter().any(|d| d.time_us < cut
                && d.explanation.decision == hazardserve::policy::policies::Decision::Migrate));
        }
    }
    // Power check: the oracle reads the future, so its decisions differ from the first one on.
    let oa = decisions(&a, PolicyKind::Oracle);
    let ob = decisions(&b, PolicyKind::Oracle);
    assert_ne!(before(&oa, cut)[0], before(&ob, cut)[0]);
}
