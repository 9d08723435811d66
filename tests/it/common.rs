//! Helpers shared by the integration tests.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Whether the tests run under CI (`CI` set to anything but empty, `0` or `false`), where every
/// test must run: a missing prerequisite fails the test instead of skipping it.
pub fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// Skips the calling test for `reason` (the caller returns right after): under CI this panics,
/// since there everything must run; locally it prints `SKIPPED: <test>: <reason>` on the
/// process's standard error, which the test harness does not capture, so every skip shows in
/// the output of `cargo test` (count them with `grep -c SKIPPED:`; `.ci/run` does).
pub fn skip(reason: &str) {
    let thread = std::thread::current();
    let test = thread.name().unwrap_or("a test");
    if under_ci() {
        panic!("{test} cannot run: {reason} (CI is set, so nothing may skip)");
    }
    // On a line of its own even when the harness is half-way through a `test ... ok` line.
    let _ = write!(std::io::stderr(), "\nSKIPPED: {test}: {reason}\n");
}

/// The public data directory beside the checkout (`$HAZARDSERVE_SHARED` or `../shared`), or
/// `None` after [`skip`]ping the test when it is absent.
pub fn shared(sub: &str) -> Option<PathBuf> {
    let base = std::env::var_os("HAZARDSERVE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let p = base.join(sub);
    if p.exists() {
        Some(p)
    } else {
        skip(&format!("{} not found", p.display()));
        None
    }
}

/// Whether `program` runs (`program --version`); [`skip`]s the test when it does not.
pub fn have(program: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        skip(&format!("{program} is not installed"));
    }
    ok
}

/// The real binary, with a store in `store`.
pub fn hs(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hazardserve"));
    c.arg("--store")
        .arg(store)
        .env_remove("HAZARDSERVE_STORE")
        .env_remove("HAZARDSERVE_FAULT");
    c
}

/// The binary with the test-only fault points on (`hazardserve-faults`, built with the
/// `fault-injection` feature), with a store in `store`; `HAZARDSERVE_FAULT` is the test's to set.
pub fn hs_faults(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hazardserve-faults"));
    c.arg("--store")
        .arg(store)
        .env_remove("HAZARDSERVE_STORE")
        .env_remove("HAZARDSERVE_FAULT");
    c
}

/// Runs and asserts success, returning stdout.
pub fn ok(mut c: Command) -> String {
    let out = c.output().expect("run hazardserve");
    assert!(
        out.status.success(),
        "command failed: {:?}\nstdout:\n{}\nstderr:\n{}",
        c,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs and asserts failure, returning the output.
pub fn fails(mut c: Command) -> Output {
    let out = c.output().expect("run hazardserve");
    assert!(
        !out.status.success(),
        "command unexpectedly succeeded: {c:?}"
    );
    out
}

/// Writes `body` to `dir/name`, creating its folders; returns the path.
pub fn write(dir: &Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, body).unwrap();
    p
}

/// The bundled samples directory.
pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/samples")
}

/// A store holding every public trace of `../shared/traces-public` (`ingest-public`), made
/// once per test run and shared by the tests that only read it; `None` after [`skip`]ping
/// when the traces are absent.
pub fn public_store() -> Option<&'static Path> {
    use std::sync::OnceLock;
    static STORE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let dir = shared("traces-public")?;
    let (_, p) = STORE.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let mut c = hs(&store);
        c.arg("ingest-public").arg(&dir);
        ok(c);
        (tmp, store)
    });
    Some(p)
}

