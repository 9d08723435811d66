//! The event queue: a binary min-heap ordered by `(time, seq)`, where `seq` is the insertion
//! counter. Events at the same microsecond therefore pop in the order they were scheduled,
//! which makes the simulation a deterministic function of its inputs.
//!
//! A request has at most one pending [`Event::PhaseEnd`]: scheduling a newer one replaces
//! the pending entry in place (its key becomes the newer `(time, seq)`), as the engine
//! re-rates a node's decoders at every change and would otherwise leave most of the queue
//! stale. The order of what pops is the same as if the superseded entry stayed in the queue
//! and were skipped when popped (it is stale by its epoch), and [`EventQueue::push`] says
//! when it superseded one so that the run counts it as that stale pop.

use std::cmp::Ordering;

/// What happens at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A node's up-session starts.
    NodeUp(u32),
    /// A node's up-session ends.
    NodeDown(u32),
    /// A request arrives.
    Arrival(u32),
    /// The current phase (prefill, decode, planned move) of a request ends, if the request's
    /// epoch still equals the one given (stale events are skipped).
    PhaseEnd {
        /// Request index.
        req: u32,
        /// Request epoch when scheduled.
        epoch: u32,
    },
    /// An overlapped planned move reaches its cutover, if still pending with this move epoch.
    Cutover {
        /// Request index.
        req: u32,
        /// Move epoch when scheduled.
        epoch: u32,
    },
    /// Migration check of every running request.
    Tick,
    /// The check of one request just before its node's known end (the oracle's move, or the
    /// drain before an announced end), if the request's check epoch still equals the one given.
    EndCheck {
        /// Request index.
        req: u32,
        /// Check epoch when scheduled.
        epoch: u32,
    },
    /// Iteration model: a node's decoders need a KV block and none is free, if the node's KV
    /// epoch still equals the one given. Handled after every other event of the same
    /// microsecond (a completion then frees blocks first).
    KvFull {
        /// Node index.
        node: u32,
        /// The node's KV epoch when scheduled.
        epoch: u32,
    },
    /// A copy of a conversation's idle prefix state reaches its destination.
    StateCopy {
        /// The conversation's key.
        conversation: u64,
        /// The copy's number ([`Event::StateCopy`] of an older copy is stale).
        copy: u32,
    },
}

/// Added to the insertion counter of [`Event::KvFull`] so that it sorts after every other
/// event of its microsecond.
const LATE: u64 = 1 << 63;

/// A scheduled event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheduled {
    /// Time on the trace clock, us.
    pub time: i64,
    /// Insertion counter (tie-break).
    pub seq: u64,
    /// The event.
    pub event: Event,
}

impl Scheduled {
    /// The heap order: `(time, seq)`.
    #[inline]
    fn key(&self) -> (i64, u64) {
        (self.time, self.seq)
    }

    /// The request whose phase end this is, if it is one.
    #[inline]
    fn phase_req(&self) -> Option<usize> {
        match self.event {
            Event::PhaseEnd { req, .. } => Some(req as usize),
            _ => None,
        }
    }
}

impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// No pending phase end ([`EventQueue`]'s position index).
const ABSENT: u32 = u32::MAX;

/// The `(time, seq)`-ordered event queue (module docs).
#[derive(Debug, Default)]
pub struct EventQueue {
    /// A binary min-heap by [`Scheduled::key`].
    heap: Vec<Scheduled>,
    seq: u64,
    /// Each request's pending phase end: its position in `heap`, or [`ABSENT`].
    phase_at: Vec<u32>,
}

impl EventQueue {
    /// An empty queue with room for `capacity` events, for requests `0..requests`.
    pub fn with_capacity(capacity: usize, requests: usize) -> EventQueue {
        EventQueue {
            heap: Vec::with_capacity(capacity),
            seq: 0,
            phase_at: vec![ABSENT; requests],
        }
    }

    /// Schedules `event` at `time`. A [`Event::PhaseEnd`] replaces its request's pending one,
    /// if any: then the answer is true (one superseded entry).
    #[inline]
    pub fn push(&mut self, time: i64, event: Event) -> bool {
        let late = if matches!(event, Event::KvFull { .. }) {
            LATE
        } else {
            0
        };
        let entry = Scheduled {
            time,
            seq: self.seq | late,
            event,
        };
        self.seq += 1;
        let pending = match event {
            Event::PhaseEnd { req, .. } => self.phase_slot(req as usize),
            _ => None,
        };
        match pending {
            Some(at) => {
                // The newer key is larger in `seq`: it moves up only if its time is earlier.
                if entry.key() < self.heap[at].key() {
                    self.sift_up(at, entry);
                } else {
                    self.sift_down(at, entry);
                }
                true
            }
            None => {
                let at = self.heap.len();
                self.heap.push(entry);
                self.sift_up(at, entry);
                false
            }
        }
    }

