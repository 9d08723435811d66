//! Real-data checks of the tick-json, probe-csv and skynomad-rounds adapters against the public
//! traces in `shared/traces-public/` (counts from its MANIFEST). Skipped when the data is absent.

mod common;

use hazardserve_ingest::adapters::{probe_csv, skynomad_rounds, tick_json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hazardserve_ingest::{
    expand_paths, parse, sniff, Format, InputFile, Kind, Options, Polarity, Session, TimeBase,
    Trace,
};

fn data_root() -> Option<PathBuf> {
    common::traces_public()
}

/// Every input below `dir` (archives expanded), with `rel` relative to `dir`.
fn load(dir: &Path) -> Vec<InputFile> {
    let arg = dir.to_string_lossy().into_owned();
    expand_paths(&[arg])
        .unwrap()
        .into_iter()
        .flat_map(|(p, rel)| InputFile::read_all(&p, &rel).unwrap())
        .collect()
}

fn polarity(p: Polarity) -> Options {
    Options {
        polarity: Some(p),
        ..Options::default()
    }
}

/// Parses after checking that `--format auto` picks `format` for these files.
fn ingest(format: Format, files: &[InputFile], options: &Options) -> Trace {
    assert_eq!(sniff(files).unwrap(), format);
    parse(format, files, options).unwrap()
}

fn censored(t: &Trace) -> usize {
    t.sessions.iter().filter(|s| !s.event).count()
}

fn truncated(t: &Trace) -> usize {
    t.sessions.iter().filter(|s| s.left_truncated).count()
}

fn is_count_dir(f: &InputFile) -> bool {
    f.rel.contains("16-node/") || f.rel.contains("4-node/")
}

#[test]
fn cantbelate_binary_series_give_3859_runs() {
    let Some(root) = data_root() else { return };
    let all = load(&root.join("cantbelate-spot-traces"));
    assert_eq!(all.len(), 34);
    let (avail, preempt): (Vec<InputFile>, Vec<InputFile>) = all
        .iter()
        .filter(|f| !is_count_dir(f))
        .cloned()
        .partition(|f| f.rel.starts_with("availability/"));
    assert_eq!((avail.len(), preempt.len()), (17, 11));

    // Binary series need the polarity.
    let e = parse(tick_json::FORMAT, &avail, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("--polarity"), "{e}");

    let a = ingest(tick_json::FORMAT, &avail, &polarity(Polarity::Available));
    let p = ingest(tick_json::FORMAT, &preempt, &polarity(Polarity::Available));
    assert_eq!(
        (a.kind, p.kind),
        (Kind::SpotObtainability, Kind::SpotLifetime)
    );
    assert_eq!(
        (a.time_base, p.time_base),
        (TimeBase::Relative, TimeBase::Relative)
    );
    assert!(a.rejects.is_empty() && p.rejects.is_empty());
    let runs = a.sessions.len() + p.sessions.len();
    println!(
        "cantbelate binary: availability {} runs, preemption {} runs",
        a.sessions.len(),
        p.sessions.len()
    );
    assert_eq!(runs, 3859);
    assert_eq!(censored(&a) + censored(&p), 21);
    assert_eq!(truncated(&a) + truncated(&p), 7);
    // Every preemption file starts with 0 (launching): no left-truncated lifetime.
    assert_eq!(truncated(&p), 0);
    // The three byte-identical gcp-04-30-2023 files: one 45.6-h censored session each.
    let c3 = p
        .sessions
        .iter()
        .filter(|s| {
            s.node_id
                .starts_with("preemption/1-node/gcp-04-30-2023/us-central1")
        })
        .collect::<Vec<_>>();
    assert_eq!(c3.len(), 3);
    assert!(c3
        .iter()
        .all(|s| !s.event && s.start == 30.0 && s.end == 5476.0 * 30.0));
    let n = a
        .nodes
        .iter()
        .find(|n| n.node_id == "availability/1-node/aws-10-26-2022/us-west-2a_k80_8")
        .unwrap();
    assert_eq!(n.zone.as_deref(), Some("us-west-2a"));
    assert_eq!(n.instance_type.as_deref(), Some("k80_8"));
    assert_eq!(
        n.group.as_deref(),
        Some("availability/1-node/aws-10-26-2022")
    );
    assert_eq!(n.observed_to, 3895.0 * 600.0);

    // Mixing availability and preemption in one source is refused.
    let mixed: Vec<InputFile> = all.iter().filter(|f| !is_count_dir(f)).cloned().collect();
    let e = parse(tick_json::FORMAT, &mixed, &polarity(Polarity::Available)).unwrap_err();
    assert!(e.to_string().contains("separate sources"), "{e}");
}

#[test]
fn cantbelate_count_series_use_threshold() {
    let Some(root) = data_root() else { return };
    let dir = root.join("cantbelate-spot-traces");
    let g16 = load(&dir.join("availability/16-node"));
    let g4 = load(&dir.join("preemption/4-node"));
    assert_eq!((g16.len(), g4.len()), (3, 3));
    for (files, kind) in [(&g16, Kind::SpotObtainability), (&g4, Kind::SpotLifetime)] {
        // Counts need no polarity; k defaults to 1 with a note.
        let k1 = ingest(tick_json::FORMAT, files, &Options::default());
        assert_eq!(k1.kind, kind);
        assert!(k1.rejects.is_empty());
        assert!(k1.notes.iter().any(|n| n.contains("k=1")), "{:?}", k1.notes);
        let full = Options {
            threshold: Some(if kind == Kind::SpotLifetime { 4 } else { 16 }),
            ..Options::default()
        };
        let kn = ingest(tick_json::FORMAT, files, &full);
        println!(
            "count series {:?}: k=1 {} runs, k=N {} runs",
            kind,
            k1.sessions.len(),
            kn.sessions.len()
        );
        // Polarity never inverts counts.
        let inv = parse(
            tick_json::FORMAT,
            files,
            &Options {
                polarity: Some(Polarity::Unavailable),
                ..full.clone()
            },
        )
        .unwrap();
        assert_eq!(inv.sessions, kn.sessions);
        // Full-group windows are contained in >=1 windows: total up time is not larger.
        let up = |t: &Trace| t.sessions.iter().map(Session::duration_s).sum::<f64>();
        assert!(up(&kn) < up(&k1));
    }
}

/// `(start tick, end tick, event, left truncated)` per session, per series file name.
type TickRuns = BTreeMap<String, Vec<(u64, u64, bool, bool)>>;

#[test]
fn json_2022_10_26_matches_raw_probe_timestamps() {
    let Some(root) = data_root() else { return };
    let json = load(&root.join("cantbelate-spot-traces/availability/1-node/aws-10-26-2022"));
    let csv =
        load(&root.join("cantbelate-raw-probes/scripts/availability/traces/2022-10-26T22-05"));
    assert_eq!((json.len(), csv.len()), (8, 8));

    let from_json = |p: Polarity| -> TickRuns {
        let t = ingest(tick_json::FORMAT, &json, &polarity(p));
        let mut out = TickRuns::new();
        for s in &t.sessions {
            out.entry(s.node_id.to_string()).or_default().push((
                (s.start / 600.0) as u64,
                (s.end / 600.0) as u64,
                s.event,
                s.left_truncated,
            ));
        }
        out
    };
    let t = ingest(probe_csv::FORMAT, &csv, &Options::default());
    assert_eq!(t.time_base, TimeBase::Utc);
    assert!(t.rejects.is_empty());
    // Map each probe timestamp back to its row index (clock).
    let mut from_csv = TickRuns::new();
    for f in &csv {
        let rows: Vec<f64> = f
            .text()
            .unwrap()
            .lines()
            .map(|l| {
                let ts = l.split(',').nth(1).unwrap();
                chrono::DateTime::parse_from_rfc3339(ts)
                    .unwrap()
                    .timestamp() as f64
            })
            .collect();
        let index = |t: f64| -> u64 {
            match rows.iter().position(|&r| r == t) {
                Some(i) => i as u64,
                None => {
                    // Censored at the last timestamp + 600 s: one past the last probe.
                    assert_eq!(t, rows[rows.len() - 1] + 600.0);
                    rows.len() as u64
                }
            }
        };
        let id = f.stem_key();
        let runs: Vec<_> = t
            .sessions
            .iter()
            .filter(|s| *s.node_id == *id)
            .map(|s| (index(s.start), index(s.end), s.event, s.left_truncated))
            .collect();
        from_csv.insert(id, runs);
    }
    let available = from_json(Polarity::Available);
    assert_eq!(available.len(), 8);
    assert_eq!(
        available, from_csv,
        "published JSON (1 = available) vs raw fail logs"
    );
    assert_ne!(from_json(Polarity::Unavailable), from_csv);
    let n: usize = from_csv.values().map(Vec::len).sum();
    assert_eq!(n, 1529);
}

#[test]
fn raw_probes_total_4195_runs() {
    let Some(root) = data_root() else { return };
    let base = root.join("cantbelate-raw-probes/scripts/availability/traces");
    let mut total = 0;
    for (campaign, runs) in [
        ("2022-10-26T22-05", 1529),
        ("2022-11-28T22-23", 838),
        ("2022-12-13T19-23", 1828),
    ] {
        let t = ingest(
            probe_csv::FORMAT,
            &load(&base.join(campaign)),
            &Options::default(),
        );
        assert!(t.rejects.is_empty());
        assert_eq!(t.kind, Kind::SpotObtainability);
        assert_eq!(t.sessions.len(), runs, "{campaign}");
        assert!(t.sessions.iter().all(|s| s.resolution_s == 600.0));
        total += t.sessions.len();
    }
    // All three campaigns in one source.
    let all = ingest(probe_csv::FORMAT, &load(&base), &Options::default());
    assert_eq!(all.nodes.len(), 24);
    assert_eq!(all.sessions.len(), total);
    assert_eq!(total, 4195);
}

#[test]
fn spothedge_ingests_without_rejects() {
    let Some(root) = data_root() else { return };
    let dir = root.join("spothedge/data");
    let t = ingest(
        tick_json::FORMAT,
        &load(&dir),
        &polarity(Polarity::Available),
    );
    assert!(t.rejects.is_empty());
    assert_eq!(t.nodes.len(), 21);
    assert_eq!(t.kind, Kind::SpotObtainability);
    println!(
        "spothedge: {} runs, {} nodes",
        t.sessions.len(),
        t.nodes.len()
    );
    // GCP1 us-east1-b is all 0.
    assert!(!t
        .sessions
        .iter()
        .any(|s| &*s.node_id == "GCP1/us-east1-b_a100_40gb_8"));

    // AWS3 = aws-02-15-2023 with a wrong gap: with --gap-seconds 195 the sessions coincide.
    let aws3 = load(&dir.join("AWS3"));
    let cbl = load(&root.join("cantbelate-spot-traces/availability/1-node/aws-02-15-2023"));
    let fixed = Options {
        gap_seconds: Some(195.0),
        ..polarity(Polarity::Available)
    };
    let a = ingest(tick_json::FORMAT, &aws3, &fixed);
    let c = ingest(tick_json::FORMAT, &cbl, &polarity(Polarity::Available));
    let key = |s: &Session| (s.node_id.clone(), s.start, s.end, s.event, s.left_truncated);
    assert_eq!(
        a.sessions.iter().map(key).collect::<Vec<_>>(),
        c.sessions.iter().map(key).collect::<Vec<_>>()
    );
    let wrong = ingest(tick_json::FORMAT, &aws3, &polarity(Polarity::Available));
    assert_eq!(wrong.sessions.len(), a.sessions.len());
    assert_eq!(wrong.sessions[0].resolution_s, 300.0);
}

/// SpotHedge AWS1 and AWS2 both hold `us-west-2c_v100_1.json`: ingested as three directory
/// arguments (as the `spothedge-counts` public source is), the two series stay two nodes.
#[test]
fn spothedge_directories_sharing_file_names_stay_apart() {
    let Some(root) = data_root() else { return };
    let args: Vec<String> = ["AWS1", "AWS2", "GCP1"]
        .iter()
        .map(|d| root.join("spothedge/data").join(d).display().to_string())
        .collect();
    let files: Vec<InputFile> = expand_paths(&args)
        .unwrap()
        .into_iter()
        .flat_map(|(p, rel)| InputFile::read_all(&p, &rel).unwrap())
        .collect();
    assert_eq!(files.len(), 12);
    let t = parse(tick_json::FORMAT, &files, &polarity(Polarity::Available)).unwrap();
    let ids: Vec<&str> = t.nodes.iter().map(|n| &*n.node_id).collect();
    assert_eq!(ids.len(), 12, "{ids:?}");
    assert!(ids.contains(&"AWS1/us-west-2c_v100_1") && ids.contains(&"AWS2/us-west-2c_v100_1"));
    assert!(
        ids.contains(&"us-east-1f_v100_1"),
        "files that do not collide keep their key"
    );
}

#[test]
fn skynomad_h100_rounds_k1() {
    let Some(root) = data_root() else { return };
    let files = load(&root.join("skynomad/data/h100_16_runs"));
    assert_eq!(files.len(), 2104);
    let t = ingest(skynomad_rounds::FORMAT, &files, &Options::default());
    assert!(t.rejects.is_empty());
    assert_eq!(
        (t.kind, t.time_base),
        (Kind::SpotObtainability, TimeBase::Utc)
    );
    assert_eq!(t.nodes.len(), 13);
    // MANIFEST §3a counts 842 runs with k = 1, but that count joins runs across the 10-round hole
    // of 2025-10-08 (21:20 → 23:10 −07:00). The hole rule (which §3a also states: censor at a
    // missing-round gap) censors every run still up at 21:20 (`observation-gap`, 9 zones) and
    // starts a new left-truncated run at 23:10 where the zone is up again: 8 of those 9 zones were
    // up on both sides, so the hole splits 8 runs and 842 + 8 = 850.
    let hole_start = 1_759_983_600.0; // 2025-10-08T21:20:00-07:00, the last round before the hole
    let hole_end = hole_start + 6600.0; // 23:10, the first round after it
    let gap_censored: Vec<&Session> = t
        .sessions
        .iter()
        .filter(|s| s.end_cause == "observation-gap")
        .collect();
    assert_eq!(gap_censored.len(), 9);
    assert!(gap_censored
        .iter()
        .all(|s| !s.event && (s.end - (hole_start + 600.0)).abs() < 1.0));
    let resumed: Vec<&Session> = t
        .sessions
        .iter()
        .filter(|s| s.left_truncated && (s.start - hole_end).abs() < 1.0)
        .collect();
    let split: Vec<&&Session> = gap_censored
        .iter()
        .filter(|g| resumed.iter().any(|r| r.node_id == g.node_id))
        .collect();
    assert_eq!(split.len(), 8);
    assert_eq!(t.sessions.len(), 850);
    assert_eq!(t.sessions.len() - split.len(), 842);
    let expected = [
        ("asia-south2-b", 2),
        ("asia-southeast1-b", 18),
        ("asia-southeast1-c", 16),
        ("europe-west1-c", 17),
        ("europe-west3-c", 17),
        ("us-central1-a", 31),
        ("us-central1-b", 92),
        ("us-central1-c", 89),
        ("us-east4-a", 143),
        ("us-east4-b", 84),
        ("us-east5-a", 125),
        ("us-west1-a", 57),
        ("us-west1-b", 151),
    ];
    for (zone, manifest_runs) in expected {
        let runs = t.sessions.iter().filter(|s| *s.node_id == *zone).count();
        let split = split.iter().filter(|s| *s.node_id == *zone).count();
        assert_eq!(runs - split, manifest_runs, "{zone}");
    }
    let k16 = ingest(
        skynomad_rounds::FORMAT,
        &files,
        &Options {
            threshold: Some(16),
            ..Options::default()
        },
    );
    println!(
        "skynomad h100: k=1 {} runs, k=16 {} runs",
        t.sessions.len(),
        k16.sessions.len()
    );
    assert!(!k16.sessions.iter().any(|s| &*s.node_id == "europe-west3-c"));
}

#[test]
fn skynomad_v100_csv_and_converted_archive() {
    let Some(root) = data_root() else { return };
    let csv = load(&root.join("skynomad/data/real/availability/2023-02-15/processed"));
    assert_eq!(csv.len(), 9);
    let v = ingest(probe_csv::FORMAT, &csv, &Options::default());
    assert!(v.rejects.is_empty());
    assert!(v.sessions.iter().all(|s| s.resolution_s == 195.0));
    // Same values as the published aws-02-15-2023 JSON: same runs, flags per series.
    let json = load(&root.join("cantbelate-spot-traces/availability/1-node/aws-02-15-2023"));
    let j = ingest(tick_json::FORMAT, &json, &polarity(Polarity::Available));
    let flags = |t: &Trace| {
        let mut m: BTreeMap<String, Vec<(bool, bool)>> = BTreeMap::new();
        for s in &t.sessions {
            let series = s.node_id.rsplit('/').next().unwrap().to_string();
            m.entry(series)
                .or_default()
                .push((s.event, s.left_truncated));
        }
        m
    };
    assert_eq!(flags(&v), flags(&j));
    println!("skynomad v100 csv: {} runs", v.sessions.len());

    let archive = root.join("skynomad/data/converted_multi_region_aligned_h100_16_merged.tar.gz");
    let members = InputFile::read_all(&archive, "converted.tar.gz").unwrap();
    assert_eq!(members.len(), 13 * 17);
    assert!(!members.iter().any(|m| m.rel.contains("README")));
    let e = parse(tick_json::FORMAT, &members, &Options::default()).unwrap_err();
    assert!(e.to_string().contains("--polarity"), "{e}");
    let c = ingest(
        tick_json::FORMAT,
        &members,
        &polarity(Polarity::Unavailable),
    );
    assert!(c.rejects.is_empty());
    assert_eq!(c.time_base, TimeBase::Utc);
    let full = c
        .nodes
        .iter()
        .find(|n| n.node_id == "converted.tar.gz/converted_multi_region_aligned_h100_16_merged/us-central1-a_h100_16/full")
        .unwrap();
    assert_eq!(full.zone.as_deref(), Some("us-central1-a"));
    assert_eq!(full.instance_type.as_deref(), Some("h100_16"));
    // 2025-10-04T00:10:00.002281Z + 2114 ticks of 600 s.
    assert!((full.observed_from - 1_759_536_600.002_281).abs() < 1e-3);
    assert!((full.observed_to - full.observed_from - 2114.0 * 600.0).abs() < 1e-3);
    let fulls: usize = c
        .sessions
        .iter()
        .filter(|s| s.node_id.ends_with("/full"))
        .count();
    println!(
        "skynomad converted archive: {} runs, {} in full.json",
        c.sessions.len(),
        fulls
    );
}

#[test]
fn bamboo_and_parcae_count_series() {
    let Some(root) = data_root() else { return };
    let doc = load(&root.join("bamboo/doc/data"));
    assert_eq!(doc.len(), 4);
    let d = ingest(probe_csv::FORMAT, &doc, &Options::default());
    assert!(d.rejects.is_empty());
    assert_eq!(
        (d.kind, d.time_base),
        (Kind::SpotLifetime, TimeBase::Relative)
    );
    assert!(d.notes.iter().any(|n| n.contains("hours")));
    let p2 = d
        .nodes
        .iter()
        .find(|n| n.node_id.contains("2020-11-20-to-2020-11-23"))
        .unwrap();
    assert!((p2.observed_to - 88.695 * 3600.0).abs() < 1e-6);
    println!("bamboo doc/data: {} runs (k=1)", d.sessions.len());

    let gcloud = load(&root.join("bamboo/traces/gcloud"));
    assert_eq!(gcloud.len(), 2);
    let g = ingest(probe_csv::FORMAT, &gcloud, &Options::default());
    assert!(g.rejects.is_empty());
    assert_eq!(g.time_base, TimeBase::Utc);
    let g80 = ingest(
        probe_csv::FORMAT,
        &gcloud,
        &Options {
            threshold: Some(80),
            ..Options::default()
        },
    );
    println!(
        "bamboo gcloud: {} runs (k=1), {} runs (k=80)",
        g.sessions.len(),
        g80.sessions.len()
    );
    // The V100 group is 80 at its first record (13:07:45) and drops to 70 a minute later.
    let v = g80
        .sessions
        .iter()
        .find(|s| &*s.node_id == "v100x1-east1c")
        .unwrap();
    assert_eq!(
        (v.duration_s(), v.event, v.left_truncated),
        (60.0, true, true)
    );

    let p3 = load(&root.join("parcae/aws/traces"));
    let p = ingest(probe_csv::FORMAT, &p3, &Options::default());
    assert!(p.rejects.is_empty());
    assert!(p.notes.iter().any(|n| n.contains("milliseconds")));
    // The group never drops to 0: one censored session over the whole 11.4 h.
    assert_eq!(p.sessions.len(), 1);
    let s = &p.sessions[0];
    assert_eq!(
        (s.start, s.end, s.event, s.left_truncated),
        (0.0, 40_920.0, false, true)
    );
    let p16 = ingest(
        probe_csv::FORMAT,
        &p3,
        &Options {
            threshold: Some(16),
            ..Options::default()
        },
    );
    println!(
        "parcae p3.csv: {} runs (k=1), {} runs (k=16)",
        p.sessions.len(),
        p16.sessions.len()
    );
}
