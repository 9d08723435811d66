//! `hazardserve sweep`: cells are the grid's product, results do not depend on `--jobs` or on
//! sharding, a cell where nothing fails shows no effect, and a cluster built to make hazard
//! awareness pay shows it.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{fails, hs, ok, write};

/// A small seeded generator (the tests need no statistics from it, only variety).
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    pub(crate) fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

/// An add-remove log (ms) of `nodes` nodes over `horizon_s`: up-sessions from `up(rng)`
/// seconds (`None` = never fails), down times of 30 to 90 s.
pub(crate) fn availability(
    nodes: usize,
    horizon_s: f64,
    seed: u64,
    up: impl Fn(&mut Lcg) -> Option<f64>,
) -> String {
    let mut rng = Lcg(seed);
    let mut lines = Vec::new();
    for n in 0..nodes {
        let mut t = rng.unit() * 60.0;
        while t < horizon_s {
            lines.push((t, format!("{},add,n{n}", (t * 1000.0).round() as i64)));
            let Some(d) = up(&mut rng) else {
                break;
            };
            t += d;
            if t >= horizon_s {
                break;
            }
            lines.push((t, format!("{},remove,n{n}", (t * 1000.0).round() as i64)));
            t += 30.0 + 60.0 * rng.unit();
        }
    }
    lines.sort_by(|a, b| a.0.total_cmp(&b.0));
    // JSON lines: a `DONE` record at the horizon closes the observation of every node.
    lines.push((horizon_s, String::new()));
    let mut out = String::new();
    for (t, l) in lines {
        let ms = (t * 1000.0).round() as i64;
        match l
            .split_once(',')
            .map(|(_, rest)| rest.split_once(',').unwrap())
        {
            Some((action, node)) => out.push_str(&format!(
                "[{ms}, \"{action}\", {{\"nodes\": [\"{node}\"]}}]\n"
            )),
            None => out.push_str(&format!("[{ms}, \"DONE\"]\n")),
        }
    }
    out
}

/// A request CSV: Poisson arrivals at `rate` per second over `span_s`, prompts of 200 to 600
/// tokens, outputs around `output` tokens.
pub(crate) fn requests(span_s: f64, rate: f64, output: u64, seed: u64) -> String {
    let mut rng = Lcg(seed);
    let mut out = String::from("arrival_s,prompt_tokens,output_tokens\n");
    let mut t = 0.0;
    while t < span_s {
        t += -rng.unit().ln() / rate;
        let prompt = 200 + (rng.unit() * 400.0) as u64;
        let o = (output as f64 * (0.5 + rng.unit())) as u64;
        out.push_str(&format!("{t:.3},{prompt},{}\n", o.max(1)));
    }
    out
}

pub(crate) fn store_with(dir: &Path, nodes_csv: &str, requests_csv: &str) -> PathBuf {
    let store = dir.join("store");
    let a = write(dir, "nodes.jsonl", nodes_csv);
    let r = write(dir, "requests.csv", requests_csv);
    let mut c = hs(&store);
    c.args([
        "-q",
        "ingest",
        "--format",
        "add-remove",
        "--source",
        "cluster",
    ])
    .arg(&a);
    ok(c);
    crate::common::ingest(&store, "lengths-csv", "reqs", &r);
    store
}

fn summary(store: &Path, id: &str) -> Vec<Value> {
    let mut c = hs(store);
    c.args(["-q", "sweep", "summary", id, "--format", "json"]);
    serde_json::from_str(&ok(c)).expect("summary JSON")
}

/// Writes `grid` as `dir/grid.toml`, runs it as sweep `id` and returns its summary.
fn sweep_summary(store: &Path, dir: &Path, id: &str, grid: &str) -> Vec<Value> {
    let grid = write(dir, "grid.toml", grid);
    let mut c = hs(store);
    c.args(["-q", "sweep", "--id", id, "--grid"]).arg(&grid);
    ok(c);
    summary(store, id)
}

/// The stored cells of a sweep without its id, in cell order (what must be equal).
pub(crate) fn cells(store: &Path, id: &str) -> String {
    let mut c = hs(store);
    c.args([
        "-q",
        "sql",
        "--format",
        "csv",
        &format!(
            "SELECT position, cell, axes, config, requests, result FROM sweep_cells WHERE sweep_id = '{id}' ORDER BY cell"
        ),
    ]);
    ok(c)
}

