//! The replay's inputs as plain Rust structs: node timelines and specs, the workload, the
//! window and the run configuration. Nothing here touches the store; a loader builds these
//! values (sessions from the availability trace, curves from the survival fits) and hands them
//! to [`super::engine::simulate`].
//!
//! Time is integer microseconds throughout (`*_us`), on the trace's own clock for sessions and
//! windows and relative to the window start for request arrivals.
//!
//! Size: over 800 lines because the replay's input model (cluster, sessions, requests, windows,
//! configuration and the job expansion) is one vocabulary that every other replay module reads;
//! splitting it would scatter the validation rules that tie these types together.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::estimate::{Estimates, LengthEstimator};
use super::prefix::Prefix;
use crate::policy::model::MAX_LENGTH_DRAWS;
use crate::policy::{Params, PolicyKind};
use crate::rng::Rng;
use crate::survival::curve::ConditionalSurvival;

/// Microseconds per second, [`secs_to_us`] and [`FOREVER_US`]: the service-time model's
/// clock ([`crate::policy::service`]), shared by the engine and the policies' forecast.
pub use crate::policy::service::{secs_to_us, FOREVER_US, US_PER_S};

/// Why the inputs were rejected (or, in validation mode, which invariant broke).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    /// A node's session list is malformed.
    #[error("node {node} (`{name}`): session {index}: {reason}")]
    BadSession {
        /// Node index.
        node: usize,
        /// Node name.
        name: String,
        /// UpSession index.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A node's spec or rates are malformed.
    #[error("node {node} (`{name}`): {reason}")]
    BadNode {
        /// Node index.
        node: usize,
        /// Node name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The cluster has no node.
    #[error("the cluster has no node")]
    NoNodes,
    /// A workload request is malformed.
    #[error("request {index} (id {id}): {reason}")]
    BadRequest {
        /// Position in the workload.
        index: usize,
        /// Request id.
        id: u64,
        /// What is wrong.
        reason: &'static str,
    },
    /// A workload with prefix blocks under an engine without a prefix cache.
    #[error(
        "the workload has prefix blocks but the simple engine has no prefix cache: replay it \
         under the iteration engine, or turn the prefix cache off (scenario: [hardware] \
         prefix_cache = false) to replay every request statelessly"
    )]
    NoPrefixCache,
    /// The window is empty or overflows the clock.
    #[error("window [{start_us}, +{length_us}) us is empty or overflows")]
    BadWindow {
        /// Window start, us.
        start_us: i64,
        /// Window length, us.
        length_us: i64,
    },
    /// A configuration value is out of range.
    #[error("configuration: {0}")]
    BadConfig(String),
    /// Validation mode: an engine invariant was violated (a bug, never an input problem).
    #[error("invariant violated at t={time_us} us: {what}")]
    Invariant {
        /// Simulation time of the violation, trace clock, us.
        time_us: i64,
        /// Which invariant.
        what: String,
    },
}

/// One up-session of a node: the node is up on `[start_us, end_us)` (trace clock, us).
///
/// The end is an *event* (the node really went down: preemption, crash, lifetime cap, ...)
/// unless `censored`: then the trace only stopped watching (a user's own stop, an observation
/// gap, the end of observation). What the replay does with a censored end is
/// [`ReplayConfig::censored_ends`] (by default the node stays up until the window ends: a
/// censored end is never an unplanned interruption).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpSession {
    /// First microsecond the node is up.
    pub start_us: i64,
    /// First microsecond the node is down again; [`UpSession::OPEN_END`] when the session is
    /// still running at the end of the trace (censored).
    pub end_us: i64,
    /// The end is censored (`event = 0`): not a failure. Sessions with
    /// [`UpSession::OPEN_END`] are censored whatever this says.
    #[serde(default)]
    pub censored: bool,
    /// The `end_cause` of the session (e.g. `preempted`, `lifetime-cap`, `observation-end`;
    /// empty when unknown). Unplanned interruptions are reported by it.
    #[serde(default = "empty_cause", with = "arc_str")]
    pub end_cause: Arc<str>,
    /// The session was already running when observation began (its true start is unknown);
    /// `start_us` is then the trace start and the age is a lower bound.
    #[serde(default)]
    pub left_truncated: bool,
    /// Known age of the session at `start_us`, seconds (0 unless left-truncated with a known
    /// entry age). A node's age at `t` is `(t - start_us) / 1e6 + entry_s`.
    #[serde(default)]
    pub entry_s: f64,
    /// The end is *announced*: its cause is a planned end known in advance (a lifetime cap, a
    /// maintenance notice; the scenario's `nodes.announced_causes`). Every policy's view then
    /// carries the end ([`crate::policy::Foresight`]), the cost-based policies price it as a
    /// planned end, and the replay drains the node before it. Ignored when the end is censored.
    #[serde(default)]
    pub announced: bool,
}

fn empty_cause() -> Arc<str> {
    Arc::from("")
}

