//! The canonical model that every adapter produces: nodes, up-sessions and rejected records.
//!
//! Times are `f64` seconds. When [`Trace::time_base`] is [`TimeBase::Utc`] they are Unix epoch
//! seconds (UTC); when it is [`TimeBase::Relative`] they are seconds from the trace's own start.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// What kind of availability a trace records. Obtainability windows are not instance lifetimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Spot capacity probes: an up-run is a window in which a launch would have succeeded.
    SpotObtainability,
    /// Kept-alive spot/preemptible instances: an up-run is one instance's life.
    SpotLifetime,
    /// Volunteer or desktop hosts.
    Volunteer,
    /// Mobile devices.
    Mobile,
    /// HPC cluster nodes.
    Hpc,
}

impl Kind {
    /// The stable name used in the store and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SpotObtainability => "spot-obtainability",
            Kind::SpotLifetime => "spot-lifetime",
            Kind::Volunteer => "volunteer",
            Kind::Mobile => "mobile",
            Kind::Hpc => "hpc",
        }
    }

    /// Parses a stable name back.
    pub fn parse(s: &str) -> Option<Kind> {
        [
            Kind::SpotObtainability,
            Kind::SpotLifetime,
            Kind::Volunteer,
            Kind::Mobile,
            Kind::Hpc,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// Whether session times are absolute UTC instants or seconds from the trace start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeBase {
    /// Unix epoch seconds, UTC.
    Utc,
    /// Seconds from the start of the trace (no absolute clock in the file).
    Relative,
}

impl TimeBase {
    /// The stable name used in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            TimeBase::Utc => "utc",
            TimeBase::Relative => "relative",
        }
    }
}

/// Meaning of the value `1` in a binary tick series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Polarity {
    /// `1` = available / running (published Can't Be Late, SpotHedge, SkyNomad CSVs).
    Available,
    /// `1` = preempted / unavailable (raw probes, simulator exports, SkyNomad converted traces).
    Unavailable,
}

impl Polarity {
    /// The stable name used in the store and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Polarity::Available => "available",
            Polarity::Unavailable => "unavailable",
        }
    }
}

/// Options that change how an adapter interprets its input. Recorded with the source.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Options {
    /// Meaning of `1` in binary series; required where the format is ambiguous.
    pub polarity: Option<Polarity>,
    /// k-of-N threshold for count series: up when `count >= k`.
    pub threshold: Option<u32>,
    /// Override of the tick width in seconds (for files whose header is wrong).
    pub gap_seconds: Option<f64>,
    /// Stop at the first bad record instead of recording it in the rejects.
    pub strict: bool,
    /// FTA only: add a censored tail session after each node's last repair, ending at the
    /// trace's last timestamp (an approximation; off by default).
    pub fta_censored_tail: bool,
}

/// One node (a VM, a probe series, a host, a phone) with its attributes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeInfo {
    /// Node key, unique within the source.
    pub node_id: String,
    /// Zone or region, where known.
    pub zone: Option<String>,
    /// Instance or machine type, where known.
    pub instance_type: Option<String>,
    /// Group (campaign, sub-trace, system), where known.
    pub group: Option<String>,
    /// Start of this node's observation window (seconds, see [`TimeBase`]).
    pub observed_from: f64,
    /// End of this node's observation window.
    pub observed_to: f64,
}

/// A node key shared by all sessions of the node (a trace of millions of sessions holds each
/// key once).
pub type NodeKey = Arc<str>;

/// Why a session ended: the common causes are static strings, so a session holds no copy.
pub type EndCause = Cow<'static, str>;

/// The end causes the adapters use, held once by the program.
const KNOWN_CAUSES: [&str; 9] = [
    "preempted",
    "lifetime-cap",
    "failure",
    "removed",
    "observation-end",
    "observation-gap",
    "stopped",
    "deleted",
    "unobtainable",
];

/// The [`EndCause`] for `cause`: borrowed when it is one of the common causes, owned otherwise
/// (e.g. `failure:4022`).
pub fn end_cause(cause: &str) -> EndCause {
    match KNOWN_CAUSES.iter().find(|&&c| c == cause) {
        Some(&c) => Cow::Borrowed(c),
        None => Cow::Owned(cause.to_string()),
    }
}

