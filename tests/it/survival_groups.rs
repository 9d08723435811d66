//! The group comparisons of `hazardserve::survival::groups` (log-rank, RMST) and the
//! Nelson-Aalen estimate of `hazardserve::survival::nelson_aalen` against the lifelines 0.30.3
//! golden cases of `shared/survival-golden/cases-v2` (tolerances from its README), and their
//! properties on generated data.

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use hazardserve::survival::groups::{logrank, logrank_stratified, rmst, Weighting};

use crate::common::shared;

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|x| x.as_f64().unwrap_or(f64::NAN))
        .collect()
}

fn close(got: f64, want: f64, rel: f64, abs: f64, what: &str) {
    assert!(
        (got - want).abs() <= abs.max(rel * want.abs()),
        "{what}: got {got}, want {want}"
    );
}

/// Every log-rank test of the golden files: statistic (relative 1e-10), p-value (relative
/// 1e-8, down to 1e-67), degrees of freedom (exact), and the reference observed, expected and
/// covariance (relative 1e-12), for the plain, Wilcoxon, Tarone-Ware and Peto weightings.
#[test]
fn logrank_equals_lifelines() {
    let Some(dir) = shared("survival-golden") else {
        return;
    };
    let mut tests = 0;
    for file in [
        "logrank_waltons.json",
        "logrank_null.json",
        "logrank_weibull_shapes.json",
        "logrank_R_quoted.json",
    ] {
        let case = load(&dir.join("cases-v2").join(file));
        for ds in case["datasets"].as_array().expect("datasets") {
            let input = &ds["input"];
            let durations = floats(&input["durations"]);
            let events: Vec<bool> = floats(&input["event_observed"])
                .iter()
                .map(|&e| e != 0.0)
                .collect();
            let labels: Vec<&str> = input["group"]
                .as_array()
                .expect("groups")
                .iter()
                .map(|g| g.as_str().expect("a group label"))
                .collect();
            for t in ds["tests"].as_array().expect("tests") {
                let what = format!("{file} {} {}", ds["name"], t["name"]);
                let groups: Vec<&str> = t["groups"]
                    .as_array()
                    .expect("groups")
                    .iter()
                    .map(|g| g.as_str().expect("a label"))
                    .collect();
                let weighting = match t["weightings"].as_str() {
                    None => Weighting::LogRank,
                    Some("wilcoxon") => Weighting::Wilcoxon,
                    Some("tarone-ware") => Weighting::TaroneWare,
                    Some("peto") => Weighting::Peto,
                    Some(other) => panic!("{what}: weighting {other} not covered"),
                };
                // The sessions of the tested groups, each with its group's position in `groups`.
                let (mut d, mut e, mut g) = (Vec::new(), Vec::new(), Vec::new());
                for (i, l) in labels.iter().enumerate() {
                    if let Some(k) = groups.iter().position(|x| x == l) {
                        d.push(durations[i]);
                        e.push(events[i]);
                        g.push(k);
                    }
                }
                let got = logrank(&d, &e, &g, groups.len(), weighting).expect(&what);
                let out = &t["output"];
                close(
                    got.statistic,
                    out["test_statistic"].as_f64().unwrap(),
                    1e-10,
                    0.0,
                    &format!("{what} statistic"),
                );
                close(
                    got.p_value,
                    out["p_value"].as_f64().unwrap(),
                    1e-8,
                    0.0,
                    &format!("{what} p"),
                );
                assert_eq!(
                    got.degrees_of_freedom as u64,
                    out["degrees_of_freedom"].as_u64().unwrap(),
                    "{what}"
                );
                let r = &t["reference"];
                if r.is_object() && weighting == Weighting::LogRank {
                    let order: Vec<&str> = r["group_order"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap())
                        .collect();
                    // The reference lists the groups in its own order.
                    let at: Vec<usize> = order
                        .iter()
                        .map(|l| groups.iter().position(|g| g == l).expect("a tested group"))
                        .collect();
                    for (k, (o, x)) in floats(&r["observed"])
                        .iter()
                        .zip(floats(&r["expected"]))
                        .enumerate()
                    {
                        close(
                            got.observed[at[k]],
                            *o,
                            1e-12,
                            1e-12,
                            &format!("{what} O{k}"),
                        );
                        close(
                            got.expected[at[k]],
                            x,
                            1e-12,
                            1e-12,
                            &format!("{what} E{k}"),
                        );
                    }
                    for (a, row) in r["variance_matrix"].as_array().unwrap().iter().enumerate() {
                        for (b, v) in floats(row).iter().enumerate() {
                            close(
                                got.variance[at[a]][at[b]],
                                *v,
                                1e-12,
                                1e-12,
                                &format!("{what} V{a}{b}"),
                            );
                        }
                    }
                    assert_eq!(
                        got.n_event_times as u64,
                        r["n_event_times"].as_u64().unwrap(),
                        "{what}"
                    );
                }
                tests += 1;
            }
        }
    }
    assert!(tests >= 14, "only {tests} log-rank tests read");
}

