//! The helper thread of the `thread` and `spin` modes: where it runs
//! (`Placement`), its loop of polling briefly and sleeping on the doorbell,
//! and when it parks while an application thread waits (see `park`).

use super::park::{self, PARK_DEEP, PARK_MAX};
use super::*;

/// The longest the helper sleeps before it looks at a mark that lingers
/// while the application keeps calling Run and Wait. Looking every
/// [`MARK_LINGER`] woke the helper 5000 times a second during a latency
/// loop, each wake-up taking its core from a polling rank for a few
/// microseconds. The cost of the longer look: when such a loop turns into a
/// computation right after a Run, the mark can hold off background
/// progress for up to this long, once.
pub(super) const MAX_LINGER: Duration = Duration::from_millis(3);

/// Times in a row the helper waits for the engine's holder (see
/// [`await_holder`]) and looks again, before it sleeps (at most 1 ms)
/// instead.
const LOCK_MISSES: u32 = 64;

/// How long the helper sleeps when nothing is in flight and the
/// application has not called goal for [`ACTIVE_SPELL`] (a Run rings it).
const IDLE_SLEEP: Duration = Duration::from_secs(10);

/// How long after the application's last call the helper, with nothing in
/// flight, still sleeps at most [`MAX_LINGER`] rather than [`IDLE_SLEEP`].
/// A helper in the long sleep must be rung when the application sets its
/// mark (see `AppMark::touch`), a futex wake that cost every Run after a
/// Wait longer than the linger 7.5-12 us in this VM (`goal calibrate`'s
/// `send call` on shared memory, against 0.1 us); while the application
/// keeps calling, a look every 3 ms costs less, and the ring is left to
/// the first call after an idle spell.
pub(super) const ACTIVE_SPELL: Duration = Duration::from_millis(100);

/// How long the application's polling mark outlives its last Run or Wait.
const MARK_LINGER: Duration = Duration::from_micros(200);

/// Starts the helper thread of the `thread` and `spin` modes.
pub(crate) fn start_helper(rt: &Arc<Runtime>) -> Result<()> {
    if rt.cfg.progress == ProgressMode::Manual {
        return Ok(());
    }
    let r = rt.clone();
    let h = std::thread::Builder::new()
        .name("goal-progress".into())
        .spawn(move || {
            crate::engine::mark_carrier();
            place_helper(&r.cfg, r.rank);
            helper_loop(&r)
        })
        .map_err(|e| Error::new(ErrorKind::System, format!("starting the progress thread: {e}")))?;
    *rt.helper.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
    Ok(())
}

