//! Byte layout of an inbox segment.
//!
//! ```text
//! inbox of rank r (one memfd, created and sized by r):
//!
//!   header page   [magic, version, size, rank, ring_bytes, stream_bytes, pid,
//!                  cpu: 1 + the CPU r last waited on (0: not yet)]          line 0
//!                 bell: u32      (rung by peers and by r's own threads)      line 1
//!                 sleepers: u32  (r's threads inside a SleepGuard)            line 2
//!                 finalized: u64 (1 + schedules r compiled, once r finalizes) line 3
//!   pair block s = 0..size, one per sender s (the block s == r is unused):
//!     control page  ring tail      (written by s, the producer)           line 0
//!                   ring head      (written by r, the consumer)           line 1
//!                   stream tail    (written by s)                          line 2
//!                   stream head    (written by r)                          line 3
//!                   credits        (written by r, read by s)               line 4
//!                   copy out       (written by r, read by s)               line 5
//!                   claims         (CLAIM_SLOTS words, packed: taken by
//!                                   both, a claim per chunk copied)        lines 8..12
//!     ring data     ring_bytes     (message records, s -> r)
//!     stream data   2 * stream_bytes (bulk bytes, s -> r; the second half
//!                                   only for long messages, see stream.rs)
//! ```
//!
//! Each shared word sits alone on a [`LINE`]-byte slot, so that the side
//! that writes it never invalidates a line the other side polls for another
//! reason (128 bytes: the x86 spatial prefetcher pulls lines in pairs).
//! Counters are 64-bit byte counts that only grow, so full and empty are
//! never confused and no wrap-around arithmetic is needed in practice.

/// Bytes between two independently written shared words.
pub(crate) const LINE: usize = 128;
/// Bytes of the segment header (one page).
pub(crate) const HEADER_BYTES: usize = 4096;
/// Bytes of a pair block's control area (one page).
pub(crate) const CONTROL_BYTES: usize = 4096;

/// "GOALSHM2": tells a mapped segment is an inbox of this layout version
/// (2: streams mapped at twice their size).
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"GOALSHM2");

/// Header word offsets.
pub(crate) const H_MAGIC: usize = 0;
pub(crate) const H_SIZE: usize = 8;
pub(crate) const H_RANK: usize = 16;
pub(crate) const H_RING_BYTES: usize = 24;
pub(crate) const H_STREAM_BYTES: usize = 32;
pub(crate) const H_PID: usize = 40;
/// 1 + the CPU the owner last waited on, 0 before it waits: written by the
/// owner when it changes (rarely: ranks are mostly bound), read by peers
/// that wait for it (see `ShmNode::note_cpu`).
pub(crate) const H_CPU: usize = 48;
pub(crate) const H_BELL: usize = LINE;
pub(crate) const H_SLEEPERS: usize = 2 * LINE;
/// Threads of the owner polling actively (beside `sleepers`: wakers read both).
pub(crate) const H_POLLING: usize = 2 * LINE + 8;
/// Written once by the owner as it finalizes: 1 + the schedules it compiled
/// (0: it has not finalized). A peer that finds the owner gone reads it to
/// tell a rank that finished its program from one that died.
pub(crate) const H_FINALIZED: usize = 3 * LINE;

/// Control word offsets inside a pair block.
pub(crate) const P_RING_TAIL: usize = 0;
pub(crate) const P_RING_HEAD: usize = LINE;
pub(crate) const P_STREAM_TAIL: usize = 2 * LINE;
pub(crate) const P_STREAM_HEAD: usize = 3 * LINE;
pub(crate) const P_CREDITS: usize = 4 * LINE;
/// The receiver's last timed copy of a message out of the ring (see
/// `ShmNode::publish_copy_out`): its length in the high 32 bits, the
/// nanoseconds it took in the low.
pub(crate) const P_COPY_OUT: usize = 5 * LINE;
/// The first claim word (see `claim`); word `i` at `P_CLAIMS + 8 * i`.
/// Packed, not one per line: each is taken once per chunk of 16 to 512
/// KiB copied, far too rarely for the lines' trips between cores to count.
pub(crate) const P_CLAIMS: usize = 8 * LINE;
const _: () = assert!(P_CLAIMS + super::claim::CLAIM_SLOTS * 8 <= CONTROL_BYTES);

/// Geometry of one inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Ranks in the group (pair blocks in the segment).
    pub size: usize,
    /// Bytes of each message ring; a power of two.
    pub ring_bytes: usize,
    /// Bytes of each stream; a power of two.
    pub stream_bytes: usize,
}

impl Layout {
    /// Bytes of one pair block.
    pub(crate) fn pair_bytes(&self) -> usize {
        CONTROL_BYTES + self.ring_bytes + self.stream_room()
    }
    /// Bytes mapped for each stream: twice its size (see `stream.rs`'s
    /// `Window::Long`).
    pub(crate) fn stream_room(&self) -> usize {
        2 * self.stream_bytes
    }
    /// Offset of the pair block for sender `s`.
    pub(crate) fn pair(&self, s: usize) -> usize {
        HEADER_BYTES + s * self.pair_bytes()
    }
    /// Offset of the ring data of the pair block for sender `s`.
    pub(crate) fn ring_data(&self, s: usize) -> usize {
        self.pair(s) + CONTROL_BYTES
    }
    /// Offset of the stream data of the pair block for sender `s`.
    pub(crate) fn stream_data(&self, s: usize) -> usize {
        self.ring_data(s) + self.ring_bytes
    }
    /// Total bytes of the segment.
    pub(crate) fn total(&self) -> Option<usize> {
        self.pair_bytes()
            .checked_mul(self.size)?
            .checked_add(HEADER_BYTES)
    }
}
