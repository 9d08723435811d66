//! Loading from the store into plain structs, off the render path.
//!
//! Every piece of data the screens show is produced by one [`Job`] and delivered as one
//! [`Loaded`] value. [`Loader::run`] executes a job synchronously (the tests call it directly);
//! [`Worker`] runs a [`Loader`] on a background thread and sends each result back to the event
//! loop as a [`Msg::Loaded`], so the screen keeps redrawing (with a spinner) however large the
//! store is. The worker runs the most recently requested interactive job first, runs background
//! jobs (the hazard verdicts of the sources list) only when nothing interactive waits, and drops
//! superseded source loads, re-runs and trigger tables (only the newest of each kind is still on
//! screen; a dropped job is asked for again if it is needed again).
//!
//! Definitions used by the screens:
//!
//! * **Node median up-time**: the Kaplan-Meier median of the node's own sessions (left-truncated
//!   sessions of unknown age left out, as `hazardserve fit` does); `None` when S never reaches
//!   one half.
//! * **Current age**: when the node's last session is censored at the end of the node's
//!   observation (the node was still up when the trace ended), its age then: entry age plus
//!   observed duration. `None` when the node was down at the end.
//! * **Shrinkage weight**: with the beta-process estimator (Hjort 1990) the weight of the node's
//!   own data against the pooled curve, `w = n / (n + M)` (n = the node's sessions, M = the
//!   prior strength in virtual sessions chosen by cross-validation); with the gamma-frailty
//!   estimator the posterior mean frailty `z = E[Z | data]` (above 1: riskier than the fleet).
//!   The estimator is the one `hazardserve priors export --shrinkage auto` selects.
//! * **Request explanations**: the store keeps each request's outcome, not the policy's
//!   reasoning. The request screen re-runs the single (policy, window, seed, parameter point)
//!   run of the selected request from the run's stored scenario with the engine's decision log
//!   on ([`ReplayConfig::decision_log`]), keeps the decisions about that request (candidates
//!   priced only for it) and checks that the re-run reproduces the stored record.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;

use anyhow::{anyhow, Context};

use super::app::Msg;
use crate::fit::{self, GroupFit};
use crate::policy::analysis::{trigger_rows, TriggerRow, TriggerScenario, DEFAULT_UPTIMES_S};
use crate::policy::{
    ClusterView, ConditionalSurvival, Explanation, NodeIdx, Outcome, Policy, PolicyKind,
    RequestView,
};
use crate::replay::{simulate_with, ReplayConfig};
use crate::scenario::{self, Scenario, ScenarioConfig};
use crate::store::{Store, StoreError};
use crate::survival::km::KmFit;
use crate::survival::parametric::hazard_shape_test;
use crate::survival::priors::{fit_priors, Priors, PriorsEstimator, PriorsMeta, PriorsOptions};
use crate::survival::shrinkage::ShrinkageOptions;
use crate::survival::{SurvivalData, Z_95};

/// Bins of a node's availability strip over the source's observation span.
pub const STRIP_BINS: usize = 480;

/// Value of a strip bin outside the node's own observation.
pub const STRIP_UNOBSERVED: u8 = 255;

/// Value of a strip bin where the node was up the whole bin (0 = down the whole bin).
pub const STRIP_FULL: u8 = 200;

/// At most this many requests are listed per policy (the most eventful first).
pub const REQUEST_LIMIT: usize = 500;

/// Context sizes (tokens) the trigger screen steps through with `+`/`-`.
pub const TRIGGER_CONTEXTS: [u64; 8] = [500, 1000, 2000, 4500, 8000, 16_000, 32_000, 64_000];

/// Node key meaning "the pooled curve" in trigger jobs.
pub const POOLED: &str = "(pooled)";

/// Decisions kept by a re-run at most (memory bound; later decisions are not explained).
const DECISION_CAP: usize = 1_000_000;

/// Quantile levels of the completion-time CDFs.
const CDF_LEVELS: usize = 50;

/// What a store looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreState {
    /// No store at the path.
    Missing,
    /// A store without sources.
    Empty,
    /// At least one source.
    Ready,
}

/// One row of the `sources` table.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRow {
    /// Source name.
    pub source: String,
    /// Adapter that parsed it.
    pub adapter: String,
    /// Kind (`spot-lifetime`, `hpc`, `llm-requests`, ...).
    pub kind: String,
    /// `utc` (Unix seconds) or `relative` clock.
    pub time_base: String,
    /// Nodes.
    pub nodes: i64,
    /// Up-sessions.
    pub sessions: i64,
    /// Sessions ended by an event.
    pub events: i64,
    /// Censored sessions.
    pub censored: i64,
    /// Left-truncated sessions.
    pub left_truncated: i64,
    /// Requests (workload sources).
    pub requests: i64,
    /// Rejected records.
    pub rejects: i64,
    /// Start of observation (source clock, seconds).
    pub observation_start: f64,
    /// End of observation (source clock, seconds).
    pub observation_end: f64,
}

impl SourceRow {
    /// True for a request workload (no nodes).
    pub fn is_workload(&self) -> bool {
        self.nodes == 0 && self.requests > 0
    }

    /// Share of censored sessions.
    pub fn censored_share(&self) -> f64 {
        self.censored as f64 / self.sessions.max(1) as f64
    }

    /// Share of left-truncated sessions.
    pub fn truncated_share(&self) -> f64 {
        self.left_truncated as f64 / self.sessions.max(1) as f64
    }

    /// Length of the observation, seconds.
    pub fn span_s(&self) -> f64 {
        (self.observation_end - self.observation_start).max(0.0)
    }
}

/// One stored replay run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// Run id.
    pub run_id: String,
    /// Availability source of the nodes.
    pub nodes_source: String,
    /// Workload source.
    pub workload_source: String,
    /// Windows replayed.
    pub windows: i64,
    /// Seeds (JSON text as stored).
    pub seeds: String,
    /// Priors cutoff (trace clock, seconds).
    pub cutoff_s: f64,
}

/// The store at a glance: its sources and runs (newest run first).
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// Missing, empty or ready.
    pub state: StoreState,
    /// The store directory, as given.
    pub store: String,
    /// Every source, by name.
    pub sources: Vec<SourceRow>,
    /// Every replay run, newest first.
    pub runs: Vec<RunRow>,
}

/// The pooled hazard-shape fit of a source (the `hazardserve fit` verdict).
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `decreasing`, `roughly constant`, `increasing` or `n/a (...)`.
    pub verdict: String,
    /// Weibull shape k.
    pub shape: Option<f64>,
    /// 95 % CI of k.
    pub shape_ci: Option<(f64, f64)>,
    /// Weibull scale, seconds.
    pub scale_s: Option<f64>,
    /// Likelihood-ratio p-value against the exponential.
    pub p_value: Option<f64>,
    /// Pooled Kaplan-Meier median, seconds.
    pub median_s: Option<f64>,
    /// Sessions used.
    pub sessions: usize,
}

