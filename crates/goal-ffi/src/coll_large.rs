//! The reducing collectives in large-count form (`GOAL_Reduce_init_c`,
//! `GOAL_Allreduce_init_c`, `GOAL_Reduce_scatter_block_init_c` and their
//! `_append_c`), after MPI-4's `_c` functions: the element count is a
//! `size_t`, the rest as in the contract's form, whose body (`coll`) they
//! share. The other collectives take `size_t` byte counts already.
//!
//! The vector a reduction reduces is at most 4 GiB - 1 bytes (count x
//! element size), the largest message a schedule carries (see `vertex`):
//! a larger one is refused at `_init`/`_append`, naming the sizes. So the
//! `size_t` count reaches past `int`'s 2^31 - 1 for elements of 8 and 16
//! bits only, and past 2 GiB of data for every type.

use crate::coll::{append, build_allreduce, build_reduce, build_reduce_scatter_block, init, GOAL_Algorithm};
use crate::{GOAL_DataType, GOAL_Graph, GOAL_Op, GOAL_Schedule, GOAL_Vertex};
use std::ffi::{c_int, c_void};

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`; `size_t` count (large-count form).
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_init_c(sbuf: *const c_void, rbuf: *mut c_void, count: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Reduce_init_c", &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count.min(i64::MAX as usize) as i64, dt, element_width, op, root, alg))
}

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`; `size_t` count (large-count form).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_append_c(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, count: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Reduce_append_c", g, entry, &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count.min(i64::MAX as usize) as i64, dt, element_width, op, root, alg)) }
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `count` elements at `sbuf`; `size_t` count (large-count form).
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_init_c(sbuf: *const c_void, rbuf: *mut c_void, count: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Allreduce_init_c", &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count.min(i64::MAX as usize) as i64, dt, element_width, op, alg))
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `count` elements at `sbuf`; `size_t` count (large-count form).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_append_c(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, count: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Allreduce_append_c", g, entry, &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count.min(i64::MAX as usize) as i64, dt, element_width, op, alg)) }
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction; `size_t` count (large-count form).
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_init_c(sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init("GOAL_Reduce_scatter_block_init_c", &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank.min(i64::MAX as usize) as i64, dt, element_width, op, alg))
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction; `size_t` count (large-count form).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable; the buffers
/// must stay valid while executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_append_c(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Reduce_scatter_block_append_c", g, entry, &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank.min(i64::MAX as usize) as i64, dt, element_width, op, alg)) }
}
