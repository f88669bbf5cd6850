//! The bulk stream: a single-producer/single-consumer byte ring for large
//! transfers.
//!
//! Unlike the message ring there are no records: the producer copies in as
//! many bytes as fit and the consumer copies out as many as are there, each
//! copy split in two at the wrap point. To let both copies run at the same
//! time on two cores, a push publishes its `tail` every [`CHUNK`] bytes and a
//! pop releases its `head` every [`CHUNK`] bytes, rather than once at the end.
//! Same counters, orderings and caching as the ring (see `ring.rs`).
//!
//! A message uses one of three prefixes of the stream's bytes (its
//! *window*, see [`Window`]): a burst of messages streams faster through a
//! window that stays in the cores' caches; a lone message wants the whole
//! stream, so that its sender can finish without waiting for the reader;
//! and a message longer than the stream, with nothing coming the other
//! way, streams faster with twice the room, so that the stream's bytes
//! are mapped twice its size (each side faults in only the windows it
//! uses: a pair that never sends such a message never touches the second
//! half). Both sides set the window of the message they copy next
//! ([`StreamProducer::set_window`], [`StreamConsumer::set_window`]; the
//! receiver chooses it and its CTS tells the sender). A byte's place is
//! its counter modulo the window. The producer changes its window only
//! when the stream is empty (it pushes nothing until the consumer has
//! taken every byte before), so the bytes in flight were all placed with
//! one window, the consumer's for them.

use super::layout::{Layout, P_STREAM_HEAD, P_STREAM_TAIL};
use super::map::Mapping;
use crate::sync::{AtomicU64, Ordering};
use std::cell::Cell;
use std::sync::Arc;

/// Bytes copied between two publications of a counter.
pub const CHUNK: usize = 64 << 10;

/// The narrow window: the first bytes of the stream, where a burst of
/// messages goes (see the module's notes).
pub const NARROW: usize = 256 << 10;

/// Which prefix of a stream a message goes through (see the module's notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// The first [`NARROW`] bytes (all of a stream no larger), for bursts.
    Narrow,
    /// The stream's configured size (`GOAL_SHM_STREAM_BYTES`).
    Stream,
    /// Twice the stream's size, for messages longer than the stream with
    /// nothing coming the other way.
    Long,
}

/// The size in bytes of window `w` of a stream of `stream` bytes (a power
/// of two): each window's size is a power of two too.
pub fn window_bytes(stream: u64, w: Window) -> u64 {
    match w {
        Window::Narrow => stream.min(NARROW as u64),
        Window::Stream => stream,
        Window::Long => 2 * stream,
    }
}

/// The pointers one side of a stream needs, all inside `map`.
///
/// Invariant: `tail`/`head` point at the pair block's stream counters and
/// `data` at its `2 * stream` stream bytes, all inside `map`, which the
/// struct keeps alive.
struct StreamPtrs {
    _map: Arc<Mapping>,
    tail: *const AtomicU64,
    head: *const AtomicU64,
    data: *mut u8,
    /// The configured stream size in bytes, a power of two; `2 * stream`
    /// bytes are mapped at `data` (see [`Window::Long`]).
    stream: u64,
    /// The bytes from `data` this side has faulted in (see
    /// [`StreamPtrs::populate_once`]).
    populated: Cell<u64>,
}

impl StreamPtrs {
    fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> StreamPtrs {
        let pair = layout.pair(sender);
        let tail: *const AtomicU64 = map.atomic_u64(pair + P_STREAM_TAIL);
        let head: *const AtomicU64 = map.atomic_u64(pair + P_STREAM_HEAD);
        let off = layout.stream_data(sender);
        assert!(off + layout.stream_room() <= map.len());
        // SAFETY: `off + stream_room() <= map.len()` (checked above).
        let data = unsafe { map.ptr().add(off) };
        StreamPtrs {
            _map: map,
            tail,
            head,
            data,
            stream: layout.stream_bytes as u64,
            populated: Cell::new(0),
        }
    }

