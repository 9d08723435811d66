//! The one-shot forecasts: [`forecast`] of one request and [`forecast_marginal`], the delay a
//! newcomer imposes.

use super::replay::{Run, Step};
use super::*;

/// The forecast's answer for a request that started decoding at `start` (if it did) and
/// completes at `end` (`None`: never), counted from `now_us`.
#[inline]
pub(super) fn answer(now_us: i64, start: Option<i64>, end: Option<i64>) -> ServiceTime {
    let rel = |t: i64| (t.max(now_us) - now_us) as f64 / US_PER_S;
    match end {
        Some(end) => ServiceTime {
            start_s: rel(start.unwrap_or(end)),
            total_s: rel(end),
        },
        None => ServiceTime {
            start_s: start.map_or(f64::INFINITY, rel),
            total_s: f64::INFINITY,
        },
    }
}

/// When request `watch` starts decoding and completes on the node, counted from `now`, with
/// `newcomer` (if any) joining the node now — starting at once if the queue is empty and it
/// fits, else at the queue's tail — and nothing else arriving. `watch` is [`PROBE_ID`] for the
/// newcomer or the id of a resident or queued request. `None` when `watch` is not on the node
/// or the node cannot serve it (no slot ever fits it); an infinite `total_s` when a rate is 0.
///
/// The rules and arithmetic are the engine's (module docs): a slot frees on a completion or a
/// released hold, the queue then drains while its head fits, a prefill's end starts a decode
/// at [`decode_rate`] of the new batch size and every other decoder is re-rated, a completion
/// re-rates the rest. [`Trajectory`] gives the same answers, computed once per node state.
pub fn forecast(
    state: NodeState<'_>,
    newcomer: Option<Waiting>,
    watch: u64,
) -> Option<ServiceTime> {
    replay_watching(state, newcomer, watch, false)
}

/// The `start_s` of [`forecast`] of `newcomer` (whose id must be [`PROBE_ID`]) from a replay
/// that stops once that start is final: the newcomer started and nothing can preempt it any
/// more (as [`Trajectory::newcomer_start`]). The `stationary` forecast needs no more of it.
pub fn forecast_start(state: NodeState<'_>, newcomer: Waiting) -> Option<f64> {
    replay_watching(state, Some(newcomer), PROBE_ID, true).map(|st| st.start_s)
}

/// [`forecast`], stopping at `watch`'s start once it is final when `at_start`.
fn replay_watching(
    state: NodeState<'_>,
    newcomer: Option<Waiting>,
    watch: u64,
    at_start: bool,
) -> Option<ServiceTime> {
    let NodeState {
        serving,
        now_us,
        residents,
        queue,
    } = state;
    let present = residents.iter().any(|r| r.id == watch)
        || queue.iter().any(|w| w.id == watch)
        || newcomer.is_some_and(|w| w.id == watch);
    if !present {
        return None;
    }
    let mut started: Option<i64> = residents
        .iter()
        .find(|r| r.id == watch && matches!(r.phase, ResidentPhase::Decoding { .. }))
        .map(|_| now_us);
    let mut run = Run::new(residents, now_us);
    let mut waiting = queue.iter().copied().chain(newcomer);
    let mut head = waiting.next();
    loop {
        run.admit_queue(&serving, residents, &mut head, &mut waiting);
        match run.step(&serving, residents) {
            Step::Idle | Step::GaveUp => return None,
            Step::Forever => return Some(answer(now_us, started, None)),
            Step::Started(id) if id == watch => {
                started = Some(run.t);
                if at_start && run.settled(&serving, residents) {
                    return Some(answer(now_us, started, None));
                }
            }
            Step::Finished(id) if id == watch => return Some(answer(now_us, started, Some(run.t))),
            _ => {}
        }
    }
}

