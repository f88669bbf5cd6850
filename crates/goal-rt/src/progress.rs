//! Who drives the engine, and how a thread waits without burning a core.
//!
//! Every waiting thread follows the same rule: poll for a short, tunable
//! while (`GOAL_SPIN_US`, or adapted to recent waits: see [`Spin`]; a spin
//! hand-over costs tens of nanoseconds, a cross-core wake-up tens of
//! microseconds in a VM), then register on the
//! doorbell, poll once more, and sleep in the kernel until a peer rings. The
//! register-then-recheck order means a peer's write is either seen by the
//! recheck or followed by a ring: no lost wake-ups (see goal-transport's
//! `Doorbell`). Sleeps are bounded (100 ms) so that a dead peer is noticed
//! even when nothing arrives.
//!
//! Modes:
//! * `manual`: no helper; executions move only inside Test, Wait, Progress.
//! * `thread`: a helper thread sleeps on the doorbell and is woken by
//!   arriving data. While an application thread is inside Wait, the helper
//!   stands down and the waiting thread drives progress itself (so the two
//!   never fight over the engine lock or a core); the helper then sleeps
//!   where the doorbell does not reach it (see [`park`]).
//!   The helper polls only briefly after an event (`GOAL_HELPER_SPIN_US`):
//!   20 us when it has a core of its own, not at all when it shares one with
//!   a computing rank, whose CPU every polled microsecond would take. With
//!   nothing in flight it sleeps until rung (bounded at 10 s), so an idle
//!   runtime costs the application nothing measurable.
//!   The helper asks the scheduler for a short time slice (`GOAL_SLICE_US`,
//!   100 us; see `slice`): woken by a message, it preempts the computing
//!   application at once instead of waiting out the application's slice,
//!   as Hoefler and Lumsdaine's real-time threads do, without privileges.
//!   An application thread asks for the same while it sleeps in Wait.
//!   Without a spare core but with a core per rank, the helpers of up to 8
//!   ranks that reach each other through shared memory run on one CPU,
//!   the highest the machine's ranks may use, while their applications
//!   compute, so that a chain of messages between them is carried by
//!   helpers waking each other there, without an inter-processor
//!   interrupt per message; while an application calls Run and Wait in a
//!   loop its helper stays beside it (see `Placement` and
//!   `Config::resolve_progress`). `GOAL_PROGRESS_CPU` pins the helper
//!   elsewhere (`any`: unpinned), `GOAL_PROGRESS_RT=1` makes it a
//!   real-time thread (`SCHED_FIFO`) where permitted; such a helper never
//!   calls `sched_yield` (which would not let an ordinary thread run), it
//!   sleeps briefly instead.
//! * `spin`: like `thread` with a long polling spell, for a spare core.
//! * `auto` (the default) picks `spin` when every rank here has a spare core
//!   for its helper, else `thread` (see `Config::resolve_progress`).
//!
//! The engine lock admits one progressing thread at a time; a thread that
//! finds it taken simply checks its own handle again, since the holder is
//! already doing the work. Completion is published through the handle's
//! atomic state, then the doorbell is rung so that sleepers re-check.

use crate::affinity;
use crate::config::{Config, ProgressMode};
use crate::engine::{ExecShared, Thresholds, RUNNING};
use crate::error::{Error, ErrorKind, Result};
use crate::Runtime;
use goal_transport::shm::ShmNode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Polls made per taking of the engine lock while an application thread waits.
const POLL_BATCH: u32 = 64;