/// Applies `GOAL_PROGRESS_CPU` and `GOAL_PROGRESS_RT` to the calling
/// (helper) thread. Neither is essential: a refusal is said once, on the
/// rank it happened to, and the helper runs on as an ordinary thread.
pub(super) fn place_helper(cfg: &Config, rank: u32) {
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
    if let Some(nice) = cfg.helper_nice.filter(|_| !cfg.helper_rt) {
        // A woken thread preempts the computation on its CPU only if the
        // scheduler finds it eligible, and under EEVDF a thread that ran a
        // moment ago is not, until the next tick (4 ms here): a helper
        // answering a peer 100 us after its last turn waited that long.
        // Its weight at a negative nice makes the few microseconds it runs
        // per event count for little: across 2 emulated hosts, a 1 MiB
        // Iallreduce behind a computation stalled in 0 of 45 repetitions
        // at -10 against 2-5 at 0, in 4 runs each
        // (docs/measurements/overlap-stalls-2026-11-30).
        // SAFETY: setpriority has no memory preconditions; PRIO_PROCESS with
        // a thread id sets that thread's nice value on Linux.
        let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, nice) };
        if rc != 0 {
            say!(
                "goal (rank {rank}): GOAL_PROGRESS_NICE={nice}: the progress thread keeps its nice value ({})",
                std::io::Error::last_os_error()
            );
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
pub(super) struct Placement {
    /// The shared CPU, if any.
    pub(super) shared: Option<usize>,
    /// The CPUs the helper had before it moved there.
    pub(super) before: Option<affinity::CpuSet>,
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

pub(super) fn helper_loop(rt: &Runtime) {
    let spin = rt.cfg.helper_spin.unwrap_or_default();
    let yield_polls = yields(rt);
    let mut seen_epoch = rt.app_mark.epoch();
    // When the application last called goal, as far as we saw (ACTIVE_SPELL).
    let mut last_call = Instant::now();
    // How long the mark may linger before we look again (see MAX_LINGER).
    let mut linger = MARK_LINGER;
    // Engine-lock misses in a row (see LOCK_MISSES).
    let mut lock_misses = 0u32;
    let mut place = Placement::new(&rt.cfg);
    // How long the next park lasts at most (see PARK_DEEP).
    let mut park_for = PARK_MAX;
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
            last_call = Instant::now();
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
                match rt.try_progress_background() {
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
        if rt.kernel_deferred.load(Ordering::Acquire) {
            // Chains another application thread made ready: only a
            // carrier may submit them, and the waiting threads are not.
            match rt.try_engine() {
                Some(mut e) => e.submit_deferred(),
                None => yield_now(),
            }
        }
        if rt.app_waiting.load(Ordering::Acquire) > 0 {
            // The same Wait still going after a whole park: park longer.
            park_for = if park::park(rt, park::park_for(rt, park_for)) { (park_for * 2).min(PARK_DEEP) } else { PARK_MAX };
            continue;
        }
        park_for = PARK_MAX;
        // Another thread holds the engine (a Run, a Test, a Wait's first
        // batch of polls, which does not count as waiting): look again once
        // it lets the engine go, up to LOCK_MISSES times, before registering
        // as a sleeper.
        // Registering runs a global memory barrier (`membarrier`, an
        // interrupt on every CPU, each a VM exit in a virtual machine), and
        // paid on every look it was most of the helper's time while its
        // application streamed 32 MiB to another host.
        if rt.app_waiting.load(Ordering::Acquire) == 0 && lock_misses < LOCK_MISSES && !rt.app_mark.is_set() && rt.engine.is_held() {
            lock_misses += 1;
            await_holder(rt);
            continue;
        }
        // Whether another thread holds the engine, and so polls the network.
        let mut held = false;
        // Sleep: register, re-check, then wait for a ring. While the
        // application's mark is set, peers on this machine do not ring (it
        // polls them itself), so the registration goes without the global
        // fence, whose interrupt on every CPU that runs a rank would land
        // in the middle of the ranks' copies: 2 ranks, allgather of 4 MiB
        // in a loop, 464-670 fences per 1,000 iterations with it, 80-109
        // without, the loop 2-6 % faster (`quiet`; its sleep is then
        // bounded by `linger`).
        let quiet = rt.app_mark.is_set();
        let guard = if quiet { rt.bell.prepare_unfenced() } else { rt.bell.prepare() };
        // (Plain increments: only the helper sleeps here.)
        let count = if quiet { &rt.sleeps_quiet } else { &rt.sleeps_fenced };
        count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
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
        // waiting application thread (a Run, a Test) is brief: wait for it
        // (`await_holder`, outside such loops: the mark is lifted), then
        // look again.
        let (made, busy, must_poll) = if rt.app_waiting.load(Ordering::Acquire) > 0 {
            (0, false, false)
        } else {
            match rt.try_engine() {
                Some(mut e) => {
                    lock_misses = 0;
                    let made = e.poll_background();
                    (made, e.busy(), e.must_poll())
                }
                // The holder is an application thread inside a call of a
                // loop of Runs and Waits (the mark is set), say a Run that
                // copies a large block: it does the work. Sleep until the
                // mark has lingered; looking again after a yield, up to
                // LOCK_MISSES times, only took the holder's CPU in slices
                // (2 ranks, allgather of 4 MiB: 60-175 such looks per 30
                // iterations).
                None if rt.app_mark.is_set() => {
                    held = true;
                    (0, false, false)
                }
                None if lock_misses < LOCK_MISSES => {
                    lock_misses += 1;
                    drop(guard);
                    await_holder(rt);
                    continue;
                }
                // A holder that keeps the lock (a thread calling Progress in
                // a loop): sleep briefly rather than wait without end.
                None => {
                    held = true;
                    (0, true, true)
                }
            }
        };
        if made > 0 {
            continue;
        }
        let mut timeout = if must_poll {
            Duration::from_millis(1)
        } else if rt.app_mark.is_set() || rt.app_waiting.load(Ordering::Acquire) > 0 {
            // (An application thread that waits now may leave its mark set
            // as it returns, and start an execution behind it.)
            linger
        } else if busy {
            LIVENESS_TICK
        } else if last_call.elapsed() < ACTIVE_SPELL {
            MAX_LINGER
        } else {
            IDLE_SLEEP
        };
        if quiet {
            // The mark may have been lifted since, without a fence: a ring
            // lost to that race waits this long at most.
            timeout = timeout.min(linger);
        }
        // Deaf while the engine's holder polls the network (`held`), if
        // the application still waits once the flag is up (pairs with
        // Wait's exit and Run's check, both SeqCst), or while its mark
        // lingers: it calls Run and Wait in a loop and will poll the
        // network itself in a moment, as peers on this machine, which do
        // not ring while the mark is set, assume. Woken by a packet between
        // two calls (a message that arrives during the application's own
        // MPI barrier, say), the helper took the CPU from its rank: 2
        // emulated hosts, a loop of MPI_Barrier and an 8-byte Ibcast with
        // libgoal-mpi under Open MPI, receiving rank p50/p90 12-13/22-23
        // us, 8-11/15-16 deaf (native 10-12/14). A Run that lifts the mark
        // after a gap rings it (`AppMark::after_gap`), and it lifts a mark
        // that lingers itself after `linger`.
        let deaf = rt.wake_fd.is_some() && {
            rt.app_mark.helper_deaf.store(true, Ordering::SeqCst);
            held || rt.app_waiting.load(Ordering::SeqCst) > 0 || rt.app_mark.is_set()
        };
        // A longer sleep is rung by a Run that lifts the mark without the
        // fence (see `AppMark::after_gap`).
        let mut long = timeout > MAX_LINGER;
        if long {
            // Pairs with the application's setting of the mark (`touch`):
            // either it sees this flag and rings, or this sees the mark.
            rt.app_mark.helper_long_sleep.store(true, Ordering::SeqCst);
            if rt.app_mark.set.load(Ordering::SeqCst) {
                rt.app_mark.helper_long_sleep.store(false, Ordering::Relaxed);
                long = false;
                timeout = linger;
            }
        }
        if deaf {
            // The waiting application polls the network itself: a helper
            // woken by every packet would only take the CPU from it
            // (measured: 8-byte latency between two hosts 89 us, not 11).
            // So does a thread that holds the engine; and while it moves a
            // transfer the network's descriptor stays ready until it reads
            // or writes, so a sleep that listened to the network returned
            // at once, again and again, each turn with its global barrier:
            // 2 emulated hosts, 1 rank each on one CPU, a 16 MiB exchange
            // took 16-21 ms with the helper against 9-13 ms in `manual`
            // mode. Wait's exit and the next Run ring a deaf helper (see
            // `hand_back` and `AppMark::after_gap`); the timeout bounds the
            // rest (a Run that returns to a computation: `linger`).
            guard.sleep(timeout);
        } else {
            sleep(rt, guard, timeout);
        }
        rt.app_mark.helper_deaf.store(false, Ordering::Relaxed);
        if long {
            rt.app_mark.helper_long_sleep.store(false, Ordering::Relaxed);
        }
        if busy {
            if let Some(mut e) = rt.try_engine() {
                e.check_peers_if_due();
            }
        }
    }
}

/// Waits until the engine's holder lets it go, asking a Run that holds
/// it to poll on our behalf first (`Runtime::helper_wants`): asleep on the
/// lock, whose release wakes us, which we then let go at once (the caller
/// looks again).
///
/// This was a yield, meant to give the holder the CPU for a moment. But
/// the holder is often an application thread inside a Run that the
/// helper, woken by a message that came during that Run, preempted on its
/// own CPU. Under EEVDF the helper, having just run, cannot preempt that
/// thread again, whether it yields or is woken, until the next tick gives
/// it a turn: the thread left its Run for its computation and the message
/// waited 1-4 ms unanswered (2 emulated hosts, a 1 MiB Iallreduce behind 9
/// ms of computation took over 10 ms in 10-23 of 45 repetitions, against
/// 8.7 alone; 259 of 662 preempted helpers waited over 1 ms). So the Run
/// answers it before it returns.
///
/// With only peers on this machine (no network to sleep on) the helper
/// still yields: a message from them waits in a ring that the rank's next
/// Wait reads anyway, and there the wait on the lock made 2-rank
/// collectives in a loop 3 % slower (8 of 32 points slower in all 5
/// alternated rounds, against 1 of 32 in a control pair of builds).
fn await_holder(rt: &Runtime) {
    if rt.cfg.helper_rt {
        // A real-time thread's yield never lets an ordinary one run, and the
        // lock's holder may be one waiting for this very CPU.
        std::thread::sleep(Duration::from_micros(20));
    } else if rt.wake_fd.is_none() {
        yield_now();
    } else {
        rt.helper_wants.store(true, Ordering::Relaxed);
        drop(rt.lock_engine());
        rt.helper_wants.store(false, Ordering::Relaxed);
    }
}
