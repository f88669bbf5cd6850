//! The eager message ring: single producer, single consumer, variable-length
//! records handed to the consumer in place.
//!
//! ```text
//! record  = [u32 payload_len | u32 flags] [Envelope: 32 B] [gap] [payload] [pad to 8 B]
//! padding = [u32 skip_len    | FLAG_PAD ]  (fills the ring up to the wrap point)
//! ```
//!
//! A payload of 8 KiB or more starts on a cache line: the gap after the
//! envelope (40 to 96 bytes, which the consumer computes as the producer
//! did) lets the sender's copy into the ring and the receiver's copy out
//! of it fill and read whole lines. Packed behind the envelope, a 64 KiB
//! record's lines were split between the copy's stores at each of the
//! three places a 256 KiB ring puts them, and where the receiver had read
//! those lines a lap before, a third to two fifths of 2-rank ping-pongs of
//! 64 KiB took twice as long (one-way 10-11 us against 4-5 with the vCPUs
//! far apart, 2.1 against 1.6 close). Shorter records stay packed: a 4 KiB
//! payload on a line was slower (1.05-1.10 us one-way against 0.93-1.05),
//! and records of whole lines for short messages made 2-rank barriers and
//! 8-byte exchanges 1.1-1.25x slower, each record's end marker then on a
//! line of its own (docs/measurements/line-records-2026-12-05).
//!
//! A record never straddles the end of the ring: when it does not fit before
//! the wrap point the producer writes a padding record there and starts the
//! real one at offset 0. So the consumer can lend the payload out as one
//! `&[u8]` inside the ring and only release the space (advance `head`) after
//! its callback returns. Because a record's payload is at most a quarter of
//! the ring ([`max_payload`]), a record plus its padding always fits in an
//! empty ring.
//!
//! Publication is in band, as in a fast-box: the consumer polls the header
//! word of the next record itself, so a message costs the consumer one
//! cross-core miss (the record's first line) instead of two (a tail counter,
//! then the record). A header word is never zero (`FLAG_VALID`), and the word
//! at the consumer's position is always either zero or the header of a record
//! of the current lap, because the producer keeps this invariant:
//!
//! * before it publishes a record (a Release store of its header word), it
//!   writes a zero *end marker* where the next record's header will go;
//! * a wrapping record is written at offset 0 (with its own end marker)
//!   before the padding record that leads the consumer there is published.
//!
//! So stale bytes of an earlier lap are never taken for a header. Space is
//! accounted on 64-bit byte counters that only grow: the producer keeps
//! `tail` to itself; the consumer gives bytes back with a Release store of
//! `head`, which the producer Acquire-loads (and caches, crossbeam style)
//! only when its cached value says "full". A record needs its bytes plus the
//! 8 bytes of the end marker free.
//!
//! A ring the consumer has emptied is *rewound*: once the producer's
//! position is [`REWIND_AT`] or more into the ring, it looks (at most once
//! per [`REWIND_AT`] bytes sent) whether `head` has caught up with `tail`,
//! and if so writes its next small record at offset 0, behind a padding
//! record flagged [`FLAG_REWIND`], as it would at the wrap point. A
//! latency-bound exchange then keeps reusing the ring's first few KiB,
//! which stay in both cores' nearest caches, instead of walking through
//! all of it: a 2-rank ping-pong of 1 KiB took 0.33 us through the whole
//! 256 KiB ring and 0.25 us through an 8 KiB one (Open MPI 0.27, whose
//! small messages go through a 4 KiB box per peer), while the large ring
//! is still there for windows of messages and 64 KiB eager records.

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
/// Bytes of a cache line.
const LINE: usize = 64;
/// Flag bit: the record is padding up to the wrap point, not a message.
const FLAG_PAD: u64 = 1;
/// Flag bit set in every published header word, so that none is zero.
const FLAG_VALID: u64 = 2;
/// Flag bit of a padding record that rewinds an emptied ring (see the
/// module's notes): its bytes are not counted as freed space by
/// [`RingConsumer::drain`]'s "crowded" judgement.
const FLAG_REWIND: u64 = 4;

/// How far into the ring the producer goes before it rewinds an emptied
/// ring, and how many bytes it sends between two looks at `head` while
/// the ring is not empty (one load of the consumer's line each). 8 KiB:
/// the ring size at which a 1 KiB ping-pong ran as fast as Open MPI's.
pub(crate) const REWIND_AT: u64 = 8 << 10;

