//! The records of what is in flight between passes: one type per protocol
//! step (a message waiting for ring space, a rendezvous send waiting for
//! its answer, a stream transfer, a read, a write, a split), held in the
//! engine's queues and acted on by the protocol's file (`eager`, `rdv`,
//! `stream`, `cma`, `push`, `fusion`, `arrive`). Data only: a leaf module,
//! so the engine's state can hold them and the protocols can build them
//! without either importing the other.

use super::exec::OpRef;
use super::matching::Fit;
use crate::proto::Head;
use goal_transport::shm::StreamWindow;
use std::time::Instant;

/// A message waiting for room in a peer's ring.
pub(super) struct Out {
    pub(super) head: Head,
    /// For EAGER: the send whose data goes with it (finished once written).
    pub(super) send: Option<OpRef>,
}

/// A rendezvous send waiting for its CTS or FIN.
pub(super) struct RdvSend {
    pub(super) r: OpRef,
    pub(super) peer: u32,
    /// The message's length: what the receiver waits for, even once the
    /// send's execution has failed here.
    pub(super) len: usize,
    /// How the receiver was told to fetch it (RTS mode).
    pub(super) mode: u8,
    /// A large message came from the peer at the same time (see `adapt`).
    pub(super) exchange: bool,
    /// When its RTS left (monotonic ns), for a send whose way `eagerness`
    /// chose; 0: not timed.
    pub(super) since: u64,
    /// Timed so as half of an exchange (`eagerness`'s judgment).
    pub(super) chosen_exchange: bool,
    /// Part of a burst that `adapt` times whole (see `burst`): its end is
    /// reported there.
    pub(super) burst: bool,
}

/// A send being copied into a pair's stream.
pub(super) struct StreamOut {
    pub(super) token: u32,
    pub(super) pos: usize,
    pub(super) len: usize,
    /// When its first push began (the transfer's time goes to `adapt`; time
    /// queued behind earlier sends is not the path's).
    pub(super) since: Option<Instant>,
    /// What the receiver still has to copy out after the latest push that
    /// moved bytes (see [`adapt::stream_trail_ns`]); `adapt` adds it to the
    /// pushes' time.
    pub(super) tail_ns: u64,
    /// Through which window of the stream (the receiver's choice, in its
    /// CTS; see [`Engine::stream_window`]).
    pub(super) window: StreamWindow,
}

/// A receive being filled from a pair's stream.
pub(super) struct StreamIn {
    pub(super) r: OpRef,
    pub(super) pos: usize,
    pub(super) len: usize,
    /// Combined with its local operation as it comes (see [`fuse`]).
    pub(super) fused: Option<Box<Fused>>,
    /// Through which window of the stream (see [`Engine::stream_window`]).
    pub(super) window: StreamWindow,
    /// The window was chosen by measurement (see `window`): when the
    /// message came to the front of its sender's stream, once it has.
    pub(super) timed: Option<Option<Instant>>,
}

/// A streamed send that was half of an exchange, waiting to be timed.
///
/// By the stream, each rank of an exchange copies its message in and its
/// peer's out, one after the other on its core; the sender's pushes alone
/// (the lone message's measure) left out the copy out, and an exchange by
/// the stream looked as fast as by CMA where it took 1.7-2x as long (2
/// ranks, allgather of 256 KiB: 37-40 us against 20-24 by CMA, in a third
/// of the runs). So the send is timed from its first push until the
/// messages then in the stream from the peer are copied out as well; by
/// CMA the receiver's read is this core's whole share already.
pub(super) struct ExchangeTiming {
    pub(super) since: Instant,
    pub(super) len: usize,
    /// Receives from the peer's stream still to finish.
    pub(super) incoming: usize,
}

/// A receive being combined with its local operation as it comes.
pub(super) struct Fused {
    /// The local operation, and its parameters.
    pub(super) op: u32,
    pub(super) l: goal_sched::LocalRec,
    /// The message is the operation's first operand (else its second).
    pub(super) first: bool,
    /// Elements combined so far.
    pub(super) elems: usize,
    /// The start of an element split between two pops.
    pub(super) carry: [u8; 8],
    pub(super) carry_len: usize,
    /// The first element divided by zero.
    pub(super) err: Option<usize>,
    /// When the receive was matched (see `Engine::fuse_paths`).
    pub(super) since: Instant,
}

/// A receive reading its message from the sender's memory (see [`READ_LATER`]).
pub(super) struct Read {
    pub(super) r: OpRef,
    pub(super) src: u32,
    pub(super) len: usize,
    /// `proto::MODE_CMA` or `proto::MODE_HEAP`.
    pub(super) mode: u8,
    pub(super) token: u32,
    /// Where the message starts in the sender's memory (CMA) or heap.
    pub(super) addr: u64,
    /// Bytes read so far.
    pub(super) done: usize,
    /// Time spent reading them, for the FIN (see `adapt`).
    pub(super) ns: u64,
    /// The whole message, not a part of a split one.
    pub(super) whole: bool,
    /// A split message's claim word: this rank reads the chunks it takes
    /// from the front (`len` is the whole message's, `done` counts the
    /// bytes read; the chunk is `claim_chunk`'s); `None`: bytes `done..len`
    /// in order.
    pub(super) claim: Option<u8>,
    /// Read where the message could have been combined through the stream
    /// ([`Fetch::FusableRead`]): its time goes to `Engine::fuse_paths`.
    pub(super) fusable: bool,
}

