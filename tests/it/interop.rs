//! Other tools read the store in place: Python polars and pyarrow read the hive-partitioned
//! sessions Parquet and get exactly what `sessions --format json` prints, and a priors export
//! in Parquet reads back in polars with the rows of the CSV export. CI installs polars and
//! pyarrow into a cached venv (`.ci/run`, `HAZARDSERVE_PYTHON`); locally the test skips when
//! they are absent.

use std::process::Command;

use serde_json::Value;

use crate::common::{hs, ok, skip};
use crate::tui_common::demo_store;

/// A Python with polars and pyarrow: `$HAZARDSERVE_PYTHON`, else `python3`.
fn python() -> Option<String> {
    let py = std::env::var("HAZARDSERVE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&py)
        .args(["-c", "import polars, pyarrow"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(py)
    } else {
        skip(&format!(
            "{py} cannot import polars and pyarrow (set HAZARDSERVE_PYTHON to a Python that can; .ci/run makes a venv)"
        ));
        None
    }
}

fn run_py(py: &str, script: &str, args: &[&str]) -> String {
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const COLUMNS: [&str; 9] = [
    "node_id",
    "session_index",
    "start",
    "end",
    "duration_s",
    "event",
    "end_cause",
    "left_truncated",
    "entry_s",
];

const READ_SESSIONS: &str = r#"
import json, sys
import polars as pl
import pyarrow.dataset as ds
store, source = sys.argv[1], sys.argv[2]
cols = ["node_id", "session_index", "start", "end", "duration_s", "event", "end_cause", "left_truncated", "entry_s"]
a = (pl.read_parquet(f"{store}/sessions/**/*.parquet", hive_partitioning=True)
       .filter(pl.col("source") == source)
       .sort(["node_id", "session_index"])
       .select(cols))
t = ds.dataset(f"{store}/sessions", format="parquet", partitioning="hive").to_table(
    filter=ds.field("source") == source)
b = pl.from_arrow(t).sort(["node_id", "session_index"]).select(cols)
assert a.equals(b), "polars and pyarrow disagree"
print(json.dumps(a.to_dicts()))
"#;

#[test]
fn polars_and_pyarrow_read_the_store_as_the_cli_prints_it() {
    let Some(py) = python() else {
        return;
    };
    let store = demo_store();
    let mut c = hs(store);
    c.args([
        "-q",
        "sessions",
        "--source",
        "sample-spot",
        "--format",
        "json",
    ]);
    let cli: Vec<Value> = serde_json::from_str(&ok(c)).unwrap();
    let text = run_py(
        &py,
        READ_SESSIONS,
        &[&store.to_string_lossy(), "sample-spot"],
    );
    let pyrows: Vec<Value> = serde_json::from_str(&text).unwrap();
    assert_eq!(cli.len(), pyrows.len());
    assert!(cli.len() > 10);
    for (a, b) in cli.iter().zip(&pyrows) {
        for k in COLUMNS {
            let same = match (&a[k], &b[k]) {
                // Integers and booleans may come as numbers on one side.
                (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
                (Value::Bool(x), Value::Number(y)) | (Value::Number(y), Value::Bool(x)) => {
                    y.as_f64() == Some(f64::from(u8::from(*x)))
                }
                (x, y) => x == y,
            };
            assert!(same, "{k}: cli {} vs python {}", a[k], b[k]);
        }
    }
}

#[test]
fn a_priors_export_reads_back_in_polars() {
    let Some(py) = python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let store = demo_store();
    let pq = tmp.path().join("priors.parquet");
    let csv = tmp.path().join("priors.csv");
    for (file, format) in [(&pq, "parquet"), (&csv, "csv")] {
        let mut c = hs(store);
        c.args([
            "-q",
            "priors",
            "export",
            "--source",
            "sample-spot",
            "--format",
            format,
            "--out",
        ])
        .arg(file);
        ok(c);
    }
    let script = r#"
import json, sys
import polars as pl
df = pl.read_parquet(sys.argv[1])
print(json.dumps({"columns": df.columns, "rows": df.height, "nodes": df["node_id"].drop_nulls().n_unique(),
                  "s_ok": bool(((df["s"] >= 0) & (df["s"] <= 1)).all())}))
"#;
    let v: Value = serde_json::from_str(&run_py(&py, script, &[&pq.to_string_lossy()])).unwrap();
    assert_eq!(
        v["columns"],
        serde_json::json!(["scope", "node_id", "t", "s"])
    );
    let csv_rows = std::fs::read_to_string(&csv).unwrap().lines().count() - 1;
    assert_eq!(v["rows"].as_u64().unwrap() as usize, csv_rows);
    assert_eq!(v["nodes"], 4, "{v}");
    assert_eq!(v["s_ok"], true);
}
