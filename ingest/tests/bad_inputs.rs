//! The bad-input corpus (`tests/bad-inputs/<format>/…`, plus cases made at test time: a
//! directory, an unreadable file, a symlink loop, a gzip bomb) run through its adapter in strict
//! and lenient mode, the exact messages snapshotted with `insta` (`tests/snapshots/`).
//!
//! Checked for every case: each message names the file, the line or record (`file:line:`) and
//! the problem; strict mode stops at the first problem with that message; lenient mode keeps
//! going, and where the records of a file can be counted, kept records + rejected records ==
//! the records in the file. Every corpus file is also ingested (lenient) together with a good
//! file of its format, which must come through: a bad file never stops an ingest.
//!
//! To refresh the snapshots after an intended change: `INSTA_UPDATE=always cargo test --test
//! bad_inputs`, then read the changed `.snap` files before committing them.

use hazardserve_ingest::adapters::{add_remove, tick_json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use hazardserve_ingest::workload::{self, WorkloadFormat, WorkloadOptions};
use hazardserve_ingest::{
    expand_paths, parse, Format, InputFile, Options, Polarity, ReadOptions, Reject,
};

/// One corpus file: its path below `tests/bad-inputs`, how many records it holds when they can
/// be counted (`None`: the defect is about the whole file), and what it exercises.
struct Case {
    path: &'static str,
    records: Option<u64>,
    what: &'static str,
}

const fn case(path: &'static str, records: Option<u64>, what: &'static str) -> Case {
    Case {
        path,
        records,
        what,
    }
}

const CORPUS: &[Case] = &[
    case(
        "add-remove/bom.csv",
        Some(2),
        "UTF-8 BOM before the first record",
    ),
    case(
        "add-remove/crlf-invalid-utf8.csv",
        Some(3),
        "CRLF, one line with an invalid UTF-8 byte",
    ),
    case(
        "add-remove/json-negative.txt",
        Some(4),
        "JSON lines with a negative time",
    ),
    case(
        "add-remove/nan-huge.csv",
        Some(5),
        "NaN, overflowing and infinite times",
    ),
    case("add-remove/negative-time.csv", Some(3), "a negative t_ms"),
    case(
        "add-remove/overlapping-sessions.csv",
        Some(6),
        "add of a node already up, remove of a node not up",
    ),
    case(
        "add-remove/quoted-comma.csv",
        Some(3),
        "quoted fields with a comma and a newline, CRLF",
    ),
    case(
        "add-remove/unsorted-duplicate.csv",
        Some(5),
        "events out of time order, a duplicated add",
    ),
    case(
        "add-remove/wrong-delimiter.csv",
        None,
        "tab instead of comma",
    ),
    case(
        "azure-llm/bad-rows.csv",
        Some(7),
        "negative, huge and NaN tokens, bad timestamp, wrong delimiter, extra field",
    ),
    case(
        "azure-llm/bom-crlf-quoted.csv",
        Some(2),
        "BOM, CRLF, quoted fields",
    ),
    case(
        "fta/invalid-utf8-crlf.tab",
        Some(2),
        "CRLF, one row with an invalid UTF-8 byte",
    ),
    case(
        "fta/missing-stop-column.tab",
        None,
        "header without event_stop_time",
    ),
    case(
        "fta/negative-times.tab",
        Some(4),
        "negative start and stop times",
    ),
    case("fta/not-fta.tab", None, "a CSV, not an FTA table"),
    case("fta/truncated.tab", Some(3), "last row cut short"),
    case(
        "fta/unsorted-overlapping.tab",
        Some(3),
        "rows out of order, overlapping intervals (accepted)",
    ),
    case(
        "gce-operations/bad-records.json",
        Some(5),
        "records without id, with a bad time, not objects",
    ),
    case(
        "gce-operations/bom.json",
        Some(2),
        "UTF-8 BOM before the JSON array",
    ),
    case(
        "gce-operations/not-gce.json",
        None,
        "a JSON object, not an operation list",
    ),
    case(
        "gce-operations/truncated.json",
        None,
        "JSON array cut in a record",
    ),
    case(
        "lengths-csv/epoch-arrivals.csv",
        Some(3),
        "Unix epoch arrival times",
    ),
    case(
        "lengths-csv/negative-nan-huge.csv",
        Some(5),
        "negative, NaN and infinite arrivals, a token count over u32",
    ),
    case(
        "lengths-csv/no-token-columns.csv",
        None,
        "header without token columns",
    ),
    case(
        "lengths-csv/quoted-newline-crlf.csv",
        Some(3),
        "quoted comma and newline, CRLF, a bad token",
    ),
    case(
        "mooncake/bad-lines.jsonl",
        Some(6),
        "negative time and tokens, missing field, invalid UTF-8, not JSON",
    ),
    case(
        "mooncake/bom.jsonl",
        Some(2),
        "UTF-8 BOM before the first line",
    ),
    case("probe-csv/bom-crlf.txt", Some(3), "BOM and CRLF"),
    case("probe-csv/empty.txt", None, "blank lines only"),
    case(
        "probe-csv/invalid-utf8.txt",
        Some(3),
        "one line with an invalid UTF-8 byte",
    ),
    case(
        "probe-csv/negative-nan-huge.csv",
        Some(7),
        "negative, NaN, infinite times; negative and huge counts",
    ),
    case(
        "probe-csv/quoted-crlf.csv",
        Some(3),
        "quoted header and values, CRLF",
    ),
    case(
        "probe-csv/truncated-gzip.txt.gz",
        None,
        "gzip stream cut in half",
    ),
    case("probe-csv/truncated.txt", Some(3), "last line cut short"),
    case(
        "probe-csv/unsorted-duplicate.txt",
        Some(5),
        "probes out of order, a duplicated probe",
    ),
    case(
        "probe-csv/upper-case.TXT.GZ",
        Some(3),
        "gzip with an upper-case extension",
    ),
    case(
        "probe-csv/wrong-delimiter.txt",
        None,
        "semicolons instead of commas",
    ),
    case(
        "skynomad-rounds/bad-zones.json",
        None,
        "zones with a negative and a non-numeric count",
    ),
    case(
        "skynomad-rounds/truncated.json",
        None,
        "JSON cut in the middle",
    ),
    case(
        "stunner/bad-fields.txt",
        Some(6),
        "first_online 2, negative duration, non-numeric start, too few fields",
    ),
    case(
        "stunner/bom.txt",
        Some(2),
        "UTF-8 BOM before the first user id",
    ),
    case(
        "stunner/invalid-utf8.txt",
        Some(2),
        "a user id with an invalid UTF-8 byte",
    ),
    case(
        "stunner/overlapping-windows.txt",
        Some(4),
        "duplicate and overlapping windows",
    ),
    case(
        "tick-json/bad-elements.json",
        Some(8),
        "negative, huge, fractional, string and null elements",
    ),
    case("tick-json/binary.json", None, "binary bytes"),
    case("tick-json/bom-crlf.json", Some(5), "BOM and CRLF"),
    case("tick-json/empty.json", None, "an empty file"),
    case(
        "tick-json/invalid-utf8.json",
        None,
        "an invalid UTF-8 byte inside the JSON",
    ),
    case(
        "tick-json/top-level-array.json",
        None,
        "a JSON array, not an object",
    ),
    case(
        "tick-json/truncated.json",
        None,
        "JSON cut in the data array",
    ),
    case("tick-json/zero-gap.json", None, "gap_seconds 0"),
];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-inputs")
}

