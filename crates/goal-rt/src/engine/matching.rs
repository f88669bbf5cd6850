//! The matching core: posted receives against arriving messages, the
//! unexpected queues, and what finished or failed executions leave behind
//! (stale, stray and mismatched messages). No transport: this module
//! imports neither goal-transport nor goal-net, and its tests need no
//! processes.

use super::exec::{Execs, OpRef, Owned, Posted};
use crate::error::Error;
use crate::proto::SchedId;
use std::collections::{HashMap, VecDeque};

pub(super) enum UnexpKind {
    /// Eager data, copied out of the ring, and what its envelope says about
    /// the send's channel (kernel mode), if anything.
    Eager(Vec<u8>, Option<Ctl>),
    /// A large message waiting at its sender.
    Rts { mode: u8, token: u32, addr: u64 },
    /// A message from this rank to itself, still in the sender's buffer.
    SelfSend(OpRef),
}

/// What an EAGER envelope says about the send's channel (kernel mode).
#[derive(Clone, Copy)]
pub(super) struct Ctl {
    /// `MODE_OFFER` or `MODE_SWITCH`.
    pub(super) mode: u8,
    /// The sender's descriptor (offer), or its port (offer over TCP).
    pub(super) fd: u32,
    /// The sender's operation and schedule.
    pub(super) op: u32,
    pub(super) sched: SchedId,
    /// The offer's nonce (over TCP).
    pub(super) nonce: u32,
}

pub(super) struct Unexp {
    pub(super) src: u32,
    pub(super) tag: i32,
    pub(super) len: u32,
    pub(super) kind: UnexpKind,
}

/// Most spare buffers and queues kept (see `Matcher::spare_bufs`), and the
/// largest buffer kept.
pub(super) const SPARES: usize = 32;
pub(super) const SPARE_BUF_BYTES: usize = 64 << 10;

/// An execution's key: its schedule id and execution number.
#[inline]
pub(super) fn key(sched: SchedId, seq: u32) -> ExecKey {
    (sched as u128) << 32 | seq as u128
}

/// An execution's key ([`key`]): 80 bits.
pub(super) type ExecKey = u128;

/// The hasher of the engine's maps, whose keys are small integers from the
/// group's own ranks (execution keys, transfer tokens): a rotate, a xor and
/// a multiply per word (the multiply spreads the key into the high bits
/// hashbrown's control bytes use). SipHash cost 210 instructions per
/// unexpected message, in three lookups.
#[derive(Default, Clone, Copy)]
pub(super) struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u128(&mut self, n: u128) {
        self.write_u64(n as u64);
        self.write_u64((n >> 64) as u64);
    }
}

pub(super) type KeyHash = std::hash::BuildHasherDefault<KeyHasher>;

pub(super) type KeyMap<K, V> = HashMap<K, V, KeyHash>;

