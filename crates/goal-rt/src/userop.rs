//! User operators: the functions an application registers to reduce with,
//! and how a local operation calls one.
//!
//! # The registry
//!
//! [`create`] registers a function and returns a [`UserOp`]: a number that
//! is never handed out again in this process, and whether the function
//! commutes (goal-sched carries both in the operator's C value, so graphs,
//! collective builders and schedules need not ask). [`free`] removes it;
//! a later use of the number is refused with an error that says it was
//! freed. The registry is one per process, so operators may be created
//! before `init` and survive `finalize`, as the application's own data
//! does.
//!
//! # Lifetime
//!
//! Compiling a schedule resolves each user operator it names
//! ([`resolve`]) and keeps the function alive (an `Arc`) as long as the
//! schedule lives, so freeing an operator never pulls a function from
//! under a compiled schedule; compiling after the free fails, naming it.
//!
//! # Calling
//!
//! [`apply`] computes `r = a op b` with the function's convention
//! (`inout = in op inout`, MPI's): it copies `b` into `r` unless it is
//! there already, and passes `a` as `in` (a copy of it when `r` is `a`),
//! so the function never sees aliased buffers. While the function runs,
//! [`inside`] is true on its thread: the C API refuses every call then,
//! since the engine's lock is held (a call would wait for itself).

use crate::error::{Error, ErrorKind, Result};
use goal_sched::UserOp;
use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// A user operator's function: `f(input, inout, count)` sets `inout[i] =
/// input[i] op inout[i]` for `count` elements (the slices hold exactly
/// `count` elements). It may run on any thread that drives goal (the
/// helper thread in `thread`, `spin` and `kernel` modes), so it must be
/// thread-safe, and it must not call goal.
pub type UserFunction = Box<dyn Fn(&[u8], &mut [u8], usize) + Send + Sync>;

/// A registered function.
pub struct UserFn {
    f: UserFunction,
    /// The operator it is.
    pub op: UserOp,
}

impl std::fmt::Debug for UserFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "UserFn({:?})", self.op)
    }
}

struct Registry {
    /// The next id to hand out.
    next: u32,
    live: BTreeMap<u32, Arc<UserFn>>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { next: 0, live: BTreeMap::new() });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many threads are inside a user operator's function now: while it is
/// 0, [`inside`] needs no thread-local look-up (in a shared library each
/// is a call to `__tls_get_addr`, some 15 instructions on every Run and
/// Wait). A thread's own increment precedes its own load in program order,
/// so a thread inside always sees at least its own count.
static THREADS_INSIDE: AtomicU32 = AtomicU32::new(0);

