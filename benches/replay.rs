//! Replay throughput: simulated requests per second and nanoseconds per event for `fastest`
//! (target >= 100,000 requests/s), `hazard` (check interval 5 s) and the clairvoyant `oracle`
//! (event-driven checks; both targets >= 50,000 requests/s) on 100 nodes with synthetic Weibull up/down timelines and a Poisson workload, on one
//! core (each run is single-threaded).
//!
//! The same at 1,000 nodes with ten times the arrival rate (the same load per node) over a
//! shorter window (`*_1000_nodes`): the book's scaling row (docs/src/performance.md). And both
//! fleet sizes busy (`*_busy`: 1.2 requests per second per node for 120 s, about 85 % of the capacity, so that most
//! nodes are full at any instant): a placement visits only the nodes with a free slot, so the
//! cost per request should grow far less than tenfold from 100 to 1,000 nodes there.
//!
//! The rows without a suffix run the simple engine (the ablation) with the `own` forecast.
//! `*_100_nodes_iteration`: the 100-node case under the default configuration, the
//! iteration-level engine (continuous batching with chunked prefill, the nodes' decode step
//! read from the simple engine's configuration, no batch slowdown) with the `stationary`
//! forecast (targets >= 100,000 requests/s for `fastest` and >= 50,000 for `hazard`), at the
//! same offered load as the simple 100-node case: the arrival rate scaled
//! by the ratio of the two engines' capacities ([`offered_load`]: the iteration engine serves
//! prefills one after another and stalls the decoders meanwhile, so it serves fewer requests
//! per second on the same nodes). Past saturation: `*_100_nodes_iteration_same_rate`, the
//! iteration engine on the simple case's arrivals (more than it can serve), and
//! `*_100_nodes_overload`, the simple engine at twice the rate, past its own capacity: queues
//! grow through the window, and each placement forecasts them.
//!
//! Needs `[[bench]] name = "replay" harness = false` in Cargo.toml. Prints a summary line per
//! policy (`requests/s`, `ns/event`) before the criterion measurements.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use hazardserve::policy::iteration::{EngineKind, StepShape};
use hazardserve::policy::{ForecastKind, Params, PolicyKind};
use hazardserve::replay::{
    simulate, Cluster, PoissonWorkload, ReplayConfig, RunSpec, SyntheticCluster, Window, Workload,
};
use hazardserve::scenario::build::{offered_load, OfferedLoad};

const HOUR_US: i64 = 3_600_000_000;
const WINDOW_S: f64 = 300.0;

/// `nodes` synthetic nodes and a Poisson workload of `per_node` requests per second per node
/// (8 slots per node, ~5 s of unloaded service per request: 1.0 is ~60 % of the slots at their
/// unloaded rate under the simple engine, and `workload.load` 0.84, which also counts the
/// batch slowdown of full slots; the summary prints the latter) over `window_s` seconds.
/// Under the iteration engine the nodes' step is the simple engine's decode rate without batch
/// slowdown (the default configuration) read as a step: k decoders alone step in about 1 / d
/// (the memory floor; each decode token's compute at the node's prefill rate adds under 1 %
/// at 8 decoders). What differs is the iteration model's own work: prefills that contend and
/// stall the decoders.
fn inputs(
    nodes: usize,
    per_node: f64,
    window_s: f64,
    engine: EngineKind,
) -> (Cluster, Workload, Window) {
    let mut cluster = SyntheticCluster {
        nodes,
        to_us: 24 * HOUR_US,
        ..SyntheticCluster::default()
    }
    .build();
    if engine == EngineKind::Iteration {
        for n in &mut cluster.nodes {
            n.spec.step = StepShape {
                fixed_share: 1.0,
                context_per_ktok: 0.0,
                max_batched_tokens: 2048,
                lone_discount: 0.0,
                prefill_attention_per_ktok: 0.0,
            };
        }
    }
    let workload = PoissonWorkload {
        rate_per_s: nodes as f64 * per_node,
        length_s: window_s,
        ..PoissonWorkload::default()
    }
    .build();
    let window = Window::new(6 * HOUR_US, (window_s * 1e6) as i64);
    (cluster, workload, window)
}

