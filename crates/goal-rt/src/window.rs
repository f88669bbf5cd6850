//! Choosing, per long lone message, the window of the stream it goes
//! through, from what recent messages of that size took each way.
//!
//! A message longer than a pair's stream (1 MiB by default) with nothing
//! going the other way has two windows to go through (see goal-transport's
//! `shm/stream.rs` and `Engine::stream_window`): twice the stream (the
//! *long* window, where the sender runs furthest ahead of its receiver) or
//! the stream's first 256 KiB (the *narrow* one, which bursts of shorter
//! messages use). Which is faster depends on where the host put the two
//! vCPUs, and the host moves them every few minutes here. Sharing a cache,
//! the narrow window's pages stay in the two cores' caches while the
//! buffers stream past, where the long window's do not: 2 ranks, one
//! 16 MiB message one-way 584-604 us narrow against 801-899 long (Open MPI
//! 635-710), windows of 4 MiB sends 21-22 GB/s against 11.5, bcast of
//! 16 MiB 382 us against 966. Apart, every line crosses between the caches
//! anyway, and the sender running further ahead wins: bcast of 16 MiB
//! 450-538 us long against 481-850 narrow, windows of 4 MiB 24.8-25.2 GB/s
//! against 22.6-23.0 (docs/measurements/narrow-long-2026-12-05/).
//!
//! So the receiver, which names the window in its `CTS`, times each such
//! message from when it is at the front of its sender's stream until its
//! last byte is copied out, and keeps an average per peer and size class
//! of each window's time per byte, as `adapt` does for the stream and CMA
//! (the same [`Class`]: both windows take turns while they settle, the
//! long one is left only for a narrow one [`MARGIN`] times faster, and the
//! slower one is tried again every so often, so that a move of the vCPUs
//! is seen). A receive combined with its reduction as it comes keeps the
//! long window unmeasured: through the narrow one the 2-rank reduce of
//! 4 and 16 MiB took 1.2-1.34x as long, the vCPUs close.

use crate::adapt::{class_of, describe_classes, Class, CLASSES};

/// The long window is left only for a narrow one this many times faster
/// per byte: where the two are close (4 MiB messages, the vCPUs close:
/// narrow 1.04-1.14x slower) single measurements' noise would otherwise
/// flip between them, and a wrong narrow choice costs more (up to 1.7x)
/// than a wrong long one saves.
const MARGIN: f64 = 1.15;

/// The long window's index in a [`Class`]; the narrow one is 1.
const LONG: usize = 0;

/// The chooser (see the module documentation).
pub(crate) struct Windows {
    /// Per peer and size class.
    classes: Vec<[Class; CLASSES]>,
    /// Messages that took each window (long, narrow), for the debug line.
    pub taken: [u64; 2],
}

impl Windows {
    /// A chooser for `peers` peers.
    pub fn new(peers: usize) -> Windows {
        Windows { classes: vec![[Class::default(); CLASSES]; peers], taken: [0; 2] }
    }

    /// Whether a lone message of `len` bytes from `peer` goes through the
    /// narrow window (else the long one).
    pub fn narrow(&mut self, peer: usize, len: usize) -> bool {
        self.narrow_at(peer, len, crate::localop::monotonic_ns())
    }

    /// [`Windows::narrow`] at time `now` (ns).
    fn narrow_at(&mut self, peer: usize, len: usize, now: u64) -> bool {
        let way = self.classes[peer][class_of(len)].pick(LONG, MARGIN, 1, len, now);
        self.taken[way] += 1;
        way != LONG
    }

    /// A lone message of `len` bytes from `peer` took `ns` through the
    /// narrow window or the long one.
    pub fn record(&mut self, peer: usize, len: usize, narrow: bool, ns: u64) {
        if len > 0 && ns > 0 {
            self.classes[peer][class_of(len)].add(usize::from(narrow), ns as f64 / len as f64);
        }
    }

    /// What the chooser has measured, for the debug line at the end: per
    /// peer and size class with a measurement, ns per byte of each window
    /// (`-` where unmeasured).
    pub fn measured(&self) -> String {
        describe_classes(&self.classes, ["long", "narrow"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB16: usize = 16 << 20;

    /// Feeds `n` messages of `len` from peer 0 at `now`, `ms` milliseconds
    /// apart, each taking `long` or `narrow` ns per byte by its window;
    /// returns how many went narrow.
    fn run(w: &mut Windows, now: &mut u64, n: usize, len: usize, ms: u64, [long, narrow]: [f64; 2]) -> usize {
        let mut narrows = 0;
        for _ in 0..n {
            let nw = w.narrow_at(0, len, *now);
            narrows += usize::from(nw);
            let ns = if nw { narrow } else { long } * len as f64;
            w.record(0, len, nw, ns as u64);
            *now += ms * 1_000_000;
        }
        narrows
    }

    #[test]
    fn both_windows_settle_in_turn_then_the_faster_one_carries_the_messages() {
        let mut w = Windows::new(2);
        let mut now = 1_000_000_000;
        // Settling: long first, then they alternate.
        let first: Vec<bool> = (0..8)
            .map(|_| {
                let nw = w.narrow_at(0, MIB16, now);
                w.record(0, MIB16, nw, (if nw { 0.036 } else { 0.052 } * MIB16 as f64) as u64);
                nw
            })
            .collect();
        assert_eq!(first, [false, true, false, true, false, true, false, true]);
        // The vCPUs close: narrow 0.036 ns per byte against 0.052.
        let n = run(&mut w, &mut now, 100, MIB16, 1, [0.052, 0.036]);
        assert!(n >= 95, "the narrow window carries close to every message: {n} of 100");
        assert!(n < 100, "and the long one is tried again now and then");
        assert!(w.measured().contains("rank 0 16384 KiB: long 0.052 narrow 0.036"), "{}", w.measured());
        // Another peer and another class know nothing of it.
        assert!(!w.narrow_at(1, MIB16, now) && !w.narrow_at(0, 4 << 20, now));
    }

    #[test]
    fn the_long_window_stays_unless_the_narrow_one_is_clearly_faster() {
        let mut w = Windows::new(1);
        let mut now = 0;
        // Narrow 1.1x faster: within the margin.
        let n = run(&mut w, &mut now, 200, MIB16, 1, [0.044, 0.040]);
        assert!(n <= 4 + 10, "{n} narrow of 200 (4 to settle, a few to explore)");
        // Narrow slower (the vCPUs apart).
        let mut w = Windows::new(1);
        let n = run(&mut w, &mut now, 200, MIB16, 1, [0.030, 0.045]);
        assert!(n <= 4 + 10, "{n} narrow of 200");
    }

    #[test]
    fn a_move_of_the_vcpus_moves_the_choice_within_a_second() {
        let mut w = Windows::new(1);
        let mut now = 0;
        // Apart: the long window wins.
        run(&mut w, &mut now, 300, MIB16, 1, [0.030, 0.045]);
        // Close: narrow is now 1.5x faster; seen through the explorations.
        let n = run(&mut w, &mut now, 1000, MIB16, 1, [0.052, 0.034]);
        let tail = run(&mut w, &mut now, 100, MIB16, 1, [0.052, 0.034]);
        assert!(n > 500 && tail >= 95, "after the move {n} of 1000 narrow, then {tail} of 100");
        // And back apart.
        run(&mut w, &mut now, 1000, MIB16, 1, [0.030, 0.045]);
        let tail = run(&mut w, &mut now, 100, MIB16, 1, [0.030, 0.045]);
        assert!(tail <= 5, "back apart: {tail} of 100 narrow");
    }
}