/// How long the application's polling mark outlives its last Run or Wait.
const MARK_LINGER: Duration = Duration::from_micros(200);

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
    set: std::sync::atomic::AtomicBool,
    /// Bumped by every Run and Wait: the helper lifts the mark only when
    /// this did not move during a whole linger period.
    epoch: std::sync::atomic::AtomicU64,
    /// A Run found that the application computes between its calls (see
    /// `after_gap`): the helper moves to the CPU the ranks' helpers share
    /// (see `Placement`), as when it lifts the mark itself.
    computing: std::sync::atomic::AtomicBool,
    /// The time of the last Run, in `ticks`.
    last_run: std::sync::atomic::AtomicU64,
    /// The last clock reading of the last Wait that did not finish its
    /// execution within a first batch of polls (at most a batch, or a
    /// wake-up, before it returned; later if that batch made a long copy,
    /// whose end the engine notes), in `ticks`: a Run soon after it follows
    /// a Wait, not a computation. (A shorter Wait reads no clock: see
    /// `short_wait`.)
    last_wait: std::sync::atomic::AtomicU64,
    /// The helper sleeps on the doorbell alone, deaf to the network and the
    /// kernel ring (it does while an application thread waits, since that
    /// thread polls them itself): the next Run must ring it.
    helper_deaf: std::sync::atomic::AtomicBool,
    /// Bit `id % 64`: the application computed between the last Run of
    /// schedule `id` and its Wait (see [`AppMark::at_run`]).
    computes: std::sync::atomic::AtomicU64,
    /// One more than the id of the schedule whose execution of the latest
    /// Run was waited for within Wait's first batch of polls, which reads
    /// no clock; zero if none since that Run. The next Run, which reads the
    /// clock anyway, clears the schedule's bit in `computes` if it comes
    /// less than [`TIGHT_LOOP`] after that Run.
    short_wait: std::sync::atomic::AtomicU32,
    /// [`TIGHT_LOOP`] and [`DEAF_RING_GAP`] in `ticks`, converted once:
    /// the floating-point conversion cost every Run and Wait 33
    /// instructions each (callgrind).
    tight_loop: u64,
    deaf_ring_gap: u64,
    /// Runs that found the application computing since its last call
    /// (see [`AppMark::after_gap`]), for `GOAL_DEBUG`'s summary.
    computed_runs: std::sync::atomic::AtomicU64,
}

/// The longest the helper sleeps before it looks at a mark that lingers
/// while the application keeps calling Run and Wait. Looking every
/// [`MARK_LINGER`] woke the helper 5000 times a second during a latency
/// loop, each wake-up taking its core from a polling rank for a few
/// microseconds. The cost of the longer look: when such a loop turns into a
/// computation right after a Run, the mark can hold off background
/// progress for up to this long, once.
const MAX_LINGER: Duration = Duration::from_millis(3);

/// Runs closer together than this are a loop of Run and Wait with nothing
/// between them; farther apart, the application computes between its Run
/// and its Wait.
const TIGHT_LOOP: Duration = Duration::from_micros(30);

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
const TIGHT_LOOP_SHARED: Duration = Duration::from_micros(300);

/// A helper asleep deaf to the network is rung by a Run only if the last
/// Run was this long ago: a latency loop across hosts runs every 16-40 us,
/// and ringing the helper there on every Run took the 8-byte latency from
/// 8 to 14-21 us (`bench/net.py`), while a computation this long is worth
/// the network's events.
const DEAF_RING_GAP: Duration = Duration::from_micros(100);

