//! The expected-completion-cost function `E_i(r) = T_i + L_i` (design note "The algorithm").
//!
//! * `T_i`: remaining service time of request `r` on node `i`. The policies price it with the
//!   service-time model's forecast ([`super::service::forecast`], exact for the engine); this
//!   module's [`service_time`] is the unloaded-view formula used when a view carries no
//!   forecast (hand-built views, the `trigger` tables).
//! * `U_i(t)` ([`UnplannedLoss`]): what an unplanned loss at time `t` costs.
//! * `L_i` ([`expected_loss`]): `U_i` integrated against the conditional failure density,
//!   as a 16-cell Riemann-Stieltjes sum over the conditional survival curve.
//!
//! All functions are allocation-free; one `E_i` costs one [`ConditionalSurvival::conditional_grid`]
//! call (17 survival points) plus 16 evaluations of `U_i`.

use super::model::{NodeIdx, NodeView, Params, RequestView};
pub use super::service::{secs, ServiceTime};
use crate::survival::curve::{nonneg, ConditionalSurvival, Exponential, CELLS, GRID_POINTS};

/// The unloaded-view estimate of `T_i` (used when a [`super::model::ClusterView`] carries no
/// [`super::service::NodeLoads`] forecast):
///
/// `w_i = queue_wait + prefill_tokens / p_i`, `T_i = w_i + remaining_tokens / d_i`,
///
/// where `prefill_tokens = c - (tokens already prefilled on i)` and
/// `remaining_tokens = max(L^_r - done, 0)`. Negative or NaN inputs count as 0; a zero rate with
/// work to do gives an infinite time.
#[inline]
pub fn service_time(
    queue_wait_s: f64,
    prefill_tokens: f64,
    prefill_tok_s: f64,
    remaining_tokens: f64,
    decode_tok_s: f64,
) -> ServiceTime {
    let start_s = nonneg(queue_wait_s) + secs(prefill_tokens, prefill_tok_s);
    ServiceTime {
        start_s,
        total_s: start_s + secs(remaining_tokens, decode_tok_s),
    }
}

/// `U_i(t) = (c + min(d_i (t - w_i)^+, L^_r - done)) / p_fb + O_r + sigma`: the cost of an
/// unplanned loss at time `t` from now — re-prefilling, on the best fallback node `fb`, the
/// context accumulated by then, plus the recompute overhead and the stall penalty.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UnplannedLoss {
    base_s: f64,
    start_s: f64,
    decode_tok_s: f64,
    remaining_tokens: f64,
    inv_fallback_prefill: f64,
    context_tokens: f64,
    stall_s: f64,
    hop_overhead_s: f64,
    hop_s_per_token: f64,
}

impl UnplannedLoss {
    /// `U` for context `c = context_tokens`, decode start `w = start_s`, decode rate `d`,
    /// remaining output `remaining_tokens`, fallback prefill rate `p_fb`, `O_r` and `sigma`.
    #[inline]
    pub fn new(
        context_tokens: f64,
        start_s: f64,
        decode_tok_s: f64,
        remaining_tokens: f64,
        fallback_prefill_tok_s: f64,
        recompute_overhead_s: f64,
        stall_penalty_s: f64,
    ) -> UnplannedLoss {
        // Finite even without a fallback (so that 0 tokens cost 0, not NaN); `base_s` is then
        // already infinite.
        let inv = if fallback_prefill_tok_s > 0.0 {
            1.0 / fallback_prefill_tok_s
        } else {
            f64::MAX
        };
        UnplannedLoss {
            base_s: secs(context_tokens, fallback_prefill_tok_s)
                + nonneg(recompute_overhead_s)
                + nonneg(stall_penalty_s),
            start_s: nonneg(start_s),
            decode_tok_s: nonneg(decode_tok_s),
            remaining_tokens: nonneg(remaining_tokens),
            inv_fallback_prefill: inv,
            context_tokens: nonneg(context_tokens),
            stall_s: nonneg(stall_penalty_s),
            hop_overhead_s: f64::INFINITY,
            hop_s_per_token: f64::INFINITY,
        }
    }

