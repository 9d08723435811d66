//! The hardware a scenario gives its nodes beyond a preset: explicit serving figures
//! ([`HardwareOverrides`], in `[hardware]`, `[[hardware.groups]]` and `[[pools]]`), and the node
//! attributes a scenario selects or groups nodes by ([`NodeAttribute`]).

use serde::{Deserialize, Serialize};

use super::error::ScenarioError;

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
