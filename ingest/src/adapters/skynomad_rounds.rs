//! `skynomad-rounds`: SkyNomad H100 spot probe rounds, one JSON object per 10-minute round
//! (`skynomad/data/h100_16_runs/<YYYYMMDD-HHMMSS-hash>.json`).
//!
//! Each round has `scheduled_at` (ISO 8601 with an offset, e.g. `-07:00`; converted to UTC epoch
//! seconds), `interval_sec` (600) and `zone_results: {<zone>: {"instances_requested": 16,
//! "instances_created": c, …}}`. Every round asks each zone for 16 `a3-highgpu-1g` spot VMs;
//! a zone is up in a round when `instances_created >= k` (`--threshold`, default 1 with a note;
//! `k = 16` gives "full gang" windows). These are capacity (obtainability) windows, not VM
//! lifetimes: [`Kind::SpotObtainability`], end cause `unobtainable`, [`TimeBase::Utc`].
//!
//! One node per zone (node key and `zone` = the zone name, `instance_type = a3-highgpu-1g`,
//! group = the directory of the rounds). Sessions follow the sample rule of
//! [`crate::sessionize`] over the time-ordered rounds with gap = `interval_sec` (median over the
//! rounds, or `--gap-seconds`): a session starts at the `scheduled_at` of its first up round and
//! ends at the first down round; it is censored at the last observed round + gap when it reaches
//! the last round, or a hole of missing rounds (a spacing above twice the gap, e.g. the ten rounds
//! missing on 2025-10-08; a single missing round is within the sessionizer's tolerance). A zone
//! absent from a present round's `zone_results` (or whose count is unusable) was not observed in
//! that round: the run is censored there (`observation-gap`) and the next one is left-truncated.
//!
//! A file that is not valid JSON, lacks `scheduled_at`/`zone_results`, or repeats another round's
//! `scheduled_at` is rejected as a whole (record 0); a bad zone entry is rejected with the line
//! of its key.

use std::collections::BTreeMap;

use chrono::DateTime;
use serde_json::Value;

use super::format::{Adapter, Format};
use super::tick_json::{check_options, group_of, observed_segments, segmented_sessions};
use crate::model::{Kind, NodeInfo, Observation, Rejects, TimeBase};
use crate::sessionize::{Sample, SeriesLabels};
use crate::{IngestError, InputFile, Options, Result, Trace};

/// The `skynomad-rounds` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "skynomad-rounds",
    about: "One JSON per probe round with per-zone created counts (SkyNomad H100)",
    parse,
    sniff,
    keys_from_file_names: false,
};

/// The VM type every SkyNomad H100 round probes (artifact README).
pub const INSTANCE_TYPE: &str = "a3-highgpu-1g";

/// Instances every round asks each zone for (artifact README).
pub const PROBED: u64 = 16;

/// Whether `file` looks like a SkyNomad probe round (a JSON object with `zone_results` and
/// `scheduled_at`).
pub fn sniff(file: &InputFile) -> bool {
    file.sniff_head().trim_start().starts_with('{')
        && file.contains("\"zone_results\"")
        && file.contains("\"scheduled_at\"")
}

/// One parsed round.
struct Round {
    t: f64,
    file: usize,
    interval: Option<f64>,
    /// Zone → instances created (`None`: present but unusable, i.e. not observed).
    zones: BTreeMap<String, Option<u64>>,
}

