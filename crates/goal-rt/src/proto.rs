//! The wire protocol between runtimes: what the four envelope words mean.
//!
//! Every message starts with a 32-byte envelope that the transport carries
//! without looking at it. The first byte names the message's handler (an
//! active-message layer in the sense of the MPC multirail article):
//!
//! * `EAGER`: a whole message; its payload follows the envelope.
//! * `RTS` (request to send): a large message waits at the sender; the
//!   envelope says how the receiver may fetch it (`mode`): straight from the
//!   sender's shared heap, by Cross Memory Attach, or through the pipelined
//!   stream once the receiver answers `CTS`.
//! * `CTS` (clear to send): the receiver has matched an `RTS` in stream mode
//!   and expects its bytes next on the pair's stream.
//! * `FIN`: the receiver is done with a rendezvous send's buffer.
//! * `CTS` in mode `MODE_PUSH`: the receiver, busy with work of its own,
//!   asks the sender to write a CMA message into the receive buffer at
//!   `w3` itself; the sender answers `PUSHED` when it has (or could not).
//! * `CTS` in mode `MODE_SPLIT`: the receiver, idle, reads the first `w2`
//!   bytes of a CMA message itself and asks the sender, if its application
//!   waits anyway, to write the rest at `w3` meanwhile; `FIN` in mode
//!   `FIN_PART` says the receiver's part is read, `PUSHED` the sender's.
//! * `ACCEPT`, `DECLINE` (kernel mode): the receiver's answer to a channel
//!   offered in an `EAGER` envelope (`MODE_OFFER`; see `kpath`).
//!
//! ```text
//! w0: kind u8 | mode u8 << 8 | tag i32 << 32
//! w1: schedule id u32 | execution number u32 << 32
//! w2: message length u32 | rendezvous token u32 << 32
//! w3: RTS: heap offset or address of the sender's buffer
//! ```
//!
//! The (schedule id, execution number, source, tag) quadruple is the
//! matching key of the contract: the k-th execution of a schedule on one
//! rank pairs with the k-th execution of the same schedule everywhere.

use goal_transport::Envelope;

/// A whole message, payload inline.
pub const EAGER: u8 = 1;
/// Request to send a large message.
pub const RTS: u8 = 2;
/// Clear to send on the stream.
pub const CTS: u8 = 3;
/// `addr` of a CTS that answers a CMA request: the receiver takes this one
/// message by stream for a reason of its own (a large receive combined as
/// it comes, see `fuse`), and may read the sender's memory (a CTS without
/// it means it may not, and the sender offers CMA no more).
pub const CTS_THIS_ONE: u64 = 1;
/// Rendezvous finished; the sender's buffer is free.
pub const FIN: u8 = 4;
/// `FIN` mode after a `CTS` in `MODE_SPLIT`: the receiver has read its
/// part; the buffer is free once the sender has written its own too (a
/// sender that declined to write waits for the plain `FIN` that follows
/// the receiver's reading the rest). `w3` carries the read's time (ns).
pub const FIN_PART: u8 = 1;
/// Between machines only: the receiver has released eager bytes of this
/// sender (cumulative count in `addr`); over shared memory the count is a
/// word the sender reads instead.
pub const CREDIT: u8 = 5;
/// Kernel mode: the receiver took the channel offered for the sender's
/// operation `token` of schedule `sched` (see `kpath`).
pub const ACCEPT: u8 = 6;
/// Kernel mode: the receiver will not use that channel; the sender closes it.
pub const DECLINE: u8 = 7;

/// Between local ranks: the answer to a `CTS` in `MODE_PUSH` for the
/// sender's rendezvous `token`, its mode one of the three below.
pub const PUSHED: u8 = 8;
/// `PUSHED` mode: the message is in the receive buffer; `w3` is how long
/// the sender's writes took, in nanoseconds (the receiver judges them, see
/// `COLD_WRITES` in the engine).
pub const PUSH_DONE: u8 = 0;
/// `PUSHED` mode: the sender may not write here (ptrace rules); the
/// receiver asks for the stream instead, and for no more pushes.
pub const PUSH_REFUSED: u8 = 1;
/// `PUSHED` mode: the write failed.
pub const PUSH_FAILED: u8 = 2;
/// `PUSHED` mode: the send's execution failed before its bytes were
/// written; as for a stream whose sender failed, the receiver takes the
/// message by the stream (zeros from the sender) and fails only by its own
/// errors.
pub const PUSH_BY_STREAM: u8 = 3;
/// `PUSHED` mode, after a `CTS` in `MODE_SPLIT`: the sender's application
/// is not waiting (its helper would take the application's CPU to write);
/// the receiver reads the rest itself.
pub const PUSH_DECLINED: u8 = 4;