/// Asserts two stored sweeps are equal, showing where they first differ.
pub(crate) fn same(a: &str, b: &str, what: &str) {
    if a == b {
        return;
    }
    let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let from = at.saturating_sub(200);
    panic!(
        "{what} differ at byte {at}:\n{}\n---\n{}",
        &a[from..(at + 100).min(a.len())],
        &b[from..(at + 100).min(b.len())]
    );
}

pub(crate) const POLICIES: &str = "\"replay.policies\" = [\"hazard\", \"hazard-nomigrate\", \"hazard-pooled\", \"fastest\", \"least-loaded\", \"uptime\", \"oracle\"]\n";

#[test]
fn sweep_is_the_same_under_any_jobs_and_shards() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(
        tmp.path(),
        &availability(12, 40_000.0, 7, |r| Some(200.0 + 3000.0 * r.unit())),
        &requests(600.0, 0.5, 300, 3),
    );
    let grid = write(
        tmp.path(),
        "grid.toml",
        &format!(
            "[base]\n\"nodes.source\" = \"cluster\"\n\"workload.source\" = \"reqs\"\n\"replay.windows\" = 3\n{POLICIES}[axes]\n\"hardware.preset\" = [\"a100\", \"m1-max\"]\n\"replay.seed\" = [1, 2]\n\"workload.load\" = [0.5, 0.9]\n"
        ),
    );
    let mut c = hs(&store);
    c.args(["sweep", "--dry-run", "--grid"]).arg(&grid);
    assert_eq!(ok(c).lines().count(), 8);
    for (id, jobs) in [("one", "1"), ("two", "2")] {
        let mut c = hs(&store);
        c.args(["-q", "sweep", "--id", id, "--jobs", jobs, "--grid"])
            .arg(&grid);
        ok(c);
    }
    let shards = tmp.path().join("shards");
    for i in 0..3 {
        let mut c = hs(&store);
        c.args(["-q", "sweep", "--shard", &format!("{i}/3"), "--out"])
            .arg(&shards)
            .arg("--grid")
            .arg(&grid);
        ok(c);
    }
    // A merge that lacks a shard is refused and names it.
    let partial = tmp.path().join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    for ext in ["json", "parquet"] {
        std::fs::copy(
            shards.join(format!("shard-0-of-3.{ext}")),
            partial.join(format!("shard-0-of-3.{ext}")),
        )
        .unwrap();
    }
    let mut c = hs(&store);
    c.args(["sweep", "merge", "--id", "bad"]).arg(&partial);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("shards 1, 2 of 3 are missing"), "{err}");
    let mut c = hs(&store);
    c.args(["-q", "sweep", "merge", "--id", "merged"])
        .arg(&shards);
    ok(c);

    let one = cells(&store, "one");
    assert!(one.contains("7,\"hardware.preset=m1-max,replay.seed=2,workload.load=0.9\""));
    same(&one, &cells(&store, "two"), "--jobs 1 and --jobs 2");
    same(
        &one,
        &cells(&store, "merged"),
        "unsharded and sharded-and-merged",
    );
    let s = summary(&store, "one");
    assert_eq!(s.len(), 8);
    for cell in &s {
        for key in [
            "hardware.preset",
            "replay.seed",
            "workload.load",
            "cell",
            "pays",
        ] {
            assert!(cell.get(key).is_some(), "{key} missing in {cell}");
        }
        for cmp in [
            "hazard_vs_pooled",
            "hazard_vs_fastest",
            "pooled_vs_fastest",
            "hazard_vs_best_blind",
            "hazard_vs_uptime",
            "fastest_vs_least_loaded",
            "fastest_vs_reference",
        ] {
            for m in [
                "mean_completion_s",
                "p99_completion_s",
                "unplanned_interruptions",
            ] {
                let d = &cell[cmp][m];
                assert!(d["diff"].is_f64(), "{cmp}.{m} in {cell}");
                assert!(d.get("ci_low").is_some() && d.get("ci_high").is_some());
                // Identical per-window differences are no test: no p-value, no q-value.
                if d["p_value"].is_null() {
                    assert_eq!(
                        d["ci_low"], d["ci_high"],
                        "{cmp}.{m} without a test: {cell}"
                    );
                    assert!(d["q_value"].is_null(), "{cmp}.{m}: {cell}");
                } else {
                    assert!(d["q_value"].is_f64(), "{cmp}.{m} has a q-value: {cell}");
                }
            }
        }
        // The grid runs neither memoryless nor hazard-truth: their pairings are null.
        assert!(cell["memoryless_vs_fastest"].is_null(), "{cell}");
        assert!(cell["truth_vs_fastest"].is_null(), "{cell}");
        assert!(cell["gap_closed"].is_null() || cell["gap_closed"].is_f64());
    }
}

