//! The discrete-event simulation of one run: one policy over one window of the availability
//! trace, one seed.
//!
//! # Serving model
//!
//! * **Admission.** A node holds at most `slots` requests whose KV need fits its capacity. A
//!   request's KV need is its final context `P_r + L_r` (prompt plus every generated token),
//!   reserved whole when it starts on a node, so capacity is never exceeded. Policies see the
//!   estimate-based need [`RequestView::kv_need`] and, as `kv_used_tokens`, the sum of those
//!   scheduler-side reservations; the true lengths stay in the engine.
//! * **KV blocks** (the iteration model only, [`KvBlocks`]). The engine admits as vLLM's does:
//!   a request starts when its context's blocks of 16 tokens (and the block of its first
//!   output token) fit beside the blocks in use, leaving 1 % of them free; a decoder takes
//!   one more block each time it fills its last one. When a decoder needs a block and none is
//!   free ([`Event::KvFull`], computed analytically from the decoders' common rate), the most
//!   recently admitted prefilling or decoding request on the node is preempted (recompute
//!   preemption): it frees its slot and blocks, keeps its whole generated tokens and waits at
//!   the front of the node's queue, and prefills its context again when a completion makes
//!   room. It counts in [`RequestRecord::kv_preemptions`], not as an interruption; a node lost
//!   while it waits re-places it like any queued request. A request can use a node only if
//!   its final context fits the node's blocks less the watermark.
//! * **Placement** ([`Policy::place`]) runs in two passes. Pass 1 shows the true cluster: a
//!   node with a free slot and room is feasible. If the policy picks one whose FIFO queue is
//!   empty and the true need fits, the request starts there; otherwise it joins that node's
//!   FIFO queue. If nothing is feasible, pass 2 shows every up node as free with `queue_wait_s`
//!   set to the estimated wait, and the request joins the FIFO queue of the node the policy
//!   picks. If no up node can ever hold it, it waits in the global pending queue, retried in
//!   order whenever a node comes up, and is dropped (`window-end`) if the window ends first.
//!   Nodes whose capacity is below the request's true need are shown with capacity 0 for that
//!   request (the only use of `L_r` in a view; it reveals nothing about availability).
//! * **Service** (the service-time model, [`crate::policy::service`], whose functions the
//!   engine uses). A started request prefills its context `c = P_r + done` at `p_i`
//!   (`c / p_i` seconds), then decodes its remaining tokens at
//!   `d_i / (1 + f (k - 1))` tokens/s each, `k` the requests decoding on the node and `f` the
//!   batch slowdown factor. TTFT is the end of the first prefill that completes; tokens stream
//!   to the client as they are generated and are never lost.
//! * **Forecasts.** Every decision's [`ClusterView`] carries the engine's live node state as
//!   [`NodeLoads`]: the policies' `T_i` is [`service::forecast`] over it, each resident and
//!   queued request priced by its estimate `L^_r` (never its true length). Each node keeps its
//!   forecast [`Trajectory`], replayed again only after the node changed (every change bumps a
//!   version); with `validate` every cached answer is checked against a fresh forecast.
//! * **Unplanned loss.** When a node's session ends, every request holding it loses its KV: the
//!   generated tokens it streamed are kept (partial tokens are lost), it counts one
//!   interruption and is re-placed at once through the policy; its next prefill re-prefills the
//!   whole context and costs `O_r + c / p_j + sigma` ([`unplanned_recovery_s`], equal to the
//!   policy's `U_j` at the failure). Under the iteration model `O_r + sigma` is waiting time
//!   (the slot held, no GPU work, [`Phase::Stall`]) and the context's `c` tokens are prefill
//!   work in `j`'s steps; a planned move by recompute is served the same way (its overhead
//!   waited, its tokens prefilled on the destination). Requests queued on the node are
//!   re-placed (no cost).
//! * **Planned moves.** Every `check_interval_s` each decoding request (not already moving) is
//!   offered to [`Policy::check_migration`]. A move to `j` needs a free slot and room on `j`
//!   (else it is refused). Without overlap the request stops for the explanation's
//!   `C_planned`: a transfer keeps the source's slot until the move ends (the KV is read from
//!   it; if the source dies meanwhile the move fails as an unplanned loss), a recompute frees it
//!   at once. With overlap (`window_s > 0`, see [`crate::policy::migration::overlapped_move`])
//!   the destination slot is reserved and the source keeps decoding for the window `W`; at
//!   cutover the `g` tokens generated meanwhile are caught up in
//!   `C_planned(g) = min(O_t + g kv / B, O_r + g / p_j)` during which the request makes no
//!   progress. A destination lost during the window cancels the move; a source lost during it
//!   is an unplanned loss.
//! * **Censored ends** ([`crate::replay::CensoredEnds`], `ReplayConfig::censored_ends`). A
//!   session whose end is censored (a user's stop, an observation gap, the end of observation)
//!   never takes its node down: by default (`stay-up`) the node stays up until the window
//!   ends; with `exclude` a node with a censored end inside the window sits the window out.
//!   Each unplanned interruption is recorded with the `end_cause` of the session that caused
//!   it ([`RequestRecord::interruption_causes`]) and the time until the request produces
//!   tokens again ([`RequestRecord::recovery_s`]).
//! * **Ages and foresight.** A node's age is `now - start` of its current session plus the
//!   session's known entry age, the start coming from the trace even when it precedes the
//!   window; a left-truncated session (up when observation began) thus counts from the trace
//!   start, a lower bound. Policies are told the posterior log-sd `sigma` of the estimate
//!   ([`RequestView::est_sigma`], [`crate::replay::estimate`]) so that a request past its estimate keeps a positive
//!   expected remainder. The `oracle`'s [`Foresight`] answers the true remaining time of each
//!   node's current session (censored ends: never); every other policy's answers only
//!   announced ends (below).
//! * **The policies' forecast** ([`NodeLoads`]) replays a node with the service-time model
//!   ([`crate::policy::service`]), every request at its expected length (the `stationary`
//!   forecast takes the newcomer's start from that replay and holds the node's batch for the
//!   rest, [`crate::policy::service::stationary`]). With estimated lengths
//!   and `length_draws = n > 1` ([`Params::length_draws`]) it is the mean over `n` draws of the
//!   unknown lengths instead: in draw `k` every request on the node takes the `u` quantile of
//!   its posterior length `L | L > done`, `ln L ~ N(ln L^, sigma^2)`, `u` a pseudo-random
//!   uniform per request and draw (fixed, so each draw's node trajectory can be cached), and
//!   the newcomer's expected remaining output is multiplied by the `k`-th of `n` stratified
//!   lognormal factors of mean 1 ([`draw_factors`]). `T`, `w` and the delay `D` (`stationary`,
//!   `marginal`) are each the mean of the draws'.
//! * **The clairvoyant oracle.** It sees every request's true output length (its `L^_r` is
//!   `L_r`) and every node's true timeline. It has no periodic tick: whenever one of its
//!   requests starts prefilling or decoding on a node whose known end comes before the
//!   request's true finish (and again whenever its decode rate changes, so a co-decoder that
//!   slows it past the end gets it checked in time), a check is scheduled at
//!   `end_i - C_t - epsilon` (`C_t` the shortest KV transfer it could need, `epsilon` = 1 ms),
//!   where
//!   [`Policy::check_migration`] moves it if that beats the loss (if not, a last check at
//!   `end_i - epsilon`, when only a recompute fits); a prefill that cannot finish
//!   before the end restarts elsewhere at once. When no node can take it (capacity), the loss
//!   is counted in [`RunStats::oracle_forced`]. It is a greedy heuristic, an upper reference,
//!   not a proven optimum.
//! * **Announced ends** ([`UpSession::announced`], the scenario's `nodes.announced_causes`:
//!   a lifetime cap, a maintenance notice). Every policy's view carries the announced end of
//!   each node's current session as its [`Foresight`] (the cost-based policies price it as a
//!   planned hop, [`crate::policy::cost::announced_loss`]; the others ignore it), and the
//!   replay drains such a node for every policy as the oracle's checks do: a prefill that
//!   cannot finish before the end restarts elsewhere at once; a decoding request expected
//!   (by its estimate) to outlast the end is re-placed by the policy with the node hidden
//!   at `end - C_t - epsilon` and moved by the cheaper of a KV transfer that fits and a
//!   recompute, and any request still there at `end - epsilon` by a recompute
//!   ([`RunStats::drained`]); with no room it is lost at the end ([`RunStats::drain_missed`]).
//! * **`bound`** is not simulated: [`crate::replay::bound`] computes it.
//!
//! Time is integer microseconds; the queue is ordered by `(time, seq)`; all randomness comes
//! from [`crate::rng`] streams derived from (seed, window, request index). The same inputs and
//! seed give bit-identical records.
//!
//! # Where things are
//!
//! One state machine ([`Sim`], its state and event loop here) in rooms by concept: `setup`
//! (building a run's state), `placement` (the views a decision reads, the two placement
//! passes, admission, queues and slots), `serving` (prefill, the iteration model's rates and
//! KV, decode, completion), `recovery` (a node's end and return), `migration` (periodic
//! checks, checks before known ends, moves and cut-over), `forecast` (the policies' forecast
//! over the live state) and `checks` (invariants and records). The rooms read this module's
//! state; it names none of them (data flows one way).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::policy::cost::{recovery_wait_s, secs, unplanned_recovery_s, ServiceTime};
use crate::policy::iteration::{self, EngineKind, KvBlocks, StepCoefficients};
use crate::policy::migration::planned_cost;
use crate::policy::model::{conditional_excess, norm_cdf, norm_quantile};
use crate::policy::service::{
    self, decode_end_us, prefill_end_us, prefill_left, progress, Marginal, NodeLoads, NodeServing,
    Resident, ResidentPhase, Trajectory, Waiting, PROBE_ID,
};
use crate::policy::{
    self, ClusterView, Explanation, Foresight, MoveMethod, NodeIdx, NodeView, Params, Policy,
    PolicyKind, RequestView,
};

