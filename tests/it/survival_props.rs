//! Property tests of the Kaplan–Meier estimator (`hazardserve::survival::km`).

use proptest::prelude::*;

use hazardserve::survival::km::{GroupedKm, KmFit};
use hazardserve::survival::{ConditionalSurvival, SurvivalData, SurvivalError};

/// Durations on a coarse grid (many ties, event/censor ties) or continuous.
fn durations(max_len: usize) -> impl Strategy<Value = Vec<f64>> {
    prop_oneof![
        prop::collection::vec((0u32..12).prop_map(|x| x as f64), 1..max_len),
        prop::collection::vec(0.0f64..100.0, 1..max_len),
        prop::collection::vec((-5i32..20).prop_map(|x| x as f64 * 0.5), 1..max_len),
    ]
}

fn rows(max_len: usize) -> impl Strategy<Value = (Vec<f64>, Vec<bool>)> {
    durations(max_len).prop_flat_map(|t| {
        let n = t.len();
        (Just(t), prop::collection::vec(any::<bool>(), n))
    })
}

/// Rows with entry times e = T·u (u ∈ [0, 1], some exactly 0, some equal to T).
fn truncated_rows(max_len: usize) -> impl Strategy<Value = (Vec<f64>, Vec<bool>, Vec<f64>)> {
    prop::collection::vec((0u32..30, any::<bool>(), 0u32..5), 1..max_len).prop_map(|v| {
        let t: Vec<f64> = v.iter().map(|r| 1.0 + r.0 as f64).collect();
        let e: Vec<bool> = v.iter().map(|r| r.1).collect();
        let en: Vec<f64> = v
            .iter()
            .zip(&t)
            .map(|(r, &t)| (t * r.2 as f64 / 5.0).floor())
            .collect();
        (t, e, en)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn survival_is_non_increasing_in_unit_interval((t, e) in rows(80)) {
        let km = KmFit::fit(&t, &e).unwrap();
        let s = km.survival_values();
        prop_assert!(s.iter().all(|&x| (0.0..=1.0).contains(&x)));
        prop_assert!(s.windows(2).all(|w| w[1] <= w[0]));
        prop_assert_eq!(s[0], 1.0_f64.min(s[0]));
        let tab = km.view().table();
        prop_assert!(tab.ci_lower.iter().zip(&tab.survival).all(|(&l, &s)| l <= s + 1e-15));
        prop_assert!(tab.ci_upper.iter().zip(&tab.survival).all(|(&u, &s)| u >= s - 1e-15 && u <= 1.0));
    }

    #[test]
    fn the_median_interval_brackets_the_median((t, e) in rows(80)) {
        use hazardserve::fit::{pooled_curve, SourceSessions};
        use hazardserve::survival::validate::SurvivalSession;
        let data = SourceSessions {
            node_ids: vec!["n".into()],
            node_groups: vec!["all".into()],
            sessions: t
                .iter()
                .zip(&e)
                .map(|(&t, &e)| SurvivalSession::new(0, 0.0, t, e))
                .collect(),
            ..SourceSessions::default()
        };
        let p = pooled_curve(&data).unwrap();
        let km = KmFit::fit(&t, &e).unwrap();
        let (lo, hi) = p.median_ci();
        match km.median() {
            Some(m) => {
                let lo = lo.expect("the lower edge falls first");
                prop_assert!(lo <= m, "{lo} > {m}");
                if let Some(hi) = hi {
                    prop_assert!(hi >= m, "{hi} < {m}");
                }
            }
            // Not reached: the upper edge is never at 0.5 either.
            None => prop_assert!(hi.is_none()),
        }
    }

    #[test]
    fn truncated_survival_is_non_increasing((t, e, en) in truncated_rows(60)) {
        let km = KmFit::fit_data(&SurvivalData::new(&t, &e).with_entry(&en)).unwrap();
        let s = km.survival_values();
        prop_assert!(s.iter().all(|&x| (0.0..=1.0).contains(&x)));
        prop_assert!(s.windows(2).all(|w| w[1] <= w[0]));
        // counts are consistent: Σ entered = Σ events + Σ censored = n
        let v = km.view();
        let entered: u64 = v.n_entered().iter().map(|&x| x as u64).sum();
        let removed: u64 = v.n_event().iter().chain(&v.n_censored()).map(|&x| x as u64).sum();
        prop_assert_eq!(entered, t.len() as u64);
        prop_assert_eq!(removed, t.len() as u64);
    }

    #[test]
    fn no_censoring_is_one_minus_ecdf(t in durations(80), q in prop::collection::vec(-10.0f64..110.0, 1..20)) {
        let e = vec![true; t.len()];
        let km = KmFit::fit(&t, &e).unwrap();
        let n = t.len() as f64;
        let origin = t.iter().cloned().fold(0.0, f64::min);
        let probe: Vec<f64> = km.timeline().iter().cloned().chain(q).collect();
        for x in probe {
            let want = t.iter().filter(|&&ti| ti > x).count() as f64 / n;
            match km.survival_at(x) {
                Some(s) => prop_assert!((s - want).abs() <= 1e-12, "S({}) = {} vs {}", x, s, want),
                None => prop_assert!(x < origin),
            }
        }
    }

    #[test]
    fn shuffling_changes_nothing((t, e) in rows(80), seed in any::<u64>()) {
        let mut idx: Vec<usize> = (0..t.len()).collect();
        let mut s = seed | 1;
        for i in (1..idx.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            idx.swap(i, (s % (i as u64 + 1)) as usize);
        }
        let t2: Vec<f64> = idx.iter().map(|&i| t[i]).collect();
        let e2: Vec<bool> = idx.iter().map(|&i| e[i]).collect();
        let a = KmFit::fit(&t, &e).unwrap();
        let b = KmFit::fit(&t2, &e2).unwrap();
        prop_assert_eq!(a.view().table(), b.view().table());
    }

    #[test]
    fn integer_weights_equal_replication((t, e) in rows(40), w in prop::collection::vec(0u32..4, 40)) {
        let w = &w[..t.len()];
        prop_assume!(w.iter().any(|&x| x > 0));
        let weighted = KmFit::fit_data(&SurvivalData::new(&t, &e).with_weights(w)).unwrap();
        let (mut tr, mut er) = (Vec::new(), Vec::new());
        for i in 0..t.len() {
            for _ in 0..w[i] {
                tr.push(t[i]);
                er.push(e[i]);
            }
        }
        let replicated = KmFit::fit(&tr, &er).unwrap();
        prop_assert_eq!(weighted.view().table(), replicated.view().table());
    }

    #[test]
    fn weights_equal_replication_with_entry((t, e, en) in truncated_rows(30), w in prop::collection::vec(0u32..3, 30)) {
        let w = &w[..t.len()];
        prop_assume!(w.iter().any(|&x| x > 0));
        let weighted = KmFit::fit_data(&SurvivalData::new(&t, &e).with_entry(&en).with_weights(w)).unwrap();
        let (mut tr, mut er, mut nr) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..t.len() {
            for _ in 0..w[i] {
                tr.push(t[i]);
                er.push(e[i]);
                nr.push(en[i]);
            }
        }
        let replicated = KmFit::fit_data(&SurvivalData::new(&tr, &er).with_entry(&nr)).unwrap();
        prop_assert_eq!(weighted.view().table(), replicated.view().table());
    }

    #[test]
    fn grouped_fit_equals_separate_fits((t, e) in rows(120), g in prop::collection::vec(0u32..7, 120)) {
        let g = &g[..t.len()];
        let grouped = GroupedKm::fit(g, &SurvivalData::new(&t, &e), Some(7)).unwrap();
        for grp in 0..7u32 {
            let (tt, ee): (Vec<f64>, Vec<bool>) =
                g.iter().zip(t.iter().zip(&e)).filter(|(&x, _)| x == grp).map(|(_, (&a, &b))| (a, b)).unzip();
            match grouped.group(grp as usize) {
                None => prop_assert!(tt.is_empty()),
                Some(v) => prop_assert_eq!(v.table(), KmFit::fit(&tt, &ee).unwrap().view().table()),
            }
        }
    }

    #[test]
    fn grouped_truncated_fit_equals_separate_fits(
        (t, e, en) in truncated_rows(90),
        g in prop::collection::vec(0u32..5, 90),
    ) {
        let g = &g[..t.len()];
        let data = SurvivalData::new(&t, &e).with_entry(&en);
        let grouped = GroupedKm::fit(g, &data, Some(5)).unwrap();
        for grp in 0..5u32 {
            let idx: Vec<usize> = (0..t.len()).filter(|&i| g[i] == grp).collect();
            let tt: Vec<f64> = idx.iter().map(|&i| t[i]).collect();
            let ee: Vec<bool> = idx.iter().map(|&i| e[i]).collect();
            let nn: Vec<f64> = idx.iter().map(|&i| en[i]).collect();
            match grouped.group(grp as usize) {
                None => prop_assert!(tt.is_empty()),
                Some(v) => {
                    let single = KmFit::fit_data(&SurvivalData::new(&tt, &ee).with_entry(&nn)).unwrap();
                    prop_assert_eq!(v.table(), single.view().table());
                    prop_assert_eq!(v.risk_set_gap(), single.view().risk_set_gap());
                }
            }
        }
    }

    #[test]
    fn conditional_is_a_survival_curve((t, e) in rows(60), a in 0.0f64..50.0) {
        let km = KmFit::fit(&t, &e).unwrap();
        let v = km.view();
        let sa = v.survival(a);
        prop_assume!(sa > 0.0);
        let mut out = [0.0; hazardserve::survival::curve::GRID_POINTS];
        v.conditional_grid(a, 3.0, &mut out);
        prop_assert_eq!(out[0], 1.0);
        prop_assert!(out.windows(2).all(|w| w[1] <= w[0]));
        prop_assert!(out.iter().all(|&x| (0.0..=1.0).contains(&x)));
        // jumps + tail mass + (1 - S(first event after a)...) account for all mass
        let jumps = v.jumps_after(a).unwrap();
        let total: f64 = jumps.iter().map(|j| j.mass).sum::<f64>() + v.tail_mass(a).unwrap();
        prop_assert!((total - 1.0).abs() < 1e-9, "mass {}", total);
    }
}

#[test]
fn input_errors() {
    let t = [1.0, f64::NAN];
    let e = [true, false];
    assert_eq!(
        KmFit::fit(&t, &e).unwrap_err(),
        SurvivalError::NanDuration { index: 1 }
    );
    assert!(matches!(
        KmFit::fit(&[1.0], &[true, false]).unwrap_err(),
        SurvivalError::LengthMismatch { .. }
    ));
    assert_eq!(KmFit::fit(&[], &[]).unwrap_err(), SurvivalError::Empty);
    let err =
        KmFit::fit_data(&SurvivalData::new(&[1.0, 2.0], &[true, true]).with_entry(&[0.0, 3.0]))
            .unwrap_err();
    assert!(matches!(
        err,
        SurvivalError::EntryAfterDuration { index: 1, .. }
    ));
    assert!(matches!(
        KmFit::fit(&[f64::INFINITY], &[true]).unwrap_err(),
        SurvivalError::NonFinite { .. }
    ));
    assert_eq!(
        KmFit::fit_data(&SurvivalData::new(&[1.0], &[true]).with_weights(&[0])).unwrap_err(),
        SurvivalError::Empty
    );
    // entry == duration is accepted (as lifelines)
    assert!(KmFit::fit_data(
        &SurvivalData::new(&[1.0, 2.0], &[true, true]).with_entry(&[0.0, 2.0])
    )
    .is_ok());
}

#[test]
fn last_censored_does_not_drop_to_zero_and_shift_invariance() {
    let t = [1.0, 2.0, 3.0, 4.0];
    let e = [true, true, true, false];
    let km = KmFit::fit(&t, &e).unwrap();
    assert_eq!(km.survival_at(100.0), Some(0.25));
    let shifted: Vec<f64> = t.iter().map(|x| x - 10.0).collect();
    let k2 = KmFit::fit(&shifted, &e).unwrap();
    // with negative times the origin moves to min(T); values are unchanged
    assert_eq!(k2.timeline()[0], -9.0);
    for (a, b) in km.survival_values()[1..].iter().zip(k2.survival_values()) {
        assert!((a - b).abs() < 1e-15);
    }
}

#[test]
fn large_sample_runs_and_matches_small_sort_path() {
    // exercises the radix-sort path (n >= 512) against a replicated small problem
    let n = 20_000usize;
    let mut s = 88172645463325252u64;
    let mut t = Vec::with_capacity(n);
    let mut e = Vec::with_capacity(n);
    for _ in 0..n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        t.push(((s >> 11) % 1000) as f64 / 10.0 - 20.0);
        e.push(!s.is_multiple_of(3));
    }
    let big = KmFit::fit(&t, &e).unwrap();
    // same data, weights path (sort_unstable on pairs)
    let w = vec![1u32; n];
    let weighted = KmFit::fit_data(&SurvivalData::new(&t, &e).with_weights(&w)).unwrap();
    assert_eq!(big.view().table(), weighted.view().table());
}