    /// Maps all of the pages of a window of `win` bytes into this process
    /// at once, at the first copy through it. Otherwise the first megabyte through a stream
    /// faults its pages in one by one, on both sides, and the first
    /// messages take ten to twenty times as long as later ones (2 ranks,
    /// 256 KiB messages: the first four 700-1900 us, then 33-55), which
    /// is what goal-rt's choice between the stream and CMA times them by.
    /// A kernel without `MADV_POPULATE_WRITE` (before Linux 5.14) leaves
    /// the faults to the copies, as before.
    #[inline]
    fn populate_once(&self, win: u64) {
        if self.populated.get() < win {
            self.populate(win);
        }
    }

    /// See [`StreamPtrs::populate_once`].
    #[cold]
    fn populate(&self, win: u64) {
        self.populated.set(win);
        let page = crate::sys::page_size();
        let start = self.data as usize & !(page - 1);
        let len = self.data as usize + win as usize - start;
        // SAFETY: `start` is the page holding `data`, inside `_map` (a
        // mapping starts on a page), and `start + len` is the window's end,
        // inside `_map` too (`win <= 2 * stream`, struct invariant).
        // Populating changes no byte.
        let _ = unsafe { crate::sys::madvise(start as *mut u8, len, libc::MADV_POPULATE_WRITE) };
    }

