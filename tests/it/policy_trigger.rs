//! The design note's trigger finding on a two-node WAN hop, what overlap changes, and the
//! analysis rows' serialised shape.

use hazardserve::policy::analysis::{
    crossover_rows, trigger_rows, TriggerScenario, DEFAULT_HYSTERESIS_S, DEFAULT_UPTIMES_S,
};
use hazardserve::policy::presets::{LINKS, LLAMA2_7B, LLAMA3_8B, NVLINK, WAN_100M};
use hazardserve::policy::{
    ClusterView, Explanation, NodeView, Outcome, Params, Policy, PolicyKind, StandardPolicy,
};
use hazardserve::survival::curve::Weibull;

#[test]
fn wan_hop_never_fires_because_the_re_prefill_exceeds_the_risk() {
    let sc = TriggerScenario::design_wan();
    assert_eq!(sc.request.prompt_tokens + sc.request.done_tokens, 4500);
    let rows = trigger_rows(&sc, &DEFAULT_UPTIMES_S, &DEFAULT_HYSTERESIS_S);
    assert_eq!(rows.len(), DEFAULT_UPTIMES_S.len());
    for r in &rows {
        // C_planned is the ~18 s re-prefill (4,500 / 250 + O_r); the KV transfer is ~189 s.
        assert!((r.c_recompute - 18.1).abs() < 1e-9, "{r:?}");
        assert!((r.c_transfer - (0.2 + 4500.0 * 524_288.0 / 12.5e6)).abs() < 1e-6);
        assert_eq!(r.c_planned, r.c_recompute);
        assert!(
            r.c_planned > r.l_i,
            "C_planned must exceed L_i outright: {r:?}"
        );
        assert!(r.risk_gain < 0.0, "{r:?}");
        assert!((r.risk_gain - (r.l_i - (r.c_planned + r.l_j))).abs() < 1e-12);
        assert!((r.dt - 18.1).abs() < 1e-9, "equal speeds: dT = C_planned");
        assert_eq!(r.fires.len(), DEFAULT_HYSTERESIS_S.len());
        assert!(r.fires.iter().all(|f| !f.fires), "whatever h is: {r:?}");
    }
    // L_i falls with uptime (decreasing hazard), so the youngest source is the riskiest, and
    // even there the gain is far below zero.
    assert!(rows[0].l_i > rows[rows.len() - 1].l_i);
    assert!(rows[0].risk_gain < -17.0);
}

#[test]
fn the_policy_agrees_with_the_rows() {
    let sc = TriggerScenario::design_wan();
    let rows = trigger_rows(&sc, &[60.0], &[1.0]);
    let mk = |curve, age| NodeView {
        age_s: age,
        decode_tok_s: sc.source.decode_tok_s,
        prefill_tok_s: sc.source.prefill_tok_s,
        bandwidth_bytes_s: sc.source.bandwidth_bytes_s,
        ..NodeView::new(curve)
    };
    let nodes = [
        mk(sc.source_curve.as_ref(), 60.0),
        mk(sc.dest_curve.as_ref(), sc.dest_age_s),
    ];
    let mut pol = StandardPolicy::new(PolicyKind::Hazard, sc.params, 0);
    let mut out = Explanation::recording();
    let d = pol.check_migration(&ClusterView::new(&nodes), &sc.request, 0, &mut out);
    assert_eq!(d, None);
    assert_eq!(out.outcome, Outcome::Stay);
    assert!((out.risk_gain - rows[0].risk_gain).abs() < 1e-12);
    assert!((out.dt - rows[0].dt).abs() < 1e-12);
    assert!((out.l - rows[0].l_i).abs() < 1e-12);
}

#[test]
fn overlap_removes_the_time_penalty_but_not_the_negative_gain_on_the_wan_hop() {
    let mut sc = TriggerScenario::design_wan();
    sc.params.overlap = true;
    let rows = trigger_rows(&sc, &DEFAULT_UPTIMES_S, &DEFAULT_HYSTERESIS_S);
    for r in &rows {
        // Window 18.1 s, 362 tokens decoded meanwhile, catch-up 0.1 + 362 / 250 = 1.548 s.
        assert!((r.c_planned - 1.548).abs() < 1e-9, "{r:?}");
        assert!((r.dt - 1.548).abs() < 1e-9, "equal speeds: dT = catch-up");
        assert!(r.risk_gain < 0.0, "{r:?}");
        assert!(r.fires.iter().all(|f| !f.fires));
    }
}

#[test]
fn overlap_makes_the_trigger_fire_for_a_spot_source_near_its_reclaim_age() {
    // Same hop, but the source is a spot node (Weibull k = 4, scale 1 h) and 2,000 tokens
    // (100 s) remain.
    let spot = || {
        let mut sc = TriggerScenario::design_wan();
        sc.source_curve = Box::new(Weibull {
            shape: 4.0,
            scale: 3600.0,
        });
        sc.request.est_output_tokens = 2500;
        sc
    };
    let uptimes = [0.0, 1800.0, 5400.0, 7200.0];
    let plain = trigger_rows(&spot(), &uptimes, &[2.0, 5.0]);
    assert!(
        plain.iter().all(|r| r.fires.iter().all(|f| !f.fires)),
        "dT = 18.1 s blocks"
    );
    assert!(plain[3].l_i > 10.0);
    let mut sc = spot();
    sc.params.overlap = true;
    let over = trigger_rows(&sc, &uptimes, &[2.0, 5.0]);
    assert!(over[0].fires.iter().all(|f| !f.fires));
    assert!(over[1].fires.iter().all(|f| !f.fires));
    assert!(over[2].fires[0].fires, "{:?}", over[2]);
    assert!(
        over[3].fires[0].fires && over[3].fires[1].fires,
        "{:?}",
        over[3]
    );
}

#[test]
fn trigger_rows_serialise_with_the_documented_keys() {
    let rows = trigger_rows(&TriggerScenario::design_wan(), &[0.0], &[1.0]);
    let v = serde_json::to_value(&rows[0]).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "c_planned",
            "c_recompute",
            "c_transfer",
            "dt",
            "fires",
            "l_i",
            "l_j",
            "risk_gain",
            "uptime_s"
        ]
    );
}

#[test]
fn crossover_table() {
    let params = Params::default();
    let rows = crossover_rows(&LLAMA2_7B, &LINKS, &[250.0, 11_048.0], &params);
    assert_eq!(rows.len(), 10);
    let v = serde_json::to_value(&rows[0]).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        ["bandwidth_bytes_s", "c_star", "link", "prefill_tok_s"]
    );
    // WAN: transfer never wins, whatever the destination.
    for r in rows.iter().filter(|r| r.link == WAN_100M.name) {
        assert_eq!(r.c_star, None, "{r:?}");
        assert!(v["c_star"].is_null());
    }
    // NVLink to a fast prefill engine: transfer wins beyond roughly a thousand tokens.
    let nv = crossover_rows(&LLAMA3_8B, &[NVLINK], &[10_815.51], &params);
    let c = nv[0].c_star.unwrap();
    assert!(c > 500.0 && c < 2000.0, "{c}");
    // The crossover moves with the destination's prefill rate: a slow destination makes
    // transfer win almost at once.
    let slow = crossover_rows(&LLAMA3_8B, &[NVLINK], &[250.0], &params);
    assert!(slow[0].c_star.unwrap() < 50.0);
}