/// Parses the probe rounds of one source into per-zone sessions (see the module docs).
pub fn parse(files: &[InputFile], options: &Options) -> Result<Trace> {
    check_options(options)?;
    let mut rejects = Rejects::new(options.strict);
    let mut notes = Vec::new();
    let mut rounds = Vec::new();
    for (i, file) in files.iter().enumerate() {
        if let Some(r) = read_round(file, i, &mut rejects)? {
            rounds.push(r);
        }
    }
    rounds.sort_by(|a, b| a.t.total_cmp(&b.t).then(a.file.cmp(&b.file)));
    let mut unique: Vec<Round> = Vec::with_capacity(rounds.len());
    for r in rounds {
        if let Some(prev) = unique.last().filter(|p| p.t == r.t) {
            let reason = format!(
                "same scheduled_at as {}; duplicate round ignored",
                files[prev.file].display()
            );
            rejects.reject(&files[r.file].display(), 0, "", reason)?;
        } else {
            unique.push(r);
        }
    }
    let rounds = unique;
    if rounds.is_empty() {
        return Err(rejects.nothing_usable(IngestError::Empty(
            files
                .first()
                .map_or_else(|| "skynomad-rounds".to_string(), InputFile::display),
        )));
    }
    let gap = match options.gap_seconds {
        Some(g) => g,
        None => {
            median(rounds.iter().filter_map(|r| r.interval)).ok_or_else(|| IngestError::Bad {
                file: files[rounds[0].file].display(),
                line: 0,
                reason: "no round has a positive interval_sec; pass --gap-seconds G".into(),
            })?
        }
    };
    let k = options.threshold.unwrap_or_else(|| {
        notes.push(
            "no --threshold given: a zone is up in a round when at least k=1 of its 16 \
             instances was created"
                .to_string(),
        );
        1
    });

    let zones: std::collections::BTreeSet<&String> =
        rounds.iter().flat_map(|r| r.zones.keys()).collect();
    let group = group_of(&files[rounds[0].file]);
    let mut nodes = Vec::new();
    let mut sessions = Vec::new();
    let mut observations = Vec::new();
    for zone in zones {
        // The raw counts: instances created of the 16 probed in each round.
        observations.extend(rounds.iter().filter_map(|r| {
            r.zones.get(zone).copied().flatten().map(|c| Observation {
                node_id: zone.clone(),
                t: r.t,
                count: c,
                of: Some(PROBED),
                dt: gap,
            })
        }));
        let segments = observed_segments(rounds.iter().map(|r| {
            r.zones.get(zone).copied().flatten().map(|c| Sample {
                t: r.t,
                up: c >= u64::from(k),
            })
        }));
        let labels = SeriesLabels {
            node_id: zone,
            gap,
            event_cause: "unobtainable",
        };
        sessions.extend(segmented_sessions(&segments, &labels));
        let first = segments
            .first()
            .and_then(|s| s.first())
            .map_or(0.0, |s| s.t);
        let last = segments
            .last()
            .and_then(|s| s.last())
            .map_or(0.0, |s| s.t + gap);
        nodes.push(NodeInfo {
            node_id: zone.clone(),
            zone: Some(zone.clone()),
            instance_type: Some(INSTANCE_TYPE.to_string()),
            group: group.clone(),
            observed_from: first,
            observed_to: last,
        });
    }
    Ok(Trace {
        observations,
        kind: Kind::SpotObtainability,
        time_base: TimeBase::Utc,
        nodes,
        sessions,
        rejects: rejects.into_vec(),
        notes,
        kept_records: rounds.len() as u64,
    })
}

