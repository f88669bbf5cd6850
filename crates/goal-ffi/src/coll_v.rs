//! Collectives with per-rank counts and displacements in the C API:
//! `GOAL_Gatherv`, `GOAL_Scatterv`, `GOAL_Allgatherv`, `GOAL_Alltoallv` and
//! `GOAL_Reduce_scatter`, each as `_init` (a persistent collective) and
//! `_append` (added to a graph), like the collectives of `coll`.
//!
//! Arguments follow MPI's order (`MPI_Gatherv(sbuf, scount, rbuf,
//! rcounts, rdispls, root)` ...). Counts and displacements are `size_t`
//! arrays with one entry per rank of the group, in bytes for the
//! data-moving collectives and in elements for reduce_scatter; `sbuf ==
//! rbuf` means in place, as for the other collectives. An entry that is
//! negative as a signed number (a cast of a negative `int`) is refused, as
//! is a NULL array the call needs, naming it; the layout checks (a block
//! past 4 GiB − 1 bytes, overlapping receive blocks) are
//! `goal_sched::coll`'s.

use crate::coll::{alg_of, append, buf_of, coll_error, init, reduction_of, root_of};
use crate::{invalid, GOAL_Algorithm, GOAL_DataType, GOAL_Graph, GOAL_Op, GOAL_Schedule, GOAL_Vertex};
use goal_rt::Error;
use goal_sched::coll::{self, Group, Placement};
use goal_sched::Graph;
use std::ffi::{c_int, c_void};

/// The `size` entries of the `size_t` array `name`, or `None` for NULL.
///
/// # Safety
/// `p` must be NULL or valid for reading `size` entries.
unsafe fn array(what: &str, name: &str, p: *const usize, size: u32) -> Result<Option<Vec<u64>>, Error> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller guarantees that a non-NULL `p` holds one entry per rank of the group.
    let v = unsafe { std::slice::from_raw_parts(p, size as usize) };
    v.iter().enumerate().map(|(i, &x)| amount(what, &format!("{name}[{i}]"), x)).collect::<Result<Vec<u64>, Error>>().map(Some)
}

/// The array `name`, which this call needs: refused if NULL.
fn needed(what: &str, name: &str, v: Option<Vec<u64>>) -> Result<Vec<u64>, Error> {
    v.ok_or_else(|| invalid(format!("{what}: {name} is NULL (it takes one entry per rank)")))
}

/// The sum of `counts` (saturating: a sum past 4 GiB is refused later anyway).
fn sum(counts: &[u64]) -> u64 {
    counts.iter().fold(0u64, |a, &c| a.saturating_add(c))
}

/// A count, refused if it is negative as a signed number.
fn amount(what: &str, name: &str, x: usize) -> Result<u64, Error> {
    if x > isize::MAX as usize {
        return Err(invalid(format!("{what}: {name} is {x}, negative as a signed number ({})", x as isize)));
    }
    Ok(x as u64)
}

/// Refuses NULL for `name` when `n` bytes (or elements: `unit`) of it are used on this rank.
fn buffer(what: &str, name: &str, p: *const c_void, n: u64, unit: &str, used_here: bool) -> Result<u64, Error> {
    buf_of(what, name, p, (n, &format!("{n} {unit}")), used_here)
}

/// Gatherv: `rbuf + rdispls[i]` at `root` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
/// `rdispls` matters at the root only, and so do `rcounts` for GOAL_ALG_LINEAR
/// (they may be NULL elsewhere, as in MPI); GOAL_ALG_BINOMIAL and
/// GOAL_ALG_AUTO need `rcounts` on every rank.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// Each non-NULL array holds one entry per rank; the buffers must stay
/// valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gatherv_init(sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init("GOAL_Gatherv_init", &|g, grp, at, what| unsafe { build_gatherv(g, grp, at, what, sbuf, scount, rbuf, rcounts, rdispls, root, alg) })
}

