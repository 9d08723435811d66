//! Evidence rules: no verdict rests on fewer than the minimum of events, in any group of any
//! public source, through the library and the CLI; medians not reached say so; the smoothed
//! hazard is printed by `fit --hazard`.

use hazardserve::fit::{self, ByColumn, DEFAULT_MIN_EVENTS};
use hazardserve::public::PUBLIC_SOURCES;
use hazardserve::store::Store;

use crate::common::{hs, ok, public_store};

const VERDICTS: [&str; 5] = ["decreasing", "increasing", "constant", "bathtub", "capped"];

#[test]
fn no_verdict_rests_on_fewer_than_the_minimum_events_in_any_public_group() {
    let Some(store) = public_store() else {
        return;
    };
    let st = Store::open(store).unwrap();
    let (mut groups, mut too_few, mut judged) = (0, 0, 0);
    for src in PUBLIC_SOURCES {
        for by in [
            None,
            Some(ByColumn::Zone),
            Some(ByColumn::InstanceType),
            Some(ByColumn::NodeGroup),
        ] {
            let mut data = fit::load_sessions(&st, src.source, by, false).unwrap();
            if data.sessions.is_empty() {
                data = fit::load_sessions(&st, src.source, by, true).unwrap();
            }
            let fits = fit::fit_groups_with(&data, None, DEFAULT_MIN_EVENTS).unwrap();
            for g in fits {
                groups += 1;
                let what = format!("{} by {by:?}, group {}", src.source, g.group);
                if g.events < DEFAULT_MIN_EVENTS {
                    too_few += 1;
                    assert!(
                        g.verdict.starts_with("too few events") || g.verdict.starts_with("n/a"),
                        "{what}: verdict {:?} on {} events",
                        g.verdict,
                        g.events
                    );
                    assert!(
                        g.weibull_shape.is_none()
                            && g.lr_p_value.is_none()
                            && g.shape_model.is_none()
                            && g.aic_gap.is_none(),
                        "{what}: parametric columns on {} events",
                        g.events
                    );
                } else {
                    judged += 1;
                    assert!(
                        VERDICTS.contains(&g.verdict.as_str()) || g.verdict.starts_with("n/a"),
                        "{what}: {:?}",
                        g.verdict
                    );
                }
                if g.median_s.is_none() && g.sessions > 0 {
                    assert!(g.median.starts_with("> "), "{what}: {}", g.median);
                }
            }
        }
    }
    eprintln!("{groups} groups: {judged} with a verdict, {too_few} with too few events");
    assert!(
        too_few > 0 && judged > 0,
        "the rule was not exercised both ways"
    );
}

#[test]
fn fit_min_events_changes_the_rule_and_the_json_nulls_follow() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.arg("demo");
    ok(c);
    let fit = |min: &str| -> serde_json::Value {
        let mut c = hs(&store);
        c.args([
            "fit",
            "--source",
            "sample-hpc",
            "--shrinkage",
            "none",
            "--format",
            "json",
            "--min-events",
            min,
        ]);
        serde_json::from_str(&ok(c)).unwrap()
    };
    let v = fit("10");
    let events = v[0]["events"].as_i64().unwrap();
    assert!(events >= 10, "{v}");
    assert!(VERDICTS.contains(&v[0]["verdict"].as_str().unwrap()), "{v}");
    assert!(
        v[0]["model"].is_string() && v[0]["evidence"].is_string(),
        "{v}"
    );
    let v = fit(&(events + 1).to_string());
    assert_eq!(
        v[0]["verdict"].as_str().unwrap(),
        format!("too few events ({events})")
    );
    assert!(
        v[0]["weibull_shape"].is_null() && v[0]["model"].is_null(),
        "{v}"
    );
}

#[test]
fn fit_hazard_prints_a_smoothed_hazard_with_its_interval() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.arg("demo");
    ok(c);
    let mut c = hs(&store);
    c.args([
        "fit",
        "--source",
        "sample-hpc",
        "--hazard",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let rows = v.as_array().unwrap();
    assert!(rows.len() >= 50, "{v}");
    for r in rows {
        let (h, lo, hi) = (
            r["hazard_per_h"].as_f64().unwrap(),
            r["ci_low_per_h"].as_f64().unwrap(),
            r["ci_high_per_h"].as_f64().unwrap(),
        );
        assert!(h >= 0.0 && lo <= h && h <= hi, "{r}");
    }
}

#[test]
fn nodes_median_is_kaplan_meier_and_says_when_not_reached() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    // node a: three ends; node b: one long censored session (no event).
    let input = tmp.path().join("t.csv");
    std::fs::write(
        &input,
        // t in milliseconds
        "0,add,a\n100000,remove,a\n200000,add,a\n500000,remove,a\n600000,add,a\n700000,remove,a\n0,add,b\n20000000,add,c\n20010000,remove,c\n",
    )
    .unwrap();
    let mut c = hs(&store);
    c.args(["ingest", "--format", "add-remove", "--source", "t"])
        .arg(&input);
    ok(c);
    let mut c = hs(&store);
    c.args(["nodes", "--source", "t", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let row = |id: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|r| r["node_id"].as_str().unwrap().ends_with(id))
            .unwrap()
            .clone()
    };
    assert_eq!(row("/a")["median_up_s"].as_f64(), Some(100.0), "{v}");
    let b = row("/b");
    assert!(b["median_up_s"].is_null(), "{b}");
    assert!(
        b["median_up"].as_str().unwrap().starts_with("> 20010"),
        "{b}"
    );
}
