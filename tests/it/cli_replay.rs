//! `replay` and `compare` through the real binary on the demo store.

use std::path::Path;

use crate::common::{fails, hs, ok, samples};

fn demo(dir: &Path) -> std::path::PathBuf {
    let store = dir.join("store");
    let mut c = hs(&store);
    c.arg("demo").arg("--samples").arg(samples());
    ok(c);
    store
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("bad JSON ({e}): {s}"))
}

/// Keys every comparison row has (the replay-science issue's acceptance list and more).
const KEYS: [&str; 18] = [
    "policy",
    "requests",
    "mean_completion_s",
    "p50_completion_s",
    "p90_completion_s",
    "p99_completion_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "unfinished",
    "unplanned_interruptions",
    "recovery_s",
    "recomputed_tokens",
    "planned_migrations",
    "slo_attainment",
    "slo_goodput",
    "interruptions_per_started",
    "interruptions_by_cause",
    "gap_closed",
];

/// Metrics every `vs_fastest` object carries, each `{diff, ci_low, ci_high}`.
const PAIRED: [&str; 8] = [
    "mean_completion_s",
    "p99_completion_s",
    "unfinished",
    "unplanned_interruptions",
    "recovery_s",
    "recomputed_tokens",
    "slo_goodput",
    "planned_migrations",
];

#[test]
fn compare_prints_every_policy_with_the_documented_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo(tmp.path());
    let mut c = hs(&store);
    c.args(["compare", "--format", "json"]);
    let v = json(&ok(c));
    let rows = v.as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    for p in [
        "hazard",
        "hazard-nomigrate",
        "memoryless",
        "hazard-pooled",
        "fastest",
        "least-loaded",
        "random",
        "uptime",
        "oracle",
        "bound",
        "hazard --overlap",
    ] {
        assert!(names.contains(&p), "{p} missing from {names:?}");
    }
    for r in rows {
        for k in KEYS {
            assert!(r.get(k).is_some(), "{k} missing: {r}");
        }
        // Ten windows: every metric with a value has a bootstrap interval around it.
        let m = r["mean_completion_s"].as_f64().unwrap();
        let ci = r["mean_completion_s_ci"].as_array().unwrap();
        assert!(
            ci[0].as_f64().unwrap() <= m + 1e-9 && m <= ci[1].as_f64().unwrap() + 1e-9,
            "{r}"
        );
    }
    let by = |p: &str| rows.iter().find(|r| r["policy"] == p).unwrap();
    for r in rows.iter().filter(|r| r["policy"] != "fastest") {
        let vs = r["vs_fastest"].as_object().unwrap_or_else(|| panic!("{r}"));
        for k in PAIRED {
            let d = &vs[k];
            let (diff, lo, hi) = (
                d["diff"].as_f64().unwrap(),
                d["ci_low"].as_f64().unwrap(),
                d["ci_high"].as_f64().unwrap(),
            );
            assert!(lo <= diff + 1e-9 && diff <= hi + 1e-9, "{k}: {d}");
        }
        // The gap is measured on the default metric, where the oracle is a tested reference.
        assert_eq!(r["gap_metric"], "unplanned_interruptions", "{r}");
        // A ratio is printed only when there is a gap: then it has an interval.
        match r["gap_closed"].as_f64() {
            Some(g) => {
                let ci = r["gap_closed_ci"].as_array().unwrap();
                assert!(
                    ci[0].as_f64().unwrap() <= g && g <= ci[1].as_f64().unwrap(),
                    "{r}"
                );
            }
            None => assert!(
                ["none", "not a policy", "imprecise"].contains(&r["gap"].as_str().unwrap()),
                "{r}"
            ),
        }
    }
    // Where there is a gap, fastest closes none of it and the oracle all of it.
    if by("oracle")["gap_closed"].is_number() {
        assert_eq!(by("fastest")["gap_closed"], 0.0);
        assert_eq!(by("oracle")["gap_closed"], 1.0);
    }
    // The oracle is never interrupted more than fastest (it sees every end coming).
    assert!(
        by("oracle")["unplanned_interruptions"].as_f64().unwrap()
            <= by("fastest")["unplanned_interruptions"].as_f64().unwrap(),
        "{}",
        by("oracle")
    );
    // The bound is never beaten on mean completion.
    let bound = by("bound")["mean_completion_s"].as_f64().unwrap();
    for r in rows {
        assert!(
            bound <= r["mean_completion_s"].as_f64().unwrap() + 1e-9,
            "{r}"
        );
    }

    // The per-request records are in the store, one per request per run.
    let mut c = hs(&store);
    c.args(["sql", "--format", "json", "SELECT count(*) AS n, count(DISTINCT policy || param) AS runs, sum(CASE WHEN dropped IS NULL THEN 1 ELSE 0 END) AS done FROM replay_requests WHERE run_id = 'run-demo'"]);
    let v = json(&ok(c));
    assert!(v[0]["n"].as_i64().unwrap() > 10_000);
    // Ten policies at the default point, and at the overlap point only those that make
    // planned moves (hazard, memoryless, oracle; the twin hazard-pooled is paired with
    // hazard at the default point only): overlap changes nothing for the others.
    assert_eq!(v[0]["runs"], 13);
    // CSV has the interval columns.
    let mut c = hs(&store);
    c.args(["compare", "run-demo", "--format", "csv"]);
    let csv = ok(c);
    assert!(csv.lines().next().unwrap().contains("gap_closed_ci_lo"));
    assert_eq!(csv.lines().count(), rows.len() + 1);
}

