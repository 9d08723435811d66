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
                    &got.variance(code).expect("a variance"),
                    &floats(&c["variance"]),
                    1e-10,
                    1e-300,
                    &format!("{w} variance"),
                );
                let (lo, hi) = got.interval(code).expect("an interval");
                let smoothed = got.cause_hazard(code, true).expect("a hazard");
                let discrete = got.cause_hazard(code, false).expect("a hazard");
                close_all(&lo, &floats(&c["ci_lower"]), 0.0, 1e-12, &format!("{w} lo"));
                close_all(&hi, &floats(&c["ci_upper"]), 0.0, 1e-12, &format!("{w} hi"));
                let na = &c["nelson_aalen"];
                close_all(
                    &smoothed.cumulative_hazard,
                    &floats(&na["cumulative_hazard"]),
                    1e-11,
                    1e-300,
                    &format!("{w} NA"),
                );
                close_all(
                    &smoothed.variance,
                    &floats(&na["variance"]),
                    1e-8,
                    1e-300,
                    &format!("{w} NA variance"),
                );
                let nd = &na["discrete"];
                close_all(
                    &discrete.cumulative_hazard,
                    &floats(&nd["cumulative_hazard"]),
                    0.0,
                    1e-12,
                    &format!("{w} NA discrete"),
                );
                close_all(
                    &discrete.variance,
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

/// A cause that never occurred has the variance a zero incidence gets from the Collett formula:
/// 0 until everyone at risk ends at once, NaN from there, as a present cause's is.
#[test]
fn a_cause_that_never_occurred_has_a_zero_variance_until_the_risk_set_empties() {
    // 1 at risk at 3 ends there (n = d): undefined from that row on.
    let fit = aalen_johansen(&[1.0, 2.0, 3.0], &[1, 0, 1], None).unwrap();
    assert!(fit.cause(2).is_none());
    let v = fit.variance_without_events();
    assert_eq!(fit.timeline, [0.0, 1.0, 2.0, 3.0]);
    assert_eq!(&v[..3], &[0.0, 0.0, 0.0]);
    assert!(v[3].is_nan(), "{v:?}");
    let present = fit.variance(1).unwrap();
    assert!(present[3].is_nan() && present[1] > 0.0, "{present:?}");
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

/// `km --cause`, `km --nelson-aalen` and `km --lower/--upper` on a CSV print what the library
/// computes; rows censored by the event flag or an empty cause are censored; bad bounds are an
/// error naming the file and line.
#[test]
fn km_prints_incidence_hazard_and_npmle_of_a_csv() {
    use crate::common::{fails, hs, ok};
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("s.csv");
    let mut text = String::from("duration,event,cause,lo,hi\n");
    let (mut d, mut c) = (Vec::new(), Vec::new());
    for i in 0..60u32 {
        let t = f64::from(1 + (i * 37) % 23);
        // Cause by residue; every 7th row censored by its flag, every 11th by an empty cause.
        let (flag, label, code) = match (i % 7 == 0, i % 11 == 0, i % 3) {
            (true, _, _) => (0, "cap", 0),
            (_, true, _) => (1, "", 0),
            (_, _, 0) => (1, "cap", 2),
            _ => (1, "preempted", 1),
        };
        let hi = if code == 0 {
            String::new()
        } else {
            format!("{}", t + 2.0)
        };
        text.push_str(&format!("{t},{flag},{label},{t},{hi}\n"));
        d.push(t);
        c.push(code);
    }
    std::fs::write(&csv, text).unwrap();
    let json = |args: &[&str]| -> Vec<serde_json::Value> {
        let mut cmd = hs(tmp.path());
        cmd.args(["km", "--format", "json", "--input"])
            .arg(&csv)
            .args(args);
        serde_json::from_str::<serde_json::Value>(&ok(cmd))
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    // Codes in order of first appearance: row 1 is "preempted" (1), row 3 "cap" (2).
    let lib = aalen_johansen(&d, &c, None).unwrap();
    let rows = json(&["--cause", "cause"]);
    assert_eq!(rows.len(), 2 * lib.timeline.len());
    for (code, label) in [(1u32, "preempted"), (2, "cap")] {
        let k = lib.cause(code).unwrap();
        let hz = lib.cause_hazard(code, true).unwrap();
        let got: Vec<&serde_json::Value> = rows.iter().filter(|r| r["cause"] == label).collect();
        for (i, r) in got.iter().enumerate() {
            assert!(
                (r["cif"].as_f64().unwrap() - k.cif[i]).abs() < 1e-12,
                "{label} {i}"
            );
            assert!(
                (r["cumulative_hazard"].as_f64().unwrap() - hz.cumulative_hazard[i]).abs() < 1e-12
            );
            assert!((r["survival_any"].as_f64().unwrap() - lib.overall_survival[i]).abs() < 1e-12);
        }
    }
    let ev: Vec<bool> = c.iter().map(|&x| x != 0).collect();
    let flags: Vec<bool> = (0..60u32).map(|i| i % 7 != 0).collect();
    let na =
        hazardserve::survival::nelson_aalen::nelson_aalen(&SurvivalData::new(&d, &flags), true)
            .unwrap();
    let rows = json(&["--event", "event", "--nelson-aalen"]);
    for (r, h) in rows.iter().zip(&na.cumulative_hazard) {
        assert!((r["cumulative_hazard"].as_f64().unwrap() - h).abs() < 1e-12);
    }
    assert_eq!(rows.len(), na.timeline.len());
    // Interval-censored: [t, t + 2] for ends, [t, inf) for censored rows.
    let upper: Vec<f64> = d
        .iter()
        .zip(&ev)
        .map(|(&t, &e)| if e { t + 2.0 } else { f64::INFINITY })
        .collect();
    let np = turnbull(&d, &upper, Bounds::OpenLower, &TurnbullOptions::default()).unwrap();
    let (up, lo) = np.curves();
    let rows = json(&["--lower", "lo", "--upper", "hi", "--open-lower"]);
    assert_eq!(rows.len(), np.timeline.len());
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r["timeline"].as_f64().unwrap(), np.timeline[i]);
        assert!((r["survival_upper"].as_f64().unwrap() - up[i]).abs() < 1e-12);
        assert!((r["survival_lower"].as_f64().unwrap() - lo[i]).abs() < 1e-12);
    }
    let bad = tmp.path().join("bad.csv");
    std::fs::write(&bad, "lo,hi\n1,2\n5,3\n").unwrap();
    let mut cmd = hs(tmp.path());
    cmd.args(["km", "--lower", "lo", "--upper", "hi", "--input"])
        .arg(&bad);
    let err = String::from_utf8_lossy(&fails(cmd).stderr).into_owned();
    assert!(err.contains("bad.csv:3") && err.contains("below"), "{err}");
}

/// On the store: `fit --by-cause` splits GCE's ends into preemptions and the 24-hour cap, whose
/// incidences and survival sum to 1 at the end; a tick source's summary comes from the NPMLE by
/// default (and says so) and from Kaplan-Meier with `--exact-times`; `fit --by --test` and
/// `--rmst` print the library's figures.
#[test]
fn fit_reports_causes_ticks_tests_and_restricted_means_of_a_source() {
    use crate::common::{hs, ok, public_store};
    let Some(store) = public_store() else {
        return;
    };
    let json = |args: &[&str]| -> Vec<serde_json::Value> {
        let mut cmd = hs(store);
        cmd.args(["fit", "--format", "json"]).args(args);
        serde_json::from_str::<serde_json::Value>(&ok(cmd))
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let rows = json(&["--source", "gce-preemptible", "--by-cause"]);
    let causes: Vec<&str> = rows.iter().map(|r| r["cause"].as_str().unwrap()).collect();
    assert!(
        causes.contains(&"preempted") && causes.contains(&"lifetime-cap"),
        "{causes:?}"
    );
    let cap = rows.iter().find(|r| r["cause"] == "lifetime-cap").unwrap();
    // The cap is announced: nothing ends by it before 24 hours.
    assert_eq!(cap["cif_6h"].as_f64().unwrap(), 0.0);
    assert!(cap["cif_end"].as_f64().unwrap() > 0.1);
    let share: f64 = rows.iter().map(|r| r["share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-9);
    // Tick source: the NPMLE's median by default, Kaplan-Meier's with --exact-times.
    let ticks = json(&["--source", "cbl-availability-1node", "--shrinkage", "none"]);
    let exact = json(&[
        "--source",
        "cbl-availability-1node",
        "--shrinkage",
        "none",
        "--exact-times",
    ]);
    assert_eq!(ticks[0]["times"], "600 s ticks");
    assert_eq!(exact[0]["times"], "exact");
    let (m_np, m_km) = (
        ticks[0]["median_s"].as_f64().unwrap(),
        exact[0]["median_s"].as_f64().unwrap(),
    );
    // Both within a tick of each other, and not the same estimate.
    assert!(
        (m_np - m_km).abs() <= 600.0 && m_np != m_km,
        "{m_np} vs {m_km}"
    );
    // Group test and RMST by zone.
    let t = json(&[
        "--source",
        "gce-preemptible",
        "--by",
        "zone",
        "--test",
        "logrank",
    ]);
    assert_eq!(t[0]["test"], "logrank");
    assert_eq!(
        t[0]["degrees_of_freedom"].as_i64().unwrap(),
        t[0]["groups"].as_i64().unwrap() - 1
    );
    assert!(t[0]["p_value"].as_f64().unwrap() < 0.05);
    let r = json(&[
        "--source",
        "gce-preemptible",
        "--by",
        "zone",
        "--rmst",
        "7200",
    ]);
    for row in &r {
        let v = row["rmst"].as_f64().unwrap();
        assert!((0.0..=7200.0).contains(&v), "{row}");
    }
}