impl Verdict {
    fn from_fit(g: &GroupFit) -> Verdict {
        Verdict {
            verdict: g.verdict.clone(),
            shape: g.weibull_shape,
            shape_ci: g.weibull_shape_lo.zip(g.weibull_shape_hi),
            scale_s: g.weibull_scale_s,
            p_value: g.lr_p_value,
            median_s: g.median_s,
            sessions: g.sessions,
        }
    }
}

/// A step curve `S(t) = s[i]` for `t[i] <= t < t[i+1]`, 1 before `t[0]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Steps {
    /// Step times, ascending.
    pub t: Vec<f64>,
    /// Survival from each step on.
    pub s: Vec<f64>,
}

impl Steps {
    /// S(x) by step lookup.
    pub fn at(&self, x: f64) -> f64 {
        match self.t.partition_point(|&v| v <= x).checked_sub(1) {
            Some(i) => self.s.get(i).copied().unwrap_or(1.0),
            None => 1.0,
        }
    }

    /// The last step time, 0 when empty.
    pub fn last_time(&self) -> f64 {
        self.t.last().copied().unwrap_or(0.0)
    }
}

/// The pooled Kaplan-Meier curve of a source with its 95 % log(-log) band.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PooledCurve {
    /// The curve.
    pub km: Steps,
    /// Lower 95 % bound at each step.
    pub lo: Vec<f64>,
    /// Upper 95 % bound at each step.
    pub hi: Vec<f64>,
}

impl PooledCurve {
    /// (lower, upper) 95 % bound at `x` (1, 1 before the first step).
    pub fn band_at(&self, x: f64) -> (f64, f64) {
        match self.km.t.partition_point(|&v| v <= x).checked_sub(1) {
            Some(i) => (
                self.lo.get(i).copied().unwrap_or(1.0),
                self.hi.get(i).copied().unwrap_or(1.0),
            ),
            None => (1.0, 1.0),
        }
    }
}

/// One session of a node as ages: entered at `entry`, left at `exit`, ended by an event or not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AgeSpan {
    /// Age at the start of observation, seconds.
    pub entry: f64,
    /// Age at the end of observation, seconds.
    pub exit: f64,
    /// Ended by a failure (false: censored).
    pub event: bool,
}

/// One node of a source with everything the node and survival screens show.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeData {
    /// Node key.
    pub id: String,
    /// Sessions used for the survival fit.
    pub sessions: usize,
    /// Of which ended by an event.
    pub events: usize,
    /// Kaplan-Meier median up-time, seconds (module docs).
    pub median_s: Option<f64>,
    /// Age at the end of observation when still up (module docs).
    pub current_age_s: Option<f64>,
    /// Shrinkage weight `w` or frailty `z` (module docs).
    pub weight: Option<f64>,
    /// The node's own Kaplan-Meier curve.
    pub km: Steps,
    /// The node's sessions as ages.
    pub spans: Vec<AgeSpan>,
    /// Node-level Weibull shape with its 95 % CI and verdict, when the node has 3+ events.
    pub weibull: Option<(f64, f64, f64, String)>,
    /// Availability strip: [`STRIP_BINS`] bins over the source's span, up-fraction scaled to
    /// [`STRIP_FULL`], [`STRIP_UNOBSERVED`] outside the node's observation.
    pub strip: Vec<u8>,
    /// Strip bins where a censored session ends.
    pub censor_bins: Vec<u16>,
}

/// Shrinkage hyper-parameters of a source's priors.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShrinkageInfo {
    /// `beta`, `frailty` or `none`.
    pub estimator: String,
    /// Beta-process prior strength M.
    pub m: Option<f64>,
    /// Frailty variance theta.
    pub theta: Option<f64>,
}

/// One availability source, loaded and fitted.
#[derive(Debug, Clone)]
pub struct SourceData {
    /// Source name.
    pub source: String,
    /// `utc` or `relative`.
    pub time_base: String,
    /// Observation span (source clock, seconds).
    pub span: (f64, f64),
    /// Nodes, sorted by id.
    pub nodes: Vec<NodeData>,
    /// Pooled curve with its band.
    pub pooled: PooledCurve,
    /// Pooled hazard-shape fit.
    pub verdict: Option<Verdict>,
    /// Shrinkage of the node curves.
    pub shrinkage: ShrinkageInfo,
    /// The priors (shrunk node curves, pooled curve), when the fit succeeded.
    pub priors: Option<Priors>,
    /// Why there are no priors.
    pub priors_error: Option<String>,
    /// Left-truncated sessions of unknown age left out of the fits.
    pub excluded_truncated: usize,
    /// Length of the node-id prefix shared by every node up to a `/` (elided on screen).
    pub id_prefix: usize,
}

impl SourceData {
    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&NodeData> {
        self.nodes
            .binary_search_by(|n| n.id.as_str().cmp(id))
            .ok()
            .and_then(|i| self.nodes.get(i))
    }

    /// A node id without the shared prefix.
    pub fn short_id<'a>(&self, id: &'a str) -> &'a str {
        id.get(self.id_prefix..)
            .filter(|s| !s.is_empty())
            .unwrap_or(id)
    }
}

/// A metric of a policy with its 95 % bootstrap CI.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Metric {
    /// The value.
    pub value: Option<f64>,
    /// The CI.
    pub ci: Option<(f64, f64)>,
}

/// One policy of a run's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRow {
    /// Display name (`hazard --overlap` for the overlap point of `hazard`).
    pub name: String,
    /// Stored policy name.
    pub policy: String,
    /// Stored parameter point (`default` or `overlap`).
    pub param: String,
    /// Mean completion time, seconds.
    pub mean: Metric,
    /// Median completion time.
    pub p50: Metric,
    /// 99th percentile completion time.
    pub p99: Metric,
    /// Median TTFT.
    pub ttft_p50: Metric,
    /// SLO attainment.
    pub slo: Metric,
    /// Goodput, tokens/s.
    pub goodput: Metric,
    /// Unplanned interruptions per run.
    pub interruptions: Metric,
    /// Planned migrations per run.
    pub migrations: Metric,
    /// Fraction of the fastest-to-oracle gap closed.
    pub gap_closed: Metric,
    /// Requests over all runs.
    pub requests: u64,
    /// Completed requests over all runs.
    pub completed: u64,
    /// Completion-time CDF: (seconds, share of all requests completed by then).
    pub cdf: Vec<(f64, f64)>,
}

/// A stored replay run with its comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayData {
    /// The run.
    pub run: RunRow,
    /// Every run id of the store, newest first.
    pub runs: Vec<String>,
    /// The comparison, in its stored order.
    pub rows: Vec<PolicyRow>,
}

/// One stored request outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Window index.
    pub window: i64,
    /// Seed.
    pub seed: u64,
    /// Index of the request in its run.
    pub request: u64,
    /// Workload id.
    pub request_id: u64,
    /// Arrival, seconds after the window start.
    pub arrival_s: f64,
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// First node.
    pub first_node: Option<String>,
    /// Final node.
    pub final_node: Option<String>,
    /// Stints.
    pub nodes_visited: u32,
    /// Time to first token, seconds.
    pub ttft_s: Option<f64>,
    /// Completion time, seconds.
    pub completion_s: Option<f64>,
    /// Unplanned interruptions.
    pub interruptions: u32,
    /// Planned migrations.
    pub migrations: u32,
    /// SLO met.
    pub slo_met: bool,
    /// Why it was dropped, if it was.
    pub dropped: Option<String>,
}

