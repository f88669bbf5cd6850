//! The event queue: LogGOPSim's order, (time, then insertion stamp), at a
//! cost that does not grow with the number of events waiting.
//!
//! LogGOPSim keeps one binary heap of events ordered by time and, among
//! equal times, by a stamp given when an event is first inserted (a
//! re-inserted event keeps its stamp). At a million ranks that heap holds
//! millions of events and every pop misses the cache a dozen times. Here
//! events are kept in buckets, one per distinct time, found by a hash map,
//! with a small heap of the distinct times: schedules move in lockstep, so
//! there are few distinct times at once, and a bucket is a plain vector.
//!
//! Order inside a bucket: events are appended; most arrive with a fresh
//! stamp, larger than any before, so a bucket is usually sorted already. A
//! re-inserted event carries an old stamp; the bucket is then marked and
//! sorted once when it becomes the current one. The current bucket only
//! ever receives fresh stamps (a re-insertion goes to a strictly later
//! time), so it stays sorted while it is consumed. An event inserted for a
//! time earlier than the current one (possible when a cpu sat idle) gets a
//! bucket of its own and is taken next, as the heap would.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

/// One event: an operation ready to start, or a message arriving.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Event {
    pub time: u64,
    /// Insertion stamp; bit 63 marks a message.
    pub ts: u64,
    /// The host of the operation (for a message: of the send; the
    /// message happens at the send's destination).
    pub host: u32,
    /// The operation (index in its rank: for a message, the send).
    pub op: u32,
}

/// Marks a message in [`Event::ts`].
pub(crate) const MSG: u64 = 1 << 63;

impl Event {
    #[inline]
    pub fn stamp(&self) -> u64 {
        self.ts & !MSG
    }
    #[inline]
    pub fn is_msg(&self) -> bool {
        self.ts & MSG != 0
    }
}

#[derive(Default)]
struct Bucket {
    events: Vec<Event>,
    sorted: bool,
}

/// A multiplicative hash for `u64` keys (times).
#[derive(Default)]
pub(crate) struct TimeHasher(u64);

impl Hasher for TimeHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(5) ^ b as u64).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (v ^ (v >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Events in (time, stamp) order.
#[derive(Default)]
pub(crate) struct Queue {
    /// The bucket being consumed, its time, and how far it was read.
    cur: Vec<Event>,
    cur_time: u64,
    cur_pos: usize,
    /// Other buckets by time, and their times, earliest first.
    buckets: HashMap<u64, Bucket, BuildHasherDefault<TimeHasher>>,
    times: BinaryHeap<Reverse<u64>>,
    /// An event went to a time before `cur_time`.
    earlier: bool,
    /// Emptied vectors, for reuse.
    spare: Vec<Vec<Event>>,
    len: usize,
    /// Most events waiting at once.
    pub peak: usize,
}

impl Queue {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes held by waiting events (for the memory report).
    pub fn memory(&self) -> u64 {
        let ev = std::mem::size_of::<Event>() as u64;
        let b: u64 = self.buckets.values().map(|b| b.events.capacity() as u64).sum();
        let s: u64 = self.spare.iter().map(|v| v.capacity() as u64).sum();
        (self.cur.capacity() as u64 + b + s) * ev
    }

    #[inline]
    pub fn push(&mut self, e: Event) {
        self.len += 1;
        self.peak = self.peak.max(self.len);
        if e.time == self.cur_time && self.cur_pos <= self.cur.len() && !self.cur.is_empty() {
            // Only fresh stamps come here (see the module doc).
            debug_assert!(self.cur.last().is_none_or(|l| l.stamp() < e.stamp()));
            self.cur.push(e);
            return;
        }
        if e.time < self.cur_time {
            self.earlier = true;
        }
        let spare = &mut self.spare;
        let times = &mut self.times;
        let b = self.buckets.entry(e.time).or_insert_with(|| {
            times.push(Reverse(e.time));
            Bucket { events: spare.pop().unwrap_or_default(), sorted: true }
        });
        if b.events.last().is_some_and(|l| l.stamp() > e.stamp()) {
            b.sorted = false;
        }
        b.events.push(e);
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        if self.cur_pos >= self.cur.len() || self.earlier {
            self.next_bucket()?;
        }
        let e = self.cur[self.cur_pos];
        self.cur_pos += 1;
        self.len -= 1;
        Some(e)
    }

    /// Makes the earliest bucket current, putting back what is left of the
    /// current one if an earlier time arrived.
    #[cold]
    fn next_bucket(&mut self) -> Option<()> {
        if self.earlier {
            self.earlier = false;
            if self.cur_pos < self.cur.len() {
                let rest: Vec<Event> = self.cur.drain(self.cur_pos..).collect();
                self.times.push(Reverse(self.cur_time));
                self.buckets.insert(self.cur_time, Bucket { events: rest, sorted: true });
            }
        }
        let Reverse(t) = self.times.pop()?;
        let mut b = self.buckets.remove(&t).expect("every time has a bucket");
        if !b.sorted {
            b.events.sort_unstable_by_key(|e| e.stamp());
        }
        let mut old = std::mem::replace(&mut self.cur, b.events);
        old.clear();
        // Keep a few small vectors; large ones go back to the allocator
        // (a bucket of a million events would otherwise stay held).
        if old.capacity() > 0 && old.capacity() <= 1 << 16 && self.spare.len() < 64 {
            self.spare.push(old);
        }
        self.cur_time = t;
        self.cur_pos = 0;
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, ts: u64) -> Event {
        Event { time, ts, host: 0, op: 0 }
    }

    /// The queue against a sorted list, with re-insertions (old stamps,
    /// later times) and insertions before the current time.
    #[test]
    fn the_order_is_time_then_stamp_as_a_heap_gives() {
        let mut q = Queue::default();
        let mut model: Vec<(u64, u64)> = Vec::new();
        let mut stamp = 0u64;
        let mut seed = 12345u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for i in 0..50 {
            q.push(ev(i % 7, stamp));
            model.push((i % 7, stamp));
            stamp += 1;
        }
        let mut now;
        while let Some(e) = q.pop() {
            model.sort();
            let m = model.remove(0);
            assert_eq!((e.time, e.stamp()), m);
            now = e.time;
            if stamp < 3000 {
                match rnd(4) {
                    0 => {
                        // re-insert later with its old stamp
                        let t = now + 1 + rnd(5);
                        q.push(ev(t, e.stamp()));
                        model.push((t, e.stamp()));
                    }
                    1 => {
                        let t = now.saturating_sub(rnd(3));
                        q.push(ev(t, stamp));
                        model.push((t, stamp));
                        stamp += 1;
                    }
                    _ => {
                        for _ in 0..rnd(3) {
                            let t = now + rnd(4);
                            q.push(ev(t, stamp));
                            model.push((t, stamp));
                            stamp += 1;
                        }
                    }
                }
            }
        }
        assert!(model.is_empty());
        assert_eq!(q.len(), 0);
    }
}
