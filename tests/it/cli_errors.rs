//! The exact standard error of common mistakes, through the real binary: one line, every cause
//! once. Temporary paths read `[TMP]`.

use std::path::Path;

use crate::common::{fails, hs};

/// A scratch directory with an empty store in `store/`.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        hazardserve::store::Store::open_or_create(&dir.path().join("store")).unwrap();
        Scratch { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    /// The standard error of a failing command on the store (`store = false`: no store).
    fn stderr(&self, store: bool, args: &[&str]) -> String {
        let root = if store {
            self.path().join("store")
        } else {
            self.path().join("no-store")
        };
        let mut c = hs(&root);
        c.args(args);
        let out = fails(c);
        assert!(out.stdout.is_empty(), "stdout: {:?}", out.stdout);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let tmp = self.path().display().to_string();
        let canonical = std::fs::canonicalize(self.path())
            .unwrap()
            .display()
            .to_string();
        err.replace(&canonical, "[TMP]").replace(&tmp, "[TMP]")
    }
}

#[test]
fn cli_errors_store_and_sources() {
    let s = Scratch::new();
    insta::assert_snapshot!("no_store", s.stderr(false, &["sources"]));
    insta::assert_snapshot!(
        "unknown_source",
        s.stderr(true, &["nodes", "--source", "nope"])
    );
    insta::assert_snapshot!(
        "unknown_source_fit",
        s.stderr(true, &["fit", "--source", "nope"])
    );
    let out = s.path().join("no/such/dir/sources.csv");
    insta::assert_snapshot!(
        "out_in_missing_directory",
        s.stderr(
            true,
            &[
                "sources",
                "--format",
                "csv",
                "--out",
                &out.display().to_string()
            ]
        )
    );
}

#[test]
fn cli_errors_sql() {
    let s = Scratch::new();
    insta::assert_snapshot!("bad_sql", s.stderr(true, &["sql", "SELEC 1"]));
    insta::assert_snapshot!(
        "unknown_column",
        s.stderr(true, &["sql", "SELECT nope FROM sessions"])
    );
    insta::assert_snapshot!(
        "unknown_named_query",
        s.stderr(true, &["sql", "--query", "nope"])
    );
    // A typo gets the name it was probably meant to be.
    let typo = s.stderr(true, &["query", "availabilty"]);
    assert!(typo.contains("did you mean availability?"), "{typo}");
}

#[test]
fn cli_errors_presets() {
    let s = Scratch::new();
    insta::assert_snapshot!(
        "unknown_model_preset",
        s.stderr(false, &["crossover", "--model", "gpt-17"])
    );
    insta::assert_snapshot!(
        "unknown_link",
        s.stderr(false, &["trigger", "--link", "pigeon"])
    );
    insta::assert_snapshot!(
        "bad_survival_spec",
        s.stderr(false, &["trigger", "--survival", "weibull:x,1"])
    );
    insta::assert_snapshot!(
        "unknown_gap_metric",
        s.stderr(false, &["replay", "--gap-metric", "speed"])
    );
}

#[test]
fn cli_errors_files() {
    let s = Scratch::new();
    let missing = s.path().join("missing.csv").display().to_string();
    insta::assert_snapshot!(
        "missing_ingest_input",
        s.stderr(true, &["ingest", "--source", "x", &missing])
    );
    insta::assert_snapshot!(
        "missing_km_input",
        s.stderr(false, &["km", "--input", &missing])
    );
    let junk = s.file("junk.txt", "hello\n");
    insta::assert_snapshot!(
        "unknown_trace_format",
        s.stderr(true, &["ingest", "--source", "x", &junk])
    );
    let toml = s.file("bad.toml", "[replay]\nwindow = 3\n");
    insta::assert_snapshot!(
        "bad_toml_key",
        s.stderr(true, &["replay", "--config", &toml])
    );
    insta::assert_snapshot!(
        "unknown_public_source",
        s.stderr(
            true,
            &[
                "ingest-public",
                &s.path().display().to_string(),
                "--only",
                "nope"
            ]
        )
    );
    let typo = s.stderr(
        true,
        &[
            "ingest-public",
            &s.path().display().to_string(),
            "--only",
            "gce-preemptable",
        ],
    );
    assert!(typo.contains("did you mean gce-preemptible?"), "{typo}");
    let typo = s.stderr(true, &["trigger", "--link", "10gb"]);
    assert!(typo.contains("did you mean 10gbe"), "{typo}");
}

#[test]
fn an_unknown_source_suggests_similar_names() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let input = crate::common::write(tmp.path(), "x.csv", "0,add,n1\n5000,remove,n1\n");
    for name in ["gce-preemptible", "stunner-80", "stunner-100"] {
        let mut c = crate::common::hs(&store);
        c.args(["-q", "ingest", "--format", "add-remove", "--source", name])
            .arg(&input);
        crate::common::ok(c);
    }
    let err = |source: &str| {
        let mut c = crate::common::hs(&store);
        c.args(["nodes", "--source", source]);
        let out = crate::common::fails(c);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(
        err("gce").contains("did you mean gce-preemptible?"),
        "{}",
        err("gce")
    );
    assert!(
        err("stuner-80").contains("did you mean stunner-80?"),
        "{}",
        err("stuner-80")
    );
    assert!(
        err("stunner").contains("stunner-100, stunner-80"),
        "{}",
        err("stunner")
    );
    assert!(!err("fta").contains("did you mean"), "{}", err("fta"));
}
