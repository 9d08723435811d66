//! The [`Policy`] trait and the policies behind it, all on one code path ([`StandardPolicy`]).
//!
//! With prefix caching, `T_i` prefills only what node `i`'s cache does not hold
//! ([`NodeView::cached_tokens`]) and `L_i` includes the retained-state term `R_i`
//! ([`super::retained`]) for a request of a conversation.
//!
//! Formulas (design note "The algorithm"): expected completion cost `E_i = T_i + L_i`, `L_i`
//! a 16-cell Riemann sum of the unplanned loss `U_i` over the conditional survival curve
//! `S_i(t | a_i)`; placement `argmin_i E_i`; pre-emptive migration only on risk removal
//! (`risk_gain = L_i - (C + L_j) > h` and `dT = C + T_j (+ D_j) - T_i < h`, hysteresis `h`,
//! `D_j` the delay imposed on the destination's requests under the `stationary` and `marginal`
//! forecasts); a move
//! costs `C = min(KV transfer, recompute)`. `T` and `L` price the expected remaining output
//! [`RequestView::remaining_expected`], which never reaches 0 while a request runs. With
//! estimated lengths every `argmin` below (not the oracle's) is taken over the forecast's own
//! error: scores within it are ties, broken by load ([`super::band`]).
//!
//! | name | placement | pre-emptive migration |
//! |---|---|---|
//! | `hazard` | `argmin E_i` with each node's curve | hazard trigger (`risk_gain > h`, `dT < h`) |
//! | `hazard-nomigrate` | as `hazard` | none |
//! | `memoryless` | `argmin E_i`, curves replaced by the node's exponential rate | as `hazard`, same replacement |
//! | `hazard-pooled` | `argmin E_i`, every curve replaced by one exponential at the fleet's mean rate (`hazard`'s hazard-blind twin) | as `hazard`, same replacement |
//! | `hazard-truth` | `argmin E_i`, curves replaced by the law that generated the node's sessions (synthetic fleets) | as `hazard`, same replacement |
//! | `fastest` | `argmin T_i` (`T_i + D_i` with the `stationary` and `marginal` forecasts; hazard-blind; recovers only after failures) | none |
//! | `least-loaded` | lowest slot load (then KV load, queue wait) | none |
//! | `random` | uniform over feasible nodes (seeded SplitMix64) | none |
//! | `uptime` | among the nodes that can start the request soonest (smallest queue wait), the one up the longest (the age heuristic, load-aware) | none |
//! | `cache-aware` | the SGLang router: the best prefix match above a 0.3 match rate, else the smallest cache; the fewest in flight when loads are imbalanced ([`super::routers`]; prefix caching only) | none |
//! | `session-affinity` | production-stack's session router: the conversation's node by rendezvous hashing over the up nodes, else the fewest in flight ([`super::routers`]; prefix caching only) | none |
//! | `oracle` | clairvoyant greedy: a node where the request finishes before the node's known end first (a doomed node only when every node is, [`ORACLE_DOOMED_PENALTY_S`]), then smallest completion (the configured forecast with the true lengths), a doomed node priced by its cheaper of `U(R)` and a planned hop before its end | event-driven, just before each known end |
//! | `bound` | not a policy: an analytic lower bound computed by the replay | — |
//!
//! What each baseline knows (its information set):
//!
//! | name | speed | load | age | per-node history | the future |
//! |---|---|---|---|---|---|
//! | `hazard`, `hazard-nomigrate` | yes | yes | yes (`S_i(t | a_i)`) | yes (fitted curve) | no |
//! | `memoryless` | yes | yes | no (exponential: memoryless) | yes (events / exposure of completed sessions only) | no |
//! | `hazard-pooled` | yes | yes | no | no (the fleet's mean rate only) | no |
//! | `hazard-truth` | yes | yes | yes (`S_i(t | a_i)` of the generating law) | the law, not its realisations | no |
//! | `fastest` | yes | yes (queue wait) | no | no | no |
//! | `least-loaded` | no | yes | no | no | no |
//! | `random` | no | no | no | no | no |
//! | `uptime` | no | yes (queue wait only) | yes | no | no |
//! | `cache-aware`, `session-affinity` | no | yes (requests in flight) | no | no | no |
//! | `oracle` | yes | yes | — | — | yes: true output lengths, every node's true timeline, each conversation's next turn (its retained-state term is `C_re` when the node ends between the turn's completion and the next turn, else 0) |
//! | `bound` | fastest rates | none (unloaded) | — | — | yes: when any node is up |
//!
//! Announced ends (the scenario's `nodes.announced_causes`, e.g. a lifetime cap) are not
//! "the future" in this sense: every policy's view carries them, the `E`-based policies price
//! them as a planned hop ([`super::cost::announced_loss`]) over the curve of the unannounced
//! causes, and the replay drains them for every policy.
//!
//! The `oracle` is a *clairvoyant greedy* heuristic, an upper reference on interruptions, not
//! a proven optimum (it can be beaten in a window, and on completion it is no reference: under
//! the default `stationary` forecast it prices completions with the same held load as the
//! other policies, only with the true lengths); `bound` is provably unbeatable (see
//! [`crate::replay::bound`]).
//!
//! `T_i` of every cost-based policy (`hazard`, `hazard-nomigrate`, `memoryless`, `fastest`,
//! `oracle`), at placement and in the migration check (on the source and the destination), is
//! the service-time model's forecast through [`ClusterView::loads`], in the mode
//! [`Params::forecast`] names ([`ForecastKind`]), the request counted once on its source.
//! Views without a forecast fall back to [`service_time`] on the view's fields.
//!
//! * `stationary` (the default, [`super::service::stationary`]): the request starts as the
//!   node serves it now (queue, prefill), then decodes beside as many requests as the node
//!   holds now for its whole stay; placement adds `D_i`, the delay it imposes on them over
//!   that stay (its prefill's share of their steps, and per token it decodes the step time one
//!   more decoder adds).
//! * `marginal` ([`super::service::forecast_marginal`]): the node replayed in its current
//!   state with nothing arriving, every resident and queued request at the rate it will get;
//!   placement adds `D_i = sum_r (end_r with - end_r without)`.
//! * `own` ([`super::service::forecast`]): that replay's `T_i` alone.
//!
//! `fastest` minimises `T_i + D_i`, the `E`-based policies `E_i + D_i = T_i + L_i + D_i`: the
//! increase of the node's sum of completion times, as far as the forecast sees it.
//!
//! Every decision fills an [`Explanation`] supplied by the caller (reused across calls, so no
//! allocation once its candidate buffer has grown).
//!
//! Size: over 800 lines because the thirteen policy kinds share one trait and one
//! `StandardPolicy` decision path (the routers and the retained-state term included); each
//! policy is a few lines of that path, and keeping them side by side is what lets a reader
//! compare what each one knows. The second half is their unit tests against hand
//! computations.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::band::{anchor, choose, in_band, length_cv, Scored, TIE_BAND_Z};
use super::cost::{
    cost_from_service, interruption_probability, node_loss, node_loss_lower_bound, recovery_wait_s,
    secs, service_time, Fallbacks, LossPricing, NodeCost, RiskModel, ServiceTime, UnplannedLoss,
};
use super::migration::{
    check_guards, move_cost, planned_move, price_move_with, source_state, trigger_fires, Blocked,
    DestinationForecast, MoveAssessment, MoveCost, MoveMethod, MoveQuery, SourceState,
};
use super::model::{ClusterView, ForecastKind, NodeIdx, NodeView, Params, RequestView};
use super::routers;
use super::service::{Waiting, PROBE_ID};
use crate::rng::SplitMix64;
use crate::survival::curve::{ConditionalSurvival, Exponential};

/// The policies, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PolicyKind {
    /// `hazard`: placement by `E_i`, hazard-motivated pre-emptive migration.
    Hazard,
    /// `hazard-nomigrate`: placement by `E_i` only.
    HazardNomigrate,
    /// `memoryless`: `hazard` with each node's curve replaced by its ML exponential.
    Memoryless,
    /// `hazard-pooled`: `hazard` with every node's curve replaced by one exponential at the
    /// fleet's mean rate (the mean of the nodes' `exp_rate_per_s`). The same rule, forecast,
    /// exposure pricing and planned migration as `hazard`, blind to which node is riskier and
    /// to age: `hazard` minus `hazard-pooled` is what each node's conditional hazard buys.
    HazardPooled,
    /// `hazard-truth`: `hazard` with each node's curve replaced by the law that generated its
    /// sessions (synthetic fleets only): the ceiling of what a perfect survival model buys.
    HazardTruth,
    /// `fastest`: `argmin T_i`.
    Fastest,
    /// `least-loaded`: lowest load.
    LeastLoaded,
    /// `random`: uniform over feasible nodes.
    Random,
    /// `uptime`: the node up the longest.
    Uptime,
    /// `cache-aware`: the SGLang router's rule ([`super::routers::cache_aware`]).
    CacheAware,
    /// `session-affinity`: vLLM production-stack's session router
    /// ([`super::routers::session_affinity`]).
    SessionAffinity,
    /// `oracle`: the clairvoyant greedy (true output lengths, true node timelines).
    Oracle,
    /// `bound`: not a policy; the replay computes the analytic lower bound
    /// ([`crate::replay::bound`]) for it instead of simulating. As a [`Policy`] it behaves
    /// like `fastest`.
    Bound,
}

