//! Rendezvous (bulk) transfers: the sender's fragment bookkeeping and the
//! receiver's registered destinations.
//!
//! # Sending
//!
//! A [`BulkOut`] is not cut into fragments up front. Whenever a connection to
//! the peer has drained its queue it *pulls* the next fragment: a rail that
//! drains faster pulls more often, so the bytes split in proportion to what
//! each rail actually delivers, with no configuration (the MPC article cuts a
//! message into equal fragments dealt round robin, which made three NICs no
//! faster than two when four fragments had to go in two rounds). Near the end
//! of a message, fragments shrink to each rail's share of what remains
//! (from its measured throughput), so the rails finish together instead of
//! one slow rail carrying the last full fragment alone.
//!
//! Every fragment stays `inflight` (tagged with its connection) until the
//! receiver acknowledges it. When a connection dies, its unacknowledged
//! fragments move to `resend`, which rails pull from first: nothing is lost,
//! and since fragments keep their offsets, a copy that did arrive before the
//! failure is recognised as a duplicate by the receiver.
//!
//! The user's buffer is read while a fragment is written, so a transfer is
//! finished only when every fragment is acknowledged *and* no connection is
//! still in the middle of writing a copy of one (`writers`); only then may
//! the caller reuse the buffer.
//!
//! # Receiving
//!
//! A [`BulkIn`] is where the receiver wants the bytes. Fragments are read
//! straight into it at their offsets. The first fragment binds the
//! registration to the sender's transfer id (`xid`, never reused between a
//! pair), so a stray late copy of an older transfer that used the same token
//! is told apart; the covered ranges are kept as an interval set so that
//! duplicates are counted once.

use crate::sys::{iov, RawIov};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Tokens at or above this are goal-net's own (calibration).
pub(crate) const INTERNAL_TOKEN: u64 = 1 << 63;

/// A scatter/gather list with running offsets, for mapping a byte range of
/// the message onto memory.
pub(crate) struct Pieces {
    /// Non-empty pieces, in message order.
    ptrs: Vec<(*mut u8, usize)>,
    /// Message offset where each piece starts.
    starts: Vec<u64>,
    /// Sum of the lengths.
    pub total: u64,
}

// SAFETY: Pieces only carries addresses; whoever created it promised (in the
// unsafe `send_bulk` / `expect_bulk`) that the memory stays valid and is not
// otherwise used until the transfer ends, whichever thread drives the node.
unsafe impl Send for Pieces {}

impl Pieces {
    /// The list, skipping empty pieces.
    pub fn new(list: impl IntoIterator<Item = (*mut u8, usize)>) -> Pieces {
        let mut p = Pieces { ptrs: Vec::new(), starts: Vec::new(), total: 0 };
        for (ptr, len) in list {
            if len > 0 {
                p.ptrs.push((ptr, len));
                p.starts.push(p.total);
                p.total += len as u64;
            }
        }
        p
    }

    /// Appends iovecs for bytes `[off, off + len)` to `out`, at most
    /// `max_entries` of them; returns the bytes covered (less than `len` only
    /// if the entries ran out). The range must lie inside the list.
    pub fn iovecs(&self, off: u64, len: u64, out: &mut Vec<RawIov>, max_entries: usize) -> u64 {
        debug_assert!(off + len <= self.total);
        if len == 0 || max_entries == 0 {
            return 0;
        }
        // The piece holding `off`: the last one starting at or before it.
        let mut i = self.starts.partition_point(|&s| s <= off) - 1;
        let mut pos = off;
        let end = off + len;
        let mut added = 0;
        while pos < end && added < max_entries {
            let (ptr, plen) = self.ptrs[i];
            let within = (pos - self.starts[i]) as usize;
            let n = ((plen - within) as u64).min(end - pos);
            // wrapping_add: no dereference happens here; the kernel reads or
            // writes the memory under the caller's promise.
            out.push(iov(ptr.wrapping_add(within), n as usize));
            pos += n;
            added += 1;
            i += 1;
        }
        pos - off
    }
}

/// A set of disjoint half-open byte ranges.
#[derive(Default)]
pub(crate) struct IntervalSet {
    /// start -> end, disjoint and not touching.
    map: BTreeMap<u64, u64>,
}

