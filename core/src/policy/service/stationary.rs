//! The `stationary` forecast: a node's load as a flow, not a stock.
//!
//! [`super::forecast`] and [`super::forecast_marginal`] replay a node as it is with nothing
//! arriving, so its residents drain: a newcomer that joins residents about to finish is
//! forecast to decode nearly alone soon after. Under load that is not what happens. Requests
//! keep arriving, and a router that balances its nodes sends them where slots have just freed:
//! a node's count stays near where it is, and the newcomer decodes beside about as many others
//! as the node holds now for its whole stay. Priced by the draining forecast, `fastest` and
//! `hazard` joined nodes about to drain (and so about to fill again), and lost to
//! `least-loaded` on short requests on fast tiers, with exact lengths as with estimates (the
//! length-noise grid, `reports/sweeps/length-noise.toml`).
//!
//! [`stationary`] keeps the part of the replay that is near and certain, and holds the rest
//! at the node's current load. For a newcomer with `r` tokens to decode whose start `w` (its
//! queue wait and prefill, as the engine serves the node now) the replay gives:
//!
//! * `T = w + r s(K, C)`: one token per step of a batch of `K` decoders, everyone on the node
//!   now (the queue included; a transfer's source holds its slot without decoding) and the
//!   newcomer, at most the slots, reading `C` context tokens (the KV each holds as the engine
//!   counts it, theirs and its own);
//! * `D = (K - 1) (r (s(K, C) - s(K - 1, C')) + P)`: what each of its `K - 1` neighbours
//!   loses while it is there: per token it decodes, the step time one more decoder adds
//!   (`C'` without its context), and under the iteration model `P`, the seconds its prefill's
//!   chunks add to the steps they share with the decoders (0 under the simple model, where a
//!   prefill is a pause of its own slot).
//!
//! `s(k, c)` is the engine's per-token step: [`iteration::StepCoefficients::step_s`]`(0, k,
//! c, 0)` under the iteration model, `(1 + f (k - 1)) / d` under the simple one
//! ([`super::decode_rate`]). When the slots hold fewer than all the others, `C` is the mean
//! context's share of those in the batch. A resident's stationary completion is
//! `w + r s(K, C)` with itself among the `K` ([`stationary_resident`]). When every resident is
//! already decoding and outlasts the newcomer, nothing queues and nothing arrives, the node's
//! load is stationary in fact, and this forecast and the marginal one agree (a test holds them
//! together under both models; a resident still starting, a queue or a full node break the
//! agreement by design).
//!
//! A node that gains nothing from batching ([`drains`]: a phone, `b = 1`, whose decoders
//! share one request's rate) is priced by the draining replay instead, as the marginal
//! forecast prices it ([`NodeLoads::forecast_newcomer_stationary`]). This is a rule chosen by
//! measurement, with a reason, not a model of the refill. The reason: on a node that batches
//! (every GPU and laptop preset, `b < 1`) a newcomer slows each later request there a
//! little, the node stays about as good a place as before and its freed slots fill again; on
//! a phone a newcomer delays the next request there by its whole decode, so a router sends
//! fewer requests there while it decodes, and which residents leave soon (what the draining
//! replay knows) decides where a long request finishes first. Phones are still refilled in
//! part: the draining `T` is short on them (median `T` / served 0.85 to 0.94 on four fleets of
//! the regime map's slice). The rule is a cliff at `b = 1` (a tier at `b = 0.99` is priced
//! as stationary); no preset lies near it. Measured on 54 cells (the length-noise grid's
//! three fleets on the H100, M1 Max and phone tiers, its three workloads, exact and estimated
//! lengths, 10 windows each), counting the cells where `fastest` is worse than
//! `least-loaded` (q < 0.05): stationary everywhere 1 (and the 3.6 to 9.7 s that `fastest`
//! gains on the control's and Parcae's phones with long outputs when they are priced as
//! draining gone); marginal everywhere 19 (18 on the batching tiers); a refill at each node's
//! observed arrival rate 13; a blend of the two answers weighted by `b` (or `b^3`) 4, on
//! chat with exact lengths (even a weight of 0.002 on the marginal answer reorders an H100's
//! near-ties, which the stationary answer leaves to the load); this rule 1 (chat on Parcae's
//! phones with estimates, where marginal loses too), with 20 cells better.

