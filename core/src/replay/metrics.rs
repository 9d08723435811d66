//! Per-request records, the one list of reported metrics ([`METRICS`]), per-run summaries and
//! the bootstrap intervals the comparison ([`super::compare`]) is built from.
//!
//! Every policy is scored on the same requests: a request not finished by the window end is
//! censored at it (restricted completion time) and counted as `unfinished`, never dropped.

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
    /// each planned move, each restart after a KV preemption under the iteration engine).
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
    /// Iteration model: recompute preemptions because its node's KV ran out (not
    /// interruptions: the node stayed up and the request waited at its queue's front).
    pub kv_preemptions: u32,
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
    /// The policy's forecast `T` at the request's first placement (queue wait, prefill and
    /// decode on the chosen node), seconds; `None` when never placed or not forecast.
    #[serde(default)]
    pub forecast_t_s: Option<f64>,
    /// The policy's predicted probability, at the first placement, that the chosen node fails
    /// before the request completes (`1 - S(T | a)`).
    #[serde(default)]
    pub forecast_p_interrupt: Option<f64>,
    /// Realised service time from the first placement to completion, seconds, for a request
    /// that completed where it was first placed, in one stint, with no interruption or move
    /// (what `forecast_t_s` predicts); `None` otherwise.
    #[serde(default)]
    pub served_s: Option<f64>,
    /// Whether the first placement ended in an unplanned loss (the node failed while the
    /// request held or waited for it: `true`) or in completion (`false`); `None` when not
    /// observed (moved by plan, never placed, or still there at the window end: censored).
    #[serde(default)]
    pub first_placement_lost: Option<bool>,
    /// Prefix caching: prompt tokens the prefill that gave its first token read from its
    /// node's cache instead of computing them (0 without a prefix cache or a hit).
    #[serde(default)]
    pub prefix_hit_tokens: u64,
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

pub(crate) fn mean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        None
    } else {
        Some(xs.iter().sum::<f64>() / xs.len() as f64)
    }
}

/// Whether a smaller or a larger value of a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (times, interruptions, recomputation).
    Lower,
    /// Larger is better (SLO attainment, goodput).
    Higher,
    /// Neither: a count that describes behaviour (planned migrations).
    Neither,
}

/// One reported metric: its key (JSON key, CSV column), unit, direction and meaning. The
/// one list [`METRICS`] drives the CLI table, the JSON keys, the TUI and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// Key in JSON and CSV (`mean_completion_s`).
    pub key: &'static str,
    /// Short column title for tables.
    pub title: &'static str,
    /// Unit (`s`, `tokens`, `tok/s`, `1`).
    pub unit: &'static str,
    /// Which direction is better.
    pub better: Better,
    /// What it measures.
    pub description: &'static str,
}

/// The metrics of a run, in [`METRICS`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Restricted mean completion time.
    MeanCompletion = 0,
    /// Median restricted completion time.
    P50Completion,
    /// 90th percentile restricted completion time.
    P90Completion,
    /// 99th percentile restricted completion time.
    P99Completion,
    /// Median time to first token (requests that got one).
    TtftP50,
    /// 99th percentile time to first token.
    TtftP99,
    /// Requests not finished by the window end.
    Unfinished,
    /// Unplanned interruptions.
    UnplannedInterruptions,
    /// Seconds spent recovering from unplanned interruptions.
    Recovery,
    /// Recomputed tokens.
    RecomputedTokens,
    /// Planned migrations.
    PlannedMigrations,
    /// Share of requests meeting the SLO.
    SloAttainment,
    /// Output tokens of SLO-met requests per second.
    SloGoodput,
    /// Unplanned interruptions per request started.
    InterruptionsPerStarted,
    /// The fleet's cost over the scored span.
    Dollars,
    /// Output tokens of SLO-met requests per dollar.
    GoodputPerDollar,
    /// Share of prompt tokens read from a prefix cache.
    PrefixHitRate,
    /// Prefill tokens computed.
    PrefillTokens,
    /// Cached prompt tokens destroyed by nodes' ends.
    CacheDestroyedTokens,
    /// Idle conversations' prefix state copied to a safer node.
    StateMigrations,
}

