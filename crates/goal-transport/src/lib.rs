//! goal-transport: moves bytes between ranks and knows nothing of schedules.
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

mod dualwait;
pub mod kchain;
pub mod shm;
pub use dualwait::io_uring_allowed;
mod sync;
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
}

impl std::fmt::Display for PeerLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "rank {} {}", self.rank, self.cause)
    }
}