    /// See [`window_bytes`].
    fn window(&self, w: Window) -> u64 {
        window_bytes(self.stream, w)
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

/// The sending side of the stream `me -> peer`, inside the peer's inbox.
pub(crate) struct StreamProducer {
    ptrs: StreamPtrs,
    /// Bytes ever published; equal to the shared `tail` (we are its only writer).
    local_tail: Cell<u64>,
    /// A value the shared `head` has had (`<= head`).
    cached_head: Cell<u64>,
    /// The window the bytes in flight were placed with (a power of two,
    /// at most the stream's size), and the one the next bytes want.
    window: Cell<u64>,
    want: Cell<u64>,
}

impl StreamProducer {
    /// The producer of the stream `sender -> owner of map`.
    pub(crate) fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> StreamProducer {
        let ptrs = StreamPtrs::new(map, layout, sender);
        let tail = ptrs.tail().load(Ordering::Relaxed);
        let head = ptrs.head().load(Ordering::Acquire);
        let cap = ptrs.stream;
        StreamProducer {
            ptrs,
            local_tail: Cell::new(tail),
            cached_head: Cell::new(head),
            window: Cell::new(cap),
            want: Cell::new(cap),
        }
    }

    /// The window of the bytes pushed from now on (see the module's notes).
    pub(crate) fn set_window(&self, w: Window) {
        self.want.set(self.ptrs.window(w));
    }

    /// Bytes pushed that the consumer has not copied out yet.
    pub(crate) fn unread(&self) -> usize {
        self.cached_head.set(self.ptrs.head().load(Ordering::Acquire));
        (self.local_tail.get() - self.cached_head.get()) as usize
    }

    /// Copies as much of `src` as fits; returns the bytes taken. Nothing
    /// while the window is to change and bytes placed with the old one are
    /// still in the stream.
    pub(crate) fn push(&self, src: &[u8]) -> usize {
        let mut tail = self.local_tail.get();
        if self.want.get() != self.window.get() {
            self.cached_head.set(self.ptrs.head().load(Ordering::Acquire));
            if self.cached_head.get() != tail {
                return 0;
            }
            self.window.set(self.want.get());
        }
        let win = self.window.get();
        self.ptrs.populate_once(win);
        let mut free = win - (tail - self.cached_head.get());
        if (free as usize) < src.len() {
            self.cached_head
                .set(self.ptrs.head().load(Ordering::Acquire));
            free = win - (tail - self.cached_head.get());
        }
        let n = src.len().min(free as usize);
        let mut done = 0;
        while done < n {
            let k = (n - done).min(CHUNK);
            // SAFETY: the `k` bytes from `tail` are free (the consumer
            // released them: Acquire load of `head`; the bytes in flight
            // were all placed with this window, see the module's notes),
            // so only we touch them until we publish; `copy_in` stays
            // inside the window, a prefix of the ring.
            unsafe { copy_in(self.ptrs.data, win, tail, &src[done..done + k]) };
            tail += k as u64;
            done += k;
            self.ptrs.tail().store(tail, Ordering::Release);
        }
        self.local_tail.set(tail);
        n
    }
}

/// The receiving side of the stream `sender -> me`, inside my inbox.
pub(crate) struct StreamConsumer {
    ptrs: StreamPtrs,
    /// Bytes ever consumed; equal to the shared `head` (we are its only writer).
    local_head: Cell<u64>,
    /// A value the shared `tail` has had (`<= tail`); bytes below it are published.
    cached_tail: Cell<u64>,
    /// The window of the bytes popped next (see the module's notes).
    window: Cell<u64>,
}

impl StreamConsumer {
    /// The consumer of the stream `sender -> owner of map`.
    pub(crate) fn new(map: Arc<Mapping>, layout: &Layout, sender: usize) -> StreamConsumer {
        let ptrs = StreamPtrs::new(map, layout, sender);
        let head = ptrs.head().load(Ordering::Relaxed);
        let cap = ptrs.stream;
        StreamConsumer {
            ptrs,
            local_head: Cell::new(head),
            cached_tail: Cell::new(head),
            window: Cell::new(cap),
        }
    }

    /// The window of the bytes popped from now on: the one their producer
    /// placed them with (the receiver chose it for their message).
    pub(crate) fn set_window(&self, w: Window) {
        self.window.set(self.ptrs.window(w));
    }

    /// Bytes published and not yet consumed.
    pub(crate) fn available(&self) -> usize {
        self.cached_tail.set(self.ptrs.tail().load(Ordering::Acquire));
        (self.cached_tail.get() - self.local_head.get()) as usize
    }

    /// Copies up to `dst.len()` available bytes into `dst`; returns how many.
    pub(crate) fn pop(&self, dst: &mut [u8]) -> usize {
        let win = self.window.get();
        self.ptrs.populate_once(win);
        let mut head = self.local_head.get();
        let mut avail = self.cached_tail.get() - head;
        if (avail as usize) < dst.len() {
            self.cached_tail
                .set(self.ptrs.tail().load(Ordering::Acquire));
            avail = self.cached_tail.get() - head;
        }
        let n = dst.len().min(avail as usize);
        let mut done = 0;
        while done < n {
            let k = (n - done).min(CHUNK);
            // SAFETY: the `k` bytes from `head` are published (Acquire load
            // of `tail`) and the producer leaves them alone until we release
            // them below; `copy_out` stays inside the window, a prefix of
            // the ring.
            unsafe { copy_out(self.ptrs.data, win, head, &mut dst[done..done + k]) };
            head += k as u64;
            done += k;
            self.ptrs.head().store(head, Ordering::Release);
        }
        self.local_head.set(head);
        n
    }
}

/// Copies `src` into the ring of `cap` bytes at `data`, starting at counter `pos`.
///
/// # Safety
///
/// `data` must point at `cap` writable bytes (`cap` a power of two,
/// `src.len() <= cap`), and nobody else may access the `src.len()` ring bytes
/// from `pos` during the call.
unsafe fn copy_in(data: *mut u8, cap: u64, pos: u64, src: &[u8]) {
    let off = (pos & (cap - 1)) as usize;
    let first = src.len().min(cap as usize - off);
    // SAFETY: both halves lie inside the ring (`off + first <= cap`,
    // `src.len() - first <= cap`) and are ours alone (caller's contract).
    unsafe {
        crate::copy_bytes(src.as_ptr(), data.add(off), first);
        crate::copy_bytes(src.as_ptr().add(first), data, src.len() - first);
    }
}

/// Copies `dst.len()` bytes out of the ring of `cap` bytes at `data`,
/// starting at counter `pos`.
///
/// # Safety
///
/// As for [`copy_in`], with the ring bytes readable.
unsafe fn copy_out(data: *const u8, cap: u64, pos: u64, dst: &mut [u8]) {
    let off = (pos & (cap - 1)) as usize;
    let first = dst.len().min(cap as usize - off);
    // SAFETY: as in `copy_in`, mirrored.
    unsafe {
        crate::copy_bytes(data.add(off), dst.as_mut_ptr(), first);
        crate::copy_bytes(data, dst.as_mut_ptr().add(first), dst.len() - first);
    }
}
