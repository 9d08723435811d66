//! What one run of the replay is and what it produces: [`RunSpec`] (policy, window, seed,
//! parameter point), [`RunOutput`] (per-request records, counters, logged decisions) and its
//! summaries. Both the simulator ([`super::engine`]) and the analytic bound
//! ([`super::bound`]) produce these.

use serde::Serialize;

use crate::policy::record::DecisionInputs;
use crate::policy::{Explanation, Params, PolicyKind};

use super::input::{run_stream_seed, Window};
use super::metrics::{RequestRecord, RunMetrics, RunSummary};

/// Salt of the `random` policy's seed.
const SALT_POLICY: u64 = 0x706f_6c69_6379_0001;

/// One run of the grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSpec {
    /// Policy to build ([`simulate`]; [`simulate_with`] takes the policy's own kind).
    pub policy: PolicyKind,
    /// Window index (seeds the run's streams).
    pub window_index: usize,
    /// The window.
    pub window: Window,
    /// Seed.
    pub seed: u64,
    /// Parameter-point index.
    pub param_index: usize,
    /// Parameter-point label (empty for a single point).
    pub param_label: String,
    /// Policy constants for this run.
    pub params: Params,
    /// The window's arrival-rate scale, replacing [`crate::replay::ReplayConfig::rate_scale`]
    /// (`None`: the configuration's).
    pub rate_scale: Option<f64>,
}

impl RunSpec {
    /// A run of `policy` over `window` (index 0) with `seed` and `params`.
    pub fn new(policy: PolicyKind, window: Window, seed: u64, params: Params) -> RunSpec {
        RunSpec {
            policy,
            window_index: 0,
            window,
            seed,
            param_index: 0,
            param_label: String::new(),
            params,
            rate_scale: None,
        }
    }

    /// The seed of the `random` policy: derived from (seed, window) only, so that parameter
    /// points of a grid are paired.
    pub fn policy_seed(&self) -> u64 {
        run_stream_seed(self.seed, self.window_index as u64) ^ SALT_POLICY
    }
}

/// Counters of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RunStats {
    /// Events the queue held before the window's end, stale ones included: those popped, and
    /// each phase end replaced in the queue by a newer one of its request (counted when
    /// replaced, as the stale pop it stands for).
    pub events: u64,
    /// Of which stale (superseded phase ends, cutovers and checks).
    pub stale_events: u64,
    /// Calls to [`Policy::place`].
    pub placements: u64,
    /// Calls to [`Policy::check_migration`].
    pub migration_checks: u64,
    /// Planned moves the policy asked for that the destination could not take: at the
    /// decision, or (iteration engine) at an overlapped move's cut-over, when the tokens
    /// generated on the source meanwhile no longer fit there; the request stays where it is.
    pub moves_refused: u64,
    /// Node sessions that ended inside the window.
    pub node_failures: u64,
    /// Requests that entered the global pending queue (counted each time).
    pub pending_entries: u64,
    /// `oracle` only: last checks where the oracle knew a request would be lost (its node ends
    /// before it finishes) and did not move it: no destination had room (capacity forced it
    /// onto a doomed node) or, rarely, the loss was the cheaper option.
    pub oracle_forced: u64,
    /// Every policy but the oracle: requests moved off a node before its announced end
    /// ([`crate::replay::UpSession::announced`]).
    pub drained: u64,
    /// Every policy but the oracle: requests still on a node at its announced end that no
    /// node had room for (lost there as an interruption of that cause).
    pub drain_missed: u64,
    /// Iteration model: recompute preemptions because a node's KV ran out.
    pub kv_preemptions: u64,
    /// Forecast questions about a newcomer (a placement's candidate or a planned move's
    /// destination) that had no answer, so that the policy priced that node with the view's
    /// formula and no delay imposed; 0 on every committed scenario (tested).
    pub forecast_fallbacks: u64,
    /// Prefix caching: the requests with prefix blocks the run cached (0: no prefix caching).
    pub prefix_requests: u64,
    /// Prefix caching: prompt tokens of the cached blocks nodes' ends destroyed.
    pub cache_destroyed_tokens: u64,
    /// Prefix caching: the blocks nodes' ends destroyed.
    pub cache_destroyed_blocks: u64,
    /// Prefix caching: prompt tokens of the cached blocks evicted for KV room.
    pub cache_evicted_tokens: u64,
    /// Idle conversations' prefix state copied to a safer node.
    pub state_migrations: u64,
    /// Copies of idle state that failed (a node lost, or the blocks evicted, meanwhile).
    pub state_migrations_failed: u64,
}

/// One logged policy decision ([`ReplayConfig::decision_log`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedDecision {
    /// Time on the trace clock, us.
    pub time_us: i64,
    /// Placement pass 2 (the queueing view) rather than the true view.
    pub queueing: bool,
    /// The policy's explanation, every candidate recorded.
    pub explanation: Explanation,
    /// What the decision read ([`super::input::ReplayConfig::decision_inputs`]): the
    /// decision can be taken again from it ([`DecisionInputs::decide`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inputs: Option<DecisionInputs>,
}

/// The result of one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunOutput {
    /// Policy.
    pub policy: PolicyKind,
    /// Window index.
    pub window: usize,
    /// Seed.
    pub seed: u64,
    /// Parameter-point index.
    pub param: usize,
    /// Parameter-point label.
    pub param_label: String,
    /// Window length, seconds.
    pub window_length_s: f64,
    /// Arrivals scored: from `scored_s[0]` (the warm-up) to before `scored_s[1]` (the window
    /// length less the drain margin), seconds after the window start
    /// ([`super::input::ReplayConfig::warmup_s`], [`super::input::ReplayConfig::drain_s`]).
    pub scored_s: [f64; 2],
    /// One record per request, in request-index (arrival) order.
    pub records: Vec<RequestRecord>,
    /// Counters.
    pub stats: RunStats,
    /// The first [`ReplayConfig::decision_log`] decisions.
    pub decisions: Vec<LoggedDecision>,
    /// The curves the logged decisions' inputs name, by index (`None`: a curve without a
    /// [`crate::survival::curve::CurveSpec`]); empty without
    /// [`super::input::ReplayConfig::decision_inputs`].
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decision_curves: Vec<Option<crate::survival::curve::CurveSpec>>,
    /// The fleet's cost over the scored span (the same for every policy of a window).
    pub cost: super::input::RunCost,
}

impl RunOutput {
    /// The run's metrics ([`RunSummary::scored`]): the requests that arrived in the scored
    /// span, over a window of `window_length_s`.
    pub fn summary(&self) -> RunSummary {
        let mut s = RunSummary::scored(&self.records, self.window_length_s, self.scored_s)
            .with_cost(&self.cost)
            .with_prefix_cache(
                self.stats.prefix_requests > 0,
                self.stats.cache_destroyed_tokens,
                self.stats.state_migrations,
            );
        s.forecast_fallbacks = self.stats.forecast_fallbacks as f64;
        s
    }

    /// The run's metrics with its key, for [`super::metrics::aggregate`].
    pub fn metrics(&self) -> RunMetrics {
        RunMetrics {
            policy: self.policy,
            window: self.window,
            seed: self.seed,
            param: self.param,
            param_label: self.param_label.clone(),
            summary: self.summary(),
        }
    }
}
