//! Where an operation's bytes are: one buffer or a list of pieces, and the
//! copies between pieces, rings and streams. Leaf module: no engine state.

use super::*;

/// Where an operation's bytes are: one or more (pointer, length) pieces.
pub(super) enum Pieces {
    One([(*mut u8, usize); 1]),
    Many(Vec<(*mut u8, usize)>),
}

impl Pieces {
    pub(super) fn as_slice(&self) -> &[(*mut u8, usize)] {
        match self {
            Pieces::One(a) => a,
            Pieces::Many(v) => v,
        }
    }
}

/// A relative address as (entry of its table of [`Bases`], offset).
#[inline(always)]
pub(super) fn split(addr: u64) -> (usize, usize) {
    ((addr >> goal_sched::RUN_SHIFT) as usize, (addr & ((1 << goal_sched::RUN_SHIFT) - 1)) as usize)
}

/// Entries of a table of [`Bases`]: the scratchpad, then each run-time buffer.
pub(super) const BASES: usize = 1 + goal_sched::RUN_SLOTS;

/// What an execution's relative addresses are resolved against (see
/// `goal_sched::schedule`'s "Relative addresses"): a table of [`BASES`]
/// addresses, entry 0 its scratchpad, entry `1 + i` run-time buffer `i` as
/// its Run gave it. Per execution, so that executions of one schedule in
/// flight together each use their own buffers.
#[derive(Clone, Copy)]
pub(super) struct Bases(*const usize);

/// The table of an execution that has none (it ended): every base 0.
static NO_BASES: [usize; BASES] = [0; BASES];

impl Bases {
    /// The table `t`, which must outlive every use of the result.
    #[inline(always)]
    pub(super) fn of(t: &[usize; BASES]) -> Bases {
        Bases(t.as_ptr())
    }

    /// A table of zeros, for an execution that is gone.
    pub(super) fn none() -> Bases {
        Bases(NO_BASES.as_ptr())
    }
}

/// An operand's address: `addr` itself, or, if `rel`, the relative address
/// `addr` resolved against `b` (the base its top byte selects, plus the
/// offset below).
#[inline(always)]
pub(super) fn operand(b: Bases, addr: u64, rel: bool) -> *mut u8 {
    if rel {
        let (entry, off) = split(addr);
        // SAFETY: `b` points to a table of `BASES` entries (`Bases::of`,
        // `Bases::none`), and the compiler lets through only top bytes
        // 0 ..= RUN_SLOTS.
        let base = unsafe { *b.0.add(entry) };
        // (Wrapping: an empty operand of a gone execution resolves to a
        // number, never used as memory.)
        (base as *mut u8).wrapping_add(off)
    } else {
        addr as usize as *mut u8
    }
}

/// `len` bytes at `ptr` (none when `len` is 0, whatever `ptr`).
///
/// # Safety
/// With `len > 0`, `ptr` must be valid for reads of `len` bytes while the
/// slice lives.
pub(super) unsafe fn byte_slice<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: valid for `len` bytes (caller).
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// The send buffer pieces as slices (a single piece needs no allocation).
pub(super) fn slices_of(p: &Pieces) -> smallvec_like::Slices<'_> {
    smallvec_like::Slices::new(p.as_slice())
}