/// The `replay_requests` columns that [`request_row`] reads, in its order.
const REQUEST_COLUMNS: &str = "\"window\", seed, request, request_id, arrival_s, prompt_tokens, output_tokens, first_node, final_node, nodes_visited, ttft_s, completion_s, interruptions, planned_migrations, slo_met, dropped";

/// One [`RequestRow`] from a row selected with [`REQUEST_COLUMNS`].
fn request_row(r: &duckdb::Row<'_>) -> duckdb::Result<RequestRow> {
    Ok(RequestRow {
        window: r.get(0)?,
        seed: r.get(1)?,
        request: r.get(2)?,
        request_id: r.get(3)?,
        arrival_s: r.get(4)?,
        prompt_tokens: r.get(5)?,
        output_tokens: r.get(6)?,
        first_node: r.get(7)?,
        final_node: r.get(8)?,
        nodes_visited: r.get(9)?,
        ttft_s: r.get(10)?,
        completion_s: r.get(11)?,
        interruptions: r.get(12)?,
        migrations: r.get(13)?,
        slo_met: r.get(14)?,
        dropped: r.get(15)?,
    })
}

impl RequestRow {
    /// The key of this request in its run grid.
    pub fn key(&self) -> RequestKey {
        RequestKey {
            window: self.window,
            seed: self.seed,
            request: self.request,
        }
    }
}

/// Identifies a request of a policy's runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestKey {
    /// Window index.
    pub window: i64,
    /// Seed.
    pub seed: u64,
    /// Index of the request in its run.
    pub request: u64,
}

/// The listed requests of one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestList {
    /// At most [`REQUEST_LIMIT`] requests, the most eventful first.
    pub rows: Vec<RequestRow>,
    /// Requests of the policy over all its runs.
    pub total: u64,
}

/// What happened at one moment of a request's life.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// The request arrived.
    Arrive,
    /// Placed on `node` (queued there when the placement used the queueing view).
    Place {
        /// Placed using the queueing view (pass 2): waits for a slot on the node.
        queued: bool,
    },
    /// No node could take it; it waits in the global queue.
    Wait,
    /// Its node went down.
    Fail,
    /// Migration checks that kept it where it was (consecutive checks merged).
    Stay {
        /// Checks merged into this row.
        checks: u32,
        /// Why it stayed (outcome name).
        reason: String,
    },
    /// Planned move from `node` to `target`.
    Migrate,
    /// First token.
    FirstToken,
    /// Completed.
    Done,
    /// Not finished when the window ended.
    Dropped,
}

/// A candidate node priced by a placement.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Node name.
    pub node: String,
    /// `T`, seconds.
    pub t: f64,
    /// `L` (migration: residual risk `l_j`), seconds.
    pub l: f64,
    /// `E`, seconds.
    pub e: f64,
}

/// One row of a request's timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEvent {
    /// Seconds after the request's arrival.
    pub at_s: f64,
    /// What happened.
    pub kind: EventKind,
    /// The node concerned (placed on, failed, moved from).
    pub node: Option<String>,
    /// The destination (moves and stays: the best candidate).
    pub target: Option<String>,
    /// `T`, seconds (NaN when not applicable).
    pub t: f64,
    /// `L`, seconds.
    pub l: f64,
    /// `E = T + L`, seconds.
    pub e: f64,
    /// `risk_gain`, seconds (migration).
    pub risk_gain: f64,
    /// `dT`, seconds (migration).
    pub dt: f64,
    /// `C_planned`, seconds (migration).
    pub c_planned: f64,
    /// Hysteresis `h` applied, seconds.
    pub h: f64,
    /// Nodes looked at / feasible.
    pub considered: (u32, u32),
    /// Candidates priced (placements).
    pub candidates: Vec<Candidate>,
}

impl TimelineEvent {
    fn new(at_s: f64, kind: EventKind) -> TimelineEvent {
        TimelineEvent {
            at_s,
            kind,
            node: None,
            target: None,
            t: f64::NAN,
            l: f64::NAN,
            e: f64::NAN,
            risk_gain: f64::NAN,
            dt: f64::NAN,
            c_planned: f64::NAN,
            h: f64::NAN,
            considered: (0, 0),
            candidates: Vec::new(),
        }
    }
}

/// A request's timeline with the numbers behind each decision.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestExplain {
    /// Events, in time order.
    pub events: Vec<TimelineEvent>,
    /// Seconds from arrival to completion (or to the end of the window).
    pub end_s: f64,
    /// The re-run reproduced the stored record.
    pub matches_stored: bool,
    /// How the explanation was obtained and any caveat.
    pub note: String,
}

/// Identifies a trigger table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TriggerKey {
    /// Availability source.
    pub source: String,
    /// Source node of the hop ([`POOLED`] for the pooled curve).
    pub from: String,
    /// Destination node ([`POOLED`] for the pooled curve).
    pub to: String,
    /// Context tokens resident on the source.
    pub context: u64,
}

/// The trigger analysis of one hop.
#[derive(Debug, Clone, PartialEq)]
pub struct TriggerData {
    /// (uptime seconds, risk_gain seconds, dT seconds) on a log grid from 1 s.
    pub curve: Vec<(f64, f64, f64)>,
    /// The rows at [`DEFAULT_UPTIMES_S`].
    pub rows: Vec<TriggerRow>,
    /// Hysteresis `h` of the design's parameters, seconds.
    pub h: f64,
    /// Destination uptime, seconds.
    pub dest_age_s: f64,
    /// Tokens still expected.
    pub remaining: u64,
}

/// A unit of loading work. Equal jobs produce equal results, so a job is also its result's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Job {
    /// The sources and runs of the store.
    Overview,
    /// The pooled hazard-shape verdict of one source (background work for the sources list).
    Verdict(String),
    /// An availability source: nodes, curves, priors.
    Source(String),
    /// A replay run (`None`: the latest).
    Replay(Option<String>),
    /// The listed requests of one policy (display name) of a run.
    Requests {
        /// Run id.
        run: String,
        /// Policy display name.
        policy: String,
    },
    /// The timeline of one request (re-runs its window).
    Explain {
        /// Run id.
        run: String,
        /// Policy display name.
        policy: String,
        /// The request.
        key: RequestKey,
    },
    /// Risk gain against uptime for a hop.
    Trigger(TriggerKey),
}

