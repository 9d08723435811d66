//! GCE operation logs of preemptible VMs (`--format gce-operations`): per-VM lifetimes.
//!
//! # Inputs
//!
//! * **Operation logs** — JSON arrays of Compute Engine operation resources as printed by
//!   `gcloud compute operations list --format=json` (SciSpot `data/runtime-data/*.json`). Fields
//!   used: `id`, `operationType`, `insertTime`, `endTime`, `status`, `targetId`, `targetLink`,
//!   `zone`, `error`. Times are RFC 3339 with their own UTC offset (`-08:00` and `-07:00` both
//!   occur: the offset is always parsed, never assumed).
//! * **Instance tables** (optional side tables) — fixed-width `gcloud compute instances list`
//!   output with header `NAME ZONE MACHINE_TYPE PREEMPTIBLE INTERNAL_IP EXTERNAL_IP STATUS`,
//!   parsed by the header's column offsets (blank cells do not shift columns). They give
//!   `MACHINE_TYPE` per VM name (joined on name and zone into [`NodeInfo::instance_type`]) and
//!   produce no sessions.
//! * **ECDF files** (the authors' pooled `All_data.txt`: two floats per line) are not traces:
//!   they are skipped with a note in [`Trace::notes`].
//!
//! # Semantics (traces MANIFEST §5)
//!
//! Snapshots overlap, so all operation records are unioned and de-duplicated by `id` (when two
//! copies differ, the one with `status == "DONE"` wins). Only operations whose `targetLink`
//! contains `/instances/` are used; they are grouped by `targetId` (the node key) and sorted by
//! `insertTime`. Each VM runs through a small state machine (unknown → up → down → up …):
//!
//! * `insert` / `start` open a session. Its start is the opening operation's `endTime` (the
//!   instant the VM was running; its `insertTime` when the operation is not `DONE`), clamped to
//!   the closing time.
//! * The first following closing operation ends it at that operation's `insertTime`:
//!   `compute.instances.preempted` → event, cause `preempted`, or `lifetime-cap` when the
//!   session lasted at least [`LIFETIME_CAP_S`] (GCP's 24-hour cap is logged as an ordinary
//!   preemption; it is a separate, deterministic cause); `stop` → censored, `stopped`;
//!   `delete` → censored, `deleted`; `compute.instances.guestTerminate` → censored,
//!   `guest-terminated`.
//! * A session with no closing operation is right-censored at the last snapshot time (the
//!   largest time of any operation in the inputs), cause `observation-end`.
//! * A closing operation for a VM never seen before (no earlier operation of that VM in the
//!   union — e.g. the VM was created inside the coverage hole between two snapshots) gives a
//!   **left-truncated** session starting at the earliest time the VM is seen (usually the
//!   closing operation itself, i.e. a zero-length session that only records the event and its
//!   cause; its true start is unknown).
//! * A closing operation for a VM that is already down (e.g. `delete` after a preemption, a
//!   second `stop`) ends nothing: it is counted in a note.
//! * **Failed operations** (an `error` member: quota exceeded, zone resources exhausted,
//!   "instance failed to start due to preemption", …) did not take effect and are ignored; a
//!   failed `insert` of a new VM means the VM never ran, so a closing operation that follows it
//!   (GCE logs a `preempted` seconds after some failed inserts) ends nothing either.
//! * A second opening operation while a session is up, and other operations
//!   (`setMetadata`, `migrateOnHostMaintenance`, …) do not change the state. A VM that is never
//!   seen up or closed yields no session; every VM id still appears in [`Trace::nodes`].
//!
//! A VM with several start/stop cycles gives several sessions. Node attributes: `zone` from the
//! `targetLink`; `group` = the VM name (SciSpot names are `<cluster><index>`, so the experiment
//! cluster is the name without its trailing digits); `instance_type` from the instance tables.
//! Each node's observation window runs from the first time the VM is seen to the last snapshot
//! time (any later operation on the VM would have been logged). Times are Unix seconds
//! ([`TimeBase::Utc`]); [`Kind::SpotLifetime`].

use std::collections::HashMap;

use chrono::DateTime;
use serde_json::Value;

use super::format::{Adapter, Format};
use crate::{
    IngestError, InputFile, Kind, NodeInfo, Options, Rejects, Result, Session, TimeBase, Trace,
};

/// The `gce-operations` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "gce-operations",
    about: "GCE operation logs of preemptible VMs (per-VM lifetimes)",
    parse,
    sniff,
    keys_from_file_names: false,
};

/// A preemption of a session at least this long (seconds) is the 24-hour lifetime cap
/// (cause `lifetime-cap`) rather than an ordinary preemption.
pub const LIFETIME_CAP_S: f64 = 23.9 * 3600.0;