/// Number of metrics in [`METRICS`].
pub const N_METRICS: usize = 20;

/// Every metric, in the order of [`Metric`].
pub const METRICS: [MetricDef; N_METRICS] = [
    MetricDef {
        key: "mean_completion_s",
        title: "mean_s",
        unit: "s",
        better: Better::Lower,
        description: "restricted mean completion time: arrival to last token, or to the window end for requests not finished by then (every policy is scored on the same requests)",
    },
    MetricDef {
        key: "p50_completion_s",
        title: "p50_s",
        unit: "s",
        better: Better::Lower,
        description: "median restricted completion time",
    },
    MetricDef {
        key: "p90_completion_s",
        title: "p90_s",
        unit: "s",
        better: Better::Lower,
        description: "90th percentile restricted completion time",
    },
    MetricDef {
        key: "p99_completion_s",
        title: "p99_s",
        unit: "s",
        better: Better::Lower,
        description: "99th percentile restricted completion time",
    },
    MetricDef {
        key: "ttft_p50_s",
        title: "ttft_p50_s",
        unit: "s",
        better: Better::Lower,
        description: "median time to first token of the requests that got one",
    },
    MetricDef {
        key: "ttft_p99_s",
        title: "ttft_p99_s",
        unit: "s",
        better: Better::Lower,
        description: "99th percentile time to first token",
    },
    MetricDef {
        key: "unfinished",
        title: "unfinished",
        unit: "requests",
        better: Better::Lower,
        description: "requests not finished by the window end, per window",
    },
    MetricDef {
        key: "unplanned_interruptions",
        title: "interrupts",
        unit: "count",
        better: Better::Lower,
        description: "unplanned interruptions (a node holding a request's KV cache went down), per window",
    },
    MetricDef {
        key: "recovery_s",
        title: "recovery_s",
        unit: "s",
        better: Better::Lower,
        description: "seconds from each unplanned loss until the request produced tokens again, summed per window",
    },
    MetricDef {
        key: "recomputed_tokens",
        title: "recomputed",
        unit: "tokens",
        better: Better::Lower,
        description: "tokens prefilled again after unplanned losses and recompute moves, per window",
    },
    MetricDef {
        key: "planned_migrations",
        title: "migrations",
        unit: "count",
        better: Better::Neither,
        description: "planned (pre-emptive) migrations, per window",
    },
    MetricDef {
        key: "slo_attainment",
        title: "slo",
        unit: "1",
        better: Better::Higher,
        description: "share of requests finished within the SLO deadline (unfinished ones miss it)",
    },
    MetricDef {
        key: "slo_goodput",
        title: "goodput_tok_s",
        unit: "tok/s",
        better: Better::Higher,
        description: "output tokens of SLO-met requests per second of window",
    },
    MetricDef {
        key: "interruptions_per_started",
        title: "int/start",
        unit: "1",
        better: Better::Lower,
        description: "unplanned interruptions per request started on a node, per window: a count per window rewards leaving requests queued and never started, a rate per started request does not",
    },
    MetricDef {
        key: "dollars",
        title: "dollars",
        unit: "$",
        better: Better::Lower,
        description: "the fleet's cost over the scored span of each window: every node billed at its pool's price_per_node_hour while it is up (spot billed only while up); undefined when no pool has a price",
    },
    MetricDef {
        key: "goodput_per_dollar",
        title: "good_tok/$",
        unit: "tokens/$",
        better: Better::Higher,
        description: "output tokens of SLO-met requests per dollar, per window (the scored requests' SLO-met tokens over the scored span's dollars); undefined when no pool has a price",
    },
    MetricDef {
        key: "prefix_hit_rate",
        title: "hit_rate",
        unit: "1",
        better: Better::Higher,
        description: "share of the prompt tokens of the requests that got a first token that its prefill read from the node's prefix cache; undefined without prefix caching",
    },
    MetricDef {
        key: "prefill_tokens",
        title: "prefill_tok",
        unit: "tokens",
        better: Better::Lower,
        description: "prefill tokens computed per window: the prompts less their cache hits, and every token prefilled again after a loss or a recompute move; undefined without prefix caching",
    },
    MetricDef {
        key: "cache_destroyed_tokens",
        title: "destroyed_tok",
        unit: "tokens",
        better: Better::Lower,
        description: "prompt tokens of cached prefix blocks that nodes' ends destroyed, per window (every run's whole window); undefined without prefix caching",
    },
    MetricDef {
        key: "state_migrations",
        title: "state_moves",
        unit: "count",
        better: Better::Neither,
        description: "idle conversations' prefix state copied off a risky node, per window (every run's whole window); undefined without prefix caching",
    },
];