impl Job {
    /// What the spinner says while the job runs.
    pub fn describe(&self) -> String {
        match self {
            Job::Overview => "reading the store".into(),
            Job::Verdict(s) => format!("fitting the hazard shape of {s}"),
            Job::Source(s) => format!("loading and fitting {s}"),
            Job::Replay(Some(r)) => format!("loading run {r}"),
            Job::Replay(None) => "loading the latest run".into(),
            Job::Requests { policy, .. } => format!("listing requests of {policy}"),
            Job::Explain { key, .. } => format!(
                "re-running window {} (seed {}) to explain request #{}",
                key.window, key.seed, key.request
            ),
            Job::Trigger(k) => format!("pricing the trigger at {} tokens", k.context),
        }
    }

    /// Background jobs run only when no interactive job waits.
    pub fn is_background(&self) -> bool {
        matches!(self, Job::Verdict(_))
    }

    /// Jobs of which only the newest matters (older ones are dropped when a newer one waits).
    fn supersedable(&self) -> Option<u8> {
        match self {
            Job::Explain { .. } => Some(0),
            Job::Trigger(_) => Some(1),
            Job::Source(_) => Some(2),
            _ => None,
        }
    }
}

/// The result of a [`Job`].
#[derive(Debug, Clone)]
pub enum Loaded {
    /// [`Job::Overview`].
    Overview(Overview),
    /// [`Job::Verdict`].
    Verdict(Verdict),
    /// [`Job::Source`].
    Source(Arc<SourceData>),
    /// [`Job::Replay`]: `None` when the store has no runs.
    Replay(Option<Arc<ReplayData>>),
    /// [`Job::Requests`].
    Requests(Arc<RequestList>),
    /// [`Job::Explain`].
    Explain(Arc<RequestExplain>),
    /// [`Job::Trigger`].
    Trigger(Arc<TriggerData>),
}

/// Executes jobs against one store, caching what later jobs reuse (fitted sources, scenarios).
pub struct Loader {
    root: PathBuf,
    sources: HashMap<String, Arc<SourceData>>,
    scenarios: HashMap<String, Arc<Scenario>>,
}

fn sql_err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow!("{e}")
}

impl Loader {
    /// A loader of the store at `root` (nothing is opened yet).
    pub fn new(root: &Path) -> Loader {
        Loader {
            root: root.to_path_buf(),
            sources: HashMap::new(),
            scenarios: HashMap::new(),
        }
    }

    fn store(&self) -> anyhow::Result<Store> {
        Ok(Store::open(&self.root)?)
    }

    /// Runs one job; errors are rendered as one line with their causes.
    pub fn run(&mut self, job: &Job) -> Result<Loaded, String> {
        if *job == Job::Overview && super::fault("tui-loader-panic") {
            panic!("injected loader fault");
        }
        let r = match job {
            Job::Overview => self.overview().map(Loaded::Overview),
            Job::Verdict(s) => self.verdict(s).map(Loaded::Verdict),
            Job::Source(s) => self.source(s).map(Loaded::Source),
            Job::Replay(run) => self
                .replay(run.as_deref())
                .map(|r| Loaded::Replay(r.map(Arc::new))),
            Job::Requests { run, policy } => self
                .requests(run, policy)
                .map(|r| Loaded::Requests(Arc::new(r))),
            Job::Explain { run, policy, key } => self
                .explain(run, policy, *key)
                .map(|r| Loaded::Explain(Arc::new(r))),
            Job::Trigger(k) => self.trigger(k).map(|r| Loaded::Trigger(Arc::new(r))),
        };
        r.map_err(|e| {
            let mut msg = e.to_string();
            for cause in e.chain().skip(1) {
                msg.push_str(&format!(": {cause}"));
            }
            msg
        })
    }

