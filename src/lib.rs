//! hazardserve: does scheduling LLM requests by each node's conditional hazard beat
//! hazard-blind scheduling on unreliable nodes, and how close does it get to an oracle?
//!
//! The library has one module per stage: [`store`] (Parquet + DuckDB catalog), the format
//! adapters in the `hazardserve-ingest` crate, [`synth`] (sample generator), [`output`] (the one
//! table/CSV/JSON renderer) and [`cli`] (the command-line front end that `main` calls).

pub mod cli;
pub mod fit;
pub mod output;
pub mod policy;
pub mod public;
pub mod queries;
pub mod replay;
pub mod rng;
pub mod scenario;
pub mod store;
pub mod survival;
pub mod synth;
pub mod tui;

pub use hazardserve_ingest as ingest;