/// A format of either kind, by its directory name.
#[derive(Clone, Copy)]
enum AnyFormat {
    Trace(Format),
    Workload(WorkloadFormat),
}

fn format_of(dir: &str) -> AnyFormat {
    Format::from_name(dir)
        .map(AnyFormat::Trace)
        .unwrap_or_else(|| {
            AnyFormat::Workload(
                WorkloadFormat::ALL
                    .into_iter()
                    .find(|f| f.name() == dir)
                    .unwrap_or_else(|| panic!("no format named {dir}")),
            )
        })
}

/// A good input of the format (and, for probe-csv, of the shape) of `case_path`.
fn good_input(case_path: &str) -> InputFile {
    let (rel, text): (&str, &str) = match case_path.split('/').next().unwrap() {
        "tick-json" => ("good.json", "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [0, 1, 1, 0]}\n"),
        "probe-csv" if case_path.ends_with("negative-nan-huge.csv") => {
            ("good.csv", "elapsed,instances\n0,0\n10,2\n20,0\n")
        }
        "probe-csv" => (
            "good.txt",
            "0,2022-10-26T22:05:04.000Z,0\n1,2022-10-26T22:15:04.000Z,1\n",
        ),
        "skynomad-rounds" => (
            "good.json",
            "{\"interval_sec\": 600, \"scheduled_at\": \"2025-10-03T18:00:00.000000-07:00\", \
             \"zone_results\": {\"good-zone-1a\": {\"instances_created\": 3}}}\n",
        ),
        "gce-operations" => (
            "good.json",
            "[{\"id\":\"g1\",\"operationType\":\"insert\",\"insertTime\":\"2019-03-01T10:00:00.000-08:00\",\
             \"status\":\"DONE\",\"targetId\":\"999\",\
             \"targetLink\":\"https://x/projects/p/zones/z/instances/good1\"}]\n",
        ),
        "add-remove" => ("good.csv", "0,add,g1\n10,remove,g1\n"),
        "fta" => (
            "good.tab",
            "node_id event_type event_start_time event_stop_time\ngood 1 100 200\n",
        ),
        "stunner" => ("good.txt", "good_user 1 1402358400000 2 1000\n"),
        "azure-llm" => (
            "good.csv",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,1,2\n",
        ),
        "mooncake" => (
            "good.jsonl",
            "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 2}\n",
        ),
        "lengths-csv" => ("good.csv", "arrival_s,input_tokens,output_tokens\n0,1,2\n"),
        other => panic!("no good input for {other}"),
    };
    InputFile::from_text(rel, text)
}

