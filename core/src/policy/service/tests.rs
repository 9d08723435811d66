//! The service-time model's unit and property tests: the forecast against hand-computed
//! cases and the cached [`Trajectory`] against [`forecast`].

use super::*;

fn serving(slots: u32, f: f64) -> NodeServing {
    NodeServing {
        decode_tok_s: 10.0,
        batch_slowdown: f,
        slots,
        kv_capacity_tokens: u64::MAX,
        step: None,
    }
}

fn newcomer(start_s: f64, target: f64) -> Waiting {
    Waiting {
        cached: 0,
        id: PROBE_ID,
        kv: 1,
        prompt: 0,
        start_s,
        prefill: true,
        stall_s: 0.0,
        tokens: 0.0,
        done: 0.0,
        target,
    }
}

#[test]
fn idle_node_is_prefill_plus_decode() {
    let mut res = Vec::new();
    let st = NodeState {
        serving: serving(1, 0.5),
        now_us: 7,
        residents: &mut res,
        queue: &[],
    };
    let f = forecast(st, Some(newcomer(2.0, 30.0)), PROBE_ID).unwrap();
    assert_eq!(f.start_s, 2.0);
    assert_eq!(f.total_s, 5.0);
}

#[test]
fn a_prefilling_resident_slows_the_newcomer() {
    // A resident finishes its prefill at 1 s and then decodes 20 tokens beside the
    // newcomer: both at 10 / 2 = 5 tok/s.
    let mut res = vec![Resident {
        cached: 0,
        id: 1,
        kv: 1,
        prompt: 0,
        seq: 0,
        target: 20.0,
        phase: ResidentPhase::Starting {
            at_us: 1_000_000,
            done: 0.0,
            prefill: true,
        },
    }];
    let st = NodeState {
        serving: serving(2, 1.0),
        now_us: 0,
        residents: &mut res,
        queue: &[],
    };
    // Newcomer: prefill 1 s, 20 tokens: 4 s at 5 tok/s, finishing at 5 s.
    let f = forecast(st, Some(newcomer(1.0, 20.0)), PROBE_ID).unwrap();
    assert_eq!(f.start_s, 1.0);
    assert_eq!(f.total_s, 5.0);
}

#[test]
fn a_resident_is_counted_once() {
    // One decoder alone: 50 tokens at 10 tok/s; a second decoder would halve that.
    let mut res = vec![Resident {
        cached: 0,
        id: 9,
        kv: 1,
        prompt: 0,
        seq: 0,
        target: 50.0,
        phase: ResidentPhase::Decoding {
            done: 0.0,
            rate: 10.0,
            since_us: 0,
            end_us: decode_end_us(0, 0.0, 50.0, 10.0),
        },
    }];
    let st = NodeState {
        serving: serving(4, 1.0),
        now_us: 0,
        residents: &mut res,
        queue: &[],
    };
    let f = forecast(st, None, 9).unwrap();
    assert_eq!(f.start_s, 0.0);
    assert_eq!(f.total_s, 5.0);
}

#[test]
fn queued_work_runs_at_the_loaded_rate() {
    // One slot: the resident decodes 10 tokens (1 s), the queued request prefills 1 s and
    // decodes 10 tokens (1 s), then the newcomer: 1 s + 1 s.
    let mut res = vec![Resident {
        cached: 0,
        id: 1,
        kv: 1,
        prompt: 0,
        seq: 0,
        target: 10.0,
        phase: ResidentPhase::Decoding {
            done: 0.0,
            rate: 10.0,
            since_us: 0,
            end_us: decode_end_us(0, 0.0, 10.0, 10.0),
        },
    }];
    let queue = [Waiting {
        id: 2,
        ..newcomer(1.0, 10.0)
    }];
    let st = NodeState {
        serving: serving(1, 1.0),
        now_us: 0,
        residents: &mut res,
        queue: &queue,
    };
    let f = forecast(st, Some(newcomer(1.0, 10.0)), PROBE_ID).unwrap();
    assert_eq!(f.start_s, 4.0);
    assert_eq!(f.total_s, 5.0);
}