fn read_round(file: &InputFile, index: usize, rejects: &mut Rejects) -> Result<Option<Round>> {
    let name = file.display();
    let Some(text) = rejects.absorb(file.text())? else {
        return Ok(None);
    };
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let line = e.line() as u64;
            let raw = text
                .lines()
                .nth(line.saturating_sub(1) as usize)
                .unwrap_or("");
            rejects.defect(&name, line, raw, format!("not valid JSON: {e}"))?;
            return Ok(None);
        }
    };
    let Some(sched) = root.get("scheduled_at").and_then(Value::as_str) else {
        rejects.defect(&name, 0, "", "no scheduled_at string; round ignored")?;
        return Ok(None);
    };
    let t = match DateTime::parse_from_rfc3339(sched.trim()) {
        Ok(d) => d.timestamp_micros() as f64 / 1e6,
        Err(e) => {
            let reason = format!("scheduled_at {sched:?} is not ISO 8601 with an offset: {e}");
            rejects.defect(&name, line_of(text, "\"scheduled_at\""), sched, reason)?;
            return Ok(None);
        }
    };
    let Some(results) = root.get("zone_results").and_then(Value::as_object) else {
        rejects.defect(&name, 0, "", "no zone_results object; round ignored")?;
        return Ok(None);
    };
    let mut zones = BTreeMap::new();
    for (zone, v) in results {
        let created = v
            .get("instances_created")
            .and_then(Value::as_u64)
            .filter(|c| *c <= u64::from(u32::MAX));
        if created.is_none() {
            let raw = v
                .get("instances_created")
                .map_or_else(String::new, Value::to_string);
            rejects.reject(
                &name,
                line_of(text, &format!("\"{zone}\"")),
                &raw,
                format!(
                    "zone {zone}: instances_created is missing or not a non-negative integer; \
                     zone not observed in this round"
                ),
            )?;
        }
        zones.insert(zone.clone(), created);
    }
    let interval = root
        .get("interval_sec")
        .and_then(Value::as_f64)
        .filter(|g| g.is_finite() && *g > 0.0);
    Ok(Some(Round {
        t,
        file: index,
        interval,
        zones,
    }))
}

/// 1-based line of the first occurrence of `needle` (0 when absent).
fn line_of(text: &str, needle: &str) -> u64 {
    text.find(needle)
        .map_or(0, |off| 1 + text[..off].matches('\n').count() as u64)
}

