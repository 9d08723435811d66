//! Prefix caching in the engine ([`crate::replay::prefix`]): what a placement sees of each
//! node's cache, when a request pins, inserts and releases blocks, eviction to the node's free
//! KV, and a node's end destroying its cache.
//!
//! * **Placement.** Each candidate node's view says how many of the request's prompt tokens
//!   its cache holds ([`NodeView::cached_tokens`], the leading cached blocks,
//!   [`crate::replay::prefix::hit_tokens`]); the policies' `T_i` prefills the rest. The
//!   request joining a node (starting or queued there) pins those blocks (a reference each)
//!   for its whole stay: every prefill it does there (the first, and again after a KV
//!   preemption) computes its context less them, as the forecast prices it.
//! * **Insertion.** When its first prefill on the node ends, its other prompt blocks are
//!   cached and held too.
//! * **Release.** When it leaves the node (completion, a planned move, a drain), its blocks
//!   are released, tail first, and stay cached until evicted.
//! * **Eviction.** Before each placement's lookup, each release of KV and after each
//!   admission, the unreferenced blocks are evicted, least recently used first, down to the
//!   KV the node's running requests leave free ([`Sim::kv_blocks_used`]): their blocks only
//!   grow between those moments, so the cache never holds KV a running request needs.
//! * **A node's end** destroys its cache, counted in [`RunStats::cache_destroyed_tokens`];
//!   requests that held blocks there hold nothing (the cache's epoch changed).
//!
//! Planned moves do not read the destination's cache (a move's cost is the transfer or the
//! recompute of its whole context), and a moved request caches nothing there. A prefill that
//! an announced end drains restarts on its new node like a placement and reads its cache.
//! A queued request's pinned blocks are not counted in its node's KV until it starts (they
//! are part of the context it is about to hold; a KV-preempted request keeps them).

use crate::replay::prefix::hit_tokens;

use super::*;

