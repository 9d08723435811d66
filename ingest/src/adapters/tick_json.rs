//! `tick-json`: fixed-gap tick series in one JSON object per file.
//!
//! Format (Can't Be Late `spot-traces`, SpotHedge `data/`, SkyNomad converted traces):
//!
//! ```text
//! {"metadata": {"gap_seconds": G, "start_time": "2025-10-04T00:10:00+00:00", "zone": "…", …},
//!  "data": [v0, v1, …]}
//! ```
//!
//! Tick `i` covers `[origin + i·G, origin + (i+1)·G)`. `origin` is `metadata.start_time` (RFC 3339
//! string or epoch seconds) when present, and then times are UTC epoch seconds
//! ([`TimeBase::Utc`]); otherwise times are seconds from the series start ([`TimeBase::Relative`],
//! origin 0). `--gap-seconds` overrides `metadata.gap_seconds` (SpotHedge's AWS3 header is wrong).
//! All files of one source must agree on the time base; they may have different gaps.
//!
//! Values:
//! * **Binary series** (every value 0 or 1): the meaning of `1` differs between sources, so
//!   `--polarity available|unavailable` is required unless the file says it itself
//!   (`metadata.polarity`, an extension no public file uses). Published Can't Be Late and
//!   SpotHedge files use `available`; raw probe logs and simulator exports (the SkyNomad
//!   converted archive) use `unavailable`. The threshold does not apply to binary series.
//! * **Count series** (some value above 1: instances alive of a 4/16-node group): up when
//!   `count >= k` with `k = --threshold` (default 1, with a note). Counts are never inverted.
//!
//! Up-sessions follow the tick rule of [`crate::sessionize`]. A `data` element that is not a
//! non-negative integer is rejected (record number = element index + 1) and that tick counts as
//! not observed: a run reaching it is censored (`observation-gap`) and a run right after it is
//! left-truncated. A file that is not a usable series (not valid JSON or UTF-8, truncated, no
//! `data` array, no usable gap or start time) is rejected as a whole with the line of the
//! problem (0 when it is about the whole file) and the other files go on; under `--strict`, or
//! when no file is usable, it is the error.
//!
//! Kind (a path heuristic, documented because it is one): a file whose path contains
//! `preemption` (Can't Be Late `preemption/…`: a kept-alive instance or group, including
//! thresholded 4-node counts) is [`Kind::SpotLifetime`] with end cause `preempted`; anything
//! else is a launch probe, [`Kind::SpotObtainability`] with end cause `unobtainable`. One source
//! must not mix the two (ingest `availability/` and `preemption/` separately).
//!
//! Node key: [`InputFile::stem_key`] (path below the ingested directory without extension), so
//! campaigns never collide. A file (or parent directory) named `<zone>_<accel>_<count>` gives the
//! `zone` and `instance_type = <accel>_<count>` attributes (`metadata.zone` wins for the zone);
//! the parent directory is the `group`.

use std::path::Component;

use chrono::DateTime;
use serde_json::{Map, Value};

use super::format::{Adapter, Format};
use crate::model::{Kind, NodeInfo, Observation, Polarity, Rejects, Session, TimeBase};
use crate::sessionize::{samples_to_sessions, Sample, SeriesLabels};
use crate::{IngestError, InputFile, Options, Result, Trace};

/// The `tick-json` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "tick-json",
    about:
        "`{\"metadata\":{\"gap_seconds\":G},\"data\":[...]}` tick series (binary or k-of-N counts)",
    parse,
    sniff,
    keys_from_file_names: true,
};

/// Whether `file` looks like a tick-json series: a JSON object with `data` and `metadata` keys
/// (and not a SkyNomad probe round).
pub fn sniff(file: &InputFile) -> bool {
    file.sniff_head().trim_start().starts_with('{')
        && file.contains("\"data\"")
        && file.contains("\"metadata\"")
        && !file.contains("\"zone_results\"")
}

