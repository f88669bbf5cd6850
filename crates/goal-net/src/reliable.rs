//! What goal-net keeps per peer to make delivery reliable across rails:
//! sequence numbers, the reorder buffer, and acknowledgements, for active
//! messages and for bulk transfers alike.
//!
//! TCP orders and repeats bytes within one connection; it cannot survive
//! its link. Above it, each ordered pair of ranks numbers its active
//! messages from 0, and the receiver delivers them in that order whatever
//! rail each one came on, holding early arrivals and dropping copies it has
//! already delivered. The sender keeps each message until a cumulative
//! acknowledgement covers it, so that a dead connection's messages can go
//! again on another. Bulk transfers are numbered too (`xid`); their
//! fragments are acknowledged one by one, and a receiver remembers the
//! transfers it finished so that a late copy is dropped. To a peer reached
//! over a single rail there is no other connection to send again on: such
//! traffic is flagged unacknowledged ([`FLAG_UNACKED`](crate::wire::FLAG_UNACKED)),
//! the sender keeps it only until written, and the receiver owes nothing.
//!
//! Like [`wire`](crate::wire) this module is pure: no sockets, no system
//! calls, no clock. The node decides what goes on which connection and
//! when; this module decides what a message or an acknowledgement means,
//! and refuses (with an error naming what is wrong) what a correct peer
//! never sends. That keeps the rules testable without a network.

use crate::bulk::{AckOutcome, BulkIn, BulkOut, Pieces, XidSet};
use crate::wire::FragHead;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// A sender may not run further ahead of delivery than this many messages.
pub(crate) const REORDER_WINDOW: u64 = 1 << 20;
/// Bytes of early messages a receiver holds per peer before calling it a lie.
pub(crate) const REORDER_BYTES: usize = 1 << 30;

/// An active message kept until the receiver acknowledges it.
pub(crate) struct AmOut {
    /// Its sequence number.
    pub seq: u64,
    /// The encoded frame, as queued (shared with the connection's queue).
    pub frame: Arc<Vec<u8>>,
    /// The connection it went on (the node's index).
    pub conn: usize,
}

/// An active message that arrived before its predecessors.
pub(crate) struct Stashed {
    pub handler: u8,
    pub head: Vec<u8>,
    pub payload: Vec<u8>,
    /// Not to be acknowledged (see [`Reliability::delivered`]).
    pub unacked: bool,
}

/// What to do with an active message that arrived.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// Delivered already (a copy sent again after a rail failed): drop it.
    Duplicate,
    /// Early: kept until its predecessors are delivered.
    Held,
    /// The next in order: deliver it now, then call
    /// [`Reliability::delivered`] and [`Reliability::release`].
    Next,
}

/// How to read the body of a fragment whose header was accepted.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FragFate {
    /// Into the registration's memory.
    Place,
    /// Read and drop: a late copy of a finished transfer, or a cancelled
    /// registration.
    Discard,
}

/// The reliability state of one peer, both directions.
#[derive(Default)]
pub(crate) struct Reliability {
    /// Sender: the sequence number of the next active message.
    pub am_next: u64,
    /// Sender: messages sent and not yet acknowledged, in order.
    pub am_out: VecDeque<AmOut>,
    /// Receiver: how many messages have been delivered (the next expected).
    pub am_delivered: u64,
    /// Receiver: the delivered count last acknowledged.
    am_acked_sent: u64,
    /// Receiver: early messages, by sequence number.
    reorder: BTreeMap<u64, Stashed>,
    /// Receiver: bytes held in `reorder`.
    reorder_bytes: usize,
    /// Sender: the id of the next bulk transfer.
    xid_next: u64,
    /// Sender: transfers in progress, oldest first.
    pub bulk_out: VecDeque<BulkOut>,
    /// Receiver: registrations, by token.
    pub bulk_in: HashMap<u64, BulkIn>,
    /// Receiver: transfers finished.
    xid_done: XidSet,
}

