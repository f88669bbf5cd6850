//! The node: every connection of one rank, the handshake, the progress loop,
//! and what happens when a rail fails.
//!
//! # Progress
//!
//! One epoll instance watches the listening sockets (one per rail), every
//! connection, and a timer. [`NetNode::poll`] never blocks: it takes what
//! epoll reports ready, reads and dispatches, writes what is queued, and
//! once per tick checks the links. Writes are attempted at once when a
//! message is queued on an idle connection (no extra latency waiting for a
//! poll); only when the socket is full does the connection ask epoll for
//! writability. The timer makes the epoll descriptor readable when a
//! periodic duty falls due (link checks, delayed acknowledgements), so a
//! caller that sleeps on [`NetNode::as_raw_fd`] never misses one.
//!
//! # Reliability across rails
//!
//! TCP makes each connection reliable and ordered; what it cannot do is
//! survive its link. So goal-net keeps its own acknowledgements above TCP:
//!
//! * Active messages carry a per-ordered-pair sequence number. The receiver
//!   delivers them in that order (holding early arrivals from a faster rail),
//!   drops numbers it has already delivered, and acknowledges cumulatively.
//!   The sender keeps each message until it is acknowledged; when a
//!   connection dies, the messages it carried are sent again on another.
//! * Bulk fragments are acknowledged one by one on the connection that
//!   carried them (see `bulk`); a dead connection's fragments are sent again
//!   by whichever rail pulls next.
//!
//! # Failure detection
//!
//! A connection is dead when its socket says so (end of stream, reset,
//! error), or when the kernel reports data in flight, its retransmission
//! timer fired, and the peer's kernel has acknowledged nothing for
//! `dead_after`: a link that went down just stops delivering, and no error
//! may ever come from the socket. The kernel's
//! acknowledgements, unlike goal-net's own, do not depend on the peer's
//! application polling, so a busy peer is never mistaken for a dead link.
//! Idle connections are probed with a PING every `dead_after / 3` so there is
//! always something to be acknowledged; `TCP_USER_TIMEOUT` and keepalive
//! cover the time when nobody polls. A peer with no connection left is lost.

use crate::bulk::{AckOutcome, BulkIn, BulkOut, Pieces, XidSet};
use crate::config::{AmRails, NetConfig};
use crate::conn::{Body, Conn, ConnCounters, Phase, TxItem, TAIL};
use crate::rails::{pair_rails, Blob, RemoteRail};
use crate::sys::{self, ev, Epoll, RawIov, Timer};
use crate::wire::{self, Challenge, FragHead, Frame, Hello, Limits, Parsed};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What [`NetNode::poll`] reports.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// An active message, in the sender's order. The slices are valid for
    /// the duration of the callback.
    Am {
        /// Sending rank.
        src: u32,
        /// Handler id (16..=255).
        handler: u8,
        /// The small fixed header.
        head: &'a [u8],
        /// The payload.
        payload: &'a [u8],
    },
    /// Every byte of a transfer registered with `expect_bulk` has arrived.
    BulkDone {
        /// Sending rank.
        src: u32,
        /// The token.
        token: u64,
    },
    /// Every fragment of a `send_bulk` is acknowledged: the buffer is free.
    BulkSent {
        /// Receiving rank.
        dst: u32,
        /// The token.
        token: u64,
    },
    /// No connection to this peer is left. Its transfers are dropped (their
    /// buffers are free) and sending to it fails from now on.
    PeerLost {
        /// The rank.
        peer: u32,
        /// Why, for the error message.
        why: String,
    },
    /// One connection to a peer failed; traffic continues on the others.
    RailLost {
        /// The rank it led to.
        peer: u32,
        /// Our rail's name.
        rail: String,
        /// Why, with the addresses.
        why: String,
    },
}

/// Traffic of one connection, for benchmarks and tests.
#[derive(Debug, Clone)]
pub struct RailStats {
    /// The peer.
    pub peer: u32,
    /// Our rail's name.
    pub rail: String,
    /// The peer's address.
    pub remote: SocketAddr,
    /// Counters.
    pub counters: ConnCounters,
    /// Write throughput estimate in bytes/s (0 until measured).
    pub rate: f64,
}

/// Epoll tag of the timer.
const TIMER_TAG: u64 = 1 << 63;
/// Epoll tag of listener `r` is `LISTEN_TAG | r`.
const LISTEN_TAG: u64 = 1 << 62;
/// Cumulative acknowledgements go out after this many messages...
const ACK_EVERY: u64 = 32;
/// ... or this long after the first unacknowledged one.
const ACK_DELAY: Duration = Duration::from_millis(2);
/// A sender may not run further ahead of delivery than this many messages.
const REORDER_WINDOW: u64 = 1 << 20;
/// Bytes of early messages a receiver holds per peer before calling it a lie.
const REORDER_BYTES: usize = 1 << 30;
/// At most this many connections may be in their handshake at once.
const MAX_HANDSHAKES: usize = 64;
/// Reads per connection per poll (bounds one poll's time).
const READS_PER_POLL: usize = 16;
/// Iovecs per `sendmsg`/`readv`.
const MAX_IOV: usize = 64;
/// Delay before retrying a refused connect.
const RETRY_CONNECT: Duration = Duration::from_millis(100);
/// Tokens at or above this are goal-net's own (calibration).
pub(crate) const INTERNAL_TOKEN: u64 = 1 << 63;

/// A planned connection between one of our rails and one of the peer's.
pub(crate) struct Pair {
    pub my_rail: usize,
    pub their_rail: usize,
    /// We connect (lower rank); else we accept.
    pub i_connect: bool,
    /// The peer rail's listening address.
    pub addr: SocketAddr,
    /// The peer rail's name.
    pub their_name: String,
    /// The established connection.
    pub conn: Option<usize>,
    /// A connection in its handshake.
    pub trying: Option<usize>,
    /// When to try connecting again.
    pub retry_at: Option<Instant>,
    /// Why the last attempt failed.
    pub error: Option<String>,
    /// It was up and failed: never again.
    pub dead: bool,
}

/// An active message kept until the receiver acknowledges it.
pub(crate) struct AmOut {
    pub seq: u64,
    pub frame: Arc<Vec<u8>>,
    pub conn: usize,
}

/// An active message that arrived before its predecessors.
pub(crate) struct Stashed {
    pub handler: u8,
    pub head: Vec<u8>,
    pub payload: Vec<u8>,
}

/// Everything about one peer.
#[derive(Default)]
pub(crate) struct Peer {
    pub remote: bool,
    pub pairs: Vec<Pair>,
    /// Established connections, in pair order.
    pub up: Vec<usize>,
    /// Why it is lost, once it is.
    pub lost: Option<String>,
    /// Index into `up` of the connection used last for a message.
    pub rr: usize,
    pub am_next: u64,
    pub am_out: VecDeque<AmOut>,
    pub am_delivered: u64,
    pub am_acked_sent: u64,
    pub ack_due: Option<Instant>,
    pub reorder: BTreeMap<u64, Stashed>,
    pub reorder_bytes: usize,
    pub xid_next: u64,
    pub bulk_out: VecDeque<BulkOut>,
    pub bulk_in: HashMap<u64, BulkIn>,
    pub xid_done: XidSet,
    /// Calibration state.
    pub probe: crate::probe::ProbePeer,
}