/// Serde of `Arc<str>` as a plain string (without serde's `rc` feature).
mod arc_str {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Arc::from(s))
    }
}

impl UpSession {
    /// End of a session still running when the trace ends (the oracle then has no foresight
    /// for it: [`crate::policy::Foresight::remaining_up`] answers `None`).
    pub const OPEN_END: i64 = i64::MAX;

    /// A session `[start_us, end_us)` with an uncensored end of unknown cause (`""`), not
    /// left-truncated.
    pub fn new(start_us: i64, end_us: i64) -> UpSession {
        UpSession {
            start_us,
            end_us,
            censored: false,
            end_cause: empty_cause(),
            left_truncated: false,
            entry_s: 0.0,
            announced: false,
        }
    }

    /// The same session with its end's censoring flag and cause.
    pub fn with_end(mut self, censored: bool, cause: &str) -> UpSession {
        self.censored = censored;
        self.end_cause = Arc::from(cause);
        self
    }

    /// The same session with its end announced (or not): [`UpSession::announced`].
    pub fn with_announced(mut self, announced: bool) -> UpSession {
        self.announced = announced;
        self
    }

    /// True when the session ends by an announced (planned) end: announced and not censored.
    #[inline]
    pub fn end_announced(&self) -> bool {
        self.announced && !self.end_censored()
    }

    /// The same session with its left-truncation flag and known age at `start_us`, seconds
    /// (negative or NaN count as 0).
    pub fn with_truncation(mut self, left_truncated: bool, entry_s: f64) -> UpSession {
        self.left_truncated = left_truncated;
        self.entry_s = if entry_s > 0.0 { entry_s } else { 0.0 };
        self
    }

    /// True when the end is not a failure: censored, or open at the end of the trace.
    #[inline]
    pub fn end_censored(&self) -> bool {
        self.censored || self.end_us == UpSession::OPEN_END
    }

    /// True when the node is up at `t` under this session.
    #[inline]
    pub fn contains(&self, t: i64) -> bool {
        self.start_us <= t && t < self.end_us
    }
}

/// What the replay does with a censored session end ([`UpSession::censored`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CensoredEnds {
    /// `stay-up` (default): a censored end does not take the node down; the node stays up
    /// from that session until the window ends (later sessions of the node in the window are
    /// ignored). No survival curve fitted with those ends as censored could predict them, so
    /// they are not failures.
    #[default]
    StayUp,
    /// `exclude`: a node with a censored session end inside a window is left out of that
    /// window (down throughout).
    Exclude,
}

impl CensoredEnds {
    /// `stay-up` or `exclude`.
    pub fn name(&self) -> &'static str {
        match self {
            CensoredEnds::StayUp => "stay-up",
            CensoredEnds::Exclude => "exclude",
        }
    }
}

impl fmt::Display for CensoredEnds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for CensoredEnds {
    type Err = ReplayError;
    /// `stay-up` or `exclude` (case-insensitive).
    fn from_str(s: &str) -> Result<CensoredEnds, ReplayError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "stay-up" => Ok(CensoredEnds::StayUp),
            "exclude" => Ok(CensoredEnds::Exclude),
            _ => Err(ReplayError::BadConfig(format!(
                "censored_ends `{s}`: expected stay-up or exclude"
            ))),
        }
    }
}

/// A node's serving hardware.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct NodeSpec {
    /// Concurrency slots: at most this many requests hold the node at once.
    pub slots: u32,
    /// KV-cache capacity, tokens.
    pub kv_capacity_tokens: u64,
    /// Prefill rate `p_i`, tokens/s.
    pub prefill_tok_s: f64,
    /// Decode rate `d_i` of one request running alone, tokens/s.
    pub decode_tok_s: f64,
    /// Network bandwidth `B_i`, bytes/s (planned KV transfers).
    pub bandwidth_bytes_s: f64,
    /// The step shape the iteration model serves with ([`crate::policy::iteration`]; its
    /// preset's calibration, default [`crate::policy::iteration::GENERIC_SHAPE`]).
    #[serde(default)]
    pub step: crate::policy::iteration::StepShape,
}

impl Default for NodeSpec {
    /// 8 slots, 200,000 KV tokens, 2,000 tok/s prefill, 30 tok/s decode, 1.25 GB/s (10 Gbit/s).
    fn default() -> NodeSpec {
        NodeSpec {
            slots: 8,
            kv_capacity_tokens: 200_000,
            prefill_tok_s: 2_000.0,
            decode_tok_s: 30.0,
            bandwidth_bytes_s: 1.25e9,
            step: crate::policy::iteration::StepShape::default(),
        }
    }
}

