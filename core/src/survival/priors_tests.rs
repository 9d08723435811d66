//! Unit tests of `priors.rs` (kept in their own file so the module reads as one idea).

use super::*;
use crate::survival::SurvivalData;

fn model() -> ShrinkageModel {
    let (mut g, mut t, mut e) = (Vec::new(), Vec::new(), Vec::new());
    let mut s = 11u64;
    for node in 0..5u32 {
        for _ in 0..40 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            g.push(node);
            t.push(-u.ln() * 100.0 * (1.0 + node as f64));
            e.push(!s.is_multiple_of(7));
        }
    }
    ShrinkageModel::fit(
        &g,
        &SurvivalData::new(&t, &e),
        &ShrinkageOptions {
            estimator: EstimatorChoice::Auto,
            ..Default::default()
        },
    )
    .unwrap()
}

fn meta() -> PriorsMeta {
    PriorsMeta {
        source: "unit".into(),
        cutoff_s: 1e6,
        time_base: "relative".into(),
        node_ids: vec!["a".into(), "b".into(), "c".into()],
    }
}

#[test]
fn knots_are_capped_and_exact() {
    let m = model();
    for est in [PriorsEstimator::Beta, PriorsEstimator::Frailty] {
        let p = build_priors(
            &m,
            None,
            &meta(),
            &[Some(5.0)],
            &PriorsOptions {
                estimator: Some(est),
                max_points: 16,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(p.pooled.steps.t.len() <= 16);
        assert_eq!(p.pooled.steps.t.last(), m.pooled().times.last());
        for (i, n) in p.nodes.iter().enumerate() {
            assert!(n.steps.t.len() <= 16);
            for (&t, &s) in n.steps.t.iter().zip(&n.steps.s) {
                let want = match est {
                    PriorsEstimator::Beta => m.beta_curve(i).unwrap().survival(t),
                    _ => m.frailty_curve(i).survival(t),
                };
                assert_eq!(s, want);
            }
        }
        assert_eq!(p.nodes[3].node_id, "3");
        assert_eq!(p.nodes[0].age_at_cutoff_s, Some(5.0));
        assert_eq!(p.nodes[1].age_at_cutoff_s, None);
        // unknown node -> pooled
        assert_eq!(p.node_curve("zz"), p.pooled_curve());
        let c = p.node_curve("a");
        assert!(c.conditional(1e9, 10.0) < 1.0);
    }
}

#[test]
fn from_json_rejects_bad_documents() {
    let p = build_priors(&model(), None, &meta(), &[], &PriorsOptions::default()).unwrap();
    let json = p.to_json().unwrap();
    let bumped = json.replacen("\"schema_version\":1", "\"schema_version\":2", 1);
    assert!(matches!(
        Priors::from_json(&bumped),
        Err(PriorsError::Version { .. })
    ));
    let mut bad = p.clone();
    bad.nodes[0].steps.s[0] = 1.5;
    let text = serde_json::to_string(&bad).unwrap();
    assert!(matches!(
        Priors::from_json(&text),
        Err(PriorsError::Invalid(_))
    ));
    let mut dup = p.clone();
    dup.nodes[1].node_id = dup.nodes[0].node_id.clone();
    assert!(dup.to_json().is_err());
    assert!(Priors::from_json("{\"schema_version\":1}").is_err());
}
