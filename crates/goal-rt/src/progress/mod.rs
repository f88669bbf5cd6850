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
//! atomic state, and if the thread waiting for it sleeps, the doorbell is
//! rung so that it re-checks (`ExecShared::publish`): with several
//! application threads, the one that finishes an execution is often not
//! the one waiting for it, and peers do not ring while one of ours polls.
//! A Wait that polled under the polling mark while another thread waited
//! rings once as it leaves, for what arrived meanwhile for that thread.

use crate::affinity;
use crate::config::{Config, ProgressMode};
use crate::engine::{CpuMates, ExecShared, Thresholds, RUNNING};
use crate::error::{Error, ErrorKind, Result};
use crate::Runtime;
use goal_transport::shm::ShmNode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) mod appmark;
pub(crate) mod helper;
pub(crate) mod park;
pub(crate) mod spin;


/// Polls made per taking of the engine lock while an application thread
/// waits (one with more ranks than cores, see [`batch`]).
const POLL_BATCH: u32 = 64;

/// Polls per batch of a Wait that holds its CPU in a standoff (see
/// [`batch`]): about 3-5 us here, the time the other CPU takes to switch
/// to the holder's partner and for that partner to post its message.
/// 128 polls kept half of the standoffs, 512 lengthened the iterations
/// that hold for nothing (sub-group of 2 of 4, 64 KiB).
const HOLD_BATCH: u32 = 4 * POLL_BATCH;

/// How long a sleeper sleeps at most before it checks peer liveness.
const LIVENESS_TICK: Duration = Duration::from_millis(100);

/// The protocol thresholds: the environment's, else `measured` (by one rank
/// of this machine, see `calibrate`).
pub(crate) fn thresholds(cfg: &Config, shm: &ShmNode, size: usize, measured: Thresholds) -> Thresholds {
    let eager = cfg.eager_limit.unwrap_or(measured.eager).min(shm.max_eager());
    let heap_eager = measured.heap_eager.min(eager);
    let cma = cfg.cma_range.unwrap_or(measured.cma);
    // A range the environment fixes decides with cores shared too.
    let cma_shared = cfg.cma_range.map_or(measured.cma_shared, crate::engine::cma_range_found);
    let credit = (cfg.unexpected_bytes / (size.max(2) as u64 - 1)).max(eager as u64);
    // Stream or CMA per message from 64 KiB, unless the environment fixes
    // the CMA range or turns this off: within the eager limit too, for the
    // sends that go by rendezvous there (`eagerness`'s choice, a full
    // ring). With a calibrated limit of 64 KiB and the vCPUs apart, an
    // exchange of 64 KiB took 33-40 us eagerly and as long by the stream's
    // two copies, where Open MPI's and MPICH's single copy took 9-12.
    let adapt_from = if cfg.cma_range.is_none() && cfg.adapt { 64 << 10 } else { usize::MAX };
    // Eager or rendezvous per message from 16 KiB to 64 KiB, unless the
    // environment fixes the limit or the CMA range, or turns this off.
    let eager_adapt = if cfg.eager_limit.is_none() && cfg.cma_range.is_none() && cfg.adapt { crate::eagerness::EAGER_MAX.min(shm.max_eager()) } else { 0 };
    Thresholds { eager, heap_eager, cma, cma_shared, credit, net_eager: cfg.net_eager, net_eager_one_rail: cfg.net_eager_one_rail, adapt_from, eager_adapt }
}

/// Blocks the calling application thread until `shared` is no longer running.
pub(crate) fn wait(shared: &ExecShared) {
    wait_until(shared, None, None);
}

/// Something a Wait keeps moving besides goal (the MPI layer's waits keep
/// the MPI library moving): `f` is called on the waiting thread, without
/// any lock of goal's held, after each batch of polls while it polls, and
/// at least every `every` while it sleeps; `true` ends the Wait (the
/// execution still running).
pub(crate) struct Poke<'a> {
    pub(crate) f: &'a mut dyn FnMut() -> bool,
    pub(crate) every: Duration,
}

