//! Hazard-prior export (`hazardserve::survival::priors`): JSON round trip with bitwise-equal
//! curves, structural validation against `docs/priors.schema.json`, flat rows, the loader.

use serde_json::Value;

use hazardserve::survival::curve::ConditionalSurvival;
use hazardserve::survival::priors::{
    fit_priors, Priors, PriorsEstimator, PriorsMeta, PriorsOptions,
};
use hazardserve::survival::shrinkage::ShrinkageOptions;
use hazardserve::survival::validate::{split_at, SurvivalSession};

use super::survival_validate::{heterogeneous, simulate};

const SCHEMA: &str = include_str!("../../docs/priors.schema.json");
const DAY: f64 = 86400.0;

fn meta(n_nodes: usize, cutoff_s: f64) -> PriorsMeta {
    PriorsMeta {
        source: "synthetic-weibull".into(),
        cutoff_s,
        time_base: "relative".into(),
        node_ids: (0..n_nodes).map(|i| format!("node-{i:03}")).collect(),
    }
}

fn export(sessions: &[SurvivalSession], est: PriorsEstimator, max_points: usize) -> Priors {
    fit_priors(
        sessions,
        &meta(600, 21.0 * DAY),
        &ShrinkageOptions::default(),
        &PriorsOptions {
            estimator: Some(est),
            max_points,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Minimal structural JSON-Schema check: `$ref` (local `#/$defs/..`), `type` (string or
/// list), `required`, `properties`, `additionalProperties: false`, `items`, `const`, `enum`,
/// `minItems`/`maxItems`, `minimum`/`maximum`/`exclusiveMinimum`. Returns the violations.
fn check(schema: &Value, root: &Value, v: &Value, path: &str, errs: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        check(&root["$defs"][name], root, v, path, errs);
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|&t| match t {
            "object" => v.is_object(),
            "array" => v.is_array(),
            "string" => v.is_string(),
            "number" => v.is_number(),
            "integer" => v.is_u64() || v.is_i64(),
            "boolean" => v.is_boolean(),
            "null" => v.is_null(),
            _ => false,
        });
        if !ok {
            errs.push(format!("{path}: expected {types:?}, got {v}"));
            return;
        }
    }
    if let Some(c) = schema.get("const") {
        if c != v {
            errs.push(format!("{path}: expected const {c}, got {v}"));
        }
    }
    if let Some(Value::Array(opts)) = schema.get("enum") {
        if !opts.contains(v) {
            errs.push(format!("{path}: {v} not in {opts:?}"));
        }
    }
    if let Some(x) = v.as_f64() {
        if schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| x < m)
        {
            errs.push(format!("{path}: {x} below minimum"));
        }
        if schema
            .get("maximum")
            .and_then(Value::as_f64)
            .is_some_and(|m| x > m)
        {
            errs.push(format!("{path}: {x} above maximum"));
        }
        if schema
            .get("exclusiveMinimum")
            .and_then(Value::as_f64)
            .is_some_and(|m| x <= m)
        {
            errs.push(format!("{path}: {x} not above exclusiveMinimum"));
        }
    }
    if let Value::Object(obj) = v {
        if let Some(Value::Array(req)) = schema.get("required") {
            for k in req.iter().filter_map(Value::as_str) {
                if !obj.contains_key(k) {
                    errs.push(format!("{path}: missing required key `{k}`"));
                }
            }
        }
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, child) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(s) => check(s, root, child, &format!("{path}.{k}"), errs),
                None => {
                    if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                        errs.push(format!("{path}: unexpected key `{k}`"));
                    }
                }
            }
        }
    }
    if let Value::Array(items) = v {
        if let Some(n) = schema.get("minItems").and_then(Value::as_u64) {
            if (items.len() as u64) < n {
                errs.push(format!("{path}: fewer than {n} items"));
            }
        }
        if let Some(n) = schema.get("maxItems").and_then(Value::as_u64) {
            if (items.len() as u64) > n {
                errs.push(format!("{path}: more than {n} items"));
            }
        }
        if let Some(s) = schema.get("items") {
            for (i, it) in items.iter().enumerate() {
                check(s, root, it, &format!("{path}[{i}]"), errs);
            }
        }
    }
}

fn schema_errors(doc: &Value) -> Vec<String> {
    let schema: Value = serde_json::from_str(SCHEMA).expect("schema parses");
    let mut errs = Vec::new();
    check(&schema, &schema, doc, "$", &mut errs);
    errs
}

#[test]
fn schema_file_is_draft_2020_12() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["properties"]["schema_version"]["const"], 1);
}

