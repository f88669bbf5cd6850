//! The eager message ring: single producer, single consumer, variable-length
//! records handed to the consumer in place.
//!
//! ```text
//! record  = [u32 payload_len | u32 flags] [Envelope: 32 B] [payload] [pad to 8 B]
//! padding = [u32 skip_len    | FLAG_PAD ]  (fills the ring up to the wrap point)
//! ```
//!
//! A record never straddles the end of the ring: when it does not fit before
//! the wrap point the producer writes a padding record there and starts the
//! real one at offset 0. So the consumer can lend the payload out as one
//! `&[u8]` inside the ring and only release the space (advance `head`) after
//! its callback returns. Because a record is at most a quarter of the ring
//! ([`max_payload`]), a record plus its padding always fits in an empty ring.
//!
//! Synchronisation is the classic SPSC one, on 64-bit byte counters that
//! only grow: the producer writes the bytes, then publishes with a Release
//! store of `tail`; the consumer Acquire-loads `tail`, reads, and gives the
//! bytes back with a Release store of `head`, which the producer
//! Acquire-loads before reusing them. Each side caches the other's counter
//! (crossbeam style) and only reloads it when the cached value says "full"
//! (producer) or "empty" (consumer), so a steady stream touches the other
//! side's line once per batch rather than once per message.

use super::layout::{Layout, P_RING_HEAD, P_RING_TAIL};
use super::map::Mapping;
use crate::sync::{AtomicU64, Ordering};
use crate::Envelope;
use std::cell::Cell;
use std::sync::Arc;

/// Bytes of the record header word.
const HEADER: usize = 8;
/// Bytes of the envelope.
const ENVELOPE: usize = std::mem::size_of::<Envelope>();
/// Header + envelope: bytes before the payload.
pub(crate) const RECORD_OVERHEAD: usize = HEADER + ENVELOPE;
/// Flag bit: the record is padding up to the wrap point, not a message.
const FLAG_PAD: u64 = 1;

/// The largest payload a ring of `ring_bytes` accepts: a record is at most a
/// quarter of the ring, so that one always fits even after padding.
pub(crate) fn max_payload(ring_bytes: usize) -> usize {
    (ring_bytes / 4).saturating_sub(RECORD_OVERHEAD) & !7
}

/// Bytes a record with `len` payload bytes occupies.
fn record_bytes(len: usize) -> u64 {
    (RECORD_OVERHEAD + ((len + 7) & !7)) as u64
}

/// The pointers one side of a ring needs, all inside `map`.
///
/// Invariant: `tail` and `head` point at the pair block's ring counters and
/// `data` at its `cap` ring bytes, all inside `map`, which the struct keeps
/// alive.
struct RingPtrs {
    _map: Arc<Mapping>,
    tail: *const AtomicU64,
    head: *const AtomicU64,
    data: *mut u8,
    /// Ring size in bytes: a power of two, at least 4096.
    cap: u64,
}

impl RingPtrs {
    fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> RingPtrs {
        let pair = layout.pair(sender);
        let tail: *const AtomicU64 = map.atomic_u64(pair + P_RING_TAIL);
        let head: *const AtomicU64 = map.atomic_u64(pair + P_RING_HEAD);
        let off = layout.ring_data(sender);
        assert!(off + layout.ring_bytes <= map.len());
        // SAFETY: `off + ring_bytes <= map.len()` (checked above), so the
        // pointer stays inside the mapping.
        let data = unsafe { map.ptr().add(off) };
        RingPtrs {
            _map: map,
            tail,
            head,
            data,
            cap: layout.ring_bytes as u64,
        }
    }
    fn tail(&self) -> &AtomicU64 {
        // SAFETY: points into `_map`, alive as long as `self` (struct invariant).
        unsafe { &*self.tail }
    }
    fn head(&self) -> &AtomicU64 {
        // SAFETY: as for `tail`.
        unsafe { &*self.head }
    }
}

/// The sending side of the ring `me -> peer`, inside the peer's inbox.
pub(crate) struct RingProducer {
    ptrs: RingPtrs,
    /// Bytes ever published; equal to the shared `tail` (we are its only writer).
    local_tail: Cell<u64>,
    /// A value the shared `head` has had: `<= head`, so space computed from it
    /// is never more than the real free space.
    cached_head: Cell<u64>,
}

impl RingProducer {
    /// The producer of the ring `sender -> owner of map`.
    pub(crate) fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> RingProducer {
        let ptrs = RingPtrs::new(map, layout, sender);
        let tail = ptrs.tail().load(Ordering::Relaxed);
        let head = ptrs.head().load(Ordering::Acquire);
        RingProducer {
            ptrs,
            local_tail: Cell::new(tail),
            cached_head: Cell::new(head),
        }
    }

