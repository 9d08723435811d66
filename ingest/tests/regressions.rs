//! Regression tests of the input-robustness defects, one test (or two) per defect, named after
//! it. Everything here is generated in memory or in a temporary directory.

use hazardserve_ingest::adapters::{
    add_remove, fta, gce_operations, probe_csv, skynomad_rounds, stunner, tick_json,
};
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use hazardserve_ingest::workload::{self, WorkloadFormat, WorkloadOptions};
use hazardserve_ingest::{
    csv_records, expand_paths, parse, sniff, Format, IngestError, InputFile, Options, Polarity,
    ReadOptions, Trace,
};

const BOM: &[u8] = b"\xef\xbb\xbf";

fn lenient() -> Options {
    Options {
        polarity: Some(Polarity::Available),
        ..Options::default()
    }
}

fn strict() -> Options {
    Options {
        strict: true,
        ..lenient()
    }
}

fn mem(rel: &str, bytes: &[u8]) -> InputFile {
    InputFile::from_bytes(rel.into(), rel, bytes.to_vec(), String::new())
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn azure_plain() -> Vec<u8> {
    b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:47.00,3,4\n".to_vec()
}

/// A small valid input of every availability format.
fn samples() -> Vec<(Format, &'static str, &'static str)> {
    vec![
        (
            tick_json::FORMAT,
            "s.json",
            "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [0, 1, 1, 0]}\n",
        ),
        (
            probe_csv::FORMAT,
            "us-west-2a_v100_1.txt",
            "0,2022-10-26T22:05:04.000Z,0\n1,2022-10-26T22:15:04.000Z,1\n2,2022-10-26T22:25:05.000Z,0\n",
        ),
        (
            skynomad_rounds::FORMAT,
            "r.json",
            "{\"interval_sec\": 600, \"scheduled_at\": \"2025-10-03T17:00:00.000000-07:00\", \
             \"zone_results\": {\"us-central1-a\": {\"instances_created\": 3}}}\n",
        ),
        (
            gce_operations::FORMAT,
            "ops.json",
            "[{\"id\":\"1\",\"operationType\":\"insert\",\"insertTime\":\"2019-03-01T10:00:00.000-08:00\",\
             \"endTime\":\"2019-03-01T10:00:30.000-08:00\",\"status\":\"DONE\",\"targetId\":\"7\",\
             \"targetLink\":\"https://x/projects/p/zones/us-central1-c/instances/vm7\"}]\n",
        ),
        (
            add_remove::FORMAT,
            "ar.csv",
            "0,add,n1\n10,remove,n1\n20,add,n2\n",
        ),
        (
            add_remove::FORMAT,
            "seg.txt",
            "[0, \"add\", {\"nodes\": [\"a\"]}]\n[10, \"DONE\", {\"nodes\": []}]\n",
        ),
        (
            fta::FORMAT,
            "event_trace.tab",
            "event_id node_id event_type event_start_time event_stop_time\n0 1 1 100 200\n1 1 0 200 300\n",
        ),
        (
            stunner::FORMAT,
            "st.txt",
            "user_a 1 1402358400000 2 1000 2000 3000\n",
        ),
    ]
}

fn summary(t: &Trace) -> String {
    format!(
        "{:?}\n{:?}\nrejects {:?}\nkept {}",
        t.nodes, t.sessions, t.rejects, t.kept_records
    )
}

#[test]
fn bom_is_stripped_by_every_adapter() {
    for (format, rel, text) in samples() {
        let plain = mem(rel, text.as_bytes());
        let with_bom = mem(rel, &[BOM, text.as_bytes()].concat());
        assert_eq!(with_bom.bytes, plain.bytes, "{rel}: BOM removed on reading");
        assert_eq!(
            sniff(std::slice::from_ref(&with_bom)).unwrap(),
            format,
            "{rel}"
        );
        let a = parse(format, &[plain], &lenient()).unwrap();
        let b = parse(format, &[with_bom], &lenient()).unwrap();
        assert!(b.rejects.is_empty(), "{rel}: {:?}", b.rejects);
        assert!(b.kept_records > 0, "{rel}");
        assert_eq!(summary(&a), summary(&b), "{rel}");
    }
    // The stunner user id is not glued to the BOM.
    let t = parse(
        stunner::FORMAT,
        &[mem(
            "st.txt",
            &[BOM, b"user_a 1 1402358400000 2 1000"].concat(),
        )],
        &lenient(),
    )
    .unwrap();
    assert_eq!(t.nodes[0].node_id, "st/user_a");
    // Workloads too.
    let workloads = [
        (
            WorkloadFormat::AzureLlm,
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n",
        ),
        (
            WorkloadFormat::Mooncake,
            "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n",
        ),
        (
            WorkloadFormat::LengthsCsv,
            "arrival_s,input_tokens,output_tokens\n0.5,10,20\n",
        ),
    ];
    for (format, text) in workloads {
        let f = mem("w.csv", &[BOM, text.as_bytes()].concat());
        assert!(format.sniff(&f), "{}", format.name());
        let w = workload::parse(format, &[f], &WorkloadOptions::default()).unwrap();
        assert_eq!(
            (w.requests.len(), w.rejects.len()),
            (1, 0),
            "{}",
            format.name()
        );
    }
}

#[test]
fn bad_file_never_stops_a_multi_file_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let good = "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [0, 1, 1, 0]}\n";
    std::fs::write(dir.path().join("a-good.json"), good).unwrap();
    // truncated JSON, one invalid UTF-8 byte, a truncated gzip, a directory
    std::fs::write(
        dir.path().join("b-truncated.json"),
        "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [0, 1,",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("c-latin1.json"),
        b"{\"metadata\": {\"gap_seconds\": 60, \"zone\": \"z\xe9\"}, \"data\": [1]}",
    )
    .unwrap();
    let z = gz(good.as_bytes());
    std::fs::write(dir.path().join("d-cut.json.gz"), &z[..z.len() / 2]).unwrap();
    std::fs::create_dir(dir.path().join("e-dir.json")).unwrap();
    std::fs::write(dir.path().join("f-good.json"), good).unwrap();
    let mut files = Vec::new();
    for name in [
        "a-good.json",
        "b-truncated.json",
        "c-latin1.json",
        "d-cut.json.gz",
        "e-dir.json",
        "f-good.json",
    ] {
        files.extend(InputFile::read_all(&dir.path().join(name), name).unwrap());
    }
    assert_eq!(files.len(), 6);
    assert_eq!(sniff(&files).unwrap(), tick_json::FORMAT);
    let t = parse(tick_json::FORMAT, &files, &lenient()).unwrap();
    let nodes: Vec<&str> = t.nodes.iter().map(|n| &*n.node_id).collect();
    assert_eq!(nodes, vec!["a-good", "f-good"]);
    let rejects: Vec<(String, u64, &str)> = t
        .rejects
        .iter()
        .map(|r| {
            let name = Path::new(&r.file).file_name().unwrap().to_string_lossy();
            (name.into_owned(), r.line, r.reason.as_str())
        })
        .collect();
    assert_eq!(rejects.len(), 4, "{rejects:?}");
    let find = |name: &str| rejects.iter().find(|r| r.0 == name).unwrap();
    assert!(find("d-cut.json.gz").2.contains("not a valid gzip stream"));
    assert_eq!(find("d-cut.json.gz").1, 0);
    assert!(find("e-dir.json").2.contains("is a directory"));
    assert!(find("b-truncated.json").2.starts_with("not valid JSON"));
    assert_eq!(find("b-truncated.json").1, 1);
    assert_eq!(
        find("c-latin1.json").2,
        "not valid UTF-8 text (byte 0xe9 at column 44)"
    );
    // Workloads: a corrupt first file does not hide the format of the others.
    let z = gz(b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,1,2\n");
    std::fs::write(dir.path().join("a.csv.gz"), &z[..z.len() - 9]).unwrap();
    std::fs::write(dir.path().join("b.csv"), azure_plain()).unwrap();
    let mut w = InputFile::read_all(&dir.path().join("a.csv.gz"), "a.csv.gz").unwrap();
    w.extend(InputFile::read_all(&dir.path().join("b.csv"), "b.csv").unwrap());
    assert_eq!(workload::sniff(&w), Some(WorkloadFormat::AzureLlm));
    let parsed =
        workload::parse(WorkloadFormat::AzureLlm, &w, &WorkloadOptions::default()).unwrap();
    assert_eq!((parsed.requests.len(), parsed.rejects.len()), (1, 1));
    assert!(parsed.rejects[0]
        .reason
        .starts_with("not a valid gzip stream"));
    // Strict: the first bad file is the error, with its line.
    let e = parse(tick_json::FORMAT, &files, &strict())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("b-truncated.json:1: not valid JSON"),
        "files are parsed in order, defects first: {e}"
    );
    let e = parse(tick_json::FORMAT, &files[..3], &strict())
        .unwrap_err()
        .to_string();
    assert!(e.contains("b-truncated.json:1: not valid JSON"), "{e}");
}

