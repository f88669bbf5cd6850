//! The node: every connection of one rank, the handshake, the progress loop,
//! and what happens when a rail fails.
//!
//! This file holds [`NetNode`] itself (its fields, construction with
//! [`NetNode::bind`], the small public queries, and the orderly close in
//! `Drop`) and the per-peer connection plan. The work is split by stage,
//! each an `impl NetNode` block of its own, so that one stage can be read
//! without the others:
//!
//! * `connect`: planning the connections and waiting for them;
//! * `handshake`: authenticating each one;
//! * `progress`: `poll`, the timer and the periodic checks;
//! * `read` and `write`: moving frames and fragments through the sockets;
//! * `send`: the caller's side, messages and bulk transfers;
//! * `failover`: a connection or a peer that dies;
//! * `calibrate`: the eager/rendezvous measurement on a live connection.
//!
//! What a message or an acknowledgement *means* (sequence numbers, the
//! reorder buffer, which transfer a fragment belongs to) is decided in
//! [`crate::reliable`], which touches no socket; this module moves bytes
//! and keeps time.
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

mod calibrate;
mod connect;
mod failover;
mod handshake;
mod progress;
mod read;
mod send;
mod write;

use crate::config::NetConfig;
use crate::conn::{Conn, ConnCounters, Phase};
use crate::event::Queued;
use crate::probe::ProbePeer;
use crate::rails::{Blob, RemoteRail};
use crate::reliable::Reliability;
use crate::sys::{self, ev, Epoll, Timer};
use crate::wire::{self, Frame, Limits};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

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
/// At most this many connections may be in their handshake at once.
const MAX_HANDSHAKES: usize = 64;
/// Reads per connection per poll (bounds one poll's time).
const READS_PER_POLL: usize = 16;
/// Iovecs per `sendmsg`/`readv`.
const MAX_IOV: usize = 64;
/// Delay before retrying a refused connect.
const RETRY_CONNECT: Duration = Duration::from_millis(100);

/// A planned connection between one of our rails and one of the peer's.
struct Pair {
    my_rail: usize,
    their_rail: usize,
    /// We connect (lower rank); else we accept.
    i_connect: bool,
    /// The peer rail's listening address.
    addr: SocketAddr,
    /// The peer rail's name.
    their_name: String,
    /// The established connection.
    conn: Option<usize>,
    /// A connection in its handshake.
    trying: Option<usize>,
    /// When to try connecting again.
    retry_at: Option<Instant>,
    /// Why the last attempt failed.
    error: Option<String>,
    /// It was up and failed: never again.
    dead: bool,
}

/// Everything about one peer.
#[derive(Default)]
struct Peer {
    remote: bool,
    pairs: Vec<Pair>,
    /// Established connections, in pair order.
    up: Vec<usize>,
    /// Why it is lost, once it is.
    lost: Option<String>,
    /// Index into `up` of the connection used last for a message.
    rr: usize,
    /// Sequence numbers, held messages, unacknowledged traffic.
    rel: Reliability,
    /// When the acknowledgement of delivered messages is due.
    ack_due: Option<Instant>,
    /// Calibration state.
    probe: ProbePeer,
}

impl Peer {
    /// Reached over a single rail: a connection that dies loses the peer,
    /// so nothing sent to it could ever go again on another. What is sent
    /// to it is kept only until written, and flagged
    /// ([`FLAG_UNACKED`](crate::wire::FLAG_UNACKED)) so that it owes no
    /// acknowledgement: no acknowledgement wakes a sender that sleeps
    /// (2 emulated hosts, 1 MiB Iallreduce: one wake per step and rank
    /// fewer, see `docs/design.md`).
    fn sole(&self) -> bool {
        self.pairs.len() == 1
    }
}

/// goal-net's endpoint for one rank: listening sockets, connections to every
/// remote peer over every rail, and the transfers in progress.
///
/// Used by one thread at a time (it is `Send`, not `Sync`); the executor
/// keeps it behind its engine lock, beside the shared-memory node.
pub struct NetNode {
    cfg: NetConfig,
    lim: Limits,
    listeners: Vec<OwnedFd>,
    listen_addrs: Vec<SocketAddr>,
    epoll: Epoll,
    timer: Timer,
    timer_armed: Option<Instant>,
    conns: Vec<Option<Conn>>,
    free: Vec<usize>,
    peers: Vec<Peer>,
    pending: VecDeque<Queued>,
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
            // Accepted connections inherit the listener's congestion control
            // from their start. Set on them afterwards only, they began with
            // the system's, and a paced one (BBR) left them paced: the
            // accepting rank of a 1 MiB allreduce across 2 emulated hosts then
            // lost 1.85-1.94 ms of its computation, against 1.17-1.46 ms on
            // the rank that connected.
            if let Some(cc) = &cfg.congestion {
                sys::set_congestion(s.as_fd(), cc).map_err(|e| cfg.congestion_refused(cc, &e))?;
            }
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
        let (held, first_held) = p.rel.held();
        let mut out = format!(
            "rank {peer}: {} rail(s) up; messages: next seq {}, {} unacknowledged, {} delivered, {} held for order{}",
            p.up.len(),
            p.rel.am_next,
            p.rel.am_out.len(),
            p.rel.am_delivered,
            held,
            first_held.map_or(String::new(), |k| format!(" (first seq {k})"))
        );
        if let Some(why) = &p.lost {
            let _ = write!(out, "; lost: {why}");
        }
        for b in &p.rel.bulk_out {
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
        for (token, b) in &p.rel.bulk_in {
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


    fn insert_conn(&mut self, conn: Conn) -> usize {
        if let Some(c) = self.free.pop() {
            self.conns[c] = Some(conn);
            c
        } else {
            self.conns.push(Some(conn));
            self.conns.len() - 1
        }
    }

    #[inline]
    pub(super) fn conn(&mut self, c: usize) -> &mut Conn {
        self.conns[c].as_mut().expect("a live connection")
    }

    #[inline]
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

    /// Test hook: the unsent bytes the kernel may hold on our connection to
    /// `peer` on our rail `rail` (`TCP_NOTSENT_LOWAT`), if there is one.
    #[doc(hidden)]
    pub fn test_notsent_lowat(&self, peer: u32, rail: usize) -> Option<usize> {
        let conn = self.test_conn(peer, rail)?;
        sys::get_int_opt(conn.fd(), libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT).ok().map(|v| v as usize)
    }

    /// Our connection up to `peer` on our rail `rail`, for the test hooks.
    fn test_conn(&self, peer: u32, rail: usize) -> Option<&Conn> {
        self.conns.iter().flatten().find(|c| c.is_up() && c.peer == Some(peer) && c.rail == rail)
    }

    /// Test hook: the TCP congestion control of our connection to `peer` on
    /// our rail `rail`, if there is one.
    #[doc(hidden)]
    pub fn test_congestion(&self, peer: u32, rail: usize) -> Option<String> {
        sys::congestion(self.test_conn(peer, rail)?.fd()).ok()
    }

    /// Test hook: `shutdown(2)` our connection to `peer` on our rail `rail`,
    /// behind the node's back, as a failing link would; the node finds out
    /// the way it would in production. Returns false if there is no such
    /// connection.
    #[doc(hidden)]
    pub fn test_shutdown_rail(&mut self, peer: u32, rail: usize) -> bool {
        self.test_conn(peer, rail).is_some_and(|c| sys::shutdown(c.fd()).is_ok())
    }
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
