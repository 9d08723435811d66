//! The store only touches what it owns, degrades instead of wedging, survives SIGKILL at every
//! fault point of a write, and lets readers read while a writer runs. One test per defect.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use hazardserve::store::{Store, TABLES};

use crate::common::{copy_dir, fails, hs, hs_faults, ok, write};

const ADD_REMOVE: &str =
    "0,add,node1\n0,add,node2\n60000,remove,node1\n120000,add,node3\n180000,remove,node3\n";

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ingest(store: &Path, source: &str, input: &Path, extra: &[&str]) -> std::process::Command {
    let mut c = hs(store);
    c.args(["ingest", "--format", "add-remove", "--source", source])
        .args(extra)
        .arg(input);
    c
}

/// A store with two add-remove sources, `a` and `b`.
fn two_sources(tmp: &Path) -> PathBuf {
    let store = tmp.join("store");
    let a = write(tmp, "in/a.csv", ADD_REMOVE);
    let b = write(tmp, "in/b.csv", "0,add,x\n5000,remove,x\n");
    ok(ingest(&store, "a", &a, &[]));
    ok(ingest(&store, "b", &b, &[]));
    store
}

/// Every file under `dir`, relative, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn adopting_a_non_store_directory_is_refused_and_nothing_is_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("ml-project");
    // TensorBoard's layout, a file named like a store temporary, a folder named like a table.
    write(&project, "runs/exp1/events.out.tfevents", "data");
    write(&project, "sessions/s1/log.txt", "log");
    write(&project, "model.tmp-1", "weights");
    let before = files_under(&project);
    let input = write(tmp.path(), "in/a.csv", ADD_REMOVE);
    for cmd in [ingest(&project, "a", &input, &[]), {
        let mut c = hs(&project);
        c.arg("demo");
        c
    }] {
        let err = stderr_of(&fails(cmd));
        assert!(
            err.contains("is not a hazardserve store") && err.contains("model.tmp-1"),
            "{err}"
        );
    }
    assert_eq!(
        before,
        files_under(&project),
        "a refused store touched files"
    );
    // An empty directory is fine.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    ok(ingest(&empty, "a", &input, &[]));
}

#[test]
fn source_named_like_a_temp_file_is_refused_and_derived_names_avoid_it() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let input = write(tmp.path(), "in/x.tmp-1.csv", ADD_REMOVE);
    let err = stderr_of(&fails(ingest(&store, "x.tmp-1", &input, &[])));
    assert!(err.contains("reserved") && err.contains(".tmp-"), "{err}");
    // Without --source the name comes from the file name, and avoids the reserved form.
    let mut c = hs(&store);
    c.args(["ingest", "--format", "add-remove"]).arg(&input);
    ok(c);
    let mut c = hs(&store);
    c.args(["sources", "--format", "csv"]);
    let out = ok(c);
    assert!(out.contains("x-tmp-1"), "{out}");
    // The next writer's recovery keeps it.
    let other = write(tmp.path(), "in/y.csv", ADD_REMOVE);
    ok(ingest(&store, "y", &other, &[]));
    let mut c = hs(&store);
    c.args(["sessions", "--source", "x-tmp-1", "--format", "csv"]);
    assert!(ok(c).lines().count() > 1);
}

#[test]
fn hive_default_partition_name_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let input = write(tmp.path(), "in/a.csv", ADD_REMOVE);
    let err = stderr_of(&fails(ingest(
        &store,
        "__HIVE_DEFAULT_PARTITION__",
        &input,
        &[],
    )));
    assert!(err.contains("NULL"), "{err}");
    assert!(!store.join("STORE.json").exists(), "nothing is created");
}

