//! Golden tests of `hazardserve::survival` against `shared/survival-golden` (lifelines 0.30.3 +
//! exact-arithmetic reference), the shrinkage demo (`shrinkage_demo.py`) and the parametric
//! fits on the large Weibull cases.
//!
//! Data location: `$HAZARDSERVE_SHARED/survival-golden` if that variable is set, otherwise
//! `$CARGO_MANIFEST_DIR/../shared/survival-golden`; when absent the tests print
//! `skipping: ../shared/survival-golden not found` and pass.

use std::path::{Path, PathBuf};

use serde_json::Value;

use hazardserve::survival::km::{Count, KmFit, KmView};
use hazardserve::survival::parametric::{hazard_shape_test, HazardTrend};
use hazardserve::survival::shrinkage::{
    CvOptions, EstimatorChoice, ShrinkageModel, ShrinkageOptions,
};
use hazardserve::survival::{ConditionalSurvival, SurvivalData, Z_95};

const SURV_ABS: f64 = 1e-12;
const CI_REL: f64 = 1e-10;
const COND_REL: f64 = 1e-12;

fn golden_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("HAZARDSERVE_SHARED") {
        Some(s) => PathBuf::from(s).join("survival-golden"),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/survival-golden"),
    };
    if dir.join("cases").is_dir() {
        Some(dir)
    } else {
        println!("skipping: ../shared/survival-golden not found");
        None
    }
}

fn load(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&quote_numbers(&text))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Wraps every JSON number in quotes so that it reaches us as text and is parsed by
/// `str::parse::<f64>` (correctly rounded). serde_json's default float parser may be 1 ulp off
/// unless its `float_roundtrip` feature is enabled, and the golden values are exact f64 reprs.
fn quote_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let mut in_str = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
            out.push(c);
        } else if c == '-' || c.is_ascii_digit() {
            out.push('"');
            out.push(c);
            while let Some(&d) = chars.peek() {
                if d.is_ascii_digit() || matches!(d, '.' | 'e' | 'E' | '+' | '-') {
                    out.push(d);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push('"');
        } else {
            out.push(c);
        }
    }
    out
}

/// A (quoted) number or null.
fn num(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => Some(
            s.parse::<f64>()
                .unwrap_or_else(|e| panic!("bad number {s}: {e}")),
        ),
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

fn case_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("cases"))
        .expect("read cases dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| num(x).expect("number"))
        .collect()
}

fn opt_f64s(v: &Value) -> Vec<Option<f64>> {
    v.as_array().expect("array").iter().map(num).collect()
}

fn u64s(v: &Value) -> Vec<u64> {
    f64s(v)
        .into_iter()
        .map(|x| {
            assert!(x >= 0.0 && x.fract() == 0.0, "not a count: {x}");
            x as u64
        })
        .collect()
}

fn counts(v: &Value) -> Vec<Count> {
    u64s(v)
        .into_iter()
        .map(|x| Count::try_from(x).expect("count fits"))
        .collect()
}

/// Input of one fit as owned columns.
struct Input {
    durations: Vec<f64>,
    events: Vec<bool>,
    entry: Option<Vec<f64>>,
}

impl Input {
    fn from_json(fit: &Value) -> Input {
        let inp = &fit["input"];
        Input {
            durations: f64s(&inp["durations"]),
            events: u64s(&inp["event_observed"])
                .iter()
                .map(|&e| e == 1)
                .collect(),
            entry: inp["entry"].as_array().map(|_| f64s(&inp["entry"])),
        }
    }

    fn data(&self) -> SurvivalData<'_> {
        let d = SurvivalData::new(&self.durations, &self.events);
        match &self.entry {
            Some(e) => d.with_entry(e),
            None => d,
        }
    }
}

/// Worst deviations seen, for the report.
#[derive(Default, Debug)]
struct Worst {
    survival_abs: f64,
    ci_rel: f64,
    greenwood_rel: f64,
    cond_rel: f64,
}