    /// Appends one record (envelope + the concatenation of `payload`), whose
    /// total payload must be at most [`max_payload`]. `false`: no room now.
    pub(crate) fn try_push(&self, env: &Envelope, payload: &[&[u8]], len: usize) -> bool {
        let cap = self.ptrs.cap;
        let tail = self.local_tail.get();
        let off = tail & (cap - 1);
        let need = record_bytes(len);
        let to_end = cap - off;
        let pad = if to_end < need { to_end } else { 0 };
        let total = pad + need;
        if cap - (tail - self.cached_head.get()) < total {
            self.cached_head
                .set(self.ptrs.head().load(Ordering::Acquire));
            if cap - (tail - self.cached_head.get()) < total {
                return false;
            }
        }
        let base = self.ptrs.data;
        let mut at = off as usize;
        // SAFETY: (1) the `total` bytes from `tail` are free: the consumer
        // released them (Acquire load of `head` above), so nobody reads or
        // writes them until we publish; (2) every write stays inside the ring:
        // padding fills exactly `to_end` bytes, and a record is written from
        // offset `at` with `at + need <= cap` (either it fit before the wrap
        // point or it starts at 0 and `need <= cap / 4`); (3) `at` is 8-aligned
        // (counters advance by multiples of 8), so the u64 writes are aligned.
        unsafe {
            if pad != 0 {
                (base.add(at) as *mut u64).write(pad | (FLAG_PAD << 32));
                at = 0;
            }
            (base.add(at) as *mut u64).write(len as u64);
            (base.add(at + HEADER) as *mut Envelope).write(*env);
            let mut p = at + RECORD_OVERHEAD;
            for s in payload {
                std::ptr::copy_nonoverlapping(s.as_ptr(), base.add(p), s.len());
                p += s.len();
            }
        }
        let new_tail = tail + total;
        self.local_tail.set(new_tail);
        self.ptrs.tail().store(new_tail, Ordering::Release);
        true
    }
}

/// The receiving side of the ring `sender -> me`, inside my inbox.
pub(crate) struct RingConsumer {
    ptrs: RingPtrs,
    /// Bytes ever consumed; equal to the shared `head` (we are its only writer).
    local_head: Cell<u64>,
    /// A value the shared `tail` has had: `<= tail`, and every byte below it
    /// is published.
    cached_tail: Cell<u64>,
}

impl RingConsumer {
    /// The consumer of the ring `sender -> owner of map`.
    pub(crate) fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> RingConsumer {
        let ptrs = RingPtrs::new(map, layout, sender);
        let head = ptrs.head().load(Ordering::Relaxed);
        RingConsumer {
            ptrs,
            local_head: Cell::new(head),
            cached_tail: Cell::new(head),
        }
    }

    /// Hands every record published so far to `f` (envelope, payload in
    /// place), releasing each one's space after `f` returns. Returns how many,
    /// and whether the ring was more than half full (a producer may then be
    /// waiting for space: a record is at most a quarter of the ring).
    /// Costs one load of the producer's line when the ring is empty.
    pub(crate) fn drain(&self, f: &mut dyn FnMut(&Envelope, &[u8])) -> (usize, bool) {
        let mut head = self.local_head.get();
        if head == self.cached_tail.get() {
            let tail = self.ptrs.tail().load(Ordering::Acquire);
            if tail == head {
                return (0, false);
            }
            self.cached_tail.set(tail);
        }
        // Only what was published when we looked: a busy producer cannot keep
        // us here forever.
        let tail = self.cached_tail.get();
        let cap = self.ptrs.cap;
        let was_crowded = tail - head > cap / 2;
        let base = self.ptrs.data;
        let mut n = 0;
        while head != tail {
            let off = (head & (cap - 1)) as usize;
            // SAFETY: `head < tail` and the bytes below `tail` were published
            // by the producer (Acquire load) and stay untouched until we move
            // `head` past them; `off` is 8-aligned and `off + 8 <= cap`.
            let word = unsafe { (base.add(off) as *const u64).read() };
            let len = (word & 0xffff_ffff) as usize;
            if (word >> 32) & FLAG_PAD != 0 {
                assert_eq!(
                    off + len,
                    cap as usize,
                    "shm ring corrupted: bad padding record"
                );
                head += len as u64;
            } else {
                assert!(
                    off + RECORD_OVERHEAD + len <= cap as usize,
                    "shm ring corrupted: record overruns the ring"
                );
                // SAFETY: the record lies inside the ring (asserted) in
                // published bytes that the producer will not touch until we
                // advance `head`, which happens only after `f` has returned
                // and the slice is gone.
                let (env, payload) = unsafe {
                    let env = (base.add(off + 8) as *const Envelope).read();
                    (
                        env,
                        std::slice::from_raw_parts(base.add(off + RECORD_OVERHEAD), len),
                    )
                };
                f(&env, payload);
                head += record_bytes(len);
                n += 1;
            }
            self.local_head.set(head);
            self.ptrs.head().store(head, Ordering::Release);
        }
        (n, was_crowded)
    }
}
