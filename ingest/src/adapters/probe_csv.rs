//! `probe-csv`: timestamped probe logs and instance-count series in CSV.
//!
//! The shape of a file is decided by its first non-empty line:
//!
//! * **Fail log** (Can't Be Late raw probes), no header: `clock,timestamp,fail`, e.g.
//!   `0,2022-10-26T22:05:04.000Z,0`. `fail = 1` means the probe did not get an instance, so
//!   up = `fail == 0` (`--polarity available` would read the column as availability instead).
//!   Nominal gap 600 s.
//! * **Availability log** (SkyNomad V100 CSVs): header `date,availability`, rows
//!   `YYYY-MM-DD HH:MM:SS,0|1` (no zone given: read as UTC), `1` = available. Nominal gap 195 s.
//! * **Relative count series**, `elapsed,instances` (Bamboo `doc/data`, seconds; the file whose
//!   name contains `p2-xlarge-2020-11-20-to-2020-11-23` is in hours) or `t_ms,count` (Parcae
//!   `p3.csv`, milliseconds: detected from a `t_ms` header, or when every time is a whole
//!   multiple of 1000 and the largest is at least 10^6). Times are seconds from the series start.
//! * **Dated count series** (Bamboo `traces/gcloud`): `YYYY-MM-DD, HH:MM:SS, count`, naive
//!   timestamps read as UTC.
//!
//! Probe logs (fail/availability) are sampled series: the rule of MANIFEST §2 via
//! [`samples_to_sessions`]: a session starts at the first up probe and ends at the first
//! following down probe (event, cause `unobtainable`); a run reaching the last probe is censored
//! at the last timestamp + gap; a spacing above twice the gap is an observation hole. The gap is
//! the nominal one unless `--gap-seconds` overrides it (a note is added when the file's median
//! spacing differs from it by more than 10 %). These are [`Kind::SpotObtainability`] windows.
//!
//! Count series are **step series**: each record is a change point, the value holds from its time
//! until the next record. Records are cleaned first: consecutive records (in file order) with the
//! same count are re-logs of one state and collapse into the first (Bamboo writes every change
//! twice, the gcloud logs write each state three times a minute apart, and a state's first line
//! can precede the previous state's re-logs); what is left is sorted by time and only the last
//! state per time is kept (Parcae logs several events at one instant). Up = `count >= k`
//! (`--threshold`, default 1 with a note); counts are never inverted. Because long spacings
//! between change points are normal, the hole rule must not fire: the sessionizer is run with a
//! gap no smaller than the longest spacing, then sessions still up at the end are censored at the
//! last record's time (the observation end; nothing is invented after it), zero-length censored
//! remnants are dropped and `resolution_s` is 0 (times are logged change instants). These groups
//! are kept-alive spot/preemptible instances, so count series are [`Kind::SpotLifetime`] with
//! cause `preempted`. One source cannot mix probe logs and count series, or absolute and
//! relative times.
//!
//! Lines are read as CSV records with the `csv` crate ([`crate::csv_input`]): quoted fields,
//! CRLF and a byte-order mark are fine, and a record that is not valid UTF-8 is rejected on its
//! own. A file whose first record has none of the shapes above is rejected as a whole (an error
//! under `--strict`, or when it is the only input).
//!
//! Node key: [`InputFile::stem_key`]; `<zone>_<accel>_<count>` file names give zone and instance
//! type; the parent directory is the group. Bad lines (wrong field count, unparsable time or
//! value) are rejected with file, 1-based line, raw text and reason; good lines are kept.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime};

use crate::csv_input::{csv_rows, first_record, CsvRow};

use super::format::{Adapter, Format};
use super::tick_json::{agree, check_options, group_of, name_attributes};
use crate::model::{Kind, NodeInfo, Observation, Polarity, Rejects, Session, TimeBase};
use crate::sessionize::{samples_to_sessions, series_node, Sample, SeriesLabels};
use crate::{IngestError, InputFile, Options, Result, Trace};