/// Parses the tick-json files of one source into sessions (see the module docs for the rules).
pub fn parse(files: &[InputFile], options: &Options) -> Result<Trace> {
    check_options(options)?;
    let mut rejects = Rejects::new(options.strict);
    let mut nodes = Vec::new();
    let mut sessions = Vec::new();
    let mut observations = Vec::new();
    let mut notes = Vec::new();
    let mut time_base: Option<(TimeBase, String)> = None;
    let mut kind: Option<(Kind, String)> = None;
    let mut defaulted_k = 0usize;

    let mut kept = 0u64;
    for file in files {
        // A file that is not a usable series (not JSON, truncated, no gap …) is rejected as a
        // whole; the other files go on.
        let read = read_series(file, options, &mut rejects);
        let Some(series) = rejects.absorb(read)? else {
            continue;
        };
        kept += series.values.iter().flatten().count() as u64;
        let tb = if series.origin.is_some() {
            TimeBase::Utc
        } else {
            TimeBase::Relative
        };
        agree(
            &mut time_base,
            tb,
            file,
            "absolute (metadata.start_time) and relative times",
        )?;
        let k = kind_of(file);
        agree(
            &mut kind,
            k,
            file,
            "`preemption` (lifetime) and probe (obtainability) traces",
        )?;

        let binary = series.values.iter().flatten().all(|&v| v <= 1);
        let up: Box<dyn Fn(u64) -> bool> = if binary {
            let polarity = options.polarity.or(series.polarity).ok_or_else(|| {
                IngestError::Option(format!(
                    "{}: binary 0/1 tick series: what `1` means differs between sources; pass \
                     --polarity available|unavailable (published Can't Be Late and SpotHedge \
                     files use `available`; raw probe logs and simulator exports such as the \
                     SkyNomad converted traces use `unavailable`)",
                    file.display()
                ))
            })?;
            match polarity {
                Polarity::Available => Box::new(|v| v == 1),
                Polarity::Unavailable => Box::new(|v| v == 0),
            }
        } else {
            let k = match options.threshold {
                Some(k) => k,
                None => {
                    defaulted_k += 1;
                    1
                }
            };
            Box::new(move |v| v >= u64::from(k))
        };

        let node_id = file.stem_key();
        let origin = series.origin.unwrap_or(0.0);
        let gap = series.gap;
        if !binary {
            observations.extend(series.values.iter().enumerate().filter_map(|(i, v)| {
                v.map(|count| Observation {
                    node_id: node_id.clone(),
                    t: origin + i as f64 * gap,
                    count,
                    of: None,
                    dt: gap,
                })
            }));
        }
        let segments = observed_segments(series.values.iter().enumerate().map(|(i, v)| {
            v.map(|v| Sample {
                t: origin + i as f64 * gap,
                up: up(v),
            })
        }));
        let labels = SeriesLabels {
            node_id: &node_id,
            gap,
            event_cause: event_cause(k),
        };
        sessions.extend(segmented_sessions(&segments, &labels));
        let (name_zone, instance_type) = name_attributes(file);
        nodes.push(NodeInfo {
            node_id: node_id.clone(),
            zone: series.zone.or(name_zone),
            instance_type,
            group: group_of(file),
            observed_from: origin,
            observed_to: origin + series.values.len() as f64 * gap,
        });
    }

    if nodes.is_empty() {
        return Err(rejects.nothing_usable(IngestError::Empty(
            files.first().map(|f| f.display()).unwrap_or_default(),
        )));
    }
    if defaulted_k > 0 {
        notes.push(format!(
            "{defaulted_k} count series (k-of-N instances) read with the default threshold k=1 \
             (up when count >= 1); pass --threshold K for k-of-N sessions"
        ));
    }
    let kind = kind.map_or(Kind::SpotObtainability, |(k, _)| k);
    notes.push(format!(
        "kind {} chosen from the paths (files under `preemption` are kept-alive instances, \
         anything else launch probes)",
        kind.as_str()
    ));
    Ok(Trace {
        kind,
        time_base: time_base.map_or(TimeBase::Relative, |(t, _)| t),
        nodes,
        sessions,
        observations,
        rejects: rejects.into_vec(),
        notes,
        kept_records: kept,
    })
}

/// The contents of one tick-json file.
struct Series {
    gap: f64,
    origin: Option<f64>,
    polarity: Option<Polarity>,
    zone: Option<String>,
    /// `None` = a rejected element (tick not observed).
    values: Vec<Option<u64>>,
}

