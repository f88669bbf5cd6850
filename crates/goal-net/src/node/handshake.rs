//! The handshake on each new connection (CHALLENGE, HELLO, WELCOME or
//! REJECT; see the crate doc): accepting, proving the job secret both ways,
//! refusing strangers. Kept apart because it is the security boundary:
//! nothing past it runs for a connection that has not passed it.

use super::{warn, NetNode, MAX_HANDSHAKES};
use crate::conn::{Conn, Phase, TxItem};
use crate::sys;
use crate::wire::{self, Challenge, Frame, Hello};
use std::os::fd::AsFd;
use std::time::Instant;


impl NetNode {
    pub(super) fn accept_all(&mut self, r: usize) {
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

    pub(super) fn connect_finished(&mut self, c: usize) {
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
    pub(super) fn refuse(&mut self, c: usize, why: &str) {
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

    pub(super) fn on_hello(&mut self, c: usize, challenge: Challenge, h: Hello) {
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

    pub(super) fn on_challenge(&mut self, c: usize, ch: Challenge) {
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

    pub(super) fn on_welcome(&mut self, c: usize, ch: Challenge, h: Hello, mac: [u8; 32]) {
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
        self.set_queue_limits(p);
        self.update_interest(c);
    }
}
