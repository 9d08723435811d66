//! The scenario file (TOML). Every field has a default; flags of `hazardserve replay` override
//! the file. `hazardserve replay --write-config` prints [`DEFAULT_CONFIG`].

use serde::{Deserialize, Serialize};

use super::choices::{estimator_text, metric_key};
pub use super::choices::{CurveReading, TailModel};
use super::error::{ConfigError, ScenarioError};
use crate::fit::causes::CauseGroup;
use crate::fit::parse_time;
use crate::policy::presets;
use crate::policy::{ForecastKind, Params, PolicyKind};
use crate::replay::LengthEstimator;

/// A commented default scenario.
pub const DEFAULT_CONFIG: &str = r#"# hazardserve replay scenario. Every key is optional; command-line flags override this file.

[nodes]
# Availability source in the store whose nodes serve the requests.
source = "sample-spot"
# Keep only nodes whose attribute contains this text (attribute: zone, instance_type, node_group).
# filter_attribute = "node_group"
# filter_value = "aws-04-22-2023"
# Take a seeded random sample of this many nodes (0 = all).
sample = 0
# End causes known in advance (planned ends, e.g. GCE's 24-hour cap): a literal or a prefix
# ending in `*`. The policies' survival curves count only the other causes as failures, every
# policy sees these ends coming, the cost-based ones price them as a planned hop, and the
# replay drains the node before them. Default: none (every end is unannounced).
# announced_causes = ["lifetime-cap"]

[hardware]
# Preset of every node: rtx4090, m1-max, a100, h100, wan-peer, phone (figures and sources:
# `hazardserve presets`).
preset = "a100"
# Concurrent requests per node and KV-cache capacity (tokens).
slots = 8
kv_capacity_tokens = 200000
# Link between nodes: wan, 1gbe, 10gbe, rdma, nvlink.
link = "10gbe"
# Explicit figures override the preset: prefill_tok_s, decode_tok_s, bandwidth_bytes_s.
# prefill_tok_s = 7741.0
# decode_tok_s = 54.8

# Per-group overrides: nodes whose attribute contains `value` get this preset and/or these
# figures (prefill_tok_s, decode_tok_s, bandwidth_bytes_s, slots, kv_capacity_tokens).
# [[hardware.groups]]
# attribute = "zone"
# value = "us-east"
# preset = "rtx4090"
# slots = 4

[model]
# KV bytes per token: llama-2-7b, llama-2-13b, llama-3-8b, llama-70b, llama-3.2-1b,
# llama-3.2-3b.
preset = "llama-3-8b"

[policy]
# Overheads O_t, O_r and the stall penalty sigma (seconds).
transfer_overhead_s = 0.2
recompute_overhead_s = 0.1
stall_penalty_s = 2.0
# Migration check period, hysteresis h, guards.
check_interval_s = 5.0
hysteresis_s = 1.0
max_hops = 2
min_remaining_s = 5.0
overlap = false
# What the cost-based policies (fastest, hazard, hazard-nomigrate, memoryless, hazard-truth,
# oracle) price at placement besides the request's own completion T: "own" (T only) or
# "marginal" (T + D, D the delay the request imposes on the requests already on the node: the
# node replayed to its end with and without it; see `hazardserve replay --help`).
forecast = "own"
# With estimated output lengths: how many draws of the unknown lengths (every request's,
# from its estimate's noise) the forecast averages T over; 1 prices every request at its
# expected length.
length_draws = 1
# How policies read the fitted survival curves: "linear" (each Kaplan-Meier drop spread over
# the interval before it, so short horizons see the hazard) or "step" (the steps as they are).
survival_curve = "linear"
# How the curves are read past their last knot (the oldest nodes): "exponential" (the pooled
# average tail hazard), "last-interval" (each node's hazard over its last interval), "flat"
# (no hazard past the data) or "weibull" (the pooled Weibull fit, so a decreasing hazard keeps
# decreasing; exponential when the fit has too few events). The default pair (linear,
# exponential) is the regime map's answer: paired against it over 120 contexts, every other
# reading was slower (`hazardserve sweep summary regime-map --axis
# policy.survival_curve+policy.tail`, README "Where hazard-awareness pays").
tail = "exponential"
# The generating laws of a synthetic fleet (the laws.csv `synth traces --fleet two-class`
# writes), for `hazard-truth`: `L` from the law each node's sessions were drawn from. Empty, or
# no row for nodes.source: hazard-truth is not run.
truth = ""

