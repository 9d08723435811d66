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
//! An overlapped move's reserved destination is the one approximation: the request is counted
//! from its cut-over time with the tokens it is expected to have by then, without the
//! catch-up.

/// Microseconds per second.
pub const US_PER_S: f64 = 1e6;

/// A duration longer than any trace: about 36,000 years in microseconds.
pub const FOREVER_US: i64 = 1 << 60;

/// Converts a duration in seconds to whole microseconds, rounding up (so that any positive work
/// takes at least 1 us), except that a value within a relative `1e-9` of a whole microsecond is
/// rounded to it (so that `1.234 s` is 1,234,000 us despite floating-point noise).
/// Non-positive and NaN durations give 0; durations beyond about 36,000 years (including
/// infinity) saturate at [`FOREVER_US`].
#[inline]
pub fn secs_to_us(s: f64) -> i64 {
    if !(s > 0.0) {
        return 0;
    }
    let x = s * US_PER_S;
    if x >= FOREVER_US as f64 {
        return FOREVER_US;
    }
    let r = x.round();
    let us = if (x - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        x.ceil()
    };
    (us as i64).max(1)
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
pub fn decode_rate(decode_tok_s: f64, batch_slowdown: f64, decoders: u32) -> f64 {
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
pub fn decode_end_us(t_us: i64, done: f64, target: f64, rate: f64) -> i64 {
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
    },
}

/// One request holding a slot on the node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Resident {
    /// The request's id (to forecast a resident itself).
    pub id: u64,
    /// KV tokens it holds.
    pub kv: u64,
    /// Total tokens it is expected to generate (its estimate, never the true length).
    pub target: f64,
    /// What it is doing.
    pub phase: ResidentPhase,
}

/// A request waiting in the node's FIFO queue, or the newcomer being forecast.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Waiting {
    /// The request's id ([`PROBE_ID`] for the newcomer).
    pub id: u64,
    /// KV tokens it will hold.
    pub kv: u64,
    /// Seconds from taking a slot to decoding: its prefill (a recovery's re-prefill with its
    /// overheads), or a planned move's cost.
    pub start_s: f64,
    /// The start phase is a prefill (a request with nothing left completes at its end).
    pub prefill: bool,
    /// Tokens generated so far.
    pub done: f64,
    /// Total tokens it is expected to generate.
    pub target: f64,
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

/// At most this many events are replayed per forecast before it gives up (returns `None`).
const MAX_FORECAST_EVENTS: usize = 1 << 20;