/// One node: hardware, availability timeline and the availability model the policies see.
#[derive(Clone)]
pub struct Node {
    /// Display name (echoed nowhere by the engine; records carry the node index).
    pub name: String,
    /// Hardware.
    pub spec: NodeSpec,
    /// Up-sessions from the availability trace, sorted by start, non-overlapping
    /// (`end <= next start`; touching sessions are a down and an up at the same instant).
    pub sessions: Vec<UpSession>,
    /// Conditional survival curve of the node's sessions (fitted elsewhere; the engine fits
    /// nothing). Policies query `S(t | a)` with `a` the node's current age.
    pub survival: Arc<dyn ConditionalSurvival>,
    /// Maximum-likelihood exponential failure rate per second from completed sessions only
    /// (events / exposure of ended sessions; read by `memoryless`; `hazard-pooled` reads the
    /// fleet's, [`Cluster::twin_rate_per_s`]).
    pub exp_rate_per_s: f64,
    /// The law that generated the node's sessions, when it is known (synthetic fleets only):
    /// read by `hazard-truth` in place of [`Node::survival`], so that policy prices `L` with
    /// the distribution (never the realisations) a perfect survival model would recover.
    pub truth: Option<Arc<dyn ConditionalSurvival>>,
}

/// Per-node exponential failure rates, shrunk toward the fleet's: node `i` with `events[i]`
/// failures over `exposure_s[i]` seconds of ended sessions gets one pseudo-event at the pooled
/// rate `lambda_0 = sum d / sum E`, `(d_i + 1) / (E_i + 1 / lambda_0)`, so a node without
/// failures yet is not taken to be immortal. `fallback_rate` is `lambda_0` when nothing ended.
/// The scenario builder's rule for [`Node::exp_rate_per_s`].
pub fn shrunk_exp_rates(events: &[f64], exposure_s: &[f64], fallback_rate: f64) -> Vec<f64> {
    let (d, e): (f64, f64) = (events.iter().sum(), exposure_s.iter().sum());
    let pooled = if d > 0.0 && e > 0.0 {
        d / e
    } else {
        fallback_rate
    };
    events
        .iter()
        .zip(exposure_s)
        .map(|(di, ei)| (di + 1.0) / (ei + 1.0 / pooled))
        .collect()
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.name)
            .field("spec", &self.spec)
            .field("sessions", &self.sessions.len())
            .field("exp_rate_per_s", &self.exp_rate_per_s)
            .field("truth", &self.truth.is_some())
            .finish_non_exhaustive()
    }
}

impl Node {
    /// The session containing `t`, if the node is up at `t` (binary search).
    pub fn session_at(&self, t: i64) -> Option<&UpSession> {
        let k = self.sessions.partition_point(|s| s.end_us <= t);
        self.sessions.get(k).filter(|s| s.start_us <= t)
    }

    /// Index of the first session that ends after `t` (the current one if up at `t`, else the
    /// next one); `sessions.len()` when none.
    #[inline]
    pub fn session_index_after(&self, t: i64) -> usize {
        self.sessions.partition_point(|s| s.end_us <= t)
    }

    /// True when a session of the node has a censored end ([`UpSession::censored`]) inside
    /// `[start_us, end_us)`: under [`CensoredEnds::Exclude`] the node sits out that window.
    pub fn censored_end_within(&self, start_us: i64, end_us: i64) -> bool {
        let k = self.session_index_after(start_us);
        self.sessions[k..]
            .iter()
            .take_while(|s| s.start_us < end_us)
            .any(|s| s.censored && s.end_us >= start_us && s.end_us < end_us)
    }

    /// The node's up intervals within `[start_us, end_us)` as the replay plays them under
    /// `mode` (appended to `out`, sorted, clipped to the window): with
    /// [`CensoredEnds::StayUp`] the first censored end inside the window extends its session
    /// to the window end; with [`CensoredEnds::Exclude`] a node with a censored end inside the
    /// window has no interval.
    pub fn up_intervals(
        &self,
        start_us: i64,
        end_us: i64,
        mode: CensoredEnds,
        out: &mut Vec<(i64, i64)>,
    ) {
        if mode == CensoredEnds::Exclude && self.censored_end_within(start_us, end_us) {
            return;
        }
        let k = self.session_index_after(start_us);
        for s in self.sessions[k..]
            .iter()
            .take_while(|s| s.start_us < end_us)
        {
            let a = s.start_us.max(start_us);
            if s.end_censored() && s.end_us < end_us {
                out.push((a, end_us));
                return;
            }
            out.push((a, s.end_us.min(end_us)));
        }
    }
}

/// The nodes of a replay.
#[derive(Debug, Clone, Default)]
pub struct Cluster {
    /// Nodes, indexed by [`crate::policy::NodeIdx`].
    pub nodes: Vec<Node>,
    /// The fleet's pools (one unnamed, unpriced pool unless [`Cluster::with_pools`] says
    /// otherwise).
    pub pools: Vec<Pool>,
    /// The pool of each node (index into [`Cluster::pools`]); empty: every node in pool 0.
    pub pool_of: Vec<u16>,
}