fn read_series(file: &InputFile, options: &Options, rejects: &mut Rejects) -> Result<Series> {
    let bad = |line: u64, reason: String| IngestError::Bad {
        file: file.display(),
        line,
        reason,
    };
    let text = file.text()?;
    let root: Value = serde_json::from_str(text)
        .map_err(|e| bad(e.line() as u64, format!("not valid JSON: {e}")))?;
    let root = root
        .as_object()
        .ok_or_else(|| bad(0, "top level is not a JSON object".into()))?;
    let empty = Map::new();
    let meta = match root.get("metadata") {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(bad(0, "`metadata` is not a JSON object".into())),
        None => &empty,
    };
    let gap = match options.gap_seconds {
        Some(g) => g,
        None => meta
            .get("gap_seconds")
            .and_then(Value::as_f64)
            .filter(|g| g.is_finite() && *g > 0.0)
            .ok_or_else(|| {
                bad(
                    0,
                    "no usable metadata.gap_seconds (seconds per tick); pass --gap-seconds G"
                        .into(),
                )
            })?,
    };
    let origin = match meta.get("start_time") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(
            DateTime::parse_from_rfc3339(s.trim())
                .map(|d| d.timestamp_micros() as f64 / 1e6)
                .map_err(|e| bad(0, format!("metadata.start_time {s:?} is not RFC 3339: {e}")))?,
        ),
        Some(v) => Some(v.as_f64().filter(|t| t.is_finite()).ok_or_else(|| {
            bad(
                0,
                format!("metadata.start_time {v} is neither RFC 3339 text nor epoch seconds"),
            )
        })?),
    };
    let polarity = match meta.get("polarity").and_then(Value::as_str) {
        Some("available") => Some(Polarity::Available),
        Some("unavailable") => Some(Polarity::Unavailable),
        _ => None,
    };
    let zone = meta
        .get("zone")
        .and_then(Value::as_str)
        .filter(|z| !z.is_empty())
        .map(str::to_string);
    let data = root
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| bad(0, "no `data` array".into()))?;
    let mut values = Vec::with_capacity(data.len());
    for (i, el) in data.iter().enumerate() {
        let v = el
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x <= u32::MAX as f64);
        match v {
            Some(x) => values.push(Some(x as u64)),
            None => {
                rejects.reject(
                    &file.display(),
                    i as u64 + 1,
                    &el.to_string(),
                    format!(
                        "data[{i}] is not a non-negative integer; tick treated as not observed"
                    ),
                )?;
                values.push(None);
            }
        }
    }
    Ok(Series {
        gap,
        origin,
        polarity,
        zone,
        values,
    })
}

/// Validates the options shared by the tick adapters (`--gap-seconds`, `--threshold`).
pub(crate) fn check_options(options: &Options) -> Result<()> {
    if let Some(g) = options.gap_seconds {
        if !(g.is_finite() && g > 0.0) {
            return Err(IngestError::Option(format!(
                "--gap-seconds {g}: must be a positive number of seconds"
            )));
        }
    }
    if options.threshold == Some(0) {
        return Err(IngestError::Option(
            "--threshold 0: k must be at least 1 (up when count >= k)".into(),
        ));
    }
    Ok(())
}

/// Records the first value seen and fails when a later file disagrees with it.
pub(crate) fn agree<T: Copy + PartialEq>(
    seen: &mut Option<(T, String)>,
    value: T,
    file: &InputFile,
    what: &str,
) -> Result<()> {
    match seen {
        None => {
            *seen = Some((value, file.display()));
            Ok(())
        }
        Some((v, _)) if *v == value => Ok(()),
        Some((_, first)) => Err(IngestError::Option(format!(
            "{} and {first}: one source cannot mix {what}; ingest them as separate sources",
            file.display()
        ))),
    }
}

fn kind_of(file: &InputFile) -> Kind {
    let on_disk = file
        .path
        .components()
        .any(|c| matches!(c, Component::Normal(s) if s == "preemption"));
    if on_disk || file.rel.contains("preemption") {
        Kind::SpotLifetime
    } else {
        Kind::SpotObtainability
    }
}

