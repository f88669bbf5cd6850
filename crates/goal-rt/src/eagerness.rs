//! Choosing, per message of 16 to 64 KiB (above the calibrated eager limit
//! where that is lower), between the eager ring and a rendezvous, from what
//! recent messages of that size took each way.
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
//! So a send above [`CHOOSE_ABOVE`] (or the calibrated limit, if lower) up
//! to [`EAGER_MAX`] to a peer on this machine, cores not shared, takes the
//! way calibration found faster at its size, unless recent messages of its
//! size class (per peer) measured the other [`MARGIN`] times faster per
//! byte, as `adapt` does for the stream and CMA (the same [`Class`]: both
//! take turns while they settle, and the slower way is tried again every
//! so often, so that a move of the vCPUs is seen; see
//! [`Eagerness::default_way`]). Each way is timed as the message's two
//! halves, by the sender:
//! - eager: its copy into the ring (sends that queue for ring space are not
//!   timed, nor copies into ring pages never written before, which fault
//!   them in: the first lap of a fresh 1 MiB ring took 60-80 us per 64 KiB
//!   record here, later ones 2-7 us), and the receiver's copy out of its
//!   last message of the class, which the receiver publishes in shared
//!   memory (`Engine::lone_copy_out_ns`); in an exchange, the copy out of
//!   the peer's last message, which this rank makes itself (see
//!   `Engine::eager_exchange_ns`);
//! - rendezvous: from its RTS to the send's end (the receiver's FIN, or its
//!   last stream push): handovers, the receiver's read and its lateness.
//!   Such a rendezvous goes by CMA where calibration found CMA faster
//!   (not by `adapt`'s choice, whose tries it would otherwise time), and
//!   in an exchange the receiver reads it whole (`proto::RTS_READ`) and
//!   its read alone, which the FIN carries, is the time: there the peer's
//!   lateness costs the eager way as much (see `Engine::rdv_sent`).
//!
//! Until 2026-12-07 the eager way was timed as the sender's copy alone: on
//! the AMD EPYC VM the receiver's copy overlapped the sender's next one,
//! and where the host made it slow the sender's copy was slow too. On an
//! Intel Xeon VM the receiver's copy out of the other core's cache was the
//! slow half (2 ranks, 64 KiB one-way: the copy in 3 us, the message 8.8,
//! by CMA 3.7), and every message of 16 to 64 KiB stayed eager: broadcasts,
//! reductions and exchanges took 1.3-2x their time by CMA, and 1.3-1.9x
//! Open MPI's.

use crate::adapt::Class;

/// The largest message sent eagerly by this choice: the 64 KiB measured (a
/// 1 MiB ring's record holds 256 KiB; eager sends from there up to 256 KiB
/// between two running ranks are not measured).
pub(crate) const EAGER_MAX: usize = 64 << 10;

/// The chooser decides sizes above this, or above the calibrated limit
/// where that is lower, whatever the limit: a calibration that found
/// 64 KiB left the slow pairs eager at 64 KiB (2 ranks, bcast of 64 KiB,
/// the vCPUs far apart: 22-29 us an iteration where Open MPI took 6.8,
/// and this chooser, taking rendezvous, 6.2-7.1).
const CHOOSE_ABOVE: usize = 16 << 10;

/// Size classes, by the power of two a message rounds up to: 8 KiB and
/// less, 16, 32 and 64 KiB.
const CLASSES: usize = 4;

/// The smallest class's bound, as a power of two.
const FIRST_CLASS_LOG2: u32 = 13;

/// The calibrated way is left only for one this many times faster per
/// byte: the two estimates are not alike (the rendezvous one holds the
/// receiver's lateness, the eager one a copy out of an earlier message),
/// and where they are close the noise of single messages would flip
/// between them.
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

/// Sends of an exchange's class that try the slower way in a row: the
/// lower rank's first meets the higher rank's send on the old way (it
/// follows only what it has heard), a mixed pair whose time is recorded
/// for neither way; the second is the pair's on the new way (as
/// `adapt::EXCHANGE_EXPLORE`).
const EXCHANGE_TRIES: u8 = 2;

/// Exchanges each way timed before the two are compared (lone messages:
/// `adapt`'s four), the rendezvous estimate starting at the fastest of
/// them. With the vCPUs far apart and a busy process beside the job, four
/// left the lower rank of a 2-rank alltoall of 64 KiB with rendezvous at
/// 0.6-1.4 ns per byte against the eager way's 0.3-0.5 in a third of the
/// runs, and eager for good (33 us an iteration; 20 ms between two
/// explorations, each moving the average a step), where the other runs
/// measured rendezvous at 0.15-0.3 and took it (9-12 us; Open MPI and
/// MPICH, by CMA, 8-12): a rendezvous exchange while the pair settles
/// meets the peer's stream-or-CMA choice settling too, and a peer that
/// the busy process keeps off its CPU.
const EXCHANGE_SETTLE: u8 = 8;