impl Metric {
    /// Every metric, in [`METRICS`] order.
    pub const ALL: [Metric; N_METRICS] = [
        Metric::MeanCompletion,
        Metric::P50Completion,
        Metric::P90Completion,
        Metric::P99Completion,
        Metric::TtftP50,
        Metric::TtftP99,
        Metric::Unfinished,
        Metric::UnplannedInterruptions,
        Metric::Recovery,
        Metric::RecomputedTokens,
        Metric::PlannedMigrations,
        Metric::SloAttainment,
        Metric::SloGoodput,
        Metric::InterruptionsPerStarted,
        Metric::Dollars,
        Metric::GoodputPerDollar,
        Metric::PrefixHitRate,
        Metric::PrefillTokens,
        Metric::CacheDestroyedTokens,
        Metric::StateMigrations,
    ];

    /// Its definition.
    pub fn def(self) -> &'static MetricDef {
        &METRICS[self as usize]
    }

    /// Its key (`mean_completion_s`).
    pub fn key(self) -> &'static str {
        self.def().key
    }

    /// The metric with this key.
    pub fn from_key(key: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.key() == key)
    }
}

/// Bins of the reliability table of the interruption forecast: deciles of the prediction.
pub const RELIABILITY_BINS: usize = 10;

/// One decile of the reliability table: requests whose predicted interruption probability
/// fell in `[k/10, (k+1)/10)` (the last bin includes 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    /// Requests scored.
    pub n: u64,
    /// Sum of their predicted probabilities.
    pub predicted_sum: f64,
    /// How many of them were lost.
    pub lost: u64,
}

/// How well a policy's forecasts matched what happened in one or more runs (sums, so that runs
/// merge): the predicted `T` at the first placement against the realised service time
/// ([`RequestRecord::served_s`]), and the predicted interruption probability against the
/// observed outcome ([`RequestRecord::first_placement_lost`]; censored requests are not
/// scored).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// `predicted T / realised service time` of each request scored for `T`.
    pub t_ratios: Vec<f64>,
    /// Sum of `|predicted - realised| / realised` over them.
    pub t_ape_sum: f64,
    /// Requests scored for the interruption forecast.
    pub p_n: u64,
    /// Sum of `(p - y)^2` over them (`y` = 1 when lost).
    pub p_sq_sum: f64,
    /// The reliability table by decile of prediction.
    pub bins: [ReliabilityBin; RELIABILITY_BINS],
}