use super::*;

/// The requests a newcomer (or a resident) would decode beside: how many and their context.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Batch {
    /// Requests on the node that decode (or will, once started) besides the one asked about:
    /// residents other than a transfer's source, and the queue.
    pub others: u32,
    /// The context tokens their steps read: the KV each holds as the engine counts it
    /// ([`Resident::kv`], [`Waiting::kv`]).
    pub context: f64,
}

impl Batch {
    /// The batch on a node with `residents` and `queue`, without request `skip` (the resident
    /// asked about; [`PROBE_ID`] or any absent id for a newcomer).
    pub fn of(residents: &[Resident], queue: &[Waiting], skip: u64) -> Batch {
        let mut others = 0u32;
        let mut context = 0.0;
        for r in residents.iter().filter(|r| r.id != skip) {
            if matches!(r.phase, ResidentPhase::Held { .. }) {
                continue;
            }
            others = others.saturating_add(1);
            context += r.kv as f64;
        }
        for w in queue.iter().filter(|w| w.id != skip) {
            others = others.saturating_add(1);
            context += w.kv as f64;
        }
        Batch { others, context }
    }

    /// The context of `n` of them (the mean's share when the slots hold fewer than all).
    pub fn in_batch(&self, n: u32) -> f64 {
        if n >= self.others {
            self.context
        } else {
            self.context * f64::from(n) / f64::from(self.others)
        }
    }

    /// The batch once `w` has joined the queue.
    pub fn joined(self, w: &Waiting) -> Batch {
        Batch {
            others: self.others.saturating_add(1),
            context: self.context + w.kv as f64,
        }
    }
}

/// Seconds to decode `tokens` at `per_token` seconds each: 0 with nothing to decode (even at
/// a rate of 0).
#[inline]
fn tokens_s(tokens: f64, per_token: f64) -> f64 {
    if tokens > 0.0 {
        tokens * per_token
    } else {
        0.0
    }
}

/// Seconds per decoded token with `k` decoders reading `ctx` context tokens (`k >= 1`).
#[inline]
fn per_token_s(serving: &NodeServing, k: u32, ctx: f64) -> f64 {
    match &serving.step {
        Some(c) => c.step_s(0.0, k, ctx.max(0.0), 0.0),
        None => 1.0 / decode_rate(serving.decode_tok_s, serving.batch_slowdown, k),
    }
}

/// The decoders a request joins: its `others` and itself, at most the slots (at least 1).
#[inline]
fn batch_size(serving: &NodeServing, others: u32) -> u32 {
    others.saturating_add(1).min(serving.slots.max(1))
}

/// Whether a node serving as `serving` gains nothing from batching: two decoders' step takes
/// at least twice one decoder's (reading no context), so its aggregate decode rate does not
/// grow with the batch (a phone: `b = 1`). The `stationary` forecast prices such a node by
/// the draining replay (module docs: a rule chosen by measurement, a cliff at `b = 1`).
pub fn drains(serving: &NodeServing) -> bool {
    let one = per_token_s(serving, 1, 0.0);
    let two = per_token_s(serving, 2, 0.0);
    two >= 2.0 * one * (1.0 - 1e-9)
}