#[test]
fn invalid_utf8_byte_rejects_one_record_not_the_file() {
    let cases: Vec<(Format, &str, &[u8])> = vec![
        (
            probe_csv::FORMAT,
            "p.txt",
            b"0,2022-10-26T22:05:04.000Z,0\n1,2022-10-26T22:15:04.000Z,\xff\n2,2022-10-26T22:25:05.000Z,1\n",
        ),
        (add_remove::FORMAT, "a.csv", b"0,add,n1\n5,add,n\xff2\n10,remove,n1\n"),
        (
            add_remove::FORMAT,
            "j.txt",
            b"[0, \"add\", {\"nodes\": [\"a\"]}]\n[5, \"add\", {\"nodes\": [\"\xff\"]}]\n[9, \"DONE\", {\"nodes\": []}]\n",
        ),
        (
            fta::FORMAT,
            "event_trace.tab",
            b"node_id event_type event_start_time event_stop_time\n\xff 1 200 300\n1 1 100 200\n1 1 300 400\n",
        ),
        (
            stunner::FORMAT,
            "s.txt",
            b"u1 1 1402358400000 2 1000 2000\nu\xff2 1 1402358400000 2 1000\nu3 1 1402358400000 2 5\n",
        ),
    ];
    for (format, rel, bytes) in cases {
        let f = mem(rel, bytes);
        let t = parse(format, std::slice::from_ref(&f), &lenient()).unwrap();
        assert_eq!(t.rejects.len(), 1, "{rel}: {:?}", t.rejects);
        assert_eq!(t.rejects[0].line, 2, "{rel}");
        assert!(t.rejects[0]
            .reason
            .starts_with("not valid UTF-8 text (byte 0xff at column "));
        assert_eq!(t.kept_records, 2, "{rel}");
        let e = parse(format, &[f], &strict()).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("{rel}:2: not valid UTF-8 text")),
            "{e}"
        );
    }
    let w = workload::parse(
        WorkloadFormat::Mooncake,
        &[mem(
            "m.jsonl",
            b"{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 2}\n{\"timestamp\": 1, \"input_length\": \"\xff\"}\n{\"timestamp\": 2, \"input_length\": 1, \"output_length\": 2}\n",
        )],
        &WorkloadOptions::default(),
    )
    .unwrap();
    assert_eq!((w.requests.len(), w.rejects[0].line), (2, 2));
}