    /// The same loss with a KV-transfer route for a planned hop ([`UnplannedLoss::hop_at`]):
    /// `O_t + ctx * kv_bytes / B` seconds. Without it a hop can only recompute.
    #[inline]
    pub fn with_hop(mut self, transfer_overhead_s: f64, kv_bytes_per_token: f64, bw: f64) -> Self {
        self.hop_overhead_s = nonneg(transfer_overhead_s);
        self.hop_s_per_token = if bw > 0.0 {
            nonneg(kv_bytes_per_token) / bw
        } else {
            f64::INFINITY
        };
        self
    }

    /// The context (tokens) the request has at time `t`: `c + min(d (t - w)^+, L^_r - done)`.
    #[inline]
    pub fn context_at(&self, t: f64) -> f64 {
        self.context_tokens
            + (self.decode_tok_s * (t - self.start_s))
                .max(0.0)
                .min(self.remaining_tokens)
    }

    /// The clairvoyant oracle's cost of a node ending at `t`: a planned hop scheduled just
    /// before the end, the cheaper of a recompute `O_r + ctx(t) / p_fb` (`U(t)` without the
    /// stall `sigma`) and, when it fits before the end (`O_t + ctx(t) kv/B <= t`), a KV
    /// transfer. Never above `U(t)`.
    #[inline]
    pub fn hop_at(&self, t: f64) -> f64 {
        let unplanned = self.at(t);
        let recompute = unplanned - self.stall_s;
        let transfer = self.hop_overhead_s + self.context_at(t) * self.hop_s_per_token;
        let hop = if transfer <= t {
            recompute.min(transfer)
        } else {
            recompute
        };
        hop.min(unplanned)
    }

    /// `U(t)`, seconds.
    #[inline]
    pub fn at(&self, t: f64) -> f64 {
        let grown = (self.decode_tok_s * (t - self.start_s))
            .max(0.0)
            .min(self.remaining_tokens);
        self.base_s + grown * self.inv_fallback_prefill
    }

    /// The same loss with nothing decoding (`U(t) = U(0)` for every `t`): the cost of losing a
    /// request whose KV is being transferred.
    #[inline]
    pub fn frozen(&self) -> UnplannedLoss {
        UnplannedLoss {
            remaining_tokens: 0.0,
            ..*self
        }
    }

    /// Lipschitz constant of `U` in `t`: `d / p_fb`.
    pub fn slope(&self) -> f64 {
        if self.decode_tok_s > 0.0 {
            self.decode_tok_s * self.inv_fallback_prefill
        } else {
            0.0
        }
    }

    /// `U(0)` and the floor of `U`: `c / p_fb + O_r + sigma`.
    pub fn base(&self) -> f64 {
        self.base_s
    }

    /// Total rise of `U` over all `t`: `(L^_r - done) / p_fb`.
    pub fn rise(&self) -> f64 {
        if self.remaining_tokens > 0.0 {
            self.remaining_tokens * self.inv_fallback_prefill
        } else {
            0.0
        }
    }
}

/// `L = integral_0^T f(t | a) U(t) dt`, computed as the 16-cell Riemann-Stieltjes sum
///
/// `L16 = sum_{k=0}^{15} (S(t_k | a) - S(t_{k+1} | a)) * U((t_k + t_{k+1}) / 2)`, `t_k = k T / 16`.
///
/// `horizon <= 0` (or NaN) gives 0, an infinite horizon gives infinity. Error bound:
/// [`riemann_error_bound`]. No allocation; one `conditional_grid` call.
#[inline]
pub fn expected_loss<C: ConditionalSurvival + ?Sized>(
    curve: &C,
    age: f64,
    horizon: f64,
    u: &UnplannedLoss,
) -> f64 {
    if !(horizon > 0.0) {
        return 0.0;
    }
    if !horizon.is_finite() {
        return f64::INFINITY;
    }
    let step = horizon / CELLS as f64;
    let mut g = [0.0; GRID_POINTS];
    curve.conditional_grid(age, step, &mut g);
    let mut sum = 0.0;
    for k in 0..CELLS {
        let mass = g[k] - g[k + 1];
        // Skipping empty cells also keeps `0 * infinity` (no fallback) out of the sum.
        if mass > 0.0 {
            sum += mass * u.at((k as f64 + 0.5) * step);
        }
    }
    sum
}

