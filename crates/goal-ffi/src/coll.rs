//! Collectives in the C API: persistent collectives (`GOAL_Xxx_init`, the
//! contract's section Collectives) and their composable form
//! (`GOAL_Xxx_append`, an extension).
//!
//! Both call the same pure graph builders of `goal_sched::coll`. `_init`
//! builds a graph of its own and compiles it; `_append` adds the collective to
//! the caller's graph and returns its *done* vertex (which finishes when every
//! operation of the collective has), writing its *entry* vertex (which every
//! first operation of the collective waits for) to `*entry`. So a whole
//! communication phase compiles into one schedule:
//!
//! ```c
//! GOAL_Vertex ar_entry;
//! GOAL_Vertex ar = GOAL_Allreduce_append(g, x, y, n, GOAL_FLOAT, 64, GOAL_ADD, GOAL_ALG_AUTO, &ar_entry);
//! GOAL_Vertex bc = GOAL_Bcast_append(g, y, n * 8, 0, GOAL_ALG_AUTO, &bc_entry);
//! GOAL_Requires(g, ar, bc_entry);   // the broadcast starts once the allreduce is done
//! ```
//!
//! Collectives use tags from `GOAL_COLL_TAG_BASE` (2^30) up, a span of 4096
//! per collective appended to one graph; user messages with tags below it
//! never mix with them.

use crate::{fail, graph, guard, invalid, GOAL_DataType, GOAL_Graph, GOAL_Group, GOAL_Op, GOAL_Schedule, GOAL_Vertex, GOAL_INVALID_VERTEX};
use goal_rt::{Error, ErrorKind};
use goal_sched::coll::{self, Algorithm, CollError, Group, Placement, Reduction};
use goal_sched::Graph;
use std::ffi::{c_int, c_void};

/// A collective algorithm (`GOAL_ALG_*`).
pub type GOAL_Algorithm = c_int;
/// Pick from the group size and message size (a table measured on this machine).
pub const GOAL_ALG_AUTO: GOAL_Algorithm = 0;
/// Direct messages between the root and everyone (reduce: the root
/// combines every rank's vector; alltoall: every message at once).
pub const GOAL_ALG_LINEAR: GOAL_Algorithm = 1;
/// Linear with a synchronisation message and a first segment (gather,
/// scatter); alltoall: pairwise exchange, one peer at a time.
pub const GOAL_ALG_LINEAR_SYNC: GOAL_Algorithm = 2;
/// In-order binomial tree.
pub const GOAL_ALG_BINOMIAL: GOAL_Algorithm = 3;
/// Recursive doubling (reduce_scatter_block: recursive halving).
pub const GOAL_ALG_RECURSIVE_DOUBLING: GOAL_Algorithm = 4;
/// Bruck's algorithm (barrier: dissemination).
pub const GOAL_ALG_BRUCK: GOAL_Algorithm = 5;
/// Ring (bcast: scatter + ring allgather).
pub const GOAL_ALG_RING: GOAL_Algorithm = 6;
/// Pipelined chain of segments (bcast).
pub const GOAL_ALG_PIPELINE: GOAL_Algorithm = 7;
/// Reduce-scatter by recursive halving, then gather or allgather.
pub const GOAL_ALG_RABENSEIFNER: GOAL_Algorithm = 8;
/// First tag collectives use; user tags below it never mix with theirs.
pub const GOAL_COLL_TAG_BASE: c_int = 1 << 30;

pub(crate) fn coll_error(what: &str, e: CollError) -> Error {
    match e {
        CollError::Unsupported(m) => Error::new(ErrorKind::Unsupported, format!("{what}: {m}")),
        CollError::BadArgument(m) => Error::new(ErrorKind::InvalidArgument, format!("{what}: {m}")),
    }
}

pub(crate) fn alg_of(what: &str, alg: GOAL_Algorithm) -> Result<Algorithm, Error> {
    Algorithm::from_raw(alg as i64).ok_or_else(|| invalid(format!("{what}: algorithm {alg} does not exist (GOAL_ALG_AUTO .. GOAL_ALG_RABENSEIFNER are 0 .. 8)")))
}

pub(crate) fn root_of(what: &str, root: c_int, size: u32) -> Result<u32, Error> {
    if root < 0 || root as u32 >= size {
        return Err(Error::new(ErrorKind::Rank, format!("{what}: root {root} is outside the group of {size} ranks")));
    }
    Ok(root as u32)
}

fn count_of(what: &str, count: i64) -> Result<u64, Error> {
    if count < 0 {
        return Err(invalid(format!("{what}: count {count} is negative")));
    }
    Ok(count as u64)
}