/// A newcomer's forecast with the delay it imposes on the requests already on the node: the
/// `marginal` forecast ([`forecast_marginal`]) and the `stationary` one
/// ([`super::stationary`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Marginal {
    /// The newcomer's own `w_i` and `T_i`.
    pub time: ServiceTime,
    /// `D_i`, seconds (at least 0): under `marginal`, `sum_r (end_r with the newcomer - end_r
    /// without)` over every request resident or queued on the node (infinite when the
    /// newcomer makes a request that would finish wait forever); under `stationary`, what its
    /// neighbours lose while it is there.
    pub imposed_s: f64,
}

/// The outcome of every request in a replay of a node to its end: `(id, end)`, `None` for a
/// request that never finishes (a rate of 0), and when the newcomer (if any) started decoding.
struct Ends {
    ends: Vec<(u64, Option<i64>)>,
    start: Option<i64>,
}

/// Replays the node to its end with `newcomer` (if any) joining the queue's tail now; `None`
/// when the replay gives up or the newcomer never takes a slot.
fn replay_to_end(
    serving: NodeServing,
    now_us: i64,
    residents: &mut Vec<Resident>,
    queue: &[Waiting],
    newcomer: Option<Waiting>,
) -> Option<Ends> {
    let mut out = Ends {
        ends: Vec::new(),
        start: None,
    };
    let mut run = Run::new(residents, now_us);
    let mut waiting = queue.iter().copied().chain(newcomer);
    let mut head = waiting.next();
    loop {
        run.admit_queue(&serving, residents, &mut head, &mut waiting);
        match run.step(&serving, residents) {
            Step::GaveUp => return None,
            Step::Idle => return head.is_none().then_some(out),
            Step::Forever => {
                out.ends.extend(residents.iter().map(|r| (r.id, None)));
                out.ends.extend(run.preempted.iter().map(|w| (w.id, None)));
                out.ends
                    .extend(head.into_iter().chain(waiting).map(|w| (w.id, None)));
                return Some(out);
            }
            Step::Started(id) if id == PROBE_ID => out.start = Some(run.t),
            Step::Finished(id) => out.ends.push((id, Some(run.t))),
            _ => {}
        }
    }
}

/// The delay term of [`Marginal`], in seconds: `with - without` summed over `without`'s
/// requests that finish (in microseconds, clamped at 0: rounding to whole microseconds can
/// make a request a microsecond early); infinite when one of them no longer finishes.
fn imposed_delay(
    without: impl Iterator<Item = (u64, i64)>,
    with: impl Fn(u64) -> Option<Option<i64>>,
) -> f64 {
    let mut sum: i64 = 0;
    for (id, end) in without {
        match with(id) {
            Some(Some(e)) => sum = sum.saturating_add(e - end),
            Some(None) => return f64::INFINITY,
            None => {}
        }
    }
    sum.max(0) as f64 / US_PER_S
}

/// [`forecast`] of `newcomer` (whose id must be [`PROBE_ID`]) with the delay it imposes on
/// the requests already on the node (`marginal`): the node is replayed to its end with and
/// without the newcomer and `D_i = sum_r (end_r with - end_r without)` over every resident and
/// queued request. A newcomer joins the queue's tail and prefills do not contend, so it can
/// only slow the requests that decode beside it (the batch slowdown) and hold a slot a queued
/// request would have taken: `D_i >= 0`. `None` when [`forecast`] is `None`.
pub(crate) fn forecast_marginal(state: NodeState<'_>, newcomer: Waiting) -> Option<Marginal> {
    let NodeState {
        serving,
        now_us,
        residents,
        queue,
    } = state;
    let mut alone = residents.clone();
    let with = replay_to_end(serving, now_us, residents, queue, Some(newcomer))?;
    let without = replay_to_end(serving, now_us, &mut alone, queue, None)?;
    let mine = with.ends.iter().find(|e| e.0 == PROBE_ID).map(|e| e.1)?;
    let time = answer(now_us, with.start, mine);
    let imposed_s = imposed_delay(
        without
            .ends
            .iter()
            .filter_map(|&(id, e)| e.map(|e| (id, e))),
        |id| with.ends.iter().find(|e| e.0 == id).map(|e| e.1),
    );
    Some(Marginal { time, imposed_s })
}
