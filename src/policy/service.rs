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
//! Under the iteration model ([`iteration`]) the replay also counts the node's KV blocks
//! ([`iteration::KvBlocks`]) as the engine does: a request is admitted when its context's
//! blocks fit, each decoder takes a block when it fills its last, and when none is free the
//! newest request is preempted to the queue's front with its tokens kept (a [`Step`] of its
//! own), re-admitted when a completion or released hold makes room. The property tests
//! draw KV capacities small enough to preempt.
//!
//! An overlapped move's reserved destination is the one approximation: the request is counted
//! from its cut-over time with the tokens it is expected to have by then, without the
//! catch-up.
//!
//! Size: over 800 lines because the serving rules, the one-shot forecast and the cached
//! [`Trajectory`] must replay a node identically; keeping them and their unit and property
//! tests in one place is what lets a change to one rule be checked against the others.

use crate::policy::iteration;

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

/// At most this many events are replayed per forecast before it gives up (returns `None`).
const MAX_FORECAST_EVENTS: usize = 1 << 20;

/// The forecast's replay of one node: the counters beside its residents at time `t`.
#[derive(Debug, Clone, Default, PartialEq)]
struct Run {
    t: i64,
    slots_used: u64,
    kv_used: u64,
    decoding: u32,
    events: usize,
    /// The next admission's order (prefills are served, and KV preemption picks, by it).
    next_seq: u64,
    /// The rates must be set again before the next event (iteration model).
    dirty: bool,
    /// Iteration model: when the decoders next overflow the KV ([`FOREVER_US`]: never).
    kv_at: i64,
    /// Iteration model: requests preempted for KV, the next to start last (the queue's front).
    preempted: Vec<Waiting>,
    /// A request completed or released its slot at the last event.
    freed: bool,
}

/// What one event of a [`Run`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    /// Request `id` started decoding.
    Started(u64),
    /// Request `id` completed.
    Finished(u64),
    /// A held slot was released.
    Released,
    /// Request `id` was preempted for KV (iteration model): it waits at the queue's front.
    Preempted(u64),
    /// Request `id`'s stall ended (iteration model): its prefill joins the node's prefills.
    Resumed(u64),
    /// The next event never comes (a rate of 0).
    Forever,
    /// No resident is left.
    Idle,
    /// [`MAX_FORECAST_EVENTS`] were replayed.
    GaveUp,
}

impl Run {
    fn new(residents: &[Resident], now_us: i64) -> Run {
        Run {
            t: now_us,
            slots_used: residents.len() as u64,
            kv_used: residents.iter().map(|r| r.kv).fold(0, u64::saturating_add),
            decoding: residents
                .iter()
                .filter(|r| matches!(r.phase, ResidentPhase::Decoding { .. }))
                .count() as u32,
            events: 0,
            next_seq: residents
                .iter()
                .map(|r| r.seq.saturating_add(1))
                .max()
                .unwrap_or(0),
            dirty: true,
            kv_at: FOREVER_US,
            preempted: Vec::new(),
            freed: false,
        }
    }

    /// Under the iteration model: starts the preempted requests while the front one fits,
    /// when a request completed or released its slot since the last event (the engine drains
    /// a node's queue then); whether none is left waiting.
    fn readmit(&mut self, serving: &NodeServing, residents: &mut Vec<Resident>) -> bool {
        if self.preempted.is_empty() {
            return true;
        }
        if !self.freed {
            return false;
        }
        while let Some(w) = self.preempted.last().copied() {
            if !self.admit_one(serving, residents, &w) {
                return false;
            }
            self.preempted.pop();
        }
        true
    }

    /// Takes a slot for `w` now if one is free and its KV fits (behind any request preempted
    /// for KV, which starts first).
    #[inline]
    fn admit(&mut self, serving: &NodeServing, residents: &mut Vec<Resident>, w: &Waiting) -> bool {
        if !self.preempted.is_empty() && !self.readmit(serving, residents) {
            return false;
        }
        self.admit_one(serving, residents, w)
    }

    /// Takes a slot for `w` now if one is free and its KV fits: the scheduler's reservation
    /// under the simple model, its context's blocks beside the blocks in use under the
    /// iteration model.
    #[inline]
    fn admit_one(
        &mut self,
        serving: &NodeServing,
        residents: &mut Vec<Resident>,
        w: &Waiting,
    ) -> bool {
        let fits = self.slots_used < u64::from(serving.slots)
            && match serving.step {
                Some(_) => iteration::KvBlocks::of(serving.kv_capacity_tokens)
                    .admits(blocks_used(residents, self.t), w.prompt as f64 + w.done),
                None => self
                    .kv_used
                    .checked_add(w.kv)
                    .is_some_and(|x| x <= serving.kv_capacity_tokens),
            };
        if fits {
            self.slots_used += 1;
            self.kv_used = self.kv_used.saturating_add(w.kv);
            let seq = self.next_seq;
            self.next_seq += 1;
            if serving.step.is_some() {
                self.dirty = true;
            }
            let phase = match serving.step {
                Some(_) if w.prefill && w.stall_s > 0.0 => ResidentPhase::Stalled {
                    at_us: self.t.saturating_add(secs_to_us(w.stall_s)),
                    tokens: w.tokens,
                    done: w.done,
                },
                Some(_) if w.prefill => ResidentPhase::Prefilling {
                    left: w.tokens,
                    rate: 0.0,
                    since_us: self.t,
                    end_us: FOREVER_US,
                    seq,
                    tokens: w.tokens,
                    done: w.done,
                },
                _ => ResidentPhase::Starting {
                    at_us: self.t.saturating_add(secs_to_us(w.start_s)),
                    done: w.done,
                    prefill: w.prefill,
                },
            };
            residents.push(Resident {
                id: w.id,
                kv: w.kv,
                prompt: w.prompt,
                seq,
                target: w.target,
                phase,
            });
        }
        fits
    }

