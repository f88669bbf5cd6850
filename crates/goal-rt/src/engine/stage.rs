//! Staged sends: with more ranks than cores, a message of up to 512 KiB to
//! the rank that last waited on this CPU is copied into this rank's shared
//! heap, and the send ends there, instead of waiting for that rank to be
//! scheduled, read the message and answer.
//!
//! Such a peer cannot run while this rank does. A rendezvous send to it
//! (an all-to-all's, typically, whose messages to that rank do not go
//! eagerly, see `policy::all_to_all`) holds its execution until the OS has
//! switched to the peer, which reads (CMA) or answers CTS and copies the
//! stream out, answers FIN, and is switched out again. Staged, the send
//! ends after one copy into a heap block, and the RTS offers the block as
//! any heap message (`MODE_HEAP`): the receiver reads it with a `memcpy`
//! when it runs, on the CPU where the block was just written, and its FIN
//! gives the block back. The token of a staged RTS carries
//! [`STAGED_TOKEN`], so that FIN is told from a rendezvous send's.
//!
//! Measured in `docs/measurements/staged-2026-12-03` (AUTO, the two builds
//! alternated). On an Intel Xeon, 4 ranks on 2 CPUs: alltoall of 64 KiB
//! 38.9 -> 33.3 us, alltoallv 38.5 -> 33.7 (Open MPI 35.4 and 35.9);
//! 3 ranks 23.7 -> 22.1 and 26.0 -> 22.1; no change at 16 and 32 KiB
//! or with 8 ranks. On an AMD EPYC with the same 8 KiB eager limit:
//! 0.84-0.86x at 64 KiB with 4 ranks (Open MPI 1.12-1.16x the new time),
//! 0.76-0.81x with 3, alltoallv 0.79x with 8. Up to 512 KiB on that EPYC,
//! whose CMA copies at a quarter of `memcpy`'s speed (1 MiB: 85 against
//! 26 us), 4 ranks: alltoall and allgather of 128-512 KiB 0.70-0.81x; of
//! 1 MiB 0.93-1.05x, within the spread, so not staged
//! (`docs/measurements/staged-large-2026-12-04`). Staging to a peer on
//! *another* CPU was 0.6-0.9x in some rounds and 2-3x slower in others
//! (the receiver then reads lines the other CPU has just written, whose
//! cost follows the host's placement of the vCPUs): not done.
//!
//! A rank's staged bytes per peer are bounded ([`STAGE_CREDIT`]); past it,
//! sends take the usual rendezvous. Blocks are of a few sizes (powers of
//! two from 64 KiB, see [`class_of`]) and come back through a small pool
//! per size ([`POOL_KEEP`] bytes in all): a freed large heap block gives
//! its pages back, and a new one faults them in again. At `GOAL_Finalize`
//! a rank waits until what it staged has been read (the readers need its
//! heap), at most 10 s, or until their readers are gone.

use super::*;
use goal_transport::shm::Heap;

/// Set in the token of a staged message's RTS (rendezvous tokens are
/// indexes of live sends, far below it): its FIN frees a heap block.
pub(super) const STAGED_TOKEN: u32 = 1 << 31;

/// The smallest block: a ring record's worth, the size at which the
/// all-to-all's messages to the rank on this CPU stopped going eagerly.
const BLOCK_MIN: usize = 64 << 10;

/// Block sizes: `BLOCK_MIN << class` for class `0..CLASSES`.
const CLASSES: usize = 4;

/// The longest message staged (see the module's comment for why not 1 MiB).
pub(super) const STAGE_MAX: usize = BLOCK_MIN << (CLASSES - 1);

/// Bytes of blocks a rank may have staged for one peer and not yet read.
pub(super) const STAGE_CREDIT: usize = 2 << 20;

/// Bytes of free blocks kept for reuse, over all sizes.
pub(super) const POOL_KEEP: usize = 4 << 20;

/// The size class of a block for `len` bytes (`len <= STAGE_MAX`).
fn class_of(len: usize) -> usize {
    len.max(1).div_ceil(BLOCK_MIN).next_power_of_two().trailing_zeros() as usize
}

