//! The event queue: a binary min-heap ordered by `(time, seq)`, where `seq` is the insertion
//! counter. Events at the same microsecond therefore pop in the order they were scheduled,
//! which makes the simulation a deterministic function of its inputs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        (other.time, other.seq).cmp(&(self.time, self.seq))
    }
}

impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The `(time, seq)`-ordered event queue.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Scheduled>,
    seq: u64,
}

impl EventQueue {
    /// An empty queue with room for `capacity` events.
    pub fn with_capacity(capacity: usize) -> EventQueue {
        EventQueue {
            heap: BinaryHeap::with_capacity(capacity),
            seq: 0,
        }
    }

    /// Schedules `event` at `time`.
    #[inline]
    pub fn push(&mut self, time: i64, event: Event) {
        let late = if matches!(event, Event::KvFull { .. }) {
            LATE
        } else {
            0
        };
        self.heap.push(Scheduled {
            time,
            seq: self.seq | late,
            event,
        });
        self.seq += 1;
    }

    /// The earliest event (smallest `(time, seq)`).
    #[inline]
    pub fn pop(&mut self) -> Option<Scheduled> {
        self.heap.pop()
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion() {
        let mut q = EventQueue::with_capacity(4);
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
}
