//! Groups in the C API (extension): the world group's handle, split by
//! colour and key, creation from a list of ranks, size, rank, rank
//! translation, free, and graphs bound to a group. Collectives on a group
//! are in `coll_on` (`GOAL_Xxx_init_on`); `GOAL_Xxx_append` on a graph
//! bound to a group builds the collective over that group.
//!
//! What a group is and how its members agree on it: goal-rt's `group`
//! module.

use crate::{fail, graph_of_group, guard, invalid, named, registry, GOAL_Graph, GOAL_Group, GOAL_SUCCESS};
use goal_rt::{Error, ErrorKind};
use std::ffi::c_int;

/// A colour that asks for no group in `GOAL_Group_split`, and the rank
/// `GOAL_Group_translate_ranks` gives for a rank not in the other group.
pub const GOAL_UNDEFINED: c_int = -32766;

fn code(what: &str, f: impl FnOnce() -> Result<c_int, Error>) -> c_int {
    guard(what, crate::GOAL_ERR_INTERNAL, || f().unwrap_or_else(fail))
}

/// Returns the handle of the world group (every rank, as GOAL_GroupSize and GOAL_MyRank see them), or NULL before GOAL_Init and after GOAL_Finalize. It is never freed.
#[no_mangle]
pub extern "C" fn GOAL_GroupWorld() -> GOAL_Group {
    guard("GOAL_GroupWorld", std::ptr::null_mut(), || match goal_rt::runtime("GOAL_GroupWorld") {
        Ok(_) => registry::WORLD_GROUP as GOAL_Group,
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    })
}

/// Splits `parent` as MPI_Comm_split does: the ranks that give the same `color` (>= 0) form a new group, ordered by `key` and then by their rank in `parent`; `*newgroup` receives it (NULL for GOAL_UNDEFINED). Collective over `parent`, in its compile order (it compiles and runs one small allgather). Returns GOAL_SUCCESS or an error code.
///
/// # Safety
/// `newgroup` must be NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Group_split(parent: GOAL_Group, color: c_int, key: c_int, newgroup: *mut GOAL_Group) -> c_int {
    let what = "GOAL_Group_split";
    code(what, || {
        if newgroup.is_null() {
            return Err(invalid(format!("{what}: newgroup is NULL")));
        }
        if color < 0 && color != GOAL_UNDEFINED {
            return Err(invalid(format!("{what}: color {color} is negative (give a colour >= 0, or GOAL_UNDEFINED for no group)")));
        }
        let rt = goal_rt::runtime(what)?;
        let p = registry::group(parent, &rt, what)?;
        let got = rt.split(&p, if color == GOAL_UNDEFINED { -1 } else { color }, key).map_err(named(what))?;
        let h = got.map_or(std::ptr::null_mut(), registry::add_group);
        // SAFETY: checked non-null; the caller guarantees it is writable.
        unsafe { newgroup.write(h) };
        Ok(GOAL_SUCCESS)
    })
}

/// Creates the group of the `n` ranks of `parent` listed in `ranks` (in that order) into `*newgroup`, as MPI_Comm_create_group does: collective over the listed ranks only, which all pass the same list and `tag`; the other ranks of `parent` take no part. A list with a rank twice, a rank outside `parent`, or without the caller is refused. Returns GOAL_SUCCESS or an error code.
///
/// # Safety
/// `ranks` must hold `n` ints; `newgroup` must be NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Group_create(parent: GOAL_Group, ranks: *const c_int, n: c_int, tag: c_int, newgroup: *mut GOAL_Group) -> c_int {
    let what = "GOAL_Group_create";
    code(what, || {
        if newgroup.is_null() {
            return Err(invalid(format!("{what}: newgroup is NULL")));
        }
        if n <= 0 || ranks.is_null() {
            return Err(invalid(format!("{what}: the list of ranks is empty or NULL (n = {n})")));
        }
        let rt = goal_rt::runtime(what)?;
        let p = registry::group(parent, &rt, what)?;
        // SAFETY: the caller guarantees `ranks` holds `n` ints.
        let list: Vec<i64> = unsafe { std::slice::from_raw_parts(ranks, n as usize) }.iter().map(|&r| r as i64).collect();
        let g = rt.create_group(&p, &list, tag).map_err(named(what))?;
        // SAFETY: checked non-null; the caller guarantees it is writable.
        unsafe { newgroup.write(registry::add_group(g)) };
        Ok(GOAL_SUCCESS)
    })
}

/// Returns the number of ranks in `g`, or an error code.
///
/// # Safety
/// None: any value is answered.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Group_size(g: GOAL_Group) -> c_int {
    let what = "GOAL_Group_size";
    code(what, || {
        let rt = goal_rt::runtime(what)?;
        Ok(registry::group(g, &rt, what)?.size() as c_int)
    })
}