/// As [`wait`], but returns by `deadline` at the latest (running or not),
/// and with a `poke`, as soon as it returns `true`. Returns whether the
/// poke ended the Wait.
///
/// With a poke, a sleep that ends without news (at `every`, for the poke)
/// is followed by one batch of polls, not by a whole spin: a Wait that
/// sleeps for milliseconds wakes every `every` to poke, and spinning
/// `GOAL_SPIN_US` (up to 1 ms, adapted) after each would keep the CPU
/// busy most of the time. A wake-up with news spins as usual.
pub(crate) fn wait_until(shared: &ExecShared, deadline: Option<Instant>, mut poke: Option<Poke<'_>>) -> bool {
    let rt: &Runtime = &shared.rt;
    let ran = park::at_wait(rt, shared);
    let past = || deadline.is_some_and(|d| Instant::now() >= d);
    if shared.state.load(Ordering::Acquire) != RUNNING {
        if rt.cfg.progress != ProgressMode::Manual {
            let computed = rt.app_mark.note_finished_wait(shared.sched_id, shared.run_at.load(Ordering::Relaxed), ran);
            park::finished_wait(rt, shared, computed);
            // (A Run after a gap lifted the mark, and the execution ended
            // inside it.)
            if !rt.app_mark.is_set() && rt.try_engine().is_some_and(|e| !e.busy()) {
                rt.app_mark.set_idle(&rt.bell);
            }
        }
        return false;
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
    // Polls per taking of the engine lock, and between two yields (as
    // many as ever if the engine is held here and `batch` cannot look).
    let mut polls = POLL_BATCH;
    if let Some(mut e) = rt.engine.try_lock() {
        polls = batch(rt, &e, shared);
        let long_before = e.long_end();
        let batch = poll_batch(&mut e, shared, polls);
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
                } else {
                    rt.app_mark.set_idle(&rt.bell);
                }
            }
            rt.spin.record(0, false);
            return false;
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
            rt.app_mark.note_wait(shared.sched_id, shared.run_at.load(Ordering::Relaxed), entry, ran);
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
    // The quiet spell the Spin learns from (see `Spin`): when it began (the
    // entry, or the last news), and whether this thread slept in it.
    let mut quiet_from = entry;
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
    // The poke ended the Wait.
    let mut poked = false;
    // Just woken without news, with a poke: one batch, then sleep again.
    let mut quiet_wake = false;
    loop {
        if past() {
            break;
        }
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
                        (news, done) = poll_batch(&mut e, shared, polls);
                        if let Some((busy, end)) = done {
                            others_busy = Some(busy);
                            long_end = end;
                            break 'spin;
                        }
                    }
                    None => std::hint::spin_loop(),
                }
                latest = crate::ticks::now();
                if let Some(p) = poke.as_mut() {
                    if (p.f)() {
                        poked = true;
                        break;
                    }
                }
                if news {
                    // With more ranks than cores a Wait's spell is the
                    // whole Wait, as before spells: its polls yield, and
                    // longer spins that stood in for sleeps made the 4-rank
                    // alltoall of 1 MiB 1.07x slower (4 of 4 rounds).
                    if !rt.cores_shared {
                        rt.spin.note_spell(latest.saturating_sub(quiet_from), slept);
                        (quiet_from, slept) = (latest, false);
                    }
                    since = latest;
                    quiet_wake = false;
                } else if quiet_wake || latest.saturating_sub(since) >= spin_ticks || past() {
                    break;
                } else if yield_polls {
                    yield_now();
                }
            }
        }
        if poked || shared.state.load(Ordering::Acquire) != RUNNING {
            break;
        }
        // Sleep: lift our mark (or peers would not ring), register,
        // re-check, then wait for a ring.
        if helper {
            rt.app_mark.lift(&rt.bell);
        }
        // Whoever finishes the execution rings while this is set (see
        // `ExecShared::publish`): another application thread that polls
        // finishes it as often as a message does.
        shared.asleep.store(true, Ordering::Relaxed);
        let guard = rt.bell.prepare();
        let must_poll = match rt.engine.try_lock() {
            Some(mut e) => {
                if e.poll() > 0 {
                    // Polling again, not asleep: no ring needed.
                    shared.asleep.store(false, Ordering::Relaxed);
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
            let most = if must_poll { Duration::from_millis(1) } else { LIVENESS_TICK };
            let most = poke.as_ref().map_or(most, |p| most.min(p.every));
            let left = deadline.map_or(most, |d| d.saturating_duration_since(Instant::now()));
            sleep(rt, guard, most.min(left));
        }
        shared.asleep.store(false, Ordering::Relaxed);
        slept = true;
        quiet_wake = poke.is_some();
        spell = crate::ticks::now();
        latest = spell;
        // (Also where a stall is reported: see `Engine::report_if_stalled`.)
        rt.lock_engine().check_peers_if_due();
    }
    shared.asleep.store(false, Ordering::Relaxed);
    if mark {
        // Peers skipped ringing while this thread polled, and it stopped
        // at its own execution's end: what came meanwhile for another
        // waiting thread is still unread, and that thread may sleep.
        rt.bell.ring();
    }
    rt.spin.record(latest.saturating_sub(quiet_from), slept);
    park::after_wait(rt, shared, entry, latest.max(long_end), ran);
    let last = rt.app_waiting.fetch_sub(1, Ordering::SeqCst) == 1;
    let busy = helper && others_busy.unwrap_or_else(|| rt.lock_engine().busy());
    leave(rt, helper, latest.max(long_end), busy, last);
    poked
}

