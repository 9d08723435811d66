//! The inputs of a decision: per-node state, the request, and the policy's constants.
//!
//! Everything here is borrowed or `Copy`, so a discrete-event simulator can keep one
//! `Vec<NodeView>` for the whole run, update its fields in place on each event and hand the
//! policy a [`ClusterView`] without allocating.

use serde::{Deserialize, Serialize};

use super::service::NodeLoads;
use crate::survival::curve::ConditionalSurvival;

/// Index of a node in [`ClusterView::nodes`].
pub type NodeIdx = usize;

/// What the policy sees of one node at decision time.
#[derive(Clone, Copy)]
pub struct NodeView<'a> {
    /// The node is up (reachable and serving).
    pub up: bool,
    /// Current uptime `a_i`: seconds since the node's current up-session began.
    pub age_s: f64,
    /// Concurrency slots (maximum requests decoding at once).
    pub slots: u32,
    /// Slots in use.
    pub slots_used: u32,
    /// KV-cache capacity in tokens.
    pub kv_capacity_tokens: u64,
    /// KV-cache tokens in use.
    pub kv_used_tokens: u64,
    /// Estimated wait before a newly admitted request starts (seconds; the simulator's estimate).
    pub queue_wait_s: f64,
    /// Decode rate `d_i`, tokens per second per request.
    pub decode_tok_s: f64,
    /// Prefill rate `p_i`, tokens per second.
    pub prefill_tok_s: f64,
    /// Network bandwidth `B_i`, bytes per second.
    pub bandwidth_bytes_s: f64,
    /// The node's session survival curve; queried as `S_i(t | a_i)`.
    pub survival: &'a dyn ConditionalSurvival,
    /// Maximum-likelihood exponential hazard of the node, per second: events / exposure of the
    /// node's *completed* sessions only (the exposure of a session still live at the cutoff is
    /// an age signal, not a memoryless one). Only the `memoryless` policy reads it.
    pub exp_rate_per_s: f64,
    /// Prompt tokens of the request being placed that this node's prefix cache holds (its
    /// leading cached blocks, [`crate::replay::prefix`]), as a router that tracks its own
    /// routing knows them: a placement here prefills only the rest. 0 outside a placement
    /// and without prefix caching.
    pub cached_tokens: u64,
    /// Requests waiting in the node's queue (with `slots_used`, what a router counts as in
    /// flight there).
    pub queued: u32,
    /// Tokens the node's prefix cache holds in all (0 without prefix caching).
    pub cache_tokens: u64,
}

impl<'a> NodeView<'a> {
    /// An idle, up node with age 0, one slot, unbounded KV capacity, no queue, unit rates and
    /// the given curve; set the remaining fields with struct-update syntax.
    pub fn new(survival: &'a dyn ConditionalSurvival) -> NodeView<'a> {
        NodeView {
            up: true,
            age_s: 0.0,
            slots: 1,
            slots_used: 0,
            kv_capacity_tokens: u64::MAX,
            kv_used_tokens: 0,
            queue_wait_s: 0.0,
            decode_tok_s: 1.0,
            prefill_tok_s: 1.0,
            bandwidth_bytes_s: 1.0,
            survival,
            exp_rate_per_s: 0.0,
            cached_tokens: 0,
            queued: 0,
            cache_tokens: 0,
        }
    }

    /// Feasible for a request needing `kv_need` tokens of KV: up, a free slot, and room.
    #[inline]
    pub fn can_admit(&self, kv_need: u64) -> bool {
        self.up
            && self.slots_used < self.slots
            && self.kv_used_tokens.saturating_add(kv_need) <= self.kv_capacity_tokens
    }

    /// Fraction of slots in use (1 when the node has no slots).
    #[inline]
    pub fn load(&self) -> f64 {
        if self.slots == 0 {
            1.0
        } else {
            f64::from(self.slots_used) / f64::from(self.slots)
        }
    }

    /// Fraction of KV capacity in use (1 when capacity is 0).
    #[inline]
    pub fn kv_load(&self) -> f64 {
        if self.kv_capacity_tokens == 0 {
            1.0
        } else {
            self.kv_used_tokens as f64 / self.kv_capacity_tokens as f64
        }
    }
}

impl std::fmt::Debug for NodeView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeView")
            .field("up", &self.up)
            .field("age_s", &self.age_s)
            .field("slots", &self.slots)
            .field("slots_used", &self.slots_used)
            .field("kv_capacity_tokens", &self.kv_capacity_tokens)
            .field("kv_used_tokens", &self.kv_used_tokens)
            .field("queue_wait_s", &self.queue_wait_s)
            .field("decode_tok_s", &self.decode_tok_s)
            .field("prefill_tok_s", &self.prefill_tok_s)
            .field("bandwidth_bytes_s", &self.bandwidth_bytes_s)
            .field("exp_rate_per_s", &self.exp_rate_per_s)
            .field("cached_tokens", &self.cached_tokens)
            .field("queued", &self.queued)
            .field("cache_tokens", &self.cache_tokens)
            .finish_non_exhaustive()
    }
}