impl IntervalSet {
    /// Adds `[start, end)`; returns how many bytes were not covered before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        use std::ops::Bound::{Excluded, Included};
        if start >= end {
            return 0;
        }
        // Every range that overlaps or touches [start, end): at most one
        // starting at or before `start`, then those starting inside.
        let mut hit: Vec<(u64, u64)> = Vec::new();
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= start {
                hit.push((s, e));
            }
        }
        hit.extend(self.map.range((Excluded(start), Included(end))).map(|(&s, &e)| (s, e)));
        let (mut lo, mut hi, mut overlap) = (start, end, 0);
        for (s, e) in hit {
            overlap += e.min(end).saturating_sub(s.max(start));
            lo = lo.min(s);
            hi = hi.max(e);
            self.map.remove(&s);
        }
        self.map.insert(lo, hi);
        (end - start) - overlap
    }
}

/// The sender's side of one transfer.
pub(crate) struct BulkOut {
    /// The transfer id (per ordered pair, counts up).
    pub xid: u64,
    /// The caller's token.
    pub token: u64,
    /// The caller's buffer.
    pub src: Pieces,
    /// Bytes [0, cut) have been handed to rails at least once.
    pub cut: u64,
    /// Every byte has been cut (true at once for an empty message after its
    /// one empty fragment).
    pub cut_done: bool,
    /// Fragments whose connection died before they were acknowledged.
    pub resend: VecDeque<(u64, u32)>,
    /// Fragments handed to a connection and not acknowledged: offset ->
    /// (length, connection).
    pub inflight: BTreeMap<u64, (u32, usize)>,
    /// Bytes acknowledged.
    pub acked: u64,
    /// Copies of fragments queued on or being written to a connection (they
    /// read `src`).
    pub writers: u32,
    /// Internal transfer (calibration): not reported to the caller.
    pub internal: bool,
}

/// What an acknowledgement did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum AckOutcome {
    /// A fragment of this many bytes is now acknowledged.
    New(u32),
    /// Already acknowledged (a duplicate copy was acknowledged too).
    Duplicate,
    /// Names no fragment ever cut: the peer lies.
    Bogus,
}

impl BulkOut {
    pub fn new(xid: u64, token: u64, src: Pieces, internal: bool) -> BulkOut {
        BulkOut {
            xid,
            token,
            src,
            cut: 0,
            cut_done: false,
            resend: VecDeque::new(),
            inflight: BTreeMap::new(),
            acked: 0,
            writers: 0,
            internal,
        }
    }

    /// Does this transfer still have bytes for a rail to pull?
    pub fn has_work(&self) -> bool {
        !self.resend.is_empty() || !self.cut_done
    }

    /// Bytes not yet cut.
    pub fn uncut(&self) -> u64 {
        self.src.total - self.cut
    }

    /// The next fragment for connection `conn`: a resend first, else a new
    /// cut of `len_for(uncut bytes)` bytes. Marks it in flight on `conn`.
    pub fn pull(&mut self, conn: usize, len_for: impl FnOnce(u64) -> u64) -> Option<(u64, u32)> {
        let (off, len) = if let Some(f) = self.resend.pop_front() {
            f
        } else if !self.cut_done {
            let rest = self.uncut();
            let len = len_for(rest).min(rest) as u32;
            let off = self.cut;
            self.cut += len as u64;
            self.cut_done = self.cut == self.src.total;
            (off, len)
        } else {
            return None;
        };
        self.inflight.insert(off, (len, conn));
        self.writers += 1;
        Some((off, len))
    }

    /// Is the fragment at `off` still wanted from `conn` (not acknowledged,
    /// not moved to another connection)?
    pub fn wanted_on(&self, off: u64, conn: usize) -> bool {
        matches!(self.inflight.get(&off), Some(&(_, c)) if c == conn)
    }

    /// The receiver acknowledged the fragment at `off`.
    pub fn ack(&mut self, off: u64) -> AckOutcome {
        if let Some((len, _)) = self.inflight.remove(&off) {
            self.acked += len as u64;
            return AckOutcome::New(len);
        }
        if let Some(i) = self.resend.iter().position(|&(o, _)| o == off) {
            let (_, len) = self.resend.remove(i).expect("index from position");
            self.acked += len as u64;
            return AckOutcome::New(len);
        }
        if off < self.cut || (off == 0 && self.cut_done) {
            AckOutcome::Duplicate
        } else {
            AckOutcome::Bogus
        }
    }

    /// Connection `conn` died: what it had in flight is sent again.
    pub fn conn_lost(&mut self, conn: usize) {
        let lost: Vec<u64> = self.inflight.iter().filter(|(_, &(_, c))| c == conn).map(|(&o, _)| o).collect();
        for off in lost {
            let (len, _) = self.inflight.remove(&off).expect("listed above");
            self.resend.push_back((off, len));
        }
    }

    /// Every byte acknowledged and no connection still reading the buffer.
    pub fn finished(&self) -> bool {
        self.cut_done && self.inflight.is_empty() && self.resend.is_empty() && self.writers == 0
    }
}