#[test]
fn absent_request_and_zero_rate() {
    let mut res = Vec::new();
    let st = NodeState {
        serving: serving(1, 0.0),
        now_us: 0,
        residents: &mut res,
        queue: &[],
    };
    assert!(forecast(st, None, 3).is_none());
    let mut res = Vec::new();
    let st = NodeState {
        serving: NodeServing {
            decode_tok_s: 0.0,
            ..serving(1, 0.0)
        },
        now_us: 0,
        residents: &mut res,
        queue: &[],
    };
    let f = forecast(st, Some(newcomer(1.0, 5.0)), PROBE_ID).unwrap();
    assert_eq!(f.start_s, 1.0);
    assert!(f.total_s.is_infinite());
}
fn phase_of(kind: u8, a: i64, b: f64, rate: f64, target: f64) -> ResidentPhase {
    match kind % 4 {
        0 => ResidentPhase::Decoding {
            done: b.min(target),
            rate,
            since_us: 0,
            end_us: decode_end_us(0, b.min(target), target, rate),
        },
        1 => ResidentPhase::Starting {
            at_us: a,
            done: b.min(target),
            prefill: true,
        },
        2 => ResidentPhase::Starting {
            at_us: a,
            done: b.min(target),
            prefill: false,
        },
        _ => ResidentPhase::Held {
            at_us: a,
            done: 0.0,
        },
    }
}

proptest::proptest! {
    /// A [`Trajectory`] computed once answers every resident, queued request and newcomer
    /// exactly as [`forecast`] does, also asked later while the state holds.
    #[test]
    fn trajectory_equals_forecast(
        slots in 1u32..6,
        cap in proptest::prop_oneof![proptest::strategy::Just(u64::MAX), 50u64..400],
        (d, f) in (0.0f64..20.0, proptest::prop_oneof![proptest::strategy::Just(0.0), 0.0f64..1.5]),
        res in proptest::collection::vec((0u8..4, 1i64..3_000_000, 0.0f64..40.0, 1u64..80, 1.0f64..60.0), 0..6),
        queue in proptest::collection::vec((1u64..80, 0.0f64..3.0, proptest::bool::ANY, 0.0f64..5.0, 1.0f64..60.0), 0..6),
        new in (1u64..120, 0.0f64..3.0, proptest::bool::ANY, 1.0f64..60.0),
        later in 0i64..2,
    ) {
        let serving = NodeServing { decode_tok_s: d, batch_slowdown: f, slots, kv_capacity_tokens: cap, step: None };
        let decoders = res.iter().filter(|r| r.0 % 4 == 0).count() as u32;
        let rate = decode_rate(d, f, decoders.max(1));
        let residents: Vec<Resident> = res
            .iter()
            .take(slots as usize)
            .enumerate()
            .map(|(k, &(kind, a, b, kv, target))| Resident { cached: 0,
                id: k as u64,
                kv, prompt: 0, seq: 0,
                target,
                phase: phase_of(kind, a, b, rate, target),
            })
            .collect();
        let queue: Vec<Waiting> = queue
            .iter()
            .enumerate()
            .map(|(k, &(kv, start_s, prefill, done, target))| Waiting { cached: 0,
                id: 100 + k as u64,
                kv, prompt: 0,
                start_s,
                prefill,
                stall_s: 0.0,
                tokens: 0.0,
                done: done.min(target),
                target,
            })
            .collect();
        let newcomer = Waiting { cached: 0, id: PROBE_ID, kv: new.0, prompt: 0, start_s: new.1, prefill: new.2, stall_s: 0.0, tokens: 0.0, done: 0.0, target: new.3 };
        let mut traj = Trajectory::default();
        let mut buf = residents.clone();
        traj.compute(NodeState { serving, now_us: 0, residents: &mut buf, queue: &queue });
        // Asked at the time it was computed, or later but before any resident's event.
        let earliest = residents
            .iter()
            .map(|r| match r.phase {
                ResidentPhase::Decoding { end_us, .. }
                | ResidentPhase::Prefilling { end_us, .. } => end_us,
                ResidentPhase::Starting { at_us, .. }
                | ResidentPhase::Held { at_us, .. }
                | ResidentPhase::Stalled { at_us, .. } => at_us,
            })
            .min()
            .unwrap_or(i64::MAX);
        let now = if later == 1 && earliest >= 1 && traj.holds_at(1) { 1 } else { 0 };
        let fresh = |newcomer: Option<Waiting>, watch: u64| {
            let mut buf = residents.clone();
            forecast(NodeState { serving, now_us: now, residents: &mut buf, queue: &queue }, newcomer, watch)
        };
        let mut scratch = Vec::new();
        // The replay stops where the queue holds slots (after its first event): how long
        // its answers hold must not change when the rest is replayed (below).
        let probes = [0, 1, earliest.saturating_sub(1), earliest, earliest.saturating_add(1)];
        let holds = probes.map(|t| traj.holds_at(t));
        proptest::prop_assert_eq!(traj.newcomer(newcomer, now, &mut scratch), fresh(Some(newcomer), PROBE_ID));
        // The marginal forecast: the same newcomer time, and the same imposed delay from
        // the cached trajectory as from two fresh replays.
        let marginal = {
            let mut buf = residents.clone();
            forecast_marginal(NodeState { serving, now_us: now, residents: &mut buf, queue: &queue }, newcomer)
        };
        proptest::prop_assert_eq!(marginal.map(|m| m.time), fresh(Some(newcomer), PROBE_ID));
        proptest::prop_assert!(marginal.is_none_or(|m| m.imposed_s >= 0.0));
        proptest::prop_assert_eq!(traj.newcomer_marginal(newcomer, now, &mut scratch), marginal);
        for id in residents.iter().map(|r| r.id).chain(queue.iter().map(|w| w.id)).chain([999]) {
            proptest::prop_assert_eq!(traj.resident(id, now), fresh(None, id));
        }
        proptest::prop_assert_eq!(probes.map(|t| traj.holds_at(t)), holds);
    }
}