#[test]
fn every_export_validates_against_the_schema() {
    let sessions = heterogeneous(11);
    for est in [
        PriorsEstimator::Beta,
        PriorsEstimator::Frailty,
        PriorsEstimator::None,
    ] {
        let p = export(&sessions, est, 512);
        let doc: Value = serde_json::from_str(&p.to_json().unwrap()).unwrap();
        let errs = schema_errors(&doc);
        assert!(errs.is_empty(), "{est:?}: {errs:#?}");
        // optional parts: no parametric fit, no frailty_z
        let mut bare = p.clone();
        bare.pooled.parametric = None;
        for n in &mut bare.nodes {
            n.frailty_z = None;
        }
        let doc: Value = serde_json::to_value(&bare).unwrap();
        assert!(schema_errors(&doc).is_empty());
        // the checker does catch violations
        let mut broken = doc.clone();
        if let Some(o) = broken["nodes"][0].as_object_mut() {
            o.remove("steps");
            o.insert("extra".into(), Value::Null);
        }
        broken["estimator"] = Value::String("kaplan".into());
        let errs = schema_errors(&broken);
        assert_eq!(errs.len(), 3, "{errs:#?}");
    }
}

#[test]
fn json_round_trip_gives_bitwise_identical_curves() {
    let sessions = heterogeneous(11);
    for est in [
        PriorsEstimator::Beta,
        PriorsEstimator::Frailty,
        PriorsEstimator::None,
    ] {
        let p = export(&sessions, est, 512);
        let back = Priors::from_json(&p.to_json().unwrap()).unwrap();
        assert_eq!(back, p);
        let pretty = Priors::from_json(&p.to_json_pretty().unwrap()).unwrap();
        assert_eq!(pretty, p);
        let ids: Vec<String> = p
            .nodes
            .iter()
            .map(|n| n.node_id.clone())
            .chain(["not-a-node".to_string()])
            .collect();
        for id in &ids {
            let (a, b) = (p.node_curve(id), back.node_curve(id));
            assert_eq!(a, b);
            for k in 0..400 {
                let x = 1.7f64.powf(k as f64 / 12.0) - 1.0;
                assert_eq!(a.survival(x).to_bits(), b.survival(x).to_bits(), "{id} {x}");
                let c1 = a.conditional(x, 3600.0);
                assert_eq!(c1.to_bits(), b.conditional(x, 3600.0).to_bits());
                assert!((0.0..=1.0).contains(&c1));
            }
        }
    }
}

#[test]
fn export_content_and_rows() {
    let sessions = heterogeneous(11);
    let cutoff = 21.0 * DAY;
    let p = export(&sessions, PriorsEstimator::Beta, 64);
    assert_eq!(p.schema_version, 1);
    assert!(p.generated_by.starts_with("hazardserve "));
    assert_eq!(p.cutoff_s, cutoff);
    assert!(p.parameters.m.is_some() && p.parameters.cv_loglik.is_some());
    assert_eq!(p.nodes.len(), 600);
    assert!(p.pooled.parametric.is_some());
    assert!(p.pooled.tail_rate_per_s > 0.0);
    // capped to 64 points, all curves end at the last pooled step
    let last = *p.pooled.steps.t.last().unwrap();
    assert!(p.pooled.steps.t.len() <= 64);
    for n in &p.nodes {
        assert!(n.steps.t.len() <= 64 && !n.steps.t.is_empty());
        assert_eq!(*n.steps.t.last().unwrap(), last);
    }
    // counts and ages agree with the split
    let sets = split_at(&sessions, cutoff).unwrap();
    assert_eq!(p.pooled.counts.n as usize, sets.train.len());
    let live: std::collections::HashSet<u32> = sets.test.iter().map(|c| c.node).collect();
    for (i, n) in p.nodes.iter().enumerate() {
        assert_eq!(n.node_id, format!("node-{i:03}"));
        assert_eq!(
            n.age_at_cutoff_s.is_some(),
            live.contains(&(i as u32)),
            "{i}"
        );
    }
    assert!(live.len() < 600, "some node must be down at the cutoff");
    // flat rows
    let rows = p.rows();
    let total: usize =
        p.pooled.steps.t.len() + p.nodes.iter().map(|n| n.steps.t.len()).sum::<usize>();
    assert_eq!(rows.len(), total);
    assert_eq!(rows[0].scope, "pooled");
    assert_eq!(rows[0].node_id, None);
    let r = &rows[p.pooled.steps.t.len()];
    assert_eq!((r.scope, r.node_id.as_deref()), ("node", Some("node-000")));
    assert_eq!((r.t, r.s), (p.nodes[0].steps.t[0], p.nodes[0].steps.s[0]));
    // frailty: z and node-specific tails
    let f = export(&sessions, PriorsEstimator::Frailty, 512);
    assert!(f.parameters.theta.is_some() && f.parameters.m.is_none());
    assert!(f.nodes.iter().all(|n| n.frailty_z.is_some_and(|z| z > 0.0)));
    // the loader: long-lived nodes have a smaller hazard than short-lived ones
    let z: Vec<f64> = f.nodes.iter().filter_map(|n| n.frailty_z).collect();
    let zmax = z.iter().cloned().fold(0.0, f64::max);
    let zmin = z.iter().cloned().fold(f64::INFINITY, f64::min);
    assert!(zmax > 5.0 * zmin, "{zmin} {zmax}");
}

