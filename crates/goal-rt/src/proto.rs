//! The wire protocol between runtimes: what the four envelope words mean.
//!
//! Every message starts with a 32-byte envelope that the transport carries
//! without looking at it. The first byte names the message's handler (an
//! active-message layer in the sense of the MPC multirail article):
//!
//! * [`Kind::Eager`]: a whole message; its payload follows the envelope.
//! * [`Kind::Rts`] (request to send): a large message waits at the sender;
//!   the envelope says how the receiver may fetch it (`mode`): straight
//!   from the sender's shared heap, by Cross Memory Attach, or through the
//!   pipelined stream once the receiver answers `Cts`.
//! * [`Kind::Cts`] (clear to send): the receiver has matched an `Rts` in
//!   stream mode and expects its bytes next on the pair's stream.
//! * [`Kind::Fin`]: the receiver is done with a rendezvous send's buffer.
//! * `Cts` in mode `MODE_PUSH`: the receiver, busy with work of its own,
//!   asks the sender to write a CMA message into the receive buffer at
//!   [`Head::buffer`] itself; the sender answers [`Kind::Pushed`] when it
//!   has (or could not).
//! * `Cts` in mode `MODE_SPLIT`: the receiver, idle, reads chunks of a CMA
//!   message from the front and asks the sender, if its application waits
//!   anyway, to write chunks from the back meanwhile, each side taking the
//!   next through claim word `len` of the receiver's inbox; `Fin` in mode
//!   `FIN_PART` says the receiver has no chunk left to take, `Pushed` the
//!   sender.
//! * [`Kind::Credit`] (between machines): eager bytes released.
//! * [`Kind::Accept`], [`Kind::Decline`] (kernel mode): the receiver's
//!   answer to a channel offered in an `Eager` envelope (`MODE_OFFER`; see
//!   `kpath`).
//!
//! The fourth word means something different per kind; it is read and
//! written only through accessors named for each meaning
//! ([`Head::buffer`], [`Head::nanos`], [`Head::credits`],
//! [`Head::this_one_only`], [`Head::offer`]).
//!
//! ```text
//! w0: kind u8 | mode u8 << 8 | group context u16 << 16 | tag i32 << 32
//! w1: schedule number in its group u32 | execution number u32 << 32
//! w2: message length u32 | rendezvous token u32 << 32
//! w3: per kind: a buffer, a time, credits, a flag or an offer (see the accessors)
//! ```
//!
//! The (schedule id, execution number, source, tag) quadruple is the
//! matching key of the contract: the k-th execution of a schedule on one
//! rank pairs with the k-th execution of the same schedule everywhere. A
//! schedule id ([`SchedId`]) is its group's context and its number in that
//! group's compile order, so executions of different groups never match
//! each other's messages.

use goal_transport::shm::StreamWindow;
use goal_transport::Envelope;

/// A schedule's id, the same on every member of its group: the group's
/// context (bits 32..48; 0 is the world group) above the schedule's number
/// in that group's compile order (bits 0..32).
pub type SchedId = u64;

/// The context of a schedule id.
#[inline(always)]
pub fn context_of(id: SchedId) -> u16 {
    (id >> 32) as u16
}

/// A schedule id as messages name it: its number, and its group's context
/// unless it is the world group's ("schedule 5", "schedule 5 of group
/// context 3").
#[derive(Clone, Copy)]
pub struct Named(pub SchedId);

impl std::fmt::Display for Named {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match context_of(self.0) {
            0 => write!(f, "{}", self.0 as u32),
            c => write!(f, "{} of group context {c}", self.0 as u32),
        }
    }
}

/// The id of schedule number `n` of the group with context `ctx`.
#[inline(always)]
pub fn sched_id(ctx: u16, n: u32) -> SchedId {
    (ctx as u64) << 32 | n as u64
}

