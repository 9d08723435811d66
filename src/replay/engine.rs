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
//!   start, a lower bound. Policies are told the estimate's noise `sigma`
//!   ([`RequestView::est_sigma`]) so that a request past its estimate keeps a positive
//!   expected remainder. The `oracle`'s [`Foresight`] answers the true remaining time of each
//!   node's current session (censored ends: never); every other policy's answers only
//!   announced ends (below).
//! * **The policies' forecast** ([`NodeLoads`]) replays a node with the service-time model
//!   ([`crate::policy::service`]), every request at its expected length. With estimated lengths
//!   and `length_draws = n > 1` ([`Params::length_draws`]) it is the mean over `n` draws of the
//!   unknown lengths instead: in draw `k` every request on the node takes the `u` quantile of
//!   its posterior length `L | L > done`, `ln L ~ N(ln L^, sigma^2)`, `u` a pseudo-random
//!   uniform per request and draw (fixed, so each draw's node trajectory can be cached), and
//!   the newcomer's expected remaining output is multiplied by the `k`-th of `n` stratified
//!   lognormal factors of mean 1 ([`draw_factors`]). `T`, `w` and the `marginal` delay `D` are
//!   each the mean of the draws'.
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
//! Size: over 800 lines because the discrete-event simulation is one state machine (arrivals,
//! phases, node up/down, migration, cut-over); its handlers mutate the same state and are easier
//! to check against each other in one place.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::policy::cost::{secs, unplanned_recovery_s, ServiceTime};
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
    ReplayConfig, ReplayError, ReplayJob, RunCost, UpSession, Workload, US_PER_S,
};
use super::metrics::{DropReason, RequestRecord};
use super::output::{LoggedDecision, RunOutput, RunSpec, RunStats};
use super::queue::{Event, EventQueue};

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
        start.saturating_add(secs_to_us(from)),
        start.saturating_add(secs_to_us(to)),
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
    let jobs = prepare_jobs(workload, spec.window.length_us, cfg, stream)?;
    let mut sim = Sim::new(cluster, cfg, spec, jobs, end, policy.kind());
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
}

/// A node's forecast [`Trajectory`] and the node version it was computed for.
#[derive(Debug, Default)]
struct CachedTrajectory {
    version: Option<u64>,
    trajectory: Trajectory,
}

/// The oracle's view of the future: each node's current session end from the trace.
struct TraceForesight<'s> {
    ends: &'s [i64],
    now: i64,
}

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
    /// Each node's forecast trajectory, recomputed when the node's version changed.
    trajectories: RefCell<Vec<CachedTrajectory>>,
    /// With `validate`: the first forecast whose cached answer differed from a fresh one.
    forecast_mismatch: RefCell<Option<String>>,
    /// Per draw of the forecast ([`Params::length_draws`] with estimated lengths, else 1): the factor a
    /// newcomer's expected remaining output is multiplied by, `e^(sigma z_k)` at the midpoint
    /// quantiles `z_k` of the draws, normalised to mean 1.
    draw_factors: Vec<f64>,
    /// Each node's iteration-model coefficients (all `None` under the simple model).
    steps: Vec<Option<StepCoefficients>>,
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
}

/// Output tokens decoding request `q` has generated by `now` ([`progress`]).
fn decoded_at(q: &Req, now: i64) -> f64 {
    progress(
        q.done,
        q.rate,
        q.phase_start,
        q.phase_end,
        now,
        q.output as f64,
    )
}

/// The tokens request `q` is expected to generate in total, from its estimate `L^_r` (never its
/// true length): `L^_r` while it has fewer, else `done + E[L - done | L > done]` under the
/// estimate's noise `sigma` (one token past the estimate when `sigma = 0`), as
/// [`RequestView::remaining_expected`] prices a request.
fn expected_target(q: &Req, sigma: f64) -> f64 {
    expected_total(q.est as f64, q.done, sigma)
}

/// [`expected_target`] of a request with estimate `est` that has generated `done` tokens.
fn expected_total(est: f64, done: f64, sigma: f64) -> f64 {
    if sigma > 0.0 && est > 0.0 {
        done + conditional_excess(est, sigma, done).max(1.0)
    } else if done < est {
        est
    } else {
        done + 1.0
    }
}

/// The tokens request `q` generates in total in draw `k` of `draws` of the forecast: with
/// one draw (or exact lengths), [`expected_target`]; else a draw of its posterior length
/// `L | L > done`, `ln L ~ N(ln L^_r, sigma^2)`: the quantile at `u` uniform on (0, 1),
/// pseudo-random per request and draw (so that the draws of different requests are
/// independent, and a request's draw never changes while the node's state holds).
fn draw_target(q: &Req, sigma: f64, k: usize, draws: usize, id: u32) -> f64 {
    let est = q.est as f64;
    if draws <= 1 || !(sigma > 0.0) || !(est > 0.0) {
        return expected_target(q, sigma);
    }
    let u = unit_draw(u64::from(id), k);
    let l = posterior_quantile(est, sigma, q.done, u);
    l.max(q.done + 1.0)
}

/// The multipliers of a newcomer's expected remaining output in the forecast's `draws` draws
/// ([`Params::length_draws`]): one factor 1 with exact lengths (`sigma = 0`) or one draw, else
/// `draws` factors `e^(sigma z_k)`, `z_k` the standard normal quantile at
/// `(k + 1/2) / draws`, normalised to mean 1 (so that the mean of the draws' remaining outputs
/// is the expected one).
fn draw_factors(sigma: f64, draws: u32) -> Vec<f64> {
    if !(sigma > 0.0) || draws <= 1 {
        return vec![1.0];
    }
    let n = f64::from(draws);
    let raw: Vec<f64> = (0..draws)
        .map(|k| (sigma * norm_quantile((f64::from(k) + 0.5) / n)).exp())
        .collect();
    let mean = raw.iter().sum::<f64>() / raw.len() as f64;
    raw.into_iter().map(|x| x / mean).collect()
}

/// The waiting part of a recovery under the iteration model: the stall penalty and the
/// recompute overhead (as [`unplanned_recovery_s`] counts them, without the prefill).
fn recovery_stall_s(p: &Params) -> f64 {
    p.stall_penalty_s.max(0.0) + p.recompute_overhead_s.max(0.0)
}

/// `w` with its remaining output multiplied by `m`.
fn scaled(w: Waiting, m: f64) -> Waiting {
    Waiting {
        target: w.done + (w.target - w.done) * m,
        ..w
    }
}

/// A uniform draw on (0, 1) for request `id`, draw `k` (SplitMix64 of both).
fn unit_draw(id: u64, k: usize) -> f64 {
    // SplitMix64's finaliser of a key unique per (id, k).
    let mut z = id.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(
        (k as u64)
            .wrapping_add(1)
            .wrapping_mul(0xD1B5_4A32_D192_ED03),
    );
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
}

/// The `u` quantile of `L | L > done` for `ln L ~ N(ln median, sigma^2)`.
fn posterior_quantile(median: f64, sigma: f64, done: f64, u: f64) -> f64 {
    let mu = median.ln();
    let p0 = if done > 0.0 {
        norm_cdf((done.ln() - mu) / sigma)
    } else {
        0.0
    };
    let p = (p0 + u * (1.0 - p0)).clamp(1e-12, 1.0 - 1e-12);
    (mu + sigma * norm_quantile(p)).exp()
}

/// The engine's live node state as the policies' forecast reads it ([`NodeLoads`]).
struct LiveLoads<'s> {
    cluster: &'s Cluster,
    /// Each node's iteration-model coefficients (`None`: the simple model).
    steps: &'s [Option<StepCoefficients>],
    batch_slowdown: f64,
    nodes: &'s [NodeState],
    reqs: &'s [Req],
    params: &'s Params,
    sigma: f64,
    /// The forecast's draws of the unknown lengths, each with its multiplier of a newcomer's
    /// expected remaining output ([`Sim::draw_factors`]); one factor 1 with exact lengths.
    factors: &'s [f64],
    now: i64,
    residents: &'s RefCell<Vec<Resident>>,
    waiting: &'s RefCell<Vec<Waiting>>,
    trajectories: &'s RefCell<Vec<CachedTrajectory>>,
    /// `Some` with `validate`: every answer is checked against a fresh [`service::forecast`].
    mismatch: Option<&'s RefCell<Option<String>>>,
}