/// A rendezvous send that writes its message into the receiver's memory
/// (Cross Memory Attach, `process_vm_writev`) because the receiver asked
/// it to (`CTS` in `MODE_PUSH`): the receiver had work of its own queued
/// (a gather's root copies its own block), so the sender's core makes the
/// copy that the receiver's would otherwise make after that work. A 2-rank
/// gather's root then spends the time of one copy, not two.
pub(super) struct Write {
    pub(super) token: u32,
    pub(super) peer: u32,
    pub(super) len: usize,
    /// Where the receive buffer starts in the receiver's memory.
    pub(super) addr: u64,
    /// Bytes written so far.
    pub(super) done: usize,
    /// A split message's claim word and chunk: this rank writes the chunks
    /// it takes from the back; `None`: the whole message, in order.
    pub(super) claim: Option<(u8, usize)>,
    /// Time spent writing so far, for `PUSHED` (see [`COLD_WRITES`]).
    pub(super) ns: u64,
}

/// The receiver's side of a split message (see [`SPLIT_MIN`]).
pub(super) struct SplitIn {
    /// The claim word (in this rank's inbox) by which the two take chunks
    /// (of `claim_chunk`'s size).
    pub(super) slot: u8,
    /// The message's start in the sender's memory.
    pub(super) addr: u64,
    /// How the receiver reads its part: `proto::MODE_CMA` or `proto::MODE_HEAP`.
    pub(super) mode: u8,
    /// The receiver's part is read.
    pub(super) read: bool,
    /// The sender's part is written.
    pub(super) written: bool,
    /// Whether the sender's write is to be judged (see `written_to`).
    pub(super) judge: bool,
    /// How long the receiver's read of its part took, and the sender's
    /// write of its own (see [`COLD_WRITES`]).
    pub(super) read_ns: u64,
    pub(super) write_ns: u64,
    /// Bytes the receiver read (the sender wrote the rest).
    pub(super) read_bytes: usize,
}

/// A few receive buffers (their start addresses) that a peer's latest long
/// messages went to, the oldest replaced first: an application may cycle
/// through several buffers (double buffering, a collective's blocks).
#[derive(Clone, Default)]
pub(super) struct Recent {
    /// Start addresses (0: a free place), and when each was put.
    pub(super) at: [u64; 4],
    pub(super) when: [u32; 4],
    pub(super) clock: u32,
}

impl Recent {
    /// Whether `at` is among them; removes it.
    pub(super) fn take(&mut self, at: u64) -> bool {
        match self.at.iter_mut().find(|a| **a == at && at != 0) {
            Some(a) => {
                *a = 0;
                true
            }
            None => false,
        }
    }

    /// Adds `at` (0: nothing), in a free place or the oldest's.
    pub(super) fn put(&mut self, at: u64) {
        if at == 0 || self.at.contains(&at) {
            return;
        }
        let i = match self.at.iter().position(|&a| a == 0) {
            Some(i) => i,
            None => (0..self.at.len()).min_by_key(|&i| self.when[i]).unwrap_or(0),
        };
        self.clock = self.clock.wrapping_add(1);
        self.at[i] = at;
        self.when[i] = self.clock;
    }
}

/// What a poll brought in, handled in this order once the poll is over.
pub(super) enum Arrival {
    /// A message from `src`, with its payload copied out of the ring (eager
    /// messages that were not delivered inline).
    Message { src: u32, head: Head, data: Option<Vec<u8>> },
    /// An eager message of `len` bytes from `src` that the poll delivered
    /// straight into posted receive `r`, or found not to fit it.
    Delivered { src: u32, r: OpRef, len: u32, fit: Fit },
    /// goal-net finished receiving bulk transfer `token` from `src`.
    BulkDone { src: u32, token: u32 },
    /// goal-net finished sending bulk transfer `token`.
    BulkSent { token: u32 },
}

#[cfg(test)]
mod tests {
    use super::Recent;

    #[test]
    pub(super) fn recent_buffers_are_taken_once_and_the_oldest_goes_first() {
        let mut r = Recent::default();
        assert!(!r.take(0x1000), "empty");
        for at in [0x1000, 0x2000, 0x3000, 0x4000] {
            r.put(at);
        }
        r.put(0x2000); // already there: nothing moves
        assert!(r.take(0x3000));
        assert!(!r.take(0x3000), "taken once");
        r.put(0x5000); // into the place 0x3000 left
        assert!(r.take(0x1000) && r.take(0x5000));
        r.put(0x6000);
        r.put(0x7000);
        r.put(0x8000); // full: the oldest (0x2000) goes
        assert!(!r.take(0x2000));
        assert!(r.take(0x4000) && r.take(0x8000));
        r.put(0);
        assert!(!r.take(0), "0 is no buffer");
    }
}
