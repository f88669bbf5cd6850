//! The wire format: frame layout, encoders, and the parser.
//!
//! [`parse`] is a pure function from bytes to a [`Frame`] (or "need more", or
//! an error): it reads no state, allocates nothing, and never trusts a length
//! before checking it against the buffer and the [`Limits`]. Everything that
//! depends on the node's state (is this token expected, is this rank one of
//! ours) is checked by the node afterwards. Keeping the parser pure is what
//! lets it be fuzzed by itself (`tests/wire_fuzz.rs`, `fuzz/`): a frame it
//! accepts re-encodes to exactly the bytes it consumed.
//!
//! The layout is described in the crate documentation ("Wire format").

use std::fmt;

/// Bytes of the fixed frame header.
pub const HEADER_LEN: usize = 16;
/// First eight bytes of CHALLENGE and HELLO: protocol name and version.
pub const MAGIC: [u8; 8] = *b"GOALNET1";
/// Largest head of a user active message.
pub const MAX_USER_HEAD: usize = 64;
/// Largest REJECT reason.
pub const MAX_REASON: usize = 256;
/// Most fragment acknowledgements in one ACK frame.
pub const MAX_ACK_ENTRIES: usize = 4096;
/// Bytes of one fragment acknowledgement (xid, offset).
pub const ACK_ENTRY_LEN: usize = 16;
/// Bytes of a nonce and of a MAC.
pub const NONCE_LEN: usize = 32;
/// Header flag (in the otherwise reserved bits), on FRAG and user messages
/// only: the sender keeps no copy of this frame to send again, so the
/// receiver acknowledges it to no one. A sender sets it for a peer it
/// reaches over a single rail, where a connection that dies loses the peer
/// and nothing could be sent again anyway.
pub const FLAG_UNACKED: u16 = 1;

/// Frame kinds (the header's first byte). 0..=15 are goal-net's own; 16..=255
/// are user handlers, valid only if the node was told so.
pub mod kind {
    /// Acceptor to connector, first frame: who I am, and a nonce.
    pub const CHALLENGE: u8 = 1;
    /// Connector to acceptor: who I am, my nonce, a MAC over both.
    pub const HELLO: u8 = 2;
    /// Acceptor to connector: the acceptor's MAC; the connection is up.
    pub const WELCOME: u8 = 3;
    /// Either way during the handshake: why the connection is refused.
    pub const REJECT: u8 = 4;
    /// A piece of a bulk transfer; its body is the data.
    pub const FRAG: u8 = 5;
    /// Acknowledges active messages (cumulative) and fragments (listed).
    pub const ACK: u8 = 6;
    /// Keeps an idle connection's link probed.
    pub const PING: u8 = 7;
    /// The sender is closing on purpose.
    pub const BYE: u8 = 8;
    /// Calibration traffic (see `NetNode::measure_crossover`).
    pub const PROBE: u8 = 9;
    /// The first user handler id.
    pub const FIRST_USER: u8 = 16;
}

/// Fixed head lengths of the internal kinds.
pub const CHALLENGE_HEAD: usize = 8 + 4 + 4 + 4 + NONCE_LEN;
/// See [`CHALLENGE_HEAD`].
pub const HELLO_HEAD: usize = 8 + 4 + 4 + 4 + 4 + NONCE_LEN + NONCE_LEN;
/// See [`CHALLENGE_HEAD`].
pub const WELCOME_HEAD: usize = NONCE_LEN;
/// See [`CHALLENGE_HEAD`].
pub const FRAG_HEAD: usize = 32;
/// See [`CHALLENGE_HEAD`].
pub const PROBE_HEAD: usize = 24;

/// A set of user handler ids (16..=255).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandlerSet([u64; 4]);

impl HandlerSet {
    /// The set of the given ids; ids below 16 are ignored (they are goal-net's).
    pub fn of(ids: &[u8]) -> HandlerSet {
        let mut s = HandlerSet::default();
        for &id in ids {
            if id >= kind::FIRST_USER {
                s.0[id as usize / 64] |= 1 << (id % 64);
            }
        }
        s
    }

    /// Every user id.
    pub fn all() -> HandlerSet {
        HandlerSet::of(&(kind::FIRST_USER..=255).collect::<Vec<_>>())
    }

    /// Is `id` a valid user handler?
    pub fn contains(&self, id: u8) -> bool {
        id >= kind::FIRST_USER && self.0[id as usize / 64] & (1 << (id % 64)) != 0
    }
}

