//! Ingest of every public trace (../shared/traces-public, ~92 MB, ~2,200 files): read, parse and
//! commit to a fresh store. Target: under 20 s in total. Prints sessions/s.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use hazardserve::ingest_job::{commit_parsed, parse_inputs, source_record, Parsed};
use hazardserve::public::PUBLIC_SOURCES;
use hazardserve::store::{Store, WriteLock};
use hazardserve_ingest::{expand_paths, InputFile, InputFormat};

fn traces_dir() -> Option<std::path::PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces-public");
    p.is_dir().then_some(p)
}

/// Reads, parses and commits every public source into a new store; returns the session count.
fn ingest_all(dir: &Path, store_dir: &Path, commit: bool) -> usize {
    let store = Store::open_or_create(store_dir).expect("store");
    let lock = WriteLock::acquire(&store).expect("lock");
    let mut sessions = 0;
    for s in PUBLIC_SOURCES {
        let args: Vec<String> = s
            .paths
            .iter()
            .map(|p| dir.join(p).to_string_lossy().into_owned())
            .collect();
        let mut files: Vec<InputFile> = Vec::new();
        for (path, rel) in expand_paths(&args).expect("paths") {
            files.extend(InputFile::read_all(&path, &rel).expect("read"));
        }
        let parsed = parse_inputs(
            InputFormat::Trace(s.format),
            &files,
            &s.options(),
            &Default::default(),
        )
        .expect("parse");
        if let Parsed::Trace(_, t) = &parsed {
            sessions += t.sessions.len();
        }
        if commit {
            // The library's own ingest job, as `hazardserve ingest-public` runs it.
            let rec = source_record(s.source, &parsed, &serde_json::Value::Null, &files);
            commit_parsed(&store, &lock, &rec, &parsed, true).expect("commit");
        }
    }
    sessions
}

fn bench(c: &mut Criterion) {
    let Some(dir) = traces_dir() else {
        eprintln!("skipping: ../shared/traces-public not found");
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let t = Instant::now();
    let n = ingest_all(&dir, &tmp.path().join("warm"), true);
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "full ingest: {n} sessions in {secs:.2} s = {:.0} sessions/s",
        n as f64 / secs
    );
    let mut g = c.benchmark_group("ingest_public");
    g.sample_size(10).measurement_time(Duration::from_secs(30));
    g.bench_function("read_parse", |b| {
        b.iter(|| ingest_all(&dir, &tmp.path().join("p"), false))
    });
    let mut k = 0;
    g.bench_function("read_parse_commit", |b| {
        b.iter(|| {
            k += 1;
            ingest_all(&dir, &tmp.path().join(format!("s{k}")), true)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
