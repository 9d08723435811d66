//! Unit tests of `shrinkage.rs` (kept in their own file so the module reads as one idea).

use super::*;
use crate::survival::km::KmFit;

fn toy() -> (Vec<u32>, Vec<f64>, Vec<bool>) {
    let mut g = Vec::new();
    let mut t = Vec::new();
    let mut e = Vec::new();
    let mut s = 7u64;
    for node in 0..6u32 {
        for _ in 0..(5 + node as usize) {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((s >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
            t.push(-(u.ln()) * (1.0 + node as f64));
            e.push(!s.is_multiple_of(5));
            g.push(node);
        }
    }
    (g, t, e)
}

#[test]
fn shrunk_curves_answer_every_edge() {
    use crate::survival::curve::assert_edges;
    let (g, t, e) = toy();
    for estimator in [EstimatorChoice::BetaProcess, EstimatorChoice::GammaFrailty] {
        let opts = ShrinkageOptions {
            estimator,
            m: Some(3.0),
            ..Default::default()
        };
        let m = ShrinkageModel::fit(&g, &SurvivalData::new(&t, &e), &opts).unwrap();
        let last = m.pooled().times.last().copied().unwrap_or(0.0);
        let ages = [0.0, 0.5 * last, last, 2.0 * last + 1.0, 1e6];
        assert_edges("pooled", m.pooled(), &ages);
        for node in [0, 3, 99] {
            assert_edges("beta", &m.beta_curve_with(node, 3.0), &ages);
            let f = m.frailty_curve(node);
            assert_edges("frailty", &f, &ages);
            // defined (and exact) past the pooled support too
            assert!(f.conditional_checked(1e6, 5.0).is_some());
            assert_edges("node", &m.node_curve(node), &ages);
        }
    }
}

#[test]
fn beta_limits_are_node_km_and_pooled() {
    let (g, t, e) = toy();
    let opts = ShrinkageOptions {
        estimator: EstimatorChoice::BetaProcess,
        m: Some(1.0),
        ..Default::default()
    };
    let m = ShrinkageModel::fit(&g, &SurvivalData::new(&t, &e), &opts).unwrap();
    let pooled = m.beta_curve_with(0, 1e12);
    for (k, &x) in m.pooled().times.iter().enumerate() {
        assert!((pooled.survival(x) - m.pooled().survival[k]).abs() < 1e-6);
    }
    // M -> 0: node KM at the node's event times
    let ns = m.sessions().node(2);
    let km = KmFit::fit(ns.durations, ns.events).unwrap();
    let c = m.beta_curve_with(2, 1e-12);
    for (&x, &ev) in ns.durations.iter().zip(ns.events) {
        if ev {
            assert!((c.survival(x) - km.survival_at(x).unwrap()).abs() < 1e-9);
        }
    }
    // unknown node -> pooled curve
    let none = m.beta_curve_with(99, 5.0);
    assert!((none.survival(1.0) - m.pooled().survival(1.0)).abs() < 1e-15);
}

#[test]
fn binned_grid_stays_close_and_positive() {
    let (g, t, e) = toy();
    let data = SurvivalData::new(&t, &e);
    let exact = ShrinkageModel::fit(
        &g,
        &data,
        &ShrinkageOptions {
            estimator: EstimatorChoice::BetaProcess,
            m: Some(10.0),
            ..Default::default()
        },
    )
    .unwrap();
    let coarse = ShrinkageModel::fit(
        &g,
        &data,
        &ShrinkageOptions {
            estimator: EstimatorChoice::BetaProcess,
            m: Some(10.0),
            max_bins: 8,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(coarse.summary().n_bins < exact.summary().n_bins);
    for node in 0..6 {
        let (a, b) = (
            exact.beta_curve(node).unwrap(),
            coarse.beta_curve(node).unwrap(),
        );
        for &x in coarse.bins.edge.iter() {
            assert!(
                (a.survival(x) - b.survival(x)).abs() < 0.1,
                "node {node} x {x}"
            );
            assert!(b.survival(x) > 0.0);
        }
    }
}