[workload]
# Request source in the store (ingested with azure-llm, mooncake or lengths-csv).
source = "sample-requests"
# Output-length estimate the policies see: exact, lognormal:SIGMA, bucket.
estimator = "lognormal:0.5"
# Multiply the arrival rate; loop the workload to fill the window.
rate_scale = 1.0
# Or set the load instead: scale each window's arrival rate so its offered work is this
# fraction of that window's up capacity (from the node timelines and the hardware rates; a
# window with no node up is not replayed; see `hazardserve replay --help`). Replaces
# rate_scale.
# load = 0.6
loop_workload = true

[replay]
# Policies to compare (hazard, hazard-nomigrate, memoryless, hazard-truth, fastest,
# least-loaded, random, uptime, oracle); empty = all (hazard-truth only where policy.truth
# knows the fleet's laws). `hazard --overlap` is added when include_overlap is true.
policies = []
include_overlap = true
# Windows of the availability trace: count, length (0 = the workload's length), placement.
windows = 10
window_length_s = 0
# Windows start after this fraction of the observation span; the survival priors are fitted
# only on what was observed before the first window (no leakage).
train_fraction = 0.5
# "even" spacing or "random" (seeded) starts.
placement = "even"
seeds = 1
seed = 1
# SLO deadline = slo_factor x unloaded service time on the fastest node.
slo_factor = 5.0
# Decode slowdown b per other concurrent request: k requests decode at d / (1 + b (k - 1)).
# Default: the [hardware] preset's figure, fitted to a batched benchmark of its device class
# (see `hazardserve presets`); 0 = eight requests decode as fast as one.
# batch_slowdown = 0.12
# The declared reference of the verdict "does hazard pay" on mean completion (the regime
# map's `pays`, q < 0.05 over its cells): least-loaded, fastest, random, uptime, or best-blind
# (the best of fastest, least-loaded and random, chosen inside each bootstrap resample).
reference = "least-loaded"
# Steady-state windows: arrivals in the first warmup_s seconds of a window load the cluster but
# are not scored, and arrivals in its last drain_s seconds are served but not scored (too late
# to finish). Default: warmup_s = 3 mean service times, drain_s = the 90th percentile service
# time (each request's prompt and output at the median node's unloaded rates), each at most a
# fifth of the window; replay prints the values it chose. 0 scores every arrival.
# warmup_s = 0
# drain_s = 0
"#;

/// `[nodes]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NodesConfig {
    /// Availability source.
    pub source: String,
    /// Attribute to filter on (`zone`, `instance_type`, `node_group`).
    pub filter_attribute: Option<String>,
    /// Substring the attribute must contain.
    pub filter_value: Option<String>,
    /// Random sample size (0 = all nodes).
    pub sample: usize,
    /// End causes that are announced in advance (planned ends): a literal cause or a prefix
    /// ending in `*`. Sessions ending by one are censored in the policies' survival fits (the
    /// curves are the unannounced causes' survival), their ends are shown to every policy and
    /// drained by the replay ([`crate::replay::UpSession::announced`]). Default: none.
    pub announced_causes: Vec<String>,
}

impl Default for NodesConfig {
    fn default() -> Self {
        NodesConfig {
            source: "sample-spot".into(),
            filter_attribute: None,
            filter_value: None,
            sample: 0,
            announced_causes: Vec::new(),
        }
    }
}

impl NodesConfig {
    /// The announced-cause patterns, parsed (an error names the key and the pattern).
    pub fn announced(&self) -> Result<Vec<CauseGroup>, ScenarioError> {
        self.announced_causes
            .iter()
            .map(|p| {
                p.parse::<CauseGroup>()
                    .map_err(|e| ScenarioError::invalid("nodes.announced_causes", e))
            })
            .collect()
    }

