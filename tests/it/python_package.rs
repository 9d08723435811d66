//! The Python package (`python/`, built by maturin: `pip install ./python`): its pytest suite
//! runs against lifelines 0.30.3 on every golden case and on hypothesis-drawn ones, reads a
//! priors export the binary writes from the demo store, and takes every decision of the
//! replay's decision logs (both engines) again with `HazardAwarePolicy`, and executes both
//! notebooks (`notebooks/`, nbmake) against the binary and the public data; the runs and
//! results tests replay and sweep into a copy of the demo store through the binary; the Vidur
//! plug-in runs inside the real Vidur (`python/constraints.txt`). CI installs
//! the package and its test dependencies into the cached venv (`.ci/run`,
//! `HAZARDSERVE_PYTHON`); locally the test skips when that Python cannot import them, and fails
//! when the installed package is older than the checkout's sources (reinstall it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use crate::common::{copy_dir, hs, ok, shared, skip};
use crate::decision_log::write_decision_log;
use crate::tui_common::demo_store;

/// A Python that imports the installed package and its test tools: `$HAZARDSERVE_PYTHON`,
/// else `python3`.
fn python() -> Option<String> {
    let py = std::env::var("HAZARDSERVE_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let ok = Command::new(&py)
        .args([
            "-c",
            "import hazardserve, pytest, hypothesis, lifelines, nbmake, matplotlib, vidur",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Some(py)
    } else {
        skip(&format!(
            "{py} cannot import hazardserve, pytest, hypothesis, lifelines, nbmake, \
             matplotlib and vidur (.ci/run installs them: see its venv step and \
             python/constraints.txt)"
        ));
        None
    }
}

fn newest(dir: &Path, newest_so_far: &mut (SystemTime, PathBuf)) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            newest(&p, newest_so_far);
        } else if let Ok(t) = e.metadata().and_then(|m| m.modified()) {
            if t > newest_so_far.0 {
                *newest_so_far = (t, p);
            }
        }
    }
}

#[test]
fn the_python_package_passes_its_pytest_suite_against_lifelines() {
    let Some(py) = python() else {
        return;
    };
    // The walk-through notebook ingests a public trace and workload.
    let Some(shared) = shared("traces-public").and_then(|p| p.parent().map(Path::to_path_buf))
    else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // The installed native module must be built from this checkout's sources.
    let out = Command::new(&py)
        .args(["-c", "import hazardserve._native as n; print(n.__file__)"])
        .output()
        .expect("run python");
    let native = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let installed = std::fs::metadata(&native)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e}", native.display()));
    let mut src = (SystemTime::UNIX_EPOCH, PathBuf::new());
    for sub in ["python/src", "python/hazardserve", "core/src"] {
        newest(&root.join(sub), &mut src);
    }
    for file in [
        "python/Cargo.toml",
        "python/pyproject.toml",
        "core/Cargo.toml",
        "Cargo.lock",
    ] {
        let p = root.join(file);
        if let Ok(t) = std::fs::metadata(&p).and_then(|m| m.modified()) {
            if t > src.0 {
                src = (t, p);
            }
        }
    }
    assert!(
        installed >= src.0,
        "the installed package ({}) is older than {}: reinstall it (pip install ./python)",
        native.display(),
        src.1.display()
    );
    let scratch = tempfile::tempdir().expect("temp dir");
    // A real export for the priors tests: the demo's sample spot nodes.
    let priors = scratch.path().join("priors.json");
    let mut export = hs(demo_store());
    export
        .args(["priors", "export", "--source", "sample-spot", "--out"])
        .arg(&priors);
    ok(export);
    // The replay's decision logs under both engines, for the policy's parity test.
    let logs = std::env::join_paths(
        ["iteration", "simple"].map(|e| write_decision_log(scratch.path(), e)),
    )
    .expect("paths join");
    // A copy of the demo store for the runs-and-results tests, which replay and sweep into it.
    let store = scratch.path().join("store");
    copy_dir(demo_store(), &store);
    let out = Command::new(&py)
        .args([
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-W",
            "ignore",
        ])
        .arg(root.join("python/tests"))
        // Both notebooks, executed (nbmake): the trigger's derivation and the walk-through.
        .arg("--nbmake")
        .arg(root.join("notebooks/derive-trigger.ipynb"))
        .arg(root.join("notebooks/walkthrough.ipynb"))
        .current_dir(scratch.path())
        // Nothing written into the checkout; the priors tests read the export.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("HAZARDSERVE_PRIORS_EXPORT", &priors)
        .env("HAZARDSERVE_DECISION_LOGS", &logs)
        .env("HAZARDSERVE_BIN", env!("CARGO_BIN_EXE_hazardserve"))
        .env("HAZARDSERVE_SHARED", &shared)
        .env("MPLBACKEND", "Agg")
        .env("HAZARDSERVE_STORE_COPY", &store)
        .env("HAZARDSERVE_GRIDS", root.join("reports/sweeps"))
        .output()
        .expect("run pytest");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "pytest failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The summary line: "N passed in S s", nothing skipped or deselected.
    let summary = stdout.lines().last().unwrap_or_default();
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= 140 && !summary.contains("skipped") && !summary.contains("deselected"),
        "pytest collected too little: {summary}"
    );
}
