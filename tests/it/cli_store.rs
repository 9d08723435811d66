//! The store through the real binary: demo, listings, idempotent ingest, replace, the writer
//! lock, SIGKILL mid-write, verify and rebuild, bad input.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::common::{fails, hs, ok, samples, write};

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("bad JSON ({e}):\n{s}"))
}

/// Committed state of a store: the sources listing and the set of files (without the lock).
fn snapshot(store: &Path) -> (String, Vec<PathBuf>) {
    let mut files = Vec::new();
    fn walk(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.file_name().is_some_and(|n| n != ".lock") {
                out.push(p.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    walk(store, store, &mut files);
    files.sort();
    let mut c = hs(store);
    c.args(["sources", "--format", "json"]);
    (ok(c), files)
}

const ADD_REMOVE: &str = "0,add,node1\r\n0,add,node2\r\n60000,remove,node1\r\n120000,add,node3\r\n180000,remove,node3\r\n";

#[test]
fn demo_ingests_the_samples_and_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.arg("demo");
    let out = ok(c);
    for s in [
        "sample-spot",
        "sample-hpc",
        "sample-gce",
        "hazard --overlap",
        "oracle",
    ] {
        assert!(out.contains(s), "demo output lacks {s}:\n{out}");
    }
    let mut c = hs(&store);
    c.args(["sources", "--format", "json"]);
    let v = json(&ok(c));
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), 4);
    for row in arr {
        for key in [
            "source",
            "adapter",
            "kind",
            "nodes",
            "sessions",
            "events",
            "censored",
            "left_truncated",
        ] {
            assert!(row.get(key).is_some(), "sources JSON lacks {key}: {row}");
        }
        let sessions = row["sessions"].as_i64().unwrap();
        let requests = row["requests"].as_i64().unwrap();
        assert!(sessions > 10 || requests > 1000, "{row}");
        assert_eq!(
            row["events"].as_i64().unwrap() + row["censored"].as_i64().unwrap(),
            sessions
        );
    }
    let kinds: Vec<&str> = arr.iter().map(|r| r["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["spot-lifetime", "hpc", "llm-requests", "spot-lifetime"]
    );

    let before = snapshot(&store);
    let mut c = hs(&store);
    c.arg("demo");
    let out = c.output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already in the store"));
    assert_eq!(before, snapshot(&store), "a second demo changed the store");
}

#[test]
fn sessions_json_has_the_documented_keys() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args(["ingest", "--format", "gce-operations", "--source", "gce"])
        .arg(samples().join("gce-operations"));
    ok(c);
    let mut c = hs(&store);
    c.args(["sessions", "--source", "gce", "--format", "json"]);
    let v = json(&ok(c));
    let rows = v.as_array().unwrap();
    assert!(rows.len() > 50);
    let mut events = 0;
    for r in rows {
        for key in [
            "node_id",
            "start",
            "end",
            "duration_s",
            "event",
            "end_cause",
            "left_truncated",
            "entry_s",
        ] {
            assert!(r.get(key).is_some(), "sessions JSON lacks {key}: {r}");
        }
        let (s, e, d) = (
            r["start"].as_f64().unwrap(),
            r["end"].as_f64().unwrap(),
            r["duration_s"].as_f64().unwrap(),
        );
        assert!((e - s - d).abs() < 1e-6 && d >= 0.0, "{r}");
        assert!(s > 1.5e9, "GCE times are epoch seconds: {r}");
        events += r["event"].as_i64().unwrap();
    }
    assert!(events > 0);
    // CSV and table render the same rows.
    let mut c = hs(&store);
    c.args(["sessions", "--source", "gce", "--format", "csv"]);
    let csv = ok(c);
    assert_eq!(csv.lines().count(), rows.len() + 1);
    assert!(csv.starts_with("node_id,session_index,start,end,duration_s,event,end_cause"));
}

#[test]
fn parquet_export_round_trips() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args(["ingest", "--source", "hpc", "--format", "fta"])
        .arg(samples().join("fta"));
    ok(c);
    let out = tmp.path().join("s.parquet");
    let mut c = hs(&store);
    c.args([
        "sessions", "--source", "hpc", "--format", "parquet", "--out",
    ])
    .arg(&out);
    ok(c);
    let file = std::fs::File::open(&out).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let rows: usize = reader.map(|b| b.unwrap().num_rows()).sum();
    let mut c = hs(&store);
    c.args(["sessions", "--source", "hpc", "--format", "json"]);
    assert_eq!(rows, json(&ok(c)).as_array().unwrap().len());
    // Parquet on standard output when it is not a terminal (here a pipe): the same file.
    let mut c = hs(&store);
    c.args(["sessions", "--source", "hpc", "--format", "parquet"]);
    let piped = c.output().unwrap();
    assert!(piped.status.success());
    assert_eq!(piped.stdout, std::fs::read(&out).unwrap());
}

