//! The scenario file (TOML). Every field has a default; flags of `hazardserve replay` override
//! the file. `hazardserve replay --write-config` prints [`DEFAULT_CONFIG`].

use serde::{Deserialize, Serialize};

use super::choices::{estimator_text, metric_key};
pub use super::choices::{CurveReading, TailModel};
use super::error::{ConfigError, ScenarioError};
pub use super::hardware::{HardwareOverrides, NodeAttribute};
pub use super::pools::PoolConfig;
pub use super::template::DEFAULT_CONFIG;
use crate::fit::causes::CauseGroup;
use crate::fit::parse_time;
use crate::policy::presets;
use crate::policy::{ForecastKind, Params, PolicyKind};
use crate::replay::LengthEstimator;

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
    /// Dollars per node-hour, billed while a node is up (0: the cost metrics are undefined).
    #[serde(skip_serializing_if = "is_zero")]
    pub price_per_node_hour: f64,
}

/// Whether a price is 0 (left out of the scenario's TOML then, so older runs' content keys
/// stay as they were).
fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for NodesConfig {
    fn default() -> Self {
        NodesConfig {
            source: "sample-spot".into(),
            filter_attribute: None,
            filter_value: None,
            sample: 0,
            announced_causes: Vec::new(),
            price_per_node_hour: 0.0,
        }
    }
}

impl NodesConfig {
    /// The announced-cause patterns, parsed (an error names the key and the pattern).
    pub fn announced(&self) -> Result<Vec<CauseGroup>, ScenarioError> {
        super::pools::parse_announced(&self.announced_causes)
    }

    /// The `[nodes]` section as the one pool of a scenario without `[[pools]]`.
    pub fn as_pool(&self) -> PoolConfig {
        PoolConfig {
            name: None,
            source: Some(self.source.clone()),
            filter_attribute: self.filter_attribute.clone(),
            filter_value: self.filter_value.clone(),
            sample: self.sample,
            always_up: None,
            announced_causes: self.announced_causes.clone(),
            preset: None,
            link: None,
            price_per_node_hour: self.price_per_node_hour,
            overrides: HardwareOverrides::default(),
        }
    }

    /// True when `cause` is announced under `patterns` ([`NodesConfig::announced`]).
    pub fn is_announced(patterns: &[CauseGroup], cause: &str) -> bool {
        patterns.iter().any(|g| g.matches(cause))
    }
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
    /// The service-time model: `iteration` (the default: continuous batching with chunked
    /// prefill, [`crate::policy::iteration`]) or `simple` (per-request service, the ablation).
    pub engine: String,
    /// Whether nodes keep a prefix cache for a workload with prefix blocks (default true; the
    /// iteration engine only, [`crate::replay::prefix`]). `false` replays every request
    /// statelessly, its blocks ignored; a prefix workload under the simple engine needs it.
    pub prefix_cache: bool,
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
            engine: "iteration".into(),
            prefix_cache: true,
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
    /// How `T_i` is forecast and what placement prices besides it: `stationary`, `marginal`
    /// or `own` ([`ForecastKind`]).
    pub forecast: ForecastKind,
    /// Draws of the unknown lengths the forecast averages over ([`Params::length_draws`]).
    pub length_draws: u32,
    /// Price the retained-state term ([`Params::retained_state`]; default true, false is
    /// the ablation).
    pub retained_state: bool,
    /// Move idle conversations' prefix state off risky nodes ([`Params::idle_migration`];
    /// default true, false is the ablation).
    pub idle_migration: bool,
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
            retained_state: p.retained_state,
            idle_migration: p.idle_migration,
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
            retained_state: self.retained_state,
            idle_migration: self.idle_migration,
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
    /// Offered load as a fraction of each window's up capacity under the configured engine
    /// ([`crate::scenario::build::OfferedLoad`]; replaces `rate_scale`).
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
    /// With prefix caching, add the stateful ablations to the comparison: `hazard
    /// --no-retained` (without the retained-state term) and `hazard --no-idle` (without the
    /// idle-state migration).
    pub include_ablations: bool,
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
    /// `best-blind` (the best of the three, Bonferroni-corrected for the choice).
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
            include_ablations: false,
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
    /// `[[pools]]`: a fleet of several pools (replaces `[nodes]`; empty: `[nodes]` is the one
    /// pool).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolConfig>,
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
    /// `[hardware] engine` parsed ([`crate::policy::iteration::EngineKind`]).
    pub fn engine(&self) -> Result<crate::policy::iteration::EngineKind, ScenarioError> {
        crate::policy::iteration::EngineKind::parse(&self.hardware.engine).ok_or_else(|| {
            ScenarioError::invalid(
                "hardware.engine",
                format!(
                    "unknown engine {:?}: use simple or iteration",
                    self.hardware.engine
                ),
            )
        })
    }

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
        self.engine()?;
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
        self.validate_pools()?;
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

