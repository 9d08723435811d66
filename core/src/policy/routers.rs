//! The routers a user of prefix caching compares with: `cache-aware` (SGLang's router) and
//! `session-affinity` (vLLM production-stack's session router). Like the routers they copy,
//! they send a request to any up node that could ever hold it, full or not (the node queues
//! it), and price nothing: the replay places them in one pass over every up node
//! ([`super::PolicyKind::routes_all`]).
//!
//! A node's load is what a router counts: the requests it sent there that have not finished,
//! here the node's running and queued requests ([`in_flight`]).

use super::model::{ClusterView, NodeIdx, NodeView, RequestView};

/// `cache-aware`'s match-rate threshold: the SGLang router's command-line default
/// `--cache-threshold 0.3` (`sgl-router/src/main.rs`, `router_args.py`).
pub const CACHE_THRESHOLD: f64 = 0.3;

/// `cache-aware`'s absolute load-imbalance threshold (`--balance-abs-threshold 64`).
pub const BALANCE_ABS_THRESHOLD: u32 = 64;

/// `cache-aware`'s relative load-imbalance threshold (`--balance-rel-threshold 1.5`).
pub const BALANCE_REL_THRESHOLD: f64 = 1.5;

/// The requests a router has in flight on node `n`: running and queued there.
#[inline]
pub fn in_flight(n: &NodeView<'_>) -> u32 {
    n.slots_used.saturating_add(n.queued)
}

/// Whether a router may send a request needing `need` tokens of KV to node `n`: up, with a
/// slot, and KV that could ever hold it (a full node queues it).
#[inline]
pub fn routable(n: &NodeView<'_>, need: u64) -> bool {
    n.up && n.slots > 0 && need <= n.kv_capacity_tokens
}

/// The routable node with the fewest requests in flight, the first on ties (the SGLang
/// router's "shortest queue" and production-stack's lowest-load fallback).
fn least_in_flight(view: &ClusterView<'_>, need: u64) -> Option<NodeIdx> {
    view.candidates()
        .filter(|(_, n)| routable(n, need))
        .min_by_key(|&(i, n)| (in_flight(n), i))
        .map(|(i, _)| i)
}

/// `cache-aware`, the SGLang router's rule (`sgl-router/src/policies/cache_aware.rs`):
///
/// 1. **Load imbalance guard.** With `max` and `min` the most and fewest requests in flight
///    on a routable node, if `max - min > 64` and `max > 1.5 min`, the request goes to the
///    node with the fewest.
/// 2. Otherwise the **match rate** of each node is the share of the request's prompt tokens
///    its prefix cache holds ([`NodeView::cached_tokens`]; SGLang's counts characters of its
///    own tree of routed text); if the best rate exceeds 0.3, the request goes to the node
///    with it (the first on ties).
/// 3. Otherwise it goes to the node whose cache holds the fewest tokens (SGLang's smallest
///    tree: the most room to cache), the fewest in flight among equals, then the first.
///
/// The defaults are the router's command-line ones. The cache it reads is the node's own (a
/// router whose tree mirrors each node's cache, as later versions of the router keep); a node
/// whose end destroyed its cache reads empty (SGLang drops a removed worker's tree).
pub fn cache_aware(view: &ClusterView<'_>, req: &RequestView) -> Option<NodeIdx> {
    let need = req.kv_need();
    let (mut lo, mut hi) = (u32::MAX, 0u32);
    let mut any = false;
    for (_, n) in view.candidates().filter(|(_, n)| routable(n, need)) {
        let l = in_flight(n);
        lo = lo.min(l);
        hi = hi.max(l);
        any = true;
    }
    if !any {
        return None;
    }
    if hi - lo > BALANCE_ABS_THRESHOLD && f64::from(hi) > f64::from(lo) * BALANCE_REL_THRESHOLD {
        return least_in_flight(view, need);
    }
    let prompt = req.prompt_tokens.max(1) as f64;
    let mut best: Option<(NodeIdx, u64)> = None;
    for (i, n) in view.candidates().filter(|(_, n)| routable(n, need)) {
        if best.is_none_or(|(_, c)| n.cached_tokens > c) {
            best = Some((i, n.cached_tokens));
        }
    }
    match best {
        Some((i, c)) if c as f64 / prompt > CACHE_THRESHOLD => Some(i),
        _ => view
            .candidates()
            .filter(|(_, n)| routable(n, need))
            .min_by_key(|&(i, n)| (n.cache_tokens, in_flight(n), i))
            .map(|(i, _)| i),
    }
}

/// SplitMix64's finaliser.
#[inline]
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The weight of node `i` for key `key` in rendezvous hashing.
#[inline]
fn weight(key: u64, i: NodeIdx) -> u64 {
    mix(key ^ mix(i as u64 ^ 0xA076_1D64_78BD_642F))
}

