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

/// The two-core single-curve fit against the serial packed one: every column bit for bit.
fn assert_split_is_serial(t: &[f64], e: &[bool]) {
    let (split, _) = split::fit_split(t, e, None).expect("one sign");
    let (serial, _) = fit_packed(None, t, e, 1).expect("one sign");
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&split.time), bits(&serial.time));
    assert_eq!(split.n_at_risk, serial.n_at_risk);
    assert_eq!(split.n_event, serial.n_event);
    assert_eq!(bits(&split.survival), bits(&serial.survival));
}

#[test]
fn split_fit_is_the_serial_fit_at_scale() {
    // Above the size from which fit_data takes it: many ties, a run of zeros, everyone
    // leaving at the last time.
    let n = split::SPLIT_ROWS * 2 + 7;
    let t: Vec<f64> = (0..n).map(|i| ((i * 7919) % 4001) as f64 * 0.25).collect();
    let e: Vec<bool> = (0..n).map(|i| (i * 31) % 10 < 7).collect();
    assert_split_is_serial(&t, &e);
    assert_eq!(
        KmFit::fit(&t, &e).unwrap().view().table(),
        KmFit::fit_data(&SurvivalData::new(&t, &e))
            .unwrap()
            .view()
            .table()
    );
    let last = t.iter().cloned().fold(0.0, f64::max);
    let all: Vec<bool> = vec![true; n];
    let (fit, _) = split::fit_split(&t, &all, None).unwrap();
    assert_eq!(*fit.time.last().unwrap(), last);
    assert_eq!(*fit.survival.last().unwrap(), 0.0);
    assert_split_is_serial(&t, &all);
}

proptest::proptest! {
    #[test]
    fn split_fit_is_the_serial_fit(
        raw in proptest::collection::vec((0u32..40, proptest::bool::ANY), 1..300),
        negative in proptest::bool::ANY,
        offset in 0u32..3,
    ) {
        // Few distinct times (ties across the split), zero included, or all negative.
        let t: Vec<f64> = raw
            .iter()
            .map(|&(x, _)| {
                let v = f64::from(x + offset) * 0.5;
                if negative { -v - 0.25 } else { v }
            })
            .collect();
        let e: Vec<bool> = raw.iter().map(|&(_, b)| b).collect();
        assert_split_is_serial(&t, &e);
    }
}

#[test]
fn split_fit_refuses_mixed_signs_and_takes_one_row() {
    assert!(split::fit_split(&[-1.0, 2.0], &[true, true], None).is_none());
    assert!(split::fit_split(&[], &[], None).is_none());
    assert_split_is_serial(&[3.0], &[true]);
    assert_split_is_serial(&[0.0], &[false]);
    assert_split_is_serial(&[-0.0, 0.0], &[true, false]);
}

#[test]
fn interval_with_the_fit_is_the_views_interval() {
    // Large enough for the one-pass interval, with ties, a curve that reaches 0, and z = 1.5.
    let n = split::SPLIT_ROWS + 11;
    let t: Vec<f64> = (0..n).map(|i| ((i * 104_729) % 9_973) as f64).collect();
    for e in [
        (0..n).map(|i| (i * 17) % 10 < 6).collect::<Vec<bool>>(),
        vec![true; n],
    ] {
        let data = SurvivalData::new(&t, &e);
        let (fit, lower, upper) = KmFit::fit_with_interval(&data, 1.5).unwrap();
        let plain = KmFit::fit_data(&data).unwrap();
        assert_eq!(fit.view().table(), plain.view().table());
        let (lo, up) = plain.view().confidence_interval(1.5);
        assert_eq!((lower.len(), upper.len()), (lo.len(), up.len()));
        for (a, b) in lower.iter().chain(&upper).zip(lo.iter().chain(&up)) {
            assert!(
                (a - b).abs() <= 1e-13 * b.abs().max(1e-300),
                "{a} against {b}"
            );
        }
        assert!(lower.iter().zip(&upper).all(|(l, u)| l <= u));
    }
    // Small, left-truncated or weighted data take the view's interval itself.
    let (t, e, en) = ([1.0, 2.0, 3.0], [true, false, true], [0.0, 0.5, 0.0]);
    let data = SurvivalData::new(&t, &e).with_entry(&en);
    let (fit, lower, upper) = KmFit::fit_with_interval(&data, 1.96).unwrap();
    assert_eq!((lower, upper), fit.view().confidence_interval(1.96));
}
