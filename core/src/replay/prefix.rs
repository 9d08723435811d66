//! Prefix caching: each request's prompt prefix as content-addressed blocks, and a node's
//! cache of them, after vLLM's automatic prefix caching.
//!
//! # What a prefix is
//!
//! A trace names a request's prompt as an ordered list of block ids, each standing for
//! `block_tokens` tokens (Mooncake's `hash_ids`: 512; Qwen-Bailian's: 16): two requests whose
//! lists agree on their first `k` ids share their first `k x block_tokens` prompt tokens. The
//! last block may be partial. [`Prefix`] keeps that list; a run turns it into chained keys
//! ([`chain_keys`]): block `k`'s key hashes block `k - 1`'s key with its own id, as vLLM's
//! block hash covers its parent's, so a key stands for the whole prefix up to its block.
//!
//! # The cache ([`PrefixCache`], one per node, the iteration engine only)
//!
//! * **Content-addressed, reference-counted blocks.** A key is cached at most once; a request
//!   holding it counts one reference.
//! * **A block hits only if every block before it hits**: a lookup walks a request's keys
//!   from the first and stops at the first miss ([`PrefixCache::matched`]).
//! * **LRU of unreferenced blocks.** A block whose last reference is released is stamped with
//!   the release time and can be evicted, least recently used first; as in vLLM, a released
//!   request's blocks are stamped tail first, so a prefix is evicted from its end and what
//!   stays cached is a prefix. A referenced block is never evicted.
//! * **Only free KV.** Unreferenced blocks occupy the node's KV that running requests do not
//!   use: the engine evicts them ([`PrefixCache::evict_to`]) whenever running requests' blocks
//!   plus the unreferenced ones would exceed the node's blocks, so the cache never delays an
//!   admission and never causes a preemption. A referenced block is counted in its holders'
//!   contexts (each running request counts its whole context, as before caching; blocks two
//!   running requests share are counted in both, which errs towards less room for the cache).
//! * **A node's end destroys its cache** ([`PrefixCache::destroy`], counted by the engine).
//!
//! The engine's use of it (when a request looks up, pins, inserts and releases) is in
//! [`crate::replay::engine`]'s serving model.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use crate::policy::iteration::KvBlocks;

/// One request's prompt prefix: the trace's block ids in order, each of `block_tokens`
/// tokens (the last may be partial).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Prefix {
    /// Tokens per block (the source's block size; 0 with no blocks).
    pub block_tokens: u32,
    /// Block ids, first to last.
    pub blocks: Vec<u64>,
}

impl Prefix {
    /// A prefix of `blocks` ids of `block_tokens` tokens each.
    pub fn new(block_tokens: u32, blocks: Vec<u64>) -> Prefix {
        Prefix {
            block_tokens,
            blocks,
        }
    }

    /// No blocks.
    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }

    /// Whether the blocks fit a prompt of `prompt` tokens: every block but the last full, the
    /// last holding at least one token (`(n - 1) x block_tokens < prompt`), and a block size
    /// when there are blocks.
    pub fn fits(&self, prompt: u64) -> bool {
        let n = self.blocks.len() as u64;
        n == 0
            || (self.block_tokens > 0
                && (n - 1).saturating_mul(u64::from(self.block_tokens)) < prompt)
    }
}

/// Conversations as a trace's prefix blocks reveal them, for a trace that names none (the
/// Mooncake traces): in arrival order (`arrivals`, ties by position), a request continues the
/// latest earlier request that shares at least its first two blocks with it, the most blocks
/// first (a later turn's prompt repeats its conversation's history; the first block alone is
/// a shared system prompt on the Mooncake conversation trace), and belongs to that request's
/// conversation; a request that continues none starts one. Each conversation is keyed by the
/// position of its first request. Requests without blocks belong to none.
pub fn infer_conversations(arrivals: &[i64], prefixes: &[Prefix]) -> Vec<Option<u64>> {
    let n = arrivals.len().min(prefixes.len());
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&k| (arrivals[k], k));
    let mut owner: HashMap<u64, usize> = HashMap::new();
    let mut out = vec![None; arrivals.len()];
    let mut keys = Vec::new();
    for k in order {
        keys.clear();
        chain_keys(&prefixes[k], 0, &mut keys);
        if keys.is_empty() {
            continue;
        }
        let parent = (2..=keys.len())
            .rev()
            .find_map(|m| owner.get(&keys[m - 1]).copied());
        out[k] = Some(match parent {
            Some(p) => out[p].unwrap_or(p as u64),
            None => k as u64,
        });
        for key in keys.iter().skip(1) {
            owner.insert(*key, k);
        }
    }
    out
}