/// The chooser (see the module documentation).
///
/// In an exchange (the peer sends to this rank at the same time) the two
/// ranks take one way: the lower rank chooses, and the higher rank sends
/// by rendezvous right after an RTS of the class came from it, eagerly
/// otherwise. The lower rank's rendezvous is timed only where the
/// higher rank's message came by rendezvous too. Each choosing for itself,
/// a 2-rank allgather of 64 KiB on a host whose vCPUs were far apart (a
/// cache line in 150-250 ns) kept the eager way at 33 us an iteration
/// where rendezvous took 8.5: every rendezvous the lower rank tried met
/// the higher rank's eager copy, slow there, and measured 0.62-0.74 ns
/// per byte against the eager way's 0.41 (Open MPI: 9-11 us).
pub(crate) struct Eagerness {
    /// Sizes above this are chosen...
    above: usize,
    /// ...those above this (the calibrated eager limit) by rendezvous
    /// unless the eager way is [`MARGIN`] times faster, the others eagerly
    /// unless a rendezvous is (see [`Eagerness::default_way`]).
    limit: usize,
    /// ...up to here (0: none).
    upto: usize,
    /// Per peer: lone messages' classes, then exchanges'.
    classes: Vec<[[Class; CLASSES]; 2]>,
    /// Per lower-ranked peer and class: an RTS came from it since our last
    /// exchange send of the class, which the next one follows.
    led: Vec<[bool; CLASSES]>,
    /// Per peer and class: RTSs that came from it, and their count when our
    /// last exchange send of the class ended (see [`Eagerness::heard_rts`]).
    rts: Vec<[(u32, u32); CLASSES]>,
    /// Per peer and class: exchange rendezvous in a row not timed (mixed).
    untimed: Vec<[u8; CLASSES]>,
    /// Sends that took each way (eager, rendezvous), for the debug line.
    pub taken: [u64; 2],
}

impl Eagerness {
    /// A chooser for `peers` peers where the calibrated eager limit is
    /// `limit`, choosing sizes above [`CHOOSE_ABOVE`] (or above `limit`,
    /// if lower) up to `upto` (0: never).
    pub fn new(peers: usize, limit: usize, upto: usize) -> Eagerness {
        let above = limit.min(CHOOSE_ABOVE);
        Eagerness { above, limit, upto, classes: vec![[[Class::default(); CLASSES], [Class::settling_after(EXCHANGE_SETTLE); CLASSES]]; peers], led: vec![[false; CLASSES]; peers], rts: vec![[(0, 0); CLASSES]; peers], untimed: vec![[0; CLASSES]; peers], taken: [0; 2] }
    }

    /// The way a send of `len` bytes takes unless the other is measured
    /// [`MARGIN`] times faster: the one calibration found faster at its
    /// size (rendezvous above the calibrated limit, eagerly up to it). The
    /// way taken message after message is timed warm, the other only in
    /// its occasional tries, which meet the pair settled on the first (cold
    /// caches; in an exchange, the peer's half still on the old way): the
    /// default is favoured twice, and a wrong one stays. With the eager
    /// way the default, on a host where calibration found CMA faster from
    /// 8 KiB (an Intel Xeon, 2 ranks), allgather and alltoall of 64 KiB kept
    /// the eager way at 11-13 us an iteration where rendezvous took 6.1-6.3
    /// (Open MPI 6.6): their rendezvous tries measured 0.20-0.26 ns per
    /// byte against the eager way's 0.11-0.18, and once settled on
    /// rendezvous 0.10-0.13 against 0.24-0.27; broadcasts of 64 KiB stayed
    /// eager at 5.8-6 us (tries 0.14-0.20 ns per byte, CMA 3.6-3.8 us).
    fn default_way(&self, len: usize) -> usize {
        if len > self.limit { RDV } else { EAGER }
    }

    /// Whether the way of a send of `len` bytes is chosen here.
    pub fn covers(&self, len: usize) -> bool {
        len > self.above && len <= self.upto
    }

    /// The smallest size chosen here (`usize::MAX`: none).
    pub fn from(&self) -> usize {
        if self.upto > self.above { self.above + 1 } else { usize::MAX }
    }

