//! Replay throughput: simulated requests per second and nanoseconds per event for `fastest`
//! (target >= 100,000 requests/s), `hazard` (check interval 5 s) and the clairvoyant `oracle`
//! (event-driven checks; both targets >= 50,000 requests/s) on 100 nodes with synthetic Weibull up/down timelines and a Poisson workload, on one
//! core (each run is single-threaded).
//!
//! The same at 1,000 nodes with ten times the arrival rate (the same load per node) over a
//! shorter window (`*_1000_nodes`): the README's scaling row. And both fleet sizes busy
//! (`*_busy`: 1.2 requests per second per node for 120 s, about 85 % of the capacity, so that most
//! nodes are full at any instant): a placement visits only the nodes with a free slot, so the
//! cost per request should grow far less than tenfold from 100 to 1,000 nodes there.
//!
//! Needs `[[bench]] name = "replay" harness = false` in Cargo.toml. Prints a summary line per
//! policy (`requests/s`, `ns/event`) before the criterion measurements.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use hazardserve::policy::PolicyKind;
use hazardserve::replay::{
    simulate, Cluster, PoissonWorkload, ReplayConfig, RunSpec, SyntheticCluster, Window, Workload,
};

const HOUR_US: i64 = 3_600_000_000;
const WINDOW_S: f64 = 300.0;

/// `nodes` synthetic nodes and a Poisson workload of `per_node` requests per second per node
/// (8 slots per node, ~5 s of service per request: 1.0 is ~60 % of their capacity) over
/// `window_s` seconds.
fn inputs(nodes: usize, per_node: f64, window_s: f64) -> (Cluster, Workload, Window) {
    let cluster = SyntheticCluster {
        nodes,
        to_us: 24 * HOUR_US,
        ..SyntheticCluster::default()
    }
    .build();
    let workload = PoissonWorkload {
        rate_per_s: nodes as f64 * per_node,
        length_s: window_s,
        ..PoissonWorkload::default()
    }
    .build();
    let window = Window::new(6 * HOUR_US, (window_s * 1e6) as i64);
    (cluster, workload, window)
}

fn summary(cluster: &Cluster, workload: &Workload, window: Window, kind: PolicyKind) {
    let cfg = ReplayConfig::default();
    let spec = RunSpec::new(kind, window, 1, cfg.params);
    let mut best = f64::INFINITY;
    let mut out = None;
    for _ in 0..3 {
        let t = Instant::now();
        let o = simulate(cluster, workload, &cfg, &spec).expect("replay runs");
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
    let cfg = ReplayConfig::default();
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    let pair = &[PolicyKind::Fastest, PolicyKind::Hazard][..];
    for (nodes, per_node, window_s, kinds, tag) in [
        (
            100,
            1.0,
            WINDOW_S,
            &[PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle][..],
            "",
        ),
        (1_000, 1.0, 60.0, pair, ""),
        (100, 1.2, 120.0, pair, "_busy"),
        (1_000, 1.2, 120.0, pair, "_busy"),
    ] {
        let (cluster, workload, window) = inputs(nodes, per_node, window_s);
        eprintln!("{nodes} nodes, {per_node} requests/s per node:");
        for &kind in kinds {
            summary(&cluster, &workload, window, kind);
        }
        g.throughput(Throughput::Elements(workload.requests.len() as u64));
        for &kind in kinds {
            let spec = RunSpec::new(kind, window, 1, cfg.params);
            g.bench_function(format!("{kind}_{nodes}_nodes{tag}"), |b| {
                b.iter(|| black_box(simulate(&cluster, &workload, &cfg, &spec).expect("runs")))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