    /// Starts queued requests while the head fits: `head` is the queue's head (`None` once
    /// every request holds a slot), `rest` the requests behind it.
    #[inline]
    fn admit_queue(
        &mut self,
        serving: &NodeServing,
        residents: &mut Vec<Resident>,
        head: &mut Option<Waiting>,
        rest: &mut impl Iterator<Item = Waiting>,
    ) {
        while let Some(w) = *head {
            if !self.admit(serving, residents, &w) {
                break;
            }
            *head = rest.next();
        }
    }

    /// Replays the next event: the earliest phase end (the first such slot on ties).
    fn step(&mut self, serving: &NodeServing, residents: &mut Vec<Resident>) -> Step {
        if self.events >= MAX_FORECAST_EVENTS {
            return Step::GaveUp;
        }
        self.events += 1;
        let (d, f) = (serving.decode_tok_s, serving.batch_slowdown);
        if serving.step.is_some()
            && !self.preempted.is_empty()
            && !self.readmit(serving, residents)
            && residents.is_empty()
        {
            // A preempted request that no longer fits the empty node.
            return Step::GaveUp;
        }
        self.freed = false;
        if self.dirty {
            if let Some(c) = &serving.step {
                repace(residents, c, self.t);
                self.kv_at = overflow_at(serving, residents, self.t);
            }
            self.dirty = false;
        }
        let mut next: Option<(usize, i64)> = None;
        for (k, r) in residents.iter().enumerate() {
            let at = match r.phase {
                ResidentPhase::Decoding { end_us, .. }
                | ResidentPhase::Prefilling { end_us, .. } => end_us,
                ResidentPhase::Starting { at_us, .. }
                | ResidentPhase::Held { at_us, .. }
                | ResidentPhase::Stalled { at_us, .. } => at_us,
            };
            if next.is_none_or(|(_, best)| at < best) {
                next = Some((k, at));
            }
        }
        let Some((k, at)) = next else {
            return Step::Idle;
        };
        if serving.step.is_some() && self.kv_at < at.min(FOREVER_US) {
            // The decoders overflow the KV before any phase ends (phase ends first on a tie,
            // as the engine orders them): the newest request is preempted.
            self.t = self.kv_at.max(self.t);
            return self.preempt_newest(serving, residents);
        }
        if at >= FOREVER_US {
            return Step::Forever;
        }
        self.t = at.max(self.t);
        let t = self.t;
        let r = residents[k];
        match r.phase {
            ResidentPhase::Stalled { tokens, done, .. } => {
                residents[k].phase = ResidentPhase::Prefilling {
                    left: tokens,
                    rate: 0.0,
                    since_us: t,
                    end_us: FOREVER_US,
                    seq: r.seq,
                    tokens,
                    done,
                };
                self.dirty = true;
                Step::Resumed(r.id)
            }
            ResidentPhase::Held { .. } => {
                residents.swap_remove(k);
                self.slots_used -= 1;
                self.kv_used = self.kv_used.saturating_sub(r.kv);
                if serving.step.is_some() {
                    self.dirty = true;
                }
                self.freed = true;
                Step::Released
            }
            ResidentPhase::Starting { done, prefill, .. }
                if prefill && done.floor() >= r.target =>
            {
                residents.swap_remove(k);
                self.slots_used -= 1;
                self.kv_used = self.kv_used.saturating_sub(r.kv);
                self.freed = true;
                Step::Finished(r.id)
            }
            ResidentPhase::Prefilling { done, .. } if done.floor() >= r.target => {
                residents.swap_remove(k);
                self.slots_used -= 1;
                self.kv_used = self.kv_used.saturating_sub(r.kv);
                self.dirty = true;
                self.freed = true;
                Step::Finished(r.id)
            }
            ResidentPhase::Starting { done, .. } | ResidentPhase::Prefilling { done, .. }
                if serving.step.is_some() =>
            {
                self.decoding += 1;
                residents[k].phase = ResidentPhase::Decoding {
                    done,
                    rate: 0.0,
                    since_us: t,
                    end_us: FOREVER_US,
                };
                self.dirty = true;
                Step::Started(r.id)
            }
            ResidentPhase::Starting { done, .. } | ResidentPhase::Prefilling { done, .. } => {
                self.decoding += 1;
                let rate = decode_rate(d, f, self.decoding);
                residents[k].phase = ResidentPhase::Decoding {
                    done,
                    rate,
                    since_us: t,
                    end_us: decode_end_us(t, done, r.target, rate),
                };
                rerate(residents, d, f, self.decoding, t);
                Step::Started(r.id)
            }
            ResidentPhase::Decoding { .. } => {
                residents.swap_remove(k);
                self.decoding = self.decoding.saturating_sub(1);
                self.slots_used -= 1;
                self.kv_used = self.kv_used.saturating_sub(r.kv);
                if serving.step.is_some() {
                    self.dirty = true;
                } else {
                    rerate(residents, d, f, self.decoding, t);
                }
                self.freed = true;
                Step::Finished(r.id)
            }
        }
    }
}