/// RTS mode: copy from the sender's shared heap at offset `w3`.
pub const MODE_HEAP: u8 = 1;
/// RTS mode: copy by Cross Memory Attach from address `w3`.
pub const MODE_CMA: u8 = 2;
/// RTS mode: the bytes come on the pair's stream after a CTS.
pub const MODE_STREAM: u8 = 3;
/// CTS mode: write the message by CMA to address `w3` of the receiver.
pub const MODE_PUSH: u8 = 5;
/// CTS mode: write the message from byte `w2` on by CMA to address `w3` of
/// the receiver (where the message's first byte goes) while the receiver
/// reads the bytes before it.
pub const MODE_SPLIT: u8 = 6;
/// RTS mode: the sender is on another machine; after the CTS the bytes
/// come as a network bulk transfer straight into the receive buffer.
pub const MODE_NET: u8 = 4;

/// EAGER mode, kernel mode: this message offers a channel for later
/// executions of its send operation: the sender's descriptor `token`, for
/// the sender's operation `addr`.
pub const MODE_OFFER: u8 = 8;
/// EAGER mode, kernel mode: the last message of this operation outside its
/// channel; later executions come on the channel.
pub const MODE_SWITCH: u8 = 9;

/// A decoded envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// Handler: EAGER, RTS, CTS or FIN.
    pub kind: u8,
    /// RTS mode.
    pub mode: u8,
    /// Message tag.
    pub tag: i32,
    /// Schedule id.
    pub sched: u32,
    /// Execution number of that schedule.
    pub seq: u32,
    /// Message length in bytes.
    pub len: u32,
    /// Rendezvous token (the sender's).
    pub token: u32,
    /// Heap offset or address (RTS).
    pub addr: u64,
}

impl Head {
    /// Encodes into the transport's envelope.
    #[inline]
    pub fn encode(&self) -> Envelope {
        [
            self.kind as u64 | (self.mode as u64) << 8 | (self.tag as u32 as u64) << 32,
            self.sched as u64 | (self.seq as u64) << 32,
            self.len as u64 | (self.token as u64) << 32,
            self.addr,
        ]
    }

    /// Decodes an envelope.
    #[inline]
    pub fn decode(e: &Envelope) -> Head {
        Head {
            kind: e[0] as u8,
            mode: (e[0] >> 8) as u8,
            tag: (e[0] >> 32) as u32 as i32,
            sched: e[1] as u32,
            seq: (e[1] >> 32) as u32,
            len: e[2] as u32,
            token: (e[2] >> 32) as u32,
            addr: e[3],
        }
    }

    /// The envelope as the 32 little-endian bytes that travel between
    /// machines (the network carries bytes, the rings carry words).
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, w) in self.encode().iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// The inverse of [`to_bytes`](Self::to_bytes); `None` unless `b` is 32 bytes.
    pub fn from_bytes(b: &[u8]) -> Option<Head> {
        let b: &[u8; 32] = b.try_into().ok()?;
        let mut e: Envelope = [0; 4];
        for (i, w) in e.iter_mut().enumerate() {
            *w = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().ok()?);
        }
        Some(Head::decode(&e))
    }

    /// The envelope of an eager send `o` of execution `seq` of schedule
    /// `sched` (its payload follows it).
    pub fn eager(o: &goal_sched::OpRec, sched: u32, seq: u32) -> Head {
        Head { kind: EAGER, mode: 0, tag: o.tag, sched, seq, len: o.len, token: 0, addr: 0 }
    }

    /// A control message (CTS, FIN) for `token`.
    pub fn control(kind: u8, token: u32) -> Head {
        Head { kind, mode: 0, tag: 0, sched: 0, seq: 0, len: 0, token, addr: 0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips() {
        let h = Head { kind: RTS, mode: MODE_CMA, tag: -1, sched: 7, seq: u32::MAX, len: 1 << 31, token: 99, addr: 0xdead_beef_0000 };
        assert_eq!(Head::decode(&h.encode()), h);
        assert_eq!(Head::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(Head::from_bytes(&h.to_bytes()[..31]), None);
    }
}
