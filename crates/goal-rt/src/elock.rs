//! The engine's lock: a futex lock whose release is a plain store.
//!
//! The thread that sends a small message writes it into the peer's ring
//! and, before returning to the application, releases the engine. The
//! ring's cache line sits in the receiving core, which polls it; the
//! write waits in the store buffer for that line, some 25-85 ns on this
//! machine's vCPUs. A locked instruction after the write (the `xchg` that
//! releases `std::sync::Mutex`) waits for it; a plain store does not, and
//! the sender returns while the line travels, as a sender of Open MPI's
//! does (its fast box is written with plain stores).
//!
//! A plain release needs the usual Dekker pair between the releaser
//! (`state = 0`, then read `waiters`) and a thread about to sleep
//! (`waiters += 1`, then read `state`): each side needs a store-load
//! barrier. The releaser's is made asymmetric: the sleeper issues
//! `membarrier(PRIVATE_EXPEDITED)`, which runs a full barrier on every
//! CPU running a thread of this process, so the releaser needs only a
//! compiler barrier (see `goal_transport::sync::light_fence`). Where the
//! kernel has no membarrier, the releaser issues a full fence and the lock
//! is as costly as the standard one.

use goal_transport::sync::{heavy_fence_private, light_fence, AtomicU32, Ordering};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// How many times a contended `lock` tries again before it sleeps.
const SPINS: u32 = 100;

/// A mutual-exclusion lock around `T` (no poisoning: the engine stays
/// usable after a panic, as its callers assumed with `std`'s).
pub(crate) struct EngineLock<T> {
    /// 0 free, 1 held.
    state: AtomicU32,
    /// Threads inside `lock`'s sleeping path.
    waiters: AtomicU32,
    data: UnsafeCell<T>,
}

// SAFETY: the lock hands `&mut T` to one thread at a time (`state` goes
// 0 -> 1 by compare-and-swap only), so sharing it moves `T` between
// threads, which `T: Send` allows. (`Send` follows from the fields.)
unsafe impl<T: Send> Sync for EngineLock<T> {}

/// The lock held; released on drop.
pub(crate) struct EngineGuard<'a, T> {
    lock: &'a EngineLock<T>,
}

impl<T> EngineLock<T> {
    pub(crate) fn new(data: T) -> EngineLock<T> {
        // Before a second thread takes the lock (idempotent).
        goal_transport::sync::enable_asymmetric();
        EngineLock { state: AtomicU32::new(0), waiters: AtomicU32::new(0), data: UnsafeCell::new(data) }
    }

    /// The lock if it is free now.
    #[inline]
    pub(crate) fn try_lock(&self) -> Option<EngineGuard<'_, T>> {
        if self.state.load(Ordering::Relaxed) == 0
            && self.state.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok()
        {
            Some(EngineGuard { lock: self })
        } else {
            None
        }
    }

    /// Whether some thread holds the lock now (a plain load: a hint, which
    /// may be stale by the time it is used).
    #[inline]
    pub(crate) fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) != 0
    }

    /// The lock, waiting for it (briefly polling, then asleep in the kernel).
    #[inline]
    pub(crate) fn lock(&self) -> EngineGuard<'_, T> {
        match self.try_lock() {
            Some(g) => g,
            None => self.lock_slow(),
        }
    }

    #[cold]
    fn lock_slow(&self) -> EngineGuard<'_, T> {
        for _ in 0..SPINS {
            std::hint::spin_loop();
            if let Some(g) = self.try_lock() {
                return g;
            }
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        // Either the holder's release (a plain store) is visible after
        // this, or its read of `waiters`, which follows that store in its
        // program order, sees ours (module documentation).
        heavy_fence_private();
        loop {
            if let Some(g) = self.try_lock() {
                self.waiters.fetch_sub(1, Ordering::Relaxed);
                return g;
            }
            // Returns at once if `state` is no longer 1. The timeout only
            // bounds the damage of a kernel whose membarrier failed after
            // answering the query.
            let _ = goal_transport::sys::futex_wait(&self.state, 1, Some(Duration::from_secs(1)));
        }
    }

    #[inline]
    fn unlock(&self) {
        self.state.store(0, Ordering::Release);
        light_fence();
        if self.waiters.load(Ordering::Relaxed) > 0 {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        let _ = goal_transport::sys::futex_wake(&self.state, 1);
    }
}

impl<T> Deref for EngineGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while `state` is 1 and was set by
        // its own compare-and-swap: no other reference to `data` lives.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for EngineGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only one.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for EngineGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::EngineLock;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Four threads add to a plain counter under the lock: none of the
    /// 400 000 increments is lost.
    #[test]
    fn excludes() {
        let lock = Arc::new(EngineLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        *lock.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 400_000);
        assert!(lock.try_lock().is_some());
    }

    /// A thread asleep in `lock` is woken by the plain release: 200 hand-overs
    /// to a sleeping waiter, none waiting out the one-second sleep that only
    /// a lost wake-up would leave it to.
    #[test]
    fn a_release_wakes_a_sleeping_waiter() {
        let lock = Arc::new(EngineLock::new(()));
        for _ in 0..200 {
            let held = lock.lock();
            let l2 = lock.clone();
            let waiter = std::thread::spawn(move || {
                let t = Instant::now();
                drop(l2.lock());
                t.elapsed()
            });
            // Long enough for the waiter to finish polling and sleep.
            std::thread::sleep(Duration::from_micros(300));
            drop(held);
            let took = waiter.join().unwrap();
            assert!(took < Duration::from_millis(900), "a waiter slept {took:?} past the release");
        }
    }
}