/// The receiver's side of one transfer: where its bytes go.
pub(crate) struct BulkIn {
    /// The destination.
    pub dst: Pieces,
    /// The transfer this registration is bound to (first fragment's xid).
    pub xid: Option<u64>,
    /// The message size (first fragment's `total`).
    pub total: Option<u64>,
    /// Ranges received.
    pub got: IntervalSet,
    /// Bytes received (distinct).
    pub got_bytes: u64,
    /// Cancelled: bytes are read and dropped, no completion is reported.
    pub discard: bool,
    /// Internal transfer (calibration): completion is handled inside.
    pub internal: bool,
}

impl BulkIn {
    pub fn new(dst: Pieces, internal: bool) -> BulkIn {
        BulkIn { dst, xid: None, total: None, got: IntervalSet::default(), got_bytes: 0, discard: false, internal }
    }
}

/// Transfer ids a receiver has finished, so late duplicates are recognised:
/// every id below `below`, and the ids in `above`.
#[derive(Default)]
pub(crate) struct XidSet {
    below: u64,
    above: BTreeSet<u64>,
}

impl XidSet {
    pub fn contains(&self, x: u64) -> bool {
        x < self.below || self.above.contains(&x)
    }

    pub fn insert(&mut self, x: u64) {
        if x < self.below {
            return;
        }
        self.above.insert(x);
        while self.above.remove(&self.below) {
            self.below += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_set_counts_new_bytes_once() {
        let mut s = IntervalSet::default();
        assert_eq!(s.insert(10, 20), 10);
        assert_eq!(s.insert(10, 20), 0);
        assert_eq!(s.insert(15, 25), 5);
        assert_eq!(s.insert(0, 5), 5);
        assert_eq!(s.insert(0, 30), 30 - 5 - 15);
        assert_eq!(s.insert(40, 50), 10);
        assert_eq!(s.insert(35, 45), 5);
        assert_eq!(s.insert(0, 100), 100 - 30 - 15);
        assert_eq!(s.map.len(), 1);
    }

    #[test]
    fn interval_set_against_a_bitmap() {
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let mut s = IntervalSet::default();
            let mut bits = [false; 256];
            for _ in 0..40 {
                let a = rnd(256);
                let b = (a + rnd(64)).min(256);
                let want = (a..b).filter(|&i| !bits[i as usize]).count() as u64;
                (a..b).for_each(|i| bits[i as usize] = true);
                assert_eq!(s.insert(a, b), want);
            }
        }
    }

    #[test]
    fn pieces_map_ranges() {
        let mut a = [0u8; 10];
        let mut b = [0u8; 5];
        let p = Pieces::new([(a.as_mut_ptr(), 10), (std::ptr::null_mut(), 0), (b.as_mut_ptr(), 5)]);
        assert_eq!(p.total, 15);
        let mut v = Vec::new();
        assert_eq!(p.iovecs(8, 4, &mut v, 8), 4);
        assert_eq!(v.len(), 2);
        assert_eq!((v[0].iov_len, v[1].iov_len), (2, 2));
        v.clear();
        assert_eq!(p.iovecs(8, 4, &mut v, 1), 2);
    }

    #[test]
    fn bulk_out_resends_and_finishes() {
        let mut buf = vec![0u8; 100];
        let mut b = BulkOut::new(0, 7, Pieces::new([(buf.as_mut_ptr(), 100)]), false);
        assert_eq!(b.pull(1, |_| 40), Some((0, 40)));
        assert_eq!(b.pull(2, |_| 40), Some((40, 40)));
        assert_eq!(b.pull(1, |_| 40), Some((80, 20)));
        assert!(!b.has_work());
        b.conn_lost(2);
        assert_eq!(b.ack(40), AckOutcome::New(40)); // the copy on the dead rail did arrive
        assert!(b.resend.is_empty());
        assert_eq!(b.ack(0), AckOutcome::New(40));
        assert_eq!(b.ack(0), AckOutcome::Duplicate);
        assert_eq!(b.ack(80), AckOutcome::New(20));
        b.writers = 0;
        assert!(b.finished());
        let mut e = BulkOut::new(1, 8, Pieces::new([]), false);
        assert_eq!(e.pull(0, |_| 40), Some((0, 0)));
        assert_eq!(e.ack(0), AckOutcome::New(0));
        e.writers = 0;
        assert!(e.finished());
    }

    #[test]
    fn xid_set() {
        let mut s = XidSet::default();
        s.insert(1);
        assert!(s.contains(1) && !s.contains(0));
        s.insert(0);
        assert!(s.contains(0) && s.contains(1) && !s.contains(2));
        assert_eq!(s.below, 2);
    }
}