/// What a message is: the envelope's first byte, the handler it goes to.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A byte that no runtime sends: a corrupt or foreign envelope.
    Invalid = 0,
    /// A whole message, payload inline.
    Eager = 1,
    /// Request to send a large message.
    Rts = 2,
    /// Clear to send (on the stream, or by the mode's path).
    Cts = 3,
    /// Rendezvous finished; the sender's buffer is free.
    Fin = 4,
    /// Between machines only: the receiver has released eager bytes of
    /// this sender ([`Head::credits`]); over shared memory the count is a
    /// word the sender reads instead.
    Credit = 5,
    /// Kernel mode: the receiver took the channel offered for the sender's
    /// operation `token` of schedule `sched` (see `kpath`).
    Accept = 6,
    /// Kernel mode: the receiver will not use that channel; the sender
    /// closes it.
    Decline = 7,
    /// Between local ranks: the answer to a `Cts` in `MODE_PUSH` or
    /// `MODE_SPLIT` for the sender's rendezvous `token`, its mode one of
    /// the `PUSH_*` below.
    Pushed = 8,
    /// A receive of execution `seq` of schedule `sched` has waited long
    /// with nothing moving: does the receiver's peer's schedule hold a send
    /// to it with `tag` at all? (See `Engine::probe_if_stalled`.)
    Probe = 9,
    /// The answer to a `Probe` when it does not: that receive can never be
    /// matched, the ranks' schedules disagree (different roots, say). In
    /// mode [`NOSEND_FAILED`]: the schedule holds the send, but that
    /// execution failed here before sending ([`Head::failure`] says why).
    NoSend = 10,
}

impl Kind {
    /// Every kind a runtime sends, in wire order.
    pub const ALL: [Kind; 10] =
        [Kind::Eager, Kind::Rts, Kind::Cts, Kind::Fin, Kind::Credit, Kind::Accept, Kind::Decline, Kind::Pushed, Kind::Probe, Kind::NoSend];

    /// The kind of wire byte `b` ([`Kind::Invalid`] for any other byte):
    /// one load from a table.
    #[inline(always)]
    pub fn from_wire(b: u8) -> Kind {
        KIND_OF[b as usize]
    }
}

/// [`Kind::from_wire`]'s table: every wire byte's kind.
const KIND_OF: [Kind; 256] = {
    let mut t = [Kind::Invalid; 256];
    let mut i = 0;
    while i < Kind::ALL.len() {
        t[Kind::ALL[i] as usize] = Kind::ALL[i];
        i += 1;
    }
    t
};

/// The word of a `Cts` that answers a CMA request ([`Head::this_one_only`]):
/// the receiver takes this one message by stream for a reason of its own
/// (a large receive combined as it comes, see `fuse`), and may read the
/// sender's memory (a CTS without it means it may not, and the sender
/// offers CMA no more).
const CTS_THIS_ONE: u64 = 1;
/// `Fin` mode after a `Cts` in `MODE_SPLIT`: the receiver has read its
/// part; the buffer is free once the sender has written its own too (a
/// sender that declined to write waits for the plain `Fin` that follows
/// the receiver's reading the rest). Its [`Head::nanos`] is the read's time.
pub const FIN_PART: u8 = 1;

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

/// `NoSend` mode: the prober's peer holds the send, but its execution of
/// that number failed (by [`Head::failure`]) and will send nothing more.
pub const NOSEND_FAILED: u8 = 1;

/// Set in the mode of a `Cts` for the stream: the bytes go through the
/// stream's narrow window (see goal-transport's `shm/stream.rs`).
pub const CTS_NARROW: u8 = 0x40;
/// Set in the mode of a `Cts` for the stream: the bytes go through the
/// stream's long window, twice its size (see goal-transport's
/// `shm/stream.rs`).
pub const CTS_LONG: u8 = 0x20;

/// The stream window a `Cts` of `mode` names.
pub fn cts_window(mode: u8) -> StreamWindow {
    if mode & CTS_NARROW != 0 {
        StreamWindow::Narrow
    } else if mode & CTS_LONG != 0 {
        StreamWindow::Long
    } else {
        StreamWindow::Stream
    }
}