/// Refuses NULL for buffer `name` when `bytes` (or elements) of it are used
/// on this rank: it would crash the rank at `GOAL_Run`. Buffers only the
/// root uses (gather's `rbuf`, scatter's `sbuf`, reduce's `rbuf`) may be
/// NULL on the other ranks.
/// `amount` says how much, for the message ("8 bytes", "a count of 2").
pub(crate) fn buf_of(what: &str, name: &str, p: *const c_void, amount: (u64, &str), used_here: bool) -> Result<u64, Error> {
    if p.is_null() && amount.0 > 0 && used_here {
        return Err(invalid(format!("{what}: {name} is NULL with {}", amount.1)));
    }
    Ok(p as u64)
}

fn bytes_of(n: u64, per_rank: bool) -> (u64, String) {
    (n, format!("{n} bytes{}", if per_rank { " per rank" } else { "" }))
}

pub(crate) fn reduction_of(what: &str, dt: GOAL_DataType, width: c_int, op: GOAL_Op) -> Result<Reduction, Error> {
    crate::userop::live_op(what, op)?;
    Reduction::from_raw(op as i64, dt as i64, width as i64).map_err(|e| coll_error(what, e))
}

/// What `init` and `append` call: adds the collective to a graph.
pub(crate) type Build<'a> = dyn Fn(&mut Graph, Group, Placement, &str) -> Result<coll::Piece, Error> + 'a;

/// `_init`: builds the collective into a graph of its own and compiles it
/// on the world group.
pub(crate) fn init(what: &str, build: &Build<'_>) -> GOAL_Schedule {
    init_on(what, None, build)
}

/// `_init` and `_init_on`: builds the collective into a graph of its own
/// over group `grp` (`None`: the world) and compiles it there.
pub(crate) fn init_on(what: &str, grp: Option<GOAL_Group>, build: &Build<'_>) -> GOAL_Schedule {
    guard(what, std::ptr::null_mut(), || {
        let r = (|| {
            let rt = goal_rt::runtime(what)?;
            let group = match grp {
                None => rt.world(),
                Some(h) => crate::registry::group(h, &rt, what)?,
            };
            let mut g = Graph::new();
            build(&mut g, Group { rank: group.rank(), size: group.size() }, Placement { tag_base: GOAL_COLL_TAG_BASE as i64 }, what)?;
            let s = rt.compile_on(&group, &g).map_err(|mut e| {
                e.message = format!("{what}: {}", e.message);
                e
            })?;
            Ok(crate::registry::add_schedule(crate::goal_schedule { s, rt }))
        })();
        r.unwrap_or_else(|e: Error| {
            fail(e);
            std::ptr::null_mut()
        })
    })
}

/// `_append`: adds the collective to `g`; returns its done vertex, writes its entry vertex.
///
/// # Safety
/// `g` NULL or a live graph; `entry` NULL or valid for one write.
pub(crate) unsafe fn append(what: &str, g: GOAL_Graph, entry: *mut GOAL_Vertex, build: &Build<'_>) -> GOAL_Vertex {
    guard(what, GOAL_INVALID_VERTEX, || {
        let r = (|| {
            // SAFETY: forwarded caller guarantee.
            let gr = unsafe { graph(g, what) }?;
            let rt = goal_rt::runtime(what)?;
            let tag_base = gr.next_coll_tag;
            if tag_base + coll::TAG_SPAN > i32::MAX as i64 {
                return Err(invalid(format!("{what}: too many collectives in one graph (the tag space holds 262144)")));
            }
            let me = gr.group.as_ref().map_or(Group { rank: rt.rank(), size: rt.size() }, |grp| Group { rank: grp.rank(), size: grp.size() });
            let piece = build(&mut gr.g, me, Placement { tag_base }, what)?;
            gr.next_coll_tag += coll::TAG_SPAN;
            if !entry.is_null() {
                // SAFETY: the caller guarantees `entry` is valid for one write.
                unsafe { entry.write(piece.entry as GOAL_Vertex) };
            }
            Ok(piece.done as GOAL_Vertex)
        })();
        r.unwrap_or_else(|e: Error| {
            fail(e);
            GOAL_INVALID_VERTEX
        })
    })
}

/// Barrier: no rank leaves before every rank has entered.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Barrier_init(alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Barrier_init", &|g, grp, at, what| build_barrier(g, grp, at, what, alg))
}

/// Barrier: no rank leaves before every rank has entered.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Barrier_append(g: GOAL_Graph, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Barrier_append", g, entry, &|g, grp, at, what| build_barrier(g, grp, at, what, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_barrier(g: &mut Graph, grp: Group, at: Placement, what: &str, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    coll::barrier(g, grp, at, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Bcast_init(buf: *mut c_void, bytes: usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Bcast_init", &|g, grp, at, what| build_bcast(g, grp, at, what, buf, bytes, root, alg))
}

/// Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Bcast_append(g: GOAL_Graph, buf: *mut c_void, bytes: usize, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Bcast_append", g, entry, &|g, grp, at, what| build_bcast(g, grp, at, what, buf, bytes, root, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_bcast(g: &mut Graph, grp: Group, at: Placement, what: &str, buf: *mut c_void, bytes: usize, root: c_int, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let b = bytes_of(bytes as u64, false);
    let buf = buf_of(what, "buf", buf, (b.0, &b.1), true)?;
    coll::bcast(g, grp, at, buf, bytes as u64, root_of(what, root, grp.size)?, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gather_init(sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Gather_init", &|g, grp, at, what| build_gather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg))
}

/// Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gather_append(g: GOAL_Graph, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Gather_append", g, entry, &|g, grp, at, what| build_gather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_gather(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let root = root_of(what, root, grp.size)?;
    let b = bytes_of(bytes_per_rank as u64, true);
    let sbuf = buf_of(what, "sbuf", sbuf, (b.0, &b.1), true)?;
    let rbuf = buf_of(what, "rbuf (at the root)", rbuf, (b.0, &b.1), grp.rank == root)?;
    coll::gather(g, grp, at, sbuf, bytes_per_rank as u64, rbuf, root, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatter_init(sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Scatter_init", &|g, grp, at, what| build_scatter(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg))
}

/// Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatter_append(g: GOAL_Graph, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Scatter_append", g, entry, &|g, grp, at, what| build_scatter(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_scatter(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let root = root_of(what, root, grp.size)?;
    let b = bytes_of(bytes_per_rank as u64, true);
    let sbuf = buf_of(what, "sbuf (at the root)", sbuf, (b.0, &b.1), grp.rank == root)?;
    let rbuf = buf_of(what, "rbuf", rbuf, (b.0, &b.1), true)?;
    coll::scatter(g, grp, at, sbuf, bytes_per_rank as u64, rbuf, root, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgather_init(sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Allgather_init", &|g, grp, at, what| build_allgather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg))
}

/// Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgather_append(g: GOAL_Graph, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Allgather_append", g, entry, &|g, grp, at, what| build_allgather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_allgather(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let b = bytes_of(bytes_per_rank as u64, true);
    let sbuf = buf_of(what, "sbuf", sbuf, (b.0, &b.1), true)?;
    let rbuf = buf_of(what, "rbuf", rbuf, (b.0, &b.1), true)?;
    coll::allgather(g, grp, at, sbuf, bytes_per_rank as u64, rbuf, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoall_init(sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Alltoall_init", &|g, grp, at, what| build_alltoall(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg))
}

/// All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoall_append(g: GOAL_Graph, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Alltoall_append", g, entry, &|g, grp, at, what| build_alltoall(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_alltoall(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let b = bytes_of(bytes_per_rank as u64, true);
    let sbuf = buf_of(what, "sbuf", sbuf, (b.0, &b.1), true)?;
    let rbuf = buf_of(what, "rbuf", rbuf, (b.0, &b.1), true)?;
    coll::alltoall(g, grp, at, sbuf, bytes_per_rank as u64, rbuf, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_init(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Reduce_init", &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count as i64, dt, element_width, op, root, alg))
}

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_append(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Reduce_append", g, entry, &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count as i64, dt, element_width, op, root, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_reduce(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, rbuf: *mut c_void, count: i64, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let n = count_of(what, count)?;
    let root = root_of(what, root, grp.size)?;
    let c = format!("a count of {n}");
    let sbuf = buf_of(what, "sbuf", sbuf, (n, &c), true)?;
    let rbuf = buf_of(what, "rbuf (at the root)", rbuf, (n, &c), grp.rank == root)?;
    coll::reduce(g, grp, at, sbuf, rbuf, n, reduction_of(what, dt, element_width, op)?, root, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_init(sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Allreduce_init", &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count as i64, dt, element_width, op, alg))
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_append(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Allreduce_append", g, entry, &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count as i64, dt, element_width, op, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_allreduce(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, rbuf: *mut c_void, count: i64, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let n = count_of(what, count)?;
    let c = format!("a count of {n}");
    let sbuf = buf_of(what, "sbuf", sbuf, (n, &c), true)?;
    let rbuf = buf_of(what, "rbuf", rbuf, (n, &c), true)?;
    coll::allreduce(g, grp, at, sbuf, rbuf, n, reduction_of(what, dt, element_width, op)?, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_init(sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Reduce_scatter_block_init", &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank as i64, dt, element_width, op, alg))
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_append(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Reduce_scatter_block_append", g, entry, &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank as i64, dt, element_width, op, alg)) }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn build_reduce_scatter_block(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: i64, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let n = count_of(what, count_per_rank)?;
    let c = format!("a count of {n} per rank");
    let sbuf = buf_of(what, "sbuf", sbuf, (n, &c), true)?;
    let rbuf = buf_of(what, "rbuf", rbuf, (n, &c), true)?;
    coll::reduce_scatter_block(g, grp, at, sbuf, rbuf, n, reduction_of(what, dt, element_width, op)?, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}
