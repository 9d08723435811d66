//! `hazardserve query`: every named query runs on the demo store (snapshots), parameters are
//! bound (an injection attempt is inert), `--list` documents them, `--file` runs a file; and
//! the listing conventions: empty CSV results keep their header, `sources` fits 100 columns.

use crate::common::{fails, help_tree, hs, ok, write};
use crate::tui_common::demo_store;

/// The parameters each named query is snapshotted with on the demo store.
const RUNS: &[(&str, &[&str])] = &[
    ("sources", &[]),
    ("nodes", &["source=sample-spot"]),
    ("sessions", &["source=sample-spot"]),
    ("rejects", &["source=sample-spot"]),
    ("session_quantiles", &["by=zone"]),
    ("availability", &["source=sample-spot", "k=2"]),
    ("availability_by_hour", &["source=sample-gce", "by=weekday"]),
    ("churn", &["source=sample-spot"]),
    ("censoring", &[]),
    ("end_causes", &["source=sample-gce"]),
    ("duplicate_inputs", &[]),
    ("run_policies", &[]),
    ("slowest_requests", &["policy=hazard", "limit=5"]),
    ("planned_migrations", &["run=run-demo"]),
    ("sweep_pays", &["which=any"]),
];

/// CSV of a query on the demo store, with times of ingestion and the checkout path masked.
fn query_csv(name: &str, params: &[&str]) -> String {
    let mut c = hs(demo_store());
    c.args(["-q", "query", name, "--format", "csv"]);
    for p in params {
        c.args(["--param", p]);
    }
    let text = ok(c);
    let repo = env!("CARGO_MANIFEST_DIR");
    let masked = text.replace(repo, "[repo]");
    // ingested_at: 2026-12-01T23:09:20Z
    let re_time = |s: &str| -> String {
        let mut out = String::new();
        for line in s.lines() {
            let mut l = line.to_string();
            if let Some(i) = l.rfind(",20") {
                if l.len() - i == 21 && l.ends_with('Z') {
                    l.replace_range(i + 1.., "[time]");
                }
            }
            out.push_str(&l);
            out.push('\n');
        }
        out
    };
    re_time(&masked)
}

#[test]
fn every_named_query_runs_on_the_demo_store() {
    let mut c = hs(demo_store());
    c.args(["query", "--list", "--format", "json"]);
    let listed: Vec<serde_json::Value> = serde_json::from_str(&ok(c)).unwrap();
    let names: Vec<&str> = listed.iter().map(|q| q["name"].as_str().unwrap()).collect();
    assert!(names.len() >= 14, "{names:?}");
    assert_eq!(
        names,
        RUNS.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        "every named query has a snapshot"
    );
    for q in &listed {
        assert!(!q["purpose"].as_str().unwrap().is_empty(), "{q}");
        assert!(!q["columns"].as_str().unwrap().is_empty(), "{q}");
    }
    for (name, params) in RUNS {
        let text = query_csv(name, params);
        // The header is the documented columns, even without rows.
        let header = text.lines().next().unwrap_or_default().to_string();
        let doc = listed.iter().find(|q| q["name"] == *name).unwrap();
        assert_eq!(
            header,
            doc["columns"].as_str().unwrap().replace(", ", ","),
            "{name}: the header lists the documented columns"
        );
        insta::assert_snapshot!(format!("query_{name}"), text);
    }
}

#[test]
fn query_parameters_are_bound_not_spliced() {
    let store = demo_store();
    let attack = "sample-spot' OR '1'='1";
    let mut c = hs(store);
    c.args([
        "-q",
        "query",
        "churn",
        "--param",
        &format!("source={attack}"),
        "--format",
        "csv",
    ]);
    let out = ok(c);
    assert_eq!(
        out.lines().count(),
        1,
        "no node matches the literal text:\n{out}"
    );
    let mut c = hs(store);
    c.args([
        "-q",
        "query",
        "censoring",
        "--param",
        "source=x'; DROP VIEW sessions; --",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c).lines().count(), 1);
    // The store is intact.
    assert!(query_csv("censoring", &[]).contains("sample-spot"));
}

