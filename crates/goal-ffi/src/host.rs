//! goal inside another runtime's job (extension): `GOAL_InitWith` starts
//! goal from a host's rank, size and allgather (the MPI layer passes
//! `PMPI_Allgather`), so that goal needs no launcher of its own and never
//! touches the host's PMI or PMIx session; `GOAL_WaitFor`, a Wait with a
//! time limit, and `GOAL_WaitPoll`, a Wait that calls the host's progress
//! function as it goes, for a host whose waits must also keep its own
//! library moving (an `MPI_Waitall` over goal's and MPI's requests).

use super::*;
use std::time::Duration;

/// A time the caller gave in seconds (not NaN, not negative: checked),
/// capped at 1e9 s, to the nanosecond below. (`Duration::from_secs_f64`
/// rounds exactly and took 41 instructions, on the path of every blocking
/// collective the MPI layer runs.)
#[inline]
fn duration_of(seconds: f64) -> Duration {
    Duration::from_nanos((seconds.min(1e9) * 1e9) as u64)
}

/// A host runtime's allgather: every rank gives `len` bytes at `mine`
/// (`len` is the same on every rank) and receives every rank's, in rank
/// order, at `all` (`len` times the size). Returns 0 on success, anything
/// else on failure. Called only inside GOAL_InitWith, on its thread.
pub type GOAL_AllgatherFunction = Option<unsafe extern "C" fn(mine: *const c_void, len: usize, all: *mut c_void, ctx: *mut c_void) -> c_int>;

/// What GOAL_InitWith needs from the host runtime (an MPI library).
#[repr(C)]
pub struct GOAL_Bootstrap {
    /// This process' rank in the host's job, 0 .. size-1.
    pub rank: c_int,
    /// Number of processes in the host's job.
    pub size: c_int,
    /// The host's allgather (collective over the job).
    pub allgather: GOAL_AllgatherFunction,
    /// Passed to `allgather` as its last argument.
    pub ctx: *mut c_void,
}

/// The host's function and context, callable from goal-rt's bootstrap.
struct HostFn {
    f: unsafe extern "C" fn(*const c_void, usize, *mut c_void, *mut c_void) -> c_int,
    ctx: *mut c_void,
}

// SAFETY: goal-rt calls the bootstrap only inside `init_with_host`, on the
// thread that called GOAL_InitWith, and drops it before returning; the
// value never reaches another thread although the trait asks for `Send`.
unsafe impl Send for HostFn {}

impl HostFn {
    /// One allgather of `mine` into `all` (`all` holds size times `mine`).
    fn call(&self, mine: &[u8], all: &mut [u8]) -> std::io::Result<()> {
        // SAFETY: `mine` and `all` are live slices of the lengths the
        // contract names (`all` is size times `mine`'s, as the bootstrap
        // makes it); the function and ctx are the caller's, valid until
        // GOAL_InitWith returns.
        let rc = unsafe { (self.f)(mine.as_ptr().cast(), mine.len(), all.as_mut_ptr().cast(), self.ctx) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::other(format!("the host's allgather of {} bytes returned {rc}", mine.len())))
        }
    }
}

/// Initializes goal (once per process) inside a host runtime's job: rank,
/// size and the address exchange come from `boot` (its allgather, a few
/// calls), never from a launcher's environment. Collective over the host's
/// job. Returns GOAL_SUCCESS or an error code (NULL `boot` or function, a
/// rank not below the size: GOAL_ERR_INVALID_ARGUMENT).
///
/// # Safety
/// `boot` must be NULL or point to a valid GOAL_Bootstrap whose function
/// may be called with its `ctx` until this call returns.
#[no_mangle]
pub unsafe extern "C" fn GOAL_InitWith(boot: *const GOAL_Bootstrap) -> c_int {
    code_result("GOAL_InitWith", || {
        // SAFETY: NULL or valid (caller).
        let Some(b) = (unsafe { boot.as_ref() }) else {
            return Err(invalid("GOAL_InitWith: boot is NULL".into()));
        };
        let Some(f) = b.allgather else {
            return Err(invalid("GOAL_InitWith: boot->allgather is NULL".into()));
        };
        if b.size < 1 || b.rank < 0 || b.rank >= b.size {
            return Err(invalid(format!("GOAL_InitWith: rank {} is not within a job of {} processes", b.rank, b.size)));
        }
        let host = HostFn { f, ctx: b.ctx };
        let gather: goal_rt::HostAllgather = Box::new(move |mine: &[u8], all: &mut [u8]| host.call(mine, all));
        goal_rt::init_with_host(b.rank as usize, b.size as usize, gather).map(|_| GOAL_SUCCESS).map_err(named("GOAL_InitWith"))
    })
}

