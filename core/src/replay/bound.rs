//! `bound`: a provable lower bound on every policy's completion times, computed analytically
//! (no simulation) for [`crate::policy::PolicyKind::Bound`].
//!
//! Per request `r` arriving at `a_r`, with its TRUE lengths:
//!
//! `service_r = prefill_min(P_r) + L_r / d_max`
//!
//! (the least prefill the engine allows plus decode on the fastest node: `d_max` is the
//! highest decode rate of any node, and `prefill_min(P)` the least time any node's engine can
//! prefill `P` tokens in: `P / p_i` under the simple engine, where prefills never contend, and
//! the prompt's time alone under the iteration engine,
//! [`crate::policy::iteration::StepCoefficients::min_prefill_s`], which its module docs prove
//! a lower bound of any prefill sharing the node's steps; each minimised over the nodes. So
//! `service_r` is at most the time on any single node, and on any combination of nodes since
//! a move only adds time), and the bound is
//! the time after `a_r` needed to accumulate `service_r` seconds during which at least one node
//! is up (the nodes' up intervals as the replay plays them, [`Node::up_intervals`] under
//! [`ReplayConfig::censored_ends`]).
//!
//! Why no policy can beat it: a request makes progress (prefills or decodes) only while the
//! node holding it is up, at rates at most `p_max` / `d_max` (batching and queueing only slow
//! it, and every decode step costs at least `1 / d` under both engines); it must prefill at
//! least its prompt before its first token and decode all `L_r` tokens
//! (unplanned losses and planned moves only add work or pauses). So its completion time is at
//! least `service_r` plus the time after its arrival during which no node was up. The same
//! argument with the prompt alone bounds the TTFT.
//!
//! **Prefix caching.** A request prefills at least its prompt less the prefix tokens cached on
//! the node it runs on, and a node's cache holds only blocks an earlier arrival brought (a
//! block is cached when a request's prefill computed it). So the bound credits each request
//! with its leading blocks that any earlier arrival's prefix contained (an unbounded cache
//! on every node that never dies): `P_r` becomes `P_r - hit` ([`hit_tokens`]), and the
//! argument above holds for the rest.
//!
//! A request whose bound reaches the window end is dropped (`window-end`), like in the engine.
//! Every other field of its [`RequestRecord`] describes an unloaded, uninterrupted run.
//!
//! [`Node::up_intervals`]: super::input::Node::up_intervals

use std::collections::HashSet;

use crate::policy::cost::secs;
use crate::policy::iteration::{EngineKind, StepCoefficients};
use crate::policy::PolicyKind;

use super::input::{
    prepare_jobs, run_stream_seed, Cluster, ReplayConfig, ReplayError, Workload, US_PER_S,
};
use super::metrics::{DropReason, RequestRecord};
use super::output::{RunOutput, RunSpec, RunStats};
use super::prefix::hit_tokens;