/// A bound on `|L - L16|` for [`expected_loss`].
///
/// Derivation: `L = sum_k integral_{(t_k, t_{k+1}]} U d(-S)`. On cell `k` every `t` is within
/// `T/32` of the midpoint `m_k`, and `U` is non-decreasing with slope at most `d / p_fb` and total
/// rise at most `(L^_r - done) / p_fb`, so `|U(t) - U(m_k)| <= min(d T / 32, L^_r - done) / p_fb`.
/// Summing over the cell masses `S(t_k|a) - S(t_{k+1}|a)`, which add up to `1 - S(T|a)`:
///
/// `|L - L16| <= (1 - S(T | a)) * min(d T / 32, L^_r - done) / p_fb`.
pub fn riemann_error_bound<C: ConditionalSurvival + ?Sized>(
    curve: &C,
    age: f64,
    horizon: f64,
    u: &UnplannedLoss,
) -> f64 {
    if !(horizon > 0.0) {
        return 0.0;
    }
    let fail = 1.0 - curve.conditional(age, horizon);
    let half_cell = horizon / (2.0 * CELLS as f64);
    fail * (u.slope() * half_cell).min(u.rise())
}

/// A cheap lower bound on [`node_loss`] (two curve evaluations instead of 17):
/// `L >= (1 - S(T | a)) * U(0)`, since `U` is non-decreasing. Used to skip candidates that
/// cannot win; exact for the oracle.
#[inline]
pub fn node_loss_lower_bound(
    node: &NodeView<'_>,
    model: RiskModel,
    remaining_up: Option<f64>,
    extra_age: f64,
    horizon: f64,
    u: &UnplannedLoss,
) -> f64 {
    if !(horizon > 0.0) {
        return 0.0;
    }
    let age = node.age_s + nonneg(extra_age);
    let announced = remaining_up.map(|r| nonneg(r - nonneg(extra_age)));
    let exp;
    let curve: &dyn ConditionalSurvival = match model {
        RiskModel::Hazard => node.survival,
        RiskModel::Memoryless => {
            exp = Exponential::from_rate(node.exp_rate_per_s);
            &exp
        }
        RiskModel::Oracle => return oracle_loss(announced, horizon, u),
    };
    let (span, planned) = split_at_announced_end(curve, age, announced, horizon, u);
    let fail = 1.0 - curve.conditional(age, span);
    let unplanned = if fail > 0.0 && span > 0.0 {
        // A hair below the bound, so that rounding never lets it exceed the 16-cell sum.
        fail * u.at(0.0) * (1.0 - 1e-12)
    } else {
        0.0
    };
    unplanned + planned
}

/// The announced-end split of `L` ([`node_loss`] with a known remaining session `R`):
/// returns the span `min(T, R)` over which the curve prices unplanned loss, and the planned
/// term `S(R | a) * hop(R)` when the node's announced end `R` comes before `T` (0 otherwise).
/// `R = None` (no announced end) gives `(T, 0)`.
#[inline]
fn split_at_announced_end<C: ConditionalSurvival + ?Sized>(
    curve: &C,
    age: f64,
    announced: Option<f64>,
    horizon: f64,
    u: &UnplannedLoss,
) -> (f64, f64) {
    match announced {
        Some(r) if r < horizon => (r, curve.conditional(age, r) * u.hop_at(r)),
        _ => (horizon, 0.0),
    }
}

/// The clairvoyant oracle's loss: if the node's true remaining session `R < T`, the planned
/// hop it makes just before the end ([`UnplannedLoss::hop_at`]`(R)`, never above the unplanned
/// `U(R)`), else 0. An unknown `R` (`None`) counts as never failing.
#[inline]
fn oracle_loss(remaining_up: Option<f64>, horizon: f64, u: &UnplannedLoss) -> f64 {
    match remaining_up {
        Some(r) if r < horizon => u.hop_at(nonneg(r)),
        _ => 0.0,
    }
}