/// The `probe-csv` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "probe-csv",
    about: "Timestamped probe logs: `clock,timestamp,fail` or `date,availability`",
    parse,
    sniff,
    keys_from_file_names: true,
};

/// Marker in the name of the Bamboo figure-data file whose `elapsed` column is in hours.
const HOURS_FILE_MARKER: &str = "p2-xlarge-2020-11-20-to-2020-11-23";

/// Whether `file`'s first non-empty line has one of the shapes this adapter reads.
pub fn sniff(file: &InputFile) -> bool {
    first_record(file.sniff_head()).is_some_and(|r| detect(&r.iter().collect::<Vec<_>>()).is_some())
}

/// Parses the probe/count CSV files of one source into sessions (see the module docs).
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
    let mut naive = 0usize;
    let mut kept = 0u64;

    for file in files {
        let rows: Vec<_> = csv_rows(&file.bytes).collect();
        let Some(first) = rows.iter().position(|r| r.fields.is_ok()) else {
            if rows.is_empty() {
                notes.push(format!("{}: empty file, skipped", file.display()));
            }
            for r in &rows {
                reject_row(file, r, &mut rejects)?;
            }
            continue;
        };
        let first_fields: Vec<&str> = rows[first]
            .fields
            .as_ref()
            .map_or(Vec::new(), |r| r.iter().collect());
        let Some(head) = rejects.absorb(detect(&first_fields).ok_or_else(|| IngestError::Bad {
            file: file.display(),
            line: rows[first].line,
            reason: format!(
                "first line {:?} is not a probe-csv shape (clock,timestamp,fail / \
                 date,availability / elapsed,count / YYYY-MM-DD, HH:MM:SS, count)",
                rows[first].raw_text()
            ),
        }))?
        else {
            continue;
        };
        let records = read_records(file, &rows, first, head, &mut rejects)?;
        kept += records.len() as u64;
        if matches!(head.shape, Shape::Availability | Shape::CountDated) {
            naive += 1;
        }
        let node_id = file.stem_key();
        let (zone, instance_type) = name_attributes(file);
        let attrs = |mut n: NodeInfo| {
            n.zone = zone.clone();
            n.instance_type = instance_type.clone();
            n.group = group_of(file);
            n
        };
        if records.is_empty() {
            notes.push(format!("{}: no usable records", file.display()));
            continue;
        }
        match head.shape {
            Shape::FailLog | Shape::Availability => {
                agree(
                    &mut time_base,
                    TimeBase::Utc,
                    file,
                    "absolute and relative times",
                )?;
                agree(
                    &mut kind,
                    Kind::SpotObtainability,
                    file,
                    "probe logs and instance-count series",
                )?;
                let (natural, nominal) = match head.shape {
                    Shape::FailLog => (Polarity::Unavailable, 600.0),
                    _ => (Polarity::Available, 195.0),
                };
                let polarity = options.polarity.unwrap_or(natural);
                if polarity != natural {
                    notes.push(format!(
                        "{}: --polarity {} overrides the column's own meaning ({})",
                        file.display(),
                        polarity.as_str(),
                        natural.as_str()
                    ));
                }
                let mut samples: Vec<Sample> = records
                    .iter()
                    .map(|r| Sample {
                        t: r.t,
                        up: (r.value == 1) == (polarity == Polarity::Available),
                    })
                    .collect();
                if samples.windows(2).any(|w| w[1].t < w[0].t) {
                    samples.sort_by(|a, b| a.t.total_cmp(&b.t));
                    notes.push(format!(
                        "{}: records were not in time order; sorted",
                        file.display()
                    ));
                }
                let gap = options.gap_seconds.unwrap_or(nominal);
                if let Some(m) = median_spacing(samples.iter().map(|s| s.t)) {
                    if (m - gap).abs() > 0.1 * gap {
                        notes.push(format!(
                            "{}: median probe spacing {m} s differs from the gap {gap} s by more \
                             than 10 %; pass --gap-seconds if the probes were not {gap} s apart",
                            file.display()
                        ));
                    }
                }
                let labels = SeriesLabels {
                    node_id: &node_id,
                    gap,
                    event_cause: "unobtainable",
                };
                sessions.extend(samples_to_sessions(&samples, &labels));
                nodes.push(attrs(series_node(&samples, &node_id, gap)));
            }
            Shape::CountRelative | Shape::CountDated => {
                let tb = if head.shape == Shape::CountDated {
                    TimeBase::Utc
                } else {
                    TimeBase::Relative
                };
                agree(&mut time_base, tb, file, "absolute and relative times")?;
                agree(
                    &mut kind,
                    Kind::SpotLifetime,
                    file,
                    "probe logs and instance-count series",
                )?;
                let mut records = records;
                if head.shape == Shape::CountRelative {
                    let scale = time_scale(file, head, &records, &mut notes);
                    for r in &mut records {
                        r.t *= scale;
                    }
                }
                let k = options.threshold.unwrap_or_else(|| {
                    defaulted_k += 1;
                    1
                });
                let (samples, from, to) = step_samples(&records, k);
                sessions.extend(step_sessions(&samples, to, &node_id));
                observations.extend(step_observations(&records, &node_id));
                nodes.push(attrs(NodeInfo {
                    node_id: node_id.clone(),
                    observed_from: from,
                    observed_to: to,
                    ..NodeInfo::default()
                }));
            }
        }
    }
    if nodes.is_empty() {
        return Err(rejects.nothing_usable(IngestError::Empty(
            files
                .first()
                .map_or_else(|| "probe-csv".to_string(), InputFile::display),
        )));
    }
    if naive > 0 {
        notes.push(format!(
            "{naive} file(s) have timestamps without a zone; read as UTC"
        ));
    }
    if defaulted_k > 0 {
        notes.push(format!(
            "{defaulted_k} count series read with the default threshold k=1 (up when count >= 1); \
             pass --threshold K for k-of-N sessions"
        ));
    }
    Ok(Trace {
        observations,
        kind: kind.map_or(Kind::SpotObtainability, |(k, _)| k),
        time_base: time_base.map_or(TimeBase::Utc, |(t, _)| t),
        nodes,
        sessions,
        rejects: rejects.into_vec(),
        notes,
        kept_records: kept,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    FailLog,
    Availability,
    CountRelative,
    CountDated,
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Head {
    shape: Shape,
    /// The first non-empty line is a header (skipped).
    header: bool,
    /// Seconds per time unit, when a header names the unit.
    unit: Option<f64>,
}

/// One good record: time (seconds, or raw units for relative series before scaling), value.
#[derive(Debug, Clone, Copy)]
struct Record {
    t: f64,
    value: u64,
}

fn detect(f: &[&str]) -> Option<Head> {
    let lower: Vec<String> = f.iter().map(|s| s.to_ascii_lowercase()).collect();
    let names: Vec<&str> = lower.iter().map(String::as_str).collect();
    let header = |shape, unit| {
        Some(Head {
            shape,
            header: true,
            unit,
        })
    };
    match names.as_slice() {
        ["date", "availability"] => return header(Shape::Availability, None),
        ["clock", "timestamp", "fail"] => return header(Shape::FailLog, None),
        ["t_ms", "count" | "instances"] => return header(Shape::CountRelative, Some(0.001)),
        ["elapsed" | "t_s" | "seconds", "count" | "instances"] => {
            return header(Shape::CountRelative, Some(1.0))
        }
        _ => {}
    }
    let data = |shape| {
        Some(Head {
            shape,
            header: false,
            unit: None,
        })
    };
    match f {
        [c, ts, v] if c.parse::<u64>().is_ok() && parse_utc(ts).is_some() && count(v).is_some() => {
            data(Shape::FailLog)
        }
        [d, tm, v] if parse_dated(d, tm).is_some() && count(v).is_some() => data(Shape::CountDated),
        [d, v] if parse_naive(d).is_some() && count(v).is_some() => data(Shape::Availability),
        [t, v] if rel_time(t).is_some() && count(v).is_some() => data(Shape::CountRelative),
        _ => None,
    }
}

fn parse_utc(s: &str) -> Option<f64> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|d| d.timestamp_micros() as f64 / 1e6)
}

