//! Choosing, per message a little above the calibrated eager limit, between
//! the eager ring and a rendezvous, from what recent messages of that size
//! took each way.
//!
//! Calibration fixes one eager limit at start-up, from one measurement of
//! the eager path's two copies against a CMA read between two cores. Just
//! above it, the answer changes with the host: on this project's 2-vCPU VM
//! the cached limit moved between 16, 32 and 64 KiB from one calibration to
//! the next, and the two paths at 64 KiB are far apart both ways. Most
//! process pairs moved a 64 KiB message eagerly two to three times faster
//! than by rendezvous (2 ranks, `goal_coll`: bcast 2.4-5.6 us against
//! 5.9-6.1, reduce 2.6 against 7.3-8.8, where the best MPI setting took
//! 6.4 and 7.8); in others every eager message took 15-40 us, the
//! sender's copy into the ring alone some 27 us, while rendezvous stayed at
//! 5-9 us (docs/measurements/eager-64k-2026-12-06). What makes a pair slow
//! was not found; it shows in the sender's own copy.
//!
//! So a send from the calibrated limit up to [`EAGER_MAX`] to a peer on this
//! machine, cores not shared, picks the way whose recent messages of its
//! size class (per peer) were faster per byte, as `adapt` does for the
//! stream and CMA (the same [`Class`]: both take turns while they settle,
//! the eager way is left only for a rendezvous [`MARGIN`] times faster, and
//! the slower way is tried again every so often, so that a move of the
//! vCPUs is seen). Each way is timed by the sender, as what it waits for:
//! - eager: its copy into the ring (sends that queue for ring space are not
//!   timed, nor copies into ring pages never written before, which fault
//!   them in: the first lap of a fresh 1 MiB ring took 60-80 us per 64 KiB
//!   record here, later ones 2-7 us);
//! - rendezvous: from its RTS to the send's end (the receiver's FIN, or its
//!   last stream push): handovers, the receiver's read and its lateness.
//!
//! The receiver's copy out of the ring is not counted: where the eager
//! way is fast it overlaps the sender's next copy, and where the host made
//! it slow (the cores apart) the sender's copy, which then takes each line
//! back from the receiver's cache, is slow too. 2 ranks, 64 KiB, the eager
//! way against rendezvous (us): one-way ping-pong 5.5 against 6.4-6.7,
//! bcast 2.3-5.2 (four runs of six under 2.8) against 5.0-6.3, reduce
//! 3.1-3.4 against 7.5-9.6, alltoall 6.4-7.5 against 7.6-10.4, while the
//! sender's copy took 2-7 us a message and rendezvous 4.5-6 from RTS to
//! FIN; counted twice for the receiver's copy, the eager way would have
//! lost the broadcast.

use crate::adapt::Class;

/// The largest message sent eagerly by this choice: the 64 KiB measured (a
/// 1 MiB ring's record holds 256 KiB; eager sends from there up to 256 KiB
/// between two running ranks are not measured).
pub(crate) const EAGER_MAX: usize = 64 << 10;

/// Size classes, by the power of two a message rounds up to: 8 KiB and
/// less, 16, 32 and 64 KiB.
const CLASSES: usize = 4;

/// The smallest class's bound, as a power of two.
const FIRST_CLASS_LOG2: u32 = 13;

/// The eager way is left only for a rendezvous this many times faster per
/// byte: the two estimates are not alike (the eager one leaves out the
/// receiver's copy, the rendezvous one holds the receiver's lateness), and
/// where they are close the noise of single messages would flip between
/// them. Eager is the default: its send ends without the receiver, which
/// on a busy machine may not be on a CPU.
const MARGIN: f64 = 1.25;

/// Index of the eager way in a [`Class`] (first while the two settle);
/// rendezvous is 1.
const EAGER: usize = 0;
const RDV: usize = 1;

/// The size class of a message of `len` bytes (see [`CLASSES`]).
fn class_of(len: usize) -> usize {
    let log2 = usize::BITS - (len.max(1) - 1).leading_zeros();
    (log2.saturating_sub(FIRST_CLASS_LOG2) as usize).min(CLASSES - 1)
}

/// The chooser (see the module documentation).
pub(crate) struct Eagerness {
    /// Sizes above the calibrated limit up to here are chosen (0: off).
    upto: usize,
    /// Per peer and size class.
    classes: Vec<[Class; CLASSES]>,
    /// Sends that took each way (eager, rendezvous), for the debug line.
    pub taken: [u64; 2],
}

impl Eagerness {
    /// A chooser for `peers` peers, choosing sizes up to `upto` (0: never).
    pub fn new(peers: usize, upto: usize) -> Eagerness {
        Eagerness { upto, classes: vec![[Class::default(); CLASSES]; peers], taken: [0; 2] }
    }

    /// Whether a send of `len` bytes, above the calibrated limit, is chosen
    /// here.
    pub fn covers(&self, len: usize) -> bool {
        len <= self.upto
    }

    /// Whether a send of `len` bytes to `peer` goes eagerly.
    pub fn eager(&mut self, peer: usize, len: usize) -> bool {
        self.eager_at(peer, len, crate::localop::monotonic_ns())
    }

    /// [`Eagerness::eager`] at time `now` (ns).
    fn eager_at(&mut self, peer: usize, len: usize, now: u64) -> bool {
        let way = self.classes[peer][class_of(len)].pick(EAGER, MARGIN, 1, len, now);
        self.taken[way] += 1;
        way == EAGER
    }