impl LiveLoads<'_> {
    /// The answer to `ask` on node `i`, from the node's [`Trajectory`] (recomputed only when
    /// the node changed since, or when the question needs the residents' outcomes and a queued
    /// request was appended since); the delay is 0 unless `ask` is [`Ask::Marginal`].
    fn run(&self, i: usize, ask: Ask) -> Option<Marginal> {
        let draws = self.factors.len();
        if draws == 1 {
            return self.run_draw(i, 0, ask);
        }
        let (mut start, mut total, mut imposed) = (0.0, 0.0, 0.0);
        for (k, &m) in self.factors.iter().enumerate() {
            let ask = match ask {
                Ask::Newcomer(w) => Ask::Newcomer(scaled(w, m)),
                Ask::Marginal(w) => Ask::Marginal(scaled(w, m)),
                Ask::Resident(id) => Ask::Resident(id),
            };
            let got = self.run_draw(i, k, ask)?;
            start += got.time.start_s;
            total += got.time.total_s;
            imposed += got.imposed_s;
        }
        let n = draws as f64;
        Some(Marginal {
            time: ServiceTime {
                start_s: start / n,
                total_s: total / n,
            },
            imposed_s: imposed / n,
        })
    }

    /// [`LiveLoads::run`] in draw `k` of the unknown lengths.
    fn run_draw(&self, i: usize, k: usize, ask: Ask) -> Option<Marginal> {
        let st = self.nodes.get(i)?;
        if !st.up {
            return None;
        }
        let mut cache = self.trajectories.borrow_mut();
        let entry = cache.get_mut(i * self.factors.len() + k)?;
        let stale = entry.version != Some(st.version)
            || !entry.trajectory.holds_at(self.now)
            || (!matches!(ask, Ask::Newcomer(_)) && !entry.trajectory.residents_known());
        if stale {
            let mut residents = self.residents.borrow_mut();
            let mut waiting = self.waiting.borrow_mut();
            let state = self.state(i, k, &mut residents, &mut waiting)?;
            entry.trajectory.compute(state);
            entry.version = Some(st.version);
        }
        let own = |time: ServiceTime| Marginal {
            time,
            imposed_s: 0.0,
        };
        let got = match ask {
            Ask::Newcomer(w) => entry
                .trajectory
                .newcomer(w, self.now, &mut self.residents.borrow_mut())
                .map(own),
            Ask::Marginal(w) => {
                entry
                    .trajectory
                    .newcomer_marginal(w, self.now, &mut self.residents.borrow_mut())
            }
            Ask::Resident(id) => entry.trajectory.resident(id, self.now).map(own),
        };
        if let Some(slot) = self.mismatch {
            let mut residents = self.residents.borrow_mut();
            let mut waiting = self.waiting.borrow_mut();
            let fresh =
                self.state(i, k, &mut residents, &mut waiting)
                    .and_then(|state| match ask {
                        Ask::Newcomer(w) => service::forecast(state, Some(w), PROBE_ID).map(own),
                        Ask::Marginal(w) => service::forecast_marginal(state, w),
                        Ask::Resident(id) => service::forecast(state, None, id).map(own),
                    });
            if fresh != got {
                slot.borrow_mut().get_or_insert_with(|| {
                    format!(
                        "node {i}: cached forecast {got:?} of {ask:?} differs from a fresh one \
                         {fresh:?}"
                    )
                });
            }
        }
        got
    }

    /// Queued request `r` of node `i` as the forecast reads it in draw `k`.
    fn waiting_of(&self, i: usize, r: u32, k: usize) -> Waiting {
        let spec = &self.cluster.nodes[i].spec;
        let p = &self.params;
        let q = &self.reqs[r as usize];
        let ctx = q.prompt.saturating_add(q.done_tokens()) as f64;
        let (start_s, stall_s) = if q.recovering {
            let dur = unplanned_recovery_s(
                ctx,
                spec.prefill_tok_s,
                p.stall_penalty_s,
                p.recompute_overhead_s,
            );
            (dur, recovery_stall_s(p))
        } else {
            (secs(ctx, spec.prefill_tok_s), 0.0)
        };
        Waiting {
            id: u64::from(r),
            kv: q.prompt.saturating_add(q.est.max(q.done_tokens())),
            prompt: q.prompt,
            start_s,
            prefill: true,
            stall_s,
            tokens: ctx,
            done: q.done,
            target: draw_target(q, self.sigma, k, self.factors.len(), r),
        }
    }

    /// Node `i`'s state as [`service::forecast`] reads it in draw `k`, in the two buffers.
    fn state<'b>(
        &self,
        i: usize,
        k: usize,
        residents: &'b mut Vec<Resident>,
        waiting: &'b mut Vec<Waiting>,
    ) -> Option<service::NodeState<'b>> {
        let st = self.nodes.get(i)?;
        let spec = &self.cluster.nodes.get(i)?.spec;
        let step = self.steps.get(i).copied().flatten();
        residents.clear();
        waiting.clear();
        let me = i as u32;
        for &r in &st.residents {
            let q = &self.reqs[r as usize];
            let target = draw_target(q, self.sigma, k, self.factors.len(), r);
            let (kv, phase) = if q.node == me {
                let phase = match q.phase {
                    Phase::Decode => ResidentPhase::Decoding {
                        done: q.done,
                        rate: q.rate,
                        since_us: q.phase_start,
                        end_us: decode_end_us(q.phase_start, q.done, target, q.rate),
                    },
                    Phase::Stall => ResidentPhase::Stalled {
                        at_us: q.phase_end,
                        tokens: q.pf_tokens,
                        done: q.done,
                    },
                    Phase::Prefill if step.is_some() => ResidentPhase::Prefilling {
                        left: q.pf_left,
                        rate: q.rate,
                        since_us: q.phase_start,
                        end_us: q.phase_end,
                        seq: q.pf_seq,
                        tokens: q.pf_tokens,
                        done: q.done,
                    },
                    p => ResidentPhase::Starting {
                        at_us: q.phase_end,
                        done: q.done,
                        prefill: p == Phase::Prefill,
                    },
                };
                (q.sched_primary, phase)
            } else if q.aux_kind == Aux::Source {
                let phase = ResidentPhase::Held {
                    at_us: q.phase_end,
                    done: q.done,
                };
                (q.sched_aux, phase)
            } else {
                // An overlapped move's reserved destination: decoding here from the cut-over,
                // with the tokens expected by then.
                let done = (q.done + q.rate * (q.cutover_at - q.phase_start) as f64 / US_PER_S)
                    .min(target);
                let phase = ResidentPhase::Starting {
                    at_us: q.cutover_at,
                    done,
                    prefill: false,
                };
                (q.sched_aux, phase)
            };
            residents.push(Resident {
                id: u64::from(r),
                kv,
                prompt: q.prompt,
                seq: q.adm_seq,
                target,
                phase,
            });
        }
        for &r in &st.fifo {
            waiting.push(self.waiting_of(i, r, k));
        }
        if let Some(c) = &step {
            // Within an event the engine sets the node's rates at its end: the forecast sets
            // them now (a no-op when they are current).
            service::repace(residents, c, self.now);
        }
        Some(service::NodeState {
            serving: NodeServing {
                decode_tok_s: spec.decode_tok_s,
                batch_slowdown: self.batch_slowdown,
                slots: spec.slots,
                kv_capacity_tokens: spec.kv_capacity_tokens,
                step,
            },
            now_us: self.now,
            residents,
            queue: waiting,
        })
    }
}

/// A question to a node's forecast ([`LiveLoads::run`]).
#[derive(Debug, Clone, Copy)]
enum Ask {
    /// [`service::forecast`] of a newcomer.
    Newcomer(Waiting),
    /// [`service::forecast_marginal`] of a newcomer.
    Marginal(Waiting),
    /// [`service::forecast`] of a request on the node.
    Resident(u64),
}

impl NodeLoads for LiveLoads<'_> {
    fn forecast_newcomer(&self, node: NodeIdx, newcomer: Waiting) -> Option<ServiceTime> {
        self.run(node, Ask::Newcomer(newcomer)).map(|m| m.time)
    }

    fn forecast_newcomer_marginal(&self, node: NodeIdx, newcomer: Waiting) -> Option<Marginal> {
        self.run(node, Ask::Marginal(newcomer))
    }

    fn forecast_resident(&self, node: NodeIdx, id: u64) -> Option<ServiceTime> {
        self.run(node, Ask::Resident(id)).map(|m| m.time)
    }

    fn unloaded_decode_tok_s(&self, node: NodeIdx) -> f64 {
        self.cluster
            .nodes
            .get(node)
            .map_or(0.0, |n| n.spec.decode_tok_s)
    }
}

