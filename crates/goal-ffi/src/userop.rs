//! User reductions in the C API: `GOAL_Op_create` registers a C function
//! (with a context pointer) as a user operator of goal-rt's registry, and
//! the `GOAL_Op` it returns goes wherever a built-in operator goes.
//!
//! The function is called as `fn(in, inout, count, ctx)` and must set
//! `inout[i] = in[i] OP inout[i]` for `count` elements: `in` is the first
//! operand of the local operation (`b1`), the *lower* part in a collective
//! (see docs/api.md, "User reductions").

use super::*;

/// A user reduction: sets `inout[i] = input[i] OP inout[i]` for `count`
/// elements; `ctx` is the pointer given to GOAL_Op_create. It may run on
/// goal's helper thread (see docs/api.md), and must not call goal.
pub type GOAL_UserFunction = Option<unsafe extern "C" fn(input: *const c_void, inout: *mut c_void, count: c_int, ctx: *mut c_void)>;

/// The C function and its context, as goal-rt calls them.
struct CFunction {
    f: unsafe extern "C" fn(*const c_void, *mut c_void, c_int, *mut c_void),
    ctx: *mut c_void,
}

// SAFETY: goal calls the function from whichever thread drives it (the
// helper thread in thread, spin and kernel modes); GOAL_Op_create's
// contract (docs/api.md) is that the function and what `ctx` points to may
// be used from any thread, one call at a time per operation of goal's.
unsafe impl Send for CFunction {}
// SAFETY: as for `Send`: the contract makes concurrent calls the user's
// responsibility, as MPI's does for MPI_User_function.
unsafe impl Sync for CFunction {}

impl CFunction {
    /// Calls the function on `count` elements of `esize` bytes, in calls
    /// of at most `c_int::MAX` elements.
    fn call(&self, input: &[u8], inout: &mut [u8], count: usize) {
        let esize = input.len().checked_div(count).unwrap_or(0);
        let mut done = 0;
        while done < count {
            let n = (count - done).min(c_int::MAX as usize);
            let (i, io) = (&input[done * esize..], &mut inout[done * esize..]);
            // SAFETY: `i` and `io` hold at least `n` elements of `esize`
            // bytes and do not alias (goal-rt's `userop::apply`); the
            // function and `ctx` are the application's, per the contract.
            unsafe { (self.f)(i.as_ptr() as *const c_void, io.as_mut_ptr() as *mut c_void, n as c_int, self.ctx) };
            done += n;
        }
    }
}

/// Registers `func` as a reduction operator usable wherever a GOAL_Op goes
/// (GOAL_LocalOp, GOAL_LocalOpVec, every reducing collective), on any
/// data type and width, and on GOAL_BYTES elements. `commutative` (0 or
/// not) says whether `a OP b == b OP a`; the operator is taken to be
/// associative. Writes the new operator to `*op`. May be called before
/// GOAL_Init. Returns GOAL_SUCCESS or an error code.
///
/// # Safety
/// `op` must be NULL or valid for a write; `func` and `ctx` as docs/api.md
/// says (callable from any thread while a schedule using the operator lives).
#[no_mangle]
pub unsafe extern "C" fn GOAL_Op_create(func: GOAL_UserFunction, commutative: c_int, ctx: *mut c_void, op: *mut GOAL_Op) -> c_int {
    code_result("GOAL_Op_create", || {
        let Some(f) = func else { return Err(invalid("GOAL_Op_create: the function is NULL".into())) };
        if op.is_null() {
            return Err(invalid("GOAL_Op_create: op (where the operator goes) is NULL".into()));
        }
        let cf = CFunction { f, ctx };
        let u = goal_rt::userop::create(Box::new(move |i: &[u8], io: &mut [u8], n: usize| cf.call(i, io, n)), commutative != 0)
            .map_err(named("GOAL_Op_create"))?;
        // SAFETY: `op` is non-null and valid for a write (caller).
        unsafe { op.write(u.raw() as GOAL_Op) };
        Ok(GOAL_SUCCESS)
    })
}

/// Frees a user operator and sets `*op` to GOAL_OP_NULL. Schedules compiled
/// with it keep working; graphs and calls that name it afterwards fail.
/// Returns GOAL_SUCCESS or an error code (a built-in operator, or one freed
/// already: GOAL_ERR_INVALID_ARGUMENT).
///
/// # Safety
/// `op` must be NULL or valid for reading and writing.
#[no_mangle]
pub unsafe extern "C" fn GOAL_Op_free(op: *mut GOAL_Op) -> c_int {
    code_result("GOAL_Op_free", || {
        if op.is_null() {
            return Err(invalid("GOAL_Op_free: op is NULL".into()));
        }
        // SAFETY: non-null and readable (caller).
        let v = unsafe { op.read() };
        let Some(u) = goal_sched::UserOp::from_raw(v as i64) else {
            return Err(invalid(format!("GOAL_Op_free: operator {v} is not a user operation (built-in operators are not freed)")));
        };
        goal_rt::userop::free(u).map_err(named("GOAL_Op_free"))?;
        // SAFETY: non-null and writable (caller).
        unsafe { op.write(GOAL_OP_NULL) };
        Ok(GOAL_SUCCESS)
    })
}

/// Refuses a user operator that is not live (freed, or never created),
/// naming the C function: earlier than the compile would.
pub(crate) fn live_op(what: &str, op: GOAL_Op) -> Result<(), Error> {
    if let Some(u) = goal_sched::UserOp::from_raw(op as i64) {
        goal_rt::userop::resolve(u).map_err(named(what))?;
    }
    Ok(())
}

/// The C functions a user function may call (they read state goal never
/// locks); every other one is refused inside it.
pub(crate) const PURE: [&str; 4] = ["GOAL_MyRank", "GOAL_GroupSize", "GOAL_IsInitialized", "GOAL_IsFinalized"];

/// The refusal of a call from inside a user function, if this is one.
#[inline(always)]
pub(crate) fn refused_inside(what: &str) -> Option<Error> {
    (goal_rt::userop::inside() && !PURE.contains(&what)).then(|| {
        invalid(format!("{what}: called from inside a user operation's function (GOAL_Op_create), which must not call goal"))
    })
}