/// When request `watch` starts decoding and completes on the node, counted from `now`, with
/// `newcomer` (if any) joining the node now — starting at once if the queue is empty and it
/// fits, else at the queue's tail — and nothing else arriving. `watch` is [`PROBE_ID`] for the
/// newcomer or the id of a resident or queued request. `None` when `watch` is not on the node
/// or the node cannot serve it (no slot ever fits it); an infinite `total_s` when a rate is 0.
///
/// The rules and arithmetic are the engine's (module docs): a slot frees on a completion or a
/// released hold, the queue then drains while its head fits, a prefill's end starts a decode
/// at [`decode_rate`] of the new batch size and every other decoder is re-rated, a completion
/// re-rates the rest.
pub fn forecast(
    state: NodeState<'_>,
    newcomer: Option<Waiting>,
    watch: u64,
) -> Option<ServiceTime> {
    let NodeState {
        serving,
        now_us,
        residents,
        queue,
    } = state;
    let (d, f) = (serving.decode_tok_s, serving.batch_slowdown);
    let mut slots_used = residents.len() as u64;
    let mut kv_used: u64 = residents.iter().map(|r| r.kv).fold(0, u64::saturating_add);
    let mut decoding: u32 = residents
        .iter()
        .filter(|r| matches!(r.phase, ResidentPhase::Decoding { .. }))
        .count() as u32;
    let mut started: Option<i64> = residents
        .iter()
        .find(|r| r.id == watch && matches!(r.phase, ResidentPhase::Decoding { .. }))
        .map(|_| now_us);
    let present = residents.iter().any(|r| r.id == watch)
        || queue.iter().any(|w| w.id == watch)
        || newcomer.is_some_and(|w| w.id == watch);
    if !present {
        return None;
    }
    let waiting = |k: usize| -> Option<Waiting> {
        match queue.get(k) {
            Some(w) => Some(*w),
            None if k == queue.len() => newcomer,
            None => None,
        }
    };
    let mut next_wait = 0usize;
    let mut t = now_us;
    let done_at = |t_us: i64, start: Option<i64>| ServiceTime {
        start_s: (start.unwrap_or(t_us) - now_us) as f64 / US_PER_S,
        total_s: (t_us - now_us) as f64 / US_PER_S,
    };
    for _ in 0..MAX_FORECAST_EVENTS {
        // Start queued requests while the head fits.
        while let Some(w) = waiting(next_wait) {
            let fits = slots_used < u64::from(serving.slots)
                && kv_used
                    .checked_add(w.kv)
                    .is_some_and(|x| x <= serving.kv_capacity_tokens);
            if !fits {
                break;
            }
            next_wait += 1;
            slots_used += 1;
            kv_used = kv_used.saturating_add(w.kv);
            residents.push(Resident {
                id: w.id,
                kv: w.kv,
                target: w.target,
                phase: ResidentPhase::Starting {
                    at_us: t.saturating_add(secs_to_us(w.start_s)),
                    done: w.done,
                    prefill: w.prefill,
                },
            });
        }
        // The next event: the earliest phase end (the first such slot on ties).
        let mut next: Option<(usize, i64)> = None;
        for (k, r) in residents.iter().enumerate() {
            let at = match r.phase {
                ResidentPhase::Decoding { end_us, .. } => end_us,
                ResidentPhase::Starting { at_us, .. } | ResidentPhase::Held { at_us } => at_us,
            };
            if next.is_none_or(|(_, best)| at < best) {
                next = Some((k, at));
            }
        }
        let (k, at) = next?;
        if at >= FOREVER_US {
            return Some(ServiceTime {
                start_s: started.map_or(f64::INFINITY, |s| (s - now_us) as f64 / US_PER_S),
                total_s: f64::INFINITY,
            });
        }
        t = at.max(t);
        let r = residents[k];
        match r.phase {
            ResidentPhase::Held { .. } => {
                residents.swap_remove(k);
                slots_used -= 1;
                kv_used = kv_used.saturating_sub(r.kv);
            }
            ResidentPhase::Starting { done, prefill, .. }
                if prefill && done.floor() >= r.target =>
            {
                residents.swap_remove(k);
                slots_used -= 1;
                kv_used = kv_used.saturating_sub(r.kv);
                if r.id == watch {
                    return Some(done_at(t, started));
                }
            }
            ResidentPhase::Starting { done, .. } => {
                decoding += 1;
                let rate = decode_rate(d, f, decoding);
                residents[k].phase = ResidentPhase::Decoding {
                    done,
                    rate,
                    since_us: t,
                    end_us: decode_end_us(t, done, r.target, rate),
                };
                if r.id == watch {
                    started = Some(t);
                }
                rerate(residents, d, f, decoding, t);
            }
            ResidentPhase::Decoding { .. } => {
                residents.swap_remove(k);
                decoding = decoding.saturating_sub(1);
                slots_used -= 1;
                kv_used = kv_used.saturating_sub(r.kv);
                rerate(residents, d, f, decoding, t);
                if r.id == watch {
                    return Some(done_at(t, started));
                }
            }
        }
    }
    None
}

/// After the batch changed to `decoding` decoders at `t`: every decoder whose rate differs is
/// brought up to `t` ([`progress`]) and re-rated, as the engine does.
fn rerate(residents: &mut [Resident], d: f64, f: f64, decoding: u32, t: i64) {
    if f == 0.0 {
        return;
    }
    let rate = decode_rate(d, f, decoding);
    for r in residents.iter_mut() {
        if let ResidentPhase::Decoding {
            done,
            rate: old,
            since_us,
            end_us,
        } = r.phase
        {
            if old != rate {
                let done = progress(done, old, since_us, end_us, t, r.target);
                r.phase = ResidentPhase::Decoding {
                    done,
                    rate,
                    since_us: t,
                    end_us: decode_end_us(t, done, r.target, rate),
                };
            }
        }
    }
}

/// The forecast a policy reads through [`crate::policy::ClusterView`]: the replay implements it
/// over its live state with [`forecast`].
pub trait NodeLoads {
    /// [`forecast`] of a newcomer on `node`: `kv` tokens of KV, `start_s` seconds from taking a
    /// slot to decoding (`prefill`: that phase is a prefill), `done` tokens generated so far
    /// and `target` tokens in total. `None` when the node is down or cannot hold it.
    fn forecast_newcomer(&self, node: usize, newcomer: Waiting) -> Option<ServiceTime>;

    /// [`forecast`] of request `id`, which already holds a slot (or waits) on `node`.
    fn forecast_resident(&self, node: usize, id: u64) -> Option<ServiceTime>;

