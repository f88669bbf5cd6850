//! The doorbell: where a rank's threads sleep until someone writes to them.
//!
//! Two words in the header of each inbox, each on its own line:
//!
//! * `bell`: a futex word, bumped by whoever wants to wake the sleepers;
//! * `sleepers`: how many threads of the owner are between
//!   [`Doorbell::prepare`] and the end of their sleep.
//!
//! No wake-up is lost, by the usual Dekker-style argument, with the
//! barrier split unevenly between the sides (`crate::sync`: the waker's
//! is a compiler barrier, the sleeper's a `membarrier(2)` that runs a full
//! barrier on every CPU running a peer):
//!
//! ```text
//! sleeper                                 waker (a peer, after writing)
//!   sleepers += 1; heavy fence              publish data (Release)
//!   token = bell                            light fence
//!   re-check every source of work           if sleepers > 0:
//!   futex_wait(bell, token)                     bell += 1; futex_wake(bell)
//! ```
//!
//! Either the waker sees `sleepers > 0` and bumps `bell` (then the futex
//! wait returns at once or is woken), or its data was visible when the
//! heavy fence returned and the sleeper's re-check sees it. Peers only pay
//! for a wake-up (a syscall) when someone actually sleeps, and a sender
//! never waits for its write to reach the receiver's core.
//!
//! A third word, `polling`, counts the owner's threads that are polling
//! right now ([`Doorbell::polling`]). While it is non-zero a waker skips the
//! wake-up even if some other thread of the owner sleeps: the poller will see
//! the data. This keeps a spinning waiter's peer from paying a system call
//! per message because a helper thread sleeps beside it. A poller that stops
//! (the guard drops: `polling -= 1`, SeqCst) must re-check for work once
//! afterwards; by the same argument as above, data it misses in that
//! re-check was written after the decrement and its waker saw `polling == 0`.
//! Since the waker's barrier is light, the decrement is followed by a heavy
//! fence when a thread of the owner sleeps (only then can a wake-up be
//! lost: a thread that goes to sleep later issues its own).
//!
//! The futex is *shared* (no `FUTEX_PRIVATE_FLAG`): the kernel keys it by
//! the memfd page, so a waker in another process, which maps the inbox at
//! another address, reaches the same waiters.
//!
//! The heavy fence covers every process that may ring: the global form
//! (`membarrier(GLOBAL_EXPEDITED)`, which interrupts every CPU running a
//! rank) while peers on this machine map the inbox, the private one (only
//! this process' CPUs) for a rank alone on its machine
//! ([`Doorbell::rung_from_here_only`]), whose wakers are its own threads.
//! Two emulated hosts, one rank each, a 1 MiB allreduce behind a
//! computation: the helper's sleeps made 54 global fences per operation,
//! each an interrupt on the other rank's computing CPU too.
//!
//! A thread that sleeps while another thread of the owner polls (the
//! `polling` count above zero, which no peer rings through) needs neither
//! form: [`Doorbell::prepare_unfenced`].

use super::layout::{H_BELL, H_POLLING, H_SLEEPERS};
use super::map::Mapping;
use crate::atomic::AtomicBool;
use crate::sync::{heavy_fence_global, heavy_fence_private, AtomicU32, Ordering};
use crate::sys;
use std::ptr::NonNull;
use std::sync::Arc;
use std::time::Duration;

/// Where a process sleeps until a peer or another of its threads rings.
///
/// Invariant: `map` is an inbox mapping, and `bell`/`sleepers` are its header words.
pub struct Doorbell {
    map: Arc<Mapping>,
    /// No other process rings here (see [`Doorbell::rung_from_here_only`]).
    private: AtomicBool,
}

impl Doorbell {
    /// The doorbell in the header of the inbox `map`.
    pub(crate) fn new(map: Arc<Mapping>) -> Doorbell {
        // Check the offsets once (they panic if out of range).
        let _ = (map.atomic_u32(H_BELL), map.atomic_u32(H_SLEEPERS));
        Doorbell { map, private: AtomicBool::new(false) }
    }

