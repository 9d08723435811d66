//! `C_planned`, every sign case of the crossover `c*`, the overlap formula, the migration
//! guards (max_hops, min_remaining, hysteresis on both sides of the trigger), and the
//! destination priced with the placement's forecast.

use hazardserve::policy::cost::ServiceTime;
use hazardserve::policy::migration::{
    c_star_formula, check_guards, crossover, overlapped_move, planned_cost, recompute_cost_s,
    transfer_cost_s, Blocked, Crossover, Hop, MoveMethod,
};
use hazardserve::policy::service::{Marginal, NodeLoads, Waiting};
use hazardserve::policy::{
    ClusterView, Explanation, ForecastKind, NodeView, Outcome, Params, Policy, PolicyKind,
    RequestView, StandardPolicy,
};
use hazardserve::survival::curve::Exponential;

#[test]
fn planned_cost_is_the_cheaper_affine_cost() {
    // 4,500 tokens of Llama-2-7B KV (512 KiB) over 100 Mb/s vs re-prefill at 250 tok/s.
    let kv = 524_288.0;
    let p = planned_cost(4500.0, kv, 12.5e6, 1e9, 250.0, 0.2, 0.1);
    assert!((p.transfer_s - (0.2 + 4500.0 * kv / 12.5e6)).abs() < 1e-9);
    assert!((p.recompute_s - 18.1).abs() < 1e-9);
    assert_eq!(p.method, MoveMethod::Recompute);
    assert_eq!(p.cost_s, p.recompute_s);
    // Over NVLink the transfer wins.
    let q = planned_cost(4500.0, kv, 300e9, 300e9, 250.0, 0.2, 0.1);
    assert_eq!(q.method, MoveMethod::Transfer);
    assert!((q.cost_s - (0.2 + 4500.0 * kv / 300e9)).abs() < 1e-12);
    assert_eq!(
        transfer_cost_s(10.0, 1.0, 5.0, 2.0, 0.0),
        5.0,
        "min(B_i, B_j) = 2"
    );
    assert_eq!(recompute_cost_s(10.0, 0.0, 0.1), f64::INFINITY);
}

#[test]
fn crossover_link_faster_per_token_and_transfer_overhead_larger() {
    // a = 131072 / 300e9 s/token, b = 1 / 10000 s/token, O_t - O_r = 0.1 s.
    let x = crossover(0.2, 0.1, 131_072.0, 300e9, 10_000.0);
    let want = 0.1 / (1.0 / 10_000.0 - 131_072.0 / 300e9);
    match x {
        Crossover::TransferAbove(c) => assert!((c - want).abs() < 1e-9, "{c} vs {want}"),
        other => panic!("{other:?}"),
    }
    assert!((c_star_formula(0.2, 0.1, 131_072.0, 300e9, 10_000.0) - want).abs() < 1e-9);
    assert_eq!(x.c_star(), Some(want));
    // Costs cross exactly at c*.
    let t = transfer_cost_s(want, 131_072.0, 300e9, 300e9, 0.2);
    let r = recompute_cost_s(want, 10_000.0, 0.1);
    assert!((t - r).abs() < 1e-12);
}

#[test]
fn crossover_transfer_always_wins_when_its_overhead_is_not_larger() {
    assert_eq!(
        crossover(0.1, 0.1, 131_072.0, 300e9, 10_000.0),
        Crossover::TransferAlways
    );
    assert_eq!(
        crossover(0.05, 0.1, 131_072.0, 300e9, 10_000.0),
        Crossover::TransferAlways
    );
    assert_eq!(
        crossover(0.05, 0.1, 131_072.0, 300e9, 10_000.0).c_star(),
        Some(0.0)
    );
    // Destination cannot prefill at all.
    assert_eq!(
        crossover(0.2, 0.1, 131_072.0, 300e9, 0.0),
        Crossover::TransferAlways
    );
}

#[test]
fn crossover_link_slower_per_token_means_transfer_never_wins() {
    // WAN: 512 KiB / 12.5 MB/s = 42 ms/token > 4 ms/token of a 250 tok/s prefill.
    let x = crossover(0.2, 0.1, 524_288.0, 12.5e6, 250.0);
    assert_eq!(x, Crossover::TransferNever);
    assert_eq!(x.c_star(), None);
    assert!(c_star_formula(0.2, 0.1, 524_288.0, 12.5e6, 250.0) < 0.0);
    assert_eq!(
        crossover(0.1, 0.1, 524_288.0, 12.5e6, 250.0),
        Crossover::TransferNever
    );
    // No link at all.
    assert_eq!(
        crossover(0.2, 0.1, 524_288.0, 0.0, 250.0),
        Crossover::TransferNever
    );
}

