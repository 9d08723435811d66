//! Helpers shared by the integration tests.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The public data directory beside the checkout, if present.
pub fn shared(sub: &str) -> Option<PathBuf> {
    let base = std::env::var_os("HAZARDSERVE_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let p = base.join(sub);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipping: ../shared/{sub} not found");
        None
    }
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

/// The bundled samples directory.
pub fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/samples")
}