/// The mode bit of a `Cts` that names stream window `w` (0: the stream).
pub fn cts_window_bit(w: StreamWindow) -> u8 {
    match w {
        StreamWindow::Narrow => CTS_NARROW,
        StreamWindow::Stream => 0,
        StreamWindow::Long => CTS_LONG,
    }
}

/// RTS mode: copy from the sender's shared heap at offset `w3`.
pub const MODE_HEAP: u8 = 1;
/// RTS mode: copy by Cross Memory Attach from address `w3`.
pub const MODE_CMA: u8 = 2;
/// RTS mode: the bytes come on the pair's stream after a CTS.
pub const MODE_STREAM: u8 = 3;
/// CTS mode: write the message by CMA to address `w3` of the receiver.
pub const MODE_PUSH: u8 = 5;
/// CTS mode: share the copy with the receiver: write, by CMA to address
/// `w3` of the receiver (where the message's first byte goes), the chunks
/// taken from the back of a claim word of the receiver's inbox (see
/// [`Head::split_claim`]), while the receiver reads those it takes from
/// the front.
pub const MODE_SPLIT: u8 = 6;
/// RTS mode: the sender is on another machine; after the CTS the bytes
/// come as a network bulk transfer straight into the receive buffer.
pub const MODE_NET: u8 = 4;
/// Set in an RTS's mode beside `MODE_HEAP`, `MODE_CMA` or `MODE_STREAM`:
/// the sender took its message for half of an exchange (a large message
/// from the receiver comes at the same time; see `adapt`), whose path the
/// receiver, the higher rank of the pair, follows with its own exchanges'
/// messages, and its lone ones with the path of its peer's lone ones.
/// [`Head::rts_mode`] splits it off.
pub const RTS_EXCHANGE: u8 = 0x80;
/// Set in an RTS's mode beside `MODE_CMA`: the receiver reads the message
/// whole itself, neither asking the sender to write it (`MODE_PUSH`) nor to
/// share the copy (`MODE_SPLIT`). A rendezvous that the sender's eager
/// chooser took instead of the ring and times against it (goal-rt's
/// `eagerness`): a push or a split waits for the sender's next pass, and
/// made the rendezvous of an exchange of 64 KiB look two to three times
/// slower than the read it could be.
pub const RTS_READ: u8 = 0x40;

/// An RTS's mode byte `mode` without [`RTS_EXCHANGE`] and [`RTS_READ`],
/// and whether the first was set.
#[inline]
pub fn split_rts_mode(mode: u8) -> (u8, bool) {
    (mode & !(RTS_EXCHANGE | RTS_READ), mode & RTS_EXCHANGE != 0)
}

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
    /// What the message is.
    pub kind: Kind,
    /// A refinement of the kind (`MODE_*`, `FIN_PART`, `PUSH_*`).
    pub mode: u8,
    /// Message tag.
    pub tag: i32,
    /// Schedule id (its group's context and its number there).
    pub sched: SchedId,
    /// Execution number of that schedule.
    pub seq: u32,
    /// Message length in bytes.
    pub len: u32,
    /// Rendezvous token (the sender's).
    pub token: u32,
    /// The fourth word, whose meaning depends on the kind: read it
    /// through the accessor named for that meaning ([`buffer`](Self::buffer),
    /// [`nanos`](Self::nanos), [`credits`](Self::credits),
    /// [`this_one_only`](Self::this_one_only), [`offer`](Self::offer)).
    w3: u64,
}

impl Head {
    /// An RTS's mode without [`RTS_EXCHANGE`] and [`RTS_READ`], and whether
    /// the first was set (see [`split_rts_mode`]).
    #[inline]
    pub fn rts_mode(&self) -> (u8, bool) {
        split_rts_mode(self.mode)
    }

