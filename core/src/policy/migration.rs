//! Planned migration: what a move costs (`C_planned`), when transfer beats recompute (`c*`),
//! the overlapped variant, and the hazard-motivated trigger with its guards.

use serde::Serialize;

use super::cost::{
    node_loss, node_loss_lower_bound, running_cost, secs, service_time, NodeCost, RiskModel,
    UnplannedLoss,
};
use super::model::{NodeView, Params, RequestView};
use super::service::ServiceTime;
use crate::survival::curve::nonneg;

/// How a planned move carries the KV cache to the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MoveMethod {
    /// Ship the KV cache over the link.
    Transfer,
    /// Re-prefill the context on the destination (prompt and generated tokens are known).
    Recompute,
}

/// KV transfer: `O_t + c * kv_bytes / min(B_i, B_j)` seconds. A non-positive bandwidth makes it
/// infinite.
#[inline]
pub fn transfer_cost_s(
    context_tokens: f64,
    kv_bytes_per_token: f64,
    bandwidth_src: f64,
    bandwidth_dst: f64,
    transfer_overhead_s: f64,
) -> f64 {
    let bytes = nonneg(context_tokens) * nonneg(kv_bytes_per_token);
    nonneg(transfer_overhead_s) + secs(bytes, bandwidth_src.min(bandwidth_dst))
}

/// Recompute: `O_r + c / p_j` seconds.
#[inline]
pub fn recompute_cost_s(context_tokens: f64, prefill_dst: f64, recompute_overhead_s: f64) -> f64 {
    nonneg(recompute_overhead_s) + secs(context_tokens, prefill_dst)
}

/// Both ways of moving `c` tokens and the cheaper one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PlannedCost {
    /// [`transfer_cost_s`].
    pub transfer_s: f64,
    /// [`recompute_cost_s`].
    pub recompute_s: f64,
    /// `C_planned = min(transfer, recompute)`.
    pub cost_s: f64,
    /// The method achieving the minimum (recompute on ties: it does not need the source).
    pub method: MoveMethod,
}

/// `C_planned(i -> j) = min(O_t + c kv_bytes / min(B_i, B_j), O_r + c / p_j)`.
#[inline]
pub fn planned_cost(
    context_tokens: f64,
    kv_bytes_per_token: f64,
    bandwidth_src: f64,
    bandwidth_dst: f64,
    prefill_dst: f64,
    transfer_overhead_s: f64,
    recompute_overhead_s: f64,
) -> PlannedCost {
    let transfer_s = transfer_cost_s(
        context_tokens,
        kv_bytes_per_token,
        bandwidth_src,
        bandwidth_dst,
        transfer_overhead_s,
    );
    let recompute_s = recompute_cost_s(context_tokens, prefill_dst, recompute_overhead_s);
    if transfer_s < recompute_s {
        PlannedCost {
            transfer_s,
            recompute_s,
            cost_s: transfer_s,
            method: MoveMethod::Transfer,
        }
    } else {
        PlannedCost {
            transfer_s,
            recompute_s,
            cost_s: recompute_s,
            method: MoveMethod::Recompute,
        }
    }
}

/// Where transfer and recompute cross. Both costs are affine in the context `c`:
/// transfer `O_t + a c` with `a = kv_bytes / min(B_i, B_j)`, recompute `O_r + b c` with
/// `b = 1 / p_j`. Transfer is strictly cheaper iff `(b - a) c > O_t - O_r`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "regime", content = "c_star")]
pub enum Crossover {
    /// Transfer is cheaper for every context `c > 0`.
    TransferAlways,
    /// Transfer is never cheaper (`c* = infinity`): the link is slower per token than the
    /// destination's prefill and transfer's fixed overhead is not smaller, or there is no link.
    TransferNever,
    /// Transfer is cheaper for `c > c*` (link faster per token, transfer overhead larger).
    TransferAbove(f64),
    /// Transfer is cheaper only for `c < c*` (link slower per token, but a smaller fixed
    /// overhead).
    TransferBelow(f64),
    /// Equal slopes and equal overheads: the two always cost the same.
    Tie,
}

