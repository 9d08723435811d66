//! One node replayed forward with the engine's rules: admission, the next event, KV
//! preemption, the iteration model's rates ([`repace`]) and the simple model's ([`rerate`]).

use super::*;

/// At most this many events are replayed per forecast before it gives up (returns `None`).
pub(super) const MAX_FORECAST_EVENTS: usize = 1 << 20;

/// The forecast's replay of one node: the counters beside its residents at time `t`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Run {
    pub(super) t: i64,
    pub(super) slots_used: u64,
    pub(super) kv_used: u64,
    pub(super) decoding: u32,
    pub(super) events: usize,
    /// The next admission's order (prefills are served, and KV preemption picks, by it).
    pub(super) next_seq: u64,
    /// The rates must be set again before the next event (iteration model).
    pub(super) dirty: bool,
    /// Iteration model: when the decoders next overflow the KV ([`FOREVER_US`]: never).
    pub(super) kv_at: i64,
    /// Iteration model: requests preempted for KV, the next to start last (the queue's front).
    pub(super) preempted: Vec<Waiting>,
    /// A request completed or released its slot at the last event.
    pub(super) freed: bool,
}

/// What one event of a [`Run`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Step {
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
    pub(super) fn new(residents: &[Resident], now_us: i64) -> Run {
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

    /// Whether no request on the node can be preempted any more, with nothing admitted after
    /// now: under the simple model always; under the iteration model when nothing waits to be
    /// readmitted and the KV every resident holds at its target fits the node (the blocks in
    /// use only grow to that while the residents decode, and shrink as they leave).
    pub(super) fn settled(&self, serving: &NodeServing, residents: &[Resident]) -> bool {
        if serving.step.is_none() {
            return true;
        }
        if !self.preempted.is_empty() {
            return false;
        }
        let most = residents
            .iter()
            .map(|r| {
                let done = match r.phase {
                    ResidentPhase::Decoding { done, .. }
                    | ResidentPhase::Prefilling { done, .. }
                    | ResidentPhase::Starting { done, .. }
                    | ResidentPhase::Stalled { done, .. }
                    | ResidentPhase::Held { done, .. } => done,
                };
                iteration::KvBlocks::decoder_blocks(r.prompt as f64 + r.target.max(done))
            })
            .fold(0u64, u64::saturating_add);
        most <= iteration::KvBlocks::of(serving.kv_capacity_tokens).capacity
    }

    /// Under the iteration model: starts the preempted requests while the front one fits,
    /// when a request completed or released its slot since the last event (the engine drains
    /// a node's queue then); whether none is left waiting.
    pub(super) fn readmit(&mut self, serving: &NodeServing, residents: &mut Vec<Resident>) -> bool {
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
    pub(super) fn admit(
        &mut self,
        serving: &NodeServing,
        residents: &mut Vec<Resident>,
        w: &Waiting,
    ) -> bool {
        if !self.preempted.is_empty() && !self.readmit(serving, residents) {
            return false;
        }
        self.admit_one(serving, residents, w)
    }

    /// Takes a slot for `w` now if one is free and its KV fits: the scheduler's reservation
    /// under the simple model, its context's blocks beside the blocks in use under the
    /// iteration model.
    #[inline]
    pub(super) fn admit_one(
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
                    end_us: prefill_start_end(w.tokens, self.t),
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
                cached: w.cached,
            });
        }
        fits
    }

    /// Starts queued requests while the head fits: `head` is the queue's head (`None` once
    /// every request holds a slot), `rest` the requests behind it.
    #[inline]
    pub(super) fn admit_queue(
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
    pub(super) fn step(&mut self, serving: &NodeServing, residents: &mut Vec<Resident>) -> Step {
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
                    end_us: prefill_start_end(tokens, t),
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
            ResidentPhase::Starting { done, prefill, .. } if prefill && floor(done) >= r.target => {
                residents.swap_remove(k);
                self.slots_used -= 1;
                self.kv_used = self.kv_used.saturating_sub(r.kv);
                self.freed = true;
                Step::Finished(r.id)
            }
            ResidentPhase::Prefilling { done, .. } if floor(done) >= r.target => {
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
    pub(super) fn preempt_newest(
        &mut self,
        serving: &NodeServing,
        residents: &mut Vec<Resident>,
    ) -> Step {
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
                floor(progress(done, rate, since_us, end_us, t, r.target))
            }
            ResidentPhase::Prefilling { done, .. } => floor(done),
            _ => 0.0,
        };
        let p = serving.step.map_or(0.0, |c| c.prefill_tok_s);
        self.preempted.push(Waiting {
            id: r.id,
            kv: r.kv,
            prompt: r.prompt,
            start_s: secs((r.prompt - r.cached) as f64 + done, p),
            prefill: true,
            stall_s: 0.0,
            tokens: (r.prompt - r.cached) as f64 + done,
            done,
            target: r.target,
            cached: r.cached,
        });
        self.dirty = true;
        Step::Preempted(r.id)
    }
}

/// KV blocks in use at `t` under the iteration model: each resident's prompt and generated
/// tokens ([`iteration::KvBlocks`]), a decoder's up to `t` and the block of its next token.
pub(super) fn blocks_used(residents: &[Resident], t: i64) -> u64 {
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
pub(super) fn overflow_at(serving: &NodeServing, residents: &[Resident], t: i64) -> i64 {
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