#[test]
fn a_cell_where_nothing_fails_shows_no_effect_and_no_migration() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(
        tmp.path(),
        &availability(8, 20_000.0, 1, |_| None),
        &requests(600.0, 0.3, 300, 5),
    );
    let grid = format!(
        "[base]\n\"nodes.source\" = \"cluster\"\n\"workload.source\" = \"reqs\"\n\"replay.windows\" = 4\n\"workload.load\" = 0.5\n{POLICIES}[axes]\n\"hardware.preset\" = [\"a100\", \"phone\"]\n"
    );
    for cell in sweep_summary(&store, tmp.path(), "calm", &grid) {
        let d = &cell["hazard_vs_fastest"]["mean_completion_s"];
        let (lo, hi) = (
            d["ci_low"].as_f64().unwrap(),
            d["ci_high"].as_f64().unwrap(),
        );
        assert!(lo <= 0.0 && 0.0 <= hi, "{cell}");
        assert_eq!(cell["planned_migrations"].as_f64(), Some(0.0), "{cell}");
        assert_eq!(cell["pays"], false, "{cell}");
        assert_eq!(cell["migration_pays"], false, "{cell}");
    }
}

#[test]
fn hazard_avoids_interruptions_on_a_cluster_built_for_it() {
    // Short sessions with a strongly increasing hazard (Weibull k = 4, scale 900 s): a node's
    // age says when it will go. Slow decode and long outputs make requests long enough to be
    // caught. Every node has the same law, so what age buys is fewer interruptions and a
    // shorter tail; whether that pays on mean completion depends on what a loss costs (the
    // positive control of `replay_controls` is where it does: mixed laws, a slow prefill).
    let tmp = tempfile::tempdir().unwrap();
    let weibull = |r: &mut Lcg| Some(900.0 * (-r.unit().ln()).powf(0.25));
    let store = store_with(
        tmp.path(),
        &availability(24, 70_000.0, 11, weibull),
        &requests(3_000.0, 0.2, 1_500, 9),
    );
    let grid = format!(
        "[base]\n\"nodes.source\" = \"cluster\"\n\"workload.source\" = \"reqs\"\n\"replay.windows\" = 10\n\"replay.window_length_s\" = 3000\n\"workload.load\" = 0.4\n\"hardware.preset\" = \"m1-max\"\n\"hardware.link\" = \"10gbe\"\n\"workload.estimator\" = \"exact\"\n{POLICIES}"
    );
    let s = sweep_summary(&store, tmp.path(), "pays", &grid);
    assert_eq!(s.len(), 1);
    let cell = &s[0];
    // Fewer interruptions, with an interval that excludes 0; the tail is shorter but, over ten
    // disjoint windows, within its interval (with overlapping windows it looked significant).
    let d = &cell["hazard_vs_fastest"]["unplanned_interruptions"];
    assert!(
        d["diff"].as_f64().unwrap() < 0.0 && d["ci_high"].as_f64().unwrap() < 0.0,
        "hazard does not beat fastest on interruptions: {cell}"
    );
    let d = &cell["hazard_vs_fastest"]["p99_completion_s"];
    assert!(
        d["diff"].as_f64().unwrap() < 0.0,
        "hazard's tail is longer: {cell}"
    );
    assert!(
        cell["planned_migrations"].as_f64().unwrap() > 0.0,
        "no planned migration fired: {cell}"
    );
}

#[test]
fn grid_errors_name_the_key_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let grid = write(
        tmp.path(),
        "grid.toml",
        "[axes]\n\"hardware.preset\" = [\"a100\", \"a1000\"]\n",
    );
    let mut c = hs(&store);
    c.args(["sweep", "--grid"]).arg(&grid);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("axes.hardware.preset = a1000") && err.contains("unknown hardware preset"),
        "{err}"
    );
    let mut c = hs(&store);
    c.args(["sweep", "--shard", "3/3", "--out", "x", "--grid"])
        .arg(&grid);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("0 <= I < N"), "{err}");
}