#[test]
fn the_marginal_forecast_prices_the_slowdown_of_a_co_decoder() {
    // A resident decodes 40 tokens alone at 10 tok/s (ends at 4 s). A newcomer prefilling
    // 1 s and decoding 10 tokens joins: with f = 1 both decode at 5 tok/s from 1 s; the
    // resident has 30 left then, the newcomer finishes at 3 s (10 tokens at 5 tok/s) and
    // the resident, 20 tokens left at 10 tok/s, at 5 s: one second later than alone.
    let decoding = |rate: f64| ResidentPhase::Decoding {
        done: 0.0,
        rate,
        since_us: 0,
        end_us: decode_end_us(0, 0.0, 40.0, rate),
    };
    let marginal = |mut res: Vec<Resident>| {
        let st = NodeState {
            serving: serving(2, 1.0),
            now_us: 0,
            residents: &mut res,
            queue: &[],
        };
        forecast_marginal(st, newcomer(1.0, 10.0)).unwrap()
    };
    let m = marginal(vec![Resident {
        cached: 0,
        id: 1,
        kv: 1,
        prompt: 0,
        seq: 0,
        target: 40.0,
        phase: decoding(10.0),
    }]);
    assert_eq!(m.time.total_s, 3.0);
    assert_eq!(m.imposed_s, 1.0);
    // With a free node (no resident) nothing is imposed.
    let m = marginal(Vec::new());
    assert_eq!((m.time.total_s, m.imposed_s), (2.0, 0.0));
}

