//! Failure Trace Archive tables (`--format fta`): `event_trace.tab` plus optional side tables.
//!
//! # Inputs
//!
//! * **`event_trace.tab`** — a header line of column names (optionally `#`-prefixed), then one
//!   row per availability interval, fields separated by any whitespace (tabs and space padding
//!   mix; split on any run of whitespace). Columns are found by name: `node_id`, `event_type`
//!   (`1` = up interval, `0` = down interval), `event_start_time`, `event_stop_time`, and the
//!   optional `event_end_reason` (numeric code or `NULL`), `platform_id`, `node_name`.
//! * **`node.tab`** (header starting `node_id platform_id node_name`) and **`platform.tab`**
//!   (header starting `platform_id platform_name`) — side tables giving node attributes; they
//!   produce no sessions. Their rows are tab separated (whitespace when the tab split does not
//!   match the header).
//!
//! Rejected rows (file, line, raw text, reason): too few fields, an `event_type` other than 0/1,
//! a time that is not a number, a **negative** start or stop time (the reason names the field and
//! the value), a stop before the start, and a line that is not valid UTF-8. A file whose header
//! is not an FTA table is rejected as a whole (an error under `--strict`, or when it is the only
//! input).
//!
//! # Semantics (traces MANIFEST §9, §10)
//!
//! Every `event_type == 1` row is one up-session `[start, stop)` ended by a failure: event,
//! cause `failure:<end reason>` (`failure` when the reason is `NULL` or missing). Rows are grouped
//! by `node_id` (the node key) and ordered by start. The FTA tables record failures, so by
//! default nothing is right-censored — except where the table itself shows the observation
//! boundary:
//!
//! * a node's **last** row that is an up interval ending exactly at the trace's last timestamp
//!   (the largest stop time of all rows) is right-censored, cause `observation-end`;
//! * a node's **first** row that is an up interval starting exactly at the trace's first
//!   timestamp is left-truncated (already up when observation began).
//!
//! (LANL05 has neither: every node starts and ends with a down row. The GridSim sample has
//! both on all three nodes.) With [`Options::fta_censored_tail`], each node whose last row is
//! a repair (down) interval ending before the trace's last timestamp gets one more,
//! right-censored session from that repair to the trace's last timestamp (an approximation:
//! decommission dates are not in the table; off by default).
//!
//! Nodes: every `node_id` of the event table, including nodes with down rows only (LANL05 has
//! 951); observed from their first start to their last stop. `group` = the platform name from
//! `platform.tab` (via `platform_id`), else, for LANL-style numeric names `<system>.<node>`,
//! `system-<system>`; `zone` = `node_location` and `instance_type` = `proc_model` from
//! `node.tab` when not `NULL`. When several event tables are given, node keys are prefixed with
//! the file's stem key.
//!
//! Time base: Unix epoch seconds ([`TimeBase::Utc`]) when the first timestamp is at least
//! 10⁸ (2001-09-09 … LANL starts in 1995 at 8·10⁸), else seconds from the trace's own origin
//! ([`TimeBase::Relative`], the sample's 0 … 2000 s). Kind: [`Kind::Volunteer`] when
//! `platform.tab` describes a desktop / volunteer / peer-to-peer platform, else [`Kind::Hpc`]
//! (LANL05 has no platform table and is an HPC cluster).

use std::collections::HashMap;

use super::format::{Adapter, Format};
use crate::{
    IngestError, InputFile, Kind, NodeInfo, Options, Rejects, Result, Session, TimeBase, Trace,
};

/// The `fta` adapter.
pub const FORMAT: Format = Format(&ADAPTER);

const ADAPTER: Adapter = Adapter {
    name: "fta",
    about: "Failure Trace Archive `event_trace.tab`",
    parse,
    sniff,
    keys_from_file_names: false,
};

/// Smallest first timestamp taken as Unix epoch seconds rather than relative seconds.
pub const EPOCH_THRESHOLD_S: f64 = 1e8;