#[test]
fn crossover_link_slower_but_transfer_overhead_smaller_wins_only_below_c_star() {
    let x = crossover(0.0, 0.5, 524_288.0, 12.5e6, 250.0);
    let a = 524_288.0 / 12.5e6;
    let want = 0.5 / (a - 1.0 / 250.0);
    match x {
        Crossover::TransferBelow(c) => assert!((c - want).abs() < 1e-9),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        x.c_star(),
        None,
        "no context beyond which transfer keeps winning"
    );
    let small = planned_cost(want * 0.5, 524_288.0, 12.5e6, 12.5e6, 250.0, 0.0, 0.5);
    let large = planned_cost(want * 2.0, 524_288.0, 12.5e6, 12.5e6, 250.0, 0.0, 0.5);
    assert_eq!(small.method, MoveMethod::Transfer);
    assert_eq!(large.method, MoveMethod::Recompute);
}

#[test]
fn crossover_equal_slopes() {
    // kv / B = 1 / p: 1000 bytes over 1e6 B/s = 1 ms/token = 1 / 1000 tok/s.
    assert_eq!(
        crossover(0.1, 0.2, 1000.0, 1e6, 1000.0),
        Crossover::TransferAlways
    );
    assert_eq!(
        crossover(0.3, 0.2, 1000.0, 1e6, 1000.0),
        Crossover::TransferNever
    );
    assert_eq!(crossover(0.2, 0.2, 1000.0, 1e6, 1000.0), Crossover::Tie);
    assert_eq!(crossover(0.2, 0.2, 1000.0, 1e6, 1000.0).c_star(), None);
    assert!(c_star_formula(0.3, 0.2, 1000.0, 1e6, 1000.0).is_infinite());
}

#[test]
fn overlap_pays_only_the_catch_up() {
    let params = Params::default();
    // 4,500 tokens re-prefilled at 250 tok/s (18.1 s) while the source decodes at 20 tok/s.
    let hop = Hop {
        kv_bytes_per_token: 524_288.0,
        bandwidth_src: 12.5e6,
        bandwidth_dst: 12.5e6,
        prefill_dst: 250.0,
    };
    let m = overlapped_move(4500.0, 500.0, 20.0, hop, &params);
    assert!((m.window_s - 18.1).abs() < 1e-9);
    assert!((m.decoded_in_window - 362.0).abs() < 1e-9);
    assert!((m.cost_s - (0.1 + 362.0 / 250.0)).abs() < 1e-9);
    assert_eq!(m.method, MoveMethod::Recompute);
    // The source cannot generate more than what is left.
    let m = overlapped_move(4500.0, 100.0, 20.0, hop, &params);
    assert_eq!(m.decoded_in_window, 100.0);
}

#[test]
fn guard_function() {
    let p = Params {
        max_hops: 2,
        min_remaining_s: 5.0,
        ..Params::default()
    };
    assert_eq!(check_guards(0, 10.0, &p), Ok(()));
    assert_eq!(check_guards(2, 10.0, &p), Err(Blocked::MaxHops));
    assert_eq!(check_guards(1, 4.9, &p), Err(Blocked::MinRemaining));
    assert_eq!(check_guards(1, f64::NAN, &p), Err(Blocked::MinRemaining));
}

/// A source decoding at `d_src` whose sessions follow `src` and a destination decoding at
/// `d_dst` whose sessions follow `dst`; both prefill 5,000 tok/s over a 10 GB/s link (a
/// transfer wins).
fn pair<'a>(
    src: &'a Exponential,
    d_src: f64,
    dst: &'a Exponential,
    d_dst: f64,
) -> [NodeView<'a>; 2] {
    let node = |curve: &'a Exponential, d: f64| NodeView {
        decode_tok_s: d,
        prefill_tok_s: 5000.0,
        bandwidth_bytes_s: 1e10,
        ..NodeView::new(curve)
    };
    [node(src, d_src), node(dst, d_dst)]
}

