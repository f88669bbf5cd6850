//! Whether the application computes between its calls: the marks a Run
//! and a Wait leave ([`AppMark`]), from which the helper learns when to
//! stand down (the application drives progress itself) and when a gap
//! between calls is computation worth the helper's taking messages in.

use super::*;

/// The application's polling mark, which lingers after Wait returns.
///
/// Marking the doorbell as polled spares peers the futex wake-up of our
/// sleeping helper while an application thread polls anyway. Marking and
/// unmarking on every call, though, moves the doorbell's cache line between
/// us and every peer that sends to us (measured: a third of an 8-byte
/// exchange on a VM whose cores pass a line in 160 ns). So an application
/// thread sets the mark when it enters Wait and leaves it set while nothing
/// else is in flight: messages that arrive then belong to executions not yet
/// started, and wait for their Run in any case. The mark is lifted
/// * by Run, before the execution starts, unless the last Run was under
///   30 us ago (see [`AppMark::at_run`]): the application computes between
///   Run and Wait, and arriving data must wake the helper (a mark left set
///   stopped all background progress for 200 us after every call, most of
///   a short computation: 0-20 % overlap measured);
/// * when Wait returns while other executions are still running;
/// * by an application thread that goes to sleep;
/// * by the helper, after [`MARK_LINGER`] without a Run or Wait (a safety
///   net for executions started by another thread, and for a loop of Runs
///   that turns into a computation; the helper looks less often, up to
///   [`MAX_LINGER`], while the calls keep coming).
///
/// A Run+Wait loop thus moves the line twice per iteration (lift, set),
/// where polling marks on every poll moved it far more often.
pub(crate) struct AppMark {
    /// Whether the mark is set (counted once in the doorbell's `polling`).
    pub(super) set: std::sync::atomic::AtomicBool,
    /// Bumped by every Run and Wait: the helper lifts the mark only when
    /// this did not move during a whole linger period.
    pub(super) epoch: std::sync::atomic::AtomicU64,
    /// A Run found that the application computes between its calls (see
    /// `after_gap`): the helper moves to the CPU the ranks' helpers share
    /// (see `Placement`), as when it lifts the mark itself.
    pub(super) computing: std::sync::atomic::AtomicBool,
    /// The time of the last Run, in `ticks`.
    pub(super) last_run: std::sync::atomic::AtomicU64,
    /// The last clock reading of the last Wait that did not finish its
    /// execution within a first batch of polls (at most a batch, or a
    /// wake-up, before it returned; later if that batch made a long copy,
    /// whose end the engine notes), in `ticks`: a Run soon after it follows
    /// a Wait, not a computation. (A shorter Wait reads no clock: see
    /// `short_wait`.)
    pub(super) last_wait: std::sync::atomic::AtomicU64,
    /// The helper sleeps on the doorbell alone, deaf to the network and the
    /// kernel ring (it does while an application thread waits, since that
    /// thread polls them itself): the next Run must ring it.
    pub(super) helper_deaf: std::sync::atomic::AtomicBool,
    /// The helper sleeps with a timeout longer than
    /// [`super::helper::MAX_LINGER`] (nothing was in flight, or the mark was
    /// not set, when it went to sleep): a Run that lifts the mark without
    /// the fence rings it (see [`AppMark::after_gap`]).
    pub(super) helper_long_sleep: std::sync::atomic::AtomicBool,
    /// Bit `id % 64`: the application computed between the last Run of
    /// schedule `id` and its Wait (see [`AppMark::at_run`]).
    pub(super) computes: std::sync::atomic::AtomicU64,
    /// One more than the id of the schedule whose execution of the latest
    /// Run was waited for within Wait's first batch of polls, which reads
    /// no clock; zero if none since that Run. The next Run, which reads the
    /// clock anyway, clears the schedule's bit in `computes` if it comes
    /// less than [`TIGHT_LOOP`] after that Run.
    pub(super) short_wait: std::sync::atomic::AtomicU32,
    /// [`TIGHT_LOOP`] and [`DEAF_RING_GAP`] in `ticks`, converted once:
    /// the floating-point conversion cost every Run and Wait 33
    /// instructions each (callgrind).
    pub(super) tight_loop: u64,
    pub(super) deaf_ring_gap: u64,
    /// Runs that found the application computing since its last call
    /// (see [`AppMark::after_gap`]), for `GOAL_DEBUG`'s summary.
    pub(super) computed_runs: std::sync::atomic::AtomicU64,
    /// The CPU time of the thread that ended the last long Wait, and of
    /// the one that ended the last Run of a long schedule (see
    /// [`CpuStamp`]).
    pub(super) wait_cpu: CpuStamp,
    pub(super) run_cpu: CpuStamp,
    /// Half of `tight_loop`, in nanoseconds of CPU time: a thread that ran
    /// less than this while `tight_loop` went by was mostly off its CPU.
    pub(super) tight_cpu_ns: u64,
}