    /// True when `cause` is announced under `patterns` ([`NodesConfig::announced`]).
    pub fn is_announced(patterns: &[CauseGroup], cause: &str) -> bool {
        patterns.iter().any(|g| g.matches(cause))
    }
}

/// Explicit serving figures that override a preset's (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HardwareOverrides {
    /// Prefill rate p, tokens/s.
    pub prefill_tok_s: Option<f64>,
    /// Per-request decode rate d, tokens/s.
    pub decode_tok_s: Option<f64>,
    /// Bandwidth B, bytes/s (instead of the link tier).
    pub bandwidth_bytes_s: Option<f64>,
    /// Concurrency slots.
    pub slots: Option<u32>,
    /// KV capacity, tokens.
    pub kv_capacity_tokens: Option<u64>,
}

/// One `[[hardware.groups]]` override.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HardwareGroup {
    /// Attribute to match (`zone`, `instance_type`, `node_group`).
    pub attribute: String,
    /// Substring to look for.
    pub value: String,
    /// Hardware preset of matching nodes (default: the `[hardware]` preset).
    #[serde(default)]
    pub preset: Option<String>,
    /// Explicit figures of matching nodes.
    #[serde(flatten)]
    pub overrides: HardwareOverrides,
}

/// `[hardware]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HardwareConfig {
    /// Hardware preset of every node.
    pub preset: String,
    /// Concurrency slots per node.
    pub slots: u32,
    /// KV capacity per node, tokens.
    pub kv_capacity_tokens: u64,
    /// Link tier between nodes.
    pub link: String,
    /// Explicit figures for every node (prefill, decode, bandwidth), overriding the preset.
    #[serde(flatten)]
    pub overrides: HardwareOverrides,
    /// Per-group overrides.
    pub groups: Vec<HardwareGroup>,
}

impl Default for HardwareConfig {
    fn default() -> Self {
        HardwareConfig {
            preset: "a100".into(),
            slots: 8,
            kv_capacity_tokens: 200_000,
            link: "10gbe".into(),
            overrides: HardwareOverrides::default(),
            groups: Vec::new(),
        }
    }
}

/// `[model]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Model preset (KV bytes per token).
    pub preset: String,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            preset: "llama-3-8b".into(),
        }
    }
}

/// `[policy]`: the cost model's constants (KV bytes come from `[model]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// O_t, seconds.
    pub transfer_overhead_s: f64,
    /// O_r, seconds.
    pub recompute_overhead_s: f64,
    /// sigma, seconds.
    pub stall_penalty_s: f64,
    /// Migration check period, seconds.
    pub check_interval_s: f64,
    /// Hysteresis h, seconds.
    pub hysteresis_s: f64,
    /// Planned moves per request at most.
    pub max_hops: u32,
    /// No move with less than this much work left, seconds.
    pub min_remaining_s: f64,
    /// Overlapped migration.
    pub overlap: bool,
    /// What placement prices besides `T_i`: `own` or `marginal` ([`ForecastKind`]).
    pub forecast: ForecastKind,
    /// Draws of the unknown lengths the forecast averages over ([`Params::length_draws`]).
    pub length_draws: u32,
    /// How policies read the fitted curves ([`CurveReading`]).
    pub survival_curve: CurveReading,
    /// The tail model past the last knot ([`TailModel`]). The default (`linear` reading,
    /// `exponential` tail) is what the regime map found best: no other reading was faster in
    /// the paired comparison of the committed grid.
    pub tail: TailModel,
    /// The generating laws of a synthetic fleet (a CSV `synth traces --fleet` writes; see
    /// [`crate::survival::truth`]), read by `hazard-truth` only. Empty, or a file without a row for
    /// `nodes.source`: `hazard-truth` is not run (a note says so).
    #[serde(default)]
    pub truth: String,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        let p = Params::default();
        PolicyConfig {
            transfer_overhead_s: p.transfer_overhead_s,
            recompute_overhead_s: p.recompute_overhead_s,
            stall_penalty_s: p.stall_penalty_s,
            check_interval_s: p.check_interval_s,
            hysteresis_s: p.hysteresis_s,
            max_hops: p.max_hops,
            min_remaining_s: p.min_remaining_s,
            overlap: p.overlap,
            forecast: p.forecast,
            length_draws: p.length_draws,
            survival_curve: CurveReading::Linear,
            tail: TailModel::Exponential,
            truth: String::new(),
        }
    }
}