#[test]
fn query_errors_name_the_parameters() {
    let store = demo_store();
    let mut c = hs(store);
    c.args(["query", "availability"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("--param source=VALUE"), "{err}");
    let mut c = hs(store);
    c.args([
        "query",
        "availability",
        "--param",
        "source=sample-spot",
        "--param",
        "zone=x",
    ]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("no parameter \"zone\"") && err.contains("source, k"),
        "{err}"
    );
    let mut c = hs(store);
    c.args(["query", "availabilty"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("named queries:") && err.contains("availability"),
        "{err}"
    );
}

#[test]
fn query_file_binds_its_parameters_and_stays_read_only() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "my.sql",
        "-- Param min = 10: shortest session kept\nSELECT count(*) AS n FROM sessions WHERE source = $source AND duration_s >= $min::DOUBLE\n",
    );
    let mut c = hs(demo_store());
    c.args(["-q", "query", "--file"]).arg(&f).args([
        "--param",
        "source=sample-spot",
        "--format",
        "csv",
    ]);
    let out = ok(c);
    let n: i64 = out.lines().nth(1).unwrap().parse().unwrap();
    assert!(n > 0 && n <= 55, "{out}");
    let w = write(tmp.path(), "w.sql", "DROP VIEW sessions\n");
    let mut c = hs(demo_store());
    c.args(["query", "--file"]).arg(&w);
    fails(c);
}

#[test]
fn empty_results_keep_their_header_and_sources_fits_100_columns() {
    let store = demo_store();
    let mut c = hs(store);
    c.args([
        "-q",
        "sql",
        "SELECT source, nodes FROM sources WHERE false",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c), "source,nodes\n");
    let mut c = hs(store);
    c.args(["-q", "sources"]);
    let table = ok(c);
    assert!(
        table.lines().all(|l| l.chars().count() <= 100),
        "the default sources table fits 100 columns:\n{table}"
    );
    assert!(
        table.contains("censored") && table.contains("sample-gce"),
        "{table}"
    );
    let mut c = hs(store);
    c.args(["-q", "sources", "--wide"]);
    let wide = ok(c);
    assert!(
        wide.contains("adapter") && wide.contains("left_truncated_share"),
        "{wide}"
    );
    // Times of UTC sources as ISO-8601, relative ones in seconds.
    assert!(wide.contains("2019-03-03T"), "{wide}");
    assert!(wide.contains("128000 s"), "{wide}");
    let mut c = hs(store);
    c.args(["-q", "sources", "--format", "csv"]);
    let csv = ok(c);
    assert!(csv.lines().next().unwrap().contains("observation_start"));
}

#[test]
fn ingest_public_on_a_directory_without_traces_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let mut c = hs(&tmp.path().join("store"));
    c.arg("ingest-public").arg(&empty);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("no public traces here"), "{err}");
    assert!(!tmp.path().join("store").exists(), "nothing was written");
}

#[test]
fn completions_and_man_pages_come_from_the_command_definitions() {
    let tmp = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let mut c = hs(tmp.path());
        c.args(["completions", shell]);
        let script = ok(c);
        assert!(
            script.contains("hazardserve")
                && script.contains("ingest-public")
                && script.contains("sweep"),
            "{shell} completion lacks the commands"
        );
    }
    let mut c = hs(tmp.path());
    c.arg("man");
    let page = ok(c);
    assert!(
        page.starts_with(".ie") || page.contains(".TH"),
        "{}",
        &page[..200.min(page.len())]
    );
    assert!(page.contains("hazardserve"));
    let dir = tmp.path().join("man1");
    let mut c = hs(tmp.path());
    c.args(["man", "--out-dir"]).arg(&dir);
    ok(c);
    for page in [
        "hazardserve.1",
        "hazardserve-fit.1",
        "hazardserve-query.1",
        "hazardserve-sweep.1",
    ] {
        assert!(dir.join(page).is_file(), "{page} not written");
    }
    assert!(
        !tmp.path().join("hazardserve-store").exists(),
        "no store is created"
    );
}

