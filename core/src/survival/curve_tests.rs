//! Unit tests of `curve.rs` (kept in their own file so the module reads as one idea).

use super::*;

/// Test helper: asserts the documented edge answers of the [module docs](super) for `c` at
/// each of `ages` (include 0, ages past the last knot and ages where `S = 0`).
pub(crate) fn assert_edges(name: &str, c: &dyn ConditionalSurvival, ages: &[f64]) {
    let horizons = [1e-9, 0.5, 3.0, 60.0, 1e4, 1e9];
    for &t in &[-1.0, f64::NAN, f64::NEG_INFINITY] {
        assert_eq!(c.survival(t), 1.0, "{name}: S({t})");
    }
    for &t in &[0.0, -0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
        for &a in ages {
            assert_eq!(c.conditional(a, t), 1.0, "{name}: S({t} | {a})");
        }
    }
    for &t in &horizons {
        // negative and NaN ages read as 0
        let c0 = c.conditional(0.0, t);
        assert_eq!(
            c.conditional(-3.0, t).to_bits(),
            c0.to_bits(),
            "{name}: age -3"
        );
        assert_eq!(
            c.conditional(f64::NAN, t).to_bits(),
            c0.to_bits(),
            "{name}: NaN age"
        );
        // a = 0: S(t) / S(0)
        let want = c.survival(t) / c.survival(0.0);
        assert!(
            (c0 - want).abs() < 1e-9,
            "{name}: S({t} | 0) = {c0}, want {want}"
        );
    }
    let mut grid = [0.0; GRID_POINTS];
    for &a in ages {
        let sa = c.survival(a);
        for &t in &horizons {
            let v = c.conditional(a, t);
            assert!((0.0..=1.0).contains(&v), "{name}: S({t} | {a}) = {v}");
            match c.conditional_checked(a, t) {
                Some(x) => assert_eq!(x.to_bits(), v.to_bits(), "{name}: checked at {a}"),
                None => {
                    assert_eq!(sa, 0.0, "{name}: checked None with S({a}) = {sa}");
                    let want = tail(c.tail_hazard(), t);
                    assert_eq!(v, want, "{name}: S({t} | {a}) past the support");
                }
            }
            if sa > 1e-250 {
                let ratio = (c.survival(a + t) / sa).clamp(0.0, 1.0);
                assert!(
                    (v - ratio).abs() < 1e-9,
                    "{name}: S({t} | {a}) = {v} vs {ratio}"
                );
            }
        }
        for &step in &[0.0, 0.25, 7.0, 1e5] {
            c.conditional_grid(a, step, &mut grid);
            for (k, g) in grid.iter().enumerate() {
                let want = c.conditional(a, k as f64 * step);
                assert!(
                    (g - want).abs() < 1e-12,
                    "{name}: grid age {a} step {step} k {k}: {g} vs {want}"
                );
            }
        }
    }
}

#[test]
fn exponential_edges() {
    let e = Exponential { mean: 100.0 };
    assert_edges("exp", &e, &[0.0, 50.0, 1e6]);
    assert_eq!(e.tail_hazard(), 0.01);
    assert!((e.conditional(1e6, 10.0) - (-0.1f64).exp()).abs() < 1e-15);
    // memoryless even where S(a) underflows
    assert_eq!(
        e.conditional_checked(1e6, 10.0),
        Some(e.conditional(0.0, 10.0))
    );
    // a non-positive mean fails at once: S(a) = 0 for a > 0, the tail hazard is infinite
    let dead = Exponential { mean: 0.0 };
    assert_edges("exp0", &dead, &[0.0, 5.0]);
    assert_eq!(dead.conditional(5.0, 1.0), 0.0);
    assert_eq!(dead.conditional_checked(5.0, 1.0), None);
    assert_edges("exp_inf", &Exponential::from_rate(0.0), &[0.0, 1e9]);
}

#[test]
fn weibull_edges() {
    for (k, scale) in [(0.5, 1000.0), (1.0, 10.0), (2.0, 1.0), (f64::NAN, 1.0)] {
        let w = Weibull { shape: k, scale };
        assert_edges("weibull", &w, &[0.0, 3.0, 1e3, 1e6]);
    }
    // S(100) underflows for k = 2, scale 1, but the conditional is exact and defined
    let w = Weibull {
        shape: 2.0,
        scale: 1.0,
    };
    assert_eq!(w.survival(100.0), 0.0);
    let want = (1e4f64 - 100.001f64.powi(2)).exp();
    assert!((w.conditional(100.0, 0.001) - want).abs() < 1e-9);
    assert_eq!(
        w.conditional_checked(100.0, 0.001),
        Some(w.conditional(100.0, 0.001))
    );
    assert_eq!(w.tail_hazard(), f64::INFINITY);
}