fn event_cause(kind: Kind) -> &'static str {
    match kind {
        Kind::SpotLifetime => "preempted",
        _ => "unobtainable",
    }
}

/// Splits a series with unobserved positions (`None`) into maximal runs of observed samples.
pub(crate) fn observed_segments(
    samples: impl IntoIterator<Item = Option<Sample>>,
) -> Vec<Vec<Sample>> {
    let mut out = Vec::new();
    let mut cur = Vec::new();
    for s in samples {
        match s {
            Some(s) => cur.push(s),
            None if !cur.is_empty() => out.push(std::mem::take(&mut cur)),
            None => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Sessions of a series observed in separate segments (each followed by a hole except the last):
/// the tick rule per segment; a run reaching the end of a non-final segment is censored with
/// cause `observation-gap`, and the first run of every segment is left-truncated when it is up
/// at the segment's first sample.
pub(crate) fn segmented_sessions(segments: &[Vec<Sample>], labels: &SeriesLabels) -> Vec<Session> {
    let mut out = Vec::new();
    for (j, seg) in segments.iter().enumerate() {
        let mut s = samples_to_sessions(seg, labels);
        if j + 1 < segments.len() {
            for x in s
                .iter_mut()
                .filter(|x| !x.event && x.end_cause == "observation-end")
            {
                x.end_cause = "observation-gap".into();
            }
        }
        out.extend(s);
    }
    out
}

/// `(zone, instance_type)` from a file (or its parent directory) named
/// `<zone>_<accel>_<count>`, e.g. `us-west-2a_k80_8` → (`us-west-2a`, `k80_8`).
pub(crate) fn name_attributes(file: &InputFile) -> (Option<String>, Option<String>) {
    let stem = file.stem_key();
    let mut names: Vec<String> = stem.rsplit('/').take(2).map(str::to_string).collect();
    if names.len() < 2 {
        if let Some(p) = file.path.parent().and_then(|p| p.file_name()) {
            names.push(p.to_string_lossy().into_owned());
        }
    }
    names
        .iter()
        .find_map(|n| split_zone_name(n))
        .map_or((None, None), |(z, t)| (Some(z), Some(t)))
}

fn split_zone_name(name: &str) -> Option<(String, String)> {
    let (zone, rest) = name.split_once('_')?;
    let (accel, count) = rest.rsplit_once('_')?;
    let zone_ok = zone.matches('-').count() >= 2
        && zone.starts_with(|c: char| c.is_ascii_lowercase())
        && zone.ends_with(|c: char| c.is_ascii_alphanumeric())
        && zone
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let count_ok = !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit());
    (zone_ok && count_ok && !accel.is_empty()).then(|| (zone.to_string(), rest.to_string()))
}

/// The group attribute: the directory part of `rel`, or the on-disk parent directory's name
/// when `rel` is a bare file name.
pub(crate) fn group_of(file: &InputFile) -> Option<String> {
    match file.rel.rsplit_once('/') {
        Some((dir, _)) if !dir.is_empty() => Some(dir.to_string()),
        _ => file
            .path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn file(rel: &str, text: &str) -> InputFile {
        InputFile::from_bytes(
            PathBuf::from("/data").join(rel),
            rel,
            text.as_bytes().to_vec(),
            String::new(),
        )
    }

    fn opts(polarity: Option<Polarity>) -> Options {
        Options {
            polarity,
            ..Options::default()
        }
    }

    fn spans(t: &Trace) -> Vec<(f64, f64, bool, bool)> {
        t.sessions
            .iter()
            .map(|s| (s.start, s.end, s.event, s.left_truncated))
            .collect()
    }

    #[test]
    fn binary_available_tick_rule_and_attributes() {
        let f = file(
            "aws-10-26-2022/us-west-2a_k80_8.json",
            r#"{"metadata": {"gap_seconds": 10}, "data": [1, 1, 0, 1, 1]}"#,
        );
        let t = parse(&[f], &opts(Some(Polarity::Available))).unwrap();
        assert_eq!(t.kind, Kind::SpotObtainability);
        assert_eq!(t.time_base, TimeBase::Relative);
        assert_eq!(
            spans(&t),
            vec![(0.0, 20.0, true, true), (30.0, 50.0, false, false)]
        );
        assert_eq!(t.sessions[0].end_cause, "unobtainable");
        assert_eq!(t.sessions[1].end_cause, "observation-end");
        assert_eq!(t.sessions[0].resolution_s, 10.0);
        let n = &t.nodes[0];
        assert_eq!(n.node_id, "aws-10-26-2022/us-west-2a_k80_8");
        assert_eq!(n.zone.as_deref(), Some("us-west-2a"));
        assert_eq!(n.instance_type.as_deref(), Some("k80_8"));
        assert_eq!(n.group.as_deref(), Some("aws-10-26-2022"));
        assert_eq!((n.observed_from, n.observed_to), (0.0, 50.0));
    }

    #[test]
    fn binary_unavailable_inverts() {
        let f = file(
            "x.json",
            r#"{"metadata": {"gap_seconds": 10}, "data": [1, 1, 0, 1, 0, 0]}"#,
        );
        let t = parse(&[f], &opts(Some(Polarity::Unavailable))).unwrap();
        assert_eq!(
            spans(&t),
            vec![(20.0, 30.0, true, false), (40.0, 60.0, false, false)]
        );
    }

    #[test]
    fn binary_without_polarity_is_an_option_error() {
        let f = file(
            "d/x.json",
            r#"{"metadata": {"gap_seconds": 10}, "data": [0, 1]}"#,
        );
        let e = parse(&[f], &opts(None)).unwrap_err().to_string();
        assert!(e.contains("/data/d/x.json"), "{e}");
        assert!(e.contains("--polarity available|unavailable"), "{e}");
        assert!(e.contains("Can't Be Late"), "{e}");
        // The file can say it itself.
        let f = file(
            "d/x.json",
            r#"{"metadata": {"gap_seconds": 10, "polarity": "unavailable"}, "data": [0, 1]}"#,
        );
        let t = parse(&[f], &opts(None)).unwrap();
        assert_eq!(spans(&t), vec![(0.0, 10.0, true, true)]);
    }

    #[test]
    fn counts_use_threshold_and_are_never_inverted() {
        let text = r#"{"metadata": {"gap_seconds": 10}, "data": [0, 3, 5, 2, 4]}"#;
        let o = Options {
            threshold: Some(3),
            polarity: Some(Polarity::Unavailable),
            ..Options::default()
        };
        let t = parse(&[file("c.json", text)], &o).unwrap();
        assert_eq!(
            spans(&t),
            vec![(10.0, 30.0, true, false), (40.0, 50.0, false, false)]
        );
        assert!(!t.notes.iter().any(|n| n.contains("k=1")));
        // No threshold: k = 1 with a note; no polarity needed.
        let t = parse(&[file("c.json", text)], &opts(None)).unwrap();
        assert_eq!(spans(&t), vec![(10.0, 50.0, false, false)]);
        assert!(t.notes.iter().any(|n| n.contains("k=1")), "{:?}", t.notes);
    }

    #[test]
    fn gap_override_and_absolute_start() {
        let f = file(
            "z/us-central1-a_h100_16/0.json",
            r#"{"metadata": {"gap_seconds": 600, "start_time": "2025-10-04T00:10:00+00:00",
                "zone": "us-central1-a"}, "data": [0, 1, 1]}"#,
        );
        let o = Options {
            gap_seconds: Some(30.0),
            polarity: Some(Polarity::Unavailable),
            ..Options::default()
        };
        let t = parse(&[f], &o).unwrap();
        assert_eq!(t.time_base, TimeBase::Utc);
        let t0 = 1_759_536_600.0;
        assert_eq!(spans(&t), vec![(t0, t0 + 30.0, true, true)]);
        assert_eq!(t.sessions[0].resolution_s, 30.0);
        assert_eq!(t.nodes[0].zone.as_deref(), Some("us-central1-a"));
        assert_eq!(t.nodes[0].instance_type.as_deref(), Some("h100_16"));
        assert_eq!(t.nodes[0].observed_to, t0 + 90.0);
    }

    #[test]
    fn preemption_paths_are_lifetimes_and_kinds_do_not_mix() {
        let p = file(
            "preemption/1-node/a/us-east-1b_intel_64.json",
            r#"{"metadata": {"gap_seconds": 34}, "data": [0, 1, 1, 0]}"#,
        );
        let t = parse(std::slice::from_ref(&p), &opts(Some(Polarity::Available))).unwrap();
        assert_eq!(t.kind, Kind::SpotLifetime);
        assert_eq!(t.sessions[0].end_cause, "preempted");
        let a = file(
            "availability/x.json",
            r#"{"metadata": {"gap_seconds": 34}, "data": [1]}"#,
        );
        let e = parse(&[p, a], &opts(Some(Polarity::Available))).unwrap_err();
        assert!(e.to_string().contains("separate sources"), "{e}");
    }

    #[test]
    fn bad_elements_reject_and_censor() {
        let text = r#"{"metadata": {"gap_seconds": 10}, "data": [1, "x", 1, 0, null, 1]}"#;
        let t = parse(&[file("b.json", text)], &opts(Some(Polarity::Available))).unwrap();
        assert_eq!(t.rejects.len(), 2);
        assert_eq!((t.rejects[0].line, t.rejects[0].raw.as_str()), (2, "\"x\""));
        assert_eq!(t.rejects[0].file, "/data/b.json");
        assert_eq!(t.rejects[1].line, 5);
        assert_eq!(
            spans(&t),
            vec![
                (0.0, 10.0, false, true),
                (20.0, 30.0, true, true),
                (50.0, 60.0, false, true)
            ]
        );
        assert_eq!(t.sessions[0].end_cause, "observation-gap");
        assert_eq!(t.sessions[2].end_cause, "observation-end");
        let strict = Options {
            strict: true,
            ..opts(Some(Polarity::Available))
        };
        let e = parse(&[file("b.json", text)], &strict)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("/data/b.json:2: data[1] is not a non-negative integer"),
            "{e}"
        );
    }

    #[test]
    fn missing_gap_or_data_is_a_file_error() {
        let e = parse(
            &[file("g.json", r#"{"metadata": {}, "data": [1]}"#)],
            &opts(None),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("/data/g.json:0:") && e.contains("--gap-seconds"),
            "{e}"
        );
        let o = Options {
            gap_seconds: Some(5.0),
            ..opts(Some(Polarity::Available))
        };
        let t = parse(&[file("g.json", r#"{"data": [1, 0]}"#)], &o).unwrap();
        assert_eq!(spans(&t), vec![(0.0, 5.0, true, true)]);
        let e = parse(&[file("g.json", r#"{"metadata": {"gap_seconds": 1}}"#)], &o)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no `data` array"), "{e}");
        let e = parse(&[file("g.json", "{\"data\": [1,\n")], &o)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/data/g.json:2: not valid JSON"), "{e}");
    }

    #[test]
    fn mixed_time_bases_are_refused() {
        let a = file("a.json", r#"{"metadata": {"gap_seconds": 1}, "data": [1]}"#);
        let b = file(
            "b.json",
            r#"{"metadata": {"gap_seconds": 1, "start_time": 0}, "data": [1]}"#,
        );
        assert!(parse(&[a, b], &opts(Some(Polarity::Available))).is_err());
    }

    #[test]
    fn sniffs_tick_json_only() {
        assert!(sniff(&file(
            "a.json",
            r#" {"metadata": {"gap_seconds": 1}, "data": []}"#
        )));
        assert!(!sniff(&file("a.csv", "0,2022-10-26T22:05:04.000Z,0\n")));
        assert!(!sniff(&file(
            "r.json",
            r#"{"scheduled_at": "x", "zone_results": {}, "data": [], "metadata": {}}"#
        )));
    }

    #[test]
    fn zone_names() {
        assert_eq!(split_zone_name("spothedge_a100_40gb_8"), None, "not a zone");
        assert_eq!(
            split_zone_name("asia-northeast1-a_a100_40gb_8"),
            Some(("asia-northeast1-a".into(), "a100_40gb_8".into()))
        );
        assert_eq!(split_zone_name("us-east-1a_v100"), None);
    }
}