/// Parses the files of one source: one or more event tables and optional side tables.
pub fn parse(files: &[InputFile], options: &Options) -> Result<Trace> {
    let mut rejects = Rejects::new(options.strict);
    let mut notes = Vec::new();
    let kinds: Vec<TableKind> = files
        .iter()
        .map(|f| table_kind(&header_tokens(f.sniff_head())))
        .collect();
    let event_tables = || {
        files
            .iter()
            .zip(&kinds)
            .filter(|(_, k)| **k == TableKind::Events)
            .map(|(f, _)| f)
    };
    let event_files = event_tables().count();
    let prefix = event_files > 1;
    if prefix {
        // Node keys are prefixed with the table's stem key: two tables with the same one would
        // merge their nodes.
        super::check_unique_keys(event_tables())?;
    }
    let mut kept = 0u64;
    let mut nodes: Vec<NodeAcc> = Vec::new();
    let mut node_index: HashMap<String, usize> = HashMap::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut side_nodes: HashMap<String, SideNode> = HashMap::new();
    let mut platforms: HashMap<String, Platform> = HashMap::new();

    for (file, kind) in files.iter().zip(kinds) {
        match kind {
            TableKind::Events => {
                let key_prefix = if prefix {
                    format!("{}/", file.stem_key())
                } else {
                    String::new()
                };
                let read = read_events(
                    file,
                    &key_prefix,
                    &mut nodes,
                    &mut node_index,
                    &mut rows,
                    &mut rejects,
                );
                rejects.absorb(read)?;
            }
            TableKind::Nodes => {
                kept += read_side(file, &mut rejects, |cols, fields| {
                    let get = |name: &str| {
                        cols.index(name)
                            .and_then(|c| cell(fields, c))
                            .map(str::to_string)
                    };
                    let id = get("node_id")?;
                    side_nodes.insert(
                        id,
                        SideNode {
                            platform_id: get("platform_id"),
                            location: get("node_location"),
                            proc_model: get("proc_model"),
                        },
                    );
                    Some(())
                })?
            }
            TableKind::Platforms => {
                kept += read_side(file, &mut rejects, |cols, fields| {
                    let get = |name: &str| {
                        cols.index(name)
                            .and_then(|c| cell(fields, c))
                            .map(str::to_string)
                    };
                    let id = get("platform_id")?;
                    platforms.insert(
                        id,
                        Platform {
                            name: get("platform_name"),
                            kind: get("platform_type"),
                        },
                    );
                    Some(())
                })?
            }
            TableKind::Unknown => {
                rejects.absorb::<()>(Err(IngestError::Bad {
                    file: file.display(),
                    line: 1,
                    reason: "not an FTA table: the header names neither event_trace columns \
                             (event_type, event_start_time …) nor node.tab / platform.tab columns"
                        .to_string(),
                }))?;
            }
        }
    }
    if event_files == 0 {
        return Err(rejects.nothing_usable(IngestError::Empty(
            "fta: no event_trace table among the inputs".to_string(),
        )));
    }
    if rows.is_empty() {
        return Err(rejects.nothing_usable(IngestError::Empty(
            files.first().map(|f| f.display()).unwrap_or_default(),
        )));
    }
    kept += rows.len() as u64;

    let trace_start = rows.iter().map(|r| r.start).fold(f64::INFINITY, f64::min);
    let trace_end = rows
        .iter()
        .map(|r| r.stop)
        .fold(f64::NEG_INFINITY, f64::max);
    let time_base = if trace_start >= EPOCH_THRESHOLD_S {
        TimeBase::Utc
    } else {
        notes.push(format!(
            "fta: timestamps start at {trace_start} (< {EPOCH_THRESHOLD_S}): taken as seconds \
             from the trace origin, not Unix time"
        ));
        TimeBase::Relative
    };

    // Group rows by node, each in start order (rows of a node are usually contiguous).
    let mut by_node: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    for (k, r) in rows.iter().enumerate() {
        by_node[r.node].push(k);
    }
    let mut sessions = Vec::new();
    let mut tails = 0usize;
    let (mut censored, mut truncated) = (0usize, 0usize);
    for (n, ks) in by_node.iter_mut().enumerate() {
        ks.sort_by(|&a, &b| rows[a].start.total_cmp(&rows[b].start).then(a.cmp(&b)));
        let node_id = crate::model::NodeKey::from(nodes[n].key.as_str());
        for (pos, &k) in ks.iter().enumerate() {
            let r = &rows[k];
            if !r.up {
                continue;
            }
            let last = pos + 1 == ks.len();
            let first = pos == 0;
            let is_censored = last && r.stop == trace_end;
            let left_truncated = first && r.start == trace_start;
            censored += usize::from(is_censored);
            truncated += usize::from(left_truncated);
            let end_cause = if is_censored {
                "observation-end".into()
            } else {
                match &r.reason {
                    Some(code) => format!("failure:{code}").into(),
                    None => "failure".into(),
                }
            };
            sessions.push(Session {
                node_id: node_id.clone(),
                start: r.start,
                end: r.stop,
                event: !is_censored,
                end_cause,
                left_truncated,
                entry_s: 0.0,
                resolution_s: 0.0,
            });
        }
        if options.fta_censored_tail {
            if let Some(&k) = ks.last() {
                let r = &rows[k];
                if !r.up && r.stop < trace_end {
                    tails += 1;
                    sessions.push(Session {
                        node_id: node_id.clone(),
                        start: r.stop,
                        end: trace_end,
                        event: false,
                        end_cause: "observation-end".into(),
                        left_truncated: false,
                        entry_s: 0.0,
                        resolution_s: 0.0,
                    });
                }
            }
        }
    }
    if censored + truncated > 0 {
        notes.push(format!(
            "fta: {censored} up intervals end at the trace's last timestamp (right-censored), \
             {truncated} start at its first timestamp (left-truncated)"
        ));
    }
    if options.fta_censored_tail {
        notes.push(format!(
            "fta: --fta-censored-tail added {tails} censored sessions from each node's last repair \
             to the trace's last timestamp {trace_end} (an approximation)"
        ));
    }
    let no_up = by_node
        .iter()
        .filter(|ks| ks.iter().all(|&k| !rows[k].up))
        .count();
    if no_up > 0 {
        notes.push(format!(
            "fta: {no_up} nodes have no up interval (down rows only): listed without sessions"
        ));
    }

    let volunteer = platforms.values().any(|p| {
        p.kind.as_deref().is_some_and(|k| {
            let k = k.to_ascii_lowercase();
            k.contains("desktop")
                || k.contains("volunteer")
                || k.contains("p2p")
                || k.contains("peer")
        })
    });
    let kind = if volunteer {
        Kind::Volunteer
    } else {
        Kind::Hpc
    };

    let infos = nodes
        .into_iter()
        .enumerate()
        .map(|(n, acc)| {
            let side = side_nodes.get(&acc.raw_id);
            let platform_id = acc
                .platform_id
                .clone()
                .or_else(|| side.and_then(|s| s.platform_id.clone()));
            let group = platform_id
                .as_ref()
                .and_then(|p| platforms.get(p))
                .and_then(|p| p.name.clone())
                .or_else(|| acc.name.as_deref().and_then(lanl_system));
            let (from, to) = by_node[n]
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &k| {
                    (a.min(rows[k].start), b.max(rows[k].stop))
                });
            NodeInfo {
                node_id: acc.key,
                zone: side.and_then(|s| s.location.clone()),
                instance_type: side.and_then(|s| s.proc_model.clone()),
                group,
                observed_from: from,
                observed_to: to,
            }
        })
        .collect();

    Ok(Trace {
        observations: Vec::new(),
        kind,
        time_base,
        nodes: infos,
        sessions,
        rejects: rejects.into_vec(),
        notes,
        kept_records: kept,
    })
}