/// What the replay reveals of each node's future: to the `oracle`, every true session end; to
/// every other policy, only the ends that are *announced* (the session's end cause is declared
/// planned in the scenario, e.g. GCE's 24-hour `lifetime-cap`), which a real scheduler knows in
/// advance.
pub trait Foresight {
    /// The remaining length `R_i` of node `node`'s current up-session when it is known, seconds;
    /// `None` when unknown (the oracle then treats the node as never failing; the other models
    /// price it with their curve alone).
    fn remaining_up(&self, node: NodeIdx) -> Option<f64>;

    /// Seconds from now until the conversation of the request being decided sends its next
    /// turn, when known (the oracle's foresight of future reuses; `f64::INFINITY`: the
    /// conversation sends no more turns); `None` when unknown, as for every other policy,
    /// which prices the reuse with the fitted gap ([`super::retained::ReuseGap`]).
    fn next_turn_s(&self) -> Option<f64> {
        None
    }
}

/// The cluster as one decision sees it.
#[derive(Clone, Copy)]
pub struct ClusterView<'a> {
    /// Per-node state, indexed by [`NodeIdx`].
    pub nodes: &'a [NodeView<'a>],
    /// Known remaining sessions: all of them for the oracle, the announced ones for the rest.
    pub foresight: Option<&'a dyn Foresight>,
    /// The service-time model's forecast over the nodes' live state (the replay supplies it;
    /// without it `T_i` falls back to [`super::cost::service_time`] on the view's fields).
    pub loads: Option<&'a dyn NodeLoads>,
    /// The indices of the nodes a decision may choose, ascending, when the caller keeps them
    /// ([`ClusterView::with_active`]): a decision then visits only those, so that a fleet
    /// with most of its nodes down (a spot trace's instances) or full costs what its
    /// candidates cost. The replay lists the up nodes with a free slot for a placement's first
    /// pass and a migration check (plus the request's source node), every up node for the
    /// queueing pass.
    pub active: Option<&'a [NodeIdx]>,
    /// The gap from a conversation's turn to its next ([`super::retained::ReuseGap`]), when
    /// the workload has conversations and nodes cache prefixes: the `E`-based policies then
    /// price the retained-state term.
    pub reuse: Option<&'a super::retained::ReuseGap>,
}