#[test]
fn long_tables_elide_their_middle_and_all_streams_every_row() {
    let store = demo_store();
    let data_rows = |t: &str| t.lines().filter(|l| l.starts_with("| preemption/")).count();
    let mut c = hs(store);
    c.args(["-q", "sessions", "--source", "sample-spot"]);
    let short = ok(c);
    assert_eq!(data_rows(&short), 40, "{short}");
    assert!(
        short.contains("… 15 more rows (--all prints every row"),
        "{short}"
    );
    let mut c = hs(store);
    c.args(["-q", "sessions", "--source", "sample-spot", "--all"]);
    let all = ok(c);
    assert_eq!(data_rows(&all), 55, "{all}");
    // The streamed table has the same layout as the elided one (same widths, same cells).
    let first_lines = |t: &str| t.lines().take(8).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(first_lines(&short), first_lines(&all));
    assert_eq!(short.lines().last(), all.lines().last());
    let mut c = hs(store);
    c.args([
        "-q",
        "sessions",
        "--source",
        "sample-spot",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c).lines().count(), 56);
}

#[test]
fn every_help_has_examples_that_do_not_wrap_at_80_columns() {
    let mut checked = 0;
    for (cmd, text) in help_tree() {
        let examples: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Example"))
            .skip(1)
            .take_while(|l| !l.starts_with(|c: char| c.is_ascii_alphabetic()))
            .filter(|l| !l.is_empty())
            .collect();
        assert!(
            examples
                .iter()
                .any(|l| ["  hazardserve", "  cargo", "  cp ", "  for "]
                    .iter()
                    .any(|p| l.starts_with(p))),
            "`hazardserve {}` has no example:\n{text}",
            cmd.join(" ")
        );
        for l in &examples {
            assert!(
                l.starts_with("  hazardserve")
                    || l.starts_with("  cargo")
                    || l.starts_with("  for ")
                    || l.starts_with("  cp ")
                    || l.starts_with("  #")
                    || l.starts_with("      "),
                "`hazardserve {} --help`: an example wraps at 80 columns: {l:?}\n{text}",
                cmd.join(" ")
            );
        }
        checked += 1;
    }
    assert!(checked >= 28, "{checked} commands checked");
}

#[test]
fn count_sources_keep_their_samples_so_any_threshold_is_a_query() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("counts");
    write(
        &dir,
        "a/us-east-1a.json",
        r#"{"metadata": {"gap_seconds": 10}, "data": [0, 3, 5, 2, 4]}"#,
    );
    write(
        &dir,
        "b/us-west-2b.json",
        r#"{"metadata": {"gap_seconds": 10}, "data": [1, 1, null, 4, 4]}"#,
    );
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args([
        "-q",
        "ingest",
        "--format",
        "tick-json",
        "--source",
        "counts",
        "--threshold",
        "3",
    ])
    .arg(&dir);
    ok(c);
    let share = |k: u32| -> Vec<(String, f64)> {
        let mut c = hs(&store);
        c.args([
            "-q",
            "query",
            "availability",
            "--param",
            "source=counts",
            "--param",
            &format!("k={k}"),
            "--format",
            "json",
        ]);
        let rows: Vec<serde_json::Value> = serde_json::from_str(&ok(c)).unwrap();
        rows.iter()
            .map(|r| {
                (
                    r["zone"].as_str().unwrap().to_string(),
                    r["available_share"].as_f64().unwrap(),
                )
            })
            .collect()
    };
    // Series a counts 0 3 5 2 4 and b 1 1 - 4 4 (one tick unobserved, not in the denominator):
    // whatever threshold the source was ingested with, each k is a query.
    for (k, a, b, all) in [
        (1, 0.8, 1.0, 8.0 / 9.0),
        (3, 0.6, 0.5, 5.0 / 9.0),
        (5, 0.2, 0.0, 1.0 / 9.0),
    ] {
        let rows = share(k);
        assert_eq!(rows.len(), 3, "{rows:?}");
        for ((zone, got), want) in rows.iter().zip([a, b, all]) {
            assert!((got - want).abs() < 1e-4, "k={k} {zone}: {got} vs {want}");
        }
        assert_eq!(rows[2].0, "(all)");
    }
    // The raw samples are a table of their own.
    let mut c = hs(&store);
    c.args([
        "-q",
        "sql",
        "SELECT count(*) AS n, sum(count) AS total FROM observations WHERE source = 'counts'",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c), "n,total\n9,24\n");
}