fn parse_naive(s: &str) -> Option<f64> {
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .map(|d| d.and_utc().timestamp_micros() as f64 / 1e6)
}

fn parse_dated(d: &str, tm: &str) -> Option<f64> {
    let date = NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()?;
    let time = NaiveTime::parse_from_str(tm, "%H:%M:%S%.f").ok()?;
    Some(date.and_time(time).and_utc().timestamp_micros() as f64 / 1e6)
}

fn rel_time(s: &str) -> Option<f64> {
    s.parse::<f64>().ok().filter(|t| t.is_finite() && *t >= 0.0)
}

/// A count: a non-negative integer of at most `u32::MAX` (as tick-json), written plainly or as
/// a whole float.
fn count(s: &str) -> Option<u64> {
    s.parse::<u64>()
        .ok()
        .filter(|c| *c <= u64::from(u32::MAX))
        .or_else(|| {
            s.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x <= u32::MAX as f64)
                .map(|x| x as u64)
        })
}

fn flag(s: &str) -> Option<u64> {
    count(s).filter(|v| *v <= 1)
}

/// Parses the fields of one data record of a file of shape `shape`; `Err` is the reject reason.
fn parse_line(shape: Shape, f: &[&str]) -> std::result::Result<Record, String> {
    let want = match shape {
        Shape::FailLog | Shape::CountDated => 3,
        Shape::Availability | Shape::CountRelative => 2,
    };
    if f.len() != want {
        return Err(format!(
            "expected {want} comma-separated fields, found {}",
            f.len()
        ));
    }
    let bad_time = |s: &str, what: &str| format!("unparsable time {s:?} (expected {what})");
    match shape {
        Shape::FailLog => {
            f[0].parse::<u64>()
                .map_err(|_| format!("clock {:?} is not a probe index", f[0]))?;
            let t = parse_utc(f[1]).ok_or_else(|| bad_time(f[1], "YYYY-MM-DDTHH:MM:SS.000Z"))?;
            let v = flag(f[2]).ok_or_else(|| format!("fail {:?} is not 0 or 1", f[2]))?;
            Ok(Record { t, value: v })
        }
        Shape::Availability => {
            let t = parse_naive(f[0]).ok_or_else(|| bad_time(f[0], "YYYY-MM-DD HH:MM:SS"))?;
            let v = flag(f[1]).ok_or_else(|| format!("availability {:?} is not 0 or 1", f[1]))?;
            Ok(Record { t, value: v })
        }
        Shape::CountRelative => {
            let t = rel_time(f[0])
                .ok_or_else(|| bad_time(f[0], "a non-negative number of time units"))?;
            let v = count(f[1])
                .ok_or_else(|| format!("count {:?} is not an integer in 0..=4294967295", f[1]))?;
            Ok(Record { t, value: v })
        }
        Shape::CountDated => {
            let t = parse_dated(f[0], f[1])
                .ok_or_else(|| bad_time(&format!("{}, {}", f[0], f[1]), "YYYY-MM-DD, HH:MM:SS"))?;
            let v = count(f[2])
                .ok_or_else(|| format!("count {:?} is not an integer in 0..=4294967295", f[2]))?;
            Ok(Record { t, value: v })
        }
    }
}

