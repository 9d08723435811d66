//! Policy hot paths: one `E_i` evaluation (target <= 100 ns), placement over 1,000 nodes
//! (<= 50 us), one migration check over 1,000 candidates (<= 100 us).
//!
//! Needs `[[bench]] name = "policy" harness = false` in Cargo.toml.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};

use hazardserve::policy::cost::{placement_cost, RiskModel};
use hazardserve::policy::{
    ClusterView, Explanation, NodeView, Params, Policy, PolicyKind, RequestView, StandardPolicy,
};
use hazardserve::survival::curve::{ConditionalSurvival, Exponential, StepCurve, Weibull};

/// A Kaplan-Meier-like step curve with `n` jumps over about `horizon` seconds.
fn km_like(n: usize, horizon: f64, seed: u64) -> StepCurve {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut t = 0.0;
    let mut s = 1.0;
    let mut times = Vec::with_capacity(n);
    let mut surv = Vec::with_capacity(n);
    for i in 0..n {
        t += horizon / n as f64 * (0.2 + 1.6 * next());
        s *= 1.0 - 1.0 / (n - i + 1) as f64;
        times.push(t);
        surv.push(s);
    }
    StepCurve::new(times, surv, Some(1e-4)).expect("valid synthetic curve")
}

fn nodes<'a>(curves: &'a [Box<dyn ConditionalSurvival>], n: usize) -> Vec<NodeView<'a>> {
    (0..n)
        .map(|i| NodeView {
            up: true,
            age_s: (i * 7919 % 86_400) as f64,
            slots: 8,
            slots_used: (i % 8) as u32,
            kv_capacity_tokens: 200_000,
            kv_used_tokens: (i * 1_237 % 150_000) as u64,
            queue_wait_s: (i % 5) as f64 * 0.5,
            decode_tok_s: 20.0 + (i % 11) as f64 * 5.0,
            prefill_tok_s: 500.0 + (i % 13) as f64 * 800.0,
            bandwidth_bytes_s: 1.25e9,
            survival: curves[i % curves.len()].as_ref(),
            exp_rate_per_s: 1.0 / 7200.0,
            cached_tokens: 0,
            queued: 0,
            cache_tokens: 0,
        })
        .collect()
}

fn bench_e(c: &mut Criterion) {
    let step = km_like(200, 86_400.0, 1);
    let weibull = Weibull {
        shape: 0.6,
        scale: 14_400.0,
    };
    let exp = Exponential { mean: 7200.0 };
    let linear = hazardserve::survival::curve::LinearCurve::new(step.clone());
    let params = Params::default();
    let req = RequestView::new(1, 3000, 600);
    let mut g = c.benchmark_group("e_i");
    for (name, curve) in [
        ("step200", &step as &dyn ConditionalSurvival),
        ("linear200", &linear),
        ("weibull", &weibull),
        ("exponential", &exp),
    ] {
        let node = NodeView {
            age_s: 5_000.0,
            decode_tok_s: 40.0,
            prefill_tok_s: 4000.0,
            ..NodeView::new(curve)
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                placement_cost(
                    black_box(&node),
                    0,
                    black_box(&req),
                    3000.0,
                    &params,
                    RiskModel::Hazard,
                    None,
                )
            })
        });
    }
    g.finish();
}

fn bench_place(c: &mut Criterion) {
    let curves: Vec<Box<dyn ConditionalSurvival>> = (0..16)
        .map(|i| -> Box<dyn ConditionalSurvival> {
            if i % 2 == 0 {
                Box::new(km_like(200, 86_400.0, i))
            } else {
                Box::new(Weibull {
                    shape: 0.4 + 0.2 * i as f64,
                    scale: 3600.0 * (1 + i) as f64,
                })
            }
        })
        .collect();
    let ns = nodes(&curves, 1000);
    let view = ClusterView::new(&ns);
    let req = RequestView::new(1, 3000, 600);
    let mut g = c.benchmark_group("place_1000");
    for kind in [
        PolicyKind::Hazard,
        PolicyKind::Memoryless,
        PolicyKind::Fastest,
    ] {
        let mut pol = StandardPolicy::new(kind, Params::default(), 0);
        let mut out = Explanation::default();
        g.bench_function(kind.name(), |b| {
            b.iter(|| pol.place(black_box(&view), black_box(&req), &mut out))
        });
    }
    // Worst case for pruning: identical speeds and queues, so every node's L is computed.
    let flat: Vec<NodeView<'_>> = ns
        .iter()
        .map(|n| NodeView {
            decode_tok_s: 40.0,
            prefill_tok_s: 4000.0,
            queue_wait_s: 0.0,
            ..*n
        })
        .collect();
    let flat_view = ClusterView::new(&flat);
    let mut pol = StandardPolicy::new(PolicyKind::Hazard, Params::default(), 0);
    let mut out = Explanation::default();
    g.bench_function("hazard_equal_speeds", |b| {
        b.iter(|| pol.place(black_box(&flat_view), black_box(&req), &mut out))
    });
    // Smooth curves everywhere (every node has L > 0) and equal speeds: only the lower bound
    // prunes.
    let weibulls: Vec<Weibull> = (0..1000)
        .map(|i| Weibull {
            shape: 0.4 + (i % 17) as f64 * 0.2,
            scale: 1800.0 + (i % 23) as f64 * 1000.0,
        })
        .collect();
    let smooth: Vec<NodeView<'_>> = flat
        .iter()
        .zip(&weibulls)
        .map(|(n, w)| NodeView { survival: w, ..*n })
        .collect();
    let smooth_view = ClusterView::new(&smooth);
    g.bench_function("hazard_weibull_equal_speeds", |b| {
        b.iter(|| pol.place(black_box(&smooth_view), black_box(&req), &mut out))
    });
    g.finish();
}

fn bench_migrate(c: &mut Criterion) {
    let curves: Vec<Box<dyn ConditionalSurvival>> = (0..16)
        .map(|i| -> Box<dyn ConditionalSurvival> { Box::new(km_like(200, 86_400.0, i)) })
        .collect();
    let mut ns = nodes(&curves, 1000);
    let risky = Exponential { mean: 30.0 };
    ns[0] = NodeView {
        survival: &risky,
        decode_tok_s: 20.0,
        kv_used_tokens: 0,
        ..ns[0]
    };
    let req = RequestView {
        id: 1,
        prompt_tokens: 3000,
        done_tokens: 200,
        est_output_tokens: 1200,
        node: Some(0),
        resident_tokens: 3200,
        planned_hops: 0,
        est_sigma: 0.0,
        recovering: false,
        conversation: None,
    };
    let mut g = c.benchmark_group("migrate_1000");
    for (name, overlap, record) in [
        ("hazard", false, false),
        ("hazard_overlap", true, false),
        ("hazard_exhaustive", false, true),
    ] {
        let view = ClusterView::new(&ns);
        let params = Params {
            overlap,
            ..Params::default()
        };
        let mut pol = StandardPolicy::new(PolicyKind::Hazard, params, 0);
        let mut out = if record {
            Explanation::recording()
        } else {
            Explanation::default()
        };
        g.bench_function(name, |b| {
            b.iter(|| pol.check_migration(black_box(&view), black_box(&req), 0, &mut out))
        });
    }
    g.finish();
}

criterion_group!(benches, bench_e, bench_place, bench_migrate);
criterion_main!(benches);