use super::input::{
    prepare_jobs, run_stream_seed, secs_to_us, validate_params, CensoredEnds, Cluster,
    PreparedJobs, ReplayConfig, ReplayError, ReplayJob, RunCost, UpSession, Workload, US_PER_S,
};
use super::metrics::{DropReason, RequestRecord};
use super::output::{LoggedDecision, RunOutput, RunSpec, RunStats};
use super::queue::{Event, EventQueue};

mod checks;
mod forecast;
mod migration;
mod placement;
mod prefix;
#[cfg(test)]
mod prefix_tests;
mod record;
mod recovery;
mod serving;
mod setup;
mod state;

/// No node.
const NONE: u32 = u32::MAX;

/// A planned move's cut-over: how the context reaches the destination, what it costs under
/// the simple model, and the tokens it recomputes (a recompute's prefill work under the
/// iteration model).
#[derive(Debug, Clone, Copy)]
struct Cut {
    method: MoveMethod,
    cost_s: f64,
    tokens: u64,
}

/// The oracle's safety margin before a known end, us (1 ms).
const ORACLE_EPSILON_US: i64 = 1_000;

/// Runs `spec.policy` (built with [`policy::build`] and [`RunSpec::policy_seed`]) over the
/// window. Validates every input first.
pub fn simulate(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    spec: &RunSpec,
) -> Result<RunOutput, ReplayError> {
    let mut p = policy::build(spec.policy, spec.params, spec.policy_seed());
    simulate_with(cluster, workload, cfg, spec, p.as_mut())
}

