//! Property-based fuzzing of every adapter (and of the gzip/tar reader): arbitrary bytes, and
//! mutations (byte flips, insertions, truncations, line duplication and deletion) of a few KB of
//! the real public files, read at test time from `../shared`. The property: parsing never
//! panics and returns (an `Ok` or an `Err`) within a bounded time, in lenient and strict mode,
//! alone and beside the unmutated sample.
//!
//! Cases per adapter: 256 by default; `PROPTEST_CASES=N` overrides (e.g. 20000 for a long
//! local run). When the public data is absent, only arbitrary bytes are tried (and the test
//! says so with a `SKIPPED:` line).

mod common;

use hazardserve_ingest::adapters::{
    add_remove, fta, gce_operations, probe_csv, skynomad_rounds, stunner, tick_json,
};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hazardserve_ingest::workload::{self, WorkloadFormat, WorkloadOptions};
use hazardserve_ingest::{parse, sniff, Format, InputFile, Options, Polarity, ReadOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

/// Longest a single case may take (a few KB of input; generous for a loaded 2-core machine).
const BOUND: Duration = Duration::from_secs(3);

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    })
}

/// One edit of a sample; positions are taken modulo the current length.
#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Truncate(usize),
    DuplicateLine(usize),
    DeleteLine(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        2 => (any::<usize>(), prop_oneof![
            proptest::collection::vec(any::<u8>(), 1..8),
            prop::sample::select(vec![
                b",".to_vec(), b"\n".to_vec(), b"\r\n".to_vec(), b"\"".to_vec(), b"-".to_vec(),
                b"NaN".to_vec(), b"1e400".to_vec(), b"\xef\xbb\xbf".to_vec(), b"\xff".to_vec(),
                b"[".to_vec(), b"}".to_vec(), b"99999999999999999999".to_vec(), b" ".to_vec(),
                b"\t".to_vec(), b"0".to_vec(), b"add".to_vec(), b"remove".to_vec(),
            ]),
        ]).prop_map(|(i, b)| Mutation::Insert(i, b)),
        1 => any::<usize>().prop_map(Mutation::Truncate),
        2 => any::<usize>().prop_map(Mutation::DuplicateLine),
        2 => any::<usize>().prop_map(Mutation::DeleteLine),
    ]
}

/// Line boundaries `(start, end)` (end includes the `\n`).
fn lines(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < b.len() {
        out.push((start, b.len()));
    }
    out
}

fn apply(mut b: Vec<u8>, muts: &[Mutation]) -> Vec<u8> {
    for m in muts {
        match m {
            Mutation::Flip(i, x) if !b.is_empty() => {
                let n = b.len();
                b[i % n] ^= x | 1;
            }
            Mutation::Insert(i, bytes) => {
                let at = i % (b.len() + 1);
                b.splice(at..at, bytes.iter().copied());
            }
            Mutation::Truncate(i) => {
                let n = b.len() + 1;
                b.truncate(i % n);
            }
            Mutation::DuplicateLine(i) | Mutation::DeleteLine(i) => {
                let ls = lines(&b);
                if ls.is_empty() {
                    continue;
                }
                let (s, e) = ls[i % ls.len()];
                if matches!(m, Mutation::DuplicateLine(_)) {
                    let line = b[s..e].to_vec();
                    b.splice(e..e, line);
                } else {
                    b.drain(s..e);
                }
            }
            Mutation::Flip(..) => {}
        }
    }
    b
}

/// Either arbitrary bytes, or a sample with 1–8 mutations.
fn input(samples: Vec<Vec<u8>>) -> BoxedStrategy<Vec<u8>> {
    let arbitrary = proptest::collection::vec(any::<u8>(), 0..2048);
    if samples.is_empty() {
        return arbitrary.boxed();
    }
    let mutated = (
        prop::sample::select(samples),
        proptest::collection::vec(mutation(), 1..8),
    )
        .prop_map(|(s, muts)| apply(s, &muts));
    prop_oneof![1 => arbitrary, 3 => mutated].boxed()
}

/// The first `n` bytes of a file (more if needed to end a line), cut after its last newline.
fn head_lines(path: &Path, n: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut buf = Vec::new();
    (&mut f).take(n as u64).read_to_end(&mut buf).unwrap();
    let mut more = (&mut f).take(64 << 10);
    while !buf.contains(&b'\n') {
        let mut chunk = [0u8; 4096];
        let k = more.read(&mut chunk).unwrap();
        if k == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..k]);
    }
    if let Some(p) = buf.iter().rposition(|&c| c == b'\n') {
        buf.truncate(p + 1);
    }
    buf
}

/// A tick-json sample: the file's first `n` bytes cut after an element of `data`, closed again.
fn head_tick_json(path: &Path, n: usize) -> Vec<u8> {
    let all = std::fs::read(path).unwrap();
    let mut b = all[..all.len().min(n)].to_vec();
    if b.len() < all.len() {
        let p = b.iter().rposition(|&c| c == b',').unwrap();
        b.truncate(p);
        b.extend_from_slice(b"]}\n");
    }
    b
}

