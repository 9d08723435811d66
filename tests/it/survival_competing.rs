//! Competing risks (`hazardserve::survival::competing`) and interval censoring
//! (`hazardserve::survival::interval`) against the lifelines 0.30.3 golden cases of
//! `shared/survival-golden/cases-v2` (tolerances from its README), and their properties on
//! generated data.

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use hazardserve::survival::competing::aalen_johansen;
use hazardserve::survival::interval::{turnbull, Bounds, TurnbullOptions};
use hazardserve::survival::km::KmFit;
use hazardserve::survival::SurvivalData;

use crate::common::shared;

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// An array of numbers; `null` reads as NaN.
fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap_or(f64::NAN))
        .collect()
}

/// An array of bounds; `null` reads as +inf.
fn bounds(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap_or(f64::INFINITY))
        .collect()
}

/// Equal within `abs` or `rel`, and NaN exactly where the golden value is null.
fn close_all(got: &[f64], want: &[f64], rel: f64, abs: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() {
            assert!(g.is_nan(), "{what}[{i}]: got {g}, want null");
            continue;
        }
        assert!(
            (g - w).abs() <= abs.max(rel * w.abs()),
            "{what}[{i}]: got {g}, want {w}"
        );
    }
}

/// Every Aalen-Johansen fit of the golden files: timeline and counts exactly, overall
/// survival and each cause's incidence to 1e-12, variance relative 1e-10, interval to 1e-12
/// (null exactly where lifelines' is), and each cause's Nelson-Aalen cumulative hazard (smoothed:
/// relative 1e-11 and variance 1e-8; discrete: 1e-12), including ties across causes, left
/// truncation, events at the origin and a lifetime cap where everyone at risk ends.
#[test]
fn aalen_johansen_equals_lifelines() {
    let Some(dir) = shared("survival-golden") else {
        return;
    };
    let mut fits = 0;
    for file in [
        "cr_small_ties.json",
        "cr_node_sessions.json",
        "cr_left_truncated.json",
        "cr_bmt.json",
    ] {
        let case = load(&dir.join("cases-v2").join(file));
        for fit in case["fits"].as_array().expect("fits") {
            let what = format!("{file} {}", fit["name"]);
            let input = &fit["input"];
            let durations = floats(&input["durations"]);
            let causes: Vec<u32> = floats(&input["causes"]).iter().map(|&c| c as u32).collect();
            let entry = input["entry"].is_array().then(|| floats(&input["entry"]));
            let got = aalen_johansen(&durations, &causes, entry.as_deref()).expect(&what);
            let out = &fit["output"];
            assert_eq!(got.timeline, floats(&out["timeline"]), "{what} timeline");
            let ints = |v: &Value| -> Vec<u32> { floats(v).iter().map(|&x| x as u32).collect() };
            assert_eq!(got.n_at_risk, ints(&out["n_at_risk"]), "{what} at risk");
            assert_eq!(got.n_event_any, ints(&out["n_event_any"]), "{what} events");
            close_all(
                &got.overall_survival,
                &floats(&out["overall_survival"]),
                0.0,
                1e-12,
                &format!("{what} S"),
            );
            let want_causes = out["causes"].as_object().expect("causes");
            assert_eq!(got.causes.len(), want_causes.len(), "{what} causes");
            for (code, c) in want_causes {
                let code: u32 = code.parse().expect("a cause code");
                let g = got
                    .cause(code)
                    .unwrap_or_else(|| panic!("{what}: no cause {code}"));
                let w = format!("{what} cause {code}");
                assert_eq!(g.n_event, ints(&c["n_event"]), "{w} events");
                close_all(&g.cif, &floats(&c["cif"]), 0.0, 1e-12, &format!("{w} cif"));
                close_all(
                    &g.variance,
                    &floats(&c["variance"]),
                    1e-10,
                    1e-300,
                    &format!("{w} variance"),
                );
                close_all(
                    &g.ci_lower,
                    &floats(&c["ci_lower"]),
                    0.0,
                    1e-12,
                    &format!("{w} lo"),
                );
                close_all(
                    &g.ci_upper,
                    &floats(&c["ci_upper"]),
                    0.0,
                    1e-12,
                    &format!("{w} hi"),
                );
                let na = &c["nelson_aalen"];
                close_all(
                    &g.nelson_aalen.cumulative_hazard,
                    &floats(&na["cumulative_hazard"]),
                    1e-11,
                    1e-300,
                    &format!("{w} NA"),
                );
                close_all(
                    &g.nelson_aalen.variance,
                    &floats(&na["variance"]),
                    1e-8,
                    1e-300,
                    &format!("{w} NA variance"),
                );
                let nd = &na["discrete"];
                close_all(
                    &g.nelson_aalen_discrete.cumulative_hazard,
                    &floats(&nd["cumulative_hazard"]),
                    0.0,
                    1e-12,
                    &format!("{w} NA discrete"),
                );
                close_all(
                    &g.nelson_aalen_discrete.variance,
                    &floats(&nd["variance"]),
                    0.0,
                    1e-12,
                    &format!("{w} NA discrete variance"),
                );
            }
            fits += 1;
        }
    }
    assert!(fits >= 5, "only {fits} competing-risk fits read");
}

