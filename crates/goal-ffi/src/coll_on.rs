//! Collectives on a group (extension): `GOAL_Xxx_init_on(group, ...)` is
//! `GOAL_Xxx_init(...)` over the ranks of `group`, with roots and blocks
//! numbered by rank in the group. Collective over the group's ranks only,
//! which compile the group's schedules in the same order. (On a graph bound
//! to a group, `GOAL_CreateGraphOn`, every `GOAL_Xxx_append` is over that
//! group already.)

#![allow(clippy::too_many_arguments)]

use crate::coll::*;
use crate::{GOAL_DataType, GOAL_Group, GOAL_Op, GOAL_Schedule};
use std::ffi::{c_int, c_void};

/// Barrier: no rank leaves before every rank has entered.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Barrier_init_on(group: GOAL_Group, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Barrier_init_on", Some(group), &|g, grp, at, what| build_barrier(g, grp, at, what, alg))
}

/// Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Bcast_init_on(group: GOAL_Group, buf: *mut c_void, bytes: usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Bcast_init_on", Some(group), &|g, grp, at, what| build_bcast(g, grp, at, what, buf, bytes, root, alg))
}

/// Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gather_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Gather_init_on", Some(group), &|g, grp, at, what| build_gather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg))
}

/// Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatter_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Scatter_init_on", Some(group), &|g, grp, at, what| build_scatter(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg))
}

/// Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgather_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Allgather_init_on", Some(group), &|g, grp, at, what| build_allgather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg))
}

/// All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoall_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Alltoall_init_on", Some(group), &|g, grp, at, what| build_alltoall(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg))
}

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Reduce_init_on", Some(group), &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count, dt, element_width, op, root, alg))
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Allreduce_init_on", Some(group), &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count, dt, element_width, op, alg))
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// The buffers must stay valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Reduce_scatter_block_init_on", Some(group), &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank, dt, element_width, op, alg))
}