/// The forecast over `$sim`'s live state, borrowing only the fields it reads (so that a
/// decision can fill `$sim.expl` meanwhile).
macro_rules! live_loads {
    ($sim:expr) => {
        LiveLoads {
            cluster: $sim.cluster,
            steps: &$sim.steps,
            batch_slowdown: $sim.cfg.batch_slowdown,
            nodes: &$sim.nodes,
            reqs: &$sim.reqs,
            params: &$sim.params,
            sigma: $sim.est_sigma,
            factors: &$sim.draw_factors,
            now: $sim.now,
            residents: &$sim.scratch_residents,
            waiting: &$sim.scratch_waiting,
            trajectories: &$sim.trajectories,
            mismatch: $sim.cfg.validate.then_some(&$sim.forecast_mismatch),
        }
    };
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
    fn new(
        cluster: &'a Cluster,
        cfg: &'a ReplayConfig,
        spec: &RunSpec,
        jobs: Vec<ReplayJob>,
        end: i64,
        kind: PolicyKind,
    ) -> Sim<'a> {
        let start = spec.window.start_us;
        let p_max = cluster.max_prefill();
        let d_max = cluster.max_decode();
        let oracle = kind == PolicyKind::Oracle;
        let reqs: Vec<Req> = jobs
            .iter()
            .map(|j| Req {
                prompt: j.prompt_tokens,
                output: j.output_tokens,
                // The clairvoyant oracle knows every true output length.
                est: if oracle {
                    j.output_tokens
                } else {
                    j.est_output_tokens
                },
                need: j.prompt_tokens.saturating_add(j.output_tokens),
                arrival: start + j.arrival_us,
                deadline_s: cfg.slo_factor
                    * (secs(j.prompt_tokens as f64, p_max) + secs(j.output_tokens as f64, d_max)),
                phase: Phase::NotArrived,
                node: NONE,
                aux: NONE,
                aux_kind: Aux::None,
                epoch: 0,
                mv_epoch: 0,
                phase_start: 0,
                phase_end: 0,
                done: 0.0,
                rate: 0.0,
                pf_left: 0.0,
                pf_seq: 0,
                adm_seq: 0,
                kv_preemptions: 0,
                pf_tokens: 0.0,
                recovering: false,
                sched_primary: 0,
                sched_aux: 0,
                queued_work: 0.0,
                mv_done0: 0,
                first_node: NONE,
                last_node: NONE,
                stints: 0,
                ttft: None,
                finish: None,
                rec_unplanned: 0,
                rec_planned: 0,
                kv_bytes: 0.0,
                interruptions: 0,
                planned: 0,
                unrecovered: 0,
                unrecovered_sum_us: 0,
                recovery_us: 0,
                causes: Vec::new(),
                chk_epoch: 0,
                cutover_at: 0,
                placed_at: NEVER,
                forecast_t: f64::NAN,
                forecast_p: f64::NAN,
                placements: 0,
                first_fate: Fate::Open,
            })
            .collect();
        let n = cluster.nodes.len();
        let mut queue = EventQueue::with_capacity(2 * n + 64 + reqs.len().min(1 << 16));
        let mut nodes = Vec::with_capacity(n);
        let mut known_ends = Vec::with_capacity(n);
        let mut views = Vec::with_capacity(n);
        for (i, node) in cluster.nodes.iter().enumerate() {
            let excluded =
                cfg.censored_ends == CensoredEnds::Exclude && node.censored_end_within(start, end);
            let k = if excluded {
                node.sessions.len()
            } else {
                node.session_index_after(start)
            };
            let s = node.sessions.get(k);
            let up = s.is_some_and(|s| s.start_us <= start);
            let slots = node.spec.slots;
            nodes.push(NodeState {
                up,
                sess: k,
                session_start: if up {
                    s.map_or(start, |s| s.start_us)
                } else {
                    0
                },
                entry_s: if up { s.map_or(0.0, entry_of) } else { 0.0 },
                slots_used: 0,
                kv_true: 0,
                kv_sched: 0,
                decoding: 0,
                residents: Vec::with_capacity(slots.min(4096) as usize + 1),
                fifo: VecDeque::with_capacity(8),
                queued_work_s: 0.0,
                kv_at: service::FOREVER_US,
                kv_epoch: 0,
                version: 0,
            });
            known_ends.push(match s {
                Some(s) if up => known_end_of(s, oracle),
                _ => i64::MIN,
            });
            if let Some(s) = s {
                // A censored end never takes the node down (`CensoredEnds::StayUp`; under
                // `Exclude` a node with one in the window has no session here).
                if up {
                    if !s.end_censored() && s.end_us < end {
                        queue.push(s.end_us, Event::NodeDown(i as u32));
                    }
                } else if s.start_us < end {
                    queue.push(s.start_us, Event::NodeUp(i as u32));
                }
            }
            views.push(NodeView {
                up,
                age_s: 0.0,
                slots,
                slots_used: 0,
                kv_capacity_tokens: node.spec.kv_capacity_tokens,
                kv_used_tokens: 0,
                queue_wait_s: 0.0,
                decode_tok_s: node.spec.decode_tok_s,
                prefill_tok_s: node.spec.prefill_tok_s,
                bandwidth_bytes_s: node.spec.bandwidth_bytes_s,
                // `hazard-truth` reads the generating law (checked present by
                // `Cluster::supports`); every other policy the fitted curve.
                survival: match (&node.truth, kind == PolicyKind::HazardTruth) {
                    (Some(t), true) => &**t,
                    _ => &*node.survival,
                },
                exp_rate_per_s: node.exp_rate_per_s,
            });
        }
        if let Some(j) = jobs.first() {
            queue.push(start + j.arrival_us, Event::Arrival(0));
        }
        let params = spec.params;
        // The oracle checks just before each known end instead of on the tick.
        let tick_us =
            if kind.migrates() && kind != PolicyKind::Oracle && params.check_interval_s > 0.0 {
                secs_to_us(params.check_interval_s).max(1)
            } else {
                0
            };
        if tick_us > 0 && start.saturating_add(tick_us) < end {
            queue.push(start + tick_us, Event::Tick);
        }
        let rooms: Vec<u64> = cluster
            .nodes
            .iter()
            .map(|n| match cfg.engine {
                EngineKind::Simple => n.spec.kv_capacity_tokens,
                EngineKind::Iteration => KvBlocks::of(n.spec.kv_capacity_tokens).room_tokens(),
            })
            .collect();
        let min_cap = rooms.iter().copied().min().unwrap_or(0);
        let mut expl = if cfg.decision_log > 0 {
            Explanation::recording()
        } else {
            Explanation::default()
        };
        expl.candidates
            .reserve(if cfg.decision_log > 0 { n } else { 0 });
        let nodes_up: Vec<bool> = nodes.iter().map(|s: &NodeState| s.up).collect();
        let est_sigma = if kind == PolicyKind::Oracle {
            0.0
        } else {
            cfg.estimator.noise_sigma()
        };
        let factors = draw_factors(est_sigma, params.length_draws);
        Sim {
            cluster,
            cfg,
            params,
            oracle: kind == PolicyKind::Oracle,
            est_sigma,
            now: start,
            start,
            end,
            tick_us,
            scratch_views: views.clone(),
            views,
            known_ends,
            drains: oracle
                || cluster
                    .nodes
                    .iter()
                    .any(|n| n.sessions.iter().any(UpSession::end_announced)),
            nodes,
            reqs,
            jobs,
            queue,
            pending: VecDeque::with_capacity(16),
            pending_spare: VecDeque::with_capacity(16),
            lost: Vec::with_capacity(64),
            requeue: Vec::with_capacity(64),
            checks: Vec::with_capacity(256),
            expl,
            decisions: Vec::with_capacity(cfg.decision_log.min(1 << 16)),
            stats: RunStats::default(),
            views_time: i64::MIN,
            views_dirty: true,
            up_list: (0..n).filter(|&i| nodes_up[i]).collect(),
            stale_down: (0..n).filter(|&i| !nodes_up[i]).collect(),
            free_list: (0..n)
                .filter(|&i| nodes_up[i] && cluster.nodes[i].spec.slots > 0)
                .collect(),
            scratch_active: Vec::new(),
            min_cap,
            scratch_residents: RefCell::new(Vec::with_capacity(64)),
            scratch_waiting: RefCell::new(Vec::with_capacity(16)),
            trajectories: RefCell::new(
                (0..cluster.nodes.len() * factors.len())
                    .map(|_| CachedTrajectory::default())
                    .collect(),
            ),
            forecast_mismatch: RefCell::new(None),
            draw_factors: factors,
            steps: cluster
                .nodes
                .iter()
                .map(|n| match cfg.engine {
                    EngineKind::Simple => None,
                    EngineKind::Iteration => {
                        StepCoefficients::of(n.spec.prefill_tok_s, n.spec.decode_tok_s, n.spec.step)
                    }
                })
                .collect(),
            pace_dirty: Vec::new(),
            next_pf_seq: 0,
            rooms,
            kv_decoders: Vec::new(),
            kv_order: Vec::new(),
        }
    }

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

    /// Node `i` changed by request `r` joining its queue's tail: its forecast trajectory, if
    /// current, is extended ([`Trajectory::append`]) instead of replayed again.
    fn enqueue_forecast(&mut self, i: usize, r: u32) {
        let draws = self.draw_factors.len();
        let before = Some(self.nodes[i].version);
        self.touch(i);
        let version = Some(self.nodes[i].version);
        let now = self.now;
        for k in 0..draws {
            // Only a trajectory current before the change is extended.
            if self.trajectories.borrow()[i * draws + k].version != before {
                continue;
            }
            let w = live_loads!(self).waiting_of(i, r, k);
            let mut cache = self.trajectories.borrow_mut();
            if cache[i * draws + k].trajectory.append(w, now) {
                cache[i * draws + k].version = version;
            }
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
        if t < self.end {
            self.queue.push(t, ev);
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
        Ok(())
    }

    // ----- views -------------------------------------------------------------------------

    /// Effective per-request decode rate on node `i` for a request joining `k` decoders.
    #[inline]
    fn decode_rate(&self, i: usize, decoding_others: u32) -> f64 {
        service::decode_rate(
            self.cluster.nodes[i].spec.decode_tok_s,
            self.cfg.batch_slowdown,
            decoding_others.saturating_add(1),
        )
    }

    /// Estimated seconds until request `r` (holding node `i`) frees its slot there, from the
    /// estimate `L^_r` (never the true length).
    fn est_remaining(&self, r: u32, i: usize) -> f64 {
        let q = &self.reqs[r as usize];
        let now = self.now;
        if q.aux == i as u32 && q.aux_kind == Aux::Source {
            return (q.phase_end - now).max(0) as f64 / US_PER_S;
        }
        match q.phase {
            Phase::Decode => {
                let done = q.done + q.rate * (now - q.phase_start) as f64 / US_PER_S;
                (q.est as f64 - done).max(0.0) / q.rate
            }
            _ => {
                let rem = (q.est as f64 - q.done).max(0.0);
                (q.phase_end - now).max(0) as f64 / US_PER_S
                    + rem / self.decode_rate(i, self.nodes[i].decoding)
            }
        }
    }

    /// Estimated wait before a request joining node `i`'s queue starts:
    /// `(time until the first slot frees) + (queued work) / slots`.
    fn wait_estimate(&self, i: usize) -> f64 {
        let st = &self.nodes[i];
        let slots = self.cluster.nodes[i].spec.slots;
        if !st.up || slots == 0 {
            return 0.0;
        }
        let first_free = if st.slots_used < slots {
            0.0
        } else {
            st.residents
                .iter()
                .map(|&r| self.est_remaining(r, i))
                .fold(f64::INFINITY, f64::min)
        };
        let first_free = if first_free.is_finite() {
            first_free
        } else {
            0.0
        };
        first_free + st.queued_work_s.max(0.0) / f64::from(slots)
    }

    fn refresh_views(&mut self) {
        if !self.views_dirty && self.views_time == self.now {
            return;
        }
        let mut stale = std::mem::take(&mut self.stale_down);
        for &i in &stale {
            self.refresh_view(i);
        }
        stale.clear();
        self.stale_down = stale;
        for k in 0..self.up_list.len() {
            self.refresh_view(self.up_list[k]);
        }
        self.views_time = self.now;
        self.views_dirty = false;
    }

    /// Brings the views of the free nodes (the only ones a placement's first pass visits) up to
    /// date, leaving the others (and the all-fresh mark) as they are.
    fn refresh_free_views(&mut self) {
        if !self.views_dirty && self.views_time == self.now {
            return;
        }
        for k in 0..self.free_list.len() {
            self.refresh_view(self.free_list[k]);
        }
    }

    /// Brings node `i`'s view up to date.
    fn refresh_view(&mut self, i: usize) {
        let wait = {
            let st = &self.nodes[i];
            if st.fifo.is_empty() && st.slots_used < self.cluster.nodes[i].spec.slots {
                0.0
            } else {
                self.wait_estimate(i)
            }
        };
        let rate = self.decode_rate(i, self.nodes[i].decoding);
        let st = &self.nodes[i];
        let v = &mut self.views[i];
        v.up = st.up;
        v.age_s = if st.up {
            (self.now - st.session_start) as f64 / US_PER_S + st.entry_s
        } else {
            0.0
        };
        v.slots_used = st.slots_used;
        v.kv_used_tokens = st.kv_sched;
        v.decode_tok_s = rate;
        v.queue_wait_s = wait;
    }

    fn log_decision(&mut self, queueing: bool) {
        if self.decisions.len() < self.cfg.decision_log {
            self.decisions.push(LoggedDecision {
                time_us: self.now,
                queueing,
                explanation: self.expl.clone(),
            });
            if self.decisions.len() == self.cfg.decision_log {
                self.expl.record_candidates = false;
            }
        }
    }

    // ----- placement ---------------------------------------------------------------------

    fn on_arrival(&mut self, policy: &mut dyn Policy, r: u32) -> Result<(), ReplayError> {
        let next = r as usize + 1;
        if let Some(j) = self.jobs.get(next) {
            let t = self.start + j.arrival_us;
            self.schedule(t, Event::Arrival(next as u32));
        }
        let q = &mut self.reqs[r as usize];
        if q.phase != Phase::NotArrived {
            return Err(invariant(self.now, format!("request {r} arrived twice")));
        }
        q.phase = Phase::Pending;
        self.place(policy, r);
        Ok(())
    }

    /// True when node `i` exists, is up and could ever hold request `r` (slots and capacity).
    fn can_ever_hold(&self, i: usize, r: u32) -> bool {
        match (self.nodes.get(i), self.cluster.nodes.get(i)) {
            (Some(st), Some(n)) => {
                st.up && n.spec.slots > 0 && self.rooms[i] >= self.reqs[r as usize].need
            }
            _ => false,
        }
    }

    /// True when request `r` can start on node `i` now: a free slot, and its true need fits
    /// (simple model) or its context's blocks fit beside the blocks in use and the watermark
    /// (iteration model, [`KvBlocks`]).
    fn can_start(&self, r: u32, i: usize) -> bool {
        let st = &self.nodes[i];
        let spec = &self.cluster.nodes[i].spec;
        let q = &self.reqs[r as usize];
        st.up
            && st.slots_used < spec.slots
            && if self.steps[i].is_some() {
                KvBlocks::of(spec.kv_capacity_tokens).admits(
                    self.kv_blocks_used(i),
                    q.prompt as f64 + q.done_tokens() as f64,
                )
            } else {
                st.kv_true
                    .checked_add(q.need)
                    .is_some_and(|x| x <= spec.kv_capacity_tokens)
            }
    }

    fn place_view_request(&self, r: u32) -> RequestView {
        let q = &self.reqs[r as usize];
        RequestView {
            id: u64::from(r),
            prompt_tokens: q.prompt,
            done_tokens: q.done_tokens(),
            est_output_tokens: q.est,
            node: None,
            resident_tokens: 0,
            planned_hops: q.planned,
            est_sigma: self.est_sigma,
        }
    }

    fn place(&mut self, policy: &mut dyn Policy, r: u32) {
        let rv = self.place_view_request(r);
        let need = self.reqs[r as usize].need;
        self.stats.placements += 1;
        // Pass 1: the true view over the nodes with a free slot (a full node cannot admit),
        // those too small for the request's true need left out.
        self.refresh_free_views();
        let mask = need > self.min_cap;
        let mut active = std::mem::take(&mut self.scratch_active);
        if mask {
            active.clear();
            let views = &self.views;
            let rooms = &self.rooms;
            active.extend(
                self.free_list
                    .iter()
                    .copied()
                    .filter(|&i| views[i].kv_capacity_tokens >= need && rooms[i] >= need),
            );
        }
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now: self.now,
            };
            let loads = live_loads!(self);
            let mut view = ClusterView::new(&self.views)
                .with_loads(&loads)
                .with_active(if mask { &active } else { &self.free_list });
            if self.drains {
                view = view.with_foresight(&fs);
            }
            policy.place(&view, &rv, &mut self.expl)
        };
        self.scratch_active = active;
        self.log_decision(false);
        if let Some(i) = choice.filter(|&i| self.can_ever_hold(i, r)) {
            self.note_placement(r);
            self.admit_or_enqueue(r, i);
            return;
        }
        // Pass 2: queueing view, over every up node.
        let any = self.up_list.iter().any(|&i| self.can_ever_hold(i, r));
        if !any {
            self.make_pending(r);
            return;
        }
        self.refresh_views();
        // Down nodes are never chosen: their entries are copied as they are.
        self.scratch_views.clone_from(&self.views);
        for k in 0..self.up_list.len() {
            let i = self.up_list[k];
            let wait = self.wait_estimate(i);
            let v = &mut self.scratch_views[i];
            v.slots_used = 0;
            v.kv_used_tokens = 0;
            v.queue_wait_s = wait;
            if v.kv_capacity_tokens < need || self.rooms[i] < need {
                v.kv_capacity_tokens = 0;
            }
        }
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now: self.now,
            };
            let loads = live_loads!(self);
            let mut view = ClusterView::new(&self.scratch_views)
                .with_loads(&loads)
                .with_active(&self.up_list);
            if self.drains {
                view = view.with_foresight(&fs);
            }
            policy.place(&view, &rv, &mut self.expl)
        };
        self.log_decision(true);
        match choice.filter(|&i| self.can_ever_hold(i, r)) {
            Some(i) => {
                self.note_placement(r);
                self.admit_or_enqueue(r, i);
            }
            None => self.make_pending(r),
        }
    }

    /// Records a placement of `r` by the decision in `expl`: the first one keeps its forecast.
    fn note_placement(&mut self, r: u32) {
        let now = self.now;
        let (t, p) = (self.expl.t, self.expl.p_interrupt);
        let q = &mut self.reqs[r as usize];
        q.placements += 1;
        if q.placed_at == NEVER {
            q.placed_at = now;
            q.forecast_t = t;
            q.forecast_p = p;
        }
    }

    /// Ends the first placement of `r` with `fate` (if it is still open).
    #[inline]
    fn end_first(&mut self, r: u32, fate: Fate) {
        let q = &mut self.reqs[r as usize];
        if q.placed_at != NEVER && q.first_fate == Fate::Open {
            q.first_fate = fate;
        }
    }

    fn make_pending(&mut self, r: u32) {
        let q = &mut self.reqs[r as usize];
        q.phase = Phase::Pending;
        q.node = NONE;
        self.pending.push_back(r);
        self.stats.pending_entries += 1;
    }

    fn admit_or_enqueue(&mut self, r: u32, i: usize) {
        if self.nodes[i].fifo.is_empty() && self.can_start(r, i) {
            self.start_on(r, i);
            return;
        }
        let work = {
            let q = &self.reqs[r as usize];
            let spec = &self.cluster.nodes[i].spec;
            let ctx = q.prompt.saturating_add(q.done_tokens()) as f64;
            secs(ctx, spec.prefill_tok_s)
                + secs((q.est as f64 - q.done).max(0.0), spec.decode_tok_s)
        };
        let q = &mut self.reqs[r as usize];
        q.phase = Phase::Queued;
        q.node = i as u32;
        q.queued_work = work;
        let st = &mut self.nodes[i];
        st.queued_work_s += work;
        st.fifo.push_back(r);
        self.enqueue_forecast(i, r);
        self.views_dirty = true;
    }

    /// Starts requests from node `i`'s FIFO queue while its head fits.
    fn drain_fifo(&mut self, i: usize) {
        while let Some(&h) = self.nodes[i].fifo.front() {
            if !self.can_start(h, i) {
                break;
            }
            self.nodes[i].fifo.pop_front();
            self.touch(i);
            let w = self.reqs[h as usize].queued_work;
            let st = &mut self.nodes[i];
            st.queued_work_s = if st.fifo.is_empty() {
                0.0
            } else {
                st.queued_work_s - w
            };
            self.start_on(h, i);
        }
    }

    /// Scheduler-side KV reservation of request `r`: `P_r + max(L^_r, done)`.
    fn sched_need(&self, r: u32) -> u64 {
        let q = &self.reqs[r as usize];
        q.prompt.saturating_add(q.est.max(q.done_tokens()))
    }

    fn acquire(&mut self, r: u32, i: usize) -> u64 {
        let sched = self.sched_need(r);
        let need = self.reqs[r as usize].need;
        self.reqs[r as usize].adm_seq = self.next_pf_seq;
        self.next_pf_seq += 1;
        self.mark_pace(i);
        let st = &mut self.nodes[i];
        st.slots_used += 1;
        st.kv_true = st.kv_true.saturating_add(need);
        st.kv_sched = st.kv_sched.saturating_add(sched);
        st.residents.push(r);
        self.touch(i);
        self.sync_free(i);
        self.views_dirty = true;
        sched
    }

    fn release(&mut self, r: u32, i: usize, sched: u64) {
        let need = self.reqs[r as usize].need;
        let st = &mut self.nodes[i];
        st.slots_used = st.slots_used.saturating_sub(1);
        st.kv_true = st.kv_true.saturating_sub(need);
        st.kv_sched = st.kv_sched.saturating_sub(sched);
        if let Some(p) = st.residents.iter().position(|&x| x == r) {
            st.residents.swap_remove(p);
        }
        self.mark_pace(i);
        self.touch(i);
        self.sync_free(i);
        self.views_dirty = true;
    }

    fn release_primary(&mut self, r: u32) {
        let (i, sched) = {
            let q = &self.reqs[r as usize];
            (q.node, q.sched_primary)
        };
        if i != NONE {
            self.release(r, i as usize, sched);
        }
        let q = &mut self.reqs[r as usize];
        q.node = NONE;
        q.sched_primary = 0;
    }

    fn release_aux(&mut self, r: u32) {
        let (i, sched, kind) = {
            let q = &self.reqs[r as usize];
            (q.aux, q.sched_aux, q.aux_kind)
        };
        if i != NONE && kind != Aux::None {
            self.release(r, i as usize, sched);
        }
        let q = &mut self.reqs[r as usize];
        q.aux = NONE;
        q.aux_kind = Aux::None;
        q.sched_aux = 0;
    }

    /// Starts request `r` on node `i`: slot and KV acquired, (re-)prefill of the whole context.
    fn start_on(&mut self, r: u32, i: usize) {
        let sched = self.acquire(r, i);
        let spec = self.cluster.nodes[i].spec;
        let params = self.params;
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.sched_primary = sched;
        q.node = i as u32;
        q.phase = Phase::Prefill;
        q.stints += 1;
        if q.first_node == NONE {
            q.first_node = i as u32;
        }
        q.last_node = i as u32;
        let ctx = q.prompt.saturating_add(q.done_tokens());
        let recovering = q.recovering;
        let dur = if recovering {
            q.rec_unplanned = q.rec_unplanned.saturating_add(ctx);
            q.recovering = false;
            unplanned_recovery_s(
                ctx as f64,
                spec.prefill_tok_s,
                params.stall_penalty_s,
                params.recompute_overhead_s,
            )
        } else {
            secs(ctx as f64, spec.prefill_tok_s)
        };
        q.epoch = q.epoch.wrapping_add(1);
        q.phase_start = now;
        if self.steps[i].is_some() {
            // Iteration model: the prefill of the context joins the node's prefills, oldest
            // served first (its rate is set at the end of the event, [`Sim::repace`]); a
            // recovery first waits out its stall and recompute overhead, holding the slot.
            let stall = if recovering {
                recovery_stall_s(&params)
            } else {
                0.0
            };
            self.begin_prefill(r, i, ctx as f64, stall);
            return;
        }
        q.phase_end = now.saturating_add(secs_to_us(dur));
        let (t, epoch) = (q.phase_end, q.epoch);
        self.schedule(t, Event::PhaseEnd { req: r, epoch });
        if self.drains {
            self.schedule_end_check(r);
        }
    }

    /// Iteration model: request `r` (holding its slot on node `i`) prefills `tokens` tokens
    /// in the node's steps, after `stall_s` seconds of waiting ([`Phase::Stall`]) when
    /// positive.
    fn begin_prefill(&mut self, r: u32, i: usize, tokens: f64, stall_s: f64) {
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.pf_left = tokens;
        q.pf_tokens = tokens;
        q.pf_seq = q.adm_seq;
        q.rate = 0.0;
        q.epoch = q.epoch.wrapping_add(1);
        q.phase_start = now;
        if stall_s > 0.0 {
            q.phase = Phase::Stall;
            q.phase_end = now.saturating_add(secs_to_us(stall_s));
            let (t, epoch) = (q.phase_end, q.epoch);
            self.schedule(t, Event::PhaseEnd { req: r, epoch });
        } else {
            q.phase = Phase::Prefill;
            q.phase_end = service::FOREVER_US;
        }
        self.touch(i);
        self.views_dirty = true;
        self.mark_pace(i);
    }

    // ----- iteration model ---------------------------------------------------------------

    /// Marks node `i` for [`Sim::repace`] at the end of the current event.
    #[inline]
    fn mark_pace(&mut self, i: usize) {
        if self.steps[i].is_some() && !self.pace_dirty.contains(&i) {
            self.pace_dirty.push(i);
        }
    }

    /// Sets the rates of every node marked during the event, and when its decoders next
    /// overflow its KV.
    fn flush_pace(&mut self) {
        while let Some(i) = self.pace_dirty.pop() {
            if self.nodes[i].up {
                self.repace(i);
                self.schedule_kv(i);
            }
        }
    }

    /// KV blocks in use on node `i` now under the iteration model: every request holding it,
    /// its prompt and the tokens generated (a decoder's up to now and the block of its next
    /// token), as [`service`] counts them.
    fn kv_blocks_used(&self, i: usize) -> u64 {
        let now = self.now;
        self.kv_blocks_with(i, |q| {
            KvBlocks::decoder_blocks(q.prompt as f64 + decoded_at(q, now))
        })
    }

    /// KV blocks of every request holding node `i` under the iteration model: a decoder's
    /// from `decoder`, any other's its prompt and the tokens it kept.
    fn kv_blocks_with(&self, i: usize, decoder: impl Fn(&Req) -> u64) -> u64 {
        let me = i as u32;
        self.nodes[i]
            .residents
            .iter()
            .map(|&r| {
                let q = &self.reqs[r as usize];
                if q.node == me && q.phase == Phase::Decode {
                    decoder(q)
                } else {
                    KvBlocks::blocks(q.prompt as f64 + q.done)
                }
            })
            .sum()
    }

    /// (Re)schedules node `i`'s KV overflow ([`KvBlocks::overflow_us`]) after its rates were
    /// set.
    fn schedule_kv(&mut self, i: usize) {
        if self.steps[i].is_none() {
            return;
        }
        let now = self.now;
        let me = i as u32;
        let blocks = KvBlocks::of(self.cluster.nodes[i].spec.kv_capacity_tokens);
        // The blocks the residents hold at most before any of them completes: when they fit,
        // nothing overflows before the next completion (which sets the overflow again).
        let most = self.kv_blocks_with(i, |q| KvBlocks::blocks((q.prompt + q.output) as f64));
        if most <= blocks.capacity {
            let st = &mut self.nodes[i];
            if st.kv_at != service::FOREVER_US {
                st.kv_at = service::FOREVER_US;
                st.kv_epoch = st.kv_epoch.wrapping_add(1);
            }
            return;
        }
        let mut decoders = std::mem::take(&mut self.kv_decoders);
        decoders.clear();
        let mut rate = 0.0;
        for &r in &self.nodes[i].residents {
            let q = &self.reqs[r as usize];
            if q.node == me && q.phase == Phase::Decode {
                rate = q.rate;
                let p = q.prompt as f64;
                decoders.push((q.phase_start, p + q.done, p + decoded_at(q, now)));
            }
        }
        let used = self.kv_blocks_used(i);
        let at = blocks
            .overflow_us(used, now, rate, &decoders, &mut self.kv_order, secs_to_us)
            .unwrap_or(service::FOREVER_US);
        self.kv_decoders = decoders;
        let st = &mut self.nodes[i];
        if at != st.kv_at {
            st.kv_at = at;
            st.kv_epoch = st.kv_epoch.wrapping_add(1);
            let (node, epoch) = (i as u32, st.kv_epoch);
            self.schedule(at, Event::KvFull { node, epoch });
        }
    }

    /// Node `i`'s decoders need a KV block and none is free: recompute preemption of the most
    /// recently admitted prefilling or decoding request there (vLLM's policy). It frees its
    /// slot and KV and waits at the front of the node's queue with its whole generated tokens
    /// kept, to prefill its context again when it fits (not an interruption: the node is up).
    fn on_kv_full(&mut self, i: usize) {
        let me = i as u32;
        let victim = self.nodes[i]
            .residents
            .iter()
            .copied()
            .filter(|&r| {
                let q = &self.reqs[r as usize];
                q.node == me && matches!(q.phase, Phase::Prefill | Phase::Decode)
            })
            .max_by_key(|&r| self.reqs[r as usize].adm_seq);
        self.nodes[i].kv_at = service::FOREVER_US;
        let Some(r) = victim else {
            return;
        };
        self.stats.kv_preemptions += 1;
        self.leave_decode(r);
        self.release_aux(r);
        self.release_primary(r);
        let work = {
            let spec = &self.cluster.nodes[i].spec;
            let q = &self.reqs[r as usize];
            let ctx = q.prompt.saturating_add(q.done_tokens()) as f64;
            secs(ctx, spec.prefill_tok_s)
                + secs((q.est as f64 - q.done).max(0.0), spec.decode_tok_s)
        };
        let q = &mut self.reqs[r as usize];
        q.done = q.done.floor();
        q.kv_preemptions += 1;
        q.chk_epoch = q.chk_epoch.wrapping_add(1);
        q.epoch = q.epoch.wrapping_add(1);
        q.mv_epoch = q.mv_epoch.wrapping_add(1);
        q.phase = Phase::Queued;
        q.node = me;
        q.queued_work = work;
        let st = &mut self.nodes[i];
        st.queued_work_s += work;
        st.fifo.push_front(r);
        self.mark_pace(i);
        self.touch(i);
        self.views_dirty = true;
    }

    /// Iteration model: node `i`'s decoders and prefills brought to now and their rates set
    /// from [`iteration::pace`] (`k` decoders reading the KV they will hold, the oldest prefill
    /// served, the others waiting), each only where its rate changes, exactly as
    /// [`service::repace`] does in the forecast.
    fn repace(&mut self, i: usize) {
        let Some(c) = self.steps[i] else {
            return;
        };
        let now = self.now;
        let me = i as u32;
        let (mut k, mut ctx, mut head) = (0u32, 0.0f64, None::<(u64, f64)>);
        for &r in &self.nodes[i].residents {
            let q = &self.reqs[r as usize];
            if q.node != me {
                continue;
            }
            match q.phase {
                Phase::Decode => {
                    k += 1;
                    ctx += q.need as f64;
                }
                Phase::Prefill if head.is_none_or(|(s, _)| q.pf_seq < s) => {
                    head = Some((q.pf_seq, q.pf_tokens));
                }
                _ => {}
            }
        }
        let p = iteration::pace(&c, k, ctx, head.map(|h| h.1));
        let mut changed = false;
        let mut idx = 0;
        while idx < self.nodes[i].residents.len() {
            let r = self.nodes[i].residents[idx];
            idx += 1;
            let q = &self.reqs[r as usize];
            if q.node != me {
                continue;
            }
            match q.phase {
                Phase::Decode if q.rate != p.decode_tok_s => {
                    self.settle(r);
                    self.reqs[r as usize].rate = p.decode_tok_s;
                    self.schedule_decode_end(r);
                    changed = true;
                }
                Phase::Prefill => {
                    let rate = if head.is_some_and(|h| h.0 == q.pf_seq) {
                        p.prefill_tok_s
                    } else {
                        0.0
                    };
                    if rate == q.rate {
                        continue;
                    }
                    self.touch_req(r);
                    let q = &mut self.reqs[r as usize];
                    q.pf_left = prefill_left(q.pf_left, q.rate, q.phase_start, q.phase_end, now);
                    q.phase_start = now;
                    q.rate = rate;
                    q.epoch = q.epoch.wrapping_add(1);
                    q.phase_end = prefill_end_us(now, q.pf_left, rate);
                    let (t, epoch) = (q.phase_end, q.epoch);
                    self.schedule(t, Event::PhaseEnd { req: r, epoch });
                    if self.drains && rate > 0.0 {
                        self.schedule_end_check(r);
                    }
                    changed = true;
                }
                _ => {}
            }
        }
        if changed {
            self.touch(i);
            self.views_dirty = true;
        }
    }

    // ----- service -----------------------------------------------------------------------

    /// Brings a decoding request's progress up to `now`.
    #[inline]
    fn settle(&mut self, r: u32) {
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        if q.phase == Phase::Decode {
            q.done = decoded_at(q, now);
            q.phase_start = now;
        }
    }

    /// (Re)schedules the end of a decoding request's decode at its current rate. The oracle's
    /// end check follows the new end ([`Sim::schedule_end_check`]): a co-decoder that slows
    /// the request past its node's known end gets it checked in time, and one that speeds it
    /// up before the end cancels the check.
    fn schedule_decode_end(&mut self, r: u32) {
        self.touch_req(r);
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.phase_start = now;
        q.epoch = q.epoch.wrapping_add(1);
        q.phase_end = decode_end_us(now, q.done, q.output as f64, q.rate);
        let (t, epoch) = (q.phase_end, q.epoch);
        self.schedule(t, Event::PhaseEnd { req: r, epoch });
        if self.oracle && self.drains {
            self.schedule_end_check(r);
        }
    }

    /// After the number of decoders on node `i` changed: new rate for all of them.
    fn rerate(&mut self, i: usize) {
        if self.steps[i].is_some() {
            self.mark_pace(i);
            return;
        }
        if self.cfg.batch_slowdown == 0.0 {
            return;
        }
        let k = self.nodes[i].decoding;
        let rate = self.decode_rate(i, k.saturating_sub(1));
        let mut idx = 0;
        while idx < self.nodes[i].residents.len() {
            let r = self.nodes[i].residents[idx];
            idx += 1;
            let q = &self.reqs[r as usize];
            if q.node == i as u32 && q.phase == Phase::Decode && q.rate != rate {
                self.settle(r);
                self.reqs[r as usize].rate = rate;
                self.schedule_decode_end(r);
            }
        }
    }

    fn begin_decode(&mut self, r: u32) {
        let i = self.reqs[r as usize].node as usize;
        let k = self.nodes[i].decoding;
        self.nodes[i].decoding = k + 1;
        // Under the iteration model the rate is set at the end of the event ([`Sim::repace`]).
        let rate = if self.steps[i].is_some() {
            0.0
        } else {
            self.decode_rate(i, k)
        };
        let q = &mut self.reqs[r as usize];
        q.phase = Phase::Decode;
        q.rate = rate;
        self.touch(i);
        self.schedule_decode_end(r);
        self.rerate(i);
        self.views_dirty = true;
        if self.drains && !self.oracle {
            self.schedule_end_check(r);
        }
    }

    /// A decoding request stops decoding on its node (completion, move, loss).
    fn leave_decode(&mut self, r: u32) {
        let i = self.reqs[r as usize].node as usize;
        if self.reqs[r as usize].phase == Phase::Decode && i < self.nodes.len() {
            self.settle(r);
            self.touch_req(r);
            self.nodes[i].decoding = self.nodes[i].decoding.saturating_sub(1);
            self.reqs[r as usize].phase = Phase::Prefill; // transient; caller sets the next phase
            self.views_dirty = true;
            if self.nodes[i].up {
                self.rerate(i);
            }
        }
    }

    fn on_phase_end(&mut self, r: u32) -> Result<(), ReplayError> {
        match self.reqs[r as usize].phase {
            Phase::Prefill => {
                let now = self.now;
                let q = &mut self.reqs[r as usize];
                if q.ttft.is_none() {
                    q.ttft = Some(now - q.arrival);
                }
                if q.unrecovered > 0 {
                    // The request produces new tokens again: every pending loss recovers.
                    q.recovery_us +=
                        i128::from(q.unrecovered) * i128::from(now) - q.unrecovered_sum_us;
                    q.unrecovered = 0;
                    q.unrecovered_sum_us = 0;
                }
                if q.done_tokens() >= q.output {
                    self.complete(r)
                } else {
                    self.begin_decode(r);
                    Ok(())
                }
            }
            Phase::Decode => self.complete(r),
            Phase::Stall => {
                let (i, tokens) = {
                    let q = &self.reqs[r as usize];
                    (q.node as usize, q.pf_tokens)
                };
                self.begin_prefill(r, i, tokens, 0.0);
                Ok(())
            }
            Phase::Moving => {
                if self.reqs[r as usize].aux_kind == Aux::Source {
                    let src = self.reqs[r as usize].aux as usize;
                    self.release_aux(r);
                    self.drain_fifo(src);
                }
                self.begin_decode(r);
                Ok(())
            }
            p => Err(invariant(
                self.now,
                format!("phase end of request {r} in phase {p:?}"),
            )),
        }
    }

    fn complete(&mut self, r: u32) -> Result<(), ReplayError> {
        if self.reqs[r as usize].phase == Phase::Done {
            return Err(invariant(self.now, format!("request {r} completed twice")));
        }
        self.end_first(r, Fate::Completed);
        self.leave_decode(r);
        let i = self.reqs[r as usize].node as usize;
        let aux = self.reqs[r as usize].aux;
        self.release_aux(r);
        self.release_primary(r);
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.done = q.output as f64;
        q.phase = Phase::Done;
        q.finish = Some(now);
        q.mv_epoch = q.mv_epoch.wrapping_add(1);
        if i < self.nodes.len() {
            self.drain_fifo(i);
        }
        if aux != NONE {
            self.drain_fifo(aux as usize);
        }
        Ok(())
    }

    // ----- availability ------------------------------------------------------------------

    /// Unplanned loss of request `r`'s KV: streamed tokens kept, slots released, marked for
    /// recovery.
    fn lose(&mut self, r: u32, cause: &Arc<str>) {
        self.end_first(r, Fate::Lost);
        self.leave_decode(r);
        self.release_aux(r);
        self.release_primary(r);
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.done = q.done.floor();
        q.interruptions += 1;
        q.causes.push(Arc::clone(cause));
        q.unrecovered += 1;
        q.unrecovered_sum_us += i128::from(now);
        q.chk_epoch = q.chk_epoch.wrapping_add(1);
        q.epoch = q.epoch.wrapping_add(1);
        q.mv_epoch = q.mv_epoch.wrapping_add(1);
        q.recovering = true;
        q.phase = Phase::Pending;
    }

    fn on_node_down(&mut self, policy: &mut dyn Policy, n: u32) -> Result<(), ReplayError> {
        let i = n as usize;
        if !self.nodes[i].up {
            return Err(invariant(self.now, format!("node {n} went down twice")));
        }
        self.stats.node_failures += 1;
        let cluster = self.cluster;
        let cause = cluster.nodes[i]
            .sessions
            .get(self.nodes[i].sess)
            .map_or_else(|| Arc::from(""), |s| Arc::clone(&s.end_cause));
        self.nodes[i].up = false;
        if let Ok(k) = self.up_list.binary_search(&i) {
            self.up_list.remove(k);
        }
        self.sync_free(i);
        self.stale_down.push(i);
        self.touch(i);
        self.known_ends[i] = i64::MIN;
        self.views_dirty = true;
        let mut lost = std::mem::take(&mut self.lost);
        let mut requeue = std::mem::take(&mut self.requeue);
        lost.clear();
        requeue.clear();
        // Requests holding the node.
        while let Some(&r) = self.nodes[i].residents.last() {
            let (node, aux, kind) = {
                let q = &self.reqs[r as usize];
                (q.node, q.aux, q.aux_kind)
            };
            if node == n || (aux == n && kind == Aux::Source) {
                self.lose(r, &cause);
                lost.push(r);
            } else if aux == n && kind == Aux::Dest {
                self.release_aux(r);
                let q = &mut self.reqs[r as usize];
                q.mv_epoch = q.mv_epoch.wrapping_add(1);
            } else {
                return Err(invariant(
                    self.now,
                    format!("request {r} listed on node {n} without holding it"),
                ));
            }
        }
        // Requests queued on the node.
        self.touch(i);
        while let Some(r) = self.nodes[i].fifo.pop_front() {
            self.end_first(r, Fate::Lost);
            let q = &mut self.reqs[r as usize];
            q.phase = Phase::Pending;
            q.node = NONE;
            requeue.push(r);
        }
        self.nodes[i].queued_work_s = 0.0;
        // Next session.
        self.nodes[i].sess += 1;
        if let Some(s) = self.cluster.nodes[i].sessions.get(self.nodes[i].sess) {
            let t = s.start_us;
            self.schedule(t, Event::NodeUp(n));
        }
        // Other nodes may have freed slots (released sources or reservations).
        for k in 0..self.up_list.len() {
            let m = self.up_list[k];
            if !self.nodes[m].fifo.is_empty() {
                self.drain_fifo(m);
            }
        }
        for &r in &lost {
            self.place(policy, r);
        }
        for &r in &requeue {
            self.place(policy, r);
        }
        self.lost = lost;
        self.requeue = requeue;
        Ok(())
    }

    fn on_node_up(&mut self, policy: &mut dyn Policy, n: u32) -> Result<(), ReplayError> {
        let i = n as usize;
        if self.nodes[i].up {
            return Err(invariant(self.now, format!("node {n} came up twice")));
        }
        let cluster = self.cluster;
        let s = match cluster.nodes[i].sessions.get(self.nodes[i].sess) {
            Some(s) => s,
            None => return Err(invariant(self.now, format!("node {n} up without session"))),
        };
        self.touch(i);
        if let Err(k) = self.up_list.binary_search(&i) {
            self.up_list.insert(k, i);
        }
        let st = &mut self.nodes[i];
        st.up = true;
        st.session_start = s.start_us;
        st.entry_s = entry_of(s);
        self.sync_free(i);
        self.known_ends[i] = known_end_of(s, self.oracle);
        self.views_dirty = true;
        if !s.end_censored() {
            self.schedule(s.end_us, Event::NodeDown(n));
        }
        // Retry the pending queue, in order.
        std::mem::swap(&mut self.pending, &mut self.pending_spare);
        while let Some(r) = self.pending_spare.pop_front() {
            self.place(policy, r);
        }
        Ok(())
    }

    // ----- planned migration -------------------------------------------------------------

    fn on_tick(&mut self, policy: &mut dyn Policy) -> Result<(), ReplayError> {
        let t = self.now.saturating_add(self.tick_us);
        self.schedule(t, Event::Tick);
        let mut checks = std::mem::take(&mut self.checks);
        checks.clear();
        for &i in &self.up_list {
            let st = &self.nodes[i];
            for &r in &st.residents {
                let q = &self.reqs[r as usize];
                if q.node == i as u32 && q.phase == Phase::Decode && q.aux_kind == Aux::None {
                    checks.push(r);
                }
            }
        }
        for &r in &checks {
            let q = &self.reqs[r as usize];
            if q.phase == Phase::Decode && q.aux_kind == Aux::None && q.node != NONE {
                self.check_one(policy, r);
            }
        }
        self.checks = checks;
        Ok(())
    }

    // ----- event-driven checks before known ends (the oracle's, announced ends' drains) ---

    /// Schedules the check of request `r` (prefilling or decoding on node `i`) before `i`'s
    /// known end `end_i` (every end for the oracle, announced ends for the other policies): a
    /// decoding request is checked at `end_i - C_t - epsilon`, `C_t = O_t + ctx(end_i) kv / B_i`
    /// the shortest KV transfer it could need (so a transfer chosen then completes before
    /// `end_i`; otherwise the move is a recompute, which needs no source); a prefilling request
    /// whose prefill would not finish before `end_i` is checked at once (its decode start
    /// schedules its own check otherwise). The oracle skips requests whose true finish comes
    /// first; the other policies do not know it and decide at the check, by the estimate.
    /// Any earlier pending check of `r` becomes stale.
    fn schedule_end_check(&mut self, r: u32) {
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.chk_epoch = q.chk_epoch.wrapping_add(1);
        let epoch = q.chk_epoch;
        let q = &self.reqs[r as usize];
        if q.node == NONE || q.aux_kind != Aux::None {
            return;
        }
        let i = q.node as usize;
        let end_i = self.known_ends[i];
        if end_i == UpSession::OPEN_END || end_i >= self.end || end_i <= now {
            return;
        }
        let t = match q.phase {
            Phase::Decode => {
                if self.oracle && q.phase_end < end_i {
                    return;
                }
                let until_end = (end_i - now) as f64 / US_PER_S;
                // The oracle's `est` is the true length; the others' the estimate.
                let done_end = (q.done + q.rate * until_end).min((q.est as f64).max(q.done));
                let ctx_end = q.prompt as f64 + done_end;
                let spec = &self.cluster.nodes[i].spec;
                let c_t = self.params.transfer_overhead_s
                    + secs(
                        ctx_end * self.params.kv_bytes_per_token,
                        spec.bandwidth_bytes_s,
                    );
                end_i
                    .saturating_sub(secs_to_us(c_t))
                    .saturating_sub(ORACLE_EPSILON_US)
            }
            Phase::Prefill => {
                if q.phase_end < end_i.saturating_sub(ORACLE_EPSILON_US) {
                    return;
                }
                now
            }
            _ => return,
        };
        let t = t.max(now);
        self.schedule(t, Event::EndCheck { req: r, epoch });
    }

    fn on_end_check(&mut self, policy: &mut dyn Policy, r: u32) {
        let q = &self.reqs[r as usize];
        if q.node == NONE || q.aux_kind != Aux::None {
            return;
        }
        let i = q.node as usize;
        let end_i = self.known_ends[i];
        if !self.nodes[i].up || end_i == UpSession::OPEN_END || end_i <= self.now {
            return;
        }
        match q.phase {
            Phase::Decode if !self.oracle => self.drain_check(policy, r, i, end_i),
            Phase::Decode => {
                if q.phase_end < end_i {
                    return;
                }
                self.check_one(policy, r);
                let q = &self.reqs[r as usize];
                if q.node == i as u32 && q.phase == Phase::Decode && q.phase_end >= end_i {
                    let last = end_i.saturating_sub(ORACLE_EPSILON_US);
                    if self.now < last {
                        // Stayed at the early check (staying was cheaper then, or no room):
                        // a last check just before the end, when only a recompute fits.
                        self.recheck_at(r, last);
                    } else {
                        self.stats.oracle_forced += 1;
                    }
                }
            }
            Phase::Prefill => {
                if q.phase_end < end_i.saturating_sub(ORACLE_EPSILON_US) {
                    return;
                }
                self.replace_prefill(policy, r, i);
            }
            _ => {}
        }
    }

    /// The drain of a decoding request `r` on node `i` before its announced end `end_i` (every
    /// policy but the oracle): when the request is expected to finish first (its estimate's
    /// remaining tokens at its current rate, never its true length) it stays; otherwise it moves
    /// to the node the policy places it on with `i` hidden, by the cheaper of a KV transfer
    /// that completes before `end_i` and a recompute. A request that stayed is checked again
    /// at `end_i - epsilon`, when only a recompute fits. A request that cannot move (no room)
    /// is lost at the end and counted in [`RunStats::drain_missed`].
    fn drain_check(&mut self, policy: &mut dyn Policy, r: u32, i: usize, end_i: i64) {
        let now = self.now;
        let left_s = (end_i - now) as f64 / US_PER_S;
        let last = end_i.saturating_sub(ORACLE_EPSILON_US);
        let expected_s = {
            let q = &self.reqs[r as usize];
            let done =
                (q.done + q.rate * (now - q.phase_start) as f64 / US_PER_S).min(q.output as f64);
            (expected_total(q.est as f64, done, self.est_sigma) - done).max(0.0) / q.rate
        };
        if expected_s < left_s && now < last {
            self.recheck_at(r, last);
            return;
        }
        let choice = self.place_elsewhere(policy, r, i);
        let ctx = {
            let q = &self.reqs[r as usize];
            q.prompt.saturating_add(q.done_tokens())
        };
        match choice {
            Some(j) if j != i && j < self.nodes.len() && self.can_start(r, j) => {
                let mut mv = self.move_cost(ctx, i, j);
                if mv.method == MoveMethod::Transfer && !(mv.transfer_s < left_s) {
                    mv.cost_s = mv.recompute_s;
                    mv.method = MoveMethod::Recompute;
                }
                self.expl.c_planned = mv.cost_s;
                self.expl.method = Some(mv.method);
                self.expl.window_s = 0.0;
                self.stats.drained += 1;
                self.execute_move(r, i, j);
            }
            _ if now < last => self.recheck_at(r, last),
            _ => self.stats.drain_missed += 1,
        }
    }

    /// The node the policy places request `r` on with node `i` hidden (and nodes too small for
    /// its true need masked), the views carrying the known ends: where a request leaves a node
    /// before its known end. Counts as a migration check; the decision is logged.
    fn place_elsewhere(&mut self, policy: &mut dyn Policy, r: u32, i: usize) -> Option<NodeIdx> {
        self.refresh_views();
        let rv = self.place_view_request(r);
        let need = self.reqs[r as usize].need;
        self.scratch_views.clear();
        let rooms = &self.rooms;
        self.scratch_views
            .extend(self.views.iter().zip(rooms).map(|(v, &room)| {
                let mut v = *v;
                if v.kv_capacity_tokens < need || room < need {
                    v.kv_capacity_tokens = 0;
                }
                v
            }));
        self.scratch_views[i].up = false;
        self.stats.migration_checks += 1;
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now: self.now,
            };
            let loads = live_loads!(self);
            let view = ClusterView::new(&self.scratch_views)
                .with_foresight(&fs)
                .with_loads(&loads)
                .with_active(&self.up_list);
            policy.place(&view, &rv, &mut self.expl)
        };
        self.log_decision(false);
        choice
    }

    /// Schedules request `r`'s end check at `t`, superseding any pending one.
    fn recheck_at(&mut self, r: u32, t: i64) {
        let q = &mut self.reqs[r as usize];
        q.chk_epoch = q.chk_epoch.wrapping_add(1);
        let epoch = q.chk_epoch;
        self.schedule(t, Event::EndCheck { req: r, epoch });
    }

    /// A prefill that would not finish before its node's known end restarts on the node the
    /// policy picks with that node hidden, if the prefill fits before the new node's own end
    /// (so the check cannot ping-pong); it counts as a planned move (recompute).
    fn replace_prefill(&mut self, policy: &mut dyn Policy, r: u32, i: usize) {
        let choice = self.place_elsewhere(policy, r, i);
        let ctx = {
            let q = &self.reqs[r as usize];
            q.prompt.saturating_add(q.done_tokens())
        };
        let fits = |s: &Self, j: usize| {
            let dur = secs_to_us(secs(ctx as f64, s.cluster.nodes[j].spec.prefill_tok_s));
            let end_j = s.known_ends[j];
            end_j == UpSession::OPEN_END
                || end_j > s.now.saturating_add(dur).saturating_add(ORACLE_EPSILON_US)
        };
        match choice {
            Some(j) if j != i && j < self.nodes.len() && self.can_start(r, j) && fits(self, j) => {
                self.release_primary(r);
                self.end_first(r, Fate::Censored);
                {
                    let q = &mut self.reqs[r as usize];
                    q.planned += 1;
                    q.rec_planned = q.rec_planned.saturating_add(ctx);
                    q.phase = Phase::Pending;
                }
                self.start_on(r, j);
                self.drain_fifo(i);
                if !self.oracle {
                    self.stats.drained += 1;
                }
            }
            _ if self.oracle => self.stats.oracle_forced += 1,
            _ => self.stats.drain_missed += 1,
        }
    }

    fn check_one(&mut self, policy: &mut dyn Policy, r: u32) {
        self.refresh_views();
        let now = self.now;
        let (rv, from) = {
            let q = &self.reqs[r as usize];
            let done = (q.done + q.rate * (now - q.phase_start) as f64 / US_PER_S)
                .min(q.output as f64) as u64;
            let ctx = q.prompt.saturating_add(done);
            (
                RequestView {
                    id: u64::from(r),
                    prompt_tokens: q.prompt,
                    done_tokens: done,
                    est_output_tokens: q.est,
                    node: Some(q.node as usize),
                    resident_tokens: ctx,
                    planned_hops: q.planned,
                    est_sigma: self.est_sigma,
                },
                q.node as usize,
            )
        };
        self.stats.migration_checks += 1;
        // A move's destination must admit the request (a free slot), and the source prices
        // the fallback: the check visits the free nodes and the source, in index order.
        let mut active = std::mem::take(&mut self.scratch_active);
        active.clear();
        let k = self.free_list.partition_point(|&x| x < from);
        active.extend_from_slice(&self.free_list[..k]);
        if self.free_list.get(k) != Some(&from) {
            active.push(from);
        }
        active.extend_from_slice(&self.free_list[k..]);
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now,
            };
            let loads = live_loads!(self);
            let mut view = ClusterView::new(&self.views)
                .with_loads(&loads)
                .with_active(&active);
            if self.drains {
                view = view.with_foresight(&fs);
            }
            policy.check_migration(&view, &rv, from, &mut self.expl)
        };
        self.scratch_active = active;
        self.log_decision(false);
        if let Some(j) = choice {
            self.execute_move(r, from, j);
        }
    }

    fn execute_move(&mut self, r: u32, i: usize, j: usize) {
        let c_planned = self.expl.c_planned;
        let method = self.expl.method.unwrap_or(MoveMethod::Recompute);
        let window = self.expl.window_s;
        if j == i
            || j >= self.nodes.len()
            || !self.can_start(r, j)
            || !(c_planned >= 0.0 && c_planned.is_finite())
        {
            self.stats.moves_refused += 1;
            return;
        }
        self.settle(r);
        let kv = self.params.kv_bytes_per_token;
        let ctx = {
            let q = &self.reqs[r as usize];
            q.prompt.saturating_add(q.done_tokens())
        };
        if window > 0.0 && window.is_finite() {
            // Overlapped: reserve the destination, keep decoding on the source for W.
            let bulk = self.move_cost(ctx, i, j);
            let sched = self.acquire(r, j);
            let now = self.now;
            let q = &mut self.reqs[r as usize];
            q.aux = j as u32;
            q.aux_kind = Aux::Dest;
            q.sched_aux = sched;
            match bulk.method {
                MoveMethod::Transfer => q.kv_bytes += ctx as f64 * kv,
                MoveMethod::Recompute => q.rec_planned = q.rec_planned.saturating_add(ctx),
            }
            q.mv_done0 = q.done_tokens();
            q.mv_epoch = q.mv_epoch.wrapping_add(1);
            q.cutover_at = now.saturating_add(secs_to_us(window));
            let epoch = q.mv_epoch;
            let at = q.cutover_at;
            self.touch(i);
            self.touch(j);
            self.schedule(at, Event::Cutover { req: r, epoch });
            return;
        }
        self.leave_decode(r);
        {
            let q = &mut self.reqs[r as usize];
            match method {
                MoveMethod::Transfer => q.kv_bytes += ctx as f64 * kv,
                MoveMethod::Recompute => q.rec_planned = q.rec_planned.saturating_add(ctx),
            }
        }
        let cut = Cut {
            method,
            cost_s: c_planned,
            tokens: ctx,
        };
        self.cut_over(r, i, j, cut, false);
    }

    /// `C_planned` of moving `tokens` from `i` to `j` with the policy's constants.
    fn move_cost(&self, tokens: u64, i: usize, j: usize) -> crate::policy::migration::PlannedCost {
        let p = &self.params;
        planned_cost(
            tokens as f64,
            p.kv_bytes_per_token,
            self.cluster.nodes[i].spec.bandwidth_bytes_s,
            self.cluster.nodes[j].spec.bandwidth_bytes_s,
            self.cluster.nodes[j].spec.prefill_tok_s,
            p.transfer_overhead_s,
            p.recompute_overhead_s,
        )
    }

    /// The request leaves source `i` for destination `j` and pauses the cut's `cost_s`
    /// seconds; a transfer keeps the source's slot until then. Under the iteration model a
    /// recompute is served as a recovery's re-prefill is: the recompute overhead is waiting,
    /// the cut's `tokens` are prefill work on `j` that contends with `j`'s other requests.
    /// `reserved`: `j` is already held as the overlapped move's destination.
    fn cut_over(&mut self, r: u32, i: usize, j: usize, cut: Cut, reserved: bool) {
        let Cut {
            method,
            cost_s,
            tokens,
        } = cut;
        self.end_first(r, Fate::Censored);
        self.touch(i);
        self.touch(j);
        let dest_sched = if reserved {
            let s = self.reqs[r as usize].sched_aux;
            let q = &mut self.reqs[r as usize];
            q.aux = NONE;
            q.aux_kind = Aux::None;
            q.sched_aux = 0;
            s
        } else {
            self.acquire(r, j)
        };
        match method {
            MoveMethod::Transfer => {
                let q = &mut self.reqs[r as usize];
                q.aux = i as u32;
                q.aux_kind = Aux::Source;
                q.sched_aux = q.sched_primary;
            }
            MoveMethod::Recompute => {
                self.release_primary(r);
            }
        }
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.node = j as u32;
        q.sched_primary = dest_sched;
        q.planned += 1;
        q.stints += 1;
        q.last_node = j as u32;
        if method == MoveMethod::Recompute && self.steps[j].is_some() {
            let o_r = self.params.recompute_overhead_s.max(0.0);
            self.begin_prefill(r, j, tokens as f64, o_r);
        } else {
            q.phase = Phase::Moving;
            q.epoch = q.epoch.wrapping_add(1);
            q.phase_start = now;
            q.phase_end = now.saturating_add(secs_to_us(cost_s));
            let (t, epoch) = (q.phase_end, q.epoch);
            self.schedule(t, Event::PhaseEnd { req: r, epoch });
            self.views_dirty = true;
        }
        if method == MoveMethod::Recompute {
            self.drain_fifo(i);
        }
    }

    fn on_cutover(&mut self, r: u32, epoch: u32) {
        let q = &self.reqs[r as usize];
        if q.mv_epoch != epoch || q.phase != Phase::Decode || q.aux_kind != Aux::Dest {
            self.stats.stale_events += 1;
            return;
        }
        let (i, j) = (q.node as usize, q.aux as usize);
        self.settle(r);
        let g = self.reqs[r as usize]
            .done_tokens()
            .saturating_sub(self.reqs[r as usize].mv_done0);
        let catch = self.move_cost(g, i, j);
        self.leave_decode(r);
        {
            let kv = self.params.kv_bytes_per_token;
            let q = &mut self.reqs[r as usize];
            match catch.method {
                MoveMethod::Transfer => q.kv_bytes += g as f64 * kv,
                MoveMethod::Recompute => q.rec_planned = q.rec_planned.saturating_add(g),
            }
        }
        let cut = Cut {
            method: catch.method,
            cost_s: catch.cost_s,
            tokens: g,
        };
        self.cut_over(r, i, j, cut, true);
    }

    // ----- validation and output ---------------------------------------------------------

    fn check(&self) -> Result<(), ReplayError> {
        let t = self.now;
        if let Some(m) = self.forecast_mismatch.borrow().as_ref() {
            return Err(invariant(t, m.clone()));
        }
        if !self
            .up_list
            .iter()
            .copied()
            .eq((0..self.nodes.len()).filter(|&i| self.nodes[i].up))
        {
            return Err(invariant(t, "the up list differs from the up nodes"));
        }
        if !self
            .free_list
            .iter()
            .copied()
            .eq((0..self.nodes.len()).filter(|&i| {
                self.nodes[i].up && self.nodes[i].slots_used < self.cluster.nodes[i].spec.slots
            }))
        {
            return Err(invariant(
                t,
                "the free list differs from the up nodes with a free slot",
            ));
        }
        for (i, st) in self.nodes.iter().enumerate() {
            let spec = &self.cluster.nodes[i].spec;
            if st.slots_used > spec.slots {
                return Err(invariant(t, format!("node {i}: slots exceeded")));
            }
            if self.steps[i].is_none() && st.kv_true > spec.kv_capacity_tokens {
                return Err(invariant(t, format!("node {i}: KV capacity exceeded")));
            }
            // Under the iteration model a decoder may hold one block beyond the capacity until
            // the overflow is handled later in the same microsecond.
            if self.steps[i].is_some()
                && st.up
                && self.kv_blocks_used(i)
                    > KvBlocks::of(spec.kv_capacity_tokens).capacity + u64::from(st.decoding)
            {
                return Err(invariant(t, format!("node {i}: KV blocks exceeded")));
            }
            if st.residents.len() != st.slots_used as usize {
                return Err(invariant(t, format!("node {i}: slot count mismatch")));
            }
            if !st.up && (st.slots_used != 0 || !st.fifo.is_empty() || st.kv_true != 0) {
                return Err(invariant(t, format!("node {i}: down but holding requests")));
            }
            let mut kv = 0u64;
            let mut sched = 0u64;
            let mut decoding = 0u32;
            for &r in &st.residents {
                let q = &self.reqs[r as usize];
                kv += q.need;
                if q.node == i as u32 {
                    sched += q.sched_primary;
                    if !matches!(
                        q.phase,
                        Phase::Prefill | Phase::Decode | Phase::Moving | Phase::Stall
                    ) {
                        return Err(invariant(
                            t,
                            format!("request {r} on node {i} in {:?}", q.phase),
                        ));
                    }
                    if q.phase == Phase::Decode {
                        decoding += 1;
                    }
                } else if q.aux == i as u32 && q.aux_kind != Aux::None {
                    sched += q.sched_aux;
                } else {
                    return Err(invariant(t, format!("request {r} listed on node {i}")));
                }
            }
            if kv != st.kv_true || sched != st.kv_sched || decoding != st.decoding {
                return Err(invariant(t, format!("node {i}: ledger mismatch")));
            }
            for &r in &st.fifo {
                let q = &self.reqs[r as usize];
                if q.phase != Phase::Queued || q.node != i as u32 {
                    return Err(invariant(
                        t,
                        format!("request {r} queued on node {i} wrongly"),
                    ));
                }
            }
        }
        for (r, q) in self.reqs.iter().enumerate() {
            if matches!(
                q.phase,
                Phase::Prefill | Phase::Decode | Phase::Moving | Phase::Stall
            ) {
                let up = self.nodes.get(q.node as usize).is_some_and(|s| s.up);
                let listed = up && self.nodes[q.node as usize].residents.contains(&(r as u32));
                if !listed {
                    return Err(invariant(
                        t,
                        format!("request {r} runs on a down or foreign node"),
                    ));
                }
            }
            if !(q.done >= 0.0 && q.done <= q.output as f64) {
                return Err(invariant(t, format!("request {r}: progress out of range")));
            }
        }
        Ok(())
    }

    fn records(&mut self) -> Vec<RequestRecord> {
        let start = self.start;
        let end = self.end;
        let mut out = Vec::with_capacity(self.reqs.len());
        for r in 0..self.reqs.len() {
            self.settle(r as u32);
            let j = &self.jobs[r];
            let q = &self.reqs[r];
            let completion_s = q.finish.map(|f| (f - q.arrival) as f64 / US_PER_S);
            let slo_met = completion_s.is_some_and(|c| c <= q.deadline_s);
            let recovery_us = q.recovery_us
                + (i128::from(q.unrecovered) * i128::from(end) - q.unrecovered_sum_us);
            out.push(RequestRecord {
                request: r as u64,
                id: j.id,
                copy: j.copy,
                arrival_s: (q.arrival - start) as f64 / US_PER_S,
                prompt_tokens: q.prompt,
                output_tokens: q.output,
                est_output_tokens: j.est_output_tokens,
                first_node: (q.first_node != NONE).then_some(q.first_node),
                final_node: (q.last_node != NONE).then_some(q.last_node),
                nodes_visited: q.stints,
                ttft_s: q.ttft.map(|t| t as f64 / US_PER_S),
                completion_s,
                generated_tokens: q.done_tokens(),
                recomputed_unplanned_tokens: q.rec_unplanned,
                recomputed_planned_tokens: q.rec_planned,
                kv_bytes_moved: q.kv_bytes,
                interruptions: q.interruptions,
                kv_preemptions: q.kv_preemptions,
                planned_migrations: q.planned,
                slo_deadline_s: q.deadline_s,
                slo_met,
                dropped: (q.phase != Phase::Done).then_some(DropReason::WindowEnd),
                recovery_s: recovery_us as f64 / US_PER_S,
                interruption_causes: q.causes.iter().map(|c| c.to_string()).collect(),
                forecast_t_s: (q.placed_at != NEVER && !q.forecast_t.is_nan())
                    .then_some(q.forecast_t),
                forecast_p_interrupt: (q.placed_at != NEVER && !q.forecast_p.is_nan())
                    .then_some(q.forecast_p),
                served_s: match q.finish {
                    Some(f)
                        if q.first_fate == Fate::Completed
                            && q.placements == 1
                            && q.interruptions == 0
                            && q.planned == 0 =>
                    {
                        Some((f - q.placed_at) as f64 / US_PER_S)
                    }
                    _ => None,
                },
                first_placement_lost: match q.first_fate {
                    Fate::Lost => Some(true),
                    Fate::Completed => Some(false),
                    Fate::Open | Fate::Censored => None,
                },
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_factors_have_mean_one_and_spread_with_sigma() {
        assert_eq!(draw_factors(0.0, 8), vec![1.0]);
        assert_eq!(draw_factors(0.5, 1), vec![1.0]);
        let f = draw_factors(0.5, 8);
        assert_eq!(f.len(), 8);
        let mean = f.iter().sum::<f64>() / 8.0;
        assert!((mean - 1.0).abs() < 1e-12);
        assert!(f.windows(2).all(|w| w[0] < w[1]));
        let g = draw_factors(1.0, 8);
        assert!(g[0] < f[0] && g[7] > f[7]);
    }

    #[test]
    fn posterior_draws_exceed_what_was_generated_and_follow_the_estimate() {
        // Median: the estimate when nothing was generated.
        assert!((posterior_quantile(1000.0, 0.5, 0.0, 0.5) - 1000.0).abs() < 1e-6);
        // Conditioned on L > done: every draw exceeds done, even far past the estimate.
        for u in [1e-9, 0.1, 0.5, 0.9] {
            assert!(posterior_quantile(1000.0, 0.5, 3000.0, u) > 3000.0);
        }
        // Monotone in u.
        let q: Vec<f64> = (1..10)
            .map(|k| posterior_quantile(500.0, 0.5, 200.0, f64::from(k) / 10.0))
            .collect();
        assert!(q.windows(2).all(|w| w[0] < w[1]));
        // The draws of one request are uniform: their mean is E[L | L > 0] = m e^(s^2 / 2).
        let n = 4000;
        let mean = (0..n)
            .map(|k| posterior_quantile(100.0, 0.5, 0.0, unit_draw(7, k)))
            .sum::<f64>()
            / n as f64;
        assert!(
            (mean / (100.0 * (0.125f64).exp()) - 1.0).abs() < 0.03,
            "{mean}"
        );
    }
}