#[test]
fn append_equals_computing_with_the_longer_queue() {
    let serving = NodeServing {
        decode_tok_s: 10.0,
        batch_slowdown: 0.7,
        slots: 2,
        kv_capacity_tokens: 300,
        step: None,
    };
    let resident = |id: u64, end: i64| Resident {
        cached: 0,
        id,
        kv: 100,
        prompt: 0,
        seq: 0,
        target: 30.0,
        phase: ResidentPhase::Starting {
            at_us: end,
            done: 0.0,
            prefill: true,
        },
    };
    let w = |id: u64, kv: u64| Waiting {
        cached: 0,
        id,
        kv,
        prompt: 0,
        start_s: 0.5,
        prefill: true,
        stall_s: 0.0,
        tokens: 0.0,
        done: 0.0,
        target: 20.0 + id as f64,
    };
    let base = vec![resident(1, 400_000), resident(2, 900_000)];
    let queue = [w(3, 100), w(4, 150), w(5, 60)];
    for n in 0..queue.len() {
        let mut appended = Trajectory::default();
        let mut buf = base.clone();
        appended.compute(NodeState {
            serving,
            now_us: 0,
            residents: &mut buf,
            queue: &queue[..n],
        });
        let mut ok = true;
        for q in &queue[n..] {
            ok &= appended.append(*q, 0);
        }
        assert!(ok);
        let mut full = Trajectory::default();
        let mut buf = base.clone();
        full.compute(NodeState {
            serving,
            now_us: 0,
            residents: &mut buf,
            queue: &queue,
        });
        let newcomer = w(PROBE_ID, 80);
        let mut s1 = Vec::new();
        let mut s2 = Vec::new();
        assert_eq!(
            appended.newcomer(newcomer, 0, &mut s1),
            full.newcomer(newcomer, 0, &mut s2)
        );
        assert_eq!(appended.residents_known(), n == queue.len());
    }
}

/// [`secs_to_us`] as the library's `round` and `ceil` give it: the reference of its exact
/// integer form.
fn secs_to_us_by_rounding(s: f64) -> i64 {
    if !(s > 0.0) {
        return 0;
    }
    let x = s * US_PER_S;
    if x >= FOREVER_US as f64 {
        return FOREVER_US;
    }
    let r = x.round();
    let us = if (x - r).abs() <= 1e-9 * r.max(1.0) {
        r
    } else {
        x.ceil()
    };
    (us as i64).max(1)
}

#[test]
fn whole_microseconds_and_floors_at_the_edges() {
    for s in [
        0.0,
        -0.0,
        -1.0,
        f64::NAN,
        f64::INFINITY,
        f64::MIN_POSITIVE,
        5e-324,
        4e-7,
        5e-7,
        1.234,
        0.0000015,
        2.5e-6,
        1.0 - 1e-16,
        (FOREVER_US as f64) / US_PER_S,
        (FOREVER_US as f64) / US_PER_S * (1.0 - 1e-15),
        4_503_599_627.370_496,
        4_503_599_627.370_497,
    ] {
        assert_eq!(secs_to_us(s), secs_to_us_by_rounding(s), "{s:e} s");
    }
    for x in [
        0.0,
        -0.0,
        0.5,
        -0.5,
        -1.0,
        1.0 - f64::EPSILON / 2.0,
        -(1.0 - f64::EPSILON / 2.0),
        4_503_599_627_370_495.5,
        -4_503_599_627_370_495.5,
        4_503_599_627_370_496.0,
        9.3e18,
        -9.3e18,
        1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
    ] {
        assert_eq!(floor(x).to_bits(), x.floor().to_bits(), "floor({x:e})");
    }
    assert!(floor(f64::NAN).is_nan());
}

proptest::proptest! {
    /// The exact integer forms answer as `round`, `ceil` and `floor` do, on every finite
    /// value (drawn from its bits) and on durations of the engine's scale.
    #[test]
    fn whole_microseconds_and_floors_are_the_roundings(
        bits in proptest::num::u64::ANY,
        s in 0.0f64..1e5,
        tokens in 0.0f64..1e7,
    ) {
        let any = f64::from_bits(bits);
        proptest::prop_assert_eq!(secs_to_us(any), secs_to_us_by_rounding(any));
        proptest::prop_assert_eq!(secs_to_us(s), secs_to_us_by_rounding(s));
        if !any.is_nan() {
            proptest::prop_assert_eq!(floor(any).to_bits(), any.floor().to_bits());
        }
        proptest::prop_assert_eq!(floor(tokens).to_bits(), tokens.floor().to_bits());
        proptest::prop_assert_eq!(floor(-tokens).to_bits(), (-tokens).floor().to_bits());
    }
}
