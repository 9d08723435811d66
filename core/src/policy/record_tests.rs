//! Unit tests of `record.rs`.

use super::*;
use crate::policy::model::{ForecastKind, Params};
use crate::policy::policies::{PolicyKind, StandardPolicy};
use crate::survival::curve::{Exponential, LinearCurve, StepCurve, Weibull};

/// A forecast whose answer depends on every field of the question, so that a replayed
/// decision that asked anything else would get another answer.
struct Fake;

impl Fake {
    fn time(node: usize, w: &Waiting) -> ServiceTime {
        let start = w.start_s + 0.3 * node as f64 + 1e-4 * w.tokens;
        ServiceTime {
            start_s: start,
            total_s: start + (w.target - w.done).max(0.0) / (10.0 + node as f64),
        }
    }
}

impl NodeLoads for Fake {
    fn forecast_newcomer(&self, node: usize, w: Waiting) -> Option<ServiceTime> {
        Some(Fake::time(node, &w))
    }
    fn forecast_newcomer_marginal(&self, node: usize, w: Waiting) -> Option<Marginal> {
        Some(Marginal {
            time: Fake::time(node, &w),
            imposed_s: 0.05 * node as f64,
        })
    }
    fn forecast_resident(&self, node: usize, id: u64) -> Option<ServiceTime> {
        Some(ServiceTime {
            start_s: 0.0,
            total_s: 40.0 + node as f64 + id as f64 * 1e-3,
        })
    }
    fn forecast_newcomer_stationary(&self, node: usize, w: Waiting) -> Option<Marginal> {
        (node != 3).then(|| Marginal {
            time: Fake::time(node, &w),
            imposed_s: 0.02 * node as f64,
        })
    }
    fn forecast_resident_stationary(&self, node: usize, id: u64) -> Option<ServiceTime> {
        self.forecast_resident(node, id)
    }
    fn stationary_bound(&self, node: usize, w: Waiting, start_lb: f64) -> Option<f64> {
        Some(start_lb + Fake::time(node, &w).total_s * 0.5)
    }
    fn unloaded_decode_tok_s(&self, node: usize) -> f64 {
        12.0 + node as f64
    }
}

fn curves() -> Vec<Arc<dyn ConditionalSurvival>> {
    let steps =
        StepCurve::new(vec![60.0, 600.0, 3600.0], vec![0.8, 0.5, 0.1], Some(1e-4)).expect("valid");
    vec![
        Arc::new(Exponential::from_rate(1.0 / 900.0)),
        Arc::new(Weibull::new(0.5, 2000.0).expect("valid")),
        Arc::new(LinearCurve::new(steps.clone())),
        Arc::new(steps),
    ]
}

fn views(curves: &[Arc<dyn ConditionalSurvival>]) -> Vec<NodeView<'_>> {
    (0..6)
        .map(|i| NodeView {
            age_s: 30.0 + 400.0 * i as f64,
            slots: 4,
            slots_used: (i % 3) as u32,
            kv_capacity_tokens: 100_000,
            kv_used_tokens: 1_000 * i as u64,
            queue_wait_s: 0.1 * i as f64,
            decode_tok_s: 20.0 + i as f64,
            prefill_tok_s: 2_000.0 + 100.0 * i as f64,
            bandwidth_bytes_s: 1e8,
            exp_rate_per_s: 1e-3,
            cached_tokens: if i == 4 { 256 } else { 0 },
            ..NodeView::new(curves[i % curves.len()].as_ref())
        })
        .collect()
}

/// The index of a curve among `curves` (by address).
fn id_of(
    curves: &[Arc<dyn ConditionalSurvival>],
) -> impl FnMut(&dyn ConditionalSurvival) -> usize + '_ {
    move |c| {
        let addr = c as *const dyn ConditionalSurvival as *const () as usize;
        curves
            .iter()
            .position(|k| Arc::as_ptr(k) as *const () as usize == addr)
            .unwrap_or(usize::MAX)
    }
}