#[test]
fn uppercase_gzip_extensions_are_decompressed() {
    let dir = tempfile::tempdir().unwrap();
    let text = b"0,add,n1\n10,remove,n1\n";
    std::fs::write(dir.path().join("log.CSV.GZ"), gz(text)).unwrap();
    std::fs::write(dir.path().join("log2.csv.Gz"), gz(text)).unwrap();
    let mut b = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_size(text.len() as u64);
    h.set_mode(0o644);
    h.set_cksum();
    b.append_data(&mut h, "inner/log3.csv", &text[..]).unwrap();
    let zipped = gz(&b.into_inner().unwrap());
    std::fs::write(dir.path().join("a.TGZ"), &zipped).unwrap();
    std::fs::write(dir.path().join("b.tar.GZ"), &zipped).unwrap();
    let mut files = Vec::new();
    for (p, rel) in expand_paths(&[dir.path().display().to_string()]).unwrap() {
        files.extend(InputFile::read_all(&p, &rel).unwrap());
    }
    let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
    assert_eq!(
        rels,
        vec![
            "a.TGZ/inner/log3.csv",
            "b.tar.GZ/inner/log3.csv",
            "log.CSV.GZ",
            "log2.csv.Gz"
        ]
    );
    for f in &files {
        assert_eq!(
            (f.defect.as_deref(), &f.bytes[..]),
            (None, &text[..]),
            "{}",
            f.rel
        );
    }
    assert_eq!(files[2].stem_key(), "log");
    assert_eq!(files[3].stem_key(), "log2");
    let t = parse(add_remove::FORMAT, &files, &lenient()).unwrap();
    assert_eq!(t.nodes.len(), 4);
    assert!(t.rejects.is_empty());
}