#[test]
fn stray_json_in_manifests_does_not_wedge_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    std::fs::write(store.join("manifests/junk.json"), "{ not json").unwrap();
    // Readers: the sound sources stay readable, with a warning naming the damage.
    let mut c = hs(&store);
    c.args(["sessions", "--source", "a", "--format", "csv"]);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(stderr_of(&out).contains("junk"), "{out:?}");
    // Writers: another ingest works.
    let c_in = write(tmp.path(), "in/c.csv", ADD_REMOVE);
    ok(ingest(&store, "c", &c_in, &[]));
    // verify names the file and the problem.
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    let err = stderr_of(&fails(c));
    assert!(
        err.contains("junk.json") && err.contains("not a manifest"),
        "{err}"
    );
    // remove clears it; verify passes.
    let mut c = hs(&store);
    c.args(["store", "remove", "--source", "junk"]);
    ok(c);
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    ok(c);
}

#[test]
fn missing_part_file_leaves_other_sources_readable_and_removable() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    let part = std::fs::read_dir(store.join("sessions/source=a"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::remove_file(&part).unwrap();
    let mut c = hs(&store);
    c.args(["sessions", "--source", "b", "--format", "csv"]);
    assert!(ok(c).lines().count() > 1);
    let mut c = hs(&store);
    c.args([
        "sql",
        "SELECT count(*) AS n FROM sessions",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c).trim(), "n\n1", "only b's session is visible");
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    let err = stderr_of(&fails(c));
    assert!(err.contains("source=a") && err.contains("missing"), "{err}");
    // rebuild recovers everything intact; remove works on the damaged source.
    let mut c = hs(&store);
    c.args(["store", "rebuild"]);
    ok(c);
    let mut c = hs(&store);
    c.args(["store", "remove", "--source", "a"]);
    ok(c);
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    ok(c);
    assert!(!store.join("nodes/source=a").exists());
}

#[test]
fn truncated_part_file_is_left_out_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    let part = std::fs::read_dir(store.join("nodes/source=b"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let bytes = std::fs::read(&part).unwrap();
    std::fs::write(&part, &bytes[..bytes.len() / 2]).unwrap();
    let mut c = hs(&store);
    c.args([
        "sql",
        "SELECT DISTINCT source FROM nodes",
        "--format",
        "csv",
    ]);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "source\na");
    assert!(stderr_of(&out).contains("source b is damaged"), "{out:?}");
}

#[test]
fn manifest_naming_a_file_outside_the_store_is_damaged_not_followed() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    let outside = write(tmp.path(), "precious.txt", "keep me");
    let m = store.join("manifests/b.json");
    let text = std::fs::read_to_string(&m).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let first = v["files"][0]["path"].as_str().unwrap().to_string();
    std::fs::write(&m, text.replace(&first, "../precious.txt")).unwrap();
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    let err = stderr_of(&fails(c));
    assert!(err.contains("not the store's own"), "{err}");
    let mut c = hs(&store);
    c.args(["store", "remove", "--source", "b"]);
    ok(c);
    assert_eq!(std::fs::read_to_string(outside).unwrap(), "keep me");
}

#[test]
fn staging_is_removed_after_every_write_and_verify_has_no_note() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    assert!(!store.join(".staging").exists());
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    let out = ok(c);
    assert!(!out.contains("interrupted"), "{out}");
    let mut c = hs(&store);
    c.args(["store", "remove", "--source", "a"]);
    ok(c);
    assert!(!store.join(".staging").exists());
}

#[test]
fn identical_reingest_checks_that_the_files_still_exist() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let a = write(tmp.path(), "in/a.csv", ADD_REMOVE);
    ok(ingest(&store, "a", &a, &[]));
    let out = ingest(&store, "a", &a, &[]).output().unwrap();
    assert!(stderr_of(&out).contains("unchanged"), "{out:?}");
    for part in std::fs::read_dir(store.join("sessions/source=a")).unwrap() {
        std::fs::remove_file(part.unwrap().path()).unwrap();
    }
    let out = ingest(&store, "a", &a, &["--replace"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(stderr_of(&out).contains("replaced"), "{out:?}");
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    ok(c);
}

#[test]
fn lock_message_says_it_is_a_flock_not_a_stale_file() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .open(store.join(".lock"))
        .unwrap();
    lock.lock().unwrap();
    let c_in = write(tmp.path(), "in/c.csv", ADD_REMOVE);
    let err = stderr_of(&fails(ingest(&store, "c", &c_in, &[])));
    assert!(
        err.contains("being written by another process")
            && err.contains("flock")
            && err.contains("would not help"),
        "{err}"
    );
    assert!(!err.contains("remove the stale"), "{err}");
}

