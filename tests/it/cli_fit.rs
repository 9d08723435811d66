//! `km`, `fit`, `fit --validate` and `priors export` through the real binary.

use std::path::Path;

use hazardserve::survival::curve::ConditionalSurvival;
use hazardserve::survival::priors::Priors;

use crate::common::{fails, hs, ok, samples};

fn demo_store(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("store");
    let mut c = hs(&store);
    c.arg("demo").arg("--samples").arg(samples());
    ok(c);
    store
}

#[test]
fn km_of_a_csv_matches_a_hand_computed_product_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("t.csv");
    // Times 1..4, the one at 2 censored: S(1) = 3/4, S(2) = 3/4, S(3) = 3/8, S(4) = 0.
    std::fs::write(&csv, "duration,event\n3,1\n1,1\n2,0\n4,1\n").unwrap();
    let mut c = hs(tmp.path());
    c.args(["km", "--format", "json", "--input"]).arg(&csv);
    let out = c.output().unwrap();
    assert!(out.status.success());
    // An array of objects keyed by column name, one per step; the median is a note on stderr.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v.as_array().unwrap();
    let col = |k: &str| -> Vec<serde_json::Value> { rows.iter().map(|r| r[k].clone()).collect() };
    assert_eq!(
        col("timeline"),
        serde_json::json!([0.0, 1.0, 2.0, 3.0, 4.0])
            .as_array()
            .unwrap()
            .clone()
    );
    assert_eq!(
        col("n_at_risk"),
        serde_json::json!([4, 4, 3, 2, 1])
            .as_array()
            .unwrap()
            .clone()
    );
    assert_eq!(
        col("n_event"),
        serde_json::json!([0, 1, 0, 1, 1])
            .as_array()
            .unwrap()
            .clone()
    );
    let s: Vec<f64> = col("survival")
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    for (got, want) in s.iter().zip([1.0, 0.75, 0.75, 0.375, 0.0]) {
        assert!((got - want).abs() < 1e-12, "{s:?}");
    }
    assert!(String::from_utf8_lossy(&out.stderr).contains("median: 3"));
    for r in rows {
        assert!(
            r.get("ci_lower").is_some() && r.get("ci_upper").is_some(),
            "{r}"
        );
    }
    // Entry ages (left truncation) are honoured; a bad value names its line.
    std::fs::write(&csv, "T,E,entry\n5,1,0\n6,0,2\n7,1,x\n").unwrap();
    let mut c = hs(tmp.path());
    c.args([
        "km",
        "--duration",
        "T",
        "--event",
        "E",
        "--entry",
        "entry",
        "--input",
    ])
    .arg(&csv);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("t.csv:4") && err.contains("entry"), "{err}");
}

#[test]
fn fit_prints_pooled_curves_and_the_hazard_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo_store(tmp.path());
    let mut c = hs(&store);
    c.args(["fit", "--source", "sample-hpc", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let g = &v[0];
    assert_eq!(g["group"], "all");
    assert_eq!(g["sessions"], 188);
    // The sample's up-times are log-normal with sigma 2.39: a clearly decreasing hazard.
    assert_eq!(g["verdict"], "decreasing", "{g}");
    assert!(g["weibull_shape_hi"].as_f64().unwrap() < 1.0);
    assert!(["beta", "frailty"].contains(&g["shrinkage"].as_str().unwrap()));
    // --curve prints the pooled curve as its own single table.
    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-hpc",
        "--curve",
        "--format",
        "csv",
    ]);
    let csv = ok(c);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("group,t_s,survival"));
    let s: Vec<f64> = lines
        .map(|l| l.rsplit(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(s.len() > 10 && s.windows(2).all(|w| w[1] <= w[0]), "{s:?}");

    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-gce",
        "--by",
        "zone",
        "--format",
        "json",
        "--shrinkage",
        "none",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let zones: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["group"].as_str().unwrap())
        .collect();
    assert_eq!(zones, ["us-central1-c", "us-east1-b", "us-west1-a"]);
    let total: i64 = v
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["sessions"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 150);
}

#[test]
fn validate_scores_every_estimator() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo_store(tmp.path());
    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-hpc",
        "--validate",
        "--split",
        "0.5",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    // One row per estimator and calibration horizon, with numeric calibration columns.
    let mut names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["estimator"].as_str().unwrap())
        .collect();
    names.dedup();
    assert_eq!(
        names,
        ["node_km", "pooled_km", "beta", "frailty", "exponential"]
    );
    for r in v.as_array().unwrap() {
        let ibs = r["ibs"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&ibs), "{r}");
        for k in ["horizon_s", "predicted", "observed"] {
            assert!(r[k].is_number(), "{k}: {r}");
        }
    }
    // --split defaults to 0.6 of the span.
    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-hpc",
        "--validate",
        "--format",
        "csv",
    ]);
    assert!(ok(c).starts_with(
        "estimator,n_test,ibs,ibs_ci_low,ibs_ci_high,concordance,concordance_ci_low,\
         concordance_ci_high,horizon_s,predicted,observed"
    ));
    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-hpc",
        "--validate",
        "--split",
        "1900-01-01T00:00:00Z",
    ]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("outside the observation") && err.contains("UTC clock"),
        "{err}"
    );
    // A relative-clock source names its clock and says how to give the split.
    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-spot",
        "--validate",
        "--split",
        "1682035200",
    ]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("relative clock") && err.contains("as a fraction"),
        "{err}"
    );
}

#[test]
fn exported_priors_load_back_to_the_same_curves() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo_store(tmp.path());
    let out = tmp.path().join("p.json");
    let mut c = hs(&store);
    c.args([
        "priors",
        "export",
        "--source",
        "sample-hpc",
        "--before",
        "1120000000",
        "--out",
    ])
    .arg(&out);
    ok(c);
    let p = Priors::from_json(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(p.cutoff_s, 1_120_000_000.0);
    assert_eq!(p.nodes.len(), 30);
    // Every node curve evaluates to its exported steps.
    for n in &p.nodes {
        let curve = p.node_curve(&n.node_id);
        for (t, s) in n.steps.t.iter().zip(&n.steps.s) {
            assert_eq!(curve.survival(*t), *s, "node {}", n.node_id);
        }
    }
    let pq = tmp.path().join("p.parquet");
    let mut c = hs(&store);
    c.args([
        "priors",
        "export",
        "--source",
        "sample-hpc",
        "--format",
        "parquet",
        "--out",
    ])
    .arg(&pq);
    ok(c);
    assert!(std::fs::metadata(&pq).unwrap().len() > 100);
}

#[test]
fn km_names_a_missing_event_column_and_reads_quoted_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("q.csv");
    std::fs::write(&csv, "\"duration\",\"died\"\n\"3\",\"1\"\n\"1\",\"0\"\n").unwrap();
    let mut c = hs(tmp.path());
    c.args(["km", "--event", "dead", "--input"]).arg(&csv);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("no event column \"dead\"") && err.contains("died"),
        "{err}"
    );
    let mut c = hs(tmp.path());
    c.args(["km", "--event", "died", "--format", "json", "--input"])
        .arg(&csv);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let events: Vec<i64> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["n_event"].as_i64().unwrap())
        .collect();
    assert_eq!(events, [0, 0, 1]);
}