/// The bytes of a block of class `c`.
fn block_len(c: usize) -> usize {
    BLOCK_MIN << c
}

/// One staged message waiting for its reader.
struct Staged {
    peer: u32,
    block: *mut u8,
    class: u8,
}

/// What this rank has staged in its heap (see the module's comment).
#[derive(Default)]
pub(super) struct Stage {
    /// The heap, taken at the first staged send.
    heap: Option<Arc<Heap>>,
    /// Staged messages by token (without [`STAGED_TOKEN`]).
    live: Vec<Option<Staged>>,
    free_tokens: Vec<u32>,
    /// Bytes of blocks staged and not read, per peer.
    per_peer: Vec<usize>,
    /// Messages staged and not read, over all peers.
    unread: usize,
    /// Free blocks, by size class.
    pool: [Vec<*mut u8>; CLASSES],
    /// Bytes of the free blocks.
    pooled: usize,
    /// Messages staged since init, for `GOAL_DEBUG`.
    pub(super) sends: u64,
}

// SAFETY: the raw pointers are blocks of this process's shared heap, owned
// by the engine, which one thread at a time holds (behind its lock).
unsafe impl Send for Stage {}

impl Engine {
    /// Whether a send of `len` bytes to local peer `p`, from one buffer and
    /// offered by CMA or the stream, is staged instead (see the module's
    /// comment): by the stream it waits for the peer's CTS, then for the
    /// peer to copy the stream out, switch after switch.
    pub(super) fn may_stage(&self, p: usize, len: usize) -> bool {
        self.cores_shared
            && !self.background
            && self.kernel.is_none()
            && len <= STAGE_MAX
            && self.stage.per_peer.get(p).copied().unwrap_or(0) + block_len(class_of(len)) <= STAGE_CREDIT
            && self.on_this_cpu(p)
    }

    /// Copies `len` bytes at `src` into a heap block staged for `p`:
    /// the block's heap offset and the RTS's token, or `None` when the heap
    /// has no room (the send then goes by rendezvous).
    pub(super) fn stage(&mut self, p: usize, src: *const u8, len: usize) -> Option<(u64, u32)> {
        let Stage { heap, live, free_tokens, per_peer, unread, pool, pooled, sends } = &mut self.stage;
        let heap = heap.get_or_insert_with(|| self.link.shm.heap());
        let class = class_of(len);
        let block = match pool[class].pop() {
            Some(b) => {
                *pooled -= block_len(class);
                b
            }
            None => heap.alloc(block_len(class))?.as_ptr(),
        };
        let off = heap.offset_of(block, len).expect("a block of the heap lies in it");
        // SAFETY: `src` is the send's buffer, valid for `len` bytes (API
        // contract); `block` is a heap block of `block_len(class) >= len`
        // bytes that no one else uses until its FIN.
        unsafe { goal_transport::copy_bytes(src, block, len) };
        let s = Staged { peer: p as u32, block, class: class as u8 };
        let t = match free_tokens.pop() {
            Some(t) => {
                live[t as usize] = Some(s);
                t
            }
            None => {
                live.push(Some(s));
                (live.len() - 1) as u32
            }
        };
        if per_peer.len() <= p {
            per_peer.resize(p + 1, 0);
        }
        per_peer[p] += block_len(class);
        *unread += 1;
        *sends += 1;
        self.copied(len);
        Some((off, t | STAGED_TOKEN))
    }

    /// FIN for a staged message: its block is free again.
    pub(super) fn unstage(&mut self, token: u32) {
        let st = &mut self.stage;
        let t = token & !STAGED_TOKEN;
        let Some(s) = st.live.get_mut(t as usize).and_then(Option::take) else { return };
        st.free_tokens.push(t);
        st.per_peer[s.peer as usize] -= block_len(s.class as usize);
        st.unread -= 1;
        st.give_back(s.block, s.class as usize);
    }

    /// Peer `p` is gone: what was staged for it will not be read.
    pub(super) fn unstage_peer(&mut self, p: usize) {
        let tokens: Vec<u32> =
            self.stage.live.iter().enumerate().filter(|(_, s)| s.as_ref().is_some_and(|s| s.peer as usize == p)).map(|(t, _)| t as u32).collect();
        for t in tokens {
            self.unstage(t);
        }
    }