/// One pool of a fleet: nodes bought the same way (a spot source, an on-demand reserve), with
/// its price. The engine reads only the price, for the run's cost ([`RunCost`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Pool {
    /// Name (shown in the cost per pool).
    pub name: String,
    /// Dollars per node-hour, billed while the node is up.
    pub price_per_node_hour: f64,
}

/// What one run's fleet cost over the scored span of its window: every node billed at its
/// pool's price for the time it was up (as the replay plays it, [`Node::up_intervals`]),
/// `dollars = sum_i price_i * up_i / 3600` with `up_i` in seconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct RunCost {
    /// Dollars over the scored span.
    pub dollars: f64,
    /// Dollars per pool, by name, in [`Cluster::pools`] order.
    pub per_pool: Vec<(String, f64)>,
    /// Whether any pool has a price (else the cost metrics are undefined).
    pub priced: bool,
}

fn finite_pos(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

impl Cluster {
    /// The rate `hazard-pooled` prices every node at, so that it knows the fleet's risk but
    /// not which node carries it: the mean of the nodes' [`Node::exp_rate_per_s`] (each fitted
    /// on the training part and shrunk toward the fleet's pooled rate; 0 for an empty fleet).
    pub fn twin_rate_per_s(&self) -> f64 {
        if self.nodes.is_empty() {
            return 0.0;
        }
        self.nodes.iter().map(|n| n.exp_rate_per_s).sum::<f64>() / self.nodes.len() as f64
    }

    /// A cluster over `nodes`.
    pub fn new(nodes: Vec<Node>) -> Cluster {
        Cluster {
            nodes,
            pools: vec![Pool {
                name: "all".into(),
                price_per_node_hour: 0.0,
            }],
            pool_of: Vec::new(),
        }
    }

    /// The cluster with `pools` and each node's pool (`pool_of[i]` indexes `pools`; checked by
    /// [`Cluster::validate`]).
    pub fn with_pools(mut self, pools: Vec<Pool>, pool_of: Vec<u16>) -> Cluster {
        self.pools = pools;
        self.pool_of = pool_of;
        self
    }

    /// The pool of node `i`.
    pub fn pool(&self, i: usize) -> usize {
        self.pool_of.get(i).map_or(0, |&p| usize::from(p))
    }

    /// The fleet's cost over the scored span `[from_us, to_us)` of the window `window`
    /// (`[start_us, end_us)`) as the replay plays that window under `mode` ([`RunCost`]): the
    /// censored-end rule applies to the whole window (a censored end in the warm-up keeps the
    /// node up to the window's end under [`CensoredEnds::StayUp`], and takes the node out of
    /// the window under [`CensoredEnds::Exclude`]), then the up time is clipped to the span.
    pub fn cost(&self, window: (i64, i64), span: (i64, i64), mode: CensoredEnds) -> RunCost {
        let mut per_pool = vec![0.0; self.pools.len()];
        let mut up = Vec::new();
        let (from, to) = span;
        for (i, node) in self.nodes.iter().enumerate() {
            let pool = self.pool(i);
            let price = self.pools.get(pool).map_or(0.0, |p| p.price_per_node_hour);
            if price == 0.0 {
                continue;
            }
            up.clear();
            node.up_intervals(window.0, window.1, mode, &mut up);
            let up_us: i64 = up
                .iter()
                .map(|&(a, b)| (b.min(to) - a.max(from)).max(0))
                .sum();
            per_pool[pool] += price * up_us as f64 / (US_PER_S * 3600.0);
        }
        RunCost {
            dollars: per_pool.iter().sum(),
            per_pool: self
                .pools
                .iter()
                .map(|p| p.name.clone())
                .zip(per_pool)
                .collect(),
            priced: self.pools.iter().any(|p| p.price_per_node_hour > 0.0),
        }
    }

    /// Checks that the cluster carries what `policy` reads beyond the common inputs:
    /// `hazard-truth` needs every node's generating law ([`Node::truth`]); without it the
    /// policy would silently be `hazard`.
    pub fn supports(&self, policy: PolicyKind) -> Result<(), ReplayError> {
        if policy == PolicyKind::HazardTruth {
            if let Some((i, n)) = self
                .nodes
                .iter()
                .enumerate()
                .find(|(_, n)| n.truth.is_none())
            {
                return Err(ReplayError::BadNode {
                    node: i,
                    name: n.name.clone(),
                    reason: "hazard-truth needs the law that generated the node's sessions (known for synthetic fleets only)",
                });
            }
        }
        Ok(())
    }

    /// Checks every node: at least one node; positive finite prefill and decode rates;
    /// non-negative bandwidth and exponential rate; sessions with `start < end`, sorted and
    /// non-overlapping.
    pub fn validate(&self) -> Result<(), ReplayError> {
        if self.nodes.is_empty() {
            return Err(ReplayError::NoNodes);
        }
        if u32::try_from(self.nodes.len()).is_err() {
            return Err(ReplayError::BadConfig("more than 2^32 nodes".into()));
        }
        if self.pools.is_empty() {
            return Err(ReplayError::BadConfig(
                "a cluster has at least one pool".into(),
            ));
        }
        if !self.pool_of.is_empty() && self.pool_of.len() != self.nodes.len() {
            return Err(ReplayError::BadConfig(format!(
                "{} pool assignments for {} nodes",
                self.pool_of.len(),
                self.nodes.len()
            )));
        }
        if let Some(&p) = self
            .pool_of
            .iter()
            .find(|&&p| usize::from(p) >= self.pools.len())
        {
            return Err(ReplayError::BadConfig(format!(
                "node in pool {p} of {}",
                self.pools.len()
            )));
        }
        if let Some(p) = self
            .pools
            .iter()
            .find(|p| !(p.price_per_node_hour.is_finite() && p.price_per_node_hour >= 0.0))
        {
            return Err(ReplayError::BadConfig(format!(
                "pool {}: price_per_node_hour must be >= 0, got {}",
                p.name, p.price_per_node_hour
            )));
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let bad = |reason| ReplayError::BadNode {
                node: i,
                name: n.name.clone(),
                reason,
            };
            if !finite_pos(n.spec.prefill_tok_s) {
                return Err(bad("prefill rate must be finite and positive"));
            }
            if !finite_pos(n.spec.decode_tok_s) {
                return Err(bad("decode rate must be finite and positive"));
            }
            if !(n.spec.bandwidth_bytes_s >= 0.0) {
                return Err(bad("bandwidth must be non-negative"));
            }
            if !(n.exp_rate_per_s >= 0.0 && n.exp_rate_per_s.is_finite()) {
                return Err(bad("exponential rate must be finite and non-negative"));
            }
            let mut prev_end = i64::MIN;
            for (k, s) in n.sessions.iter().enumerate() {
                let bad = |reason| ReplayError::BadSession {
                    node: i,
                    name: n.name.clone(),
                    index: k,
                    reason,
                };
                if s.start_us >= s.end_us {
                    return Err(bad("start must be before end"));
                }
                if s.start_us < prev_end {
                    return Err(bad("sessions must be sorted and must not overlap"));
                }
                prev_end = s.end_us;
            }
        }
        Ok(())
    }

    /// `p_max`: the highest prefill rate of any node, tokens/s.
    pub fn max_prefill(&self) -> f64 {
        self.nodes
            .iter()
            .map(|n| n.spec.prefill_tok_s)
            .fold(0.0, f64::max)
    }

    /// `d_max`: the highest decode rate of any node, tokens/s.
    pub fn max_decode(&self) -> f64 {
        self.nodes
            .iter()
            .map(|n| n.spec.decode_tok_s)
            .fold(0.0, f64::max)
    }
}

/// One request of the workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Request {
    /// Workload id (echoed in the records).
    pub id: u64,
    /// Arrival offset from the window start, us (before rate scaling).
    pub arrival_us: i64,
    /// Prompt length `P_r`, tokens.
    pub prompt_tokens: u64,
    /// True output length, tokens (hidden from policies, which see the estimate `L^_r`).
    pub output_tokens: u64,
}