/// A request decoding on node 0: 900 prompt tokens, 100 of its 1,100 generated, after `hops`
/// planned moves.
fn on_source(hops: u32) -> RequestView {
    RequestView {
        id: 1,
        prompt_tokens: 900,
        done_tokens: 100,
        est_output_tokens: 1100,
        node: Some(0),
        resident_tokens: 1000,
        planned_hops: hops,
        est_sigma: 0.0,
        recovering: false,
        conversation: None,
    }
}

/// Source: fast-failing (mean session 20 s), decode 20 tok/s. Destination: safe, prefill
/// 5,000 tok/s, a 10 GB/s link (transfer wins), decode `dst_decode`.
fn run(params: Params, hops: u32, dst_decode: f64) -> (Option<usize>, Explanation) {
    let risky = Exponential { mean: 20.0 };
    let safe = Exponential { mean: 1e7 };
    let nodes = pair(&risky, 20.0, &safe, dst_decode);
    let view = ClusterView::new(&nodes);
    let req = on_source(hops);
    let mut pol = StandardPolicy::new(PolicyKind::Hazard, params, 0);
    let mut out = Explanation::default();
    let d = pol.check_migration(&view, &req, 0, &mut out);
    (d, out)
}

fn base() -> Params {
    Params {
        kv_bytes_per_token: 131_072.0,
        hysteresis_s: 1.0,
        max_hops: 2,
        min_remaining_s: 5.0,
        ..Params::default()
    }
}

#[test]
fn trigger_fires_when_risk_is_removed() {
    let (d, out) = run(base(), 0, 40.0);
    assert_eq!(d, Some(1), "{out:?}");
    assert_eq!(out.outcome, Outcome::Migrate);
    assert!(out.risk_gain > 1.0 && out.dt < 1.0);
    assert_eq!(out.method, Some(MoveMethod::Transfer));
    assert!((out.risk_gain - (out.l - (out.c_planned + out.l_j))).abs() < 1e-12);
}

#[test]
fn max_hops_blocks() {
    let (d, out) = run(base(), 2, 40.0);
    assert_eq!(d, None);
    assert_eq!(out.outcome, Outcome::MaxHops);
    let (d, _) = run(base(), 1, 40.0);
    assert_eq!(d, Some(1));
}

#[test]
fn min_remaining_blocks() {
    // T_i = 1000 tokens / 20 tok/s = 50 s.
    let (d, out) = run(
        Params {
            min_remaining_s: 50.5,
            ..base()
        },
        0,
        40.0,
    );
    assert_eq!(d, None);
    assert_eq!(out.outcome, Outcome::MinRemaining);
    let (d, _) = run(
        Params {
            min_remaining_s: 49.5,
            ..base()
        },
        0,
        40.0,
    );
    assert_eq!(d, Some(1));
}

#[test]
fn hysteresis_on_the_risk_side() {
    let (_, probe) = run(base(), 0, 40.0);
    let rg = probe.risk_gain;
    let (d, out) = run(
        Params {
            hysteresis_s: rg + 0.01,
            ..base()
        },
        0,
        40.0,
    );
    assert_eq!(d, None);
    assert_eq!(out.outcome, Outcome::Stay);
    let (d, _) = run(
        Params {
            hysteresis_s: rg - 0.01,
            ..base()
        },
        0,
        40.0,
    );
    assert_eq!(d, Some(1));
}

#[test]
fn hysteresis_on_the_time_side() {
    // Same decode speed: dT = C_planned (transfer of 1,000 tokens, ~0.213 s).
    let (_, probe) = run(
        Params {
            hysteresis_s: 0.0,
            ..base()
        },
        0,
        20.0,
    );
    let dt = probe.dt;
    assert!(dt > 0.2 && dt < 0.25, "{dt}");
    assert!(probe.risk_gain > 0.5);
    let (d, out) = run(
        Params {
            hysteresis_s: dt - 0.001,
            ..base()
        },
        0,
        20.0,
    );
    assert_eq!(d, None, "{out:?}");
    let (d, _) = run(
        Params {
            hysteresis_s: dt + 0.001,
            ..base()
        },
        0,
        20.0,
    );
    assert_eq!(d, Some(1));
}

