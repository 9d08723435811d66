//! The service-time model: how a node serves requests, and the forecast every cost-based
//! policy prices `T_i` with.
//!
//! # The model (the `simple` engine)
//!
//! A node has `slots` slots and a KV capacity. A request holding a slot prefills its context
//! `c` in `c / p` seconds (prefills do not contend), then decodes its remaining tokens at
//! `d / (1 + f (k - 1))` tokens/s, `k` the requests decoding on the node at that moment and `f`
//! the batch slowdown ([`decode_rate`]). Requests that find no free slot (or no KV room) wait
//! in the node's FIFO queue and start, in order, as soon as the head fits. Time is integer
//! microseconds ([`secs_to_us`]: durations round up).
//!
//! The replay engine ([`crate::replay::engine`]) simulates exactly this with the functions of
//! this module ([`decode_rate`], [`progress`], [`decode_end_us`], [`secs_to_us`]).
//!
//! # The forecast
//!
//! [`forecast`] answers: *when would this request start decoding and finish on this node, in
//! its current state, if nothing else arrived and the node stayed up?* It replays the node
//! forward with the same rules and the same integer-microsecond arithmetic as the engine,
//! counting every request resident there — prefilling, decoding, arriving by a planned move,
//! holding a slot as a transfer's source or as an overlapped move's reserved destination — at
//! the rate it will really get as the batch grows and shrinks, and every queued request ahead
//! of it at the loaded rate. Residents are priced by their estimated lengths (never the true
//! ones): with exact estimates the forecast equals the engine's completion (a property test
//! holds it to 1e-9 relative). The policies reach it through [`NodeLoads`] on
//! [`crate::policy::ClusterView`]; without one (hand-built views) they fall back to the
//! unloaded-view formula [`crate::policy::cost::service_time`].
//!
//! [`forecast_marginal`] adds what the newcomer costs the others: the node replayed to its end
//! with and without it, `D = sum_r (end_r with - end_r without)` over its residents and queue
//! (the `marginal` forecast, `[policy] forecast = "marginal"`; a property test holds it to the
//! engine's delays). [`Trajectory::newcomer_marginal`] answers it from the cached replay.
//!
//! [`stationary`] (the default, `[policy] forecast = "stationary"`) keeps the replay's answer
//! for when the newcomer starts decoding and holds the rest at the node's current load: under
//! load a freed slot is refilled, so the newcomer decodes, and delays its neighbours, beside as
//! many requests as the node holds now for its whole stay. When nothing leaves or arrives
//! during that stay it equals the marginal forecast (a test holds the two together).
//!
//! Under the iteration model ([`iteration`]) the replay also counts the node's KV blocks
//! ([`iteration::KvBlocks`]) as the engine does: a request is admitted when its context's
//! blocks fit, each decoder takes a block when it fills its last, and when none is free the
//! newest request is preempted to the queue's front with its tokens kept (a `Step` of its
//! own), re-admitted when a completion or released hold makes room. The property tests
//! draw KV capacities small enough to preempt.
//!
//! An overlapped move's reserved destination is the one approximation: the request is counted
//! from its cut-over time with the tokens it is expected to have by then, without the
//! catch-up.
//!
//! # Where things are
//!
//! The clock, the rates and the node's state are here; `replay` replays one node with the
//! engine's rules (admission, the next event, KV preemption, both models' rates), `forecast`
//! asks it one question ([`forecast`], [`forecast_marginal`]), `stationary` holds the load
//! of a node that batches ([`stationary`], [`drains`]), `trajectory` keeps a node's whole replay for every question
//! ([`Trajectory`]), and `tests` holds the unit and property tests that check the replays
//! against each other (the engine checks them against itself in
//! `tests/it/replay_forecast.rs`).

use crate::policy::iteration;

mod forecast;
mod replay;
mod stationary;
#[cfg(test)]
mod tests;
mod trajectory;

pub(crate) use forecast::forecast_marginal;
pub use forecast::{forecast, forecast_start, Marginal};
pub(crate) use replay::repace;
pub use stationary::{
    drains, forecast_stationary_resident, remaining_of, stationary, stationary_resident, Batch,
};
pub use trajectory::Trajectory;

/// Microseconds per second.
pub const US_PER_S: f64 = 1e6;

/// A duration longer than any trace: about 36,000 years in microseconds.
pub const FOREVER_US: i64 = 1 << 60;