/// The requests to replay, in any order (the engine sorts them by arrival, stably).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Workload {
    /// Requests.
    pub requests: Vec<Request>,
    /// Each request's prompt prefix ([`Prefix`], parallel to `requests`), or empty for a
    /// workload without prefix structure (every request stateless).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<Prefix>,
    /// Each request's conversation key (parallel to `requests`; `None`: unknown), or empty
    /// when the workload has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conversations: Vec<Option<u64>>,
    /// The gap from a conversation's turn to its next, fitted on the workload's training
    /// history ([`crate::policy::retained::ReuseGap`]); the `E`-based policies price the
    /// retained-state term with it when nodes cache prefixes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<crate::policy::retained::ReuseGap>,
}

impl Workload {
    /// A workload of `requests` without prefix structure.
    pub fn new(requests: Vec<Request>) -> Workload {
        Workload {
            requests,
            prefixes: Vec::new(),
            conversations: Vec::new(),
            reuse: None,
        }
    }

    /// The same workload with the gap from a turn to its conversation's next.
    pub fn with_reuse(self, reuse: Option<crate::policy::retained::ReuseGap>) -> Workload {
        Workload { reuse, ..self }
    }

    /// The same workload with each request's conversation key (`conversations[k]` of
    /// `requests[k]`).
    pub fn with_conversations(self, conversations: Vec<Option<u64>>) -> Workload {
        Workload {
            conversations,
            ..self
        }
    }

    /// The same workload with each request's prefix (`prefixes[k]` of `requests[k]`).
    pub fn with_prefixes(self, prefixes: Vec<Prefix>) -> Workload {
        Workload { prefixes, ..self }
    }

