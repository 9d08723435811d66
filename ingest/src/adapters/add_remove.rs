//! Per-node add/remove event logs (`--format add-remove`): one session per instance.
//!
//! # Inputs
//!
//! * **CSV** without header, CRLF or LF line endings: `t_ms,add|remove,node` (Bamboo
//!   `traces/{p3,g4dn}-trace.csv`, Parcae `liveput/traces/p3trace.csv`, SpotServe
//!   `trace_full/g4dn.csv`). `t_ms` is milliseconds since the trace start; `node` is a fresh
//!   label per acquired instance.
//! * **SpotServe JSON lines** (`trace_seg/*.txt`): `[t_ms, action, {"nodes": [...], …}]` with
//!   action `add`, `remove`, `other` or `DONE`. The node list of an `add`/`remove` is the set of
//!   nodes that join/leave at that instant (a delta, not the new membership). `other` (e.g. a
//!   `required_tpt` workload change) and `DONE` (end of the segment) change no session but do
//!   count as observed instants.
//!
//! # Semantics (traces MANIFEST §6, §7, §11)
//!
//! Events are taken in time order (a stable sort, so same-instant events keep file order).
//! Per node: `add` opens a session, the next `remove` closes it — an event with cause
//! `preempted`. A node never removed is right-censored at the file's last observed instant (the
//! last event time; for JSON lines that is the `DONE` line), cause `observation-end`. A node
//! may be added again after its removal (a new session). A `remove` of a node that is not up,
//! or an `add` of a node that is already up, is rejected (file, line, raw, reason) and parsing
//! goes on. Times must be finite and not negative (milliseconds since the trace start): a
//! negative `t_ms` is rejected with a reason naming the field and the value. The CSV is read with
//! the `csv` crate ([`crate::csv_input`]): quoted fields, CRLF and a byte-order mark are fine, and
//! a line that is not valid UTF-8 is rejected on its own.
//!
//! Node keys are `<file stem_key>/<node>`, so two files never collide (Bamboo's and Parcae's
//! copies of the same p3 log stay separate sources of nodes); `group` is the file's stem key.
//! Every node of a file is observed over the file's window (first to last event instant): an
//! instance label that has not been added yet is simply not in the pool. Times are seconds
//! from the file's start ([`TimeBase::Relative`]); sessions added at the first instant are not
//! flagged left-truncated (the logs start by acquiring instances). [`Kind::SpotLifetime`].

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::format::{Adapter, Format};
use crate::csv_input::{csv_rows, first_record};
use crate::model::{EndCause, NodeKey};
use crate::{
    IngestError, InputFile, Kind, NodeInfo, Options, Rejects, Result, Session, TimeBase, Trace,
};

/// The `add-remove` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "add-remove",
    about: "`t_ms,add|remove,node` event logs and SpotServe JSON-lines segments",
    parse,
    sniff,
    keys_from_file_names: true,
};

/// Parses the files of one source (each file is its own event log).
pub fn parse(files: &[InputFile], options: &Options) -> Result<Trace> {
    let mut rejects = Rejects::new(options.strict);
    let mut trace = Trace::empty(Kind::SpotLifetime, TimeBase::Relative);
    let mut any_record = false;
    for file in files {
        let display = file.display();
        let mut problems = Problems::default();
        let log = if is_json_lines(first_line(file)) {
            read_json_lines(file, &mut problems)
        } else {
            read_csv(file, &mut problems)
        };
        if log.observed.is_none() {
            problems.flush(&display, &mut rejects)?;
            trace.notes.push(format!("{}: no events", file.rel));
            continue;
        }
        any_record = true;
        trace.kept_records += sessionize(file, log, &mut trace, &mut problems);
        problems.flush(&display, &mut rejects)?;
    }
    if !any_record {
        return Err(rejects.nothing_usable(IngestError::Empty(
            files.first().map(|f| f.display()).unwrap_or_default(),
        )));
    }
    trace.rejects = rejects.into_vec();
    Ok(trace)
}

/// Whether `file` looks like this format: its first non-empty line is `number,add|remove,node`
/// or a JSON array `[number, "add"|"remove"|"other"|"DONE", {"nodes": …}]`.
pub fn sniff(file: &InputFile) -> bool {
    let line = first_line(file);
    if line.is_empty() {
        return false;
    }
    if line.starts_with('[') {
        return is_json_lines(line)
            && serde_json::from_str::<Value>(line).is_ok_and(|v| json_event(&v).is_ok());
    }
    match first_record(line) {
        Some(r) if r.len() == 3 => {
            r[0].parse::<f64>().is_ok() && matches!(&r[1], "add" | "remove") && !r[2].is_empty()
        }
        _ => false,
    }
}