/// The options of a run: tick-json needs `--polarity` for binary series; the other formats run
/// with their defaults.
fn options(format: Format, strict: bool) -> Options {
    Options {
        polarity: (format == tick_json::FORMAT).then_some(Polarity::Available),
        strict,
        ..Options::default()
    }
}

fn wopts(strict: bool) -> WorkloadOptions {
    WorkloadOptions {
        strict,
        ..WorkloadOptions::default()
    }
}

/// What a lenient parse gave: kept records, rejects, a short summary, notes.
#[derive(Debug)]
struct Outcome {
    kept: u64,
    rejects: Vec<Reject>,
    summary: String,
    notes: Vec<String>,
}

fn run(format: AnyFormat, files: &[InputFile], strict: bool) -> Result<Outcome, String> {
    match format {
        AnyFormat::Trace(f) => parse(f, files, &options(f, strict))
            .map(|t| Outcome {
                kept: t.kept_records,
                summary: format!(
                    "{} nodes, {} sessions ({} ended), {} records kept, {} rejects",
                    t.nodes.len(),
                    t.sessions.len(),
                    t.sessions.iter().filter(|s| s.event).count(),
                    t.kept_records,
                    t.rejects.len()
                ),
                rejects: t.rejects,
                notes: t.notes,
            })
            .map_err(|e| e.to_string()),
        AnyFormat::Workload(f) => workload::parse(f, files, &wopts(strict))
            .map(|w| Outcome {
                kept: w.requests.len() as u64,
                summary: format!(
                    "{} requests (arrivals {:?}), {} rejects",
                    w.requests.len(),
                    w.requests.iter().map(|r| r.arrival_s).collect::<Vec<_>>(),
                    w.rejects.len()
                ),
                rejects: w.rejects,
                notes: w.notes,
            })
            .map_err(|e| e.to_string()),
    }
}

