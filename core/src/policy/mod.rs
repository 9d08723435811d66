//! Hazard-aware placement and pre-emptive migration of LLM requests on unreliable nodes.
//!
//! One expected-cost function, two decisions (design note "The algorithm"):
//!
//! * [`cost`]: `E_i(r) = T_i + L_i`, with `L_i` the expected unplanned loss, a 16-cell sum over
//!   the node's conditional survival curve;
//! * placement `i* = argmin E_i` and hazard-motivated migration, both behind the [`Policy`]
//!   trait ([`policies`]), next to the hazard-blind baselines and the oracle;
//! * [`band`]: placement under forecast uncertainty (ties within the forecast's error, broken
//!   by load), the rule every cost-based policy uses with estimated lengths;
//! * [`migration`]: planned move cost `C_planned = min(transfer, recompute)`, the crossover
//!   `c*`, the overlapped variant, the trigger and its guards;
//! * the survival curves the policy consumes live in the survival stage
//!   ([`crate::survival::curve`]: [`crate::survival::curve::ConditionalSurvival`] and its implementations);
//! * [`iteration`]: the iteration-level step model (continuous batching with chunked
//!   prefill), the second implementation of the service-time model;
//! * [`service`]: the service-time model (how a node serves requests) and its forecast of
//!   `T_i`, shared with the replay engine;
//! * [`calibration`] and [`measurements`]: the step model fitted to published measurements,
//!   and those measurements row by row;
//! * [`model`]: the per-decision views (allocation-free for a simulator);
//! * [`presets`]: model KV sizes, hardware rates and link tiers, with sources;
//! * [`retained`]: the retained-state term `R_i` (a node's end after a turn completes costs
//!   its conversation's next turn a re-prefill);
//! * [`routers`]: the prefix-cache routers `cache-aware` (SGLang) and `session-affinity`
//!   (vLLM production-stack);
//! * [`analysis`]: the `trigger` and `crossover` tables;
//! * [`record`]: a decision's inputs as data, and the decision again from them.
//!
//! No input panics and nothing on the hot paths allocates. Comparisons are written as
//! `!(x > y)` on purpose where NaN must take the safe branch.

#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod analysis;
pub mod band;
pub mod calibration;
pub mod cost;
pub mod iteration;
pub mod measurements;
pub mod migration;
pub mod model;
pub mod policies;
pub mod presets;
pub mod record;
pub mod retained;
pub mod routers;
pub mod service;

pub use cost::{NodeCost, RiskModel};
pub use migration::{Crossover, MoveMethod};
pub use model::{ClusterView, ForecastKind, Foresight, NodeIdx, NodeView, Params, RequestView};
pub use policies::{build, Explanation, Outcome, Policy, PolicyKind, StandardPolicy};
