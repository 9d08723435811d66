//! `L_i` against hand-computed integrals: the exponential closed form, a Weibull case against a
//! 100,000-cell integral, and the stated error bound of the 16-cell sum.

use hazardserve::policy::cost::{
    expected_loss, placement_cost, riemann_error_bound, service_time, UnplannedLoss,
};
use hazardserve::policy::{NodeView, Params, RequestView, RiskModel};
use hazardserve::survival::curve::{ConditionalSurvival, Exponential, StepCurve, Weibull};

/// `integral_0^T lambda e^{-lambda t} U(t) dt` for `U(t) = A + (d/p)(t - w)^+`, `T = w + D`:
/// `A (1 - e^{-lambda T}) + (d/p) e^{-lambda w} (-D e^{-lambda D} + (1 - e^{-lambda D}) / lambda)`.
fn exponential_closed_form(lambda: f64, a: f64, w: f64, d_over_p: f64, big_d: f64) -> f64 {
    let t = w + big_d;
    a * (1.0 - (-lambda * t).exp())
        + d_over_p
            * (-lambda * w).exp()
            * (-big_d * (-lambda * big_d).exp() + (1.0 - (-lambda * big_d).exp()) / lambda)
}

#[test]
fn exponential_l_matches_closed_form_within_the_bound() {
    // c = 4,500 tokens, w = 3 s, d = 20 tok/s, 500 tokens left, p_fb = 250 tok/s.
    let (c, w, d, rem, p, o_r, sigma) = (4500.0, 3.0, 20.0, 500.0, 250.0, 0.1, 2.0);
    let u = UnplannedLoss::new(c, w, d, rem, p, o_r, sigma);
    let horizon = w + rem / d;
    for &mean in &[60.0, 600.0, 3600.0, 86400.0] {
        let curve = Exponential { mean };
        let l16 = expected_loss(&curve, 1234.0, horizon, &u);
        let exact = exponential_closed_form(1.0 / mean, c / p + o_r + sigma, w, d / p, rem / d);
        let bound = riemann_error_bound(&curve, 1234.0, horizon, &u);
        // The bound: (1 - S(T|a)) * min(d T / 32, rem) / p_fb.
        let want_bound = (1.0 - (-horizon / mean).exp()) * (d * horizon / 32.0).min(rem) / p;
        assert!(
            (bound - want_bound).abs() < 1e-12,
            "bound {bound} vs {want_bound}"
        );
        assert!(
            (l16 - exact).abs() <= bound + 1e-12,
            "mean {mean}: L16 {l16} exact {exact} bound {bound}"
        );
        assert!(l16 > 0.0 && exact > 0.0);
    }
}