impl AppMark {
    /// The mark of a rank; `oversubscribed`: more ranks than cores on this
    /// machine (see [`TIGHT_LOOP_SHARED`]).
    pub(crate) fn new(oversubscribed: bool) -> AppMark {
        AppMark {
            set: Default::default(),
            epoch: Default::default(),
            last_run: Default::default(),
            last_wait: Default::default(),
            helper_deaf: Default::default(),
            computes: Default::default(),
            computing: Default::default(),
            short_wait: Default::default(),
            tight_loop: crate::ticks::of(if oversubscribed { TIGHT_LOOP_SHARED } else { TIGHT_LOOP }),
            deaf_ring_gap: crate::ticks::of(DEAF_RING_GAP),
            computed_runs: Default::default(),
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
            if ring {
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
    /// When the application will compute,
    /// `unpark` wakes a helper that sleeps in [`park`]. Returns the clock
    /// it read, for Wait.
    #[inline(always)]
    pub(crate) fn at_run(&self, bell: &goal_transport::shm::Doorbell, sched_id: u32, unpark: impl FnOnce()) -> u64 {
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
            now.saturating_sub(last_run.max(self.last_wait.load(Ordering::Relaxed)))
        };
        let gap = if word & (1 << (sched_id % 64)) != 0 { u64::MAX } else { gap };
        if gap < self.tight_loop {
            self.touch(bell, true);
            return now;
        }
        self.after_gap(bell, gap, unpark);
        now
    }

    /// [`at_run`](Self::at_run) after a gap (or for a schedule the
    /// application computes behind): out of the line of a latency loop.
    #[cold]
    #[inline(never)]
    fn after_gap(&self, bell: &goal_transport::shm::Doorbell, gap: u64, unpark: impl FnOnce()) {
        // A plain increment: only `GOAL_DEBUG`'s summary reads it.
        self.computed_runs.store(self.computed_runs.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        // Not a tight loop: the application computes between its calls, so
        // lift the mark (peers on this machine ring again from now on).
        let lifted = self.lift(bell);
        self.computing.store(true, Ordering::Relaxed);
        unpark();
        if (lifted || self.helper_deaf.load(Ordering::SeqCst)) && gap >= self.deaf_ring_gap {
            // The helper may sleep on the doorbell alone (it does while an
            // application thread waits): wake it so that it sleeps again
            // on the network too. Without this, 1 MiB across hosts moved
            // only inside Wait (overlap 71 % -> 8 %). The mark alone does
            // not tell: a Wait that slept has lifted it already.
            // Not for a gap under DEAF_RING_GAP: a latency loop across
            // hosts whose iteration took a little over TIGHT_LOOP would pay
            // the wake-up, and the woken helper would take the CPU from its
            // polling rank (8-byte latency 7.5 -> 8.9 us). Peers on this
            // machine still ring the doorbell, since the mark is lifted.
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
    fn note_wait(&self, sched_id: u32, run_at: u64, now: u64) {
        if self.short_wait.load(Ordering::Relaxed) != 0 {
            self.short_wait.store(0, Ordering::Relaxed);
        }
        let bit = 1u64 << (sched_id % 64);
        let computed = now.saturating_sub(run_at) >= self.tight_loop;
        let word = self.computes.load(Ordering::Relaxed);
        if (word & bit != 0) != computed {
            // A plain store: two racing threads may lose each other's
            // note, which only costs one Run the old guess.
            self.computes.store(word ^ bit, Ordering::Relaxed);
        }
    }

    /// Called by a Wait that ended within its first batch of polls, without
    /// a clock: if its execution is of the latest Run, the next Run can
    /// tell from its own clock whether the application computed between
    /// this Run and this Wait (see `short_wait`).
    #[inline]
    fn note_short_wait(&self, sched_id: u32, run_at: u64) {
        let v = if run_at == self.last_run.load(Ordering::Relaxed) { sched_id % 64 + 1 } else { 0 };
        if self.short_wait.load(Ordering::Relaxed) != v {
            self.short_wait.store(v, Ordering::Relaxed);
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

    fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }
}

/// The longest an adaptive [`Spin`] polls before sleeping.
const SPIN_MAX: Duration = Duration::from_millis(1);

/// How long a Wait polls before it sleeps: `GOAL_SPIN_US`, or adapted to
/// the waits this process has seen.
///
/// A Wait that sleeps pays a wake-up when its execution finishes: on this
/// VM 10-100 us, against nothing for one that still polls. Waits that
/// reliably end a little after the fixed 50 us (a rank that waits in a
/// barrier for a root still busy with a 4 MiB gather, 300-400 us) paid it
/// every time: 2 ranks, gather 4 MiB took 500-530 us with a 50 us spin and
/// 267-333 us with 1 ms. So the spin follows the waits: an average of
/// recent wait times (weight 1/8 for the newest), where a wait longer than
/// [`SPIN_MAX`] counts as zero (sleeping was right for it, and the average
/// falls back to `GOAL_SPIN_US`); the spin is twice that average, between
/// `GOAL_SPIN_US` and [`SPIN_MAX`]. A loop of short Waits keeps the
/// average near zero without updating it (no store on that path). Only a
/// process whose ranks each have a core polls longer: a poller on a shared
/// core holds it from the rank it waits for.
pub(crate) struct Spin {
    /// `GOAL_SPIN_US`, the least spin, in `ticks`.
    min: u64,
    /// [`SPIN_MAX`] in `ticks`; `min` when not adaptive.
    max: u64,
    /// The average wait, in `ticks`.
    avg: std::sync::atomic::AtomicU64,
}

impl Spin {
    pub(crate) fn new(min: Duration, adaptive: bool) -> Spin {
        let min = crate::ticks::of(min);
        let max = if adaptive { crate::ticks::of(SPIN_MAX).max(min) } else { min };
        Spin { min, max, avg: Default::default() }
    }

    /// How long to poll before sleeping, in `ticks`.
    #[inline]
    fn limit(&self) -> u64 {
        if self.max == self.min {
            return self.min;
        }
        self.avg.load(Ordering::Relaxed).saturating_mul(2).clamp(self.min, self.max)
    }

    /// Notes a Wait that polled or slept for `waited` ticks (from its entry
    /// to its last clock reading).
    #[inline]
    fn record(&self, waited: u64, slept: bool) {
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

/// Times in a row the helper yields and looks again when another thread
/// holds the engine lock, before it sleeps (at most 1 ms) instead.
const LOCK_MISSES: u32 = 64;

/// With `GOAL_DEBUG=1`, a Wait that has slept this long prints what the
/// rank's executions wait for, and again every [`STALL_REPORT_EVERY`].
const STALL_REPORT_AFTER: Duration = Duration::from_secs(10);
const STALL_REPORT_EVERY: Duration = Duration::from_secs(30);

/// How long the helper sleeps when nothing is in flight (a Run rings it).
const IDLE_SLEEP: Duration = Duration::from_secs(10);

/// How long a sleeper sleeps at most before it checks peer liveness.
const LIVENESS_TICK: Duration = Duration::from_millis(100);

/// The protocol thresholds: the environment's, else the defaults measured here.
pub(crate) fn thresholds(cfg: &Config, shm: &ShmNode, size: usize) -> Thresholds {
    let measured = crate::calibrate::thresholds(cfg.debug, &cfg.cpus);
    let eager = cfg.eager_limit.unwrap_or(measured.eager).min(shm.max_eager());
    let heap_eager = measured.heap_eager.min(eager);
    let cma = cfg.cma_range.unwrap_or(measured.cma);
    let credit = (cfg.unexpected_bytes / (size.max(2) as u64 - 1)).max(eager as u64);
    // Stream or CMA per message from 64 KiB (above the eager limit), unless
    // the environment fixes the CMA range or turns this off.
    let adapt_from = if cfg.cma_range.is_none() && cfg.adapt { (eager + 1).max(64 << 10) } else { usize::MAX };
    Thresholds { eager, heap_eager, cma, credit, net_eager: cfg.net_eager, net_eager_one_rail: cfg.net_eager_one_rail, adapt_from }
}

/// Starts the helper thread of the `thread` and `spin` modes.
pub(crate) fn start_helper(rt: &Arc<Runtime>) -> Result<()> {
    if rt.cfg.progress == ProgressMode::Manual {
        return Ok(());
    }
    let r = rt.clone();
    let h = std::thread::Builder::new()
        .name("goal-progress".into())
        .spawn(move || {
            place_helper(&r.cfg, r.rank);
            helper_loop(&r)
        })
        .map_err(|e| Error::new(ErrorKind::System, format!("GOAL_Init: starting the progress thread: {e}")))?;
    *rt.helper.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
    Ok(())
}

/// Applies `GOAL_PROGRESS_CPU` and `GOAL_PROGRESS_RT` to the calling
/// (helper) thread. Neither is essential: a refusal is said once, on the
/// rank it happened to, and the helper runs on as an ordinary thread.
fn place_helper(cfg: &Config, rank: u32) {
    if let Some(cpu) = cfg.helper_cpu.filter(|_| !cfg.helper_shared) {
        if let Err(e) = affinity::pin(cpu) {
            say!("goal (rank {rank}): GOAL_PROGRESS_CPU={cpu}: cannot pin the progress thread there ({e}); it runs unpinned");
        }
    }
    if !cfg.slice.is_zero() && !cfg.helper_rt {
        if let Err(e) = crate::slice::set_for_thread(cfg.slice) {
            if cfg.debug {
                say!("goal (rank {rank}): GOAL_SLICE_US={}: the scheduler refused the slice ({e}); the helper keeps the default", cfg.slice.as_micros());
            }
        }
    }
    if cfg.helper_rt {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: pthread_self() is this thread; `param` is a valid sched_param.
        let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) };
        if rc != 0 {
            say!(
                "goal (rank {rank}): GOAL_PROGRESS_RT=1: the progress thread cannot run as real-time (SCHED_FIFO: {}); it runs as an ordinary thread",
                std::io::Error::from_raw_os_error(rc)
            );
        }
    }
}

/// Where the helper runs when the helpers of the ranks here share a CPU
/// (`Config::helper_shared`): on that CPU while its application computes,
/// so that a chain of messages between local ranks is carried by helpers
/// waking each other there (a context switch each, not an interrupt from
/// another CPU as well); on the CPUs it had before while the application
/// calls Run and Wait in a loop, where the helper's brief turns on another
/// rank's CPU would delay that rank (2 ranks, collectives of 64 KiB to
/// 4 MiB in a loop: 10-35 % slower with the helpers always on one CPU).
struct Placement {
    /// The shared CPU, if any.
    shared: Option<usize>,
    /// The CPUs the helper had before it moved there.
    before: Option<affinity::CpuSet>,
}

impl Placement {
    fn new(cfg: &Config) -> Placement {
        Placement { shared: cfg.helper_cpu.filter(|_| cfg.helper_shared), before: None }
    }

    /// Whether there is a shared CPU to move to (without one, the helper's
    /// loop spends no locked instruction on the `computing` hint).
    fn shares(&self) -> bool {
        self.shared.is_some()
    }

    /// Moves the helper to the shared CPU (once).
    fn share(&mut self, rt: &Runtime) {
        let Some(cpu) = self.shared else { return };
        if self.before.is_some() {
            return;
        }
        let Some(now) = affinity::current() else {
            self.shared = None;
            return;
        };
        match affinity::pin(cpu) {
            Ok(()) => self.before = Some(now),
            Err(e) => {
                if rt.cfg.debug {
                    say!("goal (rank {}): cannot run the progress thread on CPU {cpu}, which the ranks' helpers share ({e}); it stays where it is", rt.rank);
                }
                self.shared = None;
            }
        }
    }

    /// Moves the helper back to the CPUs it had before [`Placement::share`].
    fn own(&mut self) {
        if let Some(set) = self.before.take() {
            let _ = affinity::set(&set);
        }
    }
}

/// Whether pollers hand the CPU over between batches of polls without
/// news. A waiting thread polls for `GOAL_SPIN_US` before it sleeps; with
/// more ranks than cores, the rank we wait for may need the very CPU our
/// polling holds, so a poller then calls `sched_yield` after every batch.
/// Measured here (4 ranks on 2
/// cores, kernel 6.18, ranks pinned or not): a barrier took 14-16 us when
/// polling 2 us without yielding and then sleeping (each hop a futex
/// wake-up), 6.2 us pinned / 13 us unpinned when yielding for 50 us; with
/// a helper thread per rank, 55-96 us against 6.3-13 us.
fn yields(rt: &Runtime) -> bool {
    rt.oversubscribed
}

/// Gives the CPU to another runnable thread, if any.
fn yield_now() {
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
}

fn helper_loop(rt: &Runtime) {
    let spin = rt.cfg.helper_spin.unwrap_or_default();
    let yield_polls = yields(rt);
    let mut seen_epoch = rt.app_mark.epoch();
    // How long the mark may linger before we look again (see MAX_LINGER).
    let mut linger = MARK_LINGER;
    // Engine-lock misses in a row (see LOCK_MISSES).
    let mut lock_misses = 0u32;
    let mut place = Placement::new(&rt.cfg);
    loop {
        // Lift the application's mark once it has lingered a whole period
        // without a Run or Wait (the poll below is the re-check). While the
        // application keeps calling, look less and less often.
        // (A mark that Run lifted does not reset the period: Run lifts it
        // in every loop whose iterations are long, and the helper would
        // again wake every MARK_LINGER during each Wait, 21579 context
        // switches in 3000 iterations of 100 ping-pongs between two hosts,
        // against 473 without a helper.)
        // (Nor while the engine is held: with no thread of ours waiting,
        // that is the application inside a Run or a Test, say a Run that
        // copies a large block, which is no computation. Taken for one, it
        // lifted the mark and moved the helper to the shared CPU in a
        // fifth of the iterations of a 2-rank allgather of 4 MiB, and the
        // helper then looked for the engine there, next to the peer.)
        let now = rt.app_mark.epoch();
        if rt.app_mark.is_set() {
            if rt.app_waiting.load(Ordering::Acquire) == 0 && now == seen_epoch && !rt.engine.is_held() {
                rt.app_mark.lift(&rt.bell);
                linger = MARK_LINGER;
                // The application computes: carry its messages from the CPU
                // the ranks' helpers share.
                place.share(rt);
            } else if now != seen_epoch {
                linger = (linger * 2).min(MAX_LINGER);
            }
        }
        if now != seen_epoch {
            // The application calls goal again: back beside it.
            place.own();
        } else if place.shares() && rt.app_waiting.load(Ordering::Acquire) == 0 && rt.app_mark.computing.swap(false, Ordering::Relaxed) {
            // A Run found it computing between its calls.
            place.share(rt);
        }
        seen_epoch = now;
        if rt.shutdown.load(Ordering::Acquire) {
            return;
        }
        // Poll while there is news, and for `spin` after the last of it,
        // unless an application thread is waiting (it drives progress then).
        let mut polled = false;
        if rt.app_waiting.load(Ordering::Acquire) == 0 {
            polled = true;
            let _polling = rt.bell.polling();
            let mut last_event = Instant::now();
            while !rt.shutdown.load(Ordering::Acquire) && rt.app_waiting.load(Ordering::Acquire) == 0 {
                match rt.try_progress() {
                    Some(n) if n > 0 => last_event = Instant::now(),
                    _ => {
                        if last_event.elapsed() >= spin {
                            break;
                        }
                        if yield_polls && !rt.cfg.helper_rt {
                            yield_now();
                        } else {
                            std::hint::spin_loop();
                        }
                    }
                }
            }
        }
        // While we polled, peers skipped ringing; an application thread that
        // waits (and now drives progress) may sleep through that: wake it.
        if polled && rt.app_waiting.load(Ordering::Acquire) > 0 {
            rt.bell.ring();
        }
        if rt.app_waiting.load(Ordering::Acquire) > 0 {
            park(rt);
            continue;
        }
        // Sleep: register, re-check, then wait for a ring.
        let guard = rt.bell.prepare();
        if rt.shutdown.load(Ordering::Acquire) {
            return;
        }
        // While an application thread waits it drives progress and holds
        // the engine lock most of the time: do not queue up on that lock
        // (the hand-over would cost it two context switches on its CPU).
        // Never block on the engine lock either: its holder would have to
        // wake us with a system call on its way out, and an application
        // thread pays that in its Run or Wait (seen: seven context switches
        // per execution of a ping-pong schedule). A holder other than a
        // waiting application thread (a Run, a Test) is brief: look again.
        let (made, busy, must_poll) = if rt.app_waiting.load(Ordering::Acquire) > 0 {
            (0, false, false)
        } else {
            match rt.try_engine() {
                Some(mut e) => {
                    lock_misses = 0;
                    (e.poll(), e.busy(), e.must_poll())
                }
                // The holder is an application thread inside a call of a
                // loop of Runs and Waits (the mark is set), say a Run that
                // copies a large block: it does the work. Sleep until the
                // mark has lingered; looking again after a yield, up to
                // LOCK_MISSES times, only took the holder's CPU in slices
                // (2 ranks, allgather of 4 MiB: 60-175 such looks per 30
                // iterations).
                None if rt.app_mark.is_set() => (0, false, false),
                None if lock_misses < LOCK_MISSES => {
                    lock_misses += 1;
                    drop(guard);
                    if rt.cfg.helper_rt {
                        // A real-time thread's yield never lets an ordinary
                        // one run, and the lock's holder may be one waiting
                        // for this very CPU.
                        std::thread::sleep(Duration::from_micros(20));
                    } else {
                        yield_now();
                    }
                    continue;
                }
                // A holder that keeps the lock (a thread calling Progress in
                // a loop): sleep briefly rather than yield without end.
                None => (0, true, true),
            }
        };
        if made > 0 {
            continue;
        }
        let timeout = if must_poll {
            Duration::from_millis(1)
        } else if rt.app_mark.is_set() {
            linger
        } else if busy {
            LIVENESS_TICK
        } else {
            IDLE_SLEEP
        };
        // Deaf only if the application still waits once the flag is up
        // (pairs with Wait's exit and Run's check, both SeqCst).
        let deaf = rt.wake_fd.is_some() && {
            rt.app_mark.helper_deaf.store(true, Ordering::SeqCst);
            rt.app_waiting.load(Ordering::SeqCst) > 0
        };
        if deaf {
            // The waiting application polls the network itself: a helper
            // woken by every packet would only take the CPU from it
            // (measured: 8-byte latency between two hosts 89 us, not 11).
            guard.sleep(timeout);
        } else {
            sleep(rt, guard, timeout);
        }
        rt.app_mark.helper_deaf.store(false, Ordering::Relaxed);
        if busy {
            if let Some(mut e) = rt.try_engine() {
                e.check_peers_if_due();
            }
        }
    }
}

/// Sleeps while an application thread waits, until the last one leaves
/// Wait (or for [`MAX_LINGER`]).
///
/// The waiting thread drives progress itself, and sleeps on the doorbell
/// when nothing comes. Were the helper asleep on the doorbell too, every
/// ring meant for that thread would wake both, and the helper, with
/// nothing to do, would take the CPU from the one that has: on this
/// machine's two cores, 2 ranks, a 4 MiB gather took 820 us in `thread`
/// mode with 12 000 context switches a second, against 500-590 us and
/// 1 600-4 700 in `manual` mode. So the helper sleeps on the count of
/// waiting threads instead, which only Wait's exit changes to zero.
///
/// A Wait that leaves nothing in flight does not wake the helper: the
/// wake-up would take the CPU from the application right after its Wait,
/// for nothing to do. The next Run after which the application computes
/// does (see [`AppMark::at_run`]), and the helper looks again after
/// [`MAX_LINGER`] in any case, for the lingering mark.
fn park(rt: &Runtime) {
    // Dekker with Wait's exit (see `unpark`): either we see the count at
    // zero, or the thread that brought it there sees us parked.
    rt.helper_parked.store(true, Ordering::SeqCst);
    let n = rt.app_waiting.load(Ordering::SeqCst);
    if n > 0 && !rt.shutdown.load(Ordering::Acquire) {
        // Returns at once if the count moved since the load.
        let _ = goal_transport::sys::futex_wait(&rt.app_waiting, n, Some(MAX_LINGER));
    }
    rt.helper_parked.store(false, Ordering::Relaxed);
}

/// Wakes a helper asleep in [`park`]: called when the last waiting
/// thread leaves Wait with executions in flight, by a Run after which the
/// application computes, and at shutdown.
pub(crate) fn unpark(rt: &Runtime) {
    if rt.helper_parked.load(Ordering::SeqCst) {
        let _ = goal_transport::sys::futex_wake(&rt.app_waiting, 1);
    }
}

/// Blocks the calling application thread until `shared` is no longer running.
pub(crate) fn wait(shared: &ExecShared) {
    let rt: &Runtime = &shared.rt;
    if shared.state.load(Ordering::Acquire) != RUNNING {
        return;
    }
    let helper = rt.cfg.progress != ProgressMode::Manual;
    // A first batch of passes, without counting this thread among the
    // waiting ones: in a loop of small collectives most Waits end here, and
    // the count's two locked instructions and the spin's bookkeeping were
    // some 75 of the 2 000 instructions of a 2-rank barrier's Run and Wait.
    // Nor does it read the clock (10 ns in this VM, and with the marks'
    // bookkeeping a 2-rank barrier took 0.278 us with a helper against
    // 0.255 us without): the next Run learns from its own clock what this
    // Wait would have noted (see `AppMark::note_short_wait`).
    // Whether that batch made a long copy (a CMA read of an exchange's
    // block, say): then this Wait cannot tell when it was called.
    let mut copied_first = false;
    if let Some(mut e) = rt.engine.try_lock() {
        let long_before = e.long_end();
        let batch = poll_batch(&mut e, shared);
        copied_first = e.long_end() != long_before;
        if let (_, Some((busy, long_end))) = batch {
            drop(e);
            if helper {
                let run_at = shared.run_at.load(Ordering::Relaxed);
                rt.app_mark.note_short_wait(shared.sched_id, run_at);
                // A long copy made in this batch ended after the Run: the
                // time up to its end was not the application's.
                if long_end > run_at {
                    rt.app_mark.last_wait.store(long_end, Ordering::Relaxed);
                }
                if busy {
                    hand_back(rt, rt.app_waiting.load(Ordering::SeqCst) == 0);
                }
            }
            rt.spin.record(0, false);
            return;
        }
    }
    let entry = crate::ticks::now();
    if helper {
        // After a long copy in the first batch, the clock read above is no
        // measure of the time between Run and this call: taken for one, a
        // 1 MiB allgather's Wait, which reads its peer's block there, told
        // every later Run of it that the application computed (2 ranks:
        // 120-420 of 1 000 Runs woke or moved the helper; 256 KiB to 4 MiB
        // 4-6 % slower than with the note kept as it was).
        if !copied_first {
            rt.app_mark.note_wait(shared.sched_id, shared.run_at.load(Ordering::Relaxed), entry);
        }
        // Once per call: after a sleep the mark stays lifted (touching it
        // again would ring the helper on every wake-up).
        rt.app_mark.touch(&rt.bell, false);
    }
    let others = rt.app_waiting.fetch_add(1, Ordering::AcqRel);
    let yield_polls = yields(rt);
    // The polling mark tells peers to skip waking a sleeper of ours while we
    // poll. With a helper, the lingering mark does (see `AppMark`). Without
    // one and with no other thread of ours waiting there is no such
    // sleeper, and the mark would only move its cache line back and forth
    // between us and every peer that sends (measured: 10 % of an 8-byte
    // exchange).
    let mark = !helper && others > 0;
    // Whether other executions were in flight when ours finished, if this
    // thread saw it finish with the engine lock held (saves taking the lock
    // again below).
    let mut others_busy = None;
    let spin_ticks = rt.spin.limit();
    let mut slept = false;
    // When the current spell of polling began (the clock read above is
    // the first one's).
    let mut spell = entry;
    // The latest clock reading, left for Run in `AppMark::last_wait`: at
    // most a batch of polls before the end, or the end of a long copy
    // made in the last batch (`long_end`), whichever is later. (The last
    // news alone missed a Wait that polled long for one message: the next
    // Run took that wait for a computation and woke the helper.)
    let mut latest = entry;
    let mut long_end = 0;
    let mut next_report = STALL_REPORT_AFTER;
    loop {
        // Poll (peers need not ring while we do), for `spin` after the last
        // news. The engine lock is held across a batch of polls: taking it
        // per poll would add two locked instructions to every hop.
        {
            let _polling = mark.then(|| rt.bell.polling());
            // The last news of this spell (its start, without any).
            let mut since = spell;
            'spin: while shared.state.load(Ordering::Acquire) == RUNNING {
                let mut news = false;
                match rt.engine.try_lock() {
                    Some(mut e) => {
                        let done;
                        (news, done) = poll_batch(&mut e, shared);
                        if let Some((busy, end)) = done {
                            others_busy = Some(busy);
                            long_end = end;
                            break 'spin;
                        }
                    }
                    None => std::hint::spin_loop(),
                }
                latest = crate::ticks::now();
                if news {
                    since = latest;
                } else if latest.saturating_sub(since) >= spin_ticks {
                    break;
                } else if yield_polls {
                    yield_now();
                }
            }
        }
        if shared.state.load(Ordering::Acquire) != RUNNING {
            break;
        }
        // Sleep: lift our mark (or peers would not ring), register,
        // re-check, then wait for a ring.
        if helper {
            rt.app_mark.lift(&rt.bell);
        }
        let guard = rt.bell.prepare();
        let must_poll = match rt.engine.try_lock() {
            Some(mut e) => {
                if e.poll() > 0 {
                    continue;
                }
                e.must_poll()
            }
            None => false,
        };
        if shared.state.load(Ordering::Acquire) != RUNNING {
            break;
        }
        {
            // Woken by a message, run at once rather than after the slice
            // of whatever computes on this CPU (see `slice`).
            let _slice = crate::slice::WaitSlice::enter(rt.cfg.slice);
            sleep(rt, guard, if must_poll { Duration::from_millis(1) } else { LIVENESS_TICK });
        }
        slept = true;
        spell = crate::ticks::now();
        latest = spell;
        let waited = crate::ticks::duration(spell.saturating_sub(entry));
        let mut e = rt.lock_engine();
        e.check_peers_if_due();
        if rt.cfg.debug && waited >= next_report {
            next_report += STALL_REPORT_EVERY;
            let lines = e.stall_report();
            drop(e);
            say!("goal: rank {}: Wait has waited {:.0} s; in flight:", rt.rank, waited.as_secs_f64());
            for l in lines {
                say!("goal: rank {}:   {l}", rt.rank);
            }
        }
    }
    rt.spin.record(latest.saturating_sub(entry), slept);
    let last = rt.app_waiting.fetch_sub(1, Ordering::SeqCst) == 1;
    let busy = helper && others_busy.unwrap_or_else(|| rt.lock_engine().busy());
    leave(rt, helper, latest.max(long_end), busy, last);
}

/// Up to [`POLL_BATCH`] progress passes with the engine held, fewer if
/// `shared` finishes: whether any pass moved something, and, if `shared`
/// finished, whether other executions are in flight and when the last long
/// copy ended (`Engine::long_end`).
#[inline]
fn poll_batch(e: &mut crate::engine::Engine, shared: &ExecShared) -> (bool, Option<(bool, u64)>) {
    let mut news = false;
    e.in_wait = true;
    for _ in 0..POLL_BATCH {
        if e.poll() > 0 {
            news = true;
            if shared.state.load(Ordering::Acquire) != RUNNING {
                e.in_wait = false;
                return (true, Some((e.busy(), e.long_end())));
            }
        }
    }
    e.in_wait = false;
    (news, None)
}

/// The end of a Wait whose execution finished at `end` (`ticks`): leaves
/// `end` for the next Run (see `AppMark::last_wait`) and, if executions are
/// still `busy`, hands progress back to the helper (woken if this was the
/// `last` thread waiting).
#[inline]
fn leave(rt: &Runtime, helper: bool, end: u64, busy: bool, last: bool) {
    if !helper {
        return;
    }
    rt.app_mark.last_wait.store(end, Ordering::Relaxed);
    if busy {
        hand_back(rt, last);
    }
}

/// Data for executions still running must wake the helper from now on:
/// lifts the mark and rings; wakes a parked helper if this was the `last`
/// thread waiting.
fn hand_back(rt: &Runtime, last: bool) {
    rt.app_mark.lift(&rt.bell);
    rt.bell.ring();
    if last {
        unpark(rt);
    }
}

/// Sleeps until rung, until the network has news (with peers on other
/// machines), or until `timeout`.
fn sleep(rt: &Runtime, guard: goal_transport::shm::SleepGuard<'_>, timeout: Duration) {
    match rt.wake_fd {
        Some(fd) => guard.sleep_or_readable(fd, timeout),
        None => guard.sleep(timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ticks;

    fn us(n: u64) -> u64 {
        ticks::of(Duration::from_micros(n))
    }

    #[test]
    fn the_spin_grows_to_catch_waits_that_end_soon_after_a_sleep() {
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
    fn short_waits_leave_the_spin_alone() {
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
    fn a_fixed_spin_does_not_adapt() {
        let spin = Spin::new(Duration::from_micros(50), false);
        for _ in 0..100 {
            spin.record(us(400), true);
        }
        assert_eq!(spin.limit(), us(50));
    }
}