/// An event waiting for delivery by the next `poll`.
pub(crate) enum Queued {
    /// One with no borrowed parts.
    Ev(Event<'static>),
    /// An active message, copied (held during calibration).
    Am { src: u32, handler: u8, head: Vec<u8>, payload: Vec<u8> },
}

impl Queued {
    /// Keeps an event for later, copying its borrowed parts.
    pub(crate) fn keep(e: Event<'_>) -> Queued {
        match e {
            Event::Am { src, handler, head, payload } => Queued::Am { src, handler, head: head.to_vec(), payload: payload.to_vec() },
            Event::BulkDone { src, token } => Queued::Ev(Event::BulkDone { src, token }),
            Event::BulkSent { dst, token } => Queued::Ev(Event::BulkSent { dst, token }),
            Event::PeerLost { peer, why } => Queued::Ev(Event::PeerLost { peer, why }),
            Event::RailLost { peer, rail, why } => Queued::Ev(Event::RailLost { peer, rail, why }),
        }
    }
}

/// Delivers the queued events in order; returns how many.
fn drain(pending: &mut VecDeque<Queued>, on: &mut dyn FnMut(Event<'_>)) -> usize {
    let n = pending.len();
    while let Some(q) = pending.pop_front() {
        match q {
            Queued::Ev(e) => on(e),
            Queued::Am { src, handler, head, payload } => on(Event::Am { src, handler, head: &head, payload: &payload }),
        }
    }
    n
}

/// A frame copied out of the receive buffer, for handling with the whole node.
enum Owned {
    Challenge(Challenge),
    Hello(Hello),
    Welcome([u8; 32]),
    Reject(String),
    Ping,
    Bye,
    Probe { op: u32, id: u64, size: u64, body: Vec<u8> },
}

/// goal-net's endpoint for one rank: listening sockets, connections to every
/// remote peer over every rail, and the transfers in progress.
///
/// Used by one thread at a time (it is `Send`, not `Sync`); the executor
/// keeps it behind its engine lock, beside the shared-memory node.
pub struct NetNode {
    pub(crate) cfg: NetConfig,
    lim: Limits,
    listeners: Vec<OwnedFd>,
    listen_addrs: Vec<SocketAddr>,
    epoll: Epoll,
    timer: Timer,
    timer_armed: Option<Instant>,
    pub(crate) conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    pub(crate) peers: Vec<Peer>,
    pub(crate) pending: VecDeque<Queued>,
    planned: bool,
    connected: bool,
    /// A fatal handshake failure during `connect`.
    fatal: Option<String>,
    scratch: Vec<u8>,
    ready: Vec<(u64, u32)>,
    iov: sys::IovBuf,
    next_tick: Instant,
    /// Connections with bytes buffered that no readiness event will announce.
    backlog: Vec<usize>,
    /// Peers we owe an acknowledgement of messages (each once).
    owed: Vec<u32>,
    /// Connections with data waiting to be written (writability watched).
    blocked: usize,
    /// Connections refused at the handshake.
    rejected: u64,
    handshaking: usize,
    /// The established connections, when there are at most
    /// [`DIRECT_MAX`]: `poll` then reads them directly (see there).
    direct: Vec<usize>,
    /// `direct` must be rebuilt (a connection came up or went).
    direct_stale: bool,
    /// Polls since the last `epoll_wait` in direct mode.
    since_epoll: u32,
    /// Index in `direct` of the connection that last delivered something.
    direct_hot: usize,
}

/// With at most this many established connections, `poll` tries a read on
/// each instead of asking epoll which are readable: one system call per
/// arriving message instead of two (`epoll_wait`, then `readv`). Measured
/// with `examples/poll_compare.rs` between two emulated hosts: 8-byte
/// one-way latency 6.30 us against 7.17 us.
const DIRECT_MAX: usize = 2;

/// In direct mode, `epoll_wait` still runs every this many polls, for what
/// only it reports: new connections, writability, the timer.
const DIRECT_EPOLL_EVERY: u32 = 16;

fn err(kind: io::ErrorKind, msg: String) -> io::Error {
    io::Error::new(kind, msg)
}

impl NetNode {
    /// Opens one non-blocking listening socket per rail (on an ephemeral
    /// port) and returns the node with its address blob, which every rank
    /// must receive (an allgather) before [`connect`](Self::connect).
    pub fn bind(cfg: NetConfig) -> io::Result<(NetNode, Vec<u8>)> {
        cfg.validate()?;
        let epoll = Epoll::new()?;
        let timer = Timer::new()?;
        epoll.add(timer.fd(), ev::IN, TIMER_TAG)?;
        let mut listeners = Vec::new();
        let mut listen_addrs = Vec::new();
        let mut rails = Vec::new();
        for (r, rail) in cfg.rails.iter().enumerate() {
            let ctx = |e: io::Error| err(e.kind(), format!("goal-net: rank {}: listening on rail {rail}: {e}", cfg.rank));
            let s = sys::tcp_socket(&rail.addr).map_err(ctx)?;
            sys::set_int_opt(s.as_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1).map_err(ctx)?;
            let port = if cfg.base_port == 0 { 0 } else { cfg.base_port + r as u16 };
            sys::bind(s.as_fd(), &SocketAddr::new(rail.addr, port)).map_err(ctx)?;
            sys::listen(s.as_fd(), 128).map_err(ctx)?;
            let a = sys::local_addr(s.as_fd()).map_err(ctx)?;
            epoll.add(s.as_fd(), ev::IN, LISTEN_TAG | r as u64)?;
            rails.push(RemoteRail { name: rail.name.clone(), addr: a, prefix_len: rail.prefix_len });
            listeners.push(s);
            listen_addrs.push(a);
        }
        let blob = Blob { rank: cfg.rank, rails }.encode();
        let lim = Limits { max_am_payload: cfg.max_am_payload as u32, handlers: wire::HandlerSet::of(&cfg.handlers) };
        let peers = (0..cfg.size).map(|_| Peer::default()).collect();
        let node = NetNode {
            lim,
            listeners,
            listen_addrs,
            epoll,
            timer,
            timer_armed: None,
            conns: Vec::new(),
            free: Vec::new(),
            peers,
            pending: VecDeque::new(),
            planned: false,
            connected: false,
            fatal: None,
            scratch: vec![0; 64 << 10],
            ready: Vec::with_capacity(64),
            iov: sys::IovBuf(Vec::with_capacity(MAX_IOV + 1)),
            next_tick: Instant::now(),
            backlog: Vec::new(),
            owed: Vec::new(),
            blocked: 0,
            rejected: 0,
            handshaking: 0,
            direct: Vec::new(),
            direct_stale: true,
            since_epoll: 0,
            direct_hot: 0,
            cfg,
        };
        Ok((node, blob))
    }

    /// This node's rank.
    pub fn rank(&self) -> u32 {
        self.cfg.rank
    }

    /// What is in flight with `peer`, in one line, for a report on a
    /// stalled execution: messages sent and not yet acknowledged, messages
    /// held for their predecessors, bulk transfers both ways, and each
    /// connection's queued and buffered bytes.
    pub fn describe_peer(&self, peer: u32) -> String {
        use std::fmt::Write;
        let Some(p) = self.peers.get(peer as usize) else { return format!("rank {peer}: not a peer") };
        let mut out = format!(
            "rank {peer}: {} rail(s) up; messages: next seq {}, {} unacknowledged, {} delivered, {} held for order{}",
            p.up.len(),
            p.am_next,
            p.am_out.len(),
            p.am_delivered,
            p.reorder.len(),
            p.reorder.keys().next().map_or(String::new(), |k| format!(" (first seq {k})"))
        );
        if let Some(why) = &p.lost {
            let _ = write!(out, "; lost: {why}");
        }
        for b in &p.bulk_out {
            let _ = write!(
                out,
                "; bulk out xid {} token {}: {} of {} B cut{}, {} acked, {} fragment(s) in flight, {} to resend, {} writer(s)",
                b.xid,
                b.token,
                b.cut,
                b.src.total,
                if b.cut_done { " (all)" } else { "" },
                b.acked,
                b.inflight.len(),
                b.resend.len(),
                b.writers
            );
        }
        for (token, b) in &p.bulk_in {
            let _ = write!(out, "; bulk in token {token}: xid {:?}, {} of {:?} B{}", b.xid, b.got_bytes, b.total, if b.discard { " (discarding)" } else { "" });
        }
        for &c in &p.up {
            if let Some(conn) = self.conns[c].as_ref() {
                let _ = write!(out, "; rail {}: {} B queued to write, {} B read and unparsed", conn.rail, conn.tx_bytes, conn.rx_pending());
                if let Some(b) = conn.body {
                    let _ = write!(out, ", in a fragment body (xid {} token {} at {}: {} of {} B)", b.xid, b.token, b.off, b.done, b.len);
                }
            }
        }
        out
    }

    /// The configuration.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    /// The address of `peer` on the first of its rails that is up (where a
    /// channel of the kernel mode connects to it).
    pub fn peer_ip(&self, peer: u32) -> Option<std::net::IpAddr> {
        let p = self.peers.get(peer as usize)?;
        p.up.iter().find_map(|&c| self.conns[c].as_ref()).map(|conn| conn.remote.ip())
    }

    /// Where each rail listens.
    pub fn listen_addrs(&self) -> &[SocketAddr] {
        &self.listen_addrs
    }

    /// Connections refused at the handshake so far (wrong secret, garbage,
    /// unexpected rank...).
    pub fn rejected(&self) -> u64 {
        self.rejected
    }

    /// Establishes one connection per (remote peer, rail pair) and
    /// authenticates each; returns when all are up.
    ///
    /// `blobs[r]` is rank `r`'s address blob; `remote[r]` says whether to
    /// reach rank `r` over TCP (false for ranks on this machine and for
    /// ourselves). Rails pair by subnet (see [`pair_rails`]); the lower rank
    /// connects and the higher accepts. Fails after `connect_timeout` naming
    /// each missing connection, or at once if a peer refuses our handshake
    /// (wrong secret) or is not who its address says.
    pub fn connect(&mut self, blobs: &[Vec<u8>], remote: &[bool]) -> io::Result<()> {
        let me = self.cfg.rank;
        let size = self.cfg.size as usize;
        if self.planned {
            return Err(err(io::ErrorKind::AlreadyExists, "goal-net: connect called twice".into()));
        }
        if blobs.len() != size || remote.len() != size {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: {} blobs and {} flags for a group of {size}", blobs.len(), remote.len())));
        }
        let mine: Vec<_> = self.cfg.rails.iter().map(|r| (r.addr, r.prefix_len)).collect();
        for p in 0..size {
            if p == me as usize || !remote[p] {
                continue;
            }
            let b = Blob::decode(&blobs[p]).map_err(|e| err(e.kind(), format!("goal-net: rank {me}: the address of rank {p}: {e}")))?;
            if b.rank as usize != p {
                return Err(err(io::ErrorKind::InvalidData, format!("goal-net: rank {me}: the blob given for rank {p} is rank {}'s", b.rank)));
            }
            let theirs: Vec<_> = b.rails.iter().map(|r| (r.addr.ip(), r.prefix_len)).collect();
            let i_connect = (me as usize) < p;
            let pairs: Vec<(usize, usize)> = if i_connect {
                pair_rails(&mine, &theirs)
            } else {
                pair_rails(&theirs, &mine).into_iter().map(|(i, j)| (j, i)).collect()
            };
            if pairs.is_empty() {
                let ours: Vec<String> = self.cfg.rails.iter().map(|r| r.to_string()).collect();
                let other: Vec<String> = b.rails.iter().map(|r| format!("{} ({}/{})", r.name, r.addr.ip(), r.prefix_len)).collect();
                return Err(err(
                    io::ErrorKind::NotConnected,
                    format!("goal-net: rank {me}: no rail of ours can reach rank {p} (ours: {}; theirs: {})", ours.join(", "), other.join(", ")),
                ));
            }
            let peer = &mut self.peers[p];
            peer.remote = true;
            peer.pairs = pairs
                .into_iter()
                .map(|(my_rail, their_rail)| Pair {
                    my_rail,
                    their_rail,
                    i_connect,
                    addr: b.rails[their_rail].addr,
                    their_name: b.rails[their_rail].name.clone(),
                    conn: None,
                    trying: None,
                    retry_at: Some(Instant::now()),
                    error: None,
                    dead: false,
                })
                .collect();
        }
        self.planned = true;
        let start = Instant::now();
        let deadline = start + self.cfg.connect_timeout;
        loop {
            let now = Instant::now();
            self.start_due_connects(now);
            if let Some(f) = self.fatal.take() {
                return Err(err(io::ErrorKind::PermissionDenied, f));
            }
            if self.all_pairs_up() {
                break;
            }
            // A connection that failed after its handshake will not come back.
            if let Some(p) = self.peers.iter().position(|x| x.lost.is_some() || x.pairs.iter().any(|k| k.dead)) {
                let why = self.peers[p].lost.clone().unwrap_or_else(|| "a connection failed after its handshake".into());
                return Err(err(io::ErrorKind::ConnectionAborted, format!("goal-net: rank {}: lost rank {p} while connecting: {why}", self.cfg.rank)));
            }
            if now >= deadline {
                return Err(err(io::ErrorKind::TimedOut, self.missing_report(self.cfg.connect_timeout)));
            }
            let wait = (deadline - now).min(Duration::from_millis(20));
            self.epoll.wait(&mut self.ready, 64, Some(wait))?;
            let ready = std::mem::take(&mut self.ready);
            for &(tag, evs) in &ready {
                self.on_ready(tag, evs, &mut |_| {});
            }
            self.ready = ready;
            self.handshake_timeouts(Instant::now());
        }
        self.connected = true;
        // Data that came with the handshake's last frame waits in buffers.
        for c in 0..self.conns.len() {
            if let Some(conn) = &self.conns[c] {
                if conn.is_up() {
                    if conn.rx_pending() > 0 {
                        self.backlog.push(c);
                    }
                    self.update_interest(c);
                }
            }
        }
        self.next_tick = Instant::now();
        Ok(())
    }

    fn all_pairs_up(&self) -> bool {
        self.peers.iter().all(|p| !p.remote || p.pairs.iter().all(|x| x.conn.is_some()))
    }

    /// The timeout message: every connection still missing, and why.
    fn missing_report(&self, after: Duration) -> String {
        let me = self.cfg.rank;
        let mut parts = Vec::new();
        for (p, peer) in self.peers.iter().enumerate() {
            for pair in peer.pairs.iter().filter(|x| x.conn.is_none()) {
                let ours = &self.cfg.rails[pair.my_rail];
                let why = pair.error.as_deref().map(|e| format!(" (last error: {e})")).unwrap_or_default();
                if pair.i_connect {
                    parts.push(format!("rank {p} at {} (its rail {}) from our rail {ours}{why}", pair.addr, pair.their_name));
                } else {
                    parts.push(format!(
                        "rank {p} never connected from its rail {} ({}) to our rail {ours} at {}{why}",
                        pair.their_name,
                        pair.addr.ip(),
                        self.listen_addrs[pair.my_rail]
                    ));
                }
            }
        }
        format!("goal-net: rank {me}: timed out after {after:?} connecting: {}", parts.join("; "))
    }

    /// Starts the connects that are due (first attempts and retries).
    fn start_due_connects(&mut self, now: Instant) {
        for p in 0..self.peers.len() {
            for k in 0..self.peers[p].pairs.len() {
                let pair = &self.peers[p].pairs[k];
                if !pair.i_connect || pair.conn.is_some() || pair.trying.is_some() || pair.dead {
                    continue;
                }
                if pair.retry_at.is_some_and(|t| t <= now) {
                    self.peers[p].pairs[k].retry_at = None;
                    if let Err(e) = self.start_connect(p as u32, k) {
                        let pair = &mut self.peers[p].pairs[k];
                        pair.error = Some(e.to_string());
                        pair.retry_at = Some(now + RETRY_CONNECT);
                    }
                }
            }
        }
    }

    fn start_connect(&mut self, p: u32, k: usize) -> io::Result<()> {
        let pair = &self.peers[p as usize].pairs[k];
        let (my_rail, addr) = (pair.my_rail, pair.addr);
        let local = self.cfg.rails[my_rail].addr;
        let s = sys::tcp_socket(&local)?;
        sys::bind(s.as_fd(), &SocketAddr::new(local, 0))?;
        self.tune_socket(&s)?;
        let done = sys::connect(s.as_fd(), &addr)?;
        let deadline = Instant::now() + self.handshake_timeout();
        let mut conn = Conn::new(s, false, my_rail, addr, deadline);
        conn.peer = Some(p);
        conn.pair = Some(k);
        conn.phase = if done { Phase::AwaitChallenge } else { Phase::Connecting };
        let c = self.insert_conn(conn);
        self.peers[p as usize].pairs[k].trying = Some(c);
        self.update_interest(c);
        Ok(())
    }

    fn handshake_timeout(&self) -> Duration {
        self.cfg.connect_timeout.min(Duration::from_secs(10))
    }

    /// The socket options every data connection gets.
    fn tune_socket(&self, s: &OwnedFd) -> io::Result<()> {
        let fd = s.as_fd();
        let dead_ms = self.cfg.dead_after.as_millis().min(i32::MAX as u128) as i32;
        let idle_s = (self.cfg.dead_after.as_secs() as i32 / 3).max(1);
        sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
        if self.cfg.kernel_timeouts {
            sys::set_int_opt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
            sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, idle_s)?;
            sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 1)?;
            sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3)?;
            sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, dead_ms)?;
        }
        sys::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, self.cfg.notsent_lowat.min(i32::MAX as usize) as i32)?;
        Ok(())
    }

    fn insert_conn(&mut self, conn: Conn) -> usize {
        if let Some(c) = self.free.pop() {
            self.conns[c] = Some(conn);
            c
        } else {
            self.conns.push(Some(conn));
            self.conns.len() - 1
        }
    }

    pub(crate) fn conn(&mut self, c: usize) -> &mut Conn {
        self.conns[c].as_mut().expect("a live connection")
    }

    fn live(&self, c: usize) -> bool {
        self.conns.get(c).is_some_and(|x| x.is_some())
    }

    /// Sets the epoll interest a connection needs now.
    fn update_interest(&mut self, c: usize) {
        let connected = self.connected;
        let NetNode { conns, epoll, .. } = &mut *self;
        let conn = conns[c].as_mut().expect("live");
        let out = if conn.tx.is_empty() { 0 } else { ev::OUT };
        let want = match conn.phase {
            Phase::Connecting => ev::OUT,
            // Until `connect` returns, data on an established connection
            // waits: nobody could be told about it.
            Phase::Up if !connected => out,
            _ => ev::IN | ev::RDHUP | out,
        };
        if conn.registered && want == conn.interest {
            return;
        }
        let r = if conn.registered { epoll.modify(conn.fd(), want, c as u64) } else { epoll.add(conn.fd(), want, c as u64) };
        if r.is_ok() {
            let was_out = conn.registered && conn.interest & ev::OUT != 0;
            conn.registered = true;
            conn.interest = want;
            self.blocked = self.blocked + usize::from(want & ev::OUT != 0) - usize::from(was_out);
        }
    }

    // ---------------------------------------------------------------------
    // Progress
    // ---------------------------------------------------------------------

    /// Does everything that can be done now without waiting: accepts and
    /// handshakes, reads and dispatches, writes what is queued, checks links.
    /// Calls `on` for each event; returns how many.
    pub fn poll(&mut self, on: &mut dyn FnMut(Event<'_>)) -> usize {
        let mut n = self.drain_pending(on);
        if self.direct_mode() {
            // Read each connection directly (a read that finds nothing
            // costs what an empty epoll_wait does); epoll now and then.
            // The connection that last had data every poll, the other one
            // every fourth.
            for i in 0..self.direct.len() {
                let c = self.direct[i];
                if (i == self.direct_hot || self.since_epoll % 4 == 0) && self.live(c) {
                    let got = self.read_conn(c, on);
                    if got > 0 {
                        self.direct_hot = i;
                    }
                    n += got;
                }
            }
            self.since_epoll += 1;
            if self.since_epoll < DIRECT_EPOLL_EVERY {
                self.ready.clear();
            } else {
                self.since_epoll = 0;
                if self.epoll.wait(&mut self.ready, 64, Some(Duration::ZERO)).is_err() {
                    self.ready.clear();
                }
            }
        } else if self.epoll.wait(&mut self.ready, 64, Some(Duration::ZERO)).is_err() {
            self.ready.clear();
        }
        let ready = std::mem::take(&mut self.ready);
        for &(tag, evs) in &ready {
            n += self.on_ready(tag, evs, on);
        }
        self.ready = ready;
        if !self.backlog.is_empty() {
            for c in std::mem::take(&mut self.backlog) {
                if self.live(c) {
                    n += self.consume(c, on);
                    self.send_frag_acks(c);
                }
            }
        }
        let now = Instant::now();
        if now >= self.next_tick {
            self.tick(now);
        }
        self.send_due_acks(now);
        n += self.drain_pending(on);
        self.arm_timer(now);
        n
    }

    /// Polls until `done()` holds or `timeout` passes, sleeping in the
    /// kernel on the epoll descriptor between polls. Returns whether `done()`
    /// held. For tests, benchmarks and shutdown; the executor sleeps on
    /// [`as_raw_fd`](Self::as_raw_fd) together with its other sources instead.
    pub fn poll_until(&mut self, timeout: Duration, on: &mut dyn FnMut(Event<'_>), mut done: impl FnMut(&NetNode) -> bool) -> bool {
        let end = Instant::now() + timeout;
        loop {
            self.poll(on);
            if done(self) {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            if !self.wants_poll() {
                let mut ready = std::mem::take(&mut self.ready);
                let _ = self.epoll.wait(&mut ready, 1, Some((end - now).min(Duration::from_millis(50))));
                // The readiness is re-reported to the next poll (level-triggered).
                ready.clear();
                self.ready = ready;
            }
        }
    }

    /// Whether `poll` reads the connections directly: all are established,
    /// there are at most [`DIRECT_MAX`], and none waits to write (its
    /// writability comes from epoll).
    fn direct_mode(&mut self) -> bool {
        if !self.connected || self.handshaking > 0 || self.blocked > 0 {
            return false;
        }
        if self.direct_stale {
            self.direct_stale = false;
            self.direct.clear();
            self.direct_hot = 0;
            let mut up = self.peers.iter().flat_map(|p| p.up.iter().copied());
            self.direct.extend(up.by_ref().take(DIRECT_MAX + 1));
            if self.direct.len() > DIRECT_MAX {
                self.direct.clear();
            }
        }
        !self.direct.is_empty()
    }

    /// True when calling [`poll`](Self::poll) again at once has work: events
    /// wait for delivery, or data waits to be written.
    pub fn wants_poll(&self) -> bool {
        !self.pending.is_empty() || !self.backlog.is_empty() || self.blocked > 0
    }

    /// True when everything sent has been acknowledged by its receiver (or
    /// the receiver is lost): closing now loses nothing. A rank that
    /// finishes polls until this holds before it leaves, since its sends
    /// finish as soon as their bytes are queued.
    pub fn is_quiet(&self) -> bool {
        self.peers.iter().all(|p| p.lost.is_some() || (p.am_out.is_empty() && p.bulk_out.is_empty())) && !self.wants_poll()
    }

    /// An epoll descriptor that is readable whenever `poll` has something to
    /// do: a socket is readable, a full socket became writable, or a timed
    /// duty is due. Watch it for readability beside other sources.
    pub fn as_raw_fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    fn drain_pending(&mut self, on: &mut dyn FnMut(Event<'_>)) -> usize {
        drain(&mut self.pending, on)
    }

    fn on_ready(&mut self, tag: u64, evs: u32, on: &mut dyn FnMut(Event<'_>)) -> usize {
        if tag == TIMER_TAG {
            self.timer.clear();
            self.timer_armed = None;
            return 0;
        }
        if tag & LISTEN_TAG != 0 {
            self.accept_all((tag & !LISTEN_TAG) as usize);
            return 0;
        }
        let c = tag as usize;
        if !self.live(c) {
            return 0;
        }
        let mut n = 0;
        if matches!(self.conn(c).phase, Phase::Connecting) {
            if evs & (ev::OUT | ev::ERR | ev::HUP) != 0 {
                self.connect_finished(c);
            }
            return 0;
        }
        if !self.connected && self.conn(c).is_up() && evs & (ev::ERR | ev::HUP) != 0 {
            self.fail_conn(c, "closed while connecting".into());
            return 0;
        }
        if evs & (ev::IN | ev::ERR | ev::HUP | ev::RDHUP) != 0 {
            n += self.read_conn(c, on);
        }
        if evs & ev::OUT != 0 && self.live(c) {
            self.flush(c);
        }
        n
    }

    fn arm_timer(&mut self, now: Instant) {
        let mut due = if self.conns.iter().flatten().next().is_some() { Some(self.next_tick) } else { None };
        for &p in &self.owed {
            if let Some(t) = self.peers[p as usize].ack_due {
                due = Some(due.map_or(t, |d| d.min(t)));
            }
        }
        let Some(due) = due else { return };
        if self.timer_armed.is_none_or(|a| due < a) && self.timer.arm(due.saturating_duration_since(now)).is_ok() {
            self.timer_armed = Some(due);
        }
    }

    fn tick_interval(&self) -> Duration {
        (self.cfg.dead_after / 6).clamp(Duration::from_millis(20), Duration::from_millis(500))
    }

    /// The periodic duties: handshake deadlines, pings, link health.
    fn tick(&mut self, now: Instant) {
        self.next_tick = now + self.tick_interval();
        self.handshake_timeouts(now);
        let ping_after = self.cfg.dead_after / 3;
        let dead_ms = self.cfg.dead_after.as_millis() as u32;
        for c in 0..self.conns.len() {
            let Some(conn) = &mut self.conns[c] else { continue };
            if !conn.is_up() {
                continue;
            }
            if now.duration_since(conn.last_send) >= ping_after && conn.tx.is_empty() {
                let mut b = Vec::new();
                wire::encode(&Frame::Ping, &mut b);
                conn.push(TxItem::Own(b));
                self.flush(c);
                if !self.live(c) {
                    continue;
                }
            }
            // Dead: data in flight, the retransmission timer has fired
            // (so the data is overdue, not just sent), and nothing at all
            // has been acknowledged for `dead_after`. A live peer's kernel
            // acknowledges even when its application does not poll (or
            // advertises a zero window, which leaves nothing unacknowledged),
            // so a slow peer never looks dead.
            match sys::tcp_health(self.conn(c).fd()) {
                Ok(h) if h.unacked > 0 && h.retransmits > 0 && h.last_ack_recv_ms >= dead_ms => {
                    let why = format!("the link acknowledged nothing for {} ms with data in flight (link down?)", h.last_ack_recv_ms);
                    self.fail_conn(c, why);
                }
                Ok(_) => {}
                Err(e) => self.fail_conn(c, format!("TCP_INFO: {e}")),
            }
        }
    }

    fn handshake_timeouts(&mut self, now: Instant) {
        for c in 0..self.conns.len() {
            let Some(conn) = &self.conns[c] else { continue };
            if conn.is_up() || conn.deadline > now {
                continue;
            }
            let why = format!("no handshake within {:?}", self.handshake_timeout());
            self.fail_conn(c, why);
        }
    }

    // ---------------------------------------------------------------------
    // Handshake
    // ---------------------------------------------------------------------

    fn accept_all(&mut self, r: usize) {
        loop {
            let got = match sys::accept(self.listeners[r].as_fd()) {
                Ok(Some(x)) => x,
                Ok(None) => return,
                Err(e) => {
                    // EMFILE and friends: leave it in the backlog for later.
                    warn(format_args!("goal-net: rank {}: accept on rail {}: {e}", self.cfg.rank, self.cfg.rails[r].name));
                    return;
                }
            };
            let (s, addr) = got;
            if self.handshaking >= MAX_HANDSHAKES {
                self.rejected += 1;
                warn(format_args!("goal-net: rank {}: refused a connection from {addr} on rail {}: too many handshakes in progress", self.cfg.rank, self.cfg.rails[r].name));
                continue;
            }
            if self.tune_socket(&s).is_err() {
                continue;
            }
            let mut nonce = [0u8; 32];
            if sys::random_bytes(&mut nonce).is_err() {
                continue;
            }
            let challenge = Challenge { rank: self.cfg.rank, size: self.cfg.size, rail: r as u32, nonce };
            let mut conn = Conn::new(s, true, r, addr, Instant::now() + self.handshake_timeout());
            conn.phase = Phase::AwaitHello { challenge };
            let mut b = Vec::new();
            wire::encode(&Frame::Challenge(challenge), &mut b);
            conn.push(TxItem::Own(b));
            let c = self.insert_conn(conn);
            self.handshaking += 1;
            self.update_interest(c);
            self.flush(c);
        }
    }

    fn connect_finished(&mut self, c: usize) {
        match sys::take_error(self.conn(c).fd()) {
            Ok(None) => {
                self.conn(c).phase = Phase::AwaitChallenge;
                self.update_interest(c);
            }
            Ok(Some(e)) | Err(e) => self.fail_conn(c, format!("connect: {e}")),
        }
    }

    /// Refuses an accepted connection: logs it (naming the remote address),
    /// tells the other side why, and closes.
    fn refuse(&mut self, c: usize, why: &str) {
        let conn = self.conn(c);
        let (addr, rail) = (conn.remote, conn.rail);
        warn(format_args!("goal-net: rank {}: refused a connection from {addr} on rail {}: {why}", self.cfg.rank, self.cfg.rails[rail].name));
        self.rejected += 1;
        let mut b = Vec::new();
        let reason = &why.as_bytes()[..why.len().min(wire::MAX_REASON)];
        wire::encode(&Frame::Reject { reason }, &mut b);
        // Best effort, one write: a refused peer gets no more of our time.
        // SAFETY: the iovec points into `b`, alive for the call.
        let _ = unsafe { sys::send_vectored(self.conn(c).fd(), &[sys::iov(b.as_ptr(), b.len())]) };
        self.close_conn(c, None);
    }

    fn on_hello(&mut self, c: usize, challenge: Challenge, h: Hello) {
        let me = self.cfg.rank;
        if h.size != self.cfg.size {
            return self.refuse(c, &format!("group size {} is not ours ({})", h.size, self.cfg.size));
        }
        if h.rank >= self.cfg.size || h.rank == me {
            return self.refuse(c, &format!("claimed rank {} is not a peer in a group of {}", h.rank, self.cfg.size));
        }
        if !goal_auth::ct_eq(&wire::hello_mac(&self.cfg.secret, &challenge, &h), &h.mac) {
            return self.refuse(c, &format!("wrong job secret (claimed rank {})", h.rank));
        }
        let rail = self.conn(c).rail;
        let peer = &self.peers[h.rank as usize];
        if !self.planned || !peer.remote {
            return self.refuse(c, &format!("rank {} is not expected over the network", h.rank));
        }
        let Some(k) = peer.pairs.iter().position(|x| !x.i_connect && x.my_rail == rail && x.their_rail == h.from_rail as usize) else {
            return self.refuse(c, &format!("rank {} rail {} is not paired with our rail {}", h.rank, h.from_rail, rail));
        };
        if peer.pairs[k].conn.is_some() || peer.pairs[k].dead || peer.lost.is_some() {
            return self.refuse(c, &format!("rank {} rail {} is already connected or lost", h.rank, h.from_rail));
        }
        let mac = wire::welcome_mac(&self.cfg.secret, &challenge, &h);
        let mut b = Vec::new();
        wire::encode(&Frame::Welcome { mac }, &mut b);
        let conn = self.conn(c);
        conn.push(TxItem::Own(b));
        conn.peer = Some(h.rank);
        conn.pair = Some(k);
        self.established(c);
        self.flush(c);
    }

    fn on_challenge(&mut self, c: usize, ch: Challenge) {
        let conn = self.conn(c);
        let (p, k) = (conn.peer.expect("connector knows its peer"), conn.pair.expect("and its pair"));
        let pair = &self.peers[p as usize].pairs[k];
        if ch.rank != p || ch.size != self.cfg.size || ch.rail as usize != pair.their_rail {
            let msg = format!(
                "goal-net: rank {}: {} answered as rank {} rail {} of a group of {}, not rank {p} rail {} of {}",
                self.cfg.rank, pair.addr, ch.rank, ch.rail, ch.size, pair.their_rail, self.cfg.size
            );
            self.fatal = Some(msg.clone());
            return self.fail_conn(c, msg);
        }
        let mut nonce = [0u8; 32];
        if let Err(e) = sys::random_bytes(&mut nonce) {
            return self.fail_conn(c, format!("getrandom: {e}"));
        }
        let mut h = Hello { rank: self.cfg.rank, size: self.cfg.size, from_rail: pair.my_rail as u32, to_rail: pair.their_rail as u32, nonce, mac: [0; 32] };
        h.mac = wire::hello_mac(&self.cfg.secret, &ch, &h);
        let mut b = Vec::new();
        wire::encode(&Frame::Hello(h), &mut b);
        let conn = self.conn(c);
        conn.phase = Phase::AwaitWelcome { challenge: ch, hello: h };
        conn.push(TxItem::Own(b));
        self.flush(c);
    }

    fn on_welcome(&mut self, c: usize, ch: Challenge, h: Hello, mac: [u8; 32]) {
        if !goal_auth::ct_eq(&wire::welcome_mac(&self.cfg.secret, &ch, &h), &mac) {
            let addr = self.conn(c).remote;
            let msg = format!("goal-net: rank {}: rank {} at {addr} did not prove it knows the job secret", self.cfg.rank, ch.rank);
            self.fatal = Some(msg.clone());
            return self.fail_conn(c, msg);
        }
        self.established(c);
    }

    /// The handshake succeeded: the connection joins its peer.
    fn established(&mut self, c: usize) {
        let conn = self.conn(c);
        conn.phase = Phase::Up;
        let accepted = conn.accepted;
        let (p, k) = (conn.peer.expect("known after handshake") as usize, conn.pair.expect("known after handshake"));
        if accepted {
            self.handshaking -= 1;
        }
        let peer = &mut self.peers[p];
        peer.pairs[k].conn = Some(c);
        peer.pairs[k].trying = None;
        peer.pairs[k].error = None;
        // Keep `up` in pair order, so rail choice is the same on every run.
        let pos = peer.up.iter().position(|&u| self.conns[u].as_ref().and_then(|x| x.pair).is_some_and(|pk| pk > k)).unwrap_or(peer.up.len());
        peer.up.insert(pos, c);
        self.direct_stale = true;
        self.update_interest(c);
    }

    // ---------------------------------------------------------------------
    // Reading
    // ---------------------------------------------------------------------

    /// Reads what the socket has (a bounded number of times) and handles it.
    fn read_conn(&mut self, c: usize, on: &mut dyn FnMut(Event<'_>)) -> usize {
        let mut n = 0;
        for _ in 0..READS_PER_POLL {
            n += self.consume(c, on);
            if !self.live(c) {
                return n;
            }
            if !self.connected && self.conn(c).is_up() {
                // Handshake done during `connect`: the rest waits.
                return n;
            }
            let (got, asked) = match self.read_some(c) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    self.fail_conn(c, format!("read: {e}"));
                    return n;
                }
            };
            if got == 0 {
                let why = if self.conn(c).is_up() { "the peer closed the connection" } else { "closed during the handshake" };
                self.fail_conn(c, why.into());
                return n;
            }
            self.conn(c).counters.bytes_in += got as u64;
            if got < asked {
                n += self.consume(c, on);
                break;
            }
        }
        if self.live(c) {
            self.send_frag_acks(c);
        }
        n
    }

    /// One read: into the fragment destination (plus a tail into the buffer)
    /// when a body is being read and nothing is buffered, else into the
    /// buffer. Returns (bytes read, bytes asked for).
    fn read_some(&mut self, c: usize) -> io::Result<(usize, usize)> {
        let NetNode { conns, peers, scratch, iov, .. } = self;
        let conn = conns[c].as_mut().expect("live");
        iov.clear();
        if let (Some(body), 0) = (conn.body, conn.rx_pending()) {
            let rest = body.remaining() as u64;
            let p = conn.peer.expect("bodies only on established connections") as usize;
            // Body bytes this read can take: the destination may be cut into
            // more pieces than one readv takes, so possibly fewer than `rest`.
            let covered = match body_dst(&peers[p], &body) {
                Some(dst) => dst.iovecs(body.off + body.done as u64, rest, iov, MAX_IOV) as usize,
                None => {
                    conn.body.as_mut().expect("checked above").discard = true;
                    let n = scratch.len().min(rest as usize);
                    iov.push(sys::iov(scratch.as_mut_ptr(), n));
                    n
                }
            };
            conn.rx_lo = 0;
            conn.rx_hi = 0;
            let tail = TAIL.min(conn.rx.len());
            iov.push(sys::iov(conn.rx.as_mut_ptr(), tail));
            let asked: usize = iov.iter().map(|v| v.iov_len).sum();
            // SAFETY: (1) the destination iovecs cover a range of the
            // registration, checked against its size when the fragment header
            // was accepted; the caller of `expect_bulk` promised that memory
            // is valid and not otherwise used until BulkDone or PeerLost.
            // (2) the scratch and tail iovecs point into buffers we own,
            // which nothing else borrows during the call.
            let got = unsafe { sys::read_vectored(conn.fd(), iov) }?;
            let body_part = got.min(covered);
            conn.body.as_mut().expect("checked above").done += body_part as u32;
            conn.rx_hi = got - body_part;
            return Ok((got, asked));
        }
        if conn.rx_hi == conn.rx.len() {
            conn.rx_make_room(conn.rx.len() - conn.rx_lo + 1);
        }
        let free = &mut conn.rx[conn.rx_hi..];
        let asked = free.len();
        iov.push(sys::iov(free.as_mut_ptr(), asked));
        // SAFETY: the iovec covers the unused end of our own buffer.
        let got = unsafe { sys::read_vectored(conn.fd(), iov) }?;
        conn.rx_hi += got;
        Ok((got, asked))
    }

    /// Handles everything buffered: whole frames, and fragment bytes that
    /// arrived in the buffer. Returns events delivered.
    fn consume(&mut self, c: usize, on: &mut dyn FnMut(Event<'_>)) -> usize {
        let mut n = 0;
        loop {
            if !self.live(c) {
                return n;
            }
            if let Some(body) = self.conn(c).body {
                if body.done == body.len {
                    self.body_finished(c, body);
                    continue;
                }
                if self.conn(c).rx_pending() == 0 {
                    return n;
                }
                self.body_from_buffer(c, body);
                continue;
            }
            if !self.connected && self.conn(c).is_up() {
                return n;
            }
            match self.next_frame(c, on, &mut n) {
                Ok(None) => return n,
                Ok(Some(None)) => {}
                Ok(Some(Some(f))) => self.handle_owned(c, f),
                Err(why) => {
                    let conn = self.conn(c);
                    if conn.is_up() {
                        self.fail_conn(c, why);
                    } else {
                        self.refuse_or_fail(c, &why);
                    }
                    return n;
                }
            }
        }
    }

    /// A handshake-phase error: an accepted connection is refused (and
    /// logged), one we made fails.
    fn refuse_or_fail(&mut self, c: usize, why: &str) {
        if self.conn(c).accepted {
            self.refuse(c, why);
        } else {
            self.fail_conn(c, why.to_owned());
        }
    }

    /// Copies fragment bytes that arrived in the buffer to their place.
    fn body_from_buffer(&mut self, c: usize, body: Body) {
        let NetNode { conns, peers, iov, .. } = self;
        let conn = conns[c].as_mut().expect("live");
        let k = conn.rx_pending().min(body.remaining() as usize);
        let p = conn.peer.expect("established") as usize;
        if let Some(dst) = body_dst(&peers[p], &body) {
            iov.clear();
            dst.iovecs(body.off + body.done as u64, k as u64, iov, usize::MAX);
            let mut from = conn.rx_lo;
            for v in iov.iter() {
                // SAFETY: (1) the target lies in the registration, checked
                // when the fragment header was accepted; the caller of
                // `expect_bulk` vouched for that memory. (2) the source is
                // our own buffer, which cannot overlap user memory.
                unsafe { std::ptr::copy_nonoverlapping(conn.rx.as_ptr().add(from), v.iov_base as *mut u8, v.iov_len) };
                from += v.iov_len;
            }
        }
        conn.rx_lo += k;
        let b = conn.body.as_mut().expect("body");
        b.done += k as u32;
        b.discard |= body_dst(&peers[p], &body).is_none();
    }

    /// Parses the next frame. `Ok(None)`: need more bytes; `Ok(Some(None))`:
    /// handled in place; `Ok(Some(Some(f)))`: for [`handle_owned`](Self::handle_owned).
    fn next_frame(&mut self, c: usize, on: &mut dyn FnMut(Event<'_>), n: &mut usize) -> Result<Option<Option<Owned>>, String> {
        let NetNode { conns, peers, pending, lim, owed, .. } = self;
        let conn = conns[c].as_mut().expect("live");
        let up = conn.is_up();
        let parsed = wire::parse(&conn.rx[conn.rx_lo..conn.rx_hi], lim).map_err(|e| format!("protocol error: {e}"))?;
        let (frame, used) = match parsed {
            Parsed::Incomplete { need } => {
                conn.rx_make_room(need);
                return Ok(None);
            }
            Parsed::Frame(f, used) => (f, used),
        };
        let out = match frame {
            Frame::Am { handler, seq, head, payload } if up => {
                let p = conn.peer.expect("established");
                let r = deliver_am(&mut peers[p as usize], owed, pending, p, handler, seq, head, payload, on, n);
                conn.rx_lo += used;
                r?;
                return Ok(Some(None));
            }
            Frame::Frag(h) if up => {
                conn.rx_lo += used;
                let p = conn.peer.expect("established");
                let body = accept_frag(&mut peers[p as usize], &h)?;
                conn.body = Some(body);
                return Ok(Some(None));
            }
            Frame::Ack { delivered, frags } if up => {
                let p = conn.peer.expect("established");
                let r = on_ack(&mut peers[p as usize], pending, p, delivered, frags.iter());
                conn.rx_lo += used;
                r?;
                return Ok(Some(None));
            }
            Frame::Challenge(x) => Owned::Challenge(x),
            Frame::Hello(x) => Owned::Hello(x),
            Frame::Welcome { mac } => Owned::Welcome(mac),
            Frame::Reject { reason } => Owned::Reject(String::from_utf8_lossy(reason).into_owned()),
            Frame::Ping if up => Owned::Ping,
            Frame::Bye if up => Owned::Bye,
            Frame::Probe { op, id, size, body } if up => Owned::Probe { op, id, size, body: body.to_vec() },
            _ => return Err("protocol error: a data frame before the handshake finished".into()),
        };
        conn.rx_lo += used;
        Ok(Some(Some(out)))
    }

    /// Handles a frame that needs the whole node.
    fn handle_owned(&mut self, c: usize, f: Owned) {
        let phase = self.conn(c).phase.clone();
        match (f, phase) {
            (Owned::Challenge(ch), Phase::AwaitChallenge) => self.on_challenge(c, ch),
            (Owned::Hello(h), Phase::AwaitHello { challenge }) => self.on_hello(c, challenge, h),
            (Owned::Welcome(mac), Phase::AwaitWelcome { challenge, hello }) => self.on_welcome(c, challenge, hello, mac),
            (Owned::Reject(why), Phase::AwaitWelcome { .. } | Phase::AwaitChallenge) => {
                let me = self.cfg.rank;
                let conn = self.conn(c);
                let msg = format!("goal-net: rank {me}: rank {} at {} refused the connection: {why}", conn.peer.unwrap_or(u32::MAX), conn.remote);
                self.fatal = Some(msg.clone());
                self.fail_conn(c, msg);
            }
            (Owned::Ping, Phase::Up) => {}
            (Owned::Bye, Phase::Up) => self.close_conn(c, None),
            (Owned::Probe { op, id, size, body }, Phase::Up) => {
                let p = self.conn(c).peer.expect("established");
                if let Err(why) = self.on_probe(p, op, id, size, &body) {
                    self.fail_conn(c, why);
                }
            }
            (_, Phase::Up) => self.fail_conn(c, "protocol error: a handshake frame out of place".into()),
            _ => self.refuse_or_fail(c, "protocol error: a frame out of place in the handshake"),
        }
    }

    /// The fragment body is complete: acknowledge it, record it, report the
    /// transfer if it is whole.
    fn body_finished(&mut self, c: usize, body: Body) {
        let conn = self.conn(c);
        conn.body = None;
        conn.counters.frags_in += 1;
        conn.frag_acks.push((body.xid, body.off));
        let p = conn.peer.expect("established");
        let peer = &mut self.peers[p as usize];
        if peer.xid_done.contains(body.xid) {
            return;
        }
        let Some(b) = peer.bulk_in.get_mut(&body.token).filter(|b| b.xid == Some(body.xid)) else { return };
        b.got_bytes += b.got.insert(body.off, body.off + body.len as u64);
        if Some(b.got_bytes) == b.total {
            let b = peer.bulk_in.remove(&body.token).expect("present");
            peer.xid_done.insert(body.xid);
            if b.internal {
                self.probe_bulk_done(p, body.token);
            } else if !b.discard {
                self.pending.push_back(Queued::Ev(Event::BulkDone { src: p, token: body.token }));
            }
        }
    }

    // ---------------------------------------------------------------------
    // Writing
    // ---------------------------------------------------------------------

    /// Writes what connection `c` has queued until the socket is full or the
    /// queue is empty, pulling bulk fragments as it goes.
    pub(crate) fn flush(&mut self, c: usize) {
        loop {
            if !self.live(c) {
                return;
            }
            self.pull_fragment(c);
            let (res, asked) = {
                let NetNode { conns, peers, iov, .. } = &mut *self;
                let conn = conns[c].as_mut().expect("live");
                if conn.tx.is_empty() {
                    break;
                }
                iov.clear();
                let dropped = gather(conn, c, peers, iov);
                if !dropped.is_empty() {
                    let p = conn.peer.expect("fragments only on established connections");
                    for xid in dropped {
                        self.writer_done(p, xid);
                    }
                    continue; // look again: the next fragment, or the same frames
                }
                let asked: usize = iov.iter().map(|v| v.iov_len).sum();
                // SAFETY: (1) control frames and messages point into buffers
                // owned by `tx` (and shared `Arc`s), alive for the call;
                // (2) fragment data points into the caller's buffer, inside
                // the transfer's range, which the caller of `send_bulk`
                // promised stays valid until BulkSent or PeerLost; the
                // transfer cannot finish while this copy is queued (`writers`).
                (unsafe { sys::send_vectored(conn.fd(), iov) }, asked)
            };
            match res {
                Ok(n) => {
                    self.advance(c, n);
                    if n < asked {
                        self.mark_stalled(c);
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.mark_stalled(c);
                    break;
                }
                Err(e) => return self.fail_conn(c, format!("write: {e}")),
            }
        }
        if self.live(c) {
            self.update_interest(c);
        }
    }

    fn mark_stalled(&mut self, c: usize) {
        if let Some(TxItem::Frag { stalled, .. }) = self.conn(c).tx.iter_mut().find(|t| matches!(t, TxItem::Frag { .. })) {
            *stalled = true;
        }
    }

    /// `n` bytes of the queue were written: retire whole frames.
    fn advance(&mut self, c: usize, mut n: usize) {
        let now = Instant::now();
        let conn = self.conn(c);
        conn.last_send = now;
        conn.counters.bytes_out += n as u64;
        conn.tx_bytes -= n;
        let mut finished_frags = Vec::new();
        while n > 0 || conn.tx.front().is_some_and(|t| t.len() == conn.tx_off) {
            let front = conn.tx.front_mut().expect("bytes written belong to queued frames");
            if let TxItem::Frag { started, .. } = front {
                started.get_or_insert(now);
            }
            let left = front.len() - conn.tx_off;
            if n < left {
                conn.tx_off += n;
                break;
            }
            n -= left;
            conn.tx_off = 0;
            match conn.tx.pop_front().expect("front") {
                TxItem::Frag { xid, len, started, stalled, .. } => {
                    conn.frag_queued = false;
                    conn.counters.frags_out += 1;
                    if stalled {
                        let dt = now.duration_since(started.unwrap_or(now)).as_secs_f64();
                        if dt > 0.0 {
                            let sample = len as f64 / dt;
                            conn.rate = if conn.rate == 0.0 { sample } else { 0.75 * conn.rate + 0.25 * sample };
                        }
                    }
                    finished_frags.push(xid);
                }
                TxItem::Am(_) => conn.counters.ams_out += 1,
                TxItem::Own(_) => {}
            }
        }
        let p = conn.peer;
        if let Some(p) = p {
            for xid in finished_frags {
                self.writer_done(p, xid);
            }
        }
    }

    /// A queued copy of a fragment of `xid` is no longer being written.
    fn writer_done(&mut self, p: u32, xid: u64) {
        let peer = &mut self.peers[p as usize];
        let Some(i) = peer.bulk_out.iter().position(|b| b.xid == xid) else { return };
        peer.bulk_out[i].writers -= 1;
        if peer.bulk_out[i].finished() {
            let b = peer.bulk_out.remove(i).expect("index valid");
            if !b.internal {
                self.pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token: b.token }));
            }
        }
    }

    /// If the connection has no fragment queued, takes the next one the
    /// peer's transfers have, sized for this rail.
    fn pull_fragment(&mut self, c: usize) {
        let conn = self.conns[c].as_ref().expect("live");
        if conn.frag_queued || !conn.is_up() || !self.connected {
            return;
        }
        let p = conn.peer.expect("established") as usize;
        if !self.peers[p].bulk_out.iter().any(|b| b.has_work()) {
            return;
        }
        // This rail's share, by measured throughput (equal shares until
        // every rail has a measurement).
        let rates: Vec<f64> = self.peers[p].up.iter().map(|&u| self.conns[u].as_ref().map_or(0.0, |x| x.rate)).collect();
        let mine = conn.rate;
        let share = if rates.iter().all(|&r| r > 0.0) { mine / rates.iter().sum::<f64>() } else { 1.0 / rates.len().max(1) as f64 };
        let (frag, min_frag) = (self.cfg.frag_size as u64, self.cfg.min_frag as u64);
        let total = self.peers[p].bulk_out.iter().find(|b| b.has_work()).map_or(0, |b| b.src.total);
        // A medium message (a fragment or less per rail) is cut once into
        // shares of the whole, and a rail that still has a fragment of it in
        // flight leaves the next to an idle rail: the kernel takes such a
        // message into one socket at once (the rate limit sits below TCP),
        // so pulling "when the socket has room" put all of a 64 KiB message
        // on one rail (3 rails of 1 Gbit/s: 280 us, now 93 us). A large one
        // is cut as the rails drain, each taking its share of what is left,
        // so that they finish together.
        let medium = total <= frag * self.peers[p].up.len() as u64;
        let busy = |u: usize| self.peers[p].bulk_out.iter().any(|b| b.inflight.values().any(|&(_, k)| k == u));
        if medium && busy(c) && self.peers[p].up.iter().any(|&u| u != c && !busy(u)) {
            return;
        }
        let len_for = move |uncut: u64| {
            let want = ((if medium { total } else { uncut }) as f64 * share).ceil() as u64;
            let len = want.clamp(min_frag, frag);
            if uncut.saturating_sub(len) < min_frag {
                uncut
            } else {
                len
            }
        };
        let peer = &mut self.peers[p];
        let Some(b) = peer.bulk_out.iter_mut().find(|b| b.has_work()) else { return };
        let Some((off, len)) = b.pull(c, len_for) else { return };
        let head = wire::frag_header(&FragHead { xid: b.xid, token: b.token, offset: off, total: b.src.total, len });
        let xid = b.xid;
        self.conn(c).push(TxItem::Frag { head, xid, off, len, started: None, stalled: false });
    }

    /// Queues an ACK carrying the fragments received on `c` (and the
    /// peer's delivered count).
    fn send_frag_acks(&mut self, c: usize) {
        let conn = self.conn(c);
        if conn.frag_acks.is_empty() || !conn.is_up() {
            return;
        }
        let p = conn.peer.expect("established") as usize;
        let acks = std::mem::take(&mut conn.frag_acks);
        let delivered = self.peers[p].am_delivered;
        for chunk in acks.chunks(wire::MAX_ACK_ENTRIES) {
            let mut b = Vec::new();
            wire::ack(&mut b, delivered, chunk);
            self.conn(c).push(TxItem::Own(b));
        }
        self.peers[p].am_acked_sent = delivered;
        self.peers[p].ack_due = None;
        self.flush(c);
    }

    /// Cumulative acknowledgements of active messages that are due.
    fn send_due_acks(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.owed.len() {
            let p = self.owed[i] as usize;
            let peer = &self.peers[p];
            let owed = peer.am_delivered - peer.am_acked_sent;
            if owed == 0 || peer.up.is_empty() {
                self.peers[p].ack_due = None;
                self.owed.swap_remove(i);
                continue;
            }
            if owed >= ACK_EVERY || peer.ack_due.is_some_and(|t| t <= now) {
                self.send_am_ack(p);
                self.owed.swap_remove(i);
                continue;
            }
            i += 1;
        }
    }

    fn send_am_ack(&mut self, p: usize) {
        let Some(c) = self.least_queued(p) else { return };
        let delivered = self.peers[p].am_delivered;
        let mut b = Vec::new();
        wire::ack(&mut b, delivered, &[]);
        self.conn(c).push(TxItem::Own(b));
        self.peers[p].am_acked_sent = delivered;
        self.peers[p].ack_due = None;
        if self.conn(c).tx.len() == 1 {
            self.flush(c);
        }
    }

    fn least_queued(&self, p: usize) -> Option<usize> {
        self.peers[p].up.iter().copied().min_by_key(|&u| self.conns[u].as_ref().map_or(usize::MAX, |x| x.tx_bytes))
    }

    // ---------------------------------------------------------------------
    // Failure
    // ---------------------------------------------------------------------

    /// Connection `c` failed: report it, move its unacknowledged traffic to
    /// the peer's other connections, and lose the peer if none is left.
    pub(crate) fn fail_conn(&mut self, c: usize, why: String) {
        self.close_conn(c, Some(why));
    }

    /// Closes connection `c`. `why`: `None` for a deliberate close (BYE,
    /// refusal), which reports no lost rail.
    fn close_conn(&mut self, c: usize, why: Option<String>) {
        let Some(conn) = self.conns[c].take() else { return };
        self.free.push(c);
        if conn.registered {
            let _ = self.epoll.delete(conn.fd());
            if conn.interest & ev::OUT != 0 {
                self.blocked -= 1;
            }
        }
        // Reset rather than linger: whatever is queued is sent again elsewhere,
        // and a link that comes back must not deliver stale bytes.
        let _ = sys::set_linger_zero(conn.fd());
        self.backlog.retain(|&b| b != c);
        let was_up = conn.is_up();
        if conn.accepted && !was_up {
            self.handshaking -= 1;
        }
        let Some(p) = conn.peer else { return };
        let rail = self.cfg.rails[conn.rail].name.clone();
        let peer = &mut self.peers[p as usize];
        if let Some(k) = conn.pair {
            let pair = &mut peer.pairs[k];
            if was_up {
                pair.conn = None;
                pair.dead = true;
            } else if !conn.accepted {
                pair.trying = None;
                pair.error = why.clone();
                pair.retry_at = if self.connected { None } else { Some(Instant::now() + RETRY_CONNECT) };
            }
        }
        if !was_up {
            return;
        }
        peer.up.retain(|&u| u != c);
        self.direct_stale = true;
        if let Some(w) = &why {
            self.pending.push_back(Queued::Ev(Event::RailLost { peer: p, rail: rail.clone(), why: format!("{w} (our {} to {})", rail, conn.remote) }));
        }
        // Fragments this connection was writing no longer read the buffer;
        // the ones it had in flight go to the resend lists.
        for item in &conn.tx {
            if let TxItem::Frag { xid, .. } = item {
                self.writer_done_quiet(p, *xid);
            }
        }
        let peer = &mut self.peers[p as usize];
        for b in peer.bulk_out.iter_mut() {
            b.conn_lost(c);
        }
        self.finish_bulks(p);
        let peer = &mut self.peers[p as usize];
        if peer.up.is_empty() {
            let why = match why {
                Some(w) => format!("no rail left to rank {p}: the last one ({rail}, to {}) failed: {w}", conn.remote),
                None => format!("rank {p} closed its connections (it finished or shut down)"),
            };
            return self.lose_peer(p, why);
        }
        // Messages this connection carried and the peer did not acknowledge
        // go again, in order, on the others; the receiver drops duplicates.
        let moved: Vec<usize> = (0..peer.am_out.len()).filter(|&i| peer.am_out[i].conn == c).collect();
        for i in moved {
            let Some(to) = self.pick_conn(p as usize) else { break };
            let peer = &mut self.peers[p as usize];
            peer.am_out[i].conn = to;
            let frame = peer.am_out[i].frame.clone();
            self.conn(to).push(TxItem::Am(frame));
        }
        // Our acknowledgements that went on it may be lost: repeat them.
        if self.peers[p as usize].am_delivered > 0 {
            self.send_am_ack(p as usize);
        }
        for u in self.peers[p as usize].up.clone() {
            self.flush(u);
        }
    }

    fn writer_done_quiet(&mut self, p: u32, xid: u64) {
        if let Some(b) = self.peers[p as usize].bulk_out.iter_mut().find(|b| b.xid == xid) {
            b.writers -= 1;
        }
    }

    /// Reports the transfers to `p` that are finished.
    fn finish_bulks(&mut self, p: u32) {
        let peer = &mut self.peers[p as usize];
        let mut i = 0;
        while i < peer.bulk_out.len() {
            if peer.bulk_out[i].finished() {
                let b = peer.bulk_out.remove(i).expect("index valid");
                if !b.internal {
                    self.pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token: b.token }));
                }
            } else {
                i += 1;
            }
        }
    }

    /// No connection to `p` is left: drop everything about it and say so.
    fn lose_peer(&mut self, p: u32, why: String) {
        let peer = &mut self.peers[p as usize];
        if peer.lost.is_some() {
            return;
        }
        peer.lost = Some(why.clone());
        peer.am_out.clear();
        peer.reorder.clear();
        peer.reorder_bytes = 0;
        peer.bulk_out.clear();
        peer.bulk_in.clear();
        peer.ack_due = None;
        peer.probe = Default::default();
        let trying: Vec<usize> = peer.pairs.iter().filter_map(|x| x.trying).collect();
        for c in trying {
            self.close_conn(c, None);
        }
        self.pending.push_back(Queued::Ev(Event::PeerLost { peer: p, why }));
    }

    // ---------------------------------------------------------------------
    // Sending
    // ---------------------------------------------------------------------

    /// Checks that `p` can be sent to.
    fn usable(&self, p: u32) -> io::Result<()> {
        let me = self.cfg.rank;
        let Some(peer) = self.peers.get(p as usize) else {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: rank {me}: rank {p} is outside the group of {}", self.cfg.size)));
        };
        if let Some(why) = &peer.lost {
            return Err(err(io::ErrorKind::NotConnected, format!("goal-net: rank {me}: rank {p} is lost: {why}")));
        }
        if !self.connected || !peer.remote || peer.up.is_empty() {
            return Err(err(io::ErrorKind::NotConnected, format!("goal-net: rank {me}: rank {p} is not connected over the network")));
        }
        Ok(())
    }

    /// The connection a small message to `p` goes on.
    fn pick_conn(&mut self, p: usize) -> Option<usize> {
        let policy = self.cfg.am_rails;
        let peer = &self.peers[p];
        let n = peer.up.len();
        if n == 0 {
            return None;
        }
        let i = match policy {
            AmRails::RoundRobin => (peer.rr + 1) % n,
            AmRails::LeastQueued => {
                let q = |i: usize| self.conns[peer.up[i]].as_ref().map_or(usize::MAX, |x| x.tx_bytes);
                let last = peer.rr.min(n - 1);
                let best = (0..n).min_by_key(|&i| q(i)).expect("n > 0");
                if q(last) <= q(best) {
                    last
                } else {
                    best
                }
            }
        };
        self.peers[p].rr = i;
        Some(self.peers[p].up[i])
    }

    /// Sends an active message: `handler` (a user id given at construction),
    /// a small `head` (at most 64 bytes), and `payload` (copied; at most
    /// `max_am_payload` bytes). Never blocks: the message is written at once
    /// if its connection is idle, else queued. Messages to one peer are
    /// delivered in the order sent, exactly once, even when rails fail.
    pub fn send_am(&mut self, peer: u32, handler: u8, head: &[u8], payload: &[&[u8]]) -> io::Result<()> {
        self.usable(peer)?;
        if !self.lim.handlers.contains(handler) {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: handler {handler} was not declared")));
        }
        if head.len() > wire::MAX_USER_HEAD {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: a {}-byte message head (limit {})", head.len(), wire::MAX_USER_HEAD)));
        }
        let len: usize = payload.iter().map(|p| p.len()).sum();
        if len > self.cfg.max_am_payload {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: a {len}-byte active message (limit {})", self.cfg.max_am_payload)));
        }
        let p = peer as usize;
        let seq = self.peers[p].am_next;
        self.peers[p].am_next += 1;
        let mut frame = Vec::new();
        wire::am(&mut frame, handler, seq, head, payload);
        let frame = Arc::new(frame);
        let c = self.pick_conn(p).expect("usable peers have a connection");
        self.peers[p].am_out.push_back(crate::node::AmOut { seq, frame: frame.clone(), conn: c });
        let conn = self.conn(c);
        conn.push(TxItem::Am(frame));
        if conn.tx.len() == 1 {
            self.flush(c);
        }
        Ok(())
    }

    /// Registers where the bytes of the transfer `token` from `peer` land.
    /// Call it before telling the sender to go (the executor's CTS). The
    /// message may be shorter than the destination; a longer one closes the
    /// connection. [`Event::BulkDone`] reports completion.
    ///
    /// # Safety
    /// Every `(ptr, len)` must stay valid for writes, and not be read or
    /// written by anyone else, until `BulkDone` or `PeerLost` for this peer
    /// is delivered, or [`cancel_expect`](Self::cancel_expect) succeeds.
    pub unsafe fn expect_bulk(&mut self, peer: u32, token: u64, dst: Vec<(*mut u8, usize)>) -> io::Result<()> {
        self.expect_inner(peer, token, dst, false)
    }

    pub(crate) fn expect_inner(&mut self, peer: u32, token: u64, dst: Vec<(*mut u8, usize)>, internal: bool) -> io::Result<()> {
        self.usable(peer)?;
        if !internal && token >= INTERNAL_TOKEN {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: token {token:#x} is reserved")));
        }
        let p = &mut self.peers[peer as usize];
        if p.bulk_in.contains_key(&token) {
            return Err(err(io::ErrorKind::AlreadyExists, format!("goal-net: token {token} from rank {peer} is already expected")));
        }
        p.bulk_in.insert(token, BulkIn::new(Pieces::new(dst), internal));
        Ok(())
    }

    /// Withdraws a registration: its memory is free when this returns. Bytes
    /// of the transfer that still arrive are read and dropped, and no
    /// `BulkDone` is reported. Returns false if `token` was not expected.
    pub fn cancel_expect(&mut self, peer: u32, token: u64) -> bool {
        let Some(p) = self.peers.get_mut(peer as usize) else { return false };
        let Some(b) = p.bulk_in.get_mut(&token) else { return false };
        b.discard = true;
        b.dst = Pieces::new([]);
        // A body being read into it now goes to the scratch buffer.
        for conn in self.conns.iter_mut().flatten() {
            if conn.peer == Some(peer) {
                if let Some(body) = conn.body.as_mut().filter(|x| x.token == token) {
                    body.discard = true;
                }
            }
        }
        true
    }

    /// Sends the bytes of `src` (in order) as transfer `token` to `peer`,
    /// cut into fragments that every rail to the peer pulls as it has room,
    /// written straight from `src` (no copy). [`Event::BulkSent`] reports
    /// when every fragment is acknowledged.
    ///
    /// # Safety
    /// Every `(ptr, len)` must stay valid for reads, and unmodified, until
    /// `BulkSent` or `PeerLost` for this peer is delivered.
    pub unsafe fn send_bulk(&mut self, peer: u32, token: u64, src: Vec<(*const u8, usize)>) -> io::Result<()> {
        self.send_bulk_inner(peer, token, src, false)
    }

    pub(crate) fn send_bulk_inner(&mut self, peer: u32, token: u64, src: Vec<(*const u8, usize)>, internal: bool) -> io::Result<()> {
        self.usable(peer)?;
        let pieces = Pieces::new(src.into_iter().map(|(p, l)| (p as *mut u8, l)));
        if pieces.total > (1u64 << 62) {
            return Err(err(io::ErrorKind::InvalidInput, "goal-net: transfer too large".into()));
        }
        let p = &mut self.peers[peer as usize];
        let xid = p.xid_next;
        p.xid_next += 1;
        p.bulk_out.push_back(BulkOut::new(xid, token, pieces, internal));
        for c in self.peers[peer as usize].up.clone() {
            if !self.conn(c).frag_queued {
                self.flush(c);
            }
        }
        Ok(())
    }

    /// Traffic per connection.
    pub fn rail_stats(&self) -> Vec<RailStats> {
        self.conns
            .iter()
            .flatten()
            .filter(|c| c.is_up())
            .map(|c| RailStats {
                peer: c.peer.unwrap_or(u32::MAX),
                rail: self.cfg.rails[c.rail].name.clone(),
                remote: c.remote,
                counters: c.counters,
                rate: c.rate,
            })
            .collect()
    }

    /// Connections up to `peer`.
    pub fn rails_up(&self, peer: u32) -> usize {
        self.peers.get(peer as usize).map_or(0, |p| p.up.len())
    }

    /// Test hook: `shutdown(2)` our connection to `peer` on our rail `rail`,
    /// behind the node's back, as a failing link would; the node finds out
    /// the way it would in production. Returns false if there is no such
    /// connection.
    #[doc(hidden)]
    pub fn test_shutdown_rail(&mut self, peer: u32, rail: usize) -> bool {
        for conn in self.conns.iter().flatten() {
            if conn.is_up() && conn.peer == Some(peer) && conn.rail == rail {
                return sys::shutdown(conn.fd()).is_ok();
            }
        }
        false
    }
}

/// Fills `iov` with the front of `conn`'s queue: whole frames, and at most
/// one fragment (header and data). Stops at the fragment: it is large
/// anyway. A fragment not yet started that is no longer wanted (its other
/// copy was acknowledged, or it moved to another connection) is taken out
/// of the queue instead, and its transfer id returned, so that the caller
/// can release its hold on the buffer; `iov` is then left incomplete.
fn gather(conn: &mut Conn, c: usize, peers: &[Peer], iov: &mut Vec<RawIov>) -> Vec<u64> {
    let mut skip = conn.tx_off;
    let mut i = 0;
    while i < conn.tx.len() && iov.len() < MAX_IOV {
        match &conn.tx[i] {
            TxItem::Own(b) => iov.push(sys::iov(b[skip..].as_ptr(), b.len() - skip)),
            TxItem::Am(b) => iov.push(sys::iov(b[skip..].as_ptr(), b.len() - skip)),
            TxItem::Frag { head, xid, off, len, .. } => {
                let p = conn.peer.expect("fragments only on established connections") as usize;
                let b = peers[p].bulk_out.iter().find(|b| b.xid == *xid);
                if skip == 0 && !b.is_some_and(|b| b.wanted_on(*off, c)) {
                    // Dropped unless half written (the stream must stay whole).
                    let xid = *xid;
                    conn.tx_bytes -= conn.tx[i].len();
                    conn.tx.remove(i);
                    conn.frag_queued = false;
                    return vec![xid];
                }
                let b = b.expect("a transfer with a queued copy stays until the copy is written");
                if skip < head.len() {
                    iov.push(sys::iov(head[skip..].as_ptr(), head.len() - skip));
                }
                let data_skip = skip.saturating_sub(head.len()) as u64;
                let room = MAX_IOV - iov.len().min(MAX_IOV);
                b.src.iovecs(off + data_skip, *len as u64 - data_skip, iov, room.max(1));
                return Vec::new();
            }
        }
        skip = 0;
        i += 1;
    }
    Vec::new()
}

/// Delivers (or holds, or drops) an active message from `p`.
#[allow(clippy::too_many_arguments)]
fn deliver_am(
    peer: &mut Peer,
    owed: &mut Vec<u32>,
    pending: &mut VecDeque<Queued>,
    p: u32,
    handler: u8,
    seq: u64,
    head: &[u8],
    payload: &[u8],
    on: &mut dyn FnMut(Event<'_>),
    n: &mut usize,
) -> Result<(), String> {
    if seq < peer.am_delivered || peer.reorder.contains_key(&seq) {
        return Ok(()); // a copy sent again after a rail failed
    }
    if seq > peer.am_delivered {
        if seq - peer.am_delivered > REORDER_WINDOW {
            return Err(format!("protocol error: message {seq} far ahead of {}", peer.am_delivered));
        }
        peer.reorder_bytes += head.len() + payload.len();
        if peer.reorder_bytes > REORDER_BYTES {
            return Err("protocol error: too many bytes of early messages".into());
        }
        peer.reorder.insert(seq, Stashed { handler, head: head.to_vec(), payload: payload.to_vec() });
        return Ok(());
    }
    *n += drain(pending, on);
    on(Event::Am { src: p, handler, head, payload });
    *n += 1;
    peer.am_delivered += 1;
    while let Some(s) = peer.reorder.remove(&peer.am_delivered) {
        peer.reorder_bytes -= s.head.len() + s.payload.len();
        on(Event::Am { src: p, handler: s.handler, head: &s.head, payload: &s.payload });
        *n += 1;
        peer.am_delivered += 1;
    }
    if peer.ack_due.is_none() {
        peer.ack_due = Some(Instant::now() + ACK_DELAY);
        owed.push(p);
    }
    Ok(())
}

/// Where a fragment body goes: its registration's memory, if the
/// registration is still the one this body's transfer is bound to and not
/// cancelled. A copy on another rail may have completed the transfer (and
/// the token may even be registered again for a new one) while this copy
/// was being read: then the rest of it is dropped.
fn body_dst<'a>(peer: &'a Peer, body: &Body) -> Option<&'a Pieces> {
    if body.discard {
        return None;
    }
    peer.bulk_in.get(&body.token).filter(|b| b.xid == Some(body.xid) && !b.discard).map(|b| &b.dst)
}

