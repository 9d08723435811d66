//! Replay with prefix caches: the Mooncake conversation trace (FAST '25; read from
//! `../shared/workloads-public/mooncake-fast25/conversation_trace.jsonl`, skipped when absent)
//! on 100 synthetic nodes under the iteration engine, `fastest` and `hazard`, with every
//! node caching the trace's prefix blocks (`*_prefix`) and the same requests without them
//! (`*_stateless`). Target: the cached replay within 2x the stateless one's time. The whole
//! trace (59 minutes, 12,031 requests, 12,000-token prompts on average) at its own rate, in
//! one window of an hour, conversations as its blocks reveal them (as a scenario does) and a fixed gap between
//! turns (30 % of turns followed by another, at 123 s or 483 s: the trace's median and 90th
//! percentile).
//!
//! Needs `[[bench]] name = "prefix" harness = false` in Cargo.toml. Prints each case's
//! requests per second and hit rate before the criterion measurements.

use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use hazardserve::policy::iteration::StepShape;
use hazardserve::policy::PolicyKind;
use hazardserve::replay::{
    infer_conversations, simulate, Cluster, Prefix, ReplayConfig, Request, RunSpec,
    SyntheticCluster, Window, Workload,
};

const HOUR_US: i64 = 3_600_000_000;
const WINDOW_S: f64 = 3600.0;

/// The trace (its first `WINDOW_S` seconds: all of it) with prefixes, conversations and the gap between
/// turns; `None` when the shared data is absent.
fn mooncake() -> Option<Workload> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/workloads-public/mooncake-fast25/conversation_trace.jsonl");
    let text = std::fs::read_to_string(path).ok()?;
    let (mut requests, mut prefixes) = (Vec::new(), Vec::new());
    for (k, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let at_ms = v["timestamp"].as_f64()?;
        if at_ms >= WINDOW_S * 1e3 {
            continue;
        }
        let prompt = v["input_length"].as_u64()?;
        let p = Prefix::new(
            512,
            v["hash_ids"]
                .as_array()?
                .iter()
                .filter_map(serde_json::Value::as_u64)
                .collect(),
        );
        if !p.fits(prompt) {
            continue;
        }
        requests.push(Request {
            id: k as u64,
            arrival_us: (at_ms * 1e3) as i64,
            prompt_tokens: prompt,
            output_tokens: v["output_length"].as_u64()?.max(1),
        });
        prefixes.push(p);
    }
    let arrivals: Vec<i64> = requests.iter().map(|r| r.arrival_us).collect();
    let conversations = infer_conversations(&arrivals, &prefixes);
    // A fixed gap between turns (a scenario fits one on the workload's first half).
    let gap = hazardserve::policy::retained::ReuseGap::from_steps(&[123.0, 483.0], &[0.7, 0.6]);
    Some(
        Workload::new(requests)
            .with_prefixes(prefixes)
            .with_conversations(conversations)
            .with_reuse(gap),
    )
}

fn nodes() -> Cluster {
    let mut cluster = SyntheticCluster {
        nodes: 100,
        to_us: 24 * HOUR_US,
        ..SyntheticCluster::default()
    }
    .build();
    for n in &mut cluster.nodes {
        n.spec.step = StepShape {
            fixed_share: 1.0,
            context_per_ktok: 0.0,
            max_batched_tokens: 2048,
            lone_discount: 0.0,
            prefill_attention_per_ktok: 0.0,
        };
        n.spec.kv_capacity_tokens = 400_000;
    }
    cluster
}

fn bench_prefix(c: &mut Criterion) {
    let Some(cached) = mooncake() else {
        eprintln!(
            "prefix bench skipped: the Mooncake conversation trace is not beside the checkout"
        );
        return;
    };
    let stateless = Workload::new(cached.requests.clone());
    let cluster = nodes();
    let cfg = ReplayConfig::default();
    let window = Window::new(6 * HOUR_US, (WINDOW_S * 1e6) as i64);
    let mut g = c.benchmark_group("replay");
    g.sample_size(10);
    g.throughput(Throughput::Elements(cached.requests.len() as u64));
    for kind in [PolicyKind::Fastest, PolicyKind::Hazard] {
        let spec = RunSpec::new(kind, window, 1, cfg.params);
        for (tag, w) in [("prefix", &cached), ("stateless", &stateless)] {
            let t = Instant::now();
            let out = simulate(&cluster, w, &cfg, &spec).expect("replay runs");
            let s = t.elapsed().as_secs_f64();
            let hit: u64 = out.records.iter().map(|r| r.prefix_hit_tokens).sum();
            let all: u64 = out.records.iter().map(|r| r.prompt_tokens).sum();
            eprintln!(
                "replay/{kind}_mooncake_100_nodes_{tag}: {} requests, {:.0} requests/s, hit rate {:.3}, {} state moves",
                out.records.len(),
                out.records.len() as f64 / s,
                hit as f64 / all.max(1) as f64,
                out.stats.state_migrations
            );
            g.bench_function(format!("{kind}_mooncake_100_nodes_{tag}"), |b| {
                b.iter(|| black_box(simulate(&cluster, w, &cfg, &spec).expect("runs")))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_prefix);
criterion_main!(benches);
