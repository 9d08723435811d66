//! The commented default scenario, `hazardserve replay --write-config`'s output: every key of
//! [`super::config::ScenarioConfig`] with its default and what it means (a test checks that it
//! parses to the default scenario).

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
# Dollars per node-hour, billed while a node is up; gives the `dollars` and
# `goodput_per_dollar` metrics (0: undefined).
# price_per_node_hour = 2.5

# A fleet of several pools instead of [nodes]: each [[pools]] entry has its nodes (`source`
# with optional filter_attribute/filter_value/sample/announced_causes, or `always_up = N`
# on-demand nodes that never fail), its hardware (`preset`, `link`, and any of prefill_tok_s,
# decode_tok_s, bandwidth_bytes_s, slots, kv_capacity_tokens), `price_per_node_hour` and an
# optional `name`. Each source's survival priors and windows use its own training cut; all
# pools share one queue and one link model (a hop runs at the slower end's bandwidth).
# [[pools]]
# name = "spot"
# source = "skynomad-h100"
# preset = "h100"
# price_per_node_hour = 2.5
# [[pools]]
# name = "on-demand"
# always_up = 2
# preset = "a100"
# price_per_node_hour = 3.7

[hardware]
# Preset of every node: rtx4090, m1-max, a100, h100, wan-peer, phone (figures and sources:
# `hazardserve presets`).
preset = "a100"
# Concurrent requests per node and KV-cache capacity (tokens).
slots = 8
kv_capacity_tokens = 200000
# Link between nodes: wan, 1gbe, 10gbe, rdma, nvlink.
link = "10gbe"
# Service-time model: "iteration" (the default: each step batches the decodes with a chunk of
# the oldest prefill under a token budget; the step is a roofline, flat while memory-bound and
# linear once compute-bound, plus the decoders' context read and the prompt's attention;
# `hazardserve presets --fidelity` shows its calibration) or "simple" (the ablation:
# per-request prefill at the preset's rate, decode slowed by batch_slowdown).
engine = "iteration"
# Prefix caching (the iteration engine): with a workload that has prefix blocks (mooncake,
# qwen-bailian), every node keeps vLLM-style cached prompt blocks, which its end destroys;
# false replays every request statelessly (the simple engine needs it with such a workload).
prefix_cache = true
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
# How the cost-based policies (fastest, hazard, hazard-nomigrate, memoryless, hazard-pooled,
# hazard-truth, oracle) forecast a request's completion T on a node, and what they price
# besides it: "stationary" (the default: the request starts as the node serves it now, then
# decodes beside as many requests as the node holds now for its whole stay, as under load a
# freed slot is refilled; T + D, D the delay it imposes on them), "marginal" (T + D with the
# node replayed to its end with and without the request: its requests drain, nothing
# arrives) or "own" (T only, draining); the book (docs/src/answers.md, "What estimated
# output lengths change") says why stationary is the default.
forecast = "stationary"
# With estimated output lengths: how many draws of the unknown lengths (every request's,
# from its estimate's noise) the forecast averages T over; 1 prices every request at its
# expected length.
length_draws = 1
# With conversations and prefix caching: price the retained-state term (a node's end after a
# turn completes costs the conversation's next turn a re-prefill), and copy idle
# conversations' cached blocks off risky nodes (the policies that migrate). false: ablations.
retained_state = true
idle_migration = true
# How policies read the fitted survival curves: "linear" (each Kaplan-Meier drop spread over
# the interval before it, so short horizons see the hazard) or "step" (the steps as they are).
survival_curve = "linear"
# How the curves are read past their last knot (the oldest nodes): "exponential" (the pooled
# average tail hazard), "last-interval" (each node's hazard over its last interval), "flat"
# (no hazard past the data) or "weibull" (the pooled Weibull fit, so a decreasing hazard keeps
# decreasing; exponential when the fit has too few events). The default pair (linear,
# exponential) is the regime map's answer: paired against it over 120 contexts, every other
# reading was slower (`hazardserve sweep summary regime-map --axis
# policy.survival_curve+policy.tail`, the book, docs/src/answers.md).
tail = "exponential"
# The generating laws of a synthetic fleet (the laws.csv `synth traces --fleet two-class`
# writes), for `hazard-truth`: `L` from the law each node's sessions were drawn from. Empty, or
# no row for nodes.source: hazard-truth is not run.
truth = ""

[workload]
# Request source in the store (ingested with azure-llm, mooncake, qwen-bailian or lengths-csv).
source = "sample-requests"
# Output-length estimate the policies see: exact, lognormal:SIGMA, bucket.
estimator = "lognormal:0.5"
# Multiply the arrival rate; loop the workload to fill the window.
rate_scale = 1.0
# Or set the load instead: scale each window's arrival rate so its offered work is this
# fraction of that window's up capacity (from the node timelines and the hardware rates,
# under the configured engine; a window with no node up is not replayed; see
# `hazardserve replay --help`). Replaces rate_scale.
# load = 0.6
loop_workload = true

[replay]
# Policies to compare (hazard, hazard-nomigrate, memoryless, hazard-pooled, hazard-truth,
# fastest, least-loaded, random, uptime, oracle); empty = all (hazard-truth only where policy.truth
# knows the fleet's laws). `hazard --overlap` is added when include_overlap is true.
policies = []
include_overlap = true
# With prefix caching: also run `hazard --no-retained` (without the retained-state term) and
# `hazard --no-idle` (without the idle-state migration), the stateful ablations.
include_ablations = false
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
# The declared reference of the load forecast's verdict: `fastest` against it on mean
# completion (the regime map's `load_forecast`, q < 0.05 over its cells; `vs_reference` is
# `hazard` against it). The hazard term's verdict (`pays`) is `hazard` against its twin
# `hazard-pooled` whatever the reference. One of least-loaded, fastest, random, uptime, or
# best-blind (the best of fastest, least-loaded and random, Bonferroni-corrected for the choice).
reference = "least-loaded"
# Steady-state windows: arrivals in the first warmup_s seconds of a window load the cluster but
# are not scored, and arrivals in its last drain_s seconds are served but not scored (too late
# to finish). Default: warmup_s = 3 mean service times, drain_s = the 90th percentile service
# time (each request's prompt and output at the median node's unloaded rates), each at most a
# fifth of the window; replay prints the values it chose. 0 scores every arrival.
# warmup_s = 0
# drain_s = 0
"#;