impl PolicyConfig {
    /// The policy parameters with `kv_bytes_per_token`.
    pub fn params(&self, kv_bytes_per_token: f64) -> Params {
        Params {
            kv_bytes_per_token,
            transfer_overhead_s: self.transfer_overhead_s,
            recompute_overhead_s: self.recompute_overhead_s,
            stall_penalty_s: self.stall_penalty_s,
            hysteresis_s: self.hysteresis_s,
            max_hops: self.max_hops,
            min_remaining_s: self.min_remaining_s,
            check_interval_s: self.check_interval_s,
            overlap: self.overlap,
            forecast: self.forecast,
            length_draws: self.length_draws,
        }
    }
}

/// `[workload]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkloadConfig {
    /// Request source.
    pub source: String,
    /// Output-length estimator, written as its text (`exact`, `lognormal:SIGMA`, `bucket`).
    #[serde(with = "estimator_text")]
    pub estimator: LengthEstimator,
    /// Arrival-rate multiplier.
    pub rate_scale: f64,
    /// Offered load as a fraction of each window's up capacity (replaces `rate_scale`).
    pub load: Option<f64>,
    /// Loop the workload to fill a window.
    pub loop_workload: bool,
}

impl Default for WorkloadConfig {
    fn default() -> Self {
        WorkloadConfig {
            source: "sample-requests".into(),
            estimator: LengthEstimator::Lognormal {
                sigma: LengthEstimator::DEFAULT_SIGMA,
            },
            rate_scale: 1.0,
            load: None,
            loop_workload: true,
        }
    }
}

/// `[replay]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReplaySection {
    /// Policies (empty = all).
    pub policies: Vec<String>,
    /// Add `hazard --overlap` to the comparison.
    pub include_overlap: bool,
    /// Number of windows.
    pub windows: usize,
    /// Window length, seconds (0 = the workload's length).
    pub window_length_s: f64,
    /// Start of the first window (seconds on the trace clock or RFC 3339), overriding
    /// `train_fraction`.
    pub window_start: Option<String>,
    /// Windows start after this fraction of the observation span.
    pub train_fraction: f64,
    /// `even` or `random`.
    pub placement: String,
    /// Seeds per window.
    pub seeds: u64,
    /// First seed.
    pub seed: u64,
    /// SLO factor.
    pub slo_factor: f64,
    /// Batch slowdown factor (`None`: the `[hardware]` preset's figure).
    pub batch_slowdown: Option<f64>,
    /// The metric "gap closed" is measured on (a metric key, default
    /// `unplanned_interruptions`: the oracle is a tested reference only on that metric).
    #[serde(with = "metric_key")]
    pub gap_metric: crate::replay::Metric,
    /// The declared reference of the verdict "does hazard pay" (the regime map's `pays`):
    /// a hazard-blind policy (`least-loaded`, the default, `fastest`, `random`), `uptime`, or
    /// `best-blind` (the best of the three, chosen inside each bootstrap resample).
    pub reference: String,
    /// Warm-up, seconds: arrivals in the first `warmup_s` of each window load the cluster but
    /// are not scored (`None`: [`auto_warmup_s`] of the workload's service times).
    pub warmup_s: Option<f64>,
    /// Drain margin, seconds: arrivals in the last `drain_s` of each window are served but not
    /// scored (`None`: [`auto_drain_s`] of the workload's service times).
    pub drain_s: Option<f64>,
}

/// The largest share of a window an automatic warm-up or drain margin takes.
pub const AUTO_MARGIN_MAX_SHARE: f64 = 0.2;

