//! Idle state: a conversation's cached prompt blocks between its turns, and their pre-emptive
//! migration off a risky node.
//!
//! When a turn of a conversation completes, its prompt blocks stay cached on its node
//! ([`super::prefix`]): the conversation's *idle state*, until its next turn arrives. At each
//! migration check ([`Params::check_interval_s`]) of a policy that migrates, with
//! [`Params::idle_migration`], each idle state is offered the design's Decision 2 rule, risk
//! removal with hysteresis, with the retained-state term's risk ([`crate::policy::retained`]):
//!
//! `rho_x(e) = sum_{c: g_c > e} (m / 16) / S_G(e) * (1 - S_x(g_c - e | a_x))`
//!
//! the chance that node `x` ends before the next turn arrives, given that it has not arrived
//! `e` seconds after the idle turn's arrival (`S_G(e) = 1 - (m / 16) #{c: g_c <= e}`), and
//! the state is copied from `i` to the destination `j`, of the four safest up nodes (the
//! least chance of ending over the gap's cells), the one of least `rho_j` other than `i` with
//! room for the state, when
//!
//! `C_re (rho_i(e) - rho_j(e)) > h`
//!
//! (`C_re` the re-prefill of the idle prompt at the fallback, [`crate::policy::retained`];
//! `h` the hysteresis). Decision 2 weighs a running request's move against its cost to that
//! request (`C_planned`, `dT`); an idle copy stalls no request, so both are 0 here and the
//! trigger is the risk it removes alone. Looking only at the four safest nodes bounds the work
//! per state (this product's choice, not a published rule). The copy is a KV transfer, `O_t + tokens kv / min(B_i, B_j)`, that
//! stalls no request (the design's `dT` is 0): when it completes, the blocks still cached on
//! `i` are cached on `j` as well, unreferenced and most recently used; a source or destination
//! lost meanwhile, or blocks evicted meanwhile, fail it. A conversation's state moves at most
//! [`Params::max_hops`] times. The next turn's placement then sees its blocks on `j`
//! ([`NodeView::cached_tokens`]).
//!
//! The cost-based policies that migrate do this at each check. The oracle, which knows every
//! node's end and every conversation's next turn ([`Req::next_turn`]), has no checks: when a
//! state goes idle on a node that ends before its next turn arrives, and when a node comes up
//! while such a state waits, it copies the state, if its re-prefill exceeds the hysteresis, to
//! the up node with room whose session lasts longest, when that session outlasts the next
//! turn's arrival (`rho_i = 1`, `rho_j = 0`: the same trigger with the risks known).

use std::collections::HashMap;

use crate::policy::cost::RiskModel;
use crate::policy::retained::{reprefill_s, ReuseGap, GAP_CELLS};
use crate::survival::curve::{ConditionalSurvival, Exponential};

use super::*;

/// `rho_x(e)` of the module documentation for a node whose conditional survival is `survive`.
pub(super) fn idle_risk(gap: &ReuseGap, elapsed_s: f64, survive: impl Fn(f64) -> f64) -> f64 {
    let w = gap.mass / GAP_CELLS as f64;
    let past = gap.cells.iter().filter(|&&g| g <= elapsed_s).count() as f64;
    let still = 1.0 - w * past;
    if !(still > 0.0) {
        return 0.0;
    }
    gap.cells
        .iter()
        .filter(|&&g| g > elapsed_s)
        .map(|&g| w / still * (1.0 - survive(g - elapsed_s)))
        .sum()
}