/// Every RMST fit of the golden files: the RMST per horizon (absolute 1e-10 max(1, H)), the
/// variance of `min(T, H)` against the exact reference (lifelines integrates it with `quad`,
/// so its own figure is only good to 5e-3) and the Greenwood variance of the estimator
/// (relative 1e-12), and the difference of the two groups with its variance.
#[test]
fn rmst_equals_lifelines() {
    let Some(dir) = shared("survival-golden") else {
        return;
    };
    let mut checked = 0;
    for file in [
        "rmst_leukemia.json",
        "rmst_heavy_censoring.json",
        "rmst_beyond_last.json",
    ] {
        let case = load(&dir.join("cases-v2").join(file));
        for fit in case["fits"].as_array().expect("fits") {
            let horizons = floats(&fit["horizons"]);
            let mut by_label = std::collections::BTreeMap::new();
            for (label, g) in fit["input"]["groups"].as_object().expect("groups") {
                let d = floats(&g["durations"]);
                let e: Vec<bool> = floats(&g["event_observed"])
                    .iter()
                    .map(|&x| x != 0.0)
                    .collect();
                let got = rmst(&d, &e, &horizons).expect(label);
                let out = &fit["output"]["groups"][label];
                let r = &fit["reference"]["groups"][label];
                for (k, h) in horizons.iter().enumerate() {
                    let what = format!("{file} {label} H={h}");
                    close(
                        got[k].rmst,
                        floats(&out["rmst"])[k],
                        0.0,
                        1e-10 * h.max(1.0),
                        &format!("{what} rmst"),
                    );
                    close(
                        got[k].variance,
                        floats(&r["variance_lifelines_definition"])[k],
                        1e-12,
                        1e-12,
                        &format!("{what} variance"),
                    );
                    close(
                        got[k].variance,
                        floats(&out["variance"])[k],
                        5e-3,
                        1e-9,
                        &format!("{what} variance vs lifelines"),
                    );
                    close(
                        got[k].variance_greenwood,
                        floats(&r["estimator_variance_greenwood"])[k],
                        1e-12,
                        1e-14,
                        &format!("{what} greenwood"),
                    );
                    checked += 1;
                }
                by_label.insert(label.clone(), got);
            }
            let diff = &fit["reference"]["difference"];
            if diff.is_object() {
                let pair: Vec<&str> = diff["pair"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_str().unwrap())
                    .collect();
                let (a, b) = (&by_label[pair[0]], &by_label[pair[1]]);
                for k in 0..horizons.len() {
                    close(
                        a[k].rmst - b[k].rmst,
                        floats(&diff["rmst_difference"])[k],
                        0.0,
                        1e-10 * horizons[k].max(1.0),
                        &format!("{file} difference"),
                    );
                    close(
                        a[k].variance_greenwood + b[k].variance_greenwood,
                        floats(&diff["estimator_variance_greenwood_sum"])[k],
                        1e-12,
                        1e-14,
                        &format!("{file} difference variance"),
                    );
                }
            }
        }
    }
    assert!(checked >= 30, "only {checked} RMST values checked");
}