/// A placement and a migration check taken again from their recorded inputs, after a JSON
/// round trip, choose the same node with the same `T`, `L`, `E` and move numbers, under each
/// forecast and risk-aware policy; with one recorded answer changed, the costs differ.
#[test]
fn a_decision_taken_again_from_its_record_is_the_same() {
    let curves = curves();
    let nodes = views(&curves);
    let active: Vec<NodeIdx> = vec![0, 1, 2, 3, 4, 5];
    let mut req = RequestView::new(7, 900, 300).with_sigma(0.0);
    req.conversation = Some(11);
    let gap = ReuseGap::from_steps(&[30.0, 120.0, 900.0], &[0.7, 0.4, 0.3]);
    let mut running = RequestView::new(8, 500, 2_000);
    running.done_tokens = 200;
    running.node = Some(2);
    running.resident_tokens = 700;
    let mut changed = 0;
    for kind in [
        PolicyKind::Hazard,
        PolicyKind::Memoryless,
        PolicyKind::Fastest,
    ] {
        for forecast in [
            ForecastKind::Own,
            ForecastKind::Marginal,
            ForecastKind::Stationary,
        ] {
            let params = Params {
                forecast,
                min_remaining_s: 0.0,
                hysteresis_s: 0.0,
                ..Params::default()
            };
            for migrate in [false, true] {
                let (r, from) = if migrate {
                    (&running, Some(2))
                } else {
                    (&req, None)
                };
                let view = ClusterView::new(&nodes)
                    .with_loads(&Fake)
                    .with_active(&active)
                    .with_reuse(gap.as_ref());
                let mut policy = StandardPolicy::new(kind, params, 1);
                let mut first = Explanation::recording();
                let (choice, inputs) =
                    recorded(view, true, r, from, id_of(&curves), |v| match from {
                        Some(f) => policy.check_migration(v, r, f, &mut first),
                        None => policy.place(v, r, &mut first),
                    });
                let inputs = inputs.expect("recorded");
                assert!(
                    !inputs.loads.is_empty() || (migrate && !kind.migrates()),
                    "{kind} {forecast:?}: no question recorded"
                );
                let json = serde_json::to_string(&inputs).expect("serialises");
                let back: DecisionInputs = serde_json::from_str(&json).expect("parses");
                let mut policy = StandardPolicy::new(kind, params, 1);
                let mut again = Explanation::recording();
                let got = back.decide(&mut policy, &curves, &mut again);
                let what = format!("{kind} {forecast:?} migrate {migrate}");
                assert_eq!(got, Some(choice), "{what}");
                for (a, b) in [
                    (first.t, again.t),
                    (first.l, again.l),
                    (first.e, again.e),
                    (first.risk_gain, again.risk_gain),
                    (first.c_planned, again.c_planned),
                    (first.imposed_s, again.imposed_s),
                ] {
                    assert_eq!(a.to_bits(), b.to_bits(), "{what}: {first:?}\n{again:?}");
                }
                assert_eq!(first.candidates.len(), again.candidates.len(), "{what}");
                // Mutation: a recorded answer changed changes the decision's numbers.
                let mut bent = back.clone();
                for c in bent.loads.iter_mut() {
                    if let Some(a) = c.answer.as_mut() {
                        a[1] += 5.0;
                    }
                }
                let mut policy = StandardPolicy::new(kind, params, 1);
                let mut other = Explanation::recording();
                bent.decide(&mut policy, &curves, &mut other);
                if other.t.to_bits() != first.t.to_bits() {
                    changed += 1;
                }
            }
        }
    }
    assert!(
        changed >= 9,
        "changed answers changed only {changed} decisions"
    );
}

/// A missing curve makes the decision impossible to take again; a question the record lacks
/// has no answer.
#[test]
fn a_record_without_its_curve_or_answer_says_so() {
    let curves = curves();
    let nodes = views(&curves);
    let req = RequestView::new(1, 100, 50);
    let view = ClusterView::new(&nodes).with_loads(&Fake);
    let mut policy = StandardPolicy::new(PolicyKind::Hazard, Params::default(), 1);
    let mut out = Explanation::recording();
    let (_, inputs) = recorded(view, true, &req, None, id_of(&curves), |v| {
        policy.place(v, &req, &mut out)
    });
    let inputs = inputs.expect("recorded");
    assert_eq!(inputs.decide(&mut policy, &curves[..1], &mut out), None);
    let table = TableLoads {
        calls: &inputs.loads,
        fleet_idx: vec![0],
        unloaded: vec![1.0],
    };
    let w = newcomer(1.0);
    assert_eq!(table.forecast_newcomer_stationary(0, w), None);
    assert_eq!(table.forecast_newcomer_stationary(9, w), None);
}

/// A one-token newcomer that starts after `start_s`.
fn newcomer(start_s: f64) -> Waiting {
    Waiting {
        id: 0,
        kv: 1,
        prompt: 1,
        start_s,
        prefill: true,
        stall_s: 0.0,
        tokens: 1.0,
        done: 0.0,
        target: 1.0,
        cached: 0,
    }
}

/// Non-finite numbers survive JSON as strings.
#[test]
fn non_finite_numbers_round_trip() {
    let call = LoadsCall {
        ask: Ask::Marginal,
        node: 2,
        newcomer: None,
        id: Some(3),
        start_lb: Some(f64::INFINITY),
        answer: Some([1.0, f64::INFINITY, f64::NAN]),
    };
    let json = serde_json::to_string(&call).expect("serialises");
    assert!(
        json.contains("\"inf\"") && json.contains("\"nan\""),
        "{json}"
    );
    let back: LoadsCall = serde_json::from_str(&json).expect("parses");
    let a = back.answer.expect("answer");
    assert_eq!((a[0], a[1]), (1.0, f64::INFINITY));
    assert!(a[2].is_nan());
    assert_eq!(back.start_lb, Some(f64::INFINITY));
    let bad = json.replace("\"nan\"", "\"many\"");
    let err = serde_json::from_str::<LoadsCall>(&bad)
        .err()
        .map(|e| e.to_string());
    assert!(err.unwrap_or_default().contains("\"many\""));
}

/// A host's forecast answers any newcomer on its node with the given numbers; a NaN start is
/// no answer.
#[test]
fn given_loads_answer_per_node() {
    let answers = [[1.0, 5.0, 0.5], [f64::NAN, 2.0, 0.0], [0.5, 3.0, -1.0]];
    let g = GivenLoads {
        answers: &answers,
        unloaded_decode_tok_s: &[10.0, 20.0, 30.0],
    };
    let w = newcomer(9.0);
    assert_eq!(g.forecast_newcomer(0, w).map(|t| t.total_s), Some(5.0));
    assert_eq!(g.forecast_newcomer(1, w), None);
    assert_eq!(
        g.forecast_newcomer_stationary(2, w).map(|m| m.imposed_s),
        Some(0.0)
    );
    assert_eq!(g.forecast_resident(0, 4).map(|t| t.start_s), Some(1.0));
    assert_eq!(g.forecast_newcomer(7, w), None);
    assert_eq!(g.unloaded_decode_tok_s(1), 20.0);
}