    /// Whether a send of `len` bytes to `peer` goes eagerly; `exchange`:
    /// the peer sends to us at the same time, `higher`: this rank is the
    /// pair's higher.
    pub fn eager(&mut self, peer: usize, len: usize, exchange: bool, higher: bool) -> bool {
        self.eager_at(peer, len, exchange, higher, crate::localop::monotonic_ns())
    }

    /// [`Eagerness::eager`] at time `now` (ns).
    fn eager_at(&mut self, peer: usize, len: usize, exchange: bool, higher: bool, now: u64) -> bool {
        let k = class_of(len);
        let way = if exchange && higher {
            if std::mem::take(&mut self.led[peer][k]) { RDV } else { EAGER }
        } else {
            let tries = if exchange { EXCHANGE_TRIES } else { 1 };
            let default = self.default_way(len);
            self.classes[peer][exchange as usize][k].pick(default, MARGIN, tries, len, now)
        };
        self.taken[way] += 1;
        way == EAGER
    }

    /// An RTS for `len` bytes came from `peer`, the pair's `lower` rank or
    /// not.
    pub fn heard_rts(&mut self, peer: usize, len: usize, lower: bool) {
        let k = class_of(len);
        self.rts[peer][k].0 = self.rts[peer][k].0.wrapping_add(1);
        if lower {
            self.led[peer][k] = true;
        }
    }

    /// An eager send of `len` bytes to `peer` was copied into the ring in
    /// `copy_ns` (into pages written before).
    pub fn eager_copied(&mut self, peer: usize, len: usize, exchange: bool, copy_ns: u64) {
        self.took(EAGER, peer, len, exchange, copy_ns);
    }

    /// A rendezvous send of `len` bytes to `peer` ended `ns` after its RTS.
    /// In an exchange it counts where an RTS came from the peer since our
    /// previous send of the class ended (its message went by rendezvous
    /// too), or where the one before it did not count either: a peer that
    /// never follows (its sends are not half of an exchange as it sees
    /// them, a ping-pong's answer) would otherwise leave the way untimed,
    /// and the chooser, settling, on it for good.
    pub fn rendezvous_took(&mut self, peer: usize, len: usize, exchange: bool, ns: u64) {
        let k = class_of(len);
        let (heard, mark) = self.rts[peer][k];
        if exchange && heard == mark && self.untimed[peer][k] == 0 {
            self.untimed[peer][k] = 1;
            return;
        }
        self.untimed[peer][k] = 0;
        self.took(RDV, peer, len, exchange, ns);
    }

    /// A send of `len` bytes to `peer` took `ns` way `way`.
    fn took(&mut self, way: usize, peer: usize, len: usize, exchange: bool, ns: u64) {
        let k = class_of(len);
        if exchange {
            self.rts[peer][k].1 = self.rts[peer][k].0;
        }
        if len > 0 && ns > 0 {
            self.classes[peer][exchange as usize][k].add(way, ns as f64 / len as f64);
        }
    }