    fn overview(&self) -> anyhow::Result<Overview> {
        let store_label = self.root.display().to_string();
        let store = match Store::open(&self.root) {
            Ok(s) => s,
            Err(StoreError::Missing(_)) => {
                return Ok(Overview {
                    state: StoreState::Missing,
                    store: store_label,
                    sources: Vec::new(),
                    runs: Vec::new(),
                })
            }
            Err(e) => return Err(e.into()),
        };
        let cat = store.query()?;
        let conn = cat.connection();
        let mut stmt = conn.prepare(
            "SELECT source, adapter, kind, time_base, nodes, sessions, events, censored, left_truncated, requests, rejects, observation_start, observation_end FROM sources ORDER BY source",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(SourceRow {
                source: r.get(0)?,
                adapter: r.get(1)?,
                kind: r.get(2)?,
                time_base: r.get(3)?,
                nodes: r.get(4)?,
                sessions: r.get(5)?,
                events: r.get(6)?,
                censored: r.get(7)?,
                left_truncated: r.get(8)?,
                requests: r.get(9)?,
                rejects: r.get(10)?,
                observation_start: r.get(11)?,
                observation_end: r.get(12)?,
            })
        })?;
        let mut sources = Vec::new();
        for row in rows {
            sources.push(row?);
        }
        let runs = list_runs(&store)?;
        Ok(Overview {
            state: if sources.is_empty() {
                StoreState::Empty
            } else {
                StoreState::Ready
            },
            store: store_label,
            sources,
            runs,
        })
    }

    fn verdict(&self, source: &str) -> anyhow::Result<Verdict> {
        if let Some(d) = self.sources.get(source) {
            if let Some(v) = &d.verdict {
                return Ok(v.clone());
            }
        }
        let store = self.store()?;
        let data = fit::load_sessions(&store, source, None, false)?;
        if data.sessions.is_empty() {
            return Ok(no_sessions_verdict());
        }
        let fits = fit::fit_groups(&data, None)?;
        fits.first()
            .map(Verdict::from_fit)
            .context("the fit returned no group")
    }

    fn source(&mut self, source: &str) -> anyhow::Result<Arc<SourceData>> {
        if let Some(d) = self.sources.get(source) {
            return Ok(d.clone());
        }
        let store = self.store()?;
        let d = Arc::new(load_source(&store, source)?);
        self.sources.insert(source.to_string(), d.clone());
        Ok(d)
    }

    fn replay(&self, run: Option<&str>) -> anyhow::Result<Option<ReplayData>> {
        let store = self.store()?;
        let runs = list_runs(&store)?;
        let info = match run {
            Some(id) => runs
                .iter()
                .find(|r| r.run_id == id)
                .cloned()
                .with_context(|| {
                    let ids: Vec<&str> = runs.iter().map(|r| r.run_id.as_str()).collect();
                    format!(
                        "no run {id:?} in the store (runs: {})",
                        if ids.is_empty() {
                            "none".to_string()
                        } else {
                            ids.join(", ")
                        }
                    )
                })?,
            None => match runs.first() {
                Some(r) => r.clone(),
                None => return Ok(None),
            },
        };
        let summary = scenario::load_summary(&store, &info.run_id)?;
        let cat = store.query()?;
        let levels: Vec<String> = (0..=CDF_LEVELS)
            .map(|i| format!("{}", i as f64 / CDF_LEVELS as f64))
            .collect();
        let sql = format!(
            "SELECT policy, param, count(*), count(completion_s), CAST(quantile_cont(completion_s, [{}]) AS VARCHAR) FROM replay_requests WHERE run_id = ? GROUP BY policy, param",
            levels.join(", ")
        );
        let mut stmt = cat.connection().prepare(&sql)?;
        let rows = stmt.query_map([info.run_id.as_str()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, Option<String>>(4)?,
            ))
        })?;
        let mut cdfs: HashMap<(String, String), (u64, u64, Vec<f64>)> = HashMap::new();
        for row in rows {
            let (policy, param, n, done, q) = row?;
            let values: Vec<f64> = q
                .as_deref()
                .unwrap_or("")
                .trim_matches(|c| c == '[' || c == ']')
                .split(',')
                .filter_map(|x| x.trim().parse::<f64>().ok())
                .collect();
            cdfs.insert(
                (policy, param),
                (n.max(0) as u64, done.max(0) as u64, values),
            );
        }
        let metric = |v: &serde_json::Value, k: &str| Metric {
            value: v.get(k).and_then(|x| x.as_f64()),
            ci: v
                .get(format!("{k}_ci"))
                .and_then(|c| Some((c.get(0)?.as_f64()?, c.get(1)?.as_f64()?))),
        };
        let mut rows = Vec::new();
        for s in &summary {
            let (policy, param) = (
                s.label.kind.name().to_string(),
                s.label
                    .param
                    .clone()
                    .unwrap_or_else(|| "default".to_string()),
            );
            let (requests, completed, q) = cdfs
                .get(&(policy.clone(), param.clone()))
                .cloned()
                .unwrap_or_default();
            let share = completed as f64 / requests.max(1) as f64;
            let cdf = q
                .iter()
                .enumerate()
                .map(|(i, &x)| (x, share * i as f64 / CDF_LEVELS as f64))
                .collect();
            let v = &s.to_json();
            rows.push(PolicyRow {
                name: s.label.to_string(),
                policy,
                param,
                mean: metric(v, "mean_completion_s"),
                p50: metric(v, "p50_completion_s"),
                p99: metric(v, "p99_completion_s"),
                ttft_p50: metric(v, "ttft_p50_s"),
                slo: metric(v, "slo_attainment"),
                goodput: metric(v, "slo_goodput"),
                interruptions: metric(v, "unplanned_interruptions"),
                migrations: metric(v, "planned_migrations"),
                gap_closed: metric(v, "gap_closed"),
                requests,
                completed,
                cdf,
            });
        }
        Ok(Some(ReplayData {
            run: info,
            runs: runs.into_iter().map(|r| r.run_id).collect(),
            rows,
        }))
    }

    fn requests(&self, run: &str, display: &str) -> anyhow::Result<RequestList> {
        let (policy, param) = split_display(display);
        let store = self.store()?;
        let cat = store.query()?;
        let conn = cat.connection();
        let total: i64 = conn
            .query_row(
                "SELECT count(*) FROM replay_requests WHERE run_id = ? AND policy = ? AND param = ?",
                [run, policy.as_str(), param.as_str()],
                |r| r.get(0),
            )
            .map_err(sql_err)?;
        let mut stmt = conn.prepare(&format!(
            "SELECT {REQUEST_COLUMNS} \
             FROM replay_requests WHERE run_id = ? AND policy = ? AND param = ? \
             ORDER BY interruptions + planned_migrations DESC, completion_s DESC NULLS FIRST, \"window\", seed, request LIMIT {REQUEST_LIMIT}"
        ))?;
        let rows = stmt.query_map([run, policy.as_str(), param.as_str()], request_row)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        Ok(RequestList {
            rows: out,
            total: total.max(0) as u64,
        })
    }

    fn scenario(&mut self, store: &Store, run: &str) -> anyhow::Result<Arc<Scenario>> {
        if let Some(s) = self.scenarios.get(run) {
            return Ok(s.clone());
        }
        let cat = store.query()?;
        let config: String = cat
            .connection()
            .query_row("SELECT config FROM runs WHERE run_id = ?", [run], |r| {
                r.get(0)
            })
            .map_err(|e| anyhow!("run {run}: {e}"))?;
        let cfg = ScenarioConfig::from_toml(&config, &format!("scenario of {run}"))
            .map_err(anyhow::Error::msg)?;
        let sc = Arc::new(
            scenario::build(store, &cfg)
                .with_context(|| format!("rebuilding the scenario of {run}"))?,
        );
        self.scenarios.insert(run.to_string(), sc.clone());
        Ok(sc)
    }

    fn explain(
        &mut self,
        run: &str,
        display: &str,
        key: RequestKey,
    ) -> anyhow::Result<RequestExplain> {
        let (policy_name, param) = split_display(display);
        let store = self.store()?;
        let stored = stored_request(&store, run, &policy_name, &param, key)?;
        let sc = self.scenario(&store, run)?;
        let kind: PolicyKind = policy_name.parse().map_err(|e| anyhow!("run {run}: {e}"))?;
        let specs = sc.grid.specs(&sc.config);
        let spec = specs
            .iter()
            .find(|s| {
                s.policy == kind
                    && s.window_index as i64 == key.window
                    && s.seed == key.seed
                    && (s.param_label == param || (s.param_label.is_empty() && param == "default"))
            })
            .with_context(|| {
                format!(
                    "the scenario of {run} has no run of {display} in window {} with seed {} (was the store changed since?)",
                    key.window, key.seed
                )
            })?;
        let cfg = ReplayConfig {
            decision_log: DECISION_CAP,
            ..sc.config
        };
        let mut policy = Recording {
            inner: crate::policy::build(spec.policy, spec.params, spec.policy_seed()),
            target: key.request,
        };
        let out = simulate_with(&sc.cluster, &sc.workload, &cfg, spec, &mut policy)?;
        let rec = out
            .records
            .get(key.request as usize)
            .with_context(|| format!("the re-run has no request #{}", key.request))?;
        let names: Vec<&str> = sc.cluster.nodes.iter().map(|n| n.name.as_str()).collect();
        let name = |i: Option<NodeIdx>| i.and_then(|i| names.get(i).map(|s| s.to_string()));
        let matches = rec.completion_s == stored.completion_s
            && rec.interruptions == stored.interruptions
            && rec.planned_migrations == stored.migrations
            && name(rec.first_node.map(|x| x as usize)) == stored.first_node
            && name(rec.final_node.map(|x| x as usize)) == stored.final_node;
        let window_start = spec.window.start_us;
        let arrival = stored.arrival_s;
        let at = |us: i64| (us - window_start) as f64 / 1e6 - arrival;
        let end_s = match stored.completion_s {
            Some(c) => c,
            None => (spec.window.length_s() - arrival).max(0.0),
        };
        let mut events = vec![TimelineEvent::new(0.0, EventKind::Arrive)];
        let mut capped = out.decisions.len() >= DECISION_CAP;
        let mut seen_any = false;
        for d in out
            .decisions
            .iter()
            .filter(|d| d.explanation.request == key.request)
        {
            seen_any = true;
            let x = &d.explanation;
            let mut ev = TimelineEvent::new(at(d.time_us), EventKind::Arrive);
            ev.t = x.t;
            ev.l = x.l;
            ev.e = x.e;
            ev.considered = (x.considered, x.feasible);
            ev.h = x.hysteresis_s;
            match (x.decision, x.outcome) {
                (crate::policy::policies::Decision::Place, Outcome::Placed) => {
                    ev.kind = EventKind::Place { queued: d.queueing };
                    ev.node = name(x.chosen);
                    ev.candidates = x
                        .candidates
                        .iter()
                        .map(|c| Candidate {
                            node: name(Some(c.node)).unwrap_or_else(|| c.node.to_string()),
                            t: c.t,
                            l: c.l,
                            e: c.e,
                        })
                        .collect();
                }
                (crate::policy::policies::Decision::Place, _) => {
                    ev.kind = EventKind::Wait;
                }
                (crate::policy::policies::Decision::Migrate, Outcome::Migrate) => {
                    ev.kind = EventKind::Migrate;
                    ev.node = name(x.from);
                    ev.target = name(x.chosen);
                    ev.risk_gain = x.risk_gain;
                    ev.dt = x.dt;
                    ev.c_planned = x.c_planned;
                    ev.l = x.l;
                }
                (crate::policy::policies::Decision::Migrate, outcome) => {
                    let reason = serde_json::to_value(outcome)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_else(|| format!("{outcome:?}"));
                    ev.node = name(x.from);
                    ev.target = name(x.target);
                    ev.risk_gain = x.risk_gain;
                    ev.dt = x.dt;
                    ev.c_planned = x.c_planned;
                    // Merge with the previous row when it is the same kind of stay.
                    if let Some(prev) = events.last_mut() {
                        if let EventKind::Stay { checks, reason: r } = &mut prev.kind {
                            if *r == reason {
                                *checks += 1;
                                if ev.risk_gain > prev.risk_gain || prev.risk_gain.is_nan() {
                                    prev.risk_gain = ev.risk_gain;
                                    prev.dt = ev.dt;
                                    prev.target = ev.target.clone();
                                    prev.c_planned = ev.c_planned;
                                }
                                continue;
                            }
                        }
                    }
                    ev.kind = EventKind::Stay { checks: 1, reason };
                }
            }
            events.push(ev);
        }
        // Failures: a stint on a node ends early when the node's session ends first.
        let stints: Vec<(f64, String)> = events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::Place { .. } => e.node.clone().map(|n| (e.at_s, n)),
                EventKind::Migrate => e.target.clone().map(|n| (e.at_s, n)),
                _ => None,
            })
            .collect();
        let mut failures = Vec::new();
        for (k, (start, node)) in stints.iter().enumerate() {
            let stint_end = stints.get(k + 1).map_or(end_s, |s| s.0);
            let Some(n) = sc.cluster.nodes.iter().find(|n| &n.name == node) else {
                continue;
            };
            let t_abs = window_start + ((arrival + start) * 1e6).round() as i64;
            if let Some(s) = n
                .sessions
                .iter()
                .find(|s| s.start_us <= t_abs && t_abs < s.end_us)
            {
                let fail_at = at(s.end_us);
                // A stint followed by another ends when the node fails or at a planned move;
                // the last one ends at completion.
                let failed = if k + 1 < stints.len() {
                    fail_at <= stint_end + 1e-6
                } else {
                    fail_at < stint_end - 1e-9
                };
                if failed {
                    let mut ev = TimelineEvent::new(fail_at, EventKind::Fail);
                    ev.node = Some(node.clone());
                    failures.push(ev);
                }
            }
        }
        events.extend(failures);
        if let Some(t) = stored.ttft_s {
            events.push(TimelineEvent::new(t, EventKind::FirstToken));
        }
        let mut last = TimelineEvent::new(
            end_s,
            if stored.completion_s.is_some() {
                EventKind::Done
            } else {
                EventKind::Dropped
            },
        );
        last.node = stored.final_node.clone();
        events.push(last);
        // Time order; at equal times a failure precedes the re-placement it causes.
        let rank = |k: &EventKind| match k {
            EventKind::Arrive => 0,
            EventKind::Fail => 1,
            EventKind::Done | EventKind::Dropped => 3,
            _ => 2,
        };
        events.sort_by(|a, b| {
            a.at_s
                .total_cmp(&b.at_s)
                .then(rank(&a.kind).cmp(&rank(&b.kind)))
        });
        if seen_any {
            capped = false;
        }
        let mut note = format!(
            "Re-ran window {}, seed {} with the decision log on",
            key.window, key.seed
        );
        if matches {
            note.push_str(": it reproduces the stored record.");
        } else {
            note.push_str(
                ": WARNING, it differs from the stored record (did the store change since the run?).",
            );
        }
        if capped {
            note.push_str(&format!(
                "; the decision log stopped after {DECISION_CAP} decisions, before this request"
            ));
        }
        Ok(RequestExplain {
            events,
            end_s,
            matches_stored: matches,
            note,
        })
    }

    fn trigger(&mut self, k: &TriggerKey) -> anyhow::Result<TriggerData> {
        let data = self.source(&k.source)?;
        let priors = data.priors.as_ref().with_context(|| {
            format!(
                "no survival curves for {}: {}",
                k.source,
                data.priors_error.as_deref().unwrap_or("the fit failed")
            )
        })?;
        let curve = |id: &str| -> Box<dyn ConditionalSurvival> {
            if id == POOLED {
                Box::new(priors.pooled_curve())
            } else {
                Box::new(priors.node_curve(id))
            }
        };
        let mut sc = TriggerScenario::design_wan();
        sc.source_curve = curve(&k.from);
        sc.dest_curve = curve(&k.to);
        let remaining = 500;
        let context = k.context.max(1);
        sc.request.done_tokens = context.saturating_sub(sc.request.prompt_tokens.min(context));
        sc.request.prompt_tokens = context - sc.request.done_tokens;
        sc.request.resident_tokens = context;
        sc.request.est_output_tokens = sc.request.done_tokens + remaining;
        let grid: Vec<f64> = (0..=120)
            .map(|i| 10f64.powf(i as f64 * 5.4 / 120.0))
            .collect();
        let curve_rows = trigger_rows(&sc, &grid, &[sc.params.hysteresis_s])
            .into_iter()
            .map(|r| (r.uptime_s, r.risk_gain, r.dt))
            .collect();
        let rows = trigger_rows(&sc, &DEFAULT_UPTIMES_S, &[sc.params.hysteresis_s]);
        Ok(TriggerData {
            curve: curve_rows,
            rows,
            h: sc.params.hysteresis_s,
            dest_age_s: sc.dest_age_s,
            remaining,
        })
    }
}