    /// Whether any request has prefix blocks (the replay then needs an engine with a prefix
    /// cache, or [`ReplayConfig::prefix_cache`] off).
    pub fn has_prefixes(&self) -> bool {
        self.prefixes.iter().any(|p| !p.is_empty())
    }

    /// Checks every request: non-negative arrival offset; prefixes, when given, one per
    /// request and fitting its prompt ([`Prefix::fits`]).
    pub fn validate(&self) -> Result<(), ReplayError> {
        for (what, n) in [
            ("prefixes", self.prefixes.len()),
            ("conversations", self.conversations.len()),
        ] {
            if n != 0 && n != self.requests.len() {
                return Err(ReplayError::BadConfig(format!(
                    "the workload has {} requests but {n} {what}",
                    self.requests.len(),
                )));
            }
        }
        for (index, r) in self.requests.iter().enumerate() {
            if r.arrival_us < 0 {
                return Err(ReplayError::BadRequest {
                    index,
                    id: r.id,
                    reason: "arrival offset must be non-negative",
                });
            }
            if self
                .prefixes
                .get(index)
                .is_some_and(|p| !p.fits(r.prompt_tokens))
            {
                return Err(ReplayError::BadRequest {
                    index,
                    id: r.id,
                    reason: "its prefix blocks do not fit its prompt (more blocks than the prompt has tokens, or no block size)",
                });
            }
        }
        Ok(())
    }
}

/// A window `[start_us, start_us + length_us)` of the availability trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// Window start on the trace clock, us.
    pub start_us: i64,
    /// Window length, us.
    pub length_us: i64,
}

impl Window {
    /// The window `[start_us, start_us + length_us)`.
    pub fn new(start_us: i64, length_us: i64) -> Window {
        Window {
            start_us,
            length_us,
        }
    }

    /// The window's end (exclusive), or an error when empty or overflowing.
    pub fn end_us(&self) -> Result<i64, ReplayError> {
        match self.start_us.checked_add(self.length_us) {
            Some(e) if self.length_us > 0 && e < FOREVER_US => Ok(e),
            _ => Err(ReplayError::BadWindow {
                start_us: self.start_us,
                length_us: self.length_us,
            }),
        }
    }

    /// Length in seconds.
    pub fn length_s(&self) -> f64 {
        self.length_us as f64 / US_PER_S
    }
}

/// Everything about a replay except the cluster, the workload, the window, the policy and the
/// seed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ReplayConfig {
    /// The policy constants (a run may override them from a parameter grid).
    pub params: Params,
    /// How `L^_r` is made.
    pub estimator: LengthEstimator,
    /// SLO: a request meets it iff it completes within
    /// `slo_factor * (P_r / p_max + L_r / d_max)` of its arrival (default 5).
    pub slo_factor: f64,
    /// Batch slowdown factor `f`: with `k` requests decoding on a node, each decodes at
    /// `d_i / (1 + f (k - 1))` tokens/s (default 0: no slowdown).
    pub batch_slowdown: f64,
    /// Which service-time model serves requests and prices the forecasts (default
    /// [`crate::policy::iteration::EngineKind::Iteration`]).
    pub engine: crate::policy::iteration::EngineKind,
    /// Arrival-rate scale: arrival offsets are multiplied by `1 / rate_scale` (default 1).
    pub rate_scale: f64,
    /// Repeat the workload back to back until the window is full (default false).
    pub loop_workload: bool,
    /// Validation mode: check the engine's invariants after every event and fail with
    /// [`ReplayError::Invariant`] (slow; for tests).
    pub validate: bool,
    /// Keep the first `decision_log` policy decisions (with every candidate priced) in
    /// [`super::engine::RunOutput::decisions`] (default 0).
    pub decision_log: usize,
    /// With [`ReplayConfig::decision_log`], also keep each logged decision's inputs
    /// ([`crate::policy::record::DecisionInputs`]) and the curves they name (default false).
    pub decision_inputs: bool,
    /// What a censored session end does (default [`CensoredEnds::StayUp`]).
    pub censored_ends: CensoredEnds,
    /// Warm-up, seconds: requests arriving in the first `warmup_s` of a window load the
    /// cluster but are not scored, so that windows are measured in steady state rather than
    /// from an empty cluster (default 0).
    pub warmup_s: f64,
    /// Drain margin, seconds: requests arriving in the last `drain_s` of a window are served
    /// but not scored, since most of them could not finish before it ends (default 0).
    pub drain_s: f64,
    /// Whether nodes keep a prefix cache ([`super::prefix`]) for a workload with prefix
    /// blocks (default true). Only the iteration engine has one: a prefix workload under the
    /// simple engine is an error ([`ReplayError::NoPrefixCache`]) unless this is false, which
    /// replays every request statelessly (its blocks ignored, on purpose).
    pub prefix_cache: bool,
}

