//! Replay throughput: simulated requests per second and nanoseconds per event for `fastest`
//! (target >= 100,000 requests/s), `hazard` (check interval 5 s) and the clairvoyant `oracle`
//! (event-driven checks; both targets >= 50,000 requests/s) on 100 nodes with synthetic Weibull up/down timelines and a Poisson workload, on one
//! core (each run is single-threaded).
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

fn inputs() -> (Cluster, Workload, Window) {
    let cluster = SyntheticCluster {
        nodes: 100,
        to_us: 24 * HOUR_US,
        ..SyntheticCluster::default()
    }
    .build();
    // ~60% of the cluster's capacity (800 slots, ~5 s of service per request).
    let workload = PoissonWorkload {
        rate_per_s: 100.0,
        length_s: WINDOW_S,
        ..PoissonWorkload::default()
    }
    .build();
    let window = Window::new(6 * HOUR_US, (WINDOW_S * 1e6) as i64);
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
    let (cluster, workload, window) = inputs();
    for kind in [PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle] {
        summary(&cluster, &workload, window, kind);
    }
    let cfg = ReplayConfig::default();
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    g.throughput(Throughput::Elements(workload.requests.len() as u64));
    for kind in [PolicyKind::Fastest, PolicyKind::Hazard, PolicyKind::Oracle] {
        let spec = RunSpec::new(kind, window, 1, cfg.params);
        g.bench_function(format!("{kind}_100_nodes"), |b| {
            b.iter(|| black_box(simulate(&cluster, &workload, &cfg, &spec).expect("runs")))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_replay);
criterion_main!(benches);