/// Splits a comparison display name into the stored (policy, param).
pub fn split_display(display: &str) -> (String, String) {
    match display.strip_suffix(" --overlap") {
        Some(base) => (base.to_string(), "overlap".to_string()),
        None => (display.to_string(), "default".to_string()),
    }
}

fn no_sessions_verdict() -> Verdict {
    Verdict {
        verdict: "n/a (no sessions)".into(),
        shape: None,
        shape_ci: None,
        scale_s: None,
        p_value: None,
        median_s: None,
        sessions: 0,
    }
}

fn list_runs(store: &Store) -> anyhow::Result<Vec<RunRow>> {
    let cat = store.query()?;
    let mut stmt = cat.connection().prepare(
        "SELECT run_id, nodes_source, workload_source, windows, seeds, cutoff_s FROM runs ORDER BY created_at DESC, run_id DESC",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(RunRow {
            run_id: r.get(0)?,
            nodes_source: r.get(1)?,
            workload_source: r.get(2)?,
            windows: r.get(3)?,
            seeds: r.get(4)?,
            cutoff_s: r.get(5)?,
        })
    })?;
    let mut out = Vec::new();
    for row in rows {
        out.push(row?);
    }
    Ok(out)
}

fn stored_request(
    store: &Store,
    run: &str,
    policy: &str,
    param: &str,
    key: RequestKey,
) -> anyhow::Result<RequestRow> {
    let cat = store.query()?;
    let conn = cat.connection();
    let window = key.window.to_string();
    let seed = key.seed.to_string();
    let request = key.request.to_string();
    conn.query_row(
        &format!(
            "SELECT {REQUEST_COLUMNS} \
             FROM replay_requests WHERE run_id = ? AND policy = ? AND param = ? AND \"window\" = CAST(? AS BIGINT) AND seed = CAST(? AS UBIGINT) AND request = CAST(? AS UBIGINT)"
        ),
        [run, policy, param, window.as_str(), seed.as_str(), request.as_str()],
        request_row,
    )
    .map_err(|e| anyhow!("request #{} of {policy} in window {} of {run}: {e}", key.request, key.window))
}