impl Calibration {
    /// The calibration of one run's records.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a RequestRecord>) -> Calibration {
        let mut c = Calibration::default();
        for r in records {
            if let (Some(t), Some(s)) = (r.forecast_t_s, r.served_s) {
                if t.is_finite() && s > 0.0 {
                    c.t_ratios.push(t / s);
                    c.t_ape_sum += (t - s).abs() / s;
                }
            }
            if let (Some(p), Some(lost)) = (r.forecast_p_interrupt, r.first_placement_lost) {
                if p.is_finite() {
                    let p = p.clamp(0.0, 1.0);
                    let y = if lost { 1.0 } else { 0.0 };
                    c.p_n += 1;
                    c.p_sq_sum += (p - y) * (p - y);
                    let k = ((p * RELIABILITY_BINS as f64) as usize).min(RELIABILITY_BINS - 1);
                    let b = &mut c.bins[k];
                    b.n += 1;
                    b.predicted_sum += p;
                    b.lost += u64::from(lost);
                }
            }
        }
        c
    }

    /// Adds another run's calibration.
    pub fn merge(&mut self, other: &Calibration) {
        self.t_ratios.extend_from_slice(&other.t_ratios);
        self.t_ape_sum += other.t_ape_sum;
        self.p_n += other.p_n;
        self.p_sq_sum += other.p_sq_sum;
        for (a, b) in self.bins.iter_mut().zip(&other.bins) {
            a.n += b.n;
            a.predicted_sum += b.predicted_sum;
            a.lost += b.lost;
        }
    }

    /// Requests scored for `T`.
    pub fn t_n(&self) -> usize {
        self.t_ratios.len()
    }

    /// Median of `predicted T / realised`: 1 for an exact load model, above 1 when it
    /// over-predicts; `None` without scored requests.
    pub fn t_ratio_median(&self) -> Option<f64> {
        let mut v = self.t_ratios.clone();
        v.sort_by(f64::total_cmp);
        percentile_sorted(&v, 0.5)
    }

    /// Mean absolute percentage error of `T`, as a fraction (0.1 = 10 %).
    pub fn t_mape(&self) -> Option<f64> {
        (!self.t_ratios.is_empty()).then(|| self.t_ape_sum / self.t_ratios.len() as f64)
    }

    /// Brier score of the interruption forecast: mean `(p - y)^2`, 0 for a perfect forecast.
    pub fn interruption_brier(&self) -> Option<f64> {
        (self.p_n > 0).then(|| self.p_sq_sum / self.p_n as f64)
    }

    /// Base rate of observed losses among the scored requests.
    pub fn interruption_rate(&self) -> Option<f64> {
        (self.p_n > 0)
            .then(|| self.bins.iter().map(|b| b.lost).sum::<u64>() as f64 / self.p_n as f64)
    }
}

/// The metrics of one run: one value per [`Metric`] (`None` where undefined, e.g. a TTFT
/// percentile when no request got a first token) and the unplanned interruptions by the end
/// cause of the session behind them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Requests that arrived in the window.
    pub requests: u64,
    /// Values in [`METRICS`] order.
    pub values: [Option<f64>; N_METRICS],
    /// Unplanned interruptions by end cause (`preempted`, `lifetime-cap`, ...).
    pub interruptions_by_cause: BTreeMap<String, f64>,
    /// The forecast calibration of the run.
    #[serde(default)]
    pub calibration: Calibration,
    /// The fleet's cost per pool over the scored span, dollars (empty when unpriced).
    #[serde(default)]
    pub dollars_by_pool: BTreeMap<String, f64>,
    /// Output tokens of the SLO-met scored requests.
    #[serde(default)]
    pub good_tokens: f64,
    /// Iteration model: recompute preemptions because a node's KV ran out (a request
    /// preempted twice counts twice); 0 under the simple model.
    #[serde(default)]
    pub kv_preemptions: f64,
    /// Placements priced without the engine's forecast
    /// ([`super::output::RunStats::forecast_fallbacks`]).
    #[serde(default)]
    pub forecast_fallbacks: f64,
    /// The prefix-cache metrics' values from the records (`prefix_hit_rate`,
    /// `prefill_tokens`), which [`RunSummary::with_prefix_cache`] reports when the run cached
    /// prefixes.
    #[serde(default)]
    pub prefix: [Option<f64>; 2],
}

impl RunSummary {
    /// Summarises the records of one run over a window of `window_length_s` seconds.
    ///
    /// Completion times are restricted to the window: a request not finished by the window end
    /// counts with `window_length_s - arrival_s` (a lower bound of its completion time), so
    /// every policy is scored on the same requests and dropping a request never looks fast.
    pub fn from_records(records: &[RequestRecord], window_length_s: f64) -> RunSummary {
        let all: Vec<&RequestRecord> = records.iter().collect();
        RunSummary::of(&all, window_length_s, window_length_s)
    }

