//! [`Trajectory`]: the forecast of every request on one node, computed once per node state.

use super::forecast::answer;
use super::replay::{Run, Step};
use super::*;

/// How a [`Trajectory`] left the node's queue.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
enum Tail {
    /// The queue was never all admitted (the replay gave up, or its head never fits).
    #[default]
    Unreached,
    /// Every queued request holds a slot: the state a newcomer joins is recorded.
    Ready,
    /// The queue waits forever (a rate of 0).
    Forever,
}

/// Where [`Trajectory::resume`] stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// Once the newcomer's start is final (or it finishes).
    Start,
    /// When the newcomer finishes.
    Finish,
    /// When the node is idle.
    Idle,
}

/// Hashes request ids (already unique integers) with one multiplication instead of SipHash:
/// the index is rebuilt on every replay of a node.
#[derive(Debug, Clone, Copy, Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u64(&mut self, id: u64) {
        // An odd multiplier is a bijection: distinct ids never collide, and the low bits the
        // table indexes by spread consecutive ids.
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// [`IdHasher`]'s builder.
type IdHash = std::hash::BuildHasherDefault<IdHasher>;

/// The start and end of one request in a [`Trajectory`].
#[derive(Debug, Clone, Copy, PartialEq)]
struct Outcome {
    id: u64,
    start: Option<i64>,
    end: Option<i64>,
    forever: bool,
}

/// [`forecast`] of every request on one node and of any newcomer, computed once for the
/// node's state: the node is replayed with no newcomer to the end, recording when each
/// resident and queued request starts and completes and the state at the moment the whole
/// queue holds slots, from which a newcomer's forecast resumes. The replay past that moment
/// (the residents' outcomes) runs only when a resident's forecast or a marginal one is asked:
/// a placement asks only newcomers', and an idle node's whole replay is past it. While the
/// node's state does not change, the answers equal [`forecast`]'s at any later `now` (each
/// event of the node changes its state).
#[derive(Debug, Clone, Default)]
pub struct Trajectory {
    serving: Option<NodeServing>,
    now_us: i64,
    /// Queued requests fitted at once (before any event): the answers then depend on `now`.
    eager: bool,
    tail: Tail,
    tail_run: Run,
    tail_residents: Vec<Resident>,
    outcomes: Vec<Outcome>,
    /// Position in `outcomes` by request id.
    index: std::collections::HashMap<u64, usize, IdHash>,
    /// Requests were appended since the replay ([`Trajectory::append`]): the tail is current,
    /// the residents' outcomes are not.
    appended: bool,
    /// The time of the replay's first event (a start, finish or release): from then on the
    /// node's real state may differ from the replayed one without a node event (a request
    /// longer than its estimate keeps decoding past the end the replay gave it, and its
    /// expected remainder grows with time), so the answers no longer hold.
    first_event_us: i64,
    /// The replay gave up before the node's end ([`MAX_FORECAST_EVENTS`]): the residents'
    /// outcomes are incomplete, so no [`Trajectory::newcomer_marginal`].
    gave_up: bool,
    /// The replay stopped where the queue holds slots (and after its first event): a
    /// newcomer's forecast needs no more, the residents' outcomes do, so the rest is replayed
    /// only when one is asked ([`Trajectory::finish`]) from `rest_run` and `rest_residents`.
    paused: bool,
    rest_run: Run,
    rest_residents: Vec<Resident>,
}

impl Trajectory {
    /// Replays `state` (its residents are consumed) and keeps what the answers need.
    pub fn compute(&mut self, state: NodeState<'_>) {
        let NodeState {
            serving,
            now_us,
            residents,
            queue,
        } = state;
        self.serving = Some(serving);
        self.now_us = now_us;
        self.eager = false;
        self.appended = false;
        self.first_event_us = i64::MAX;
        self.gave_up = false;
        self.tail = Tail::Unreached;
        self.outcomes.clear();
        self.outcomes.extend(residents.iter().map(|r| Outcome {
            id: r.id,
            start: matches!(r.phase, ResidentPhase::Decoding { .. }).then_some(now_us),
            end: None,
            forever: false,
        }));
        self.outcomes.extend(queue.iter().map(|w| Outcome {
            id: w.id,
            start: None,
            end: None,
            forever: false,
        }));
        self.index.clear();
        for (k, o) in self.outcomes.iter().enumerate() {
            self.index.entry(o.id).or_insert(k);
        }
        self.paused = false;
        let mut run = Run::new(residents, now_us);
        let mut next_wait = 0usize;
        loop {
            while let Some(w) = queue.get(next_wait) {
                if !run.admit(&serving, residents, w) {
                    break;
                }
                next_wait += 1;
                self.eager |= run.events == 0;
            }
            if self.tail == Tail::Unreached && next_wait == queue.len() {
                self.tail = Tail::Ready;
                self.tail_run = run.clone();
                self.tail_residents.clone_from(residents);
                // A newcomer's forecast resumes from here: the rest waits until a resident's
                // outcome is asked, but for the replay's first event, which says how long the
                // answers hold.
                self.paused = true;
                self.rest_run = run;
                // The caller's buffer is consumed: it takes the old one in exchange.
                std::mem::swap(&mut self.rest_residents, residents);
                if self.first_event_us == i64::MAX {
                    self.advance(1);
                }
                return;
            }
            let step = run.step(&serving, residents);
            if self.record(step, run.t) {
                return;
            }
        }
    }