impl Crossover {
    /// `c*` as "transfer wins for every context at or above this": `Some(c*)` for
    /// [`Crossover::TransferAbove`], `Some(0)` for [`Crossover::TransferAlways`], and `None`
    /// (infinity) when no such context exists ([`Crossover::TransferNever`],
    /// [`Crossover::TransferBelow`], [`Crossover::Tie`]).
    pub fn c_star(&self) -> Option<f64> {
        match *self {
            Crossover::TransferAlways => Some(0.0),
            Crossover::TransferAbove(c) => Some(c),
            Crossover::TransferNever | Crossover::TransferBelow(_) | Crossover::Tie => None,
        }
    }
}

/// The raw crossover formula `c* = (O_t - O_r) / (1/p_j - kv_bytes / min(B_i, B_j))`
/// (design note "Decision 3"); may be negative, infinite or NaN — [`crossover`] interprets it.
pub fn c_star_formula(
    transfer_overhead_s: f64,
    recompute_overhead_s: f64,
    kv_bytes_per_token: f64,
    bandwidth_min: f64,
    prefill_dst: f64,
) -> f64 {
    (transfer_overhead_s - recompute_overhead_s)
        / (1.0 / prefill_dst - kv_bytes_per_token / bandwidth_min)
}

/// Classifies the transfer-vs-recompute crossover for every sign case of
/// `c* = (O_t - O_r) / (1/p_j - kv_bytes / B)` with `B = min(B_i, B_j)`.
pub fn crossover(
    transfer_overhead_s: f64,
    recompute_overhead_s: f64,
    kv_bytes_per_token: f64,
    bandwidth_min: f64,
    prefill_dst: f64,
) -> Crossover {
    let a = if bandwidth_min > 0.0 {
        nonneg(kv_bytes_per_token) / bandwidth_min
    } else {
        f64::INFINITY
    };
    let b = if prefill_dst > 0.0 {
        1.0 / prefill_dst
    } else {
        f64::INFINITY
    };
    if a.is_infinite() {
        return Crossover::TransferNever;
    }
    if b.is_infinite() {
        return Crossover::TransferAlways;
    }
    let d = nonneg(transfer_overhead_s) - nonneg(recompute_overhead_s);
    let s = b - a;
    if s > 0.0 {
        let c = d / s;
        if c > 0.0 {
            Crossover::TransferAbove(c)
        } else {
            Crossover::TransferAlways
        }
    } else if s < 0.0 {
        if d < 0.0 {
            Crossover::TransferBelow(d / s)
        } else {
            Crossover::TransferNever
        }
    } else if d < 0.0 {
        Crossover::TransferAlways
    } else if d > 0.0 {
        Crossover::TransferNever
    } else {
        Crossover::Tie
    }
}

/// The path of a move, as its cost reads it: how many bytes a token's KV takes, the two
/// endpoints' link bandwidths (the slower decides), and the destination's prefill rate (for a
/// recompute).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hop {
    /// KV bytes per token of context.
    pub kv_bytes_per_token: f64,
    /// The source's link bandwidth (bytes/s).
    pub bandwidth_src: f64,
    /// The destination's link bandwidth (bytes/s).
    pub bandwidth_dst: f64,
    /// The destination's prefill rate (tokens/s).
    pub prefill_dst: f64,
}

/// One candidate move as the pricing reads it ([`assess_move`], [`price_move`],
/// [`price_move_with`]): the two nodes and the request's state on the source, the policy's
/// parameters and risk model, each node's announced end, and the pruning bound.
#[derive(Debug, Clone, Copy)]
pub struct MoveQuery<'a> {
    /// The node the request is on.
    pub src: &'a NodeView<'a>,
    /// The request's cost and state on the source.
    pub source: &'a SourceState,
    /// The candidate destination.
    pub dst: &'a NodeView<'a>,
    /// The destination's fallback prefill rate `p_fb` (where the request re-prefills if the
    /// destination is lost).
    pub dst_fallback_prefill: f64,
    /// The policy's parameters.
    pub params: &'a Params,
    /// The risk model the losses are priced under.
    pub model: RiskModel,
    /// Seconds until the source's announced end, when it has one.
    pub src_remaining_up: Option<f64>,
    /// Seconds until the destination's announced end, when it has one.
    pub dst_remaining_up: Option<f64>,
    /// `Some((h, floor))`: skip `L_j` when the move cannot fire at hysteresis `h` or cannot
    /// beat a candidate already found with `risk_gain = floor` (see [`assess_move`]).
    pub prune: Option<(f64, f64)>,
}

