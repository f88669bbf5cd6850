//! Short scheduler time slices for the threads that sleep until a message
//! comes.
//!
//! Since Linux 6.12 a thread may ask EEVDF for its own time slice
//! (`sched_setattr` with `sched_runtime` on an ordinary thread, 0.1 to
//! 100 ms). A woken thread whose slice is shorter than the running
//! thread's may preempt it at once; otherwise the running thread keeps
//! the CPU until its own slice, several milliseconds, is used up. With more
//! computing ranks than cores that decides whether a collective moves
//! during the computation: each step needs a sleeping goal thread (the
//! helper, or an application thread in Wait) to run as soon as its message
//! is there, on a CPU that another rank is computing on.
//!
//! So the helper asks for a short slice for good (it runs a few
//! microseconds per event), and an application thread asks for one just
//! before it sleeps in Wait and gives it back once woken, so that its own
//! computation keeps the slice it had. Kernels before 6.12 accept the call
//! and ignore the slice. Threads that are not ordinary (`SCHED_OTHER`,
//! say a real-time one) are left as they are.

use std::cell::Cell;
use std::time::Duration;

/// The kernel's `struct sched_attr` (include/uapi/linux/sched/types.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

const ATTR_SIZE: u32 = std::mem::size_of::<SchedAttr>() as u32;

fn get() -> std::io::Result<SchedAttr> {
    let mut a = SchedAttr::default();
    // SAFETY: `a` is writable and ATTR_SIZE bytes long, as the call is told;
    // pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_getattr, 0, &mut a as *mut SchedAttr, ATTR_SIZE, 0u32) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(a)
}

fn set(a: &SchedAttr) -> std::io::Result<()> {
    let a = SchedAttr { size: ATTR_SIZE, ..*a };
    // SAFETY: `a` is a fully initialised sched_attr whose `size` field says
    // how much of it the kernel reads; pid 0 is the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, 0, &a as *const SchedAttr, 0u32) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's attributes with its slice set to `slice`, if it
/// is an ordinary thread.
fn with_slice(slice: Duration) -> std::io::Result<Option<(SchedAttr, SchedAttr)>> {
    let old = get()?;
    if old.sched_policy != libc::SCHED_OTHER as u32 {
        return Ok(None);
    }
    // Only the slice changes (sched_setattr sets the nice value too, so it
    // is carried over).
    let new = SchedAttr { sched_flags: 0, sched_runtime: slice.as_nanos().min(u64::MAX as u128) as u64, ..old };
    Ok(Some((old, new)))
}

/// Gives the calling thread a slice of `slice` for good (the helper).
pub(crate) fn set_for_thread(slice: Duration) -> std::io::Result<()> {
    match with_slice(slice)? {
        Some((_, new)) => set(&new),
        None => Ok(()),
    }
}

thread_local! {
    /// Set once asking failed on this thread: nothing is asked again.
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// An application thread's short slice while it sleeps in Wait; dropping
/// it gives back the thread's own attributes.
pub(crate) struct WaitSlice {
    restore: SchedAttr,
}

impl WaitSlice {
    /// Asks for `slice` for the calling thread, if it is not zero and the
    /// thread is an ordinary one. Three system calls per sleep (the
    /// attributes are read each time, in case the application changed
    /// them), against the sleep's own two and its wake-up.
    pub(crate) fn enter(slice: Duration) -> Option<WaitSlice> {
        if slice.is_zero() || REFUSED.with(Cell::get) {
            return None;
        }
        match with_slice(slice).and_then(|a| a.map(|(old, new)| set(&new).map(|()| old)).transpose()) {
            Ok(Some(old)) => Some(WaitSlice { restore: old }),
            Ok(None) => None,
            Err(_) => {
                REFUSED.with(|c| c.set(true));
                None
            }
        }
    }
}

impl Drop for WaitSlice {
    fn drop(&mut self) {
        let _ = set(&self.restore);
    }
}