/// What the parser accepts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest active-message payload (and PROBE body).
    pub max_am_payload: u32,
    /// Valid user handlers.
    pub handlers: HandlerSet,
}

/// The acceptor's first frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Challenge {
    /// The acceptor's rank.
    pub rank: u32,
    /// Its group size.
    pub size: u32,
    /// Index of the acceptor's rail that accepted.
    pub rail: u32,
    /// The acceptor's nonce.
    pub nonce: [u8; NONCE_LEN],
}

/// The connector's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The connector's rank.
    pub rank: u32,
    /// Its group size.
    pub size: u32,
    /// Index of the connector's rail.
    pub from_rail: u32,
    /// Index of the acceptor's rail it meant to reach.
    pub to_rail: u32,
    /// The connector's nonce.
    pub nonce: [u8; NONCE_LEN],
    /// HMAC over the challenge and this hello (see [`hello_mac`]).
    pub mac: [u8; NONCE_LEN],
}

/// The head of a bulk fragment; `len` body bytes follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragHead {
    /// The sender's transfer id (unique per ordered pair, never reused).
    pub xid: u64,
    /// The token the receiver registered the destination under.
    pub token: u64,
    /// Where the body lands in the message.
    pub offset: u64,
    /// Bytes of the whole message.
    pub total: u64,
    /// Bytes of this fragment's body.
    pub len: u32,
    /// Not to be acknowledged ([`FLAG_UNACKED`]).
    pub unacked: bool,
}

/// The fragment acknowledgements of an ACK frame, `(xid, offset)` pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckList<'a>(&'a [u8]);

impl<'a> AckList<'a> {
    /// The entries.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + 'a {
        self.0.chunks_exact(ACK_ENTRY_LEN).map(|c| (u64_at(c, 0), u64_at(c, 8)))
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len() / ACK_ENTRY_LEN
    }

    /// None at all?
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The raw entries.
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }
}

/// A parsed frame. Slices point into the parsed buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// See [`kind::CHALLENGE`].
    Challenge(Challenge),
    /// See [`kind::HELLO`].
    Hello(Hello),
    /// See [`kind::WELCOME`].
    Welcome {
        /// HMAC over the hello and the challenge (see [`welcome_mac`]).
        mac: [u8; NONCE_LEN],
    },
    /// See [`kind::REJECT`].
    Reject {
        /// Why, in words.
        reason: &'a [u8],
    },
    /// A fragment's head; its body is *not* part of the parsed bytes.
    Frag(FragHead),
    /// See [`kind::ACK`].
    Ack {
        /// Active messages delivered so far from the ACK's receiver (a count).
        delivered: u64,
        /// Fragments received.
        frags: AckList<'a>,
    },
    /// See [`kind::PING`].
    Ping,
    /// See [`kind::BYE`].
    Bye,
    /// See [`kind::PROBE`].
    Probe {
        /// What to do (`probe` module of the node).
        op: u32,
        /// Which measurement.
        id: u64,
        /// A size argument.
        size: u64,
        /// Payload (echoed).
        body: &'a [u8],
    },
    /// A user active message.
    Am {
        /// Handler id (16..=255).
        handler: u8,
        /// Per-ordered-pair sequence number.
        seq: u64,
        /// The user's small header.
        head: &'a [u8],
        /// The payload.
        payload: &'a [u8],
        /// Not to be acknowledged ([`FLAG_UNACKED`]).
        unacked: bool,
    },
}

/// Outcome of [`parse`] on a buffer that holds no error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// Not enough bytes yet: the frame needs at least `need` bytes in total
    /// (for FRAG, its header and head only).
    Incomplete {
        /// Bytes the buffer must hold before parsing can go on.
        need: usize,
    },
    /// A frame, and how many bytes of the buffer it used.
    Frame(Frame<'a>, usize),
}

