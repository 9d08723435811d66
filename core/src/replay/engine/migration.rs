//! Planned migration: the periodic checks, the checks before known ends (the oracle's, an
//! announced end's drain), and the moves themselves (transfer, recompute, overlap, cut-over).

use super::forecast::{expected_total, live_loads, LiveLoads};
use super::*;

impl Sim<'_> {
    // ----- planned migration -------------------------------------------------------------

    pub(super) fn on_tick(&mut self, policy: &mut dyn Policy) -> Result<(), ReplayError> {
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
        if self.moves_idle_state() {
            self.check_idle_states();
        }
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
    pub(super) fn schedule_end_check(&mut self, r: u32) {
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
            Phase::Prefill | Phase::Stall => {
                if self.prefill_end_at_least(r) < end_i.saturating_sub(ORACLE_EPSILON_US) {
                    return;
                }
                now
            }
            _ => return,
        };
        let t = t.max(now);
        self.schedule(t, Event::EndCheck { req: r, epoch });
    }

    /// When request `r`'s prefill ends at the earliest: its scheduled end, or for a stalled
    /// one (iteration model) the stall's end plus the least time its prefill can take there
    /// ([`StepCoefficients::min_prefill_s`]).
    fn prefill_end_at_least(&self, r: u32) -> i64 {
        let q = &self.reqs[r as usize];
        match (q.phase, self.steps.get(q.node as usize).copied().flatten()) {
            (Phase::Stall, Some(c)) => q
                .phase_end
                .saturating_add(secs_to_us(c.min_prefill_s(q.pf_tokens))),
            _ => q.phase_end,
        }
    }

    /// The least seconds a prefill of `tokens` takes on node `j` alone: `tokens / p_j` under
    /// the simple model, the step model's time alone under the iteration model.
    pub(super) fn prefill_floor_s(&self, j: usize, tokens: f64) -> f64 {
        match self.steps.get(j).copied().flatten() {
            Some(c) => c.min_prefill_s(tokens),
            None => secs(tokens, self.cluster.nodes[j].spec.prefill_tok_s),
        }
    }

    pub(super) fn on_end_check(&mut self, policy: &mut dyn Policy, r: u32) {
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
            Phase::Prefill | Phase::Stall => {
                if self.prefill_end_at_least(r) < end_i.saturating_sub(ORACLE_EPSILON_US) {
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
    pub(super) fn drain_check(&mut self, policy: &mut dyn Policy, r: u32, i: usize, end_i: i64) {
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
        // The context a move takes is the one generated up to now (`execute_move` admits it).
        let ctx = self.context_now(r);
        match choice {
            Some(j) if j != i && j < self.nodes.len() && self.can_start_with(r, j, ctx) => {
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
    pub(super) fn place_elsewhere(
        &mut self,
        policy: &mut dyn Policy,
        r: u32,
        i: usize,
    ) -> Option<NodeIdx> {
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
        let record = self.recording();
        let choice = {
            let fs = TraceForesight {
                ends: &self.known_ends,
                now: self.now,
                next_turn: NO_FORESIGHT,
            };
            let loads = live_loads!(self);
            let view = ClusterView::new(&self.scratch_views)
                .with_foresight(&fs)
                .with_loads(&loads)
                .with_active(&self.up_list);
            self.recorder
                .place(record, view, &rv, policy, &mut self.expl)
        };
        self.log_decision(false);
        choice
    }

    /// Schedules request `r`'s end check at `t`, superseding any pending one.
    pub(super) fn recheck_at(&mut self, r: u32, t: i64) {
        let q = &mut self.reqs[r as usize];
        q.chk_epoch = q.chk_epoch.wrapping_add(1);
        let epoch = q.chk_epoch;
        self.schedule(t, Event::EndCheck { req: r, epoch });
    }

    /// A prefill that would not finish before its node's known end restarts on the node the
    /// policy picks with that node hidden, if the prefill fits before the new node's own end
    /// (so the check cannot ping-pong); it counts as a planned move (recompute).
    pub(super) fn replace_prefill(&mut self, policy: &mut dyn Policy, r: u32, i: usize) {
        let choice = self.place_elsewhere(policy, r, i);
        let ctx = {
            let q = &self.reqs[r as usize];
            q.prompt.saturating_add(q.done_tokens())
        };
        let fits = |s: &Self, j: usize| {
            let dur = secs_to_us(s.prefill_floor_s(j, ctx as f64));
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

    pub(super) fn check_one(&mut self, policy: &mut dyn Policy, r: u32) {
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
                    recovering: false,
                    conversation: q.conversation,
                },
                q.node as usize,
            )
        };
        self.stats.migration_checks += 1;
        // A move's destination must admit the request (a free slot), and the source prices
        // the fallback: the check visits the free nodes and the source, in index order.
        let record = self.recording();
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
                next_turn: NO_FORESIGHT,
            };
            let loads = live_loads!(self);
            let mut view = ClusterView::new(&self.views)
                .with_loads(&loads)
                .with_active(&active);
            if self.drains {
                view = view.with_foresight(&fs);
            }
            self.recorder
                .check(record, view, &rv, from, policy, &mut self.expl)
        };
        self.scratch_active = active;
        self.log_decision(false);
        if let Some(j) = choice {
            self.execute_move(r, from, j);
        }
    }

    pub(super) fn execute_move(&mut self, r: u32, i: usize, j: usize) {
        let c_planned = self.expl.c_planned;
        let method = self.expl.method.unwrap_or(MoveMethod::Recompute);
        let window = self.expl.window_s;
        // The context moved is the one generated up to now: admission checks it. (A request
        // that stays decoding is not settled: settling restates its progress from now, which
        // its forecast reads with a different rounding than the end the engine scheduled.)
        let ctx = self.context_now(r);
        if j == i
            || j >= self.nodes.len()
            || !self.can_start_with(r, j, ctx)
            || !(c_planned >= 0.0 && c_planned.is_finite())
        {
            self.stats.moves_refused += 1;
            return;
        }
        let kv = self.params.kv_bytes_per_token;
        if window > 0.0 && window.is_finite() {
            // Overlapped: reserve the destination, keep decoding on the source for W. The bulk
            // is accounted when the move completes at the cut-over.
            let sched = self.acquire(r, j);
            let now = self.now;
            let q = &mut self.reqs[r as usize];
            q.aux = j as u32;
            q.aux_kind = Aux::Dest;
            q.sched_aux = sched;
            q.mv_done0 = ctx.saturating_sub(q.prompt);
            q.mv_epoch = q.mv_epoch.wrapping_add(1);
            q.cutover_at = now.saturating_add(secs_to_us(window));
            let epoch = q.mv_epoch;
            let at = q.cutover_at;
            self.touch(i);
            self.touch(j);
            self.schedule(at, Event::Cutover { req: r, epoch });
            return;
        }
        self.settle(r);
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
    pub(super) fn move_cost(
        &self,
        tokens: u64,
        i: usize,
        j: usize,
    ) -> crate::policy::migration::PlannedCost {
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
    pub(super) fn cut_over(&mut self, r: u32, i: usize, j: usize, cut: Cut, reserved: bool) {
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
        // A move reads nothing from the destination's cache: the source's blocks are released
        // (after a recompute has released its slot there).
        self.cache_leave(r);
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.node = j as u32;
        q.sched_primary = dest_sched;
        q.planned += 1;
        q.stints += 1;
        q.last_node = j as u32;
        // A recompute of nothing (an overlapped move whose window generated no token) is a
        // pause like any other: there is no prefill to serve.
        if method == MoveMethod::Recompute && tokens > 0 && self.steps[j].is_some() {
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

    /// Whether destination `j` of request `r`'s overlapped move admits `ctx` tokens of
    /// context at the cut-over, beside everything else on `j` (its own reservation freed).
    /// The simple model reserves the estimate-based need at the decision, which the context
    /// never outgrows.
    fn cutover_fits(&self, r: u32, j: usize, ctx: u64) -> bool {
        if self.steps[j].is_none() {
            return true;
        }
        let q = &self.reqs[r as usize];
        let others = self
            .kv_blocks_used(j)
            .saturating_sub(Self::dest_reservation_blocks(q));
        KvBlocks::of(self.cluster.nodes[j].spec.kv_capacity_tokens).admits(others, ctx as f64)
    }

    /// An overlapped move's cut-over: the tokens generated on the source during the window
    /// follow the bulk (by the cheaper of transfer and recompute) when the destination still
    /// admits the grown context; otherwise the move is abandoned, the reservation freed, and
    /// the request goes on decoding where it is (its end check rescheduled, since none runs
    /// while a move is under way).
    pub(super) fn on_cutover(&mut self, r: u32, epoch: u32) {
        let q = &self.reqs[r as usize];
        if q.mv_epoch != epoch || q.phase != Phase::Decode || q.aux_kind != Aux::Dest {
            self.stats.stale_events += 1;
            return;
        }
        let (i, j) = (q.node as usize, q.aux as usize);
        let ctx = self.context_now(r);
        if !self.cutover_fits(r, j, ctx) {
            self.stats.moves_refused += 1;
            self.release_aux(r);
            let q = &mut self.reqs[r as usize];
            q.mv_epoch = q.mv_epoch.wrapping_add(1);
            self.touch(i);
            self.drain_fifo(j);
            if self.drains {
                self.schedule_end_check(r);
            }
            return;
        }
        self.settle(r);
        let (bulk_tokens, g) = {
            let q = &self.reqs[r as usize];
            let bulk = q.prompt.saturating_add(q.mv_done0);
            (bulk, q.done_tokens().saturating_sub(q.mv_done0))
        };
        let bulk = self.move_cost(bulk_tokens, i, j);
        let catch = self.move_cost(g, i, j);
        self.leave_decode(r);
        {
            let kv = self.params.kv_bytes_per_token;
            let q = &mut self.reqs[r as usize];
            for (method, tokens) in [(bulk.method, bulk_tokens), (catch.method, g)] {
                match method {
                    MoveMethod::Transfer => q.kv_bytes += tokens as f64 * kv,
                    MoveMethod::Recompute => {
                        q.rec_planned = q.rec_planned.saturating_add(tokens);
                    }
                }
            }
        }
        let cut = Cut {
            method: catch.method,
            cost_s: catch.cost_s,
            tokens: g,
        };
        self.cut_over(r, i, j, cut, true);
    }
}