/// Reads a corpus path the way an ingest does (`read_all`: a file that cannot be read becomes a
/// defective input).
fn read(path: &Path, rel: &str, read: &ReadOptions) -> Vec<InputFile> {
    InputFile::read_all_with(path, rel, read).unwrap()
}

/// Checks and renders one case; `shown` is what the file is called in the snapshot.
fn render(
    format: AnyFormat,
    files: &[InputFile],
    display: &str,
    shown: &str,
    records: Option<u64>,
) -> String {
    let strict = run(format, files, true);
    let lenient = run(format, files, false);
    let mut out = String::new();
    match &strict {
        Ok(o) => {
            assert!(o.rejects.is_empty(), "{shown}: strict mode kept rejects");
            out += &format!("strict: ok: {}\n", o.summary);
        }
        Err(e) => {
            assert!(
                e.starts_with(&format!("{display}:")),
                "{shown}: strict message {e:?} does not name the file"
            );
            out += &format!("strict: error: {e}\n");
        }
    }
    match &lenient {
        Ok(o) => {
            out += &format!("lenient: ok: {}\n", o.summary);
            for r in &o.rejects {
                assert_eq!(r.file, display, "{shown}: reject names another file");
                assert!(!r.reason.is_empty());
                out += &format!(
                    "  reject {}:{}: {}  [raw: {:?}]\n",
                    r.file, r.line, r.reason, r.raw
                );
            }
            for n in &o.notes {
                out += &format!("  note: {n}\n");
            }
            // Strict stops at the first reject, with the same file, line and reason.
            if let (Some(first), Err(e)) = (o.rejects.first(), &strict) {
                assert_eq!(
                    e,
                    &format!("{}:{}: {}", first.file, first.line, first.reason),
                    "{shown}"
                );
            }
            if let Some(n) = records {
                let lines: BTreeSet<u64> = o.rejects.iter().map(|r| r.line).collect();
                assert_eq!(
                    o.kept + lines.len() as u64,
                    n,
                    "{shown}: kept {} + rejected records {} != {n} records in the file",
                    o.kept,
                    lines.len()
                );
            }
        }
        Err(e) => {
            assert!(
                records.is_none(),
                "{shown}: countable records but lenient failed: {e}"
            );
            assert!(
                e.starts_with(&format!("{display}:")),
                "{shown}: lenient message {e:?} does not name the file"
            );
            out += &format!("lenient: error: {e}\n");
        }
    }
    out.replace(display, shown)
}

#[test]
fn corpus_in_strict_and_lenient_mode() {
    let dir = corpus_dir();
    // Every file of the corpus is listed above, and every listed file exists.
    let mut on_disk = Vec::new();
    for fmt in std::fs::read_dir(&dir).unwrap() {
        let fmt = fmt.unwrap();
        if fmt.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        for f in std::fs::read_dir(fmt.path()).unwrap() {
            let f = f.unwrap();
            on_disk.push(format!(
                "{}/{}",
                fmt.file_name().to_string_lossy(),
                f.file_name().to_string_lossy()
            ));
        }
    }
    on_disk.sort();
    let listed: Vec<String> = CORPUS.iter().map(|c| c.path.to_string()).collect();
    assert_eq!(on_disk, listed, "tests/bad-inputs and CORPUS differ");
    assert!(CORPUS.len() >= 30);

    for c in CORPUS {
        let (fmt_dir, name) = c.path.split_once('/').unwrap();
        let format = format_of(fmt_dir);
        let path = dir.join(c.path);
        let files = read(&path, name, &ReadOptions::default());
        let display = path.display().to_string();
        let shown = format!("bad-inputs/{}", c.path);
        let text = render(format, &files, &display, &shown, c.records);
        insta::assert_snapshot!(c.path.replace('/', "__"), format!("# {}\n{text}", c.what));

        // Together with a good file, lenient: the good file always comes through.
        let mut both = files.clone();
        both.push(good_input(c.path));
        let o = run(format, &both, false)
            .unwrap_or_else(|e| panic!("{}: with a good file: {e}", c.path));
        assert!(o.kept >= 1, "{}: the good file was lost", c.path);
        assert!(
            o.rejects.iter().all(|r| r.file == display),
            "{}: the good file was rejected",
            c.path
        );
    }
}