/// Whether `file` looks like an FTA table: its first non-empty line is a header (optionally
/// `#`-prefixed) of event_trace, node.tab or platform.tab columns.
pub fn sniff(file: &InputFile) -> bool {
    table_kind(&header_tokens(file.sniff_head())) != TableKind::Unknown
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TableKind {
    Events,
    Nodes,
    Platforms,
    Unknown,
}

/// The column names of the first non-empty line (a leading `#` removed).
fn header_tokens(text: &str) -> Columns {
    let line = text
        .split('\n')
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    Columns(
        line.trim_start_matches('#')
            .split_whitespace()
            .map(str::to_string)
            .collect(),
    )
}

fn table_kind(cols: &Columns) -> TableKind {
    let c = &cols.0;
    if cols.index("event_type").is_some()
        && cols.index("event_start_time").is_some()
        && cols.index("node_id").is_some()
    {
        TableKind::Events
    } else if c.len() >= 3 && c[0] == "node_id" && c[1] == "platform_id" && c[2] == "node_name" {
        TableKind::Nodes
    } else if c.len() >= 2 && c[0] == "platform_id" && c[1] == "platform_name" {
        TableKind::Platforms
    } else {
        TableKind::Unknown
    }
}

/// Header column names.
#[derive(Debug, Clone)]
struct Columns(Vec<String>);

impl Columns {
    fn index(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|c| *c == name)
    }
}