    /// The earliest event (smallest `(time, seq)`).
    #[inline]
    pub fn pop(&mut self) -> Option<Scheduled> {
        let last = self.heap.pop()?;
        let top = if self.heap.is_empty() {
            last
        } else {
            let top = self.heap[0];
            self.sift_down(0, last);
            top
        };
        if let Some(r) = top.phase_req() {
            self.phase_at[r] = ABSENT;
        }
        Some(top)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Where request `r`'s pending phase end sits, if it has one (the index grows to `r`).
    #[inline]
    fn phase_slot(&mut self, r: usize) -> Option<usize> {
        if r >= self.phase_at.len() {
            self.phase_at.resize(r + 1, ABSENT);
        }
        match self.phase_at[r] {
            ABSENT => None,
            at => Some(at as usize),
        }
    }

    /// Writes `entry` at `at` and records where it went.
    #[inline]
    fn place(&mut self, at: usize, entry: Scheduled) {
        if let Some(r) = entry.phase_req() {
            if r >= self.phase_at.len() {
                self.phase_at.resize(r + 1, ABSENT);
            }
            self.phase_at[r] = at as u32;
        }
        self.heap[at] = entry;
    }

    /// Puts `entry` in the hole at `at`, moving it towards the root past larger parents.
    #[inline]
    fn sift_up(&mut self, mut at: usize, entry: Scheduled) {
        while at > 0 {
            let parent = (at - 1) / 2;
            if self.heap[parent].key() <= entry.key() {
                break;
            }
            let moved = self.heap[parent];
            self.place(at, moved);
            at = parent;
        }
        self.place(at, entry);
    }

    /// Puts `entry` in the hole at `at`, moving it towards the leaves past smaller children.
    #[inline]
    fn sift_down(&mut self, mut at: usize, entry: Scheduled) {
        let n = self.heap.len();
        loop {
            let left = 2 * at + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right].key() < self.heap[left].key() {
                right
            } else {
                left
            };
            if entry.key() <= self.heap[child].key() {
                break;
            }
            let moved = self.heap[child];
            self.place(at, moved);
            at = child;
        }
        self.place(at, entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion() {
        let mut q = EventQueue::with_capacity(4, 0);
        q.push(5, Event::Tick);
        q.push(3, Event::Arrival(1));
        q.push(5, Event::Arrival(2));
        q.push(3, Event::Arrival(3));
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|s| s.event)).collect();
        assert_eq!(
            order,
            vec![
                Event::Arrival(1),
                Event::Arrival(3),
                Event::Tick,
                Event::Arrival(2)
            ]
        );
    }

    /// What the queue replaces: a plain heap that keeps every scheduled entry and a request's
    /// epoch, bumped at each new phase end, by which a superseded entry is skipped.
    #[derive(Default)]
    struct Lazy {
        heap: std::collections::BinaryHeap<std::cmp::Reverse<(i64, u64, u32, u32)>>,
        seq: u64,
        epochs: Vec<u32>,
        /// Superseded entries skipped so far.
        stale: u32,
    }

    impl Lazy {
        /// The next live entry (`req == u32::MAX`: an arrival of request `x`), skipping
        /// superseded phase ends.
        fn pop_live(&mut self) -> Option<(i64, u64, Event)> {
            while let Some(std::cmp::Reverse((t, seq, r, x))) = self.heap.pop() {
                if r == u32::MAX {
                    return Some((t, seq, Event::Arrival(x)));
                }
                if self.epochs[r as usize] != x {
                    self.stale += 1;
                    continue;
                }
                return Some((t, seq, Event::PhaseEnd { req: r, epoch: x }));
            }
            None
        }
    }

    proptest::proptest! {
        /// Phase ends rescheduled in place pop as the lazy heap's live entries do, in the same
        /// order with the same keys, and each superseded entry is reported once (the lazy
        /// heap's stale pops).
        #[test]
        fn replacing_a_phase_end_pops_as_skipping_the_stale_one(
            ops in proptest::collection::vec((0u8..4, 0u32..6, 0i64..40), 1..200),
        ) {
            let mut q = EventQueue::with_capacity(8, 2);
            let mut lazy = Lazy { epochs: vec![0; 6], ..Lazy::default() };
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            let mut superseded = 0u32;
            let mut now = 0i64;
            for (op, req, dt) in ops {
                let time = now + dt;
                match op {
                    // A new phase end (the epoch bumped, as the engine does before each).
                    0 | 1 => {
                        let r = req as usize;
                        lazy.epochs[r] += 1;
                        let epoch = lazy.epochs[r];
                        if q.push(time, Event::PhaseEnd { req, epoch }) {
                            superseded += 1;
                        }
                        lazy.heap.push(std::cmp::Reverse((time, lazy.seq, req, epoch)));
                        lazy.seq += 1;
                    }
                    // Another event.
                    2 => {
                        q.push(time, Event::Arrival(req));
                        lazy.heap.push(std::cmp::Reverse((time, lazy.seq, u32::MAX, req)));
                        lazy.seq += 1;
                    }
                    // Pop one live event from each.
                    _ => {
                        if let Some(e) = q.pop() {
                            now = e.time;
                            ours.push((e.time, e.seq, e.event));
                        }
                        theirs.extend(lazy.pop_live());
                    }
                }
            }
            while let Some(e) = q.pop() {
                ours.push((e.time, e.seq, e.event));
            }
            theirs.extend(std::iter::from_fn(|| lazy.pop_live()));
            proptest::prop_assert_eq!(ours, theirs);
            proptest::prop_assert_eq!(superseded, lazy.stale);
            proptest::prop_assert!(q.is_empty());
        }
    }
}