/// The first non-empty line of the file's head, trimmed.
fn first_line(file: &InputFile) -> &str {
    file.sniff_head()
        .split('\n')
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// A JSON-lines record starts with `[` followed by a number.
fn is_json_lines(line: &str) -> bool {
    line.strip_prefix('[')
        .map(|r| {
            r.trim_start()
                .starts_with(|c: char| c.is_ascii_digit() || c == '-')
        })
        .unwrap_or(false)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Add,
    Remove,
}

/// The bad lines of one file, reported in line order once the file is done: the time sort and
/// the session pass find problems out of line order, and `--strict` must name the first one.
#[derive(Default)]
struct Problems(Vec<(u64, String, String)>);

impl Problems {
    fn reject(&mut self, line: u64, raw: &str, reason: impl Into<String>) {
        self.0.push((line, raw.to_string(), reason.into()));
    }

    fn flush(mut self, file: &str, rejects: &mut Rejects) -> Result<()> {
        self.0.sort_by_key(|p| p.0);
        for (line, raw, reason) in self.0 {
            rejects.reject(file, line, &raw, reason)?;
        }
        Ok(())
    }
}

/// One node event: time (ms), action, node label, 1-based line, where its line starts.
struct Event {
    t_ms: f64,
    line: u64,
    /// Byte offset of the event's line in the file (its raw text, for rejects, is read back
    /// from there: a log of millions of events keeps no per-line slices).
    at: u64,
    /// Index into [`Log::names`] (node labels are interned: a log of millions of events
    /// holds each label once).
    node: u32,
    action: Action,
}

/// The events of one file, its observed span (ms), the raw text of its event lines and how
/// many lines were read without a problem.
struct Log<'a> {
    events: Vec<Event>,
    observed: Option<(f64, f64)>,
    /// The file's bytes, where the raw text of an event's line is read back for rejects.
    bytes: &'a [u8],
    /// Node labels, by index.
    names: Vec<String>,
    index: HashMap<String, u32>,
    lines_ok: u64,
}

impl<'a> Log<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Log {
            events: Vec::new(),
            observed: None,
            bytes,
            names: Vec::new(),
            index: HashMap::new(),
            lines_ok: 0,
        }
    }

    /// The index of node label `n`, added when new.
    fn intern(&mut self, n: &str) -> u32 {
        if let Some(&i) = self.index.get(n) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(n.to_string());
        self.index.insert(n.to_string(), i);
        i
    }

    /// The raw text of an event's line (of its first line, for a CSV record with a quoted line
    /// break).
    fn raw(&self, ev: &Event) -> Cow<'_, str> {
        let rest = self.bytes.get(ev.at as usize..).unwrap_or_default();
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        String::from_utf8_lossy(line.strip_suffix(b"\r").unwrap_or(line))
    }

    /// The offset of `part` (a slice of the file) in the file.
    fn offset_of(&self, part: &[u8]) -> u64 {
        (part.as_ptr() as usize).saturating_sub(self.bytes.as_ptr() as usize) as u64
    }
}

fn widen(span: &mut Option<(f64, f64)>, t: f64) {
    *span = Some(match *span {
        Some((a, b)) => (a.min(t), b.max(t)),
        None => (t, t),
    });
}

/// A time in milliseconds from the trace start: finite and not negative.
fn check_time_ms(field: &str, t: Option<f64>, text: &str) -> std::result::Result<f64, String> {
    match t {
        Some(t) if t.is_finite() && t >= 0.0 => Ok(t),
        Some(t) if t < 0.0 => Err(format!(
            "{field} {text} is negative (milliseconds since the trace start expected)"
        )),
        _ => Err(format!("{field} {text:?} is not a time in milliseconds")),
    }
}