/// The automatic warm-up: three mean unloaded service times (`service_s`, one per request, on
/// the cluster's median node), so that the cluster holds a steady load before scoring starts;
/// at most [`AUTO_MARGIN_MAX_SHARE`] of the window.
pub(crate) fn auto_warmup_s(service_s: &[f64], window_length_s: f64) -> f64 {
    let n = service_s.len().max(1) as f64;
    let mean = service_s.iter().sum::<f64>() / n;
    (3.0 * mean)
        .min(AUTO_MARGIN_MAX_SHARE * window_length_s)
        .max(0.0)
}

/// The automatic drain margin: the 90th percentile of the unloaded service times, so that
/// most scored arrivals can finish before the window ends; at most
/// [`AUTO_MARGIN_MAX_SHARE`] of the window.
pub(crate) fn auto_drain_s(service_s: &[f64], window_length_s: f64) -> f64 {
    let mut v: Vec<f64> = service_s
        .iter()
        .copied()
        .filter(|x| x.is_finite())
        .collect();
    v.sort_by(f64::total_cmp);
    let p90 = crate::replay::metrics::percentile_sorted(&v, 0.9).unwrap_or(0.0);
    p90.min(AUTO_MARGIN_MAX_SHARE * window_length_s).max(0.0)
}

/// The references [`ReplaySection::reference`] accepts.
pub const REFERENCES: [&str; 5] = ["least-loaded", "fastest", "random", "uptime", "best-blind"];

impl Default for ReplaySection {
    fn default() -> Self {
        ReplaySection {
            policies: Vec::new(),
            include_overlap: true,
            windows: 10,
            window_length_s: 0.0,
            window_start: None,
            train_fraction: 0.5,
            placement: "even".into(),
            seeds: 1,
            seed: 1,
            slo_factor: 5.0,
            batch_slowdown: None,
            gap_metric: crate::replay::DEFAULT_GAP_METRIC,
            reference: REFERENCES[0].into(),
            warmup_s: None,
            drain_s: None,
        }
    }
}

/// The whole scenario.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScenarioConfig {
    /// `[nodes]`.
    pub nodes: NodesConfig,
    /// `[hardware]`.
    pub hardware: HardwareConfig,
    /// `[model]`.
    pub model: ModelConfig,
    /// `[policy]`.
    pub policy: PolicyConfig,
    /// `[workload]`.
    pub workload: WorkloadConfig,
    /// `[replay]`.
    pub replay: ReplaySection,
}

/// Most windows a scenario may ask for (each window is a full replay of every policy).
pub const MAX_WINDOWS: usize = 10_000;

/// Most seeds per window a scenario may ask for.
pub const MAX_SEEDS: u64 = 1_000;

