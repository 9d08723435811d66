//! Building a run's state: the requests, the nodes' timelines and views, the forecast's
//! buffers and the first events.

use super::forecast::{draw_factors, node_serving};
use super::*;

impl<'a> Sim<'a> {
    pub(super) fn new(
        cluster: &'a Cluster,
        cfg: &'a ReplayConfig,
        spec: &RunSpec,
        prepared: PreparedJobs,
        end: i64,
        kind: PolicyKind,
    ) -> Sim<'a> {
        let start = spec.window.start_us;
        let p_max = cluster.max_prefill();
        let d_max = cluster.max_decode();
        let oracle = kind == PolicyKind::Oracle;
        let PreparedJobs {
            jobs,
            est_sigma,
            keys,
            reuse,
        } = prepared;
        let reqs: Vec<Req> = jobs
            .iter()
            .map(|j| Req {
                prompt: j.prompt_tokens,
                output: j.output_tokens,
                // The clairvoyant oracle knows every true output length.
                est: if oracle {
                    j.output_tokens
                } else {
                    j.est_output_tokens
                },
                need: j.prompt_tokens.saturating_add(j.output_tokens),
                arrival: start + j.arrival_us,
                deadline_s: cfg.slo_factor
                    * (secs(j.prompt_tokens as f64, p_max) + secs(j.output_tokens as f64, d_max)),
                phase: Phase::NotArrived,
                node: NONE,
                aux: NONE,
                aux_kind: Aux::None,
                epoch: 0,
                mv_epoch: 0,
                phase_start: 0,
                phase_end: 0,
                done: 0.0,
                rate: 0.0,
                pf_left: 0.0,
                pf_seq: 0,
                adm_seq: 0,
                kv_preemptions: 0,
                pf_tokens: 0.0,
                recovering: false,
                sched_primary: 0,
                sched_aux: 0,
                queued_work: 0.0,
                mv_done0: 0,
                first_node: NONE,
                last_node: NONE,
                stints: 0,
                ttft: None,
                finish: None,
                rec_unplanned: 0,
                rec_planned: 0,
                kv_bytes: 0.0,
                interruptions: 0,
                planned: 0,
                unrecovered: 0,
                unrecovered_sum_us: 0,
                recovery_us: 0,
                causes: Vec::new(),
                chk_epoch: 0,
                cutover_at: 0,
                placed_at: NEVER,
                forecast_t: f64::NAN,
                forecast_p: f64::NAN,
                placements: 0,
                first_fate: Fate::Open,
                keys: j.prefix_keys,
                block_tokens: j.block_tokens,
                cache_node: NONE,
                cache_epoch: 0,
                held: 0,
                hit: 0,
                first_hit: 0,
                conversation: j.conversation,
                next_turn: i64::MAX,
            })
            .collect();
        let mut reqs = reqs;
        if oracle {
            let turns: Vec<(i64, Option<u64>)> =
                reqs.iter().map(|q| (q.arrival, q.conversation)).collect();
            for (q, next) in reqs.iter_mut().zip(next_turns(&turns)) {
                q.next_turn = next;
            }
        }
        let n = cluster.nodes.len();
        let n_reqs = reqs.len();
        let prefix_requests = jobs.iter().filter(|j| j.prefix_keys.1 > 0).count() as u64;
        let mut queue = EventQueue::with_capacity(2 * n + 64 + reqs.len().min(1 << 16), reqs.len());
        let mut nodes = Vec::with_capacity(n);
        let mut known_ends = Vec::with_capacity(n);
        let mut views = Vec::with_capacity(n);
        // `hazard-pooled` prices every node at the fleet's rate; every other policy that reads
        // a rate (`memoryless`) the node's own.
        let pooled_rate = (kind == PolicyKind::HazardPooled).then(|| cluster.twin_rate_per_s());
        for (i, node) in cluster.nodes.iter().enumerate() {
            let excluded =
                cfg.censored_ends == CensoredEnds::Exclude && node.censored_end_within(start, end);
            let k = if excluded {
                node.sessions.len()
            } else {
                node.session_index_after(start)
            };
            let s = node.sessions.get(k);
            let up = s.is_some_and(|s| s.start_us <= start);
            let slots = node.spec.slots;
            nodes.push(NodeState {
                up,
                sess: k,
                session_start: if up {
                    s.map_or(start, |s| s.start_us)
                } else {
                    0
                },
                entry_s: if up { s.map_or(0.0, entry_of) } else { 0.0 },
                slots_used: 0,
                kv_true: 0,
                kv_sched: 0,
                decoding: 0,
                residents: Vec::with_capacity(slots.min(4096) as usize + 1),
                fifo: VecDeque::with_capacity(8),
                queued_work_s: 0.0,
                kv_at: service::FOREVER_US,
                kv_epoch: 0,
                version: 0,
                cache: crate::replay::prefix::PrefixCache::new(),
                cache_epoch: 0,
            });
            known_ends.push(match s {
                Some(s) if up => known_end_of(s, oracle),
                _ => i64::MIN,
            });
            if let Some(s) = s {
                // A censored end never takes the node down (`CensoredEnds::StayUp`; under
                // `Exclude` a node with one in the window has no session here).
                if up {
                    if !s.end_censored() && s.end_us < end {
                        queue.push(s.end_us, Event::NodeDown(i as u32));
                    }
                } else if s.start_us < end {
                    queue.push(s.start_us, Event::NodeUp(i as u32));
                }
            }
            views.push(NodeView {
                up,
                age_s: 0.0,
                slots,
                slots_used: 0,
                kv_capacity_tokens: node.spec.kv_capacity_tokens,
                kv_used_tokens: 0,
                queue_wait_s: 0.0,
                decode_tok_s: node.spec.decode_tok_s,
                prefill_tok_s: node.spec.prefill_tok_s,
                bandwidth_bytes_s: node.spec.bandwidth_bytes_s,
                // `hazard-truth` reads the generating law (checked present by
                // `Cluster::supports`); every other policy the fitted curve.
                survival: match (&node.truth, kind == PolicyKind::HazardTruth) {
                    (Some(t), true) => &**t,
                    _ => &*node.survival,
                },
                exp_rate_per_s: pooled_rate.unwrap_or(node.exp_rate_per_s),
                cached_tokens: 0,
                queued: 0,
                cache_tokens: 0,
            });
        }
        if let Some(j) = jobs.first() {
            queue.push(start + j.arrival_us, Event::Arrival(0));
        }
        let params = spec.params;
        // The oracle checks just before each known end instead of on the tick.
        let tick_us =
            if kind.migrates() && kind != PolicyKind::Oracle && params.check_interval_s > 0.0 {
                secs_to_us(params.check_interval_s).max(1)
            } else {
                0
            };
        if tick_us > 0 && start.saturating_add(tick_us) < end {
            queue.push(start + tick_us, Event::Tick);
        }
        let steps: Vec<Option<StepCoefficients>> = cluster
            .nodes
            .iter()
            .map(|n| match cfg.engine {
                EngineKind::Simple => None,
                EngineKind::Iteration => {
                    StepCoefficients::of(n.spec.prefill_tok_s, n.spec.decode_tok_s, n.spec.step)
                }
            })
            .collect();
        let rooms: Vec<u64> = cluster
            .nodes
            .iter()
            .map(|n| match cfg.engine {
                EngineKind::Simple => n.spec.kv_capacity_tokens,
                EngineKind::Iteration => KvBlocks::of(n.spec.kv_capacity_tokens).room_tokens(),
            })
            .collect();
        let min_cap = rooms.iter().copied().min().unwrap_or(0);
        let mut expl = if cfg.decision_log > 0 {
            Explanation::recording()
        } else {
            Explanation::default()
        };
        expl.candidates
            .reserve(if cfg.decision_log > 0 { n } else { 0 });
        let nodes_up: Vec<bool> = nodes.iter().map(|s: &NodeState| s.up).collect();
        // The clairvoyant oracle knows every length: nothing to extrapolate.
        let est_sigma = if oracle { 0.0 } else { est_sigma };
        let factors = draw_factors(est_sigma, params.length_draws);
        Sim {
            cluster,
            cfg,
            params,
            oracle: kind == PolicyKind::Oracle,
            est_sigma,
            now: start,
            start,
            end,
            tick_us,
            scratch_views: views.clone(),
            views,
            known_ends,
            drains: oracle
                || cluster
                    .nodes
                    .iter()
                    .any(|n| n.sessions.iter().any(UpSession::end_announced)),
            nodes,
            reqs,
            jobs,
            queue,
            pending: VecDeque::with_capacity(16),
            pending_spare: VecDeque::with_capacity(16),
            lost: Vec::with_capacity(64),
            requeue: Vec::with_capacity(64),
            checks: Vec::with_capacity(256),
            expl,
            decisions: Vec::with_capacity(cfg.decision_log.min(1 << 16)),
            recorder: Default::default(),
            stats: RunStats {
                prefix_requests,
                ..RunStats::default()
            },
            views_time: i64::MIN,
            views_dirty: true,
            up_list: (0..n).filter(|&i| nodes_up[i]).collect(),
            stale_down: (0..n).filter(|&i| !nodes_up[i]).collect(),
            free_list: (0..n)
                .filter(|&i| nodes_up[i] && cluster.nodes[i].spec.slots > 0)
                .collect(),
            scratch_active: Vec::new(),
            min_cap,
            scratch_residents: RefCell::new(Vec::with_capacity(64)),
            scratch_waiting: RefCell::new(Vec::with_capacity(16)),
            expected_targets: RefCell::new(vec![(f64::NAN, 0.0); n_reqs]),
            trajectories: RefCell::new(
                (0..cluster.nodes.len() * factors.len())
                    .map(|_| CachedTrajectory::default())
                    .collect(),
            ),
            forecast_mismatch: RefCell::new(None),
            forecast_fallbacks: Cell::new(0),
            draw_factors: factors,
            no_batching: cluster
                .nodes
                .iter()
                .zip(&steps)
                .map(|(n, &step)| service::drains(&node_serving(&n.spec, cfg.batch_slowdown, step)))
                .collect(),
            steps,
            pace_dirty: Vec::new(),
            next_pf_seq: 0,
            rooms,
            kv_decoders: Vec::new(),
            kv_order: Vec::new(),
            keys,
            reuse,
            routes_all: kind.routes_all(),
            idle: Default::default(),
            idle_migration: kind.migrates() && params.idle_migration,
            risk: kind.risk_model(),
        }
    }
}