fn read_csv<'a>(file: &'a InputFile, problems: &mut Problems) -> Log<'a> {
    let mut log = Log::new(&file.bytes);
    let mut first_row = true;
    for row in csv_rows(&file.bytes) {
        let raw = row.raw_text();
        let first = std::mem::replace(&mut first_row, false);
        let rec = match row.fields {
            Ok(r) => r,
            Err(reason) => {
                problems.reject(row.line, &raw, reason);
                continue;
            }
        };
        if rec.len() != 3 {
            problems.reject(
                row.line,
                &raw,
                format!(
                    "expected 3 fields `t_ms,add|remove,node`, found {}",
                    rec.len()
                ),
            );
            continue;
        }
        let (t, a, n) = (&rec[0], &rec[1], &rec[2]);
        if first && t.parse::<f64>().is_err() && !matches!(a, "add" | "remove") {
            // A header line such as `time_ms,event,node_id`.
            continue;
        }
        let t_ms = match check_time_ms("t_ms", t.parse::<f64>().ok(), t) {
            Ok(t) => t,
            Err(reason) => {
                problems.reject(row.line, &raw, reason);
                continue;
            }
        };
        let action = match a {
            "add" => Action::Add,
            "remove" => Action::Remove,
            other => {
                problems.reject(
                    row.line,
                    &raw,
                    format!("unknown action {other:?} (add or remove expected)"),
                );
                continue;
            }
        };
        if n.is_empty() {
            problems.reject(row.line, &raw, "empty node label");
            continue;
        }
        widen(&mut log.observed, t_ms);
        log.lines_ok += 1;
        let node = log.intern(n);
        let at = log.offset_of(row.raw);
        log.events.push(Event {
            t_ms,
            action,
            node,
            line: row.line,
            at,
        });
    }
    log
}

/// The parts of a JSON-lines record: (time, action or None for `other`/`DONE`, node labels).
type JsonEvent<'v> = (f64, Option<Action>, Vec<&'v str>);

fn json_event(v: &Value) -> std::result::Result<JsonEvent<'_>, String> {
    let arr = v.as_array().ok_or("not a JSON array")?;
    let t = arr.first().ok_or("empty array: element 0 (t_ms) missing")?;
    let t = check_time_ms("element 0 (t_ms)", t.as_f64(), &t.to_string())?;
    let action = match arr.get(1).and_then(Value::as_str) {
        Some("add") => Some(Action::Add),
        Some("remove") => Some(Action::Remove),
        Some("other") | Some("DONE") => None,
        Some(other) => {
            return Err(format!(
                "unknown action {other:?} (add, remove, other or DONE expected)"
            ))
        }
        None => return Err("element 1 is not an action string".to_string()),
    };
    let nodes = match arr.get(2).and_then(|o| o.get("nodes")) {
        Some(Value::Array(list)) => list
            .iter()
            .map(|n| {
                n.as_str()
                    .filter(|s| !s.is_empty())
                    .ok_or("a node label is not a non-empty string")
            })
            .collect::<std::result::Result<Vec<_>, _>>()?,
        Some(_) => return Err("\"nodes\" is not a list".to_string()),
        None if action.is_none() => Vec::new(),
        None => return Err("add/remove without a \"nodes\" list".to_string()),
    };
    if action.is_none() && !nodes.is_empty() {
        return Err("nodes listed on an other/DONE record".to_string());
    }
    Ok((t, action, nodes))
}

fn read_json_lines<'a>(file: &'a InputFile, problems: &mut Problems) -> Log<'a> {
    let mut log = Log::new(&file.bytes);
    for line in file.lines() {
        let raw = match line.text() {
            Ok(raw) => raw,
            Err(reason) => {
                problems.reject(line.number, &line.lossy(), reason);
                continue;
            }
        };
        if raw.trim().is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                problems.reject(line.number, raw, format!("not JSON: {e}"));
                continue;
            }
        };
        let (t_ms, action, nodes) = match json_event(&value) {
            Ok(x) => x,
            Err(reason) => {
                problems.reject(line.number, raw, reason);
                continue;
            }
        };
        widen(&mut log.observed, t_ms);
        log.lines_ok += 1;
        if let Some(action) = action {
            let at = log.offset_of(line.bytes);
            for node in nodes {
                let node = log.intern(node);
                log.events.push(Event {
                    t_ms,
                    action,
                    node,
                    line: line.number,
                    at,
                });
            }
        }
    }
    log
}