/// Gatherv: `rbuf + rdispls[i]` at `root` receives rank i's `scount` bytes at `sbuf` (as GOAL_Gatherv_init).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable, each
/// non-NULL array one entry per rank; the buffers must stay valid while
/// executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Gatherv_append(g: GOAL_Graph, sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Gatherv_append", g, entry, &|g, grp, at, what| build_gatherv(g, grp, at, what, sbuf, scount, rbuf, rcounts, rdispls, root, alg)) }
}

/// # Safety
/// Each non-NULL array holds `grp.size` entries.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn build_gatherv(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, root: c_int, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let root = root_of(what, root, grp.size)?;
    let at_root = grp.rank == root;
    let scount = amount(what, "scount", scount)?;
    // SAFETY: forwarded caller guarantee (NULL or one entry per rank).
    let rcounts = unsafe { array(what, "rcounts", rcounts, grp.size) }?;
    // SAFETY: as above; read at the root only (MPI ignores it elsewhere).
    let rdispls = if at_root { unsafe { array(what, "rdispls", rdispls, grp.size) }? } else { None };
    let (rcounts, rdispls) = if at_root {
        (needed(what, "rcounts (at the root)", rcounts)?, needed(what, "rdispls (at the root)", rdispls)?)
    } else {
        (rcounts.unwrap_or_default(), Vec::new())
    };
    let sbuf = buffer(what, "sbuf", sbuf, scount, "bytes", !(at_root && std::ptr::eq(sbuf, rbuf as *const c_void)))?;
    let rbuf = buffer(what, "rbuf (at the root)", rbuf, sum(&rcounts), "bytes", at_root)?;
    coll::gatherv(g, grp, at, sbuf, scount, rbuf, &rcounts, &rdispls, root, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Scatterv: rank i's `rbuf` receives `rcount` bytes, the `scounts[i]` bytes at `sbuf + sdispls[i]` at `root` (`sbuf == rbuf` at the root: in place).
/// `sdispls` matters at the root only, and so do `scounts` for GOAL_ALG_LINEAR
/// (they may be NULL elsewhere, as in MPI); GOAL_ALG_BINOMIAL and
/// GOAL_ALG_AUTO need `scounts` on every rank.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// Each non-NULL array holds one entry per rank; the buffers must stay
/// valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatterv_init(sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcount: usize, root: c_int, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init("GOAL_Scatterv_init", &|g, grp, at, what| unsafe { build_scatterv(g, grp, at, what, sbuf, scounts, sdispls, rbuf, rcount, root, alg) })
}

/// Scatterv: rank i's `rbuf` receives `rcount` bytes from `sbuf + sdispls[i]` at `root` (as GOAL_Scatterv_init).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable, each
/// non-NULL array one entry per rank; the buffers must stay valid while
/// executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Scatterv_append(g: GOAL_Graph, sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcount: usize, root: c_int, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Scatterv_append", g, entry, &|g, grp, at, what| build_scatterv(g, grp, at, what, sbuf, scounts, sdispls, rbuf, rcount, root, alg)) }
}

