//! The pure stack of hazardserve: statistics and simulation without storage or I/O, so that
//! front ends that must not link the store (the Python extension) share the exact code the
//! command line runs. The `hazardserve` crate re-exports every module here under the same
//! path (`hazardserve::survival`, `hazardserve::policy`, ...).
//!
//! - [`survival`]: Kaplan-Meier, shrinkage, parametric fits, validation and hazard priors;
//! - [`policy`]: the cost model and every scheduling policy;
//! - [`replay`]: the discrete-event simulator and its metrics;
//! - [`rng`]: the small seeded random number generator every stage shares;
//! - [`diag`]: messages at one process-wide verbosity and the shared error helpers.
//!
//! The layers run one way: `rng`, `diag` -> `survival` -> `policy` -> `replay`.

pub mod diag;
pub mod policy;
pub mod replay;
pub mod rng;
pub mod survival;