    /// Encodes into the transport's envelope.
    #[inline]
    pub fn encode(&self) -> Envelope {
        [
            self.kind as u8 as u64 | (self.mode as u64) << 8 | (self.sched >> 32 & 0xffff) << 16 | (self.tag as u32 as u64) << 32,
            self.sched & 0xffff_ffff | (self.seq as u64) << 32,
            self.len as u64 | (self.token as u64) << 32,
            self.w3,
        ]
    }

    /// Decodes an envelope.
    #[inline]
    pub fn decode(e: &Envelope) -> Head {
        Head {
            kind: Kind::from_wire(e[0] as u8),
            mode: (e[0] >> 8) as u8,
            tag: (e[0] >> 32) as u32 as i32,
            sched: (e[0] >> 16 & 0xffff) << 32 | (e[1] & 0xffff_ffff),
            seq: (e[1] >> 32) as u32,
            len: e[2] as u32,
            token: (e[2] >> 32) as u32,
            w3: e[3],
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
    pub fn eager(o: &goal_sched::OpRec, sched: SchedId, seq: u32) -> Head {
        Head { kind: Kind::Eager, mode: 0, tag: o.tag, sched, seq, len: o.len, token: 0, w3: 0 }
    }

    /// A control message (CTS, FIN, ...) for `token`.
    pub fn control(kind: Kind, token: u32) -> Head {
        Head { kind, mode: 0, tag: 0, sched: 0, seq: 0, len: 0, token, w3: 0 }
    }

    /// `self` in mode `mode`.
    pub fn mode(self, mode: u8) -> Head {
        Head { mode, ..self }
    }

    /// `Rts`: where the message waits at the sender (an offset into its
    /// shared heap, or an address for CMA). `Cts` in `MODE_PUSH` or
    /// `MODE_SPLIT`: where the receive buffer starts in the receiver.
    #[inline]
    pub fn buffer(&self) -> u64 {
        self.w3
    }

    /// `self` with [`buffer`](Self::buffer) `at`.
    #[inline]
    pub fn with_buffer(self, at: u64) -> Head {
        Head { w3: at, ..self }
    }

    /// `Cts` in `MODE_SPLIT`: the receiver's claim word for the message,
    /// and the chunk (bytes, whole pages) by which the two take it, carried
    /// in `len` (the index in its low byte, the pages above).
    #[inline]
    pub fn split_claim(&self) -> (usize, usize) {
        ((self.len & 0xff) as usize, (self.len >> 8) as usize * 4096)
    }

    /// `self` with [`split_claim`](Self::split_claim) `(slot, chunk)`.
    #[inline]
    pub fn with_split_claim(self, slot: u8, chunk: usize) -> Head {
        Head { len: slot as u32 | ((chunk >> 12) as u32) << 8, ..self }
    }

    /// `Pushed` (`PUSH_DONE`), `Fin` and `Fin` in `FIN_PART`: how long the
    /// copy took, in nanoseconds (0: not timed).
    #[inline]
    pub fn nanos(&self) -> u64 {
        self.w3
    }

    /// `self` with [`nanos`](Self::nanos) `ns`.
    #[inline]
    pub fn with_nanos(self, ns: u64) -> Head {
        Head { w3: ns, ..self }
    }

    /// `Credit`: the eager bytes released so far, in all.
    #[inline]
    pub fn credits(&self) -> u64 {
        self.w3
    }

    /// `self` with [`credits`](Self::credits) `n`.
    #[inline]
    pub fn with_credits(self, n: u64) -> Head {
        Head { w3: n, ..self }
    }

    /// `Cts` answering a CMA request: the receiver takes this one message
    /// by stream and may still read the sender's memory for later ones.
    #[inline]
    pub fn this_one_only(&self) -> bool {
        self.w3 == CTS_THIS_ONE
    }

    /// `self` marked [`this_one_only`](Self::this_one_only).
    #[inline]
    pub fn for_this_one_only(self) -> Head {
        Head { w3: CTS_THIS_ONE, ..self }
    }

    /// `NoSend` in [`NOSEND_FAILED`]: the failure the sender's execution
    /// goes back to (the engine's `failure::Cause`, as a word: the rank
    /// whose execution failed first and its error's kind).
    #[inline]
    pub fn failure(&self) -> u64 {
        self.w3
    }

    /// `self` with [`failure`](Self::failure) `cause`.
    #[inline]
    pub fn with_failure(self, cause: u64) -> Head {
        Head { w3: cause, ..self }
    }

    /// `Eager` in `MODE_OFFER` or `MODE_SWITCH` (kernel mode): the
    /// sender's operation the channel is for, and the offer's nonce (over
    /// TCP; 0 otherwise).
    #[inline]
    pub fn offer(&self) -> (u32, u32) {
        (self.w3 as u32, (self.w3 >> 32) as u32)
    }

    /// `self` with [`offer`](Self::offer) (`op`, `nonce`).
    #[inline]
    pub fn with_offer(self, op: u32, nonce: u32) -> Head {
        Head { w3: op as u64 | (nonce as u64) << 32, ..self }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelope_round_trips() {
        let h = Head { kind: Kind::Rts, mode: MODE_CMA, tag: -1, sched: sched_id(0xfffe, 7), seq: u32::MAX, len: 1 << 31, token: 99, w3: 0xdead_beef_0000 };
        assert_eq!(Head::decode(&h.encode()), h);
        assert_eq!(Head::from_bytes(&h.to_bytes()), Some(h));
        assert_eq!(Head::from_bytes(&h.to_bytes()[..31]), None);
    }

    #[test]
    fn an_rts_says_whether_its_sender_took_it_for_half_of_an_exchange() {
        for (mode, exchange) in [(MODE_HEAP, false), (MODE_CMA, true), (MODE_STREAM, true), (MODE_STREAM, false)] {
            let h = Head { kind: Kind::Rts, mode: mode | if exchange { RTS_EXCHANGE } else { 0 }, tag: 3, sched: sched_id(1, 2), seq: 4, len: 1 << 20, token: 5, w3: 6 };
            assert_eq!(Head::decode(&h.encode()).rts_mode(), (mode, exchange));
            // Asking for a read whole changes neither.
            let h = Head { mode: h.mode | RTS_READ, ..h };
            assert_eq!(Head::decode(&h.encode()).rts_mode(), (mode, exchange));
            assert_ne!(Head::decode(&h.encode()).mode & RTS_READ, 0);
        }
    }

    #[test]
    fn every_kind_survives_the_wire_and_other_bytes_are_invalid() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_wire(k as u8), k);
            assert_eq!(Head::decode(&Head::control(k, 3).encode()).kind, k);
        }
        assert_eq!(Kind::from_wire(0), Kind::Invalid);
        assert_eq!(Kind::from_wire(11), Kind::Invalid);
        assert_eq!(Kind::from_wire(0xF0), Kind::Invalid);
    }

    #[test]
    fn the_fourth_word_reads_back_by_its_meaning() {
        let c = Head::control(Kind::Cts, 1);
        assert!(c.for_this_one_only().this_one_only());
        assert!(!c.with_buffer(0x7000).this_one_only());
        assert_eq!(Head::control(Kind::Fin, 1).with_nanos(1234).nanos(), 1234);
        assert_eq!(Head::control(Kind::Credit, 0).with_credits(1 << 40).credits(), 1 << 40);
        let o = Head::decode(&Head::control(Kind::Eager, 5).with_offer(17, 0xABCD_EF01).encode());
        assert_eq!(o.offer(), (17, 0xABCD_EF01));
        let n = Head::decode(&Head::control(Kind::NoSend, 0).mode(NOSEND_FAILED).with_failure(0x7_0000_0009).encode());
        assert_eq!((n.mode, n.failure()), (NOSEND_FAILED, 0x7_0000_0009));
    }
}
