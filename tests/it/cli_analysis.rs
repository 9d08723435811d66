//! `trigger` and `crossover` through the real binary.

use crate::common::{fails, hs, ok};

fn rows(args: &[&str]) -> Vec<serde_json::Value> {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = hs(tmp.path());
    c.args(args).args(["--format", "json"]);
    serde_json::from_str::<serde_json::Value>(&ok(c))
        .unwrap()
        .as_array()
        .unwrap()
        .clone()
}

fn num(r: &serde_json::Value, k: &str) -> f64 {
    r[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {r}"))
}

#[test]
fn trigger_reproduces_the_wan_finding_and_overlap_changes_the_price() {
    // The design's hop: 4.5k tokens of context, 250 tok/s prefill, a 100 Mb/s WAN link.
    let plain = rows(&["trigger"]);
    assert!(plain.len() >= 10);
    for r in &plain {
        for k in [
            "uptime_s",
            "l_i",
            "c_transfer",
            "c_recompute",
            "c_planned",
            "l_j",
            "risk_gain",
            "dt",
        ] {
            assert!(r.get(k).is_some(), "{k} missing: {r}");
        }
        // C_planned is the ~18 s re-prefill (transfer over WAN is far slower) ...
        let c = num(r, "c_planned");
        assert!((c - 18.1).abs() < 0.5, "{r}");
        assert_eq!(c, num(r, "c_recompute"));
        assert!(num(r, "c_transfer") > c);
        // ... which exceeds L_i, so risk_gain < 0 at every uptime, whatever h is.
        assert!(c > num(r, "l_i"), "{r}");
        assert!(num(r, "risk_gain") < 0.0, "{r}");
        let fires = r["fires_at_h_s"].as_array().unwrap();
        assert!(fires.is_empty(), "{r}");
    }
    // Overlap: only the catch-up is paid, an order of magnitude less, but still no gain here.
    let overlap = rows(&["trigger", "--overlap"]);
    for (p, o) in plain.iter().zip(&overlap) {
        assert!(num(o, "c_planned") < num(p, "c_planned") / 5.0, "{o}");
        assert!(num(o, "risk_gain") > num(p, "risk_gain"), "{o}");
    }
    // On a spot-like source (increasing hazard, near its typical reclaim age) overlap fires.
    let spot = rows(&[
        "trigger",
        "--overlap",
        "--survival",
        "weibull:4,3600",
        "--remaining",
        "2000",
        "--uptimes",
        "5400",
        "--h",
        "2",
    ]);
    assert_eq!(
        spot[0]["fires_at_h_s"],
        serde_json::json!([2.0]),
        "{:?}",
        spot[0]
    );
}

#[test]
fn crossover_covers_every_tier_and_reports_never_as_null() {
    let v = rows(&[
        "crossover",
        "--model",
        "llama-3-8b",
        "--prefill",
        "250,11048",
    ]);
    assert_eq!(v.len(), 10);
    for r in &v {
        for k in ["link", "bandwidth_bytes_s", "prefill_tok_s", "c_star"] {
            assert!(r.get(k).is_some(), "{k} missing: {r}");
        }
    }
    let wan: Vec<_> = v.iter().filter(|r| r["link"] == "wan-100mbps").collect();
    assert!(
        wan.iter().all(|r| r["c_star"].is_null()),
        "transfer never wins over WAN: {wan:?}"
    );
    let nv = v
        .iter()
        .find(|r| r["link"] == "nvlink" && r["prefill_tok_s"] == 11048.0)
        .unwrap();
    let c = num(nv, "c_star");
    assert!((500.0..2000.0).contains(&c), "{nv}");

    let tmp = tempfile::tempdir().unwrap();
    let mut c = hs(tmp.path());
    c.args(["crossover", "--model", "gpt-17"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(err.contains("llama-3-8b"), "{err}");
}

/// One value of each type DuckDB returns, in every format (and a null of each).
const EVERY_TYPE: &str = "SELECT true AS boolean, 1::TINYINT AS tinyint, 2::SMALLINT AS smallint, \
    3::INTEGER AS integer, 4::BIGINT AS bigint, 5::HUGEINT AS hugeint, 6::UTINYINT AS utinyint, \
    7::USMALLINT AS usmallint, 8::UINTEGER AS uinteger, 9::UBIGINT AS ubigint, \
    10::UHUGEINT AS uhugeint, 1.5::FLOAT AS float, 2.25::DOUBLE AS double, \
    123.45::DECIMAL(10,2) AS decimal, 'text'::VARCHAR AS varchar, '\\xAA\\xBB'::BLOB AS blob, \
    DATE '2024-01-02' AS date, TIME '03:04:05' AS time, \
    TIMESTAMP '2024-01-02 03:04:05' AS timestamp, \
    TIMESTAMP_S '2024-01-02 03:04:05' AS timestamp_s, \
    TIMESTAMP_MS '2024-01-02 03:04:05.123' AS timestamp_ms, \
    TIMESTAMP_NS '2024-01-02 03:04:05.123456789' AS timestamp_ns, \
    TIMESTAMPTZ '2024-01-02 03:04:05+00' AS timestamptz, TIMETZ '03:04:05+02' AS timetz, \
    INTERVAL 1 DAY AS interval, '00000000-0000-0000-0000-000000000001'::UUID AS uuid, \
    [1, 2] AS list, {'a': 1, 'b': 'x'} AS struct, MAP {'k': 1} AS map, \
    [1, 2]::INTEGER[2] AS array, 'b'::ENUM('a', 'b') AS enum, \
    union_value(n := 1)::UNION(n INTEGER, s VARCHAR) AS \"union\", '0101'::BIT AS bit, \
    NULL AS \"null\"";

#[test]
fn cli_sql_renders_every_duckdb_type_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    hazardserve::store::Store::open_or_create(&store).unwrap();
    // The values, then a null of every type.
    let query = format!(
        "SELECT * FROM ({EVERY_TYPE}) UNION ALL \
         SELECT t.* FROM (SELECT 1) AS one LEFT JOIN ({EVERY_TYPE}) AS t ON false"
    );
    let run = |format: &str| {
        let mut c = hs(&store);
        c.args(["sql", "--format", format, &query]);
        ok(c)
    };
    // Every column with --wide; by default the table keeps to 100 columns and names the rest.
    let mut c = hs(&store);
    c.args(["sql", "--wide", &query]);
    let table = ok(c);
    assert!(table.contains("2024-01-02T03:04:05Z"), "{table}");
    let narrow = run("table");
    assert!(
        narrow
            .lines()
            .filter(|l| l.starts_with('+') || l.starts_with('|'))
            .all(|l| l.chars().count() <= 100)
            && narrow.contains("more columns (--wide shows them")
            && narrow.contains("timestamptz"),
        "{narrow}"
    );
    let csv = run("csv");
    assert_eq!(csv.lines().count(), 3, "{csv}");
    assert!(csv.starts_with("boolean,tinyint,"), "{csv}");
    let v: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let row = rows.iter().find(|r| r["boolean"] == true).unwrap();
    let empty = rows.iter().find(|r| r["boolean"].is_null()).unwrap();
    for (k, x) in empty.as_object().unwrap() {
        assert!(x.is_null(), "{k}: {x}");
    }
    assert_eq!(
        row.as_object().unwrap().len(),
        empty.as_object().unwrap().len()
    );
    assert_eq!(row["boolean"], true);
    assert_eq!(row["bigint"], 4);
    assert_eq!(row["hugeint"], 5);
    assert_eq!(row["double"], 2.25);
    assert_eq!(row["decimal"], 123.45);
    assert_eq!(row["varchar"], "text");
    assert_eq!(row["timestamptz"], "2024-01-02T03:04:05Z");
    assert_eq!(row["list"], serde_json::json!([1, 2]));
    assert_eq!(row["struct"], serde_json::json!({"a": 1, "b": "x"}));
    assert_eq!(row["map"], serde_json::json!({"k": 1}));
    assert_eq!(row["enum"], "b");
    assert_eq!(row["union"], 1);
    assert!(row["null"].is_null());
    let out = tmp.path().join("every.parquet");
    let mut c = hs(&store);
    c.args(["sql", "--format", "parquet", "--out"])
        .arg(&out)
        .arg(&query);
    ok(c);
    let file = std::fs::File::open(&out).unwrap();
    let rows: usize = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(rows, 2);
}

#[test]
fn cli_sql_shows_the_documented_utc_columns() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args(["ingest", "--format", "gce-operations", "--source", "gce"])
        .arg(crate::common::samples().join("gce-operations"));
    ok(c);
    for format in ["table", "csv", "json"] {
        let mut c = hs(&store);
        c.args([
            "sql",
            "--format",
            format,
            "SELECT start_utc, end_utc FROM sessions LIMIT 3",
        ]);
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{format}: {stderr}");
        assert!(stderr.is_empty(), "{format}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains('Z'), "{format}: {stdout}");
    }
    let mut c = hs(&store);
    c.args([
        "sql",
        "--format",
        "json",
        "SELECT start_utc FROM sessions LIMIT 1",
    ]);
    let v: serde_json::Value = serde_json::from_str(&ok(c)).unwrap();
    let t = v[0]["start_utc"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(t).is_ok() && t.ends_with('Z'),
        "{t}"
    );
}

#[test]
fn presets_list_every_preset_with_its_figures_and_source() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = crate::common::hs(&tmp.path().join("store"));
    c.args(["presets", "--format", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&crate::common::ok(c)).unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    for want in [
        "a100",
        "h100",
        "rtx4090",
        "m1-max",
        "phone",
        "llama-3.2-1b",
        "llama-3-8b",
        "wan",
        "10gbe",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert!(rows
        .iter()
        .all(|r| !r["source"].as_str().unwrap().is_empty()));
    let phone = rows.iter().find(|r| r["name"] == "phone").unwrap();
    let fig = phone["figures"].as_str().unwrap();
    assert!(
        fig.contains("decode 51.54") && fig.contains("batch slowdown 1"),
        "{fig}"
    );
    assert!(phone["source"].as_str().unwrap().contains("snapdragon"));
    // Every preset a scenario accepts is listed, and the list holds nothing else.
    for r in &rows {
        let name = r["name"].as_str().unwrap();
        let known = match r["kind"].as_str().unwrap() {
            "hardware" => hazardserve::policy::presets::find_hardware(name).is_ok(),
            "model" => hazardserve::policy::presets::find_model(name).is_ok(),
            "link" => hazardserve::policy::presets::find_link(name).is_ok(),
            other => panic!("kind {other}"),
        };
        assert!(known, "{name}");
    }
}