/// Returns this process' rank in `g` (0 .. GOAL_Group_size(g)-1), or an error code.
///
/// # Safety
/// None: any value is answered.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Group_rank(g: GOAL_Group) -> c_int {
    let what = "GOAL_Group_rank";
    code(what, || {
        let rt = goal_rt::runtime(what)?;
        Ok(registry::group(g, &rt, what)?.rank() as c_int)
    })
}

/// Writes to `ranks_b[i]` the rank in group `b` of rank `ranks_a[i]` of group `a`, for i < n: GOAL_UNDEFINED where `b` does not hold it. Local (no communication). Returns GOAL_SUCCESS or an error code (a rank outside `a`: GOAL_ERR_RANK).
///
/// # Safety
/// `ranks_a` must hold `n` ints and `ranks_b` room for `n`.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Group_translate_ranks(a: GOAL_Group, n: c_int, ranks_a: *const c_int, b: GOAL_Group, ranks_b: *mut c_int) -> c_int {
    let what = "GOAL_Group_translate_ranks";
    code(what, || {
        if n < 0 || (n > 0 && (ranks_a.is_null() || ranks_b.is_null())) {
            return Err(invalid(format!("{what}: n = {n} with ranks_a or ranks_b NULL, or n negative")));
        }
        let rt = goal_rt::runtime(what)?;
        let (ga, gb) = (registry::group(a, &rt, what)?, registry::group(b, &rt, what)?);
        if n == 0 {
            return Ok(GOAL_SUCCESS);
        }
        // SAFETY: the caller guarantees `ranks_a` holds `n` ints.
        let from = unsafe { std::slice::from_raw_parts(ranks_a, n as usize) };
        let mut list = Vec::with_capacity(from.len());
        for (i, &r) in from.iter().enumerate() {
            if r < 0 || r as u32 >= ga.size() {
                return Err(Error::new(ErrorKind::Rank, format!("{what}: ranks_a[{i}] = {r} is outside group a of {} ranks", ga.size())));
            }
            list.push(r as u32);
        }
        let to = ga.translate(&list, &gb).map_err(named(what))?;
        // SAFETY: the caller guarantees `ranks_b` has room for `n` ints.
        let out = unsafe { std::slice::from_raw_parts_mut(ranks_b, n as usize) };
        for (o, t) in out.iter_mut().zip(to) {
            *o = t.map_or(GOAL_UNDEFINED, |t| t as c_int);
        }
        Ok(GOAL_SUCCESS)
    })
}

/// Frees the group `*g` and sets `*g` to NULL. Its schedules stay valid to free but can no longer run; its resources go back once they are freed too. Local. Returns GOAL_SUCCESS or an error code (the world group, or a freed group: GOAL_ERR_INVALID_ARGUMENT).
///
/// # Safety
/// `g` must be NULL or point to a group handle.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Group_free(g: *mut GOAL_Group) -> c_int {
    let what = "GOAL_Group_free";
    code(what, || {
        if g.is_null() {
            return Err(invalid(format!("{what}: the pointer to the group is NULL")));
        }
        // SAFETY: checked non-null; the caller guarantees it points to a handle.
        let h = unsafe { g.read() };
        if h.is_null() {
            return Err(invalid(format!("{what}: the group is NULL")));
        }
        let grp = registry::remove_group(h, what)?;
        grp.free().map_err(named(what))?;
        // SAFETY: as above.
        unsafe { g.write(std::ptr::null_mut()) };
        Ok(GOAL_SUCCESS)
    })
}

/// Returns a new, empty graph bound to group `grp`: its sends' and receives' peers, and the collectives appended to it, are ranks of `grp`; GOAL_Compile makes a schedule of `grp`, collective over its ranks. NULL (with GOAL_LastError()) for a bad or freed group.
///
/// # Safety
/// None: any value is answered.
#[no_mangle]
pub unsafe extern "C" fn GOAL_CreateGraphOn(grp: GOAL_Group) -> GOAL_Graph {
    let what = "GOAL_CreateGraphOn";
    guard(what, std::ptr::null_mut(), || {
        let r = (|| {
            let rt = goal_rt::runtime(what)?;
            let g = registry::group(grp, &rt, what)?;
            if g.is_freed() {
                return Err(invalid(format!("{what}: the group was freed")));
            }
            Ok(graph_of_group(g))
        })();
        r.unwrap_or_else(|e: Error| {
            fail(e);
            std::ptr::null_mut()
        })
    })
}