/// The request-visible cost of one planned move.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoveCost {
    /// Transfer cost of the tokens moved at cutover, seconds.
    pub transfer_s: f64,
    /// Recompute cost of the tokens moved at cutover, seconds.
    pub recompute_s: f64,
    /// `C`: the visible cost (the cheaper of the two), seconds.
    pub cost_s: f64,
    /// Method of the visible part.
    pub method: MoveMethod,
    /// Overlap window `W` during which the source keeps decoding (0 without overlap), seconds.
    pub window_s: f64,
    /// Tokens the source generates during the window, `g` (0 without overlap).
    pub decoded_in_window: f64,
}

/// Non-overlapped planned move: the request stops, the context `c` moves by
/// [`planned_cost`], the request resumes on the destination. `C = C_planned(c)`.
#[inline]
pub(crate) fn planned_move(
    context_tokens: f64,
    kv_bytes_per_token: f64,
    bandwidth_src: f64,
    bandwidth_dst: f64,
    prefill_dst: f64,
    params: &Params,
) -> MoveCost {
    let p = planned_cost(
        context_tokens,
        kv_bytes_per_token,
        bandwidth_src,
        bandwidth_dst,
        prefill_dst,
        params.transfer_overhead_s,
        params.recompute_overhead_s,
    );
    MoveCost {
        transfer_s: p.transfer_s,
        recompute_s: p.recompute_s,
        cost_s: p.cost_s,
        method: p.method,
        window_s: 0.0,
        decoded_in_window: 0.0,
    }
}

/// Overlapped planned move (`Params::overlap`). The formula chosen here:
///
/// 1. Window: the destination acquires the current context `c` by the cheaper method while the
///    source keeps decoding: `W = C_planned(c) = min(O_t + c kv/B, O_r + c / p_j)`.
/// 2. Meanwhile the source generates `g = min(d_i W, L^_r - done)` tokens (streamed, not lost).
/// 3. Cutover: the request stops on the source and the catch-up of those `g` tokens is the only
///    visible cost: `C_overlap = C_planned(g) = min(O_t + g kv/B, O_r + g / p_j)`. When the
///    window is a re-prefill, `g ~ d_i c / p_j`, so the request pays `O` plus the catch-up of
///    about `d_i c / p_j` tokens.
///
/// The risk side is in [`assess_move`]: the source must survive the window, so its loss over
/// `[0, min(W, T_i)]` counts against the move, and the destination's loss is priced after the
/// cutover (age `a_j + W`, context `c + g`, remaining `L^_r - done - g`). With equal speeds and
/// no queue, `dT = C_overlap`.
#[inline]
pub fn overlapped_move(
    context_tokens: f64,
    remaining_tokens: f64,
    decode_src: f64,
    hop: Hop,
    params: &Params,
) -> MoveCost {
    let Hop {
        kv_bytes_per_token,
        bandwidth_src,
        bandwidth_dst,
        prefill_dst,
    } = hop;
    let bulk = planned_cost(
        context_tokens,
        kv_bytes_per_token,
        bandwidth_src,
        bandwidth_dst,
        prefill_dst,
        params.transfer_overhead_s,
        params.recompute_overhead_s,
    );
    let w = bulk.cost_s;
    let rem = nonneg(remaining_tokens);
    let g = if w.is_finite() {
        (nonneg(decode_src) * w).min(rem)
    } else {
        rem
    };
    let catch = planned_cost(
        g,
        kv_bytes_per_token,
        bandwidth_src,
        bandwidth_dst,
        prefill_dst,
        params.transfer_overhead_s,
        params.recompute_overhead_s,
    );
    MoveCost {
        transfer_s: catch.transfer_s,
        recompute_s: catch.recompute_s,
        cost_s: catch.cost_s,
        method: catch.method,
        window_s: w,
        decoded_in_window: g,
    }
}