/// A thread's CPU time at some point of a long execution (the end of its
/// Run, the end of its Wait), so that the next call can tell whether the
/// application computed since, or was only off the CPU.
///
/// With more ranks than cores a rank often loses its CPU right after a
/// call, to the rank it shares the CPU with, which its last messages woke;
/// by the clock alone that time away looks like a computation. 4 ranks on
/// 2 CPUs, a loop of 200 alltoalls of 1 MiB: one rank's Runs came some
/// 390 us after its Waits in 204 cases, each taken for a computation
/// (lifting the mark and handing the rank's data to the helper), another's
/// 183 times; the loop ran 6-8 % slower than in `manual` mode.
///
/// Reading the thread's CPU time is a system call (0.17 us here), made only
/// around executions long enough to count as long (`park::LONG_WAIT`), and
/// read back only when the clock says the application was away.
#[derive(Default)]
pub(crate) struct CpuStamp {
    ns: std::sync::atomic::AtomicU64,
    thread: std::sync::atomic::AtomicUsize,
}

impl CpuStamp {
    /// Notes the calling thread's CPU time now.
    pub(crate) fn set(&self) {
        let ns = crate::ticks::thread_cpu_ns();
        if ns != 0 {
            self.thread.store(crate::ticks::thread_key(), Ordering::Relaxed);
            self.ns.store(ns, Ordering::Relaxed);
        }
    }

    /// Whether the calling thread ran at least `min_ns` since the stamp
    /// (`None`: no stamp, or another thread's). Forgets the stamp.
    #[cold]
    pub(crate) fn take_ran(&self, min_ns: u64) -> Option<bool> {
        let stamp = self.ns.swap(0, Ordering::Relaxed);
        if stamp == 0 || self.thread.load(Ordering::Relaxed) != crate::ticks::thread_key() {
            return None;
        }
        Some(crate::ticks::thread_cpu_ns().saturating_sub(stamp) >= min_ns)
    }

    /// Forgets the stamp (the call it was for has been judged).
    pub(crate) fn clear(&self) {
        if self.ns.load(Ordering::Relaxed) != 0 {
            self.ns.store(0, Ordering::Relaxed);
        }
    }
}

/// Runs closer together than this are a loop of Run and Wait with nothing
/// between them; farther apart, the application computes between its Run
/// and its Wait.
pub(super) const TIGHT_LOOP: Duration = Duration::from_micros(30);

/// [`TIGHT_LOOP`] with more ranks than cores. There a rank whose Wait has
/// just returned is often preempted before its next Run (the rank sharing
/// its CPU gets it), and the time away looked like a computation: more
/// than half the Runs of a 4-rank barrier loop on 2 cores lifted the mark
/// and woke the helper, whose wake-ups then took the CPU from the ranks
/// (4 ranks on 2 cores, medians of five runs, us: barrier 14.8 -> 9.6,
/// bcast 8 B 19.0 -> 2.2, gather 8 B 18.7 -> 2.1, alltoall 8 B 35.7 -> 9.4,
/// allreduce 8 B 10.4 -> 9.6, where Open MPI took 9.5, 3.5, 2.8, 8.0 and
/// 10.4; 3 ms instead of 0.3 gave the same). A shorter computation then
/// gets no help from the helper, which on a shared CPU could only have
/// run in the computation's place; overlap across 4 emulated hosts on 2
/// cores, where computations last 0.37 ms and more, did not change.
pub(super) const TIGHT_LOOP_SHARED: Duration = Duration::from_micros(300);