#[test]
fn reingest_is_a_noop_and_replace_is_explicit() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let trace = write(tmp.path(), "in/p3.csv", ADD_REMOVE);
    let ingest = |extra: &[&str]| {
        let mut c = hs(&store);
        c.args(["ingest", "--format", "add-remove", "--source", "p3"])
            .args(extra)
            .arg(&trace);
        c
    };
    ok(ingest(&[]));
    let before = snapshot(&store);
    let out = ingest(&[]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unchanged"));
    assert_eq!(before, snapshot(&store));

    // Line-ending-only changes are the same content.
    std::fs::write(&trace, ADD_REMOVE.replace("\r\n", "\n")).unwrap();
    let out = ingest(&[]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unchanged"),
        "{out:?}"
    );

    std::fs::write(&trace, format!("{ADD_REMOVE}240000,remove,node2\n")).unwrap();
    let err = String::from_utf8_lossy(&fails(ingest(&[])).stderr).into_owned();
    assert!(err.contains("--replace"), "{err}");
    assert_eq!(
        before.0,
        snapshot(&store).0,
        "a refused ingest changed the store"
    );
    let out = ingest(&["--replace"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut c = hs(&store);
    c.args(["sessions", "--source", "p3", "--format", "json"]);
    let v = json(&ok(c));
    let node2: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["node_id"].as_str().unwrap().ends_with("node2"))
        .collect();
    assert_eq!(node2.len(), 1);
    assert_eq!(
        node2[0]["event"], 1,
        "the replacement was not committed: {v}"
    );
    // Old files of the replaced version are gone.
    let parts = std::fs::read_dir(store.join("sessions/source=p3"))
        .unwrap()
        .count();
    assert_eq!(parts, 1);
}

/// Starts an ingest that stops at its commit point; returns once it is there.
fn paused_ingest(store: &Path, source: &str, input: &Path) -> std::process::Child {
    let mut c = crate::common::hs_faults(store);
    c.args([
        "ingest",
        "--format",
        "add-remove",
        "--replace",
        "--source",
        source,
    ])
    .arg(input)
    .env("HAZARDSERVE_FAULT", "pause-before-commit")
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("fault point reached") => break,
            Some(_) => continue,
            None => panic!(
                "the writer ended before its commit point: {:?}",
                child.wait()
            ),
        }
    }
    child
}

#[test]
fn sigkill_mid_write_leaves_the_store_as_it_was_and_the_lock_keeps_writers_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let first = write(tmp.path(), "a/first.csv", ADD_REMOVE);
    let mut c = hs(&store);
    c.args(["ingest", "--format", "add-remove", "--source", "first"])
        .arg(&first);
    ok(c);
    let before = snapshot(&store);
    let mut c = hs(&store);
    c.args(["sessions", "--source", "first", "--format", "csv"]);
    let sessions_before = ok(c);

    let second = write(tmp.path(), "b/second.csv", "0,add,n1\n10,remove,n1\n");
    // A replacement of an existing source, killed at its commit point.
    let third = write(tmp.path(), "c/first.csv", "0,add,x\n");
    for (source, input) in [("second", &second), ("first", &third)] {
        let mut child = paused_ingest(&store, source, input);
        // The staged files exist now; a second writer is refused with a clear message.
        let mut c = hs(&store);
        c.args(["ingest", "--format", "add-remove", "--source", "other"])
            .arg(&second);
        let out = fails(c);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains("being written by another process"), "{err}");
        // A distinct exit status, documented in `--help`: 3 = the store is locked.
        assert_eq!(out.status.code(), Some(3), "{err}");
        // Readers still see the committed state while the writer is paused.
        assert_eq!(before.0, snapshot(&store).0);
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let after = snapshot(&store);
        assert_eq!(
            before.0, after.0,
            "sources changed after SIGKILL of the {source} writer"
        );
        let mut c = hs(&store);
        c.args(["sessions", "--source", "first", "--format", "csv"]);
        assert_eq!(sessions_before, ok(c));
        let mut c = hs(&store);
        c.args(["store", "verify"]);
        ok(c);
        // The next writer removes the leftovers: the files are exactly those before.
        let mut c = hs(&store);
        c.args(["store", "rebuild"]);
        ok(c);
        assert_eq!(before, snapshot(&store));
    }
}

#[test]
fn verify_finds_damage_and_rebuild_restores_the_catalog() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.args([
        "ingest",
        "--source",
        "spot",
        "--format",
        "tick-json",
        "--polarity",
        "available",
    ])
    .arg(samples().join("tick-json"));
    ok(c);
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    ok(c);

    // The catalog is a real DuckDB database with views over the Parquet files.
    let count = |store: &Path| -> i64 {
        let conn = duckdb::Connection::open(store.join("catalog.duckdb")).unwrap();
        conn.query_row(
            "SELECT count(*) FROM sessions WHERE source = 'spot'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let n = count(&store);
    assert!(n > 10);
    std::fs::remove_file(store.join("catalog.duckdb")).unwrap();
    let mut c = hs(&store);
    c.args(["store", "rebuild"]);
    ok(c);
    assert_eq!(count(&store), n);

    let part = std::fs::read_dir(store.join("sessions/source=spot"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&part).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&part, bytes).unwrap();
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("sha256") && err.contains("sessions/source=spot"),
        "{err}"
    );
}

