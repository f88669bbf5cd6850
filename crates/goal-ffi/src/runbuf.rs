//! Run-time buffers in the C API: memory a schedule leaves open, given by
//! each run (`GOAL_RunWith`).
//!
//! A graph names byte `off` of run-time buffer `i` as memory type
//! `GOAL_RUNBUF(i)` with the offset cast to a pointer (as
//! `GOAL_SCRATCHPAD` takes one); a collective's `_init` or `_append`
//! takes `GOAL_BUF_AT_RUN(i)` for a whole buffer. `GOAL_BUF_AT_RUN(i)` is
//! the address `(i + 1) << 56`, where no process has memory, so it passes
//! through every call that takes a user address unchanged; goal-sched turns
//! it into an operand of run-time buffer `i` (see `goal_sched::run_addr`).
//! The schedule records how many bytes of each buffer it uses, and every
//! run gives the buffers: ranks agree on sizes, not on addresses.

use crate::{fail, guard, named, new_handle, registry, GOAL_Handle, GOAL_MemType, GOAL_Schedule};
use goal_rt::{Error, ErrorKind};
use std::ffi::{c_int, c_void};

/// Memory type of run-time buffer 0: `GOAL_RUNBUF(i)` is `GOAL_RUNBUF0 + i`,
/// a byte offset into the buffer the run gives as its `i`-th.
pub const GOAL_RUNBUF0: GOAL_MemType = 2;
/// Number of run-time buffers a schedule may have (`GOAL_RUNBUF(0)` ..
/// `GOAL_RUNBUF(15)`).
pub const GOAL_RUNBUF_SLOTS: c_int = 16;

/// Starts one execution of `s` with run-time buffer `i` at `bufs[i]`,
/// holding `sizes[i]` bytes, for `i < n`. Returns its handle, or NULL with
/// GOAL_LastError() saying why: fewer buffers than the schedule has, one
/// smaller than the bytes the schedule uses of it, NULL where it uses
/// bytes (the message names the buffer and the schedule's needs). Buffers
/// past those the schedule has are ignored, so a schedule without run-time
/// buffers runs as with GOAL_Run.
///
/// # Safety
/// `bufs` and `sizes` are NULL with `n` = 0, or valid for `n` reads; each
/// buffer, and every buffer the schedule's graph names, must stay valid
/// until the execution has finished.
#[no_mangle]
pub unsafe extern "C" fn GOAL_RunWith(s: GOAL_Schedule, bufs: *const *mut c_void, sizes: *const usize, n: c_int) -> GOAL_Handle {
    const WHAT: &str = "GOAL_RunWith";
    guard(WHAT, std::ptr::null_mut(), || {
        let r = (|| {
            let Some(sc) = registry::find_schedule(s) else {
                return Err(registry::not_a_schedule(s as usize, WHAT));
            };
            if !goal_rt::is_initialized() {
                return Err(Error::new(ErrorKind::NotInitialized, format!("{WHAT}: goal is not initialized (or already finalized)")));
            }
            if n < 0 || (n > 0 && (bufs.is_null() || sizes.is_null())) {
                return Err(Error::new(ErrorKind::InvalidArgument, format!("{WHAT}: {n} buffers, at bufs {bufs:p} and sizes {sizes:p}")));
            }
            let mut given = [(std::ptr::null_mut::<u8>(), 0usize); goal_sched::RUN_SLOTS];
            let n = (n as usize).min(given.len());
            for (i, g) in given[..n].iter_mut().enumerate() {
                // SAFETY: both arrays are valid for `n` reads (caller), and
                // `i < n`.
                *g = unsafe { (*bufs.add(i) as *mut u8, *sizes.add(i)) };
            }
            // SAFETY: the caller guarantees the buffers stay valid until the
            // execution finishes.
            unsafe { sc.rt.run_with(&sc.s, &given[..n]) }.map_err(named(WHAT))
        })();
        match r {
            Ok(h) => new_handle(h),
            Err(e) => {
                fail(e);
                std::ptr::null_mut()
            }
        }
    })
}

/// The run-time buffers of `s`: writes the bytes each must hold to
/// `sizes[0 .. min(n, count)]` and returns their count (0 for a schedule
/// with all its buffers), or a negative error code.
///
/// # Safety
/// `sizes` is NULL with `n` = 0, or valid for `n` writes.
#[no_mangle]
pub unsafe extern "C" fn GOAL_RunBufferSizes(s: GOAL_Schedule, sizes: *mut usize, n: c_int) -> c_int {
    const WHAT: &str = "GOAL_RunBufferSizes";
    crate::code_result(WHAT, || {
        let Some(sc) = registry::find_schedule(s) else {
            return Err(registry::not_a_schedule(s as usize, WHAT));
        };
        if n < 0 || (n > 0 && sizes.is_null()) {
            return Err(Error::new(ErrorKind::InvalidArgument, format!("{WHAT}: room for {n} sizes at {sizes:p}")));
        }
        let need = &sc.s.compiled().run;
        for (i, &b) in need.iter().take(n as usize).enumerate() {
            // SAFETY: `sizes` is valid for `n` writes (caller), `i < n`.
            unsafe { sizes.add(i).write(b as usize) };
        }
        Ok(need.len() as c_int)
    })
}

#[cfg(test)]
mod tests {
    /// The header spells the constants out (cbindgen evaluates no other
    /// crate's): they must be goal-sched's.
    #[test]
    fn the_constants_are_goal_scheds() {
        assert_eq!(super::GOAL_RUNBUF0 as i64, goal_sched::MEM_RUN0);
        assert_eq!(super::GOAL_RUNBUF_SLOTS as usize, goal_sched::RUN_SLOTS);
    }
}