#[test]
fn gzip_bomb_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.json.gz");
    std::fs::write(&bomb, gz(&vec![0u8; 64 << 20])).unwrap();
    let cap = ReadOptions {
        max_decompressed_bytes: 1 << 20,
    };
    let e = InputFile::read_with(&bomb, "bomb.json.gz", &cap).unwrap_err();
    assert!(
        matches!(e, IngestError::TooLarge { limit: 1048576, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!(
            "{}: decompressed content exceeds the limit of 1048576 bytes (1.0 MiB)",
            bomb.display()
        )),
        "{msg}"
    );
    // Through read_all: a defective input, then a reject (lenient) or the error (strict).
    let files = InputFile::read_all_with(&bomb, "bomb.json.gz", &cap).unwrap();
    assert!(files[0].bytes.is_empty());
    let good = mem(
        "good.json",
        b"{\"metadata\": {\"gap_seconds\": 60}, \"data\": [1]}",
    );
    let all = [files[0].clone(), good];
    let t = parse(tick_json::FORMAT, &all, &lenient()).unwrap();
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.rejects[0].file, bomb.display().to_string());
    assert!(t.rejects[0]
        .reason
        .contains("exceeds the limit of 1048576 bytes"));
    let e = parse(tick_json::FORMAT, &all, &strict())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("bomb.json.gz:0: decompressed content exceeds the limit of 1048576 bytes"),
        "{e}"
    );
    // The same bomb inside a .tgz, and the default cap lets a genuine file through.
    std::fs::copy(&bomb, dir.path().join("bomb.tgz")).unwrap();
    let tgz = InputFile::read_all_with(&dir.path().join("bomb.tgz"), "bomb.tgz", &cap).unwrap();
    assert!(tgz[0]
        .defect
        .as_deref()
        .unwrap()
        .contains("exceeds the limit"));
    assert_eq!(
        InputFile::read(&bomb, "bomb.json.gz").unwrap().bytes.len(),
        64 << 20
    );
    assert_eq!(ReadOptions::default().max_decompressed_bytes, 4 << 30);
}

/// Runs `f` on another thread and fails the test if it takes longer than `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("did not finish in time (a hang)")
}