#[test]
fn the_documented_duckdb_query_reads_the_store_in_place() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(
        tmp.path(),
        &availability(5, 5_000.0, 2, |r| Some(100.0 + 900.0 * r.unit())),
        &requests(60.0, 0.5, 100, 1),
    );
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/scale-out.md"),
    )
    .unwrap();
    let sql = doc
        .split("```sql\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("an sql block in docs/src/scale-out.md")
        .replace("STORE", &store.display().to_string());
    let conn = duckdb::Connection::open_in_memory().unwrap();
    let rows: Vec<(String, i64)> = conn
        .prepare(&sql)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut c = hs(&store);
    c.args([
        "-q",
        "sql",
        "--format",
        "csv",
        "SELECT count(*) FROM sessions WHERE source = 'cluster'",
    ]);
    let want: i64 = ok(c).lines().nth(1).unwrap().trim().parse().unwrap();
    assert_eq!(rows, vec![("cluster".to_string(), want)]);
}

#[test]
fn synth_workload_caps_are_flags_and_clipping_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("w.csv");
    let mut c = hs(&tmp.path().join("store"));
    c.args([
        "synth",
        "workload",
        "--output-mu",
        "8",
        "--duration",
        "600",
        "--out",
    ])
    .arg(&out);
    let o = c.output().unwrap();
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("outputs") && err.contains("written as 1000"),
        "{err}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let max = |t: &str| {
        t.lines()
            .skip(1)
            .map(|l| l.rsplit(',').next().unwrap().parse::<u64>().unwrap())
            .max()
            .unwrap()
    };
    assert_eq!(max(&text), 1000);
    let mut c = hs(&tmp.path().join("store"));
    c.args([
        "synth",
        "workload",
        "--output-mu",
        "8",
        "--duration",
        "600",
        "--max-output",
        "1000000",
        "--out",
    ])
    .arg(&out);
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("outputs ("), "{err}");
    assert!(max(&std::fs::read_to_string(&out).unwrap()) > 1000);
}

#[test]
fn workload_load_sets_the_rate_from_the_up_capacity() {
    // Eight nodes that never fail (up for the whole of every window): the capacity is
    // 8 nodes x 8 slots / s, with s the mean service time of a request with every slot busy on
    // an H100 (prefill 10,815.51 tok/s, decode 68.03 tok/s, batch slowdown 0.12).
    let tmp = tempfile::tempdir().unwrap();
    let reqs = requests(600.0, 0.3, 300, 5);
    let store = store_with(tmp.path(), &availability(8, 20_000.0, 1, |_| None), &reqs);
    let rows: Vec<(f64, f64, f64)> = reqs
        .lines()
        .skip(1)
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            (v[0], v[1], v[2])
        })
        .collect();
    let n = rows.len() as f64;
    let service = rows
        .iter()
        .map(|&(_, p, o)| p / 10_815.51 + o * (1.0 + 0.12 * 7.0) / 68.03)
        .sum::<f64>()
        / n;
    let capacity = 8.0 * 8.0 / service;
    let span = rows.iter().map(|r| r.0).fold(0.0, f64::max);
    let base = n / (span + span / (n - 1.0));
    let mut c = hs(&store);
    c.args([
        "replay",
        "--source",
        "cluster",
        "--workload",
        "reqs",
        "--hardware",
        "h100",
        "--windows",
        "2",
        "--policies",
        "fastest",
        // The capacity above is the simple engine's service model.
        "--engine",
        "simple",
        "--load",
        "0.5",
        "--no-save",
        "--format",
        "json",
    ]);
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let note = err
        .lines()
        .find(|l| l.starts_with("note: workload.load 0.5"))
        .unwrap_or_else(|| panic!("no load note in {err}"));
    let num = |after: &str| -> f64 {
        let rest = &note[note.find(after).unwrap() + after.len()..];
        rest.split(|ch: char| !(ch.is_ascii_digit() || ch == '.'))
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let rel = |a: f64, b: f64| (a - b).abs() / b;
    assert!(
        rel(num("mean up capacity of "), capacity) < 1e-3,
        "{note} vs {capacity}"
    );
    assert!(
        rel(num("arrival rate x"), 0.5 * capacity / base) < 1e-3,
        "{note}"
    );
    // load and rate_scale both set the rate: one is refused.
    let mut c = hs(&store);
    c.args([
        "replay",
        "--source",
        "cluster",
        "--workload",
        "reqs",
        "--load",
        "0.5",
        "--rate-scale",
        "2",
    ]);
    fails(c);
}

