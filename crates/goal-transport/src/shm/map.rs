//! An owned shared mapping of a memfd, unmapped on drop.
//!
//! Everything that points into shared memory (ring and stream views, the
//! doorbell, the heap) holds, directly or through an `Arc`, the [`Mapping`]
//! it points into, so the memory outlives every pointer derived from it.

use crate::sync::{AtomicU32, AtomicU64};
use crate::sys;
use std::io;
use std::os::fd::BorrowedFd;

/// `len` bytes mapped `MAP_SHARED` at `ptr`.
///
/// Invariant: `[ptr, ptr+len)` is a live mapping owned by this value alone
/// (nobody else unmaps it), page-aligned, and stays mapped until drop.
pub(crate) struct Mapping {
    /// Base address; page-aligned, non-null.
    ptr: *mut u8,
    /// Length in bytes, > 0.
    len: usize,
    /// Whether the mapping is writable (peer heaps are mapped read-only).
    writable: bool,
}

// SAFETY: a Mapping is an address range plus its length; it has no
// thread-affine state, and all access to the bytes goes through atomics or
// through protocols (SPSC rings, the heap lock) that the users document.
unsafe impl Send for Mapping {}
// SAFETY: see `Send`; `&Mapping` only hands out raw pointers and atomics.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps the first `len` bytes of `fd`.
    pub(crate) fn new(fd: BorrowedFd<'_>, len: usize, writable: bool) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map 0 bytes",
            ));
        }
        let ptr = sys::mmap_shared(fd, len, writable)?;
        Ok(Mapping { ptr, len, writable })
    }

    /// Base address of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length of the mapping in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether `[addr, addr+len)` lies inside the mapping.
    pub(crate) fn contains(&self, addr: usize, len: usize) -> bool {
        let base = self.ptr as usize;
        addr >= base && len <= self.len && addr - base <= self.len - len
    }

    /// The 64-bit atomic at byte `offset`.
    ///
    /// Panics if `offset` is out of range or misaligned, or the mapping is read-only.
    #[inline]
    pub(crate) fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        assert!(
            self.writable && offset & 7 == 0 && offset + 8 <= self.len,
            "bad atomic offset {offset}"
        );
        // SAFETY: (1) the 8 bytes are inside our live, writable mapping and
        // 8-aligned (checked above; the base is page-aligned); (2) the memory
        // is only ever accessed atomically at this offset by every process
        // (the layout reserves it for this word); (3) the reference borrows
        // `self`, so it cannot outlive the mapping.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU64) }
    }

    /// The 32-bit atomic at byte `offset` (see [`Mapping::atomic_u64`]).
    #[inline]
    pub(crate) fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        assert!(
            self.writable && offset & 3 == 0 && offset + 4 <= self.len,
            "bad atomic offset {offset}"
        );
        // SAFETY: as in `atomic_u64`, for a 4-byte, 4-aligned word.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU32) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: the range is our own mapping (type invariant) and, being
        // dropped, nothing derived from it is used anymore: every user holds
        // the Mapping (or an Arc of it) for as long as it uses its pointers.
        let _ = unsafe { sys::munmap(self.ptr, self.len) };
    }
}