/// Runs a caller-supplied policy (its [`Policy::kind`] decides whether it gets foresight and
/// migration checks; `spec.params` gives the engine's constants: check interval, `sigma`,
/// `O_r`, `O_t`, `kv_bytes`).
pub fn simulate_with(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    spec: &RunSpec,
    policy: &mut dyn Policy,
) -> Result<RunOutput, ReplayError> {
    cluster.validate()?;
    cluster.supports(policy.kind())?;
    cfg.validate()?;
    validate_params(&spec.params)?;
    simulate_unchecked(cluster, workload, cfg, spec, policy)
}

/// [`simulate_with`] without validating the cluster and configuration (the grid validates once).
pub(crate) fn simulate_unchecked(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    spec: &RunSpec,
    policy: &mut dyn Policy,
) -> Result<RunOutput, ReplayError> {
    let window_cfg;
    let cfg = match spec.rate_scale {
        Some(rate_scale) if rate_scale != cfg.rate_scale => {
            window_cfg = ReplayConfig { rate_scale, ..*cfg };
            &window_cfg
        }
        _ => cfg,
    };
    let mut out = if policy.kind() == PolicyKind::Bound {
        super::bound::run(cluster, workload, cfg, spec)?
    } else {
        simulate_window(cluster, workload, cfg, spec, policy)?
    };
    let [from, to] = out.scored_s;
    let start = spec.window.start_us;
    out.cost = cluster.cost(
        (start, spec.window.end_us()?),
        (
            start.saturating_add(secs_to_us(from)),
            start.saturating_add(secs_to_us(to)),
        ),
        cfg.censored_ends,
    );
    Ok(out)
}

