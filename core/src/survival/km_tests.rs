//! Unit tests of `km.rs` (kept in their own file so the module reads as one idea).

use super::*;

#[test]
fn key_roundtrip_and_order() {
    let xs = [-1e300, -2.5, -1.0, -0.0, 0.0, 1e-300, 0.3, 1.0, 7.0, 1e300];
    for w in xs.windows(2) {
        assert!(f64_key(w[0]) <= f64_key(w[1]));
    }
    assert_eq!(f64_key(-0.0), f64_key(0.0));
    for &x in &xs {
        assert_eq!(key_f64(f64_key(x)), x + 0.0);
    }
}

#[test]
fn ties_small_hand_checked() {
    let t = [1.0, 2.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0, 5.0, 5.0, 5.0, 6.0];
    let e = [1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 1, 0].map(|x| x == 1);
    let f = KmFit::fit(&t, &e).unwrap();
    let v = f.view();
    assert_eq!(v.timeline(), &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(v.n_at_risk(), &[12, 12, 11, 8, 7, 5, 1]);
    assert_eq!(v.n_censored(), vec![0, 0, 1, 0, 1, 2, 1]);
    let s2 = 11.0 / 12.0 * (9.0 / 11.0);
    assert!((f.survival_at(2.5).unwrap() - s2).abs() < 1e-15);
    assert_eq!(f.survival_at(-0.5), None);
}

#[test]
fn km_answers_every_edge_like_its_step_curve() {
    use crate::survival::curve::{assert_edges, StepCurve};
    // S reaches 0 at the last event (t = 3); then a curve whose last time is censored
    for (t, e) in [
        ([1.0, 2.0, 3.0], [true, true, true]),
        ([1.0, 2.0, 3.0], [true, true, false]),
    ] {
        let f = KmFit::fit(&t, &e).unwrap();
        let v = f.view();
        let ages = [0.0, 1.5, 3.0, 10.0];
        assert_edges("km fit", &f, &ages);
        assert_edges("km view", &v, &ages);
        let steps =
            StepCurve::new(v.timeline().to_vec(), v.survival_values().to_vec(), None).unwrap();
        for &a in &ages {
            for &h in &[0.0, 0.5, 1.0, 2.5, 100.0] {
                assert_eq!(v.conditional(a, h), steps.conditional(a, h), "a {a} h {h}");
                assert_eq!(
                    v.conditional_checked(a, h),
                    steps.conditional_checked(a, h),
                    "a {a} h {h}"
                );
            }
        }
        // past the last time: flat (1); where S = 0 lifelines leaves it undefined
        assert_eq!(v.conditional(10.0, 5.0), 1.0);
        assert_eq!(v.conditional_checked(10.0, 5.0).is_none(), e[2]);
        assert_eq!(
            v.conditional_checked(10.0, 5.0).is_none(),
            v.conditional_survival_at(10.0, 15.0).is_none()
        );
    }
}

#[test]
fn grouped_equals_single() {
    let t = [3.0, 1.0, 2.0, 5.0, 2.0, 4.0, 0.5];
    let e = [true, false, true, true, true, false, true];
    let g = [1u32, 0, 1, 0, 1, 2, 2];
    let gk = GroupedKm::fit(&g, &SurvivalData::new(&t, &e), Some(4)).unwrap();
    for grp in 0..3u32 {
        let (tt, ee): (Vec<f64>, Vec<bool>) = g
            .iter()
            .zip(t.iter().zip(&e))
            .filter(|(&x, _)| x == grp)
            .map(|(_, (&a, &b))| (a, b))
            .unzip();
        let single = KmFit::fit(&tt, &ee).unwrap();
        let v = gk.group(grp as usize).unwrap();
        assert_eq!(v.table(), single.view().table());
    }
    assert!(gk.group(3).is_none());
}
