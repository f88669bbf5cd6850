//! goal-transport: moves bytes between ranks and knows nothing of schedules.
//!
//! In the layer picture of `docs/design.md` it sits below goal-rt's engine:
//! the engine's link reaches every peer on this machine through [`shm`],
//! the kernel mode (`kpath`) submits its runs through [`kchain`], and a
//! sleeping thread waits on the doorbell and goal-net's descriptor at once
//! through io_uring (`dualwait`). Peers on other machines are goal-net's;
//! this crate depends on no other goal crate.
//!
//! The runtime (goal-rt) speaks to its peers in *messages*: a fixed 32-byte
//! [`Envelope`] that this crate carries without interpreting, followed by an
//! optional payload. Everything that gives a message meaning (matching,
//! protocols, schedules) lives above this crate.
//!
//! # Backends
//!
//! Today there is one backend, [`shm`], for ranks of one machine. Every
//! backend provides the same set of capabilities, so that the runtime can be
//! written once:
//!
//! * an ordered, reliable, non-blocking message channel per ordered pair of
//!   ranks (`try_send` / `poll`), whose payload slices are handed out in place,
//! * a bulk byte stream per ordered pair for pipelined large transfers
//!   (`stream_push` / `stream_pop`),
//! * credit counters per pair, for the runtime's eager flow control,
//! * a [`Doorbell`](shm::Doorbell) the process can sleep on until a peer writes to it,
//! * liveness of the peers (a peer that dies is reported within seconds).
//!
//! The shared-memory backend adds single-copy paths: Linux Cross Memory
//! Attach ([`sys::cma_read`]) and goal's own shared heap
//! ([`shm::Heap`], `GOAL_Alloc`), from which a receiver copies directly.
//!
//! # What it serves of goal-rt's link
//!
//! goal-rt's engine reaches each peer through one link
//! (`goal-rt/src/engine/link.rs`), which offers the protocols: (a) send an
//! envelope with an eager payload, (b) send a control message, (c) return
//! and read eager credit, (d) the fetch paths for large messages, and
//! (e) liveness. For a peer on this machine this crate serves all five:
//! (a) and (b) are `ShmNode::try_send`/`try_send_one` into the peer's ring
//! (`Ok(false)` when it is full: the engine queues), (c) the pair's credit
//! words (`return_credits`, `credits_returned`), (d) the stream
//! (`stream_push`/`stream_pop`), CMA reads and writes ([`sys::cma_read`],
//! [`sys::cma_write`]) and heap copies (`read_peer_heap`), and (e)
//! `check_peers` on pidfds. goal-net serves the same (a) to (e) for peers on
//! other machines, with a bulk transfer as its one fetch path.
//!
//! [`kchain`] hands whole chains of sends, receives and futex operations to
//! the kernel as linked io_uring operations, which it carries forward while
//! the process sleeps or computes, over sockets (local `SOCK_SEQPACKET`
//! pairs, or any stream) and shared futex words.
//!
//! # Threading
//!
//! A [`shm::ShmNode`] is used by one thread at a time (the runtime keeps it
//! behind its engine lock); only its [`Doorbell`](shm::Doorbell) is shared between threads.

#![deny(missing_docs)]

mod copy;
mod dualwait;
pub use copy::{copy_bytes, move_bytes};
pub mod kchain;
pub mod shm;
pub use dualwait::io_uring_allowed;
pub mod atomic;
pub mod sync;
pub mod sys;

/// The fixed-size header that travels with every message, opaque to the
/// transport (four 64-bit words, encoded by the runtime).
pub type Envelope = [u64; 4];

/// A peer stopped: it exited or was killed while the group was still running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerLost {
    /// The rank that is gone.
    pub rank: usize,
    /// What happened to it, for error messages ("exited", "killed by signal 9").
    pub cause: String,
    /// Schedules it had compiled, when it left through finalize (its
    /// program ended) rather than dying: see `ShmNode::mark_finalized`.
    pub finalized: Option<u64>,
}

impl std::fmt::Display for PeerLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {} {}", self.rank, self.cause)
    }
}