/// The stationary forecast of `newcomer` on a node serving as `serving`, beside `batch`,
/// given `start_s`, when it would start decoding as the engine serves the node now (the
/// `w` of [`super::forecast`]): its `T` and the delay `D` it imposes (module docs). An
/// infinite or NaN `start_s` gives an infinite `T` and no delay.
pub fn stationary(
    serving: &NodeServing,
    batch: Batch,
    newcomer: &Waiting,
    start_s: f64,
) -> Marginal {
    if !start_s.is_finite() {
        return Marginal {
            time: ServiceTime {
                start_s: f64::INFINITY,
                total_s: f64::INFINITY,
            },
            imposed_s: 0.0,
        };
    }
    let start_s = start_s.max(0.0);
    let r = (newcomer.target - newcomer.done).max(0.0);
    let k = batch_size(serving, batch.others);
    let neighbours = k - 1;
    let context = batch.in_batch(neighbours);
    let with = per_token_s(serving, k, context + newcomer.kv as f64);
    let total_s = start_s + tokens_s(r, with);
    let mut imposed_s = 0.0;
    if neighbours > 0 {
        let without = per_token_s(serving, neighbours, context);
        let decode = tokens_s(r, (with - without).max(0.0));
        let prefill = match &serving.step {
            Some(c) if newcomer.prefill && newcomer.tokens > 0.0 => {
                let x = c.chunk(neighbours).min(newcomer.tokens);
                let steps = newcomer.tokens / x;
                let shared = c.step_s(x, neighbours, context, newcomer.tokens);
                // `without` is the neighbours' step with no prefill in it.
                steps * (shared - without).max(0.0)
            }
            _ => 0.0,
        };
        imposed_s = f64::from(neighbours) * (decode + prefill);
    }
    Marginal {
        time: ServiceTime { start_s, total_s },
        imposed_s,
    }
}

/// The stationary completion of a resident with `remaining` tokens to decode and `context`
/// tokens of KV of its own, beside `batch` (the node's other requests), given `start_s`, when it
/// starts (or started: 0) decoding as the engine serves the node now. An infinite or NaN
/// `start_s` gives an infinite `T`.
pub fn stationary_resident(
    serving: &NodeServing,
    batch: Batch,
    (remaining, context): (f64, f64),
    start_s: f64,
) -> ServiceTime {
    if !start_s.is_finite() {
        return ServiceTime {
            start_s: f64::INFINITY,
            total_s: f64::INFINITY,
        };
    }
    let start_s = start_s.max(0.0);
    let k = batch_size(serving, batch.others);
    let per_token = per_token_s(serving, k, batch.in_batch(k - 1) + context);
    ServiceTime {
        start_s,
        total_s: start_s + tokens_s(remaining.max(0.0), per_token),
    }
}

/// The one-shot stationary forecast of request `id` (resident or queued) on the node of
/// `state`: [`stationary_resident`] beside the node's other requests, starting when
/// [`super::forecast`] has it start; `None` when it is not there (or as that forecast).
pub fn forecast_stationary_resident(state: NodeState<'_>, id: u64) -> Option<ServiceTime> {
    let batch = Batch::of(state.residents, state.queue, id);
    let left = remaining_of(state.residents, state.queue, state.now_us, id)?;
    let serving = state.serving;
    let start_s = super::forecast(state, None, id)?.start_s;
    Some(stationary_resident(&serving, batch, left, start_s))
}

/// Tokens request `id` (resident or queued) still has to decode at `now_us` (its target less
/// what it has) and the KV it holds; `None` when it is on neither list.
pub fn remaining_of(
    residents: &[Resident],
    queue: &[Waiting],
    now_us: i64,
    id: u64,
) -> Option<(f64, f64)> {
    if let Some(r) = residents.iter().find(|r| r.id == id) {
        let done = match r.phase {
            ResidentPhase::Decoding {
                done,
                rate,
                since_us,
                end_us,
            } => progress(done, rate, since_us, end_us, now_us, r.target),
            ResidentPhase::Starting { done, .. }
            | ResidentPhase::Stalled { done, .. }
            | ResidentPhase::Prefilling { done, .. }
            | ResidentPhase::Held { done, .. } => done,
        };
        return Some(((r.target - done).max(0.0), r.kv as f64));
    }
    queue
        .iter()
        .find(|w| w.id == id)
        .map(|w| ((w.target - w.done).max(0.0), w.kv as f64))
}

#[cfg(test)]
mod tests {
    use super::super::forecast_marginal;
    use super::*;
    use crate::policy::iteration::{StepCoefficients, StepShape, GENERIC_SHAPE};

    const D: f64 = 20.0;
    const F: f64 = 0.3;

    /// The generic step shape with a context read (what `delta` the engine charges).
    const READING: StepShape = StepShape {
        context_per_ktok: 0.02,
        ..GENERIC_SHAPE
    };