impl Run {
    /// Recompute preemption at `t`: the most recently admitted prefilling or decoding request
    /// frees its slot and KV and waits at the queue's front with its whole tokens kept, to
    /// prefill its context again (as the engine's [`crate::replay`] does).
    fn preempt_newest(&mut self, serving: &NodeServing, residents: &mut Vec<Resident>) -> Step {
        let t = self.t;
        let victim = residents
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                matches!(
                    r.phase,
                    ResidentPhase::Decoding { .. } | ResidentPhase::Prefilling { .. }
                )
            })
            .max_by_key(|(_, r)| r.seq)
            .map(|(k, _)| k);
        let Some(k) = victim else {
            // Only holds and moves fill the node: nothing to preempt, no overflow to wait for.
            self.kv_at = FOREVER_US;
            return Step::Released;
        };
        let r = residents.swap_remove(k);
        self.slots_used -= 1;
        self.kv_used = self.kv_used.saturating_sub(r.kv);
        let done = match r.phase {
            ResidentPhase::Decoding {
                done,
                rate,
                since_us,
                end_us,
            } => {
                self.decoding = self.decoding.saturating_sub(1);
                progress(done, rate, since_us, end_us, t, r.target).floor()
            }
            ResidentPhase::Prefilling { done, .. } => done.floor(),
            _ => 0.0,
        };
        let p = serving.step.map_or(0.0, |c| c.prefill_tok_s);
        self.preempted.push(Waiting {
            id: r.id,
            kv: r.kv,
            prompt: r.prompt,
            start_s: secs(r.prompt as f64 + done, p),
            prefill: true,
            stall_s: 0.0,
            tokens: r.prompt as f64 + done,
            done,
            target: r.target,
        });
        self.dirty = true;
        Step::Preempted(r.id)
    }
}

/// KV blocks in use at `t` under the iteration model: each resident's prompt and generated
/// tokens ([`iteration::KvBlocks`]), a decoder's up to `t` and the block of its next token.
fn blocks_used(residents: &[Resident], t: i64) -> u64 {
    residents
        .iter()
        .map(|r| {
            let p = r.prompt as f64;
            match r.phase {
                ResidentPhase::Decoding {
                    done,
                    rate,
                    since_us,
                    end_us,
                } => iteration::KvBlocks::decoder_blocks(
                    p + progress(done, rate, since_us, end_us, t, r.target),
                ),
                ResidentPhase::Prefilling { done, .. }
                | ResidentPhase::Starting { done, .. }
                | ResidentPhase::Stalled { done, .. }
                | ResidentPhase::Held { done, .. } => iteration::KvBlocks::blocks(p + done),
            }
        })
        .sum()
}

/// When the node's decoders next overflow its KV under the iteration model
/// ([`iteration::KvBlocks::overflow_us`]); [`FOREVER_US`] for never.
pub(crate) fn overflow_at(serving: &NodeServing, residents: &[Resident], t: i64) -> i64 {
    let kv = iteration::KvBlocks::of(serving.kv_capacity_tokens);
    // The blocks the residents hold at most before any of them completes: when they fit,
    // nothing overflows before the next completion (which sets the overflow again).
    let most: u64 = residents
        .iter()
        .map(|r| {
            let p = r.prompt as f64;
            match r.phase {
                ResidentPhase::Decoding { done, .. } => {
                    iteration::KvBlocks::blocks(p + r.target.max(done))
                }
                ResidentPhase::Prefilling { done, .. }
                | ResidentPhase::Starting { done, .. }
                | ResidentPhase::Stalled { done, .. }
                | ResidentPhase::Held { done, .. } => iteration::KvBlocks::blocks(p + done),
            }
        })
        .sum();
    if most <= kv.capacity {
        return FOREVER_US;
    }
    let mut decoders = Vec::new();
    let mut rate = 0.0;
    for r in residents {
        if let ResidentPhase::Decoding {
            done,
            rate: v,
            since_us,
            end_us,
        } = r.phase
        {
            rate = v;
            let now = progress(done, v, since_us, end_us, t, r.target);
            decoders.push((since_us, r.prompt as f64 + done, r.prompt as f64 + now));
        }
    }
    if decoders.is_empty() {
        return FOREVER_US;
    }
    kv.overflow_us(
        blocks_used(residents, t),
        t,
        rate,
        &decoders,
        &mut Vec::new(),
        secs_to_us,
    )
    .unwrap_or(FOREVER_US)
}

/// The forecast's answer for a request that started decoding at `start` (if it did) and
/// completes at `end` (`None`: never), counted from `now_us`.
#[inline]
fn answer(now_us: i64, start: Option<i64>, end: Option<i64>) -> ServiceTime {
    let rel = |t: i64| (t.max(now_us) - now_us) as f64 / US_PER_S;
    match end {
        Some(end) => ServiceTime {
            start_s: rel(start.unwrap_or(end)),
            total_s: rel(end),
        },
        None => ServiceTime {
            start_s: start.map_or(f64::INFINITY, rel),
            total_s: f64::INFINITY,
        },
    }
}

/// When request `watch` starts decoding and completes on the node, counted from `now`, with
/// `newcomer` (if any) joining the node now — starting at once if the queue is empty and it
/// fits, else at the queue's tail — and nothing else arriving. `watch` is [`PROBE_ID`] for the
/// newcomer or the id of a resident or queued request. `None` when `watch` is not on the node
/// or the node cannot serve it (no slot ever fits it); an infinite `total_s` when a rate is 0.
///
/// The rules and arithmetic are the engine's (module docs): a slot frees on a completion or a
/// released hold, the queue then drains while its head fits, a prefill's end starts a decode
/// at [`decode_rate`] of the new batch size and every other decoder is re-rated, a completion
/// re-rates the rest. [`Trajectory`] gives the same answers, computed once per node state.
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
    let present = residents.iter().any(|r| r.id == watch)
        || queue.iter().any(|w| w.id == watch)
        || newcomer.is_some_and(|w| w.id == watch);
    if !present {
        return None;
    }
    let mut started: Option<i64> = residents
        .iter()
        .find(|r| r.id == watch && matches!(r.phase, ResidentPhase::Decoding { .. }))
        .map(|_| now_us);
    let mut run = Run::new(residents, now_us);
    let mut waiting = queue.iter().copied().chain(newcomer);
    let mut head = waiting.next();
    loop {
        run.admit_queue(&serving, residents, &mut head, &mut waiting);
        match run.step(&serving, residents) {
            Step::Idle | Step::GaveUp => return None,
            Step::Forever => return Some(answer(now_us, started, None)),
            Step::Started(id) if id == watch => started = Some(run.t),
            Step::Finished(id) if id == watch => return Some(answer(now_us, started, Some(run.t))),
            _ => {}
        }
    }
}