/// Which failure model prices `L`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RiskModel {
    /// The node's own conditional survival curve `S_i(t | a_i)`.
    Hazard,
    /// An exponential with the node's maximum-likelihood rate (`exp_rate_per_s`).
    Memoryless,
    /// The true remaining session from [`super::model::Foresight`] ([`oracle_loss`]: a planned
    /// hop just before a known end).
    Oracle,
}

/// `L` of node `node` over `[0, horizon]` under `model`, for a node `extra_age` seconds older
/// than now (used for a destination after an overlapped-migration window).
#[inline]
pub fn node_loss(
    node: &NodeView<'_>,
    model: RiskModel,
    remaining_up: Option<f64>,
    extra_age: f64,
    horizon: f64,
    u: &UnplannedLoss,
) -> f64 {
    let age = node.age_s + nonneg(extra_age);
    let announced = remaining_up.map(|r| nonneg(r - nonneg(extra_age)));
    match model {
        RiskModel::Hazard => announced_loss(node.survival, age, announced, horizon, u),
        RiskModel::Memoryless => announced_loss(
            &Exponential::from_rate(node.exp_rate_per_s),
            age,
            announced,
            horizon,
            u,
        ),
        RiskModel::Oracle => oracle_loss(announced, horizon, u),
    }
}

/// `L` of a curve that knows the node's announced end `R` (a planned end: a lifetime cap,
/// a scheduled maintenance, a notice), design rule "only unannounced causes are risk":
///
/// `L = sum_16 over [0, min(T, R)] of U against S(t | a)  +  [R < T] S(R | a) hop(R)`,
///
/// the unplanned loss priced by the curve of the unannounced causes up to the end, and, when
/// the end comes before the request would finish, the planned hop the replay makes just before
/// it ([`UnplannedLoss::hop_at`]: the cheaper of a recompute and a KV transfer that fits,
/// without the stall) in the event that the node is still up then. Without an announced end
/// (`None`) it is [`expected_loss`].
#[inline]
pub fn announced_loss<C: ConditionalSurvival + ?Sized>(
    curve: &C,
    age: f64,
    announced: Option<f64>,
    horizon: f64,
    u: &UnplannedLoss,
) -> f64 {
    if !(horizon > 0.0) {
        return 0.0;
    }
    let (span, planned) = split_at_announced_end(curve, age, announced, horizon, u);
    expected_loss(curve, age, span, u) + planned
}

/// The predicted probability that `node` fails before a request placed on it now completes,
/// `1 - S(T | a)` with `T = horizon` and `a` the node's age, under `model` (the oracle's: 1 when
/// the known remaining session is shorter than `T`, else 0). With an announced end `R`
/// (`remaining_up` for the other models) the curve is read up to `min(T, R)`: a planned end
/// is drained, not an interruption. 0 for a non-positive horizon, 1 for an infinite one. The
/// forecast calibration compares it with what happened.
pub fn interruption_probability(
    node: &NodeView<'_>,
    model: RiskModel,
    remaining_up: Option<f64>,
    horizon: f64,
) -> f64 {
    if !(horizon > 0.0) {
        return 0.0;
    }
    if !horizon.is_finite() {
        return 1.0;
    }
    // An announced end `R` is not an interruption (the replay drains the node before it):
    // the curve of the unannounced causes is read up to `min(T, R)`.
    let span = match (model, remaining_up) {
        (RiskModel::Oracle, _) | (_, None) => horizon,
        (_, Some(r)) => horizon.min(nonneg(r)),
    };
    match model {
        RiskModel::Hazard => 1.0 - node.survival.conditional(node.age_s, span),
        RiskModel::Memoryless => {
            1.0 - Exponential::from_rate(node.exp_rate_per_s).conditional(node.age_s, span)
        }
        RiskModel::Oracle => match remaining_up {
            Some(r) if r < horizon => 1.0,
            _ => 0.0,
        },
    }
}