/// Matching's state: the messages that no posted receive took yet, and
/// what earlier executions left behind. Transport-free: messages arrive
/// here already parsed, and the engine delivers what matching hands out.
///
/// The rules (the spec's): a message carries (schedule id, execution
/// number, tag) and comes from a source; it matches the first posted
/// receive of that execution, in posting order, whose source and tag fit
/// (-1 is a wildcard for either). A message that none takes waits in its
/// execution's queue, in arrival order, and a receive that starts takes
/// the first that fits. Messages between two ranks arrive in the order
/// sent, so two of the same source and tag never overtake each other.
#[derive(Default)]
pub(super) struct Matcher {
    /// Unexpected messages by execution key ([`key`]), each queue in
    /// arrival order. Invariant: no queue is empty (an emptied one goes
    /// to `spare_queues`).
    pub(super) unexp: KeyMap<ExecKey, VecDeque<Unexp>>,
    /// Emptied queues of `unexp`, and payload buffers of unexpected eager
    /// messages already delivered, for the next ones: an unexpected message
    /// cost a malloc and a free for each (callgrind: 130 instructions of
    /// 500 on its path). At most [`SPARES`] of each.
    pub(super) spare_queues: Vec<VecDeque<Unexp>>,
    pub(super) spare_bufs: Vec<Vec<u8>>,
    /// Per schedule id, what a stray message for an execution that had
    /// finished here showed: the schedule's next execution here fails with
    /// it (see `Engine::stale`).
    pub(super) stale: KeyMap<SchedId, Error>,
    /// Executions (by slot) that end with an earlier one's mismatch.
    pub(super) poisoned: KeyMap<u32, Error>,
    /// Keys of executions that finished while messages waited for them
    /// (strays, reported by `Engine::strays`).
    pub(super) stray_keys: Vec<ExecKey>,
    /// Keys of executions that failed here: what still arrives for them is
    /// released at once (a failed execution drains).
    pub(super) dead: std::collections::HashSet<ExecKey, KeyHash>,
    /// Per source: the number of the last poll in which a message of it
    /// that may match a receive (an RTS, or an eager message not copied
    /// straight into a posted receive) was queued for the poll's end. A
    /// later eager message of that source in the same poll must not take
    /// the fast path: it would take the receive the queued one is owed
    /// (non-overtaking).
    pub(super) queued_in: Vec<u64>,
    /// Polls made (`poll_messages`), numbering them for `queued_in`.
    pub(super) poll_no: u64,
}

impl Matcher {
    /// A matcher for a group of `n` ranks.
    pub(super) fn new(n: usize) -> Matcher {
        Matcher { queued_in: vec![0; n], ..Matcher::default() }
    }

    /// Takes the first message waiting for execution `k` that a receive
    /// from `peer` with `tag` takes (either -1: any), in arrival order.
    #[inline]
    pub(super) fn take_unexpected(&mut self, k: ExecKey, peer: i32, tag: i32) -> Option<Unexp> {
        if self.unexp.is_empty() {
            return None; // the common case: no hashing
        }
        // One look-up for the queue and, if this empties it, its removal.
        let std::collections::hash_map::Entry::Occupied(mut e) = self.unexp.entry(k) else { return None };
        let q = e.get_mut();
        // Messages of one source come in order, and a receive mostly takes
        // the first that waits: no search, no shifting then.
        let u = if q.front().is_some_and(|u| fits(peer, tag, u.src, u.tag)) {
            q.pop_front()
        } else {
            let i = q.iter().position(|u| fits(peer, tag, u.src, u.tag))?;
            q.remove(i)
        };
        let u = u.unwrap_or_else(|| unreachable!());
        if e.get().is_empty() {
            let q = e.remove();
            if self.spare_queues.len() < SPARES {
                self.spare_queues.push(q);
            }
        }
        Some(u)
    }

    /// Keeps `u` for execution `k`, behind what waits for it already.
    pub(super) fn keep(&mut self, k: ExecKey, u: Unexp) {
        let spare = &mut self.spare_queues;
        self.unexp.entry(k).or_insert_with(|| spare.pop().unwrap_or_default()).push_back(u);
    }

    /// Execution `k` failed here: what still arrives for it is released at
    /// once (see [`is_dead`](Self::is_dead)); returns what waited for it,
    /// for the engine to release.
    pub(super) fn bury(&mut self, k: ExecKey) -> VecDeque<Unexp> {
        self.dead.insert(k);
        self.unexp.remove(&k).unwrap_or_default()
    }

    /// Whether execution `k` failed here.
    #[inline]
    pub(super) fn is_dead(&self, k: ExecKey) -> bool {
        !self.dead.is_empty() && self.dead.contains(&k)
    }

    /// Execution `k` finished with all its receives taken: messages that
    /// wait for it are strays, for the engine to report (see
    /// `Engine::strays`).
    #[cold]
    pub(super) fn note_strays(&mut self, k: ExecKey) {
        if self.unexp.contains_key(&k) {
            self.stray_keys.push(k);
        }
    }