/// Why bytes are not a valid frame. Each closes the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// A kind byte no one defined.
    UnknownKind(u8),
    /// A user handler the node was not told about.
    UnknownHandler(u8),
    /// The reserved header bits are not zero.
    Reserved(u16),
    /// A head of the wrong length for its kind.
    HeadLen {
        /// The kind.
        kind: u8,
        /// Its head length.
        got: u8,
    },
    /// A body longer than its kind allows.
    BodyLen {
        /// The kind.
        kind: u8,
        /// Its body length.
        got: u32,
        /// The limit.
        max: u32,
    },
    /// A header field that must be zero for this kind is not.
    NonZeroArg(u8),
    /// The handshake magic is wrong: not goal-net, or another version.
    BadMagic,
    /// A fragment's range does not fit inside its message.
    FragRange {
        /// Offset.
        offset: u64,
        /// Length.
        len: u32,
        /// Message size.
        total: u64,
    },
    /// An ACK body that is not a whole number of entries.
    AckBody(u32),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::UnknownKind(k) => write!(f, "unknown frame kind {k}"),
            WireError::UnknownHandler(k) => write!(f, "unknown handler {k}"),
            WireError::Reserved(r) => write!(f, "reserved header bits set ({r:#06x})"),
            WireError::HeadLen { kind, got } => write!(f, "frame kind {kind} with a {got}-byte head"),
            WireError::BodyLen { kind, got, max } => write!(f, "frame kind {kind} with a {got}-byte body (limit {max})"),
            WireError::NonZeroArg(k) => write!(f, "frame kind {k} with a non-zero argument"),
            WireError::BadMagic => write!(f, "not a goal-net v1 handshake"),
            WireError::FragRange { offset, len, total } => {
                write!(f, "fragment [{offset}, {offset}+{len}) outside its {total}-byte message")
            }
            WireError::AckBody(n) => write!(f, "acknowledgement body of {n} bytes"),
        }
    }
}

impl std::error::Error for WireError {}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[inline]
fn arr32(b: &[u8], at: usize) -> [u8; 32] {
    let mut a = [0u8; 32];
    a.copy_from_slice(&b[at..at + 32]);
    a
}

/// The fields of a frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Frame kind / handler id.
    pub kind: u8,
    /// Bytes of the head that follows the header.
    pub head_len: u8,
    /// Bytes of the body that follows the head.
    pub body_len: u32,
    /// Kind-specific argument (sequence number, delivered count).
    pub arg: u64,
    /// [`FLAG_UNACKED`] or 0.
    pub flags: u16,
}

impl Header {
    /// Encodes into 16 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.kind;
        b[1] = self.head_len;
        b[2..4].copy_from_slice(&self.flags.to_le_bytes());
        b[4..8].copy_from_slice(&self.body_len.to_le_bytes());
        b[8..16].copy_from_slice(&self.arg.to_le_bytes());
        b
    }
}

