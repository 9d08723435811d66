//! Serving: a request's prefill (a recovery's stall first), the iteration model's rates and
//! KV blocks, decode, phase ends and completion.

use super::forecast::{decoded_at, recovery_stall_s};
use super::*;

impl Sim<'_> {
    /// Starts request `r` on node `i`: slot and KV acquired, (re-)prefill of the whole context.
    pub(super) fn start_on(&mut self, r: u32, i: usize) {
        self.cache_join(r, i);
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
            // The prompt tokens its cache holds here are read, not computed.
            let tokens = self.uncached(r, i, ctx);
            if recovering {
                let q = &mut self.reqs[r as usize];
                q.rec_unplanned = q.rec_unplanned.saturating_sub(ctx - tokens);
            }
            self.begin_prefill(r, i, tokens as f64, stall);
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
    pub(super) fn begin_prefill(&mut self, r: u32, i: usize, tokens: f64, stall_s: f64) {
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
            if self.drains {
                // A prefill that cannot finish before the node's known end moves at once.
                self.schedule_end_check(r);
            }
        } else {
            q.phase = Phase::Prefill;
            q.phase_end = service::prefill_start_end(tokens, now);
            if q.phase_end != service::FOREVER_US {
                // An empty context ends its prefill at once.
                let (t, epoch) = (q.phase_end, q.epoch);
                self.schedule(t, Event::PhaseEnd { req: r, epoch });
            }
        }
        self.touch(i);
        self.views_dirty = true;
        self.mark_pace(i);
    }

    // ----- iteration model ---------------------------------------------------------------

    /// Marks node `i` for [`Sim::repace`] at the end of the current event.
    #[inline]
    pub(super) fn mark_pace(&mut self, i: usize) {
        if self.steps[i].is_some() && !self.pace_dirty.contains(&i) {
            self.pace_dirty.push(i);
        }
    }

    /// Sets the rates of every node marked during the event, and when its decoders next
    /// overflow its KV.
    pub(super) fn flush_pace(&mut self) {
        while let Some(i) = self.pace_dirty.pop() {
            if self.nodes[i].up {
                self.repace(i);
                self.schedule_kv(i);
            }
        }
    }

    /// KV blocks in use on node `i` now under the iteration model: every request holding it,
    /// its prompt and the tokens generated (a decoder's up to now and the block of its next
    /// token), as [`service`] counts them; an overlapped move's reserved destination holds the
    /// context of the decision ([`Sim::dest_reservation_blocks`]), where the forecast counts
    /// the context expected at the cut-over (and assumes the move completes).
    pub(super) fn kv_blocks_used(&self, i: usize) -> u64 {
        let now = self.now;
        self.kv_blocks_with(i, |q| {
            KvBlocks::decoder_blocks(q.prompt as f64 + decoded_at(q, now))
        })
    }

    /// KV blocks of every request holding node `i` under the iteration model: a decoder's
    /// from `decoder`, an overlapped move's reserved destination the context it was reserved
    /// for (the bulk being copied while the source goes on decoding,
    /// [`Sim::dest_reservation_blocks`]), any other's its prompt and the tokens it kept.
    pub(super) fn kv_blocks_with(&self, i: usize, decoder: impl Fn(&Req) -> u64) -> u64 {
        let me = i as u32;
        self.nodes[i]
            .residents
            .iter()
            .map(|&r| {
                let q = &self.reqs[r as usize];
                if q.node == me && q.phase == Phase::Decode {
                    decoder(q)
                } else if q.node != me && q.aux_kind == Aux::Dest {
                    Self::dest_reservation_blocks(q)
                } else {
                    KvBlocks::blocks(q.prompt as f64 + q.done)
                }
            })
            .sum()
    }

    /// The KV blocks an overlapped move holds on its destination until the cut-over: the
    /// context when the move was decided (the tokens generated on the source meanwhile
    /// arrive at the cut-over, which admits them or abandons the move).
    pub(super) fn dest_reservation_blocks(q: &Req) -> u64 {
        KvBlocks::blocks(q.prompt.saturating_add(q.mv_done0) as f64)
    }

    /// (Re)schedules node `i`'s KV overflow ([`KvBlocks::overflow_us`]) after its rates were
    /// set.
    pub(super) fn schedule_kv(&mut self, i: usize) {
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
    pub(super) fn on_kv_full(&mut self, i: usize) {
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
            let ctx = self.uncached(r, i, q.prompt.saturating_add(q.done_tokens())) as f64;
            secs(ctx, spec.prefill_tok_s)
                + secs((q.est as f64 - q.done).max(0.0), spec.decode_tok_s)
        };
        let q = &mut self.reqs[r as usize];
        q.done = service::floor(q.done);
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
    pub(super) fn repace(&mut self, i: usize) {
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
    pub(super) fn settle(&mut self, r: u32) {
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
    pub(super) fn schedule_decode_end(&mut self, r: u32) {
        self.touch_req(r);
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.phase_start = now;
        q.epoch = q.epoch.wrapping_add(1);
        q.phase_end = decode_end_us(now, q.done, q.output as f64, q.rate);
        let (t, epoch) = (q.phase_end, q.epoch);
        self.schedule(t, Event::PhaseEnd { req: r, epoch });
        // Past the last check before the node's known end the oracle has decided (a check
        // then would count the same forced loss again).
        let last = self
            .known_ends
            .get(self.reqs[r as usize].node as usize)
            .map_or(i64::MIN, |e| e.saturating_sub(ORACLE_EPSILON_US));
        if self.oracle && self.drains && now < last {
            self.schedule_end_check(r);
        }
    }

    /// After the number of decoders on node `i` changed: new rate for all of them.
    pub(super) fn rerate(&mut self, i: usize) {
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

    pub(super) fn begin_decode(&mut self, r: u32) {
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
    pub(super) fn leave_decode(&mut self, r: u32) {
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

    pub(super) fn on_phase_end(&mut self, r: u32) -> Result<(), ReplayError> {
        match self.reqs[r as usize].phase {
            Phase::Prefill => {
                let now = self.now;
                let i = self.reqs[r as usize].node as usize;
                let hit = self.reqs[r as usize].hit;
                self.cache_insert(r, i);
                let q = &mut self.reqs[r as usize];
                if q.ttft.is_none() {
                    q.ttft = Some(now - q.arrival);
                    q.first_hit = hit;
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

    pub(super) fn complete(&mut self, r: u32) -> Result<(), ReplayError> {
        if self.reqs[r as usize].phase == Phase::Done {
            return Err(invariant(self.now, format!("request {r} completed twice")));
        }
        self.end_first(r, Fate::Completed);
        if self.moves_idle_state() {
            self.state_goes_idle(r);
        }
        self.leave_decode(r);
        let i = self.reqs[r as usize].node as usize;
        let aux = self.reqs[r as usize].aux;
        self.release_aux(r);
        self.release_primary(r);
        // Its blocks join the cache once its KV is no longer counted as running.
        self.cache_leave(r);
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
}
