//! Unit tests of the `probe-csv` adapter.

use super::*;
use std::path::PathBuf;

fn file(rel: &str, text: &str) -> InputFile {
    InputFile::from_bytes(
        PathBuf::from("/d").join(rel),
        rel,
        text.as_bytes().to_vec(),
        String::new(),
    )
}

fn spans(t: &Trace) -> Vec<(f64, f64, bool, bool)> {
    t.sessions
        .iter()
        .map(|s| (s.start, s.end, s.event, s.left_truncated))
        .collect()
}

const T0: f64 = 1_666_821_904.0; // 2022-10-26T22:05:04Z

const FAIL_LOG: &str = "0,2022-10-26T22:05:04.000Z,0\n\
                        1,2022-10-26T22:15:04.000Z,0\n\
                        2,2022-10-26T22:25:05.000Z,1\n\
                        3,2022-10-26T22:35:05.000Z,0\n";

#[test]
fn fail_log_sessions_and_attributes() {
    let t = parse(
        &[file("c/us-west-2a_v100_8.txt", FAIL_LOG)],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(t.kind, Kind::SpotObtainability);
    assert_eq!(t.time_base, TimeBase::Utc);
    assert_eq!(
        spans(&t),
        vec![
            (T0, T0 + 1201.0, true, true),
            (T0 + 1801.0, T0 + 2401.0, false, false)
        ]
    );
    assert_eq!(t.sessions[0].end_cause, "unobtainable");
    assert_eq!(t.sessions[0].resolution_s, 600.0);
    let n = &t.nodes[0];
    assert_eq!(n.node_id, "c/us-west-2a_v100_8");
    assert_eq!(
        (n.zone.as_deref(), n.instance_type.as_deref()),
        (Some("us-west-2a"), Some("v100_8"))
    );
    assert_eq!((n.observed_from, n.observed_to), (T0, T0 + 2401.0));
    // --polarity available reads the column the other way round, with a note.
    let o = Options {
        polarity: Some(Polarity::Available),
        ..Options::default()
    };
    let t = parse(&[file("x.txt", FAIL_LOG)], &o).unwrap();
    assert_eq!(spans(&t), vec![(T0 + 1201.0, T0 + 1801.0, true, false)]);
    assert!(t.notes.iter().any(|n| n.contains("overrides")));
}

#[test]
fn availability_log_with_header_and_gap_override() {
    let text = "date,availability\n\
                2023-02-15 22:08:16,1\n\
                2023-02-15 22:11:31,0\n\
                2023-02-15 22:14:46,1\n\
                2023-02-15 22:18:01,1\n";
    let t0 = 1_676_498_896.0;
    let t = parse(&[file("a.csv", text)], &Options::default()).unwrap();
    assert_eq!(
        spans(&t),
        vec![
            (t0, t0 + 195.0, true, true),
            (t0 + 390.0, t0 + 780.0, false, false)
        ]
    );
    let o = Options {
        gap_seconds: Some(60.0),
        ..Options::default()
    };
    let t = parse(&[file("a.csv", text)], &o).unwrap();
    // 195-s spacings are holes at a 60-s gap: every up sample is censored by a gap.
    assert_eq!(t.sessions.len(), 3);
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("median probe spacing 195")));
    assert_eq!((t.sessions[0].end, t.sessions[0].event), (t0 + 60.0, false));
    assert_eq!(t.sessions[0].end_cause, "observation-gap");
    assert!(t.sessions[1].left_truncated);
}