/// # Safety
/// Each non-NULL array holds `grp.size` entries.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn build_scatterv(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcount: usize, root: c_int, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let root = root_of(what, root, grp.size)?;
    let at_root = grp.rank == root;
    let rcount = amount(what, "rcount", rcount)?;
    // SAFETY: forwarded caller guarantee (NULL or one entry per rank).
    let scounts = unsafe { array(what, "scounts", scounts, grp.size) }?;
    // SAFETY: as above; read at the root only (MPI ignores it elsewhere).
    let sdispls = if at_root { unsafe { array(what, "sdispls", sdispls, grp.size) }? } else { None };
    let (scounts, sdispls) = if at_root {
        (needed(what, "scounts (at the root)", scounts)?, needed(what, "sdispls (at the root)", sdispls)?)
    } else {
        (scounts.unwrap_or_default(), Vec::new())
    };
    let sbuf = buffer(what, "sbuf (at the root)", sbuf, sum(&scounts), "bytes", at_root)?;
    let rbuf = buffer(what, "rbuf", rbuf, rcount, "bytes", !(at_root && sbuf == rbuf as u64))?;
    coll::scatterv(g, grp, at, sbuf, &scounts, &sdispls, rbuf, rcount, root, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Allgatherv: every rank's `rbuf + rdispls[i]` receives rank i's `scount` bytes at `sbuf` (`rcounts[i]` bytes; `sbuf == rbuf`: in place).
/// Every rank gives the same `rcounts` and `rdispls`.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// Each array holds one entry per rank; the buffers must stay valid while
/// executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgatherv_init(sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init("GOAL_Allgatherv_init", &|g, grp, at, what| unsafe { build_allgatherv(g, grp, at, what, sbuf, scount, rbuf, rcounts, rdispls, alg) })
}

/// Allgatherv: every rank's `rbuf + rdispls[i]` receives rank i's `scount` bytes at `sbuf` (as GOAL_Allgatherv_init).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable, each array
/// one entry per rank; the buffers must stay valid while executions of the
/// compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Allgatherv_append(g: GOAL_Graph, sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Allgatherv_append", g, entry, &|g, grp, at, what| build_allgatherv(g, grp, at, what, sbuf, scount, rbuf, rcounts, rdispls, alg)) }
}

/// # Safety
/// Each non-NULL array holds `grp.size` entries.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn build_allgatherv(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, scount: usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let scount = amount(what, "scount", scount)?;
    // SAFETY: forwarded caller guarantee (NULL or one entry per rank).
    let rcounts = needed(what, "rcounts", unsafe { array(what, "rcounts", rcounts, grp.size) }?)?;
    // SAFETY: as above.
    let rdispls = needed(what, "rdispls", unsafe { array(what, "rdispls", rdispls, grp.size) }?)?;
    let sbuf = buffer(what, "sbuf", sbuf, scount, "bytes", !std::ptr::eq(sbuf, rbuf as *const c_void))?;
    let rbuf = buffer(what, "rbuf", rbuf, sum(&rcounts), "bytes", true)?;
    coll::allgatherv(g, grp, at, sbuf, scount, rbuf, &rcounts, &rdispls, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// All-to-all with per-rank counts: rank i's `scounts[j]` bytes at `sbuf + sdispls[j]` land in rank j's `rbuf + rdispls[i]` (`rcounts[i]` bytes there).
/// In place (`sbuf == rbuf`) `scounts` and `sdispls` are ignored and may be
/// NULL: `rbuf`'s blocks (by `rcounts`, `rdispls`) are sent and overwritten.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// Each non-NULL array holds one entry per rank; the buffers must stay
/// valid while executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoallv_init(sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init("GOAL_Alltoallv_init", &|g, grp, at, what| unsafe { build_alltoallv(g, grp, at, what, sbuf, scounts, sdispls, rbuf, rcounts, rdispls, alg) })
}

/// All-to-all with per-rank counts (as GOAL_Alltoallv_init).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable, each
/// non-NULL array one entry per rank; the buffers must stay valid while
/// executions of the compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Alltoallv_append(g: GOAL_Graph, sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Alltoallv_append", g, entry, &|g, grp, at, what| build_alltoallv(g, grp, at, what, sbuf, scounts, sdispls, rbuf, rcounts, rdispls, alg)) }
}