    /// An eager send of `len` bytes to `peer` was copied into the ring in
    /// `copy_ns` (into pages written before).
    pub fn eager_copied(&mut self, peer: usize, len: usize, copy_ns: u64) {
        self.took(EAGER, peer, len, copy_ns);
    }

    /// A rendezvous send of `len` bytes to `peer` ended `ns` after its RTS.
    pub fn rendezvous_took(&mut self, peer: usize, len: usize, ns: u64) {
        self.took(RDV, peer, len, ns);
    }

    /// A send of `len` bytes to `peer` took `ns` way `way`.
    fn took(&mut self, way: usize, peer: usize, len: usize, ns: u64) {
        if len > 0 && ns > 0 {
            self.classes[peer][class_of(len)].add(way, ns as f64 / len as f64);
        }
    }

    /// What the chooser has measured, for the debug line at the end: per
    /// peer and size class with a measurement, ns per byte each way (`-`
    /// where unmeasured); `None` when it chose nothing.
    pub fn measured(&self) -> Option<String> {
        let mut out = Vec::new();
        for (peer, classes) in self.classes.iter().enumerate() {
            for (k, c) in classes.iter().enumerate() {
                if let Some(d) = c.describe(["eager", "rendezvous"]) {
                    out.push(format!("rank {peer} {} KiB: {d}", 8u64 << k));
                }
            }
        }
        (!out.is_empty()).then(|| out.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K64: usize = 64 << 10;

    /// Sends `n` messages of `len` to peer 0 from `now`, `us` microseconds
    /// apart, the eager way's copy taking `copy` ns per byte and rendezvous
    /// `rdv`; returns how many went eagerly.
    fn run(e: &mut Eagerness, now: &mut u64, n: usize, len: usize, us: u64, [rdv, copy]: [f64; 2]) -> usize {
        let mut eager = 0;
        for _ in 0..n {
            if e.eager_at(0, len, *now) {
                eager += 1;
                e.eager_copied(0, len, (copy * len as f64) as u64);
            } else {
                e.rendezvous_took(0, len, (rdv * len as f64) as u64);
            }
            *now += us * 1000;
        }
        eager
    }

    #[test]
    fn classes_round_up_to_a_power_of_two() {
        assert_eq!([1, 8192, 8193, 16384, 16385, 32768, 32769, 65536, 1 << 20].map(class_of), [0, 0, 1, 1, 2, 2, 3, 3, 3]);
    }

    #[test]
    fn a_fast_ring_carries_the_messages_and_a_slow_one_does_not() {
        // Most pairs here: the copy into the ring at 0.05 ns per byte
        // (3.3 us for 64 KiB), rendezvous 0.09 (6 us).
        let mut e = Eagerness::new(1, K64);
        let mut now = 1_000_000_000;
        let n = run(&mut e, &mut now, 1000, K64, 10, [0.09, 0.05]);
        assert!(n > 990, "{n} of 1000 eagerly");
        assert!(e.measured().is_some_and(|m| m.contains("rank 0 64 KiB: eager 0.050 rendezvous 0.090")), "{:?}", e.measured());
        // The slow pairs: the copy alone 27 us.
        let mut e = Eagerness::new(1, K64);
        let n = run(&mut e, &mut now, 1000, K64, 10, [0.09, 0.41]);
        assert!(n < 10, "{n} of 1000 eagerly");
    }

    #[test]
    fn rendezvous_must_be_clearly_faster() {
        // Rendezvous 1.1x faster: within the margin.
        let mut e = Eagerness::new(1, K64);
        let mut now = 0;
        let n = run(&mut e, &mut now, 1000, K64, 10, [0.09, 0.099]);
        assert!(n > 990, "{n} of 1000 eagerly");
        // 1.5x.
        let n = run(&mut Eagerness::new(1, K64), &mut now, 1000, K64, 10, [0.09, 0.135]);
        assert!(n < 10, "{n} of 1000 eagerly");
    }

    #[test]
    fn a_change_of_the_host_moves_the_choice_within_a_second() {
        let mut e = Eagerness::new(2, K64);
        let mut now = 0;
        run(&mut e, &mut now, 1000, K64, 10, [0.09, 0.02]);
        // The ring turns slow: seen at the next exploration (20 ms).
        run(&mut e, &mut now, 10_000, K64, 10, [0.09, 0.41]);
        assert!(run(&mut e, &mut now, 100, K64, 10, [0.09, 0.41]) <= 1);
        // And fast again: each exploration (every 20 ms) moves the average
        // a step, a second is enough.
        run(&mut e, &mut now, 100_000, K64, 10, [0.09, 0.02]);
        assert!(run(&mut e, &mut now, 100, K64, 10, [0.09, 0.02]) >= 99);
        // Another peer and another class know nothing of it: they start
        // settling, the eager way first.
        run(&mut e, &mut now, 10_000, K64, 10, [0.09, 0.41]);
        assert!(e.eager_at(1, K64, now) && e.eager_at(0, 32 << 10, now));
    }

    #[test]
    fn off_covers_nothing() {
        assert!(!Eagerness::new(1, 0).covers(1));
        assert!(Eagerness::new(1, K64).covers(K64) && !Eagerness::new(1, K64).covers(K64 + 1));
    }
}
