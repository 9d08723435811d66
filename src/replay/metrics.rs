//! Per-request records, per-run summaries, per-policy aggregates with bootstrap confidence
//! intervals over windows, and the fraction of the fastest-to-oracle gap a policy closes.
//!
//! Aggregation scheme: every metric is first computed per run (one policy, window, seed and
//! parameter point), then averaged over the seeds of a window (the per-window value), then
//! averaged over windows (the reported value). Its 95% interval is the percentile bootstrap of
//! that mean over windows (windows resampled with replacement, seeded, [`AggregateOptions`]);
//! no interval with fewer than two windows.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::policy::PolicyKind;
use crate::rng::Rng;

/// Why a request did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// The window ended before the request completed (it may have been waiting in the global
    /// pending queue because no node able to hold it was up, queued, or running).
    WindowEnd,
}

impl DropReason {
    /// The reason as written in exports: `window-end`.
    pub fn as_str(&self) -> &'static str {
        match self {
            DropReason::WindowEnd => "window-end",
        }
    }
}

/// What happened to one request in one run: a plain struct, one per request, in request-index
/// (arrival) order. Times are seconds; node numbers index [`super::input::Cluster::nodes`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Index in the run (arrival order; unique).
    pub request: u64,
    /// Workload id.
    pub id: u64,
    /// Loop copy of the workload (0 without looping).
    pub copy: u32,
    /// Arrival, seconds after the window start.
    pub arrival_s: f64,
    /// Prompt length, tokens.
    pub prompt_tokens: u64,
    /// True output length, tokens.
    pub output_tokens: u64,
    /// The estimate `L^_r` the policies saw, tokens.
    pub est_output_tokens: u64,
    /// First node the request was started on.
    pub first_node: Option<u32>,
    /// Last node the request ran on (where it completed, if it did).
    pub final_node: Option<u32>,
    /// Number of stints: starts on a node (first start, each restart after an unplanned loss,
    /// each planned move).
    pub nodes_visited: u32,
    /// Time to first token: arrival to the end of the first prefill that completed, seconds.
    pub ttft_s: Option<f64>,
    /// Completion time: arrival to the last token, seconds.
    pub completion_s: Option<f64>,
    /// Tokens generated and streamed to the client (equals `output_tokens` when completed).
    pub generated_tokens: u64,
    /// Tokens re-prefilled after unplanned losses (whole context each time).
    pub recomputed_unplanned_tokens: u64,
    /// Tokens re-prefilled by planned moves that chose recompute.
    pub recomputed_planned_tokens: u64,
    /// KV-cache bytes shipped by planned moves that chose transfer.
    pub kv_bytes_moved: f64,
    /// Unplanned interruptions (a node holding the request's KV went down).
    pub interruptions: u32,
    /// Planned migrations completed or started (cutover reached).
    pub planned_migrations: u32,
    /// SLO deadline `slo_factor * (P_r / p_max + L_r / d_max)`, seconds after arrival.
    pub slo_deadline_s: f64,
    /// Completed within the deadline.
    pub slo_met: bool,
    /// Set when the request did not complete.
    pub dropped: Option<DropReason>,
    /// Sum over the request's unplanned interruptions of the time from the loss until the
    /// request again produces new tokens (the end of its re-prefill), seconds; a loss never
    /// recovered counts until the window end. 0 without interruptions.
    #[serde(default)]
    pub recovery_s: f64,
    /// The `end_cause` of the session behind each unplanned interruption, in order (empty
    /// strings when unknown); empty when none.
    #[serde(default)]
    pub interruption_causes: Vec<String>,
}

/// Percentile `q` in [0, 1] of sorted values by linear interpolation between closest ranks
/// (Hyndman-Fan type 7: `x[floor(h)] + (h - floor(h)) (x[floor(h)+1] - x[floor(h)])`,
/// `h = (n - 1) q`); `None` for no values.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// The metrics of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Requests that arrived in the window.
    pub requests: u64,
    /// Of which completed.
    pub completed: u64,
    /// Mean completion time of completed requests, seconds.
    pub mean_completion_s: Option<f64>,
    /// Median completion time, seconds.
    pub p50_completion_s: Option<f64>,
    /// 90th percentile completion time, seconds.
    pub p90_completion_s: Option<f64>,
    /// 99th percentile completion time, seconds.
    pub p99_completion_s: Option<f64>,
    /// Median TTFT, seconds.
    pub ttft_p50_s: Option<f64>,
    /// 99th percentile TTFT, seconds.
    pub ttft_p99_s: Option<f64>,
    /// SLO-met requests over all requests (dropped ones miss); `None` without requests.
    pub slo_attainment: Option<f64>,
    /// Goodput: output tokens of SLO-met requests per second of window.
    pub goodput_tok_s: f64,
    /// Recomputed tokens, unplanned plus planned.
    pub recomputed_tokens: f64,
    /// Planned migrations.
    pub planned_migrations: f64,
    /// Unplanned interruptions.
    pub unplanned_interruptions: f64,
}

