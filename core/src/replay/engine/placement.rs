//! The views a decision reads and placement: arrival, the two passes, admission, the node's
//! FIFO queue and its slots.

use super::forecast::{decoded_at, live_loads, LiveLoads};
use super::*;

impl Sim<'_> {
    // ----- views -------------------------------------------------------------------------

    /// Effective per-request decode rate on node `i` for a request joining `k` decoders.
    #[inline]
    pub(super) fn decode_rate(&self, i: usize, decoding_others: u32) -> f64 {
        service::decode_rate(
            self.cluster.nodes[i].spec.decode_tok_s,
            self.cfg.batch_slowdown,
            decoding_others.saturating_add(1),
        )
    }

    /// Estimated seconds until request `r` (holding node `i`) frees its slot there, from the
    /// estimate `L^_r` (never the true length).
    pub(super) fn est_remaining(&self, r: u32, i: usize) -> f64 {
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
                // A stalled request (iteration model) prefills its context after the stall.
                let prefill = if q.phase == Phase::Stall {
                    self.prefill_floor_s(i, q.pf_tokens)
                } else {
                    0.0
                };
                (q.phase_end - now).max(0) as f64 / US_PER_S
                    + prefill
                    + rem / self.decode_rate(i, self.nodes[i].decoding)
            }
        }
    }

    /// Estimated wait before a request joining node `i`'s queue starts:
    /// `(time until the first slot frees) + (queued work) / slots`.
    pub(super) fn wait_estimate(&self, i: usize) -> f64 {
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

    pub(super) fn refresh_views(&mut self) {
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
    pub(super) fn refresh_free_views(&mut self) {
        if !self.views_dirty && self.views_time == self.now {
            return;
        }
        for k in 0..self.free_list.len() {
            self.refresh_view(self.free_list[k]);
        }
    }

    /// Brings node `i`'s view up to date.
    pub(super) fn refresh_view(&mut self, i: usize) {
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
        v.queued = st.fifo.len() as u32;
        v.cache_tokens = st.cache.tokens();
        v.kv_used_tokens = st.kv_sched;
        v.decode_tok_s = rate;
        v.queue_wait_s = wait;
    }

    /// Whether the next decision's inputs are to be logged
    /// ([`crate::replay::input::ReplayConfig::decision_inputs`]).
    pub(super) fn recording(&self) -> bool {
        self.cfg.decision_inputs && self.decisions.len() < self.cfg.decision_log
    }

    pub(super) fn log_decision(&mut self, queueing: bool) {
        if self.decisions.len() < self.cfg.decision_log {
            self.decisions.push(LoggedDecision {
                time_us: self.now,
                queueing,
                explanation: self.expl.clone(),
                inputs: self.recorder.pending.take(),
            });
            if self.decisions.len() == self.cfg.decision_log {
                self.expl.record_candidates = false;
            }
        }
    }

    // ----- placement ---------------------------------------------------------------------

    pub(super) fn on_arrival(
        &mut self,
        policy: &mut dyn Policy,
        r: u32,
    ) -> Result<(), ReplayError> {
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
        if !self.idle.is_empty() {
            self.state_in_use(r);
        }
        self.place(policy, r);
        Ok(())
    }

    /// True when node `i` exists, is up and could ever hold request `r` (slots and capacity).
    pub(super) fn can_ever_hold(&self, i: usize, r: u32) -> bool {
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
    pub(super) fn can_start(&self, r: u32, i: usize) -> bool {
        self.can_start_with(r, i, self.context_now(r))
    }

    /// Request `r`'s context now: its prompt and the whole tokens generated up to now (a
    /// decoder's progress since its last settle included): what an admission holds.
    pub(super) fn context_now(&self, r: u32) -> u64 {
        let q = &self.reqs[r as usize];
        let done = if q.phase == Phase::Decode {
            decoded_at(q, self.now)
        } else {
            q.done
        };
        q.prompt.saturating_add(done as u64)
    }

    /// [`Sim::can_start`] of request `r` with `context` tokens of KV (under the iteration
    /// model; the simple one reserves the request's fixed need).
    pub(super) fn can_start_with(&self, r: u32, i: usize, context: u64) -> bool {
        let st = &self.nodes[i];
        let spec = &self.cluster.nodes[i].spec;
        let q = &self.reqs[r as usize];
        st.up
            && st.slots_used < spec.slots
            && if self.steps[i].is_some() {
                KvBlocks::of(spec.kv_capacity_tokens).admits(self.kv_blocks_used(i), context as f64)
            } else {
                st.kv_true
                    .checked_add(q.need)
                    .is_some_and(|x| x <= spec.kv_capacity_tokens)
            }
    }

    pub(super) fn place_view_request(&self, r: u32) -> RequestView {
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
            recovering: q.recovering,
            conversation: q.conversation,
        }
    }

    pub(super) fn place(&mut self, policy: &mut dyn Policy, r: u32) {
        let rv = self.place_view_request(r);
        let need = self.reqs[r as usize].need;
        self.stats.placements += 1;
        if self.routes_all {
            self.route(policy, r, &rv);
            return;
        }
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
        let free = std::mem::take(&mut self.free_list);
        let cached = self.set_cached_views(r, if mask { &active } else { &free }, false);
        self.free_list = free;
        let record = self.recording();
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now: self.now,
                next_turn: if self.oracle {
                    self.reqs[r as usize].next_turn
                } else {
                    NO_FORESIGHT
                },
            };
            let loads = live_loads!(self);
            let mut view = ClusterView::new(&self.views)
                .with_reuse(self.reuse.as_ref())
                .with_loads(&loads)
                .with_active(if mask { &active } else { &self.free_list });
            if self.drains {
                view = view.with_foresight(&fs);
            }
            self.recorder
                .place(record, view, &rv, policy, &mut self.expl)
        };
        if cached {
            let free = std::mem::take(&mut self.free_list);
            self.clear_cached_views(if mask { &active } else { &free });
            self.free_list = free;
        }
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
        let up = std::mem::take(&mut self.up_list);
        self.set_cached_views(r, &up, true);
        self.up_list = up;
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now: self.now,
                next_turn: if self.oracle {
                    self.reqs[r as usize].next_turn
                } else {
                    NO_FORESIGHT
                },
            };
            let loads = live_loads!(self);
            let mut view = ClusterView::new(&self.scratch_views)
                .with_reuse(self.reuse.as_ref())
                .with_loads(&loads)
                .with_active(&self.up_list);
            if self.drains {
                view = view.with_foresight(&fs);
            }
            self.recorder
                .place(record, view, &rv, policy, &mut self.expl)
        };
        self.log_decision(true);
        self.take_choice(r, choice);
    }

    /// Request `r` goes where the policy chose when that node can ever hold it (it starts
    /// there or joins its queue), else to the pending queue.
    fn take_choice(&mut self, r: u32, choice: Option<NodeIdx>) {
        match choice.filter(|&i| self.can_ever_hold(i, r)) {
            Some(i) => {
                self.note_placement(r);
                self.admit_or_enqueue(r, i);
            }
            None => self.make_pending(r),
        }
    }

    /// A router's placement ([`PolicyKind::routes_all`]): one pass over the true views of
    /// every up node that could ever hold the request, each with the prompt tokens its cache
    /// holds; the request starts on the node chosen if it can, else joins its queue; with no
    /// such node up it waits in the pending queue.
    fn route(&mut self, policy: &mut dyn Policy, r: u32, rv: &RequestView) {
        self.refresh_views();
        let mut active = std::mem::take(&mut self.scratch_active);
        active.clear();
        for k in 0..self.up_list.len() {
            let i = self.up_list[k];
            if self.can_ever_hold(i, r) {
                active.push(i);
            }
        }
        if active.is_empty() {
            self.scratch_active = active;
            self.make_pending(r);
            return;
        }
        let cached = self.set_cached_views(r, &active, false);
        let record = self.recording();
        let choice = {
            let loads = live_loads!(self);
            let view = ClusterView::new(&self.views)
                .with_loads(&loads)
                .with_active(&active);
            self.recorder
                .place(record, view, rv, policy, &mut self.expl)
        };
        if cached {
            self.clear_cached_views(&active);
        }
        self.scratch_active = active;
        self.log_decision(false);
        self.take_choice(r, choice);
    }

    /// Records a placement of `r` by the decision in `expl`: the first one keeps its forecast.
    pub(super) fn note_placement(&mut self, r: u32) {
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
    pub(super) fn end_first(&mut self, r: u32, fate: Fate) {
        let q = &mut self.reqs[r as usize];
        if q.placed_at != NEVER && q.first_fate == Fate::Open {
            q.first_fate = fate;
        }
    }

    pub(super) fn make_pending(&mut self, r: u32) {
        let q = &mut self.reqs[r as usize];
        q.phase = Phase::Pending;
        q.node = NONE;
        self.pending.push_back(r);
        self.stats.pending_entries += 1;
    }

    pub(super) fn admit_or_enqueue(&mut self, r: u32, i: usize) {
        self.cache_join(r, i);
        if self.nodes[i].fifo.is_empty() && self.can_start(r, i) {
            self.start_on(r, i);
            return;
        }
        let work = {
            let q = &self.reqs[r as usize];
            let spec = &self.cluster.nodes[i].spec;
            let ctx = self.uncached(r, i, q.prompt.saturating_add(q.done_tokens())) as f64;
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
    pub(super) fn drain_fifo(&mut self, i: usize) {
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
    pub(super) fn sched_need(&self, r: u32) -> u64 {
        let q = &self.reqs[r as usize];
        q.prompt.saturating_add(q.est.max(q.done_tokens()))
    }

    pub(super) fn acquire(&mut self, r: u32, i: usize) -> u64 {
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
        self.cache_evict(i);
        sched
    }

    pub(super) fn release(&mut self, r: u32, i: usize, sched: u64) {
        // The node's KV in use peaks before a release: the cache keeps only what is free.
        self.cache_evict(i);
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

    pub(super) fn release_primary(&mut self, r: u32) {
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

    pub(super) fn release_aux(&mut self, r: u32) {
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
}