/// Parses one frame at the start of `buf`.
///
/// Never panics and never reads past `buf`; every length is checked against
/// `lim` before it is used. For a FRAG, the consumed count covers the header
/// and head only: the body follows in the stream and the caller reads it
/// straight into place.
pub fn parse<'a>(buf: &'a [u8], lim: &Limits) -> Result<Parsed<'a>, WireError> {
    if buf.len() < HEADER_LEN {
        return Ok(Parsed::Incomplete { need: HEADER_LEN });
    }
    let k = buf[0];
    let head_len = buf[1] as usize;
    let reserved = u16::from_le_bytes([buf[2], buf[3]]);
    let body_len = u32_at(buf, 4);
    let arg = u64_at(buf, 8);
    let flaggable = k == kind::FRAG || k >= kind::FIRST_USER;
    if reserved & !FLAG_UNACKED != 0 || (reserved != 0 && !flaggable) {
        return Err(WireError::Reserved(reserved));
    }
    let unacked = reserved & FLAG_UNACKED != 0;
    let fixed = |want: usize| if head_len == want { Ok(()) } else { Err(WireError::HeadLen { kind: k, got: head_len as u8 }) };
    let body_max = |max: u32| if body_len <= max { Ok(()) } else { Err(WireError::BodyLen { kind: k, got: body_len, max }) };
    let arg_zero = || if arg == 0 { Ok(()) } else { Err(WireError::NonZeroArg(k)) };
    // Check the kind's shape before trusting any length.
    match k {
        kind::CHALLENGE => (fixed(CHALLENGE_HEAD)?, body_max(0)?, arg_zero()?),
        kind::HELLO => (fixed(HELLO_HEAD)?, body_max(0)?, arg_zero()?),
        kind::WELCOME => (fixed(WELCOME_HEAD)?, body_max(0)?, arg_zero()?),
        kind::REJECT => (fixed(0)?, body_max(MAX_REASON as u32)?, arg_zero()?),
        kind::FRAG => (fixed(FRAG_HEAD)?, (), arg_zero()?),
        kind::ACK => {
            body_max((MAX_ACK_ENTRIES * ACK_ENTRY_LEN) as u32)?;
            if !(body_len as usize).is_multiple_of(ACK_ENTRY_LEN) {
                return Err(WireError::AckBody(body_len));
            }
            (fixed(0)?, (), ())
        }
        kind::PING | kind::BYE => (fixed(0)?, body_max(0)?, arg_zero()?),
        kind::PROBE => (fixed(PROBE_HEAD)?, body_max(lim.max_am_payload)?, arg_zero()?),
        k if k >= kind::FIRST_USER => {
            if !lim.handlers.contains(k) {
                return Err(WireError::UnknownHandler(k));
            }
            if head_len > MAX_USER_HEAD {
                return Err(WireError::HeadLen { kind: k, got: head_len as u8 });
            }
            (body_max(lim.max_am_payload)?, (), ())
        }
        k => return Err(WireError::UnknownKind(k)),
    };
    let head_end = HEADER_LEN + head_len;
    // FRAG's body is not part of the frame as parsed.
    let end = if k == kind::FRAG { head_end } else { head_end + body_len as usize };
    if buf.len() < end {
        return Ok(Parsed::Incomplete { need: end });
    }
    let head = &buf[HEADER_LEN..head_end];
    let body = &buf[head_end..end];
    let frame = match k {
        kind::CHALLENGE => {
            if head[..8] != MAGIC {
                return Err(WireError::BadMagic);
            }
            Frame::Challenge(Challenge { rank: u32_at(head, 8), size: u32_at(head, 12), rail: u32_at(head, 16), nonce: arr32(head, 20) })
        }
        kind::HELLO => {
            if head[..8] != MAGIC {
                return Err(WireError::BadMagic);
            }
            Frame::Hello(Hello {
                rank: u32_at(head, 8),
                size: u32_at(head, 12),
                from_rail: u32_at(head, 16),
                to_rail: u32_at(head, 20),
                nonce: arr32(head, 24),
                mac: arr32(head, 56),
            })
        }
        kind::WELCOME => Frame::Welcome { mac: arr32(head, 0) },
        kind::REJECT => Frame::Reject { reason: body },
        kind::FRAG => {
            let f = FragHead { xid: u64_at(head, 0), token: u64_at(head, 8), offset: u64_at(head, 16), total: u64_at(head, 24), len: body_len, unacked };
            if f.offset.checked_add(f.len as u64).is_none_or(|e| e > f.total) {
                return Err(WireError::FragRange { offset: f.offset, len: f.len, total: f.total });
            }
            Frame::Frag(f)
        }
        kind::ACK => Frame::Ack { delivered: arg, frags: AckList(body) },
        kind::PING => Frame::Ping,
        kind::BYE => Frame::Bye,
        kind::PROBE => Frame::Probe { op: u32_at(head, 0), id: u64_at(head, 8), size: u64_at(head, 16), body },
        _ => Frame::Am { handler: k, seq: arg, head, payload: body, unacked },
    };
    if let Frame::Probe { .. } = frame {
        if u32_at(head, 4) != 0 {
            return Err(WireError::NonZeroArg(k));
        }
    }
    Ok(Parsed::Frame(frame, end))
}

/// Appends the encoding of `f` to `out` (for FRAG: header and head only).
/// `parse` of the result gives back `f`.
pub fn encode(f: &Frame<'_>, out: &mut Vec<u8>) {
    match *f {
        Frame::Challenge(c) => {
            let mut h = [0u8; CHALLENGE_HEAD];
            h[..8].copy_from_slice(&MAGIC);
            h[8..12].copy_from_slice(&c.rank.to_le_bytes());
            h[12..16].copy_from_slice(&c.size.to_le_bytes());
            h[16..20].copy_from_slice(&c.rail.to_le_bytes());
            h[20..52].copy_from_slice(&c.nonce);
            put(out, kind::CHALLENGE, &h, &[], 0);
        }
        Frame::Hello(hl) => put(out, kind::HELLO, &hello_head(&hl), &[], 0),
        Frame::Welcome { mac } => put(out, kind::WELCOME, &mac, &[], 0),
        Frame::Reject { reason } => put(out, kind::REJECT, &[], reason, 0),
        Frame::Frag(fh) => out.extend_from_slice(&frag_header(&fh)),
        Frame::Ack { delivered, frags } => put(out, kind::ACK, &[], frags.0, delivered),
        Frame::Ping => put(out, kind::PING, &[], &[], 0),
        Frame::Bye => put(out, kind::BYE, &[], &[], 0),
        Frame::Probe { op, id, size, body } => {
            let mut h = [0u8; PROBE_HEAD];
            h[..4].copy_from_slice(&op.to_le_bytes());
            h[8..16].copy_from_slice(&id.to_le_bytes());
            h[16..24].copy_from_slice(&size.to_le_bytes());
            put(out, kind::PROBE, &h, body, 0);
        }
        Frame::Am { handler, seq, head, payload, unacked } => am(out, handler, seq, head, &[payload], unacked),
    }
}