#[test]
fn sixteen_cells_at_midpoints_exactly() {
    // Re-derive the sum by hand for an exponential curve: masses e^{-l t_k} - e^{-l t_{k+1}},
    // U at the midpoints.
    let u = UnplannedLoss::new(1000.0, 2.0, 10.0, 300.0, 500.0, 0.5, 1.5);
    let horizon = 2.0 + 30.0;
    let lambda = 1.0 / 500.0;
    let step = horizon / 16.0;
    let mut want = 0.0;
    for k in 0..16 {
        let (t0, t1) = (k as f64 * step, (k + 1) as f64 * step);
        let mass = (-lambda * t0).exp() - (-lambda * t1).exp();
        let m = 0.5 * (t0 + t1);
        let grown = (10.0 * (m - 2.0)).clamp(0.0, 300.0);
        want += mass * ((1000.0 + grown) / 500.0 + 0.5 + 1.5);
    }
    let got = expected_loss(&Exponential { mean: 500.0 }, 0.0, horizon, &u);
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

#[test]
fn weibull_l_matches_a_fine_integral() {
    let (c, w, d, rem, p) = (3000.0, 1.0, 25.0, 800.0, 400.0);
    let u = UnplannedLoss::new(c, w, d, rem, p, 0.1, 2.0);
    let horizon = w + rem / d;
    for &(shape, scale, age) in &[
        (1.5, 7200.0, 600.0),
        (3.0, 3600.0, 3000.0),
        (0.7, 3600.0, 60.0),
    ] {
        let curve = Weibull { shape, scale };
        // Midpoint rule on f(a + t) / S(a) * U(t) with 100,000 cells.
        let n = 100_000;
        let h = horizon / n as f64;
        let sa = curve.survival(age);
        let fine: f64 = (0..n)
            .map(|k| {
                let t = (k as f64 + 0.5) * h;
                curve.density(age + t) / sa * u.at(t) * h
            })
            .sum();
        let l16 = expected_loss(&curve, age, horizon, &u);
        let bound = riemann_error_bound(&curve, age, horizon, &u);
        assert!(
            (l16 - fine).abs() <= bound + 1e-6 * fine,
            "k={shape}: L16 {l16} fine {fine} bound {bound}"
        );
        assert!(
            bound < 0.05 * fine,
            "bound {bound} should be informative vs {fine}"
        );
    }
}

#[test]
fn step_curve_l_is_a_sum_over_its_jumps() {
    // A curve with jumps at age+5 and age+20 (masses 0.2 and 0.1 of the conditional): with a
    // flat U (no decode growth), L = 0.3 U exactly.
    let curve = StepCurve::new(vec![100.0, 105.0, 120.0], vec![1.0, 0.8, 0.7], None).unwrap();
    let u = UnplannedLoss::new(500.0, 0.0, 0.0, 0.0, 100.0, 0.0, 1.0);
    let l = expected_loss(&curve, 100.0, 32.0, &u);
    assert!((l - 0.3 * 6.0).abs() < 1e-12, "{l}");
}

#[test]
fn e_is_t_plus_l_with_the_documented_t() {
    let curve = Exponential { mean: 1800.0 };
    let node = NodeView {
        queue_wait_s: 4.0,
        decode_tok_s: 30.0,
        prefill_tok_s: 1000.0,
        age_s: 100.0,
        ..NodeView::new(&curve)
    };
    let req = RequestView {
        done_tokens: 100,
        ..RequestView::new(7, 2000, 700)
    };
    let params = Params::default();
    let cost = placement_cost(&node, 0, &req, 800.0, &params, RiskModel::Hazard, None);
    // T = queue 4 + prefill 2100/1000 + decode 600/30.
    let st = service_time(4.0, 2100.0, 1000.0, 600.0, 30.0);
    assert!((cost.t - (4.0 + 2.1 + 20.0)).abs() < 1e-12);
    assert_eq!(cost.t, st.total_s);
    assert!((cost.w - 6.1).abs() < 1e-12);
    let u = UnplannedLoss::new(2100.0, 6.1, 30.0, 600.0, 800.0, 0.1, 2.0);
    let l = expected_loss(&curve, 100.0, cost.t, &u);
    assert!((cost.l - l).abs() < 1e-12);
    assert!((cost.e - (cost.t + cost.l)).abs() < 1e-12);
    // Memoryless uses the node's ML rate, not its curve.
    let fast = NodeView {
        exp_rate_per_s: 1.0 / 60.0,
        ..node
    };
    let m = placement_cost(&fast, 0, &req, 800.0, &params, RiskModel::Memoryless, None);
    let lm = expected_loss(&Exponential { mean: 60.0 }, 0.0, cost.t, &u);
    assert!((m.l - lm).abs() < 1e-12 && m.l > cost.l);
    // Oracle (clairvoyant greedy): a node ending at R < T costs the planned hop it makes
    // just before the end, the cheaper of a recompute (U(R) without the stall sigma) and a
    // KV transfer that fits before the end, never more than U(R). (It used to be the
    // unplanned U(R): the oracle then let itself be interrupted.)
    let o = placement_cost(
        &node,
        0,
        &req,
        800.0,
        &params,
        RiskModel::Oracle,
        Some(10.0),
    );
    let hop = u
        .with_hop(
            params.transfer_overhead_s,
            params.kv_bytes_per_token,
            node.bandwidth_bytes_s,
        )
        .hop_at(10.0);
    assert!((o.l - hop).abs() < 1e-12);
    assert!(o.l <= u.at(10.0) - params.stall_penalty_s + 1e-12);
    let o = placement_cost(&node, 0, &req, 800.0, &params, RiskModel::Oracle, Some(1e6));
    assert_eq!(o.l, 0.0);
}

#[test]
fn degenerate_inputs_do_not_panic() {
    let curve = Weibull {
        shape: f64::NAN,
        scale: -1.0,
    };
    let u = UnplannedLoss::new(100.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    assert_eq!(expected_loss(&curve, f64::NAN, 10.0, &u), 0.0);
    assert_eq!(
        expected_loss(&Exponential { mean: 10.0 }, 0.0, -1.0, &u),
        0.0
    );
    assert!(expected_loss(&Exponential { mean: 10.0 }, 0.0, f64::INFINITY, &u).is_infinite());
    let l = expected_loss(&Exponential { mean: 0.0 }, 0.0, 10.0, &u);
    assert!(
        l.is_infinite(),
        "certain failure with no fallback costs infinity: {l}"
    );
}

#[test]
fn linear_reading_of_a_step_curve_keeps_knots_and_sees_risk_between_them() {
    use hazardserve::survival::curve::{ConditionalSurvival, LinearCurve, StepCurve};
    let steps =
        StepCurve::new(vec![100.0, 200.0, 400.0], vec![0.8, 0.5, 0.25], Some(0.01)).unwrap();
    let lin = LinearCurve::new(steps.clone());
    for t in [100.0, 200.0, 400.0, 450.0, 1000.0] {
        assert_eq!(lin.survival(t), steps.survival(t), "t = {t}");
    }
    assert!((lin.survival(50.0) - 0.9).abs() < 1e-12);
    assert!((lin.survival(300.0) - 0.375).abs() < 1e-12);
    // Non-increasing everywhere.
    let mut prev = 1.0;
    for k in 0..2000 {
        let s = lin.survival(k as f64 * 0.37);
        assert!(s <= prev + 1e-15);
        prev = s;
    }
    // A 20-second horizon between knots: the step curve sees no risk, the linear one does.
    assert_eq!(steps.conditional(120.0, 20.0), 1.0);
    let c = lin.conditional(120.0, 20.0);
    assert!(c < 1.0 && c > 0.9, "{c}");
    // Past the support both follow the tail.
    assert!((lin.conditional(500.0, 100.0) - (-1.0f64).exp()).abs() < 1e-12);
}

#[test]
fn linear_curve_grid_equals_pointwise_conditionals() {
    use hazardserve::survival::curve::{ConditionalSurvival, LinearCurve, StepCurve};
    let times: Vec<f64> = (1..=50).map(|k| k as f64 * 37.0).collect();
    let surv: Vec<f64> = (1..=50).map(|k| (1.0 - k as f64 / 60.0).max(0.0)).collect();
    let lin = LinearCurve::new(StepCurve::new(times, surv, Some(0.002)).unwrap());
    for age in [0.0, 10.0, 36.9, 37.0, 500.0, 1849.0, 1850.0, 5000.0] {
        for step in [0.5, 7.0, 60.0, 400.0] {
            let mut grid = [0.0; 17];
            lin.conditional_grid(age, step, &mut grid);
            for (k, g) in grid.iter().enumerate() {
                let want = lin.conditional(age, k as f64 * step);
                assert!(
                    (g - want).abs() < 1e-12,
                    "age {age} step {step} k {k}: {g} vs {want}"
                );
            }
        }
    }
}