/// A GCE sample: the first `n` bytes cut after a whole record, closed again.
fn head_gce(path: &Path, n: usize) -> Vec<u8> {
    let all = std::fs::read(path).unwrap();
    if all.len() <= n {
        return all;
    }
    let text = String::from_utf8_lossy(&all[..n]).into_owned();
    let end = text.rfind("\n  }").expect("a record end");
    format!("{}\n  }}\n]\n", &text[..end]).into_bytes()
}

/// Every file below `dir` (sorted), the first `k` of them.
fn files_in(dir: &Path, k: usize) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v.truncate(k);
    v
}

/// What one adapter is fed: its name, the file name the input gets, and samples.
struct Target {
    name: &'static str,
    rel: &'static str,
    run: fn(&[InputFile], bool),
    samples: fn(&Path, &Path) -> Vec<Vec<u8>>,
}

fn trace_run(format: Format) -> impl Fn(&[InputFile], bool) {
    move |files, strict| {
        let options = Options {
            polarity: Some(Polarity::Available),
            strict,
            ..Options::default()
        };
        let _ = sniff(files);
        let _ = parse(format, files, &options);
    }
}

fn workload_run(format: WorkloadFormat) -> impl Fn(&[InputFile], bool) {
    move |files, strict| {
        let options = WorkloadOptions {
            strict,
            ..WorkloadOptions::default()
        };
        let _ = files.first().map(|f| format.sniff(f));
        let _ = workload::parse(format, files, &options);
    }
}

const KB: usize = 3 << 10;

fn targets() -> Vec<Target> {
    vec![
        Target {
            name: "tick-json",
            rel: "fuzz/us-west-2a_v100_1.json",
            run: |f, s| trace_run(tick_json::FORMAT)(f, s),
            samples: |t, _| {
                let d = t.join("cantbelate-spot-traces/availability/1-node/aws-02-15-2023");
                let mut v: Vec<Vec<u8>> = files_in(&d, 2)
                    .iter()
                    .map(|p| head_tick_json(p, KB))
                    .collect();
                let d = t.join("cantbelate-spot-traces/availability/16-node/aws-08-27-2023");
                v.extend(files_in(&d, 1).iter().map(|p| head_tick_json(p, KB)));
                v
            },
        },
        Target {
            name: "probe-csv",
            rel: "fuzz/us-west-2a_k80_1.txt",
            run: |f, s| trace_run(probe_csv::FORMAT)(f, s),
            samples: |t, _| {
                let d =
                    t.join("cantbelate-raw-probes/scripts/availability/traces/2022-10-26T22-05");
                let mut v: Vec<Vec<u8>> =
                    files_in(&d, 1).iter().map(|p| head_lines(p, KB)).collect();
                v.extend(
                    files_in(&t.join("bamboo/doc/data"), 3)
                        .iter()
                        .map(|p| head_lines(p, KB)),
                );
                v
            },
        },
        Target {
            name: "skynomad-rounds",
            rel: "fuzz/20251003-171000-a96457f0.json",
            run: |f, s| trace_run(skynomad_rounds::FORMAT)(f, s),
            samples: |t, _| {
                files_in(&t.join("skynomad/data/h100_16_runs"), 2)
                    .iter()
                    .map(|p| std::fs::read(p).unwrap())
                    .collect()
            },
        },
        Target {
            name: "gce-operations",
            rel: "fuzz/ops.json",
            run: |f, s| trace_run(gce_operations::FORMAT)(f, s),
            samples: |t, _| {
                let d = t.join("gcp-preemptible-scispot/data");
                let mut v: Vec<Vec<u8>> = files_in(&d.join("runtime-data"), 2)
                    .iter()
                    .map(|p| head_gce(p, KB))
                    .collect();
                v.extend(
                    files_in(&d.join("instance-data"), 1)
                        .iter()
                        .map(|p| head_lines(p, KB)),
                );
                v
            },
        },
        Target {
            name: "add-remove",
            rel: "fuzz/p3-trace.csv",
            run: |f, s| trace_run(add_remove::FORMAT)(f, s),
            samples: |t, _| {
                let mut v = vec![head_lines(&t.join("spotserve/trace_full/g4dn.csv"), KB)];
                v.push(head_lines(
                    &t.join("spotserve/trace_seg/trace_0203.txt"),
                    KB,
                ));
                v
            },
        },
        Target {
            name: "fta",
            rel: "fuzz/event_trace.tab",
            run: |f, s| trace_run(fta::FORMAT)(f, s),
            samples: |t, _| {
                vec![
                    head_lines(&t.join("fta-lanl05/event_trace.tab"), KB),
                    head_lines(&t.join("fta-format-sample/event_trace.tab"), KB),
                ]
            },
        },
        Target {
            name: "stunner",
            rel: "fuzz/peersim_session_80.txt",
            run: |f, s| trace_run(stunner::FORMAT)(f, s),
            samples: |t, _| {
                vec![head_lines(
                    &t.join("stunner-smartphone/res/trace/peersim_session_80.txt"),
                    KB,
                )]
            },
        },
        Target {
            name: "azure-llm",
            rel: "fuzz/conv.csv",
            run: |f, s| workload_run(WorkloadFormat::AzureLlm)(f, s),
            samples: |_, w| {
                files_in(&w.join("azure-llm-inference-2023"), 2)
                    .iter()
                    .map(|p| head_lines(p, KB))
                    .collect()
            },
        },
        Target {
            name: "mooncake",
            rel: "fuzz/trace.jsonl",
            run: |f, s| workload_run(WorkloadFormat::Mooncake)(f, s),
            samples: |_, w| {
                files_in(&w.join("mooncake-fast25"), 2)
                    .iter()
                    .map(|p| head_lines(p, KB))
                    .collect()
            },
        },
        Target {
            name: "lengths-csv",
            rel: "fuzz/lengths.csv",
            run: |f, s| workload_run(WorkloadFormat::LengthsCsv)(f, s),
            samples: |_, w| {
                let mut v: Vec<Vec<u8>> = files_in(&w.join("llmservingsim-sharegpt-lengths"), 1)
                    .iter()
                    .map(|p| head_lines(p, KB))
                    .collect();
                v.extend(
                    files_in(&w.join("vidur-processed-lengths"), 1)
                        .iter()
                        .map(|p| head_lines(p, KB)),
                );
                v
            },
        },
    ]
}

