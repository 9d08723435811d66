//! Replay: an LLM request workload served by nodes whose up/down behaviour comes from a real
//! availability trace, under each scheduling policy of [`crate::policy`], scored per request
//! and per policy.
//!
//! * [`input`]: the plain-struct inputs (node timelines and specs with their survival curves,
//!   requests, window, [`ReplayConfig`]) and the expansion of a workload into a run's jobs;
//! * [`estimate`]: the output-length estimators and the posterior the policies price with;
//! * [`prefix`]: prompt prefixes as content-addressed blocks and a node's prefix cache;
//! * [`queue`]: the `(time, seq)`-ordered event queue (integer microseconds);
//! * [`bound`]: the analytic lower bound reported as the `bound` row;
//! * [`output`]: what one run is ([`RunSpec`]) and produces ([`RunOutput`]);
//! * [`engine`]: the discrete-event simulation of one run ([`simulate`]), its serving model
//!   and failure/migration semantics;
//! * [`metrics`]: per-request [`RequestRecord`]s, the one list of reported metrics and per-run
//!   summaries;
//! * [`compare`]: per-policy rows with bootstrap CIs over windows, paired differences against
//!   `fastest` and the best hazard-blind baseline, and the share of the oracle gap closed;
//! * [`run`]: the policies x windows x seeds x parameters grid on rayon ([`run_grid`]);
//! * [`synthetic`]: Weibull up/down timelines and Poisson workloads for tests and benchmarks.
//!
//! Determinism: same inputs and seed give bit-identical records, whatever the thread count.

//!
//! Comparisons are written `!(x > y)` on purpose where NaN must take the safe branch.

#![warn(missing_docs)]
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod bound;
pub mod compare;
pub mod engine;
pub mod estimate;
pub mod input;
pub mod metrics;
pub mod output;
pub mod prefix;
pub mod queue;
pub mod run;
pub mod stats;
pub mod synthetic;

pub use compare::{
    aggregate, paired, window_values, ForecastCalibration, GapClosed, GapState, PairedDiff,
    PolicyLabel, PolicySummary, ReliabilityRow, SummaryParseError, Versus,
};
pub use engine::{simulate, simulate_with};
pub use estimate::{LengthEstimator, UnknownEstimator};
pub use input::{
    shrunk_exp_rates, CensoredEnds, Cluster, Node, NodeSpec, Pool, ReplayConfig, ReplayError,
    ReplayJob, Request, RunCost, UpSession, Window, Workload,
};
pub use metrics::{
    AggregateOptions, Calibration, DropReason, Metric, MetricDef, ReliabilityBin, RequestRecord,
    RunMetrics, RunSummary, DEFAULT_GAP_METRIC, METRICS, RELIABILITY_BINS,
};
pub use output::{LoggedDecision, RunOutput, RunSpec, RunStats};
pub use prefix::{infer_conversations, Prefix, PrefixCache};
pub use run::{run_grid, run_grid_metrics, run_grid_streamed, summarize, Grid, ParamPoint};
pub use synthetic::{PoissonWorkload, SyntheticCluster};