/// Checks a fragment header against the registrations; returns how to read its body.
fn accept_frag(peer: &mut Peer, h: &FragHead) -> Result<Body, String> {
    let mut body = Body { xid: h.xid, token: h.token, off: h.offset, len: h.len, done: 0, discard: false };
    if peer.xid_done.contains(h.xid) {
        body.discard = true; // a late copy of a finished transfer
        return Ok(body);
    }
    let Some(b) = peer.bulk_in.get_mut(&h.token) else {
        return Err(format!("protocol error: a fragment for token {} that no transfer expects", h.token));
    };
    match b.xid {
        Some(x) if x != h.xid => {
            return Err(format!("protocol error: token {} belongs to transfer {x}, not {}", h.token, h.xid));
        }
        _ => b.xid = Some(h.xid),
    }
    match b.total {
        Some(t) if t != h.total => return Err(format!("protocol error: transfer {} changed its size from {t} to {}", h.xid, h.total)),
        Some(_) => {}
        None if !b.discard && h.total > b.dst.total => {
            return Err(format!("protocol error: a {}-byte message for a {}-byte destination (token {})", h.total, b.dst.total, h.token));
        }
        None => b.total = Some(h.total),
    }
    body.discard = b.discard;
    Ok(body)
}

/// Handles an ACK from `p`.
fn on_ack(peer: &mut Peer, pending: &mut VecDeque<Queued>, p: u32, delivered: u64, frags: impl Iterator<Item = (u64, u64)>) -> Result<(), String> {
    if delivered > peer.am_next {
        return Err(format!("protocol error: {delivered} messages acknowledged, {} sent", peer.am_next));
    }
    while peer.am_out.front().is_some_and(|a| a.seq < delivered) {
        peer.am_out.pop_front();
    }
    for (xid, off) in frags {
        let Some(i) = peer.bulk_out.iter().position(|b| b.xid == xid) else {
            if xid >= peer.xid_next {
                return Err(format!("protocol error: acknowledgement for transfer {xid}, never started"));
            }
            continue; // finished already: a duplicate's acknowledgement
        };
        let b = &mut peer.bulk_out[i];
        if b.ack(off) == AckOutcome::Bogus {
            return Err(format!("protocol error: acknowledgement for offset {off} of transfer {xid}, never sent"));
        }
        if b.finished() {
            let b = peer.bulk_out.remove(i).expect("index valid");
            if !b.internal {
                pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token: b.token }));
            }
        }
    }
    Ok(())
}