/// A newcomer's [`forecast`] with the delay it imposes on the requests already on the node:
/// the `marginal` forecast ([`forecast_marginal`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Marginal {
    /// The newcomer's own `w_i` and `T_i`.
    pub time: ServiceTime,
    /// `D_i = sum_r (end_r with the newcomer - end_r without)` over every request resident or
    /// queued on the node, seconds (at least 0; infinite when the newcomer makes a request
    /// that would finish wait forever).
    pub imposed_s: f64,
}

/// The outcome of every request in a replay of a node to its end: `(id, end)`, `None` for a
/// request that never finishes (a rate of 0), and when the newcomer (if any) started decoding.
struct Ends {
    ends: Vec<(u64, Option<i64>)>,
    start: Option<i64>,
}

/// Replays the node to its end with `newcomer` (if any) joining the queue's tail now; `None`
/// when the replay gives up or the newcomer never takes a slot.
fn replay_to_end(
    serving: NodeServing,
    now_us: i64,
    residents: &mut Vec<Resident>,
    queue: &[Waiting],
    newcomer: Option<Waiting>,
) -> Option<Ends> {
    let mut out = Ends {
        ends: Vec::new(),
        start: None,
    };
    let mut run = Run::new(residents, now_us);
    let mut waiting = queue.iter().copied().chain(newcomer);
    let mut head = waiting.next();
    loop {
        run.admit_queue(&serving, residents, &mut head, &mut waiting);
        match run.step(&serving, residents) {
            Step::GaveUp => return None,
            Step::Idle => return head.is_none().then_some(out),
            Step::Forever => {
                out.ends.extend(residents.iter().map(|r| (r.id, None)));
                out.ends.extend(run.preempted.iter().map(|w| (w.id, None)));
                out.ends
                    .extend(head.into_iter().chain(waiting).map(|w| (w.id, None)));
                return Some(out);
            }
            Step::Started(id) if id == PROBE_ID => out.start = Some(run.t),
            Step::Finished(id) => out.ends.push((id, Some(run.t))),
            _ => {}
        }
    }
}

/// The delay term of [`Marginal`], in seconds: `with - without` summed over `without`'s
/// requests that finish (in microseconds, clamped at 0: rounding to whole microseconds can
/// make a request a microsecond early); infinite when one of them no longer finishes.
fn imposed_delay(
    without: impl Iterator<Item = (u64, i64)>,
    with: impl Fn(u64) -> Option<Option<i64>>,
) -> f64 {
    let mut sum: i64 = 0;
    for (id, end) in without {
        match with(id) {
            Some(Some(e)) => sum = sum.saturating_add(e - end),
            Some(None) => return f64::INFINITY,
            None => {}
        }
    }
    sum.max(0) as f64 / US_PER_S
}

/// [`forecast`] of `newcomer` (whose id must be [`PROBE_ID`]) with the delay it imposes on
/// the requests already on the node (`marginal`): the node is replayed to its end with and
/// without the newcomer and `D_i = sum_r (end_r with - end_r without)` over every resident and
/// queued request. A newcomer joins the queue's tail and prefills do not contend, so it can
/// only slow the requests that decode beside it (the batch slowdown) and hold a slot a queued
/// request would have taken: `D_i >= 0`. `None` when [`forecast`] is `None`.
pub(crate) fn forecast_marginal(state: NodeState<'_>, newcomer: Waiting) -> Option<Marginal> {
    let NodeState {
        serving,
        now_us,
        residents,
        queue,
    } = state;
    let mut alone = residents.clone();
    let with = replay_to_end(serving, now_us, residents, queue, Some(newcomer))?;
    let without = replay_to_end(serving, now_us, &mut alone, queue, None)?;
    let mine = with.ends.iter().find(|e| e.0 == PROBE_ID).map(|e| e.1)?;
    let time = answer(now_us, with.start, mine);
    let imposed_s = imposed_delay(
        without
            .ends
            .iter()
            .filter_map(|&(id, e)| e.map(|e| (id, e))),
        |id| with.ends.iter().find(|e| e.0 == id).map(|e| e.1),
    );
    Some(Marginal { time, imposed_s })
}

/// How a [`Trajectory`] left the node's queue.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum Tail {
    /// The queue was never all admitted (the replay gave up, or its head never fits).
    #[default]
    Unreached,
    /// Every queued request holds a slot: the state a newcomer joins is recorded.
    Ready,
    /// The queue waits forever (a rate of 0).
    Forever,
}

/// The start and end of one request in a [`Trajectory`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Outcome {
    id: u64,
    start: Option<i64>,
    end: Option<i64>,
    forever: bool,
}

/// [`forecast`] of every request on one node and of any newcomer, computed once for the
/// node's state: the node is replayed with no newcomer to the end, recording when each
/// resident and queued request starts and completes and the state at the moment the whole
/// queue holds slots, from which a newcomer's forecast resumes. The replay past that moment
/// (the residents' outcomes) runs only when a resident's forecast or a marginal one is asked:
/// a placement asks only newcomers', and an idle node's whole replay is past it. While the
/// node's state does not change, the answers equal [`forecast`]'s at any later `now` (each
/// event of the node changes its state).
#[derive(Debug, Clone, Default)]
pub struct Trajectory {
    serving: Option<NodeServing>,
    now_us: i64,
    /// Queued requests fitted at once (before any event): the answers then depend on `now`.
    eager: bool,
    tail: Tail,
    tail_run: Run,
    tail_residents: Vec<Resident>,
    outcomes: Vec<Outcome>,
    /// Position in `outcomes` by request id.
    index: std::collections::HashMap<u64, usize>,
    /// Requests were appended since the replay ([`Trajectory::append`]): the tail is current,
    /// the residents' outcomes are not.
    appended: bool,
    /// The time of the replay's first event (a start, finish or release): from then on the
    /// node's real state may differ from the replayed one without a node event (a request
    /// longer than its estimate keeps decoding past the end the replay gave it, and its
    /// expected remainder grows with time), so the answers no longer hold.
    first_event_us: i64,
    /// The replay gave up before the node's end ([`MAX_FORECAST_EVENTS`]): the residents'
    /// outcomes are incomplete, so no [`Trajectory::newcomer_marginal`].
    gave_up: bool,
    /// The replay stopped where the queue holds slots (and after its first event): a
    /// newcomer's forecast needs no more, the residents' outcomes do, so the rest is replayed
    /// only when one is asked ([`Trajectory::finish`]) from `rest_run` and `rest_residents`.
    paused: bool,
    rest_run: Run,
    rest_residents: Vec<Resident>,
}