#[test]
fn bamboo_step_series_threshold_and_duplicated_changes() {
    let text = "0,0\r\n100,0\r\n100,4\r\n150,4\r\n150,2\r\n400,2\r\n400,5\r\n900,5\r\n";
    let o = Options {
        threshold: Some(3),
        ..Options::default()
    };
    let t = parse(&[file("aws-spot-instances-g4dn.csv", text)], &o).unwrap();
    assert_eq!(t.kind, Kind::SpotLifetime);
    assert_eq!(t.time_base, TimeBase::Relative);
    // 4 >= 3 on [100,150), 5 >= 3 from 400 to the end (900), no hole despite 500-s spacing.
    assert_eq!(
        spans(&t),
        vec![(100.0, 150.0, true, false), (400.0, 900.0, false, false)]
    );
    assert_eq!(t.sessions[0].end_cause, "preempted");
    assert_eq!(t.sessions[0].resolution_s, 0.0);
    // The raw counts are kept: 0 on [0,100), 4 on [100,150), 2 on [150,400), 5 on [400,900).
    let obs: Vec<(f64, u64, f64)> = t
        .observations
        .iter()
        .map(|o| (o.t, o.count, o.dt))
        .collect();
    let want = [
        (0.0, 0, 100.0),
        (100.0, 4, 50.0),
        (150.0, 2, 250.0),
        (400.0, 5, 500.0),
    ];
    assert_eq!(obs, want);
    assert!(!t.notes.iter().any(|n| n.contains("k=1")));
    let t = parse(
        &[file("aws-spot-instances-g4dn.csv", text)],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(spans(&t), vec![(100.0, 900.0, false, false)]);
    assert!(t.notes.iter().any(|n| n.contains("k=1")));
    assert_eq!(
        (t.nodes[0].observed_from, t.nodes[0].observed_to),
        (0.0, 900.0)
    );
}

#[test]
fn hours_and_milliseconds() {
    let t = parse(
        &[file(
            "aws-spot-instances-p2-xlarge-2020-11-20-to-2020-11-23.csv",
            "0.000,0\n0.500,0\n0.500,3\n1.000,3\n",
        )],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(spans(&t), vec![(1800.0, 3600.0, false, false)]);
    assert!(t.notes.iter().any(|n| n.contains("hours")));
    let t = parse(
        &[file("p3.csv", "0,1\n0,2\n60000,1\n1200000,0\n1260000,3\n")],
        &Options {
            threshold: Some(2),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(spans(&t), vec![(0.0, 60.0, true, true)]);
    assert!(t.notes.iter().any(|n| n.contains("milliseconds")));
    // The last change (3 at 1260 s) is also the observation end: no zero-length session.
    assert_eq!(t.nodes[0].observed_to, 1260.0);
}

#[test]
fn gcloud_relogs_unsorted() {
    let text = "2021-12-10, 13:07:45, 80\n2021-12-10, 13:08:45, 80\n2021-12-10, 13:09:45, 80\n\
                2021-12-10, 13:08:45, 0\n2021-12-10, 13:09:45, 0\n2021-12-10, 13:10:45, 0\n\
                2021-12-10, 13:10:00, 5\n2021-12-10, 13:11:00, 5\n2021-12-10, 13:12:00, 5\n";
    let t = parse(&[file("v100x1-east1c.txt", text)], &Options::default()).unwrap();
    let t0 = 1_639_141_665.0; // 2021-12-10 13:07:45 UTC
    assert_eq!(t.time_base, TimeBase::Utc);
    assert_eq!(
        spans(&t),
        vec![
            (t0, t0 + 60.0, true, true),
            (t0 + 135.0, t0 + 255.0, false, false)
        ]
    );
}

#[test]
fn bad_lines_strict_and_lenient() {
    let text = "0,2022-10-26T22:05:04.000Z,0\n\
                1,2022-10-26T22:15:04.000Z\n\
                2,2022-10-26 22:25:05,1\n\
                3,2022-10-26T22:35:05.000Z,7\n\
                4,2022-10-26T22:45:05.000Z,1\n";
    let strict = Options {
        strict: true,
        ..Options::default()
    };
    let e = parse(&[file("p.txt", text)], &strict)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("/d/p.txt:2: expected 3 comma-separated fields"),
        "{e}"
    );
    let t = parse(&[file("p.txt", text)], &Options::default()).unwrap();
    let r: Vec<(u64, &str)> = t.rejects.iter().map(|r| (r.line, r.raw.as_str())).collect();
    assert_eq!(
        r,
        vec![
            (2, "1,2022-10-26T22:15:04.000Z"),
            (3, "2,2022-10-26 22:25:05,1"),
            (4, "3,2022-10-26T22:35:05.000Z,7")
        ]
    );
    assert!(t.rejects[1].reason.contains("unparsable time"));
    assert!(t.rejects[2].reason.contains("not 0 or 1"));
    // Good rows 1 and 5 kept: up at 22:05:04, down at 22:45:05 (40 min apart = a hole).
    assert_eq!(t.sessions.len(), 1);
    assert_eq!((t.sessions[0].start, t.sessions[0].end), (T0, T0 + 600.0));
    assert_eq!(t.sessions[0].end_cause, "observation-gap");
    let count_text = "elapsed,instances\n0,1\nabc,2\n10,x\n20\n30,0\n";
    let t = parse(&[file("c.csv", count_text)], &Options::default()).unwrap();
    assert_eq!(
        t.rejects.iter().map(|r| r.line).collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    assert_eq!(spans(&t), vec![(0.0, 30.0, true, true)]);
}

#[test]
fn mixing_shapes_is_refused() {
    let e = parse(
        &[file("a.txt", FAIL_LOG), file("b.csv", "0,1\n5,0\n")],
        &Options::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("separate sources"), "{e}");
}

#[test]
fn sniff_shapes() {
    assert!(sniff(&file("a", FAIL_LOG)));
    assert!(sniff(&file("a", "date,availability\n")));
    assert!(sniff(&file("a", "\u{feff}0,0\r\n")));
    assert!(sniff(&file("a", "2021-12-11, 11:11:30, 55\n")));
    assert!(sniff(&file("a", "t_ms,count\n0,1\n")));
    assert!(!sniff(&file("a", "0,add,node1\n")));
    assert!(!sniff(&file("a", "{\"data\": []}")));
    assert!(!sniff(&file("a", "")));
}