/// Each turn's next: for turns given as `(arrival, conversation)`, the arrival of the next
/// turn of the same conversation (a later arrival with the same key; `i64::MAX` for a
/// conversation's last turn or an unknown conversation), the oracle's foresight of future
/// reuses ([`Req::next_turn`]).
fn next_turns(turns: &[(i64, Option<u64>)]) -> Vec<i64> {
    let mut order: Vec<usize> = (0..turns.len()).collect();
    order.sort_by_key(|&r| std::cmp::Reverse((turns[r].0, r)));
    let mut later: std::collections::HashMap<u64, i64> = std::collections::HashMap::new();
    let mut next = vec![i64::MAX; turns.len()];
    for r in order {
        if let (at, Some(c)) = turns[r] {
            next[r] = later.insert(c, at).unwrap_or(i64::MAX);
        }
    }
    next
}

#[cfg(test)]
mod tests {
    #[test]
    fn next_turns_follow_each_conversation() {
        let m = i64::MAX;
        let turns = [
            (10, Some(1)),
            (20, Some(2)),
            (30, None),
            (40, Some(1)),
            (40, Some(2)),
            (90, Some(1)),
        ];
        assert_eq!(super::next_turns(&turns), vec![40, 40, m, 90, m, m]);
        assert!(super::next_turns(&[]).is_empty());
    }
}