/// A helper asleep deaf to the network is rung by a Run only if the last
/// Run was this long ago: a latency loop across hosts runs every 16-40 us,
/// and ringing the helper there on every Run took the 8-byte latency from
/// 8 to 14-21 us (`bench/net.py`), while a computation this long is worth
/// the network's events.
pub(super) const DEAF_RING_GAP: Duration = Duration::from_micros(100);

impl AppMark {
    /// The mark of a rank; `oversubscribed`: more ranks than cores on this
    /// machine (see [`TIGHT_LOOP_SHARED`]).
    pub(crate) fn new(oversubscribed: bool) -> AppMark {
        let tight = if oversubscribed { TIGHT_LOOP_SHARED } else { TIGHT_LOOP };
        AppMark {
            set: Default::default(),
            epoch: Default::default(),
            last_run: Default::default(),
            last_wait: Default::default(),
            helper_deaf: Default::default(),
            helper_long_sleep: Default::default(),
            computes: Default::default(),
            computing: Default::default(),
            short_wait: Default::default(),
            tight_loop: crate::ticks::of(tight),
            deaf_ring_gap: crate::ticks::of(DEAF_RING_GAP),
            computed_runs: Default::default(),
            wait_cpu: Default::default(),
            run_cpu: Default::default(),
            tight_cpu_ns: tight.as_nanos() as u64 / 2,
        }
    }

    /// How many Runs found the application computing since its last call
    /// (each lifted the mark and woke or moved the helper, see
    /// [`after_gap`](Self::after_gap)).
    pub(crate) fn computed_runs(&self) -> u64 {
        self.computed_runs.load(Ordering::Relaxed)
    }