/// Every NPMLE of the golden files: the Turnbull intervals exactly; the probabilities and both
/// survival columns within 1e-6 of the converged reference and the log-likelihood at least the
/// reference's - 1e-6 (for the closed tick case, where the maximiser is not unique, only the
/// log-likelihood); for the half-open tick case, the exact grouped product-limit estimate to 1e-9.
#[test]
fn turnbull_equals_the_converged_npmle() {
    let Some(dir) = shared("survival-golden") else {
        return;
    };
    let mut fits = 0;
    for file in [
        "interval_small.json",
        "interval_mice.json",
        "interval_tick_weibull.json",
    ] {
        let case = load(&dir.join("cases-v2").join(file));
        for fit in case["fits"].as_array().expect("fits") {
            let name = fit["name"].as_str().expect("a name");
            let what = format!("{file} {name}");
            let shift = fit["input"]["lower_shift_for_open_intervals"]
                .as_f64()
                .unwrap_or(0.0);
            let lower: Vec<f64> = floats(&fit["input"]["lower"])
                .iter()
                .map(|l| l + shift)
                .collect();
            let upper = bounds(&fit["input"]["upper"]);
            let got =
                turnbull(&lower, &upper, Bounds::Closed, &TurnbullOptions::default()).expect(&what);
            assert!(
                got.converged,
                "{what}: not converged ({})",
                got.kkt_violation
            );
            let out = &fit["output"];
            let want_iv: Vec<(f64, f64)> = out["turnbull_intervals"]
                .as_array()
                .expect("intervals")
                .iter()
                .map(|p| {
                    (
                        p[0].as_f64().expect("left"),
                        p[1].as_f64().unwrap_or(f64::INFINITY),
                    )
                })
                .collect();
            let got_iv: Vec<(f64, f64)> =
                got.intervals.iter().map(|iv| (iv.left, iv.right)).collect();
            assert_eq!(got_iv, want_iv, "{what} Turnbull intervals");
            let r = &fit["reference"];
            let ll = r["log_likelihood"].as_f64().expect("log-likelihood");
            assert!(
                got.log_likelihood >= ll - 1e-6,
                "{what}: log-likelihood {} < reference {ll}",
                got.log_likelihood
            );
            assert_eq!(got.timeline, floats(&out["timeline"]), "{what} timeline");
            if name != "closed_as_given" {
                close_all(
                    &got.probabilities,
                    &floats(&r["probabilities"]),
                    0.0,
                    1e-6,
                    &format!("{what} p"),
                );
                let (up, lo) = got.curves();
                close_all(
                    &up,
                    &floats(&r["survival_upper"]),
                    0.0,
                    1e-6,
                    &format!("{what} upper"),
                );
                close_all(
                    &lo,
                    &floats(&r["survival_lower"]),
                    0.0,
                    1e-6,
                    &format!("{what} lower"),
                );
            }
            if r["probabilities_exact_grouped_km"].is_array() {
                close_all(
                    &got.probabilities,
                    &floats(&r["probabilities_exact_grouped_km"]),
                    0.0,
                    1e-9,
                    &format!("{what} grouped KM"),
                );
            }
            fits += 1;
        }
    }
    assert!(fits >= 6, "only {fits} interval-censored fits read");
}