#[test]
fn store_path_that_is_a_file_fails_before_reading_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "not-a-dir", "x");
    // An input that does not exist: the store path is checked first.
    let mut c = hs(&file);
    c.args([
        "ingest",
        "--format",
        "add-remove",
        "--source",
        "a",
        "/nonexistent/in.csv",
    ]);
    let err = stderr_of(&fails(c));
    assert!(err.contains("is a file, not a store directory"), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 0, "{err}");
    let mut c = hs(&file);
    c.arg("sources");
    let err = stderr_of(&fails(c));
    assert!(err.contains("is a file, not a store directory"), "{err}");
}

#[test]
fn store_path_with_pattern_characters_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "in/a.csv", ADD_REMOVE);
    for name in ["st[1]", "st*", "st?"] {
        let err = stderr_of(&fails(ingest(&tmp.path().join(name), "a", &input, &[])));
        assert!(err.contains("file pattern"), "{name}: {err}");
    }
    // `source=` in the store path is harmless: files are read one by one, not as Hive paths.
    let store = tmp.path().join("source=weird/store");
    ok(ingest(&store, "a", &input, &[]));
    let mut c = hs(&store);
    c.args([
        "sql",
        "SELECT DISTINCT source FROM sessions",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c).trim(), "source\na");
}

#[test]
fn sql_cannot_write_attach_or_install() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    let target = tmp.path().join("out.csv");
    let part = store
        .join("sessions/source=a")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    for sql in [
        format!("COPY (SELECT 1) TO '{}'", target.display()),
        format!(
            "COPY (SELECT 1 AS x) TO '{}' (FORMAT parquet)",
            part.display()
        ),
        format!(
            "ATTACH '{}' AS other",
            tmp.path().join("x.duckdb").display()
        ),
        "INSTALL httpfs".to_string(),
        "CREATE TABLE t AS SELECT 1".to_string(),
        "SET enable_external_access = true".to_string(),
        "/* hidden */ COPY sessions TO 'x.csv'".to_string(),
        format!("EXPLAIN ANALYZE COPY (SELECT 1) TO '{}'", target.display()),
        "SELECT * FROM read_csv('/etc/hostname')".to_string(),
    ] {
        let mut c = hs(&store);
        c.args(["sql", &sql]);
        let out = c.output().unwrap();
        assert!(!out.status.success(), "{sql} was allowed: {out:?}");
    }
    assert!(!target.exists());
    let mut c = hs(&store);
    c.args(["store", "verify"]);
    ok(c);
    // Reading still works, including comments and parentheses before the SELECT.
    let mut c = hs(&store);
    c.args([
        "sql",
        "/* count */ -- sessions\n(SELECT count(*) AS n FROM sessions)",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c).trim(), "n\n4");
}

/// Holds the store's writer lock from the test process.
fn hold_lock(store: &Path) -> std::fs::File {
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(store.join(".lock"))
        .unwrap();
    lock.lock().unwrap();
    lock
}