impl Reliability {
    // --- active messages, sender ---

    /// Numbers a new message: returns its sequence number.
    #[inline]
    pub fn next_seq(&mut self) -> u64 {
        let seq = self.am_next;
        self.am_next += 1;
        seq
    }

    /// Keeps message `seq` (sent on `conn`) until it is acknowledged.
    #[inline]
    pub fn keep(&mut self, seq: u64, frame: Arc<Vec<u8>>, conn: usize) {
        self.am_out.push_back(AmOut { seq, frame, conn });
    }

    /// Handles an acknowledgement: `delivered` messages delivered (cumulative),
    /// and the fragments `(xid, offset)` received. Calls `sent(token)` for
    /// each caller transfer that is now finished. Refuses what was never
    /// sent.
    pub fn on_ack(&mut self, delivered: u64, frags: impl Iterator<Item = (u64, u64)>, mut sent: impl FnMut(u64)) -> Result<(), String> {
        if delivered > self.am_next {
            return Err(format!("protocol error: {delivered} messages acknowledged, {} sent", self.am_next));
        }
        while self.am_out.front().is_some_and(|a| a.seq < delivered) {
            self.am_out.pop_front();
        }
        for (xid, off) in frags {
            let Some(i) = self.bulk_out.iter().position(|b| b.xid == xid) else {
                if xid >= self.xid_next {
                    return Err(format!("protocol error: acknowledgement for transfer {xid}, never started"));
                }
                continue; // finished already: a duplicate's acknowledgement
            };
            let b = &mut self.bulk_out[i];
            if b.ack(off) == AckOutcome::Bogus {
                return Err(format!("protocol error: acknowledgement for offset {off} of transfer {xid}, never sent"));
            }
            if b.finished() {
                let b = self.bulk_out.remove(i).expect("index valid");
                if !b.internal {
                    sent(b.token);
                }
            }
        }
        Ok(())
    }

    // --- active messages, receiver ---

    /// Classifies message `seq`; an early one is kept (copied) here. Refuses
    /// one too far ahead, or early messages beyond [`REORDER_BYTES`].
    #[inline]
    pub fn arrive(&mut self, seq: u64, handler: u8, head: &[u8], payload: &[u8], unacked: bool) -> Result<Arrival, String> {
        if seq < self.am_delivered || self.reorder.contains_key(&seq) {
            return Ok(Arrival::Duplicate);
        }
        if seq == self.am_delivered {
            return Ok(Arrival::Next);
        }
        if seq - self.am_delivered > REORDER_WINDOW {
            return Err(format!("protocol error: message {seq} far ahead of {}", self.am_delivered));
        }
        self.reorder_bytes += head.len() + payload.len();
        if self.reorder_bytes > REORDER_BYTES {
            return Err("protocol error: too many bytes of early messages".into());
        }
        self.reorder.insert(seq, Stashed { handler, head: head.to_vec(), payload: payload.to_vec(), unacked });
        Ok(Arrival::Held)
    }

    /// The message [`arrive`](Self::arrive) called `Next` was delivered.
    /// One sent `unacked` (its sender keeps no copy) owes no
    /// acknowledgement: when nothing else is owed, the count moves past it
    /// as if acknowledged; otherwise the acknowledgement that is owed
    /// covers it too, which its sender takes as it takes any count up to
    /// what it sent.
    #[inline]
    pub fn delivered(&mut self, unacked: bool) {
        if unacked && self.am_acked_sent == self.am_delivered {
            self.am_acked_sent += 1;
        }
        self.am_delivered += 1;
    }

    /// The held message that is next in order, if any, counted as delivered.
    #[inline]
    pub fn release(&mut self) -> Option<Stashed> {
        let s = self.reorder.remove(&self.am_delivered)?;
        self.reorder_bytes -= s.head.len() + s.payload.len();
        self.delivered(s.unacked);
        Some(s)
    }