/// The tick case fitted as half-open cells with [`Bounds::OpenLower`] (no shifted data) is the
/// same estimate as lifelines' shift workaround: the grouped product-limit estimate.
#[test]
fn open_lower_bounds_equal_the_shift_workaround() {
    let Some(dir) = shared("survival-golden") else {
        return;
    };
    let case = load(&dir.join("cases-v2").join("interval_tick_weibull.json"));
    let fits = case["fits"].as_array().expect("fits");
    let closed = fits
        .iter()
        .find(|f| f["name"] == "closed_as_given")
        .expect("the closed fit");
    let shifted = fits
        .iter()
        .find(|f| f["name"] == "open_lower_shifted")
        .expect("the shifted fit");
    let got = turnbull(
        &floats(&closed["input"]["lower"]),
        &bounds(&closed["input"]["upper"]),
        Bounds::OpenLower,
        &TurnbullOptions::default(),
    )
    .expect("fit");
    close_all(
        &got.probabilities,
        &floats(&shifted["reference"]["probabilities_exact_grouped_km"]),
        0.0,
        1e-9,
        "open-lower tick cells",
    );
}

fn arb_causes() -> impl Strategy<Value = Vec<(f64, u32, f64)>> {
    // (duration on a coarse grid so that ties happen, cause 0..=3, entry fraction)
    prop::collection::vec((1u32..40, 0u32..4, 0.0f64..1.0), 1..120).prop_map(|rows| {
        rows.into_iter()
            .map(|(t, c, e)| (f64::from(t), c, e))
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The incidences of all causes plus the all-cause survival sum to 1 at every time, with
    /// and without entry times; every incidence is non-decreasing and within [0, 1].
    #[test]
    fn incidences_and_survival_sum_to_one(rows in arb_causes(), truncate in any::<bool>()) {
        let d: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let c: Vec<u32> = rows.iter().map(|r| r.1).collect();
        let e: Vec<f64> = rows.iter().map(|r| (r.0 * r.2 * 0.9).floor()).collect();
        let fit = aalen_johansen(&d, &c, truncate.then_some(&e[..])).unwrap();
        for i in 0..fit.timeline.len() {
            let total: f64 = fit.overall_survival[i] + fit.causes.iter().map(|k| k.cif[i]).sum::<f64>();
            prop_assert!((total - 1.0).abs() < 1e-12, "row {i}: {total}");
            for k in &fit.causes {
                prop_assert!(k.cif[i] >= 0.0 && k.cif[i] <= 1.0 + 1e-12);
                if i > 0 {
                    prop_assert!(k.cif[i] >= k.cif[i - 1]);
                }
            }
        }
    }

    /// With one cause the incidence is 1 - Kaplan-Meier.
    #[test]
    fn one_cause_is_one_minus_km(rows in arb_causes()) {
        let d: Vec<f64> = rows.iter().map(|r| r.0).collect();
        let c: Vec<u32> = rows.iter().map(|r| u32::from(r.1 != 0) * 7).collect();
        let ev: Vec<bool> = c.iter().map(|&x| x != 0).collect();
        let fit = aalen_johansen(&d, &c, None).unwrap();
        let km = KmFit::fit_data(&SurvivalData::new(&d, &ev)).unwrap();
        prop_assert_eq!(&fit.timeline[..], km.timeline());
        if let Some(k) = fit.cause(7) {
            for (f, s) in k.cif.iter().zip(km.survival_values()) {
                prop_assert!((f - (1.0 - s)).abs() < 1e-12, "{f} vs 1 - {s}");
            }
        } else {
            prop_assert!(ev.iter().all(|&x| !x));
        }
    }

    /// Turnbull with zero-width intervals (exact ends) and right censoring at other times equals
    /// Kaplan-Meier at every time, whichever the bounds convention.
    #[test]
    fn zero_width_turnbull_is_km(rows in prop::collection::vec((1u32..30, any::<bool>()), 1..80), open in any::<bool>()) {
        // Events on integers, censorings half-way between them (no event-censoring ties).
        let d: Vec<f64> = rows.iter().map(|&(t, e)| f64::from(t) + if e { 0.0 } else { 0.5 }).collect();
        let ev: Vec<bool> = rows.iter().map(|r| r.1).collect();
        let upper: Vec<f64> = d.iter().zip(&ev).map(|(&t, &e)| if e { t } else { f64::INFINITY }).collect();
        let bounds = if open { Bounds::OpenLower } else { Bounds::Closed };
        let fit = turnbull(&d, &upper, bounds, &TurnbullOptions::default()).unwrap();
        let km = KmFit::fit_data(&SurvivalData::new(&d, &ev)).unwrap();
        prop_assert!(fit.converged);
        for &t in &d {
            // KM's S(t) is P(T > t); the NPMLE's right-continuous curve is P(T >= t+).
            let s_km = km.survival_at(t).unwrap();
            let s_np = fit.survival_upper(t + 1e-9);
            prop_assert!((s_km - s_np).abs() < 1e-7, "t {t}: KM {s_km}, NPMLE {s_np}");
        }
    }
}