    /// The summary of `records` over a window of `window_length_s`, with the goodput per
    /// second of `span_s` (the part of the window whose arrivals are scored).
    fn of(records: &[&RequestRecord], window_length_s: f64, span_s: f64) -> RunSummary {
        let restricted = |r: &&RequestRecord| match r.completion_s {
            Some(c) => c,
            None => (window_length_s - r.arrival_s).max(0.0),
        };
        let mut completion: Vec<f64> = records.iter().map(restricted).collect();
        let mut ttft: Vec<f64> = records.iter().filter_map(|r| r.ttft_s).collect();
        completion.sort_by(f64::total_cmp);
        ttft.sort_by(f64::total_cmp);
        let met = records.iter().filter(|r| r.slo_met).count();
        let good_tokens: f64 = records
            .iter()
            .filter(|r| r.slo_met)
            .map(|r| r.output_tokens as f64)
            .sum();
        let sum = |f: &dyn Fn(&RequestRecord) -> f64| -> f64 { records.iter().map(|r| f(r)).sum() };
        let mut by_cause: BTreeMap<String, f64> = BTreeMap::new();
        for r in records.iter() {
            for c in &r.interruption_causes {
                let key = if c.is_empty() { "unknown" } else { c.as_str() };
                *by_cause.entry(key.to_string()).or_insert(0.0) += 1.0;
            }
        }
        let mut values = [None; N_METRICS];
        values[Metric::MeanCompletion as usize] = mean(&completion);
        values[Metric::P50Completion as usize] = percentile_sorted(&completion, 0.50);
        values[Metric::P90Completion as usize] = percentile_sorted(&completion, 0.90);
        values[Metric::P99Completion as usize] = percentile_sorted(&completion, 0.99);
        values[Metric::TtftP50 as usize] = percentile_sorted(&ttft, 0.50);
        values[Metric::TtftP99 as usize] = percentile_sorted(&ttft, 0.99);
        values[Metric::Unfinished as usize] =
            Some(records.iter().filter(|r| r.completion_s.is_none()).count() as f64);
        values[Metric::UnplannedInterruptions as usize] =
            Some(sum(&|r| f64::from(r.interruptions)));
        values[Metric::Recovery as usize] = Some(sum(&|r| r.recovery_s));
        values[Metric::RecomputedTokens as usize] = Some(sum(&|r| {
            (r.recomputed_unplanned_tokens + r.recomputed_planned_tokens) as f64
        }));
        values[Metric::PlannedMigrations as usize] =
            Some(sum(&|r| f64::from(r.planned_migrations)));
        values[Metric::SloAttainment as usize] =
            (!records.is_empty()).then(|| met as f64 / records.len() as f64);
        values[Metric::SloGoodput as usize] = Some(if span_s > 0.0 {
            good_tokens / span_s
        } else {
            0.0
        });
        let started = records.iter().filter(|r| r.first_node.is_some()).count();
        values[Metric::InterruptionsPerStarted as usize] = values
            [Metric::UnplannedInterruptions as usize]
            .filter(|_| started > 0)
            .map(|n| n / started as f64);
        let prefilled = || records.iter().filter(|r| r.ttft_s.is_some());
        let prompt: u64 = prefilled().map(|r| r.prompt_tokens).sum();
        let hit: u64 = prefilled().map(|r| r.prefix_hit_tokens).sum();
        RunSummary {
            requests: records.len() as u64,
            prefix: [
                (prompt > 0).then(|| hit as f64 / prompt as f64),
                Some(
                    (prompt - hit) as f64
                        + values[Metric::RecomputedTokens as usize].unwrap_or(0.0),
                ),
            ],
            values,
            interruptions_by_cause: by_cause,
            calibration: Calibration::from_records(records.iter().copied()),
            dollars_by_pool: BTreeMap::new(),
            good_tokens,
            kv_preemptions: sum(&|r| f64::from(r.kv_preemptions)),
            forecast_fallbacks: 0.0,
        }
    }

    /// The summary with the run's cost ([`super::input::RunCost`]): `dollars`, its split by
    /// pool and `goodput_per_dollar = good_tokens / dollars`. Left undefined when no pool has
    /// a price; `goodput_per_dollar` also when the fleet cost nothing (no priced node up).
    pub fn with_cost(mut self, cost: &super::input::RunCost) -> RunSummary {
        if !cost.priced {
            return self;
        }
        self.values[Metric::Dollars as usize] = Some(cost.dollars);
        self.values[Metric::GoodputPerDollar as usize] =
            (cost.dollars > 0.0).then(|| self.good_tokens / cost.dollars);
        self.dollars_by_pool = cost.per_pool.iter().cloned().collect();
        self
    }