#[test]
fn replay_waits_for_the_lock_instead_of_discarding_results() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let mut c = hs(&store);
    c.arg("demo");
    ok(c);
    let mut c = hs(&store);
    c.args(["sql", "SELECT count(*) AS n FROM runs", "--format", "csv"]);
    let runs_before = ok(c);
    let lock = hold_lock(&store);
    let mut c = hs(&store);
    c.args(["replay", "--windows", "1", "--policies", "fastest"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    loop {
        match lines.next() {
            Some(Ok(l)) if l.contains("waiting for another writer") => break,
            Some(_) => continue,
            None => panic!("replay ended without waiting: {:?}", child.wait()),
        }
    }
    // Readers work while the lock is held.
    let mut c = hs(&store);
    c.args(["sql", "SELECT count(*) AS n FROM runs", "--format", "csv"]);
    assert_eq!(ok(c), runs_before);
    drop(lock);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let mut c = hs(&store);
    c.args(["sql", "SELECT count(*) AS n FROM runs", "--format", "csv"]);
    assert_ne!(ok(c), runs_before, "the replay was not saved");
}

#[test]
fn readers_and_the_tui_loader_keep_working_while_a_writer_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let store = two_sources(tmp.path());
    let _lock = hold_lock(&store);
    let mut c = hs(&store);
    c.args(["sources", "--format", "csv"]);
    assert!(ok(c).contains("\nb,"));
    let mut c = hs(&store);
    c.args([
        "sql",
        "SELECT count(*) AS n FROM sessions",
        "--format",
        "csv",
    ]);
    assert_eq!(ok(c).trim(), "n\n4");
    use hazardserve::tui::data::{LoadJob, Loaded};
    let mut loader = hazardserve::tui::loader::Loader::new(&store);
    match loader.run(&LoadJob::Overview) {
        Ok(Loaded::Overview(_)) => {}
        other => panic!("the TUI overview did not load: {:?}", other.err()),
    }
    match loader.run(&LoadJob::Source("b".into())) {
        Ok(Loaded::Source(d)) => assert_eq!(d.source, "b"),
        other => panic!("the TUI source screen did not load: {:?}", other.err()),
    }
}

/// A content hash of every table, leaving out the columns that differ between two runs of the
/// same write (when it was ingested, the random run id).
fn content_hash(store: &Path) -> String {
    let st = Store::open(store).unwrap();
    let cat = st.query().unwrap();
    let mut all = String::new();
    for t in TABLES {
        let schema = (t.schema)();
        // A run's `source` is its random run id.
        let is_run = schema.fields().iter().any(|f| f.name() == "run_id");
        let cols: Vec<String> = (!is_run)
            .then(|| "source".to_string())
            .into_iter()
            .chain(
                schema
                    .fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .filter(|n| !matches!(n.as_str(), "ingested_at" | "run_id" | "created_at")),
            )
            .map(|c| format!("\"{c}\""))
            .collect();
        // A multiset hash: row count and the sum of the rows' 64-bit hashes (order-free).
        let sql = format!(
            "SELECT count(*)::VARCHAR || '/' || coalesce(sum(hash(r))::VARCHAR, '') FROM (SELECT row({}) AS r FROM {})",
            cols.join(", "),
            t.name
        );
        let row: String = cat
            .connection()
            .query_row(&sql, [], |r| r.get::<_, Option<String>>(0))
            .unwrap()
            .unwrap_or_default();
        all.push_str(t.name);
        all.push_str(&row);
    }
    hazardserve_ingest::input::hex(&sha2_digest(all.as_bytes()))
}

fn sha2_digest(b: &[u8]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(b).to_vec()
}

/// After recovery: no staging, no temporaries, and every table file named by a manifest.
fn assert_clean(store: &Path, what: &str) {
    let st = Store::open(store).unwrap();
    let named: std::collections::HashSet<String> = st
        .manifests()
        .unwrap()
        .into_iter()
        .flat_map(|m| m.files.into_iter().map(|f| f.path))
        .collect();
    for f in files_under(store) {
        let table_file = TABLES
            .iter()
            .any(|t| f.starts_with(&format!("{}/", t.name)));
        assert!(
            !f.starts_with(".staging") && !f.contains(".tmp-"),
            "{what}: leftover {f}"
        );
        assert!(!table_file || named.contains(&f), "{what}: orphan {f}");
    }
}