#[cfg(unix)]
#[test]
fn symlink_loops_do_not_hang() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("a.csv"), "0,add,n1\n").unwrap();
    std::fs::write(root.join("sub/b.csv"), "0,add,n1\n").unwrap();
    // Two self-loops and a loop back up: `ln -s . loop`, `ln -s . loop2`, `ln -s .. sub/up`.
    std::os::unix::fs::symlink(".", root.join("loop")).unwrap();
    std::os::unix::fs::symlink(".", root.join("loop2")).unwrap();
    std::os::unix::fs::symlink("..", root.join("sub/up")).unwrap();
    let arg = root.display().to_string();
    let found = within(20, move || expand_paths(&[arg]).unwrap());
    let rels: Vec<&str> = found.iter().map(|(_, r)| r.as_str()).collect();
    assert_eq!(rels, vec!["a.csv", "sub/b.csv"]);
}

#[test]
fn duplicate_node_keys_are_made_unique_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["d1", "d2", "e1/d", "e2/d"] {
        std::fs::create_dir_all(d.join(sub)).unwrap();
    }
    let series = "{\"metadata\": {\"gap_seconds\": 60}, \"data\": [0, 1]}";
    for f in [
        "d1/x.json",
        "d2/x.json",
        "d2/y.json",
        "e1/d/x.json",
        "e2/d/x.json",
    ] {
        std::fs::write(d.join(f), series).unwrap();
    }
    let read = |args: Vec<String>| -> Vec<InputFile> {
        expand_paths(&args)
            .unwrap()
            .iter()
            .flat_map(|(p, r)| InputFile::read_all(p, r).unwrap())
            .collect()
    };
    let keys = |files: &[InputFile]| -> Vec<String> {
        let t = parse(tick_json::FORMAT, files, &lenient()).unwrap();
        t.nodes.iter().map(|n| n.node_id.clone()).collect()
    };
    let arg = |p: &str| d.join(p).display().to_string();
    // Two file arguments with the same base name: told apart by their directories.
    let files = read(vec![arg("d1/x.json"), arg("d2/x.json")]);
    assert_eq!(keys(&files), vec!["d1/x", "d2/x"]);
    // Two directory arguments holding the same names: only the colliding files change.
    assert_eq!(
        keys(&read(vec![arg("d1"), arg("d2")])),
        vec!["d1/x", "d2/x", "y"]
    );
    // As many parent directories as it takes.
    assert_eq!(
        keys(&read(vec![arg("e1/d"), arg("e2/d")])),
        vec!["e1/d/x", "e2/d/x"]
    );
    // Their common parent: distinct keys without help.
    assert_eq!(
        keys(&read(vec![d.display().to_string()])),
        vec!["d1/x", "d2/x", "d2/y", "e1/d/x", "e2/d/x"]
    );
    // `x.json` beside `x.json.gz`: no directory tells them apart, so they are refused.
    std::fs::write(d.join("d1/x.json.gz"), gz(series.as_bytes())).unwrap();
    let e = parse(tick_json::FORMAT, &read(vec![arg("d1")]), &lenient()).unwrap_err();
    assert!(
        matches!(&e, IngestError::DuplicateKey { key, .. } if key == "x"),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("d1/x.json and ") && msg.contains("d1/x.json.gz"),
        "{msg}"
    );
    // Inputs built in memory with the same name: refused, for every format that builds keys
    // from file names.
    let pairs: [(Format, &str, &str); 4] = [
        (probe_csv::FORMAT, "p.txt", "0,2022-10-26T22:05:04.000Z,0\n"),
        (add_remove::FORMAT, "a.csv", "0,add,n1\n"),
        (stunner::FORMAT, "s.txt", "u1 1 1402358400000 2 1000\n"),
        (
            fta::FORMAT,
            "event_trace.tab",
            "node_id event_type event_start_time event_stop_time\n1 1 100 200\n",
        ),
    ];
    for (format, name, text) in pairs {
        let a = InputFile::from_bytes(
            format!("/a/{name}").into(),
            name,
            text.into(),
            String::new(),
        );
        let b = InputFile::from_bytes(
            format!("/b/{name}").into(),
            name,
            text.into(),
            String::new(),
        );
        let e = parse(format, &[a, b], &lenient()).unwrap_err();
        assert!(
            matches!(e, IngestError::DuplicateKey { .. }),
            "{}: {e:?}",
            format.name()
        );
    }
}