#[test]
fn replay_flags_override_a_config_file_and_bad_files_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo(tmp.path());
    let mut c = hs(&store);
    c.args(["replay", "--write-config"]);
    let text = ok(c);
    let cfg = tmp.path().join("scenario.toml");
    std::fs::write(&cfg, text.replace("windows = 10", "windows = 2")).unwrap();
    let mut c = hs(&store);
    c.args(["replay", "--config"]).arg(&cfg).args([
        "--policies",
        "fastest,oracle",
        "--windows",
        "3",
        "--format",
        "json",
        "--no-save",
    ]);
    let v = json(&ok(c));
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fastest", "oracle"]);
    // Three windows (the flag beats the file's two): intervals exist.
    assert!(v[0]["mean_completion_s_ci"].is_array());

    std::fs::write(&cfg, "[replay]\nwindow = 3\n").unwrap();
    let mut c = hs(&store);
    c.args(["replay", "--config"]).arg(&cfg);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("scenario.toml") && err.contains("window"),
        "{err}"
    );

    let mut c = hs(&store);
    c.args(["replay", "--workload", "sample-spot", "--no-save"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("no requests"), "{err}");
}

#[test]
fn compare_without_runs_says_what_to_run() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args(["ingest", "--format", "fta", "--source", "hpc"])
        .arg(samples().join("fta"));
    ok(c);
    let mut c = hs(&store);
    c.arg("compare");
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("hazardserve replay"), "{err}");
}

#[test]
fn explicit_hardware_figures_change_the_service_times() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo(tmp.path());
    let mean = |extra: &str| -> f64 {
        let cfg = tmp.path().join("hw.toml");
        std::fs::write(&cfg, format!("[hardware]\npreset = \"a100\"\n{extra}\n[replay]\nwindows = 2\npolicies = [\"fastest\"]\ninclude_overlap = false\n")).unwrap();
        let mut c = hs(&store);
        c.args(["replay", "--no-save", "--format", "json", "--config"])
            .arg(&cfg);
        let v = json(&ok(c));
        v[0]["mean_completion_s"].as_f64().unwrap()
    };
    let fast = mean("");
    let slow = mean("decode_tok_s = 5.0");
    // Decode is most of a request's time: 11x slower decode is several times slower service.
    assert!(slow > 4.0 * fast, "fast {fast} slow {slow}");
}

#[test]
fn a_run_never_replaces_a_source_of_the_same_name() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    // A source that happens to be called like the demo's run.
    let mut c = hs(&store);
    c.args(["ingest", "--format", "fta", "--source", "run-demo"])
        .arg(samples().join("fta"));
    ok(c);
    let mut c = hs(&store);
    c.arg("demo").arg("--samples").arg(samples());
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("already used"), "{err}");
    let mut c = hs(&store);
    c.args(["sessions", "--source", "run-demo", "--format", "json"]);
    assert_eq!(json(&ok(c)).as_array().unwrap().len(), 188);
}

