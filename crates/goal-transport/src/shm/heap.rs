//! The shared heap (`GOAL_Alloc`): memory that peers can copy from directly.
//!
//! One memfd per rank, sized to a large *virtual* reserve (64 GiB by
//! default) and mapped once. A memfd is sparse: pages exist only once
//! touched, so the reserve costs address space, not memory. Peers map it
//! read-only through `/proc/<pid>/fd/<fd>` the first time they need it and
//! then copy out of it with a plain `memcpy` (see `ShmNode::read_peer_heap`).
//!
//! The allocator is deliberately simple: a first-fit free list ordered by
//! offset, coalescing neighbours on free, behind one mutex. Small blocks are
//! 64-byte aligned (a cache line); blocks of at least [`LARGE`] bytes are
//! page-aligned and page-sized, and when one is freed its pages are handed
//! back to the system by punching a hole in the memfd.

use super::map::Mapping;
use crate::sys;
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::Mutex;

/// Alignment of every block.
const ALIGN: u64 = 64;
/// Blocks at least this big are page-aligned and released on free.
pub(crate) const LARGE: u64 = 64 << 10;

/// Allocator bookkeeping, in heap offsets.
///
/// Invariant: the blocks of `free` and `used` are disjoint and together tile
/// `[0, reserve)`; no two blocks of `free` touch (they are coalesced).
struct State {
    /// Free blocks: offset -> length.
    free: BTreeMap<u64, u64>,
    /// Allocated blocks: offset -> length.
    used: HashMap<u64, u64>,
}

/// This process's shared heap, from which peers copy directly.
pub struct Heap {
    /// The whole reserve, mapped read-write.
    map: Mapping,
    /// The memfd behind `map`; peers open it through /proc.
    fd: OwnedFd,
    /// Page size, cached.
    page: u64,
    state: Mutex<State>,
}

impl Heap {
    /// A heap of `reserve` bytes (rounded up to pages).
    pub(crate) fn create(reserve: usize) -> io::Result<Heap> {
        let page = sys::page_size() as u64;
        let reserve = (reserve.max(1) as u64).div_ceil(page) * page;
        let fd = sys::memfd_create(c"goal-heap")?;
        sys::ftruncate(fd.as_fd(), reserve)?;
        let map = Mapping::new(fd.as_fd(), reserve as usize, true)?;
        let mut free = BTreeMap::new();
        free.insert(0, reserve);
        Ok(Heap {
            map,
            fd,
            page,
            state: Mutex::new(State {
                free,
                used: HashMap::new(),
            }),
        })
    }

    /// Base address of the heap mapping.
    pub(crate) fn base(&self) -> *mut u8 {
        self.map.ptr()
    }

    /// Descriptor number of the memfd (for the address peers attach with).
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Allocates `bytes` (64-byte aligned); `None` when the heap is exhausted.
    pub fn alloc(&self, bytes: usize) -> Option<std::ptr::NonNull<u8>> {
        let bytes = bytes.max(1) as u64;
        let (size, align) = if bytes >= LARGE {
            (bytes.checked_next_multiple_of(self.page)?, self.page)
        } else {
            (bytes.next_multiple_of(ALIGN), ALIGN)
        };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let (start, len, at) = st.free.iter().find_map(|(&o, &l)| {
            let at = o.checked_next_multiple_of(align)?;
            (at.checked_add(size)? <= o + l).then_some((o, l, at))
        })?;
        st.free.remove(&start);
        if at > start {
            st.free.insert(start, at - start);
        }
        if at + size < start + len {
            st.free.insert(at + size, start + len - at - size);
        }
        st.used.insert(at, size);
        // SAFETY: `at + size <= reserve == map.len()`, so the pointer is
        // inside the mapping, whose base is non-null.
        Some(unsafe { NonNull::new_unchecked(self.map.ptr().add(at as usize)) })
    }

    /// Frees a block from `alloc`; `false` if `ptr` is not one.
    pub fn free(&self, ptr: *mut u8) -> bool {
        let Some(off) = self.offset_of(ptr, 0) else {
            return false;
        };
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let Some(size) = st.used.remove(&off) else {
            return false;
        };
        if size >= LARGE {
            // Give the pages back; the block is page-aligned and page-sized.
            // Failure only costs memory, never correctness.
            let _ = sys::punch_hole(self.fd.as_fd(), off, size);
        }
        let (mut start, mut len) = (off, size);
        if let Some((&o, &l)) = st.free.range(..off).next_back() {
            if o + l == off {
                st.free.remove(&o);
                start = o;
                len += l;
            }
        }
        if let Some(l) = st.free.remove(&(off + size)) {
            len += l;
        }
        st.free.insert(start, len);
        true
    }

    /// The heap offset of `[ptr, ptr+len)` if it lies inside the heap.
    pub fn offset_of(&self, ptr: *const u8, len: usize) -> Option<u64> {
        self.map
            .contains(ptr as usize, len)
            .then(|| (ptr as usize - self.map.ptr() as usize) as u64)
    }

    /// Bytes of virtual address space reserved for the heap.
    pub fn reserve(&self) -> usize {
        self.map.len()
    }

    /// Bytes currently handed out by `alloc` (after rounding).
    pub fn allocated_bytes(&self) -> u64 {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.used.values().sum()
    }

    /// Bytes of memory the heap's memfd holds right now (touched pages).
    pub fn resident_bytes(&self) -> io::Result<u64> {
        sys::allocated_bytes(self.fd.as_fd())
    }

    /// Number of free blocks (1 when everything is free: fully coalesced).
    pub fn free_blocks(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .free
            .len()
    }
}