    /// The summary with the prefix-cache metrics (`prefix_hit_rate`, `prefill_tokens`, and the
    /// run's `cache_destroyed_tokens` and `state_migrations`, counted over its whole window)
    /// when the run cached prefixes (`cached`); they stay undefined otherwise.
    pub fn with_prefix_cache(
        mut self,
        cached: bool,
        destroyed_tokens: u64,
        state_migrations: u64,
    ) -> RunSummary {
        if !cached {
            return self;
        }
        self.values[Metric::PrefixHitRate as usize] = self.prefix[0];
        self.values[Metric::PrefillTokens as usize] = self.prefix[1];
        self.values[Metric::CacheDestroyedTokens as usize] = Some(destroyed_tokens as f64);
        self.values[Metric::StateMigrations as usize] = Some(state_migrations as f64);
        self
    }

    /// The value of one metric.
    pub fn get(&self, m: Metric) -> Option<f64> {
        self.values[m as usize]
    }

    /// Summarises the requests that arrived in the scored span `[from, to)` (seconds after the
    /// window start; see [`super::input::ReplayConfig::scored_span`]): a warm-up's arrivals
    /// loaded the cluster and a drain margin's were served, but neither is scored. Completion
    /// times stay restricted to the window end, and the goodput is per second of the scored
    /// span. The whole window, `[0, window_length_s)`, is [`RunSummary::from_records`].
    pub fn scored(records: &[RequestRecord], window_length_s: f64, span: [f64; 2]) -> RunSummary {
        let kept: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| is_scored(r.arrival_s, span))
            .collect();
        RunSummary::of(&kept, window_length_s, span[1] - span[0])
    }
}

/// Whether a request arriving `arrival_s` seconds after its window's start is scored: it
/// arrived in the scored span `[from, to)` ([`super::input::ReplayConfig::scored_span`]).
pub fn is_scored(arrival_s: f64, [from, to]: [f64; 2]) -> bool {
    arrival_s >= from && arrival_s < to
}

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

/// Aggregation settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggregateOptions {
    /// Bootstrap resamples (default 1,000).
    pub resamples: usize,
    /// Bootstrap seed (default 0).
    pub seed: u64,
    /// The metric "gap closed" is measured on (default [`DEFAULT_GAP_METRIC`]).
    pub gap_metric: Metric,
}

/// The default metric of "gap closed": unplanned interruptions, the metric on which the
/// oracle is a tested reference (see [`crate::replay::compare`]).
pub const DEFAULT_GAP_METRIC: Metric = Metric::UnplannedInterruptions;

impl Default for AggregateOptions {
    fn default() -> AggregateOptions {
        AggregateOptions {
            resamples: 1_000,
            seed: 0,
            gap_metric: DEFAULT_GAP_METRIC,
        }
    }
}

/// Percentile-bootstrap 95% interval `[q_2.5, q_97.5]` of the mean of `values`: `resamples`
/// means of `n` values drawn with replacement from a stream seeded by `seed`. `None` with fewer
/// than two values or no resamples.
pub(crate) fn bootstrap_mean_ci(values: &[f64], resamples: usize, seed: u64) -> Option<[f64; 2]> {
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

/// Paired-bootstrap 95% interval of the ratio of sums `sum(num) / sum(den)`: windows (pairs
/// `(num_w, den_w)`) are resampled with replacement; resamples whose denominator is 0 are
/// skipped. `None` with fewer than two pairs or when every resample has a zero denominator.
pub(crate) fn bootstrap_ratio_ci(
    num: &[f64],
    den: &[f64],
    resamples: usize,
    seed: u64,
) -> Option<[f64; 2]> {
    let n = num.len().min(den.len());
    if n < 2 || resamples == 0 {
        return None;
    }
    let mut rng = Rng::new(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (mut a, mut b) = (0.0, 0.0);
        for _ in 0..n {
            let i = rng.below(n as u64) as usize;
            a += num[i];
            b += den[i];
        }
        if b != 0.0 {
            ratios.push(a / b);
        }
    }
    ratios.sort_by(f64::total_cmp);
    Some([
        percentile_sorted(&ratios, 0.025)?,
        percentile_sorted(&ratios, 0.975)?,
    ])
}

#[cfg(test)]
#[path = "metrics_tests.rs"]
mod tests;
