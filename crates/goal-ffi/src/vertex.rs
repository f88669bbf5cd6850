//! The vertex-adding calls: sends, receives and local operations, each in
//! the contract's form (byte and element counts as `int`) and in a
//! large-count form named after MPI-4's (`GOAL_Send_c`, ..., counts and
//! lengths as `size_t`).
//!
//! Both forms share one body per call, which takes the count as `i64`
//! (lengths of the vector forms through [`Len`]), so that they refuse
//! and record exactly the same things. An `int` count cannot name a
//! message of 2 GiB or more; a `size_t` one can, and the schedule carries
//! up to 4 GiB - 1 bytes per message, vector and piece (the wire's
//! length field, see `goal_rt::proto`) and up to 4 Gi - 1 elements per
//! local operation. `GOAL_Compile` refuses a larger one, naming the vertex
//! (`count 5000000000 is larger than 4 GiB - 1`): send such data as
//! several messages (see docs/api.md, "Sizes past 2 GiB").

use crate::{graph, invalid, vertex_result, GOAL_DataType, GOAL_Graph, GOAL_MemType, GOAL_Op, GOAL_Vertex, GOAL_COPY, GOAL_USERSPACE, GOAL_WTIME};
use goal_rt::Error;
use goal_sched::{Buf, Vertex};
use std::ffi::{c_int, c_void};

/// The largest message a schedule carries (its `len` is 32 bits).
const MAX_MESSAGE: usize = u32::MAX as usize;

/// A length as C passes it: `int` (the contract's calls) or `size_t` (the
/// `_c` calls).
trait Len: Copy {
    /// The length as the graph keeps it; a `size_t` past `i64::MAX` becomes
    /// `i64::MAX`, which `GOAL_Compile` refuses as too large.
    fn to_i64(self) -> i64;
}

impl Len for c_int {
    fn to_i64(self) -> i64 {
        self as i64
    }
}

impl Len for usize {
    fn to_i64(self) -> i64 {
        i64::try_from(self).unwrap_or(i64::MAX)
    }
}

/// Refuses a NULL user-memory buffer that `count` bytes or elements would
/// be read from or written to: it would crash the rank at `GOAL_Run`.
fn user_buf(what: &str, name: &str, p: *const c_void, mem: GOAL_MemType, count: i64) -> Result<(), Error> {
    user_buf_of(what, name, p, mem, count, "a count")
}

/// [`user_buf`], saying what `count` is (`"a count"`, `"a length"`).
fn user_buf_of(what: &str, name: &str, p: *const c_void, mem: GOAL_MemType, count: i64, noun: &str) -> Result<(), Error> {
    if p.is_null() && mem == GOAL_USERSPACE && count > 0 {
        return Err(invalid(format!(
            "{what}: {name} is NULL with {noun} of {count} (offset 0 of the scratchpad is GOAL_SCRATCHPAD memory)"
        )));
    }
    Ok(())
}

/// [`user_buf`] for each piece of a gather list, `name[i]`.
fn user_pieces(what: &str, name: &str, pieces: &[(u64, i64)], mem: GOAL_MemType) -> Result<(), Error> {
    for (i, &(p, len)) in pieces.iter().enumerate() {
        user_buf_of(what, &format!("{name}[{i}]"), p as *const c_void, mem, len, "a length")?;
    }
    Ok(())
}

/// Copies a gather list from C arrays.
///
/// # Safety
/// `offsets` and `lengths` must be valid for `n` elements when `n > 0`.
unsafe fn list<L: Len>(what: &str, offsets: *mut *mut c_void, lengths: *mut L, n: c_int) -> Result<Vec<(u64, i64)>, Error> {
    if n < 0 {
        return Err(invalid(format!("{what}: num_elements {n} is negative")));
    }
    if n == 0 {
        return Ok(Vec::new());
    }
    if offsets.is_null() || lengths.is_null() {
        return Err(invalid(format!("{what}: the offsets or lengths array is NULL with {n} elements")));
    }
    // SAFETY: the caller guarantees both arrays hold n elements.
    let (o, l) = unsafe { (std::slice::from_raw_parts(offsets, n as usize), std::slice::from_raw_parts(lengths, n as usize)) };
    Ok(o.iter().zip(l).map(|(&p, &len)| (p as u64, len.to_i64())).collect())
}