/// Parses the files of one source (operation logs, optional instance tables and ECDF files).
pub fn parse(files: &[InputFile], options: &Options) -> Result<Trace> {
    let mut rejects = Rejects::new(options.strict);
    let mut notes = Vec::new();
    let mut records: Vec<OpRecord> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    let mut duplicates = 0usize;
    let mut conflicting = 0usize;
    let mut skipped_non_instance = 0usize;
    let mut machine_types: HashMap<(String, String), String> = HashMap::new();
    let mut last_time = f64::NEG_INFINITY;
    let mut op_files = 0usize;
    let mut kept = 0u64;

    for file in files {
        // A file that is not UTF-8 is unusable as a whole (JSON, or a table read by columns).
        let Some(text) = rejects.absorb(file.text())? else {
            continue;
        };
        match classify(text) {
            FileKind::Operations => {
                let values: Vec<Value> = match serde_json::from_str(text) {
                    Ok(v) => v,
                    Err(e) => {
                        rejects.defect(
                            &file.display(),
                            e.line() as u64,
                            "",
                            format!("not a JSON array of operations: {e}"),
                        )?;
                        continue;
                    }
                };
                op_files += 1;
                for (i, value) in values.iter().enumerate() {
                    let record_no = i as u64 + 1;
                    let rec = match OpRecord::from_value(value) {
                        Ok(r) => r,
                        Err(reason) => {
                            rejects.reject(
                                &file.display(),
                                record_no,
                                &value.to_string(),
                                format!("record {record_no}: {reason}"),
                            )?;
                            continue;
                        }
                    };
                    last_time = last_time.max(rec.max_time);
                    kept += 1;
                    if !rec.is_instance {
                        skipped_non_instance += 1;
                        continue;
                    }
                    match by_id.get(&rec.id) {
                        Some(&k) => {
                            duplicates += 1;
                            let old = &records[k];
                            if old.differs(&rec) {
                                conflicting += 1;
                                if rec.done && !old.done {
                                    records[k] = rec;
                                }
                            }
                        }
                        None => {
                            by_id.insert(rec.id.clone(), records.len());
                            records.push(rec);
                        }
                    }
                }
            }
            FileKind::EmptyArray => {
                op_files += 1;
                notes.push(format!("{}: an empty operation list", file.rel));
            }
            FileKind::InstanceTable => {
                let read = parse_instance_table(file, text, &mut machine_types, &mut rejects);
                kept += rejects.absorb(read)?.unwrap_or(0);
            }
            FileKind::Ecdf => notes.push(format!(
                "{}: an empirical CDF (lifetime, fraction), not an operation log: skipped",
                file.rel
            )),
            FileKind::Unknown => {
                rejects.absorb::<()>(Err(IngestError::Bad {
                    file: file.display(),
                    line: 1,
                    reason: "not a GCE operations JSON array, a `gcloud compute instances list` \
                             table or an ECDF file"
                        .to_string(),
                }))?;
            }
        }
    }
    if op_files == 0 {
        return Err(rejects.nothing_usable(IngestError::Empty(
            "gce-operations: no operation-log JSON among the inputs".to_string(),
        )));
    }
    if duplicates > 0 {
        notes.push(format!(
            "{duplicates} instance operations appear in more than one snapshot (de-duplicated by \
             id); {conflicting} of them differ between snapshots (kept the DONE copy)"
        ));
    }
    if skipped_non_instance > 0 {
        notes.push(format!(
            "{skipped_non_instance} operation records (copies in overlapping snapshots included) \
             target no VM instance (images, networks, project metadata …): ignored"
        ));
    }

    // Group by VM, in time order.
    let mut vm_index: HashMap<&str, usize> = HashMap::new();
    let mut vms: Vec<VmAcc> = Vec::new();
    let mut order: Vec<(usize, usize)> = Vec::with_capacity(records.len());
    for (k, rec) in records.iter().enumerate() {
        let v = *vm_index.entry(rec.target_id.as_str()).or_insert_with(|| {
            vms.push(VmAcc {
                id: rec.target_id.clone(),
                name: rec.name.clone(),
                zone: rec.zone.clone(),
                first_seen: f64::INFINITY,
            });
            vms.len() - 1
        });
        let vm = &mut vms[v];
        vm.first_seen = vm.first_seen.min(rec.insert);
        if vm.zone.is_none() {
            vm.zone = rec.zone.clone();
        }
        order.push((v, k));
    }
    order.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(records[a.1].insert.total_cmp(&records[b.1].insert))
            .then(records[a.1].id.cmp(&records[b.1].id))
    });

    let mut stats = Stats::default();
    let mut sessions = Vec::new();
    let mut i = 0;
    while i < order.len() {
        let v = order[i].0;
        let mut j = i;
        while j < order.len() && order[j].0 == v {
            j += 1;
        }
        let ops: Vec<&OpRecord> = order[i..j].iter().map(|&(_, k)| &records[k]).collect();
        vm_sessions(&vms[v], &ops, last_time, &mut stats, &mut sessions);
        i = j;
    }
    notes.extend(stats.notes());

    let mut joined = 0usize;
    let nodes: Vec<NodeInfo> = vms
        .into_iter()
        .map(|vm| {
            let instance_type = vm.name.as_ref().and_then(|name| {
                let zone = vm.zone.clone().unwrap_or_default();
                machine_types.get(&(name.clone(), zone)).cloned()
            });
            joined += usize::from(instance_type.is_some());
            NodeInfo {
                node_id: vm.id,
                zone: vm.zone,
                instance_type,
                group: vm.name,
                observed_from: vm.first_seen,
                observed_to: last_time.max(vm.first_seen),
            }
        })
        .collect();
    if !machine_types.is_empty() {
        notes.push(format!(
            "machine type joined from the instance tables for {joined} of {} VMs (by name and zone)",
            nodes.len()
        ));
    }

    Ok(Trace {
        observations: Vec::new(),
        kind: Kind::SpotLifetime,
        time_base: TimeBase::Utc,
        nodes,
        sessions,
        rejects: rejects.into_vec(),
        notes,
        kept_records: kept,
    })
}