/// Converts a duration in seconds to whole microseconds, rounding up (so that any positive work
/// takes at least 1 us), except that a value within a relative `1e-9` of a whole microsecond is
/// rounded to it (so that `1.234 s` is 1,234,000 us despite floating-point noise).
/// Non-positive and NaN durations give 0; durations beyond about 36,000 years (including
/// infinity) saturate at [`FOREVER_US`]. Computed on the whole and fractional parts (exact
/// below `FOREVER_US`, the same answer as `round` and `ceil`, which the baseline x86-64
/// target has no instruction for and calls).
#[inline]
pub fn secs_to_us(s: f64) -> i64 {
    if !(s > 0.0) {
        return 0;
    }
    let x = s * US_PER_S;
    if x >= FOREVER_US as f64 {
        return FOREVER_US;
    }
    // `0 < x < 2^60`: the truncation is the floor, the fraction exact.
    let whole = x as i64;
    let frac = x - whole as f64;
    let nearest = if frac >= 0.5 { whole + 1 } else { whole };
    let us = if (x - nearest as f64).abs() <= 1e-9 * (nearest as f64).max(1.0) {
        nearest
    } else if frac > 0.0 {
        whole + 1
    } else {
        whole
    };
    us.max(1)
}

/// `x.floor()` by truncation (the baseline x86-64 target has no rounding instruction and
/// calls a function for it, a hot spot of the forecast's replay); the same answer for every
/// `x`, signed zeros, infinities and NaN included.
#[inline]
pub fn floor(x: f64) -> f64 {
    // From 2^52 on (and for infinities and NaN) `x` is its own floor.
    if !(x.abs() < 4_503_599_627_370_496.0) {
        return x;
    }
    let t = x as i64 as f64;
    if t > x {
        t - 1.0
    } else {
        t.copysign(x)
    }
}

/// Seconds to process `tokens` at `rate` tokens/s: 0 for no tokens, infinite for a
/// non-positive or NaN rate.
#[inline]
pub fn secs(tokens: f64, rate: f64) -> f64 {
    if !(tokens > 0.0) {
        0.0
    } else if rate > 0.0 {
        tokens / rate
    } else {
        f64::INFINITY
    }
}

/// `T_i` and `w_i` of one request on one node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServiceTime {
    /// `w_i`: time from now until the request starts decoding (queue wait + prefill), seconds.
    pub start_s: f64,
    /// `T_i`: remaining service time including `w_i`, seconds.
    pub total_s: f64,
}

impl ServiceTime {
    /// The average decode rate the forecast implies for `remaining_tokens`:
    /// `remaining / (T - w)`; `fallback` when that is not a positive finite number.
    #[inline]
    pub fn decode_rate(&self, remaining_tokens: f64, fallback: f64) -> f64 {
        let span = self.total_s - self.start_s;
        let r = remaining_tokens / span;
        if span > 0.0 && r.is_finite() && r > 0.0 {
            r
        } else {
            fallback
        }
    }
}

/// Per-request decode rate on a node with `decoders` requests decoding (the request itself
/// included, at least 1): `d / (1 + f (decoders - 1))`.
#[inline]
pub(crate) fn decode_rate(decode_tok_s: f64, batch_slowdown: f64, decoders: u32) -> f64 {
    decode_tok_s / (1.0 + batch_slowdown * f64::from(decoders.saturating_sub(1)))
}

/// Tokens a decoding request has at `t_us`: `done + rate (t - since) / 1e6`, capped at its
/// `target`; exactly `target` once its scheduled end `end_us` is reached (so that the order in
/// which simultaneous events are handled never changes a result).
#[inline]
pub fn progress(done: f64, rate: f64, since_us: i64, end_us: i64, t_us: i64, target: f64) -> f64 {
    if t_us >= end_us {
        return target.max(done);
    }
    (done + rate * (t_us - since_us) as f64 / US_PER_S).min(target)
}

/// When a request decoding from `t_us` with `done` of `target` tokens at `rate` finishes.
#[inline]
pub(crate) fn decode_end_us(t_us: i64, done: f64, target: f64, rate: f64) -> i64 {
    t_us.saturating_add(secs_to_us(secs((target - done).max(0.0), rate)))
}