impl Trajectory {
    /// Replays `state` (its residents are consumed) and keeps what the answers need.
    pub fn compute(&mut self, state: NodeState<'_>) {
        let NodeState {
            serving,
            now_us,
            residents,
            queue,
        } = state;
        self.serving = Some(serving);
        self.now_us = now_us;
        self.eager = false;
        self.appended = false;
        self.first_event_us = i64::MAX;
        self.gave_up = false;
        self.tail = Tail::Unreached;
        self.outcomes.clear();
        self.outcomes.extend(residents.iter().map(|r| Outcome {
            id: r.id,
            start: matches!(r.phase, ResidentPhase::Decoding { .. }).then_some(now_us),
            end: None,
            forever: false,
        }));
        self.outcomes.extend(queue.iter().map(|w| Outcome {
            id: w.id,
            start: None,
            end: None,
            forever: false,
        }));
        self.index.clear();
        for (k, o) in self.outcomes.iter().enumerate() {
            self.index.entry(o.id).or_insert(k);
        }
        self.paused = false;
        let mut run = Run::new(residents, now_us);
        let mut next_wait = 0usize;
        loop {
            while let Some(w) = queue.get(next_wait) {
                if !run.admit(&serving, residents, w) {
                    break;
                }
                next_wait += 1;
                self.eager |= run.events == 0;
            }
            if self.tail == Tail::Unreached && next_wait == queue.len() {
                self.tail = Tail::Ready;
                self.tail_run = run.clone();
                self.tail_residents.clone_from(residents);
                // A newcomer's forecast resumes from here: the rest waits until a resident's
                // outcome is asked, but for the replay's first event, which says how long the
                // answers hold.
                self.paused = true;
                self.rest_run = run;
                // The caller's buffer is consumed: it takes the old one in exchange.
                std::mem::swap(&mut self.rest_residents, residents);
                if self.first_event_us == i64::MAX {
                    self.advance(1);
                }
                return;
            }
            let step = run.step(&serving, residents);
            if self.record(step, run.t) {
                return;
            }
        }
    }

    /// Records one event of the replay at `t`; whether the replay is over.
    fn record(&mut self, step: Step, t: i64) -> bool {
        if matches!(
            step,
            Step::Started(_)
                | Step::Finished(_)
                | Step::Released
                | Step::Preempted(_)
                | Step::Resumed(_)
        ) {
            self.first_event_us = self.first_event_us.min(t);
        }
        match step {
            Step::Idle => true,
            Step::GaveUp => {
                self.gave_up = true;
                true
            }
            Step::Forever => {
                if self.tail == Tail::Unreached {
                    self.tail = Tail::Forever;
                }
                for o in self.outcomes.iter_mut().filter(|o| o.end.is_none()) {
                    o.forever = true;
                }
                true
            }
            Step::Started(id) => {
                if let Some(&k) = self.index.get(&id) {
                    self.outcomes[k].start = Some(t);
                }
                false
            }
            Step::Finished(id) => {
                if let Some(&k) = self.index.get(&id) {
                    self.outcomes[k].end = Some(t);
                }
                false
            }
            Step::Released | Step::Preempted(_) | Step::Resumed(_) => false,
        }
    }

    /// Replays at most `events` more events of a paused replay.
    fn advance(&mut self, events: usize) {
        let Some(serving) = self.serving else {
            self.paused = false;
            return;
        };
        let mut run = std::mem::take(&mut self.rest_run);
        let mut residents = std::mem::take(&mut self.rest_residents);
        for _ in 0..events {
            if !self.paused {
                break;
            }
            let step = run.step(&serving, &mut residents);
            if self.record(step, run.t) {
                self.paused = false;
            }
        }
        self.rest_run = run;
        self.rest_residents = residents;
    }

    /// Replays a paused replay to the node's end (the residents' outcomes).
    fn finish(&mut self) {
        self.advance(usize::MAX);
    }

    /// Whether the answers at `now_us` are [`forecast`]'s at `now_us` (the node state unchanged
    /// since [`Trajectory::compute`]): always at the time it was computed; later too, before
    /// the replay's first event, unless a queued request fitted at once (the engine starts such
    /// a request when it fits, so its queue never does; a forecast with other estimates than
    /// the engine's may). At or after the first event the replay expected something the engine
    /// may not do then (a request longer than its estimate is still decoding).
    pub fn holds_at(&self, now_us: i64) -> bool {
        now_us == self.now_us
            || (!self.eager && now_us > self.now_us && now_us < self.first_event_us)
    }

    /// Whether [`Trajectory::resident`] answers (no request was appended since the replay).
    pub fn residents_known(&self) -> bool {
        !self.appended
    }