    /// Says that no other process will ring this doorbell (no peer on this
    /// machine maps the inbox): its sleepers' heavy fence need only cover
    /// this process' own threads. Call it before any thread sleeps here.
    pub fn rung_from_here_only(&self) {
        self.private.store(true, Ordering::Relaxed);
    }

    /// The sleeper's side of the asymmetric barrier, as wide as the wakers.
    fn heavy_fence(&self) {
        if self.private.load(Ordering::Relaxed) {
            heavy_fence_private();
        } else {
            heavy_fence_global();
        }
    }

    fn bell(&self) -> &AtomicU32 {
        self.map.atomic_u32(H_BELL)
    }

    fn sleepers(&self) -> &AtomicU32 {
        self.map.atomic_u32(H_SLEEPERS)
    }

    /// Registers the caller as a sleeper. After this, re-check for work; then
    /// `sleep` or drop the guard.
    pub fn prepare(&self) -> SleepGuard<'_> {
        self.register(true)
    }

    /// [`prepare`](Self::prepare) without the heavy fence, for a thread of
    /// the owner that sleeps while another one's polling mark is set (see
    /// [`polling`](Self::polling)): peers then skip the wake-up whatever
    /// `sleepers` says, and the owner's own threads wake it with
    /// [`ring`](Self::ring), whose read-modify-write pairs with the one
    /// here. Should the mark be lifted without a fence while the caller
    /// sleeps ([`unmark_polling_unfenced`](Self::unmark_polling_unfenced)),
    /// a peer's write may go unrung, as there: the caller bounds its sleep
    /// with a short timeout. Saves `membarrier(2)`, an interrupt on every
    /// CPU that runs a rank (a VM exit each in a virtual machine), on every
    /// sleep of a helper beside an application that calls Run and Wait in
    /// a loop.
    pub fn prepare_unfenced(&self) -> SleepGuard<'_> {
        self.register(false)
    }

    /// Counts the caller among the sleepers, then (`fenced`) issues the
    /// heavy fence, and reads the bell's token.
    fn register(&self, fenced: bool) -> SleepGuard<'_> {
        self.sleepers().fetch_add(1, Ordering::SeqCst);
        if fenced {
            self.heavy_fence();
        }
        let token = self.bell().load(Ordering::SeqCst);
        SleepGuard { bell: self, token }
    }

    /// Marks the caller as actively polling until the guard drops (see the
    /// module documentation: after the drop, re-check for work once).
    pub fn polling(&self) -> PollGuard<'_> {
        self.mark_polling();
        PollGuard { bell: self }
    }

    /// Counts one more poller, without a guard: the caller pairs it with
    /// [`unmark_polling`](Self::unmark_polling) and re-checks for work after that.
    pub fn mark_polling(&self) {
        self.map.atomic_u32(H_POLLING).fetch_add(1, Ordering::SeqCst);
    }

    /// Undoes one [`mark_polling`](Self::mark_polling).
    pub fn unmark_polling(&self) {
        self.map.atomic_u32(H_POLLING).fetch_sub(1, Ordering::SeqCst);
        if self.sleepers().load(Ordering::SeqCst) > 0 {
            self.heavy_fence();
        }
    }

    /// Undoes one [`mark_polling`](Self::mark_polling) without the heavy
    /// fence, for a caller that would rather leave the rare race to its
    /// sleepers' timeouts than pay `membarrier(2)` (9 us in a VM) now. A
    /// peer's write that was still in its CPU's store buffer when that
    /// peer read `polling` (as not yet decremented, so it did not ring)
    /// may be missed by the caller's re-check; it is seen by the next
    /// thread of the owner that polls, or that sleeps (its
    /// [`prepare`](Self::prepare) fences), or by a sleeper at its timeout.
    /// Later writes ring as usual. Never a lost wake-up for good: every
    /// sleep is bounded.
    pub fn unmark_polling_unfenced(&self) {
        self.map.atomic_u32(H_POLLING).fetch_sub(1, Ordering::SeqCst);
    }

    /// Wakes every thread of this process that sleeps here.
    pub fn ring(&self) {
        wake(self.bell(), self.sleepers());
    }
}