impl PolicyKind {
    /// Every policy, in a stable order.
    pub const ALL: [PolicyKind; 13] = [
        PolicyKind::Hazard,
        PolicyKind::HazardNomigrate,
        PolicyKind::Memoryless,
        PolicyKind::HazardPooled,
        PolicyKind::HazardTruth,
        PolicyKind::Fastest,
        PolicyKind::LeastLoaded,
        PolicyKind::Random,
        PolicyKind::Uptime,
        PolicyKind::CacheAware,
        PolicyKind::SessionAffinity,
        PolicyKind::Oracle,
        PolicyKind::Bound,
    ];

    /// The policy's name as used on the command line.
    pub fn name(&self) -> &'static str {
        match self {
            PolicyKind::Hazard => "hazard",
            PolicyKind::HazardNomigrate => "hazard-nomigrate",
            PolicyKind::Memoryless => "memoryless",
            PolicyKind::HazardPooled => "hazard-pooled",
            PolicyKind::HazardTruth => "hazard-truth",
            PolicyKind::Fastest => "fastest",
            PolicyKind::LeastLoaded => "least-loaded",
            PolicyKind::Random => "random",
            PolicyKind::Uptime => "uptime",
            PolicyKind::CacheAware => "cache-aware",
            PolicyKind::SessionAffinity => "session-affinity",
            PolicyKind::Oracle => "oracle",
            PolicyKind::Bound => "bound",
        }
    }

    /// True for the routers ([`super::routers`]): they send a request to any up node that
    /// could ever hold it (a full one queues it), so the replay places them in one pass over
    /// every up node; and they are compared only on workloads with prefix caching.
    pub fn routes_all(&self) -> bool {
        matches!(self, PolicyKind::CacheAware | PolicyKind::SessionAffinity)
    }

    /// True for the policies that make planned (pre-emptive) moves.
    pub fn migrates(&self) -> bool {
        matches!(
            self,
            PolicyKind::Hazard
                | PolicyKind::Memoryless
                | PolicyKind::HazardPooled
                | PolicyKind::HazardTruth
                | PolicyKind::Oracle
        )
    }

    /// The failure model the policy prices `L` with (hazard-blind policies report `L` under
    /// the nodes' curves in their explanations, for comparison).
    pub fn risk_model(&self) -> RiskModel {
        match self {
            PolicyKind::Memoryless | PolicyKind::HazardPooled => RiskModel::Memoryless,
            PolicyKind::Oracle => RiskModel::Oracle,
            _ => RiskModel::Hazard,
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown policy name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownPolicy(pub String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown policy `{}` (expected one of:", self.0)?;
        for k in PolicyKind::ALL {
            write!(f, " {}", k.name())?;
        }
        write!(f, ")")
    }
}

impl std::error::Error for UnknownPolicy {}

impl FromStr for PolicyKind {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<PolicyKind, UnknownPolicy> {
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownPolicy(s.to_string()))
    }
}

/// Which decision an [`Explanation`] describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Placement of a new or recovering request.
    Place,
    /// Pre-emptive migration check of a running request.
    Migrate,
}

/// What a decision concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Placed on `chosen`.
    Placed,
    /// No node is up with a free slot and KV room.
    NoFeasibleNode,
    /// Move to `chosen`.
    Migrate,
    /// Candidates were priced and none passed the trigger.
    Stay,
    /// No candidate destination (none up with room).
    NoCandidate,
    /// Guard: the request already made `max_hops` planned moves.
    MaxHops,
    /// Guard: less than `min_remaining_s` of work left.
    MinRemaining,
    /// The policy never migrates.
    MigrationDisabled,
    /// The source index is out of range or the source is down (an unplanned loss, not a move).
    InvalidSource,
}

/// One candidate as priced by a decision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CandidateCost {
    /// Candidate node.
    pub node: NodeIdx,
    /// `T` on the candidate, seconds.
    pub t: f64,
    /// `L` on the candidate (migration: residual risk `l_j`), seconds; NaN when pruned.
    pub l: f64,
    /// `E = T + L` (placement) or the policy's score, seconds.
    pub e: f64,
    /// `C` of moving there (migration only; NaN for placement).
    pub c_planned: f64,
    /// `risk_gain` (migration only).
    pub risk_gain: f64,
    /// `dT` (migration only).
    pub dt: f64,
}

/// Why a decision came out as it did: the numbers behind it.
///
/// Placement: `t`, `l`, `e` are the chosen node's `T`, `L`, `E` (under the policy's own risk
/// model; hazard-blind policies report them under the node curves). Migration: `t`, `l`, `e`
/// describe the source; the `*_j`, `c_*`, `risk_gain`, `dt` fields describe `target`, the
/// chosen destination or, when none fires, the candidate with the largest `risk_gain`.
/// Inapplicable numbers are NaN (JSON `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The deciding policy.
    pub policy: PolicyKind,
    /// Placement or migration.
    pub decision: Decision,
    /// The conclusion.
    pub outcome: Outcome,
    /// Request id.
    pub request: u64,
    /// Source node (migration).
    pub from: Option<NodeIdx>,
    /// The node placed on or moved to.
    pub chosen: Option<NodeIdx>,
    /// `T` (chosen node, or the source for migration), seconds.
    pub t: f64,
    /// `L`, seconds.
    pub l: f64,
    /// `E = T + L`, seconds.
    pub e: f64,
    /// Migration: the destination described below.
    pub target: Option<NodeIdx>,
    /// `T_j`, seconds.
    pub t_j: f64,
    /// Residual risk `l_j` of the move, seconds.
    pub l_j: f64,
    /// Transfer cost of what moves at cutover, seconds.
    pub c_transfer: f64,
    /// Recompute cost of what moves at cutover, seconds.
    pub c_recompute: f64,
    /// `C_planned` (with overlap: the visible catch-up cost), seconds.
    pub c_planned: f64,
    /// The method paying `c_planned`.
    pub method: Option<MoveMethod>,
    /// Overlap window `W`, seconds (0 without overlap).
    pub window_s: f64,
    /// `risk_gain = L_i - (C + l_j)`, seconds.
    pub risk_gain: f64,
    /// `dT = (T_j + C) - T_i`, seconds.
    pub dt: f64,
    /// Hysteresis `h` applied, seconds.
    pub hysteresis_s: f64,
    /// Placement under the `stationary` or `marginal` forecast: `D`, the delay the request
    /// imposes on the chosen node's other requests, seconds (the decision minimised `E + D`,
    /// or `T + D` for `fastest`); NaN (absent) otherwise.
    #[serde(skip_serializing_if = "is_nan")]
    pub imposed_s: f64,
    /// Placement: the predicted probability that the chosen node fails before the request
    /// completes, `1 - S(T | a)` under the policy's risk model (the node curves for hazard-blind
    /// policies); the forecast calibration scores it against what happened.
    #[serde(skip)]
    pub p_interrupt: f64,
    /// Nodes looked at.
    pub considered: u32,
    /// Of which feasible.
    pub feasible: u32,
    /// Candidates priced (only when `record_candidates`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateCost>,
    /// Record every candidate in `candidates` (diagnostics; disables pruning).
    #[serde(skip)]
    pub record_candidates: bool,
}

/// For `skip_serializing_if`: the number is NaN (inapplicable).
fn is_nan(x: &f64) -> bool {
    x.is_nan()
}

impl Default for Explanation {
    fn default() -> Explanation {
        Explanation {
            policy: PolicyKind::Hazard,
            decision: Decision::Place,
            outcome: Outcome::NoFeasibleNode,
            request: 0,
            from: None,
            chosen: None,
            t: f64::NAN,
            l: f64::NAN,
            e: f64::NAN,
            target: None,
            t_j: f64::NAN,
            l_j: f64::NAN,
            c_transfer: f64::NAN,
            c_recompute: f64::NAN,
            c_planned: f64::NAN,
            method: None,
            window_s: f64::NAN,
            risk_gain: f64::NAN,
            dt: f64::NAN,
            hysteresis_s: f64::NAN,
            imposed_s: f64::NAN,
            p_interrupt: f64::NAN,
            considered: 0,
            feasible: 0,
            candidates: Vec::new(),
            record_candidates: false,
        }
    }
}