/// The body of a send (`recv` false) or receive of `count` bytes.
///
/// # Safety
/// As for GOAL_Send.
#[allow(clippy::too_many_arguments)] // GOAL_Send's and GOAL_Recv's arguments, and which of the two
unsafe fn message(what: &str, recv: bool, g: GOAL_Graph, buf: *mut c_void, count: i64, peer: c_int, tag: c_int, mem: GOAL_MemType) -> GOAL_Vertex {
    vertex_result(what, || {
        // SAFETY: forwarded caller guarantee.
        let gr = unsafe { graph(g, what) }?;
        user_buf(what, "buf", buf, mem, count)?;
        // Bad values are kept: GOAL_Compile refuses them, naming the vertex.
        let b = Buf { mem: mem as i64, addr: buf as u64 };
        let v = if recv { gr.g.recv(b, count, peer as i64, tag as i64) } else { gr.g.send(b, count, peer as i64, tag as i64) };
        Ok(v as GOAL_Vertex)
    })
}

/// The body of a vector send (`recv` false) or receive.
///
/// # Safety
/// As for GOAL_SendVec.
#[allow(clippy::too_many_arguments)]
unsafe fn vector<L: Len>(
    what: &str,
    recv: bool,
    g: GOAL_Graph,
    offsets: *mut *mut c_void,
    lengths: *mut L,
    num_elements: c_int,
    peer: c_int,
    tag: c_int,
    mem: GOAL_MemType,
) -> GOAL_Vertex {
    vertex_result(what, || {
        // SAFETY: forwarded caller guarantees.
        let gr = unsafe { graph(g, what) }?;
        // SAFETY: forwarded caller guarantees.
        let pieces = unsafe { list(what, offsets, lengths, num_elements) }?;
        user_pieces(what, "offsets", &pieces, mem)?;
        let (mem, peer, tag) = (mem as i64, peer as i64, tag as i64);
        let v = if recv { Vertex::RecvVec { mem, pieces, peer, tag } } else { Vertex::SendVec { mem, pieces, peer, tag } };
        Ok(gr.g.add(v) as GOAL_Vertex)
    })
}

/// The body of a local operation over `n` elements.
///
/// # Safety
/// As for GOAL_LocalOp.
#[allow(clippy::too_many_arguments)]
unsafe fn local(
    what: &str,
    g: GOAL_Graph,
    (b1, b2, bres): (*mut c_void, *mut c_void, *mut c_void),
    op: GOAL_Op,
    dt: GOAL_DataType,
    element_width: c_int,
    n: i64,
    (b1_mem, b2_mem, bres_mem): (GOAL_MemType, GOAL_MemType, GOAL_MemType),
) -> GOAL_Vertex {
    vertex_result(what, || {
        // SAFETY: forwarded caller guarantee.
        let gr = unsafe { graph(g, what) }?;
        crate::userop::live_op(what, op)?;
        // COPY does not read b2; WTIME writes one double to bres and reads nothing.
        if op != GOAL_WTIME {
            user_buf(what, "b1", b1, b1_mem, n)?;
        }
        if op != GOAL_WTIME && op != GOAL_COPY {
            user_buf(what, "b2", b2, b2_mem, n)?;
        }
        user_buf(what, "bres", bres, bres_mem, if op == GOAL_WTIME { 1 } else { n })?;
        let b = |p: *mut c_void, m: GOAL_MemType| Buf { mem: m as i64, addr: p as u64 };
        Ok(gr.g.local(op as i64, dt as i64, element_width as i64, n, b(b1, b1_mem), b(b2, b2_mem), b(bres, bres_mem)) as GOAL_Vertex)
    })
}

/// One gather list of a local operation: pieces, lengths, how many.
type List<L> = (*mut *mut c_void, *mut L, c_int);