    /// Notes application activity and sets the mark if it is not set. With
    /// `ring`, wakes the helper on setting it: it may have chosen a long
    /// sleep before the mark existed, and must lift the mark after
    /// [`MARK_LINGER`] if nobody else does.
    #[inline]
    pub(crate) fn touch(&self, bell: &goal_transport::shm::Doorbell, ring: bool) {
        // Only "it moved" matters to the helper: a plain store does that
        // without a locked instruction (two racing application threads
        // may lose an increment, never the move).
        self.epoch.store(self.epoch.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        if !self.set.load(Ordering::Relaxed) && !self.set.swap(true, Ordering::AcqRel) {
            bell.mark_polling();
            // A helper asleep for longer than MAX_LINGER (it went to sleep
            // with the mark lifted and nothing in flight) would not lift
            // the mark again before its timeout, and while the mark is set
            // peers do not ring: an execution this thread starts next, in
            // a tight loop, would move only inside Wait (seen: a 64 KiB
            // allreduce started right after a barrier, 2 ranks computing,
            // not finished after 2 s, the helpers asleep for 10 s). Pairs
            // with the helper's store and re-check (SeqCst).
            if ring || self.helper_long_sleep.load(Ordering::SeqCst) {
                bell.ring();
            }
        }
    }

    /// Called by Run before the execution starts. In a loop of Runs and
    /// Waits with nothing between them the mark stays (the Wait follows at
    /// once); when the application computed since its last Run, it will
    /// likely compute again now, and arriving data must wake the helper.
    /// One clock read per Run (50 ns in this VM) buys that: without it,
    /// either every hop of a latency loop paid a futex wake-up (8-byte
    /// barrier 0.4 us -> 25 us) or background progress stalled for
    /// [`MARK_LINGER`] after every call (0-20 % overlap).
    ///
    /// The time since the previous Run misleads in one common pattern: a
    /// short synchronising collective (Run, Wait at once) right before the
    /// Run of a collective the application computes behind. So Wait also
    /// records, per schedule, whether the application computed between that
    /// schedule's Run and its Wait, and a Run of a schedule that did acts
    /// as after a long gap. (Measured across 4 emulated hosts, 4 ranks on 2
    /// cores, a barrier run right after another barrier and then 300 us of
    /// computation: on the rank whose first barrier ended quickest, the
    /// helper stayed deaf to the network and the Wait after the
    /// computation took 490 us.) A Wait that ends within its first batch
    /// of polls reads no clock: this Run judges it (see `short_wait`).
    /// Returns the clock
    /// it read, for Wait, and whether the Run must poll once after starting
    /// its execution (it lifted the mark: see [`after_gap`](Self::after_gap)).
    #[inline(always)]
    pub(crate) fn at_run(&self, bell: &goal_transport::shm::Doorbell, sched_id: crate::proto::SchedId) -> (u64, bool) {
        let now = crate::ticks::now();
        // Since the last Run, or since the end of the last Wait: a loop of
        // long Waits (a 1 MiB scatter, a 4 MiB gather) is no computation,
        // and taking it for one woke the helper twice per iteration (the
        // next Run lifted the mark and woke it, the one after set the mark
        // again and rang it): 2 ranks, scatter 1 MiB took 64-143 us in
        // thread mode against 63-67 us in manual mode.
        let last_run = self.last_run.load(Ordering::Relaxed);
        self.last_run.store(now, Ordering::Relaxed);
        let mut word = self.computes.load(Ordering::Relaxed);
        let short = self.short_wait.load(Ordering::Relaxed);
        let gap = if short != 0 {
            self.short_wait.store(0, Ordering::Relaxed);
            // The latest Run's Wait ended within its first batch, at a time
            // between that Run and now that it did not read: taken as just
            // now, like the Wait of a loop with nothing between Wait and
            // Run. Close behind that Run, the application did not compute
            // between that Run and its Wait either.
            let bit = 1u64 << ((short - 1) % 64);
            if word & bit != 0 && now.saturating_sub(last_run) < self.tight_loop {
                word ^= bit;
                self.computes.store(word, Ordering::Relaxed);
            }
            0
        } else {
            let gap = now.saturating_sub(last_run.max(self.last_wait.load(Ordering::Relaxed)));
            if gap >= self.tight_loop && self.wait_cpu.take_ran(self.tight_cpu_ns) == Some(false) {
                // Off the CPU since a long Wait, not computing.
                0
            } else {
                gap
            }
        };
        let gap = if word & (1 << bit_of(sched_id)) != 0 { u64::MAX } else { gap };
        if gap < self.tight_loop {
            self.touch(bell, true);
            return (now, false);
        }
        self.after_gap(bell, gap);
        (now, true)
    }

    /// [`at_run`](Self::at_run) after a gap (or for a schedule the
    /// application computes behind): out of the line of a latency loop.
    ///
    /// Hands arriving data to the helper without waking it: the mark is
    /// lifted without the heavy fence (`Doorbell::unmark_polling_unfenced`),
    /// so that from now on peers ring the doorbell, where the helper sleeps,
    /// and the Run polls once after starting its execution (the caller,
    /// told by `true`), for what came while the mark was set. It was
    /// lifted with `membarrier(2)` and the helper rung at every such Run:
    /// 9 us for the barrier in this VM, and the woken helper, with its
    /// short slice, preempted the application inside Run for its own
    /// barrier before sleeping again: 16-22 us per start under torch,
    /// whose every call comes after a gap, against 0.3-0.5 us without a
    /// helper; and since a slow Run looks like a computation to the next
    /// one, a loop of blocking calls either stayed fast or settled at
    /// 15-128 us per call (docs/measurements/torch-overlap-2026-11-29).
    /// The race the fence closed (a peer's write still in its store buffer
    /// when it read the mark as set) is left to the helper's sleep, which is
    /// at most [`super::helper::MAX_LINGER`] while the mark is set; a helper
    /// asleep for longer is rung here (`helper_long_sleep`, once after an
    /// idle spell), and so is one asleep deaf to the network (`helper_deaf`).
    #[cold]
    #[inline(never)]
    pub(super) fn after_gap(&self, bell: &goal_transport::shm::Doorbell, gap: u64) {
        // A plain increment: only `GOAL_DEBUG`'s summary reads it.
        self.computed_runs.store(self.computed_runs.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // Not a tight loop: the application computes between its calls, so
        // lift the mark (peers on this machine ring again from now on).
        let lifted = self.set.load(Ordering::Relaxed) && self.set.swap(false, Ordering::AcqRel);
        if lifted {
            bell.unmark_polling_unfenced();
        }
        self.computing.store(true, Ordering::Relaxed);
        // Nor is a helper parked while the last Wait ran woken here (it was,
        // and the wake-up cost the Run 7-22 us when the helper then ran on
        // this CPU): it looks again within PARK_MAX (see `park`).
        // The helper may sleep on the doorbell alone (it does while an
        // application thread waits): wake it so that it sleeps again on
        // the network too. Without this, 1 MiB across hosts moved only
        // inside Wait (overlap 71 % -> 8 %). Not for a gap under
        // DEAF_RING_GAP: a latency loop across hosts whose iteration took
        // a little over TIGHT_LOOP would pay the wake-up, and the woken
        // helper would take the CPU from its polling rank (8-byte latency
        // 7.5 -> 8.9 us).
        let deaf = self.helper_deaf.load(Ordering::SeqCst) && gap >= self.deaf_ring_gap;
        if deaf || (lifted && self.helper_long_sleep.load(Ordering::Relaxed)) {
            bell.ring();
        }
    }

    /// Called by a Run whose own long copy ended at `end` (see
    /// `Engine::long_end`): the Run counts as ending then, both for the
    /// next Run's gap and for its own Wait. Returns `end`, the new `run_at`.
    pub(crate) fn ran_until(&self, end: u64) -> u64 {
        self.last_run.store(end, Ordering::Relaxed);
        end
    }

    /// Called by Wait when it finds its execution still running, `now`
    /// after Run read `run_at`: notes whether the application computed in
    /// between. Stores only on a change, so that a steady loop leaves the
    /// word's cache line alone.
    pub(super) fn note_wait(&self, sched_id: crate::proto::SchedId, run_at: u64, now: u64, ran: Option<bool>) -> bool {
        if self.short_wait.load(Ordering::Relaxed) != 0 {
            self.short_wait.store(0, Ordering::Relaxed);
        }
        let bit = 1u64 << bit_of(sched_id);
        let computed = now.saturating_sub(run_at) >= self.tight_loop && ran != Some(false);
        let word = self.computes.load(Ordering::Relaxed);
        if (word & bit != 0) != computed {
            // A plain store: two racing threads may lose each other's
            // note, which only costs one Run the old guess.
            self.computes.store(word ^ bit, Ordering::Relaxed);
        }
        computed
    }

    /// Called by a Wait that found its execution finished already, `run_at`
    /// being its Run's clock: notes whether the application computed in
    /// between, as [`note_wait`](Self::note_wait) does (one clock read,
    /// off the path of a loop of Runs and Waits, whose Waits find their
    /// execution running). Without it, a schedule that always finished in
    /// the background behind a computation never had its bit set, and its
    /// next Run, right after another call (a barrier, say), kept the mark
    /// set: nothing but the helper's lingering look (up to
    /// [`super::helper::MAX_LINGER`]) moved it.
    ///
    /// Its clock is left in `last_wait` too: a Run soon after this Wait
    /// follows a Wait, not a computation. Without it, a rank whose
    /// executions end inside their Run (a root that only sends) measured
    /// the next Run's gap from its previous Run: across 2 emulated hosts,
    /// a loop of MPI_Barrier (MPI's, 8-20 us) and an 8-byte Ibcast on goal
    /// took 11-44 % of the root's Runs for runs after a computation, each
    /// lifting the mark and the next one ringing the helper (root 12-18
    /// thousand helper wake-ups a second; 90th percentile 18-27 us against
    /// native's 7-9).
    ///
    /// Returns whether the application computed between the Run and this
    /// Wait (`true` if it cannot tell).
    #[cold]
    pub(super) fn note_finished_wait(&self, sched_id: crate::proto::SchedId, run_at: u64, ran: Option<bool>) -> bool {
        if run_at == 0 {
            return true;
        }
        let now = crate::ticks::now();
        self.last_wait.store(now, Ordering::Relaxed);
        self.note_wait(sched_id, run_at, now, ran)
    }

    /// Called by a Wait that ended within its first batch of polls, without
    /// a clock: if its execution is of the latest Run, the next Run can
    /// tell from its own clock whether the application computed between
    /// this Run and this Wait (see `short_wait`).
    #[inline]
    pub(super) fn note_short_wait(&self, sched_id: crate::proto::SchedId, run_at: u64) {
        let v = if run_at == self.last_run.load(Ordering::Relaxed) { bit_of(sched_id) + 1 } else { 0 };
        if self.short_wait.load(Ordering::Relaxed) != v {
            self.short_wait.store(v, Ordering::Relaxed);
        }
    }

    /// Called by a Wait that leaves nothing in flight: sets the mark if a
    /// Run after a gap (see [`after_gap`](Self::after_gap)) or a Wait that
    /// slept lifted it.
    /// Messages that come now belong to executions not yet started, which
    /// the helper could only move to the unexpected queues: a peer need
    /// not ring it for them. Left lifted, the mark had every peer's next
    /// send ring the helper, whose wake-up, with more ranks than cores,
    /// took the sender's CPU inside its Run: 2 ranks on one CPU, rooted
    /// collectives of 8 B, a quarter of the iterations took 2.5-4 us
    /// (`docs/measurements/oversub-gap-2026-12-06/`). One load while the
    /// mark is set.
    ///
    /// Not while the helper sleeps long (nothing was in flight for
    /// [`ACTIVE_SPELL`](super::helper::ACTIVE_SPELL)): setting the mark would
    /// have to ring it (see [`touch`](Self::touch)), a futex wake at the
    /// end of every Wait of an application that calls goal seldom, and
    /// peers ring it anyway while the mark is lifted.
    #[inline]
    pub(crate) fn set_idle(&self, bell: &goal_transport::shm::Doorbell) {
        if !self.set.load(Ordering::Relaxed) && !self.helper_long_sleep.load(Ordering::Relaxed) {
            self.touch(bell, false);
        }
    }

    /// Lifts the mark if it is set, saying whether it was. The caller
    /// re-checks for work, or wakes a thread that will.
    pub(crate) fn lift(&self, bell: &goal_transport::shm::Doorbell) -> bool {
        let lifted = self.set.load(Ordering::Relaxed) && self.set.swap(false, Ordering::AcqRel);
        if lifted {
            bell.unmark_polling();
        }
        lifted
    }

    pub(super) fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    pub(super) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }
}

/// The bit of a schedule in the marks' 64-bit words: its number in its
/// group, mixed with the group's context.
#[inline(always)]
pub(crate) fn bit_of(id: crate::proto::SchedId) -> u32 {
    (id as u32 ^ (id >> 32) as u32) % 64
}

#[cfg(test)]
mod tests {
    use super::CpuStamp;
    use std::time::Duration;

    #[test]
    fn a_cpu_stamp_tells_a_computation_from_time_off_the_cpu() {
        let ms = 1_000_000;
        let s = CpuStamp::default();
        assert_eq!(s.take_ran(ms), None, "no stamp yet");
        s.set();
        std::thread::sleep(Duration::from_millis(3));
        assert_eq!(s.take_ran(ms), Some(false), "asleep for 3 ms is no computation");
        assert_eq!(s.take_ran(ms), None, "the stamp is taken once");
        s.set();
        let start = crate::ticks::thread_cpu_ns();
        while crate::ticks::thread_cpu_ns() - start < 2 * ms {}
        assert_eq!(s.take_ran(ms), Some(true), "2 ms of this thread's own work");
        s.set();
        let other = std::thread::scope(|t| t.spawn(|| s.take_ran(ms)).join().unwrap());
        assert_eq!(other, None, "another thread's stamp says nothing of this one");
    }
}
