//! The TUI's view models: plain structs the screens draw, and the [`LoadJob`]s that produce them.
//!
//! Every piece of data the screens show is produced by one [`LoadJob`] and delivered as one
//! [`Loaded`] value; [`super::loader::Loader`] runs jobs against the store and
//! [`super::worker::Worker`] runs a loader on a background thread. The numbers come from the
//! layers below and are re-exported here under the names the screens use: per-node statistics
//! from [`crate::fit::fit_nodes`] (its docs define median up-time, current age and shrinkage
//! weight), store rows from [`crate::queries`], request explanations from
//! [`crate::scenario::explain`].

use std::sync::Arc;

use crate::fit::{GroupFit, NodeFit};
use crate::policy::analysis::TriggerRow;
use crate::survival::priors::Priors;
use crate::sweep::CellResult;
pub use crate::sweep::{MapLayout, SweepAxis};

pub use crate::fit::{AgeSpan, KmSteps, PooledCurve};
pub use crate::queries::{RequestKey, RequestRow, RunRow, SourceRow};
pub use crate::scenario::explain::{
    Candidate, EventKind, PrefixStory, RequestExplain, TimelineEvent,
};

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
pub struct VerdictView {
    /// `decreasing`, `increasing`, `constant`, `bathtub`, `capped`, `too few events (n)` or
    /// `n/a (...)`.
    pub verdict: String,
    /// The model that decided the verdict.
    pub model: Option<String>,
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

impl VerdictView {
    /// The verdict of a pooled group fit.
    pub fn from_fit(g: &GroupFit) -> VerdictView {
        VerdictView {
            verdict: g.verdict.clone(),
            model: g.shape_model.clone(),
            shape: g.weibull_shape,
            shape_ci: g.weibull_shape_lo.zip(g.weibull_shape_hi),
            scale_s: g.weibull_scale_s,
            p_value: g.lr_p_value,
            median_s: g.median_s,
            sessions: g.sessions,
        }
    }
}

/// One node of a source with everything the node and survival screens show: its statistics
/// ([`NodeFit`], reachable through `Deref`) and its availability strip.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeData {
    /// The node's statistics ([`crate::fit::fit_nodes`]).
    pub fit: NodeFit,
    /// Availability strip: [`STRIP_BINS`] bins over the source's span, up-fraction scaled to
    /// [`STRIP_FULL`], [`STRIP_UNOBSERVED`] outside the node's observation.
    pub strip: Vec<u8>,
    /// Strip bins where a censored session ends.
    pub censor_bins: Vec<u16>,
    /// The `[[pools]]` pool the latest replay run put the node in (`None`: no pooled run reads
    /// the source, or the node is in none of its pools).
    pub pool: Option<String>,
}

impl NodeData {
    /// A node's statistics with its availability strip.
    pub fn new(fit: NodeFit, strip: Vec<u8>, censor_bins: Vec<u16>) -> NodeData {
        NodeData {
            fit,
            strip,
            censor_bins,
            pool: None,
        }
    }
}

impl std::ops::Deref for NodeData {
    type Target = NodeFit;
    fn deref(&self) -> &NodeFit {
        &self.fit
    }
}

/// Shrinkage hyper-parameters of a source's priors.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NodeShrinkage {
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
    pub verdict: Option<VerdictView>,
    /// The pooled smoothed hazard (`None` below the minimum of events, or when it fails).
    pub hazard: Option<crate::survival::hazard::SmoothedHazard>,
    /// Shrinkage of the node curves.
    pub shrinkage: NodeShrinkage,
    /// The priors (shrunk node curves, pooled curve), when the fit succeeded.
    pub priors: Option<Priors>,
    /// Why there are no priors.
    pub priors_error: Option<String>,
    /// Left-truncated sessions of unknown age left out of the fits.
    pub excluded_truncated: usize,
    /// Length of the node-id prefix shared by every node up to a `/` (elided on screen).
    pub id_prefix: usize,
    /// How sessions end, when they end in more than one way (`fit --by-cause`): per cause,
    /// its share of the ends and its cumulative incidence at the end of follow-up.
    pub causes: Vec<CauseShare>,
}

