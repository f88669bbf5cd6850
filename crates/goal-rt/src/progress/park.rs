//! How the helper sleeps while an application thread waits ([`park()`]), and
//! who wakes it: the Wait that leaves work in flight ([`unpark`]), and a Run
//! that may start a computation ([`at_run`]).
//!
//! With more ranks than cores, the helper parks on a timer ([`ParkTimer`])
//! rather than on the count of waiting threads. A Run of a schedule whose
//! Waits last long ([`LONG_WAIT`]) then arms the timer instead of waking
//! the helper, and the next Wait disarms it: the helper looks again only
//! if the application stays away from goal after its Run, and not, as a
//! park with a timeout does, every millisecond through a loop of long
//! Runs and Waits, each look taking a CPU that two ranks share. Once a
//! schedule has run [`LOOPED`] times in a row with its Wait right after
//! its Run, its Runs stop arming the timer (two system calls per
//! execution): the park's own 16 ms then bound, once, a computation after
//! a Run of it when the loop ends.

use super::*;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64};

/// How long the helper parks at most while an application thread waits
/// (see [`park()`]): deaf to the doorbell that long at most when a Run
/// follows the Wait. [`MAX_LINGER`](super::helper::MAX_LINGER) (3 ms), what
/// it was, kept collectives started right after a Wait from moving in the
/// background until then; `MARK_LINGER` (200 us) woke the helper during
/// long Waits more often than the rings it parks away from (a Wait
/// through 200 messages 300 us apart: 276 wake-ups, `modes.rs`).
pub(super) const PARK_MAX: Duration = Duration::from_millis(1);

/// The longest park (see [`park()`]) once the same Wait has outlasted
/// shorter ones: each park that ends with an application thread still
/// waiting doubles the next, from [`PARK_MAX`]. A helper woken every 1 ms
/// through a long Wait took the CPU from the thread that waits (the two
/// share it), and beside another process the scheduler then ran that
/// process before the waiting thread again: 2 ranks beside a busy process,
/// one-way latency of 100 ping-pongs in one schedule, 64 KiB 10.9 us with
/// wake-ups every 1 ms, 5.5 with every 20 ms (6.3 in `manual` mode; 4x
/// the involuntary context switches of `manual`). A Run wakes a helper
/// that parks longer than [`PARK_MAX`] (see [`at_run`]), as the park's
/// timeout would have.
///
/// With a [`ParkTimer`], the helper parks this long from the first look
/// while the application waits for a long schedule's execution.
/// For a long schedule run in a loop (see [`LOOPED`]), it bounds how long
/// the first computation after its loop goes without the helper.
pub(super) const PARK_DEEP: Duration = Duration::from_millis(16);

/// An execution at least this long from its Run to the end of its Wait
/// makes its schedule long (see [`Rhythm`]):
/// the schedule's next Runs arm the [`ParkTimer`] rather than leave the
/// helper to its park's timeout, which a Wait this long meets every
/// second time or more. Shorter schedules keep the timeout: arming and
/// disarming the timer are two system calls in the Run and the Wait, and
/// with more ranks than cores each return from one lets the scheduler
/// hand the CPU to another rank (measured in a 1 MiB gather, 170 us per
/// execution: an arm took 6-7 us on average, a disarm 1-3, and the
/// gather was 13 % slower with them than without).
const LONG_WAIT: Duration = Duration::from_micros(500);

/// [`LONG_WAIT`] in ticks (the clock's rate known).
pub(crate) fn long_wait() -> u64 {
    crate::ticks::of(LONG_WAIT)
}

/// How long after a Run of a long schedule the helper looks, if the
/// application has not called Wait by then: about when it used to (a park
/// without the timer lasts at most [`PARK_MAX`], so its look came half of
/// that after such a Run on average). Across 4 emulated hosts on 2 CPUs
/// the overlap of a 1 MiB bcast and allreduce read the same with 1 ms
/// and with 250 us here, within their spread of some 6 points. A timer
/// under 1 ms costs the Run more to arm (3.7 us against 0.9 in this VM,
/// where the host programs it), which a long schedule's millisecond
/// absorbs.
const PARK_RUN: Duration = Duration::from_micros(250);