/// Whether `file` looks like this format: a JSON array of operation resources, a
/// `gcloud compute instances list` table, or a two-column ECDF file of scientific-notation
/// floats (skipped by [`parse`]).
pub fn sniff(file: &InputFile) -> bool {
    let head = file.sniff_head();
    // An empty array could be anything: not claimed (but accepted by `parse`).
    !matches!(classify(head), FileKind::Unknown | FileKind::EmptyArray)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Operations,
    EmptyArray,
    InstanceTable,
    Ecdf,
    Unknown,
}

/// Decides what a file is from its first bytes.
fn classify(text: &str) -> FileKind {
    let trimmed = text.trim_start();
    if let Some(rest) = trimmed.strip_prefix('[') {
        if rest.trim_start().starts_with(']') {
            // `gcloud … --format=json` prints `[]` when there is nothing to list.
            return FileKind::EmptyArray;
        }
        let head = &trimmed[..floor_char_boundary(trimmed, 4096)];
        if head.contains("\"operationType\"") && head.contains("\"targetLink\"") {
            return FileKind::Operations;
        }
        return FileKind::Unknown;
    }
    let first = trimmed.lines().next().unwrap_or("");
    if first.starts_with("NAME") && first.contains("ZONE") && first.contains("MACHINE_TYPE") {
        return FileKind::InstanceTable;
    }
    let mut toks = first.split_whitespace();
    if let (Some(a), Some(b), None) = (toks.next(), toks.next(), toks.next()) {
        let sci = |s: &str| s.parse::<f64>().is_ok() && s.contains(['e', 'E']);
        if sci(a) && sci(b) {
            return FileKind::Ecdf;
        }
    }
    FileKind::Unknown
}

fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// What an operation does to its VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpKind {
    /// `insert`, `start`.
    Open,
    /// Ends a session: (end cause, counts as an event).
    Close(&'static str, bool),
    /// Anything else.
    Other,
}

fn op_kind(operation_type: &str) -> OpKind {
    match operation_type {
        "insert" | "start" => OpKind::Open,
        "compute.instances.preempted" => OpKind::Close("preempted", true),
        "stop" => OpKind::Close("stopped", false),
        "delete" => OpKind::Close("deleted", false),
        "compute.instances.guestTerminate" => OpKind::Close("guest-terminated", false),
        _ => OpKind::Other,
    }
}

/// The fields of one operation record that matter here.
#[derive(Debug, Clone)]
struct OpRecord {
    id: String,
    operation_type: String,
    kind: OpKind,
    /// `insertTime` (seconds).
    insert: f64,
    /// When the operation took effect: `endTime` if DONE, else `insertTime`.
    effective: f64,
    /// Largest of the record's times.
    max_time: f64,
    done: bool,
    failed: bool,
    is_instance: bool,
    target_id: String,
    name: Option<String>,
    zone: Option<String>,
}

