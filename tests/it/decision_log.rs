//! `replay --decision-log`: every logged decision, taken again from its recorded inputs by the
//! same policy, gives the same choice and the same numbers, under both engines, for every
//! kind of decision the replay makes (placements on the true and the queueing view, migration
//! checks, the oracle's foresight). The Python package's parity test reads the same logs
//! (`python_package`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hazardserve::policy::record::DecisionInputs;
use hazardserve::policy::{build, Explanation, Params, PolicyKind};
use hazardserve::survival::curve::{ConditionalSurvival, CurveSpec};
use serde_json::Value;

use crate::common::{hs, ok};
use crate::tui_common::demo_store;

/// The policies the logs replay: the cost-based ones with their forecasts and risk models,
/// the oracle with its foresight, and a baseline that reads only the views.
pub const LOGGED_POLICIES: &str = "hazard,memoryless,hazard-pooled,oracle,fastest,least-loaded";

/// Writes the decision log of a replay of the demo's sample workload over its spot nodes at
/// load 0.9 (queueing, so both placement passes run) under `engine` into `dir`.
pub fn write_decision_log(dir: &Path, engine: &str) -> PathBuf {
    let path = dir.join(format!("decisions-{engine}.jsonl"));
    let mut c = hs(demo_store());
    c.args([
        "replay",
        "--source",
        "sample-spot",
        "--workload",
        "sample-requests",
        "--windows",
        "2",
        "--load",
        "0.9",
        "--engine",
        engine,
        "--policies",
        LOGGED_POLICIES,
        "--decision-limit",
        "300",
        "--no-save",
        "--decision-log",
    ])
    .arg(&path);
    ok(c);
    path
}

/// A run's curves, rebuilt from their specs.
fn curves(run: &Value) -> Vec<Arc<dyn ConditionalSurvival>> {
    run["curves"]
        .as_array()
        .expect("curves")
        .iter()
        .map(|c| {
            let spec: CurveSpec =
                serde_json::from_value(c.clone()).expect("every curve has a spec");
            spec.build().expect("the spec builds")
        })
        .collect()
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// The logged explanation's number `key` (JSON `null` is NaN).
fn num(v: &Value, key: &str) -> f64 {
    v[key].as_f64().unwrap_or(f64::NAN)
}

#[test]
fn every_logged_decision_taken_again_from_its_inputs_is_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    for engine in ["iteration", "simple"] {
        let path = write_decision_log(dir.path(), engine);
        let text = std::fs::read_to_string(&path).expect("read the log");
        let mut runs = 0;
        let mut decisions = 0;
        let mut kinds = std::collections::BTreeSet::new();
        let mut run_curves = Vec::new();
        let mut params = Params::default();
        for (n, line) in text.lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("line {n}: {e}"));
            if let Some(run) = v.get("run") {
                run_curves = curves(run);
                params = serde_json::from_value(run["params"].clone()).expect("params");
                runs += 1;
                continue;
            }
            let d = &v["decision"];
            let kind: PolicyKind = d["policy"].as_str().expect("policy").parse().expect("kind");
            let inputs: DecisionInputs =
                serde_json::from_value(d["inputs"].clone()).expect("inputs parse");
            let logged = &d["explanation"];
            let mut policy = build(kind, params, 0);
            let mut out = Explanation::recording();
            let choice = inputs
                .decide(policy.as_mut(), &run_curves, &mut out)
                .expect("every curve is in the table");
            let what = format!("{engine} line {n}: {kind} {}", logged["decision"]);
            let chosen = logged["chosen"].as_u64().map(|c| c as usize);
            // A placement's choice is a fleet index; a migration's target as well.
            assert_eq!(choice, chosen, "{what}");
            assert_eq!(
                serde_json::to_value(out.outcome).expect("outcome"),
                logged["outcome"],
                "{what}"
            );
            for key in ["t", "l", "e", "risk_gain", "dt", "c_planned", "l_j", "t_j"] {
                let got = match key {
                    "t" => out.t,
                    "l" => out.l,
                    "e" => out.e,
                    "risk_gain" => out.risk_gain,
                    "dt" => out.dt,
                    "c_planned" => out.c_planned,
                    "l_j" => out.l_j,
                    _ => out.t_j,
                };
                assert!(
                    same(got, num(logged, key)),
                    "{what}: {key} {got} vs {}",
                    logged[key]
                );
            }
            let cands = logged["candidates"].as_array().cloned().unwrap_or_default();
            assert_eq!(out.candidates.len(), cands.len(), "{what}");
            for (c, l) in out.candidates.iter().zip(&cands) {
                let node = inputs.nodes[c.node].idx;
                assert_eq!(Some(node as u64), l["node"].as_u64(), "{what}");
                assert!(same(c.e, num(l, "e")), "{what}: candidate {node} E");
                assert!(same(c.l, num(l, "l")), "{what}: candidate {node} L");
            }
            kinds.insert((
                kind.name(),
                logged["decision"].to_string(),
                d["queueing"].to_string(),
            ));
            decisions += 1;
        }
        assert!(
            runs >= 6 && decisions >= 1_000,
            "{engine}: {runs} runs, {decisions} decisions"
        );
        for want in [
            ("hazard", "\"place\"", "true"),
            ("hazard", "\"migrate\"", "false"),
            ("oracle", "\"place\"", "false"),
            ("least-loaded", "\"place\"", "false"),
        ] {
            let want = (want.0, want.1.to_string(), want.2.to_string());
            assert!(
                kinds.contains(&want),
                "{engine}: no {want:?} decision logged"
            );
        }
    }
}

#[test]
fn a_decision_log_is_written_whole_or_not_at_all() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("missing-dir").join("d.jsonl");
    let mut c = hs(demo_store());
    c.args([
        "replay",
        "--source",
        "sample-spot",
        "--workload",
        "sample-requests",
        "--windows",
        "1",
        "--policies",
        "hazard",
        "--no-save",
        "--decision-log",
    ])
    .arg(&path);
    let out = c.output().expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("d.jsonl") && err.contains("decision log"),
        "{err}"
    );
    assert!(std::fs::read_dir(dir.path()).expect("dir").count() == 0);
    // --decision-limit without --decision-log is refused.
    let mut c = hs(demo_store());
    c.args(["replay", "--decision-limit", "5"]);
    let out = c.output().expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--decision-log"));
}