/// The union of every node's up intervals within `[start_us, end_us)` under `cfg`'s censoring
/// rule, sorted and merged: the times when at least one node is up.
fn any_up_intervals(
    cluster: &Cluster,
    start_us: i64,
    end_us: i64,
    cfg: &ReplayConfig,
) -> Vec<(i64, i64)> {
    let mut all = Vec::new();
    for n in &cluster.nodes {
        n.up_intervals(start_us, end_us, cfg.censored_ends, &mut all);
    }
    all.retain(|&(a, b)| a < b);
    all.sort_unstable();
    let mut merged: Vec<(i64, i64)> = Vec::with_capacity(all.len());
    for (a, b) in all {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Seconds after `arrival_us` until `service_s` seconds of up-time (per `up`, sorted and
/// disjoint) have accumulated; `None` when the intervals run out first.
fn time_to_accumulate(up: &[(i64, i64)], arrival_us: i64, service_s: f64) -> Option<f64> {
    let mut need = if service_s > 0.0 { service_s } else { 0.0 };
    let mut cursor = arrival_us;
    let k = up.partition_point(|&(_, b)| b <= arrival_us);
    for &(a, b) in &up[k..] {
        cursor = cursor.max(a);
        let avail = (b - cursor) as f64 / US_PER_S;
        if need <= avail {
            return Some((cursor - arrival_us) as f64 / US_PER_S + need);
        }
        need -= avail;
        cursor = b;
    }
    None
}

/// The least time any node of `cluster` can prefill a prompt under `engine` (see the module
/// docs): one candidate per distinct node configuration.
struct PrefillFloor {
    /// The highest prefill rate (the simple engine).
    p_max: f64,
    /// Each distinct node's step coefficients (the iteration engine).
    steps: Vec<StepCoefficients>,
}

impl PrefillFloor {
    fn of(cluster: &Cluster, engine: EngineKind) -> PrefillFloor {
        let mut steps: Vec<StepCoefficients> = Vec::new();
        if engine == EngineKind::Iteration {
            for n in &cluster.nodes {
                let s = &n.spec;
                if let Some(c) = StepCoefficients::of(s.prefill_tok_s, s.decode_tok_s, s.step) {
                    if !steps.contains(&c) {
                        steps.push(c);
                    }
                }
            }
        }
        PrefillFloor {
            p_max: cluster.max_prefill(),
            steps,
        }
    }

    /// Seconds: the least prefill of `tokens` tokens on any node.
    fn seconds(&self, tokens: f64) -> f64 {
        if self.steps.is_empty() {
            return secs(tokens, self.p_max);
        }
        self.steps
            .iter()
            .map(|c| c.min_prefill_s(tokens))
            .fold(f64::INFINITY, f64::min)
    }
}

/// The bound's [`RunOutput`] for one run of the grid (one record per request; no
/// simulation, so no decisions and empty counters).
pub fn run(
    cluster: &Cluster,
    workload: &Workload,
    cfg: &ReplayConfig,
    spec: &RunSpec,
) -> Result<RunOutput, ReplayError> {
    let end = spec.window.end_us()?;
    let start = spec.window.start_us;
    let stream = run_stream_seed(spec.seed, spec.window_index as u64);
    let prepared = prepare_jobs(workload, spec.window.length_us, cfg, stream)?;
    let (jobs, keys) = (prepared.jobs, prepared.keys);
    // Every prefix block an earlier arrival brought: all any node's cache can hold.
    let mut seen: HashSet<u64> = HashSet::new();
    let up = any_up_intervals(cluster, start, end, cfg);
    let floor = PrefillFloor::of(cluster, cfg.engine);
    let d_max = cluster.max_decode();
    let window_s = spec.window.length_s();
    let mut records = Vec::with_capacity(jobs.len());
    for (r, j) in jobs.iter().enumerate() {
        let arrival = start + j.arrival_us;
        let arrival_s = j.arrival_us as f64 / US_PER_S;
        let (start, len) = j.prefix_keys;
        let mine = &keys[start as usize..(start + len) as usize];
        let hits = mine.iter().take_while(|k| seen.contains(k)).count();
        let credit = hit_tokens(hits, j.block_tokens, j.prompt_tokens);
        seen.extend(mine.iter().copied());
        let prefill_s = floor.seconds((j.prompt_tokens - credit) as f64);
        let service_s = prefill_s + secs(j.output_tokens as f64, d_max);
        let within = |x: Option<f64>| x.filter(|&c| arrival_s + c < window_s);
        let completion_s = within(time_to_accumulate(&up, arrival, service_s));
        let ttft_s = within(time_to_accumulate(&up, arrival, prefill_s));
        // The deadline of the whole prompt (a cache credit shortens the bound, not the SLO).
        let deadline_s = cfg.slo_factor
            * (floor.seconds(j.prompt_tokens as f64) + secs(j.output_tokens as f64, d_max));
        records.push(RequestRecord {
            request: r as u64,
            id: j.id,
            copy: j.copy,
            arrival_s,
            prompt_tokens: j.prompt_tokens,
            output_tokens: j.output_tokens,
            est_output_tokens: j.est_output_tokens,
            first_node: None,
            final_node: None,
            nodes_visited: 0,
            ttft_s,
            completion_s,
            generated_tokens: if completion_s.is_some() {
                j.output_tokens
            } else {
                0
            },
            recomputed_unplanned_tokens: 0,
            recomputed_planned_tokens: 0,
            kv_bytes_moved: 0.0,
            interruptions: 0,
            kv_preemptions: 0,
            planned_migrations: 0,
            slo_deadline_s: deadline_s,
            slo_met: completion_s.is_some_and(|c| c <= deadline_s),
            dropped: completion_s.is_none().then_some(DropReason::WindowEnd),
            recovery_s: 0.0,
            interruption_causes: Vec::new(),
            forecast_t_s: None,
            forecast_p_interrupt: None,
            served_s: None,
            first_placement_lost: None,
            prefix_hit_tokens: credit,
        });
    }
    Ok(RunOutput {
        policy: PolicyKind::Bound,
        window: spec.window_index,
        seed: spec.seed,
        param: spec.param_index,
        param_label: spec.param_label.clone(),
        window_length_s: window_s,
        scored_s: cfg.scored_span(window_s),
        records,
        stats: RunStats {
            prefix_requests: jobs.iter().filter(|j| j.prefix_keys.1 > 0).count() as u64,
            ..RunStats::default()
        },
        decisions: Vec::new(),
        decision_curves: Vec::new(),
        cost: super::input::RunCost::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accumulates_across_gaps() {
        let up = [(0, 2_000_000), (5_000_000, 10_000_000)];
        // 1 s of service from t=1 s: 1 s.
        assert_eq!(time_to_accumulate(&up, 1_000_000, 1.0), Some(1.0));
        // 2 s from t=1 s: 1 s, then a 3 s gap, then 1 s: 5 s.
        assert_eq!(time_to_accumulate(&up, 1_000_000, 2.0), Some(5.0));
        // Arrival in a gap.
        assert_eq!(time_to_accumulate(&up, 3_000_000, 1.0), Some(3.0));
        assert_eq!(time_to_accumulate(&up, 0, 100.0), None);
        assert_eq!(time_to_accumulate(&up, 0, 0.0), Some(0.0));
    }
}