#[test]
fn a_faster_but_equally_risky_node_does_not_attract_the_request() {
    // E_j + C < E_i (much faster destination) but no risk removed: the load-balancing move the
    // earlier design made (and thrashed on) must not happen.
    let curve = Exponential { mean: 3600.0 };
    let nodes = pair(&curve, 10.0, &curve, 100.0);
    let req = RequestView {
        id: 2,
        prompt_tokens: 1000,
        done_tokens: 0,
        est_output_tokens: 1000,
        node: Some(0),
        resident_tokens: 1000,
        planned_hops: 0,
        est_sigma: 0.0,
        recovering: false,
        conversation: None,
    };
    let mut pol = StandardPolicy::new(PolicyKind::Hazard, base(), 0);
    let mut out = Explanation::recording();
    let d = pol.check_migration(&ClusterView::new(&nodes), &req, 0, &mut out);
    assert_eq!(d, None);
    assert_eq!(out.outcome, Outcome::Stay);
    let c = out.candidates[0];
    assert!(
        c.t + c.l + c.c_planned < out.e,
        "the move would lower E: {out:?}"
    );
    assert!(c.risk_gain <= 1.0);
}

/// A forecast of fixed answers: every newcomer completes `t_s` after its start phase, and
/// under the `marginal` and `stationary` forecasts imposes `d_s` on the node's other requests.
struct FixedLoads {
    t_s: f64,
    d_s: f64,
}

impl NodeLoads for FixedLoads {
    fn forecast_newcomer(&self, _node: usize, w: Waiting) -> Option<ServiceTime> {
        Some(ServiceTime {
            start_s: w.start_s,
            total_s: w.start_s + self.t_s,
        })
    }

    fn forecast_newcomer_marginal(&self, node: usize, w: Waiting) -> Option<Marginal> {
        Some(Marginal {
            time: self.forecast_newcomer(node, w)?,
            imposed_s: self.d_s,
        })
    }

    fn forecast_resident(&self, _node: usize, _id: u64) -> Option<ServiceTime> {
        Some(ServiceTime {
            start_s: 0.0,
            total_s: self.t_s,
        })
    }

    fn forecast_newcomer_stationary(&self, node: usize, w: Waiting) -> Option<Marginal> {
        self.forecast_newcomer_marginal(node, w)
    }

    fn forecast_resident_stationary(&self, node: usize, id: u64) -> Option<ServiceTime> {
        self.forecast_resident(node, id)
    }

    fn unloaded_decode_tok_s(&self, _node: usize) -> f64 {
        20.0
    }
}

/// The migration check prices the destination with the placement's forecast: under
/// `marginal` the trigger's time side `dT` carries the delay `D_j` the move imposes on the
/// destination's requests (as placement's score `T_i + D_i + L_i` does), under `own` it does
/// not; the request's own `T_j` (and the loss priced over it) is the same under both; a delay
/// large enough keeps the request where it is.
#[test]
fn the_migration_check_prices_the_destination_with_the_placements_forecast() {
    let risky = Exponential { mean: 20.0 };
    let safe = Exponential { mean: 1e7 };
    let nodes = pair(&risky, 20.0, &safe, 40.0);
    let req = on_source(0);
    let check = |forecast: ForecastKind, d_s: f64| {
        let loads = FixedLoads { t_s: 25.0, d_s };
        let view = ClusterView::new(&nodes).with_loads(&loads);
        let params = Params { forecast, ..base() };
        let mut pol = StandardPolicy::new(PolicyKind::Hazard, params, 0);
        let mut out = Explanation::recording();
        let d = pol.check_migration(&view, &req, 0, &mut out);
        let c = out.candidates.iter().find(|c| c.node == 1);
        let c = c.expect("the destination is priced");
        (d, c.t, c.l, c.dt)
    };
    let (own, t_own, l_own, dt_own) = check(ForecastKind::Own, 7.0);
    let (marginal, t_marginal, l_marginal, dt_marginal) = check(ForecastKind::Marginal, 7.0);
    assert!(
        (dt_marginal - dt_own - 7.0).abs() < 1e-9,
        "{dt_own} {dt_marginal}"
    );
    assert_eq!((t_own, l_own), (t_marginal, l_marginal));
    // Seven seconds of delay to the destination's requests fail the time side of the
    // trigger (`dT < h = 1 s`); half a second does not.
    assert_eq!(own, Some(1));
    assert_eq!(marginal, None);
    assert_eq!(check(ForecastKind::Marginal, 0.5).0, Some(1));
}