/// `hazard-truth` runs only where `policy.truth` knows the fleet's laws: without them it is
/// left out with a note, a laws file without the source is a note too, and a file that knows
/// the source but not one of its nodes is an error naming the file and the node.
#[test]
fn hazard_truth_needs_the_fleets_laws_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let store = demo(tmp.path());
    let mut c = hs(&store);
    c.args(["replay", "--write-config"]);
    let text = ok(c).replace("windows = 10", "windows = 2");
    let run = |truth: &str| {
        let cfg = tmp.path().join("scenario.toml");
        std::fs::write(
            &cfg,
            text.replace("truth = \"\"", &format!("truth = {truth:?}")),
        )
        .unwrap();
        let mut c = hs(&store);
        c.args(["replay", "--config"]).arg(&cfg).args([
            "--policies",
            "hazard,hazard-truth,fastest",
            "--format",
            "json",
            "--no-save",
        ]);
        c
    };
    let out = run("").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("hazard-truth not run"), "{err}");
    let v = json(&String::from_utf8_lossy(&out.stdout));
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["hazard", "fastest", "hazard --overlap"]);

    let laws = |file: &str, row: &str| {
        let path = tmp.path().join(file);
        std::fs::write(&path, format!("source,node_id,law,shape,scale_s\n{row}\n")).unwrap();
        path
    };
    let other = laws("other.csv", "somewhere-else,n1,weibull,2,600");
    let out = run(other.to_str().unwrap()).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("has no generating law for source sample-spot"),
        "{err}"
    );

    let partial = laws("partial.csv", "sample-spot,no-such-node,weibull,2,600");
    let err = String::from_utf8_lossy(&fails(run(partial.to_str().unwrap())).stderr).into_owned();
    assert!(
        err.contains("policy.truth")
            && err.contains("partial.csv")
            && err.contains("no generating law for node"),
        "{err}"
    );

    let bad = laws("bad.csv", "sample-spot,a,weibull,x,600");
    let err = String::from_utf8_lossy(&fails(run(bad.to_str().unwrap())).stderr).into_owned();
    assert!(
        err.contains("bad.csv:2: shape must be a positive number"),
        "{err}"
    );
}

/// Lines of the tables in `out` (borders and rows).
fn table_lines(out: &str) -> Vec<&str> {
    out.lines()
        .filter(|l| l.starts_with('+') || l.starts_with('|'))
        .collect()
}

/// The tables of `demo`, `compare` and `sweep summary` keep to 100 columns when standard output
/// is not a terminal, answer first, and name what they leave out; `--wide` shows every column;
/// the demo ends with its answer in the verdict words.
#[test]
fn tables_fit_100_columns_and_wide_shows_every_column() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.arg("demo").arg("--samples").arg(samples());
    let demo = ok(c);
    let last = demo.lines().rev().find(|l| !l.trim().is_empty()).unwrap();
    assert!(
        last.starts_with(
            "Answer: on the sample fleet the hazard term (hazard against its hazard-blind twin \
             hazard-pooled) pays in "
        ) && last.contains(" of the map's 12 cells; in the replay, hazard against fastest: ")
            && ["pays", "loses", "no difference"]
                .iter()
                .any(|w| last.contains(&format!("fastest: {w} in mean completion"))),
        "the demo's last line: {last}"
    );
    let narrow = |args: &[&str]| {
        let mut c = hs(&store);
        c.args(args);
        let out = ok(c);
        for l in table_lines(&out) {
            assert!(l.chars().count() <= 100, "{args:?}: {l}");
        }
        out
    };
    for out in [&demo, &narrow(&["compare", "run-demo"])] {
        let header = table_lines(out)
            .into_iter()
            .find(|l| l.starts_with("| policy "))
            .unwrap();
        for col in ["mean_s", "p99_s", "interrupts", "vs_fastest"] {
            assert!(header.contains(col), "{header}");
        }
        assert!(
            out.contains("more columns (--wide shows them; csv and json have every column): ")
                && out.contains("mean_vs_fastest_s"),
            "{out}"
        );
    }
    let compare = narrow(&["compare", "run-demo"]);
    insta::assert_snapshot!("compare_at_100_columns", compare);
    let mut c = hs(&store);
    c.args(["compare", "run-demo", "--wide"]);
    let wide = ok(c);
    let header = table_lines(&wide)[1];
    for col in [
        "mean_vs_fastest_s",
        "gap_closed",
        "slo",
        "interruption_brier",
    ] {
        assert!(header.contains(col), "--wide: {header}");
    }
    assert!(header.chars().count() > 100 && !wide.contains("more column"));
    let summary = narrow(&["sweep", "summary", "demo-map"]);
    // The map's answer first: the two verdicts before the other comparisons.
    let head = table_lines(&summary)[1];
    for col in ["hazard_term", "load_forecast"] {
        assert!(head.contains(col), "sweep summary: {head}");
    }
    let mut c = hs(&store);
    c.args(["sweep", "summary", "demo-map", "--wide"]);
    let wide = ok(c);
    assert!(table_lines(&wide)[1].chars().count() >= table_lines(&summary)[1].chars().count());
}