    /// The fleet's pools: `[[pools]]`, or `[nodes]` as one pool.
    pub fn pool_list(&self) -> Vec<PoolConfig> {
        if self.pools.is_empty() {
            vec![self.nodes.as_pool()]
        } else {
            self.pools.clone()
        }
    }

    /// The availability sources the scenario reads, in pool order, each once.
    pub fn node_sources(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.pool_list() {
            if let Some(s) = p.source {
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// What a run's `nodes_source` records: the one source, or the pools' sources (and
    /// `on-demand` for always-up pools) joined by `+`.
    pub fn nodes_label(&self) -> String {
        if self.pools.is_empty() {
            return self.nodes.source.clone();
        }
        let mut parts = self.node_sources();
        if self.pools.iter().any(|p| p.always_up.is_some()) {
            parts.push("on-demand".into());
        }
        parts.join("+")
    }

    /// Checks every `[[pools]]` entry that can be checked without the store; errors name the
    /// pool and the key.
    fn validate_pools(&self) -> Result<(), ScenarioError> {
        if self.pools.is_empty() {
            let p = self.nodes.price_per_node_hour;
            if !(p.is_finite() && p >= 0.0) {
                return Err(ScenarioError::invalid(
                    "nodes.price_per_node_hour",
                    format!("must be >= 0, got {p}"),
                ));
            }
            return Ok(());
        }
        if self.nodes != NodesConfig::default() {
            return Err(ScenarioError::invalid(
                "pools",
                "and [nodes] both choose the nodes: give [[pools]] only (a [nodes] section is one pool)",
            ));
        }
        if self.pools.len() > usize::from(u16::MAX) {
            return Err(ScenarioError::invalid("pools", "more than 65535 pools"));
        }
        let mut names: Vec<String> = Vec::new();
        for (i, p) in self.pools.iter().enumerate() {
            let label = p.label();
            if names.contains(&label) {
                return Err(ScenarioError::Pool {
                    pool: format!("{label:?} (pools[{i}])"),
                    key: "name",
                    message: format!(
                        "{label:?} is the name of an earlier pool: give each pool its own name"
                    ),
                });
            }
            names.push(label);
            p.validate(i)?;
        }
        if self.node_sources().is_empty() {
            return Err(ScenarioError::invalid(
                "pools",
                "need at least one pool with a source: an always-up fleet has no trace clock to place windows on",
            ));
        }
        if self.replay.window_start.is_some() && self.node_sources().len() > 1 {
            return Err(ScenarioError::invalid(
                "replay.window_start",
                "is a time on one trace's clock, but the pools read several sources: each source's windows start after its own train_fraction",
            ));
        }
        Ok(())
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
        let hardware = presets::find_hardware(&self.hardware.preset)?;
        let link = presets::find_link(&self.hardware.link)?;
        let pools = self
            .pool_list()
            .iter()
            .map(|p| {
                Ok((
                    match &p.preset {
                        Some(name) => Some(presets::find_hardware(name)?),
                        None => None,
                    },
                    match &p.link {
                        Some(name) => presets::find_link(name)?,
                        None => link,
                    },
                ))
            })
            .collect::<Result<Vec<_>, ScenarioError>>()?;
        Ok(Resolved {
            hardware,
            link,
            model: presets::find_model(&self.model.preset)?,
            groups,
            pools,
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
    /// Each pool's ([`ScenarioConfig::pool_list`]) own preset (`None`: `[hardware]`'s) and
    /// link.
    pub pools: Vec<(Option<presets::HardwarePreset>, presets::LinkPreset)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_file_equals_default_struct() {
        let parsed = ScenarioConfig::from_toml(DEFAULT_CONFIG, "default").unwrap();
        assert_eq!(parsed, ScenarioConfig::default());
    }

    /// One default everywhere: a scenario that names no engine or forecast, the library's
    /// [`crate::replay::ReplayConfig`] and [`Params`] all run the iteration engine with the
    /// `stationary` forecast.
    #[test]
    fn the_default_is_the_iteration_engine_with_the_stationary_forecast() {
        use crate::policy::iteration::EngineKind;
        let sc = ScenarioConfig::from_toml("", "empty.toml").unwrap();
        assert_eq!(sc.engine().unwrap(), EngineKind::Iteration);
        assert_eq!(sc.policy.forecast, ForecastKind::Stationary);
        let lib = crate::replay::ReplayConfig::default();
        assert_eq!(lib.engine, EngineKind::Iteration);
        assert_eq!(lib.params.forecast, ForecastKind::Stationary);
        assert_eq!(sc.policy.params(0.0).forecast, lib.params.forecast);
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