    /// Staged messages not read yet (see [`Engine::release_stage`]).
    pub fn staged_unread(&self) -> usize {
        self.stage.unread
    }

    /// At finalize, once nothing staged is left to read (or its readers
    /// did not come in 10 s): the pool's blocks back to the heap, so that
    /// a heap the application emptied is unmapped. Blocks still unread
    /// stay, and keep the heap mapped until the process exits, for a
    /// reader that comes late.
    pub fn release_stage(&mut self) {
        let st = &mut self.stage;
        let Some(heap) = &st.heap else { return };
        for b in st.pool.iter_mut().flat_map(|p| p.drain(..)) {
            heap.free(b);
        }
        st.pooled = 0;
    }
}

impl Stage {
    fn give_back(&mut self, block: *mut u8, class: usize) {
        // The pool follows the sizes in use now: blocks of other sizes,
        // largest first, make room for this one. Kept instead, the blocks
        // of the sizes a program staged first filled the pool, and every
        // block of a later size went back to the heap at its FIN and was
        // faulted in again at the next send.
        while self.pooled + block_len(class) > POOL_KEEP {
            let Some(c) = (0..CLASSES).rev().find(|&c| c != class && !self.pool[c].is_empty()) else { break };
            let old = self.pool[c].pop().expect("a class found non-empty");
            self.pooled -= block_len(c);
            if let Some(heap) = &self.heap {
                heap.free(old);
            }
        }
        if self.pooled + block_len(class) <= POOL_KEEP {
            self.pool[class].push(block);
            self.pooled += block_len(class);
        } else if let Some(heap) = &self.heap {
            heap.free(block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_takes_the_smallest_block_it_fits() {
        assert_eq!(class_of(1), 0);
        assert_eq!(class_of(BLOCK_MIN), 0);
        assert_eq!(class_of(BLOCK_MIN + 1), 1);
        assert_eq!(class_of(2 * BLOCK_MIN), 1);
        assert_eq!(class_of(3 * BLOCK_MIN), 2);
        assert_eq!(class_of(STAGE_MAX), CLASSES - 1);
        for len in [1, 4096, BLOCK_MIN - 1, BLOCK_MIN + 1, 300 << 10, STAGE_MAX] {
            let c = class_of(len);
            assert!(block_len(c) >= len && (c == 0 || block_len(c - 1) < len), "{len} bytes in a block of {}", block_len(c));
        }
    }

    #[test]
    fn the_pool_keeps_the_blocks_of_the_size_in_use_now() {
        // No heap: blocks that leave the pool are dropped, not freed, and
        // the pointers are never read.
        let mut st = Stage::default();
        let fake = |i: usize| (0x1000 * (i + 1)) as *mut u8;
        // A program stages 128 KiB messages until the pool is full of them.
        let small = POOL_KEEP / block_len(1);
        for i in 0..small + 3 {
            st.give_back(fake(i), 1);
        }
        assert_eq!(st.pool[1].len(), small, "the pool keeps POOL_KEEP bytes of one size");
        assert_eq!(st.pooled, POOL_KEEP);
        // Then 256 KiB ones: each freed block stays in the pool, for the
        // next send of that size, in place of 128 KiB blocks.
        for i in 0..4 {
            st.give_back(fake(1000 + i), 2);
            assert_eq!(st.pool[2].len(), i + 1, "the block in use now should be kept");
            assert!(st.pooled <= POOL_KEEP, "the pool holds {} bytes", st.pooled);
        }
        assert_eq!(st.pool[1].len(), small - 8, "two 128 KiB blocks made room for each 256 KiB one");
        let held: usize = (0..CLASSES).map(|c| st.pool[c].len() * block_len(c)).sum();
        assert_eq!(held, st.pooled);
        // A pool full of the size in use gives back what it cannot hold.
        let mut full = Stage::default();
        for i in 0..POOL_KEEP / block_len(3) + 2 {
            full.give_back(fake(i), 3);
        }
        assert_eq!(full.pooled, POOL_KEEP);
    }
}
