//! A fleet's pools: each `[[pools]]` entry of a scenario is nodes bought one way (a spot
//! source, an on-demand reserve) with their hardware and price ([`PoolConfig`]). A scenario
//! without `[[pools]]` is one pool, its `[nodes]` section
//! ([`super::config::ScenarioConfig::pool_list`]).

use serde::{Deserialize, Serialize};

use super::error::ScenarioError;
use super::hardware::{HardwareOverrides, NodeAttribute};
use crate::fit::causes::CauseGroup;
use crate::policy::presets;

/// One `[[pools]]` entry: nodes bought one way, with their hardware and price. Its nodes are
/// a source's (`source`, with an optional filter and a seeded `sample`) or `always_up`
/// on-demand nodes that never fail.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PoolConfig {
    /// Name (default: the source, or `on-demand`); node names are `<pool>/<node>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Availability source of the pool's nodes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Attribute to filter on (`zone`, `instance_type`, `node_group`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_attribute: Option<String>,
    /// Substring the attribute must contain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_value: Option<String>,
    /// Seeded random sample of this many of the source's nodes (0 = all); more than the
    /// source has is an error.
    pub sample: usize,
    /// This many on-demand (or reserved) nodes that are up for the whole replay, with no hazard
    /// (instead of `source`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub always_up: Option<u32>,
    /// End causes announced in advance (as `nodes.announced_causes`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub announced_causes: Vec<String>,
    /// Hardware preset (default: `hardware.preset`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Link tier (default: `hardware.link`); a hop between pools runs at the slower end's rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// Dollars per node-hour, billed while a node is up.
    pub price_per_node_hour: f64,
    /// Explicit figures (prefill_tok_s, decode_tok_s, bandwidth_bytes_s, slots,
    /// kv_capacity_tokens), overriding the preset's and `[hardware]`'s.
    #[serde(flatten)]
    pub overrides: HardwareOverrides,
}

impl PoolConfig {
    /// The pool's name: `name`, else its source, else `on-demand`.
    pub fn label(&self) -> String {
        match (&self.name, &self.source) {
            (Some(n), _) => n.clone(),
            (None, Some(s)) => s.clone(),
            (None, None) => "on-demand".into(),
        }
    }

    /// The pool's announced-cause patterns, parsed (as `nodes.announced_causes`).
    pub fn announced(&self) -> Result<Vec<CauseGroup>, ScenarioError> {
        parse_announced(&self.announced_causes)
    }

    /// Checks what can be checked without the store; `index` is the pool's position in
    /// `[[pools]]`. Errors name the pool and the key ([`ScenarioError::Pool`]).
    pub fn validate(&self, index: usize) -> Result<(), ScenarioError> {
        let err = |key: &'static str, message: String| ScenarioError::Pool {
            pool: format!("{:?} (pools[{index}])", self.label()),
            key,
            message,
        };
        match (&self.source, self.always_up) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "always_up",
                    "and source both give the pool's nodes: give one".into(),
                ))
            }
            (None, None) => {
                return Err(err(
                    "source",
                    "missing: a pool has a source (availability trace) or always_up = N".into(),
                ))
            }
            (None, Some(0)) => {
                return Err(err(
                    "always_up",
                    "must be at least 1: the pool has no nodes".into(),
                ))
            }
            (None, Some(_)) => {
                if self.filter_attribute.is_some() || self.filter_value.is_some() || self.sample > 0
                {
                    return Err(err(
                        "always_up",
                        "pools have no source to filter or sample: drop filter_attribute, filter_value and sample".into(),
                    ));
                }
                if !self.announced_causes.is_empty() {
                    return Err(err(
                        "announced_causes",
                        "needs a source: always-up nodes never end".into(),
                    ));
                }
            }
            (Some(s), None) if s.trim().is_empty() => return Err(err("source", "is empty".into())),
            (Some(_), None) => {}
        }
        let price = self.price_per_node_hour;
        if !(price.is_finite() && price >= 0.0) {
            return Err(err(
                "price_per_node_hour",
                format!("must be >= 0, got {price}"),
            ));
        }
        if let Some(a) = &self.filter_attribute {
            NodeAttribute::parse(a, "filter_attribute")
                .map_err(|e| err("filter_attribute", e.to_string()))?;
        }
        if self.filter_attribute.is_some() != self.filter_value.is_some() {
            return Err(err(
                "filter_value",
                "and filter_attribute go together: give both or neither".into(),
            ));
        }
        self.announced()
            .map_err(|e| err("announced_causes", e.to_string()))?;
        if let Some(name) = &self.preset {
            presets::find_hardware(name).map_err(|e| err("preset", e.to_string()))?;
        }
        if let Some(name) = &self.link {
            presets::find_link(name).map_err(|e| err("link", e.to_string()))?;
        }
        self.overrides
            .validate("pools")
            .map_err(|e| err("hardware", e.to_string()))
    }
}

/// Announced-cause patterns, parsed (an error names `nodes.announced_causes` and the pattern):
/// the one parser of a pool's and of `[nodes]`'s patterns.
pub(crate) fn parse_announced(patterns: &[String]) -> Result<Vec<CauseGroup>, ScenarioError> {
    patterns
        .iter()
        .map(|p| {
            p.parse::<CauseGroup>()
                .map_err(|e| ScenarioError::invalid("nodes.announced_causes", e))
        })
        .collect()
}
