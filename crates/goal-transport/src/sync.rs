//! The one place the crate imports atomics from.
//!
//! Every lock-free structure reaches `std::sync::atomic` through this module,
//! so that a model checker (loom) can be swapped in here later without
//! touching the structures themselves.

#[cfg(not(target_arch = "x86_64"))]
use std::sync::atomic::fence;
pub use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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