fn median(xs: impl Iterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = xs.collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A round at `2025-10-03T17:MM:00-07:00` with the given zone counts.
    fn round(minute: u32, zones: &[(&str, i64)]) -> InputFile {
        let zr: Vec<String> = zones
            .iter()
            .map(|(z, c)| {
                format!("    \"{z}\": {{\"instances_requested\": 16, \"instances_created\": {c}}}")
            })
            .collect();
        let text = format!(
            "{{\n  \"interval_sec\": 600,\n  \"scheduled_at\": \"2025-10-03T{:02}:{:02}:00.000000-07:00\",\n  \
             \"zone_results\": {{\n{}\n  }}\n}}\n",
            17 + minute / 60,
            minute % 60,
            zr.join(",\n")
        );
        let rel = format!("runs/r{minute:04}.json");
        InputFile::from_bytes(
            PathBuf::from("/d").join(&rel),
            &rel,
            text.into_bytes(),
            String::new(),
        )
    }

    /// 2025-10-04T00:00:00Z = 2025-10-03T17:00:00-07:00.
    const T0: f64 = 1_759_536_000.0;

    fn spans(t: &Trace, node: &str) -> Vec<(f64, f64, bool, bool, String)> {
        t.sessions
            .iter()
            .filter(|s| *s.node_id == *node)
            .map(|s| {
                (
                    s.start - T0,
                    s.end - T0,
                    s.event,
                    s.left_truncated,
                    s.end_cause.to_string(),
                )
            })
            .collect()
    }

    fn rounds() -> Vec<InputFile> {
        vec![
            round(0, &[("a", 16), ("b", 0)]),
            round(10, &[("a", 3), ("b", 16)]),
            round(20, &[("a", 0), ("b", 16)]),
            round(30, &[("a", 5)]), // b not observed
            round(40, &[("a", 16), ("b", 2)]),
            // 50 … 80 missing: a hole of four rounds
            round(90, &[("a", 16), ("b", 0)]),
            round(100, &[("a", 16), ("b", 0)]),
        ]
    }

    #[test]
    fn rounds_to_zone_sessions() {
        let t = parse(&rounds(), &Options::default()).unwrap();
        assert_eq!(
            (t.kind, t.time_base),
            (Kind::SpotObtainability, TimeBase::Utc)
        );
        assert!(t.notes.iter().any(|n| n.contains("k=1")));
        // Every observed count is kept (zone b is missing from one round), each of 16.
        let counts = |z: &str| -> Vec<u64> {
            t.observations
                .iter()
                .filter(|o| o.node_id == z)
                .map(|o| o.count)
                .collect()
        };
        assert_eq!(counts("a"), [16, 3, 0, 5, 16, 16, 16]);
        assert_eq!(counts("b"), [0, 16, 16, 2, 0, 0]);
        assert!(t
            .observations
            .iter()
            .all(|o| o.of == Some(16) && o.dt == 600.0));
        assert_eq!(
            spans(&t, "a"),
            vec![
                (0.0, 1200.0, true, true, "unobtainable".into()),
                (1800.0, 3000.0, false, false, "observation-gap".into()),
                (5400.0, 6600.0, false, true, "observation-end".into()),
            ]
        );
        assert_eq!(
            spans(&t, "b"),
            vec![
                (600.0, 1800.0, false, false, "observation-gap".into()),
                (2400.0, 3000.0, false, true, "observation-gap".into()),
            ]
        );
        let a = t.nodes.iter().find(|n| n.node_id == "a").unwrap();
        assert_eq!(a.zone.as_deref(), Some("a"));
        assert_eq!(a.instance_type.as_deref(), Some(INSTANCE_TYPE));
        assert_eq!(a.group.as_deref(), Some("runs"));
        assert_eq!((a.observed_from - T0, a.observed_to - T0), (0.0, 6600.0));
        assert!(t.sessions.iter().all(|s| s.resolution_s == 600.0));
    }

    #[test]
    fn threshold_sixteen_and_gap_override() {
        let o = Options {
            threshold: Some(16),
            ..Options::default()
        };
        let t = parse(&rounds(), &o).unwrap();
        assert_eq!(
            spans(&t, "a"),
            vec![
                (0.0, 600.0, true, true, "unobtainable".into()),
                (2400.0, 3000.0, false, false, "observation-gap".into()),
                (5400.0, 6600.0, false, true, "observation-end".into()),
            ]
        );
        // With a 3000-s gap the four missing rounds are no longer a hole.
        let o = Options {
            gap_seconds: Some(3000.0),
            ..Options::default()
        };
        let t = parse(&rounds(), &o).unwrap();
        assert_eq!(
            spans(&t, "a"),
            vec![
                (0.0, 1200.0, true, true, "unobtainable".into()),
                (1800.0, 9000.0, false, false, "observation-end".into()),
            ]
        );
    }

    #[test]
    fn bad_rounds_and_zones() {
        let mut files = rounds();
        files.push(round(110, &[("a", -1), ("b", 4)]));
        files.push(InputFile::from_bytes(
            PathBuf::from("/d/runs/broken.json"),
            "runs/broken.json",
            b"{\"zone_results\": {}}".to_vec(),
            String::new(),
        ));
        files.push(round(100, &[("a", 0)])); // duplicate of the 17:100 round
        let t = parse(&files, &Options::default()).unwrap();
        let r: Vec<(&str, u64)> = t
            .rejects
            .iter()
            .map(|r| (r.file.as_str(), r.line))
            .collect();
        assert_eq!(
            r,
            vec![
                ("/d/runs/r0110.json", 5),
                ("/d/runs/broken.json", 0),
                ("/d/runs/r0100.json", 0)
            ]
        );
        assert!(t.rejects[0].reason.contains("zone a"));
        assert!(t.rejects[2].reason.contains("duplicate"));
        // Zone a at 17:110 is not observed: the run is censored at the last observed round.
        assert_eq!(
            spans(&t, "a")[2],
            (5400.0, 6600.0, false, true, "observation-end".into())
        );
        let strict = Options {
            strict: true,
            ..Options::default()
        };
        let e = parse(&files, &strict).unwrap_err().to_string();
        assert!(
            e.starts_with("/d/runs/r0110.json:5: zone a: instances_created"),
            "{e}"
        );
    }

    #[test]
    fn sniffs_rounds() {
        assert!(sniff(&round(0, &[("a", 1)])));
        let tick = InputFile::from_bytes(
            PathBuf::from("x.json"),
            "x.json",
            br#"{"metadata": {"gap_seconds": 1}, "data": [1]}"#.to_vec(),
            String::new(),
        );
        assert!(!sniff(&tick));
    }
}