#[test]
fn summary_axis_pairs_one_axis_across_otherwise_equal_cells() {
    // Decreasing hazard (Weibull k = 0.5): the curve reading changes hazard's placements.
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(
        tmp.path(),
        &availability(16, 60_000.0, 21, |r| {
            Some(600.0 * (-r.unit().ln()).powf(2.0))
        }),
        &requests(2_000.0, 0.3, 800, 4),
    );
    let grid = format!(
        "[base]\n\"nodes.source\" = \"cluster\"\n\"workload.source\" = \"reqs\"\n\"replay.windows\" = 6\n\"replay.window_length_s\" = 2000\n\"workload.load\" = 0.5\n{POLICIES}[axes]\n\"hardware.preset\" = [\"a100\", \"phone\"]\n\"policy.survival_curve+policy.tail\" = [[\"linear\", \"exponential\"], [\"step\", \"exponential\"], [\"linear\", \"flat\"]]\n"
    );
    sweep_summary(&store, tmp.path(), "readings", &grid);
    let axis = "policy.survival_curve+policy.tail";
    let mut c = hs(&store);
    c.args([
        "-q",
        "sweep",
        "summary",
        "readings",
        "--axis",
        axis,
        "--within",
        "hardware.preset",
        "--format",
        "json",
    ]);
    let rows: Vec<Value> = serde_json::from_str(&ok(c)).expect("axis JSON");
    // Two tiers x two readings against the first reading.
    assert_eq!(rows.len(), 4, "{rows:?}");
    for r in &rows {
        assert_eq!(r["reference"], "linear+exponential", "{r}");
        assert_eq!(r["contexts"], 1, "{r}");
        let d = r["hazard_diff_mean_completion_s"].as_f64().unwrap();
        let (lo, hi) = (r["ci_low"].as_f64(), r["ci_high"].as_f64());
        // One context per row: the interval is over one point (none), counts are 0 or 1.
        assert!(lo.is_none() && hi.is_none(), "{r}");
        assert!(d.is_finite());
        assert!(r["better"].as_i64().unwrap() + r["worse"].as_i64().unwrap() <= 1);
    }
    assert_eq!(rows[0]["hardware.preset"], "a100");
    assert_eq!(rows[3]["value"], "linear+flat");
    // The pooled comparison has two contexts per reading and a bootstrap interval over them.
    let mut c = hs(&store);
    c.args([
        "-q", "sweep", "summary", "readings", "--axis", axis, "--format", "json",
    ]);
    let pooled: Vec<Value> = serde_json::from_str(&ok(c)).unwrap();
    assert_eq!(pooled.len(), 2);
    assert_eq!(pooled[0]["contexts"], 2);
    assert!(pooled[0]["ci_low"].as_f64().unwrap() <= pooled[0]["ci_high"].as_f64().unwrap());
    // Errors name the axes there are.
    let mut c = hs(&store);
    c.args(["sweep", "summary", "readings", "--axis", "policy.h"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("not an axis of this sweep") && err.contains("hardware.preset"),
        "{err}"
    );
}

#[test]
fn a_slice_of_a_grid_runs_and_reports_on_its_own() {
    use crate::tui_common::demo_store;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let grid = root.join("reports/sweeps/demo.toml");
    let dry = |wheres: &[&str]| {
        let mut c = hs(demo_store());
        c.args(["-q", "sweep", "--grid"])
            .arg(&grid)
            .arg("--dry-run");
        for w in wheres {
            c.args(["--where", w]);
        }
        c
    };
    // 12 cells = 2 sources x 3 presets x 2 loads; a preset keeps 4, a preset and a source 2.
    let phone = ok(dry(&["hardware.preset=phone"]));
    assert_eq!(phone.lines().count(), 4, "{phone}");
    assert!(phone.lines().all(|l| l.contains("hardware.preset=phone")));
    let two = ok(dry(&["hardware.preset=phone", "nodes.source=sample-hpc"]));
    assert_eq!(two.lines().count(), 2, "{two}");
    // An unknown axis names the axes; a value no cell has says so; both before any work.
    let e = fails(dry(&["hardware.link=10gbe"]));
    let msg = String::from_utf8_lossy(&e.stderr);
    assert!(
        msg.contains("no axis \"hardware.link\"") && msg.contains("hardware.preset"),
        "{msg}"
    );
    let e = fails(dry(&["hardware.preset=tpu"]));
    assert!(String::from_utf8_lossy(&e.stderr).contains("no cell has hardware.preset=tpu"));
    let e = fails(dry(&["hardware.preset"]));
    assert!(String::from_utf8_lossy(&e.stderr).contains("use KEY=VALUE"));
    // The report of a slice of the stored demo map: its 4 cells, the fixed axis left out of
    // the table, and the same errors.
    let tmp = tempfile::tempdir().unwrap();
    let mut c = hs(demo_store());
    c.args(["-q", "report", "--out"])
        .arg(tmp.path())
        .args(["--source", "sample-spot", "--sweep", "demo-map"])
        .args(["--where", "hardware.preset=phone"]);
    ok(c);
    let md = std::fs::read_to_string(tmp.path().join("report.md")).unwrap();
    let head = md
        .lines()
        .find(|l| l.contains(hazardserve::report::CELLS_HEADER[0]))
        .expect("a cells table");
    assert!(
        head.starts_with("| nodes.source | workload.load |"),
        "{head}"
    );
    let rows = md
        .lines()
        .skip_while(|l| *l != head)
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .count();
    assert_eq!(rows, 4, "{md}");
    let mut c = hs(demo_store());
    c.args(["-q", "report", "--out"]).arg(tmp.path()).args([
        "--sweep",
        "demo-map",
        "--where",
        "hardware.link=wan",
    ]);
    let e = fails(c);
    assert!(String::from_utf8_lossy(&e.stderr).contains("no axis \"hardware.link\""));
}

#[test]
fn shards_of_a_slice_merge_into_the_full_map_s_cells() {
    use crate::tui_common::demo_store;
    let grid = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/sweeps/demo.toml");
    let tmp = tempfile::tempdir().unwrap();
    let shards = tmp.path().join("shards");
    for i in 0..2 {
        let mut c = hs(demo_store());
        c.args(["-q", "sweep", "--grid"])
            .arg(&grid)
            .args([
                "--where",
                "hardware.preset=phone",
                "--shard",
                &format!("{i}/2"),
            ])
            .arg("--out")
            .arg(&shards);
        ok(c);
    }
    let merged = tmp.path().join("store");
    let mut c = hs(&merged);
    c.args(["-q", "sweep", "merge"])
        .arg(&shards)
        .args(["--id", "phones"]);
    ok(c);
    let slice = summary(&merged, "phones");
    assert_eq!(slice.len(), 4);
    // Each cell of the slice is the demo map's cell of the same name (demo stores demo-map),
    // but for what depends on the family of cells: the q-values are over the slice's cells,
    // and so are the verdicts read from them.
    let full = summary(demo_store(), "demo-map");
    for cell in &slice {
        let same = full
            .iter()
            .find(|c| c["cell"] == cell["cell"])
            .unwrap_or_else(|| panic!("{} is not in demo-map", cell["cell"]));
        assert_eq!(without_q(same), without_q(cell));
    }
    // A shard of another slice does not merge with these.
    let mut c = hs(demo_store());
    c.args(["-q", "sweep", "--grid"])
        .arg(&grid)
        .args(["--where", "hardware.preset=a100", "--shard", "0/2"])
        .arg("--out")
        .arg(tmp.path().join("other"));
    ok(c);
    let mut c = hs(&merged);
    c.args(["-q", "sweep", "merge"])
        .arg(&shards)
        .arg(tmp.path().join("other"));
    let e = fails(c);
    assert!(!e.stderr.is_empty());
}

/// `cell` without what depends on the other cells of its sweep: every `q_value` and the
/// verdicts (`pays`, `load_forecast_pays`, `migration_pays`, `hazard_term`, `load_forecast`)
/// read from them.
fn without_q(cell: &serde_json::Value) -> serde_json::Value {
    match cell {
        serde_json::Value::Object(o) => serde_json::Value::Object(
            o.iter()
                .filter(|(k, _)| {
                    ![
                        "q_value",
                        "pays",
                        "load_forecast_pays",
                        "migration_pays",
                        "hazard_term",
                        "load_forecast",
                    ]
                    .contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), without_q(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