/// The largest record written at offset 0 by a rewind: one of a message
/// of up to 4 KiB (latency-bound); larger records go on where the
/// producer is. Less than [`REWIND_AT`], so that a rewound record and its
/// end marker always fit in the room before the rewinding padding.
const REWIND_MAX: u64 = (4 << 10) + 64;
const _: () = assert!(REWIND_MAX + (HEADER as u64) <= REWIND_AT);

/// The largest payload a ring of `ring_bytes` accepts: a quarter of the
/// ring, so that a record (the payload, [`RECORD_OVERHEAD`] and at most
/// [`record_bytes_max`]'s gap) with the padding before it, at most a
/// record less 8 bytes, always fits in an empty ring. A whole power of two:
/// a ring of 256 KiB or more carries a message of exactly 64 KiB, which goal
/// sends eagerly where that pays (see goal-rt's eager sends with more ranks
/// than cores).
pub(crate) fn max_payload(ring_bytes: usize) -> usize {
    (ring_bytes / 4) & !7
}

/// Bytes that a consumer releasing more than this in one drain may have
/// kept a producer waiting for: a record and the padding before it need at
/// most twice the largest record.
fn crowded(cap: u64) -> u64 {
    cap - 2 * record_bytes_max(max_payload(cap as usize)) - HEADER as u64
}

/// Payloads from this many bytes start on a cache line (see [`payload_at`]).
const LINE_PAYLOAD_MIN: usize = 8 << 10;

/// Where the payload of `len` bytes of a record whose header is at byte
/// `at` of the ring starts: right after the envelope for a short one, on
/// the next line boundary for a longer one, so that both copies of it fill
/// whole lines (see the module's notes).
#[inline(always)]
fn payload_at(at: usize, len: usize) -> usize {
    // (`at + RECORD_OVERHEAD` is 8-aligned: rounding it to 8 keeps it.)
    let m = if len < LINE_PAYLOAD_MIN { 7 } else { LINE - 1 };
    (at + RECORD_OVERHEAD + m) & !m
}

/// Bytes a record with `len` payload bytes occupies with its header at
/// byte `at` of the ring (8-aligned): a multiple of 8.
#[inline(always)]
fn record_bytes(at: usize, len: usize) -> u64 {
    ((payload_at(at, len) + len + 7) & !7) as u64 - at as u64
}

/// The most bytes a record with `len` payload bytes occupies, wherever
/// its header is: with the header 32 bytes into a line, the envelope ends
/// 8 bytes into the next one and a long payload starts on the line after.
fn record_bytes_max(len: usize) -> u64 {
    record_bytes(32, len)
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
    /// The `tail` from which the producer may look again whether the
    /// consumer emptied the ring (see [`REWIND_AT`]).
    next_look: Cell<u64>,
    /// Whether it rewinds at all (`ShmNode::rewind_rings`).
    rewind: Cell<bool>,
    /// Bytes from the ring's start that records have been written to (they
    /// are written one after the other from offset 0; see
    /// [`written`](Self::written)).
    touched: Cell<u64>,
}

impl RingProducer {
    /// The producer of the ring `sender -> owner of map`.
    pub(crate) fn new(map: Arc<Mapping>, layout: &Layout, sender: usize, rewind: bool) -> RingProducer {
        let ptrs = RingPtrs::new(map, layout, sender);
        let tail = ptrs.tail().load(Ordering::Relaxed);
        let head = ptrs.head().load(Ordering::Acquire);
        RingProducer {
            ptrs,
            local_tail: Cell::new(tail),
            cached_head: Cell::new(head),
            next_look: Cell::new(tail),
            rewind: Cell::new(rewind),
            touched: Cell::new(0),
        }
    }

    /// Turns rewinding an emptied ring on or off (see the module's notes).
    pub(crate) fn set_rewind(&self, on: bool) {
        self.rewind.set(on);
    }

    /// Bytes from the ring's start that records have been written to: a
    /// push that moves it wrote ring pages for the first time, and its copy
    /// faulted them in. The first lap of a ring costs that: 2 ranks, 64 KiB
    /// records into a fresh 1 MiB ring, 60-80 us each for the first
    /// fifteen, 2-7 us later (a page fault some 3-4 us in this VM).
    pub(crate) fn written(&self) -> u64 {
        self.touched.get()
    }