/// One simulated run over the window (every policy but `bound`).
fn simulate_window(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    spec: &RunSpec,
    policy: &mut dyn Policy,
) -> Result<RunOutput, ReplayError> {
    let end = spec.window.end_us()?;
    let stream = run_stream_seed(spec.seed, spec.window_index as u64);
    let prepared = prepare_jobs(workload, spec.window.length_us, cfg, stream)?;
    let mut sim = Sim::new(cluster, cfg, spec, prepared, end, policy.kind());
    sim.run(policy)?;
    Ok(RunOutput {
        policy: policy.kind(),
        window: spec.window_index,
        seed: spec.seed,
        param: spec.param_index,
        param_label: spec.param_label.clone(),
        window_length_s: spec.window.length_s(),
        scored_s: cfg.scored_span(spec.window.length_s()),
        records: sim.records(),
        stats: sim.stats,
        decisions: std::mem::take(&mut sim.decisions),
        decision_curves: std::mem::take(&mut sim.recorder.curves),
        cost: RunCost::default(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    NotArrived,
    Pending,
    Queued,
    Prefill,
    Decode,
    Moving,
    /// Iteration model: waiting (slot and KV held, no GPU work) before a prefill of
    /// `pf_tokens`: a recovery's stall and recompute overhead, a recompute move's overhead.
    Stall,
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aux {
    None,
    /// Source slot held during a planned transfer.
    Source,
    /// Destination slot reserved during an overlapped move's window.
    Dest,
}

#[derive(Debug, Clone)]
struct Req {
    prompt: u64,
    output: u64,
    est: u64,
    need: u64,
    arrival: i64,
    deadline_s: f64,
    phase: Phase,
    node: u32,
    aux: u32,
    aux_kind: Aux,
    epoch: u32,
    mv_epoch: u32,
    phase_start: i64,
    phase_end: i64,
    done: f64,
    rate: f64,
    /// Iteration model, in `Prefill`: prefill tokens left at `phase_start` (served at `rate`)
    /// and the prefill's admission order (the oldest is served first).
    pf_left: f64,
    pf_seq: u64,
    /// Iteration model: the prefill's tokens in all (what sets its chunk).
    pf_tokens: f64,
    /// Admission order of its current slot (the newest is preempted first for KV).
    adm_seq: u64,
    /// Iteration model: times it was preempted because its node's KV ran out.
    kv_preemptions: u32,
    recovering: bool,
    sched_primary: u64,
    sched_aux: u64,
    queued_work: f64,
    mv_done0: u64,
    first_node: u32,
    last_node: u32,
    stints: u32,
    ttft: Option<i64>,
    finish: Option<i64>,
    rec_unplanned: u64,
    rec_planned: u64,
    kv_bytes: f64,
    interruptions: u32,
    planned: u32,
    /// Unplanned losses not yet recovered (re-prefill not finished) and the sum of their times.
    unrecovered: u32,
    unrecovered_sum_us: i128,
    recovery_us: i128,
    causes: Vec<Arc<str>>,
    chk_epoch: u32,
    /// Cut-over time of an overlapped move in progress (its reserved destination's forecast).
    cutover_at: i64,
    /// The first placement: when (`NEVER`: not yet), the forecast `T` and interruption
    /// probability of the chosen node, how many placements followed, and how it ended.
    placed_at: i64,
    forecast_t: f64,
    forecast_p: f64,
    placements: u32,
    first_fate: Fate,
    /// Its prefix's chained keys in [`Sim::keys`] (`[start, start + len)`) and their block
    /// size (no prefix cache: empty).
    keys: (u32, u32),
    block_tokens: u32,
    /// The node whose prefix cache it holds references on ([`NONE`]: none), that cache's
    /// epoch when it took them, the leading blocks it holds and the prompt tokens they save
    /// (fixed for its stay on the node: every prefill there computes the context less them).
    cache_node: u32,
    cache_epoch: u32,
    held: u32,
    hit: u64,
    /// The prompt tokens read from cache by the prefill that gave its first token.
    first_hit: u64,
    /// Its conversation's key (`None`: unknown).
    conversation: Option<u64>,
    /// The oracle's foresight: the arrival of its conversation's next turn (`i64::MAX`: none,
    /// or not the oracle's run).
    next_turn: i64,
}

/// How a request's first placement ended, for the forecast calibration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Not placed yet, or still there.
    Open,
    /// The node failed while the request held it or waited in its queue.
    Lost,
    /// Completed there.
    Completed,
    /// Left by plan (a move): no longer observed.
    Censored,
}

/// One conversation's idle state.
#[derive(Debug, Clone, Copy)]
struct Idle {
    /// The node whose cache holds it and that cache's epoch.
    node: u32,
    epoch: u32,
    /// The completed turn whose prompt blocks it is.
    req: u32,
    /// The turn's arrival, us.
    arrival: i64,
    /// Its leading prompt blocks cached when the turn completed.
    blocks: u32,
    /// Moves so far.
    hops: u32,
    /// A copy in flight (its destination), or [`NONE`].
    moving_to: u32,
    /// Copies started (the in-flight one's number, so that a stale copy event is ignored).
    copies: u32,
}

/// The conversations' idle states, by conversation key.
type IdleStates = HashMap<u64, Idle>;

/// `placed_at` of a request never placed.
const NEVER: i64 = i64::MIN;

impl Req {
    #[inline]
    fn done_tokens(&self) -> u64 {
        // `done` is in [0, output]; the cast floors.
        self.done as u64
    }
}

#[derive(Debug, Clone)]
struct NodeState {
    up: bool,
    /// Index of the current session (up) or the next one (down).
    sess: usize,
    session_start: i64,
    /// Known age of the current session at its start (left truncation), seconds.
    entry_s: f64,
    slots_used: u32,
    kv_true: u64,
    kv_sched: u64,
    decoding: u32,
    residents: Vec<u32>,
    fifo: VecDeque<u32>,
    queued_work_s: f64,
    /// Iteration model: the scheduled KV overflow ([`Event::KvFull`]) and its epoch.
    kv_at: i64,
    kv_epoch: u32,
    /// Changes whenever anything the forecast reads of the node changes ([`Sim::touch`]).
    version: u64,
    /// The node's prefix cache (iteration engine, a workload with prefixes) and its epoch,
    /// bumped when a node's end destroys it.
    cache: crate::replay::prefix::PrefixCache,
    cache_epoch: u32,
}

/// A node's forecast [`Trajectory`] and the node version it was computed for, with the
/// [`service::Batch`] a newcomer would join in that state (the `stationary` forecast's).
#[derive(Debug, Default)]
struct CachedTrajectory {
    version: Option<u64>,
    trajectory: Trajectory,
    batch: service::Batch,
}

/// The oracle's view of the future: each node's current session end from the trace.
struct TraceForesight<'s> {
    ends: &'s [i64],
    now: i64,
    /// The arrival of the decided request's conversation's next turn, when the oracle knows
    /// it ([`NO_FORESIGHT`]: unknown; `i64::MAX`: no next turn).
    next_turn: i64,
}

/// [`TraceForesight::next_turn`] when the decision does not know the next turn.
const NO_FORESIGHT: i64 = i64::MIN;

impl Foresight for TraceForesight<'_> {
    /// `R_i = (end of the current session - now)` seconds; `None` for a session open at the end
    /// of the trace; 0 for a node that is down.
    fn remaining_up(&self, node: NodeIdx) -> Option<f64> {
        let e = *self.ends.get(node)?;
        if e == UpSession::OPEN_END {
            None
        } else {
            Some(e.saturating_sub(self.now).max(0) as f64 / US_PER_S)
        }
    }

    /// Seconds until the next turn's arrival (`f64::INFINITY` for none).
    fn next_turn_s(&self) -> Option<f64> {
        match self.next_turn {
            NO_FORESIGHT => None,
            i64::MAX => Some(f64::INFINITY),
            t => Some(t.saturating_sub(self.now).max(0) as f64 / US_PER_S),
        }
    }
}

struct Sim<'a> {
    cluster: &'a Cluster,
    cfg: &'a ReplayConfig,
    params: Params,
    oracle: bool,
    /// `sigma` of the estimate noise the policies are told ([`RequestView::est_sigma`]).
    est_sigma: f64,
    now: i64,
    start: i64,
    end: i64,
    tick_us: i64,
    views: Vec<NodeView<'a>>,
    scratch_views: Vec<NodeView<'a>>,
    /// Each up node's current session end as far as the policy may know it
    /// ([`Sim::known_end`]); `i64::MIN` for a down node.
    known_ends: Vec<i64>,
    /// The run checks requests before known ends (the oracle, or any announced end in the
    /// cluster): views carry the known ends as [`Foresight`], and a request that would not
    /// finish before its node's known end is moved off it first.
    drains: bool,
    nodes: Vec<NodeState>,
    reqs: Vec<Req>,
    jobs: Vec<ReplayJob>,
    queue: EventQueue,
    pending: VecDeque<u32>,
    pending_spare: VecDeque<u32>,
    lost: Vec<u32>,
    requeue: Vec<u32>,
    checks: Vec<u32>,
    expl: Explanation,
    decisions: Vec<LoggedDecision>,
    /// The logged decisions' inputs and their curves ([`ReplayConfig::decision_inputs`]).
    recorder: record::Recorder,
    stats: RunStats,
    views_time: i64,
    views_dirty: bool,
    /// The up nodes, ascending: what decisions, view refreshes, ticks and drains visit.
    up_list: Vec<usize>,
    /// Nodes whose view is out of date though they are down (went down since the last
    /// refresh, or never refreshed): refreshed once, then a down node's view stays as it is.
    stale_down: Vec<usize>,
    /// The up nodes with a free slot, ascending: the only nodes a placement's first pass can
    /// choose (a full node cannot admit), so that pass visits and refreshes these alone and a
    /// placement costs O(free nodes), not O(up nodes), when most of the fleet is full.
    free_list: Vec<usize>,
    /// Scratch: the free nodes large enough for one request's true KV need.
    scratch_active: Vec<usize>,
    min_cap: u64,
    /// Scratch buffers of the forecasts ([`LiveLoads`]).
    scratch_residents: RefCell<Vec<Resident>>,
    scratch_waiting: RefCell<Vec<Waiting>>,
    /// Each request's last [`expected_target`] and the `done` it was computed at: a queued
    /// request's is asked on every replay of its node, unchanged while it waits.
    expected_targets: RefCell<Vec<(f64, f64)>>,
    /// Each node's forecast trajectory, recomputed when the node's version changed.
    trajectories: RefCell<Vec<CachedTrajectory>>,
    /// With `validate`: the first forecast whose cached answer differed from a fresh one.
    forecast_mismatch: RefCell<Option<String>>,
    /// Newcomer forecasts that had no answer ([`RunStats::forecast_fallbacks`]).
    forecast_fallbacks: Cell<u64>,
    /// Per draw of the forecast ([`Params::length_draws`] with estimated lengths, else 1): the factor a
    /// newcomer's expected remaining output is multiplied by, `e^(sigma z_k)` at the midpoint
    /// quantiles `z_k` of the draws, normalised to mean 1.
    draw_factors: Vec<f64>,
    /// Each node's iteration-model coefficients (all `None` under the simple model).
    steps: Vec<Option<StepCoefficients>>,
    /// Whether each node gains nothing from batching ([`service::drains`] of its serving
    /// constants, which a run does not change).
    no_batching: Vec<bool>,
    /// Nodes whose rates must be set again at the end of the current event (iteration model).
    pace_dirty: Vec<usize>,
    /// The next prefill's admission order (iteration model).
    next_pf_seq: u64,
    /// The KV tokens a lone request may need on each node: its capacity (simple model), its
    /// blocks less the admission watermark (iteration model).
    rooms: Vec<u64>,
    /// Scratch of the KV overflow computation.
    kv_decoders: Vec<(i64, f64, f64)>,
    kv_order: Vec<(i64, usize, u64)>,
    /// Every request's prefix keys, back to back ([`Req::keys`]); empty without caching.
    keys: Vec<u64>,
    /// The workload's reuse gap when nodes cache prefixes ([`ClusterView::reuse`]).
    reuse: Option<crate::policy::retained::ReuseGap>,
    /// Conversations' idle prefix state ([`state`]) and whether the run moves it, under the
    /// risk model of the policy.
    idle: IdleStates,
    idle_migration: bool,
    risk: crate::policy::cost::RiskModel,
    /// The policy is a router ([`PolicyKind::routes_all`]): one placement pass over every up
    /// node.
    routes_all: bool,
}