/// `session-affinity`, vLLM production-stack's session router
/// (`src/vllm_router/routers/routing_logic.py`, `SessionRouter`): a request of a conversation
/// goes to the node its conversation id hashes to among the routable up nodes, so that every
/// turn of a conversation lands on the same node while it is up, and a node's arrival or
/// departure moves only the conversations that hash to it. Production-stack keeps a hash ring
/// (`uhashring`, 160 virtual nodes per endpoint) updated to the live endpoints; this is
/// rendezvous hashing (Thaler and Ravishankar, 1998: each key goes to the node of highest
/// weight `h(key, node)`), which has the same property without a ring to rebuild when a node
/// comes or goes. A request without a conversation id goes to the node with the fewest
/// requests in flight (production-stack's fallback: the lowest request rate).
pub fn session_affinity(view: &ClusterView<'_>, req: &RequestView) -> Option<NodeIdx> {
    let need = req.kv_need();
    let Some(key) = req.conversation else {
        return least_in_flight(view, need);
    };
    view.candidates()
        .filter(|(_, n)| routable(n, need))
        .max_by_key(|&(i, _)| (weight(key, i), std::cmp::Reverse(i)))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::survival::curve::Exponential;

    fn curve() -> Exponential {
        Exponential { mean: 1e9 }
    }

    /// (slots used, queued, cached tokens of the request, tokens cached in all) per node.
    fn nodes<'c>(c: &'c Exponential, spec: &[(u32, u32, u64, u64)]) -> Vec<NodeView<'c>> {
        spec.iter()
            .map(|&(used, queued, cached, all)| NodeView {
                slots: 200,
                slots_used: used,
                queued,
                cached_tokens: cached,
                cache_tokens: all,
                ..NodeView::new(c)
            })
            .collect()
    }

    #[test]
    fn cache_aware_follows_the_best_match_above_the_threshold() {
        let c = curve();
        let req = RequestView::new(1, 1000, 10);
        // 40 % cached on node 1: above 0.3.
        let v = nodes(&c, &[(3, 0, 100, 50), (5, 0, 400, 900), (0, 0, 0, 10)]);
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(1));
        // 25 % at best: below, so the smallest cache (node 2).
        let v = nodes(&c, &[(3, 0, 100, 50), (5, 0, 250, 900), (0, 0, 0, 10)]);
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(2));
        // Exactly 0.3 is not above it.
        let v = nodes(&c, &[(3, 0, 300, 50), (5, 0, 0, 900), (0, 0, 0, 60)]);
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(0));
    }

    #[test]
    fn cache_aware_balances_when_loads_differ_by_both_thresholds() {
        let c = curve();
        let req = RequestView::new(1, 1000, 10);
        // 100 vs 30 in flight: 70 > 64 and 100 > 45: the least loaded, whatever it caches.
        let v = nodes(&c, &[(90, 10, 900, 0), (30, 0, 0, 0)]);
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(1));
        // 100 vs 40: 60 is not above 64: the cache wins.
        let v = nodes(&c, &[(90, 10, 900, 0), (40, 0, 0, 0)]);
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(0));
        // 200 vs 135: 65 > 64 but 200 < 1.5 x 135: the cache wins.
        let v = nodes(&c, &[(150, 50, 900, 0), (135, 0, 0, 0)]);
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(0));
    }

    #[test]
    fn cache_aware_skips_down_and_too_small_nodes() {
        let c = curve();
        let req = RequestView::new(1, 1000, 10);
        let mut v = nodes(&c, &[(0, 0, 900, 0), (0, 0, 800, 0), (0, 0, 700, 0)]);
        v[0].up = false;
        v[1].kv_capacity_tokens = 500;
        assert_eq!(cache_aware(&ClusterView::new(&v), &req), Some(2));
    }

    #[test]
    fn session_affinity_keeps_a_conversation_on_its_node_and_moves_only_a_lost_nodes_keys() {
        let c = curve();
        let v = nodes(&c, &[(0, 0, 0, 0); 8]);
        let place = |v: &[NodeView<'_>], key: u64| {
            let req = RequestView {
                conversation: Some(key),
                ..RequestView::new(1, 100, 10)
            };
            session_affinity(&ClusterView::new(v), &req).expect("a node")
        };
        let before: Vec<usize> = (0..2000).map(|k| place(&v, k)).collect();
        // Every node gets some conversations.
        for i in 0..8 {
            let n = before.iter().filter(|&&x| x == i).count();
            assert!((150..=350).contains(&n), "node {i}: {n} of 2000");
        }
        // A full node still gets its conversations (it queues them).
        let mut full = v.clone();
        full[3].slots_used = 200;
        assert!((0..2000).all(|k| place(&full, k) == before[k as usize]));
        // Node 3 goes down: only its conversations move.
        let mut down = v.clone();
        down[3].up = false;
        for (k, &was) in before.iter().enumerate() {
            let now = place(&down, k as u64);
            if was == 3 {
                assert_ne!(now, 3);
            } else {
                assert_eq!(now, was, "conversation {k} moved off a live node");
            }
        }
        // Without a conversation: the fewest in flight.
        let mut busy = v.clone();
        for (i, n) in busy.iter_mut().enumerate() {
            n.slots_used = 10 - i as u32;
        }
        let req = RequestView::new(1, 100, 10);
        assert_eq!(session_affinity(&ClusterView::new(&busy), &req), Some(7));
    }
}