fn rel(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / b.abs().max(f64::MIN_POSITIVE)
    }
}

fn check_rel(what: &str, got: f64, want: f64, tol: f64, worst: &mut f64) {
    let r = rel(got, want);
    *worst = worst.max(r);
    assert!(r <= tol, "{what}: got {got:e}, want {want:e} (rel {r:e})");
}

fn check_abs(what: &str, got: f64, want: f64, tol: f64, worst: &mut f64) {
    let d = (got - want).abs();
    *worst = worst.max(d);
    assert!(d <= tol, "{what}: got {got:e}, want {want:e} (abs {d:e})");
}

fn check_fit(name: &str, fit: &Value, w: &mut Worst) {
    let input = Input::from_json(fit);
    let km = KmFit::fit_data(&input.data()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let v: KmView<'_> = km.view();
    let out = &fit["output"];

    // event table: exact
    assert_eq!(
        v.timeline(),
        f64s(&out["timeline"]).as_slice(),
        "{name}: timeline"
    );
    assert_eq!(
        v.n_at_risk(),
        counts(&out["n_at_risk"]).as_slice(),
        "{name}: n_at_risk"
    );
    assert_eq!(
        v.n_event(),
        counts(&out["n_event"]).as_slice(),
        "{name}: n_event"
    );
    assert_eq!(
        v.n_censored(),
        counts(&out["n_censored"]),
        "{name}: n_censored"
    );
    assert_eq!(
        v.n_entered(),
        counts(&out["n_entered"]),
        "{name}: n_entered"
    );

    // estimate, Greenwood, CI
    let table = v.table();
    for (i, (&got, want)) in table
        .survival
        .iter()
        .zip(f64s(&out["survival"]))
        .enumerate()
    {
        check_abs(
            &format!("{name}: survival[{i}]"),
            got,
            want,
            SURV_ABS,
            &mut w.survival_abs,
        );
    }
    for (i, (&got, want)) in table
        .greenwood_sum
        .iter()
        .zip(f64s(&out["greenwood_sum"]))
        .enumerate()
    {
        check_rel(
            &format!("{name}: greenwood[{i}]"),
            got,
            want,
            CI_REL,
            &mut w.greenwood_rel,
        );
    }
    for key in ["ci_lower", "ci_upper"] {
        let mine = if key == "ci_lower" {
            &table.ci_lower
        } else {
            &table.ci_upper
        };
        for (i, (&got, want)) in mine.iter().zip(f64s(&out[key])).enumerate() {
            check_rel(
                &format!("{name}: {key}[{i}]"),
                got,
                want,
                CI_REL,
                &mut w.ci_rel,
            );
        }
    }
    assert_eq!(table.survival.len(), f64s(&out["survival"]).len());

    // median (exact reference)
    assert_eq!(v.median(), num(&out["median"]), "{name}: median");
    assert_eq!(km.median(), num(&out["median"]), "{name}: median (KmFit)");

    // query grid: right-continuous step, None before the first time
    let q = &out["query"];
    for (t, want) in f64s(&q["t"]).into_iter().zip(opt_f64s(&q["survival"])) {
        let got = v.survival_at(t);
        match (got, want) {
            (None, None) => {
                assert_eq!(v.survival(t), 1.0, "{name}: trait survival before origin");
            }
            (Some(g), Some(x)) => {
                check_abs(
                    &format!("{name}: query S({t})"),
                    g,
                    x,
                    SURV_ABS,
                    &mut w.survival_abs,
                );
                assert_eq!(v.survival(t), g);
            }
            _ => panic!("{name}: query S({t}) = {got:?}, want {want:?}"),
        }
    }

    // conditional blocks
    for c in out["conditional"].as_array().expect("conditional") {
        let a = num(&c["a"]).expect("a");
        let sa = v.survival_at(a);
        match (sa, num(&c["S_a"])) {
            (Some(g), Some(x)) => check_abs(
                &format!("{name}: S(a={a})"),
                g,
                x,
                SURV_ABS,
                &mut w.survival_abs,
            ),
            (None, None) => {}
            (g, x) => panic!("{name}: S(a={a}) = {g:?}, want {x:?}"),
        }
        let defined = c["defined"].as_bool().expect("defined");
        let horizons = c
            .get("rmrl")
            .map(|r| f64s(&r["horizon"]))
            .unwrap_or_default();
        let summ = v.conditional_summary(a, &horizons);
        assert_eq!(summ.defined, defined, "{name}: defined at a={a}");
        if !defined {
            assert!(v.conditional_survival_at(a, a + 1.0).is_none());
            assert!(v.rmrl(a, 1.0).is_none());
            assert!(v.median_residual(a).is_none());
            assert!(v.jumps_after(a).is_none());
            assert!(v.conditional_checked(a, 1.0).is_none());
            continue;
        }
        for ((x, t), want) in f64s(&c["x"])
            .into_iter()
            .zip(f64s(&c["t"]))
            .zip(f64s(&c["survival"]))
        {
            let got = v.conditional_survival_at(a, x).expect("defined");
            check_rel(
                &format!("{name}: S({x}|{a})"),
                got,
                want,
                COND_REL,
                &mut w.cond_rel,
            );
            if a + t == x {
                let g2 = v.conditional(a, t);
                check_rel(
                    &format!("{name}: trait S({t}|{a})"),
                    g2,
                    want,
                    COND_REL,
                    &mut w.cond_rel,
                );
            }
        }
        for ((h, want), &(hh, got)) in horizons
            .iter()
            .zip(f64s(&c["rmrl"]["value"]))
            .zip(&summ.rmrl)
        {
            assert_eq!(*h, hh);
            check_rel(
                &format!("{name}: rmrl(a={a}, H={h})"),
                got,
                want,
                COND_REL,
                &mut w.cond_rel,
            );
        }
        assert_eq!(
            summ.median_residual,
            num(&c["median_residual"]),
            "{name}: median residual at a={a}"
        );
        check_rel(
            &format!("{name}: jump_mass_total a={a}"),
            summ.jump_mass_total,
            num(&c["jump_mass_total"]).expect("jmt"),
            COND_REL,
            &mut w.cond_rel,
        );
        check_rel(
            &format!("{name}: tail_mass a={a}"),
            summ.tail_mass,
            num(&c["tail_mass"]).expect("tail"),
            COND_REL,
            &mut w.cond_rel,
        );
        if let Some(j) = c.get("jumps") {
            let mine = v.jumps_after(a).expect("defined");
            let (u, m) = (f64s(&j["u"]), f64s(&j["mass"]));
            assert_eq!(mine.len(), u.len(), "{name}: number of jumps after {a}");
            for (jj, (uu, mm)) in mine.iter().zip(u.iter().zip(&m)) {
                assert_eq!(jj.u, *uu, "{name}: jump time");
                check_rel(
                    &format!("{name}: jump mass at {uu} | {a}"),
                    jj.mass,
                    *mm,
                    COND_REL,
                    &mut w.cond_rel,
                );
            }
        }
    }

    // exact conditional time to event (median residual life at each timeline time, where S > 0)
    if let Some(ctte) = out.get("exact_conditional_time_to_event") {
        for ((&t, &s), want) in v
            .timeline()
            .iter()
            .zip(v.survival_values())
            .zip(opt_f64s(ctte))
        {
            if s > 0.0 {
                assert_eq!(
                    v.median_residual(t),
                    want,
                    "{name}: median residual at timeline t={t}"
                );
            }
        }
    }

    // custom timeline grid
    if let Some(tf) = out.get("timeline_fit") {
        let g = v.on_grid(&f64s(&tf["grid"]), Z_95);
        assert_eq!(g.grid, f64s(&tf["grid"]), "{name}: grid order");
        for (i, (got, want)) in g.survival.iter().zip(opt_f64s(&tf["survival"])).enumerate() {
            match (got, want) {
                (Some(a), Some(b)) => check_abs(
                    &format!("{name}: grid S[{i}]"),
                    *a,
                    b,
                    SURV_ABS,
                    &mut w.survival_abs,
                ),
                (None, None) => {}
                _ => panic!("{name}: grid S[{i}] = {got:?}, want {want:?}"),
            }
        }
        for (i, (got, want)) in g.ci_lower.iter().zip(f64s(&tf["ci_lower"])).enumerate() {
            check_rel(
                &format!("{name}: grid ci_lower[{i}]"),
                *got,
                want,
                CI_REL,
                &mut w.ci_rel,
            );
        }
        for (i, (got, want)) in g.ci_upper.iter().zip(f64s(&tf["ci_upper"])).enumerate() {
            check_rel(
                &format!("{name}: grid ci_upper[{i}]"),
                *got,
                want,
                CI_REL,
                &mut w.ci_rel,
            );
        }
        // exact reference on the grid: the first grid point at or after the exact median
        // (lifelines' own grid median is float-thresholded and differs where S is exactly 0.5)
        let grid = f64s(&tf["grid"]);
        let exact = num(&out["median"]).and_then(|m| grid.iter().copied().find(|&x| x >= m));
        assert_eq!(g.median, exact, "{name}: median on grid");
        let lifelines = num(&tf["median_lifelines_on_grid"]);
        if g.median != lifelines {
            println!(
                "{name}: grid median {:?} (exact) vs lifelines {lifelines:?} (float noise)",
                g.median
            );
        }
    }

    // lifelines' StatError (risk set exhausted before late entrants): flagged, values exact
    let gap = v.risk_set_gap();
    if out.get("lifelines_error").is_some() {
        assert!(gap.is_some(), "{name}: expected a risk-set gap diagnostic");
    }
    if input.entry.is_none() {
        assert!(gap.is_none(), "{name}: no gap possible without entry times");
    }
}

#[test]
fn km_matches_every_golden_fit() {
    let Some(dir) = golden_dir() else {
        return;
    };
    let mut expected = 0usize;
    let mut checked = 0usize;
    let mut worst = Worst::default();
    for path in case_files(&dir) {
        let doc = load(&path);
        let fits = doc["fits"].as_array().expect("fits");
        expected += fits.len();
        for fit in fits {
            let name = format!(
                "{}/{}",
                doc["case"].as_str().unwrap_or("?"),
                fit["name"].as_str().unwrap_or("?")
            );
            check_fit(&name, fit, &mut worst);
            checked += 1;
        }
    }
    println!("golden KM fits checked: {checked}; worst deviations {worst:?}");
    assert!(checked > 0);
    assert_eq!(checked, expected);
    // cross-check the count with the manifest
    let manifest = load(&dir.join("manifest.json"));
    let in_manifest: usize = manifest["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| c["fits"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(checked, in_manifest);
}

#[test]
fn stat_error_gap_is_flagged_and_matches_exact_reference() {
    let Some(dir) = golden_dir() else {
        return;
    };
    let doc = load(&dir.join("cases/left_truncation.json"));
    let fit = doc["fits"]
        .as_array()
        .expect("fits")
        .iter()
        .find(|f| f["name"] == "stat_error_gap")
        .expect("stat_error_gap fit");
    let input = Input::from_json(fit);
    let km = KmFit::fit_data(&input.data()).expect("fits without error");
    assert_eq!(km.view().risk_set_gap(), Some(1.0));
    assert_eq!(km.survival_at(5.0), Some(0.0));
}

/// Per-node sessions of `per_node_sessions.json` (fits `node_*`, in file order).
fn per_node_sessions(dir: &Path) -> (Vec<u32>, Vec<f64>, Vec<bool>) {
    let doc = load(&dir.join("cases/per_node_sessions.json"));
    let (mut g, mut t, mut e) = (Vec::new(), Vec::new(), Vec::new());
    let mut node = 0u32;
    for fit in doc["fits"].as_array().expect("fits") {
        if !fit["name"].as_str().unwrap_or("").starts_with("node_") {
            continue;
        }
        let inp = Input::from_json(fit);
        g.extend(std::iter::repeat_n(node, inp.durations.len()));
        t.extend(inp.durations);
        e.extend(inp.events);
        node += 1;
    }
    (g, t, e)
}

/// Fold ids of `shrinkage_demo.py` (numpy `default_rng(0).permutation` per node, fold f =
/// positions f::5), one digit per session in node/file order.
const DEMO_FOLDS: &str = "210412211034304243032102401224330010411323420410011221223102012402033334134300414143042104100102301321203433042313403320022224124141443112320401301301442114010232411234200331341042002132022231203324121044131123031140430340132443002120410302112404332203321012234402401404331142002313412430134340324102031402101014242211320304421003321232110414040200312143132232400014421213313412302412102141000203423443330400320214123211410340132433042112400400231114232302002213314140222103011433431442310123243023301412200404132422300121023432110424330304141114033212401004130310422402344201312301332301014121323444000212441000143011023244212330423";

/// `shrinkage_demo.py` output with the folds above: CV log-lik per M (41 values), frailty CV
/// log-lik and θ̂ (scipy bounded Brent).
const DEMO_CV: [f64; 41] = [
    -2178.3028, -2143.0341, -2107.9044, -2072.9585, -2038.2555, -2003.8723, -1969.9088, -1936.4927,
    -1903.7861, -1871.991, -1841.3534, -1812.1653, -1784.7602, -1759.5012, -1736.7584, -1716.8757,
    -1700.129, -1686.6826, -1676.5512, -1669.5802, -1665.4495, -1663.7045, -1663.8098, -1665.2128,
    -1667.4033, -1669.9579, -1672.5609, -1675.0043, -1677.1725, -1679.0191, -1680.5444, -1681.7753,
    -1682.7511, -1683.5144, -1684.1054, -1684.5593, -1684.9059, -1685.1693, -1685.369, -1685.5198,
    -1685.6336,
];
const DEMO_FRAILTY_CV: f64 = -1627.4468;
const DEMO_THETA: f64 = 0.20757849983729662;

#[test]
fn shrinkage_reproduces_demo_with_reference_folds() {
    let Some(dir) = golden_dir() else {
        return;
    };
    let (g, t, e) = per_node_sessions(&dir);
    assert_eq!(t.len(), 633);
    assert_eq!(DEMO_FOLDS.len(), 633);
    let folds: Vec<u32> = DEMO_FOLDS.bytes().map(|b| (b - b'0') as u32).collect();
    let opts = ShrinkageOptions {
        estimator: EstimatorChoice::Auto,
        cv: CvOptions {
            fold_ids: Some(folds),
            ..CvOptions::default()
        },
        ..ShrinkageOptions::default()
    };
    let model = ShrinkageModel::fit(&g, &SurvivalData::new(&t, &e), &opts).expect("fit");
    let cv = model.cv().expect("cv ran");
    println!(
        "demo (reference folds): theta {:.6}, best M {:.3} (CV {:.4}), frailty CV {:.4}, pooled-ish M=1e4 {:.4}, KM-ish M=0.1 {:.4}",
        model.theta(),
        cv.best_m,
        cv.best_beta_loglik,
        cv.frailty_loglik,
        cv.beta_loglik[40],
        cv.beta_loglik[0]
    );
    assert_eq!(model.pooled().times.len(), 609);
    assert!(
        (model.theta() - DEMO_THETA).abs() < 1e-4 * DEMO_THETA,
        "theta {}",
        model.theta()
    );
    for (j, (&got, &want)) in cv.beta_loglik.iter().zip(&DEMO_CV).enumerate() {
        assert!(
            (got - want).abs() < 2e-4,
            "CV[{j}] (M = {}): {got} vs {want}",
            cv.m_grid[j]
        );
    }
    assert!(
        (cv.frailty_loglik - DEMO_FRAILTY_CV).abs() < 1e-3,
        "frailty CV {}",
        cv.frailty_loglik
    );
    assert!((cv.best_m - 42.17).abs() < 0.01, "best M {}", cv.best_m);
    assert_eq!(format!("{:?}", model.selected()), "GammaFrailty");
    let post: Vec<f64> = (0..25).map(|i| model.posterior_frailty(i)).collect();
    let (lo, hi) = post
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(
        (lo - 0.56).abs() < 0.005 && (hi - 1.97).abs() < 0.005,
        "posterior frailty range {lo}..{hi}"
    );
}

#[test]
fn shrinkage_demo_numbers_with_own_folds() {
    let Some(dir) = golden_dir() else {
        return;
    };
    let (g, t, e) = per_node_sessions(&dir);
    let model = ShrinkageModel::fit(&g, &SurvivalData::new(&t, &e), &ShrinkageOptions::default())
        .expect("fit");
    let cv = model.cv().expect("cv ran");
    println!(
        "demo (own folds, seed 0): theta {:.4}, best M {:.2} (CV {:.1}), frailty CV {:.1}, M=1e4 {:.1}, M=0.1 {:.1}, selected {:?}",
        model.theta(),
        cv.best_m,
        cv.best_beta_loglik,
        cv.frailty_loglik,
        cv.beta_loglik[40],
        cv.beta_loglik[0],
        model.selected()
    );
    assert!((model.theta() - 0.21).abs() < 0.005);
    assert!((20.0..=90.0).contains(&cv.best_m), "best M {}", cv.best_m);
    assert!(cv.frailty_loglik > cv.best_beta_loglik);
    assert!(cv.best_beta_loglik > cv.beta_loglik[40] && cv.beta_loglik[40] > cv.beta_loglik[0]);

    // node curves: defined conditionals far beyond the node's longest session
    for node in 0..25 {
        let beta = model.beta_curve(node).expect("M known");
        let fr = model.frailty_curve(node);
        let longest = model
            .sessions()
            .node(node)
            .durations
            .iter()
            .cloned()
            .fold(0.0, f64::max);
        for curve in [
            &beta as &dyn ConditionalSurvival,
            &fr as &dyn ConditionalSurvival,
        ] {
            let c = curve.conditional(longest + 5.0, 10.0);
            assert!(c.is_finite() && c > 0.0 && c <= 1.0, "node {node}: {c}");
        }
    }
    // unknown node: beta curve = pooled curve
    let none = model.beta_curve_with(1000, 42.0);
    for &x in &[1.0, 10.0, 20.0, 50.0] {
        assert!((none.survival(x) - model.pooled().survival(x)).abs() < 1e-15);
    }
}

#[test]
fn parametric_weibull_cases() {
    let Some(dir) = golden_dir() else {
        return;
    };
    for (file, k_true, trend) in [
        ("weibull_k2_n10000.json", 2.0, HazardTrend::Increasing),
        ("weibull_k0.5_n10000.json", 0.5, HazardTrend::Decreasing),
    ] {
        let doc = load(&dir.join("cases").join(file));
        let input = Input::from_json(&doc["fits"][0]);
        let r = hazard_shape_test(&input.data()).expect("fit");
        println!(
            "{file}: k = {:.4} [{:.4}, {:.4}], scale = {:.3}, LR = {:.1}, p = {:e}, verdict {:?}",
            r.weibull.shape,
            r.weibull.shape_ci.0,
            r.weibull.shape_ci.1,
            r.weibull.scale,
            r.lr_statistic,
            r.p_value,
            r.verdict
        );
        assert!(
            (r.weibull.shape - k_true).abs() < 0.1 * k_true,
            "{file}: k = {}",
            r.weibull.shape
        );
        assert!(
            (r.weibull.scale - 100.0).abs() < 5.0,
            "{file}: scale = {}",
            r.weibull.scale
        );
        assert!(r.weibull.shape_ci.0 < r.weibull.shape && r.weibull.shape < r.weibull.shape_ci.1);
        assert_eq!(r.verdict, trend, "{file}");
        assert!(r.p_value < 1e-10, "{file}: p = {}", r.p_value);
        // the Weibull curve is close to the KM on this data
        let km = KmFit::fit_data(&input.data()).expect("km");
        for &x in &[10.0, 50.0, 100.0, 150.0] {
            assert!(
                (r.weibull.survival(x) - km.survival(x)).abs() < 0.03,
                "{file}: S({x})"
            );
        }
    }
}

#[test]
fn shrinkage_with_left_truncation_has_the_right_limits() {
    let Some(dir) = golden_dir() else {
        return;
    };
    let doc = load(&dir.join("cases/node_sessions_left_truncated.json"));
    let (mut g, mut t, mut e, mut en) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut node_fits = Vec::new();
    for fit in doc["fits"].as_array().expect("fits") {
        if !fit["name"].as_str().unwrap_or("").starts_with("node_") {
            continue;
        }
        let inp = Input::from_json(fit);
        let node = node_fits.len() as u32;
        g.extend(std::iter::repeat_n(node, inp.durations.len()));
        t.extend(inp.durations.iter().copied());
        e.extend(inp.events.iter().copied());
        en.extend(inp.entry.clone().expect("entry"));
        node_fits.push(inp);
    }
    let data = SurvivalData::new(&t, &e).with_entry(&en);
    let opts = ShrinkageOptions {
        estimator: EstimatorChoice::BetaProcess,
        m: Some(5.0),
        ..ShrinkageOptions::default()
    };
    let model = ShrinkageModel::fit(&g, &data, &opts).expect("fit");
    // pooled hazard = KM of all sessions (same risk sets) at the pooled event times
    let km = KmFit::fit_data(&data).expect("km");
    let pooled = model.pooled();
    assert!(!pooled.times.is_empty());
    for (k, &x) in pooled.times.iter().enumerate() {
        let s = km.survival_at(x).expect("inside timeline");
        assert!((pooled.survival[k] - s).abs() < 1e-12, "pooled S({x})");
    }
    for (node, inp) in node_fits.iter().enumerate() {
        // M -> 0: node KM at the node's event times (those kept on the pooled grid: the guard
        // drops the last pooled time, where the pooled risk set empties); M -> inf: pooled curve
        let node_km = KmFit::fit_data(&inp.data()).expect("node km");
        let c0 = model.beta_curve_with(node, 1e-10);
        for (&x, &ev) in inp.durations.iter().zip(&inp.events) {
            if ev && pooled.times.binary_search_by(|p| p.total_cmp(&x)).is_ok() {
                let want = node_km.survival_at(x).expect("node time");
                assert!((c0.survival(x) - want).abs() < 1e-6, "node {node} S({x})");
            }
        }
        let cinf = model.beta_curve_with(node, 1e12);
        for &x in &[5.0, 20.0, 50.0, 100.0] {
            assert!((cinf.survival(x) - pooled.survival(x)).abs() < 1e-6);
        }
        // shrunk curves answer conditionals for any age
        let b = model.beta_curve(node).expect("M fixed");
        let f = model.frailty_curve(node);
        for a in [0.0, 10.0, 1e3] {
            for c in [
                b.conditional(a, 7.0),
                f.conditional(a, 7.0),
                f.conditional_live(a, 7.0),
            ] {
                assert!(
                    c.is_finite() && (0.0..=1.0).contains(&c),
                    "node {node} a {a}: {c}"
                );
            }
        }
    }
    assert!(model.theta() > 0.0 && model.theta().is_finite());
}