/// The same after a Run that found the application computing since its
/// last call (`AppMark::after_gap`): it likely computes again now.
const PARK_GAP: Duration = Duration::from_micros(100);

/// Executions in a row, each waited for right after its Run, after which
/// a long schedule counts as run in a loop (see [`Rhythm`]): its Runs
/// stop arming the timer. Arming at the Run's end and disarming at the
/// Wait's start, with more ranks than cores, made a loop of 1 MiB
/// allreduces (4 ranks on 2 CPUs) 1.12-1.14x `manual` mode, and 1.01-1.05x
/// without them; alltoall 1.09-1.11x and 1.01-1.03x. Each return from a
/// system call there lets the scheduler hand the CPU to another rank.
/// The loop's end costs the first execution computed behind at most one
/// park ([`PARK_DEEP`]) without the helper: the Wait then notes the
/// computation and the next Runs arm the timer again. (Parks of 4 ms
/// for such schedules left alltoall and allgather of 1 MiB 2-3 % slower
/// than 16 ms parks.)
const LOOPED: u32 = 16;

/// How a schedule's executions have gone lately: the choices of the park
/// for its Runs and Waits. Written by the Waits, read by the Runs and the
/// helper, without order: a stale reading costs one execution the old
/// choice.
#[derive(Default)]
pub(crate) struct Rhythm {
    /// An execution took [`LONG_WAIT`] or more from its Run to the end of
    /// its Wait (and none since took less than half of that).
    long: AtomicBool,
    /// Executions in a row waited for right after their Run, up to
    /// [`LOOPED`].
    looped: AtomicU32,
}

impl Rhythm {
    #[inline]
    pub(crate) fn is_long(&self) -> bool {
        self.long.load(Ordering::Relaxed)
    }

    #[inline]
    fn is_looped(&self) -> bool {
        self.looped.load(Ordering::Relaxed) >= LOOPED
    }

    /// An execution waited for `right_after` its Run or not.
    #[inline]
    fn note(&self, right_after: bool) {
        let n = self.looped.load(Ordering::Relaxed);
        let m = if right_after { (n + 1).min(LOOPED) } else { 0 };
        if m != n {
            self.looped.store(m, Ordering::Relaxed);
        }
    }
}

/// What a helper parks on with more ranks than cores (see the module's
/// doc): a timer that a Run arms, and an event that a waker notifies.
/// (Waking through the timer itself, armed to fire at once, made a 1 MiB
/// gather with 4 ranks on 2 CPUs 3-4 % slower: the host programs and
/// delivers a timer interrupt for each wake-up.)
pub(crate) struct ParkTimer {
    timer: goal_net::Timer,
    event: goal_net::Notifier,
    /// A Run armed it and no Wait has disarmed it since (so that a Wait
    /// after a Run that did not arm it makes no system call).
    armed: AtomicBool,
    /// Runs that armed it, and how often it woke the helper (for
    /// `GOAL_DEBUG`'s summary; plain increments, each by one thread).
    arms: AtomicU64,
    fired: AtomicU64,
}

impl ParkTimer {
    /// A timer, or `None` if the kernel refuses one (the helper then parks
    /// on the count of waiting threads, as with a core per rank).
    pub(crate) fn new() -> Option<ParkTimer> {
        let timer = goal_net::Timer::new().ok()?;
        let event = goal_net::Notifier::new().ok()?;
        Some(ParkTimer { timer, event, armed: AtomicBool::new(false), arms: AtomicU64::new(0), fired: AtomicU64::new(0) })
    }