/// One up-session of a node.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Node key.
    pub node_id: NodeKey,
    /// Start (seconds, see [`TimeBase`]): the first instant the session was observed up.
    pub start: f64,
    /// End: when the node went away, or when observation stopped (censored).
    pub end: f64,
    /// `true` = the node went away (preemption, lifetime cap, failure, departure);
    /// `false` = right-censored (observation ended, or the user stopped or deleted it).
    pub event: bool,
    /// Why the session ended, e.g. `preempted`, `lifetime-cap`, `failure`, `removed`,
    /// `observation-end`, `observation-gap`, `stopped`, `deleted`.
    pub end_cause: EndCause,
    /// The session was already up at the node's first observation (true start unknown).
    pub left_truncated: bool,
    /// Age of the session at `start`, when known (0 otherwise). Survival fits use
    /// `(entry_s, entry_s + duration)` as the (entry, exit) ages.
    pub entry_s: f64,
    /// Width of the observation tick (seconds); 0 when times are exact.
    pub resolution_s: f64,
}

impl Session {
    /// Observed length of the session in seconds.
    pub fn duration_s(&self) -> f64 {
        self.end - self.start
    }
}

/// A record that could not be used, kept with enough context to find and fix it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reject {
    /// The file.
    pub file: String,
    /// 1-based line (or record) number.
    pub line: u64,
    /// The raw text of the record (truncated to 500 characters).
    pub raw: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Collector of rejected records that honours `--strict`.
#[derive(Debug, Default)]
pub struct Rejects {
    strict: bool,
    items: Vec<Reject>,
    /// The first whole-file defect taken in by [`Rejects::absorb`] / [`Rejects::defect`].
    first_file_error: Option<(String, u64, String)>,
}

impl Rejects {
    /// A collector; `strict` turns the first reject into an error.
    pub fn new(strict: bool) -> Self {
        Rejects {
            strict,
            items: Vec::new(),
            first_file_error: None,
        }
    }

    /// Whether the first reject is an error (`--strict`).
    pub fn strict(&self) -> bool {
        self.strict
    }