impl OpRecord {
    fn from_value(v: &Value) -> std::result::Result<OpRecord, String> {
        let obj = v.as_object().ok_or("not a JSON object")?;
        let s = |key: &str| obj.get(key).and_then(Value::as_str);
        let id = match obj.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err("missing `id`".to_string()),
        };
        let operation_type = s("operationType")
            .ok_or("missing `operationType`")?
            .to_string();
        let insert = parse_time(s("insertTime").ok_or("missing `insertTime`")?)
            .map_err(|e| format!("bad `insertTime`: {e}"))?;
        let time_opt = |key: &str| -> std::result::Result<Option<f64>, String> {
            s(key)
                .map(parse_time)
                .transpose()
                .map_err(|e| format!("bad `{key}`: {e}"))
        };
        let start = time_opt("startTime")?;
        let end = time_opt("endTime")?;
        let done = s("status") == Some("DONE");
        let effective = match end {
            Some(e) if done => e,
            _ => insert,
        };
        let max_time = [Some(insert), start, end]
            .into_iter()
            .flatten()
            .fold(f64::NEG_INFINITY, f64::max);
        let link = s("targetLink").unwrap_or("");
        let is_instance = link.contains("/instances/");
        let target_id = match obj.get("targetId") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ if is_instance => return Err("instance operation without `targetId`".to_string()),
            _ => String::new(),
        };
        let name = link
            .split_once("/instances/")
            .map(|(_, n)| n.split('/').next().unwrap_or(n).to_string())
            .filter(|n| !n.is_empty());
        let zone = link
            .split_once("/zones/")
            .map(|(_, z)| z.split('/').next().unwrap_or(z).to_string())
            .or_else(|| {
                s("zone")
                    .and_then(|z| z.rsplit('/').next())
                    .map(str::to_string)
            })
            .filter(|z| !z.is_empty());
        Ok(OpRecord {
            kind: op_kind(&operation_type),
            id,
            operation_type,
            insert,
            effective,
            max_time,
            done,
            failed: obj.get("error").is_some_and(|e| !e.is_null()),
            is_instance,
            target_id,
            name,
            zone,
        })
    }

    /// Whether two copies of the same id differ in a field that matters.
    fn differs(&self, other: &OpRecord) -> bool {
        self.done != other.done
            || self.failed != other.failed
            || self.effective != other.effective
            || self.insert != other.insert
            || self.operation_type != other.operation_type
            || self.target_id != other.target_id
    }
}

/// RFC 3339 with any UTC offset → Unix seconds.
fn parse_time(s: &str) -> std::result::Result<f64, String> {
    let t = DateTime::parse_from_rfc3339(s).map_err(|e| format!("{s:?}: {e}"))?;
    Ok(t.timestamp() as f64 + f64::from(t.timestamp_subsec_nanos()) * 1e-9)
}

struct VmAcc {
    id: String,
    name: Option<String>,
    zone: Option<String>,
    first_seen: f64,
}

#[derive(Default)]
struct Stats {
    failed: HashMap<String, usize>,
    redundant_close: HashMap<String, usize>,
    close_after_failed_insert: usize,
    reopen: usize,
    left_truncated: usize,
    never_up: usize,
}

impl Stats {
    fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let list = |m: &HashMap<String, usize>| {
            let mut v: Vec<_> = m.iter().collect();
            v.sort();
            v.iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if !self.failed.is_empty() {
            out.push(format!(
                "ignored failed operations (with an `error`; they did not take effect): {}",
                list(&self.failed)
            ));
        }
        if self.close_after_failed_insert > 0 {
            out.push(format!(
                "{} closing operations follow a failed insert (the VM never ran): no session",
                self.close_after_failed_insert
            ));
        }
        if !self.redundant_close.is_empty() {
            out.push(format!(
                "closing operations on a VM that was already down (no session): {}",
                list(&self.redundant_close)
            ));
        }
        if self.reopen > 0 {
            out.push(format!(
                "{} insert/start operations on a VM already up: ignored",
                self.reopen
            ));
        }
        if self.left_truncated > 0 {
            out.push(format!(
                "{} sessions end with a closing operation on a VM whose start is not in the logs: \
                 left-truncated, starting when the VM is first seen",
                self.left_truncated
            ));
        }
        if self.never_up > 0 {
            out.push(format!(
                "{} VMs are never seen running (failed inserts only, or no opening/closing \
                 operation): listed as nodes without sessions",
                self.never_up
            ));
        }
        out
    }
}

#[derive(Debug, Clone, Copy)]
enum VmState {
    /// Nothing known yet.
    Unknown,
    /// Up since (start, left truncated).
    Up(f64, bool),
    /// Down (terminated, stopped, deleted, or never created).
    Down { after_failed_insert: bool },
}