/// The body of a local operation over three gather lists.
///
/// # Safety
/// As for GOAL_LocalOpVec.
unsafe fn local_vec<L: Len>(
    what: &str,
    g: GOAL_Graph,
    lists: [List<L>; 3],
    dt: GOAL_DataType,
    element_width: c_int,
    op: GOAL_Op,
    mems: [GOAL_MemType; 3],
) -> GOAL_Vertex {
    vertex_result(what, || {
        // SAFETY: forwarded caller guarantees.
        let gr = unsafe { graph(g, what) }?;
        crate::userop::live_op(what, op)?;
        let mut l: [Vec<(u64, i64)>; 3] = Default::default();
        for (i, &(bufs, lengths, n)) in lists.iter().enumerate() {
            // SAFETY: forwarded caller guarantees.
            l[i] = unsafe { list(&format!("{what} (list {})", i + 1), bufs, lengths, n) }?;
        }
        if op != GOAL_WTIME {
            user_pieces(what, "buf1", &l[0], mems[0])?;
        }
        if op != GOAL_WTIME && op != GOAL_COPY {
            user_pieces(what, "buf2", &l[1], mems[1])?;
        }
        user_pieces(what, "buf3", &l[2], mems[2])?;
        let [l1, l2, l3] = l;
        let v = Vertex::LocalVec {
            op: op as i64,
            dt: dt as i64,
            width: element_width as i64,
            lists: [(mems[0] as i64, l1), (mems[1] as i64, l2), (mems[2] as i64, l3)],
        };
        Ok(gr.g.add(v) as GOAL_Vertex)
    })
}

/// Adds a send of `count` bytes at `buf` to rank `dest`; returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// `g` must be NULL or a live graph. `buf` is not read now: it must be valid
/// when the schedule runs (or be a scratchpad offset).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Send(g: GOAL_Graph, buf: *mut c_void, count: c_int, dest: c_int, tag: c_int, mem: GOAL_MemType) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { message("GOAL_Send", false, g, buf, count as i64, dest, tag, mem) }
}

/// GOAL_Send with a `size_t` count (large-count form): up to 4 GiB - 1 bytes (GOAL_Compile refuses more). Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_Send.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Send_c(g: GOAL_Graph, buf: *mut c_void, count: usize, dest: c_int, tag: c_int, mem: GOAL_MemType) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { message("GOAL_Send_c", false, g, buf, count.to_i64(), dest, tag, mem) }
}

/// Adds a receive of up to `count` bytes into `buf` from `source` (or GOAL_ANY_SOURCE); returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_Send.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Recv(g: GOAL_Graph, buf: *mut c_void, count: c_int, source: c_int, tag: c_int, mem: GOAL_MemType) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { message("GOAL_Recv", true, g, buf, count as i64, source, tag, mem) }
}

/// GOAL_Recv with a `size_t` count (large-count form): takes any message up to `count` bytes; a count past 4 GiB - 1, the largest message, counts as 4 GiB - 1. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_Send.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Recv_c(g: GOAL_Graph, buf: *mut c_void, count: usize, source: c_int, tag: c_int, mem: GOAL_MemType) -> GOAL_Vertex {
    // A buffer larger than any message takes every message: no refusal.
    let count = count.min(MAX_MESSAGE);
    // SAFETY: forwarded caller guarantees.
    unsafe { message("GOAL_Recv_c", true, g, buf, count.to_i64(), source, tag, mem) }
}

/// Adds a send of the pieces (sent as one contiguous message); the arrays are copied. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// `g` NULL or live; `offsets`/`lengths` valid for `num_elements` entries.
#[no_mangle]
pub unsafe extern "C" fn GOAL_SendVec(
    g: GOAL_Graph,
    offsets: *mut *mut c_void,
    lengths: *mut c_int,
    num_elements: c_int,
    dest: c_int,
    tag: c_int,
    mem: GOAL_MemType,
) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { vector("GOAL_SendVec", false, g, offsets, lengths, num_elements, dest, tag, mem) }
}

/// GOAL_SendVec with `size_t` lengths (large-count form): up to 4 GiB - 1 bytes in all. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_SendVec.
#[no_mangle]
pub unsafe extern "C" fn GOAL_SendVec_c(
    g: GOAL_Graph,
    offsets: *mut *mut c_void,
    lengths: *mut usize,
    num_elements: c_int,
    dest: c_int,
    tag: c_int,
    mem: GOAL_MemType,
) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { vector("GOAL_SendVec_c", false, g, offsets, lengths, num_elements, dest, tag, mem) }
}

/// Adds a receive scattered over the pieces; the arrays are copied. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_SendVec.
#[no_mangle]
pub unsafe extern "C" fn GOAL_RecvVec(
    g: GOAL_Graph,
    offsets: *mut *mut c_void,
    lengths: *mut c_int,
    num_elements: c_int,
    source: c_int,
    tag: c_int,
    mem: GOAL_MemType,
) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { vector("GOAL_RecvVec", true, g, offsets, lengths, num_elements, source, tag, mem) }
}