    /// The offset in the ring at which the next record would start if it
    /// fits before the wrap point and no rewind moves it.
    pub(crate) fn position(&self) -> usize {
        (self.local_tail.get() & (self.ptrs.cap - 1)) as usize
    }

    /// Whether the next record, of `len` payload bytes at offset `off` of
    /// the ring with the counter at `tail`, goes to offset 0 because the
    /// consumer has emptied the ring (see the module's notes). Loads
    /// `head` at most once per [`REWIND_AT`] bytes sent.
    #[inline(always)]
    fn rewinds(&self, tail: u64, off: u64, len: usize) -> bool {
        // (With `off >= REWIND_AT`, the record at offset 0, at most
        // `REWIND_MAX` bytes, and its end marker fit in front of the
        // padding in an empty ring, so a rewind never makes a push fail.)
        if off < REWIND_AT || !self.rewind.get() || tail < self.next_look.get() || record_bytes(0, len) > REWIND_MAX {
            return false;
        }
        let head = self.ptrs.head().load(Ordering::Acquire);
        self.cached_head.set(head);
        if head == tail {
            return true;
        }
        self.next_look.set(tail + REWIND_AT);
        false
    }

    /// Whether a record of `len` payload bytes fits now: if it does,
    /// [`try_push`](Self::try_push) of it succeeds until something else is
    /// pushed (only the consumer changes the ring meanwhile, and it only
    /// frees space).
    #[inline(always)]
    pub(crate) fn fits(&self, len: usize) -> bool {
        let cap = self.ptrs.cap;
        let tail = self.local_tail.get();
        let off = tail & (cap - 1);
        let to_end = cap - off;
        let here = record_bytes(off as usize, len);
        let room = if to_end < here { to_end + record_bytes(0, len) } else { here } + HEADER as u64;
        if cap - (tail - self.cached_head.get()) < room {
            self.cached_head.set(self.ptrs.head().load(Ordering::Acquire));
            return cap - (tail - self.cached_head.get()) >= room;
        }
        true
    }

    /// Appends one record (envelope + the concatenation of `payload`), whose
    /// total payload must be at most [`max_payload`]. `false`: no room now.
    #[inline(always)]
    pub(crate) fn try_push(&self, env: &Envelope, payload: &[&[u8]], len: usize) -> bool {
        let cap = self.ptrs.cap;
        let tail = self.local_tail.get();
        let off = tail & (cap - 1);
        let here = record_bytes(off as usize, len);
        let to_end = cap - off;
        let rewind = to_end >= here && self.rewinds(tail, off, len);
        let pad = if to_end < here || rewind { to_end } else { 0 };
        let (at, need) = if pad != 0 { (0, record_bytes(0, len)) } else { (off as usize, here) };
        let total = pad + need;
        // The record, and the end marker after it.
        let room = total + HEADER as u64;
        if cap - (tail - self.cached_head.get()) < room {
            self.cached_head.set(self.ptrs.head().load(Ordering::Acquire));
            if cap - (tail - self.cached_head.get()) < room {
                return false;
            }
        }
        let base = self.ptrs.data;
        let end = at as u64 + need;
        if end + HEADER as u64 > self.touched.get() {
            self.touched.set(end + HEADER as u64);
        }
        let next = end & (cap - 1);
        // SAFETY: (1) the `room` bytes from `tail` are free: the consumer
        // released them (Acquire load of `head` above), and the consumer only
        // reads a byte after the header word in front of it was published, so
        // nobody reads these bytes until we publish; (2) every write stays
        // inside the ring: a record is written from `at` with
        // `at + need <= cap` (it fit before the wrap point, or it starts at 0
        // and `need <= cap / 4 + LINE < cap`), its payload from
        // `payload_at(at, len)` to `at + need` at most, the end marker at
        // `next < cap` (the record leaves room for it), the padding
        // word at `off < cap`; (3) all offsets are 8-aligned (counters advance
        // by multiples of 8), so the u64 accesses are aligned.
        unsafe {
            (base.add(next as usize) as *mut u64).write(0);
            (base.add(at + HEADER) as *mut Envelope).write(*env);
            let mut p = payload_at(at, len);
            for s in payload {
                crate::copy_bytes(s.as_ptr(), base.add(p), s.len());
                p += s.len();
            }
            header_word(base, at).store(len as u64 | (FLAG_VALID << 32), Ordering::Release);
            if pad != 0 {
                let flags = FLAG_PAD | FLAG_VALID | if rewind { FLAG_REWIND } else { 0 };
                header_word(base, off as usize).store(pad | (flags << 32), Ordering::Release);
            }
        }
        self.local_tail.set(tail + total);
        true
    }
}