/// Cases that cannot be committed: made in a temporary directory at test time.
#[test]
fn generated_cases_directory_unreadable_symlink_loop_gzip_bomb() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let shown = |p: &Path| {
        p.display()
            .to_string()
            .replace(&t.display().to_string(), "<tmp>")
    };
    let format = AnyFormat::Trace(add_remove::FORMAT);
    let mut text = String::new();

    // A directory where a file was expected.
    let d = t.join("a-directory.csv");
    std::fs::create_dir(&d).unwrap();
    let files = read(&d, "a-directory.csv", &ReadOptions::default());
    text += &format!(
        "## a directory\n{}",
        render(format, &files, &d.display().to_string(), &shown(&d), None)
    );

    // A gzip bomb: 64 MiB of zeros, read with a 1 MiB cap.
    let bomb = t.join("bomb.csv.gz");
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &vec![0u8; 64 << 20]).unwrap();
    std::fs::write(&bomb, e.finish().unwrap()).unwrap();
    let cap = ReadOptions {
        max_decompressed_bytes: 1 << 20,
    };
    let files = read(&bomb, "bomb.csv.gz", &cap);
    text += &format!(
        "## a gzip bomb (cap 1 MiB)\n{}",
        render(
            format,
            &files,
            &bomb.display().to_string(),
            &shown(&bomb),
            None
        )
    );

    // A symlink loop in a directory: the walk ends and finds the one data file.
    #[cfg(unix)]
    {
        let walk = t.join("walk");
        std::fs::create_dir(&walk).unwrap();
        std::fs::write(walk.join("log.csv"), "0,add,n1\n5,remove,n1\n").unwrap();
        std::os::unix::fs::symlink(".", walk.join("loop")).unwrap();
        std::os::unix::fs::symlink(".", walk.join("loop2")).unwrap();
        let found = expand_paths(&[walk.display().to_string()]).unwrap();
        let rels: Vec<&str> = found.iter().map(|(_, r)| r.as_str()).collect();
        assert_eq!(rels, vec!["log.csv"]);
        let files: Vec<InputFile> = found
            .iter()
            .flat_map(|(p, r)| read(p, r, &ReadOptions::default()))
            .collect();
        let p = walk.join("log.csv");
        text += &format!(
            "## a directory with two self-loop symlinks\nfound: {rels:?}\n{}",
            render(
                format,
                &files,
                &p.display().to_string(),
                &shown(&p),
                Some(2)
            )
        );
    }
    insta::assert_snapshot!("generated", text);

    // An unreadable file: chmod 000, or (root reads those anyway) /proc/self/mem, which exists
    // and which no one can read from offset 0.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let p = t.join("unreadable.csv");
        std::fs::write(&p, "0,add,n1\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
        let target = if std::fs::read(&p).is_err() {
            Some(p.clone())
        } else if std::fs::read("/proc/self/mem").is_err() {
            Some(std::path::PathBuf::from("/proc/self/mem"))
        } else {
            None
        };
        match target {
            None => {
                // Written to the process's stderr, which the harness does not capture.
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    b"\nSKIPPED: generated_cases_directory_unreadable_symlink_loop_gzip_bomb: the \
                      unreadable-file case (every candidate file is readable here)\n",
                );
            }
            Some(q) => {
                let files = read(&q, "unreadable.csv", &ReadOptions::default());
                let display = q.display().to_string();
                let e = run(format, &files, true).unwrap_err();
                assert!(e.starts_with(&format!("{display}:0: cannot read: ")), "{e}");
                let mut both = files.clone();
                both.push(good_input("add-remove/x"));
                let o = run(format, &both, false).unwrap();
                let alone = run(format, &[good_input("add-remove/x")], false).unwrap();
                assert_eq!(
                    (o.kept, o.rejects.len(), o.rejects[0].line),
                    (alone.kept, 1, 0)
                );
            }
        }
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}
