//! Kaplan-Meier and shrinkage speed against the anchors of ../shared/survival-golden/PERF.md
//! (lifelines 0.705 s at 1e6 rows, 13.1 s at 1e7, ~384 s for 100,000 nodes of ~20 sessions;
//! numpy 0.19 s / 2.6 s / 0.55 s). Targets: <= 0.05 s at 1e6, <= 0.6 s at 1e7, <= 0.2 s for
//! 100,000 nodes with shrinkage, KM / sort <= 1.5, peak memory <= 40 bytes per row.
//!
//! `shape_selection`: the hazard-shape verdict (seven maximum-likelihood models, AIC) of the
//! pooled sessions of every public source in ../shared/traces-public, target < 5 s in all. The
//! store is made once by the real binary (`ingest-public`), outside the measurement.

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

/// Shape selection over every public source (see the module docs).
fn shape_selection(c: &mut Criterion) {
    use hazardserve::survival::shapes::{select_shape, ShapeOptions};
    let traces = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces-public");
    if !traces.is_dir() {
        eprintln!("SKIPPED: shape_selection: {} not found", traces.display());
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let store = tmp.path().join("store");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_hazardserve"))
        .arg("--store")
        .arg(&store)
        .arg("--quiet")
        .arg("ingest-public")
        .arg(&traces)
        .status()
        .expect("run hazardserve");
    assert!(status.success(), "ingest-public failed");
    let st = hazardserve::store::Store::open(&store).expect("store");
    let mut sets = Vec::new();
    for src in hazardserve::public::PUBLIC_SOURCES {
        let mut data = hazardserve::fit::load_sessions(&st, src.source, None, false).expect("load");
        if data.sessions.is_empty() {
            data = hazardserve::fit::load_sessions(&st, src.source, None, true).expect("load");
        }
        let (exit, event, entry) = hazardserve::fit::group_columns(&data, "all");
        sets.push((src.source, exit, event, entry));
    }
    let run = || {
        for (_, exit, event, entry) in &sets {
            let truncated = entry.iter().any(|&e| e > 0.0);
            let _ = std::hint::black_box(select_shape(
                exit,
                event,
                truncated.then_some(entry.as_slice()),
                &ShapeOptions::default(),
            ));
        }
    };
    let t = Instant::now();
    run();
    let sessions: usize = sets.iter().map(|s| s.1.len()).sum();
    eprintln!(
        "shape selection: {} sources, {sessions} sessions, {:.3} s",
        sets.len(),
        t.elapsed().as_secs_f64()
    );
    let mut g = c.benchmark_group("shapes");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("shape_selection_all_public_sources", |b| b.iter(run));
    g.finish();
}

/// Aalen-Johansen and Nelson-Aalen against Kaplan-Meier on the same 1e6 rows (three causes),
/// and the Turnbull NPMLE on 100k sessions seen by 300-s probes.
fn toolkit(c: &mut Criterion) {
    use hazardserve::survival::competing::aalen_johansen;
    use hazardserve::survival::interval::{turnbull, Bounds, TurnbullOptions};
    use hazardserve::survival::nelson_aalen::nelson_aalen;
    let n = 1_000_000;
    let (d, e) = single(n);
    let mut r = Rng::new(9);
    let causes: Vec<u32> = e
        .iter()
        .map(|&ev| {
            if ev {
                1 + (r.uniform() * 3.0) as u32
            } else {
                0
            }
        })
        .collect();
    let mut g = c.benchmark_group("toolkit");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    let time = |f: &dyn Fn()| {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64()
    };
    let km = time(&|| {
        std::hint::black_box(KmFit::fit(&d, &e).expect("fit"));
    });
    let aj = time(&|| {
        std::hint::black_box(aalen_johansen(&d, &causes, None).expect("fit"));
    });
    let na = time(&|| {
        std::hint::black_box(nelson_aalen(&SurvivalData::new(&d, &e), true).expect("fit"));
    });
    eprintln!(
        "n={n}: km {km:.3} s, aalen-johansen (3 causes) {aj:.3} s ({:.2}x km), nelson-aalen {na:.3} s ({:.2}x km)",
        aj / km,
        na / km
    );
    g.bench_function("km_1e6", |b| b.iter(|| KmFit::fit(&d, &e).expect("fit")));
    g.bench_function("aalen_johansen_1e6", |b| {
        b.iter(|| aalen_johansen(&d, &causes, None).expect("fit"))
    });
    g.bench_function("nelson_aalen_1e6", |b| {
        b.iter(|| nelson_aalen(&SurvivalData::new(&d, &e), true).expect("fit"))
    });
    // 100k sessions: Weibull(0.8, 14,400 s) lifetimes seen by 300-s probes, 20 % censored.
    let tick = 300.0;
    let (mut lower, mut upper) = (Vec::new(), Vec::new());
    for _ in 0..100_000 {
        let t = 14_400.0 * r.weibull(0.8, 1.0);
        let cell = (t / tick).floor() * tick;
        lower.push(cell);
        upper.push(if r.uniform() < 0.2 {
            f64::INFINITY
        } else {
            cell + tick
        });
    }
    let tb = time(&|| {
        let f = turnbull(
            &lower,
            &upper,
            Bounds::OpenLower,
            &TurnbullOptions::default(),
        )
        .expect("fit");
        assert!(f.converged);
    });
    eprintln!("turnbull 100k tick sessions: {tb:.3} s");
    g.bench_function("turnbull_100k_ticks", |b| {
        b.iter(|| {
            turnbull(
                &lower,
                &upper,
                Bounds::OpenLower,
                &TurnbullOptions::default(),
            )
            .expect("fit")
        })
    });
    g.finish();
}

criterion_group!(benches, bench, shape_selection, toolkit);
criterion_main!(benches);