impl Sim<'_> {
    /// Whether the run moves idle state (see the module documentation).
    pub(super) fn moves_idle_state(&self) -> bool {
        self.idle_migration && self.reuse.is_some()
    }

    /// The oracle's idle moves (module documentation): every waiting state whose node ends
    /// before its next turn, and that is not being copied, is copied where it survives until
    /// then; a state with nowhere to go waits for a node to come up. The states the oracle
    /// keeps are only those doomed ones.
    pub(super) fn oracle_idle_moves(&mut self) {
        let mut convs: Vec<u64> = self.idle.keys().copied().collect();
        convs.sort_unstable();
        let fastest = self.up_fallbacks();
        for c in convs {
            let st = self.idle[&c];
            let i = st.node as usize;
            let next = self.reqs[st.req as usize].next_turn;
            let end_i = self.known_ends[i];
            let doomed = self.nodes[i].up
                && self.nodes[i].cache_epoch == st.epoch
                && next != i64::MAX
                && end_i < next;
            if !doomed || st.hops >= self.params.max_hops {
                self.idle.remove(&c);
                continue;
            }
            let tokens = idle_tokens(&self.reqs[st.req as usize], st.blocks);
            let c_re = reprefill_s(tokens, self.fallback_prefill(i, &fastest));
            if st.moving_to != NONE || !(c_re > self.params.hysteresis_s) {
                continue;
            }
            let blocks = KvBlocks::blocks(tokens as f64);
            let best = self
                .up_list
                .iter()
                .copied()
                .filter(|&j| {
                    j != i
                        && self.steps[j].is_some()
                        && self.known_ends[j] >= next
                        && self.cache_room(j) >= blocks
                })
                .max_by(|&a, &b| self.known_ends[a].cmp(&self.known_ends[b]).then(b.cmp(&a)));
            if let Some(j) = best {
                self.start_state_copy(c, j);
            }
        }
    }

    /// Request `r` completed: its conversation's idle state is its blocks on its node (the
    /// oracle keeps it only when the node ends before the next turn, and moves it at once).
    pub(super) fn state_goes_idle(&mut self, r: u32) {
        let q = &self.reqs[r as usize];
        let (Some(c), node) = (q.conversation, q.cache_node) else {
            return;
        };
        if node == NONE || q.held == 0 {
            return;
        }
        let idle = Idle {
            node,
            epoch: q.cache_epoch,
            req: r,
            arrival: q.arrival,
            blocks: q.held,
            hops: 0,
            moving_to: NONE,
            copies: 0,
        };
        self.idle.insert(c, idle);
        if self.oracle {
            self.oracle_idle_moves();
        }
    }

    /// A turn of request `r`'s conversation arrived: its state is in use again.
    pub(super) fn state_in_use(&mut self, r: u32) {
        if let Some(c) = self.reqs[r as usize].conversation {
            self.idle.remove(&c);
        }
    }

    /// `S_x(t | a_x)` of node `x` under the run's risk model; 0 from its announced end on.
    fn node_survival(&self, x: usize, t: f64) -> f64 {
        let end = self.known_ends[x];
        if end != UpSession::OPEN_END && self.now.saturating_add(secs_to_us(t)) >= end {
            return 0.0;
        }
        let v = &self.views[x];
        match self.risk {
            RiskModel::Memoryless => {
                Exponential::from_rate(v.exp_rate_per_s).conditional(v.age_s, t)
            }
            _ => v.survival.conditional(v.age_s, t),
        }
    }

    /// The migration check of every idle state (at a tick; the oracle has none).
    pub(super) fn check_idle_states(&mut self) {
        let Some(gap) = self.reuse else {
            return;
        };
        if self.oracle {
            return;
        }
        if self.idle.is_empty() {
            return;
        }
        self.refresh_views();
        let gap: ReuseGap = gap;
        // The four safest up nodes: least chance of ending over the gap's cells.
        // The four safest up nodes, computed when a state first needs a destination.
        let mut safest: Option<Vec<(f64, usize)>> = None;
        let mut moves: Vec<(u64, usize)> = Vec::new();
        let last_gap = gap.cells[GAP_CELLS - 1];
        // Forget the states a node's end destroyed and those past the last gap's cell (no
        // next turn is expected any more).
        let now = self.now;
        let nodes = &self.nodes;
        self.idle.retain(|_, st| {
            let n = &nodes[st.node as usize];
            n.up && n.cache_epoch == st.epoch && ((now - st.arrival) as f64 / US_PER_S) < last_gap
        });
        // Per node, an upper bound of any idle state's risk there: `rho_i(e) <= 1 -
        // S_i(g_16 | a_i)` (the chance it ends before the last cell's gap), so that a state
        // whose re-prefill times it cannot exceed the hysteresis is not priced.
        let mut bound: HashMap<usize, f64> = HashMap::new();
        let fastest = self.up_fallbacks();
        let mut convs: Vec<u64> = self.idle.keys().copied().collect();
        convs.sort_unstable();
        for c in convs {
            let st = self.idle[&c];
            let i = st.node as usize;
            if st.moving_to != NONE || st.hops >= self.params.max_hops {
                continue;
            }
            let most = *bound
                .entry(i)
                .or_insert_with(|| 1.0 - self.node_survival(i, last_gap));
            let tokens = idle_tokens(&self.reqs[st.req as usize], st.blocks);
            let c_re = reprefill_s(tokens, self.fallback_prefill(i, &fastest));
            if !(c_re * most > self.params.hysteresis_s) {
                continue;
            }
            let e = (self.now - st.arrival) as f64 / US_PER_S;
            let rho_i = idle_risk(&gap, e, |t| self.node_survival(i, t));
            if !(c_re * rho_i > self.params.hysteresis_s) {
                continue;
            }
            let blocks = KvBlocks::blocks(tokens as f64);
            let safest = safest.get_or_insert_with(|| self.safest_nodes(&gap));
            let best = safest
                .iter()
                .filter(|&&(_, j)| j != i && self.cache_room(j) >= blocks)
                .map(|&(_, j)| (idle_risk(&gap, e, |t| self.node_survival(j, t)), j))
                .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            if let Some((rho_j, j)) = best {
                if c_re * (rho_i - rho_j) > self.params.hysteresis_s {
                    moves.push((c, j));
                }
            }
        }
        for (c, j) in moves {
            self.start_state_copy(c, j);
        }
    }

    /// The four safest up nodes (least chance of ending over the gap's cells), safest first.
    fn safest_nodes(&self, gap: &ReuseGap) -> Vec<(f64, usize)> {
        let mut safest: Vec<(f64, usize)> = self
            .up_list
            .iter()
            .filter(|&&j| self.steps[j].is_some())
            .map(|&j| {
                let risk: f64 = gap
                    .cells
                    .iter()
                    .map(|&g| 1.0 - self.node_survival(j, g))
                    .sum();
                (risk, j)
            })
            .collect();
        safest.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        safest.truncate(4);
        safest
    }

    /// The up nodes' two fastest prefill rates, for [`Sim::fallback_prefill`].
    fn up_fallbacks(&self) -> crate::policy::cost::Fallbacks {
        let mut fastest = crate::policy::cost::Fallbacks::default();
        for &j in &self.up_list {
            fastest.push(j, self.cluster.nodes[j].spec.prefill_tok_s);
        }
        fastest
    }

    /// The fastest prefill rate of an up node other than `i` (its own without one), from the
    /// up nodes' two fastest (`fastest`).
    fn fallback_prefill(&self, i: usize, fastest: &crate::policy::cost::Fallbacks) -> f64 {
        fastest.for_node(i, self.cluster.nodes[i].spec.prefill_tok_s)
    }

    /// KV blocks node `j`'s running requests leave free.
    fn cache_room(&self, j: usize) -> u64 {
        KvBlocks::of(self.cluster.nodes[j].spec.kv_capacity_tokens)
            .capacity
            .saturating_sub(self.kv_blocks_used(j))
    }

    /// Starts copying conversation `c`'s idle state to node `j`.
    fn start_state_copy(&mut self, c: u64, j: usize) {
        let Some(st) = self.idle.get_mut(&c) else {
            return;
        };
        let i = st.node as usize;
        st.moving_to = j as u32;
        st.copies = st.copies.wrapping_add(1);
        let copy = st.copies;
        let tokens = idle_tokens(&self.reqs[st.req as usize], st.blocks) as f64;
        let bw = self.cluster.nodes[i]
            .spec
            .bandwidth_bytes_s
            .min(self.cluster.nodes[j].spec.bandwidth_bytes_s);
        let secs = self.params.transfer_overhead_s.max(0.0)
            + crate::policy::cost::secs(tokens * self.params.kv_bytes_per_token, bw);
        let at = self.now.saturating_add(secs_to_us(secs));
        self.schedule(
            at,
            Event::StateCopy {
                conversation: c,
                copy,
            },
        );
    }

    /// Conversation `c`'s copy arrives: its blocks still cached on the source are cached on
    /// the destination, unless either node was lost or the next turn came meanwhile.
    pub(super) fn on_state_copy(&mut self, c: u64, copy: u32) {
        let Some(st) = self.idle.get(&c).copied() else {
            return;
        };
        if st.copies != copy {
            self.stats.stale_events += 1;
            return;
        }
        let (i, j) = (st.node as usize, st.moving_to as usize);
        if st.moving_to == NONE {
            return;
        }
        let ok = self.nodes[i].up
            && self.nodes[i].cache_epoch == st.epoch
            && self.nodes.get(j).is_some_and(|n| n.up);
        let mut keys = Vec::new();
        let q = &self.reqs[st.req as usize];
        let (start, len) = q.keys;
        let len = len.min(st.blocks);
        keys.extend_from_slice(&self.keys[start as usize..(start + len) as usize]);
        let n = if ok {
            self.nodes[i].cache.matched(&keys)
        } else {
            0
        };
        let (bt, prompt) = (q.block_tokens, q.prompt);
        if let Some(entry) = self.idle.get_mut(&c) {
            entry.moving_to = NONE;
            // A failed copy counts as a move: it is not retried past `max_hops`.
            entry.hops += u32::from(n == 0);
        }
        if n == 0 {
            self.stats.state_migrations_failed += 1;
            return;
        }
        let bt64 = u64::from(bt);
        let tokens = |k: usize| (prompt.saturating_sub(k as u64 * bt64)).min(bt64).max(1) as u32;
        self.cache_evict(j);
        self.nodes[j].cache.insert_unreferenced(&keys[..n], tokens);
        let epoch = self.nodes[j].cache_epoch;
        if let Some(entry) = self.idle.get_mut(&c) {
            entry.node = j as u32;
            entry.epoch = epoch;
            entry.hops += 1;
        }
        self.stats.state_migrations += 1;
        self.touch(j);
        self.views_dirty = true;
        self.cache_evict(j);
    }
}

/// The prompt tokens of request `q`'s first `blocks` prefix blocks (what a next turn could
/// read of its idle state).
fn idle_tokens(q: &Req, blocks: u32) -> u64 {
    (u64::from(blocks) * u64::from(q.block_tokens)).min(q.prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_risk_is_the_hand_computation() {
        // Half the turns come back, at 100 s or at 300 s (8 cells each).
        let gap = ReuseGap::from_steps(&[100.0, 300.0], &[0.75, 0.5]).expect("events");
        let s = |t: f64| (-t / 1000.0f64).exp();
        // Nothing elapsed: each cell weighs 1/32.
        let want = 0.25 * (1.0 - s(100.0)) + 0.25 * (1.0 - s(300.0));
        assert!((idle_risk(&gap, 0.0, s) - want).abs() < 1e-12);
        // 150 s elapsed without a next turn: the 100 s cells are past; S_G = 0.75, and the
        // rest weigh (1/32) / 0.75 each, 200 s away.
        let want = 0.25 / 0.75 * (1.0 - s(150.0));
        assert!((idle_risk(&gap, 150.0, s) - want).abs() < 1e-12);
        // Past every cell: no risk left.
        assert_eq!(idle_risk(&gap, 400.0, s), 0.0);
    }
}