/// Polls per batch of a Wait for `shared`, between two yields when it
/// yields: [`POLL_BATCH`], or with more ranks than cores
/// (`Runtime::cores_shared`) one while a rank the execution may wait for
/// last waited on this thread's CPU (see [`yields`]), or, for an execution
/// that moves messages of 64 KiB or more, while any other rank of this
/// machine did. Such an execution waits for copies that take
/// microseconds, and the rank on this CPU may have its own to make: a
/// sub-group of 2 of 4 ranks exchanging 64 KiB, whose partners sit on
/// different CPUs, polled 64 times while the other group's rank on its CPU
/// could have copied (4 alternated runs, allgatherv and alltoallv
/// 12.75 -> 11.45 us; Open MPI 12.2-12.4; the 4-rank world's 64 KiB and
/// 1 MiB points unchanged). Not with a CPU to itself (3 ranks on 2 CPUs:
/// yielding there only cost the lone rank a system call per poll, 1.05-
/// 1.11x at 64 KiB); nor for small messages, where the peer on another
/// CPU may be about to answer (`docs/measurements/small-4ranks-2026-11-29/`):
/// they poll [`POLL_BATCH`] times there.
///
/// One exception, [`HOLD_BATCH`]: when the ranks on this CPU are not peers
/// and every peer last waited on a lower-numbered CPU. Two sub-groups of
/// 2 ranks, each pair split over CPUs 0 and 1, start "crossed" when each
/// CPU first runs a rank of a different pair: each waits for a partner
/// queued behind the other's CPU-mate. Yielding on both sides swaps both
/// CPUs at once, and the new pair of running ranks is crossed again, so
/// every rank waited for two turns of its CPU. Here the rank on the
/// higher CPU holds its CPU for a longer batch while the lower one yields;
/// the lower CPU's next rank is the holder's partner, one pair meets, and
/// the other meets on the next turn (`docs/measurements/standoff-2026-12-02/`).
/// The same holds for small messages: two sub-groups of 2 of 4 ranks, each
/// running collectives of 8 bytes behind goal's world barrier, stood off in
/// most runs (1.2-1.7 us per collective) and now meet in most (0.32-0.46
/// us); behind a barrier outside goal, 1.0-2.1 us became 1.2-1.3
/// (`docs/measurements/small-standoff-2026-12-02/`). Once met, a pair runs
/// its exchange without yielding: the partner answers within the batch.
#[inline]
fn batch(rt: &Runtime, e: &crate::engine::Engine, shared: &ExecShared) -> u32 {
    if !rt.cores_shared {
        return POLL_BATCH;
    }
    polls_for(e.cpu_mates(&shared.peers), shared.large)
}

/// [`batch`]'s rule, given what [`Engine::cpu_mates`](crate::engine::Engine::cpu_mates)
/// found and whether the execution moves messages of 64 KiB or more.
fn polls_for(mates: CpuMates, large: bool) -> u32 {
    match mates {
        CpuMates::None => POLL_BATCH,
        CpuMates::Waiting => 1,
        CpuMates::Others if large => 1,
        CpuMates::Others => POLL_BATCH,
        CpuMates::Hold => HOLD_BATCH,
    }
}

