//! How long a waiting thread polls before it sleeps: fixed
//! (`GOAL_SPIN_US`) or adapted to how soon recent waits ended after a sleep
//! ([`Spin`]).

use super::*;

/// The longest an adaptive [`Spin`] polls before sleeping.
pub(super) const SPIN_MAX: Duration = Duration::from_millis(1);

/// How long a Wait polls before it sleeps: `GOAL_SPIN_US`, or adapted to
/// the waits this process has seen.
///
/// A Wait that sleeps pays a wake-up when its execution finishes: on this
/// VM 10-100 us, against nothing for one that still polls. Waits that
/// reliably end a little after the fixed 50 us (a rank that waits in a
/// barrier for a root still busy with a 4 MiB gather, 300-400 us) paid it
/// every time: 2 ranks, gather 4 MiB took 500-530 us with a 50 us spin and
/// 267-333 us with 1 ms. So the spin follows the waits' quiet spells: an
/// average of recent ones (weight 1/8 for the newest), where a spell
/// longer than [`SPIN_MAX`] counts as zero (sleeping was right for it,
/// and the average falls back to `GOAL_SPIN_US`); the spin is twice that
/// average, between `GOAL_SPIN_US` and [`SPIN_MAX`]. A loop of short
/// Waits keeps the average near zero without updating it (no store on
/// that path).
///
/// A quiet spell runs from a Wait's entry, or from news inside it, to the
/// next news or the Wait's end ([`Spin::note_spell`], [`Spin::record`]).
/// A Wait for a whole chain of transfers waits in spells: one schedule of
/// 4 MiB ping-pongs (2 ranks, `thread` mode) waited some 50 us between its
/// send's last byte and the reply's first, and each time slept, while the
/// Waits themselves, 1-2 ms for 8-10 round trips, counted as zero: one-way
/// 104-107 us, 75-76 with a 200 us spin. Only spells a spin can matter for
/// are noted inside a Wait: those that slept or lasted a quarter of the
/// least spin, not the many short gaps between a transfer's pieces. With
/// more ranks than cores the spell is the whole Wait (see `wait_until`).
///
/// With more ranks than cores too: there a poller calls `sched_yield`
/// between its polls (see `progress::yields`), so it holds no CPU another
/// thread wants, and a sleeper's wake-up costs as much. The spin was
/// fixed at 50 us there, from before Waits yielded. 4 ranks on 2 CPUs,
/// adaptive / fixed over alternated pairs of runs of one point: 1 MiB
/// bcast 0.91, reduce 0.95, 8-byte bcast 0.94; every collective at 8 B,
/// 64 KiB and 1 MiB (`bench/ab.py`, 6 rounds): median 0.98, no point
/// beyond its spread (docs/measurements/spin-shared-2026-11-29).
pub(crate) struct Spin {
    /// `GOAL_SPIN_US`, the least spin, in `ticks`.
    pub(super) min: u64,
    /// [`SPIN_MAX`] in `ticks`; `min` when not adaptive.
    pub(super) max: u64,
    /// The average wait, in `ticks`.
    pub(super) avg: std::sync::atomic::AtomicU64,
}

impl Spin {
    pub(crate) fn new(min: Duration, adaptive: bool) -> Spin {
        let min = crate::ticks::of(min);
        let max = if adaptive { crate::ticks::of(SPIN_MAX).max(min) } else { min };
        Spin { min, max, avg: Default::default() }
    }

    /// How long to poll before sleeping, in `ticks`.
    #[inline]
    pub(super) fn limit(&self) -> u64 {
        if self.max == self.min {
            return self.min;
        }
        self.avg.load(Ordering::Relaxed).saturating_mul(2).clamp(self.min, self.max)
    }

    /// Notes a quiet spell inside a Wait, `ticks` long, that news ended
    /// (`slept`: the thread slept in it), if a spin can matter for it: it
    /// slept, or lasted a quarter of the least spin.
    #[inline]
    pub(super) fn note_spell(&self, ticks: u64, slept: bool) {
        if slept || ticks >= self.min / 4 {
            self.record(ticks, slept);
        }
    }

