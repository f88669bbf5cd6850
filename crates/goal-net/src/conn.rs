//! One TCP connection: one peer over one rail.
//!
//! A connection is a socket, where it is in the handshake, a receive buffer
//! with the state of the frame being read, and a queue of frames to write.
//! It knows nothing of other connections; the node decides what goes on it
//! and what its frames mean.
//!
//! # Receiving
//!
//! Frames are parsed in place from `rx`, so an active message reaches the
//! caller as a slice of the buffer, without a copy. A fragment's body is
//! different: once its header is parsed, the rest of the body is read with
//! `readv` straight into the registered destination, with a small tail
//! iovec into `rx` so that the next frame's header comes in the same system
//! call. Only body bytes that arrived in the same read as their header pass
//! through `rx` (at most [`TAIL`] bytes per fragment once a transfer streams).
//!
//! # Sending
//!
//! `tx` holds frames in order. Control frames and active messages are bytes
//! (active messages shared with the peer's retransmission list); a fragment
//! is its 48-byte header plus a range of the user's buffer, gathered by
//! `sendmsg` at write time. At most one fragment is queued per connection at
//! a time: the next one is pulled only when this one is written, which is
//! what makes rails share a message by their speed.

use crate::wire::{Challenge, Hello, HEADER_LEN};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Instant;

/// Initial receive buffer size; it grows for a larger active message.
pub(crate) const RX_BUF: usize = 64 << 10;
/// Bytes read into `rx` behind a fragment body in the same `readv`.
pub(crate) const TAIL: usize = 4096;

/// Where a connection is in its life.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    /// Connector: TCP connect in progress.
    Connecting,
    /// Connector: waiting for the acceptor's CHALLENGE.
    AwaitChallenge,
    /// Connector: HELLO sent, waiting for WELCOME.
    AwaitWelcome { challenge: Challenge, hello: Hello },
    /// Acceptor: CHALLENGE sent, waiting for HELLO.
    AwaitHello { challenge: Challenge },
    /// Authenticated: data flows.
    Up,
}

/// The fragment body being read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Body {
    pub xid: u64,
    pub token: u64,
    /// Where the fragment starts in the message.
    pub off: u64,
    pub len: u32,
    /// Body bytes read so far.
    pub done: u32,
    /// Read and drop (a duplicate, or a cancelled registration).
    pub discard: bool,
    /// Its sender wants no acknowledgement ([`FLAG_UNACKED`](crate::wire::FLAG_UNACKED)).
    pub unacked: bool,
}

impl Body {
    pub fn remaining(&self) -> u32 {
        self.len - self.done
    }
}

/// A frame waiting to be written.
pub(crate) enum TxItem {
    /// A control frame.
    Own(Vec<u8>),
    /// An active message, shared with the peer's list of unacknowledged ones
    /// (when it has several rails).
    Am(Arc<Vec<u8>>),
    /// An active message to a peer reached over one rail, which keeps no
    /// copy to send again: its buffer goes back to [`Conn::spare`] once
    /// written.
    Sole(Vec<u8>),
    /// A bulk fragment: header, then bytes `[off, off + len)` of transfer `xid`.
    Frag { head: [u8; HEADER_LEN + crate::wire::FRAG_HEAD], xid: u64, off: u64, len: u32, started: Option<Instant>, stalled: bool },
}

impl TxItem {
    pub fn len(&self) -> usize {
        match self {
            TxItem::Own(b) => b.len(),
            TxItem::Am(b) => b.len(),
            TxItem::Sole(b) => b.len(),
            TxItem::Frag { head, len, .. } => head.len() + *len as usize,
        }
    }
}

/// Traffic counters of one connection.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnCounters {
    /// Bytes written.
    pub bytes_out: u64,
    /// Bytes read.
    pub bytes_in: u64,
    /// Fragments written (including copies sent again).
    pub frags_out: u64,
    /// Fragment bodies read.
    pub frags_in: u64,
    /// Active messages written.
    pub ams_out: u64,
}