impl Sim<'_> {
    /// Request `r`'s prefix keys (empty without prefix caching).
    #[inline]
    fn prefix_keys(&self, r: u32) -> &[u64] {
        let (start, len) = self.reqs[r as usize].keys;
        let (start, len) = (start as usize, len as usize);
        self.keys.get(start..start + len).unwrap_or(&[])
    }

    /// Whether node `i` keeps a prefix cache (the iteration engine's nodes, a run with
    /// prefixes).
    #[inline]
    fn node_caches(&self, i: usize) -> bool {
        !self.keys.is_empty() && self.steps.get(i).is_some_and(Option::is_some)
    }

    /// Evicts node `i`'s unreferenced cached blocks down to the KV its running requests leave
    /// free now.
    pub(super) fn cache_evict(&mut self, i: usize) {
        if !self.node_caches(i) || self.nodes[i].cache.unreferenced_kv_blocks() == 0 {
            return;
        }
        let blocks = KvBlocks::of(self.cluster.nodes[i].spec.kv_capacity_tokens).capacity;
        // Each holder's blocks are at most `need / 16 + 2` (its prompt and every output token,
        // rounded up, and the block of its next token): a cache that fits beside that bound
        // has nothing to evict, without summing the holders.
        let st = &self.nodes[i];
        let bound =
            KvBlocks::blocks(st.kv_true as f64).saturating_add(2 * st.residents.len() as u64);
        if st.cache.unreferenced_kv_blocks().saturating_add(bound) <= blocks {
            return;
        }
        let room = blocks.saturating_sub(self.kv_blocks_used(i));
        let gone = self.nodes[i].cache.evict_to(room);
        self.stats.cache_evicted_tokens += gone.tokens;
    }

    /// The prompt tokens of request `r` node `i`'s cache holds now (0 where it keeps none).
    fn cached_on(&self, r: u32, i: usize) -> u64 {
        if !self.node_caches(i) {
            return 0;
        }
        let keys = self.prefix_keys(r);
        if keys.is_empty() {
            return 0;
        }
        let q = &self.reqs[r as usize];
        hit_tokens(self.nodes[i].cache.matched(keys), q.block_tokens, q.prompt)
    }

    /// Sets, in `views`, each of the `nodes`' prompt tokens of request `r` held in its cache
    /// (evicting first, so that the view is the cache as it is now); returns whether any
    /// view was set (to be cleared after the decision, [`Sim::clear_cached_views`]).
    pub(super) fn set_cached_views(&mut self, r: u32, nodes: &[usize], scratch: bool) -> bool {
        if self.keys.is_empty() || self.prefix_keys(r).is_empty() {
            return false;
        }
        for &i in nodes {
            self.cache_evict(i);
            let got = self.cached_on(r, i);
            let views = if scratch {
                &mut self.scratch_views
            } else {
                &mut self.views
            };
            views[i].cached_tokens = got;
        }
        true
    }

    /// Clears what [`Sim::set_cached_views`] set.
    pub(super) fn clear_cached_views(&mut self, nodes: &[usize]) {
        for &i in nodes {
            self.views[i].cached_tokens = 0;
        }
    }

    /// Request `r` joins node `i` (starts or queues there): it pins the node's cached leading
    /// blocks of its prefix for its stay, and saves their prompt tokens in every prefill
    /// there.
    pub(super) fn cache_join(&mut self, r: u32, i: usize) {
        let q = &self.reqs[r as usize];
        if q.cache_node == i as u32 && q.cache_epoch == self.nodes[i].cache_epoch {
            return;
        }
        self.cache_leave(r);
        if !self.node_caches(i) || self.prefix_keys(r).is_empty() {
            return;
        }
        self.cache_evict(i);
        let (start, len) = self.reqs[r as usize].keys;
        let keys = &self.keys[start as usize..(start + len) as usize];
        let st = &mut self.nodes[i];
        let held = st.cache.pin(keys);
        let epoch = st.cache_epoch;
        let q = &mut self.reqs[r as usize];
        q.cache_node = i as u32;
        q.cache_epoch = epoch;
        q.held = held as u32;
        q.hit = hit_tokens(held, q.block_tokens, q.prompt);
        self.touch(i);
    }

    /// Request `r` leaves the node whose cache it holds: its blocks are released (tail
    /// first) and stay cached, unless that node's end destroyed them.
    pub(super) fn cache_leave(&mut self, r: u32) {
        let (node, epoch, held) = {
            let q = &self.reqs[r as usize];
            (q.cache_node, q.cache_epoch, q.held)
        };
        if node == NONE {
            return;
        }
        let i = node as usize;
        if self.nodes[i].cache_epoch == epoch && held > 0 {
            self.cache_evict(i);
            let (start, _) = self.reqs[r as usize].keys;
            let keys = &self.keys[start as usize..(start + held) as usize];
            self.nodes[i].cache.release(keys);
            self.touch(i);
        }
        let q = &mut self.reqs[r as usize];
        q.cache_node = NONE;
        q.held = 0;
        q.hit = 0;
    }

    /// Request `r`'s prefill on node `i` ended: every block of its prefix is cached there
    /// and held by it.
    pub(super) fn cache_insert(&mut self, r: u32, i: usize) {
        let (node, epoch, held, (start, len), bt, prompt) = {
            let q = &self.reqs[r as usize];
            (
                q.cache_node,
                q.cache_epoch,
                q.held,
                q.keys,
                q.block_tokens,
                q.prompt,
            )
        };
        if node != i as u32 || self.nodes[i].cache_epoch != epoch || held >= len {
            return;
        }
        let keys = &self.keys[start as usize..(start + len) as usize];
        let bt64 = u64::from(bt);
        // Block `k` holds the prompt's tokens from `k * bt`: `bt`, or the rest for the last.
        let tokens = |k: usize| (prompt.saturating_sub(k as u64 * bt64)).min(bt64).max(1) as u32;
        self.nodes[i].cache.insert_held(keys, held as usize, tokens);
        self.reqs[r as usize].held = len;
        self.touch(i);
    }

    /// Node `i`'s end: its cache is destroyed (counted); the requests that held blocks there
    /// hold none (they are re-placed by the node's end).
    pub(super) fn cache_destroy(&mut self, i: usize) {
        let st = &mut self.nodes[i];
        // The epoch changes even for an empty cache: a request that joined it holds nothing.
        st.cache_epoch = st.cache_epoch.wrapping_add(1);
        if st.cache.is_empty() {
            return;
        }
        let gone = st.cache.destroy();
        self.stats.cache_destroyed_tokens += gone.tokens;
        self.stats.cache_destroyed_blocks += gone.blocks;
    }

    /// The tokens request `r` prefills on node `i` for a context of `ctx` tokens: the context
    /// less the prompt tokens it reads from that node's cache.
    #[inline]
    pub(super) fn uncached(&self, r: u32, i: usize, ctx: u64) -> u64 {
        let q = &self.reqs[r as usize];
        if q.cache_node == i as u32 && self.nodes[i].cache_epoch == q.cache_epoch {
            ctx.saturating_sub(q.hit)
        } else {
            ctx
        }
    }
}