/// Up to `polls` progress passes with the engine held, fewer if
/// `shared` finishes: whether any pass moved something, and, if `shared`
/// finished, whether other executions are in flight and when the last long
/// copy ended (`Engine::long_end`).
#[inline]
fn poll_batch(e: &mut crate::engine::Engine, shared: &ExecShared, polls: u32) -> (bool, Option<(bool, u64)>) {
    let mut news = false;
    e.in_wait = true;
    for _ in 0..polls {
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
    } else {
        // (A Wait that slept lifted the mark.)
        rt.app_mark.set_idle(&rt.bell);
    }
}

/// Data for executions still running must wake the helper from now on:
/// lifts the mark and rings; wakes a parked helper if this was the `last`
/// thread waiting.
fn hand_back(rt: &Runtime, last: bool) {
    rt.app_mark.lift(&rt.bell);
    rt.bell.ring();
    if last {
        park::unpark(rt);
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

/// Whether pollers hand the CPU over between batches of polls without
/// news. A waiting thread polls for `GOAL_SPIN_US` before it sleeps; with
/// more ranks than cores, the rank we wait for may need the very CPU our
/// polling holds, so a poller then calls `sched_yield` after every batch.
/// Measured here (4 ranks on 2
/// cores, kernel 6.18, ranks pinned or not): a barrier took 14-16 us when
/// polling 2 us without yielding and then sleeping (each hop a futex
/// wake-up), 6.2 us pinned / 13 us unpinned when yielding for 50 us; with
/// a helper thread per rank, 55-96 us against 6.3-13 us.
///
/// With more ranks than cores, a Wait yields after every poll without
/// news while a rank its execution may wait for last waited on this
/// thread's CPU (each rank publishes the CPU it waits on:
/// `Engine::cpu_mates`), as Open MPI does after every empty poll
/// when oversubscribed: that rank cannot run while we poll, and the two
/// batches of 64 polls (1-3 us) before the first yield were lost on each
/// hop of an exchange. While the ranks it waits for sit on other CPUs,
/// where they may be running, batches stay as they were: yielding at once
/// there too took 8-byte bcast and scatter from 0.7 to 1.2-1.8 us (their
/// root on the other CPU was about to send). Measured, 4 ranks on 2 cores,
/// 8 B, paired against 64-poll batches everywhere: exchanges and barrier
/// 10-20 % faster, gather and reduce 35 %, bcast and scatter as fast, a
/// sub-group of 2 of 4 unchanged (docs/measurements/small-4ranks-2026-11-29).
///
/// The same holds with a core per rank when the ranks are not bound to
/// distinct CPUs and the machine is busy: a rank woken by a peer's ring
/// is often placed on the waker's CPU (the scheduler's wake-affine
/// choice), where the waker polls on, so every hop waited for the poller's
/// spin to end. Measured (2 unbound ranks, 2 cores, 5 compilers running
/// beside them): an 8-byte round trip took 1 000 us (the adaptive spin
/// grew to its 1 ms cap), 120 us with a fixed 50 us spin, and 6.2 us
/// yielding; Open MPI, which never sleeps and so is never moved, 0.8 us;
/// goal with ranks bound to CPUs 0 and 1, 1.1 us without yielding.
fn yields(rt: &Runtime) -> bool {
    rt.yield_polls
}

/// Gives the CPU to another runnable thread, if any.
fn yield_now() {
    // SAFETY: sched_yield has no preconditions.
    unsafe { libc::sched_yield() };
}

#[cfg(test)]
mod tests {
    use super::{polls_for, CpuMates, HOLD_BATCH, POLL_BATCH};

    #[test]
    fn a_peer_on_this_cpu_makes_every_wait_yield_after_each_poll() {
        assert_eq!(polls_for(CpuMates::Waiting, false), 1);
        assert_eq!(polls_for(CpuMates::Waiting, true), 1);
    }

    #[test]
    fn beside_other_ranks_only_large_executions_yield_after_each_poll() {
        assert_eq!(polls_for(CpuMates::Others, true), 1);
        assert_eq!(polls_for(CpuMates::Others, false), POLL_BATCH);
        assert_eq!(polls_for(CpuMates::None, true), POLL_BATCH);
    }

    #[test]
    fn the_holder_of_a_standoff_holds_whatever_its_messages() {
        assert_eq!(polls_for(CpuMates::Hold, true), HOLD_BATCH);
        assert_eq!(polls_for(CpuMates::Hold, false), HOLD_BATCH);
    }
}
