//! Unit tests of `gce_operations.rs` (kept in their own file so the module reads as one idea).

use super::*;

fn file(rel: &str, text: &str) -> InputFile {
    InputFile::from_text(rel, text)
}

fn op(id: &str, ty: &str, vm: &str, name: &str, insert: &str, end: &str) -> String {
    format!(
        r#"{{"id":"{id}","operationType":"{ty}","insertTime":"{insert}","startTime":"{insert}","endTime":"{end}","status":"DONE","targetId":"{vm}","targetLink":"https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-c/instances/{name}","kind":"compute#operation"}}"#
    )
}

fn ops_file(rel: &str, ops: &[String]) -> InputFile {
    file(rel, &format!("[\n{}\n]\n", ops.join(",\n")))
}

fn run(files: &[InputFile]) -> Trace {
    let mut t = parse(files, &Options::default()).unwrap();
    t.canonicalize();
    t
}

const T0: &str = "2019-03-01T10:00:00.000-08:00";

#[test]
fn insert_then_preempt_stop_and_open() {
    let f = ops_file(
        "a.json",
        &[
            op("1", "insert", "100", "abc1", T0, "2019-03-01T10:00:30.000-08:00"),
            op("2", "compute.instances.preempted", "100", "abc1", "2019-03-01T15:00:00.000-08:00", "2019-03-01T15:00:00.000-08:00"),
            op("3", "insert", "200", "abc2", T0, T0),
            op("4", "stop", "200", "abc2", "2019-03-01T11:00:00.000-08:00", "2019-03-01T11:01:00.000-08:00"),
            op("5", "start", "200", "abc2", "2019-03-01T12:00:00.000-08:00", "2019-03-01T12:00:10.000-08:00"),
            op("6", "insert", "300", "xyz1", T0, T0),
            // an image insert: not an instance
            r#"{"id":"9","operationType":"insert","insertTime":"2019-03-02T10:00:00.000-08:00","status":"DONE","targetId":"5","targetLink":"https://x/global/images/mp1"}"#.to_string(),
        ],
    );
    let t = run(&[f]);
    assert_eq!(t.kind, Kind::SpotLifetime);
    assert_eq!(t.time_base, TimeBase::Utc);
    assert_eq!(t.nodes.len(), 3);
    let end_of_log = parse_time("2019-03-02T10:00:00.000-08:00").unwrap();
    let s = &t.sessions;
    assert_eq!(s.len(), 4);
    let t0 = parse_time(T0).unwrap();
    // VM 100: start at the insert's endTime, preempted 5 h after the insert.
    assert_eq!(
        (&*s[0].node_id, s[0].start, s[0].end),
        ("100", t0 + 30.0, t0 + 5.0 * 3600.0)
    );
    assert!(s[0].event && !s[0].left_truncated);
    assert_eq!(s[0].end_cause, "preempted");
    // VM 200: stopped (censored), then restarted and open at the end of the log.
    assert_eq!((s[1].start, s[1].end, s[1].event), (t0, t0 + 3600.0, false));
    assert_eq!(s[1].end_cause, "stopped");
    assert_eq!(
        (s[2].start, s[2].end, s[2].event),
        (t0 + 7210.0, end_of_log, false)
    );
    assert_eq!(s[2].end_cause, "observation-end");
    assert_eq!((&*s[3].node_id, s[3].end), ("300", end_of_log));
    let n = &t.nodes[0];
    assert_eq!(n.zone.as_deref(), Some("us-central1-c"));
    assert_eq!(n.group.as_deref(), Some("abc1"));
    assert_eq!((n.observed_from, n.observed_to), (t0, end_of_log));
}

#[test]
fn dst_offsets_and_lifetime_cap() {
    // Inserted before the 2019-03-10 DST switch (-08:00), preempted after it (-07:00):
    // 2019-03-09 20:00 PST = 04:00Z on 03-10; 2019-03-10 20:00 PDT = 03:00Z on 03-11 → 23 h.
    let f = ops_file(
        "a.json",
        &[
            op(
                "1",
                "insert",
                "1",
                "a1",
                "2019-03-09T20:00:00.000-08:00",
                "2019-03-09T20:00:00.000-08:00",
            ),
            op(
                "2",
                "compute.instances.preempted",
                "1",
                "a1",
                "2019-03-10T20:00:00.000-07:00",
                "2019-03-10T20:00:00.000-07:00",
            ),
            op(
                "3",
                "insert",
                "2",
                "a2",
                "2019-03-09T20:00:00.000-08:00",
                "2019-03-09T20:00:00.000-08:00",
            ),
            op(
                "4",
                "compute.instances.preempted",
                "2",
                "a2",
                "2019-03-10T20:00:00.000-07:00",
                "2019-03-10T20:00:00.000-07:00",
            ),
            op(
                "5",
                "insert",
                "3",
                "a3",
                "2019-03-09T20:00:00.000-08:00",
                "2019-03-09T20:00:00.000-08:00",
            ),
            op(
                "6",
                "compute.instances.preempted",
                "3",
                "a3",
                "2019-03-10T21:00:00.000-07:00",
                "2019-03-10T21:00:00.000-07:00",
            ),
        ],
    );
    let t = run(&[f]);
    assert_eq!(t.sessions[0].duration_s(), 23.0 * 3600.0);
    assert_eq!(t.sessions[0].end_cause, "preempted");
    assert_eq!(t.sessions[2].duration_s(), 24.0 * 3600.0);
    assert_eq!(t.sessions[2].end_cause, "lifetime-cap");
    assert!(t.sessions[2].event);
    assert_eq!(
        parse_time("2019-03-10T20:00:00.000-07:00").unwrap(),
        1_552_273_200.0
    );
}

