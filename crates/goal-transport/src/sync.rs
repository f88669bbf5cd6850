//! The crate's atomics (re-exported from [`atomic`](crate::atomic), the
//! one place they are imported from) and its barriers.
//!
//! # Asymmetric barriers
//!
//! A waker and a sleeper meet in a Dekker pair: the waker publishes data,
//! then reads whether anyone sleeps; the sleeper says it sleeps, then reads
//! the data. Both need a store-load barrier, and on x86 that is a locked
//! instruction, which waits until the store before it reaches its cache
//! line. For a sender whose line is in the receiver's core (a ring it
//! polls) that is the line's trip between cores, 25-85 ns on this
//! machine, paid in every send although almost nobody sleeps.
//!
//! So the barrier is split unevenly, as liburcu and Folly do:
//! [`light_fence`] on the frequent side is only a compiler barrier, and
//! [`heavy_fence_global`] / [`heavy_fence_private`] on the rare side (a
//! thread about to sleep) asks the kernel (`membarrier(2)`, expedited) to
//! run a full barrier on every CPU that runs a thread of a registered
//! process (of this one, for the private form). After it, a waker's store
//! that came before its light fence is visible, or the waker's read after
//! its light fence has not happened yet and will see the sleeper's store.
//! [`enable_asymmetric`] registers the process; until it succeeded, or
//! where the kernel lacks the call, the light fence is a full one.
//!
//! `GOAL_MEMBARRIER=0` chooses that symmetric pair on purpose: every waker
//! pays a full fence, and a thread about to sleep no more than one. The
//! heavy side is a system call that interrupts every CPU running a rank
//! (`membarrier(GLOBAL_EXPEDITED)`: 9 us a call in this 2-vCPU VM, against
//! 0.35 us for the private form), and it is paid at every sleep of a helper
//! and every lift of the application's polling mark: where a helper hands
//! off with a computing application at every collective, that is most of
//! the cost (2 ranks, allreduce of 64 KiB after 50 us of computation, C:
//! 35-47 us with it, 11 us without; docs/measurements/torch-overlap-2026-11-29).
//! Set it for every rank of a job or none: a rank without the heavy side
//! beside a peer whose wakers use the light one can miss a wake-up until
//! its sleep's timeout.

#[cfg(not(target_arch = "x86_64"))]
use std::sync::atomic::fence;
pub use crate::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::atomic::{compiler_fence, AtomicU8};

/// 0: not asked yet; 1: the kernel lacks the calls; 2: supported but this
/// process is not registered; 3: registered, light fences are light.
static ASYMMETRIC: AtomicU8 = AtomicU8::new(0);

/// A full (StoreLoad) barrier, as `fence(SeqCst)`.
///
/// On x86-64 a locked read-modify-write of a stack word is a full barrier
/// and costs a fraction of `mfence` on current cores (crossbeam-utils does
/// the same); the inline assembly is also a compiler barrier because it is
/// not marked `nomem`. Elsewhere it is `fence(SeqCst)`.
#[inline]
pub fn full_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `lock or` of zero into the word at the stack pointer reads and
    // writes back the same value in memory the thread owns; it changes no
    // register but the flags (not preserved: no `preserves_flags`).
    unsafe {
        std::arch::asm!("lock or dword ptr [rsp], 0", options(nostack));
    }
    #[cfg(not(target_arch = "x86_64"))]
    fence(Ordering::SeqCst);
}

/// Registers this process for the heavy side of the asymmetric barriers
/// (both forms); returns whether light fences are light from now on. Call
/// it before a second thread or a peer relies on the pair: a thread that
/// skipped the full fence before the registration would not be covered.
pub fn enable_asymmetric() -> bool {
    let state = match ASYMMETRIC.load(Ordering::Acquire) {
        0 => {
            let s = if symmetric_asked() || !crate::sys::membarrier_supported() {
                1
            } else if crate::sys::membarrier_register().is_ok() {
                3
            } else {
                2
            };
            ASYMMETRIC.store(s, Ordering::Release);
            s
        }
        s => s,
    };
    state == 3
}

/// `GOAL_MEMBARRIER=0`: full fences on both sides, no `membarrier(2)`
/// (module documentation). Any other value, or none, leaves the default.
fn symmetric_asked() -> bool {
    std::env::var("GOAL_MEMBARRIER").is_ok_and(|v| v.trim() == "0")
}

/// The frequent side of an asymmetric pair: a compiler barrier once this
/// process is registered (module documentation), a full fence before.
#[inline(always)]
pub fn light_fence() {
    if ASYMMETRIC.load(Ordering::Relaxed) == 3 {
        compiler_fence(Ordering::SeqCst);
    } else {
        full_fence();
    }
}

/// The rare side of an asymmetric pair whose light side may run in another
/// process: a full barrier on every CPU running a registered process. Its
/// own full fence too, for light sides that are not registered (theirs are
/// full).
pub fn heavy_fence_global() {
    full_fence();
    if ASYMMETRIC.load(Ordering::Relaxed) >= 2 {
        // A failure leaves the sleeper to its timeout (every sleep has one).
        let _ = crate::sys::membarrier_global();
    }
}

/// [`heavy_fence_global`] for a pair inside this process: only the CPUs
/// running its own threads.
pub fn heavy_fence_private() {
    full_fence();
    if ASYMMETRIC.load(Ordering::Relaxed) == 3 {
        let _ = crate::sys::membarrier_private();
    }
}