#[test]
fn step_curve_edges() {
    // last knot at S > 0, with a tail: past it the tail's exponential
    let c = StepCurve::new(vec![10.0, 20.0], vec![0.5, 0.25], Some(0.1)).unwrap();
    assert_edges("step", &c, &[0.0, 10.0, 15.0, 20.0, 25.0, 1e5]);
    assert!((c.conditional(20.0, 5.0) - (-0.5f64).exp()).abs() < 1e-12);
    assert!((c.conditional(1e5, 5.0) - (-0.5f64).exp()).abs() < 1e-12);
    // a = 0 is S(t)
    assert_eq!(c.conditional(0.0, 15.0), 0.5);
    // S reaches 0: the tail from there, checked says undefined
    let z = StepCurve::new(vec![10.0, 20.0], vec![0.5, 0.0], Some(0.2)).unwrap();
    assert_edges("step0", &z, &[0.0, 19.0, 20.0, 30.0]);
    assert_eq!(z.conditional(30.0, 5.0), (-1.0f64).exp());
    assert_eq!(z.conditional_checked(30.0, 5.0), None);
    // without a tail the curve is flat past its support
    let flat = StepCurve::new(vec![10.0], vec![0.0], None).unwrap();
    assert_edges("flat", &flat, &[0.0, 10.0, 50.0]);
    assert_eq!(flat.conditional(50.0, 100.0), 1.0);
    assert_eq!(flat.conditional(50.0, f64::INFINITY), 1.0);
    // a drop at time 0: S(0) < 1 and the age-0 conditional divides by it
    let d0 = StepCurve::new(vec![0.0, 5.0], vec![0.8, 0.4], None).unwrap();
    assert_edges("drop0", &d0, &[0.0, 5.0, 6.0]);
    assert_eq!(d0.conditional(0.0, 5.0), 0.5);
    // no knot at all: the exponential with the tail rate, for S and for the conditional
    let e = StepCurve::new(vec![], vec![], Some(0.01)).unwrap();
    assert_edges("empty", &e, &[0.0, 7.0]);
    assert!((e.survival(100.0) - (-1.0f64).exp()).abs() < 1e-15);
}

#[test]
fn linear_curve_edges() {
    let steps = StepCurve::new(vec![10.0, 20.0], vec![0.5, 0.25], Some(0.1)).unwrap();
    let l = LinearCurve::new(steps);
    assert_edges("linear", &l, &[0.0, 5.0, 10.0, 20.0, 25.0, 1e5]);
    assert!((l.conditional(0.0, 5.0) - 0.75).abs() < 1e-12);
    assert!((l.conditional(30.0, 5.0) - (-0.5f64).exp()).abs() < 1e-12);
    let z = LinearCurve::new(StepCurve::new(vec![10.0], vec![0.0], Some(0.3)).unwrap());
    assert_edges("linear0", &z, &[0.0, 5.0, 10.0, 11.0]);
    assert_eq!(z.conditional(11.0, 1.0), (-0.3f64).exp());
    assert_eq!(z.conditional_checked(11.0, 1.0), None);
    let flat = LinearCurve::new(StepCurve::new(vec![10.0], vec![0.0], None).unwrap());
    assert_edges("linear_flat", &flat, &[0.0, 10.0, 11.0]);
    assert_eq!(flat.conditional(11.0, 1.0), 1.0);
}

#[test]
fn exponential_grid_matches_pointwise() {
    let e = Exponential { mean: 100.0 };
    let mut g = [0.0; GRID_POINTS];
    e.conditional_grid(50.0, 3.0, &mut g);
    for (k, v) in g.iter().enumerate() {
        assert!((v - (-(k as f64) * 3.0 / 100.0).exp()).abs() < 1e-12);
    }
}

