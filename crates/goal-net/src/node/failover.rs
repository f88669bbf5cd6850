//! Failover: what happens when a connection dies. Its unacknowledged
//! messages and fragments move to the peer's other connections; with none
//! left the peer is lost and everything about it is dropped. In one file
//! because the order of those steps is what keeps delivery exactly-once.

use super::{NetNode, RETRY_CONNECT};
use crate::conn::TxItem;
use crate::event::{Event, Queued};
use crate::sys::{self, ev};
use std::time::Instant;


impl NetNode {
    /// Connection `c` failed: report it, move its unacknowledged traffic to
    /// the peer's other connections, and lose the peer if none is left.
    pub(super) fn fail_conn(&mut self, c: usize, why: String) {
        self.close_conn(c, Some(why));
    }

    /// Closes connection `c`. `why`: `None` for a deliberate close (BYE,
    /// refusal), which reports no lost rail.
    pub(super) fn close_conn(&mut self, c: usize, why: Option<String>) {
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
        self.set_queue_limits(p as usize);
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
        for b in peer.rel.bulk_out.iter_mut() {
            b.conn_lost(c);
        }
        self.finish_bulks(p);
        let peer = &mut self.peers[p as usize];
        if peer.up.is_empty() {
            let orderly = why.is_none();
            let why = match why {
                Some(w) => format!("no rail left to rank {p}: the last one ({rail}, to {}) failed: {w}", conn.remote),
                None => format!("rank {p} closed its connections (it finished or shut down)"),
            };
            return self.lose_peer(p, why, orderly);
        }
        // Messages this connection carried and the peer did not acknowledge
        // go again, in order, on the others; the receiver drops duplicates.
        let moved: Vec<usize> = (0..peer.rel.am_out.len()).filter(|&i| peer.rel.am_out[i].conn == c).collect();
        for i in moved {
            let Some(to) = self.pick_conn(p as usize) else { break };
            let peer = &mut self.peers[p as usize];
            peer.rel.am_out[i].conn = to;
            let frame = peer.rel.am_out[i].frame.clone();
            self.conn(to).push(TxItem::Am(frame));
        }
        // Our acknowledgements that went on it may be lost: repeat them.
        if self.peers[p as usize].rel.am_delivered > 0 {
            self.send_am_ack(p as usize);
        }
        for u in self.peers[p as usize].up.clone() {
            self.flush(u);
        }
    }

    fn writer_done_quiet(&mut self, p: u32, xid: u64) {
        if let Some(b) = self.peers[p as usize].rel.bulk_out.iter_mut().find(|b| b.xid == xid) {
            b.writers -= 1;
        }
    }

    /// Reports the transfers to `p` that are finished.
    fn finish_bulks(&mut self, p: u32) {
        let NetNode { peers, pending, .. } = self;
        peers[p as usize].rel.finish_bulks(|token| pending.push_back(Queued::Ev(Event::BulkSent { dst: p, token })));
    }

    /// No connection to `p` is left: drop everything about it and say so.
    fn lose_peer(&mut self, p: u32, why: String, orderly: bool) {
        let peer = &mut self.peers[p as usize];
        if peer.lost.is_some() {
            return;
        }
        peer.lost = Some(why.clone());
        peer.rel.clear();
        peer.ack_due = None;
        peer.probe = Default::default();
        let trying: Vec<usize> = peer.pairs.iter().filter_map(|x| x.trying).collect();
        for c in trying {
            self.close_conn(c, None);
        }
        self.pending.push_back(Queued::Ev(Event::PeerLost { peer: p, why, orderly }));
    }
}
