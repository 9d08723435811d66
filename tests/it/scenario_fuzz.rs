//! Fuzzing the scenario TOML: mutations of every committed scenario and of the default one
//! (byte flips, truncations, deleted and duplicated lines, numbers swapped for extreme values,
//! arbitrary bytes) are parsed, validated and, when valid, built against the demo store. Nothing
//! may panic; every refusal is an error value. `PROPTEST_CASES` sets the number of cases.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hazardserve::scenario::{self, config::DEFAULT_CONFIG, ScenarioConfig};
use hazardserve::store::Store;
use proptest::prelude::*;

use crate::common::{hs, ok};

/// The demo store, made once for every case.
fn demo_store() -> &'static Path {
    static STORE: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, p) = STORE.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let mut c = hs(&store);
        c.arg("demo");
        ok(c);
        (tmp, store)
    });
    p
}

/// The scenario texts mutated: the default and every committed scenario.
fn seeds() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/scenarios");
    let mut out = vec![DEFAULT_CONFIG.to_string()];
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "toml") {
            out.push(std::fs::read_to_string(e.path()).unwrap());
        }
    }
    out
}

const EXTREMES: &[&str] = &[
    "0",
    "-1",
    "-0.0",
    "1e308",
    "-1e308",
    "nan",
    "inf",
    "-inf",
    "9223372036854775807",
    "18446744073709551616",
    "1e-320",
    "\"x\"",
    "[]",
    "{}",
    "true",
];

#[derive(Debug, Clone)]
enum Mutation {
    FlipByte(usize, u8),
    Truncate(usize),
    DeleteLine(usize),
    DuplicateLine(usize),
    ReplaceNumber(usize, usize),
    Arbitrary(Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), 0..EXTREMES.len()).prop_map(|(i, v)| Mutation::ReplaceNumber(i, v)),
        proptest::collection::vec(any::<u8>(), 0..200).prop_map(Mutation::Arbitrary),
    ]
}

fn apply(text: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for m in muts {
        match m {
            Mutation::FlipByte(i, b) if !bytes.is_empty() => {
                let n = bytes.len();
                bytes[i % n] ^= b | 1;
            }
            Mutation::Truncate(i) if !bytes.is_empty() => {
                let n = bytes.len();
                bytes.truncate(i % n);
            }
            Mutation::DeleteLine(i) | Mutation::DuplicateLine(i) => {
                let s = String::from_utf8_lossy(&bytes).into_owned();
                let mut lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let k = i % lines.len();
                    if matches!(m, Mutation::DeleteLine(_)) {
                        lines.remove(k);
                    } else {
                        lines.insert(k, lines[k]);
                    }
                }
                bytes = lines.join("\n").into_bytes();
            }
            Mutation::ReplaceNumber(i, v) => {
                let s = String::from_utf8_lossy(&bytes).into_owned();
                // The value of the i-th `key = value` line.
                let lines: Vec<&str> = s.lines().collect();
                let assigns: Vec<usize> = lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| !l.trim_start().starts_with('#') && l.contains(" = "))
                    .map(|(k, _)| k)
                    .collect();
                if !assigns.is_empty() {
                    let k = assigns[i % assigns.len()];
                    let (key, _) = lines[k].split_once(" = ").unwrap_or((lines[k], ""));
                    let new = format!("{key} = {}", EXTREMES[*v]);
                    let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                    out[k] = new;
                    bytes = out.join("\n").into_bytes();
                }
            }
            Mutation::Arbitrary(b) => bytes = b.clone(),
            _ => {}
        }
    }
    bytes
}

/// Parses, validates and builds; returns whether the mutant was a valid scenario.
fn exercise(bytes: &[u8], build: bool) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let Ok(cfg) = ScenarioConfig::from_toml(text, "fuzz.toml") else {
        return false;
    };
    if cfg.validate().is_err() {
        return false;
    }
    if build {
        let mut cfg = cfg;
        // The demo store's sources, so the mutated values are what is exercised.
        cfg.nodes.source = "sample-spot".into();
        cfg.nodes.filter_attribute = None;
        cfg.nodes.filter_value = None;
        cfg.workload.source = "sample-requests".into();
        if cfg.validate().is_ok() {
            let store = Store::open(demo_store()).unwrap();
            let _ = scenario::build(&store, &cfg);
        }
    }
    true
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(384),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn scenario_toml_mutants_never_panic(
        which in 0usize..16,
        muts in proptest::collection::vec(mutation(), 1..4),
        build in proptest::bool::weighted(0.15),
    ) {
        let seeds = seeds();
        let text = &seeds[which % seeds.len()];
        exercise(&apply(text, &muts), build);
    }
}

#[test]
fn every_committed_scenario_parses_and_validates() {
    for s in seeds() {
        assert!(exercise(s.as_bytes(), false), "{s}");
    }
}

/// Found by the fuzzer: `windows = 9223372036854775807` passed validation and overflowed the
/// window vector's capacity when the scenario was built.
#[test]
fn scenario_with_a_huge_window_or_seed_count_is_refused_not_allocated() {
    for (key, value) in [
        ("windows", "9223372036854775807"),
        ("seeds", "18446744073709551615"),
    ] {
        let text = format!("[replay]\n{key} = {value}\n");
        let Ok(cfg) = ScenarioConfig::from_toml(&text, "s.toml") else {
            continue; // out of the integer type: refused by the parser
        };
        let err = cfg.validate().unwrap_err().to_string();
        assert!(err.contains(&format!("replay.{key}")), "{err}");
    }
}