thread_local! {
    /// Whether this thread is inside a user operator's function.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// A copy of the first operand when the result overwrites it.
    static SPARE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Registers `f`; `commutative` says whether `a op b == b op a` (the
/// collectives then may combine in any order). Fails only when the ids
/// that fit a C `int` are used up.
pub fn create(f: UserFunction, commutative: bool) -> Result<UserOp> {
    let mut reg = registry();
    if reg.next > UserOp::MAX_ID {
        return Err(Error::new(ErrorKind::NoMemory, format!("{} user operations were created in this process: no number is left", reg.next)));
    }
    let op = UserOp { id: reg.next, commutative };
    reg.next += 1;
    reg.live.insert(op.id, Arc::new(UserFn { f, op }));
    Ok(op)
}

/// Why `op` is not live: freed, or never created.
fn gone(reg: &Registry, op: UserOp) -> String {
    if op.id < reg.next {
        format!("user operation {} was freed (GOAL_Op_free)", op.raw())
    } else {
        format!("user operation {} was never created (GOAL_Op_create)", op.raw())
    }
}

/// Unregisters `op`. Schedules compiled with it keep its function.
pub fn free(op: UserOp) -> Result<()> {
    let mut reg = registry();
    match reg.live.get(&op.id) {
        Some(f) if f.op == op => {
            reg.live.remove(&op.id);
            Ok(())
        }
        _ => Err(Error::new(ErrorKind::InvalidArgument, gone(&reg, op))),
    }
}

/// The live function of `op`.
pub fn resolve(op: UserOp) -> Result<Arc<UserFn>> {
    let reg = registry();
    match reg.live.get(&op.id) {
        Some(f) if f.op == op => Ok(f.clone()),
        _ => Err(Error::new(ErrorKind::BadOp, gone(&reg, op))),
    }
}

/// Whether this thread is running a user operator's function now (every
/// C call asks: one load of a shared counter, and a thread-local load only
/// while some thread runs one).
#[inline]
pub fn inside() -> bool {
    THREADS_INSIDE.load(Ordering::Relaxed) != 0 && inside_this_thread()
}

/// The thread-local half of [`inside`], out of line: inlined, the
/// compiler computed the thread-local's address (the `__tls_get_addr`
/// call) before looking at the counter.
#[cold]
#[inline(never)]
fn inside_this_thread() -> bool {
    INSIDE.with(|c| c.get())
}

/// `r = a op b` for `n` elements of `esize` bytes, through `f`.
///
/// # Safety
/// `a`, `b` and `r` are valid for `n * esize` bytes; `r` may equal `a` or
/// `b` exactly but overlaps neither partially; no other thread writes them.
pub unsafe fn apply(f: &UserFn, esize: usize, a: *const u8, b: *const u8, r: *mut u8, n: usize) -> std::result::Result<(), crate::localop::KernelError> {
    let bytes = n * esize;
    if n == 0 {
        return Ok(());
    }
    let call = |input: &[u8]| {
        if !std::ptr::eq(r, b) {
            // SAFETY: both valid for `bytes` (caller); `copy` allows exact
            // aliasing, and `r != b` here, so they do not overlap.
            unsafe { std::ptr::copy(b, r, bytes) };
        }
        // SAFETY: `r` is valid and written by no one else (caller); `input`
        // is not `r`'s memory (the caller below copies `a` when it is).
        let inout = unsafe { std::slice::from_raw_parts_mut(r, bytes) };
        THREADS_INSIDE.fetch_add(1, Ordering::Relaxed);
        INSIDE.with(|c| c.set(true));
        let res = catch_unwind(AssertUnwindSafe(|| (f.f)(input, inout, n)));
        INSIDE.with(|c| c.set(false));
        THREADS_INSIDE.fetch_sub(1, Ordering::Relaxed);
        res.map_err(|_| crate::localop::KernelError::UserPanic)
    };
    if std::ptr::eq(a, r) {
        // The result overwrites the first operand: hand the function a copy.
        let mut spare = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
        spare.clear();
        // SAFETY: `a` valid for `bytes` (caller).
        spare.extend_from_slice(unsafe { std::slice::from_raw_parts(a, bytes) });
        let res = call(&spare);
        SPARE.with(|s| *s.borrow_mut() = spare);
        res
    } else {
        // SAFETY: `a` valid for `bytes` and not `r` (checked); `r` may be `b`
        // but never partially overlaps `a` (caller).
        call(unsafe { std::slice::from_raw_parts(a, bytes) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concat() -> UserFunction {
        // Not commutative: inout = in * 10 + inout, one byte per element.
        Box::new(|i: &[u8], io: &mut [u8], n: usize| {
            assert_eq!((i.len(), io.len()), (n, n));
            for (x, y) in i.iter().zip(io.iter_mut()) {
                *y = x.wrapping_mul(10).wrapping_add(*y);
            }
        })
    }

    #[test]
    fn every_aliasing_gives_first_operand_as_in() {
        let op = create(concat(), false).unwrap();
        let f = resolve(op).unwrap();
        let (mut a, mut b, mut r) = ([1u8, 2], [3u8, 4], [0u8, 0]);
        // SAFETY: each pointer is valid for 2 bytes; only exact aliasing.
        unsafe {
            apply(&f, 1, a.as_ptr(), b.as_ptr(), r.as_mut_ptr(), 2).unwrap();
            assert_eq!(r, [13, 24]);
            apply(&f, 1, a.as_ptr(), b.as_ptr(), a.as_mut_ptr(), 2).unwrap();
            assert_eq!(a, [13, 24]);
            let (a2, b2) = ([5u8, 6], b.as_mut_ptr());
            apply(&f, 1, a2.as_ptr(), b2, b2, 2).unwrap();
            assert_eq!(b, [53, 64]);
            let p = r.as_mut_ptr();
            apply(&f, 1, p, p, p, 2).unwrap();
            assert_eq!(r, [143, 8]);
        }
        free(op).unwrap();
        assert!(resolve(op).unwrap_err().message.contains("was freed"));
        assert!(free(op).unwrap_err().message.contains("was freed"));
        assert!(resolve(UserOp { id: UserOp::MAX_ID, commutative: true }).unwrap_err().message.contains("never created"));
        // The schedule's reference still calls it.
        let mut one = [1u8];
        // SAFETY: valid for 1 byte.
        unsafe { apply(&f, 1, [2u8].as_ptr(), one.as_ptr(), one.as_mut_ptr(), 1).unwrap() };
        assert_eq!(one, [21]);
    }

    #[test]
    fn a_panicking_function_is_an_error_and_leaves_the_flag_clear() {
        let op = create(Box::new(|_: &[u8], _: &mut [u8], _| panic!("boom")), true).unwrap();
        let f = resolve(op).unwrap();
        let mut r = [0u8];
        // SAFETY: valid for 1 byte.
        let e = unsafe { apply(&f, 1, [1u8].as_ptr(), [2u8].as_ptr(), r.as_mut_ptr(), 1) };
        assert_eq!(e, Err(crate::localop::KernelError::UserPanic));
        assert!(!inside());
    }
}