/// The header word at byte `at` of the ring data at `base`.
///
/// # Safety
/// `at` must be 8-aligned and `at + 8` within the ring, whose mapping must
/// outlive the returned reference.
unsafe fn header_word<'a>(base: *mut u8, at: usize) -> &'a AtomicU64 {
    // SAFETY: aligned and in bounds (caller), and AtomicU64 has the layout of u64.
    unsafe { &*(base.add(at) as *const AtomicU64) }
}

/// The receiving side of the ring `sender -> me`, inside my inbox.
pub(crate) struct RingConsumer {
    ptrs: RingPtrs,
    /// Bytes ever consumed; equal to the shared `head` (we are its only writer).
    local_head: Cell<u64>,
    /// [`crowded`] of this ring, computed once.
    crowded: u64,
}

impl RingConsumer {
    /// The consumer of the ring `sender -> owner of map`.
    pub(crate) fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> RingConsumer {
        let ptrs = RingPtrs::new(map, layout, sender);
        let head = ptrs.head().load(Ordering::Relaxed);
        let crowded = crowded(ptrs.cap);
        RingConsumer {
            ptrs,
            local_head: Cell::new(head),
            crowded,
        }
    }

    /// Whether a record (or padding) is published at the consumer's
    /// position: one load of the producer's line, nothing consumed.
    #[inline]
    pub(crate) fn pending(&self) -> bool {
        let off = (self.local_head.get() & (self.ptrs.cap - 1)) as usize;
        // SAFETY: `off` is 8-aligned and `off + 8 <= cap` (the counters
        // advance by multiples of 8); the mapping lives in `ptrs`.
        unsafe { header_word(self.ptrs.data, off) }.load(Ordering::Relaxed) != 0
    }

    /// Hands every record published so far to `f` (envelope, payload in
    /// place), releasing each one's space after `f` returns. Returns how many,
    /// and whether the ring was crowded (a producer may then be waiting for
    /// space, see [`crowded`]).
    /// Costs one load of the producer's line when the ring is empty.
    #[inline]
    pub(crate) fn drain<F: FnMut(&Envelope, &[u8]) + ?Sized>(&self, f: &mut F) -> (usize, bool) {
        let cap = self.ptrs.cap;
        let base = self.ptrs.data;
        let start = self.local_head.get();
        let mut head = start;
        let mut n = 0;
        // Bytes of rewinding padding passed: freed, but never waited for.
        let mut rewound = 0;
        // At most one lap per call: a busy producer cannot keep us here forever.
        while head - start < cap {
            let off = (head & (cap - 1)) as usize;
            // SAFETY: `off` is 8-aligned and `off + 8 <= cap`; the mapping lives in `ptrs`.
            let word = unsafe { header_word(base, off) }.load(Ordering::Acquire);
            if word == 0 {
                break;
            }
            let len = (word & 0xffff_ffff) as usize;
            let flags = word >> 32;
            if flags & FLAG_PAD != 0 {
                assert_eq!(off + len, cap as usize, "shm ring corrupted: bad padding record");
                head += len as u64;
                if flags & FLAG_REWIND != 0 {
                    rewound += len as u64;
                }
                continue;
            }
            let at = payload_at(off, len);
            assert!(at + len <= cap as usize, "shm ring corrupted: record overruns the ring");
            // SAFETY: the record lies inside the ring (asserted), published by
            // the Release store of its header that we Acquire-loaded, and the
            // producer does not touch it until we advance `head`, which happens
            // only after `f` has returned and the slice is gone.
            let (env, payload) = unsafe {
                let env = (base.add(off + HEADER) as *const Envelope).read();
                (env, std::slice::from_raw_parts(base.add(at), len))
            };
            f(&env, payload);
            head += record_bytes(off, len);
            n += 1;
            self.local_head.set(head);
            self.ptrs.head().store(head, Ordering::Release);
        }
        if head != self.local_head.get() {
            // Trailing padding skipped.
            self.local_head.set(head);
            self.ptrs.head().store(head, Ordering::Release);
        }
        // A producer waits for space only when the ring is crowded; without a
        // tail we judge by how much we just consumed.
        (n, head - start - rewound > self.crowded)
    }
}
