//! The calling thread's CPU affinity: read it, set it, pin it to one CPU.
//!
//! Calibration pins its two measuring threads to two CPUs; the helper
//! thread is pinned by `GOAL_PROGRESS_CPU`, or moves to the CPU that the
//! ranks' helpers share while its application computes (see `progress`).
//!
//! Which CPUs the ranks of a machine have is not this process' own mask
//! alone: a launcher that binds each rank to a core (`mpirun --bind-to
//! core`, Open MPI's default for two ranks; `srun --cpu-bind=cores`)
//! leaves each rank one CPU, and counted from that, 2 ranks on a 2-core
//! machine looked like 2 ranks on 1 core (no CMA calibrated, no helper
//! placement). So the ranks exchange their masks at start-up (as CPU
//! lists, [`to_list`]) and use the union of the masks of the ranks on
//! their kernel.

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

/// `GOAL_DEBUG`'s words on a rank's binding, from the CPUs it may run on
/// (`mine`) and the launcher goal-boot found: bound when that is fewer
/// than the machine's online CPUs. goal never changes it: only goal's own
/// threads move (the helper to `GOAL_PROGRESS_CPU` or the CPU the ranks'
/// helpers share, calibration's two threads for a moment).
pub(crate) fn describe(mine: &[usize], launcher: &str) -> String {
    let how = goal_boot::cpulist::binding(mine, &goal_boot::cpulist::online());
    format!("{how} (launcher: {launcher}); goal leaves the binding as it found it")
}

pub(crate) use goal_boot::cpulist::{parse_list, to_list};