/// What a slot on the node is doing, for [`forecast`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResidentPhase {
    /// Decoding at `rate` since `since_us`, with `done` tokens then.
    Decoding {
        /// Tokens at `since_us`.
        done: f64,
        /// Current per-request rate, tokens/s.
        rate: f64,
        /// When the rate was last set.
        since_us: i64,
        /// When it finishes at that rate: [`decode_end_us`]`(since_us, done, target, rate)`.
        end_us: i64,
    },
    /// Starts decoding at `at_us` with `done` tokens: the end of a prefill (`prefill`: a
    /// request with nothing left to generate completes there instead) or of a planned move.
    Starting {
        /// When decoding starts.
        at_us: i64,
        /// Tokens generated so far.
        done: f64,
        /// The phase is a prefill.
        prefill: bool,
    },
    /// The slot (and its KV) is held without decoding until `at_us`: a KV transfer's source.
    Held {
        /// When the slot is released.
        at_us: i64,
        /// Tokens generated when the hold began (its KV is the prompt and these).
        done: f64,
    },
    /// Waiting under the iteration model until `at_us`, then prefilling `tokens` tokens: a
    /// recovery's stall or a recompute move's overhead (the slot and its KV held, no GPU
    /// work).
    Stalled {
        /// When the prefill starts.
        at_us: i64,
        /// The prefill's tokens.
        tokens: f64,
        /// Tokens generated so far.
        done: f64,
    },
    /// Prefilling under the iteration model ([`crate::policy::iteration`]): `left` prefill
    /// tokens at `since_us`, served at `rate` tokens/s (0 while an older prefill is served).
    Prefilling {
        /// Prefill tokens left at `since_us`.
        left: f64,
        /// Prefill tokens/s.
        rate: f64,
        /// When the rate was last set.
        since_us: i64,
        /// When the prefill ends at that rate ([`FOREVER_US`] while waiting).
        end_us: i64,
        /// Admission order: the oldest prefill is served first.
        seq: u64,
        /// The prefill's tokens in all (what sets its chunk).
        tokens: f64,
        /// Tokens generated before this prefill (a recovery's).
        done: f64,
    },
}

/// Prefill tokens left at `t_us` of a prefill with `left` at `since_us` served at `rate`:
/// 0 once its scheduled end `end_us` is reached.
#[inline]
pub fn prefill_left(left: f64, rate: f64, since_us: i64, end_us: i64, t_us: i64) -> f64 {
    if t_us >= end_us {
        return 0.0;
    }
    (left - rate * (t_us - since_us) as f64 / US_PER_S).max(0.0)
}

/// When a prefill of `tokens` joining a node's prefills at `t_us` ends before its rate is set
/// (the iteration model): never (the rate sets it), or at once when there is nothing to
/// prefill (an empty context). The engine and the forecast's replay both start prefills here.
#[inline]
pub(crate) fn prefill_start_end(tokens: f64, t_us: i64) -> i64 {
    if tokens > 0.0 {
        FOREVER_US
    } else {
        t_us
    }
}

/// When a prefill with `left` tokens at `t_us` ends at `rate`.
#[inline]
pub fn prefill_end_us(t_us: i64, left: f64, rate: f64) -> i64 {
    t_us.saturating_add(secs_to_us(secs(left, rate)))
}

/// One request holding a slot on the node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resident {
    /// The request's id (to forecast a resident itself).
    pub id: u64,
    /// KV tokens the scheduler reserved for it (the simple model's admission).
    pub kv: u64,
    /// Its prompt's tokens: under the iteration model it holds the KV blocks of its prompt and
    /// the tokens generated so far ([`iteration::KvBlocks`]).
    pub prompt: u64,
    /// Admission order on the node: the newest is preempted first when the KV runs out.
    pub seq: u64,
    /// Total tokens it is expected to generate (its estimate, never the true length).
    pub target: f64,
    /// What it is doing.
    pub phase: ResidentPhase,
    /// Prompt tokens it reads from the node's prefix cache: a prefill again after a KV
    /// preemption computes its context less them (0 without prefix caching).
    pub cached: u64,
}