/// # Safety
/// Each non-NULL array holds `grp.size` entries.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn build_alltoallv(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, scounts: *const usize, sdispls: *const usize, rbuf: *mut c_void, rcounts: *const usize, rdispls: *const usize, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let in_place = std::ptr::eq(sbuf, rbuf as *const c_void);
    // SAFETY: forwarded caller guarantee (NULL or one entry per rank).
    let rcounts = needed(what, "rcounts", unsafe { array(what, "rcounts", rcounts, grp.size) }?)?;
    // SAFETY: as above.
    let rdispls = needed(what, "rdispls", unsafe { array(what, "rdispls", rdispls, grp.size) }?)?;
    let (scounts, sdispls) = if in_place {
        (Vec::new(), Vec::new())
    } else {
        // SAFETY: as above.
        let scounts = needed(what, "scounts", unsafe { array(what, "scounts", scounts, grp.size) }?)?;
        // SAFETY: as above.
        (scounts, needed(what, "sdispls", unsafe { array(what, "sdispls", sdispls, grp.size) }?)?)
    };
    let sbuf = buffer(what, "sbuf", sbuf, sum(&scounts), "bytes", !in_place)?;
    let rbuf = buffer(what, "rbuf", rbuf, sum(&rcounts), "bytes", true)?;
    coll::alltoallv(g, grp, at, sbuf, &scounts, &sdispls, rbuf, &rcounts, &rdispls, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}

/// Reduce-scatter with per-rank counts: rank i's `rbuf` receives block i (`rcounts[i]` elements, from element `rcounts[0] + ... + rcounts[i-1]`) of the element-wise `op` of every rank's `sbuf` (`sum(rcounts)` elements; `sbuf == rbuf`: in place).
/// Every rank gives the same `rcounts`; any may be zero.
/// Returns the compiled, reusable schedule, or NULL with GOAL_LastError() saying why.
///
/// # Safety
/// `rcounts` holds one entry per rank; the buffers must stay valid while
/// executions of the schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_init(sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> GOAL_Schedule {
    // SAFETY: forwarded caller guarantees.
    init("GOAL_Reduce_scatter_init", &|g, grp, at, what| unsafe { build_reduce_scatter(g, grp, at, what, sbuf, rbuf, rcounts, dt, element_width, op, alg) })
}

/// Reduce-scatter with per-rank counts (as GOAL_Reduce_scatter_init).
/// Appended to graph `g` (extension): returns the collective's done vertex, or
/// GOAL_INVALID_VERTEX; writes its entry vertex to `*entry` unless `entry` is NULL.
///
/// # Safety
/// `g` must be NULL or a live graph, `entry` NULL or writable, `rcounts`
/// one entry per rank; the buffers must stay valid while executions of the
/// compiled schedule run.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Reduce_scatter_append(g: GOAL_Graph, sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm, entry: *mut GOAL_Vertex) -> GOAL_Vertex {
    // SAFETY: forwarded caller guarantees.
    unsafe { append("GOAL_Reduce_scatter_append", g, entry, &|g, grp, at, what| build_reduce_scatter(g, grp, at, what, sbuf, rbuf, rcounts, dt, element_width, op, alg)) }
}

/// # Safety
/// A non-NULL `rcounts` holds `grp.size` entries.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn build_reduce_scatter(g: &mut Graph, grp: Group, at: Placement, what: &str, sbuf: *const c_void, rbuf: *mut c_void, rcounts: *const usize, dt: GOAL_DataType, element_width: c_int, op: GOAL_Op, alg: GOAL_Algorithm) -> Result<coll::Piece, Error> {
    let red = reduction_of(what, dt, element_width, op)?;
    // SAFETY: forwarded caller guarantee (NULL or one entry per rank).
    let rcounts = needed(what, "rcounts", unsafe { array(what, "rcounts", rcounts, grp.size) }?)?;
    let sbuf = buffer(what, "sbuf", sbuf, sum(&rcounts), "elements", true)?;
    let rbuf = buffer(what, "rbuf", rbuf, rcounts.get(grp.rank as usize).copied().unwrap_or(0), "elements", true)?;
    coll::reduce_scatter(g, grp, at, sbuf, rbuf, &rcounts, red, alg_of(what, alg)?).map_err(|e| coll_error(what, e))
}
