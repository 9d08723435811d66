//! Validation of the engine's invariants after every event, and the run's records.

use super::*;

impl Sim<'_> {
    // ----- validation and output ---------------------------------------------------------

    pub(super) fn check(&self) -> Result<(), ReplayError> {
        let t = self.now;
        if let Some(m) = self.forecast_mismatch.borrow().as_ref() {
            return Err(invariant(t, m.clone()));
        }
        if !self
            .up_list
            .iter()
            .copied()
            .eq((0..self.nodes.len()).filter(|&i| self.nodes[i].up))
        {
            return Err(invariant(t, "the up list differs from the up nodes"));
        }
        if !self
            .free_list
            .iter()
            .copied()
            .eq((0..self.nodes.len()).filter(|&i| {
                self.nodes[i].up && self.nodes[i].slots_used < self.cluster.nodes[i].spec.slots
            }))
        {
            return Err(invariant(
                t,
                "the free list differs from the up nodes with a free slot",
            ));
        }
        for (i, st) in self.nodes.iter().enumerate() {
            let spec = &self.cluster.nodes[i].spec;
            if st.slots_used > spec.slots {
                return Err(invariant(t, format!("node {i}: slots exceeded")));
            }
            if self.steps[i].is_none() && st.kv_true > spec.kv_capacity_tokens {
                return Err(invariant(t, format!("node {i}: KV capacity exceeded")));
            }
            // Under the iteration model a decoder may hold one block beyond the capacity until
            // the overflow is handled later in the same microsecond.
            if self.steps[i].is_some()
                && st.up
                && self.kv_blocks_used(i)
                    > KvBlocks::of(spec.kv_capacity_tokens).capacity + u64::from(st.decoding)
            {
                return Err(invariant(t, format!("node {i}: KV blocks exceeded")));
            }
            if st.residents.len() != st.slots_used as usize {
                return Err(invariant(t, format!("node {i}: slot count mismatch")));
            }
            if !st.up && (st.slots_used != 0 || !st.fifo.is_empty() || st.kv_true != 0) {
                return Err(invariant(t, format!("node {i}: down but holding requests")));
            }
            let mut kv = 0u64;
            let mut sched = 0u64;
            let mut decoding = 0u32;
            for &r in &st.residents {
                let q = &self.reqs[r as usize];
                kv += q.need;
                if q.node == i as u32 {
                    sched += q.sched_primary;
                    if !matches!(
                        q.phase,
                        Phase::Prefill | Phase::Decode | Phase::Moving | Phase::Stall
                    ) {
                        return Err(invariant(
                            t,
                            format!("request {r} on node {i} in {:?}", q.phase),
                        ));
                    }
                    if q.phase == Phase::Decode {
                        decoding += 1;
                    }
                } else if q.aux == i as u32 && q.aux_kind != Aux::None {
                    sched += q.sched_aux;
                } else {
                    return Err(invariant(t, format!("request {r} listed on node {i}")));
                }
            }
            if kv != st.kv_true || sched != st.kv_sched || decoding != st.decoding {
                return Err(invariant(t, format!("node {i}: ledger mismatch")));
            }
            for &r in &st.fifo {
                let q = &self.reqs[r as usize];
                if q.phase != Phase::Queued || q.node != i as u32 {
                    return Err(invariant(
                        t,
                        format!("request {r} queued on node {i} wrongly"),
                    ));
                }
            }
        }
        for (r, q) in self.reqs.iter().enumerate() {
            if matches!(
                q.phase,
                Phase::Prefill | Phase::Decode | Phase::Moving | Phase::Stall
            ) {
                let up = self.nodes.get(q.node as usize).is_some_and(|s| s.up);
                let listed = up && self.nodes[q.node as usize].residents.contains(&(r as u32));
                if !listed {
                    return Err(invariant(
                        t,
                        format!("request {r} runs on a down or foreign node"),
                    ));
                }
            }
            if !(q.done >= 0.0 && q.done <= q.output as f64) {
                return Err(invariant(t, format!("request {r}: progress out of range")));
            }
        }
        Ok(())
    }

    pub(super) fn records(&mut self) -> Vec<RequestRecord> {
        let start = self.start;
        let end = self.end;
        let mut out = Vec::with_capacity(self.reqs.len());
        for r in 0..self.reqs.len() {
            self.settle(r as u32);
            let j = &self.jobs[r];
            let q = &self.reqs[r];
            let completion_s = q.finish.map(|f| (f - q.arrival) as f64 / US_PER_S);
            let slo_met = completion_s.is_some_and(|c| c <= q.deadline_s);
            let recovery_us = q.recovery_us
                + (i128::from(q.unrecovered) * i128::from(end) - q.unrecovered_sum_us);
            out.push(RequestRecord {
                request: r as u64,
                id: j.id,
                copy: j.copy,
                arrival_s: (q.arrival - start) as f64 / US_PER_S,
                prompt_tokens: q.prompt,
                output_tokens: q.output,
                est_output_tokens: j.est_output_tokens,
                first_node: (q.first_node != NONE).then_some(q.first_node),
                final_node: (q.last_node != NONE).then_some(q.last_node),
                nodes_visited: q.stints,
                ttft_s: q.ttft.map(|t| t as f64 / US_PER_S),
                completion_s,
                generated_tokens: q.done_tokens(),
                recomputed_unplanned_tokens: q.rec_unplanned,
                recomputed_planned_tokens: q.rec_planned,
                kv_bytes_moved: q.kv_bytes,
                interruptions: q.interruptions,
                kv_preemptions: q.kv_preemptions,
                planned_migrations: q.planned,
                slo_deadline_s: q.deadline_s,
                slo_met,
                dropped: (q.phase != Phase::Done).then_some(DropReason::WindowEnd),
                recovery_s: recovery_us as f64 / US_PER_S,
                interruption_causes: q.causes.iter().map(|c| c.to_string()).collect(),
                forecast_t_s: (q.placed_at != NEVER && !q.forecast_t.is_nan())
                    .then_some(q.forecast_t),
                forecast_p_interrupt: (q.placed_at != NEVER && !q.forecast_p.is_nan())
                    .then_some(q.forecast_p),
                served_s: match q.finish {
                    Some(f)
                        if q.first_fate == Fate::Completed
                            && q.placements == 1
                            && q.interruptions == 0
                            && q.planned == 0 =>
                    {
                        Some((f - q.placed_at) as f64 / US_PER_S)
                    }
                    _ => None,
                },
                first_placement_lost: match q.first_fate {
                    Fate::Lost => Some(true),
                    Fate::Completed => Some(false),
                    Fate::Open | Fate::Censored => None,
                },
                prefix_hit_tokens: q.first_hit,
            });
        }
        out
    }
}
