//! Writing: the send queue of each connection gathered into one
//! `sendmsg`, bulk fragments pulled onto a rail as it has room, and the
//! acknowledgements this node owes (of fragments, per connection; of active
//! messages, cumulative and delayed). The one place that writes from the
//! caller's buffers, so the lifetime rule of `send_bulk` is kept here (a
//! transfer is not finished while a copy of one of its fragments is
//! queued).

use super::{NetNode, Peer, ACK_EVERY, MAX_IOV};
use crate::conn::{Conn, TxItem};
use crate::event::{Event, Queued};
use crate::sys::{self, RawIov};
use crate::wire::{self, FragHead};
use std::io;
use std::time::Instant;


impl NetNode {
    /// Writes what connection `c` has queued until the socket is full or the
    /// queue is empty, pulling bulk fragments as it goes.
    pub(super) fn flush(&mut self, c: usize) {
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
    pub(super) fn advance(&mut self, c: usize, mut n: usize) {
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
                TxItem::Frag { xid, off, len, started, stalled, .. } => {
                    conn.frag_queued = false;
                    conn.counters.frags_out += 1;
                    if stalled {
                        let dt = now.duration_since(started.unwrap_or(now)).as_secs_f64();
                        if dt > 0.0 {
                            let sample = len as f64 / dt;
                            conn.rate = if conn.rate == 0.0 { sample } else { 0.75 * conn.rate + 0.25 * sample };
                        }
                    }
                    finished_frags.push((xid, off));
                }
                TxItem::Am(_) => conn.counters.ams_out += 1,
                TxItem::Sole(b) => conn.sole_written(b),
                TxItem::Own(_) => {}
            }
        }
        let p = conn.peer;
        if let Some(p) = p {
            // A sole rail's fragments went out flagged UNACKED (`pull_fragment`).
            let unacked = self.peers[p as usize].sole();
            for (xid, off) in finished_frags {
                if unacked {
                    if let Some(token) = self.peers[p as usize].rel.unacked_written(xid, off) {
                        self.pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token }));
                    }
                } else {
                    self.writer_done(p, xid);
                }
            }
        }
    }

    /// A queued copy of a fragment of `xid` is no longer being written.
    fn writer_done(&mut self, p: u32, xid: u64) {
        if let Some(token) = self.peers[p as usize].rel.writer_done(xid) {
            self.pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token }));
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
        if !self.peers[p].rel.bulk_out.iter().any(|b| b.has_work()) {
            return;
        }
        // This rail's share, by measured throughput (equal shares until
        // every rail has a measurement).
        let rates: Vec<f64> = self.peers[p].up.iter().map(|&u| self.conns[u].as_ref().map_or(0.0, |x| x.rate)).collect();
        let mine = conn.rate;
        let share = if rates.iter().all(|&r| r > 0.0) { mine / rates.iter().sum::<f64>() } else { 1.0 / rates.len().max(1) as f64 };
        let (frag, min_frag) = (self.cfg.frag_size as u64, self.cfg.min_frag as u64);
        let total = self.peers[p].rel.bulk_out.iter().find(|b| b.has_work()).map_or(0, |b| b.src.total);
        // A medium message (a fragment or less per rail) is cut once into
        // shares of the whole, and a rail that still has a fragment of it in
        // flight leaves the next to an idle rail: the kernel takes such a
        // message into one socket at once (the rate limit sits below TCP),
        // so pulling "when the socket has room" put all of a 64 KiB message
        // on one rail (3 rails of 1 Gbit/s: 280 us, now 93 us). A large one
        // is cut as the rails drain, each taking its share of what is left,
        // so that they finish together.
        let medium = total <= frag * self.peers[p].up.len() as u64;
        let busy = |u: usize| self.peers[p].rel.bulk_out.iter().any(|b| b.inflight.values().any(|&(_, k)| k == u));
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
        let unacked = peer.sole();
        let Some(b) = peer.rel.bulk_out.iter_mut().find(|b| b.has_work()) else { return };
        let Some((off, len)) = b.pull(c, len_for) else { return };
        let head = wire::frag_header(&FragHead { xid: b.xid, token: b.token, offset: off, total: b.src.total, len, unacked });
        let xid = b.xid;
        self.conn(c).push(TxItem::Frag { head, xid, off, len, started: None, stalled: false });
    }

    /// Queues an ACK carrying the fragments received on `c` (and the
    /// peer's delivered count).
    pub(super) fn send_frag_acks(&mut self, c: usize) {
        let conn = self.conn(c);
        if conn.frag_acks.is_empty() || !conn.is_up() {
            return;
        }
        let p = conn.peer.expect("established") as usize;
        let acks = std::mem::take(&mut conn.frag_acks);
        let delivered = self.peers[p].rel.ack_sent();
        for chunk in acks.chunks(wire::MAX_ACK_ENTRIES) {
            let mut b = Vec::new();
            wire::ack(&mut b, delivered, chunk);
            self.conn(c).push(TxItem::Own(b));
        }
        self.peers[p].ack_due = None;
        self.flush(c);
    }

    /// Cumulative acknowledgements of active messages that are due.
    pub(super) fn send_due_acks(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.owed.len() {
            let p = self.owed[i] as usize;
            let peer = &self.peers[p];
            let owed = peer.rel.acks_owed();
            if owed == 0 || peer.up.is_empty() {
                self.peers[p].ack_due = None;
                self.owed.swap_remove(i);
                continue;
            }
            if owed >= ACK_EVERY || (peer.ack_due.is_some_and(|t| t <= now) && !self.body_coming(p)) {
                self.send_am_ack(p);
                self.owed.swap_remove(i);
                continue;
            }
            i += 1;
        }
    }

    /// Whether a fragment body from `p` that wants acknowledging is being
    /// read: its acknowledgement
    /// (`send_frag_acks`) carries the count of delivered messages too, so
    /// a cumulative acknowledgement that falls due meanwhile waits for it.
    /// A body of 512 KiB at 1 Gbit/s takes 4 ms, past [`ACK_DELAY`](super::ACK_DELAY): the
    /// timer woke both ranks of a 2-rank allreduce once per step to send
    /// 16 bytes that the fragment's acknowledgement sent again soon after.
    /// A connection that dies mid-body takes its body with it, and the
    /// acknowledgement then goes out at once.
    pub(super) fn body_coming(&self, p: usize) -> bool {
        self.peers[p].up.iter().any(|&u| self.conns[u].as_ref().is_some_and(|c| c.body.is_some_and(|b| !b.unacked)))
    }

    pub(super) fn send_am_ack(&mut self, p: usize) {
        let Some(c) = self.least_queued(p) else { return };
        let delivered = self.peers[p].rel.ack_sent();
        let mut b = Vec::new();
        wire::ack(&mut b, delivered, &[]);
        self.conn(c).push(TxItem::Own(b));
        self.peers[p].ack_due = None;
        if self.conn(c).tx.len() == 1 {
            self.flush(c);
        }
    }

    fn least_queued(&self, p: usize) -> Option<usize> {
        self.peers[p].up.iter().copied().min_by_key(|&u| self.conns[u].as_ref().map_or(usize::MAX, |x| x.tx_bytes))
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
            TxItem::Sole(b) => iov.push(sys::iov(b[skip..].as_ptr(), b.len() - skip)),
            TxItem::Frag { head, xid, off, len, .. } => {
                let p = conn.peer.expect("fragments only on established connections") as usize;
                let b = peers[p].rel.bulk_out.iter().find(|b| b.xid == *xid);
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