    /// The node's unloaded decode rate `d` (for lower bounds of a forecast).
    fn unloaded_decode_tok_s(&self, node: usize) -> f64;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn serving(slots: u32, f: f64) -> NodeServing {
        NodeServing {
            decode_tok_s: 10.0,
            batch_slowdown: f,
            slots,
            kv_capacity_tokens: u64::MAX,
        }
    }

    fn newcomer(start_s: f64, target: f64) -> Waiting {
        Waiting {
            id: PROBE_ID,
            kv: 1,
            start_s,
            prefill: true,
            done: 0.0,
            target,
        }
    }

    #[test]
    fn idle_node_is_prefill_plus_decode() {
        let mut res = Vec::new();
        let st = NodeState {
            serving: serving(1, 0.5),
            now_us: 7,
            residents: &mut res,
            queue: &[],
        };
        let f = forecast(st, Some(newcomer(2.0, 30.0)), PROBE_ID).unwrap();
        assert_eq!(f.start_s, 2.0);
        assert_eq!(f.total_s, 5.0);
    }

    #[test]
    fn a_prefilling_resident_slows_the_newcomer() {
        // A resident finishes its prefill at 1 s and then decodes 20 tokens beside the
        // newcomer: both at 10 / 2 = 5 tok/s.
        let mut res = vec![Resident {
            id: 1,
            kv: 1,
            target: 20.0,
            phase: ResidentPhase::Starting {
                at_us: 1_000_000,
                done: 0.0,
                prefill: true,
            },
        }];
        let st = NodeState {
            serving: serving(2, 1.0),
            now_us: 0,
            residents: &mut res,
            queue: &[],
        };
        // Newcomer: prefill 1 s, 20 tokens: 4 s at 5 tok/s, finishing at 5 s.
        let f = forecast(st, Some(newcomer(1.0, 20.0)), PROBE_ID).unwrap();
        assert_eq!(f.start_s, 1.0);
        assert_eq!(f.total_s, 5.0);
    }

    #[test]
    fn a_resident_is_counted_once() {
        // One decoder alone: 50 tokens at 10 tok/s; a second decoder would halve that.
        let mut res = vec![Resident {
            id: 9,
            kv: 1,
            target: 50.0,
            phase: ResidentPhase::Decoding {
                done: 0.0,
                rate: 10.0,
                since_us: 0,
                end_us: decode_end_us(0, 0.0, 50.0, 10.0),
            },
        }];
        let st = NodeState {
            serving: serving(4, 1.0),
            now_us: 0,
            residents: &mut res,
            queue: &[],
        };
        let f = forecast(st, None, 9).unwrap();
        assert_eq!(f.start_s, 0.0);
        assert_eq!(f.total_s, 5.0);
    }

    #[test]
    fn queued_work_runs_at_the_loaded_rate() {
        // One slot: the resident decodes 10 tokens (1 s), the queued request prefills 1 s and
        // decodes 10 tokens (1 s), then the newcomer: 1 s + 1 s.
        let mut res = vec![Resident {
            id: 1,
            kv: 1,
            target: 10.0,
            phase: ResidentPhase::Decoding {
                done: 0.0,
                rate: 10.0,
                since_us: 0,
                end_us: decode_end_us(0, 0.0, 10.0, 10.0),
            },
        }];
        let queue = [Waiting {
            id: 2,
            ..newcomer(1.0, 10.0)
        }];
        let st = NodeState {
            serving: serving(1, 1.0),
            now_us: 0,
            residents: &mut res,
            queue: &queue,
        };
        let f = forecast(st, Some(newcomer(1.0, 10.0)), PROBE_ID).unwrap();
        assert_eq!(f.start_s, 4.0);
        assert_eq!(f.total_s, 5.0);
    }

    #[test]
    fn absent_request_and_zero_rate() {
        let mut res = Vec::new();
        let st = NodeState {
            serving: serving(1, 0.0),
            now_us: 0,
            residents: &mut res,
            queue: &[],
        };
        assert!(forecast(st, None, 3).is_none());
        let mut res = Vec::new();
        let st = NodeState {
            serving: NodeServing {
                decode_tok_s: 0.0,
                ..serving(1, 0.0)
            },
            now_us: 0,
            residents: &mut res,
            queue: &[],
        };
        let f = forecast(st, Some(newcomer(1.0, 5.0)), PROBE_ID).unwrap();
        assert_eq!(f.start_s, 1.0);
        assert!(f.total_s.is_infinite());
    }
}