struct NodeAcc {
    key: String,
    raw_id: String,
    name: Option<String>,
    platform_id: Option<String>,
}

struct Row {
    node: usize,
    up: bool,
    start: f64,
    stop: f64,
    reason: Option<String>,
}

struct SideNode {
    platform_id: Option<String>,
    location: Option<String>,
    proc_model: Option<String>,
}

struct Platform {
    name: Option<String>,
    kind: Option<String>,
}

fn non_null(s: &str) -> Option<&str> {
    (!s.is_empty() && !s.eq_ignore_ascii_case("NULL")).then_some(s)
}

/// `<system>.<node>` with both parts numeric (LANL05 node names) → `system-<system>`.
fn lanl_system(name: &str) -> Option<String> {
    let (a, b) = name.split_once('.')?;
    let numeric = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    (numeric(a) && numeric(b)).then(|| format!("system-{a}"))
}

fn read_events(
    file: &InputFile,
    key_prefix: &str,
    nodes: &mut Vec<NodeAcc>,
    node_index: &mut HashMap<String, usize>,
    rows: &mut Vec<Row>,
    rejects: &mut Rejects,
) -> Result<()> {
    let display = file.display();
    let cols = header_tokens(file.sniff_head());
    let need = |name: &str| {
        cols.index(name).ok_or_else(|| IngestError::Bad {
            file: display.clone(),
            line: 1,
            reason: format!("event table header lacks the `{name}` column"),
        })
    };
    let (c_node, c_type, c_start, c_stop) = (
        need("node_id")?,
        need("event_type")?,
        need("event_start_time")?,
        need("event_stop_time")?,
    );
    let c_reason = cols.index("event_end_reason");
    let c_platform = cols.index("platform_id");
    let c_name = cols.index("node_name");
    let min_fields = c_node.max(c_type).max(c_start).max(c_stop) + 1;
    let mut fields: Vec<&str> = Vec::with_capacity(cols.0.len());
    let mut header_seen = false;
    for l in file.lines() {
        let line_no = l.number;
        let raw = match l.text() {
            Ok(raw) => raw,
            Err(reason) => {
                if !header_seen && l.lossy().trim().is_empty() {
                    continue;
                }
                header_seen = true;
                rejects.reject(&display, line_no, &l.lossy(), reason)?;
                continue;
            }
        };
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if !header_seen {
            header_seen = true;
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        fields.clear();
        fields.extend(line.split_whitespace());
        if fields.len() < min_fields {
            rejects.reject(
                &display,
                line_no,
                raw,
                format!("{} fields, at least {min_fields} expected", fields.len()),
            )?;
            continue;
        }
        let up = match fields[c_type] {
            "1" => true,
            "0" => false,
            other => {
                rejects.reject(
                    &display,
                    line_no,
                    raw,
                    format!("event_type {other:?} (0 or 1 expected)"),
                )?;
                continue;
            }
        };
        let time = |c: usize| fields[c].parse::<f64>().ok().filter(|t| t.is_finite());
        let (Some(start), Some(stop)) = (time(c_start), time(c_stop)) else {
            rejects.reject(
                &display,
                line_no,
                raw,
                "event_start_time / event_stop_time is not a number",
            )?;
            continue;
        };
        if let Some((field, v)) = [("event_start_time", start), ("event_stop_time", stop)]
            .into_iter()
            .find(|(_, v)| *v < 0.0)
        {
            rejects.reject(
                &display,
                line_no,
                raw,
                format!("{field} {v} is negative (times are seconds, never before 0)"),
            )?;
            continue;
        }
        if stop < start {
            rejects.reject(
                &display,
                line_no,
                raw,
                format!("event_stop_time {stop} is before event_start_time {start}"),
            )?;
            continue;
        }
        let raw_id = fields[c_node];
        let found = if key_prefix.is_empty() {
            node_index.get(raw_id).copied()
        } else {
            node_index.get(&format!("{key_prefix}{raw_id}")).copied()
        };
        let node = match found {
            Some(n) => n,
            None => {
                let key = format!("{key_prefix}{raw_id}");
                let attr = |c: Option<usize>| c.and_then(|c| cell(&fields, c)).map(str::to_string);
                nodes.push(NodeAcc {
                    key: key.clone(),
                    raw_id: raw_id.to_string(),
                    name: attr(c_name),
                    platform_id: attr(c_platform),
                });
                node_index.insert(key, nodes.len() - 1);
                nodes.len() - 1
            }
        };
        let reason = if up {
            c_reason.and_then(|c| cell(&fields, c)).map(str::to_string)
        } else {
            None
        };
        rows.push(Row {
            node,
            up,
            start,
            stop,
            reason,
        });
    }
    Ok(())
}

/// Reads a side table; `row(columns, fields)` stores one row and returns `None` when the row
/// lacks its key (then it is rejected). Returns how many rows were stored.
fn read_side<F>(file: &InputFile, rejects: &mut Rejects, mut row: F) -> Result<u64>
where
    F: FnMut(&Columns, &[&str]) -> Option<()>,
{
    let display = file.display();
    let cols = header_tokens(file.sniff_head());
    let mut header_seen = false;
    let mut kept = 0;
    for l in file.lines() {
        let raw = match l.text() {
            Ok(raw) => raw,
            Err(reason) => {
                header_seen = true;
                rejects.reject(&display, l.number, &l.lossy(), reason)?;
                continue;
            }
        };
        if raw.trim().is_empty() {
            continue;
        }
        if !header_seen {
            header_seen = true;
            continue;
        }
        if raw.trim_start().starts_with('#') {
            continue;
        }
        let mut fields: Vec<&str> = raw.split('\t').map(str::trim).collect();
        if fields.len() != cols.0.len() {
            fields = raw.split_whitespace().collect();
        }
        if row(&cols, &fields).is_none() {
            rejects.reject(
                &display,
                l.number,
                raw,
                "side-table row without its id column",
            )?;
        } else {
            kept += 1;
        }
    }
    Ok(kept)
}

/// Field `c` unless missing, empty or `NULL`.
fn cell<'a>(fields: &[&'a str], c: usize) -> Option<&'a str> {
    fields.get(c).copied().and_then(non_null)
}

#[cfg(test)]
#[path = "fta_tests.rs"]
mod tests;
