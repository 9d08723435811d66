//! The design note's three placement claims, each checked in both node orders so that an
//! index tie-break cannot pass for a hazard-aware choice.

use hazardserve::policy::{
    ClusterView, Explanation, NodeView, Params, Policy, PolicyKind, RequestView, StandardPolicy,
};
use hazardserve::survival::curve::{ConditionalSurvival, Exponential, Weibull};

/// Places a 2,000-token prompt with 400 output tokens on two identical-speed nodes
/// (A100-class rates) that differ only in curve and age; returns the index chosen for each
/// order of the pair, mapped back to "first node given" = 0.
fn choose(
    a: (&dyn ConditionalSurvival, f64),
    b: (&dyn ConditionalSurvival, f64),
    kind: PolicyKind,
) -> [usize; 2] {
    fn mk<'a>((curve, age): (&'a dyn ConditionalSurvival, f64)) -> NodeView<'a> {
        let mut n = NodeView::new(curve);
        n.age_s = age;
        n.decode_tok_s = 50.0;
        n.prefill_tok_s = 5000.0;
        n.bandwidth_bytes_s = 1.25e9;
        n.slots = 8;
        n
    }
    let req = RequestView::new(1, 2000, 400);
    let mut pol = StandardPolicy::new(kind, Params::default(), 1);
    let mut out = Explanation::default();
    let ab = [mk(a), mk(b)];
    let first = pol.place(&ClusterView::new(&ab), &req, &mut out).unwrap();
    let ba = [mk(b), mk(a)];
    let second = pol.place(&ClusterView::new(&ba), &req, &mut out).unwrap();
    [first, 1 - second]
}

#[test]
fn equal_speed_lower_conditional_hazard_wins() {
    let short = Exponential { mean: 2.0 * 3600.0 };
    let long = Exponential {
        mean: 20.0 * 3600.0,
    };
    assert_eq!(
        choose((&long, 0.0), (&short, 0.0), PolicyKind::Hazard),
        [0, 0]
    );
    // "Over the request's horizon": a Weibull spot curve that is nearly hazard-free for the
    // first minutes beats an exponential with a 20 h mean for an 8 s request ...
    let spot = Weibull {
        shape: 4.0,
        scale: 3600.0,
    };
    assert!(1.0 - spot.conditional(0.0, 8.4) < 1.0 - long.conditional(0.0, 8.4));
    assert_eq!(
        choose((&spot, 0.0), (&long, 0.0), PolicyKind::Hazard),
        [0, 0]
    );
    // ... and loses to it once it has been up 50 minutes.
    assert_eq!(
        choose((&long, 0.0), (&spot, 3000.0), PolicyKind::Hazard),
        [0, 0]
    );
}

#[test]
fn decreasing_hazard_prefers_the_node_idle_for_six_hours() {
    let laptop = Weibull {
        shape: 0.5,
        scale: 2.0 * 3600.0,
    };
    let idle_6h = (&laptop as &dyn ConditionalSurvival, 6.0 * 3600.0);
    let woke_1m = (&laptop as &dyn ConditionalSurvival, 60.0);
    assert_eq!(choose(idle_6h, woke_1m, PolicyKind::Hazard), [0, 0]);
    // Hazard-blind placement cannot tell them apart (it follows the index).
    assert_eq!(choose(idle_6h, woke_1m, PolicyKind::Fastest), [0, 1]);
    // Memoryless cannot either: both nodes share one ML rate.
    assert_eq!(choose(idle_6h, woke_1m, PolicyKind::Memoryless), [0, 1]);
}

#[test]
fn increasing_hazard_prefers_the_fresh_spot_node() {
    // Reclaims cluster around one hour.
    let spot = Weibull {
        shape: 3.0,
        scale: 3600.0,
    };
    let fresh = (&spot as &dyn ConditionalSurvival, 120.0);
    let near_reclaim = (&spot as &dyn ConditionalSurvival, 3300.0);
    assert_eq!(choose(fresh, near_reclaim, PolicyKind::Hazard), [0, 0]);
    assert_eq!(choose(fresh, near_reclaim, PolicyKind::Fastest), [0, 1]);
}