/// Sessions: (duration, event) pairs.
fn sessions() -> impl Strategy<Value = Vec<(f64, bool)>> {
    prop::collection::vec(
        (
            prop_oneof![(1u32..40).prop_map(f64::from), 0.5f64..50.0],
            prop::bool::weighted(0.7),
        ),
        1..60,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// A group tested against an identical copy of itself: observed equals expected in both,
    /// the statistic is 0 and the p-value 1, under every weighting.
    #[test]
    fn logrank_of_a_group_against_its_copy_is_zero(s in sessions()) {
        let (d, e): (Vec<f64>, Vec<bool>) = s.iter().chain(&s).copied().unzip();
        let g: Vec<usize> = (0..d.len()).map(|i| usize::from(i >= s.len())).collect();
        for w in [Weighting::LogRank, Weighting::Wilcoxon, Weighting::TaroneWare, Weighting::Peto] {
            let r = logrank(&d, &e, &g, 2, w).unwrap();
            // (A covariance of 0, every event time with everyone at risk failing, leaves the
            // statistic undefined.)
            if r.variance[0][0] > 0.0 {
                prop_assert!(r.statistic.abs() < 1e-9, "{w:?}: {}", r.statistic);
                prop_assert!((r.p_value - 1.0).abs() < 1e-6, "{w:?}: {}", r.p_value);
            }
            prop_assert!((r.observed[0] - r.observed[1]).abs() < 1e-9);
        }
    }

    /// The RMST grows with the horizon, never by more than the horizon does, and equals the
    /// horizon before the first event; its variances are non-negative.
    #[test]
    fn rmst_is_monotone_and_bounded(s in sessions(), h in prop::collection::vec(0.0f64..80.0, 1..8)) {
        let (d, e): (Vec<f64>, Vec<bool>) = s.iter().copied().unzip();
        let mut h = h;
        h.sort_by(f64::total_cmp);
        let r = rmst(&d, &e, &h).unwrap();
        let first_event = s.iter().filter(|x| x.1).map(|x| x.0).fold(f64::INFINITY, f64::min);
        for (k, x) in r.iter().enumerate() {
            prop_assert!(x.rmst <= x.horizon + 1e-9 && x.rmst >= -1e-12);
            prop_assert!(x.variance >= -1e-9 * x.horizon.max(1.0).powi(2));
            prop_assert!(x.variance_greenwood >= 0.0);
            if x.horizon <= first_event {
                prop_assert!((x.rmst - x.horizon).abs() < 1e-9);
            }
            if k > 0 {
                let p = &r[k - 1];
                prop_assert!(x.rmst >= p.rmst - 1e-12);
                prop_assert!(x.rmst - p.rmst <= x.horizon - p.horizon + 1e-9);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100, ..ProptestConfig::default() })]

    /// The stratified log-rank test sums each stratum's observed, expected and covariance (as
    /// the golden-tested unstratified test computes them on the stratum alone); one stratum
    /// is the unstratified test.
    #[test]
    fn stratified_logrank_sums_its_strata(
        s in prop::collection::vec(
            ((1u32..30).prop_map(f64::from), prop::bool::weighted(0.7), 0usize..3, 0usize..3),
            2..80,
        ),
    ) {
        let d: Vec<f64> = s.iter().map(|x| x.0).collect();
        let e: Vec<bool> = s.iter().map(|x| x.1).collect();
        let g: Vec<usize> = s.iter().map(|x| x.2).collect();
        let st: Vec<usize> = s.iter().map(|x| x.3).collect();
        for w in [Weighting::LogRank, Weighting::Wilcoxon, Weighting::Peto] {
            let whole = logrank(&d, &e, &g, 3, w).unwrap();
            let one = logrank_stratified(&d, &e, &g, 3, &vec![7; d.len()], w).unwrap();
            prop_assert_eq!(&one.observed, &whole.observed);
            prop_assert_eq!(&one.expected, &whole.expected);
            prop_assert_eq!(&one.variance, &whole.variance);
            let r = logrank_stratified(&d, &e, &g, 3, &st, w).unwrap();
            // Each stratum alone, flattened: observed, expected, then the covariance rows.
            let flat = |l: &hazardserve::survival::groups::LogRank| -> Vec<f64> {
                l.observed
                    .iter()
                    .chain(&l.expected)
                    .chain(l.variance.iter().flatten())
                    .copied()
                    .collect()
            };
            let mut sum = vec![0.0; 15];
            for k in 0..3 {
                let rows: Vec<usize> = (0..d.len()).filter(|&i| st[i] == k).collect();
                if rows.is_empty() {
                    continue;
                }
                let dd: Vec<f64> = rows.iter().map(|&i| d[i]).collect();
                let ee: Vec<bool> = rows.iter().map(|&i| e[i]).collect();
                let gg: Vec<usize> = rows.iter().map(|&i| g[i]).collect();
                let part = logrank(&dd, &ee, &gg, 3, w).unwrap();
                for (acc, x) in sum.iter_mut().zip(flat(&part)) {
                    *acc += x;
                }
            }
            for (got, want) in flat(&r).iter().zip(&sum) {
                prop_assert!((got - want).abs() < 1e-9, "{} vs {}", got, want);
            }
            prop_assert_eq!(r.degrees_of_freedom, 2);
        }
    }
}

/// Two strata of very different lengths (short and long sessions), each holding both groups
/// with the same durations, but group a mostly in the short stratum: the pooled test finds a
/// difference that is only the strata's; the stratified test does not. Two identical copies
/// of the data double the stratified statistic (Z and V both double).
#[test]
fn stratified_logrank_removes_a_difference_that_is_only_the_strata() {
    let (mut d, mut e, mut g, mut st) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (stratum, scale) in [(0usize, 1.0), (1, 20.0)] {
        for i in 0..100u32 {
            d.push(f64::from(1 + i % 50) * scale);
            e.push(i % 7 != 0);
            // A tenth of each stratum, spread over its durations, is the minority group:
            // group b in the short stratum, group a in the long one.
            let minority = i < 50 && i % 5 == 0;
            g.push(usize::from(minority != (stratum == 1)));
            st.push(stratum);
        }
    }
    let pooled = logrank(&d, &e, &g, 2, Weighting::LogRank).unwrap();
    let strat = logrank_stratified(&d, &e, &g, 2, &st, Weighting::LogRank).unwrap();
    assert!(pooled.p_value < 1e-6, "pooled p {}", pooled.p_value);
    assert!(
        strat.p_value > 0.05,
        "stratified p {} (chi2 {})",
        strat.p_value,
        strat.statistic
    );
    let twice = |v: &[usize]| -> Vec<usize> { v.iter().chain(v).copied().collect() };
    let (d2, e2): (Vec<f64>, Vec<bool>) = (
        d.iter().chain(&d).copied().collect(),
        e.iter().chain(&e).copied().collect(),
    );
    // The copy in strata of its own.
    let st2: Vec<usize> = st.iter().copied().chain(st.iter().map(|s| s + 2)).collect();
    let r2 = logrank_stratified(&d2, &e2, &twice(&g), 2, &st2, Weighting::LogRank).unwrap();
    assert!((r2.statistic - 2.0 * strat.statistic).abs() < 1e-9 * (1.0 + strat.statistic));
    // A strata column of the wrong length is refused.
    let err = logrank_stratified(&d, &e, &g, 2, &st[1..], Weighting::LogRank).unwrap_err();
    assert!(err.to_string().contains("strata"), "{err}");
}

/// Bad input names the problem.
#[test]
fn group_tests_refuse_bad_input() {
    fn err<T: std::fmt::Debug>(r: Result<T, hazardserve::survival::SurvivalError>) -> String {
        r.unwrap_err().to_string()
    }
    assert!(err(logrank(&[1.0], &[true], &[0], 1, Weighting::LogRank)).contains("two groups"));
    assert!(err(logrank(
        &[1.0, 2.0],
        &[true, true],
        &[0, 2],
        2,
        Weighting::LogRank
    ))
    .contains("session 1: group 2"));
    assert!(err(logrank(
        &[1.0, f64::NAN],
        &[true, true],
        &[0, 1],
        2,
        Weighting::LogRank
    ))
    .contains("not finite"));
    assert!(err(logrank(&[1.0], &[true, false], &[0], 2, Weighting::LogRank)).contains("events"));
    assert!(err(rmst(&[1.0], &[true], &[-1.0])).contains("horizon"));
}

/// `km --group --test` and `km --rmst` on a CSV print what the library computes: the
/// statistic, degrees of freedom and p-value of the test, and per group the RMST with a 95 %
/// interval from its Greenwood variance, and for two groups their difference.
#[test]
fn km_tests_groups_and_restricted_means_on_a_csv() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("s.csv");
    let rows: Vec<(f64, bool, &str)> = (0..60)
        .map(|i| {
            let g = if i % 2 == 0 { "a" } else { "b" };
            let d = f64::from(1 + (i * 37) % 53) * if g == "a" { 1.0 } else { 1.6 };
            (d, i % 5 != 0, g)
        })
        .collect();
    let mut text = String::from("duration,event,zone\n");
    for (d, e, g) in &rows {
        text.push_str(&format!("{d},{},{g}\n", u8::from(*e)));
    }
    std::fs::write(&csv, text).unwrap();
    let (d, e): (Vec<f64>, Vec<bool>) = rows.iter().map(|r| (r.0, r.1)).unzip();
    let g: Vec<usize> = rows.iter().map(|r| usize::from(r.2 == "b")).collect();
    let run = |extra: &[&str]| -> Value {
        let mut c = crate::common::hs(tmp.path());
        c.arg("km").arg("--input").arg(&csv);
        c.args(["--group", "zone", "--format", "json"]).args(extra);
        serde_json::from_str(&crate::common::ok(c)).unwrap()
    };
    let want = logrank(&d, &e, &g, 2, Weighting::TaroneWare).unwrap();
    let got = run(&["--test", "tarone-ware"]);
    assert_eq!(got[0]["test"], "tarone-ware");
    close(
        got[0]["statistic"].as_f64().unwrap(),
        want.statistic,
        1e-12,
        0.0,
        "statistic",
    );
    close(
        got[0]["p_value"].as_f64().unwrap(),
        want.p_value,
        1e-12,
        0.0,
        "p",
    );
    assert_eq!(got[0]["degrees_of_freedom"], 1);
    // Within strata (every third row one stratum): the library's stratified statistic, and the
    // number of strata.
    let st: Vec<usize> = (0..rows.len()).map(|i| usize::from(i % 3 == 0)).collect();
    let strata_csv = tmp.path().join("strata.csv");
    let mut text = String::from("duration,event,zone,site\n");
    for (i, (d, e, g)) in rows.iter().enumerate() {
        text.push_str(&format!("{d},{},{g},s{}\n", u8::from(*e), st[i]));
    }
    std::fs::write(&strata_csv, text).unwrap();
    let mut c = crate::common::hs(tmp.path());
    c.arg("km").arg("--input").arg(&strata_csv).args([
        "--group", "zone", "--test", "logrank", "--strata", "site", "--format", "json",
    ]);
    let got: Value = serde_json::from_str(&crate::common::ok(c)).unwrap();
    let want = logrank_stratified(&d, &e, &g, 2, &st, Weighting::LogRank).unwrap();
    assert_eq!(got[0]["strata"], 2);
    close(
        got[0]["statistic"].as_f64().unwrap(),
        want.statistic,
        1e-12,
        0.0,
        "stratified statistic",
    );
    let got = run(&["--rmst", "30"]);
    let rows = got.as_array().unwrap();
    assert_eq!(rows.len(), 3, "two groups and their difference: {got}");
    assert_eq!(rows[2]["group"], "a - b");
    let mut by = Vec::new();
    for (k, label) in ["a", "b"].iter().enumerate() {
        let (dd, ee): (Vec<f64>, Vec<bool>) = d
            .iter()
            .zip(&e)
            .zip(&g)
            .filter(|(_, &gg)| gg == k)
            .map(|((x, y), _)| (*x, *y))
            .unzip();
        let r = rmst(&dd, &ee, &[30.0]).unwrap()[0];
        assert_eq!(rows[k]["group"], *label);
        close(
            rows[k]["rmst"].as_f64().unwrap(),
            r.rmst,
            1e-12,
            0.0,
            "rmst",
        );
        let se = r.variance_greenwood.sqrt();
        close(
            rows[k]["ci_lower"].as_f64().unwrap(),
            r.rmst - 1.959963984540054 * se,
            1e-12,
            1e-12,
            "lower",
        );
        by.push(r);
    }
    close(
        rows[2]["rmst"].as_f64().unwrap(),
        by[0].rmst - by[1].rmst,
        1e-12,
        1e-12,
        "difference",
    );
    // --group alone is refused with the reason.
    let mut c = crate::common::hs(tmp.path());
    c.arg("km")
        .arg("--input")
        .arg(&csv)
        .args(["--group", "zone"]);
    let out = c.output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--group needs --test or --rmst"));
}