/// Wraps a policy to record every candidate of the decisions about one request only.
struct Recording {
    inner: Box<dyn Policy>,
    target: u64,
}

impl Policy for Recording {
    fn kind(&self) -> PolicyKind {
        self.inner.kind()
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        out.record_candidates = req.id == self.target;
        self.inner.place(view, req, out)
    }

    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        out.record_candidates = req.id == self.target;
        self.inner.check_migration(view, req, from, out)
    }
}

/// Length of the prefix shared by every id, cut after its last `/` (0 when none).
pub fn shared_prefix(ids: &[String]) -> usize {
    let Some(first) = ids.first() else {
        return 0;
    };
    let mut n = first.len();
    for id in &ids[1..] {
        n = n.min(
            first
                .bytes()
                .zip(id.bytes())
                .take_while(|(a, b)| a == b)
                .count(),
        );
    }
    first
        .get(..n)
        .and_then(|p| p.rfind('/'))
        .map_or(0, |i| i + 1)
}

/// Loads and fits one availability source.
pub fn load_source(store: &Store, source: &str) -> anyhow::Result<SourceData> {
    let data = fit::load_sessions(store, source, None, false)?;
    let cat = store.query()?;
    let conn = cat.connection();
    let (obs_start, obs_end): (f64, f64) = conn
        .query_row(
            "SELECT observation_start, observation_end FROM sources WHERE source = ?",
            [source],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .map_err(sql_err)?;
    let span_len = (obs_end - obs_start).max(1e-9);
    let bin_of = |t: f64| -> f64 {
        ((t - obs_start) / span_len * STRIP_BINS as f64).clamp(0.0, STRIP_BINS as f64)
    };

    // Observation windows of the nodes.
    let mut observed: HashMap<String, (f64, f64)> = HashMap::new();
    {
        let mut stmt =
            conn.prepare("SELECT node_id, observed_from, observed_to FROM nodes WHERE source = ?")?;
        let rows = stmt.query_map([source], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, f64>(1)?,
                r.get::<_, f64>(2)?,
            ))
        })?;
        for row in rows {
            let (id, a, b) = row?;
            observed.insert(id, (a, b));
        }
    }
    // Availability strips from every session (truncated ones included).
    let n = data.node_ids.len();
    let index: HashMap<&str, usize> = data
        .node_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    let mut up = vec![vec![0f64; STRIP_BINS]; n];
    let mut censor_bins: Vec<Vec<u16>> = vec![Vec::new(); n];
    {
        let mut stmt =
            conn.prepare("SELECT node_id, start, \"end\", event FROM sessions WHERE source = ?")?;
        let rows = stmt.query_map([source], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, f64>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, i8>(3)?,
            ))
        })?;
        for row in rows {
            let (id, start, end, event) = row?;
            let Some(&i) = index.get(id.as_str()) else {
                continue;
            };
            let (a, b) = (bin_of(start), bin_of(end));
            let mut k = a.floor() as usize;
            while (k as f64) < b && k < STRIP_BINS {
                let lo = a.max(k as f64);
                let hi = b.min(k as f64 + 1.0);
                up[i][k] += (hi - lo).max(0.0);
                k += 1;
            }
            if event == 0 {
                let c = (b.ceil() as usize).saturating_sub(1).min(STRIP_BINS - 1);
                censor_bins[i].push(c as u16);
            }
        }
    }

    // Per-node sessions as ages.
    let mut spans: Vec<Vec<AgeSpan>> = vec![Vec::new(); n];
    let mut last_end: Vec<Option<(f64, bool, f64)>> = vec![None; n];
    for s in &data.sessions {
        let i = s.node as usize;
        let exit = s.entry + (s.end - s.start);
        if let Some(v) = spans.get_mut(i) {
            v.push(AgeSpan {
                entry: s.entry,
                exit,
                event: s.event,
            });
        }
        if let Some(slot) = last_end.get_mut(i) {
            if slot.is_none_or(|(e, _, _)| s.end >= e) {
                *slot = Some((s.end, s.event, exit));
            }
        }
    }

    // Pooled curve with its band, and the verdict.
    let groups = fit::fit_groups(&data, None)?;
    let verdict = groups.first().map(Verdict::from_fit);
    let pooled = if data.sessions.is_empty() {
        PooledCurve::default()
    } else {
        let all: Vec<&AgeSpan> = spans.iter().flatten().collect();
        let exit: Vec<f64> = all.iter().map(|s| s.exit).collect();
        let ev: Vec<bool> = all.iter().map(|s| s.event).collect();
        let entry: Vec<f64> = all.iter().map(|s| s.entry).collect();
        let sd = if entry.iter().any(|&e| e > 0.0) {
            SurvivalData::new(&exit, &ev).with_entry(&entry)
        } else {
            SurvivalData::new(&exit, &ev)
        };
        let km = KmFit::fit_data(&sd)?;
        let (lo, hi) = km.view().confidence_interval(Z_95);
        PooledCurve {
            km: Steps {
                t: km.timeline().to_vec(),
                s: km.survival_values().to_vec(),
            },
            lo,
            hi,
        }
    };

    // Priors: the shrunk node curves (as `priors export --shrinkage auto` fits them).
    let (priors, priors_error) = if data.sessions.is_empty() {
        (None, Some("no usable sessions".to_string()))
    } else {
        let cutoff = data
            .sessions
            .iter()
            .map(|s| s.end)
            .fold(f64::NEG_INFINITY, f64::max)
            + 1.0;
        let meta = PriorsMeta {
            source: source.to_string(),
            cutoff_s: cutoff,
            time_base: data.time_base.clone(),
            node_ids: data.node_ids.clone(),
        };
        let popts = PriorsOptions {
            max_points: 512,
            ..PriorsOptions::default()
        };
        match fit_priors(&data.sessions, &meta, &ShrinkageOptions::default(), &popts) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        }
    };
    let shrinkage = match &priors {
        Some(p) => ShrinkageInfo {
            estimator: match p.estimator {
                PriorsEstimator::Beta => "beta",
                PriorsEstimator::Frailty => "frailty",
                PriorsEstimator::None => "none",
            }
            .to_string(),
            m: p.parameters.m,
            theta: p.parameters.theta,
        },
        None => ShrinkageInfo {
            estimator: "none".into(),
            ..ShrinkageInfo::default()
        },
    };

    let node_level_weibull = n <= 5000;
    let mut nodes = Vec::with_capacity(n);
    for (i, id) in data.node_ids.iter().enumerate() {
        let sp = spans.get(i).cloned().unwrap_or_default();
        let events = sp.iter().filter(|s| s.event).count();
        let (km, median_s, weibull) = if sp.is_empty() {
            (Steps::default(), None, None)
        } else {
            let exit: Vec<f64> = sp.iter().map(|s| s.exit).collect();
            let ev: Vec<bool> = sp.iter().map(|s| s.event).collect();
            let entry: Vec<f64> = sp.iter().map(|s| s.entry).collect();
            let sd = if entry.iter().any(|&e| e > 0.0) {
                SurvivalData::new(&exit, &ev).with_entry(&entry)
            } else {
                SurvivalData::new(&exit, &ev)
            };
            match KmFit::fit_data(&sd) {
                Ok(km) => {
                    let w = if node_level_weibull && events >= 3 {
                        hazard_shape_test(&sd).ok().map(|t| {
                            (
                                t.weibull.shape,
                                t.weibull.shape_ci.0,
                                t.weibull.shape_ci.1,
                                fit::verdict_name(t.verdict).to_string(),
                            )
                        })
                    } else {
                        None
                    };
                    (
                        Steps {
                            t: km.timeline().to_vec(),
                            s: km.survival_values().to_vec(),
                        },
                        km.median(),
                        w,
                    )
                }
                Err(_) => (Steps::default(), None, None),
            }
        };
        let obs = observed.get(id).copied().unwrap_or((obs_start, obs_end));
        let tol = (1e-3 * span_len).max(1.0);
        let current_age_s = match last_end.get(i).copied().flatten() {
            Some((end, false, exit)) if end >= obs.1 - tol => Some(exit),
            _ => None,
        };
        let weight = priors.as_ref().and_then(|p| match p.estimator {
            PriorsEstimator::Beta => p
                .parameters
                .m
                .map(|m| sp.len() as f64 / (sp.len() as f64 + m).max(1e-12)),
            PriorsEstimator::Frailty => p.node(id).and_then(|nd| nd.frailty_z),
            PriorsEstimator::None => None,
        });
        let (oa, ob) = (bin_of(obs.0), bin_of(obs.1));
        let strip: Vec<u8> = up
            .get(i)
            .map(|bins| {
                bins.iter()
                    .enumerate()
                    .map(|(k, &u)| {
                        let (lo, hi) = (k as f64, k as f64 + 1.0);
                        let covered = (hi.min(ob) - lo.max(oa)).max(0.0);
                        if covered <= 0.0 {
                            STRIP_UNOBSERVED
                        } else {
                            ((u / covered).clamp(0.0, 1.0) * STRIP_FULL as f64).round() as u8
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut cb = censor_bins.get(i).cloned().unwrap_or_default();
        cb.sort_unstable();
        cb.dedup();
        nodes.push(NodeData {
            id: id.clone(),
            sessions: sp.len(),
            events,
            median_s,
            current_age_s,
            weight,
            km,
            spans: sp,
            weibull,
            strip,
            censor_bins: cb,
        });
    }
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    let id_prefix = shared_prefix(&data.node_ids);
    Ok(SourceData {
        source: source.to_string(),
        time_base: data.time_base.clone(),
        span: (obs_start, obs_end),
        nodes,
        pooled,
        verdict,
        shrinkage,
        priors,
        priors_error,
        excluded_truncated: data.excluded_truncated,
        id_prefix,
    })
}

/// Runs a [`Loader`] on a background thread.
pub struct Worker {
    tx: Sender<Job>,
}

impl Worker {
    /// Starts the thread; results come back on `out` as [`Msg::Loaded`] (or [`Msg::Dropped`]
    /// for superseded jobs). The thread ends when the worker is dropped and its current job
    /// finishes.
    pub fn spawn(root: &Path, out: Sender<Msg>) -> anyhow::Result<Worker> {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        let loader = Loader::new(root);
        std::thread::Builder::new()
            .name(super::terminal::LOADER_THREAD.into())
            .spawn(move || worker_loop(loader, rx, out))
            .context("starting the loader thread")?;
        Ok(Worker { tx })
    }

    /// Queues a job (ignored once the thread has stopped).
    pub fn send(&self, job: Job) {
        let _ = self.tx.send(job);
    }
}

/// Picks the next job: the newest interactive one, else the oldest background one; drops
/// superseded jobs (reported on `out`).
fn next_job(queue: &mut Vec<Job>, out: &Sender<Msg>) -> Option<Job> {
    let mut newest: HashSet<u8> = HashSet::new();
    let mut keep = vec![true; queue.len()];
    for (i, j) in queue.iter().enumerate().rev() {
        if let Some(kind) = j.supersedable() {
            if !newest.insert(kind) {
                keep[i] = false;
            }
        }
    }
    let mut kept = Vec::with_capacity(queue.len());
    for (j, k) in queue.drain(..).zip(keep) {
        if k {
            kept.push(j);
        } else {
            let _ = out.send(Msg::Dropped(j));
        }
    }
    *queue = kept;
    let pos = queue
        .iter()
        .rposition(|j| !j.is_background())
        .or_else(|| (!queue.is_empty()).then_some(0))?;
    Some(queue.remove(pos))
}

fn worker_loop(mut loader: Loader, rx: Receiver<Job>, out: Sender<Msg>) {
    let mut queue: Vec<Job> = Vec::new();
    loop {
        if queue.is_empty() {
            match rx.recv() {
                Ok(j) => queue.push(j),
                Err(_) => return,
            }
        }
        while let Ok(j) = rx.try_recv() {
            queue.push(j);
        }
        let Some(job) = next_job(&mut queue, &out) else {
            continue;
        };
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| loader.run(&job)))
            .unwrap_or_else(|p| {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "unknown panic".into());
                Err(format!("internal error while {}: {what}", job.describe()))
            });
        if out.send(Msg::Loaded(job, result)).is_err() {
            return;
        }
    }
}