fn reject_row(file: &InputFile, row: &CsvRow, rejects: &mut Rejects) -> Result<()> {
    let reason = match &row.fields {
        Err(reason) => reason.clone(),
        Ok(_) => "unusable record".to_string(),
    };
    rejects.reject(&file.display(), row.line, &row.raw_text(), reason)
}

/// The good records of `rows` (`first` is the first valid record, a header when `head` says
/// so); the others are rejected.
fn read_records(
    file: &InputFile,
    rows: &[CsvRow],
    first: usize,
    head: Head,
    rejects: &mut Rejects,
) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        if i == first && head.header {
            continue;
        }
        let fields: Vec<&str> = match &row.fields {
            Ok(r) => r.iter().collect(),
            Err(_) => {
                reject_row(file, row, rejects)?;
                continue;
            }
        };
        match parse_line(head.shape, &fields) {
            Ok(r) => out.push(r),
            Err(reason) => rejects.reject(&file.display(), row.line, &row.raw_text(), reason)?,
        }
    }
    Ok(out)
}

/// Seconds per unit of a relative count series (see the module docs), with a note when the
/// unit is not plain seconds.
fn time_scale(file: &InputFile, head: Head, records: &[Record], notes: &mut Vec<String>) -> f64 {
    let (scale, why) = if let Some(u) = head.unit {
        (u, "named by the header")
    } else if file.rel.contains(HOURS_FILE_MARKER) {
        (3600.0, "this Bamboo figure file is known to be in hours")
    } else if records
        .iter()
        .all(|r| r.t.fract() == 0.0 && (r.t / 1000.0).fract() == 0.0)
        && records.iter().any(|r| r.t >= 1e6)
    {
        (
            0.001,
            "every time is a whole multiple of 1000 and the largest is >= 10^6",
        )
    } else {
        (1.0, "")
    };
    if scale != 1.0 {
        let unit = if scale == 3600.0 {
            "hours"
        } else {
            "milliseconds"
        };
        notes.push(format!(
            "{}: elapsed times read as {unit} ({why})",
            file.display()
        ));
    }
    scale
}

