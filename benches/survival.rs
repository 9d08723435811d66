//! Kaplan-Meier and shrinkage speed against the anchors of ../shared/survival-golden/PERF.md
//! (lifelines 0.705 s at 1e6 rows, 13.1 s at 1e7, ~384 s for 100,000 nodes of ~20 sessions;
//! numpy 0.19 s / 2.6 s / 0.55 s). Targets: <= 0.05 s at 1e6, <= 0.6 s at 1e7, <= 0.2 s for
//! 100,000 nodes with shrinkage, KM / sort <= 1.5, peak memory <= 40 bytes per row.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use hazardserve::rng::Rng;
use hazardserve::survival::km::{GroupedKm, KmFit};
use hazardserve::survival::shrinkage::{EstimatorChoice, ShrinkageModel, ShrinkageOptions};
use hazardserve::survival::SurvivalData;

/// Counts live heap bytes so the bench can report peak memory per row.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// n ~ 100 * Weibull(1.5) with 30 % censoring, as in PERF.md.
fn single(n: usize) -> (Vec<f64>, Vec<bool>) {
    let mut r = Rng::new(42);
    let d = (0..n).map(|_| 100.0 * r.weibull(1.5, 1.0)).collect();
    let e = (0..n).map(|_| r.uniform() >= 0.3).collect();
    (d, e)
}

/// 100,000 nodes with Poisson(20) sessions (min 1) and a node-specific scale, as in PERF.md.
fn grouped(nodes: usize) -> (Vec<u32>, Vec<f64>, Vec<bool>) {
    let mut r = Rng::new(7);
    let (mut g, mut d, mut e) = (Vec::new(), Vec::new(), Vec::new());
    for node in 0..nodes {
        let scale = 50.0 + 100.0 * r.uniform();
        // Poisson(20) by inversion of exponential gaps.
        let mut k = 0;
        let mut t = r.exponential(1.0);
        while t < 20.0 {
            k += 1;
            t += r.exponential(1.0);
        }
        for _ in 0..k.max(1) {
            g.push(node as u32);
            d.push(scale * r.weibull(1.5, 1.0));
            e.push(r.uniform() >= 0.3);
        }
    }
    (g, d, e)
}

fn peak_bytes_per_row(n: usize, f: impl FnOnce()) -> f64 {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    (PEAK.load(Ordering::Relaxed) - base) as f64 / n as f64
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("km");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    for n in [1_000_000usize, 10_000_000] {
        let (d, e) = single(n);
        let bpr = peak_bytes_per_row(n, || {
            std::hint::black_box(KmFit::fit(&d, &e).expect("fit"));
        });
        // Ratio against sorting the same durations, measured back to back.
        let t = Instant::now();
        let mut s = d.clone();
        s.sort_unstable_by(f64::total_cmp);
        let sort = t.elapsed().as_secs_f64();
        let t = Instant::now();
        std::hint::black_box(KmFit::fit(&d, &e).expect("fit"));
        let km = t.elapsed().as_secs_f64();
        eprintln!(
            "km n={n}: {km:.3} s, sort {sort:.3} s, ratio {:.2}, peak {bpr:.1} B/row",
            km / sort
        );
        g.bench_with_input(BenchmarkId::new("fit", n), &n, |b, _| {
            b.iter(|| KmFit::fit(&d, &e).expect("fit"))
        });
        g.bench_with_input(BenchmarkId::new("sort", n), &n, |b, _| {
            b.iter(|| {
                let mut s = d.clone();
                s.sort_unstable_by(f64::total_cmp);
                s
            })
        });
    }
    g.finish();

    let (groups, d, e) = grouped(100_000);
    let rows = d.len();
    eprintln!("grouped: 100000 nodes, {rows} sessions");
    let data = SurvivalData::new(&d, &e);
    let mut g = c.benchmark_group("per_node");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function("grouped_km_100k_nodes", |b| {
        b.iter(|| GroupedKm::fit(&groups, &data, Some(100_000)).expect("fit"))
    });
    for (name, est) in [
        ("frailty", EstimatorChoice::GammaFrailty),
        ("beta", EstimatorChoice::BetaProcess),
        ("auto", EstimatorChoice::Auto),
    ] {
        let opts = ShrinkageOptions {
            estimator: est,
            n_nodes: Some(100_000),
            ..ShrinkageOptions::default()
        };
        g.bench_function(format!("shrinkage_{name}_100k_nodes"), |b| {
            b.iter(|| ShrinkageModel::fit(&groups, &data, &opts).expect("fit"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
