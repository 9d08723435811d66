//! Unit tests of the `fta` adapter.

use super::*;

fn file(rel: &str, text: &str) -> InputFile {
    InputFile::from_text(rel, text)
}

fn run(files: &[InputFile], options: &Options) -> Trace {
    let mut t = parse(files, options).unwrap();
    t.canonicalize();
    t
}

const LANL: &str = "event_id  component_id node_id  platform_id   node_name     event_type   event_start_time     event_stop_time  event_end_reason\n\
0\t       0\t     655\t    3\t       10.000\t         0\t   \t\t1099755300\t   \t\t1099906200\t       \t8000\n\
1\t       0\t     655\t    3\t       10.000\t         1\t   \t\t1099906200\t   \t\t1112096400\t       \t4022\n\
2\t       0\t     655\t    3\t       10.000\t         0\t   \t\t1112096400\t   \t\t1112096580\t       \t8000\n\
3\t       0\t     655\t    3\t       10.000\t         1\t   \t\t1112096580\t   \t\t1125388800\t       \t   2\n\
4\t       0\t     655\t    3\t       10.000\t         0\t   \t\t1125388800\t   \t\t1125400000\t       \t8000\n\
0\t    0\t  713\t    3\t              10.126\t         0\t   1113278760\t   1113280860\t       8000\n";

#[test]
fn lanl_style_failures_only() {
    let t = run(&[file("event_trace.tab", LANL)], &Options::default());
    assert_eq!(t.kind, Kind::Hpc);
    assert_eq!(t.time_base, TimeBase::Utc);
    assert_eq!(t.nodes.len(), 2);
    assert_eq!(t.sessions.len(), 2);
    let s = &t.sessions[0];
    assert_eq!(
        (&*s.node_id, s.start, s.end, s.event),
        ("655", 1099906200.0, 1112096400.0, true)
    );
    assert_eq!(s.end_cause, "failure:4022");
    assert!(!s.left_truncated);
    assert_eq!(t.sessions[1].end_cause, "failure:2");
    assert!(t.sessions.iter().all(|s| s.event));
    let n713 = &t.nodes[1];
    assert_eq!(
        (&*n713.node_id, n713.observed_from, n713.observed_to),
        ("713", 1113278760.0, 1113280860.0)
    );
    assert_eq!(t.nodes[0].group.as_deref(), Some("system-10"));
    assert!(t.rejects.is_empty());
}

#[test]
fn censored_tail_option() {
    let opts = Options {
        fta_censored_tail: true,
        ..Options::default()
    };
    let t = run(&[file("event_trace.tab", LANL)], &opts);
    let tails: Vec<_> = t.sessions.iter().filter(|s| !s.event).collect();
    assert_eq!(
        tails.len(),
        1,
        "node 655 ends at the trace end, only 713 gets a tail"
    );
    assert_eq!(
        (&*tails[0].node_id, tails[0].start, tails[0].end),
        ("713", 1113280860.0, 1125400000.0)
    );
    assert_eq!(tails[0].end_cause, "observation-end");
}

const SAMPLE: &str = "# event_id component_id node_id platform_id node_name event_type event_start_time event_stop_time event_end_reason\n\
0\t    0\t    0\t    1\t    0\t         1\t     0.000\t200.000\t       NULL\n\
0\t    0\t    0\t    1\t    0\t         0\t     200.000\t700.000\t       NULL\n\
0\t    0\t    0\t    1\t    0\t         1\t     700.000\t2000.000\tNULL\n\
0\t    0\t    1\t    1\t    1\t         0\t     0.000\t100.000\t       NULL\n\
0\t    0\t    1\t    1\t    1\t         1\t     100.000\t1500.500\t NULL\n\
0\t    0\t    1\t    1\t    1\t         0\t     1500.500\t2000.000\t NULL\n";
const NODES: &str = "# node_id platform_id node_name node_ip node_location timezone proc_model os_name cores_per_proc num_procs mem_size disk_size up_bw down_bw metric_id notes\n\
     0\t    1\t         0\t      NULL\t   USA\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\t  NULL\n";