/// Runs one target: `cases()` inputs, each parsed alone and beside its unmutated sample, in
/// lenient and strict mode; a panic or a slow case fails the test with the input.
fn fuzz(target: &Target) {
    let traces = common::traces_public();
    let workloads = common::workloads_public();
    let samples = match (&traces, &workloads) {
        (Some(t), Some(w)) => (target.samples)(t, w),
        _ => Vec::new(),
    };
    let base = samples.first().cloned();
    let n = cases();
    let sample_sizes: Vec<usize> = samples.iter().map(Vec::len).collect();
    runner()
        .run(&input(samples), |bytes| {
            let started = Instant::now();
            let f = InputFile::from_bytes(target.rel.into(), target.rel, bytes, String::new());
            for strict in [false, true] {
                (target.run)(std::slice::from_ref(&f), strict);
                if let Some(b) = &base {
                    let good = InputFile::from_bytes(
                        "ok/base.x".into(),
                        "ok/base.x",
                        b.clone(),
                        String::new(),
                    );
                    (target.run)(&[good, f.clone()], strict);
                }
            }
            let took = started.elapsed();
            if took > BOUND {
                return Err(TestCaseError::fail(format!(
                    "{}: a case took {took:?}",
                    target.name
                )));
            }
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}: {e}", target.name));
    println!(
        "fuzz {}: {n} cases, no panic (samples of {sample_sizes:?} bytes)",
        target.name
    );
}

macro_rules! fuzz_tests {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                let t = targets().into_iter().find(|t| t.name == $name).unwrap();
                fuzz(&t);
            }
        )*
    };
}

fuzz_tests! {
    fuzz_tick_json => "tick-json",
    fuzz_probe_csv => "probe-csv",
    fuzz_skynomad_rounds => "skynomad-rounds",
    fuzz_gce_operations => "gce-operations",
    fuzz_add_remove => "add-remove",
    fuzz_fta => "fta",
    fuzz_stunner => "stunner",
    fuzz_azure_llm => "azure-llm",
    fuzz_mooncake => "mooncake",
    fuzz_lengths_csv => "lengths-csv",
}

/// The reader: mutated `.gz` and `.tar.gz` files (with a 1 MiB cap) never panic, and a file
/// that cannot be read comes back as a defective input.
#[test]
fn fuzz_gzip_and_tar_reader() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"0,add,n1\n10,remove,n1\n".repeat(20);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    let gz = gz.finish().unwrap();
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(gz.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, "d/log.csv.gz", &gz[..]).unwrap();
    let tar = b.into_inner().unwrap();
    let mut tgz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut tgz, &tar).unwrap();
    let tgz = tgz.finish().unwrap();
    let cap = ReadOptions {
        max_decompressed_bytes: 1 << 20,
    };
    let n = cases();
    let k = std::sync::atomic::AtomicU64::new(0);
    runner()
        .run(
            &(
                prop::sample::select(vec![("x.csv.gz", gz), ("x.tar", tar), ("x.tgz", tgz)]),
                proptest::collection::vec(mutation(), 1..6),
            ),
            |((name, bytes), muts)| {
                let i = k.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let path = dir.path().join(format!("{i}-{name}"));
                std::fs::write(&path, apply(bytes, &muts)).unwrap();
                let started = Instant::now();
                let files = InputFile::read_all_with(&path, name, &cap).unwrap();
                prop_assert!(!files.is_empty());
                for f in &files {
                    prop_assert!(f.defect.is_none() || f.bytes.is_empty());
                }
                let _ = parse(add_remove::FORMAT, &files, &Options::default());
                std::fs::remove_file(&path).unwrap();
                prop_assert!(started.elapsed() < BOUND);
                Ok(())
            },
        )
        .unwrap();
    println!("fuzz gzip/tar reader: {n} cases, no panic");
}