impl Drop for NetNode {
    /// Leaves each established connection in order: BYE (so that the peer
    /// reports a departure rather than a failure, and closes its end), a
    /// FIN behind everything written, then the peer's bytes read away until
    /// it closes, for at most [`CLOSE_WAIT`].
    ///
    /// A TCP socket closed with unread bytes, or one that receives bytes
    /// after it was closed, resets the connection and drops what was written
    /// to it but not yet sent: the last acknowledgements of a transfer that
    /// just finished here could be lost, and the sender, still waiting for
    /// them, would see the reset and fail (seen in CI: `t_early` across 4
    /// hosts on 2 rails failed with "Connection reset by peer" on the
    /// sending rank). The peer closes on BYE, after it has read all that
    /// came before it, so waiting for its end of the stream leaves nothing
    /// unread on either side.
    fn drop(&mut self) {
        let mut b = Vec::new();
        wire::encode(&Frame::Bye, &mut b);
        let mut open: Vec<BorrowedFd<'_>> = Vec::new();
        for conn in self.conns.iter().flatten() {
            if !conn.is_up() {
                continue;
            }
            if conn.tx.is_empty() {
                // SAFETY: the iovec points into `b`, alive for the call.
                let _ = unsafe { sys::send_vectored(conn.fd(), &[sys::iov(b.as_ptr(), b.len())]) };
            }
            if sys::shutdown_write(conn.fd()).is_ok() {
                open.push(conn.fd());
            }
        }
        let deadline = Instant::now() + CLOSE_WAIT;
        let mut sink = vec![0u8; 64 << 10];
        while !open.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || sys::poll_readable(&open, left).is_err() {
                break;
            }
            open.retain(|&fd| loop {
                match sys::read(fd, &mut sink) {
                    Ok(n) if n > 0 => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
                    // End of stream or an error: nothing more will come.
                    _ => break false,
                }
            });
        }
    }
}

/// How long a leaving node waits for its peers to close their ends (see
/// `Drop for NetNode`): long enough for a helper thread asleep on the
/// socket to wake and answer; a peer that computes without calling goal
/// is not waited for longer.
const CLOSE_WAIT: Duration = Duration::from_millis(200);

/// Writes a line to stderr in one write: the ranks of a job share the
/// launcher's stderr, and `eprintln!` writes a line in pieces that another
/// rank's line can come between.
fn warn(line: std::fmt::Arguments) {
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), format!("{line}\n").as_bytes());
}

#[cfg(test)]
mod tests {
    #[test]
    fn node_is_send() {
        fn send<T: Send>() {}
        send::<super::NetNode>();
    }
}