pub(super) mod smallvec_like {
    /// Up to four slices on the stack, more on the heap.
    pub enum Slices<'a> {
        Few([&'a [u8]; 4], usize),
        Many(Vec<&'a [u8]>),
    }

    impl<'a> Slices<'a> {
        pub fn new(pieces: &'a [(*mut u8, usize)]) -> Slices<'a> {
            // SAFETY: send buffers are valid for their lengths by the API contract.
            let slice = |&(ptr, len): &(*mut u8, usize)| -> &'a [u8] { unsafe { super::byte_slice(ptr, len) } };
            if pieces.len() <= 4 {
                let mut a: [&[u8]; 4] = [&[]; 4];
                for (i, p) in pieces.iter().enumerate() {
                    a[i] = slice(p);
                }
                Slices::Few(a, pieces.len())
            } else {
                Slices::Many(pieces.iter().map(slice).collect())
            }
        }
    }

    impl<'a> std::ops::Deref for Slices<'a> {
        type Target = [&'a [u8]];
        fn deref(&self) -> &Self::Target {
            match self {
                Slices::Few(a, n) => &a[..*n],
                Slices::Many(v) => v,
            }
        }
    }
}

/// Copies the concatenation of `p` into `out`.
pub(super) fn gather(p: &Pieces, out: &mut [u8]) {
    let mut off = 0;
    for &(ptr, len) in p.as_slice() {
        let n = len.min(out.len() - off);
        // SAFETY: send buffers are valid for their lengths by the API contract.
        unsafe { goal_transport::copy_bytes(ptr, out.as_mut_ptr().add(off), n) };
        off += n;
    }
}

/// Copies `data` over the pieces, in order.
/// Calls `f(ptr, offset, len)` for each part of bytes `from..to` of a
/// message laid out in `pieces` (`offset` counted from the message's
/// start), in order, and stops at the first error: a read or write of a
/// large message a piece at a time, wherever its buffer's pieces begin.
pub(super) fn each_span(pieces: &Pieces, from: usize, to: usize, mut f: impl FnMut(*mut u8, usize, usize) -> std::io::Result<()>) -> std::io::Result<()> {
    let mut at = 0usize;
    for &(p, l) in pieces.as_slice() {
        let (a, b) = (from.max(at), to.min(at + l));
        if a < b {
            // Within the piece: a - at < l.
            f(p.wrapping_add(a - at), a, b - a)?;
        }
        at += l;
        if at >= to {
            break;
        }
    }
    Ok(())
}

pub(super) fn scatter(data: &mut [u8], dst: &[(*mut u8, usize)]) {
    let mut off = 0;
    for &(ptr, len) in dst {
        if off >= data.len() {
            break;
        }
        let n = len.min(data.len() - off);
        // SAFETY: receive buffers are valid for their lengths by the API contract.
        unsafe { goal_transport::copy_bytes(data.as_ptr().add(off), ptr, n) };
        off += n;
    }
}

/// Copies `len` bytes from the concatenation of `src` to that of `dst`.
pub(super) fn copy_pieces(src: &Pieces, dst: &Pieces, len: usize) {
    let (s, d) = (src.as_slice(), dst.as_slice());
    let (mut i, mut j, mut oi, mut oj, mut left) = (0, 0, 0, 0, len);
    while left > 0 && i < s.len() && j < d.len() {
        let n = (s[i].1 - oi).min(d[j].1 - oj).min(left);
        // SAFETY: both buffers are valid for their lengths; `copy` tolerates overlap.
        unsafe { goal_transport::move_bytes(s[i].0.add(oi), d[j].0.add(oj), n) };
        oi += n;
        oj += n;
        left -= n;
        if oi == s[i].1 {
            i += 1;
            oi = 0;
        }
        if oj == d[j].1 {
            j += 1;
            oj = 0;
        }
    }
}

/// Walks bytes `pos..len` of the pieces' concatenation, one contiguous run
/// per call of `step(pointer, bytes)`, which returns how many it moved; stops
/// at the first short step. Returns the bytes moved.
pub(super) fn walk_pieces(pc: &Pieces, pos: usize, len: usize, mut step: impl FnMut(*mut u8, usize) -> usize) -> usize {
    let mut moved = 0;
    let mut skip = pos;
    for &(ptr, l) in pc.as_slice() {
        if skip >= l {
            skip -= l;
            continue;
        }
        let n = (l - skip).min(len - pos - moved);
        // SAFETY: `skip < l`, so the run stays inside this piece.
        let m = step(unsafe { ptr.add(skip) }, n);
        moved += m;
        if m < n || pos + moved >= len {
            break;
        }
        skip = 0;
    }
    moved
}

/// Pushes bytes `pos..len` of the pieces' concatenation into the stream to `p`.
pub(super) fn push_from(shm: &ShmNode, p: usize, pc: &Pieces, pos: usize, len: usize) -> usize {
    walk_pieces(pc, pos, len, |ptr, n| {
        // SAFETY: the send buffer is valid for its length by the API contract.
        shm.stream_push(p, unsafe { std::slice::from_raw_parts(ptr as *const u8, n) })
    })
}

/// Pops stream bytes from `p` into bytes `pos..len` of the pieces' concatenation.
pub(super) fn pop_into(shm: &ShmNode, p: usize, pc: &Pieces, pos: usize, len: usize) -> usize {
    walk_pieces(pc, pos, len, |ptr, n| {
        // SAFETY: the receive buffer is valid for its length by the API contract.
        shm.stream_pop(p, unsafe { std::slice::from_raw_parts_mut(ptr, n) })
    })
}