#[test]
fn bad_input_names_file_and_line_and_keeps_good_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let trace = write(
        tmp.path(),
        "bad.csv",
        "0,add,node1\n60000,add,node2\nnot-a-time,add,node3\n120000,remove,node1\n",
    );
    let mut c = hs(&store);
    c.args([
        "ingest",
        "--format",
        "add-remove",
        "--source",
        "bad",
        "--strict",
    ])
    .arg(&trace);
    let out = fails(c);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("bad.csv:3"), "{err}");
    assert_eq!(
        err.trim().lines().count(),
        1,
        "one-line error expected: {err}"
    );
    assert!(!store.join("manifests/bad.json").exists());

    let mut c = hs(&store);
    c.args(["ingest", "--format", "add-remove", "--source", "bad"])
        .arg(&trace);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("1 record(s) rejected"));
    let mut c = hs(&store);
    c.args(["rejects", "--source", "bad", "--format", "json"]);
    let v = json(&ok(c));
    assert_eq!(v.as_array().unwrap().len(), 1);
    assert_eq!(v[0]["line"], 3);
    assert!(v[0]["raw"].as_str().unwrap().contains("not-a-time"));
    let mut c = hs(&store);
    c.args(["sessions", "--source", "bad", "--format", "json"]);
    let v = json(&ok(c));
    assert_eq!(v.as_array().unwrap().len(), 2, "good rows dropped: {v}");
}

#[test]
fn unusable_inputs_fail_with_one_clear_line() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let empty = write(tmp.path(), "empty.csv", "");
    let junk = write(tmp.path(), "junk.bin", "\u{1}\u{2}hello there\n");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--format".into(),
                "add-remove".into(),
                empty.display().to_string(),
            ],
            "empty",
        ),
        (vec![junk.display().to_string()], "cannot tell the format"),
        (
            vec![tmp.path().join("nope.csv").display().to_string()],
            "no such file",
        ),
        (
            vec![
                "--format".into(),
                "tick-json".into(),
                "--gap-seconds=-3".into(),
                junk.display().to_string(),
            ],
            "--gap-seconds",
        ),
    ];
    for (args, want) in cases {
        let mut c = hs(&store);
        c.arg("ingest").args(&args);
        let out = fails(c);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(err.contains(want), "{args:?}: expected {want:?} in {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    let mut c = hs(&store);
    c.args(["nodes", "--source", "missing"]);
    let err = String::from_utf8_lossy(&fails(c).stderr).into_owned();
    assert!(
        err.contains("no store") || err.contains("no source"),
        "{err}"
    );
}

#[test]
fn identical_inputs_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let body = "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [0, 1, 1, 0, 1]}";
    write(tmp.path(), "t/a/z1_v100_1.json", body);
    write(tmp.path(), "t/b/z1_v100_1.json", body);
    write(
        tmp.path(),
        "t/c/z2_v100_1.json",
        &body.replace("[0,", "[1,"),
    );
    let mut c = hs(&store);
    c.args([
        "ingest",
        "--format",
        "tick-json",
        "--polarity",
        "available",
        "--source",
        "dups",
    ])
    .arg(tmp.path().join("t"));
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("duplicate content (byte-identical): a/z1_v100_1.json, b/z1_v100_1.json"),
        "{err}"
    );
    assert!(!err.contains("c/z2"), "{err}");
}

#[test]
fn gzipped_inputs_read_like_plain_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let zipped = tmp.path().join("zipped");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&zipped).unwrap();
    std::fs::copy(
        samples().join("fta/event_trace.tab"),
        plain.join("event_trace.tab"),
    )
    .unwrap();
    std::fs::copy(
        samples().join("fta/event_trace.tab"),
        zipped.join("event_trace.tab"),
    )
    .unwrap();
    if !crate::common::have("gzip") {
        return;
    }
    let status = std::process::Command::new("gzip")
        .arg(zipped.join("event_trace.tab"))
        .status()
        .unwrap();
    assert!(status.success(), "gzip: {status}");
    assert!(zipped.join("event_trace.tab.gz").is_file());
    let store = tmp.path().join("store");
    let mut sessions = Vec::new();
    for (name, dir) in [("plain", &plain), ("zipped", &zipped)] {
        let mut c = hs(&store);
        c.args(["ingest", "--source", name]).arg(dir);
        ok(c);
        let mut c = hs(&store);
        c.args(["sessions", "--source", name, "--format", "csv"]);
        sessions.push(ok(c));
    }
    assert_eq!(sessions[0], sessions[1]);
    assert!(sessions[0].lines().count() > 100);
}