#[test]
fn negative_times_are_rejected_by_add_remove_and_fta() {
    let t = parse(
        add_remove::FORMAT,
        &[mem("a.csv", b"0,add,n1\n-5,add,n2\n10,remove,n1\n")],
        &lenient(),
    )
    .unwrap();
    assert_eq!(t.rejects.len(), 1);
    assert_eq!(
        (t.rejects[0].line, t.rejects[0].reason.as_str()),
        (
            2,
            "t_ms -5 is negative (milliseconds since the trace start expected)"
        )
    );
    assert_eq!(t.nodes.len(), 1);
    let t = parse(
        add_remove::FORMAT,
        &[mem(
            "j.txt",
            b"[0, \"add\", {\"nodes\": [\"a\"]}]\n[-10.5, \"remove\", {\"nodes\": [\"a\"]}]\n[9, \"DONE\", {\"nodes\": []}]\n",
        )],
        &lenient(),
    )
    .unwrap();
    assert_eq!(
        (t.rejects[0].line, t.rejects[0].reason.as_str()),
        (
            2,
            "element 0 (t_ms) -10.5 is negative (milliseconds since the trace start expected)"
        )
    );
    assert!(t.sessions.iter().all(|s| s.start >= 0.0 && s.end >= 0.0));
    let text = "node_id event_type event_start_time event_stop_time\n1 1 -100 200\n1 0 200 300\n1 1 300 -1\n1 1 300 400\n";
    let t = parse(
        fta::FORMAT,
        &[mem("event_trace.tab", text.as_bytes())],
        &lenient(),
    )
    .unwrap();
    let r: Vec<(u64, &str)> = t
        .rejects
        .iter()
        .map(|r| (r.line, r.reason.as_str()))
        .collect();
    assert_eq!(
        r,
        vec![
            (
                2,
                "event_start_time -100 is negative (times are seconds, never before 0)"
            ),
            (
                4,
                "event_stop_time -1 is negative (times are seconds, never before 0)"
            ),
        ]
    );
    assert!(t.sessions.iter().all(|s| s.start >= 0.0));
    let e = parse(
        fta::FORMAT,
        &[mem("event_trace.tab", text.as_bytes())],
        &strict(),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "event_trace.tab:2: event_start_time -100 is negative (times are seconds, never before 0)"
    );
}

#[test]
fn epoch_arrivals_in_lengths_csv_are_made_relative() {
    let f = mem(
        "e.csv",
        b"arrival_s,input_tokens,output_tokens\n1700000000.5,10,20\n1700000030.25,12,22\n1700000001.0,11,21\n",
    );
    let w = workload::parse(
        WorkloadFormat::LengthsCsv,
        &[f],
        &WorkloadOptions::default(),
    )
    .unwrap();
    let arrivals: Vec<f64> = w.requests.iter().map(|r| r.arrival_s).collect();
    assert_eq!(arrivals, vec![0.0, 0.5, 29.75]);
    assert_eq!(w.start_utc, Some(1_700_000_000.5));
    assert!(
        w.notes.iter().any(|n| n.contains("Unix epoch")),
        "{:?}",
        w.notes
    );
    // Epoch milliseconds, named by the column.
    let f = mem(
        "ms.csv",
        b"arrival_time_ms,input_tokens,output_tokens\n1700000000000,1,1\n1700000002500,1,1\n",
    );
    let w = workload::parse(
        WorkloadFormat::LengthsCsv,
        &[f],
        &WorkloadOptions::default(),
    )
    .unwrap();
    assert_eq!(
        w.requests.iter().map(|r| r.arrival_s).collect::<Vec<_>>(),
        vec![0.0, 2.5]
    );
    // Relative arrivals stay as they are (a first request at 5 s still arrives at 5 s).
    let f = mem(
        "r.csv",
        b"arrival_s,input_tokens,output_tokens\n5,1,1\n7,1,1\n",
    );
    let w = workload::parse(
        WorkloadFormat::LengthsCsv,
        &[f],
        &WorkloadOptions::default(),
    )
    .unwrap();
    assert_eq!(
        w.requests.iter().map(|r| r.arrival_s).collect::<Vec<_>>(),
        vec![5.0, 7.0]
    );
    assert_eq!(w.start_utc, None);
}