/// The trigger: migrate iff `risk_gain > h` and `dT < h`.
#[inline]
pub(crate) fn trigger_fires(risk_gain: f64, dt: f64, hysteresis_s: f64) -> bool {
    risk_gain > hysteresis_s && dt < hysteresis_s
}

/// Why a guard blocks a planned move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Blocked {
    /// The request already made `max_hops` planned moves.
    MaxHops,
    /// Less than `min_remaining_s` of work left.
    MinRemaining,
}

/// The guards: at most `max_hops` planned moves per request; never move a request with less
/// than `min_remaining_s` seconds of work (`T_i`) left.
#[inline]
pub fn check_guards(planned_hops: u32, remaining_s: f64, params: &Params) -> Result<(), Blocked> {
    if planned_hops >= params.max_hops {
        Err(Blocked::MaxHops)
    } else if !(remaining_s >= params.min_remaining_s) {
        Err(Blocked::MinRemaining)
    } else {
        Ok(())
    }
}

/// The running request on its source node: `T_i`, `L_i` and the `U_i` behind them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceState {
    /// `T_i`, `w_i`, `L_i`, `E_i` on the source.
    pub cost: NodeCost,
    /// `U_i` on the source (for the loss over an overlap window).
    pub u: UnplannedLoss,
    /// Context `c`, tokens.
    pub context: f64,
    /// Remaining estimated output, tokens.
    pub remaining: f64,
}

/// Prices the running request on its source (see [`running_cost`]).
#[inline]
pub fn source_state(
    src: &NodeView<'_>,
    req: &RequestView,
    fallback_prefill_tok_s: f64,
    params: &Params,
    model: RiskModel,
    remaining_up: Option<f64>,
) -> SourceState {
    let cost = running_cost(
        src,
        req,
        fallback_prefill_tok_s,
        params,
        model,
        remaining_up,
    );
    let context = req.context() as f64;
    let remaining = req.remaining_expected();
    let u = UnplannedLoss::new(
        context,
        cost.w,
        src.decode_tok_s,
        remaining,
        fallback_prefill_tok_s,
        params.recompute_overhead_s,
        params.stall_penalty_s,
    )
    .with_hop(
        params.transfer_overhead_s,
        params.kv_bytes_per_token,
        src.bandwidth_bytes_s,
    );
    SourceState {
        cost,
        u,
        context,
        remaining,
    }
}

/// One candidate move `i -> j`, priced.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MoveAssessment {
    /// The move's visible cost and how it is paid.
    pub mv: MoveCost,
    /// `T_j`: remaining service time on the destination once the context is there
    /// (`queue_wait_j + remaining / d_j`), seconds.
    pub t_j: f64,
    /// Residual risk of the move: `L_j` (plus, with overlap, the source's loss during the
    /// window), seconds. NaN when pruned.
    pub l_j: f64,
    /// `risk_gain = L_i - (C + l_j)`; an upper bound `L_i - C` when pruned.
    pub risk_gain: f64,
    /// `dT = (T_j + C) - T_i` (with overlap: `W + C + T_j' - T_i`).
    pub dt: f64,
    /// `l_j` was not computed because the move could not fire (`L_i - C <= h` or `dT >= h`).
    pub pruned: bool,
}

/// Prices the move of the request on `src` to `dst`:
///
/// * `risk_gain = L_i - (C_planned(i -> j) + L_j)`, `dT = (T_j + C_planned) - T_i`, with
///   `L_j` over `[0, C + T_j]` on `dst` (the request can be lost during the move; decode
///   starting after `C + queue_wait_j`, fallback `dst_fallback_prefill`) plus, for a KV
///   transfer, the source's loss over `[0, C]` (see [`price_move`]);
/// * with `params.overlap`, the formula of [`overlapped_move`].
///
/// `q.prune = Some((h, floor))` skips computing `L_j` when the move cannot fire at hysteresis `h`
/// or cannot beat a candidate already found with `risk_gain = floor`: first on the bound
/// `risk_gain <= L_i - C` (`L_j >= 0`), then on `L_i - C - (lower bounds of the losses)`
/// ([`node_loss_lower_bound`]). A pruned assessment reports that upper bound as `risk_gain`.
#[inline]
pub fn assess_move(q: &MoveQuery<'_>) -> MoveAssessment {
    let mv = move_cost(q.src, q.source, q.dst, q.params);
    price_move(q, mv)
}