/// One end cause of a source (competing risks, Aalen-Johansen).
#[derive(Debug, Clone, PartialEq)]
pub struct CauseShare {
    /// The cause (`preempted`, `lifetime-cap`, ...).
    pub cause: String,
    /// Its share of the observed ends.
    pub share: f64,
    /// Its cumulative incidence at the end of follow-up.
    pub incidence: f64,
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
    /// Requests not finished by their window's end, per window (censored, never dropped).
    pub unfinished: Metric,
    /// Goodput, tokens/s.
    pub goodput: Metric,
    /// Unplanned interruptions per run.
    pub interruptions: Metric,
    /// Planned migrations per run.
    pub migrations: Metric,
    /// Fraction of the fastest-to-oracle gap closed.
    pub gap_closed: Metric,
    /// Forecast calibration: median of the forecast `T` over the realised service time.
    pub t_ratio: Option<f64>,
    /// Forecast calibration: Brier score of the predicted interruption probability.
    pub brier: Option<f64>,
    /// Prefix hit rate: the share of prompt tokens read from cache (prefix caching only).
    pub hit_rate: Metric,
    /// Cached prompt tokens destroyed by node ends, per window (prefix caching only).
    pub destroyed: Metric,
    /// Dollars per window (a priced fleet only).
    pub dollars: Metric,
    /// SLO-met output tokens per dollar (a priced fleet only).
    pub goodput_per_dollar: Metric,
    /// Mean dollars per window by pool (empty when unpriced).
    pub dollars_by_pool: Vec<(String, f64)>,
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
    /// Set when the comparison is a sweep cell's (a cell stores no requests and no CDFs).
    pub cell: Option<CellOrigin>,
}

/// The sweep cell a comparison comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellOrigin {
    /// Sweep id.
    pub sweep_id: String,
    /// Cell key (`axis=value,...`).
    pub key: String,
}

/// One cell of a sweep: its result ([`CellResult`], whose docs define the pairings) and its
/// comparison as the Replay screen shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepCell {
    /// The cell's result.
    pub result: CellResult,
    /// The cell's policy comparison, for the Replay screen.
    pub replay: Arc<ReplayData>,
}

/// A stored sweep laid out as the regime map ([`MapLayout`], reachable through `Deref`).
#[derive(Debug, Clone, PartialEq)]
pub struct SweepData {
    /// The sweep shown.
    pub sweep_id: String,
    /// Every sweep id of the store, newest first.
    pub sweeps: Vec<String>,
    /// Cells in grid order.
    pub cells: Vec<SweepCell>,
    /// The map: rows, columns and the cell in each slot.
    pub layout: MapLayout,
}

impl std::ops::Deref for SweepData {
    type Target = MapLayout;
    fn deref(&self) -> &MapLayout {
        &self.layout
    }
}

impl SweepData {
    /// Lays out `cells` (grid order) of sweep `sweep_id`.
    pub fn new(sweep_id: String, sweeps: Vec<String>, cells: Vec<SweepCell>) -> SweepData {
        let layout = MapLayout::of(cells.iter().map(|c| &c.result));
        SweepData {
            sweep_id,
            sweeps,
            cells,
            layout,
        }
    }

    /// The cell with this key.
    pub fn cell(&self, key: &str) -> Option<&SweepCell> {
        self.cells.iter().find(|c| c.result.key == key)
    }

    /// The (row, column) of the cell with this key.
    pub fn position(&self, key: &str) -> Option<(usize, usize)> {
        let i = self.cells.iter().position(|c| c.result.key == key)?;
        self.layout.slot_of(i)
    }
}