/// SplitMix64's finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The chained keys of `prefix`'s blocks for loop copy `copy` of the workload (each copy's
/// prompts are new content, so copies never share a block): `key_0 = h(salt, id_0)`,
/// `key_k = h(key_(k-1), id_k)`, appended to `out`.
pub fn chain_keys(prefix: &Prefix, copy: u32, out: &mut Vec<u64>) {
    let mut key = mix(u64::from(copy).wrapping_add(0x9E37_79B9_7F4A_7C15));
    for &id in &prefix.blocks {
        key = mix(key ^ mix(id.wrapping_add(0xD1B5_4A32_D192_ED03)));
        out.push(key);
    }
}

/// The prompt tokens a request with `prompt` tokens and `block_tokens`-token blocks reads from
/// `hits` cached leading blocks: `min(hits x block_tokens, prompt - 1)` (the last prompt token
/// is always computed, as vLLM does to produce the first output token), 0 for an empty prompt.
pub fn hit_tokens(hits: usize, block_tokens: u32, prompt: u64) -> u64 {
    (hits as u64)
        .saturating_mul(u64::from(block_tokens))
        .min(prompt.saturating_sub(1))
}

/// The hasher of block keys: a key is already a SplitMix64 output ([`chain_keys`]), so it is
/// its own hash.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) ^ u64::from(b) ^ (self.0 >> 56);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// A map keyed by block keys.
type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<KeyHasher>>;

/// One cached block.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Requests holding it.
    refs: u32,
    /// The LRU stamp of its last release (meaningful while `refs == 0`).
    stamp: u64,
    /// KV blocks of 16 tokens it occupies.
    kv_blocks: u32,
    /// Tokens it stands for.
    tokens: u32,
}

/// A node's prefix cache (see the module documentation).
#[derive(Debug, Clone, Default)]
pub struct PrefixCache {
    entries: KeyMap<Entry>,
    /// The eviction order: `(stamp, key)` of each release, oldest first (stamps only grow, so
    /// the queue is sorted). An element is live while its key is cached unreferenced with
    /// that stamp; a reference or a later release leaves it stale, skipped when popped and
    /// dropped when the queue is compacted ([`PrefixCache::enqueue`]): the live elements are
    /// the unreferenced blocks in stamp order, without a tree's insert and remove.
    lru: VecDeque<(u64, u64)>,
    /// KV blocks of the unreferenced entries.
    free_kv_blocks: u64,
    /// Tokens of every entry.
    tokens: u64,
    next_stamp: u64,
}

/// What one eviction or destruction removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removed {
    /// Blocks removed.
    pub blocks: u64,
    /// Tokens they stood for.
    pub tokens: u64,
}

impl PrefixCache {
    /// An empty cache.
    pub fn new() -> PrefixCache {
        PrefixCache::default()
    }

    /// Cached blocks.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Nothing cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Tokens of every cached block.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// KV blocks of the unreferenced cached blocks (what the cache takes of the free KV).
    pub fn unreferenced_kv_blocks(&self) -> u64 {
        self.free_kv_blocks
    }

    /// Whether `key` is cached, and its references.
    pub fn refs(&self, key: u64) -> Option<u32> {
        self.entries.get(&key).map(|e| e.refs)
    }

    /// How many of `keys`' leading blocks are cached (a block hits only if every block
    /// before it hits).
    ///
    /// The cache holds a prefix of every chain it holds a block of: a request references
    /// its leading blocks only, a release stamps a prefix's tail older than its head, and a
    /// copy inserts its blocks the same way, so LRU evicts a block's successors before it (and
    /// a referenced block's predecessors are referenced). So the count is found by binary
    /// search for the first block not cached (a property test holds it to the walk from the
    /// first block under any sequence of pins, inserts, releases and evictions).
    pub fn matched(&self, keys: &[u64]) -> usize {
        keys.partition_point(|k| self.entries.contains_key(k))
    }