#[test]
fn weibull_grid_matches_ratio() {
    let w = Weibull {
        shape: 0.7,
        scale: 1000.0,
    };
    let mut g = [0.0; GRID_POINTS];
    w.conditional_grid(200.0, 10.0, &mut g);
    for (k, v) in g.iter().enumerate() {
        let r = w.survival(200.0 + 10.0 * k as f64) / w.survival(200.0);
        assert!((v - r).abs() < 1e-12, "{k}: {v} vs {r}");
    }
}

#[test]
fn step_curve_is_right_continuous_with_tail() {
    let c = StepCurve::new(vec![10.0, 20.0], vec![0.5, 0.25], Some(0.1)).unwrap();
    assert_eq!(c.survival(9.999), 1.0);
    assert_eq!(c.survival(10.0), 0.5);
    assert_eq!(c.survival(19.0), 0.5);
    assert_eq!(c.survival(20.0), 0.25);
    assert!((c.survival(30.0) - 0.25 * (-1.0f64).exp()).abs() < 1e-12);
    assert!((c.conditional(25.0, 5.0) - (-0.5f64).exp()).abs() < 1e-12);
    assert!((c.conditional(5.0, 10.0) - 0.5).abs() < 1e-12);
    let flat = StepCurve::new(vec![10.0], vec![0.0], None).unwrap();
    assert_eq!(flat.conditional(50.0, 100.0), 1.0);
}

#[test]
fn step_grid_matches_pointwise() {
    let times: Vec<f64> = (1..=300).map(|i| i as f64 * 7.0).collect();
    let surv: Vec<f64> = (1..=300).map(|i| 1.0 - i as f64 / 301.0).collect();
    let c = StepCurve::new(times, surv, Some(0.001)).unwrap();
    let mut g = [0.0; GRID_POINTS];
    for &(age, step) in &[
        (0.0, 1.0),
        (3.5, 50.0),
        (600.0, 0.3),
        (2090.0, 5.0),
        (5000.0, 9.0),
    ] {
        c.conditional_grid(age, step, &mut g);
        for (k, v) in g.iter().enumerate() {
            let want = c.conditional(age, k as f64 * step);
            assert!(
                (v - want).abs() < 1e-12,
                "age {age} step {step} k {k}: {v} vs {want}"
            );
        }
    }
}

#[test]
fn step_curve_rejects_bad_input() {
    assert!(StepCurve::new(vec![1.0], vec![], None).is_err());
    assert!(StepCurve::new(vec![2.0, 1.0], vec![0.9, 0.8], None).is_err());
    assert!(StepCurve::new(vec![1.0, 2.0], vec![0.8, 0.9], None).is_err());
    assert!(StepCurve::new(vec![1.0], vec![0.8], Some(-1.0)).is_err());
}

#[test]
fn weibull_tail_continues_the_curve_and_keeps_old_nodes_safe() {
    let steps = StepCurve::new(vec![100.0, 200.0], vec![0.8, 0.5], Some(0.01)).unwrap();
    let c = WeibullTail::new(steps.clone(), 200.0, 0.5, 400.0).unwrap();
    assert_edges("weibull-tail", &c, &[0.0, 150.0, 200.0, 1e5]);
    // The curve itself up to its last knot, continuous there, non-increasing after it.
    assert_eq!(c.survival(150.0), steps.survival(150.0));
    assert_eq!(c.survival(200.0), 0.5);
    let mut prev = 0.5;
    for t in [200.001, 300.0, 1_000.0, 1e5] {
        let s = c.survival(t);
        assert!(s <= prev && s > 0.0, "S({t}) = {s}");
        prev = s;
    }
    // A decreasing hazard past the knot: an older node survives the next 100 s more often,
    // which the exponential tail (the same for every age) cannot say.
    let young = c.conditional(300.0, 100.0);
    let old = c.conditional(5_000.0, 100.0);
    assert!(old > young, "old {old} young {young}");
    assert_eq!(
        steps.conditional(300.0, 100.0),
        steps.conditional(5_000.0, 100.0)
    );
    // The grid agrees with the pointwise answers.
    let mut g = [0.0; GRID_POINTS];
    c.conditional_grid(250.0, 30.0, &mut g);
    for (k, &v) in g.iter().enumerate() {
        assert!((v - c.conditional(250.0, k as f64 * 30.0)).abs() < 1e-12);
    }
    assert!(WeibullTail::new(steps, 200.0, 0.0, 1.0).is_none());
}