/// Turns one file's events into sessions and nodes; returns how many of its lines were kept
/// (read without a problem and none of their events rejected here).
fn sessionize(file: &InputFile, mut log: Log, trace: &mut Trace, problems: &mut Problems) -> u64 {
    let stem = file.stem_key();
    let Some((from_ms, to_ms)) = log.observed else {
        return 0;
    };
    if log.events.windows(2).any(|w| w[1].t_ms < w[0].t_ms) {
        trace.notes.push(format!(
            "{}: events are not in time order; sorted by time",
            file.rel
        ));
        // By (time, line): a total order, so the unstable sort (no scratch copy of the events)
        // keeps same-time events in file order as a stable one would.
        log.events.sort_unstable_by(|a, b| {
            (a.t_ms.total_cmp(&b.t_ms))
                .then(a.line.cmp(&b.line))
                .then(a.node.cmp(&b.node))
        });
    }
    let n_names = log.names.len();
    let mut up: Vec<Option<f64>> = vec![None; n_names];
    let mut order: Vec<u32> = Vec::new();
    let mut seen: Vec<bool> = vec![false; n_names];
    let mut rejected_lines: HashSet<u64> = HashSet::new();
    let keys: Vec<NodeKey> = log
        .names
        .iter()
        .map(|n| NodeKey::from(format!("{stem}/{n}")))
        .collect();
    for ev in &log.events {
        let node = ev.node as usize;
        let name = &log.names[node];
        match ev.action {
            Action::Add => {
                if up[node].is_some() {
                    rejected_lines.insert(ev.line);
                    problems.reject(
                        ev.line,
                        &log.raw(ev),
                        format!("add of node {name:?} that is already up"),
                    );
                    continue;
                }
                up[node] = Some(ev.t_ms);
            }
            Action::Remove => {
                let Some(start) = up[node].take() else {
                    rejected_lines.insert(ev.line);
                    problems.reject(
                        ev.line,
                        &log.raw(ev),
                        format!("remove of node {name:?} that is not up (no add before it)"),
                    );
                    continue;
                };
                trace.sessions.push(Session {
                    node_id: keys[node].clone(),
                    start: start / 1000.0,
                    end: ev.t_ms / 1000.0,
                    event: true,
                    end_cause: EndCause::Borrowed("preempted"),
                    left_truncated: false,
                    entry_s: 0.0,
                    resolution_s: 0.0,
                });
            }
        }
        if !seen[node] {
            seen[node] = true;
            order.push(ev.node);
        }
    }
    for &node in &order {
        let node = node as usize;
        if let Some(start) = up[node] {
            trace.sessions.push(Session {
                node_id: keys[node].clone(),
                start: start / 1000.0,
                end: to_ms / 1000.0,
                event: false,
                end_cause: EndCause::Borrowed("observation-end"),
                left_truncated: false,
                entry_s: 0.0,
                resolution_s: 0.0,
            });
        }
        trace.nodes.push(NodeInfo {
            node_id: keys[node].to_string(),
            zone: None,
            instance_type: None,
            group: Some(stem.clone()),
            observed_from: from_ms / 1000.0,
            observed_to: to_ms / 1000.0,
        });
    }
    log.lines_ok - rejected_lines.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(rel: &str, text: &str) -> InputFile {
        InputFile::from_text(rel, text)
    }

    fn run(files: &[InputFile]) -> Trace {
        let mut t = parse(files, &Options::default()).unwrap();
        t.canonicalize();
        t
    }

    const CSV: &str = "0,add,node1\n0,add,node2\n60000,remove,node1\n120000,add,node3\n180000,remove,node3\n240000,remove,node2\n300000,add,node4\n360000,add,node5\n";

    #[test]
    fn csv_sessions_and_censoring() {
        let t = run(&[file("p3-trace.csv", CSV)]);
        assert_eq!(t.kind, Kind::SpotLifetime);
        assert_eq!(t.time_base, TimeBase::Relative);
        assert_eq!(t.nodes.len(), 5);
        assert_eq!(t.sessions.len(), 5);
        let s: Vec<_> = t
            .sessions
            .iter()
            .map(|s| (&*s.node_id, s.start, s.end, s.event, &*s.end_cause))
            .collect();
        assert_eq!(
            s,
            vec![
                ("p3-trace/node1", 0.0, 60.0, true, "preempted"),
                ("p3-trace/node2", 0.0, 240.0, true, "preempted"),
                ("p3-trace/node3", 120.0, 180.0, true, "preempted"),
                ("p3-trace/node4", 300.0, 360.0, false, "observation-end"),
                ("p3-trace/node5", 360.0, 360.0, false, "observation-end"),
            ]
        );
        assert!(t
            .nodes
            .iter()
            .all(|n| n.observed_from == 0.0 && n.observed_to == 360.0));
        assert_eq!(t.nodes[0].group.as_deref(), Some("p3-trace"));
    }

    #[test]
    fn crlf_and_lf_give_the_same_sessions() {
        let lf = run(&[file("a.csv", CSV)]);
        let crlf = run(&[file("a.csv", &CSV.replace('\n', "\r\n"))]);
        assert_eq!(lf.sessions, crlf.sessions);
        assert_eq!(lf.nodes, crlf.nodes);
        assert!(crlf.rejects.is_empty());
    }

    #[test]
    fn two_files_do_not_collide() {
        let t = run(&[
            file("bamboo/p3-trace.csv", CSV),
            file("parcae/p3trace.csv", CSV),
        ]);
        assert_eq!(t.nodes.len(), 10);
        assert_eq!(t.sessions.len(), 10);
        assert!(t.nodes.iter().any(|n| n.node_id == "parcae/p3trace/node1"));
    }

    #[test]
    fn json_lines_segments() {
        let seg = "[0, \"add\", {\"nodes\": [\"node-0\", \"node-1\", \"node-2\"]}]\n\
                   [60000, \"remove\", {\"nodes\": [\"node-1\"]}]\n\
                   [90000, \"other\", {\"nodes\": [], \"required_tpt\": 0.8}]\n\
                   [120000, \"add\", {\"nodes\": [\"node-3\"]}]\n\
                   [150000, \"remove\", {\"nodes\": [\"node-0\", \"node-3\"], \"required_tpt\": 0.6}]\n\
                   [540000, \"DONE\", {\"nodes\": []}]\n";
        let f = file("trace_0203.txt", seg);
        assert!(sniff(&f));
        let t = run(&[f]);
        assert!(t.rejects.is_empty());
        let s: Vec<_> = t
            .sessions
            .iter()
            .map(|s| (&*s.node_id, s.start, s.end, s.event))
            .collect();
        assert_eq!(
            s,
            vec![
                ("trace_0203/node-0", 0.0, 150.0, true),
                ("trace_0203/node-1", 0.0, 60.0, true),
                ("trace_0203/node-2", 0.0, 540.0, false),
                ("trace_0203/node-3", 120.0, 150.0, true),
            ]
        );
        assert!(t.nodes.iter().all(|n| n.observed_to == 540.0));
    }

    #[test]
    fn bad_lines_strict_and_lenient() {
        let text = "0,add,node1\n10,remove,node9\n20,add,node1\nabc,add,node2\n30,start,node3\n40,remove,node1\n50,add,node4\n";
        let f = file("bad.csv", text);
        let strict = Options {
            strict: true,
            ..Options::default()
        };
        let err = parse(std::slice::from_ref(&f), &strict)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("bad.csv:2:"), "{err}");
        assert!(err.contains("not up"), "{err}");
        let t = run(&[f]);
        let lines: Vec<u64> = {
            let mut v: Vec<u64> = t.rejects.iter().map(|r| r.line).collect();
            v.sort();
            v
        };
        assert_eq!(lines, vec![2, 3, 4, 5]);
        assert!(t
            .rejects
            .iter()
            .any(|r| r.line == 3 && r.reason.contains("already up")));
        assert!(t.rejects.iter().any(|r| r.raw == "abc,add,node2"));
        // the good rows: node1 [0, 40] preempted, node4 censored at 50 ms
        assert_eq!(t.sessions.len(), 2);
        assert_eq!(
            (t.sessions[0].start, t.sessions[0].end, t.sessions[0].event),
            (0.0, 0.04, true)
        );
        assert_eq!(
            (
                &*t.sessions[1].node_id,
                t.sessions[1].end,
                t.sessions[1].event
            ),
            ("bad/node4", 0.05, false)
        );
    }

    #[test]
    fn bad_json_line_is_rejected() {
        let seg = "[0, \"add\", {\"nodes\": [\"a\"]}]\n[10, \"jump\", {\"nodes\": []}]\n[20, \"add\", {}]\n{oops\n[30, \"DONE\", {\"nodes\": []}]\n";
        let t = run(&[file("s.txt", seg)]);
        assert_eq!(
            t.rejects.iter().map(|r| r.line).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
        assert_eq!(t.sessions.len(), 1);
        assert_eq!(t.sessions[0].end, 0.03);
    }

    #[test]
    fn header_line_is_skipped() {
        let t = run(&[file(
            "h.csv",
            "time_ms,event,node_id\r\n0,add,n1\r\n5000,remove,n1\r\n",
        )]);
        assert!(t.rejects.is_empty());
        assert_eq!((t.sessions[0].start, t.sessions[0].end), (0.0, 5.0));
        // not a header once data has started
        let t = run(&[file("h.csv", "0,add,n1\ntime_ms,event,node_id\n")]);
        assert_eq!(t.rejects.len(), 1);
    }

    #[test]
    fn sniff_is_specific() {
        assert!(sniff(&file("a.csv", "0,add,node1\r\n")));
        assert!(!sniff(&file(
            "a.csv",
            "date,availability\n2023-02-15 22:08:16,1\n"
        )));
        assert!(!sniff(&file("a.csv", "0,8\n")));
        assert!(!sniff(&file("a.json", "[\n  {\n \"id\": \"1\"}]")));
        assert!(!sniff(&file("a.txt", "[1, 2, 3]\n")));
    }
}