    /// Takes in the result of reading one whole file: a defect that makes the file unusable
    /// ([`crate::IngestError::Bad`]) becomes a reject of that file (with its line, or 0) when not
    /// strict, so the other files go on ("bad records never stop an ingest"); under `--strict`,
    /// and for any other error (options, mixing sources), the error is returned.
    pub fn absorb<T>(&mut self, result: crate::Result<T>) -> crate::Result<Option<T>> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(crate::IngestError::Bad { file, line, reason }) if !self.strict => {
                self.defect(&file, line, "", reason)?;
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Records a whole-file defect (an unreadable or unusable file): like [`Rejects::reject`],
    /// and remembered so that [`Rejects::nothing_usable`] can name it.
    pub fn defect(
        &mut self,
        file: &str,
        line: u64,
        raw: &str,
        reason: impl Into<String>,
    ) -> crate::Result<()> {
        let reason = reason.into();
        if self.first_file_error.is_none() {
            self.first_file_error = Some((file.to_string(), line, reason.clone()));
        }
        self.reject(file, line, raw, reason)
    }

    /// The error to return when an adapter ends with no usable input at all: the first
    /// whole-file defect when there was one (so ingesting one broken file says what is wrong
    /// with it); else, when records were rejected, the first of them with how many there were
    /// (not "empty input": the file had records); else `fallback`.
    pub fn nothing_usable(&self, fallback: crate::IngestError) -> crate::IngestError {
        match (&self.first_file_error, self.items.first()) {
            (Some((file, line, reason)), _) => crate::IngestError::Bad {
                file: file.clone(),
                line: *line,
                reason: reason.clone(),
            },
            (None, Some(first)) => crate::IngestError::Bad {
                file: first.file.clone(),
                line: first.line,
                reason: format!(
                    "no usable record: all {} rejected; the first: {}",
                    self.items.len(),
                    first.reason
                ),
            },
            (None, None) => fallback,
        }
    }

    /// Whether a whole-file defect was recorded.
    pub fn has_file_defect(&self) -> bool {
        self.first_file_error.is_some()
    }

    /// Records a bad record, or fails with `file:line: reason` under `--strict`.
    pub fn reject(
        &mut self,
        file: &str,
        line: u64,
        raw: &str,
        reason: impl Into<String>,
    ) -> crate::Result<()> {
        let reason = reason.into();
        if self.strict {
            return Err(crate::IngestError::Bad {
                file: file.to_string(),
                line,
                reason,
            });
        }
        let raw: String = raw.chars().take(500).collect();
        self.items.push(Reject {
            file: file.to_string(),
            line,
            raw,
            reason,
        });
        Ok(())
    }

    /// The recorded rejects.
    pub fn into_vec(self) -> Vec<Reject> {
        self.items
    }

    /// How many were recorded so far.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether none were recorded.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

/// One raw sample of a count series (k-of-N probes): `count` of `of` instances obtainable at
/// `t`, standing for `dt` seconds of observation. Kept so that availability at any threshold k
/// is a query, not a re-ingest.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// The series (node) it belongs to.
    pub node_id: String,
    /// Time (source clock, seconds).
    pub t: f64,
    /// Instances counted.
    pub count: u64,
    /// Instances probed, when the series says (`None`: not recorded).
    pub of: Option<u64>,
    /// Seconds of observation the sample stands for (the series' tick).
    pub dt: f64,
}

/// The result of parsing all the files of one source.
#[derive(Debug, Clone)]
pub struct Trace {
    /// What the up-sessions mean.
    pub kind: Kind,
    /// Whether times are absolute.
    pub time_base: TimeBase,
    /// Every node seen, in a stable order.
    pub nodes: Vec<NodeInfo>,
    /// Every up-session, ordered by node then start.
    pub sessions: Vec<Session>,
    /// Raw samples of count series (empty for other sources).
    pub observations: Vec<Observation>,
    /// Records that could not be used.
    pub rejects: Vec<Reject>,
    /// Notes for the user (duplicates found, assumptions made), printed after ingest.
    pub notes: Vec<String>,
    /// How many input records were used (the kept rows): lines, data elements, operation
    /// records or rounds, as the adapter counts records. With [`Trace::rejects`] this accounts
    /// for every record read, except that one record may give several rejects (an event log
    /// line naming several nodes).
    pub kept_records: u64,
}

impl Trace {
    /// A trace with nothing in it yet.
    pub fn empty(kind: Kind, time_base: TimeBase) -> Trace {
        Trace {
            kind,
            time_base,
            nodes: Vec::new(),
            sessions: Vec::new(),
            observations: Vec::new(),
            rejects: Vec::new(),
            notes: Vec::new(),
            kept_records: 0,
        }
    }

    /// Earliest observation instant over all nodes (0 for an empty trace).
    pub fn observation_start(&self) -> f64 {
        self.nodes
            .iter()
            .map(|n| n.observed_from)
            .fold(f64::INFINITY, f64::min)
            .pipe_finite()
    }

    /// Latest observation instant over all nodes (0 for an empty trace).
    pub fn observation_end(&self) -> f64 {
        self.nodes
            .iter()
            .map(|n| n.observed_to)
            .fold(f64::NEG_INFINITY, f64::max)
            .pipe_finite()
    }

    /// Sorts nodes by id and sessions by (node, start): the canonical order.
    pub fn canonicalize(&mut self) {
        self.nodes.sort_by(|a, b| a.node_id.cmp(&b.node_id));
        // Unstable sorts need no scratch copy (a stable sort of ten million sessions would hold
        // half of them twice); the keys make the order total, so the result is the same.
        self.sessions.sort_unstable_by(|a, b| {
            a.node_id
                .cmp(&b.node_id)
                .then_with(|| a.start.total_cmp(&b.start))
                .then_with(|| a.end.total_cmp(&b.end))
                .then_with(|| a.event.cmp(&b.event))
                .then_with(|| a.end_cause.cmp(&b.end_cause))
                .then_with(|| a.left_truncated.cmp(&b.left_truncated))
                .then_with(|| a.entry_s.total_cmp(&b.entry_s))
                .then_with(|| a.resolution_s.total_cmp(&b.resolution_s))
        });
    }
}

trait Finite {
    fn pipe_finite(self) -> f64;
}

impl Finite for f64 {
    fn pipe_finite(self) -> f64 {
        if self.is_finite() {
            self
        } else {
            0.0
        }
    }
}
