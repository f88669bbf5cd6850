//! Collectives on a group (extension): `GOAL_Xxx_init_on(group, ...)` is
//! `GOAL_Xxx_init(...)` over the ranks of `group`, with roots, blocks and
//! per-rank arrays by rank in the group (and `GOAL_Xxx_init_c_on` the
//! large-count form). Collective over the group's ranks only, which compile
//! the group's schedules in the same order. (On a graph bound to a group,
//! `GOAL_CreateGraphOn`, every `GOAL_Xxx_append` is over that group
//! already.) Generated from the `_init` functions of `coll.rs`,
//! `coll_v.rs` and `coll_large.rs`, one twin each.

#![allow(clippy::too_many_arguments)]

use crate::coll::*;
use crate::coll_v::*;
use crate::{GOAL_DataType, GOAL_Group, GOAL_Op, GOAL_Schedule};
use std::ffi::{c_int, c_void};

/// Barrier: no rank leaves before every rank has entered.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Barrier_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Barrier_init_on(group: GOAL_Group, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Barrier_init_on", Some(group), &|g, grp, at, what| build_barrier(g, grp, at, what, alg))
}

/// Broadcast of `bytes` at `buf` from `root` to every rank's `buf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Bcast_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Bcast_init_on(group: GOAL_Group, buf: *mut c_void, bytes: usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Bcast_init_on", Some(group), &|g, grp, at, what| build_bcast(g, grp, at, what, buf, bytes, root, alg))
}

/// Gather: block i of `rbuf` at `root` receives rank i's `bytes_per_rank` at `sbuf` (`sbuf == rbuf`: in place).
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Gather_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gather_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Gather_init_on", Some(group), &|g, grp, at, what| build_gather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg))
}

/// Scatter: rank i's `rbuf` receives block i of `sbuf` at `root`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Scatter_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatter_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Scatter_init_on", Some(group), &|g, grp, at, what| build_scatter(g, grp, at, what, sbuf, bytes_per_rank, rbuf, root, alg))
}

/// Allgather: block i of every rank's `rbuf` receives rank i's `sbuf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Allgather_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgather_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Allgather_init_on", Some(group), &|g, grp, at, what| build_allgather(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg))
}

/// All-to-all: block j of rank i's `sbuf` lands in block i of rank j's `rbuf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Alltoall_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoall_init_on(group: GOAL_Group, sbuf: *const c_void, bytes_per_rank: usize, rbuf: *mut c_void, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Alltoall_init_on", Some(group), &|g, grp, at, what| build_alltoall(g, grp, at, what, sbuf, bytes_per_rank, rbuf, alg))
}

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Reduce_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Reduce_init_on", Some(group), &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count as i64, dt, element_width, op, root, alg))
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `sbuf`, bit-identical on every rank.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Allreduce_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Allreduce_init_on", Some(group), &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count as i64, dt, element_width, op, alg))
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction.
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Reduce_scatter_block_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: c_int, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Reduce_scatter_block_init_on", Some(group), &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank as i64, dt, element_width, op, alg))
}

/// Gatherv: `rbuf + rdispls[i]` at `root` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
/// Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Gatherv_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gatherv_init_on(group: GOAL_Group, sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init_on("GOAL_Gatherv_init_on", Some(group), &|g, grp, at, what| unsafe { build_gatherv(g, grp, at, what, sbuf, scount, rbuf, rcounts, rdispls, root, alg) })
}

/// Scatterv: rank i's `rbuf` receives `rcount` bytes, the `scounts[i]` bytes at `sbuf + sdispls[i]` at `root` (`sbuf == rbuf` at the root: in place).
/// Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Scatterv_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatterv_init_on(group: GOAL_Group, sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcount: usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init_on("GOAL_Scatterv_init_on", Some(group), &|g, grp, at, what| unsafe { build_scatterv(g, grp, at, what, sbuf, scounts, sdispls, rbuf, rcount, root, alg) })
}

/// Allgatherv: every rank's `rbuf + rdispls[i]` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
/// Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Allgatherv_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgatherv_init_on(group: GOAL_Group, sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init_on("GOAL_Allgatherv_init_on", Some(group), &|g, grp, at, what| unsafe { build_allgatherv(g, grp, at, what, sbuf, scount, rbuf, rcounts, rdispls, alg) })
}

/// All-to-all with per-rank counts: rank i's `scounts[j]` bytes at `sbuf + sdispls[j]` land in rank j's `rbuf + rdispls[i]` (`rcounts[i]` bytes there).
/// Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Alltoallv_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoallv_init_on(group: GOAL_Group, sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init_on("GOAL_Alltoallv_init_on", Some(group), &|g, grp, at, what| unsafe { build_alltoallv(g, grp, at, what, sbuf, scounts, sdispls, rbuf, rcounts, rdispls, alg) })
}

/// Reduce-scatter with per-rank counts: rank i's `rbuf` receives block i (`rcounts[i]` elements, from element `rcounts[0] + ... + rcounts[i-1]`) of the element-wise `op` of every rank's `sbuf` (`sum(rcounts)` elements; `sbuf == rbuf`: in place).
/// Over the ranks of `group` (extension). Arrays of one entry per rank have one per rank of `group`. Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Reduce_scatter_init`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_init_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init_on("GOAL_Reduce_scatter_init_on", Some(group), &|g, grp, at, what| unsafe { build_reduce_scatter(g, grp, at, what, sbuf, rbuf, rcounts, dt, element_width, op, alg) })
}

/// Reduce: `rbuf` at `root` receives the element-wise `op` of every rank's `count` elements at `sbuf`; `size_t` count (large-count form).
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Reduce_init_c`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_init_c_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Reduce_init_c_on", Some(group), &|g, grp, at, what| build_reduce(g, grp, at, what, sbuf, rbuf, count.min(i64::MAX as usize) as i64, dt, element_width, op, root, alg))
}

/// Allreduce: every rank's `rbuf` receives the element-wise `op` of all ranks' `count` elements at `sbuf`; `size_t` count (large-count form).
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Allreduce_init_c`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allreduce_init_c_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Allreduce_init_c_on", Some(group), &|g, grp, at, what| build_allreduce(g, grp, at, what, sbuf, rbuf, count.min(i64::MAX as usize) as i64, dt, element_width, op, alg))
}

/// Reduce-scatter with equal blocks: rank i's `rbuf` receives block i (`count_per_rank` elements) of the reduction; `size_t` count (large-count form).
/// Over the ranks of `group` (extension). Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// As `GOAL_Reduce_scatter_block_init_c`; `group` is any value (a bad one is refused).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_block_init_c_on(group: GOAL_Group, sbuf: *const c_void, rbuf: *mut c_void, count_per_rank: usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    init_on("GOAL_Reduce_scatter_block_init_c_on", Some(group), &|g, grp, at, what| build_reduce_scatter_block(g, grp, at, what, sbuf, rbuf, count_per_rank.min(i64::MAX as usize) as i64, dt, element_width, op, alg))
}