    fn arm(&self, after: Duration) {
        if self.timer.arm(after).is_ok() {
            self.armed.store(true, Ordering::Relaxed);
            self.arms.store(self.arms.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }

    /// Called by every Wait: a Run's timer is not needed while the
    /// application waits (it drives progress itself).
    #[inline]
    pub(super) fn disarm(&self) {
        if self.armed.load(Ordering::Relaxed) && self.armed.swap(false, Ordering::Relaxed) {
            let _ = self.timer.disarm();
        }
    }

    /// Wakes the parked helper.
    fn fire(&self) {
        self.event.notify();
    }

    /// Sleeps until the timer fires, the event is notified, or `timeout`;
    /// whether either happened.
    fn sleep(&self, timeout: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let mut fds = [self.timer.fd().as_raw_fd(), self.event.fd().as_raw_fd()].map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
        if goal_transport::sys::poll(&mut fds, ms).unwrap_or(0) == 0 {
            return false;
        }
        if fds[0].revents != 0 {
            self.fired.store(self.fired.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            self.timer.clear();
            self.armed.store(false, Ordering::Relaxed);
        }
        if fds[1].revents != 0 {
            self.event.clear();
        }
        true
    }
}

/// `GOAL_DEBUG`'s line on the helper's parks.
pub(crate) fn summary(rt: &Runtime) -> String {
    let (parks, looks) = (rt.parks.load(Ordering::Relaxed), rt.park_looks.load(Ordering::Relaxed));
    let mut line = format!("the helper parked {parks} time(s) while the application waited, {looks} of them ending at their timeout with it still waiting");
    line += &format!(
        "; it slept on the doorbell {} time(s) beside the application's mark, without a memory barrier on every CPU, and {} time(s) with one",
        rt.sleeps_quiet.load(Ordering::Relaxed),
        rt.sleeps_fenced.load(Ordering::Relaxed)
    );
    if let Some(t) = &rt.park_timer {
        line += &format!(
            "; parked on a timer through long Waits (more ranks than cores): {} Run(s) armed it, {} time(s) it fired (the application had not come back to Wait)",
            t.arms.load(Ordering::Relaxed),
            t.fired.load(Ordering::Relaxed)
        );
    }
    line
}

/// Sleeps while an application thread waits, until the last one leaves
/// Wait (or for `timeout`).
///
/// The waiting thread drives progress itself, and sleeps on the doorbell
/// when nothing comes. Were the helper asleep on the doorbell too, every
/// ring meant for that thread would wake both, and the helper, with
/// nothing to do, would take the CPU from the one that has: on this
/// machine's two cores, 2 ranks, a 4 MiB gather took 820 us in `thread`
/// mode with 12 000 context switches a second, against 500-590 us and
/// 1 600-4 700 in `manual` mode. So the helper sleeps on the count of
/// waiting threads instead, which only Wait's exit changes to zero (or on
/// the [`ParkTimer`], which that Wait fires).
///
/// A Wait that leaves nothing in flight does not wake the helper: the
/// wake-up would take the CPU from the application right after its Wait,
/// for nothing to do. Nor does the next Run (it did until issue 44: a Run
/// after a computation woke it, and the woken helper, on the Run's CPU,
/// took 7-22 us of the Run). The helper looks again after `timeout`:
/// [`PARK_MAX`], or longer through a long Wait, when the next Run wakes
/// it (see [`PARK_DEEP`]), or earlier when a Run's timer fires. Returns
/// whether an application thread still waits after the whole `timeout`.
pub(super) fn park(rt: &Runtime, timeout: Duration) -> bool {
    // Dekker with Wait's exit (see `unpark`): either we see the count at
    // zero, or the thread that brought it there sees us parked. The same
    // with the next Run (see `at_run`).
    // On the timer only through the Wait for a long schedule: elsewhere the
    // count's futex returns at once when the Wait ends before the helper
    // sleeps, and a helper that slept on through such short Waits made
    // 64 KiB collectives with 4 ranks on 2 CPUs 2-4 % slower.
    let timer = rt.park_timer.as_ref().filter(|_| rt.waits_long.load(Ordering::Relaxed));
    rt.helper_on_timer.store(timer.is_some(), Ordering::Relaxed);
    rt.helper_deep.store(timeout > PARK_MAX, Ordering::SeqCst);
    rt.helper_parked.store(true, Ordering::SeqCst);
    let n = rt.app_waiting.load(Ordering::SeqCst);
    let mut still = false;
    if n > 0 && !rt.shutdown.load(Ordering::Acquire) && !rt.kernel_deferred.load(Ordering::SeqCst) {
        let timed_out = match timer {
            Some(t) => !t.sleep(timeout),
            // Returns at once if the count moved since the load.
            None => matches!(goal_transport::sys::futex_wait(&rt.app_waiting, n, Some(timeout)), Ok(goal_transport::sys::FutexWait::TimedOut)),
        };
        still = timed_out && rt.app_waiting.load(Ordering::Acquire) > 0;
        // (Plain increments: only the helper parks.)
        rt.parks.store(rt.parks.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if still {
            rt.park_looks.store(rt.park_looks.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        }
    }
    rt.helper_parked.store(false, Ordering::Relaxed);
    rt.helper_deep.store(false, Ordering::Relaxed);
    still
}

/// How long the helper parks while an application thread waits, its last
/// park having been `last`: [`PARK_DEEP`] at once through the Wait for a
/// long schedule's execution when a Run's timer bounds the park (see
/// [`at_run`]).
pub(super) fn park_for(rt: &Runtime, last: Duration) -> Duration {
    if rt.park_timer.is_some() && rt.waits_long.load(Ordering::Relaxed) {
        PARK_DEEP
    } else {
        last
    }
}

/// Run of a schedule (its `rhythm`), before its start: the work this Run
/// starts may need the helper while the application computes. A helper parked longer than [`PARK_MAX`] through the Wait
/// that just ended is woken (see [`PARK_DEEP`]). Not after short Waits,
/// where the helper looks again within [`PARK_MAX`] anyway and a wake-up
/// would take 7-22 us of the Run (see [`park()`]). Nor, with a
/// [`ParkTimer`], for a long schedule (see [`LONG_WAIT`] and
/// [`after_run`]).
#[inline]
pub(crate) fn at_run(rt: &Runtime, rhythm: &Rhythm) {
    if rt.park_timer.is_some() && rhythm.is_long() {
        return;
    }
    if rt.helper_deep.load(Ordering::SeqCst) && rt.helper_deep.swap(false, Ordering::SeqCst) {
        wake(rt);
    }
}

/// Run, once its execution has started (`shared`; `started`: when the Run
/// began), `after_gap` when the application computed since its last call
/// (`AppMark::after_gap`): with a [`ParkTimer`], a helper parked on it is
/// timed rather than woken if the execution is of a long schedule not run
/// in a loop ([`LOOPED`]) and still running. It looks after [`PARK_RUN`]
/// ([`PARK_GAP`] after a gap) unless a Wait comes first. (Armed at the
/// Run's end, not its start: a Run may copy a large block itself, and a
/// timer armed before that copy fired during it, a look that took the CPU
/// from the copying rank.)
#[inline]
pub(crate) fn after_run(rt: &Runtime, shared: &ExecShared, started: u64, after_gap: bool) {
    let Some(t) = &rt.park_timer else { return };
    shared.started.store(started, Ordering::Relaxed);
    // (The next Wait tells a computation from time off the CPU by it; the
    // last Wait's stamp was for this Run.)
    rt.app_mark.wait_cpu.clear();
    if shared.rhythm.is_long() {
        rt.app_mark.run_cpu.set();
    }
    // (A helper parked on the count, through a short Wait, looks again
    // within PARK_MAX: no timer for it.)
    if shared.rhythm.is_long()
        && !shared.rhythm.is_looped()
        && rt.helper_parked.load(Ordering::SeqCst)
        && rt.helper_on_timer.load(Ordering::Relaxed)
        && shared.state.load(Ordering::Relaxed) == RUNNING
    {
        t.arm(if after_gap { PARK_GAP } else { PARK_RUN });
    }
}

/// Wait for `shared`, before the thread counts among the waiting ones:
/// the timer a Run armed is not needed while the application waits, and
/// the helper's next park lasts as long as this schedule's Waits do (see
/// [`park_for`]). Returns whether this thread ran its own code since the
/// Run of a long schedule, by its CPU time (see `CpuStamp`; `None`: no
/// such Run before this Wait).
#[inline]
pub(super) fn at_wait(rt: &Runtime, shared: &ExecShared) -> Option<bool> {
    let t = rt.park_timer.as_ref()?;
    t.disarm();
    let long = shared.rhythm.is_long();
    if rt.waits_long.load(Ordering::Relaxed) != long {
        rt.waits_long.store(long, Ordering::Relaxed);
    }
    if long {
        rt.app_mark.run_cpu.take_ran(rt.app_mark.tight_cpu_ns)
    } else {
        None
    }
}

/// Wait for `shared`, called at `entry` (after its first batch of polls),
/// whose execution it saw end at `end`: notes whether the execution
/// lasted long from its Run ([`LONG_WAIT`]), which makes its schedule's
/// Waits long, and whether the application computed between Run and Wait
/// (see [`LOOPED`]). (The length is measured from the Run rather than over
/// the Wait alone: a Run may make most of an exchange's copies itself, and
/// the Waits of a 1 MiB alltoall with 4 ranks on 2 CPUs were long in only
/// about half its executions, 930 us each.)
#[inline]
pub(super) fn after_wait(rt: &Runtime, shared: &ExecShared, entry: u64, end: u64, ran: Option<bool>) {
    if rt.park_timer.is_some() {
        // Between half of LONG_WAIT and all of it, as before: a schedule
        // whose executions take about that long would change its mind
        // every few Runs, and each change wakes the helper.
        let r = &shared.rhythm;
        let took = end.saturating_sub(shared.started.load(Ordering::Relaxed));
        let was = r.is_long();
        let long = if was { took >= rt.long_wait / 2 } else { took >= rt.long_wait };
        if was != long {
            r.long.store(long, Ordering::Relaxed);
        }
        // (The first batch of polls, before `entry`, may have made long
        // copies: the thread's CPU time up to the Wait's start tells.)
        r.note(ran.map_or(entry.saturating_sub(shared.run_at.load(Ordering::Relaxed)) < rt.app_mark.tight_loop, |ran| !ran));
        if long {
            rt.app_mark.wait_cpu.set();
        }
    }
}

/// Wait for `shared`, whose execution had ended before it was called, the
/// application having `computed` since its Run or not: if it did, its
/// schedule no longer runs in a loop (see [`LOOPED`]). If not, the Run
/// made the execution's copies itself and its last messages came before
/// this Wait: with more ranks than cores, that is the loop of a 1 MiB
/// alltoall for the rank that starts last, which took every such Wait for
/// the end of a computation, and armed the timer in every Run (4 ranks on
/// 2 CPUs, 200 executions: 250 of its Waits found their execution ended).
#[inline]
pub(super) fn finished_wait(rt: &Runtime, shared: &ExecShared, computed: bool) {
    if rt.park_timer.is_some() {
        shared.rhythm.note(!computed);
        if shared.rhythm.is_long() {
            rt.app_mark.wait_cpu.set();
        }
    }
}

/// Wakes a helper asleep in [`park()`]: called when the last waiting
/// thread leaves Wait with executions in flight, and at shutdown.
pub(crate) fn unpark(rt: &Runtime) {
    if rt.helper_parked.load(Ordering::SeqCst) {
        wake(rt);
    }
}

fn wake(rt: &Runtime) {
    // (Read after `helper_parked`, which the helper stored after this.)
    match rt.park_timer.as_ref().filter(|_| rt.helper_on_timer.load(Ordering::Relaxed)) {
        Some(t) => t.fire(),
        None => {
            let _ = goal_transport::sys::futex_wake(&rt.app_waiting, 1);
        }
    }
}
