//! The documented Slurm job-array script on a real (single-node) Slurm cluster: three array
//! tasks run three shards, `sweep merge` commits them, and the merged sweep equals the
//! unsharded one. CI starts the cluster (`scripts/cluster/slurm-single-node.sh start`);
//! locally the test skips when no cluster answers.

use std::path::Path;
use std::process::Command;

use crate::common::{hs, ok, skip, write};
use crate::sweep::{availability, cells, requests, same, store_with, POLICIES};

/// Whether a Slurm controller answers and has a node that can run jobs.
fn cluster_up() -> bool {
    // `sbatch --version` needs a configuration, so only a failure to start means "absent".
    if let Err(e) = Command::new("sbatch").arg("--version").output() {
        skip(&format!(
            "sbatch cannot run ({e}): install Debian's slurm-wlm and munge"
        ));
        return false;
    }
    let up = Command::new("sinfo")
        .args(["-h", "-o", "%t"])
        .output()
        .is_ok_and(|o| {
            o.status.success()
                && String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .any(|s| matches!(s.trim(), "idle" | "mix" | "alloc"))
        });
    if !up {
        skip(
            "no Slurm cluster answers `sinfo` (start one with \
             `scripts/cluster/slurm-single-node.sh start` and export the SLURM_CONF it prints)",
        );
    }
    up
}

#[test]
fn the_job_array_script_shards_a_sweep_on_slurm() {
    if !cluster_up() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = store_with(
        tmp.path(),
        &availability(10, 30_000.0, 5, |r| Some(300.0 + 2500.0 * r.unit())),
        &requests(600.0, 0.5, 300, 4),
    );
    let grid = write(
        tmp.path(),
        "grid.toml",
        &format!(
            "[base]\n\"nodes.source\" = \"cluster\"\n\"workload.source\" = \"reqs\"\n\"replay.windows\" = 2\n{POLICIES}[axes]\n\"hardware.preset\" = [\"a100\", \"m1-max\"]\n\"workload.load\" = [0.5, 0.8]\n"
        ),
    );
    let mut c = hs(&store);
    c.args(["-q", "sweep", "--id", "local", "--grid"])
        .arg(&grid);
    ok(c);

    let shards = tmp.path().join("shards");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/cluster/sweep-array.sbatch");
    let out = Command::new("sbatch")
        .args(["--wait", "--array=0-2", "--time=10", "--chdir"])
        .arg(tmp.path())
        .arg(&script)
        .env("STORE", &store)
        .env("GRID", &grid)
        .env("OUT", &shards)
        .env("HAZARDSERVE", env!("CARGO_BIN_EXE_hazardserve"))
        .output()
        .expect("run sbatch");
    let logs: String = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect();
    assert!(
        out.status.success(),
        "sbatch --wait failed: {}\n{}\ntask logs:\n{logs}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for i in 0..3 {
        assert!(
            shards.join(format!("shard-{i}-of-3.parquet")).exists(),
            "array task {i} wrote no shard; task logs:\n{logs}"
        );
    }
    let mut c = hs(&store);
    c.args(["-q", "sweep", "merge", "--id", "slurm"])
        .arg(&shards);
    ok(c);
    let local = cells(&store, "local");
    assert!(
        local.contains("3,\"hardware.preset=m1-max,workload.load=0.8\""),
        "{local}"
    );
    same(
        &local,
        &cells(&store, "slurm"),
        "unsharded and Slurm-sharded",
    );
}