/// The Nelson-Aalen cumulative hazard of every `na_*` golden fit (right-censored Rossi with
/// heavy ties; left-truncated MACS, node sessions and a risk-set gap): the event table
/// exactly, the smoothed estimate to the README's relative 1e-11 (variance 1e-8) and the
/// discrete one to 1e-12, with their intervals.
#[test]
fn nelson_aalen_equals_lifelines() {
    use hazardserve::survival::nelson_aalen::nelson_aalen;
    use hazardserve::survival::SurvivalData;
    let Some(dir) = shared("survival-golden") else {
        return;
    };
    let mut fits = 0;
    for file in ["na_right_censored.json", "na_left_truncated.json"] {
        let case = load(&dir.join("cases-v2").join(file));
        for fit in case["fits"].as_array().expect("fits") {
            let what = format!("{file} {}", fit["name"]);
            let input = &fit["input"];
            let d = floats(&input["durations"]);
            let e: Vec<bool> = floats(&input["event_observed"])
                .iter()
                .map(|&x| x != 0.0)
                .collect();
            let entry = input["entry"].is_array().then(|| floats(&input["entry"]));
            let data = match &entry {
                Some(en) => SurvivalData::new(&d, &e).with_entry(en),
                None => SurvivalData::new(&d, &e),
            };
            let out = &fit["output"];
            for (smoothed, want, h_rel, v_rel) in [
                (true, out, 1e-11, 1e-8),
                (false, &out["discrete"], 1e-12, 1e-12),
            ] {
                let got = nelson_aalen(&data, smoothed).expect(&what);
                let (ci_lower, ci_upper) = got.interval();
                assert_eq!(got.timeline, floats(&out["timeline"]), "{what}");
                let counts =
                    |k: &str| -> Vec<u32> { floats(&out[k]).iter().map(|&x| x as u32).collect() };
                assert_eq!(got.n_event, counts("n_event"), "{what}");
                for (k, col) in [
                    ("cumulative_hazard", &got.cumulative_hazard),
                    ("variance", &got.variance),
                    ("ci_lower", &ci_lower),
                    ("ci_upper", &ci_upper),
                ] {
                    let rel = if k == "cumulative_hazard" {
                        h_rel
                    } else {
                        v_rel
                    };
                    for (i, (g, w)) in col.iter().zip(floats(&want[k])).enumerate() {
                        close(
                            *g,
                            w,
                            rel,
                            1e-14,
                            &format!("{what} smoothed={smoothed} {k}[{i}]"),
                        );
                    }
                }
            }
            fits += 1;
        }
    }
    assert!(fits >= 4, "only {fits} fits");
}