/// `T_i`, `w_i`, `L_i` and `E_i = T_i + L_i` of one request on one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeCost {
    /// `T_i`, seconds.
    pub t: f64,
    /// `w_i`, seconds.
    pub w: f64,
    /// `L_i`, seconds.
    pub l: f64,
    /// `E_i = T_i + L_i`, seconds.
    pub e: f64,
}

/// The two fastest-prefilling nodes of a candidate set, to find each node's fallback `fb`
/// (the feasible node other than `i` with the highest prefill rate) in O(1).
#[derive(Debug, Clone, Copy, Default)]
pub struct Fallbacks {
    best: Option<(NodeIdx, f64)>,
    second: Option<(NodeIdx, f64)>,
}

impl Fallbacks {
    /// Adds node `idx` with prefill rate `p` to the set (ties keep the lower index).
    #[inline]
    pub fn push(&mut self, idx: NodeIdx, p: f64) {
        match self.best {
            Some((_, bp)) if !(p > bp) => {
                if self.second.is_none_or(|(_, sp)| p > sp) {
                    self.second = Some((idx, p));
                }
            }
            _ => {
                self.second = self.best;
                self.best = Some((idx, p));
            }
        }
    }

    /// Prefill rate of node `idx`'s fallback `p_fb`; `own` (the node's own rate: recovery waits
    /// for the node to come back) when the set holds no other node.
    #[inline]
    pub fn for_node(&self, idx: NodeIdx, own: f64) -> f64 {
        match (self.best, self.second) {
            (Some((b, p)), _) if b != idx => p,
            (_, Some((_, p))) => p,
            _ => own,
        }
    }
}

/// How a node's unplanned loss `L_i` is priced ([`request_cost`], [`cost_from_service`]): the
/// prefill rate `p_fb` where the request re-prefills after a loss, the policy's parameters, the
/// risk model, and the seconds until the node's announced end, when it has one.
#[derive(Debug, Clone, Copy)]
pub struct LossPricing<'a> {
    /// The fallback's prefill rate `p_fb` (tokens/s).
    pub fallback_prefill_tok_s: f64,
    /// The policy's parameters.
    pub params: &'a Params,
    /// The risk model.
    pub model: RiskModel,
    /// Seconds until the node's announced end (priced as a planned hop, [`announced_loss`]).
    pub remaining_up: Option<f64>,
}

/// `E_i` of `req` on `node` (index `idx`) for placement: `T_i` from [`service_time`] with the
/// node's queue wait and the prefill still to do (`c` minus the tokens already resident when the
/// request's KV is on this node), `L_i` over `[0, T_i]` under `model`.
#[inline]
pub fn placement_cost(
    node: &NodeView<'_>,
    idx: NodeIdx,
    req: &RequestView,
    fallback_prefill_tok_s: f64,
    params: &Params,
    model: RiskModel,
    remaining_up: Option<f64>,
) -> NodeCost {
    let c = req.context() as f64;
    let resident = if req.node == Some(idx) {
        req.resident_tokens as f64
    } else {
        0.0
    };
    request_cost(
        node,
        node.queue_wait_s,
        c - resident,
        c,
        req.remaining_expected(),
        &LossPricing {
            fallback_prefill_tok_s,
            params,
            model,
            remaining_up,
        },
    )
}

/// `E_i` of a running request on its current node: no queue wait, prefill only for context not
/// yet resident.
#[inline]
pub(crate) fn running_cost(
    node: &NodeView<'_>,
    req: &RequestView,
    fallback_prefill_tok_s: f64,
    params: &Params,
    model: RiskModel,
    remaining_up: Option<f64>,
) -> NodeCost {
    let c = req.context() as f64;
    request_cost(
        node,
        0.0,
        c - req.resident_tokens as f64,
        c,
        req.remaining_expected(),
        &LossPricing {
            fallback_prefill_tok_s,
            params,
            model,
            remaining_up,
        },
    )
}