#[test]
fn csv_adapters_read_quoted_fields_crlf_and_bom() {
    // add-remove: a quoted node label with a comma, a quoted time, CRLF, a BOM.
    let t = parse(
        add_remove::FORMAT,
        &[mem(
            "q.csv",
            &[
                BOM,
                b"0,add,\"node,1\"\r\n\"10\",remove,\"node,1\"\r\n20,add,\"multi\nline\"\r\n",
            ]
            .concat(),
        )],
        &lenient(),
    )
    .unwrap();
    assert!(t.rejects.is_empty(), "{:?}", t.rejects);
    let ids: Vec<&str> = t.sessions.iter().map(|s| &*s.node_id).collect();
    assert_eq!(ids, vec!["q/multi\nline", "q/node,1"]);
    assert_eq!(t.kept_records, 3);
    // probe-csv: quoted header and values.
    let t = parse(
        probe_csv::FORMAT,
        &[mem(
            "a.csv",
            b"\"date\",\"availability\"\r\n\"2023-02-15 22:08:16\",\"1\"\r\n2023-02-15 22:11:31,0\r\n",
        )],
        &lenient(),
    )
    .unwrap();
    assert!(t.rejects.is_empty(), "{:?}", t.rejects);
    assert_eq!((t.sessions.len(), t.kept_records), (1, 2));
    // azure-llm and lengths-csv: quoted fields, a quoted newline; the line numbers of rejects
    // are the lines the records start on.
    let w = workload::parse(
        WorkloadFormat::LengthsCsv,
        &[mem(
            "l.csv",
            b"arrival_s,prompt,input_tokens,output_tokens\r\n0.5,\"hello, world\",10,20\r\n1.0,\"two\r\nlines\",11,21\r\n1.5,plain,x,22\r\n",
        )],
        &WorkloadOptions::default(),
    )
    .unwrap();
    assert_eq!(w.requests.len(), 2);
    assert_eq!(
        (w.rejects[0].line, w.rejects[0].raw.as_str()),
        (5, "1.5,plain,x,22")
    );
    let w = workload::parse(
        WorkloadFormat::AzureLlm,
        &[mem(
            "z.csv",
            b"TIMESTAMP,ContextTokens,GeneratedTokens\r\n\"2023-11-16 18:15:46.68\",\"374\",44\r\n",
        )],
        &WorkloadOptions::default(),
    )
    .unwrap();
    assert_eq!((w.requests.len(), w.requests[0].prompt_tokens), (1, 374));
}

#[test]
fn csv_records_helper_reads_quoted_fields_and_reports_lines() {
    let text = b"\xef\xbb\xbfa,b\r\n\r\n\"x, y\",\"1\n2\"\r\n3,\xff\n  \n4 , 5\n";
    let got: Vec<_> = csv_records(&text[..]).collect();
    assert_eq!(got.len(), 4);
    let ok = |i: usize| got[i].as_ref().unwrap();
    assert_eq!(
        (ok(0).0, ok(0).1.iter().collect::<Vec<_>>()),
        (1, vec!["a", "b"])
    );
    assert_eq!(
        (ok(1).0, ok(1).1.iter().collect::<Vec<_>>()),
        (3, vec!["x, y", "1\n2"])
    );
    let e = got[2].as_ref().unwrap_err();
    assert_eq!(e.line, 5);
    assert_eq!(
        e.to_string(),
        "line 5: not valid UTF-8 text (byte 0xff at column 3)"
    );
    assert_eq!(
        (ok(3).0, ok(3).1.iter().collect::<Vec<_>>()),
        (7, vec!["4", "5"])
    );
}