/// Appends a frame of `kind` with `head` and `body`.
fn put(out: &mut Vec<u8>, k: u8, head: &[u8], body: &[u8], arg: u64) {
    let h = Header { kind: k, head_len: head.len() as u8, body_len: body.len() as u32, arg, flags: 0 };
    out.extend_from_slice(&h.encode());
    out.extend_from_slice(head);
    out.extend_from_slice(body);
}

/// Appends a user active message whose payload is the concatenation of `payload`.
pub fn am(out: &mut Vec<u8>, handler: u8, seq: u64, head: &[u8], payload: &[&[u8]], unacked: bool) {
    let len: usize = payload.iter().map(|p| p.len()).sum();
    let h = Header { kind: handler, head_len: head.len() as u8, body_len: len as u32, arg: seq, flags: if unacked { FLAG_UNACKED } else { 0 } };
    out.reserve(HEADER_LEN + head.len() + len);
    out.extend_from_slice(&h.encode());
    out.extend_from_slice(head);
    for p in payload {
        out.extend_from_slice(p);
    }
}

/// The header and head of a fragment (its body follows on the wire).
pub fn frag_header(f: &FragHead) -> [u8; HEADER_LEN + FRAG_HEAD] {
    let mut b = [0u8; HEADER_LEN + FRAG_HEAD];
    let h = Header { kind: kind::FRAG, head_len: FRAG_HEAD as u8, body_len: f.len, arg: 0, flags: if f.unacked { FLAG_UNACKED } else { 0 } };
    b[..HEADER_LEN].copy_from_slice(&h.encode());
    b[16..24].copy_from_slice(&f.xid.to_le_bytes());
    b[24..32].copy_from_slice(&f.token.to_le_bytes());
    b[32..40].copy_from_slice(&f.offset.to_le_bytes());
    b[40..48].copy_from_slice(&f.total.to_le_bytes());
    b
}

/// The head bytes of a HELLO.
fn hello_head(h: &Hello) -> [u8; HELLO_HEAD] {
    let mut b = [0u8; HELLO_HEAD];
    b[..8].copy_from_slice(&MAGIC);
    b[8..12].copy_from_slice(&h.rank.to_le_bytes());
    b[12..16].copy_from_slice(&h.size.to_le_bytes());
    b[16..20].copy_from_slice(&h.from_rail.to_le_bytes());
    b[20..24].copy_from_slice(&h.to_rail.to_le_bytes());
    b[24..56].copy_from_slice(&h.nonce);
    b[56..88].copy_from_slice(&h.mac);
    b
}

/// Appends an ACK frame.
pub fn ack(out: &mut Vec<u8>, delivered: u64, frags: &[(u64, u64)]) {
    let h = Header { kind: kind::ACK, head_len: 0, body_len: (frags.len() * ACK_ENTRY_LEN) as u32, arg: delivered, flags: 0 };
    out.extend_from_slice(&h.encode());
    for &(x, o) in frags {
        out.extend_from_slice(&x.to_le_bytes());
        out.extend_from_slice(&o.to_le_bytes());
    }
}

/// The connector's MAC: binds both nonces, both ranks, the group size and
/// both rail indices, so a HELLO cannot be replayed to another listener,
/// rail or job.
pub fn hello_mac(secret: &[u8; 32], c: &Challenge, h: &Hello) -> [u8; 32] {
    let mut hh = hello_head(h);
    hh[56..88].fill(0);
    goal_auth::hmac_sha256(
        secret,
        &[b"goal-net hello v1", &c.rank.to_le_bytes(), &c.size.to_le_bytes(), &c.rail.to_le_bytes(), &c.nonce, &hh],
    )
}