/// The general form: `T_i` from `queue_wait_s`, `prefill_tokens`, `remaining_tokens`; `U_i`
/// for context `context_tokens`; `L_i` over `[0, T_i]`.
#[inline]
fn request_cost(
    node: &NodeView<'_>,
    queue_wait_s: f64,
    prefill_tokens: f64,
    context_tokens: f64,
    remaining_tokens: f64,
    pricing: &LossPricing<'_>,
) -> NodeCost {
    let st = service_time(
        queue_wait_s,
        prefill_tokens,
        node.prefill_tok_s,
        remaining_tokens,
        node.decode_tok_s,
    );
    cost_from_service(
        node,
        st,
        node.decode_tok_s,
        context_tokens,
        remaining_tokens,
        pricing,
    )
    .0
}

/// `E_i` for a service time `st` already forecast (by [`super::service::forecast`] or
/// [`service_time`]): `T_i = st.total_s`, `w_i = st.start_s`, and `U_i` for context
/// `context_tokens` growing from `w_i` at `decode_tok_s` (for a forecast, the average rate it
/// implies, [`ServiceTime::decode_rate`]), `L_i` over `[0, T_i]` under `model`. Returns the
/// cost and the `U_i` behind it.
#[inline]
pub(crate) fn cost_from_service(
    node: &NodeView<'_>,
    st: ServiceTime,
    decode_tok_s: f64,
    context_tokens: f64,
    remaining_tokens: f64,
    pricing: &LossPricing<'_>,
) -> (NodeCost, UnplannedLoss) {
    let LossPricing {
        fallback_prefill_tok_s,
        params,
        model,
        remaining_up,
    } = *pricing;
    let u = UnplannedLoss::new(
        context_tokens,
        st.start_s,
        decode_tok_s,
        remaining_tokens,
        fallback_prefill_tok_s,
        params.recompute_overhead_s,
        params.stall_penalty_s,
    )
    .with_hop(
        params.transfer_overhead_s,
        params.kv_bytes_per_token,
        node.bandwidth_bytes_s,
    );
    let l = node_loss(node, model, remaining_up, 0.0, st.total_s, &u);
    (
        NodeCost {
            t: st.total_s,
            w: st.start_s,
            l,
            e: st.total_s + l,
        },
        u,
    )
}

/// Unplanned recovery after node loss: re-prefill the context `c` on node `j`,
/// `c / p_j + sigma` (issue text), plus `O_r` so it equals `U` at the failure time; pass
/// `recompute_overhead_s = 0` for the bare form. Generated tokens were streamed and are not
/// lost; the KV cache is.
pub(crate) fn unplanned_recovery_s(
    context_tokens: f64,
    prefill_tok_s: f64,
    stall_penalty_s: f64,
    recompute_overhead_s: f64,
) -> f64 {
    secs(context_tokens, prefill_tok_s) + recovery_wait_s(stall_penalty_s, recompute_overhead_s)
}

/// The waiting part of a recovery after a loss: the stall penalty `sigma` and the recompute
/// overhead `O_r` (negative values count as 0); [`unplanned_recovery_s`] without the prefill.
#[inline]
pub(crate) fn recovery_wait_s(stall_penalty_s: f64, recompute_overhead_s: f64) -> f64 {
    nonneg(stall_penalty_s) + nonneg(recompute_overhead_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallbacks_pick_other_best() {
        let mut f = Fallbacks::default();
        f.push(0, 100.0);
        f.push(1, 300.0);
        f.push(2, 200.0);
        assert_eq!(f.for_node(1, 1.0), 200.0);
        assert_eq!(f.for_node(0, 1.0), 300.0);
        let mut g = Fallbacks::default();
        g.push(5, 10.0);
        assert_eq!(g.for_node(5, 7.0), 7.0);
    }

    #[test]
    fn u_is_capped_and_starts_after_w() {
        let u = UnplannedLoss::new(1000.0, 2.0, 10.0, 50.0, 100.0, 0.5, 1.0);
        assert!((u.at(0.0) - 11.5).abs() < 1e-12);
        assert!((u.at(2.0) - 11.5).abs() < 1e-12);
        assert!((u.at(3.0) - 11.6).abs() < 1e-12);
        assert!((u.at(100.0) - 12.0).abs() < 1e-12);
    }
}