/// GOAL_RecvVec with `size_t` lengths (large-count form): up to 4 GiB - 1 bytes in all. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_SendVec.
#[no_mangle]
pub unsafe extern "C" fn GOAL_RecvVec_c(
    g: GOAL_Graph,
    offsets: *mut *mut c_void,
    lengths: *mut usize,
    num_elements: c_int,
    source: c_int,
    tag: c_int,
    mem: GOAL_MemType,
) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { vector("GOAL_RecvVec_c", true, g, offsets, lengths, num_elements, source, tag, mem) }
}

/// Adds `bres[i] = b1[i] OP b2[i]` for `num_elements` elements; returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// `g` NULL or live; the buffers must be valid when the schedule runs.
#[no_mangle]
pub unsafe extern "C" fn GOAL_LocalOp(
    g: GOAL_Graph,
    b1: *mut c_void,
    b2: *mut c_void,
    bres: *mut c_void,
    op: GOAL_Op,
    dt: GOAL_DataType,
    element_width: c_int,
    num_elements: c_int,
    b1_mem: GOAL_MemType,
    b2_mem: GOAL_MemType,
    bres_mem: GOAL_MemType,
) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { local("GOAL_LocalOp", g, (b1, b2, bres), op, dt, element_width, num_elements as i64, (b1_mem, b2_mem, bres_mem)) }
}

/// GOAL_LocalOp with a `size_t` element count (large-count form): up to 4 Gi - 1 elements. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_LocalOp.
#[no_mangle]
pub unsafe extern "C" fn GOAL_LocalOp_c(
    g: GOAL_Graph,
    b1: *mut c_void,
    b2: *mut c_void,
    bres: *mut c_void,
    op: GOAL_Op,
    dt: GOAL_DataType,
    element_width: c_int,
    num_elements: usize,
    b1_mem: GOAL_MemType,
    b2_mem: GOAL_MemType,
    bres_mem: GOAL_MemType,
) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { local("GOAL_LocalOp_c", g, (b1, b2, bres), op, dt, element_width, num_elements.to_i64(), (b1_mem, b2_mem, bres_mem)) }
}

/// Adds a local operation over three gather lists, element by element; returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// `g` NULL or live; each array valid for its count.
#[no_mangle]
pub unsafe extern "C" fn GOAL_LocalOpVec(
    g: GOAL_Graph,
    buf1: *mut *mut c_void,
    lengths1: *mut c_int,
    num_elements1: c_int,
    buf2: *mut *mut c_void,
    lengths2: *mut c_int,
    num_elements2: c_int,
    buf3: *mut *mut c_void,
    lengths3: *mut c_int,
    num_elements3: c_int,
    dt: GOAL_DataType,
    element_width: c_int,
    op: GOAL_Op,
    b1_mem: GOAL_MemType,
    b2_mem: GOAL_MemType,
    b3_mem: GOAL_MemType,
) -> GOAL_Vertex {
    let lists = [(buf1, lengths1, num_elements1), (buf2, lengths2, num_elements2), (buf3, lengths3, num_elements3)];
    // SAFETY: forwarded caller guarantees.
    unsafe { local_vec("GOAL_LocalOpVec", g, lists, dt, element_width, op, [b1_mem, b2_mem, b3_mem]) }
}

/// GOAL_LocalOpVec with `size_t` piece lengths (large-count form); the numbers of pieces stay `int`. Returns the vertex or GOAL_INVALID_VERTEX.
///
/// # Safety
/// As for GOAL_LocalOpVec.
#[no_mangle]
pub unsafe extern "C" fn GOAL_LocalOpVec_c(
    g: GOAL_Graph,
    buf1: *mut *mut c_void,
    lengths1: *mut usize,
    num_elements1: c_int,
    buf2: *mut *mut c_void,
    lengths2: *mut usize,
    num_elements2: c_int,
    buf3: *mut *mut c_void,
    lengths3: *mut usize,
    num_elements3: c_int,
    dt: GOAL_DataType,
    element_width: c_int,
    op: GOAL_Op,
    b1_mem: GOAL_MemType,
    b2_mem: GOAL_MemType,
    b3_mem: GOAL_MemType,
) -> GOAL_Vertex {
    let lists = [(buf1, lengths1, num_elements1), (buf2, lengths2, num_elements2), (buf3, lengths3, num_elements3)];
    // SAFETY: forwarded caller guarantees.
    unsafe { local_vec("GOAL_LocalOpVec_c", g, lists, dt, element_width, op, [b1_mem, b2_mem, b3_mem]) }
}