impl<'a> ClusterView<'a> {
    /// A view over `nodes` without foresight.
    pub fn new(nodes: &'a [NodeView<'a>]) -> ClusterView<'a> {
        ClusterView {
            nodes,
            foresight: None,
            loads: None,
            active: None,
            reuse: None,
        }
    }

    /// The same view with the workload's reuse gap (see [`ClusterView::reuse`]).
    pub fn with_reuse(self, reuse: Option<&'a super::retained::ReuseGap>) -> ClusterView<'a> {
        ClusterView { reuse, ..self }
    }

    /// The same view visiting only the nodes `active` (ascending, holding every node that
    /// could admit the request, and for a migration check its source: a node not listed is
    /// never chosen).
    pub fn with_active(self, active: &'a [NodeIdx]) -> ClusterView<'a> {
        ClusterView {
            active: Some(active),
            ..self
        }
    }

    /// The nodes a decision visits, in index order: [`ClusterView::active`] when set,
    /// otherwise every node (a down node is never admissible, [`NodeView::can_admit`]).
    pub fn candidates(&self) -> impl Iterator<Item = (NodeIdx, &'a NodeView<'a>)> + 'a {
        let nodes = self.nodes;
        let (all, listed) = match self.active {
            Some(a) => (0, a),
            None => (nodes.len(), &[][..]),
        };
        (0..all).map(move |i| (i, &nodes[i])).chain(
            listed
                .iter()
                .filter_map(move |&i| nodes.get(i).map(|n| (i, n))),
        )
    }

    /// The same view with the service-time forecast over the nodes' live state.
    pub fn with_loads(self, loads: &'a dyn NodeLoads) -> ClusterView<'a> {
        ClusterView {
            loads: Some(loads),
            ..self
        }
    }

    /// The same view with foresight (every end for the oracle, announced ends otherwise).
    pub fn with_foresight(self, foresight: &'a dyn Foresight) -> ClusterView<'a> {
        ClusterView {
            foresight: Some(foresight),
            ..self
        }
    }
}

/// What the policy sees of one request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RequestView {
    /// Request id (echoed in explanations).
    pub id: u64,
    /// Prompt length `P_r`, tokens.
    pub prompt_tokens: u64,
    /// Tokens generated so far (`done`); streamed to the client, never lost.
    pub done_tokens: u64,
    /// Noisy estimate `L^_r` of the total output length, tokens.
    pub est_output_tokens: u64,
    /// The node holding the request's KV cache, if any.
    pub node: Option<NodeIdx>,
    /// Tokens of the context already prefilled (KV resident) on `node`.
    pub resident_tokens: u64,
    /// Planned migrations the request has made so far.
    pub planned_hops: u32,
    /// Log-sd `sigma` of the posterior of the true length around the estimate (its median),
    /// [`crate::replay::estimate`]; 0 for an exact estimate. Used by [`RequestView::remaining_expected`] once the request outlives
    /// its estimate.
    pub est_sigma: f64,
    /// The request lost its KV to a node's end and is being placed again: the engine makes it
    /// wait the stall penalty and the recompute overhead before its re-prefill, and the
    /// forecasts price that wait.
    #[serde(default)]
    pub recovering: bool,
    /// The conversation the request is a turn of, as a key (`None`: unknown), which the
    /// `session-affinity` router hashes.
    #[serde(default)]
    pub conversation: Option<u64>,
}

impl RequestView {
    /// A fresh request: nothing generated, on no node.
    pub fn new(id: u64, prompt_tokens: u64, est_output_tokens: u64) -> RequestView {
        RequestView {
            id,
            prompt_tokens,
            done_tokens: 0,
            est_output_tokens,
            node: None,
            resident_tokens: 0,
            planned_hops: 0,
            est_sigma: 0.0,
            recovering: false,
            conversation: None,
        }
    }

    /// The same request with estimate noise `sigma` (see [`RequestView::est_sigma`]).
    pub fn with_sigma(mut self, sigma: f64) -> RequestView {
        self.est_sigma = sigma;
        self
    }

    /// Context `c = P_r + done`, tokens.
    #[inline]
    pub fn context(&self) -> u64 {
        self.prompt_tokens.saturating_add(self.done_tokens)
    }

    /// Estimated remaining output `max(L^_r - done, 0)`, tokens.
    #[inline]
    pub fn remaining_est(&self) -> u64 {
        self.est_output_tokens.saturating_sub(self.done_tokens)
    }

    /// Expected remaining output `E[L - done | L > done]`, tokens: what `T_i` and `L_i` price
    /// (every policy uses it; [`RequestView::kv_need`] keeps the plain estimate).
    ///
    /// The policies' posterior of the true length is log-normal, `ln L ~ N(mu, sigma^2)` with
    /// `mu = ln L^` (the estimate is the posterior median the estimator computed from its
    /// observation and the workload's length distribution, [`crate::replay::estimate`]) and
    /// `sigma` = [`RequestView::est_sigma`], so with `x = ln done` (closed form,
    /// [`conditional_excess`]):
    ///
    /// `E[L - done | L > done] = e^{mu + sigma^2/2} Phi((mu + sigma^2 - x) / sigma)
    ///  / Phi((mu - x) / sigma) - done`.
    ///
    /// It never reaches 0 while the request runs: a request that outlives its estimate keeps
    /// a positive remaining output and stays visible to risk (and to migration). With
    /// `sigma = 0` (exact estimate) it is `L^ - done`, and 1 token past the estimate.
    #[inline]
    pub fn remaining_expected(&self) -> f64 {
        let est = self.est_output_tokens as f64;
        let done = self.done_tokens as f64;
        if self.est_sigma > 0.0 && est > 0.0 {
            return conditional_excess(est, self.est_sigma, done).max(1.0);
        }
        if done < est {
            est - done
        } else {
            1.0
        }
    }

    /// KV tokens a node must have free to admit the request: the final context
    /// `c + remaining_est`, so that an admitted request never runs out of KV.
    #[inline]
    pub fn kv_need(&self) -> u64 {
        self.context().saturating_add(self.remaining_est())
    }
}

/// `E[L - d | L > d]` for `ln L ~ N(ln median, sigma^2)`; 0 when `sigma <= 0` or the inputs
/// are degenerate. Numerically safe in the far tail (uses the Mills-ratio asymptote when the
/// survival mass underflows).
pub(crate) fn conditional_excess(median: f64, sigma: f64, d: f64) -> f64 {
    if !(sigma > 0.0 && median > 0.0 && sigma.is_finite()) {
        return 0.0;
    }
    let d = d.max(1e-9);
    let mu = median.ln();
    let x = d.ln();
    let a = (mu - x) / sigma; // P(L > d) = Phi(a)
    let b = a + sigma; // E[L; L > d] = e^{mu + s^2/2} Phi(b)
    let pa = norm_cdf(a);
    if pa > 1e-300 && a > -30.0 {
        let m = (mu + 0.5 * sigma * sigma).exp() * norm_cdf(b) / pa;
        return (m - d).max(0.0);
    }
    // Far tail: E[L - d | L > d] ~ d * sigma / (-a) (Mills ratio of the log).
    d * sigma / (-a).max(1e-9)
}

/// The standard normal quantile `Phi^-1(p)` for `p` in (0, 1) (Acklam's rational
/// approximation, relative error below 1.2e-9; +-infinity at 0 and 1, NaN outside).
pub(crate) fn norm_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    const LOW: f64 = 0.024_25;
    if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The standard normal CDF (Abramowitz-Stegun 7.1.26 via `erfc`, |error| < 1.5e-7).
pub(crate) fn norm_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    // W. J. Cody-style rational approximation (Numerical Recipes `erfcc`), relative error
    // below 1.2e-7 everywhere.
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// What a cost-based policy's placement prices besides the request's own completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForecastKind {
    /// `own`: `T_i`, the request's own completion on the node
    /// ([`super::service::forecast`]).
    Own,
    /// `marginal`: `T_i + D_i`, `D_i` the delay the request imposes on the requests already on
    /// the node ([`super::service::forecast_marginal`]): placement minimises the increase of
    /// the sum of completion times, as far as the node's current requests go (they drain,
    /// nothing arrives).
    Marginal,
    /// `stationary`: `T_i + D_i` with the node's load held where it is
    /// ([`super::service::stationary`]): the request starts as the node serves it now, then
    /// decodes, and delays its neighbours, beside as many requests as the node holds now for
    /// its whole stay (a router that balances refills a slot as it frees). A node that gains
    /// nothing from batching ([`super::service::drains`]: a phone) is priced as `marginal`
    /// prices it (a rule chosen by measurement: a router refills a phone less, and which of
    /// its residents leave soon decides where a long request finishes first). The default: the
    /// draining forecasts sent requests to nodes about to drain and lost to `least-loaded` on
    /// short requests (the length-noise grid), and the stationary one everywhere lost the
    /// gains on phones with long outputs.
    #[default]
    Stationary,
}