    /// Messages held for order, and the lowest sequence number among them.
    pub fn held(&self) -> (usize, Option<u64>) {
        (self.reorder.len(), self.reorder.keys().next().copied())
    }

    /// Messages delivered since the last acknowledgement.
    #[inline]
    pub fn acks_owed(&self) -> u64 {
        self.am_delivered - self.am_acked_sent
    }

    /// An acknowledgement is going out: returns the delivered count it carries.
    #[inline]
    pub fn ack_sent(&mut self) -> u64 {
        self.am_acked_sent = self.am_delivered;
        self.am_delivered
    }

    // --- bulk transfers, sender ---

    /// Starts a transfer of `src` as `token`; returns its id.
    pub fn start_bulk(&mut self, token: u64, src: Pieces, internal: bool) -> u64 {
        let xid = self.xid_next;
        self.xid_next += 1;
        self.bulk_out.push_back(BulkOut::new(xid, token, src, internal));
        xid
    }

    /// A queued copy of a fragment of `xid` is no longer being written;
    /// returns the caller's token if that finished the transfer.
    pub fn writer_done(&mut self, xid: u64) -> Option<u64> {
        let i = self.bulk_out.iter().position(|b| b.xid == xid)?;
        self.bulk_out[i].writers -= 1;
        if !self.bulk_out[i].finished() {
            return None;
        }
        let b = self.bulk_out.remove(i).expect("index valid");
        (!b.internal).then_some(b.token)
    }

    /// A fragment sent unacknowledged (its receiver acknowledges it to no
    /// one, [`FLAG_UNACKED`](crate::wire::FLAG_UNACKED)) at `off` of `xid`
    /// is written: it counts as acknowledged, and its copy as no longer
    /// being written. Returns the caller's token if that finished the
    /// transfer.
    pub fn unacked_written(&mut self, xid: u64, off: u64) -> Option<u64> {
        let i = self.bulk_out.iter().position(|b| b.xid == xid)?;
        self.bulk_out[i].ack(off);
        self.writer_done(xid)
    }

    /// Removes the finished transfers, calling `sent(token)` for the caller's.
    pub fn finish_bulks(&mut self, mut sent: impl FnMut(u64)) {
        self.bulk_out.retain(|b| {
            let done = b.finished();
            if done && !b.internal {
                sent(b.token);
            }
            !done
        });
    }

    // --- bulk transfers, receiver ---

    /// Registers `dst` for transfer `token`; false if it is registered already.
    pub fn expect(&mut self, token: u64, dst: Pieces, internal: bool) -> bool {
        if self.bulk_in.contains_key(&token) {
            return false;
        }
        self.bulk_in.insert(token, BulkIn::new(dst, internal));
        true
    }

