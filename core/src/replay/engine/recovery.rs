//! Availability: a node's end loses the KV of every request it holds; its queue is placed
//! again; a node coming up drains the pending requests.

use super::*;

impl Sim<'_> {
    // ----- availability ------------------------------------------------------------------

    /// Unplanned loss of request `r`'s KV: streamed tokens kept, slots released, marked for
    /// recovery.
    pub(super) fn lose(&mut self, r: u32, cause: &Arc<str>) {
        self.end_first(r, Fate::Lost);
        self.leave_decode(r);
        self.release_aux(r);
        self.release_primary(r);
        let now = self.now;
        let q = &mut self.reqs[r as usize];
        q.done = service::floor(q.done);
        q.interruptions += 1;
        q.causes.push(Arc::clone(cause));
        q.unrecovered += 1;
        q.unrecovered_sum_us += i128::from(now);
        q.chk_epoch = q.chk_epoch.wrapping_add(1);
        q.epoch = q.epoch.wrapping_add(1);
        q.mv_epoch = q.mv_epoch.wrapping_add(1);
        q.recovering = true;
        q.phase = Phase::Pending;
    }

    pub(super) fn on_node_down(
        &mut self,
        policy: &mut dyn Policy,
        n: u32,
    ) -> Result<(), ReplayError> {
        let i = n as usize;
        if !self.nodes[i].up {
            return Err(invariant(self.now, format!("node {n} went down twice")));
        }
        self.stats.node_failures += 1;
        let cluster = self.cluster;
        let cause = cluster.nodes[i]
            .sessions
            .get(self.nodes[i].sess)
            .map_or_else(|| Arc::from(""), |s| Arc::clone(&s.end_cause));
        self.nodes[i].up = false;
        self.cache_destroy(i);
        if let Ok(k) = self.up_list.binary_search(&i) {
            self.up_list.remove(k);
        }
        self.sync_free(i);
        self.stale_down.push(i);
        self.touch(i);
        self.known_ends[i] = i64::MIN;
        self.views_dirty = true;
        let mut lost = std::mem::take(&mut self.lost);
        let mut requeue = std::mem::take(&mut self.requeue);
        lost.clear();
        requeue.clear();
        // Requests holding the node.
        while let Some(&r) = self.nodes[i].residents.last() {
            let (node, aux, kind) = {
                let q = &self.reqs[r as usize];
                (q.node, q.aux, q.aux_kind)
            };
            if node == n || (aux == n && kind == Aux::Source) {
                self.lose(r, &cause);
                lost.push(r);
            } else if aux == n && kind == Aux::Dest {
                self.release_aux(r);
                let q = &mut self.reqs[r as usize];
                q.mv_epoch = q.mv_epoch.wrapping_add(1);
            } else {
                return Err(invariant(
                    self.now,
                    format!("request {r} listed on node {n} without holding it"),
                ));
            }
        }
        // Requests queued on the node.
        self.touch(i);
        while let Some(r) = self.nodes[i].fifo.pop_front() {
            self.end_first(r, Fate::Lost);
            let q = &mut self.reqs[r as usize];
            q.phase = Phase::Pending;
            q.node = NONE;
            requeue.push(r);
        }
        self.nodes[i].queued_work_s = 0.0;
        // Next session.
        self.nodes[i].sess += 1;
        if let Some(s) = self.cluster.nodes[i].sessions.get(self.nodes[i].sess) {
            let t = s.start_us;
            self.schedule(t, Event::NodeUp(n));
        }
        // Other nodes may have freed slots (released sources or reservations).
        for k in 0..self.up_list.len() {
            let m = self.up_list[k];
            if !self.nodes[m].fifo.is_empty() {
                self.drain_fifo(m);
            }
        }
        for &r in &lost {
            self.place(policy, r);
        }
        for &r in &requeue {
            self.place(policy, r);
        }
        self.lost = lost;
        self.requeue = requeue;
        Ok(())
    }

    pub(super) fn on_node_up(
        &mut self,
        policy: &mut dyn Policy,
        n: u32,
    ) -> Result<(), ReplayError> {
        let i = n as usize;
        if self.nodes[i].up {
            return Err(invariant(self.now, format!("node {n} came up twice")));
        }
        let cluster = self.cluster;
        let s = match cluster.nodes[i].sessions.get(self.nodes[i].sess) {
            Some(s) => s,
            None => return Err(invariant(self.now, format!("node {n} up without session"))),
        };
        self.touch(i);
        if let Err(k) = self.up_list.binary_search(&i) {
            self.up_list.insert(k, i);
        }
        let st = &mut self.nodes[i];
        st.up = true;
        st.session_start = s.start_us;
        st.entry_s = entry_of(s);
        self.sync_free(i);
        self.known_ends[i] = known_end_of(s, self.oracle);
        self.views_dirty = true;
        if self.oracle && !self.idle.is_empty() && self.moves_idle_state() {
            // A doomed idle state may now have somewhere to go.
            self.oracle_idle_moves();
        }
        if !s.end_censored() {
            self.schedule(s.end_us, Event::NodeDown(n));
        }
        // Retry the pending queue, in order.
        std::mem::swap(&mut self.pending, &mut self.pending_spare);
        while let Some(r) = self.pending_spare.pop_front() {
            self.place(policy, r);
        }
        Ok(())
    }
}