    /// Extends the trajectory by `w` joining the node's queue at its tail at `now_us`, without
    /// replaying the queue ahead of it: the state a newcomer joins moves to the moment `w`
    /// takes its slot (the residents' outcomes are then unknown until the next
    /// [`Trajectory::compute`]). Returns `false` (the trajectory must be computed again) when
    /// `w` would take a slot at once, before any event: the answers would then depend on
    /// `now_us`.
    pub fn append(&mut self, w: Waiting, now_us: i64) -> bool {
        let Some(serving) = self.serving else {
            return false;
        };
        if self.tail != Tail::Ready {
            // A queue that never drains (or waits forever) does not drain for `w` either.
            self.appended = true;
            return true;
        }
        let mut residents = std::mem::take(&mut self.tail_residents);
        let mut run = self.tail_run.clone();
        run.t = run.t.max(now_us);
        if run.admit(&serving, &mut residents, &w) {
            // It fits where the queue ahead of it drained: at once when no event came first.
            let at_once = run.events == 0;
            if !at_once {
                self.tail_run = run;
                self.appended = true;
            }
            self.tail_residents = residents;
            return !at_once;
        }
        loop {
            match run.step(&serving, &mut residents) {
                Step::Idle | Step::GaveUp => {
                    self.tail = Tail::Unreached;
                    break;
                }
                Step::Forever => {
                    self.tail = Tail::Forever;
                    break;
                }
                _ => {}
            }
            if run.admit(&serving, &mut residents, &w) {
                self.tail_run = run;
                break;
            }
        }
        self.tail_residents = residents;
        self.appended = true;
        true
    }

    /// [`forecast`] of request `id` (a resident or queued request), counted from `now_us`
    /// (not before the time the trajectory was computed at).
    pub fn resident(&mut self, id: u64, now_us: i64) -> Option<ServiceTime> {
        if self.appended {
            return None;
        }
        self.finish();
        let o = &self.outcomes[*self.index.get(&id)?];
        let now = now_us.max(self.now_us);
        if o.forever {
            Some(answer(now, o.start, None))
        } else {
            o.end.map(|end| answer(now, o.start, Some(end)))
        }
    }

    /// [`forecast`] of `newcomer` joining the node at `now_us` (not before the time the
    /// trajectory was computed at); `scratch` is a buffer for the resumed replay.
    pub fn newcomer(
        &self,
        newcomer: Waiting,
        now_us: i64,
        scratch: &mut Vec<Resident>,
    ) -> Option<ServiceTime> {
        let now = now_us.max(self.now_us);
        self.resume(newcomer, now, scratch, false, |_, _| {})
            .map(|(start, end)| answer(now, start, end))
    }

    /// [`forecast_marginal`] of `newcomer` joining the node at `now_us` (not before the time
    /// the trajectory was computed at): the replay resumes where the queue holds slots, with
    /// the newcomer, to the node's end, and each request's end is compared with the one the
    /// trajectory recorded without it. `None` when [`Trajectory::residents_known`] is false or
    /// the replay without the newcomer gave up (compute it again), or as [`forecast_marginal`].
    pub fn newcomer_marginal(
        &mut self,
        newcomer: Waiting,
        now_us: i64,
        scratch: &mut Vec<Resident>,
    ) -> Option<Marginal> {
        if self.appended {
            return None;
        }
        self.finish();
        if self.gave_up {
            return None;
        }
        let now = now_us.max(self.now_us);
        let base = |id: u64| self.index.get(&id).and_then(|&k| self.outcomes[k].end);
        let mut delay: i64 = 0;
        let mut stuck = false;
        let (start, end) = self.resume(newcomer, now, scratch, true, |id, end| {
            match (base(id), end) {
                (Some(b), Some(e)) => delay = delay.saturating_add(e - b),
                (Some(_), None) => stuck = true,
                (None, _) => {}
            }
        })?;
        let imposed_s = if stuck {
            f64::INFINITY
        } else {
            delay.max(0) as f64 / US_PER_S
        };
        Some(Marginal {
            time: answer(now, start, end),
            imposed_s,
        })
    }

    /// Resumes the replay where the whole queue holds slots, with `newcomer` joining at `now`,
    /// until the newcomer finishes (or, `to_end`, until the node is idle), calling `other(id,
    /// end)` for every other request that finishes meanwhile (`end` `None`: one left waiting
    /// forever when a rate is 0). Returns when the newcomer started decoding and finished
    /// (`None`: never); `None` when the queue never drained, the replay gave up or the
    /// newcomer never took a slot.
    fn resume(
        &self,
        newcomer: Waiting,
        now: i64,
        scratch: &mut Vec<Resident>,
        to_end: bool,
        mut other: impl FnMut(u64, Option<i64>),
    ) -> Option<(Option<i64>, Option<i64>)> {
        let serving = self.serving?;
        match self.tail {
            Tail::Unreached => return None,
            // The queue waits forever with or without the newcomer: so does it.
            Tail::Forever => return Some((None, None)),
            Tail::Ready => {}
        }
        scratch.clone_from(&self.tail_residents);
        let mut run = self.tail_run.clone();
        run.t = run.t.max(now);
        let mut head = Some(newcomer);
        let (mut start, mut end) = (None, None);
        loop {
            if let Some(w) = head {
                if run.admit(&serving, scratch, &w) {
                    head = None;
                }
            }
            match run.step(&serving, scratch) {
                Step::GaveUp => return None,
                Step::Idle => return end.is_some().then_some((start, end)),
                Step::Forever => {
                    for r in scratch.iter().filter(|r| r.id != newcomer.id) {
                        other(r.id, None);
                    }
                    for w in run.preempted.iter().filter(|w| w.id != newcomer.id) {
                        other(w.id, None);
                    }
                    return Some((start, end));
                }
                Step::Started(id) if id == newcomer.id => start = Some(run.t),
                Step::Finished(id) if id == newcomer.id => {
                    end = Some(run.t);
                    if !to_end {
                        return Some((start, end));
                    }
                }
                Step::Finished(id) => other(id, Some(run.t)),
                _ => {}
            }
        }
    }
}