/// The acceptor's MAC: over the whole HELLO (with the connector's MAC) and
/// its own challenge, with a different label so a HELLO MAC can never pass
/// for a WELCOME MAC.
pub fn welcome_mac(secret: &[u8; 32], c: &Challenge, h: &Hello) -> [u8; 32] {
    goal_auth::hmac_sha256(
        secret,
        &[b"goal-net welcome v1", &c.rank.to_le_bytes(), &c.size.to_le_bytes(), &c.rail.to_le_bytes(), &c.nonce, &hello_head(h)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lim() -> Limits {
        Limits { max_am_payload: 1 << 20, handlers: HandlerSet::of(&[16, 17, 200]) }
    }

    #[test]
    fn every_kind_round_trips() {
        let frames = [
            Frame::Challenge(Challenge { rank: 1, size: 4, rail: 2, nonce: [7; 32] }),
            Frame::Hello(Hello { rank: 3, size: 4, from_rail: 0, to_rail: 2, nonce: [9; 32], mac: [1; 32] }),
            Frame::Welcome { mac: [5; 32] },
            Frame::Reject { reason: b"wrong secret" },
            Frame::Frag(FragHead { xid: 9, token: 77, offset: 4096, total: 1 << 20, len: 8192, unacked: false }),
            Frame::Frag(FragHead { xid: 9, token: 77, offset: 4096, total: 1 << 20, len: 8192, unacked: true }),
            Frame::Ack { delivered: 12, frags: AckList(&[1u8; 32]) },
            Frame::Ping,
            Frame::Bye,
            Frame::Probe { op: 2, id: 5, size: 100, body: b"xyz" },
            Frame::Am { handler: 17, seq: 42, head: b"0123456789abcdef", payload: b"hello", unacked: false },
            Frame::Am { handler: 17, seq: 43, head: b"", payload: b"x", unacked: true },
        ];
        for f in frames {
            let mut b = Vec::new();
            encode(&f, &mut b);
            assert_eq!(parse(&b, &lim()), Ok(Parsed::Frame(f, b.len())), "{f:?}");
            for cut in 0..b.len() {
                assert!(matches!(parse(&b[..cut], &lim()), Ok(Parsed::Incomplete { need }) if need > cut));
            }
        }
    }

    #[test]
    fn rejects_lies() {
        let l = lim();
        let mut b = Vec::new();
        am(&mut b, 18, 0, b"", &[b"x"], false);
        assert_eq!(parse(&b, &l), Err(WireError::UnknownHandler(18)));
        let mut b = Vec::new();
        am(&mut b, 16, 0, &[0; 65], &[], false);
        assert!(matches!(parse(&b, &l), Err(WireError::HeadLen { .. })));
        let h = Header { kind: 16, head_len: 0, body_len: u32::MAX, arg: 0, flags: 0 }.encode();
        assert!(matches!(parse(&h, &l), Err(WireError::BodyLen { .. })));
        let f = frag_header(&FragHead { xid: 1, token: 1, offset: u64::MAX - 2, total: 10, len: 5, unacked: false });
        assert!(matches!(parse(&f, &l), Err(WireError::FragRange { .. })));
        let h = Header { kind: 12, head_len: 0, body_len: 0, arg: 0, flags: 0 }.encode();
        assert_eq!(parse(&h, &l), Err(WireError::UnknownKind(12)));
        // The one flag goes on fragments and user messages only; other bits stay reserved.
        let h = Header { kind: kind::PING, head_len: 0, body_len: 0, arg: 0, flags: FLAG_UNACKED }.encode();
        assert_eq!(parse(&h, &l), Err(WireError::Reserved(FLAG_UNACKED)));
        let h = Header { kind: 16, head_len: 0, body_len: 0, arg: 0, flags: 2 }.encode();
        assert_eq!(parse(&h, &l), Err(WireError::Reserved(2)));
        let mut b = Vec::new();
        encode(&Frame::Challenge(Challenge { rank: 0, size: 1, rail: 0, nonce: [0; 32] }), &mut b);
        b[16] = b'X';
        assert_eq!(parse(&b, &l), Err(WireError::BadMagic));
    }

    #[test]
    fn macs_differ_by_role() {
        let c = Challenge { rank: 1, size: 2, rail: 0, nonce: [3; 32] };
        let h = Hello { rank: 0, size: 2, from_rail: 0, to_rail: 0, nonce: [4; 32], mac: [0; 32] };
        let s = [8u8; 32];
        assert_ne!(hello_mac(&s, &c, &h), welcome_mac(&s, &c, &h));
        assert_ne!(hello_mac(&s, &c, &h), hello_mac(&[9; 32], &c, &h));
    }
}