impl ScenarioConfig {
    /// Parses a scenario file; errors name the file, line and key.
    pub fn from_toml(text: &str, file: &str) -> Result<ScenarioConfig, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError {
            file: file.to_string(),
            message: e.to_string().trim_end().to_string(),
        })
    }

    /// Checks every value that does not need the store, so a bad scenario fails before any
    /// work: the same check applies whether a value came from the file or a flag. Returns what
    /// the scenario's names stand for ([`ScenarioConfig::resolve`]).
    pub fn validate(&self) -> Result<Resolved, ScenarioError> {
        let positive = |key: &'static str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(ScenarioError::invalid(key, format!("must be > 0, got {v}")))
            }
        };
        let nonneg = |key: &'static str, v: f64| {
            if v.is_finite() && v >= 0.0 {
                Ok(())
            } else {
                Err(ScenarioError::invalid(
                    key,
                    format!("must be >= 0, got {v}"),
                ))
            }
        };
        self.nodes.announced()?;
        positive("workload.rate_scale", self.workload.rate_scale)?;
        if let Some(load) = self.workload.load {
            if !(load.is_finite() && load > 0.0 && load <= 100.0) {
                return Err(ScenarioError::invalid(
                    "workload.load",
                    format!("must be in (0, 100], got {load}"),
                ));
            }
            if self.workload.rate_scale != 1.0 {
                return Err(ScenarioError::invalid(
                    "workload.load",
                    "and workload.rate_scale both set the arrival rate: give one",
                ));
            }
        }
        let r = &self.replay;
        if r.windows == 0 || r.windows > MAX_WINDOWS {
            return Err(ScenarioError::invalid(
                "replay.windows",
                format!("must be 1 to {MAX_WINDOWS}, got {}", r.windows),
            ));
        }
        if r.seeds == 0 || r.seeds > MAX_SEEDS {
            return Err(ScenarioError::invalid(
                "replay.seeds",
                format!("must be 1 to {MAX_SEEDS}, got {}", r.seeds),
            ));
        }
        nonneg("replay.window_length_s", r.window_length_s)?;
        if !REFERENCES.contains(&r.reference.as_str()) {
            return Err(ScenarioError::invalid(
                "replay.reference",
                format!(
                    "must be one of {}, got {:?}",
                    REFERENCES.join(", "),
                    r.reference
                ),
            ));
        }
        if !(0.0..=0.95).contains(&r.train_fraction) {
            return Err(ScenarioError::invalid(
                "replay.train_fraction",
                format!("must be in [0, 0.95], got {}", r.train_fraction),
            ));
        }
        if !matches!(r.placement.as_str(), "even" | "random") {
            return Err(ScenarioError::invalid(
                "replay.placement",
                format!("{:?}: use even or random", r.placement),
            ));
        }
        if let Some(t) = &r.window_start {
            parse_time(t)
                .map_err(|e| ScenarioError::invalid("replay.window_start", e.to_string()))?;
        }
        positive("replay.slo_factor", r.slo_factor)?;
        if let Some(b) = r.batch_slowdown {
            nonneg("replay.batch_slowdown", b)?;
        }
        if let Some(w) = r.warmup_s {
            nonneg("replay.warmup_s", w)?;
        }
        if let Some(d) = r.drain_s {
            nonneg("replay.drain_s", d)?;
        }
        for p in &r.policies {
            p.parse::<PolicyKind>().map_err(|_| {
                ScenarioError::invalid(
                    "replay.policies",
                    format!(
                        "unknown policy {p:?}; policies: {}",
                        PolicyKind::ALL.map(|k| k.name()).join(", ")
                    ),
                )
            })?;
        }
        let p = &self.policy;
        nonneg("policy.transfer_overhead_s", p.transfer_overhead_s)?;
        nonneg("policy.recompute_overhead_s", p.recompute_overhead_s)?;
        nonneg("policy.stall_penalty_s", p.stall_penalty_s)?;
        positive("policy.check_interval_s", p.check_interval_s)?;
        nonneg("policy.hysteresis_s", p.hysteresis_s)?;
        nonneg("policy.min_remaining_s", p.min_remaining_s)?;
        let resolved = self.resolve()?;
        self.hardware.overrides.validate("hardware")?;
        if let Some(a) = &self.nodes.filter_attribute {
            NodeAttribute::parse(a, "nodes.filter_attribute")?;
        }
        for g in &self.hardware.groups {
            g.overrides.validate("hardware.groups")?;
        }
        Ok(resolved)
    }

    /// The presets and group attributes the scenario names, looked up once (an unknown name is
    /// the error [`ScenarioConfig::validate`] reports).
    pub fn resolve(&self) -> Result<Resolved, ScenarioError> {
        let groups = self
            .hardware
            .groups
            .iter()
            .map(|g| {
                let attribute = NodeAttribute::parse(&g.attribute, "hardware.groups.attribute")?;
                let preset = match &g.preset {
                    Some(p) => Some(presets::find_hardware(p)?),
                    None => None,
                };
                Ok((attribute, preset))
            })
            .collect::<Result<Vec<_>, ScenarioError>>()?;
        Ok(Resolved {
            hardware: presets::find_hardware(&self.hardware.preset)?,
            link: presets::find_link(&self.hardware.link)?,
            model: presets::find_model(&self.model.preset)?,
            groups,
        })
    }
}

/// What a scenario's names stand for, looked up once ([`ScenarioConfig::resolve`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The `[hardware]` preset.
    pub hardware: presets::HardwarePreset,
    /// The link preset.
    pub link: presets::LinkPreset,
    /// The model preset.
    pub model: presets::ModelPreset,
    /// Each `[[hardware.groups]]` entry's attribute and preset, in order.
    pub groups: Vec<(NodeAttribute, Option<presets::HardwarePreset>)>,
}