impl RunSummary {
    /// Summarises the records of one run over a window of `window_length_s` seconds.
    pub fn from_records(records: &[RequestRecord], window_length_s: f64) -> RunSummary {
        let mut completion: Vec<f64> = records.iter().filter_map(|r| r.completion_s).collect();
        let mut ttft: Vec<f64> = records.iter().filter_map(|r| r.ttft_s).collect();
        completion.sort_by(f64::total_cmp);
        ttft.sort_by(f64::total_cmp);
        let met = records.iter().filter(|r| r.slo_met).count();
        let good_tokens: f64 = records
            .iter()
            .filter(|r| r.slo_met)
            .map(|r| r.output_tokens as f64)
            .sum();
        RunSummary {
            requests: records.len() as u64,
            completed: completion.len() as u64,
            mean_completion_s: mean(&completion),
            p50_completion_s: percentile_sorted(&completion, 0.50),
            p90_completion_s: percentile_sorted(&completion, 0.90),
            p99_completion_s: percentile_sorted(&completion, 0.99),
            ttft_p50_s: percentile_sorted(&ttft, 0.50),
            ttft_p99_s: percentile_sorted(&ttft, 0.99),
            slo_attainment: (!records.is_empty()).then(|| met as f64 / records.len() as f64),
            goodput_tok_s: if window_length_s > 0.0 {
                good_tokens / window_length_s
            } else {
                0.0
            },
            recomputed_tokens: records
                .iter()
                .map(|r| (r.recomputed_unplanned_tokens + r.recomputed_planned_tokens) as f64)
                .sum(),
            planned_migrations: records
                .iter()
                .map(|r| f64::from(r.planned_migrations))
                .sum(),
            unplanned_interruptions: records.iter().map(|r| f64::from(r.interruptions)).sum(),
        }
    }

    /// The metric vector in [`METRICS`] order (`gap_closed` excluded).
    fn values(&self) -> [Option<f64>; 12] {
        [
            self.mean_completion_s,
            self.p50_completion_s,
            self.p90_completion_s,
            self.p99_completion_s,
            self.ttft_p50_s,
            self.ttft_p99_s,
            self.slo_attainment,
            Some(self.goodput_tok_s),
            Some(self.recomputed_tokens),
            Some(self.planned_migrations),
            Some(self.unplanned_interruptions),
            None,
        ]
    }
}

/// Metric keys, in the order of [`PolicySummary`]'s fields.
pub const METRICS: [&str; 12] = [
    "mean_completion_s",
    "p50_completion_s",
    "p90_completion_s",
    "p99_completion_s",
    "ttft_p50_s",
    "ttft_p99_s",
    "slo_attainment",
    "goodput_tok_s",
    "recomputed_tokens",
    "planned_migrations",
    "unplanned_interruptions",
    "gap_closed",
];

/// The outcome of one run, as aggregation needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunMetrics {
    /// Policy.
    pub policy: PolicyKind,
    /// Window index.
    pub window: usize,
    /// Seed.
    pub seed: u64,
    /// Parameter-point index.
    pub param: usize,
    /// Parameter-point label (empty for a single point).
    pub param_label: String,
    /// The run's summary.
    pub summary: RunSummary,
}