const PLATFORMS: &str = "# platform_id platform_name platform_location platform_type notes\n\
1\t                     microsoft\t                         Microsoft_Corporation,USA\t                       desktop\t                                              NULL\n";

#[test]
fn sample_censoring_truncation_and_side_tables() {
    let files = [
        file("event_trace.tab", SAMPLE),
        file("node.tab", NODES),
        file("platform.tab", PLATFORMS),
    ];
    for f in &files {
        assert!(sniff(f), "{}", f.rel);
    }
    let t = run(&files, &Options::default());
    assert_eq!(t.kind, Kind::Volunteer);
    assert_eq!(t.time_base, TimeBase::Relative);
    let s: Vec<_> = t
        .sessions
        .iter()
        .map(|s| {
            (
                &*s.node_id,
                s.start,
                s.end,
                s.event,
                s.left_truncated,
                &*s.end_cause,
            )
        })
        .collect();
    assert_eq!(
        s,
        vec![
            ("0", 0.0, 200.0, true, true, "failure"),
            ("0", 700.0, 2000.0, false, false, "observation-end"),
            ("1", 100.0, 1500.5, true, false, "failure"),
        ]
    );
    assert_eq!(t.nodes[0].group.as_deref(), Some("microsoft"));
    assert_eq!(t.nodes[0].zone.as_deref(), Some("USA"));
    assert_eq!(t.nodes[0].instance_type, None);
    assert_eq!(t.nodes[1].zone, None);
    assert_eq!(t.nodes[1].group.as_deref(), Some("microsoft"));
}

#[test]
fn bad_rows_strict_and_lenient() {
    let text = "event_id component_id node_id platform_id node_name event_type event_start_time event_stop_time event_end_reason\n\
                0 0 1 3 1.1 0 100 200 8000\n\
                1 0 1 3 1.1 1 200 x 1005\n\
                2 0 1 3 1.1 7 200 300 1005\n\
                3 0 1 3\n\
                4 0 1 3 1.1 1 400 300 1005\n\
                5 0 1 3 1.1 1 300 900 1005\n\
                6 0 1 3 1.1 0 900 1000 8000\n";
    let f = file("event_trace.tab", text);
    let strict = Options {
        strict: true,
        ..Options::default()
    };
    let err = parse(std::slice::from_ref(&f), &strict)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("event_trace.tab:3:"), "{err}");
    assert!(err.contains("not a number"), "{err}");
    let t = run(&[f], &Options::default());
    assert_eq!(
        t.rejects.iter().map(|r| r.line).collect::<Vec<_>>(),
        vec![3, 4, 5, 6]
    );
    assert!(t.rejects[1].reason.contains("event_type"));
    assert!(t.rejects[3].reason.contains("before"));
    assert_eq!(t.sessions.len(), 1);
    assert_eq!((t.sessions[0].start, t.sessions[0].end), (300.0, 900.0));
    assert_eq!(t.sessions[0].end_cause, "failure:1005");
    assert_eq!(t.time_base, TimeBase::Relative);
}

#[test]
fn two_event_tables_are_prefixed() {
    let t = run(
        &[
            file("a/event_trace.tab", LANL),
            file("b/event_trace.tab", LANL),
        ],
        &Options::default(),
    );
    assert_eq!(t.nodes.len(), 4);
    assert_eq!(t.nodes[0].node_id, "a/event_trace/655");
    assert_eq!(t.sessions.len(), 4);
}

#[test]
fn sniff_is_specific() {
    assert!(sniff(&file("e.tab", LANL)));
    assert!(!sniff(&file(
        "x.txt",
        "user_py/abc 1 1402358400000 2 100 200\n"
    )));
    assert!(!sniff(&file("x.csv", "0,add,node1\n")));
    assert!(!sniff(&file(
        "x.tab",
        "0\t0\t655\t3\t10.000\t0\t1\t2\t8000\n"
    )));
}