    /// Notes a Wait's last quiet spell, `ticks` long (from its entry or its
    /// last news to its last clock reading; `slept`: it slept in it).
    #[inline]
    pub(super) fn record(&self, waited: u64, slept: bool) {
        if self.max == self.min {
            return;
        }
        let avg = self.avg.load(Ordering::Relaxed);
        // Short waits of a loop that never slept: nothing to learn.
        if avg == 0 && !slept && waited < self.min / 4 {
            return;
        }
        let sample = if waited > self.max { 0 } else { waited };
        // avg += (sample - avg) / 8, in unsigned steps.
        let next = if sample >= avg { avg + (sample - avg) / 8 } else { avg - (avg - sample).div_ceil(8) };
        // Far below the least spin the average has no effect: let it be
        // zero, which the check above keeps from further stores.
        let next = if next < self.min / 16 { 0 } else { next };
        if next != avg {
            self.avg.store(next, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ticks;

    pub(super) fn us(n: u64) -> u64 {
        ticks::of(Duration::from_micros(n))
    }

    #[test]
    pub(super) fn the_spin_grows_to_catch_waits_that_end_soon_after_a_sleep() {
        let spin = Spin::new(Duration::from_micros(50), true);
        assert_eq!(spin.limit(), us(50));
        // Waits of 400 us, each of which slept: within a few dozen the
        // spin covers them, and stays at most SPIN_MAX.
        let waits = (1..=40).find(|_| {
            spin.record(us(400), true);
            spin.limit() >= us(400)
        });
        assert!(waits.is_some(), "the spin stayed at {:?} after 40 waits of 400 us", ticks::duration(spin.limit()));
        for _ in 0..100 {
            spin.record(us(900), false);
        }
        assert!(spin.limit() <= us(1000) + 1, "the spin passed SPIN_MAX: {:?}", ticks::duration(spin.limit()));
        // Waits far longer than SPIN_MAX: sleeping is right, the spin falls
        // back to GOAL_SPIN_US, and the average to zero.
        for _ in 0..200 {
            spin.record(us(20_000), true);
        }
        assert_eq!(spin.limit(), us(50));
        assert_eq!(spin.avg.load(Ordering::Relaxed), 0);
    }

    #[test]
    pub(super) fn short_waits_leave_the_spin_alone() {
        let spin = Spin::new(Duration::from_micros(50), true);
        for _ in 0..1000 {
            spin.record(us(1), false);
        }
        assert_eq!(spin.avg.load(Ordering::Relaxed), 0);
        assert_eq!(spin.limit(), us(50));
        // After longer waits, short ones bring it back down.
        for _ in 0..50 {
            spin.record(us(300), true);
        }
        assert!(spin.limit() > us(300));
        for _ in 0..200 {
            spin.record(us(1), false);
        }
        assert_eq!(spin.limit(), us(50));
    }

    #[test]
    pub(super) fn quiet_spells_inside_long_waits_grow_the_spin() {
        let spin = Spin::new(Duration::from_micros(50), true);
        // Waits of 1.5 ms for a chain of 8 round trips, each with a 60 us
        // spell between two transfers that slept (ended 10 us after a
        // 50 us spin) and many short gaps between pieces: the spin comes
        // to cover the spells, though every Wait ends right after news.
        for _ in 0..10 {
            for _ in 0..8 {
                for _ in 0..30 {
                    spin.note_spell(us(2), false);
                }
                spin.note_spell(us(60), true);
            }
            spin.record(0, false);
        }
        assert!(spin.limit() >= us(80), "the spin stayed at {:?}", ticks::duration(spin.limit()));
        // Once the spin covers them the spells no longer sleep, and keep it.
        for _ in 0..50 {
            for _ in 0..8 {
                spin.note_spell(us(60), false);
            }
            spin.record(0, false);
        }
        assert!(spin.limit() >= us(80), "the spin fell to {:?}", ticks::duration(spin.limit()));
        // The gaps between pieces alone never move it.
        let fresh = Spin::new(Duration::from_micros(50), true);
        for _ in 0..1000 {
            fresh.note_spell(us(12), false);
        }
        assert_eq!(fresh.avg.load(Ordering::Relaxed), 0);
    }

    #[test]
    pub(super) fn a_fixed_spin_does_not_adapt() {
        let spin = Spin::new(Duration::from_micros(50), false);
        for _ in 0..100 {
            spin.record(us(400), true);
        }
        assert_eq!(spin.limit(), us(50));
    }
}