    /// Keeps `d`, an unexpected message's payload that was delivered or
    /// dropped, for the next one (see `spare_bufs`).
    pub(super) fn spare_buf(&mut self, d: Vec<u8>) {
        if self.spare_bufs.len() < SPARES && d.capacity() <= SPARE_BUF_BYTES {
            self.spare_bufs.push(d);
        }
    }
}

/// Whether a receive from `peer` with `tag` (either -1: any) takes a
/// message from `src` with `msg_tag`.
#[inline(always)]
pub(super) fn fits(peer: i32, tag: i32, src: u32, msg_tag: i32) -> bool {
    (peer == -1 || peer as u32 == src) && (tag == -1 || tag == msg_tag)
}

/// Removes and returns the operation of the first receive in `posted`
/// (posting order) that takes a message from `src` with `tag`.
#[inline(always)]
pub(super) fn take_posted(posted: &mut Vec<Posted>, src: u32, tag: i32) -> Option<u32> {
    let i = posted.iter().position(|p| fits(p.peer, p.tag, src, tag))?;
    // Mostly the only one, or the last: no shifting (nor a call).
    let p = if i + 1 == posted.len() { posted.pop()? } else { posted.remove(i) };
    Some(p.op)
}

/// How a message of `len` bytes fits a receive of `cap` bytes (`exact`:
/// a collective's receive, which takes exactly its size).
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fit {
    /// It fits.
    Ok,
    /// Larger than the receive: truncation, an error.
    Truncated,
    /// Shorter than an exact receive: the ranks disagree on sizes.
    Short,
}

/// See [`Fit`].
#[inline(always)]
pub(super) fn fit(len: u64, cap: u64, exact: bool) -> Fit {
    if len > cap {
        Fit::Truncated
    } else if exact && len != cap {
        Fit::Short
    } else {
        Fit::Ok
    }
}

