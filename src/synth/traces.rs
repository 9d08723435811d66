//! Sample availability traces in three public formats: `tick-json`, `fta`, `gce-operations`.
//!
//! Parameters (maximum-likelihood fits on the closed sessions of the public traces; censoring
//! ignored, which is good enough for a sample):
//! - Spot lifetimes (Can't Be Late `preemption/1-node/aws-04-22-2023`, p3.2xlarge, 32 s ticks,
//!   202 closed up-runs): up ~ Weibull(k = 0.626, scale = 4,868 s); down (relaunch) ~
//!   LogNormal(mu = 7.31, sigma = 1.47) s.
//! - HPC nodes (FTA LANL05, 19,874 up and 23,329 down intervals): up ~ LogNormal(mu = 13.74,
//!   sigma = 2.39) s (median 11.7 days); down ~ LogNormal(mu = 8.24, sigma = 1.42) s (median 1 h).
//! - GCE preemptible VMs (SciSpot 2019, 2,170 VMs): preemption ~ Weibull(k = 0.503, scale =
//!   5,568 s) competing with a user stop ~ Weibull(k = 0.586, scale = 8,282 s), and the 24-hour
//!   cap; 351 of 869 preemptions came at the cap, 18 % of VMs were still running at the end.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::rng::Rng;

/// Seed of the committed samples.
pub const DEFAULT_SEED: u64 = 20_240_601;

/// One generated file: its path relative to the output directory and its content.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleFile {
    /// Relative path, e.g. `tick-json/preemption/us-east-1a_v100_1.json`.
    pub rel: String,
    /// The bytes.
    pub content: String,
}

/// Spot lifetime series in the Can't Be Late tick format (1 = running), 4 zones x 4,000 ticks.
pub fn tick_json(seed: u64) -> Vec<SampleFile> {
    let gap = 32.0;
    let ticks = 4_000usize;
    ["us-east-1a", "us-east-1c", "us-west-2b", "us-west-2c"]
        .iter()
        .enumerate()
        .map(|(z, zone)| {
            let mut rng = Rng::stream(seed, 100 + z as u64);
            let mut data = Vec::with_capacity(ticks);
            // Every series starts with the instance launching (down), as the real files do.
            let mut up = false;
            while data.len() < ticks {
                let secs = if up {
                    rng.weibull(0.626, 4_868.0)
                } else {
                    rng.lognormal(7.31, 1.47)
                };
                let n = ((secs / gap).round() as usize).max(1);
                for _ in 0..n.min(ticks - data.len()) {
                    data.push(if up { '1' } else { '0' });
                }
                up = !up;
            }
            let body: Vec<String> = data.iter().map(|c| c.to_string()).collect();
            SampleFile {
                rel: format!("tick-json/preemption/{zone}_v100_1.json"),
                content: format!(
                    "{{\"metadata\": {{\"gap_seconds\": {}}}, \"data\": [{}]}}\n",
                    gap as u64,
                    body.join(", ")
                ),
            }
        })
        .collect()
}

/// HPC node up/down intervals in the FTA `event_trace.tab` format, 30 nodes over one year.
pub fn fta(seed: u64) -> Vec<SampleFile> {
    let t0 = 1_104_537_600.0; // 2005-01-01T00:00:00Z
    let t1 = t0 + 365.0 * 86_400.0;
    let mut out = String::from(
        "event_id\tcomponent_id\tnode_id\tplatform_id\tnode_name\tevent_type\tevent_start_time\tevent_stop_time\tevent_end_reason\n",
    );
    let causes = [1005, 1019, 4006, 0];
    for node in 0..30u64 {
        let mut rng = Rng::stream(seed, 200 + node);
        // LANL rows start and end with a down (failure) interval.
        let mut t = t0 + rng.uniform() * 86_400.0;
        let mut up = false;
        let mut k = 0;
        loop {
            let len = if up {
                rng.lognormal(13.74, 2.39)
            } else {
                rng.lognormal(8.24, 1.42)
            };
            let end = (t + len).round();
            if up && end >= t1 {
                break;
            }
            let reason = if up {
                causes[rng.below(causes.len() as u64) as usize]
            } else {
                8000
            };
            let _ = writeln!(
                out,
                "{k}\t0\t{node}\t3\t{}.{:03}\t{}\t{}\t{}\t{reason}",
                2 + node % 5,
                node,
                up as u8,
                t.round() as i64,
                end as i64
            );
            k += 1;
            t = end;
            if !up && end >= t1 {
                break;
            }
            up = !up;
        }
    }
    vec![SampleFile {
        rel: "fta/event_trace.tab".into(),
        content: out,
    }]
}