impl ForecastKind {
    /// The name used in scenarios (`[policy] forecast`).
    pub fn name(&self) -> &'static str {
        match self {
            ForecastKind::Own => "own",
            ForecastKind::Marginal => "marginal",
            ForecastKind::Stationary => "stationary",
        }
    }
}

impl std::str::FromStr for ForecastKind {
    type Err = String;
    fn from_str(s: &str) -> Result<ForecastKind, String> {
        match s.trim() {
            "own" => Ok(ForecastKind::Own),
            "marginal" => Ok(ForecastKind::Marginal),
            "stationary" => Ok(ForecastKind::Stationary),
            other => Err(format!(
                "unknown forecast `{other}` (expected `own`, `marginal` or `stationary`)"
            )),
        }
    }
}

/// The policy's constants.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Params {
    /// Model constant `kv_bytes`: bytes of KV cache per token (see [`super::presets`]).
    pub kv_bytes_per_token: f64,
    /// `O_t`: fixed overhead of a KV transfer, seconds.
    pub transfer_overhead_s: f64,
    /// `O_r`: fixed overhead of a recompute (re-prefill), seconds.
    pub recompute_overhead_s: f64,
    /// `sigma`: stall penalty of an unplanned loss (detection + client-visible stall), seconds.
    pub stall_penalty_s: f64,
    /// Hysteresis `h`, seconds: migrate only if `risk_gain > h` and `dT < h`.
    pub hysteresis_s: f64,
    /// At most this many planned moves per request.
    pub max_hops: u32,
    /// Never move a request with less than this much work left (`T_i`), seconds.
    pub min_remaining_s: f64,
    /// How often the simulator should call `check_migration` per running request, seconds.
    pub check_interval_s: f64,
    /// Overlapped migration: the destination prefills while the source keeps decoding
    /// (see [`super::migration::overlapped_move`]).
    pub overlap: bool,
    /// What placement prices besides `T_i` ([`ForecastKind`]).
    pub forecast: ForecastKind,
    /// How many draws of the unknown output lengths the replay's forecast averages `T_i` over
    /// when lengths are estimated (1: every request at its expected length; see
    /// [`crate::replay`]'s engine docs). Between 1 and [`MAX_LENGTH_DRAWS`].
    pub length_draws: u32,
    /// Price the retained-state term `R_i` ([`super::retained`]) in the `E`-based policies'
    /// placement, where the workload has conversations and prefix caching (default true;
    /// false is the ablation).
    pub retained_state: bool,
    /// Move idle conversations' prefix state off risky nodes
    /// ([`crate::replay::engine`]'s idle-state migration; the policies that migrate, default
    /// true; false is the ablation).
    pub idle_migration: bool,
}