impl Explanation {
    /// An empty explanation that records every candidate.
    pub fn recording() -> Explanation {
        Explanation {
            record_candidates: true,
            ..Explanation::default()
        }
    }

    /// Resets every field for a new decision, keeping the candidate buffer's capacity and the
    /// `record_candidates` switch.
    pub fn reset(&mut self, policy: PolicyKind, decision: Decision, request: u64) {
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        let record = self.record_candidates;
        *self = Explanation {
            policy,
            decision,
            request,
            candidates,
            record_candidates: record,
            ..Explanation::default()
        };
    }

    fn set_node_cost(&mut self, c: &NodeCost) {
        self.t = c.t;
        self.l = c.l;
        self.e = c.e;
    }
}

/// A scheduling policy. One trait for every policy; the simulator calls `place` for each new
/// or recovering request and `check_migration` every `Params::check_interval_s` for each
/// running request.
pub trait Policy: Send {
    /// Which policy this is.
    fn kind(&self) -> PolicyKind;

    /// Chooses a node for `req`, or `None` when no node is feasible (up, a free slot, KV room
    /// for [`RequestView::kv_need`]). Fills `out`.
    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx>;

    /// Decides whether the request running on `from` should make a planned move now, and
    /// where. Fills `out`.
    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx>;
}

/// Every policy of [`PolicyKind`], one implementation.
#[derive(Debug, Clone)]
pub struct StandardPolicy {
    kind: PolicyKind,
    params: Params,
    rng: SplitMix64,
    /// Reused buffers of [`StandardPolicy::argmin_banded`]: each feasible node as the band
    /// rule reads it, and its cost.
    banded: Vec<Scored>,
    banded_costs: Vec<(NodeCost, f64, Option<UnplannedLoss>, Option<f64>)>,
    /// Reused buffer of [`StandardPolicy::argmin_t`]: each feasible node, in candidate order,
    /// and the lower bound of its score (NaN when recording candidates, which reads none).
    bounds: Vec<(NodeIdx, f64)>,
}

/// A boxed policy of kind `kind` (`seed` only matters for `random`).
pub fn build(kind: PolicyKind, params: Params, seed: u64) -> Box<dyn Policy> {
    Box::new(StandardPolicy::new(kind, params, seed))
}

/// A running request on its source node, as a migration check reads it: the request, the node
/// it runs on (index and view), and the fallbacks of the cluster's prefill rates.
#[derive(Debug, Clone, Copy)]
struct OnSource<'a> {
    req: &'a RequestView,
    from: NodeIdx,
    src: &'a NodeView<'a>,
    fb: &'a Fallbacks,
}

/// The running request's cost on its source `from` (the start of every migration check),
/// recorded in `out`. `T_i` is the forecast of the request itself on the source, counted once
/// among the node's residents; [`source_state`] on the view's fields without a forecast.
#[inline]
fn price_source(
    view: &ClusterView<'_>,
    at: OnSource<'_>,
    params: &Params,
    model: RiskModel,
    remaining_up: Option<f64>,
    out: &mut Explanation,
) -> SourceState {
    let OnSource { req, from, src, fb } = at;
    let fallback = fb.for_node(from, src.prefill_tok_s);
    let forecast = view.loads.and_then(|l| match params.forecast {
        ForecastKind::Stationary => l.forecast_resident_stationary(from, req.id),
        ForecastKind::Own | ForecastKind::Marginal => l.forecast_resident(from, req.id),
    });
    let source = match forecast {
        Some(st) => {
            let context = req.context() as f64;
            let remaining = req.remaining_expected();
            let (cost, u) = cost_from_service(
                src,
                st,
                st.decode_rate(remaining, src.decode_tok_s),
                context,
                remaining,
                &LossPricing {
                    fallback_prefill_tok_s: fallback,
                    params,
                    model,
                    remaining_up,
                },
            );
            SourceState {
                cost,
                u,
                context,
                remaining,
            }
        }
        None => source_state(src, req, fallback, params, model, remaining_up),
    };
    out.set_node_cost(&source.cost);
    source
}

/// What the view's [`super::model::Foresight`] tells of node `idx`'s remaining
/// session: every known end for the oracle, the announced ends (a lifetime cap, a notice)
/// for the other risk models, which price them as planned ends ([`super::cost::announced_loss`]).
fn remaining_up(view: &ClusterView<'_>, idx: NodeIdx) -> Option<f64> {
    view.foresight.and_then(|f| f.remaining_up(idx))
}

#[inline]
fn nan_as_inf(x: f64) -> f64 {
    if x.is_nan() {
        f64::INFINITY
    } else {
        x
    }
}

/// What the oracle adds to the `E` of a node whose known end comes before the request would
/// finish there, so that it places on such a node only when every node is doomed: it avoids
/// every interruption it can foresee first and minimises completion second (10^12 s, longer
/// than any trace).
pub const ORACLE_DOOMED_PENALTY_S: f64 = 1e12;

/// The newcomer of a forecast: `req` taking a slot now and decoding after `start_s` seconds
/// (`prefill`: that phase is a prefill), `remaining` tokens still to generate after it.
#[inline]
/// `start`: the start phase as [`Waiting`] has it (`start_s`, `prefill`, `stall_s`, `tokens`).
fn newcomer(req: &RequestView, start: StartPhase, done: f64, remaining: f64) -> Waiting {
    Waiting {
        id: PROBE_ID,
        kv: req.kv_need(),
        prompt: req.prompt_tokens,
        start_s: start.seconds,
        prefill: start.prefill,
        stall_s: start.stall_s,
        tokens: start.tokens,
        done,
        target: done + remaining,
        cached: 0,
    }
}

/// A newcomer's start phase, as each engine serves it (see [`Waiting`]).
#[derive(Debug, Clone, Copy)]
struct StartPhase {
    /// Seconds under the simple model.
    seconds: f64,
    /// A prefill (under the iteration model: `tokens` of work after `stall_s` of waiting),
    /// else a pause of `seconds`.
    prefill: bool,
    stall_s: f64,
    tokens: f64,
}

impl StartPhase {
    /// A prefill of `tokens` at `p` tokens/s after `stall_s` seconds of waiting.
    fn prefill(tokens: f64, p: f64, stall_s: f64) -> StartPhase {
        StartPhase {
            seconds: stall_s + secs(tokens, p),
            prefill: true,
            stall_s,
            tokens,
        }
    }

    /// A pause of `seconds` (a KV transfer).
    fn pause(seconds: f64) -> StartPhase {
        StartPhase {
            seconds,
            prefill: false,
            stall_s: 0.0,
            tokens: 0.0,
        }
    }
}

/// The newcomer a placement of `req` on `node` forecasts, with `prefill_tokens` to prefill
/// and `rem` tokens to generate, and the seconds it waits before its prefill: a recovering
/// request waits out the stall and the recompute overhead first, as the engine serves it.
#[inline]
fn placed_newcomer(
    req: &RequestView,
    node: &NodeView<'_>,
    prefill_tokens: f64,
    rem: f64,
    params: &Params,
) -> (Waiting, f64) {
    let wait = if req.recovering {
        recovery_wait_s(params.stall_penalty_s, params.recompute_overhead_s)
    } else {
        0.0
    };
    let start = StartPhase::prefill(prefill_tokens, node.prefill_tok_s, wait);
    let w = Waiting {
        // The prompt tokens it does not prefill there (its cached prefix).
        cached: ((req.context() as f64 - prefill_tokens).max(0.0) as u64).min(req.prompt_tokens),
        ..newcomer(req, start, req.done_tokens as f64, rem)
    };
    (w, wait)
}

/// One placement question: `req` on node `idx` with `prefill_tokens` to prefill and `rem`
/// tokens to generate, priced under `params`.
#[derive(Clone, Copy)]
struct Placing<'v> {
    view: &'v ClusterView<'v>,
    idx: NodeIdx,
    node: &'v NodeView<'v>,
    req: &'v RequestView,
    prefill_tokens: f64,
    rem: f64,
    params: &'v Params,
}