#[test]
fn sigkill_at_every_fault_point_leaves_the_store_before_or_after() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().join("base");
    let mut c = hs(&base);
    c.arg("demo");
    ok(c);
    let a = write(tmp.path(), "in/a.csv", ADD_REMOVE);
    ok(ingest(&base, "a", &a, &[]));
    let a2 = write(tmp.path(), "in/a2.csv", "0,add,node9\n70000,remove,node9\n");
    let n_in = write(tmp.path(), "in/n.csv", "0,add,q\n900,remove,q\n");
    let ops: Vec<(&str, Vec<String>)> = vec![
        (
            "ingest a new source",
            vec!["ingest", "--format", "add-remove", "--source", "n"]
                .into_iter()
                .map(String::from)
                .chain([n_in.to_string_lossy().into_owned()])
                .collect(),
        ),
        (
            "replace a source",
            vec![
                "ingest",
                "--format",
                "add-remove",
                "--replace",
                "--source",
                "a",
            ]
            .into_iter()
            .map(String::from)
            .chain([a2.to_string_lossy().into_owned()])
            .collect(),
        ),
        (
            "remove a source",
            ["store", "remove", "--source", "a"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "save a replay",
            ["replay", "--windows", "1", "--policies", "fastest"]
                .map(String::from)
                .to_vec(),
        ),
    ];
    let before = content_hash(&base);
    let mut kills = 0;
    for (what, args) in &ops {
        // The points this write passes, and the state it leaves when it completes.
        let done = tmp.path().join("done");
        let _ = std::fs::remove_dir_all(&done);
        copy_dir(&base, &done);
        let mut c = hs_faults(&done);
        c.args(args).env("HAZARDSERVE_FAULT", "trace");
        let out = c.output().unwrap();
        assert!(out.status.success(), "{what}: {out:?}");
        let points = stderr_of(&out)
            .lines()
            .filter(|l| l.starts_with("fault point "))
            .count();
        assert!(points >= 10, "{what}: only {points} fault points");
        let after = content_hash(&done);
        assert_ne!(before, after, "{what} changed nothing");
        eprintln!("{what}: {points} fault points");
        let started = std::time::Instant::now();
        for k in 1..=points {
            let dir = tmp.path().join("kill");
            let _ = std::fs::remove_dir_all(&dir);
            copy_dir(&base, &dir);
            let mut c = hs_faults(&dir);
            c.args(args)
                .env("HAZARDSERVE_FAULT", format!("kill-at:{k}"));
            let out = c.output().unwrap();
            assert_eq!(
                out.status.signal(),
                Some(9),
                "{what}: not killed at point {k}: {out:?}"
            );
            kills += 1;
            let label = format!("{what}, killed at point {k}");
            let mut c = hs(&dir);
            c.args(["store", "verify"]);
            ok(c);
            let h = content_hash(&dir);
            assert!(
                h == before || h == after,
                "{label}: neither before nor after"
            );
            // The next writer recovers: same content, nothing left over, verify passes.
            let mut c = hs(&dir);
            c.args(["store", "rebuild"]);
            ok(c);
            assert_eq!(
                h,
                content_hash(&dir),
                "{label}: recovery changed the content"
            );
            assert_clean(&dir, &label);
        }
        eprintln!(
            "{what}: killed at every point in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    assert!(kills >= 50, "only {kills} kill points");
    eprintln!("killed writers at {kills} fault points");
}

/// Only `hazardserve-faults` has the fault points on: `hazardserve`, the binary a user builds
/// (and the one `cargo run --release` rebuilds beside a test run), ignores `HAZARDSERVE_FAULT`,
/// even in this test build, where the feature is compiled in.
#[test]
fn only_the_faults_binary_has_fault_points() {
    let tmp = tempfile::tempdir().unwrap();
    let input = write(tmp.path(), "in/n.csv", "0,add,q\n900,remove,q\n");
    let run = |mut c: std::process::Command, store: &str| {
        c.args(["ingest", "--format", "add-remove", "--source", store])
            .arg(&input)
            .env("HAZARDSERVE_FAULT", "trace");
        let out = c.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("fault point "))
            .count()
    };
    let user = run(hs(&tmp.path().join("user")), "n");
    let faults = run(hs_faults(&tmp.path().join("faults")), "n");
    assert_eq!(user, 0, "hazardserve passed fault points");
    assert!(
        faults >= 5,
        "hazardserve-faults passed {faults} fault points"
    );
    // Nor is the kill hook: with `HAZARDSERVE_FAULT=kill-at:1` the user binary completes its
    // write.
    let mut c = hs(&tmp.path().join("user2"));
    c.args(["ingest", "--format", "add-remove", "--source", "n"])
        .arg(&input)
        .env("HAZARDSERVE_FAULT", "kill-at:1");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
}