impl Default for ReplayConfig {
    /// Default [`Params`], exact estimates, `slo_factor = 5`, no batch slowdown, rate scale 1,
    /// no looping, no validation, no decision log, censored ends stay up, every arrival scored
    /// (no warm-up, no drain margin).
    fn default() -> ReplayConfig {
        ReplayConfig {
            params: Params::default(),
            estimator: LengthEstimator::Exact,
            slo_factor: 5.0,
            batch_slowdown: 0.0,
            engine: crate::policy::iteration::EngineKind::Iteration,
            rate_scale: 1.0,
            loop_workload: false,
            validate: false,
            decision_log: 0,
            decision_inputs: false,
            censored_ends: CensoredEnds::StayUp,
            warmup_s: 0.0,
            drain_s: 0.0,
            prefix_cache: true,
        }
    }
}

impl ReplayConfig {
    /// The arrivals scored in a window of `length_s` seconds: `[warmup_s, length_s - drain_s)`
    /// after the window start. A warm-up and drain that leave nothing are shrunk in
    /// proportion to leave the middle half of the window, so that a run always scores
    /// something.
    pub fn scored_span(&self, length_s: f64) -> [f64; 2] {
        let (w, d) = (self.warmup_s.max(0.0), self.drain_s.max(0.0));
        if w + d <= 0.5 * length_s {
            [w, length_s - d]
        } else {
            let k = 0.5 * length_s / (w + d);
            [w * k, length_s - d * k]
        }
    }

    /// Checks the ranges: `slo_factor` finite and positive, `batch_slowdown` finite and
    /// non-negative, `rate_scale` finite and positive, lognormal `sigma` finite and
    /// non-negative, `check_interval_s` not NaN and non-negative (0 disables migration checks).
    pub fn validate(&self) -> Result<(), ReplayError> {
        if !finite_pos(self.slo_factor) {
            return Err(ReplayError::BadConfig(
                "slo_factor must be finite and positive".into(),
            ));
        }
        if !(self.batch_slowdown.is_finite() && self.batch_slowdown >= 0.0) {
            return Err(ReplayError::BadConfig(
                "batch_slowdown must be finite and non-negative".into(),
            ));
        }
        if !(self.warmup_s.is_finite()
            && self.warmup_s >= 0.0
            && self.drain_s.is_finite()
            && self.drain_s >= 0.0)
        {
            return Err(ReplayError::BadConfig(
                "warmup_s and drain_s must be finite and non-negative".into(),
            ));
        }
        if !finite_pos(self.rate_scale) {
            return Err(ReplayError::BadConfig(
                "rate_scale must be finite and positive".into(),
            ));
        }
        if let LengthEstimator::Lognormal { sigma } = self.estimator {
            if !(sigma.is_finite() && sigma >= 0.0) {
                return Err(ReplayError::BadConfig(
                    "lognormal sigma must be finite and non-negative".into(),
                ));
            }
        }
        validate_params(&self.params)
    }
}

/// Checks the few [`Params`] fields the engine itself relies on.
pub(crate) fn validate_params(p: &Params) -> Result<(), ReplayError> {
    if !(p.check_interval_s >= 0.0) {
        return Err(ReplayError::BadConfig(
            "check_interval_s must be non-negative (0 disables migration checks)".into(),
        ));
    }
    if !(p.kv_bytes_per_token >= 0.0) {
        return Err(ReplayError::BadConfig(
            "kv_bytes_per_token must be non-negative".into(),
        ));
    }
    if !(1..=MAX_LENGTH_DRAWS).contains(&p.length_draws) {
        return Err(ReplayError::BadConfig(format!(
            "length_draws must be between 1 and {MAX_LENGTH_DRAWS} (got {})",
            p.length_draws
        )));
    }
    Ok(())
}

/// One request as the engine replays it: a workload request placed in the window (after rate
/// scaling and looping), with its estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayJob {
    /// Index in the run (unique; arrival order).
    pub index: u32,
    /// Workload id.
    pub id: u64,
    /// Loop copy (0 for the first pass over the workload).
    pub copy: u32,
    /// Arrival offset from the window start, us (scaled).
    pub arrival_us: i64,
    /// `P_r`, tokens.
    pub prompt_tokens: u64,
    /// `L_r`, tokens.
    pub output_tokens: u64,
    /// The estimate the policies see: the posterior median `m_r` of the request's length
    /// given the estimator's observation ([`super::estimate`]), tokens.
    pub est_output_tokens: u64,
    /// Its prefix's chained block keys ([`super::prefix::chain_keys`]): the range
    /// `[start, start + len)` of [`PreparedJobs::keys`] (empty without a prefix cache).
    pub prefix_keys: (u32, u32),
    /// Tokens per prefix block.
    pub block_tokens: u32,
    /// Its conversation's key for this loop copy (`None`: unknown).
    pub conversation: Option<u64>,
}