/// One connection.
pub(crate) struct Conn {
    pub fd: OwnedFd,
    pub phase: Phase,
    /// Did we accept it (rather than connect)?
    pub accepted: bool,
    /// The peer, once known (at once when we connect; after HELLO when we accept).
    pub peer: Option<u32>,
    /// Index of the pair in the peer's plan, once known.
    pub pair: Option<usize>,
    /// Local rail index.
    pub rail: usize,
    /// The peer's address.
    pub remote: SocketAddr,
    /// Handshake must finish by then.
    pub deadline: Instant,
    pub rx: Vec<u8>,
    pub rx_lo: usize,
    pub rx_hi: usize,
    pub body: Option<Body>,
    pub tx: VecDeque<TxItem>,
    /// Bytes of `tx`'s front item already written.
    pub tx_off: usize,
    /// Bytes in `tx` not yet written.
    pub tx_bytes: usize,
    /// A fragment is in `tx`.
    pub frag_queued: bool,
    /// Interest registered with epoll.
    pub interest: u32,
    /// Added to epoll (its interest may be 0 while paused during `connect`).
    pub registered: bool,
    /// Last time anything was written.
    pub last_send: Instant,
    /// Fragments received here, to acknowledge here.
    pub frag_acks: Vec<(u64, u64)>,
    /// Write throughput estimate when the socket was the bottleneck, bytes/s (0: unknown).
    pub rate: f64,
    /// The socket's `SO_RCVLOWAT` as last set (1: the kernel's default).
    pub rcvlowat: u32,
    /// Buffers of written [`TxItem::Sole`] messages, for the next ones: a
    /// message then costs no allocation (at most [`SPARE_MAX`] of them, of
    /// at most [`SPARE_BYTES`] each).
    pub spare: Vec<Vec<u8>>,
    pub counters: ConnCounters,
}

/// Buffers a connection keeps in [`Conn::spare`].
pub(crate) const SPARE_MAX: usize = 4;
/// The largest buffer [`Conn::spare`] keeps: a message's head and a small
/// payload (a larger one is freed when written).
pub(crate) const SPARE_BYTES: usize = 16 << 10;

impl Conn {
    pub fn new(fd: OwnedFd, accepted: bool, rail: usize, remote: SocketAddr, deadline: Instant) -> Conn {
        let now = Instant::now();
        Conn {
            fd,
            phase: Phase::Connecting,
            accepted,
            peer: None,
            pair: None,
            rail,
            remote,
            deadline,
            rx: vec![0; RX_BUF],
            rx_lo: 0,
            rx_hi: 0,
            body: None,
            tx: VecDeque::new(),
            tx_off: 0,
            tx_bytes: 0,
            frag_queued: false,
            interest: 0,
            registered: false,
            last_send: now,
            frag_acks: Vec::new(),
            rate: 0.0,
            rcvlowat: 1,
            spare: Vec::new(),
            counters: ConnCounters::default(),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    pub fn is_up(&self) -> bool {
        matches!(self.phase, Phase::Up)
    }

    /// Queues a frame: a fragment at the back; a message or control frame
    /// before a fragment that has not started, so that a small message waits
    /// at most for the fragment being written, not for the next one too.
    pub fn push(&mut self, item: TxItem) {
        self.tx_bytes += item.len();
        if matches!(item, TxItem::Frag { .. }) {
            self.frag_queued = true;
            self.tx.push_back(item);
            return;
        }
        let n = self.tx.len();
        let unstarted_frag_last = matches!(self.tx.back(), Some(TxItem::Frag { .. })) && (n > 1 || self.tx_off == 0);
        if unstarted_frag_last {
            self.tx.insert(n - 1, item);
        } else {
            self.tx.push_back(item);
        }
    }

    /// Bytes buffered and not yet parsed.
    pub fn rx_pending(&self) -> usize {
        self.rx_hi - self.rx_lo
    }

    /// A sole rail's message `b` was written whole: counts it and keeps its
    /// buffer for the next one, within [`SPARE_MAX`] buffers of at most
    /// [`SPARE_BYTES`].
    #[inline]
    pub fn sole_written(&mut self, b: Vec<u8>) {
        self.counters.ams_out += 1;
        if self.spare.len() < SPARE_MAX && b.capacity() <= SPARE_BYTES {
            self.spare.push(b);
        }
    }

    /// Makes room for a frame of `need` bytes starting at `rx_lo`: moves the
    /// pending bytes to the front and grows the buffer if it is too small.
    pub fn rx_make_room(&mut self, need: usize) {
        if self.rx_lo > 0 && (self.rx_lo == self.rx_hi || self.rx_lo + need > self.rx.len()) {
            self.rx.copy_within(self.rx_lo..self.rx_hi, 0);
            self.rx_hi -= self.rx_lo;
            self.rx_lo = 0;
        }
        if need > self.rx.len() {
            self.rx.resize(need.next_power_of_two(), 0);
        }
    }
}