/// Runs the per-VM state machine over its time-ordered operations.
fn vm_sessions(
    vm: &VmAcc,
    ops: &[&OpRecord],
    last_time: f64,
    stats: &mut Stats,
    out: &mut Vec<Session>,
) {
    let before = out.len();
    let mut state = VmState::Unknown;
    let node: crate::model::NodeKey = vm.id.as_str().into();
    let mut push = |start: f64, end: f64, event: bool, cause: &str, lt: bool| {
        out.push(Session {
            node_id: node.clone(),
            start,
            end,
            event,
            end_cause: crate::model::end_cause(cause),
            left_truncated: lt,
            entry_s: 0.0,
            resolution_s: 0.0,
        })
    };
    for op in ops {
        if op.failed {
            *stats.failed.entry(op.operation_type.clone()).or_default() += 1;
            if op.kind == OpKind::Open && matches!(state, VmState::Unknown) {
                state = VmState::Down {
                    after_failed_insert: true,
                };
            }
            continue;
        }
        match (op.kind, state) {
            (OpKind::Open, VmState::Up(..)) => stats.reopen += 1,
            (OpKind::Open, _) => state = VmState::Up(op.effective, false),
            (OpKind::Close(cause, event), VmState::Up(start, lt)) => {
                let end = op.insert;
                let start = start.min(end);
                let cause = if event && !lt && end - start >= LIFETIME_CAP_S {
                    "lifetime-cap"
                } else {
                    cause
                };
                push(start, end, event, cause, lt);
                state = VmState::Down {
                    after_failed_insert: false,
                };
            }
            (OpKind::Close(cause, event), VmState::Unknown) => {
                stats.left_truncated += 1;
                let start = vm.first_seen.min(op.insert);
                push(start, op.insert, event, cause, true);
                state = VmState::Down {
                    after_failed_insert: false,
                };
            }
            (
                OpKind::Close(..),
                VmState::Down {
                    after_failed_insert,
                },
            ) => {
                if after_failed_insert {
                    stats.close_after_failed_insert += 1;
                } else {
                    *stats
                        .redundant_close
                        .entry(op.operation_type.clone())
                        .or_default() += 1;
                }
                state = VmState::Down {
                    after_failed_insert: false,
                };
            }
            (OpKind::Other, _) => {}
        }
    }
    if let VmState::Up(start, lt) = state {
        push(start, last_time.max(start), false, "observation-end", lt);
    }
    if out.len() == before {
        stats.never_up += 1;
    }
}

/// Reads a fixed-width `gcloud compute instances list` table into (name, zone) → machine type;
/// returns how many rows were stored.
fn parse_instance_table(
    file: &InputFile,
    text: &str,
    out: &mut HashMap<(String, String), String>,
    rejects: &mut Rejects,
) -> Result<u64> {
    let mut lines = text.split('\n').enumerate();
    let Some((_, header)) = lines.next() else {
        return Ok(0);
    };
    let header = header.trim_end_matches('\r');
    let col = |name: &str| header.find(name);
    let (Some(c_name), Some(c_zone), Some(c_type)) =
        (col("NAME"), col("ZONE"), col("MACHINE_TYPE"))
    else {
        return Err(IngestError::Bad {
            file: file.display(),
            line: 1,
            reason: "instance table header lacks NAME, ZONE or MACHINE_TYPE".to_string(),
        });
    };
    // Each cell runs from its header offset to the next header's offset.
    let mut starts: Vec<usize> = header
        .char_indices()
        .filter(|&(i, c)| c != ' ' && (i == 0 || header.as_bytes()[i - 1] == b' '))
        .map(|(i, _)| i)
        .collect();
    starts.sort_unstable();
    let cell = |line: &str, from: usize| -> String {
        let to = starts
            .iter()
            .copied()
            .find(|&s| s > from)
            .unwrap_or(usize::MAX);
        let a = from.min(line.len());
        let b = to.min(line.len());
        line.get(a..b).unwrap_or("").trim().to_string()
    };
    let mut kept = 0;
    for (i, raw) in lines {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let (name, zone, mtype) = (cell(line, c_name), cell(line, c_zone), cell(line, c_type));
        if name.is_empty() || mtype.is_empty() || !line.is_ascii() {
            rejects.reject(
                &file.display(),
                i as u64 + 1,
                line,
                "instance table row without NAME or MACHINE_TYPE under the header columns",
            )?;
            continue;
        }
        out.insert((name, zone), mtype);
        kept += 1;
    }
    Ok(kept)
}

#[cfg(test)]
#[path = "gce_operations_tests.rs"]
mod tests;