/// The listed requests of one policy.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestList {
    /// At most [`REQUEST_LIMIT`] requests, the most eventful first.
    pub rows: Vec<RequestRow>,
    /// Requests of the policy over all its runs.
    pub total: u64,
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
    /// The rows at [`crate::policy::analysis::DEFAULT_UPTIMES_S`].
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
pub enum LoadJob {
    /// The sources and runs of the store.
    Overview,
    /// The pooled hazard-shape verdict of one source (background work for the sources list).
    Verdict(String),
    /// An availability source: nodes, curves, priors.
    Source(String),
    /// A replay run (`None`: the latest).
    Replay(Option<String>),
    /// The listed requests of one policy of a run.
    Requests {
        /// Run id.
        run: String,
        /// The policy at its parameter point.
        policy: PolicyPoint,
    },
    /// The timeline of one request (re-runs its window).
    Explain {
        /// Run id.
        run: String,
        /// The policy at its parameter point.
        policy: PolicyPoint,
        /// The request.
        key: RequestKey,
    },
    /// Risk gain against uptime for a hop.
    Trigger(TriggerKey),
    /// A stored sweep laid out as the regime map (`None`: the latest).
    Sweep(Option<String>),
    /// Forget every cached result (the store changed); the number tells reloads apart.
    Reload(u64),
}

impl LoadJob {
    /// What the spinner says while the job runs.
    pub fn describe(&self) -> String {
        match self {
            LoadJob::Overview => "reading the store".into(),
            LoadJob::Verdict(s) => format!("fitting the hazard shape of {s}"),
            LoadJob::Source(s) => format!("loading and fitting {s}"),
            LoadJob::Replay(Some(r)) => format!("loading run {r}"),
            LoadJob::Replay(None) => "loading the latest run".into(),
            LoadJob::Requests { policy, .. } => format!("listing requests of {}", policy.name),
            LoadJob::Explain { key, .. } => format!(
                "re-running window {} (seed {}) to explain request #{}",
                key.window, key.seed, key.request
            ),
            LoadJob::Trigger(k) => format!("pricing the trigger at {} tokens", k.context),
            LoadJob::Sweep(Some(s)) => format!("loading sweep {s}"),
            LoadJob::Sweep(None) => "loading the latest sweep".into(),
            LoadJob::Reload(_) => "reloading the store".into(),
        }
    }

    /// Background jobs run only when no interactive job waits.
    pub fn is_background(&self) -> bool {
        matches!(self, LoadJob::Verdict(_))
    }

    /// Jobs of which only the newest matters (older ones are dropped when a newer one waits).
    pub(crate) fn supersedable(&self) -> Option<u8> {
        match self {
            LoadJob::Explain { .. } => Some(0),
            LoadJob::Trigger(_) => Some(1),
            LoadJob::Source(_) => Some(2),
            _ => None,
        }
    }
}

/// The result of a [`LoadJob`].
#[derive(Debug, Clone)]
pub enum Loaded {
    /// [`LoadJob::Overview`].
    Overview(Overview),
    /// [`LoadJob::Verdict`].
    Verdict(VerdictView),
    /// [`LoadJob::Source`].
    Source(Arc<SourceData>),
    /// [`LoadJob::Replay`]: `None` when the store has no runs.
    Replay(Option<Arc<ReplayData>>),
    /// [`LoadJob::Requests`].
    Requests(Arc<RequestList>),
    /// [`LoadJob::Explain`].
    Explain(Arc<RequestExplain>),
    /// [`LoadJob::Trigger`].
    Trigger(Arc<TriggerData>),
    /// [`LoadJob::Sweep`]: `None` when the store has no sweeps.
    Sweep(Option<Arc<SweepData>>),
    /// [`LoadJob::Reload`]: the caches are empty.
    Reloaded,
}

/// A policy at a parameter point, as the store keeps a run's rows (a [`PolicyRow`]'s `policy`
/// and `param`) and the comparison shows it (`name`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PolicyPoint {
    /// Display name (`hazard --overlap` for the overlap point of `hazard`).
    pub name: String,
    /// Stored policy name.
    pub policy: String,
    /// Stored parameter point (`default` or `overlap`).
    pub param: String,
}

impl PolicyPoint {
    /// The point of a comparison row.
    pub fn of(row: &PolicyRow) -> PolicyPoint {
        PolicyPoint {
            name: row.name.clone(),
            policy: row.policy.clone(),
            param: row.param.clone(),
        }
    }
}

/// Length of the prefix shared by every id, cut after its last `/` (0 when none).
pub(crate) fn shared_prefix(ids: &[String]) -> usize {
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