/// The move's cost for the request on `src` to `dst`: [`overlapped_move`] with
/// `params.overlap`, else [`planned_move`].
#[inline]
pub(crate) fn move_cost(
    src: &NodeView<'_>,
    source: &SourceState,
    dst: &NodeView<'_>,
    params: &Params,
) -> MoveCost {
    if params.overlap {
        overlapped_move(
            source.context,
            source.remaining,
            src.decode_tok_s,
            Hop {
                kv_bytes_per_token: params.kv_bytes_per_token,
                bandwidth_src: src.bandwidth_bytes_s,
                bandwidth_dst: dst.bandwidth_bytes_s,
                prefill_dst: dst.prefill_tok_s,
            },
            params,
        )
    } else {
        planned_move(
            source.context,
            params.kv_bytes_per_token,
            src.bandwidth_bytes_s,
            dst.bandwidth_bytes_s,
            dst.prefill_tok_s,
            params,
        )
    }
}

/// A destination's service-time forecast for a move: given the move's cost and the tokens
/// left after it, when the request starts decoding on the destination and completes, counted
/// from now (the window `W` and the cost `C` included), and the delay `D_j` the move imposes on
/// the destination's requests (the `stationary` and `marginal` forecasts; 0 under `own`), which
/// the trigger's time side counts as placement's score does. `None` falls back to the view
/// formula.
pub type DestinationForecast<'f> = &'f dyn Fn(&MoveCost, f64) -> Option<(ServiceTime, f64)>;

/// [`assess_move`] for a move whose cost and method are already chosen (`mv`): the oracle
/// forces recompute when a transfer would not finish before the source's known end.
///
/// Pricing (design note "The algorithm", with the move's own risk):
///
/// * `T_j = queue_wait_j + remaining_after / d_j` (the context is there after the move);
/// * `L_j` over the horizon `C + T_j` on `dst` (the request can be lost during the `C`-second
///   move too), `U_j` for context `c + g` with decode starting after `C + queue_wait_j`; with
///   overlap, `dst` is `W` older at the cutover (`extra_age = W`);
/// * the source's own risk while it is still needed: for a KV transfer the KV is read from the
///   source, so the move is lost if the source dies within `[0, C]` (priced with the constant
///   `U_i(0)`: nothing decodes during the transfer); with overlap the source keeps decoding
///   through the window, priced over `[0, min(W, T_i)]` with `U_i`. A recompute needs no source;
/// * `l_j` = those losses summed, `risk_gain = L_i - (C + l_j)`, `dT = W + C + T_j - T_i`.
#[inline]
pub(crate) fn price_move(q: &MoveQuery<'_>, mv: MoveCost) -> MoveAssessment {
    price_move_with(q, mv, None)
}