#[test]
fn overlapping_snapshots_dedupe_and_left_truncation() {
    let a = ops_file(
        "f1.json",
        &[
            op("1", "insert", "1", "a1", T0, T0),
            op(
                "2",
                "delete",
                "9",
                "old1",
                "2019-03-01T11:00:00.000-08:00",
                "2019-03-01T11:00:00.000-08:00",
            ),
        ],
    );
    // second snapshot repeats op 1 and adds the preemption, then a redundant delete
    let b = ops_file(
        "f2.json",
        &[
            op("1", "insert", "1", "a1", T0, T0),
            op(
                "3",
                "compute.instances.preempted",
                "1",
                "a1",
                "2019-03-01T12:00:00.000-08:00",
                "2019-03-01T12:00:00.000-08:00",
            ),
            op(
                "4",
                "delete",
                "1",
                "a1",
                "2019-03-01T13:00:00.000-08:00",
                "2019-03-01T13:00:01.000-08:00",
            ),
        ],
    );
    let t = run(&[a, b]);
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.sessions.len(), 2);
    assert_eq!(t.sessions[0].end_cause, "preempted");
    let lt = &t.sessions[1];
    assert_eq!(
        (&*lt.node_id, lt.left_truncated, lt.event),
        ("9", true, false)
    );
    assert_eq!(lt.end_cause, "deleted");
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("1 instance operations appear in more than one")));
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("already down") && n.contains("delete 1")));
}

#[test]
fn failed_insert_gives_no_session() {
    let failed = r#"{"id":"1","operationType":"insert","insertTime":"2019-03-01T10:00:00.000-08:00","endTime":"2019-03-01T10:01:00.000-08:00","status":"DONE","targetId":"7","targetLink":"https://x/zones/z/instances/q1","error":{"errors":[{"code":"QUOTA_EXCEEDED"}]}}"#;
    let f = ops_file(
        "a.json",
        &[
            failed.to_string(),
            op(
                "2",
                "compute.instances.preempted",
                "7",
                "q1",
                "2019-03-01T10:01:30.000-08:00",
                "2019-03-01T10:01:30.000-08:00",
            ),
        ],
    );
    let t = run(&[f]);
    assert_eq!(t.nodes.len(), 1);
    assert!(t.sessions.is_empty());
    assert!(t.notes.iter().any(|n| n.contains("follow a failed insert")));
}

#[test]
fn instance_table_and_ecdf_side_files() {
    let ops = ops_file("a.json", &[op("1", "insert", "1", "acoiis1", T0, T0)]);
    let table = file(
        "instances-a.txt",
        "NAME          ZONE             MACHINE_TYPE    PREEMPTIBLE  INTERNAL_IP    EXTERNAL_IP      STATUS\n\
         acoiis1       us-central1-c    n1-highcpu-2                 10.128.0.41                     TERMINATED\n\
         acoiis1       us-east1-b       n1-standard-4   true         10.128.0.42    34.1.2.3         RUNNING\n",
    );
    let ecdf = file(
        "All_data.txt",
        "1.565499999999999878e-02\t0.000000000000000000e+00\n",
    );
    for f in [&ops, &table, &ecdf] {
        assert!(sniff(f), "{}", f.rel);
    }
    let t = run(&[ops, table, ecdf]);
    assert_eq!(t.nodes[0].instance_type.as_deref(), Some("n1-highcpu-2"));
    assert!(t
        .notes
        .iter()
        .any(|n| n.contains("All_data.txt") && n.contains("skipped")));
    assert_eq!(t.sessions.len(), 1);
}

#[test]
fn sniff_is_specific() {
    assert!(!sniff(&file(
        "a.json",
        r#"{"metadata":{"gap_seconds":600},"data":[1,0]}"#
    )));
    assert!(!sniff(&file(
        "a.json",
        r#"[0, "add", {"nodes": ["node-0"]}]"#
    )));
    assert!(!sniff(&file("a.csv", "0,add,node1\n")));
    assert!(!sniff(&file("a.txt", "0.5\t1\n")));
}

#[test]
fn bad_records_strict_and_lenient() {
    let bad = r#"{"id":"2","operationType":"stop","insertTime":"yesterday","targetId":"1","targetLink":"https://x/zones/z/instances/a1"}"#;
    let f = ops_file(
        "bad.json",
        &[
            op("1", "insert", "1", "a1", T0, T0),
            bad.to_string(),
            op(
                "3",
                "stop",
                "1",
                "a1",
                "2019-03-01T11:00:00.000-08:00",
                "2019-03-01T11:00:00.000-08:00",
            ),
        ],
    );
    let strict = Options {
        strict: true,
        ..Options::default()
    };
    let err = parse(std::slice::from_ref(&f), &strict)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("bad.json:2:"), "{err}");
    assert!(err.contains("insertTime"), "{err}");
    let t = run(&[f]);
    assert_eq!(t.rejects.len(), 1);
    assert_eq!(t.rejects[0].line, 2);
    assert!(t.rejects[0].raw.contains("yesterday"));
    assert_eq!(t.sessions.len(), 1);
    assert_eq!(t.sessions[0].end_cause, "stopped");

    let broken = file(
        "broken.json",
        "[\n{\"id\": \"1\", \"operationType\": \"insert\", \"targetLink\": \n",
    );
    let t = parse(
        &[
            broken.clone(),
            ops_file("ok.json", &[op("1", "insert", "1", "a1", T0, T0)]),
        ],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(t.rejects.len(), 1);
    assert_eq!(t.sessions.len(), 1);
    assert!(parse(&[broken], &strict)
        .unwrap_err()
        .to_string()
        .starts_with("broken.json:"));
}