impl Placing<'_> {
    /// `T_i` and `w_i` of the placement, the decode rate `U_i` grows at, and `D_i`, the delay
    /// the placement imposes on the node's other requests (with `forecast = stationary` or
    /// `marginal`, else 0): the forecast of [`Params::forecast`] when the view has one (its
    /// average rate; [`super::service::stationary`] or [`super::service::forecast_marginal`]
    /// for `D_i`), else [`service_time`] on the view's fields (the view's rate, `D_i = 0`).
    #[inline]
    fn service(&self) -> (ServiceTime, f64, f64) {
        let Placing {
            view,
            idx,
            node,
            req,
            prefill_tokens,
            rem,
            params,
        } = *self;
        let (w, wait) = placed_newcomer(req, node, prefill_tokens, rem, params);
        if let Some(loads) = view.loads {
            let got = match params.forecast {
                ForecastKind::Own => loads.forecast_newcomer(idx, w).map(|st| (st, 0.0)),
                ForecastKind::Marginal => loads
                    .forecast_newcomer_marginal(idx, w)
                    .map(|m| (m.time, m.imposed_s)),
                ForecastKind::Stationary => loads
                    .forecast_newcomer_stationary(idx, w)
                    .map(|m| (m.time, m.imposed_s)),
            };
            if let Some((st, d)) = got {
                return (st, st.decode_rate(rem, node.decode_tok_s), d);
            }
        }
        (
            service_time(
                node.queue_wait_s + wait,
                prefill_tokens,
                node.prefill_tok_s,
                rem,
                node.decode_tok_s,
            ),
            node.decode_tok_s,
            0.0,
        )
    }

    /// Whether the placement's score `T_i + D_i` (and so `E_i + D_i`) may be below `best`,
    /// for the pruning: false once a lower bound of it reaches `best`. The bounds, cheapest
    /// first: [`Placing::unloaded_bound`] (no forecast), then under the `stationary`
    /// forecast the stationary answer with the request starting at a lower bound of its
    /// start, when the node's batch is at hand without a replay
    /// ([`super::service::NodeLoads::stationary_bound`]), with the same rounding margin. The
    /// answer is that of the larger bound: the stationary one is not computed when the
    /// unloaded one already reaches `best`.
    #[inline]
    fn may_beat(&self, best: f64) -> bool {
        let unloaded = self.unloaded_bound();
        if unloaded >= best {
            return false;
        }
        self.bound_over(unloaded) < best
    }

    /// A lower bound of the placement's score `T_i + D_i`: the larger of
    /// [`Placing::may_beat`]'s bounds.
    #[inline]
    fn lower_bound(&self) -> f64 {
        self.bound_over(self.unloaded_bound())
    }

    /// The stationary bound of [`Placing::may_beat`] over the unloaded one, `unloaded`, where
    /// the forecast has it; else `unloaded`.
    #[inline]
    fn bound_over(&self, unloaded: f64) -> f64 {
        match self.view.loads {
            Some(loads) if self.params.forecast == ForecastKind::Stationary => {
                let (w, wait) = placed_newcomer(
                    self.req,
                    self.node,
                    self.prefill_tokens,
                    self.rem,
                    self.params,
                );
                let start_lb = wait + secs(self.prefill_tokens, self.node.prefill_tok_s);
                loads
                    .stationary_bound(self.idx, w, start_lb)
                    .map_or(unloaded, |b| unloaded.max(b * (1.0 - 1e-6)))
            }
            _ => unloaded,
        }
    }

    /// A lower bound of [`Placing::service`]'s `T_i` that costs no forecast: prefill plus
    /// decode at the node's unloaded rate (durations round up to whole microseconds in the
    /// forecast, so it is a bound up to the relative `1e-9` of that rounding, which the margin
    /// covers); 0 without a forecast.
    #[inline]
    fn unloaded_bound(&self) -> f64 {
        match self.view.loads {
            Some(loads) => {
                let d = loads.unloaded_decode_tok_s(self.idx);
                (secs(self.prefill_tokens, self.node.prefill_tok_s) + secs(self.rem, d))
                    * (1.0 - 1e-6)
            }
            None => 0.0,
        }
    }
}

/// The prompt tokens node `idx`'s prefix cache holds of `req` when the request is not on it
/// (0 on its own node).
#[inline]
fn cached_elsewhere(req: &RequestView, idx: NodeIdx, node: &NodeView<'_>) -> f64 {
    if req.node == Some(idx) {
        0.0
    } else {
        node.cached_tokens as f64
    }
}

/// Tokens of `req`'s context that node `idx` need not prefill: those already prefilled
/// there when the request is on it, else the prefix tokens its cache holds
/// ([`NodeView::cached_tokens`]).
#[inline]
fn resident_on(req: &RequestView, idx: NodeIdx, node: &NodeView<'_>) -> f64 {
    if req.node == Some(idx) {
        req.resident_tokens as f64
    } else {
        node.cached_tokens as f64
    }
}

/// The retained-state term `R_i` of placing `req` on node `idx` ([`super::retained`]) under
/// `model`, for a turn that completes after `t` seconds, with fallback prefill rate `p_fb`:
/// 0 unless the view has the workload's reuse gap, the request a conversation and `params`
/// the term.
#[inline]
#[allow(clippy::too_many_arguments)]
fn retained(
    view: &ClusterView<'_>,
    req: &RequestView,
    idx: NodeIdx,
    node: &NodeView<'_>,
    model: RiskModel,
    params: &Params,
    t: f64,
    p_fb: f64,
) -> f64 {
    if req.conversation.is_none() || !params.retained_state {
        return 0.0;
    }
    let announced = remaining_up(view, idx);
    if model == RiskModel::Oracle {
        // The oracle knows the next turn: the state is lost when the node ends after the
        // turn completes and before the next one arrives.
        if let Some(next) = view.foresight.and_then(|f| f.next_turn_s()) {
            let lost = next.is_finite() && announced.is_some_and(|r| r > t && r < next);
            return if lost {
                super::retained::reprefill_s(req.prompt_tokens, p_fb)
            } else {
                0.0
            };
        }
    }
    let Some(gap) = view.reuse else {
        return 0.0;
    };
    let memoryless = Exponential::from_rate(node.exp_rate_per_s);
    // `S(a_i)` once: `S_i(s | a_i) = S(a_i + s) / S(a_i)` (the curve's own conditional where
    // `S(a_i) = 0`).
    let at_age = match model {
        RiskModel::Hazard => node.survival.survival(node.age_s.max(0.0)),
        _ => 0.0,
    };
    // `S_i(s | a_i)` under `model`; an announced end is certain.
    let survive = |s: f64| -> f64 {
        match (model, announced) {
            (_, Some(r)) if s >= r => 0.0,
            (RiskModel::Oracle, _) => 1.0,
            (RiskModel::Memoryless, _) => memoryless.conditional(node.age_s, s),
            (RiskModel::Hazard, _) if at_age > 0.0 && s > 0.0 => {
                (node.survival.survival(node.age_s.max(0.0) + s) / at_age).clamp(0.0, 1.0)
            }
            (RiskModel::Hazard, _) => node.survival.conditional(node.age_s, s),
        }
    };
    gap.loss(
        t,
        super::retained::reprefill_s(req.prompt_tokens, p_fb),
        survive,
    )
}

/// Node `idx`'s decode rate with nothing else on it (the forecast's, else the view's).
#[inline]
fn unloaded_decode(view: &ClusterView<'_>, idx: NodeIdx, node: &NodeView<'_>) -> f64 {
    view.loads
        .map_or(node.decode_tok_s, |l| l.unloaded_decode_tok_s(idx))
}

/// The destination forecast of a planned move of `req` to `j` (see
/// [`super::migration::DestinationForecast`]): the request holds a slot on `j` from now and
/// decodes after the move's window and cost. A recompute is served as the engine serves it:
/// under the iteration model the window and the recompute overhead `o_r` are waiting, the
/// recomputed tokens (the context, or the window's tokens with overlap) prefill work on `j`.
/// Under the `stationary` and `marginal` forecasts (as placement prices it) the answer
/// carries the delay `D` the move imposes on `j`'s requests (0 under `own`).
fn move_forecast<'v>(
    view: &'v ClusterView<'v>,
    j: NodeIdx,
    req: &'v RequestView,
    remaining: f64,
    params: &Params,
) -> impl Fn(&MoveCost, f64) -> Option<(ServiceTime, f64)> + 'v {
    let (o_r, forecast) = (params.recompute_overhead_s, params.forecast);
    move |mv: &MoveCost, rem_after: f64| {
        let loads = view.loads?;
        let done = req.done_tokens as f64 + (remaining - rem_after).max(0.0);
        let window = mv.window_s.max(0.0);
        let seconds = window + mv.cost_s.max(0.0);
        let tokens = if window > 0.0 {
            mv.decoded_in_window.max(0.0).floor()
        } else {
            req.context() as f64
        };
        let start = match mv.method {
            MoveMethod::Recompute if tokens > 0.0 => StartPhase {
                seconds,
                prefill: true,
                stall_s: window + o_r.max(0.0),
                tokens,
            },
            _ => StartPhase::pause(seconds),
        };
        let w = newcomer(req, start, done, rem_after);
        match forecast {
            ForecastKind::Own => loads.forecast_newcomer(j, w).map(|st| (st, 0.0)),
            ForecastKind::Marginal => loads
                .forecast_newcomer_marginal(j, w)
                .map(|m| (m.time, m.imposed_s)),
            ForecastKind::Stationary => loads
                .forecast_newcomer_stationary(j, w)
                .map(|m| (m.time, m.imposed_s)),
        }
    }
}