#[test]
fn small_fleet_and_none_estimator() {
    let sessions = simulate(4, 10.0 * DAY, 0.0, 600.0, 3, |n, rng| {
        rng.exp(3600.0 * (1.0 + n as f64))
    });
    let p = fit_priors(
        &sessions,
        &PriorsMeta {
            source: "tiny".into(),
            cutoff_s: 5.0 * DAY,
            time_base: "utc".into(),
            node_ids: vec!["a".into(), "b".into()],
        },
        &ShrinkageOptions::default(),
        &PriorsOptions {
            estimator: Some(PriorsEstimator::None),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.estimator, PriorsEstimator::None);
    assert_eq!(p.parameters, Default::default());
    let ids: Vec<&str> = p.nodes.iter().map(|n| n.node_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "2", "3"]);
    for n in &p.nodes {
        assert_eq!(n.steps, p.pooled.steps);
    }
    assert_eq!(p.node_curve("b"), p.pooled_curve());
    let bad_time_base = fit_priors(
        &sessions,
        &PriorsMeta {
            time_base: "local".into(),
            cutoff_s: 5.0 * DAY,
            ..Default::default()
        },
        &ShrinkageOptions::default(),
        &PriorsOptions::default(),
    );
    assert!(bad_time_base.is_err());
}

/// `priors export` of GCE (real trace) carries one curve per end cause: the unannounced
/// preemptions fall from the first hour on, the 24-hour cap ends nothing before 24 hours and
/// then almost everything; the product of the cause curves is the all-cause curve (up to the
/// Nelson-Aalen / product-limit difference); the document validates against the schema. A
/// source whose ends have one cause carries none.
#[test]
fn gce_priors_carry_preemption_and_lifetime_cap_curves() {
    use crate::common::{hs, ok, public_store};
    let Some(store) = public_store() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let export = |source: &str| -> (Priors, Value) {
        let out = tmp.path().join(format!("{source}.json"));
        let mut c = hs(store);
        c.args(["priors", "export", "--source", source, "--out"])
            .arg(&out);
        ok(c);
        let text = std::fs::read_to_string(&out).unwrap();
        (
            Priors::from_json(&text).unwrap(),
            serde_json::from_str(&text).unwrap(),
        )
    };
    let (p, doc) = export("gce-preemptible");
    assert!(schema_errors(&doc).is_empty(), "{:#?}", schema_errors(&doc));
    let names: Vec<&str> = p.causes.iter().map(|c| c.cause.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let pre = p.cause_curve("preempted").expect("a preemption curve");
    let cap = p.cause_curve("lifetime-cap").expect("a cap curve");
    assert!(pre.steps.at(3600.0) < 0.9, "preemptions start early");
    assert_eq!(
        cap.steps.at(80_000.0),
        1.0,
        "the cap ends nothing before 24 h"
    );
    assert!(
        cap.steps.at(90_000.0) < 0.2,
        "the cap ends most sessions alive at 24 h"
    );
    // Every end is one of the two (sessions that ended the instant they were seen aside).
    let ends = pre.events + cap.events;
    assert!(
        ends <= p.pooled.counts.events && ends * 100 >= p.pooled.counts.events * 99,
        "{ends} of {}",
        p.pooled.counts.events
    );
    // S = S_preempted * S_cap (Nelson-Aalen vs product-limit: close, not equal).
    for t in [600.0, 3600.0, 21_600.0, 80_000.0] {
        let (all, prod) = (p.pooled.steps.at(t), pre.steps.at(t) * cap.steps.at(t));
        assert!(
            (all - prod).abs() < 0.02,
            "t {t}: S {all} vs product {prod}"
        );
    }
    let (spot, _) = export("cbl-preemption-4node");
    assert!(spot.causes.is_empty(), "one cause: {:?}", spot.causes);
}
