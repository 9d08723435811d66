//! `-q` and `-v` mean the same in every command: with `-q` a successful command prints nothing
//! on standard error (warnings and errors only); without it, summaries and notes; with `-v`,
//! also its timing. Standard output, the result, is the same at every verbosity.

use std::path::Path;
use std::process::Output;

use crate::common::{hs, samples};
use crate::tui_common::demo_store;

fn run(store: &Path, flag: Option<&str>, args: &[String]) -> Output {
    let mut c = hs(store);
    c.args(flag).args(args).env_remove("NO_COLOR");
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "hazardserve {flag:?} {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `args` quiet, normal and verbose; checks the three agree on stdout and that stderr
/// follows the verbosity. Returns the normal stderr.
fn check(store: &Path, args: &[String]) -> String {
    let quiet = run(store, Some("-q"), args);
    let normal = run(store, None, args);
    let verbose = run(store, Some("-v"), args);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        quiet.stderr.is_empty(),
        "`hazardserve -q {}` printed on stderr:\n{}",
        args.join(" "),
        text(&quiet.stderr)
    );
    assert_eq!(
        text(&quiet.stdout),
        text(&normal.stdout),
        "-q changed the result of {args:?}"
    );
    assert_eq!(
        text(&verbose.stdout),
        text(&normal.stdout),
        "-v changed the result of {args:?}"
    );
    let (n, v) = (text(&normal.stderr), text(&verbose.stderr));
    let name = &args[0];
    assert!(
        v.lines().any(|l| l.starts_with(&format!("{name} took "))),
        "`hazardserve -v {}` gives no timing:\n{v}",
        args.join(" ")
    );
    // Everything said normally is said verbosely too.
    for l in n.lines() {
        assert!(v.contains(l), "-v dropped {l:?} of {args:?}");
    }
    n
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn quiet_and_verbose_mean_the_same_in_every_reading_command() {
    let store = demo_store();
    let tmp = tempfile::tempdir().unwrap();
    let out = |name: &str| tmp.path().join(name).display().to_string();
    let commands: Vec<Vec<String>> = vec![
        strings(&["sources"]),
        strings(&["nodes", "--source", "sample-gce"]),
        strings(&["sessions", "--source", "sample-spot", "--format", "csv"]),
        strings(&["rejects", "--source", "sample-gce"]),
        strings(&["sql", "SELECT count(*) AS n FROM sessions"]),
        strings(&["query", "churn", "--param", "source=sample-hpc"]),
        strings(&["fit", "--source", "sample-spot"]),
        strings(&["fit", "--source", "sample-spot", "--validate"]),
        strings(&["fit", "--source", "sample-spot", "--hazard"]),
        vec![
            "priors".into(),
            "export".into(),
            "--source".into(),
            "sample-spot".into(),
            "--out".into(),
            out("p.json"),
        ],
        strings(&["trigger"]),
        strings(&["crossover"]),
        strings(&["presets"]),
        strings(&["compare", "run-demo"]),
        strings(&["sweep", "summary", "demo-map"]),
        strings(&["sweep", "list"]),
        strings(&["store", "verify"]),
        vec!["report".into(), "--out".into(), out("report")],
        strings(&["completions", "bash"]),
        strings(&["man"]),
    ];
    let mut said = 0;
    for args in &commands {
        if !check(store, args).is_empty() {
            said += 1;
        }
    }
    // Normal verbosity does say something for some of them (the check is not vacuous).
    assert!(said >= 3, "only {said} commands said anything");
}

#[test]
fn quiet_and_verbose_mean_the_same_in_every_writing_command() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let spot = samples().join("tick-json").display().to_string();
    let requests = samples()
        .join("workload/requests.csv")
        .display()
        .to_string();
    // Each run writes to a store of its own, so the three verbosities do the same work.
    let cases: Vec<Vec<String>> = vec![
        strings(&[
            "ingest",
            "--format",
            "tick-json",
            "--polarity",
            "available",
            "--source",
            "s",
            &spot,
        ]),
        strings(&[
            "ingest",
            "--format",
            "lengths-csv",
            "--source",
            "w",
            &requests,
        ]),
        strings(&[
            "synth",
            "workload",
            "--out",
            &root.join("w.csv").display().to_string(),
        ]),
    ];
    let replay = strings(&[
        "replay",
        "--source",
        "s",
        "--workload",
        "w",
        "--windows",
        "2",
    ]);
    let mut stdouts = Vec::new();
    for (i, args) in cases.iter().chain([&replay]).enumerate() {
        for (j, flag) in [Some("-q"), None, Some("-v")].into_iter().enumerate() {
            let store = root.join(format!("store-{i}-{j}"));
            if args == &replay {
                // Its inputs, ingested quietly.
                run(&store, Some("-q"), &cases[0]);
                run(&store, Some("-q"), &cases[1]);
            }
            let out = run(&store, flag, args);
            if args == &replay {
                stdouts.push(String::from_utf8_lossy(&out.stdout).into_owned());
            }
            let err = String::from_utf8_lossy(&out.stderr);
            match flag {
                Some("-q") => assert!(err.is_empty(), "-q {args:?} said:\n{err}"),
                Some(_) => assert!(err.contains(&format!("{} took ", args[0])), "{err}"),
                None => assert!(!err.contains(" took "), "{err}"),
            }
        }
    }
    // The replay's table, less its run id, is the same at every verbosity.
    let strip = |s: &String| {
        s.lines()
            .filter(|l| !l.contains("run-"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(stdouts.len(), 3);
    assert!(stdouts.iter().all(|s| strip(s) == strip(&stdouts[0])));
}
