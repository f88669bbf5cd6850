//! Sending: the caller's side of the API ([`NetNode::send_am`],
//! [`NetNode::expect_bulk`], [`NetNode::send_bulk`], [`NetNode::cancel_expect`])
//! and the choice of the connection a message goes on. These are the calls
//! the engine makes; each checks its arguments, queues, and never blocks.

use super::{err, NetNode};
use crate::bulk::{Pieces, INTERNAL_TOKEN};
use crate::config::AmRails;
use crate::conn::TxItem;
use crate::sys;
use crate::wire;
use std::io;
use std::sync::Arc;
use std::time::Instant;


impl NetNode {
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
    pub(super) fn pick_conn(&mut self, p: usize) -> Option<usize> {
        let policy = self.cfg.am_rails;
        let peer = &self.peers[p];
        let n = peer.up.len();
        if n <= 1 {
            // (One rail, or none: no choice to make; `rr` is left as it is.)
            return peer.up.first().copied();
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
        let seq = self.peers[p].rel.next_seq();
        let sole = self.peers[p].sole();
        let c = self.pick_conn(p).expect("usable peers have a connection");
        // Over a sole rail nothing is kept for sending again: the frame goes
        // in a buffer of the connection's, given back once written, with no
        // allocation.
        let mut frame = if sole { self.conn(c).spare.pop().unwrap_or_default() } else { Vec::new() };
        frame.clear();
        wire::am(&mut frame, handler, seq, head, payload, sole);
        if sole && self.conn(c).tx.is_empty() && !self.peers[p].rel.bulk_out.iter().any(|b| b.has_work()) {
            return self.send_now(c, frame);
        }
        let item = if sole {
            TxItem::Sole(frame)
        } else {
            let frame = Arc::new(frame);
            self.peers[p].rel.keep(seq, frame.clone(), c);
            TxItem::Am(frame)
        };
        let conn = self.conn(c);
        conn.push(item);
        if conn.tx.len() == 1 {
            self.flush(c);
        }
        Ok(())
    }

    /// Writes a sole rail's message on connection `c`, whose queue is
    /// empty, straight from `frame`: no queue entry and no gathering of
    /// vectors when the kernel takes it whole (almost always, for a small
    /// message). Whatever it does not take is queued as usual.
    ///
    /// Counted with callgrind (rank 0 of a 2-rank `MPI_Barrier` across two
    /// emulated hosts, served by libgoal-mpi): its `GOAL_Run`, which sends
    /// the barrier's message, took 1,682 instructions through the queue
    /// and takes 1,278 this way.
    fn send_now(&mut self, c: usize, frame: Vec<u8>) -> io::Result<()> {
        let conn = self.conn(c);
        let wrote = match sys::send(conn.fd(), &frame) {
            Ok(n) if n == frame.len() => {
                conn.last_send = Instant::now();
                conn.counters.bytes_out += n as u64;
                conn.sole_written(frame);
                return Ok(());
            }
            Ok(n) => n,
            // The queue's path writes again, and reports a dead connection.
            Err(_) => 0,
        };
        conn.push(TxItem::Sole(frame));
        if wrote > 0 {
            self.advance(c, wrote);
        }
        self.flush(c);
        Ok(())
    }

    /// Registers where the bytes of the transfer `token` from `peer` land.
    /// Call it before telling the sender to go (the executor's CTS). The
    /// message may be shorter than the destination; a longer one closes the
    /// connection. [`Event::BulkDone`](crate::Event::BulkDone) reports completion.
    ///
    /// # Safety
    /// Every `(ptr, len)` must stay valid for writes, and not be read or
    /// written by anyone else, until `BulkDone` or `PeerLost` for this peer
    /// is delivered, or [`cancel_expect`](Self::cancel_expect) succeeds.
    pub unsafe fn expect_bulk(&mut self, peer: u32, token: u64, dst: Vec<(*mut u8, usize)>) -> io::Result<()> {
        self.expect_inner(peer, token, dst, false)
    }

    pub(super) fn expect_inner(&mut self, peer: u32, token: u64, dst: Vec<(*mut u8, usize)>, internal: bool) -> io::Result<()> {
        self.usable(peer)?;
        if !internal && token >= INTERNAL_TOKEN {
            return Err(err(io::ErrorKind::InvalidInput, format!("goal-net: token {token:#x} is reserved")));
        }
        if !self.peers[peer as usize].rel.expect(token, Pieces::new(dst), internal) {
            return Err(err(io::ErrorKind::AlreadyExists, format!("goal-net: token {token} from rank {peer} is already expected")));
        }
        Ok(())
    }

    /// Withdraws a registration: its memory is free when this returns. Bytes
    /// of the transfer that still arrive are read and dropped, and no
    /// `BulkDone` is reported. Returns false if `token` was not expected.
    pub fn cancel_expect(&mut self, peer: u32, token: u64) -> bool {
        let Some(p) = self.peers.get_mut(peer as usize) else { return false };
        let Some(b) = p.rel.bulk_in.get_mut(&token) else { return false };
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
    /// written straight from `src` (no copy). [`Event::BulkSent`](crate::Event::BulkSent) reports
    /// when every fragment is acknowledged.
    ///
    /// # Safety
    /// Every `(ptr, len)` must stay valid for reads, and unmodified, until
    /// `BulkSent` or `PeerLost` for this peer is delivered.
    pub unsafe fn send_bulk(&mut self, peer: u32, token: u64, src: Vec<(*const u8, usize)>) -> io::Result<()> {
        self.send_bulk_inner(peer, token, src, false)
    }

    pub(super) fn send_bulk_inner(&mut self, peer: u32, token: u64, src: Vec<(*const u8, usize)>, internal: bool) -> io::Result<()> {
        self.usable(peer)?;
        let pieces = Pieces::new(src.into_iter().map(|(p, l)| (p as *mut u8, l)));
        if pieces.total > (1u64 << 62) {
            return Err(err(io::ErrorKind::InvalidInput, "goal-net: transfer too large".into()));
        }
        self.peers[peer as usize].rel.start_bulk(token, pieces, internal);
        for c in self.peers[peer as usize].up.clone() {
            if !self.conn(c).frag_queued {
                self.flush(c);
            }
        }
        Ok(())
    }
}