    /// A node with `targets.len()` decoders (prompts of 100, 200, ... tokens, 5 tokens done)
    /// under the simple model or, `iteration`, the iteration model with `shape`.
    fn node_with(
        iteration: bool,
        shape: StepShape,
        slots: u32,
        targets: &[f64],
    ) -> (NodeServing, Vec<Resident>) {
        let step = iteration.then(|| StepCoefficients::of(4000.0, D, shape).unwrap());
        let serving = NodeServing {
            decode_tok_s: D,
            batch_slowdown: F,
            slots,
            kv_capacity_tokens: u64::MAX,
            step,
        };
        let decoders: Vec<(u64, f64)> = (1..=targets.len() as u64)
            .map(|i| 100 * i)
            .zip(targets.iter().copied())
            .collect();
        (serving, decoding(step.as_ref(), &decoders))
    }

    /// Decoders with `(prompt, target)` each, 5 tokens done, at the simple model's rate of
    /// their batch or, with `step`, at the iteration model's.
    fn decoding(step: Option<&StepCoefficients>, decoders: &[(u64, f64)]) -> Vec<Resident> {
        let rate = decode_rate(D, F, (decoders.len() as u32).max(1));
        let mut residents: Vec<Resident> = decoders
            .iter()
            .enumerate()
            .map(|(i, &(prompt, target))| Resident {
                cached: 0,
                id: i as u64 + 1,
                kv: prompt + 5,
                prompt,
                seq: i as u64,
                target,
                phase: ResidentPhase::Decoding {
                    done: 5.0,
                    rate,
                    since_us: 0,
                    end_us: decode_end_us(0, 5.0, target, rate),
                },
            })
            .collect();
        if let Some(c) = step {
            repace(&mut residents, c, 0);
        }
        residents
    }

    /// [`node_with`] the generic shape.
    fn node(iteration: bool, slots: u32, targets: &[f64]) -> (NodeServing, Vec<Resident>) {
        node_with(iteration, GENERIC_SHAPE, slots, targets)
    }

    fn newcomer(iteration: bool, prompt: u64, target: f64) -> Waiting {
        Waiting {
            cached: 0,
            id: PROBE_ID,
            kv: prompt + target as u64,
            prompt,
            start_s: if iteration {
                0.0
            } else {
                prompt as f64 / 4000.0
            },
            prefill: true,
            stall_s: 0.0,
            tokens: if iteration { prompt as f64 } else { 0.0 },
            done: 0.0,
            target,
        }
    }

