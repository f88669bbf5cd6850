//! The calling thread's CPU affinity: read it, set it, pin it to one CPU.
//!
//! Calibration pins its two measuring threads to two CPUs; the helper
//! thread is pinned by `GOAL_PROGRESS_CPU`, or moves to the CPU that the
//! ranks' helpers share while its application computes (see `progress`).

/// A set of CPUs.
pub(crate) type CpuSet = libc::cpu_set_t;

/// The CPUs this thread may run on.
pub(crate) fn current() -> Option<CpuSet> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and
    // sched_getaffinity(0, ..) writes at most its size into it.
    unsafe {
        let mut set: CpuSet = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<CpuSet>(), &mut set) == 0).then_some(set)
    }
}

/// The CPUs of `set`, in order.
pub(crate) fn cpus(set: &CpuSet) -> Vec<usize> {
    // SAFETY: CPU_ISSET reads inside the set for indices below its capacity.
    (0..8 * std::mem::size_of::<CpuSet>()).filter(|&c| unsafe { libc::CPU_ISSET(c, set) }).collect()
}

/// Lets this thread run on `set` only.
pub(crate) fn set(set: &CpuSet) -> std::io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t; this changes only this thread's affinity.
    match unsafe { libc::sched_setaffinity(0, std::mem::size_of::<CpuSet>(), set) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Runs this thread on `cpu` alone.
pub(crate) fn pin(cpu: usize) -> std::io::Result<()> {
    if cpu >= 8 * std::mem::size_of::<CpuSet>() {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and `cpu` is below
    // its capacity (checked).
    let one = unsafe {
        let mut s: CpuSet = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        s
    };
    set(&one)
}
