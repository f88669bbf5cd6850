//! Connecting: planning one connection per (peer, rail pair) from the
//! address blobs, starting (and retrying) the connects that are ours, and
//! waiting in [`NetNode::connect`] until every connection is authenticated.
//! Split from the node because it runs once, before any traffic.

use super::{err, NetNode, Pair, RETRY_CONNECT};
use crate::conn::{Conn, Phase};
use crate::rails::{pair_rails, Blob};
use crate::sys;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};


impl NetNode {
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

    pub(super) fn handshake_timeout(&self) -> Duration {
        self.cfg.connect_timeout.min(Duration::from_secs(10))
    }

    /// The socket options every data connection gets.
    pub(super) fn tune_socket(&self, s: &OwnedFd) -> io::Result<()> {
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
        if let Some(cc) = &self.cfg.congestion {
            sys::set_congestion(fd, cc)?;
        }
        Ok(())
    }

    /// Sets how much each connection to `p` may hold unsent in the kernel
    /// (`TCP_NOTSENT_LOWAT`), whenever its connections come or go: the
    /// configured `notsent_lowat` while several share the peer's traffic,
    /// so that fragments go to the rail that drains first; two fragments'
    /// worth over a sole connection, which has no rail to share with.
    ///
    /// Why: a fragment (512 KiB) is larger than the shared limit (256 KiB),
    /// so the kernel took each one in two or more writes, the sender waking
    /// for the socket's writability in between, while the pipe drained.
    /// Between two emulated hosts over one unlimited veth (1 rank each,
    /// bound by the CPUs), 32 MiB one way took 11-25 ms with the shared
    /// limit, 6.7-7.5 ms with this one, plain TCP 15-25 ms; 1 MiB one way
    /// 346-406 us, now 207-226 us.
    ///
    /// A failure only costs pace, and the socket's next use reports a dead
    /// connection anyway: it is not an error here.
    pub(super) fn set_queue_limits(&mut self, p: usize) {
        let up = &self.peers[p].up;
        let lowat = if up.len() > 1 { self.cfg.notsent_lowat } else { self.cfg.notsent_lowat.max(2 * self.cfg.frag_size) };
        for &c in up {
            if let Some(conn) = self.conns[c].as_ref() {
                let _ = sys::set_int_opt(conn.fd(), libc::IPPROTO_TCP, libc::TCP_NOTSENT_LOWAT, lowat.min(i32::MAX as usize) as i32);
            }
        }
    }
}