/// `nodes`, `window` and `workload` offered to `cfg`'s engine ([`offered_load`]).
fn load_of(
    cluster: &Cluster,
    workload: &Workload,
    window: Window,
    cfg: &ReplayConfig,
) -> OfferedLoad {
    offered_load(
        &cluster.nodes,
        &[window],
        &workload.requests,
        cfg.batch_slowdown,
        cfg.engine,
        cfg.censored_ends,
    )
}

/// The per-node arrival rate at which the `iteration` engine is offered the same share of its
/// capacity as the `simple` one at `per_node` requests/s per node on 100 nodes
/// ([`offered_load`] of each engine on the same nodes, requests and window).
fn equal_load_rate(per_node: f64, simple: &ReplayConfig, iteration: &ReplayConfig) -> f64 {
    let capacity = |cfg: &ReplayConfig| {
        let (cluster, workload, window) = inputs(100, per_node, WINDOW_S, cfg.engine);
        load_of(&cluster, &workload, window, cfg).capacity_req_s
    };
    per_node * capacity(iteration) / capacity(simple)
}

fn summary(
    cluster: &Cluster,
    workload: &Workload,
    window: Window,
    kind: PolicyKind,
    cfg: &ReplayConfig,
) {
    let spec = RunSpec::new(kind, window, 1, cfg.params);
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..3 {
        let t = Instant::now();
        let o = simulate(cluster, workload, cfg, &spec).expect("replay runs");
        best = best.min(t.elapsed().as_secs_f64());
        out = Some(o);
    }
    let Some(o) = out else { return };
    let n = o.records.len() as f64;
    let done = o
        .records
        .iter()
        .filter(|r| r.completion_s.is_some())
        .count();
    eprintln!(
        "replay/{kind}: {n} requests ({done} completed), {} events, {} placements, {} migration \
         checks, {} interruptions, {} planned moves, {} forced: {:.0} requests/s, {:.0} ns/event",
        o.stats.events,
        o.stats.placements,
        o.stats.migration_checks,
        o.records.iter().map(|r| r.interruptions).sum::<u32>(),
        o.records.iter().map(|r| r.planned_migrations).sum::<u32>(),
        o.stats.oracle_forced,
        n / best,
        best * 1e9 / o.stats.events as f64,
    );
}

fn bench_replay(c: &mut Criterion) {
    // The simple engine (the ablation) with the forecast of its earlier rows, `own`; the
    // iteration engine as a run gets it by default (`forecast = "stationary"`).
    let simple = ReplayConfig {
        engine: EngineKind::Simple,
        params: Params {
            forecast: ForecastKind::Own,
            ..Params::default()
        },
        ..ReplayConfig::default()
    };
    let iteration = ReplayConfig::default();
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    let pair = &[PolicyKind::Fastest, PolicyKind::Hazard][..];
    let equal_load = equal_load_rate(1.0, &simple, &iteration);
    for (nodes, per_node, window_s, kinds, tag, cfg) in [
        (
            100,
            1.0,
            WINDOW_S,
            &[PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle][..],
            "",
            &simple,
        ),
        (100, equal_load, WINDOW_S, pair, "_iteration", &iteration),
        (100, 1.0, WINDOW_S, pair, "_iteration_same_rate", &iteration),
        (100, 2.0, WINDOW_S, pair, "_overload", &simple),
        (1_000, 1.0, 60.0, pair, "", &simple),
        (100, 1.2, 120.0, pair, "_busy", &simple),
        (1_000, 1.2, 120.0, pair, "_busy", &simple),
    ] {
        let (cluster, workload, window) = inputs(nodes, per_node, window_s, cfg.engine);
        let load = load_of(&cluster, &workload, window, cfg);
        eprintln!(
            "{nodes} nodes, {per_node:.3} requests/s per node, {:?} engine at {:.0} % of its \
             capacity:",
            cfg.engine,
            100.0 * load.base_rate_req_s / load.capacity_req_s
        );
        for &kind in kinds {
            summary(&cluster, &workload, window, kind, cfg);
        }
        g.throughput(Throughput::Elements(workload.requests.len() as u64));
        for &kind in kinds {
            let spec = RunSpec::new(kind, window, 1, cfg.params);
            g.bench_function(format!("{kind}_{nodes}_nodes{tag}"), |b| {
                b.iter(|| black_box(simulate(&cluster, &workload, cfg, &spec).expect("runs")))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