/// The node attributes a scenario can select or group nodes by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeAttribute {
    /// `zone`.
    Zone,
    /// `instance_type`.
    InstanceType,
    /// `node_group`.
    NodeGroup,
}

impl NodeAttribute {
    /// Parses an attribute name; `key` names the scenario key in the error.
    pub fn parse(name: &str, key: &'static str) -> Result<NodeAttribute, ScenarioError> {
        match name {
            "zone" => Ok(NodeAttribute::Zone),
            "instance_type" => Ok(NodeAttribute::InstanceType),
            "node_group" => Ok(NodeAttribute::NodeGroup),
            other => Err(ScenarioError::invalid(
                key,
                format!("unknown node attribute {other:?}: use zone, instance_type or node_group"),
            )),
        }
    }
}

impl HardwareOverrides {
    /// Checks that every explicit figure is positive.
    pub fn validate(&self, section: &'static str) -> Result<(), ScenarioError> {
        for (name, v) in [
            ("prefill_tok_s", self.prefill_tok_s),
            ("decode_tok_s", self.decode_tok_s),
            ("bandwidth_bytes_s", self.bandwidth_bytes_s),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && v > 0.0) {
                    return Err(ScenarioError::invalid(
                        section,
                        format!("{name} must be > 0, got {v}"),
                    ));
                }
            }
        }
        if self.slots == Some(0) {
            return Err(ScenarioError::invalid(section, "slots must be at least 1"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_file_equals_default_struct() {
        let parsed = ScenarioConfig::from_toml(DEFAULT_CONFIG, "default").unwrap();
        assert_eq!(parsed, ScenarioConfig::default());
    }

    #[test]
    fn unknown_keys_are_errors_with_a_location() {
        let e = ScenarioConfig::from_toml("[replay]\nwindow = 3\n", "s.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.toml") && e.contains("window"), "{e}");
    }
}

#[cfg(test)]
mod override_tests {
    use super::*;

    #[test]
    fn hardware_overrides_parse_and_typos_are_caught() {
        let cfg = ScenarioConfig::from_toml(
            "[hardware]\npreset = \"a100\"\ndecode_tok_s = 12.5\n[[hardware.groups]]\nattribute = \"zone\"\nvalue = \"us-east\"\nslots = 2\n",
            "h.toml",
        )
        .unwrap();
        assert_eq!(cfg.hardware.overrides.decode_tok_s, Some(12.5));
        assert_eq!(cfg.hardware.groups[0].overrides.slots, Some(2));
        assert_eq!(cfg.hardware.groups[0].preset, None);
        let e = ScenarioConfig::from_toml("[hardware]\ndecode_toks = 3\n", "h.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("decode_toks"), "{e}");
    }

    #[test]
    fn validation_catches_what_the_file_and_the_flags_can_both_set() {
        assert!(ScenarioConfig::default().validate().is_ok());
        let mut cfg = ScenarioConfig::default();
        cfg.workload.rate_scale = 0.0;
        let e = cfg.validate().unwrap_err().to_string();
        assert_eq!(e, "workload.rate_scale must be > 0, got 0");
        let cfg = ScenarioConfig::from_toml("[workload]\nrate_scale = 0\n", "r.toml").unwrap();
        assert_eq!(cfg.validate().unwrap_err().to_string(), e);
        let mut cfg = ScenarioConfig::default();
        cfg.hardware.link = "wam".into();
        assert_eq!(
            cfg.validate().unwrap_err().to_string(),
            "unknown link \"wam\"; did you mean wan?; known: wan, 1gbe, 10gbe, rdma, nvlink"
        );
        let mut cfg = ScenarioConfig::default();
        cfg.replay.policies = vec!["fastets".into()];
        assert!(cfg.validate().is_err());
        let mut cfg = ScenarioConfig::default();
        cfg.hardware.overrides.decode_tok_s = Some(-1.0);
        assert!(cfg.validate().is_err());
    }
}