    /// Records one event of the replay at `t`; whether the replay is over.
    fn record(&mut self, step: Step, t: i64) -> bool {
        if matches!(
            step,
            Step::Started(_)
                | Step::Finished(_)
                | Step::Released
                | Step::Preempted(_)
                | Step::Resumed(_)
        ) {
            self.first_event_us = self.first_event_us.min(t);
        }
        match step {
            Step::Idle => true,
            Step::GaveUp => {
                self.gave_up = true;
                true
            }
            Step::Forever => {
                if self.tail == Tail::Unreached {
                    self.tail = Tail::Forever;
                }
                for o in self.outcomes.iter_mut().filter(|o| o.end.is_none()) {
                    o.forever = true;
                }
                true
            }
            Step::Started(id) => {
                if let Some(&k) = self.index.get(&id) {
                    self.outcomes[k].start = Some(t);
                }
                false
            }
            Step::Finished(id) => {
                if let Some(&k) = self.index.get(&id) {
                    self.outcomes[k].end = Some(t);
                }
                false
            }
            Step::Released | Step::Preempted(_) | Step::Resumed(_) => false,
        }
    }

    /// Replays at most `events` more events of a paused replay.
    fn advance(&mut self, events: usize) {
        let Some(serving) = self.serving else {
            self.paused = false;
            return;
        };
        let mut run = std::mem::take(&mut self.rest_run);
        let mut residents = std::mem::take(&mut self.rest_residents);
        for _ in 0..events {
            if !self.paused {
                break;
            }
            let step = run.step(&serving, &mut residents);
            if self.record(step, run.t) {
                self.paused = false;
            }
        }
        self.rest_run = run;
        self.rest_residents = residents;
    }

    /// Replays a paused replay to the node's end (the residents' outcomes).
    fn finish(&mut self) {
        self.advance(usize::MAX);
    }

    /// Whether the answers at `now_us` are [`forecast`]'s at `now_us` (the node state unchanged
    /// since [`Trajectory::compute`]): always at the time it was computed; later too, before
    /// the replay's first event, unless a queued request fitted at once (the engine starts such
    /// a request when it fits, so its queue never does; a forecast with other estimates than
    /// the engine's may). At or after the first event the replay expected something the engine
    /// may not do then (a request longer than its estimate is still decoding).
    pub fn holds_at(&self, now_us: i64) -> bool {
        now_us == self.now_us
            || (!self.eager && now_us > self.now_us && now_us < self.first_event_us)
    }

    /// Whether [`Trajectory::resident`] answers (no request was appended since the replay).
    pub fn residents_known(&self) -> bool {
        !self.appended
    }

    /// Extends the trajectory by `w` joining the node's queue at its tail at `now_us`, without
    /// replaying the queue ahead of it: the state a newcomer joins moves to the moment `w`
    /// takes its slot (the residents' outcomes are then unknown until the next
    /// [`Trajectory::compute`]). Returns `false` (the trajectory must be computed again) when
    /// `w` would take a slot at once, before any event: the answers would then depend on
    /// `now_us`.
    pub fn append(&mut self, w: Waiting, now_us: i64) -> bool {
        let Some(serving) = self.serving else {
            return false;
        };
        if self.tail != Tail::Ready {
            // A queue that never drains (or waits forever) does not drain for `w` either.
            self.appended = true;
            return true;
        }
        let mut residents = std::mem::take(&mut self.tail_residents);
        let mut run = self.tail_run.clone();
        run.t = run.t.max(now_us);
        if run.admit(&serving, &mut residents, &w) {
            // It fits where the queue ahead of it drained: at once when no event came first.
            let at_once = run.events == 0;
            if !at_once {
                self.tail_run = run;
                self.appended = true;
            }
            self.tail_residents = residents;
            return !at_once;
        }
        loop {
            match run.step(&serving, &mut residents) {
                Step::Idle | Step::GaveUp => {
                    self.tail = Tail::Unreached;
                    break;
                }
                Step::Forever => {
                    self.tail = Tail::Forever;
                    break;
                }
                _ => {}
            }
            if run.admit(&serving, &mut residents, &w) {
                self.tail_run = run;
                break;
            }
        }
        self.tail_residents = residents;
        self.appended = true;
        true
    }

    /// [`forecast`] of request `id` (a resident or queued request), counted from `now_us`
    /// (not before the time the trajectory was computed at).
    pub fn resident(&mut self, id: u64, now_us: i64) -> Option<ServiceTime> {
        if self.appended {
            return None;
        }
        self.finish();
        let o = &self.outcomes[*self.index.get(&id)?];
        let now = now_us.max(self.now_us);
        if o.forever {
            Some(answer(now, o.start, None))
        } else {
            o.end.map(|end| answer(now, o.start, Some(end)))
        }
    }