    /// What the chooser has measured, for the debug line at the end: per
    /// peer, situation and size class with a measurement, ns per byte each
    /// way (`-` where unmeasured); `None` when it chose nothing.
    pub fn measured(&self) -> Option<String> {
        let out = crate::adapt::describe_situations(&self.classes, ["eager", "rendezvous"], 8);
        (!out.is_empty()).then_some(out)
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
            if e.eager_at(0, len, false, false, *now) {
                eager += 1;
                e.eager_copied(0, len, false, (copy * len as f64) as u64);
            } else {
                e.rendezvous_took(0, len, false, (rdv * len as f64) as u64);
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
        let mut e = Eagerness::new(1, 16 << 10, K64);
        let mut now = 1_000_000_000;
        let n = run(&mut e, &mut now, 1000, K64, 10, [0.09, 0.05]);
        assert!(n > 990, "{n} of 1000 eagerly");
        assert!(e.measured().is_some_and(|m| m.contains("rank 0 lone 64 KiB: eager 0.050 rendezvous 0.090")), "{:?}", e.measured());
        // The slow pairs: the copy alone 27 us.
        let mut e = Eagerness::new(1, 16 << 10, K64);
        let n = run(&mut e, &mut now, 1000, K64, 10, [0.09, 0.41]);
        assert!(n < 10, "{n} of 1000 eagerly");
    }

    #[test]
    fn the_calibrated_way_is_left_only_for_one_clearly_faster() {
        // Calibrated eager up to 64 KiB: a rendezvous 1.1x faster is within
        // the margin, 1.5x is not.
        let mut now = 0;
        let n = run(&mut Eagerness::new(1, K64, K64), &mut now, 1000, K64, 10, [0.09, 0.099]);
        assert!(n > 990, "{n} of 1000 eagerly");
        let n = run(&mut Eagerness::new(1, K64, K64), &mut now, 1000, K64, 10, [0.09, 0.135]);
        assert!(n < 10, "{n} of 1000 eagerly");
        // Calibrated eager up to 16 KiB: 64 KiB goes by rendezvous unless
        // the eager way is clearly faster, alone as in an exchange.
        let n = run(&mut Eagerness::new(1, 16 << 10, K64), &mut now, 1000, K64, 10, [0.099, 0.09]);
        assert!(n < 10, "{n} of 1000 eagerly");
        let n = run(&mut Eagerness::new(1, 16 << 10, K64), &mut now, 1000, K64, 10, [0.135, 0.09]);
        assert!(n > 990, "{n} of 1000 eagerly");
        let (mut lo, mut hi) = (Eagerness::new(2, 16 << 10, K64), Eagerness::new(2, 16 << 10, K64));
        // Settled, rendezvous 0.11 ns per byte, the eager way 0.10; the
        // eager tries meet a peer still on rendezvous (mixed, 0.25).
        exchange(&mut lo, &mut hi, &mut now, 1000, K64, [0.10, 0.11, 0.25]);
        let eager = exchange(&mut lo, &mut hi, &mut now, 1000, K64, [0.10, 0.11, 0.25]);
        assert!(eager[0] < 20 && eager[1] < 20, "{eager:?} of 1000 eagerly: {:?}", lo.measured());
    }

    #[test]
    fn a_change_of_the_host_moves_the_choice_within_a_second() {
        let mut e = Eagerness::new(2, 16 << 10, K64);
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
        assert!(e.eager_at(1, K64, false, false, now) && e.eager_at(0, 32 << 10, false, false, now));
    }

    /// `n` iterations of an exchange of `len` bytes between ranks 0 (`lo`)
    /// and 1 (`hi`), 10 us apart: an eager copy takes `copy` ns per byte, a
    /// rendezvous `rdv` where the other message went by rendezvous too and
    /// `mixed` where it went eagerly. Returns the eager sends of each rank.
    fn exchange(lo: &mut Eagerness, hi: &mut Eagerness, now: &mut u64, n: usize, len: usize, [copy, rdv, mixed]: [f64; 3]) -> [usize; 2] {
        let mut eager = [0; 2];
        for _ in 0..n {
            let ways = [lo.eager_at(1, len, true, false, *now), hi.eager_at(0, len, true, true, *now)];
            // Each RTS reaches the other rank before its own send ends.
            if !ways[0] {
                hi.heard_rts(0, len, true);
            }
            if !ways[1] {
                lo.heard_rts(1, len, false);
            }
            for (me, e) in [&mut *lo, &mut *hi].into_iter().enumerate() {
                let peer = 1 - me;
                if ways[me] {
                    eager[me] += 1;
                    e.eager_copied(peer, len, true, (copy * len as f64) as u64);
                } else {
                    let per_byte = if ways[peer] { mixed } else { rdv };
                    e.rendezvous_took(peer, len, true, (per_byte * len as f64) as u64);
                }
            }
            *now += 10_000;
        }
        eager
    }

    #[test]
    fn the_higher_rank_of_an_exchange_follows_the_lower_ones_rts_once() {
        let mut e = Eagerness::new(2, 16 << 10, K64);
        assert!(e.eager_at(0, K64, true, true, 0), "eagerly until the lower rank sends an RTS");
        e.heard_rts(0, K64, true);
        assert!(!e.eager_at(0, K64, true, true, 0), "by rendezvous after its RTS");
        assert!(e.eager_at(0, K64, true, true, 0), "eagerly again: the RTS led one send");
        e.heard_rts(1, K64, false);
        assert!(e.eager_at(1, K64, true, true, 0), "a higher rank's RTS leads nothing");
    }

    #[test]
    fn an_exchange_whose_rendezvous_met_an_eager_message_is_not_timed() {
        let mut e = Eagerness::new(1, 16 << 10, K64);
        // Settled both ways, the eager way the faster.
        for _ in 0..EXCHANGE_SETTLE {
            e.heard_rts(0, K64, false);
            e.rendezvous_took(0, K64, true, 9_000);
            e.eager_copied(0, K64, true, 3_000);
        }
        let before = e.measured();
        // A rendezvous that met the peer's eager message (no RTS since our
        // last send ended) counts for nothing, however slow.
        e.rendezvous_took(0, K64, true, 90_000);
        assert_eq!(e.measured(), before);
        e.heard_rts(0, K64, false);
        e.rendezvous_took(0, K64, true, 90_000);
        assert_ne!(e.measured(), before, "one that met the peer's RTS counts");
    }

    #[test]
    fn an_exchange_settles_on_the_fastest_of_several_rendezvous() {
        // The lower rank of a pair whose first rendezvous exchanges were
        // slow (the peer off its CPU, the paths settling): 1.0 ns per byte
        // for the first four, 0.2 later, the eager way 0.45 throughout.
        let mut e = Eagerness::new(2, 16 << 10, K64);
        let (mut now, mut rdv) = (0, 0);
        let mut ways = Vec::new();
        for _ in 0..200 {
            let eager = e.eager_at(1, K64, true, false, now);
            if eager {
                e.eager_copied(1, K64, true, (0.45 * K64 as f64) as u64);
            } else {
                rdv += 1;
                e.heard_rts(1, K64, false);
                let per_byte = if rdv <= 4 { 1.0 } else { 0.2 };
                e.rendezvous_took(1, K64, true, (per_byte * K64 as f64) as u64);
            }
            ways.push(eager);
            now += 30_000;
        }
        let late_eager = ways[100..].iter().filter(|&&w| w).count();
        assert!(late_eager <= 2, "{late_eager} of the last 100 eagerly: {:?}", e.measured());
    }

    #[test]
    fn a_peer_that_never_follows_leaves_no_way_untimed() {
        // This rank sees an exchange, its peer answers each message after
        // receiving it, eagerly: no RTS ever comes back.
        let mut e = Eagerness::new(1, 16 << 10, K64);
        let mut now = 0;
        let mut rdv = 0;
        for _ in 0..1000 {
            if e.eager_at(0, K64, true, false, now) {
                e.eager_copied(0, K64, true, 6_000);
            } else {
                rdv += 1;
                e.rendezvous_took(0, K64, true, 10_000);
            }
            now += 10_000;
        }
        assert!(rdv < 20, "{rdv} of 1000 by rendezvous: {:?}", e.measured());
        assert!(e.measured().is_some_and(|m| m.contains("rank 0 exchange 64 KiB: eager 0.092 rendezvous 0.153")), "{:?}", e.measured());
    }

    #[test]
    fn a_pair_whose_ring_is_slow_exchanges_by_rendezvous_and_a_fast_pair_eagerly() {
        let (mut lo, mut hi, mut now) = (Eagerness::new(2, 16 << 10, K64), Eagerness::new(2, 16 << 10, K64), 1_000_000_000);
        // The vCPUs apart (measured: eager copy 27 us, rendezvous 8.5 us an
        // iteration, a rendezvous that meets an eager copy 40-48 us).
        exchange(&mut lo, &mut hi, &mut now, 1000, K64, [0.41, 0.13, 0.70]);
        let eager = exchange(&mut lo, &mut hi, &mut now, 1000, K64, [0.41, 0.13, 0.70]);
        assert!(eager[0] < 20 && eager[1] < 20, "{eager:?} of 1000 eagerly: {:?}", lo.measured());
        // Close: eager copy 3.3 us, rendezvous 10 us.
        let (mut lo, mut hi) = (Eagerness::new(2, 16 << 10, K64), Eagerness::new(2, 16 << 10, K64));
        exchange(&mut lo, &mut hi, &mut now, 1000, K64, [0.05, 0.15, 0.30]);
        let eager = exchange(&mut lo, &mut hi, &mut now, 1000, K64, [0.05, 0.15, 0.30]);
        assert!(eager[0] > 980 && eager[1] > 980, "{eager:?} of 1000 eagerly: {:?}", lo.measured());
    }

    #[test]
    fn off_covers_nothing() {
        assert!(!Eagerness::new(1, 16 << 10, 0).covers(1));
        assert_eq!(Eagerness::new(1, 16 << 10, 0).from(), usize::MAX);
    }

    #[test]
    fn covers_above_its_floor_up_to_its_bound() {
        // Whatever the calibrated limit (64 KiB here), from 16 KiB up.
        let e = Eagerness::new(1, K64, K64);
        assert_eq!([1, 16 << 10, (16 << 10) + 1, 32 << 10, K64, K64 + 1].map(|l| e.covers(l)), [false, false, true, true, true, false]);
        assert_eq!(e.from(), (16 << 10) + 1);
        // A lower calibrated limit (8 KiB) lowers the floor.
        let e = Eagerness::new(1, 8 << 10, K64);
        assert!(e.covers((8 << 10) + 1) && !e.covers(8 << 10));
    }
}