/// The subcommands listed in a `--help` text.
fn commands_of(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // Command lines are indented by two; wrapped descriptions by more.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

/// Every command and subcommand (as its words after `hazardserve`; the top level is empty)
/// with its `--help` text at 80 columns, parents before their subcommands, in help order.
pub fn help_tree() -> Vec<(Vec<String>, String)> {
    let tmp = tempfile::tempdir().unwrap();
    let help = |args: &[String]| {
        let mut c = hs(tmp.path());
        c.args(args).arg("--help").env("COLUMNS", "80");
        ok(c)
    };
    let mut out = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![Vec::new()];
    while let Some(cmd) = todo.pop() {
        let text = help(&cmd);
        let subs = commands_of(&text);
        // Pushed in reverse so they pop in help order.
        for sub in subs.into_iter().rev() {
            let mut c = cmd.clone();
            c.push(sub);
            todo.push(c);
        }
        out.push((cmd, text));
    }
    out
}

/// Generates the long-output workload (`synth workload --class long-output`, CSV in `tmp`) and
/// ingests it into `store` as source `long-output`, as the README does.
pub fn ingest_long_output(store: &Path, tmp: &Path) {
    let csv = tmp.join("long-output.csv");
    let mut c = hs(store);
    c.args(["-q", "synth", "workload", "--class", "long-output", "--out"])
        .arg(&csv);
    ok(c);
    ingest(store, "lengths-csv", "long-output", &csv);
}

/// `hazardserve -q ingest --format FORMAT --source SOURCE FILE` into `store`, which must
/// succeed.
pub fn ingest(store: &Path, format: &str, source: &str, file: &Path) {
    let mut c = hs(store);
    c.args(["-q", "ingest", "--format", format, "--source", source])
        .arg(file);
    ok(c);
}

/// Ingests the committed positive-control fleet (`traces/controls/two-class`) as source
/// `two-class`.
pub fn ingest_control_fleet(store: &Path) {
    let mut c = hs(store);
    c.args(["-q", "ingest", "--format", "fta", "--fta-censored-tail"])
        .args(["--source", "two-class"])
        .arg(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/controls/two-class/event_trace.tab"),
        );
    ok(c);
}

/// Every `.rs` file under `dir`, recursively (appended to `out`).
pub fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    files_with_extension(dir, "rs", out);
}

/// Every file named `*.EXT` under `dir`, recursively (appended to `out`).
pub fn files_with_extension(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_with_extension(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

/// Deterministic up (1) / down (0) tick runs of varying lengths, `n` ticks, seeded by `seed`.
pub fn tick_series(seed: u64, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n);
    let mut x = seed;
    let mut up = true;
    while v.len() < n {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let len = 5 + (x >> 59) as usize * 7;
        v.extend(std::iter::repeat_n(up as u8, len.min(n - v.len())));
        up = !up;
    }
    v
}

/// Writes node `node`'s ticks as a `tick-json` file (`zone-<node>_v100_1.json`, probes every
/// `gap_s` seconds) into `traces`.
pub fn write_tick_json(traces: &Path, node: u64, gap_s: u32, data: &[u8]) {
    let body: Vec<String> = data.iter().map(|v| v.to_string()).collect();
    std::fs::write(
        traces.join(format!("zone-{node}_v100_1.json")),
        format!(
            "{{\"metadata\": {{\"gap_seconds\": {gap_s}}}, \"data\": [{}]}}",
            body.join(",")
        ),
    )
    .unwrap();
}

/// Copies directory `from` (a store, say) to `to`, recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    let entries = std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    for e in entries.flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        }
    }
}

/// README.md and every Markdown page under `docs/src`, as (path, text).
pub fn doc_pages(root: &Path) -> Vec<(PathBuf, String)> {
    let mut paths = vec![root.join("README.md")];
    files_with_extension(&root.join("docs/src"), "md", &mut paths);
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// The targets of the Markdown links `[text](target)` of `md`, in order.
pub fn md_links(md: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = md;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let end = after.find(')').unwrap_or(after.len());
        out.push(&after[..end]);
        rest = &after[end..];
    }
    out
}

/// The book's pages in reading order: the targets of `docs/src/SUMMARY.md`'s links, as paths.
pub fn book_order(root: &Path) -> Vec<PathBuf> {
    let src = root.join("docs/src");
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    md_links(&summary)
        .into_iter()
        .map(|l| src.join(l))
        .collect()
}