/// Cleans a step series (collapse re-logs, sort, last state per time) into up samples; also
/// returns the observation window (first and last record time over all records).
/// The raw counts of a step series: each value holds until the next record (the last record
/// ends the observation); of records at one instant the last counts.
fn step_observations(records: &[Record], node_id: &str) -> Vec<Observation> {
    let mut sorted: Vec<Record> = records.to_vec();
    sorted.sort_by(|a, b| a.t.total_cmp(&b.t));
    let mut steps: Vec<Record> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match steps.last_mut() {
            Some(last) if last.t == r.t => *last = r,
            _ => steps.push(r),
        }
    }
    steps
        .windows(2)
        .map(|w| Observation {
            node_id: node_id.to_string(),
            t: w[0].t,
            count: w[0].value,
            of: None,
            dt: w[1].t - w[0].t,
        })
        .collect()
}

fn step_samples(records: &[Record], k: u32) -> (Vec<Sample>, f64, f64) {
    let from = records.iter().map(|r| r.t).fold(f64::INFINITY, f64::min);
    let to = records
        .iter()
        .map(|r| r.t)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut changes: Vec<Record> = Vec::new();
    for r in records {
        if changes.last().is_none_or(|l| l.value != r.value) {
            changes.push(*r);
        }
    }
    changes.sort_by(|a, b| a.t.total_cmp(&b.t));
    let mut samples: Vec<Sample> = Vec::with_capacity(changes.len());
    for r in changes {
        let s = Sample {
            t: r.t,
            up: r.value >= u64::from(k),
        };
        match samples.last_mut() {
            Some(last) if last.t == s.t => *last = s,
            _ => samples.push(s),
        }
    }
    (samples, from, to)
}

/// Sessions of a cleaned step series observed until `end` (see the module docs).
fn step_sessions(samples: &[Sample], end: f64, node_id: &str) -> Vec<Session> {
    let longest = samples
        .windows(2)
        .map(|w| w[1].t - w[0].t)
        .fold(1.0, f64::max);
    let labels = SeriesLabels {
        node_id,
        gap: longest,
        event_cause: "preempted",
    };
    let mut out = samples_to_sessions(samples, &labels);
    for s in &mut out {
        s.resolution_s = 0.0;
        if !s.event {
            s.end = end;
        }
    }
    out.retain(|s| s.event || s.end > s.start);
    out
}

/// Median of the positive spacings of increasing times.
fn median_spacing(ts: impl Iterator<Item = f64>) -> Option<f64> {
    let ts: Vec<f64> = ts.collect();
    let mut d: Vec<f64> = ts
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_by(f64::total_cmp);
    Some(d[d.len() / 2])
}

#[cfg(test)]
#[path = "probe_csv_tests.rs"]
mod tests;