/// Finds and removes the first posted receive of execution (sched, seq)
/// that takes a message from `src` with `tag` (a free function so the
/// poll callback can use it while the transport is borrowed).
#[inline(always)]
pub(super) fn match_posted<B: Owned>(execs: &mut Execs<B>, sched: SchedId, seq: u32, src: u32, tag: i32) -> Option<OpRef> {
    let slot = execs.active_slot(sched, seq)?;
    // SAFETY: an active execution's slot is an index of `slots` (an
    // execution is listed as active from `insert` to `vacate`).
    let e = unsafe { execs.slots.get_unchecked_mut(slot as usize) }.as_mut()?;
    let op = take_posted(e.bufs.posted(), src, tag)?;
    Some(OpRef { slot, gen: e.gen, op })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::exec::tests::{forward, start, Bufs};

    fn posted(list: &[(u32, i32, i32)]) -> Vec<Posted> {
        list.iter().map(|&(op, peer, tag)| Posted { op, peer, tag }).collect()
    }

    fn eager(src: u32, tag: i32, len: u32) -> Unexp {
        Unexp { src, tag, len, kind: UnexpKind::Eager(vec![0; len as usize], None) }
    }

    #[test]
    fn receives_are_matched_in_posting_order() {
        let mut p = posted(&[(1, 1, 5), (2, 1, 5), (3, 1, 6)]);
        assert_eq!(take_posted(&mut p, 1, 5), Some(1));
        assert_eq!(take_posted(&mut p, 1, 5), Some(2));
        assert_eq!(take_posted(&mut p, 1, 5), None);
        assert_eq!(take_posted(&mut p, 2, 6), None, "another source");
        assert_eq!(take_posted(&mut p, 1, 6), Some(3));
    }

    #[test]
    fn wildcards_take_any_source_or_tag() {
        let mut p = posted(&[(1, -1, 7), (2, 2, -1), (3, -1, -1)]);
        assert_eq!(take_posted(&mut p, 2, 7), Some(1), "the first posted that fits, not the most specific");
        assert_eq!(take_posted(&mut p, 2, 9), Some(2));
        assert_eq!(take_posted(&mut p, 3, 9), Some(3));
        assert!(p.is_empty());
    }

    #[test]
    fn messages_of_one_source_and_tag_do_not_overtake() {
        let mut m = Matcher::new(4);
        let k = key(0, 0);
        m.keep(k, eager(1, 5, 1));
        m.keep(k, eager(2, 5, 2));
        m.keep(k, eager(1, 5, 3));
        assert_eq!(m.take_unexpected(k, 1, 5).map(|u| u.len), Some(1));
        assert_eq!(m.take_unexpected(k, -1, -1).map(|u| u.len), Some(2), "a wildcard takes the earliest arrival");
        assert_eq!(m.take_unexpected(k, 1, 5).map(|u| u.len), Some(3));
        assert!(m.take_unexpected(k, 1, 5).is_none());
        assert!(m.unexp.is_empty(), "an emptied queue is dropped");
        assert_eq!(m.spare_queues.len(), 1, "and kept for the next");
    }

    #[test]
    fn a_message_before_its_receive_waits_for_its_own_execution() {
        let mut m = Matcher::new(4);
        m.keep(key(3, 1), eager(1, 0, 8));
        assert!(m.take_unexpected(key(3, 0), 1, 0).is_none(), "another execution of the schedule");
        assert!(m.take_unexpected(key(4, 1), 1, 0).is_none(), "another schedule");
        assert!(m.take_unexpected(key(3, 1), 1, 1).is_none(), "another tag");
        assert!(m.take_unexpected(key(3, 1), 1, 0).is_some());
    }

    #[test]
    fn a_posted_receive_takes_only_messages_of_its_execution() {
        let s = forward(0);
        let mut x = Execs::<Bufs>::default();
        let (slot0, gen0) = start(&mut x, &s);
        let (slot1, gen1) = start(&mut x, &s);
        x.slots[slot0 as usize].as_mut().unwrap().bufs.posted = posted(&[(0, 1, 0)]);
        x.slots[slot1 as usize].as_mut().unwrap().bufs.posted = posted(&[(0, 1, 0)]);
        assert_eq!(match_posted(&mut x, 0, 1, 1, 0), Some(OpRef { slot: slot1, gen: gen1, op: 0 }));
        assert_eq!(match_posted(&mut x, 0, 1, 1, 0), None, "taken once");
        assert_eq!(match_posted(&mut x, 0, 2, 1, 0), None, "an execution not started here");
        assert_eq!(match_posted(&mut x, 1, 0, 1, 0), None, "another schedule");
        assert_eq!(match_posted(&mut x, 0, 0, 1, 0), Some(OpRef { slot: slot0, gen: gen0, op: 0 }));
    }

    #[test]
    fn truncation_and_short_messages_are_told() {
        assert_eq!(fit(9, 8, false), Fit::Truncated);
        assert_eq!(fit(8, 8, false), Fit::Ok);
        assert_eq!(fit(3, 8, false), Fit::Ok, "a point-to-point receive takes less");
        assert_eq!(fit(3, 8, true), Fit::Short, "a collective's takes exactly its size");
        assert_eq!(fit(9, 8, true), Fit::Truncated);
    }

    #[test]
    fn a_failed_execution_drains() {
        let mut m = Matcher::new(4);
        let k = key(2, 5);
        m.keep(k, eager(1, 0, 8));
        m.keep(k, eager(3, 0, 8));
        let left = m.bury(k);
        assert_eq!(left.len(), 2, "what waited for it is handed back, to release its senders");
        assert!(m.is_dead(k));
        assert!(!m.is_dead(key(2, 6)), "the schedule's next execution is not");
        assert!(m.take_unexpected(k, -1, -1).is_none());
    }
}