/// [`price_move`] with the destination's `T_j` from the service-time forecast `forecast`
/// (called only once the cheap bound `L_i - C` could still fire): `T_j = T - W - C` and the
/// destination's decode starting at `w - W` after the cut-over, `(w, T)` the forecast's
/// start and completion. A pruned assessment reports the view formula's `T_j` and `dT`.
#[inline]
pub(crate) fn price_move_with(
    q: &MoveQuery<'_>,
    mv: MoveCost,
    forecast: Option<DestinationForecast<'_>>,
) -> MoveAssessment {
    let MoveQuery {
        src,
        source,
        dst,
        dst_fallback_prefill,
        params,
        model,
        src_remaining_up,
        dst_remaining_up,
        prune,
    } = *q;
    let c = source.context;
    let rem = source.remaining;
    let t_i = source.cost.t;
    let l_i = source.cost.l;
    let g = mv.decoded_in_window;
    let rem_after = nonneg(rem - g);
    let st = service_time(
        dst.queue_wait_s,
        0.0,
        dst.prefill_tok_s,
        rem_after,
        dst.decode_tok_s,
    );
    let cost = nonneg(mv.cost_s);
    let mut t_j = st.total_s;
    let mut u_start = cost + st.start_s;
    let mut rate_j = dst.decode_tok_s;
    let bound = l_i - mv.cost_s;
    let pruned = |t_j: f64, risk_gain: f64| MoveAssessment {
        mv,
        t_j,
        l_j: f64::NAN,
        risk_gain,
        dt: mv.window_s + mv.cost_s + t_j - t_i,
        pruned: true,
    };
    if let Some((h, floor)) = prune {
        if !(bound > h.max(floor)) {
            return pruned(t_j, bound);
        }
    }
    let mut d_j = 0.0;
    if let Some(f) = forecast {
        if let Some((fc, d)) = f(&mv, rem_after) {
            t_j = fc.total_s - mv.window_s - cost;
            u_start = fc.start_s - mv.window_s;
            rate_j = fc.decode_rate(rem_after, dst.decode_tok_s);
            d_j = nonneg(d);
        }
    }
    let dt = mv.window_s + mv.cost_s + t_j + d_j - t_i;
    let beats = |gain: f64| match prune {
        Some((h, floor)) => gain > h.max(floor) && dt < h,
        None => true,
    };
    if !beats(bound) {
        return pruned(t_j, bound);
    }
    let u_j = UnplannedLoss::new(
        c + g,
        u_start,
        rate_j,
        rem_after,
        dst_fallback_prefill,
        params.recompute_overhead_s,
        params.stall_penalty_s,
    )
    .with_hop(
        params.transfer_overhead_s,
        params.kv_bytes_per_token,
        dst.bandwidth_bytes_s,
    );
    let horizon_j = cost + t_j;
    // The source's exposure while the move still needs it.
    let (src_horizon, src_u) = if mv.window_s > 0.0 {
        (mv.window_s.min(t_i), source.u)
    } else if mv.method == MoveMethod::Transfer {
        (cost, source.u.frozen())
    } else {
        (0.0, source.u)
    };
    if prune.is_some() {
        let mut lb =
            node_loss_lower_bound(dst, model, dst_remaining_up, mv.window_s, horizon_j, &u_j);
        if src_horizon > 0.0 {
            lb += node_loss_lower_bound(src, model, src_remaining_up, 0.0, src_horizon, &src_u);
        }
        if !beats(bound - lb) {
            return pruned(t_j, bound - lb);
        }
    }
    let mut l_j = node_loss(dst, model, dst_remaining_up, mv.window_s, horizon_j, &u_j);
    if src_horizon > 0.0 {
        l_j += node_loss(src, model, src_remaining_up, 0.0, src_horizon, &src_u);
    }
    MoveAssessment {
        mv,
        t_j,
        l_j,
        risk_gain: l_i - (mv.cost_s + l_j),
        dt,
        pruned: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossover_agrees_with_direct_comparison() {
        let cases = [
            (0.2, 0.1, 131072.0, 300e9, 10000.0),
            (0.2, 0.1, 524288.0, 12.5e6, 250.0),
            (0.05, 0.1, 524288.0, 12.5e6, 250.0),
            (0.0, 0.1, 131072.0, 300e9, 10000.0),
            (0.1, 0.1, 100.0, 1e6, 1e4),
            (0.2, 0.1, 100.0, 1e6, 1e4),
            (0.05, 0.1, 100.0, 1e6, 1e4),
        ];
        for &(ot, or, kv, b, p) in &cases {
            let x = crossover(ot, or, kv, b, p);
            for &c in &[1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6] {
                let t = transfer_cost_s(c, kv, b, b, ot);
                let r = recompute_cost_s(c, p, or);
                let wins = match x {
                    Crossover::TransferAlways => true,
                    Crossover::TransferNever | Crossover::Tie => false,
                    Crossover::TransferAbove(s) => c > s,
                    Crossover::TransferBelow(s) => c < s,
                };
                if (t - r).abs() > 1e-9 * t.max(r) {
                    assert_eq!(t < r, wins, "{x:?} c={c} t={t} r={r}");
                }
            }
        }
    }
}