/// Known age of a session at its start, seconds (non-finite or negative as 0).
fn entry_of(s: &UpSession) -> f64 {
    if s.entry_s.is_finite() && s.entry_s > 0.0 {
        s.entry_s
    } else {
        0.0
    }
}

/// The end of a session as a policy may know it: for the oracle the end the replay plays
/// (its end, or [`UpSession::OPEN_END`] when censored: the node stays up, "never fails"); for
/// every other policy only an announced end ([`UpSession::end_announced`]), else
/// [`UpSession::OPEN_END`] (unknown).
fn known_end_of(s: &UpSession, oracle: bool) -> i64 {
    if s.end_censored() || !(oracle || s.announced) {
        UpSession::OPEN_END
    } else {
        s.end_us
    }
}

fn invariant(time_us: i64, what: impl Into<String>) -> ReplayError {
    ReplayError::Invariant {
        time_us,
        what: what.into(),
    }
}

impl<'a> Sim<'a> {
    /// Marks node `i` (if any) as changed for the forecast: any change of its slots, queue,
    /// state or of a resident's phase, rate or timing.
    #[inline]
    /// Keeps node `i`'s membership of the free list (up with a free slot) current; called
    /// wherever its slots or its up state change.
    fn sync_free(&mut self, i: usize) {
        let free = match (self.nodes.get(i), self.cluster.nodes.get(i)) {
            (Some(st), Some(n)) => st.up && st.slots_used < n.spec.slots,
            _ => false,
        };
        match (self.free_list.binary_search(&i), free) {
            (Err(k), true) => self.free_list.insert(k, i),
            (Ok(k), false) => {
                self.free_list.remove(k);
            }
            _ => {}
        }
    }