    /// Checks a fragment header against the registrations: how to read its
    /// body, or why the peer is wrong.
    pub fn accept_frag(&mut self, h: &FragHead) -> Result<FragFate, String> {
        if self.xid_done.contains(h.xid) {
            return Ok(FragFate::Discard); // a late copy of a finished transfer
        }
        let Some(b) = self.bulk_in.get_mut(&h.token) else {
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
        Ok(if b.discard { FragFate::Discard } else { FragFate::Place })
    }

    /// Where the body of a fragment of transfer `xid` for `token` goes: its
    /// registration's memory, if the registration is still the one this
    /// transfer is bound to and not cancelled. A copy on another rail may
    /// have completed the transfer (and the token may even be registered
    /// again for a new one) while this copy was being read: then `None`,
    /// and the rest of it is dropped.
    #[inline]
    pub fn body_dst(&self, token: u64, xid: u64) -> Option<&Pieces> {
        self.bulk_in.get(&token).filter(|b| b.xid == Some(xid) && !b.discard).map(|b| &b.dst)
    }

    /// The body `[off, off + len)` of a fragment of `xid` for `token` is in
    /// place. Returns the registration if that completed the transfer (it
    /// is removed, and the transfer remembered as finished).
    pub fn frag_received(&mut self, xid: u64, token: u64, off: u64, len: u32) -> Option<BulkIn> {
        if self.xid_done.contains(xid) {
            return None;
        }
        let b = self.bulk_in.get_mut(&token).filter(|b| b.xid == Some(xid))?;
        b.got_bytes += b.got.insert(off, off + len as u64);
        if Some(b.got_bytes) != b.total {
            return None;
        }
        self.xid_done.insert(xid);
        self.bulk_in.remove(&token)
    }

    /// The peer is lost: forget everything in flight both ways (the
    /// counters stay, so nothing is ever numbered twice).
    pub fn clear(&mut self) {
        self.am_out.clear();
        self.reorder.clear();
        self.reorder_bytes = 0;
        self.bulk_out.clear();
        self.bulk_in.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds message `seq` (its payload is the one byte `seq`) and returns
    /// the payloads delivered because of it, in order.
    fn feed(r: &mut Reliability, seq: u64) -> Result<Vec<u8>, String> {
        let payload = [seq as u8];
        let mut out = Vec::new();
        if r.arrive(seq, 16, b"h", &payload, false)? == Arrival::Next {
            out.push(payload[0]);
            r.delivered(false);
            while let Some(s) = r.release() {
                assert_eq!((s.handler, &s.head[..]), (16, &b"h"[..]));
                out.push(s.payload[0]);
            }
        }
        Ok(out)
    }

    fn frame() -> Arc<Vec<u8>> {
        Arc::new(vec![0; 4])
    }

    #[test]
    fn in_order_messages_are_delivered_at_once() {
        let mut r = Reliability::default();
        for seq in 0..5 {
            assert_eq!(feed(&mut r, seq).unwrap(), vec![seq as u8]);
        }
        assert_eq!(r.am_delivered, 5);
        assert_eq!(r.held(), (0, None));
        assert_eq!(r.acks_owed(), 5);
        assert_eq!(r.ack_sent(), 5);
        assert_eq!(r.acks_owed(), 0);
    }

    #[test]
    fn early_messages_are_held_and_released_in_order() {
        let mut r = Reliability::default();
        assert_eq!(feed(&mut r, 2).unwrap(), vec![]);
        assert_eq!(feed(&mut r, 3).unwrap(), vec![]);
        assert_eq!(feed(&mut r, 5).unwrap(), vec![]);
        assert_eq!(r.held(), (3, Some(2)));
        assert_eq!(feed(&mut r, 0).unwrap(), vec![0]);
        assert_eq!(feed(&mut r, 1).unwrap(), vec![1, 2, 3]);
        assert_eq!(r.held(), (1, Some(5)));
        assert_eq!(r.reorder_bytes, 2, "only message 5 (head and payload) is held");
        assert_eq!(feed(&mut r, 4).unwrap(), vec![4, 5]);
        assert_eq!((r.am_delivered, r.held(), r.reorder_bytes), (6, (0, None), 0));
    }

    #[test]
    fn duplicates_are_dropped() {
        let mut r = Reliability::default();
        feed(&mut r, 0).unwrap();
        feed(&mut r, 2).unwrap();
        // A copy of a delivered message, and of a held one.
        assert_eq!(r.arrive(0, 16, b"h", b"x", false), Ok(Arrival::Duplicate));
        assert_eq!(r.arrive(2, 16, b"h", b"x", false), Ok(Arrival::Duplicate));
        assert_eq!(r.reorder_bytes, 2, "the held copy is not counted twice");
        assert_eq!(feed(&mut r, 1).unwrap(), vec![1, 2]);
        assert_eq!(feed(&mut r, 1).unwrap(), vec![]);
        assert_eq!(r.am_delivered, 3);
    }

    #[test]
    fn unacked_messages_owe_no_acknowledgement_unless_one_is_owed_anyway() {
        let mut r = Reliability::default();
        for seq in 0..3 {
            assert_eq!(r.arrive(seq, 16, b"", b"", true), Ok(Arrival::Next));
            r.delivered(true);
        }
        assert_eq!((r.am_delivered, r.acks_owed()), (3, 0));
        // One that wants acknowledging, then unacked ones: the owed
        // acknowledgement covers them all.
        r.arrive(3, 16, b"", b"", false).unwrap();
        r.delivered(false);
        r.arrive(4, 16, b"", b"", true).unwrap();
        r.delivered(true);
        assert_eq!(r.acks_owed(), 2);
        assert_eq!(r.ack_sent(), 5);
        // Held, then released: the flag travels with the message.
        assert_eq!(r.arrive(6, 16, b"", b"z", true), Ok(Arrival::Held));
        r.arrive(5, 16, b"", b"", true).unwrap();
        r.delivered(true);
        assert!(r.release().is_some_and(|s| s.unacked && s.payload == b"z"));
        assert_eq!((r.am_delivered, r.acks_owed()), (7, 0));
    }

    #[test]
    fn an_unacked_fragment_finishes_its_transfer_once_written() {
        let buf = [7u8; 100];
        let mut r = Reliability::default();
        let xid = r.start_bulk(42, Pieces::new([(buf.as_ptr() as *mut u8, buf.len())]), false);
        let b = &mut r.bulk_out[0];
        assert_eq!(b.pull(0, |_| 60), Some((0, 60)));
        assert_eq!(b.pull(0, |_| 60), Some((60, 40)));
        assert_eq!(r.unacked_written(xid, 0), None);
        assert_eq!(r.unacked_written(xid, 60), Some(42));
        assert!(r.bulk_out.is_empty());
    }

    #[test]
    fn a_message_too_far_ahead_is_refused() {
        let mut r = Reliability::default();
        let e = r.arrive(REORDER_WINDOW + 1, 16, b"", b"", false).unwrap_err();
        assert!(e.contains(&format!("message {} far ahead of 0", REORDER_WINDOW + 1)), "{e}");
        assert_eq!(r.arrive(REORDER_WINDOW, 16, b"", b"", false), Ok(Arrival::Held));
    }

    #[test]
    fn acks_release_the_pending_queue() {
        let mut r = Reliability::default();
        for c in 0..4 {
            let seq = r.next_seq();
            r.keep(seq, frame(), c);
        }
        assert_eq!(r.am_out.len(), 4);
        r.on_ack(2, std::iter::empty(), |_| panic!("no transfer")).unwrap();
        assert_eq!(r.am_out.iter().map(|a| (a.seq, a.conn)).collect::<Vec<_>>(), vec![(2, 2), (3, 3)]);
        // An older (or repeated) cumulative acknowledgement changes nothing.
        r.on_ack(1, std::iter::empty(), |_| {}).unwrap();
        assert_eq!(r.am_out.len(), 2);
        r.on_ack(4, std::iter::empty(), |_| {}).unwrap();
        assert!(r.am_out.is_empty());
    }

    #[test]
    fn an_ack_for_more_than_was_sent_is_refused() {
        let mut r = Reliability::default();
        for _ in 0..3 {
            let seq = r.next_seq();
            r.keep(seq, frame(), 0);
        }
        let e = r.on_ack(5, std::iter::empty(), |_| {}).unwrap_err();
        assert_eq!(e, "protocol error: 5 messages acknowledged, 3 sent");
        assert_eq!(r.am_out.len(), 3, "a refused acknowledgement releases nothing");
    }

    #[test]
    fn fragment_acks_finish_a_transfer_and_bogus_ones_are_refused() {
        let buf = [7u8; 100];
        let mut r = Reliability::default();
        let xid = r.start_bulk(42, Pieces::new([(buf.as_ptr() as *mut u8, buf.len())]), false);
        let b = &mut r.bulk_out[0];
        assert_eq!(b.pull(0, |_| 60), Some((0, 60)));
        assert_eq!(b.pull(1, |_| 60), Some((60, 40)));
        // Both copies written.
        assert_eq!(r.writer_done(xid), None);
        assert_eq!(r.writer_done(xid), None);
        // An offset past what was cut (one inside it counts as a duplicate).
        let e = r.on_ack(0, [(xid, 200)].into_iter(), |_| {}).unwrap_err();
        assert_eq!(e, "protocol error: acknowledgement for offset 200 of transfer 0, never sent");
        let e = r.on_ack(0, [(xid + 1, 0)].into_iter(), |_| {}).unwrap_err();
        assert_eq!(e, "protocol error: acknowledgement for transfer 1, never started");
        let mut sent = Vec::new();
        r.on_ack(0, [(xid, 60)].into_iter(), |t| sent.push(t)).unwrap();
        assert!(sent.is_empty());
        r.on_ack(0, [(xid, 0)].into_iter(), |t| sent.push(t)).unwrap();
        assert_eq!(sent, vec![42]);
        assert!(r.bulk_out.is_empty());
        // A duplicate's acknowledgement for the finished transfer is fine.
        r.on_ack(0, [(xid, 0)].into_iter(), |t| sent.push(t)).unwrap();
        assert_eq!(sent, vec![42]);
    }

    fn frag(xid: u64, token: u64, offset: u64, total: u64, len: u32) -> FragHead {
        FragHead { xid, token, offset, total, len, unacked: false }
    }

    #[test]
    fn fragments_in_any_order_complete_a_transfer_once() {
        let mut buf = [0u8; 100];
        let mut r = Reliability::default();
        assert!(r.expect(9, Pieces::new([(buf.as_mut_ptr(), buf.len())]), false));
        assert!(!r.expect(9, Pieces::new([]), false), "a token is registered once");
        for (off, len) in [(60, 40), (0, 30)] {
            assert_eq!(r.accept_frag(&frag(3, 9, off, 100, len)), Ok(FragFate::Place));
            assert!(r.body_dst(9, 3).is_some());
            assert!(r.frag_received(3, 9, off, len).is_none());
        }
        // The same fragment again (a copy from a failed rail) adds nothing.
        assert!(r.frag_received(3, 9, 0, 30).is_none());
        assert_eq!(r.accept_frag(&frag(3, 9, 30, 100, 30)), Ok(FragFate::Place));
        let done = r.frag_received(3, 9, 30, 30).expect("complete");
        assert_eq!((done.got_bytes, done.internal), (100, false));
        // A late copy of the finished transfer is read and dropped.
        assert_eq!(r.accept_frag(&frag(3, 9, 0, 100, 30)), Ok(FragFate::Discard));
        assert!(r.frag_received(3, 9, 0, 30).is_none());
        assert!(r.body_dst(9, 3).is_none());
    }

    #[test]
    fn fragments_that_contradict_the_registration_are_refused() {
        let mut buf = [0u8; 100];
        let mut r = Reliability::default();
        let e = r.accept_frag(&frag(0, 5, 0, 10, 10)).unwrap_err();
        assert_eq!(e, "protocol error: a fragment for token 5 that no transfer expects");
        r.expect(5, Pieces::new([(buf.as_mut_ptr(), buf.len())]), false);
        let e = r.accept_frag(&frag(0, 5, 0, 200, 10)).unwrap_err();
        assert_eq!(e, "protocol error: a 200-byte message for a 100-byte destination (token 5)");
        assert_eq!(r.accept_frag(&frag(0, 5, 0, 50, 10)), Ok(FragFate::Place));
        let e = r.accept_frag(&frag(0, 5, 10, 60, 10)).unwrap_err();
        assert_eq!(e, "protocol error: transfer 0 changed its size from 50 to 60");
        let e = r.accept_frag(&frag(1, 5, 10, 50, 10)).unwrap_err();
        assert_eq!(e, "protocol error: token 5 belongs to transfer 0, not 1");
    }
}