/// Per-policy aggregate over windows and seeds (see the module docs for the scheme).
///
/// Serialises with the keys `policy`, `requests`, `mean_completion_s`, `p50_completion_s`,
/// `p90_completion_s`, `p99_completion_s`, `ttft_p50_s`, `ttft_p99_s`, `slo_attainment`,
/// `goodput_tok_s`, `recomputed_tokens`, `planned_migrations`, `unplanned_interruptions`,
/// `gap_closed`, each metric followed by `<key>_ci = [low, high]` when an interval exists, and
/// `param` when the grid has a parameter label. Undefined metrics are `null`. Counts
/// (`recomputed_tokens`, `planned_migrations`, `unplanned_interruptions`) are per run (per
/// window and seed), averaged; `requests` is the total over all runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySummary {
    /// Policy name.
    pub policy: String,
    /// Parameter-point label, when the grid has several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<String>,
    /// Requests over all runs of this policy and parameter point.
    pub requests: u64,
    /// Mean completion time, seconds.
    pub mean_completion_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_completion_s_ci: Option<[f64; 2]>,
    /// Median completion time, seconds.
    pub p50_completion_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_completion_s_ci: Option<[f64; 2]>,
    /// 90th percentile completion time, seconds.
    pub p90_completion_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_completion_s_ci: Option<[f64; 2]>,
    /// 99th percentile completion time, seconds.
    pub p99_completion_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_completion_s_ci: Option<[f64; 2]>,
    /// Median TTFT, seconds.
    pub ttft_p50_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p50_s_ci: Option<[f64; 2]>,
    /// 99th percentile TTFT, seconds.
    pub ttft_p99_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_s_ci: Option<[f64; 2]>,
    /// Fraction of requests meeting the SLO.
    pub slo_attainment: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_attainment_ci: Option<[f64; 2]>,
    /// Goodput, tokens/s of SLO-met requests over the window.
    pub goodput_tok_s: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_tok_s_ci: Option<[f64; 2]>,
    /// Recomputed tokens per run.
    pub recomputed_tokens: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recomputed_tokens_ci: Option<[f64; 2]>,
    /// Planned migrations per run.
    pub planned_migrations: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_migrations_ci: Option<[f64; 2]>,
    /// Unplanned interruptions per run.
    pub unplanned_interruptions: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unplanned_interruptions_ci: Option<[f64; 2]>,
    /// Fraction of the fastest-to-oracle gap closed, per window
    /// `(mean_completion(fastest) - mean_completion(policy)) /
    /// (mean_completion(fastest) - mean_completion(oracle))`, averaged over the windows where
    /// the gap is not ~0 (`|gap| >= 1 us`, the clock's resolution); `None` when there is no such
    /// window or `fastest`/`oracle` were not run.
    pub gap_closed: Option<f64>,
    /// 95% CI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_closed_ci: Option<[f64; 2]>,
}

/// Aggregation settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AggregateOptions {
    /// Bootstrap resamples (default 1,000).
    pub resamples: usize,
    /// Bootstrap seed (default 0).
    pub seed: u64,
}

impl Default for AggregateOptions {
    fn default() -> AggregateOptions {
        AggregateOptions {
            resamples: 1_000,
            seed: 0,
        }
    }
}

/// Percentile-bootstrap 95% interval `[q_2.5, q_97.5]` of the mean of `values`: `resamples`
/// means of `n` values drawn with replacement from a stream seeded by `seed`. `None` with fewer
/// than two values or no resamples.
pub fn bootstrap_mean_ci(values: &[f64], resamples: usize, seed: u64) -> Option<[f64; 2]> {
    let n = values.len();
    if n < 2 || resamples == 0 {
        return None;
    }
    let mut rng = Rng::new(seed);
    let mut means = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let mut s = 0.0;
        for _ in 0..n {
            s += values[rng.below(n as u64) as usize];
        }
        means.push(s / n as f64);
    }
    means.sort_by(f64::total_cmp);
    Some([
        percentile_sorted(&means, 0.025)?,
        percentile_sorted(&means, 0.975)?,
    ])
}

/// `(F - P) / (F - O)`, or `None` when `|F - O| < 1e-6` s (the gap is below the clock's
/// resolution) or an input is undefined.
pub fn gap_closed(fastest: Option<f64>, policy: Option<f64>, oracle: Option<f64>) -> Option<f64> {
    let (f, p, o) = (fastest?, policy?, oracle?);
    let gap = f - o;
    if !(gap.abs() >= 1e-6) {
        return None;
    }
    let g = (f - p) / gap;
    g.is_finite().then_some(g)
}

fn policy_rank(k: PolicyKind) -> usize {
    PolicyKind::ALL
        .iter()
        .position(|&x| x == k)
        .unwrap_or(usize::MAX)
}