/// The largest [`Params::length_draws`].
pub const MAX_LENGTH_DRAWS: u32 = 256;

impl Default for Params {
    /// Llama-2-7B KV size (512 KiB/token); `O_t = 0.2 s`, `O_r = 0.1 s` (assumed, pending the
    /// hardware measurement); `sigma = 2 s` (a heartbeat-timeout-sized stall); `h = 1 s`;
    /// 2 hops; 5 s minimum remaining; 5 s check interval; no overlap; the `stationary`
    /// forecast; one length draw; the retained-state term priced.
    fn default() -> Params {
        Params {
            kv_bytes_per_token: super::presets::LLAMA2_7B.kv_bytes_per_token,
            transfer_overhead_s: 0.2,
            recompute_overhead_s: 0.1,
            stall_penalty_s: 2.0,
            hysteresis_s: 1.0,
            max_hops: 2,
            min_remaining_s: 5.0,
            check_interval_s: 5.0,
            overlap: false,
            forecast: ForecastKind::Stationary,
            length_draws: 1,
            retained_state: true,
            idle_migration: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn norm_quantile_inverts_norm_cdf() {
        for k in 1..1000 {
            let p = f64::from(k) / 1000.0;
            let z = norm_quantile(p);
            // norm_cdf is good to 1.5e-7.
            assert!((norm_cdf(z) - p).abs() < 3e-7, "p {p}: z {z}");
        }
        assert_eq!(norm_quantile(0.5), 0.0);
        assert!((norm_quantile(0.975) - 1.959_963_985).abs() < 1e-8);
        assert!((norm_quantile(1e-10) + 6.361_340_902).abs() < 1e-6);
        assert_eq!(norm_quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(norm_quantile(1.0), f64::INFINITY);
        assert!(norm_quantile(1.5).is_nan() && norm_quantile(f64::NAN).is_nan());
    }

    #[test]
    fn forecast_kind_names_round_trip() {
        for k in [
            ForecastKind::Own,
            ForecastKind::Marginal,
            ForecastKind::Stationary,
        ] {
            assert_eq!(k.name().parse::<ForecastKind>(), Ok(k));
        }
        let err = "total".parse::<ForecastKind>().unwrap_err();
        assert!(err.contains("`own`, `marginal` or `stationary`"), "{err}");
    }
}