    fn touch(&mut self, i: usize) {
        if let Some(st) = self.nodes.get_mut(i) {
            st.version = st.version.wrapping_add(1);
        }
    }

    /// [`Sim::touch`] of every node request `r` holds (its primary and auxiliary slots).
    #[inline]
    fn touch_req(&mut self, r: u32) {
        let (node, aux) = {
            let q = &self.reqs[r as usize];
            (q.node, q.aux)
        };
        if node != NONE {
            self.touch(node as usize);
        }
        if aux != NONE {
            self.touch(aux as usize);
        }
    }

    #[inline]
    fn schedule(&mut self, t: i64, ev: Event) {
        if t < self.end && self.queue.push(t, ev) {
            // The superseded phase end, counted as the stale pop it replaces.
            self.stats.events += 1;
            self.stats.stale_events += 1;
        }
    }

    fn run(&mut self, policy: &mut dyn Policy) -> Result<(), ReplayError> {
        while let Some(ev) = self.queue.pop() {
            if ev.time >= self.end {
                break;
            }
            self.now = ev.time;
            self.stats.events += 1;
            match ev.event {
                Event::Arrival(r) => self.on_arrival(policy, r)?,
                Event::PhaseEnd { req, epoch } => {
                    if self.reqs[req as usize].epoch == epoch {
                        self.on_phase_end(req)?;
                    } else {
                        self.stats.stale_events += 1;
                    }
                }
                Event::Cutover { req, epoch } => self.on_cutover(req, epoch),
                Event::NodeDown(n) => self.on_node_down(policy, n)?,
                Event::NodeUp(n) => self.on_node_up(policy, n)?,
                Event::Tick => self.on_tick(policy)?,
                Event::EndCheck { req, epoch } => {
                    if self.reqs[req as usize].chk_epoch == epoch {
                        self.on_end_check(policy, req);
                    } else {
                        self.stats.stale_events += 1;
                    }
                }
                Event::StateCopy { conversation, copy } => self.on_state_copy(conversation, copy),
                Event::KvFull { node, epoch } => {
                    let st = &self.nodes[node as usize];
                    if st.up && st.kv_epoch == epoch && st.kv_at == self.now {
                        self.on_kv_full(node as usize);
                    } else {
                        self.stats.stale_events += 1;
                    }
                }
            }
            self.flush_pace();
            if self.cfg.validate {
                self.check()?;
            }
        }
        self.now = self.end;
        self.stats.forecast_fallbacks = self.forecast_fallbacks.get();
        Ok(())
    }
}