/// A run's jobs and the posterior log-sd of their estimates
/// ([`crate::policy::RequestView::est_sigma`]).
#[derive(Debug, Clone)]
pub(crate) struct PreparedJobs {
    /// The jobs, in arrival order.
    pub(crate) jobs: Vec<ReplayJob>,
    /// The log-sd `s` the policies price the estimates with.
    pub(crate) est_sigma: f64,
    /// Every job's prefix keys, back to back ([`ReplayJob::prefix_keys`]).
    pub(crate) keys: Vec<u64>,
    /// The workload's reuse gap when nodes cache prefixes.
    pub(crate) reuse: Option<crate::policy::retained::ReuseGap>,
}

/// The seed of a run's streams: `splitmix(seed) ^ splitmix(window + salt)`, so that different
/// (seed, window) pairs give unrelated streams. Each request's stream is then
/// `Rng::stream(run_stream_seed(seed, window) ^ salt, request index)`.
pub(crate) fn run_stream_seed(seed: u64, window: u64) -> u64 {
    let mut a = Rng::new(seed);
    let mut b = Rng::new(window.wrapping_add(0x5EED_0FA1_1D0E_5EED));
    a.next_u64() ^ b.next_u64().rotate_left(17)
}

/// Expands `workload` into the jobs of one run: arrival offsets scaled by `1 / rate_scale`
/// (rounded to the microsecond), looped when `loop_workload` with period
/// `span + span / (n - 1)` (`span` the last scaled arrival; at least 1 s) so that the gap
/// between copies is one mean inter-arrival time, kept if they arrive before `length_us`, sorted
/// stably by (arrival, copy, workload position), and given their estimates.
pub(crate) fn prepare_jobs(
    workload: &Workload,
    length_us: i64,
    cfg: &ReplayConfig,
    stream_seed: u64,
) -> Result<PreparedJobs, ReplayError> {
    workload.validate()?;
    let n = workload.requests.len();
    let scale = cfg.rate_scale;
    let scaled: Vec<i64> = workload
        .requests
        .iter()
        .map(|r| {
            let x = (r.arrival_us as f64 / scale).round();
            if x >= FOREVER_US as f64 {
                FOREVER_US
            } else {
                x as i64
            }
        })
        .collect();
    // (arrival, copy, position)
    let mut order: Vec<(i64, u32, u32)> = Vec::with_capacity(n);
    if n > 0 {
        let span = scaled.iter().copied().max().unwrap_or(0);
        let period = if n > 1 {
            span.saturating_add(span / (n as i64 - 1))
        } else {
            span
        }
        .max(1_000_000);
        let mut copy: u32 = 0;
        loop {
            let offset = i64::from(copy).saturating_mul(period);
            if offset >= length_us {
                break;
            }
            for (pos, &a) in scaled.iter().enumerate() {
                let t = a.saturating_add(offset);
                if t < length_us {
                    order.push((t, copy, pos as u32));
                }
            }
            if !cfg.loop_workload || copy == u32::MAX {
                break;
            }
            copy += 1;
        }
    }
    order.sort_unstable();
    if u32::try_from(order.len()).is_err() {
        return Err(ReplayError::BadConfig(
            "more than 2^32 requests in one run".into(),
        ));
    }
    let estimates = Estimates::new(
        cfg.estimator,
        workload
            .requests
            .iter()
            .map(|r| (r.prompt_tokens, r.output_tokens)),
    );
    let mut jobs = Vec::with_capacity(order.len());
    let cached = cfg.prefix_cache && workload.has_prefixes();
    if cached && cfg.engine == crate::policy::iteration::EngineKind::Simple {
        return Err(ReplayError::NoPrefixCache);
    }
    let mut keys = Vec::new();
    for (index, &(arrival_us, copy, pos)) in order.iter().enumerate() {
        let r = &workload.requests[pos as usize];
        let est = estimates.estimate(r.prompt_tokens, r.output_tokens, index as u64, stream_seed);
        let (prefix_keys, block_tokens) = match workload.prefixes.get(pos as usize) {
            Some(p) if cached && !p.is_empty() => {
                let start = u32::try_from(keys.len()).map_err(|_| {
                    ReplayError::BadConfig("more than 2^32 prefix blocks in one run".into())
                })?;
                super::prefix::chain_keys(p, copy, &mut keys);
                ((start, p.blocks.len() as u32), p.block_tokens)
            }
            _ => ((0, 0), 0),
        };
        jobs.push(ReplayJob {
            index: index as u32,
            id: r.id,
            copy,
            arrival_us,
            prompt_tokens: r.prompt_tokens,
            output_tokens: r.output_tokens,
            est_output_tokens: est,
            prefix_keys,
            block_tokens,
            // Each loop copy's conversations are new ones.
            conversation: workload
                .conversations
                .get(pos as usize)
                .copied()
                .flatten()
                .map(|c| c ^ u64::from(copy).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
        });
    }
    Ok(PreparedJobs {
        jobs,
        est_sigma: estimates.sigma(),
        reuse: workload.reuse.filter(|_| !keys.is_empty()),
        keys,
    })
}