/// Returns 1 once the execution has ended (finished or failed), 0 while it
/// runs, without moving it and without releasing the handle: GOAL_Test,
/// GOAL_Wait or GOAL_WaitFor still release it and report a failure. For a
/// thread that only watches executions while goal's helper moves them
/// (progress modes thread, spin, kernel), so that it never takes the
/// progress engine from the threads driving it; in manual mode nothing
/// moves an execution that is only watched.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn GOAL_IsFinished(h: GOAL_Handle) -> c_int {
    code_result("GOAL_IsFinished", || {
        if h.is_null() {
            return Err(invalid("GOAL_IsFinished: the handle is NULL".into()));
        }
        // SAFETY: h came from GOAL_Run (caller: live); never released here.
        let hd = std::mem::ManuallyDrop::new(unsafe { take_handle(h) });
        Ok(hd.is_finished() as c_int)
    })
}

/// Waits as GOAL_Wait for at most `seconds` (sleeping in the kernel after
/// the usual spin). Returns 1 when finished, 0 if still running when the
/// time is up (the handle stays live), <0 if the execution failed; the
/// handle is released once 1 or <0 was returned, as by GOAL_Test.
///
/// # Safety
/// `h` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn GOAL_WaitFor(h: GOAL_Handle, seconds: f64) -> c_int {
    code_result("GOAL_WaitFor", || {
        if h.is_null() {
            return Err(invalid("GOAL_WaitFor: the handle is NULL".into()));
        }
        if seconds.is_nan() || seconds < 0.0 {
            return Err(invalid(format!("GOAL_WaitFor: seconds is {seconds}, not a time")));
        }
        // SAFETY: h came from GOAL_Run (caller: live); given back below
        // unless released here, exactly once.
        let hd = std::mem::ManuallyDrop::new(unsafe { take_handle(h) });
        let r = hd.wait_for(duration_of(seconds));
        if !matches!(r, Ok(false)) {
            drop(std::mem::ManuallyDrop::into_inner(hd));
        }
        r.map(|done| done as c_int)
    })
}

/// A host runtime's progress call for GOAL_WaitPoll: keeps the host's own
/// library moving; returns non-zero to end the Wait (the host's own request
/// completed, say), 0 to go on.
pub type GOAL_PollFunction = Option<unsafe extern "C" fn(ctx: *mut c_void) -> c_int>;

/// Waits as GOAL_Wait (spinning as configured, then sleeping in the kernel
/// until the execution finishes), calling `poll(ctx)` on this thread after
/// each batch of polls and at least every `seconds` while it sleeps,
/// without spinning again after a sleep that brought no news. Returns 1
/// when finished, 0 as soon as `poll` returned non-zero with the execution
/// still running (the handle stays live), <0 if the execution failed; the
/// handle is released once 1 or <0 was returned, as by GOAL_Test. `poll`
/// runs with none of goal's locks held and may call goal, but not wait for
/// `h`.
///
/// # Safety
/// `h` must be NULL or a live handle; `poll` must be callable with `ctx`
/// until this call returns.
#[no_mangle]
pub unsafe extern "C" fn GOAL_WaitPoll(h: GOAL_Handle, seconds: f64, poll: GOAL_PollFunction, ctx: *mut c_void) -> c_int {
    code_result("GOAL_WaitPoll", || {
        if h.is_null() {
            return Err(invalid("GOAL_WaitPoll: the handle is NULL".into()));
        }
        let Some(f) = poll else {
            return Err(invalid("GOAL_WaitPoll: poll is NULL".into()));
        };
        if seconds.is_nan() || seconds <= 0.0 {
            return Err(invalid(format!("GOAL_WaitPoll: seconds is {seconds}, not a positive time")));
        }
        // SAFETY: h came from GOAL_Run (caller: live); given back below
        // unless released here, exactly once.
        let hd = std::mem::ManuallyDrop::new(unsafe { take_handle(h) });
        // SAFETY: `poll` may be called with `ctx` until we return (caller).
        let mut poke = || unsafe { f(ctx) } != 0;
        let r = hd.wait_poking(duration_of(seconds), &mut poke);
        if !matches!(r, Ok(false)) {
            drop(std::mem::ManuallyDrop::into_inner(hd));
        }
        r.map(|done| done as c_int)
    })
}

/// A copy of `s` numbered as the next schedule of its group: what
/// compiling the same graph on that group now would return, without
/// compiling it again (its buffers, run-time ones included, are `s`'s).
/// Collective as compiling is: it takes a number of the group's compile
/// order, so every member must make its schedule for the same call at the
/// same point, by compiling or by this. For a host whose ranks each know
/// only part of a call's arguments (the MPI layer's v-collectives): each
/// rank reuses what its own arguments compiled before, and the schedules
/// still pair call by call. Returns NULL with GOAL_LastError() on error
/// (not a schedule, its group freed, goal not initialized). Free it with
/// GOAL_FreeSchedule.
///
/// # Safety
/// `s` must be NULL or a schedule handle.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Renumber(s: GOAL_Schedule) -> GOAL_Schedule {
    guard("GOAL_Renumber", std::ptr::null_mut(), || {
        let r = (|| {
            let sc = registry::schedule(s, "GOAL_Renumber")?;
            let copy = sc.rt.renumber(&sc.s).map_err(named("GOAL_Renumber"))?;
            Ok(registry::add_schedule(goal_schedule { s: copy, rt: sc.rt.clone() }))
        })();
        r.unwrap_or_else(|e: Error| {
            fail(e);
            std::ptr::null_mut()
        })
    })
}