impl StandardPolicy {
    /// A policy of kind `kind` with constants `params`; `seed` seeds `random`.
    pub fn new(kind: PolicyKind, params: Params, seed: u64) -> StandardPolicy {
        StandardPolicy {
            kind,
            params,
            rng: SplitMix64::new(seed),
            banded: Vec::new(),
            banded_costs: Vec::new(),
            bounds: Vec::new(),
        }
    }

    /// The policy's constants.
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// Mutable access to the constants (e.g. to sweep `h` during a replay).
    pub fn params_mut(&mut self) -> &mut Params {
        &mut self.params
    }

    /// `E_i` of `req` on node `idx` under `model` (the forecast's `T_i`) and the delay `D_i`
    /// the placement imposes (0 under the `own` forecast), for explanations; `known`: the
    /// placement's [`Placing::service`] when the choice already computed it.
    fn cost_of(
        &self,
        (view, req, fb): (&ClusterView<'_>, &RequestView, &Fallbacks),
        idx: NodeIdx,
        model: RiskModel,
        known: Option<(ServiceTime, f64, f64)>,
    ) -> (NodeCost, f64) {
        let node = &view.nodes[idx];
        let c = req.context() as f64;
        let resident = resident_on(req, idx, node);
        let rem = req.remaining_expected();
        let (st, rate, d) = known.unwrap_or_else(|| {
            Placing {
                view,
                idx,
                node,
                req,
                prefill_tokens: c - resident,
                rem,
                params: &self.params,
            }
            .service()
        });
        let p_fb = fb.for_node(idx, node.prefill_tok_s);
        let mut cost = cost_from_service(
            node,
            st,
            rate,
            c,
            rem,
            &LossPricing {
                fallback_prefill_tok_s: p_fb,
                params: &self.params,
                model,
                remaining_up: remaining_up(view, idx),
            },
        )
        .0;
        let r_i = retained(view, req, idx, node, model, &self.params, cost.t, p_fb);
        cost.l += r_i;
        cost.e += r_i;
        (cost, d)
    }

    /// `argmin E_i` over feasible nodes (`E_i + D_i` under the `stationary` and `marginal`
    /// forecasts, `D_i` the
    /// delay imposed on the node's other requests); returns the node, its cost and `D_i`.
    /// Unless recording candidates, a node is dropped as soon as a lower bound of its score
    /// reaches the best so far (exact: ties keep the earlier node): first the unloaded `T_i`
    /// ([`Placing::unloaded_bound`], before any forecast), then the forecast `T_i + D_i`
    /// (`L >= 0`), then `T_i + D_i + (1 - S(T_i | a_i)) U_i(0)`.
    fn argmin_e(
        &self,
        view: &ClusterView<'_>,
        req: &RequestView,
        fb: &Fallbacks,
        model: RiskModel,
        out: &mut Explanation,
    ) -> Option<(NodeIdx, NodeCost, f64)> {
        let need = req.kv_need();
        let c = req.context() as f64;
        let rem = req.remaining_expected();
        let params = &self.params;
        let prune = !out.record_candidates;
        let mut best: Option<(NodeIdx, NodeCost, f64)> = None;
        let mut best_e = f64::INFINITY;
        for (i, node) in view.candidates() {
            if !node.can_admit(need) {
                continue;
            }
            let resident = resident_on(req, i, node);
            let searching = prune && best.is_some();
            let at = Placing {
                view,
                idx: i,
                node,
                req,
                prefill_tokens: c - resident,
                rem,
                params,
            };
            if searching && !at.may_beat(best_e) {
                continue;
            }
            let (st, rate, d) = at.service();
            if searching && !(st.total_s + d < best_e) {
                continue;
            }
            let u = UnplannedLoss::new(
                c,
                st.start_s,
                rate,
                rem,
                fb.for_node(i, node.prefill_tok_s),
                params.recompute_overhead_s,
                params.stall_penalty_s,
            )
            .with_hop(
                params.transfer_overhead_s,
                params.kv_bytes_per_token,
                node.bandwidth_bytes_s,
            );
            let r = remaining_up(view, i);
            if searching
                && !(st.total_s + d + node_loss_lower_bound(node, model, r, 0.0, st.total_s, &u)
                    < best_e)
            {
                continue;
            }
            let p_fb = fb.for_node(i, node.prefill_tok_s);
            let l = node_loss(node, model, r, 0.0, st.total_s, &u);
            // `R_i >= 0`: a node already past the best needs no retained-state term (the
            // score summed in the order below, so that a score is the same bits either way).
            if searching && !(nan_as_inf(st.total_s + l + d) < best_e) {
                continue;
            }
            let l = l + retained(view, req, i, node, model, params, st.total_s, p_fb);
            let cost = NodeCost {
                t: st.total_s,
                w: st.start_s,
                l,
                e: st.total_s + l,
            };
            if out.record_candidates {
                out.candidates.push(CandidateCost {
                    node: i,
                    t: cost.t,
                    l: cost.l,
                    e: cost.e + d,
                    c_planned: f64::NAN,
                    risk_gain: f64::NAN,
                    dt: f64::NAN,
                });
            }
            // The oracle avoids every interruption it can foresee first: a node whose known
            // end comes before the request would finish there ranks after every node where it
            // finishes (a doomed node's `E` plus a penalty larger than any service time).
            let doomed = model == RiskModel::Oracle && r.is_some_and(|r| r < st.total_s);
            let e = nan_as_inf(cost.e + d) + if doomed { ORACLE_DOOMED_PENALTY_S } else { 0.0 };
            if best.is_none() || e < best_e {
                best = Some((i, cost, d));
                best_e = e;
            }
        }
        best
    }

    /// The band rule of [`super::band`] over every feasible node (no pruning: a node past the
    /// best forecast may still be within its error): each node's forecast `T_i + D_i`, spread
    /// `cv (T_i - T_i^0)` and load, and its risk `L_i` (0 for `fastest`) priced over the best
    /// node's `T` when its forecast is within the band; returns the chosen node with its cost
    /// (as priced over its own `T`) and `D_i`.
    fn argmin_banded(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        fb: &Fallbacks,
        model: RiskModel,
        cv: f64,
        out: &mut Explanation,
    ) -> Option<(NodeIdx, NodeCost, f64)> {
        let need = req.kv_need();
        let c = req.context() as f64;
        let rem = req.remaining_expected();
        let params = &self.params;
        let blind = self.kind == PolicyKind::Fastest;
        let wait = if req.recovering {
            recovery_wait_s(params.stall_penalty_s, params.recompute_overhead_s)
        } else {
            0.0
        };
        let mut scored = std::mem::take(&mut self.banded);
        let mut costs = std::mem::take(&mut self.banded_costs);
        scored.clear();
        costs.clear();
        for (i, node) in view.candidates() {
            if !node.can_admit(need) {
                continue;
            }
            let at = Placing {
                view,
                idx: i,
                node,
                req,
                prefill_tokens: c - resident_on(req, i, node),
                rem,
                params,
            };
            let (st, rate, d) = at.service();
            let r = remaining_up(view, i);
            // `fastest` prices no loss: no survival curve is read for it.
            let (cost, u) = if blind {
                let t = NodeCost {
                    t: st.total_s,
                    w: st.start_s,
                    l: 0.0,
                    e: st.total_s,
                };
                (t, None)
            } else {
                let pricing = LossPricing {
                    fallback_prefill_tok_s: fb.for_node(i, node.prefill_tok_s),
                    params,
                    model,
                    remaining_up: r,
                };
                let (mut cost, u) = cost_from_service(node, st, rate, c, rem, &pricing);
                let r_i = retained(
                    view,
                    req,
                    i,
                    node,
                    model,
                    params,
                    st.total_s,
                    pricing.fallback_prefill_tok_s,
                );
                cost.l += r_i;
                cost.e += r_i;
                (cost, Some(u))
            };
            let l = cost.l;
            if out.record_candidates {
                out.candidates.push(CandidateCost {
                    node: i,
                    t: cost.t,
                    l: if blind { f64::NAN } else { l },
                    e: nan_as_inf(cost.e + d),
                    c_planned: f64::NAN,
                    risk_gain: f64::NAN,
                    dt: f64::NAN,
                });
            }
            // What no estimate of the others' lengths can change: the unloaded service time
            // and, for a recovery, its wait.
            let unloaded = at.unloaded_bound() + wait;
            scored.push(Scored {
                node: i,
                forecast: st.total_s + d,
                risk: l,
                spread: cv * (st.total_s - unloaded).max(0.0),
                load: (node.load(), node.kv_load(), node.queue_wait_s),
            });
            costs.push((cost, d, u, r));
        }
        if !blind {
            // Within the band, the risk is priced over the best node's exposure.
            if let Some((b, fb_, ub)) = anchor(&scored) {
                let t_b = costs[b].0.t;
                for (s, (_, _, u, r)) in scored.iter_mut().zip(&costs) {
                    if let (true, Some(u)) = (in_band(s, (fb_, ub), TIE_BAND_Z), u) {
                        s.risk = node_loss(&view.nodes[s.node], model, *r, 0.0, t_b, u);
                    }
                }
            }
        }
        let got = choose(&scored, TIE_BAND_Z).map(|k| (scored[k].node, costs[k].0, costs[k].1));
        self.banded = scored;
        self.banded_costs = costs;
        got
    }

    /// `fastest`: `argmin T_i` (the forecast; `T_i + D_i` under the `stationary` and
    /// `marginal` forecasts) over feasible nodes, the earlier candidate on ties, with the
    /// chosen placement's [`Placing::service`].
    ///
    /// Unless recording candidates, every feasible node's lower bound
    /// ([`Placing::lower_bound`], no replay) is read first; the node with the least bound is
    /// forecast first, and then a node is forecast only if its bound is below the best score
    /// so far (or equal to it, the node being the earlier candidate). The answer is the
    /// exhaustive one wherever the bounds are bounds (tested with forecasts, both engines); the
    /// node with the least bound is usually the best, so most nodes cost a bound and no replay.
    fn argmin_t(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<(NodeIdx, (ServiceTime, f64, f64))> {
        let need = req.kv_need();
        let c = req.context() as f64;
        let rem = req.remaining_expected();
        let mut bounds = std::mem::take(&mut self.bounds);
        bounds.clear();
        let params = &self.params;
        // The whole context on every node (a request's own node included), less what a
        // node's prefix cache holds of it elsewhere.
        let placing = |idx: NodeIdx, node| Placing {
            view,
            idx,
            node,
            req,
            prefill_tokens: c - cached_elsewhere(req, idx, node),
            rem,
            params,
        };
        let score = |service: &(ServiceTime, f64, f64)| nan_as_inf(service.0.total_s + service.2);
        // The best so far: its place among the candidates, its score and service.
        let mut best: Option<(usize, f64, (ServiceTime, f64, f64))> = None;
        if out.record_candidates {
            for (i, node) in view.candidates() {
                if !node.can_admit(need) {
                    continue;
                }
                // The place among the feasible candidates, as `bounds` lists them.
                let pos = bounds.len();
                let service = placing(i, node).service();
                let t = score(&service);
                out.candidates.push(CandidateCost {
                    node: i,
                    t,
                    l: f64::NAN,
                    e: t,
                    c_planned: f64::NAN,
                    risk_gain: f64::NAN,
                    dt: f64::NAN,
                });
                if best.is_none_or(|(_, b, _)| t < b) {
                    best = Some((pos, t, service));
                }
                bounds.push((i, f64::NAN));
            }
        } else {
            for (i, node) in view.candidates() {
                if node.can_admit(need) {
                    // An unknown bound (NaN) bounds nothing: the node is forecast.
                    let lb = placing(i, node).lower_bound();
                    bounds.push((i, if lb.is_nan() { f64::NEG_INFINITY } else { lb }));
                }
            }
            // `min_by` keeps the first of equal bounds.
            let first = bounds
                .iter()
                .enumerate()
                .min_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
                .map(|(pos, &(i, _))| (pos, i));
            if let Some((pos, i)) = first {
                let service = placing(i, &view.nodes[i]).service();
                best = Some((pos, score(&service), service));
            }
            for (pos, &(i, lb)) in bounds.iter().enumerate() {
                let Some((at, b, _)) = best else { break };
                if pos == at || !(lb < b || (lb == b && pos < at)) {
                    continue;
                }
                let service = placing(i, &view.nodes[i]).service();
                let t = score(&service);
                if t < b || (t == b && pos < at) {
                    best = Some((pos, t, service));
                }
            }
        }
        let chosen = best.map(|(pos, _, service)| (bounds[pos].0, service));
        self.bounds = bounds;
        chosen
    }

    /// `argmin score` over feasible nodes for the hazard-blind policies.
    fn argmin_by(
        &self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
        score: impl Fn(&NodeView<'_>) -> (f64, f64, f64),
    ) -> Option<NodeIdx> {
        let need = req.kv_need();
        let mut best: Option<(NodeIdx, (f64, f64, f64))> = None;
        for (i, node) in view.candidates() {
            if !node.can_admit(need) {
                continue;
            }
            let s = score(node);
            let s = (nan_as_inf(s.0), nan_as_inf(s.1), nan_as_inf(s.2));
            if out.record_candidates {
                out.candidates.push(CandidateCost {
                    node: i,
                    t: f64::NAN,
                    l: f64::NAN,
                    e: s.0,
                    c_planned: f64::NAN,
                    risk_gain: f64::NAN,
                    dt: f64::NAN,
                });
            }
            let better = match best {
                None => true,
                Some((_, b)) => s.partial_cmp(&b) == Some(std::cmp::Ordering::Less),
            };
            if better {
                best = Some((i, s));
            }
        }
        best.map(|(i, _)| i)
    }

    /// The hazard trigger (`hazard`, `memoryless`): guards first, then every candidate `j`
    /// priced by [`assess_move`]; the move goes to the candidate with the largest `risk_gain`
    /// among those with `risk_gain > h` and `dT < h`. With estimated lengths `dT` is read
    /// one standard error pessimistic, `dT + z sqrt(u_i^2 + u_j^2)` with the spreads of
    /// [`super::band`] (`u = cv (T - T^0)`, `T^0` the remaining output at the unloaded decode
    /// rate): a move must not cost time within the forecast's own error.
    fn hazard_migration(
        &mut self,
        view: &ClusterView<'_>,
        at: OnSource<'_>,
        model: RiskModel,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        let OnSource { req, from, src, fb } = at;
        let params = self.params;
        let h = params.hysteresis_s;
        out.hysteresis_s = h;
        let r_src = remaining_up(view, from);
        let source = price_source(view, at, &params, model, r_src, out);
        if let Err(b) = check_guards(req.planned_hops, source.cost.t, &params) {
            out.outcome = match b {
                Blocked::MaxHops => Outcome::MaxHops,
                Blocked::MinRemaining => Outcome::MinRemaining,
            };
            return None;
        }
        let need = req.kv_need();
        let exhaustive = out.record_candidates;
        let cv = length_cv(req.est_sigma);
        let u_i = cv
            * (source.cost.t - secs(source.remaining, unloaded_decode(view, from, src))).max(0.0);
        // The best candidate that fires (largest risk_gain among those passing the trigger),
        // and the candidate with the largest risk_gain overall, reported when none fires.
        let mut fire: Option<(NodeIdx, MoveAssessment)> = None;
        let mut report: Option<(NodeIdx, MoveAssessment, f64)> = None;
        for (j, dst) in view.candidates() {
            if j == from || !dst.can_admit(need) {
                continue;
            }
            let forecast = move_forecast(view, j, req, source.remaining, &self.params);
            let q = MoveQuery {
                src,
                source: &source,
                dst,
                dst_fallback_prefill: fb.for_node(j, dst.prefill_tok_s),
                params: &params,
                model,
                src_remaining_up: r_src,
                dst_remaining_up: remaining_up(view, j),
                prune: if exhaustive {
                    None
                } else {
                    Some((h, fire.map_or(f64::NEG_INFINITY, |(_, a)| a.risk_gain)))
                },
            };
            let a = price_move_with(
                &q,
                move_cost(src, &source, dst, &params),
                Some(&forecast as DestinationForecast<'_>),
            );
            if out.record_candidates {
                out.candidates.push(CandidateCost {
                    node: j,
                    t: a.t_j,
                    l: a.l_j,
                    e: a.t_j + a.l_j,
                    c_planned: a.mv.cost_s,
                    risk_gain: a.risk_gain,
                    dt: a.dt,
                });
            }
            let rg = if a.risk_gain.is_nan() {
                f64::NEG_INFINITY
            } else {
                a.risk_gain
            };
            if report.is_none_or(|(_, _, best)| rg > best) {
                report = Some((j, a, rg));
            }
            // With estimated lengths `dT` is uncertain: the move must not cost time at one
            // standard error of it ([`super::band`]'s spread on both sides).
            let spread = if cv > 0.0 {
                let d_j = unloaded_decode(view, j, dst);
                let u_j = cv * (a.t_j - secs(source.remaining, d_j)).max(0.0);
                (u_i * u_i + u_j * u_j).sqrt()
            } else {
                0.0
            };
            if !a.pruned
                && trigger_fires(a.risk_gain, a.dt + TIE_BAND_Z * spread, h)
                && fire.is_none_or(|(_, best)| a.risk_gain > best.risk_gain)
            {
                fire = Some((j, a));
            }
        }
        match (fire, report) {
            (Some((j, a)), _) => {
                fill_move(out, j, &a);
                out.outcome = Outcome::Migrate;
                out.chosen = Some(j);
                Some(j)
            }
            (None, Some((j, a, _))) => {
                fill_move(out, j, &a);
                out.outcome = Outcome::Stay;
                None
            }
            (None, None) => {
                out.outcome = Outcome::NoCandidate;
                None
            }
        }
    }

    /// The clairvoyant oracle's move (called by the replay just before the source's known end,
    /// not on the periodic tick: at `end_i - C_t - epsilon` so that a KV transfer fits, and
    /// again at `end_i - epsilon` if it stayed): only when the source's true remaining session
    /// `R_i` is shorter than the request's true remaining time `T_i`. Moving to `j` costs
    /// `C + T_j + L_j` with `L_j` over `C + T_j` from `j`'s true end ([`price_move`]). The
    /// gain is `(T_i + L_i) - (C + T_j + L_j)` (the planned cost counted once), where staying
    /// is priced exactly: the request decodes on `i` until `R_i`, loses `U_i(R_i)` and
    /// finishes the rest at `j`'s speed (`T_i + U_i(R_i)` when both decode at the same rate).
    /// The move goes to the largest positive gain (reported: `e` = staying, `t_j`, `l_j`,
    /// `c_planned`). A KV transfer counts only if it completes before the source's end
    /// (`O_t + c kv/B <= R_i`), else the move is a recompute. No hysteresis, no
    /// `min_remaining`, no `max_hops` (a reference is not noise-limited); overlap is not
    /// modelled.
    fn oracle_migration(
        &mut self,
        view: &ClusterView<'_>,
        at: OnSource<'_>,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        let OnSource { req, from, src, fb } = at;
        let params = Params {
            overlap: false,
            ..self.params
        };
        out.hysteresis_s = 0.0;
        let model = RiskModel::Oracle;
        let r_src = remaining_up(view, from);
        let source = price_source(view, at, &params, model, r_src, out);
        let r = match r_src {
            Some(r) if r < source.cost.t => r,
            _ => {
                out.outcome = Outcome::Stay;
                return None;
            }
        };
        // Staying: the request decodes on the source until it ends at R_i, loses U_i(R_i),
        // and (clairvoyance) finishes the rest on the destination's speed.
        let loss = source.u.at(r);
        let decoded = (source.u.context_at(r) - source.context)
            .max(0.0)
            .min(source.remaining);
        let left = source.remaining - decoded;
        out.l = loss;
        let need = req.kv_need();
        let mut best: Option<(NodeIdx, f64, f64, MoveAssessment)> = None;
        for (j, dst) in view.candidates() {
            if j == from || !dst.can_admit(need) {
                continue;
            }
            let mut mv = planned_move(
                source.context,
                params.kv_bytes_per_token,
                src.bandwidth_bytes_s,
                dst.bandwidth_bytes_s,
                dst.prefill_tok_s,
                &params,
            );
            if mv.method == MoveMethod::Transfer && !(mv.transfer_s <= r) {
                mv.cost_s = mv.recompute_s;
                mv.method = MoveMethod::Recompute;
            }
            let forecast = move_forecast(view, j, req, source.remaining, &self.params);
            let q = MoveQuery {
                src,
                source: &source,
                dst,
                dst_fallback_prefill: fb.for_node(j, dst.prefill_tok_s),
                params: &params,
                model,
                src_remaining_up: r_src,
                dst_remaining_up: remaining_up(view, j),
                prune: None,
            };
            let a = price_move_with(&q, mv, Some(&forecast as DestinationForecast<'_>));
            // gain = (T_i + L_i) - (C + T_j + L_j), the planned cost counted once, with the
            // source's T_i + L_i priced exactly: R_i + U_i(R_i) + the rest at j's speed
            // (= T_i + U_i(R_i) when the two decode at the same rate).
            let stay =
                r + loss + service_time(dst.queue_wait_s, 0.0, 1.0, left, dst.decode_tok_s).total_s;
            let gain = stay - (a.mv.cost_s + a.t_j + a.l_j);
            if out.record_candidates {
                out.candidates.push(CandidateCost {
                    node: j,
                    t: a.t_j,
                    l: a.l_j,
                    e: a.t_j + a.l_j,
                    c_planned: a.mv.cost_s,
                    risk_gain: a.risk_gain,
                    dt: a.dt,
                });
            }
            if !gain.is_nan() && best.is_none_or(|(_, g, _, _)| gain > g) {
                best = Some((j, gain, stay, a));
            }
        }
        match best {
            None => {
                out.outcome = Outcome::NoCandidate;
                None
            }
            Some((j, gain, stay, a)) => {
                fill_move(out, j, &a);
                out.e = stay;
                if gain > 0.0 {
                    out.outcome = Outcome::Migrate;
                    out.chosen = Some(j);
                    Some(j)
                } else {
                    out.outcome = Outcome::Stay;
                    None
                }
            }
        }
    }
}

fn fill_move(out: &mut Explanation, j: NodeIdx, a: &MoveAssessment) {
    out.target = Some(j);
    out.t_j = a.t_j;
    out.l_j = a.l_j;
    out.c_transfer = a.mv.transfer_s;
    out.c_recompute = a.mv.recompute_s;
    out.c_planned = a.mv.cost_s;
    out.method = Some(a.mv.method);
    out.window_s = a.mv.window_s;
    out.risk_gain = a.risk_gain;
    out.dt = a.dt;
}

impl Policy for StandardPolicy {
    fn kind(&self) -> PolicyKind {
        self.kind
    }

    fn place(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        out.reset(self.kind, Decision::Place, req.id);
        out.from = req.node;
        let need = req.kv_need();
        let mut fb = Fallbacks::default();
        let mut feasible: u32 = 0;
        let routes = self.kind.routes_all();
        for (i, n) in view.candidates() {
            if n.can_admit(need) || (routes && routers::routable(n, need)) {
                fb.push(i, n.prefill_tok_s);
                feasible += 1;
            }
        }
        out.considered = u32::try_from(view.nodes.len()).unwrap_or(u32::MAX);
        out.feasible = feasible;
        if feasible == 0 {
            out.outcome = Outcome::NoFeasibleNode;
            return None;
        }
        let model = self.kind.risk_model();
        // With estimated lengths every cost-based policy ranks by its forecast with ties
        // within the forecast's error broken by load ([`super::band`]).
        let cv = length_cv(req.est_sigma);
        // The choice, its cost under `model` and `D_i` when the rule priced them, and the
        // chosen placement's service when the rule forecast it without pricing it.
        let mut known = None;
        let (choice, cost) = match self.kind {
            PolicyKind::Hazard
            | PolicyKind::HazardNomigrate
            | PolicyKind::Memoryless
            | PolicyKind::HazardPooled
            | PolicyKind::HazardTruth
            | PolicyKind::Fastest
                if cv > 0.0 =>
            {
                match self.argmin_banded(view, req, &fb, model, cv, out) {
                    Some((i, c, d)) if self.kind != PolicyKind::Fastest => (Some(i), Some((c, d))),
                    Some((i, _, _)) => (Some(i), None),
                    None => (None, None),
                }
            }
            PolicyKind::Hazard
            | PolicyKind::HazardNomigrate
            | PolicyKind::Memoryless
            | PolicyKind::HazardPooled
            | PolicyKind::HazardTruth
            | PolicyKind::Oracle => match self.argmin_e(view, req, &fb, model, out) {
                Some((i, c, d)) => (Some(i), Some((c, d))),
                None => (None, None),
            },
            PolicyKind::Fastest | PolicyKind::Bound => match self.argmin_t(view, req, out) {
                Some((i, service)) => {
                    known = Some(service);
                    (Some(i), None)
                }
                None => (None, None),
            },
            PolicyKind::LeastLoaded => {
                let pick =
                    self.argmin_by(view, req, out, |n| (n.load(), n.kv_load(), n.queue_wait_s));
                (pick, None)
            }
            PolicyKind::Uptime => {
                let pick = self.argmin_by(view, req, out, |n| (n.queue_wait_s, -n.age_s, 0.0));
                (pick, None)
            }
            PolicyKind::CacheAware => (routers::cache_aware(view, req), None),
            PolicyKind::SessionAffinity => (routers::session_affinity(view, req), None),
            PolicyKind::Random => {
                let k = self.rng.below(u64::from(feasible));
                let pick = view
                    .candidates()
                    .filter(|(_, n)| n.can_admit(need))
                    .nth(usize::try_from(k).unwrap_or(0))
                    .map(|(i, _)| i);
                (pick, None)
            }
        };
        let Some(i) = choice else {
            out.outcome = Outcome::NoFeasibleNode;
            return None;
        };
        let model = if cost.is_some() {
            model
        } else {
            RiskModel::Hazard
        };
        let (cost, d) = match cost {
            Some(c) => c,
            // `argmin_t` prices the context less what the choice caches, as the cost does,
            // unless the request's KV is resident on it (the cost then prefills the rest).
            None => self.cost_of(
                (view, req, &fb),
                i,
                model,
                known.filter(|_| req.node != Some(i) || req.resident_tokens == 0),
            ),
        };
        out.set_node_cost(&cost);
        if self.params.forecast != ForecastKind::Own {
            out.imposed_s = d;
        }
        out.p_interrupt =
            interruption_probability(&view.nodes[i], model, remaining_up(view, i), cost.t);
        out.chosen = Some(i);
        out.outcome = Outcome::Placed;
        Some(i)
    }

    fn check_migration(
        &mut self,
        view: &ClusterView<'_>,
        req: &RequestView,
        from: NodeIdx,
        out: &mut Explanation,
    ) -> Option<NodeIdx> {
        out.reset(self.kind, Decision::Migrate, req.id);
        out.from = Some(from);
        out.considered = u32::try_from(view.nodes.len()).unwrap_or(u32::MAX);
        if !self.kind.migrates() {
            out.outcome = Outcome::MigrationDisabled;
            return None;
        }
        let src = match view.nodes.get(from) {
            Some(n) if n.up => *n,
            _ => {
                out.outcome = Outcome::InvalidSource;
                return None;
            }
        };
        let need = req.kv_need();
        let mut fb = Fallbacks::default();
        let mut feasible: u32 = 0;
        for (j, n) in view.candidates() {
            if j == from {
                fb.push(j, n.prefill_tok_s);
            } else if n.can_admit(need) {
                fb.push(j, n.prefill_tok_s);
                feasible += 1;
            }
        }
        out.feasible = feasible;
        let at = OnSource {
            req,
            from,
            src: &src,
            fb: &fb,
        };
        match self.kind {
            PolicyKind::Oracle => self.oracle_migration(view, at, out),
            kind => self.hazard_migration(view, at, kind.risk_model(), out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survival::curve::Exponential;

    /// A node that decodes at `decode` and prefills at `prefill` tokens/s.
    fn node(c: &Exponential, decode: f64, prefill: f64) -> NodeView<'_> {
        NodeView {
            decode_tok_s: decode,
            prefill_tok_s: prefill,
            bandwidth_bytes_s: 1.25e9,
            slots: 4,
            kv_capacity_tokens: 100_000,
            ..NodeView::new(c)
        }
    }

    /// The retained-state term under each risk model, against the hand computation: a gap of
    /// 100 s or 300 s (half the turns each), a 2,000-token prompt re-prefilled at 4,000
    /// tokens/s (`C_re` = 0.5 s), a turn that completes after 10 s.
    #[test]
    fn the_retained_state_term_reads_the_risk_model() {
        let gap = super::super::retained::ReuseGap::from_steps(&[100.0, 300.0], &[0.5, 0.0])
            .expect("events");
        let c = Exponential { mean: 1000.0 };
        let n = NodeView {
            age_s: 20.0,
            exp_rate_per_s: 1.0 / 250.0,
            ..node(&c, 10.0, 100.0)
        };
        let nodes = [n];
        let view = ClusterView::new(&nodes).with_reuse(Some(&gap));
        let req = RequestView {
            conversation: Some(9),
            ..RequestView::new(1, 2000, 100)
        };
        let params = Params::default();
        let r = |model, view: &ClusterView<'_>, req: &RequestView, params: &Params| {
            retained(view, req, 0, &nodes[0], model, params, 10.0, 4000.0)
        };
        let hand = |mean: f64| {
            let s = |t: f64| (-t / mean).exp();
            0.5 * (0.5 * (s(10.0) - s(100.0)) + 0.5 * (s(10.0) - s(300.0)))
        };
        let got = r(RiskModel::Hazard, &view, &req, &params);
        assert!((got - hand(1000.0)).abs() < 1e-12, "{got}");
        let got = r(RiskModel::Memoryless, &view, &req, &params);
        assert!((got - hand(250.0)).abs() < 1e-12, "{got}");
        // The oracle with no known end: nothing; an end known at 200 s: the 300 s half.
        assert_eq!(r(RiskModel::Oracle, &view, &req, &params), 0.0);
        struct EndsAt(f64);
        impl super::super::model::Foresight for EndsAt {
            fn remaining_up(&self, _: NodeIdx) -> Option<f64> {
                Some(self.0)
            }
        }
        let ends = EndsAt(200.0);
        let known = view.with_foresight(&ends);
        let got = r(RiskModel::Oracle, &known, &req, &params);
        assert!((got - 0.25).abs() < 1e-12, "{got}");
        // The oracle that also knows the next turn: all of `C_re` when the end (200 s) falls
        // between the completion (10 s) and the next turn, nothing when the next turn comes
        // first or never, and the other models ignore the foresight.
        struct Knows(f64, f64);
        impl super::super::model::Foresight for Knows {
            fn remaining_up(&self, _: NodeIdx) -> Option<f64> {
                Some(self.0)
            }
            fn next_turn_s(&self) -> Option<f64> {
                Some(self.1)
            }
        }
        for (end, next, want) in [
            (200.0, 250.0, 0.5),
            (200.0, 150.0, 0.0),
            (200.0, f64::INFINITY, 0.0),
            (5.0, 250.0, 0.0),
        ] {
            let fs = Knows(end, next);
            let got = r(RiskModel::Oracle, &view.with_foresight(&fs), &req, &params);
            assert_eq!(got, want, "end {end}, next {next}");
        }
        let fs = Knows(200.0, 250.0);
        let got = r(RiskModel::Hazard, &view.with_foresight(&fs), &req, &params);
        let announced = r(RiskModel::Hazard, &known, &req, &params);
        assert_eq!(got, announced);
        // No conversation, no gap, or the ablation: 0.
        let alone = RequestView::new(1, 2000, 100);
        assert_eq!(r(RiskModel::Hazard, &view, &alone, &params), 0.0);
        let off = Params {
            retained_state: false,
            ..params
        };
        assert_eq!(r(RiskModel::Hazard, &view, &req, &off), 0.0);
        assert_eq!(
            r(RiskModel::Hazard, &ClusterView::new(&nodes), &req, &params),
            0.0
        );
    }

    /// `fastest` and `bound` choose the same node whether or not they record every candidate,
    /// with infeasible candidates (a down node, a full one) before, between and after the
    /// feasible ones: the search's places count feasible candidates only.
    #[test]
    fn recording_the_candidates_changes_no_placement() {
        let c = Exponential { mean: 1e9 };
        let down = NodeView {
            up: false,
            ..node(&c, 500.0, 1e5)
        };
        let full = NodeView {
            slots_used: 4,
            ..node(&c, 400.0, 1e5)
        };
        let fast = node(&c, 100.0, 1000.0);
        let slow = node(&c, 10.0, 100.0);
        let req = RequestView::new(1, 1000, 500);
        for nodes in [
            vec![down, fast, slow],
            vec![down, fast],
            vec![full, slow, down, fast],
            vec![slow, full, fast, down],
            vec![down, full],
        ] {
            for kind in [PolicyKind::Fastest, PolicyKind::Bound] {
                let view = ClusterView::new(&nodes);
                let mut quick = Explanation::default();
                let a = build(kind, Params::default(), 0).place(&view, &req, &mut quick);
                let mut all = Explanation::recording();
                let b = build(kind, Params::default(), 0).place(&view, &req, &mut all);
                assert_eq!(a, b, "{kind:?} over {} nodes", nodes.len());
                let fastest = nodes
                    .iter()
                    .position(|n| n.up && n.slots_used < n.slots && n.decode_tok_s == 100.0);
                assert_eq!(a, fastest, "{kind:?} over {} nodes", nodes.len());
            }
        }
    }
}