    /// [`forecast`] of `newcomer` joining the node at `now_us` (not before the time the
    /// trajectory was computed at); `scratch` is a buffer for the resumed replay.
    pub fn newcomer(
        &self,
        newcomer: Waiting,
        now_us: i64,
        scratch: &mut Vec<Resident>,
    ) -> Option<ServiceTime> {
        let now = now_us.max(self.now_us);
        self.resume(newcomer, now, scratch, Until::Finish, |_, _| {})
            .map(|(start, end)| answer(now, start, end))
    }

    /// The `start_s` of [`Trajectory::newcomer`] (when `newcomer` would start decoding,
    /// counted from `now_us`), from a replay that stops once that start is final: the newcomer
    /// started and nothing can preempt it any more ([`Run::settled`]). The `stationary`
    /// forecast needs no more of it.
    pub fn newcomer_start(
        &self,
        newcomer: Waiting,
        now_us: i64,
        scratch: &mut Vec<Resident>,
    ) -> Option<f64> {
        let now = now_us.max(self.now_us);
        self.resume(newcomer, now, scratch, Until::Start, |_, _| {})
            .map(|(start, end)| answer(now, start, end).start_s)
    }

    /// [`forecast_marginal`] of `newcomer` joining the node at `now_us` (not before the time
    /// the trajectory was computed at): the replay resumes where the queue holds slots, with
    /// the newcomer, to the node's end, and each request's end is compared with the one the
    /// trajectory recorded without it. `None` when [`Trajectory::residents_known`] is false or
    /// the replay without the newcomer gave up (compute it again), or as [`forecast_marginal`].
    pub fn newcomer_marginal(
        &mut self,
        newcomer: Waiting,
        now_us: i64,
        scratch: &mut Vec<Resident>,
    ) -> Option<Marginal> {
        if self.appended {
            return None;
        }
        self.finish();
        if self.gave_up {
            return None;
        }
        let now = now_us.max(self.now_us);
        let base = |id: u64| self.index.get(&id).and_then(|&k| self.outcomes[k].end);
        let mut delay: i64 = 0;
        let mut stuck = false;
        let (start, end) = self.resume(newcomer, now, scratch, Until::Idle, |id, end| {
            match (base(id), end) {
                (Some(b), Some(e)) => delay = delay.saturating_add(e - b),
                (Some(_), None) => stuck = true,
                (None, _) => {}
            }
        })?;
        let imposed_s = if stuck {
            f64::INFINITY
        } else {
            delay.max(0) as f64 / US_PER_S
        };
        Some(Marginal {
            time: answer(now, start, end),
            imposed_s,
        })
    }

    /// Resumes the replay where the whole queue holds slots, with `newcomer` joining at `now`,
    /// `until` the newcomer's start is final, it finishes or the node is idle, calling
    /// `other(id, end)` for every other request that finishes meanwhile (`end` `None`: one left
    /// waiting forever when a rate is 0). Returns when the newcomer started decoding and
    /// finished (`None`: never, or not replayed when stopped at its start); `None` when the
    /// queue never drained, the replay gave up or the newcomer never took a slot.
    fn resume(
        &self,
        newcomer: Waiting,
        now: i64,
        scratch: &mut Vec<Resident>,
        until: Until,
        mut other: impl FnMut(u64, Option<i64>),
    ) -> Option<(Option<i64>, Option<i64>)> {
        let serving = self.serving?;
        match self.tail {
            Tail::Unreached => return None,
            // The queue waits forever with or without the newcomer: so does it.
            Tail::Forever => return Some((None, None)),
            Tail::Ready => {}
        }
        scratch.clone_from(&self.tail_residents);
        let mut run = self.tail_run.clone();
        run.t = run.t.max(now);
        let mut head = Some(newcomer);
        let (mut start, mut end) = (None, None);
        loop {
            if let Some(w) = head {
                if run.admit(&serving, scratch, &w) {
                    head = None;
                }
            }
            match run.step(&serving, scratch) {
                Step::GaveUp => return None,
                Step::Idle => return end.is_some().then_some((start, end)),
                Step::Forever => {
                    for r in scratch.iter().filter(|r| r.id != newcomer.id) {
                        other(r.id, None);
                    }
                    for w in run.preempted.iter().filter(|w| w.id != newcomer.id) {
                        other(w.id, None);
                    }
                    return Some((start, end));
                }
                Step::Started(id) if id == newcomer.id => {
                    start = Some(run.t);
                    if until == Until::Start && run.settled(&serving, scratch) {
                        return Some((start, None));
                    }
                }
                Step::Finished(id) if id == newcomer.id => {
                    end = Some(run.t);
                    if until != Until::Idle {
                        return Some((start, end));
                    }
                }
                Step::Finished(id) => other(id, Some(run.t)),
                _ => {}
            }
        }
    }
}