fn rfc3339(t: f64) -> String {
    // Pacific time with the daylight-saving switch of 2019-03-10, as in the real logs.
    let dst_start = 1_552_212_000.0; // 2019-03-10T10:00:00Z
    let offset_h = if t >= dst_start { -7 } else { -8 };
    let Some(tz) = chrono::FixedOffset::east_opt(offset_h * 3600) else {
        return String::new();
    };
    let dt = chrono::DateTime::from_timestamp_millis((t * 1000.0).round() as i64)
        .unwrap_or_default()
        .with_timezone(&tz);
    dt.format("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string()
}

/// Preemptible VM operation logs in the `gcloud compute operations list --format=json` shape,
/// 150 VMs launched over three weeks around the 2019 daylight-saving switch.
pub fn gce_operations(seed: u64) -> Vec<SampleFile> {
    let mut rng = Rng::stream(seed, 300);
    let t0 = 1_551_600_000.0; // 2019-03-03T08:00:00Z
    let end = t0 + 21.0 * 86_400.0;
    let zones = ["us-central1-c", "us-east1-b", "us-west1-a"];
    let mut ops: Vec<(f64, serde_json::Value)> = Vec::new();
    let mut op_id: u64 = 7_000_000_000_000_000_000;
    let mut op = |t: f64, kind: &str, vm: u64, name: &str, zone: &str| {
        op_id += 1 + rng_step(op_id);
        serde_json::json!({
            "endTime": rfc3339(t + 2.0),
            "id": op_id.to_string(),
            "insertTime": rfc3339(t),
            "kind": "compute#operation",
            "name": format!("operation-{}-{}", (t * 1000.0) as i64, vm),
            "operationType": kind,
            "progress": 100,
            "startTime": rfc3339(t + 0.004),
            "status": "DONE",
            "targetId": vm.to_string(),
            "targetLink": format!("https://www.googleapis.com/compute/v1/projects/sample/zones/{zone}/instances/{name}"),
            "user": "sample@example.org",
            "zone": format!("https://www.googleapis.com/compute/v1/projects/sample/zones/{zone}"),
        })
    };
    for i in 0..150u64 {
        let vm = 5_000_000_000_000_000_000 + i * 7_919;
        let zone = zones[rng.below(3) as usize];
        let name = format!("sample-compute-{i}");
        let start = t0 + rng.uniform() * (end - t0 - 3_600.0);
        let preempt = rng.weibull(0.503, 5_568.0);
        let stop = rng.weibull(0.586, 8_282.0);
        let cap = 86_400.0 + rng.uniform() * 1_800.0;
        ops.push((start, op(start, "insert", vm, &name, zone)));
        let (t, kind) = if preempt.min(stop) >= cap {
            (start + cap, "compute.instances.preempted")
        } else if preempt < stop {
            (start + preempt, "compute.instances.preempted")
        } else if rng.uniform() < 0.95 {
            (start + stop, "stop")
        } else {
            (start + stop, "delete")
        };
        if t < end {
            ops.push((t, op(t, kind, vm, &name, zone)));
        }
    }
    ops.sort_by(|a, b| b.0.total_cmp(&a.0)); // gcloud lists newest first
    let arr: Vec<serde_json::Value> = ops.into_iter().map(|(_, v)| v).collect();
    let content = serde_json::to_string_pretty(&arr).unwrap_or_default() + "\n";
    vec![SampleFile {
        rel: "gce-operations/operations.json".into(),
        content,
    }]
}

fn rng_step(x: u64) -> u64 {
    (x.wrapping_mul(6_364_136_223_846_793_005) >> 40) % 1000
}

/// Every sample: the three availability traces and the request workload.
pub fn all(seed: u64) -> Vec<SampleFile> {
    let mut v = tick_json(seed);
    v.extend(fta(seed));
    v.extend(gce_operations(seed));
    v.push(SampleFile {
        rel: "workload/requests.csv".into(),
        content: super::workload::workload_csv(&super::workload::WorkloadParams::default(), seed),
    });
    v
}

/// Writes every sample under `dir` (atomically per file); returns the paths written.
pub fn write_samples(dir: &Path, seed: u64) -> std::io::Result<Vec<PathBuf>> {
    write_files(dir, all(seed))
}

/// Writes `files` under `dir` (atomically per file); returns the paths written.
pub(crate) fn write_files(dir: &Path, files: Vec<SampleFile>) -> std::io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for f in files {
        let path = dir.join(&f.rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, f.content.as_bytes())?;
        std::fs::rename(&tmp, &path)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_small() {
        let a = all(DEFAULT_SEED);
        assert_eq!(a, all(DEFAULT_SEED));
        assert_ne!(a, all(DEFAULT_SEED + 1));
        let total: usize = a.iter().map(|f| f.content.len()).sum();
        assert!(total < 1_000_000, "samples are {total} bytes");
    }

    #[test]
    fn offsets_follow_daylight_saving() {
        assert!(rfc3339(1_552_000_000.0).ends_with("-08:00"));
        assert!(rfc3339(1_553_000_000.0).ends_with("-07:00"));
    }
}