    /// [`PrefixCache::matched`] by walking from the first block (the definition).
    pub fn matched_walk(&self, keys: &[u64]) -> usize {
        keys.iter()
            .take_while(|k| self.entries.contains_key(k))
            .count()
    }

    /// [`PrefixCache::matched`], and a reference on each matched block (taken off the LRU).
    pub fn pin(&mut self, keys: &[u64]) -> usize {
        let n = self.matched(keys);
        for k in &keys[..n] {
            self.reference(*k);
        }
        n
    }

    fn reference(&mut self, key: u64) {
        if let Some(e) = self.entries.get_mut(&key) {
            if e.refs == 0 {
                self.free_kv_blocks -= u64::from(e.kv_blocks);
            }
            e.refs += 1;
        }
    }

    /// Caches `keys[from..]` (a request's blocks after its prefill, `from` the blocks it
    /// already holds), each referenced once more; block `k` stands for `tokens(k)` tokens.
    pub fn insert_held(&mut self, keys: &[u64], from: usize, tokens: impl Fn(usize) -> u32) {
        for (k, &key) in keys.iter().enumerate().skip(from) {
            match self.entries.entry(key) {
                std::collections::hash_map::Entry::Occupied(_) => self.reference(key),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let t = tokens(k);
                    slot.insert(Entry {
                        refs: 1,
                        stamp: 0,
                        kv_blocks: KvBlocks::blocks(f64::from(t)) as u32,
                        tokens: t,
                    });
                    self.tokens += u64::from(t);
                }
            }
        }
    }

    /// Caches `keys` unreferenced and most recently used (a copy from another node's cache,
    /// last block first as a release stamps them); a block already cached keeps its
    /// references and is stamped anew when unreferenced.
    pub fn insert_unreferenced(&mut self, keys: &[u64], tokens: impl Fn(usize) -> u32) {
        for (k, &key) in keys.iter().enumerate().rev() {
            let stamp = self.next_stamp;
            self.next_stamp += 1;
            match self.entries.get_mut(&key) {
                Some(e) if e.refs == 0 => {
                    e.stamp = stamp;
                    self.enqueue(stamp, key);
                }
                Some(_) => {}
                None => {
                    let t = tokens(k);
                    let kv_blocks = KvBlocks::blocks(f64::from(t)) as u32;
                    self.entries.insert(
                        key,
                        Entry {
                            refs: 0,
                            stamp,
                            kv_blocks,
                            tokens: t,
                        },
                    );
                    self.enqueue(stamp, key);
                    self.free_kv_blocks += u64::from(kv_blocks);
                    self.tokens += u64::from(t);
                }
            }
        }
    }

    /// Releases one reference on each of `keys` (a request leaving the node), last block
    /// first: a block left unreferenced joins the LRU, the tail of a prefix older than its
    /// head (evicted first, as vLLM frees a request's blocks in reverse).
    pub fn release(&mut self, keys: &[u64]) {
        for &key in keys.iter().rev() {
            if let Some(e) = self.entries.get_mut(&key) {
                if e.refs == 0 {
                    continue;
                }
                e.refs -= 1;
                if e.refs == 0 {
                    let stamp = self.next_stamp;
                    e.stamp = stamp;
                    self.next_stamp += 1;
                    self.free_kv_blocks += u64::from(e.kv_blocks);
                    self.enqueue(stamp, key);
                }
            }
        }
    }

    /// Evicts unreferenced blocks, least recently used first, until they take at most
    /// `room` KV blocks.
    pub fn evict_to(&mut self, room: u64) -> Removed {
        let mut out = Removed::default();
        while self.free_kv_blocks > room {
            let Some((stamp, key)) = self.lru.pop_front() else {
                break;
            };
            if !self.is_live(stamp, key) {
                continue;
            }
            if let Some(e) = self.entries.remove(&key) {
                self.free_kv_blocks -= u64::from(e.kv_blocks);
                self.tokens -= u64::from(e.tokens);
                out.blocks += 1;
                out.tokens += u64::from(e.tokens);
            }
        }
        out
    }

    /// Whether the queue element `(stamp, key)` stands for a cached unreferenced block.
    #[inline]
    fn is_live(&self, stamp: u64, key: u64) -> bool {
        self.entries
            .get(&key)
            .is_some_and(|e| e.refs == 0 && e.stamp == stamp)
    }

    /// Appends a release to the eviction order; drops the stale elements when they outnumber
    /// the cached blocks (amortised O(1) per release).
    fn enqueue(&mut self, stamp: u64, key: u64) {
        self.lru.push_back((stamp, key));
        if self.lru.len() > 2 * self.entries.len() + 64 {
            let entries = &self.entries;
            self.lru
                .retain(|&(s, k)| entries.get(&k).is_some_and(|e| e.refs == 0 && e.stamp == s));
        }
    }

    /// Empties the cache (the node's end): every block, referenced or not.
    pub fn destroy(&mut self) -> Removed {
        let out = Removed {
            blocks: self.entries.len() as u64,
            tokens: self.tokens,
        };
        *self = PrefixCache {
            next_stamp: self.next_stamp,
            ..PrefixCache::default()
        };
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(ids: &[u64]) -> Vec<u64> {
        let mut out = Vec::new();
        chain_keys(&Prefix::new(16, ids.to_vec()), 0, &mut out);
        out
    }

    fn cached(c: &mut PrefixCache, k: &[u64]) {
        let held = c.pin(k);
        c.insert_held(k, held, |_| 16);
        c.release(k);
    }

    #[test]
    fn a_block_never_hits_without_its_predecessor() {
        let mut c = PrefixCache::new();
        cached(&mut c, &keys(&[1, 2, 3]));
        assert_eq!(c.matched(&keys(&[1, 2, 3, 4])), 3);
        // The same ids after a different first block are different content.
        assert_eq!(c.matched(&keys(&[9, 2, 3])), 0);
        assert_eq!(c.matched(&keys(&[1, 9, 3])), 1);
        // Evictions take a prefix's tail first, so what stays hits from the first block.
        c.evict_to(2);
        assert_eq!(c.matched(&keys(&[1, 2, 3])), 2);
        assert_eq!(c.matched_walk(&keys(&[1, 2, 3])), 2);
    }

    #[test]
    fn lru_evicts_the_least_recently_used_unreferenced_block_and_never_a_referenced_one() {
        let mut c = PrefixCache::new();
        let a = keys(&[1]);
        let b = keys(&[2]);
        let d = keys(&[3]);
        cached(&mut c, &a); // released first: least recently used
        cached(&mut c, &b);
        // `d` is held by a running request.
        c.insert_held(&d, 0, |_| 16);
        assert_eq!(c.unreferenced_kv_blocks(), 2);
        let gone = c.evict_to(1);
        assert_eq!(gone.blocks, 1);
        assert_eq!(c.matched(&a), 0, "the least recently used went first");
        assert_eq!(c.matched(&b), 1);
        let gone = c.evict_to(0);
        assert_eq!(gone.blocks, 1);
        assert_eq!(c.matched(&d), 1, "a referenced block is never evicted");
        assert_eq!(c.refs(d[0]), Some(1));
        // A hit takes a block off the LRU: it is then safe until released again.
        cached(&mut c, &a);
        assert_eq!(c.pin(&a), 1);
        assert_eq!(c.evict_to(0).blocks, 0);
        c.release(&a);
        assert_eq!(c.evict_to(0).blocks, 1);
    }

    #[test]
    fn a_released_prefix_is_evicted_from_its_tail() {
        let mut c = PrefixCache::new();
        let k = keys(&[1, 2, 3, 4]);
        cached(&mut c, &k);
        c.evict_to(2);
        assert_eq!(c.matched(&k), 2, "the head stays cached");
    }

    #[test]
    fn references_count_every_holder() {
        let mut c = PrefixCache::new();
        let k = keys(&[1, 2]);
        c.insert_held(&k, 0, |_| 16);
        assert_eq!(c.pin(&k), 2);
        assert_eq!(c.refs(k[1]), Some(2));
        c.release(&k);
        assert_eq!(c.evict_to(0).blocks, 0, "still held once");
        c.release(&k);
        assert_eq!(c.evict_to(0).blocks, 2);
        assert!(c.is_empty());
        assert_eq!(c.tokens(), 0);
    }

    #[test]
    fn destroy_removes_everything_and_counts_it() {
        let mut c = PrefixCache::new();
        let k = keys(&[1, 2, 3]);
        c.insert_held(&k, 0, |i| if i == 2 { 5 } else { 16 });
        let gone = c.destroy();
        assert_eq!(
            gone,
            Removed {
                blocks: 3,
                tokens: 37
            }
        );
        assert_eq!(c.matched(&k), 0);
        assert_eq!(c.unreferenced_kv_blocks(), 0);
    }

    #[test]
    fn large_blocks_take_their_kv_in_16_token_blocks() {
        let mut c = PrefixCache::new();
        let k = keys(&[7]);
        c.insert_held(&k, 0, |_| 512);
        c.release(&k);
        assert_eq!(c.unreferenced_kv_blocks(), 32);
    }

    #[test]
    fn hits_leave_the_last_prompt_token_to_compute() {
        assert_eq!(hit_tokens(2, 512, 1024), 1023);
        assert_eq!(hit_tokens(1, 512, 1024), 512);
        assert_eq!(hit_tokens(3, 16, 0), 0);
        assert!(Prefix::new(512, vec![1, 2]).fits(513));
        assert!(!Prefix::new(512, vec![1, 2]).fits(512));
        assert!(!Prefix::new(0, vec![1]).fits(512));
        assert!(Prefix::default().fits(0));
    }

    #[test]
    fn conversations_follow_the_longest_shared_prefix() {
        let p = |ids: &[u64]| Prefix::new(16, ids.to_vec());
        let prefixes = [
            p(&[0, 1, 2]),          // a conversation
            p(&[0, 5, 6]),          // another: shares only the system block
            p(&[0, 1, 2, 3, 4]),    // continues the first
            p(&[0, 5, 6, 7]),       // continues the second
            p(&[0, 1, 2, 3, 4, 8]), // continues the third, so the first conversation
            p(&[]),
            p(&[9]),
        ];
        let arrivals = [0, 1, 2, 3, 4, 5, 6];
        let got = infer_conversations(&arrivals, &prefixes);
        assert_eq!(
            got,
            [Some(0), Some(1), Some(0), Some(1), Some(0), None, Some(6)]
        );
        // Arrival order, not file order, decides who continues whom.
        let got = infer_conversations(&[5, 0], &[p(&[0, 1, 2, 3]), p(&[0, 1, 2])]);
        assert_eq!(got, [Some(1), Some(1)]);
    }

    use proptest::prelude::*;

    proptest! {
        /// Under any sequence of operations on chains that share heads, the cache holds a
        /// prefix of every chain, so the binary search is the walk.
        #[test]
        fn the_cache_holds_a_prefix_of_every_chain(
            ops in prop::collection::vec((0u8..5, 0usize..6, 1usize..12, 0u64..40), 1..200),
        ) {
            // Six chains: 0-2 share their first three blocks, 3-5 their first block.
            let chains: Vec<Vec<u64>> = (0..6u64)
                .map(|c| {
                    let ids: Vec<u64> = (0..12u64)
                        .map(|b| if b < 3 && c < 3 || b < 1 { b } else { 100 * (c + 1) + b })
                        .collect();
                    keys(&ids)
                })
                .collect();
            let mut cache = PrefixCache::new();
            let mut held: Vec<(usize, usize)> = Vec::new();
            for (op, c, n, room) in ops {
                let k = &chains[c][..n];
                match op {
                    0 => {
                        let h = cache.pin(k);
                        cache.insert_held(k, h, |_| 16);
                        held.push((c, n));
                    }
                    1 => {
                        if let Some((c, n)) = held.pop() {
                            cache.release(&chains[c][..n]);
                        }
                    }
                    2 => {
                        let h = cache.pin(k);
                        held.push((c, h));
                    }
                    3 => cache.insert_unreferenced(k, |_| 16),
                    _ => {
                        cache.evict_to(room);
                    }
                }
                for chain in &chains {
                    prop_assert_eq!(cache.matched(chain), cache.matched_walk(chain));
                }
            }
        }
    }

    #[test]
    fn loop_copies_share_nothing() {
        let p = Prefix::new(16, vec![1, 2]);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        chain_keys(&p, 0, &mut a);
        chain_keys(&p, 1, &mut b);
        assert!(a.iter().all(|k| !b.contains(k)));
    }
}