    /// The marginal forecast (the engine's rules, the residents draining) and the stationary
    /// one of `w` on the node.
    fn both(serving: NodeServing, residents: &[Resident], w: Waiting) -> (Marginal, Marginal) {
        fn state(serving: NodeServing, res: &mut Vec<Resident>) -> NodeState<'_> {
            NodeState {
                serving,
                now_us: 0,
                residents: res,
                queue: &[],
            }
        }
        let marginal = forecast_marginal(state(serving, &mut residents.to_vec()), w).unwrap();
        let own =
            super::super::forecast(state(serving, &mut residents.to_vec()), Some(w), PROBE_ID);
        let batch = Batch::of(residents, &[], PROBE_ID);
        let stationary = stationary(&serving, batch, &w, own.unwrap().start_s);
        (marginal, stationary)
    }

    /// When every resident outlasts the newcomer and nothing queues, the node's load is
    /// stationary in fact: the stationary forecast's `T` and `D` are the engine's (the
    /// marginal forecast's), under both models (the iteration model with and without a
    /// context read), alone and beside up to four decoders.
    #[test]
    fn with_nothing_leaving_the_stationary_forecast_is_the_marginal_one() {
        for (iteration, shape) in [
            (false, GENERIC_SHAPE),
            (true, GENERIC_SHAPE),
            (true, READING),
        ] {
            for k in 0..5 {
                for (prompt, r) in [(300, 40.0), (2500, 7.0), (64, 200.0)] {
                    let (serving, residents) = node_with(iteration, shape, 8, &vec![1e7; k]);
                    let (m, s) = both(serving, &residents, newcomer(iteration, prompt, r));
                    let close =
                        |a: f64, b: f64| (a - b).abs() <= 1e-6 * a.abs() + 1e-5 * (k + 1) as f64;
                    let case = format!(
                        "iteration {iteration}, {k} decoders, prompt {prompt}, {r} tokens: \
                         {m:?} vs {s:?}"
                    );
                    assert!(close(m.time.total_s, s.time.total_s), "T: {case}");
                    assert_eq!(m.time.start_s, s.time.start_s, "{case}");
                    assert!(close(m.imposed_s, s.imposed_s), "D: {case}");
                    if k > 0 {
                        assert!(s.imposed_s > 0.0, "{case}");
                    }
                }
            }
        }
    }

    /// Beside residents about to finish, the marginal forecast sees the newcomer soon alone;
    /// the stationary one holds the batch it joins for its whole stay: a longer `T`, a larger
    /// `D`, and the same as beside residents that stay.
    #[test]
    fn residents_about_to_leave_are_held_at_the_current_load() {
        for iteration in [false, true] {
            let (serving, leaving) = node(iteration, 8, &[8.0, 8.0, 8.0]);
            let (m, s) = both(serving, &leaving, newcomer(iteration, 300, 200.0));
            assert!(s.time.total_s > m.time.total_s * 1.05, "{m:?} {s:?}");
            assert!(s.imposed_s > m.imposed_s, "{m:?} {s:?}");
            let (_, staying) = node(iteration, 8, &[1e7, 1e7, 1e7]);
            let (_, held) = both(serving, &staying, newcomer(iteration, 300, 200.0));
            let rel = (held.time.total_s - s.time.total_s).abs() / s.time.total_s;
            assert!(rel < 1e-2, "{held:?} {s:?}");
        }
    }

    /// The batch counts the residents that decode (a transfer's source holds its slot without
    /// decoding) and the queue, without the request asked about; the slots cap the batch a
    /// newcomer joins; an unbounded start is an unbounded forecast.
    #[test]
    fn the_batch_and_its_limits() {
        let (serving, mut residents) = node(false, 3, &[50.0, 60.0]);
        residents.push(Resident {
            cached: 0,
            id: 9,
            kv: 1,
            prompt: 1000,
            seq: 9,
            target: 70.0,
            phase: ResidentPhase::Held {
                at_us: 5,
                done: 3.0,
            },
        });
        let queue = [Waiting {
            id: 4,
            ..newcomer(false, 40, 30.0)
        }];
        // The KV the two decoders and the queued request hold (the engine's context read).
        let b = Batch::of(&residents, &queue, PROBE_ID);
        assert_eq!(b.others, 3);
        assert_eq!(b.context, 105.0 + 205.0 + 70.0);
        let without_1 = Batch::of(&residents, &queue, 1);
        assert_eq!(without_1.others, 2);
        // Resident 2 decoded one second at d / (1 + f) since 5 tokens.
        let rate = decode_rate(D, F, 2);
        assert_eq!(
            remaining_of(&residents, &queue, 1_000_000, 2),
            Some((60.0 - 5.0 - rate, 205.0))
        );
        assert_eq!(remaining_of(&residents, &queue, 0, 4), Some((30.0, 70.0)));
        assert_eq!(remaining_of(&residents, &queue, 0, 77), None);
        // Three others and three slots: the newcomer decodes in a batch of three, beside two.
        let w = newcomer(false, 0, 10.0);
        let s = stationary(&serving, b, &w, 1.0);
        let per_token = (1.0 + 2.0 * F) / D;
        assert!((s.time.total_s - (1.0 + 10.0 * per_token)).abs() < 1e-12);
        assert!((s.imposed_s - 2.0 * 10.0 * F / D).abs() < 1e-12);
        // Three others and two places beside the newcomer: the context of two of them.
        assert_eq!(b.in_batch(2), 380.0 * 2.0 / 3.0);
        assert_eq!(b.in_batch(3), 380.0);
        // Nothing to decode on a node that decodes nothing: its start, not NaN.
        let stopped = NodeServing {
            decode_tok_s: 0.0,
            ..serving
        };
        let done = newcomer(false, 0, 0.0);
        let s0 = stationary(&stopped, b, &done, 1.5);
        assert_eq!((s0.time.total_s, s0.imposed_s), (1.5, 0.0));
        let never = stationary(&serving, b, &w, f64::INFINITY);
        assert!(never.time.total_s.is_infinite() && never.imposed_s == 0.0);
        let t = stationary_resident(&serving, without_1, (10.0, 0.0), 0.0);
        assert!((t.total_s - 10.0 * per_token).abs() < 1e-12);
        assert!(stationary_resident(&serving, b, (1.0, 0.0), f64::NAN)
            .total_s
            .is_infinite());
    }

    /// Of the hardware presets, only the phone gains nothing from batching, under both models.
    #[test]
    fn only_the_phone_drains() {
        use crate::policy::presets::HARDWARE;
        for h in HARDWARE {
            for iteration in [false, true] {
                let serving = NodeServing {
                    decode_tok_s: h.decode_tok_s,
                    batch_slowdown: h.batch_slowdown,
                    slots: 8,
                    kv_capacity_tokens: u64::MAX,
                    step: iteration
                        .then(|| StepCoefficients::of(h.prefill_tok_s, h.decode_tok_s, h.step))
                        .flatten(),
                };
                assert_eq!(
                    drains(&serving),
                    h.name == "phone",
                    "{} {iteration}",
                    h.name
                );
            }
        }
        // The cliff: a tier that gains anything from batching does not drain.
        for (b, drained) in [(0.99, false), (1.0, true), (1.2, true)] {
            let serving = NodeServing {
                decode_tok_s: D,
                batch_slowdown: b,
                slots: 8,
                kv_capacity_tokens: u64::MAX,
                step: None,
            };
            assert_eq!(drains(&serving), drained, "b = {b}");
        }
    }

    proptest::proptest! {
        /// The start the stationary forecast reads from a replay that stops once it is final
        /// ([`super::super::forecast_start`], [`Trajectory::newcomer_start`]) is the whole
        /// replay's, under both models, with the KV tight enough that a decoder's growth
        /// preempts the newcomer after it started (a replay that stopped at the first start
        /// would give that one) and a queue ahead of it.
        #[test]
        fn the_start_read_where_the_replay_stops_is_the_whole_replays(
            iteration in proptest::bool::ANY,
            slots in 1u32..6,
            cap in 200u64..3_000,
            res in proptest::collection::vec((1u64..600, 6.0f64..400.0), 0..5),
            queue in proptest::collection::vec((1u64..400, 1.0f64..300.0), 0..3),
            new in (1u64..600, 1.0f64..300.0),
        ) {
            let step = iteration.then(|| StepCoefficients::of(4000.0, D, GENERIC_SHAPE).unwrap());
            let serving = NodeServing {
                decode_tok_s: D,
                batch_slowdown: F,
                slots,
                kv_capacity_tokens: cap,
                step,
            };
            let held = &res[..res.len().min(slots as usize)];
            let residents = decoding(step.as_ref(), held);
            let waiting = |id: u64, (prompt, target): (u64, f64)| Waiting { cached: 0,
                id,
                kv: prompt + if iteration { 0 } else { target as u64 },
                prompt,
                start_s: if iteration { 0.0 } else { prompt as f64 / 4000.0 },
                prefill: true,
                stall_s: 0.0,
                tokens: if iteration { prompt as f64 } else { 0.0 },
                done: 0.0,
                target,
            };
            let queue: Vec<Waiting> =
                queue.iter().enumerate().map(|(k, &q)| waiting(100 + k as u64, q)).collect();
            let w = waiting(PROBE_ID, new);
            fn at_0<'s>(
                serving: NodeServing,
                res: &'s mut Vec<Resident>,
                queue: &'s [Waiting],
            ) -> NodeState<'s> {
                NodeState {
                    serving,
                    now_us: 0,
                    residents: res,
                    queue,
                }
            }
            let whole = super::super::forecast(at_0(serving, &mut residents.clone(), &queue), Some(w), PROBE_ID)
                .map(|st| st.start_s);
            let stopped = super::super::forecast_start(at_0(serving, &mut residents.clone(), &queue), w);
            proptest::prop_assert_eq!(stopped, whole);
            let mut traj = Trajectory::default();
            traj.compute(at_0(serving, &mut residents.clone(), &queue));
            proptest::prop_assert_eq!(traj.newcomer_start(w, 0, &mut Vec::new()), whole);
        }
    }
}