/// Bumps `bell` and wakes its waiters, if `sleepers` says there are any.
/// The caller has published its data and issued a SeqCst fence, or relies
/// on the SeqCst RMW below.
fn wake(bell: &AtomicU32, sleepers: &AtomicU32) {
    bell.fetch_add(1, Ordering::SeqCst);
    if sleepers.load(Ordering::SeqCst) > 0 {
        let _ = sys::futex_wake(bell, i32::MAX);
    }
}

/// An active poller (see [`Doorbell::polling`]).
///
/// Invariant: while it lives, `polling` counts it.
pub struct PollGuard<'a> {
    bell: &'a Doorbell,
}

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        self.bell.unmark_polling();
    }
}

/// A registered sleeper (see [`Doorbell::prepare`]).
///
/// Invariant: while it lives, `bell.sleepers` counts it; `token` is the
/// value of `bell` read after registering.
pub struct SleepGuard<'a> {
    bell: &'a Doorbell,
    token: u32,
}

impl SleepGuard<'_> {
    /// Sleeps until rung, `fd` is readable, or `timeout` has passed (see
    /// the `dualwait` module: io_uring, or 1 ms steps without it).
    pub fn sleep_or_readable(self, fd: std::os::fd::RawFd, timeout: Duration) {
        crate::dualwait::wait(self.bell.bell(), self.token, fd, timeout);
    }

    /// Sleeps in the kernel until rung or `timeout` has passed.
    pub fn sleep(self, timeout: Duration) {
        // A wake-up between `prepare` and here changed `bell`: the wait then
        // returns at once (EAGAIN). Spurious returns are allowed by the contract.
        let _ = sys::futex_wait(self.bell.bell(), self.token, Some(timeout));
        // `self` drops here and unregisters.
    }
}

impl Drop for SleepGuard<'_> {
    fn drop(&mut self) {
        self.bell.sleepers().fetch_sub(1, Ordering::SeqCst);
    }
}

/// The waking side of a peer's doorbell, inside the peer's inbox.
pub(crate) struct RemoteBell {
    /// The peer's inbox, kept mapped for as long as the pointers below live.
    _map: Arc<Mapping>,
    /// Its `bell`, `sleepers` and `polling` words, checked once here
    /// (`Mapping::atomic_u32` asserts the offset on every call: with three
    /// calls, some 10 instructions of every send's wake-up check).
    bell: NonNull<AtomicU32>,
    sleepers: NonNull<AtomicU32>,
    polling: NonNull<AtomicU32>,
}

// SAFETY: the pointers point into `_map`'s shared mapping, reached only as
// atomics, which any thread may use; the mapping is `Send + Sync` (an
// `Arc` of it is held).
unsafe impl Send for RemoteBell {}
// SAFETY: as above: every access through the pointers is atomic.
unsafe impl Sync for RemoteBell {}

impl RemoteBell {
    /// The doorbell in the header of the peer inbox `map`.
    pub(crate) fn new(map: Arc<Mapping>) -> RemoteBell {
        let word = |offset| NonNull::from(map.atomic_u32(offset));
        let (bell, sleepers, polling) = (word(H_BELL), word(H_SLEEPERS), word(H_POLLING));
        RemoteBell { _map: map, bell, sleepers, polling }
    }

    /// Wakes the peer if it sleeps. The caller has published its writes and
    /// issued `sync::light_fence` since.
    #[inline]
    pub(crate) fn wake_if_sleeping(&self) {
        // SAFETY: the three words were checked by `atomic_u32` in `new`
        // (inside the mapping, aligned, writable), and `_map` keeps that
        // mapping alive as long as `self`.
        let (bell, sleepers, polling) = unsafe { (self.bell.as_ref(), self.sleepers.as_ref(), self.polling.as_ref()) };
        if polling.load(Ordering::SeqCst) == 0 && sleepers.load(Ordering::SeqCst) > 0 {
            wake(bell, sleepers);
        }
    }
}
