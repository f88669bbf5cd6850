//! Staged sends: with more ranks than cores, a message of up to 64 KiB to
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
//! when it runs, and its FIN gives the block back. The token of a staged
//! RTS carries [`STAGED_TOKEN`], so that FIN is told from a rendezvous
//! send's.
//!
//! Measured in `docs/measurements/staged-2026-12-03` (AUTO, the two builds
//! alternated). On an Intel Xeon, 4 ranks on 2 CPUs: alltoall of 64 KiB
//! 38.9 -> 33.3 us, alltoallv 38.5 -> 33.7 (Open MPI 35.4 and 35.9);
//! 3 ranks 23.7 -> 22.1 and 26.0 -> 22.1; no change at 16, 32 and 256 KiB
//! or with 8 ranks. On an AMD EPYC with the same 8 KiB eager limit:
//! 0.84-0.86x at 64 KiB with 4 ranks (Open MPI 1.12-1.16x the new time),
//! 0.76-0.81x with 3, alltoallv 0.79x with 8. Staging to a peer on any
//! CPU, up to 1 MiB, was 1.0-1.6x slower: a running receiver reads by CMA
//! as soon as the RTS arrives, and the staging copy only adds to it.
//!
//! A rank's staged bytes per peer are bounded ([`STAGE_CREDIT`]); past it,
//! sends take the usual rendezvous. Blocks come back through a small pool
//! ([`POOL_KEEP`]): a freed large heap block gives its pages back, and a
//! new one faults them in again. At `GOAL_Finalize` a rank waits until what
//! it staged has been read (the readers need its heap), at most 10 s, or
//! until their readers are gone.

use super::*;
use goal_transport::shm::Heap;

/// Set in the token of a staged message's RTS (rendezvous tokens are
/// indexes of live sends, far below it): its FIN frees a heap block.
pub(super) const STAGED_TOKEN: u32 = 1 << 31;

/// The longest message staged: a ring record's worth, the size at which
/// the all-to-all's messages to the rank on this CPU stopped going eagerly.
pub(super) const STAGE_MAX: usize = 64 << 10;

/// Bytes a rank may have staged for one peer and not yet read.
pub(super) const STAGE_CREDIT: usize = 1 << 20;

/// Bytes of free blocks kept for reuse.
pub(super) const POOL_KEEP: usize = 4 << 20;

/// One staged message waiting for its reader.
struct Staged {
    peer: u32,
    block: *mut u8,
}

/// What this rank has staged in its heap (see the module's comment).
#[derive(Default)]
pub(super) struct Stage {
    /// The heap, taken at the first staged send.
    heap: Option<Arc<Heap>>,
    /// Staged messages by token (without [`STAGED_TOKEN`]).
    live: Vec<Option<Staged>>,
    free_tokens: Vec<u32>,
    /// Messages staged and not read, per peer (each holds a block of
    /// [`STAGE_MAX`] bytes).
    per_peer: Vec<u32>,
    /// Free blocks, each [`STAGE_MAX`] bytes.
    pool: Vec<*mut u8>,
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
            && (self.stage.per_peer.get(p).copied().unwrap_or(0) as usize + 1) * STAGE_MAX <= STAGE_CREDIT
            && self.on_this_cpu(p)
    }

    /// Copies `len` bytes at `src` into a heap block staged for `p`:
    /// the block's heap offset and the RTS's token, or `None` when the heap
    /// has no room (the send then goes by rendezvous).
    pub(super) fn stage(&mut self, p: usize, src: *const u8, len: usize) -> Option<(u64, u32)> {
        let Stage { heap, live, free_tokens, per_peer, pool, sends } = &mut self.stage;
        let heap = heap.get_or_insert_with(|| self.link.shm.heap());
        let block = match pool.pop() {
            Some(b) => b,
            None => heap.alloc(STAGE_MAX)?.as_ptr(),
        };
        let off = heap.offset_of(block, len).expect("a block of the heap lies in it");
        // SAFETY: `src` is the send's buffer, valid for `len` bytes (API
        // contract); `block` is a heap block of STAGE_MAX >= len bytes that
        // no one else uses until its FIN.
        unsafe { goal_transport::copy_bytes(src, block, len) };
        let s = Staged { peer: p as u32, block };
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
        per_peer[p] += 1;
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
        st.per_peer[s.peer as usize] -= 1;
        st.give_back(s.block);
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
        self.stage.per_peer.iter().map(|&n| n as usize).sum()
    }

    /// At finalize, once nothing staged is left to read (or its readers
    /// did not come in 10 s): the pool's blocks back to the heap, so that
    /// a heap the application emptied is unmapped. Blocks still unread
    /// stay, and keep the heap mapped until the process exits, for a
    /// reader that comes late.
    pub fn release_stage(&mut self) {
        let st = &mut self.stage;
        let Some(heap) = &st.heap else { return };
        for b in st.pool.drain(..) {
            heap.free(b);
        }
    }
}

impl Stage {
    fn give_back(&mut self, block: *mut u8) {
        if (self.pool.len() + 1) * STAGE_MAX <= POOL_KEEP {
            self.pool.push(block);
        } else if let Some(heap) = &self.heap {
            heap.free(block);
        }
    }
}
