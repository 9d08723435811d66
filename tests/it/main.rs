//! The one integration-test binary (so the static DuckDB links once).

mod cli_analysis;
mod cli_fit;
mod cli_replay;
mod cli_store;
mod common;
mod policy_claims;
mod policy_cost;
mod policy_migration;
mod policy_policies;
mod policy_trigger;
mod public_traces;
mod replay_engine;
mod replay_grid;
mod replay_leakage;
mod replay_props;
mod replay_support;
mod samples;
mod scenario_leakage;
mod survival_golden;
mod survival_priors;
mod survival_props;
mod survival_validate;
mod tui_common;
mod tui_e2e;
mod tui_snapshots;
mod tui_update;