/// After the batch changed to `decoding` decoders at `t`: every decoder whose rate differs is
/// brought up to `t` ([`progress`]) and re-rated, as the engine does.
/// Under the iteration model, after the node's composition changed at `t`: every decoder's
/// and prefill's progress brought to `t` and its rate set from [`iteration::pace`] (the
/// oldest prefill served, the others waiting), each only where its rate changes (as the
/// engine does, so that both round the same ends).
pub(crate) fn repace(residents: &mut [Resident], c: &iteration::StepCoefficients, t: i64) {
    let mut k = 0u32;
    let mut ctx = 0.0;
    let mut head: Option<(u64, f64)> = None;
    for r in residents.iter() {
        match r.phase {
            ResidentPhase::Decoding { .. } => {
                k += 1;
                ctx += r.kv as f64;
            }
            ResidentPhase::Prefilling { seq, tokens, .. } if head.is_none_or(|(s, _)| seq < s) => {
                head = Some((seq, tokens));
            }
            _ => {}
        }
    }
    let p = iteration::pace(c, k, ctx, head.map(|h| h.1));
    for r in residents.iter_mut() {
        match r.phase {
            ResidentPhase::Decoding {
                done,
                rate: old,
                since_us,
                end_us,
            } if old != p.decode_tok_s => {
                let done = progress(done, old, since_us, end_us, t, r.target);
                r.phase = ResidentPhase::Decoding {
                    done,
                    rate: p.decode_tok_s,
                    since_us: t,
                    end_us: decode_end_us(t, done, r.target, p.decode_tok_s),
                };
            }
            ResidentPhase::Prefilling {
                left,
                rate: old,
                since_us,
                end_us,
                seq,
                tokens,
                done,
            } => {
                let rate = if head.is_some_and(|h| h.0 == seq) {
                    p.prefill_tok_s
                } else {
                    0.0
                };
                if rate != old {
                    let left = prefill_left(left, old, since_us, end_us, t);
                    r.phase = ResidentPhase::Prefilling {
                        left,
                        rate,
                        since_us: t,
                        end_us: prefill_end_us(t, left, rate),
                        seq,
                        tokens,
                        done,
                    };
                }
            }
            _ => {}
        }
    }
}

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

    /// [`forecast_marginal`] of a newcomer on `node` (as [`NodeLoads::forecast_newcomer`], with
    /// the delay it imposes on the requests already there).
    fn forecast_newcomer_marginal(&self, node: usize, newcomer: Waiting) -> Option<Marginal>;

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
            step: None,
        }
    }

    fn newcomer(start_s: f64, target: f64) -> Waiting {
        Waiting {
            id: PROBE_ID,
            kv: 1,
            prompt: 0,
            start_s,
            prefill: true,
            stall_s: 0.0,
            tokens: 0.0,
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
            prompt: 0,
            seq: 0,
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
            prompt: 0,
            seq: 0,
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
            prompt: 0,
            seq: 0,
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
    fn phase_of(kind: u8, a: i64, b: f64, rate: f64, target: f64) -> ResidentPhase {
        match kind % 4 {
            0 => ResidentPhase::Decoding {
                done: b.min(target),
                rate,
                since_us: 0,
                end_us: decode_end_us(0, b.min(target), target, rate),
            },
            1 => ResidentPhase::Starting {
                at_us: a,
                done: b.min(target),
                prefill: true,
            },
            2 => ResidentPhase::Starting {
                at_us: a,
                done: b.min(target),
                prefill: false,
            },
            _ => ResidentPhase::Held {
                at_us: a,
                done: 0.0,
            },
        }
    }

    proptest::proptest! {
        /// A [`Trajectory`] computed once answers every resident, queued request and newcomer
        /// exactly as [`forecast`] does, also asked later while the state holds.
        #[test]
        fn trajectory_equals_forecast(
            slots in 1u32..6,
            cap in proptest::prop_oneof![proptest::strategy::Just(u64::MAX), 50u64..400],
            (d, f) in (0.0f64..20.0, proptest::prop_oneof![proptest::strategy::Just(0.0), 0.0f64..1.5]),
            res in proptest::collection::vec((0u8..4, 1i64..3_000_000, 0.0f64..40.0, 1u64..80, 1.0f64..60.0), 0..6),
            queue in proptest::collection::vec((1u64..80, 0.0f64..3.0, proptest::bool::ANY, 0.0f64..5.0, 1.0f64..60.0), 0..6),
            new in (1u64..120, 0.0f64..3.0, proptest::bool::ANY, 1.0f64..60.0),
            later in 0i64..2,
        ) {
            let serving = NodeServing { decode_tok_s: d, batch_slowdown: f, slots, kv_capacity_tokens: cap, step: None };
            let decoders = res.iter().filter(|r| r.0 % 4 == 0).count() as u32;
            let rate = decode_rate(d, f, decoders.max(1));
            let residents: Vec<Resident> = res
                .iter()
                .take(slots as usize)
                .enumerate()
                .map(|(k, &(kind, a, b, kv, target))| Resident {
                    id: k as u64,
                    kv, prompt: 0, seq: 0,
                    target,
                    phase: phase_of(kind, a, b, rate, target),
                })
                .collect();
            let queue: Vec<Waiting> = queue
                .iter()
                .enumerate()
                .map(|(k, &(kv, start_s, prefill, done, target))| Waiting {
                    id: 100 + k as u64,
                    kv, prompt: 0,
                    start_s,
                    prefill,
                    stall_s: 0.0,
                    tokens: 0.0,
                    done: done.min(target),
                    target,
                })
                .collect();
            let newcomer = Waiting { id: PROBE_ID, kv: new.0, prompt: 0, start_s: new.1, prefill: new.2, stall_s: 0.0, tokens: 0.0, done: 0.0, target: new.3 };
            let mut traj = Trajectory::default();
            let mut buf = residents.clone();
            traj.compute(NodeState { serving, now_us: 0, residents: &mut buf, queue: &queue });
            // Asked at the time it was computed, or later but before any resident's event.
            let earliest = residents
                .iter()
                .map(|r| match r.phase {
                    ResidentPhase::Decoding { end_us, .. }
                    | ResidentPhase::Prefilling { end_us, .. } => end_us,
                    ResidentPhase::Starting { at_us, .. }
                    | ResidentPhase::Held { at_us, .. }
                    | ResidentPhase::Stalled { at_us, .. } => at_us,
                })
                .min()
                .unwrap_or(i64::MAX);
            let now = if later == 1 && earliest >= 1 && traj.holds_at(1) { 1 } else { 0 };
            let fresh = |newcomer: Option<Waiting>, watch: u64| {
                let mut buf = residents.clone();
                forecast(NodeState { serving, now_us: now, residents: &mut buf, queue: &queue }, newcomer, watch)
            };
            let mut scratch = Vec::new();
            // The replay stops where the queue holds slots (after its first event): how long
            // its answers hold must not change when the rest is replayed (below).
            let probes = [0, 1, earliest.saturating_sub(1), earliest, earliest.saturating_add(1)];
            let holds = probes.map(|t| traj.holds_at(t));
            proptest::prop_assert_eq!(traj.newcomer(newcomer, now, &mut scratch), fresh(Some(newcomer), PROBE_ID));
            // The marginal forecast: the same newcomer time, and the same imposed delay from
            // the cached trajectory as from two fresh replays.
            let marginal = {
                let mut buf = residents.clone();
                forecast_marginal(NodeState { serving, now_us: now, residents: &mut buf, queue: &queue }, newcomer)
            };
            proptest::prop_assert_eq!(marginal.map(|m| m.time), fresh(Some(newcomer), PROBE_ID));
            proptest::prop_assert!(marginal.is_none_or(|m| m.imposed_s >= 0.0));
            proptest::prop_assert_eq!(traj.newcomer_marginal(newcomer, now, &mut scratch), marginal);
            for id in residents.iter().map(|r| r.id).chain(queue.iter().map(|w| w.id)).chain([999]) {
                proptest::prop_assert_eq!(traj.resident(id, now), fresh(None, id));
            }
            proptest::prop_assert_eq!(probes.map(|t| traj.holds_at(t)), holds);
        }
    }

    #[test]
    fn the_marginal_forecast_prices_the_slowdown_of_a_co_decoder() {
        // A resident decodes 40 tokens alone at 10 tok/s (ends at 4 s). A newcomer prefilling
        // 1 s and decoding 10 tokens joins: with f = 1 both decode at 5 tok/s from 1 s; the
        // resident has 30 left then, the newcomer finishes at 3 s (10 tokens at 5 tok/s) and
        // the resident, 20 tokens left at 10 tok/s, at 5 s: one second later than alone.
        let decoding = |rate: f64| ResidentPhase::Decoding {
            done: 0.0,
            rate,
            since_us: 0,
            end_us: decode_end_us(0, 0.0, 40.0, rate),
        };
        let marginal = |mut res: Vec<Resident>| {
            let st = NodeState {
                serving: serving(2, 1.0),
                now_us: 0,
                residents: &mut res,
                queue: &[],
            };
            forecast_marginal(st, newcomer(1.0, 10.0)).unwrap()
        };
        let m = marginal(vec![Resident {
            id: 1,
            kv: 1,
            prompt: 0,
            seq: 0,
            target: 40.0,
            phase: decoding(10.0),
        }]);
        assert_eq!(m.time.total_s, 3.0);
        assert_eq!(m.imposed_s, 1.0);
        // With a free node (no resident) nothing is imposed.
        let m = marginal(Vec::new());
        assert_eq!((m.time.total_s, m.imposed_s), (2.0, 0.0));
    }

    #[test]
    fn append_equals_computing_with_the_longer_queue() {
        let serving = NodeServing {
            decode_tok_s: 10.0,
            batch_slowdown: 0.7,
            slots: 2,
            kv_capacity_tokens: 300,
            step: None,
        };
        let resident = |id: u64, end: i64| Resident {
            id,
            kv: 100,
            prompt: 0,
            seq: 0,
            target: 30.0,
            phase: ResidentPhase::Starting {
                at_us: end,
                done: 0.0,
                prefill: true,
            },
        };
        let w = |id: u64, kv: u64| Waiting {
            id,
            kv,
            prompt: 0,
            start_s: 0.5,
            prefill: true,
            stall_s: 0.0,
            tokens: 0.0,
            done: 0.0,
            target: 20.0 + id as f64,
        };
        let base = vec![resident(1, 400_000), resident(2, 900_000)];
        let queue = [w(3, 100), w(4, 150), w(5, 60)];
        for n in 0..queue.len() {
            let mut appended = Trajectory::default();
            let mut buf = base.clone();
            appended.compute(NodeState {
                serving,
                now_us: 0,
                residents: &mut buf,
                queue: &queue[..n],
            });
            let mut ok = true;
            for q in &queue[n..] {
                ok &= appended.append(*q, 0);
            }
            assert!(ok);
            let mut full = Trajectory::default();
            let mut buf = base.clone();
            full.compute(NodeState {
                serving,
                now_us: 0,
                residents: &mut buf,
                queue: &queue,
            });
            let newcomer = w(PROBE_ID, 80);
            let mut s1 = Vec::new();
            let mut s2 = Vec::new();
            assert_eq!(
                appended.newcomer(newcomer, 0, &mut s1),
                full.newcomer(newcomer, 0, &mut s2)
            );
            assert_eq!(appended.residents_known(), n == queue.len());
        }
    }
}