/// `fit --by zone --test logrank --strata instance-type` on GCE equals `km --strata` on the
/// same sessions exported with their nodes' zone and instance type: the store's stratified
/// test is the library's, whatever order the sessions come in.
#[test]
fn fit_stratifies_by_a_node_attribute_as_km_does_on_the_export() {
    use crate::common::{hs, ok, public_store};
    let Some(store) = public_store() else {
        return;
    };
    let fit = |strata: Option<&str>| -> Value {
        let mut c = hs(store);
        c.args([
            "fit",
            "--source",
            "gce-preemptible",
            "--by",
            "zone",
            "--test",
            "logrank",
        ]);
        if let Some(s) = strata {
            c.args(["--strata", s]);
        }
        c.args(["--format", "json"]);
        serde_json::from_str(&ok(c)).unwrap()
    };
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("gce.csv");
    let mut c = hs(store);
    c.args([
        "sql",
        "--format",
        "csv",
        "SELECT s.duration_s, s.event, coalesce(n.zone, '(none)') AS zone, \
         coalesce(n.instance_type, '(none)') AS it FROM sessions s JOIN nodes n \
         USING (source, node_id) WHERE s.source = 'gce-preemptible' AND s.duration_s > 0 \
         AND NOT (s.left_truncated AND s.entry_s = 0) ORDER BY random()",
    ]);
    std::fs::write(&csv, ok(c)).unwrap();
    let mut c = hs(store);
    c.arg("km").arg("--input").arg(&csv).args([
        "--duration",
        "duration_s",
        "--event",
        "event",
        "--group",
        "zone",
        "--test",
        "logrank",
        "--strata",
        "it",
        "--format",
        "json",
    ]);
    let km: Value = serde_json::from_str(&ok(c)).unwrap();
    let stratified = fit(Some("instance-type"));
    assert_eq!(stratified[0]["strata"], km[0]["strata"]);
    assert!(
        stratified[0]["strata"].as_i64().unwrap() >= 2,
        "{stratified}"
    );
    close(
        stratified[0]["statistic"].as_f64().unwrap(),
        km[0]["statistic"].as_f64().unwrap(),
        1e-9,
        0.0,
        "statistic",
    );
    assert_eq!(
        stratified[0]["degrees_of_freedom"],
        km[0]["degrees_of_freedom"]
    );
    // Without --strata there is no strata column, and the pooled statistic differs.
    let pooled = fit(None);
    assert!(pooled[0].get("strata").is_none(), "{pooled}");
    assert_ne!(pooled[0]["statistic"], stratified[0]["statistic"]);
}