/// A request waiting in the node's FIFO queue, or the newcomer being forecast.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waiting {
    /// The request's id ([`PROBE_ID`] for the newcomer).
    pub id: u64,
    /// KV tokens the scheduler reserves for it (the simple model's admission).
    pub kv: u64,
    /// Its prompt's tokens (the iteration model's KV is the prompt and the tokens generated).
    pub prompt: u64,
    /// Seconds from taking a slot to decoding under the simple model: its prefill (a
    /// recovery's re-prefill with its overheads), or a planned move's cost.
    pub start_s: f64,
    /// The start phase is a prefill (a request with nothing left completes at its end); under
    /// the iteration model, `tokens` of prefill work in the node's steps, else a pause of
    /// `start_s`.
    pub prefill: bool,
    /// Under the iteration model, seconds the slot waits before its prefill starts: a
    /// recovery's stall and recompute overhead, a recompute move's overhead (waiting time,
    /// not GPU work).
    pub stall_s: f64,
    /// Under the iteration model, the prefill's tokens (its context: prompt and tokens
    /// generated so far).
    pub tokens: f64,
    /// Tokens generated so far.
    pub done: f64,
    /// Total tokens it is expected to generate.
    pub target: f64,
    /// Prompt tokens it reads from the node's prefix cache (`tokens` already excludes them;
    /// kept for a prefill again after a KV preemption).
    pub cached: u64,
}

/// The id [`forecast`] gives the newcomer.
pub const PROBE_ID: u64 = u64::MAX;

/// A node's serving constants, for [`forecast`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NodeServing {
    /// Unloaded decode rate `d`, tokens/s per request.
    pub decode_tok_s: f64,
    /// Batch slowdown `f`.
    pub batch_slowdown: f64,
    /// Slots.
    pub slots: u32,
    /// KV capacity, tokens.
    pub kv_capacity_tokens: u64,
    /// The iteration model's coefficients (`None`: the simple model).
    pub step: Option<crate::policy::iteration::StepCoefficients>,
}

/// The state of one node at `now_us` as [`forecast`] reads it: its residents (a scratch
/// buffer the forecast rewrites) and its queue in order.
#[derive(Debug)]
pub struct NodeState<'s> {
    /// The node's constants.
    pub serving: NodeServing,
    /// Now, microseconds on the replay's clock.
    pub now_us: i64,
    /// Requests holding a slot; consumed by the forecast.
    pub residents: &'s mut Vec<Resident>,
    /// The FIFO queue, head first.
    pub queue: &'s [Waiting],
}

/// The forecast a policy reads through [`crate::policy::ClusterView`]: the replay implements it
/// over its live state with [`forecast`].
pub trait NodeLoads {
    /// [`forecast`] of a newcomer on `node`: `kv` tokens of KV, `start_s` seconds from taking a
    /// slot to decoding (`prefill`: that phase is a prefill), `done` tokens generated so far
    /// and `target` tokens in total. `None` when the node is down or cannot hold it.
    fn forecast_newcomer(&self, node: usize, newcomer: Waiting) -> Option<ServiceTime>;

    /// [`forecast_marginal`] of a newcomer on `node` (as [`NodeLoads::forecast_newcomer`], with
    /// the delay it imposes on the requests already there).
    fn forecast_newcomer_marginal(&self, node: usize, newcomer: Waiting) -> Option<Marginal>;

    /// [`forecast`] of request `id`, which already holds a slot (or waits) on `node`.
    fn forecast_resident(&self, node: usize, id: u64) -> Option<ServiceTime>;

    /// [`stationary`] of a newcomer on `node`: its start as [`NodeLoads::forecast_newcomer`]
    /// gives it, its decode and the delay it imposes at the node's current load (the
    /// `stationary` forecast); on a node that [`drains`], the marginal forecast
    /// ([`NodeLoads::forecast_newcomer_marginal`]). `None` when the node is down or cannot
    /// hold it.
    fn forecast_newcomer_stationary(&self, node: usize, newcomer: Waiting) -> Option<Marginal>;

    /// [`stationary_resident`] of request `id`, which already holds a slot (or waits) on
    /// `node`; on a node that [`drains`], [`NodeLoads::forecast_resident`].
    fn forecast_resident_stationary(&self, node: usize, id: u64) -> Option<ServiceTime>;

    /// A lower bound of [`NodeLoads::forecast_newcomer_stationary`]'s `T + D` that replays
    /// nothing: [`stationary`] with the newcomer starting at `start_lb`, a lower bound of its
    /// start (its wait and its prefill alone at the node's measured rate), when the node's
    /// batch is at hand without a replay; `None` otherwise, and on a node that [`drains`] (the
    /// placement's pruning then uses its unloaded bound).
    fn stationary_bound(&self, _node: usize, _newcomer: Waiting, _start_lb: f64) -> Option<f64> {
        None
    }

    /// The node's unloaded decode rate `d` (for lower bounds of a forecast).
    fn unloaded_decode_tok_s(&self, node: usize) -> f64;
}