/// Aggregates runs per (policy, parameter point). Runs are first sorted by
/// (policy, window, seed, parameter point), so the result does not depend on the order they
/// were produced in. Output order: parameter point, then [`PolicyKind::ALL`] order.
pub fn aggregate(runs: &[RunMetrics], opts: &AggregateOptions) -> Vec<PolicySummary> {
    let mut runs: Vec<&RunMetrics> = runs.iter().collect();
    runs.sort_by(|a, b| {
        (policy_rank(a.policy), a.window, a.seed, a.param).cmp(&(
            policy_rank(b.policy),
            b.window,
            b.seed,
            b.param,
        ))
    });
    // (param, policy rank) -> window -> per-seed metric vectors.
    type PerWindow = BTreeMap<usize, Vec<[Option<f64>; 12]>>;
    type WindowValues = BTreeMap<usize, [Option<f64>; 12]>;
    let mut groups: BTreeMap<(usize, usize), (PolicyKind, String, u64, PerWindow)> =
        BTreeMap::new();
    for r in &runs {
        let g = groups
            .entry((r.param, policy_rank(r.policy)))
            .or_insert_with(|| (r.policy, r.param_label.clone(), 0, BTreeMap::new()));
        g.2 += r.summary.requests;
        g.3.entry(r.window).or_default().push(r.summary.values());
    }
    // Per-window values: mean over seeds of each metric (where defined).
    let window_values = |per: &PerWindow| -> WindowValues {
        per.iter()
            .map(|(&w, seeds)| {
                let mut out = [None; 12];
                for (m, o) in out.iter_mut().enumerate() {
                    let xs: Vec<f64> = seeds.iter().filter_map(|v| v[m]).collect();
                    *o = mean(&xs);
                }
                (w, out)
            })
            .collect()
    };
    let per_window: BTreeMap<(usize, usize), WindowValues> = groups
        .iter()
        .map(|(k, g)| (*k, window_values(&g.3)))
        .collect();
    let fastest = policy_rank(PolicyKind::Fastest);
    let oracle = policy_rank(PolicyKind::Oracle);
    let mut out = Vec::with_capacity(groups.len());
    for (key, (policy, label, requests, _)) in &groups {
        let mut wv = per_window.get(key).cloned().unwrap_or_default();
        let f = per_window.get(&(key.0, fastest));
        let o = per_window.get(&(key.0, oracle));
        for (w, v) in wv.iter_mut() {
            let fm = f.and_then(|f| f.get(w)).and_then(|v| v[0]);
            let om = o.and_then(|o| o.get(w)).and_then(|v| v[0]);
            v[11] = gap_closed(fm, v[0], om);
        }
        let mut point = [None; 12];
        let mut ci = [None; 12];
        for m in 0..12 {
            let xs: Vec<f64> = wv.values().filter_map(|v| v[m]).collect();
            point[m] = mean(&xs);
            let seed = opts.seed ^ (m as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
            ci[m] = bootstrap_mean_ci(&xs, opts.resamples, seed);
        }
        out.push(PolicySummary {
            policy: policy.name().to_string(),
            param: (!label.is_empty()).then(|| label.clone()),
            requests: *requests,
            mean_completion_s: point[0],
            mean_completion_s_ci: ci[0],
            p50_completion_s: point[1],
            p50_completion_s_ci: ci[1],
            p90_completion_s: point[2],
            p90_completion_s_ci: ci[2],
            p99_completion_s: point[3],
            p99_completion_s_ci: ci[3],
            ttft_p50_s: point[4],
            ttft_p50_s_ci: ci[4],
            ttft_p99_s: point[5],
            ttft_p99_s_ci: ci[5],
            slo_attainment: point[6],
            slo_attainment_ci: ci[6],
            goodput_tok_s: point[7],
            goodput_tok_s_ci: ci[7],
            recomputed_tokens: point[8],
            recomputed_tokens_ci: ci[8],
            planned_migrations: point[9],
            planned_migrations_ci: ci[9],
            unplanned_interruptions: point[10],
            unplanned_interruptions_ci: ci[10],
            gap_closed: point[11],
            gap_closed_ci: ci[11],
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_interpolate() {
        let xs = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&xs, 0.5), Some(2.5));
        assert_eq!(percentile_sorted(&xs, 0.0), Some(1.0));
        assert_eq!(percentile_sorted(&xs, 1.0), Some(4.0));
        assert_eq!(percentile_sorted(&[], 0.5), None);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_mean() {
        let xs = [1.0, 2.0, 3.0, 10.0];
        let a = bootstrap_mean_ci(&xs, 1000, 7);
        assert_eq!(a, bootstrap_mean_ci(&xs, 1000, 7));
        let [lo, hi] = a.unwrap_or([f64::NAN; 2]);
        assert!(lo <= 4.0 && 4.0 <= hi, "{lo} {hi}");
        assert_eq!(bootstrap_mean_ci(&[1.0], 1000, 7), None);
    }

    #[test]
    fn gap_closed_cases() {
        assert_eq!(gap_closed(Some(10.0), Some(8.0), Some(6.0)), Some(0.5));
        assert_eq!(gap_closed(Some(10.0), Some(8.0), Some(10.0)), None);
        assert_eq!(gap_closed(None, Some(8.0), Some(6.0)), None);
    }
}
